"""Fused Triton CopyNet decode step: same contract as ``naive.copy_attention_step_naive``.

Three launches, none of which stores anything of size [B, V] except the requested output:

1. ``_attn_copy_kernel``, grid (B,): one row per program. Dot attention over the S source
   positions, the context vector, the copy scores psi_c(j) = tanh(h_j W_c) . s (the
   [S, H] x [H, H] product runs on ``tl.dot`` tile by tile; tanh is applied per tile, so
   tanh(h W_c) is never stored; with ``W_c=None`` h holds the copy features and psi_c is the
   attention score itself; with ``query`` the attention and copy scores read the query
   instead of s), the row's copy log-sum-exp, and at every copyable position
   j the log copy mass of its token, log C(x_j) = logsumexp_{j': x_j' = x_j} psi_c(j'),
   computed with an [S, S] same-token mask (S is a source length: 10-30 here). Scratch:
   token id (-1: not copyable) and log C per position, 2 x [B, S].
2. ``_gen_topk_kernel``, grid (ceil(B / BLOCK_B), NC): a block of rows times one chunk of the
   vocabulary. Per BLOCK_V tile: psi_g = s W_o^T + b (``tl.dot`` over H tiles, fp32
   accumulation), online max / sum-exp of psi_g, the copy mass of the tile's tokens
   (scattered in by id from the [B, S] scratch), u = logaddexp(psi_g, log C), optional
   store of u, and a register top-KP merge of u. Writes per (row, chunk) the partial (max,
   sum-exp) and the chunk's KP best (value, id): scratch [B, NC] x 2 and [B, NC, KP] x 2.
3. ``_finalize_kernel``, grid (B, NCN): combines the partials into log Z = logaddexp(lse_g,
   lse_copy); program 0 of each row merges the NC x KP candidates with the n_oov extended
   slots (log C looked up by id in the scratch), writes the sorted top-k and the OOV part of
   the output; every program subtracts log Z from its slice of the stored u in place.

Ranking u = log(exp psi_g + C) instead of log p is the same order (log Z is one shift per
row), so top-k needs no second pass over the vocabulary. With ``return_logprobs=False``
nothing of size V is written at all.

fp32 inputs use ``tl.dot(..., input_precision="ieee")`` unless ``allow_tf32=True``; fp16 and
bf16 inputs multiply in their dtype with fp32 accumulation. All math after the dots is fp32.
"""
from __future__ import annotations

from typing import Optional

import torch
import triton
import triton.language as tl

from .._triton_common import (
    MAXF,
    SUMF,
    logaddexp,
    next_pow2,
    rank_in_buffer,
    tanh,
    topk_merge,
)
from .naive import CopyAttentionOutput, check_inputs

MAX_K = 256  # register buffer of next_pow2(k) slots per row; larger k: use the torch path
MAX_S = 256  # the [S, S] same-token mask of kernel 1 lives in registers


@triton.jit
def _attn_copy_kernel(
    q_ptr, h_ptr, ids_ptr, mask_ptr, wc_ptr,
    attn_ptr, ctx_ptr, tok_id_ptr, tok_lc_ptr, lse_c_ptr,
    S, H, n_ext,
    stride_sb, stride_sh,
    stride_hb, stride_hs, stride_hh,
    stride_ib, stride_is,
    stride_mb, stride_ms,
    stride_wk, stride_wn,
    S_PAD: tl.constexpr, BLOCK_H: tl.constexpr, BLOCK_K: tl.constexpr,
    PRECISION: tl.constexpr, HAS_WC: tl.constexpr,
):
    # H is the width of h and of the query (q_ptr: s, or the separate query)
    NEG: tl.constexpr = float("-inf")
    b = tl.program_id(0).to(tl.int64)
    offs_s = tl.arange(0, S_PAD)
    in_s = offs_s < S
    real = tl.load(mask_ptr + b * stride_mb + offs_s * stride_ms, mask=in_s, other=0) != 0
    ids = tl.load(ids_ptr + b * stride_ib + offs_s * stride_is, mask=in_s, other=-1).to(tl.int64)
    copyable = real & (ids >= 0) & (ids < n_ext)

    h_row = h_ptr + b * stride_hb + offs_s[:, None] * stride_hs
    s_row = q_ptr + b * stride_sb
    e = tl.zeros([S_PAD], dtype=tl.float32)  # attention scores s . h_j
    psi = tl.zeros([S_PAD], dtype=tl.float32)  # copy scores tanh(h_j W_c) . s
    for n0 in range(0, H, BLOCK_H):
        offs_n = n0 + tl.arange(0, BLOCK_H)
        in_n = offs_n < H
        s_n = tl.load(s_row + offs_n * stride_sh, mask=in_n, other=0.0).to(tl.float32)
        h_n = tl.load(h_row + offs_n[None, :] * stride_hh, mask=in_s[:, None] & in_n[None, :],
                      other=0.0)
        e += tl.reduce(h_n.to(tl.float32) * s_n[None, :], 1, SUMF)
        if HAS_WC:
            acc = tl.zeros([S_PAD, BLOCK_H], dtype=tl.float32)
            for k0 in range(0, H, BLOCK_K):
                offs_k = k0 + tl.arange(0, BLOCK_K)
                in_k = offs_k < H
                h_k = tl.load(h_row + offs_k[None, :] * stride_hh,
                              mask=in_s[:, None] & in_k[None, :], other=0.0)
                w = tl.load(wc_ptr + offs_k[:, None] * stride_wk + offs_n[None, :] * stride_wn,
                            mask=in_k[:, None] & in_n[None, :], other=0.0)
                acc = tl.dot(h_k, w, acc, input_precision=PRECISION)
            psi += tl.reduce(tanh(acc) * s_n[None, :], 1, SUMF)
    if not HAS_WC:  # h holds the copy features: psi_c(j) = h_j . q, the attention score
        psi = e

    # attention weights (all-masked row: zeros) and context
    e = tl.where(real, e, NEG)
    me = tl.reduce(e, 0, MAXF)
    me = tl.where(me == NEG, 0.0, me)
    p = tl.where(real, tl.exp(e - me), 0.0)
    den = tl.reduce(p, 0, SUMF)
    attn = p / tl.where(den > 0, den, 1.0)
    tl.store(attn_ptr + b * S + offs_s, attn, mask=in_s)
    for n0 in range(0, H, BLOCK_H):
        offs_n = n0 + tl.arange(0, BLOCK_H)
        in_n = offs_n < H
        h_n = tl.load(h_row + offs_n[None, :] * stride_hh, mask=in_s[:, None] & in_n[None, :],
                      other=0.0)
        ctx = tl.reduce(attn[:, None] * h_n.to(tl.float32), 0, SUMF)
        tl.store(ctx_ptr + b * H + offs_n, ctx, mask=in_n)

    # copy: row log-sum-exp, and at each position the log mass of its token (all positions)
    psi = tl.where(copyable, psi, NEG)
    mc = tl.reduce(psi, 0, MAXF)
    mc_safe = tl.where(mc == NEG, 0.0, mc)
    sc = tl.reduce(tl.exp(psi - mc_safe), 0, SUMF)
    lse_c = tl.where(mc == NEG, NEG, mc_safe + tl.log(tl.where(sc > 0, sc, 1.0)))
    tl.store(lse_c_ptr + b, lse_c)
    same = (ids[:, None] == ids[None, :]) & copyable[:, None] & copyable[None, :]
    gm = tl.reduce(tl.where(same, psi[None, :], NEG), 1, MAXF)
    gm_safe = tl.where(gm == NEG, 0.0, gm)
    gs = tl.reduce(tl.exp(tl.where(same, psi[None, :] - gm_safe[:, None], NEG)), 1, SUMF)
    lc = gm_safe + tl.log(tl.where(gs > 0, gs, 1.0))
    # Every position of a token carries the token's total, so a later scatter by id may
    # overwrite without summing.
    tl.store(tok_id_ptr + b * S + offs_s, tl.where(copyable, ids, -1), mask=in_s)
    tl.store(tok_lc_ptr + b * S + offs_s, tl.where(copyable, lc, NEG), mask=in_s)


@triton.jit
def _gen_topk_kernel(
    s_ptr, wo_ptr, bo_ptr, psi_ptr, tok_id_ptr, tok_lc_ptr, out_ptr,
    part_m_ptr, part_s_ptr, cand_v_ptr, cand_i_ptr,
    B, S, H, V, chunk_v, NC, stride_out, stride_psi,
    stride_sb, stride_sh, stride_wv, stride_wh, stride_bo,
    HAS_BIAS: tl.constexpr, WRITE_FULL: tl.constexpr, PSI_GIVEN: tl.constexpr,
    BLOCK_B: tl.constexpr, BLOCK_V: tl.constexpr, BLOCK_K: tl.constexpr, KP: tl.constexpr,
    PRECISION: tl.constexpr,
):
    NEG: tl.constexpr = float("-inf")
    SENT: tl.constexpr = 2**31 - 1
    pid_r = tl.program_id(0)
    c = tl.program_id(1)
    rows = (pid_r * BLOCK_B + tl.arange(0, BLOCK_B)).to(tl.int64)
    in_r = rows < B
    v_start = c * chunk_v
    v_end = tl.minimum(v_start + chunk_v, V)

    m_run = tl.full([BLOCK_B], NEG, dtype=tl.float32)
    s_run = tl.zeros([BLOCK_B], dtype=tl.float32)
    best_v = tl.full([BLOCK_B, KP], NEG, dtype=tl.float32)
    best_i = tl.full([BLOCK_B, KP], SENT, dtype=tl.int32)
    for v0 in range(v_start, v_end, BLOCK_V):
        offs_v = v0 + tl.arange(0, BLOCK_V)
        in_v = offs_v < v_end
        if PSI_GIVEN:  # psi_g from cuBLAS (bias included), fp32 [B, V]
            acc = tl.load(psi_ptr + rows[:, None] * stride_psi + offs_v[None, :],
                          mask=in_r[:, None] & in_v[None, :], other=0.0)
        else:
            acc = tl.zeros([BLOCK_B, BLOCK_V], dtype=tl.float32)
            for k0 in range(0, H, BLOCK_K):
                offs_k = k0 + tl.arange(0, BLOCK_K)
                in_k = offs_k < H
                s_t = tl.load(s_ptr + rows[:, None] * stride_sb + offs_k[None, :] * stride_sh,
                              mask=in_r[:, None] & in_k[None, :], other=0.0)
                w_t = tl.load(wo_ptr + offs_v[None, :] * stride_wv + offs_k[:, None] * stride_wh,
                              mask=in_v[None, :] & in_k[:, None], other=0.0)
                acc = tl.dot(s_t, w_t, acc, input_precision=PRECISION)
            if HAS_BIAS:
                bias = tl.load(bo_ptr + offs_v * stride_bo, mask=in_v, other=0.0)
                acc += bias.to(tl.float32)[None, :]
        psi = tl.where(in_v[None, :], acc, NEG)
        # online log-sum-exp of psi_g (every tile has >= 1 column < v_end, so m_new is finite)
        m_new = tl.maximum(m_run, tl.reduce(psi, 1, MAXF))
        s_tile = tl.reduce(tl.exp(psi - m_new[:, None]), 1, SUMF)
        s_run = s_run * tl.exp(m_run - m_new) + s_tile
        m_run = m_new
        # copy mass of this tile's tokens, scattered in by id
        logc = tl.full([BLOCK_B, BLOCK_V], NEG, dtype=tl.float32)
        for j in range(S):
            idj = tl.load(tok_id_ptr + rows * S + j, mask=in_r, other=-1)
            lcj = tl.load(tok_lc_ptr + rows * S + j, mask=in_r, other=NEG)
            logc = tl.where(idj[:, None] == offs_v[None, :], lcj[:, None], logc)
        u = logaddexp(psi, logc)
        if WRITE_FULL:
            tl.store(out_ptr + rows[:, None] * stride_out + offs_v[None, :], u,
                     mask=in_r[:, None] & in_v[None, :])
        ok = in_r[:, None] & in_v[None, :]
        tile_i = tl.where(ok, offs_v[None, :], SENT).to(tl.int32)
        best_v, best_i = topk_merge(best_v, best_i, tl.where(ok, u, NEG), tile_i, KP)

    tl.store(part_m_ptr + rows * NC + c, m_run, mask=in_r)
    tl.store(part_s_ptr + rows * NC + c, s_run, mask=in_r)
    slot = tl.arange(0, KP)
    cand = rows[:, None] * (NC * KP) + c * KP + slot[None, :]
    tl.store(cand_v_ptr + cand, best_v, mask=in_r[:, None])
    tl.store(cand_i_ptr + cand, best_i, mask=in_r[:, None])


@triton.jit
def _finalize_kernel(
    part_m_ptr, part_s_ptr, lse_c_ptr, cand_v_ptr, cand_i_ptr, tok_id_ptr, tok_lc_ptr,
    out_ptr, topv_ptr, topi_ptr,
    S, V, n_oov, NC, K, norm_chunk, stride_out,
    NC_PAD: tl.constexpr, S_PAD: tl.constexpr, KP: tl.constexpr,
    BLOCK_P: tl.constexpr, BLOCK_O: tl.constexpr, BLOCK_N: tl.constexpr,
    WRITE_FULL: tl.constexpr,
):
    NEG: tl.constexpr = float("-inf")
    SENT: tl.constexpr = 2**31 - 1
    b = tl.program_id(0).to(tl.int64)
    pc = tl.program_id(1)

    offs_c = tl.arange(0, NC_PAD)
    in_c = offs_c < NC
    pm = tl.load(part_m_ptr + b * NC + offs_c, mask=in_c, other=NEG)
    ps = tl.load(part_s_ptr + b * NC + offs_c, mask=in_c, other=0.0)
    mg = tl.reduce(pm, 0, MAXF)  # finite: every chunk saw >= 1 vocabulary column
    lse_g = mg + tl.log(tl.reduce(ps * tl.exp(pm - mg), 0, SUMF))
    log_z = logaddexp(lse_g, tl.load(lse_c_ptr + b))

    if pc == 0:
        best_v = tl.full([1, KP], NEG, dtype=tl.float32)
        best_i = tl.full([1, KP], SENT, dtype=tl.int32)
        n_pool = NC * KP
        for p0 in range(0, n_pool, BLOCK_P):
            offs_p = p0 + tl.arange(0, BLOCK_P)
            in_p = offs_p < n_pool
            cv = tl.load(cand_v_ptr + b * n_pool + offs_p, mask=in_p, other=NEG)
            ci = tl.load(cand_i_ptr + b * n_pool + offs_p, mask=in_p, other=SENT)
            best_v, best_i = topk_merge(best_v, best_i, cv[None, :], ci[None, :], KP)
        # extended (OOV) slots V .. V + n_oov - 1: only copy mass, -inf when not in the source
        offs_s = tl.arange(0, S_PAD)
        lid = tl.load(tok_id_ptr + b * S + offs_s, mask=offs_s < S, other=-1)
        llc = tl.load(tok_lc_ptr + b * S + offs_s, mask=offs_s < S, other=NEG)
        for o0 in range(0, n_oov, BLOCK_O):
            offs_o = o0 + tl.arange(0, BLOCK_O)
            in_o = offs_o < n_oov
            tok = V + offs_o
            lc = tl.reduce(tl.where(lid[None, :] == tok[:, None], llc[None, :], NEG), 1, MAXF)
            if WRITE_FULL:
                tl.store(out_ptr + b * stride_out + tok, lc - log_z, mask=in_o)
            ti = tl.where(in_o, tok, SENT).to(tl.int32)
            best_v, best_i = topk_merge(best_v, best_i, tl.where(in_o, lc, NEG)[None, :],
                                        ti[None, :], KP)
        rank = rank_in_buffer(best_v, best_i, KP)
        keep = rank < K
        tl.store(topv_ptr + b * K + rank, best_v - log_z, mask=keep)
        tl.store(topi_ptr + b * K + rank, best_i.to(tl.int64), mask=keep)

    if WRITE_FULL:
        n_start = pc * norm_chunk
        n_end = tl.minimum(n_start + norm_chunk, V)
        for n0 in range(n_start, n_end, BLOCK_N):
            offs = n0 + tl.arange(0, BLOCK_N)
            ok = offs < n_end
            x = tl.load(out_ptr + b * stride_out + offs, mask=ok, other=0.0)
            tl.store(out_ptr + b * stride_out + offs, x - log_z, mask=ok)


def _sm_count(device: torch.device) -> int:
    if device.type == "cuda":
        return torch.cuda.get_device_properties(device).multi_processor_count
    return 1


def copy_attention_step_triton(
    s: torch.Tensor,
    h: torch.Tensor,
    src_ids: torch.Tensor,
    src_mask: Optional[torch.Tensor],
    W_o: torch.Tensor,
    b_o: Optional[torch.Tensor],
    W_c: Optional[torch.Tensor],
    n_oov: int,
    k: int,
    *,
    query: Optional[torch.Tensor] = None,
    return_logprobs: bool = True,
    check_ids: bool = True,
    allow_tf32: bool = False,
    block_v: int = 128,
    num_v_chunks: Optional[int] = None,
    norm_chunks: Optional[int] = None,
    num_warps: int = 4,
    gemm: str = "auto",
) -> CopyAttentionOutput:
    """Launcher of the fused step; same contract as ``copy_attention_step_naive``.

    ``block_v``, ``num_v_chunks``, ``norm_chunks`` and ``num_warps`` (of kernel 2) are
    tuning knobs (tests use small blocks to cover many tiles and chunks with a small
    vocabulary); by default the chunk counts aim at about 4 programs per SM on CUDA. No
    autotuning (it needs a GPU; the defaults are untuned). Offline sm_90 compilation
    (ptxas -v) of kernel 2 with 16 rows x 128 columns, KP = 32, fp16: 198 registers and no
    spills at 8 warps, 168 registers and small spills at 4; 64-row blocks spill ~1 KB.
    Measured on an H100 (bench/RESULTS_kernels.md), 4 warps beat 8 despite those spills.

    ``gemm``: where psi_g = s W_o^T + b comes from. ``"fused"``: ``tl.dot`` inside kernel 2,
    nothing of size [B, V] is stored. ``"torch"``: one fp32 cuBLAS ``addmm`` into a [B, V]
    scratch that kernel 2 reads instead (the reference's own arithmetic). ``"auto"``: fused
    for fp16/bf16 and for fp32 up to 32 rows, torch otherwise: on the H100, fp32 ``tl.dot``
    without TF32 is emulated and took 6.6 ms of the 7.9 ms step at 1,024 rows x 44K, where
    cuBLAS takes 0.9 ms.
    """
    check_inputs(s, h, src_ids, src_mask, W_o, b_o, W_c, n_oov, k, check_ids, query)
    if k > MAX_K:
        raise ValueError(f"the Triton path supports k <= {MAX_K}, got k={k}; use backend='torch'")
    if block_v < 16 or block_v & (block_v - 1):
        raise ValueError(f"block_v must be a power of two >= 16, got {block_v}")
    if gemm not in ("auto", "fused", "torch"):
        raise ValueError(f"gemm must be 'auto', 'fused' or 'torch', got {gemm!r}")
    B, S, HQ = h.shape  # HQ: width of h and of the attention / copy query
    H = s.shape[1]  # width of the generation input s
    q = s if query is None else query
    if S > MAX_S:
        raise ValueError(f"the Triton path supports source length S <= {MAX_S}, got S={S}; "
                         "use backend='torch'")
    V = W_o.shape[0]
    n_ext = V + n_oov
    dev = s.device
    f32 = torch.float32
    if src_mask is None:
        src_mask = torch.ones(B, S, dtype=torch.bool, device=dev)
    mask_u8 = src_mask.view(torch.uint8)  # same bytes; avoids int1 pointers
    # Only the innermost dimension must be unit-stride (a beam-expanded h, stride 0 on the
    # batch dimension, is used as is).
    if h.stride(2) != 1:
        h = h.contiguous()
    precision = "tf32" if (allow_tf32 and s.dtype == f32) else "ieee"
    if s.dtype != f32:
        precision = "ieee"  # ignored by tl.dot for 16-bit inputs

    S_PAD = max(16, next_pow2(S))  # tl.dot needs M >= 16
    BLOCK_H = max(16, min(64, next_pow2(HQ)))  # kernel 1 tiles (over HQ)
    BLOCK_K = max(16, min(64, next_pow2(H)))  # kernel 2 reduction tile (over H)
    KP = next_pow2(k)
    BLOCK_B = 16
    BLOCK_V = block_v

    attn = torch.empty(B, S, dtype=f32, device=dev)
    context = torch.empty(B, HQ, dtype=f32, device=dev)
    tok_id = torch.empty(B, S, dtype=torch.int64, device=dev)
    tok_lc = torch.empty(B, S, dtype=f32, device=dev)
    lse_c = torch.empty(B, dtype=f32, device=dev)
    has_wc = W_c is not None
    wc = W_c if has_wc else h  # dummy pointer, never read
    _attn_copy_kernel[(B,)](
        q, h, src_ids, mask_u8, wc,
        attn, context, tok_id, tok_lc, lse_c,
        S, HQ, n_ext,
        q.stride(0), q.stride(1),
        h.stride(0), h.stride(1), h.stride(2),
        src_ids.stride(0), src_ids.stride(1),
        mask_u8.stride(0), mask_u8.stride(1),
        W_c.stride(0) if has_wc else 0, W_c.stride(1) if has_wc else 0,
        S_PAD=S_PAD, BLOCK_H=BLOCK_H, BLOCK_K=BLOCK_H, PRECISION=precision, HAS_WC=has_wc,
    )

    row_blocks = triton.cdiv(B, BLOCK_B)
    n_tiles = triton.cdiv(V, BLOCK_V)
    target = 4 * _sm_count(dev)
    nc = num_v_chunks or max(1, triton.cdiv(target, row_blocks))
    nc = max(1, min(nc, n_tiles))
    chunk_v = triton.cdiv(n_tiles, nc) * BLOCK_V
    nc = triton.cdiv(V, chunk_v)  # every chunk starts below V

    out = torch.empty(B, n_ext, dtype=f32, device=dev) if return_logprobs else attn  # dummy
    stride_out = out.stride(0) if return_logprobs else 0
    part_m = torch.empty(B, nc, dtype=f32, device=dev)
    part_s = torch.empty(B, nc, dtype=f32, device=dev)
    cand_v = torch.empty(B, nc, KP, dtype=f32, device=dev)
    cand_i = torch.empty(B, nc, KP, dtype=torch.int32, device=dev)
    has_bias = b_o is not None
    bias = b_o if has_bias else W_o  # dummy pointer, never read
    if gemm == "auto":
        gemm = "torch" if (s.dtype == f32 and precision == "ieee" and B > 32) else "fused"
    if gemm == "torch":
        s32, w32 = s.float(), W_o.float()
        psi = (torch.addmm(b_o.float(), s32, w32.t()) if has_bias else s32 @ w32.t())
    else:
        psi = attn  # dummy pointer, never read
    _gen_topk_kernel[(row_blocks, nc)](
        s, W_o, bias, psi, tok_id, tok_lc, out,
        part_m, part_s, cand_v, cand_i,
        B, S, H, V, chunk_v, nc, stride_out, psi.stride(0),
        s.stride(0), s.stride(1), W_o.stride(0), W_o.stride(1),
        bias.stride(0) if has_bias else 0,
        HAS_BIAS=has_bias, WRITE_FULL=return_logprobs, PSI_GIVEN=gemm == "torch",
        BLOCK_B=BLOCK_B, BLOCK_V=BLOCK_V, BLOCK_K=BLOCK_K, KP=KP, PRECISION=precision,
        num_warps=num_warps,
    )

    BLOCK_N = 1024
    if norm_chunks is None:
        norm_chunks = max(1, triton.cdiv(target, B)) if return_logprobs else 1
    norm_chunks = max(1, min(norm_chunks, triton.cdiv(V, BLOCK_N)))
    norm_chunk = triton.cdiv(triton.cdiv(V, norm_chunks), BLOCK_N) * BLOCK_N
    norm_chunks = triton.cdiv(V, norm_chunk)
    top_v = torch.empty(B, k, dtype=f32, device=dev)
    top_i = torch.empty(B, k, dtype=torch.int64, device=dev)
    _finalize_kernel[(B, norm_chunks)](
        part_m, part_s, lse_c, cand_v, cand_i, tok_id, tok_lc,
        out, top_v, top_i,
        S, V, n_oov, nc, k, norm_chunk, stride_out,
        NC_PAD=next_pow2(nc), S_PAD=next_pow2(S), KP=KP,
        BLOCK_P=min(1024, next_pow2(nc * KP)), BLOCK_O=min(64, next_pow2(max(n_oov, 1))),
        BLOCK_N=BLOCK_N, WRITE_FULL=return_logprobs,
    )
    return CopyAttentionOutput(out if return_logprobs else None, attn, context, top_v, top_i)
