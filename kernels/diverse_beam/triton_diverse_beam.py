"""Fused Triton diverse-beam-search step: same contract as ``naive.diverse_beam_step_naive``.

Why two launches are enough. The Hamming penalty only lowers scores (lambda >= 0), and at
most B - B/G distinct tokens are penalized when group g selects. If group g picks token v
of beam b, at most B/G - 1 of the group's candidates rank above it after the penalty, and
every token of beam b that ranks above v *before* the penalty either is one of the <= B - B/G
penalized tokens or still ranks above v after it. So v is among the B best raw
continuations of beam b (same tie rule, lower token first). Hence:

1. ``_beam_topk_kernel``, grid (ceil(batch*B / BLOCK_R), NC): the one pass over the
   [batch, B, V] scores. x = beam_score + logprob in fp32, register top-KP (KP =
   next_pow2(B)) per (beam, vocabulary chunk); writes [batch*B, NC, KP] candidates.
2. ``_group_select_kernel``, grid (batch,): the sequential part, on candidates only. For
   g = 0..G-1: penalty lambda * (count of the token among the picks of groups < g, held in
   registers), then B/G rounds of "best penalized candidate, ties by lower (beam, token)".

The arithmetic is the reference's, in the same order and precision (x = s + lp; x - lam *
count in fp32), so on the interpreter the picks are bit-identical to ``naive``; on a GPU a
fused multiply-add in ``x - lam * count`` can move exact ties by one ulp.
"""
from __future__ import annotations

from typing import Optional

import torch
import triton
import triton.language as tl

from .._triton_common import MAXF, MINF, SUMF, next_pow2, topk_merge
from .naive import DiverseBeamOutput, check_inputs

MAX_BEAMS = 256  # KP = next_pow2(B) register slots per row


@triton.jit
def _beam_topk_kernel(
    lp_ptr, bs_ptr, cand_v_ptr, cand_i_ptr,
    R, V, chunk_v, NC,
    stride_lr, stride_lv, stride_bs,
    BLOCK_R: tl.constexpr, BLOCK_V: tl.constexpr, KP: tl.constexpr,
):
    NEG: tl.constexpr = float("-inf")
    SENT: tl.constexpr = 2**31 - 1
    pid_r = tl.program_id(0)
    c = tl.program_id(1)
    rows = (pid_r * BLOCK_R + tl.arange(0, BLOCK_R)).to(tl.int64)
    in_r = rows < R
    bs = tl.load(bs_ptr + rows * stride_bs, mask=in_r, other=0.0).to(tl.float32)
    v_start = c * chunk_v
    v_end = tl.minimum(v_start + chunk_v, V)
    best_v = tl.full([BLOCK_R, KP], NEG, dtype=tl.float32)
    best_i = tl.full([BLOCK_R, KP], SENT, dtype=tl.int32)
    for v0 in range(v_start, v_end, BLOCK_V):
        offs_v = v0 + tl.arange(0, BLOCK_V)
        ok = in_r[:, None] & (offs_v < v_end)[None, :]
        lp = tl.load(lp_ptr + rows[:, None] * stride_lr + offs_v[None, :] * stride_lv,
                     mask=ok, other=0.0).to(tl.float32)
        x = tl.where(ok, bs[:, None] + lp, NEG)
        tile_i = tl.where(ok, offs_v[None, :], SENT).to(tl.int32)
        best_v, best_i = topk_merge(best_v, best_i, x, tile_i, KP)
    slot = tl.arange(0, KP)
    cand = rows[:, None] * (NC * KP) + c * KP + slot[None, :]
    tl.store(cand_v_ptr + cand, best_v, mask=in_r[:, None])
    tl.store(cand_i_ptr + cand, best_i, mask=in_r[:, None])


@triton.jit
def _group_select_kernel(
    cand_v_ptr, cand_i_ptr, scores_ptr, sel_ptr, parents_ptr, tokens_ptr,
    B, V, G, PER, P, lam,
    PER_PAD: tl.constexpr, P_PAD: tl.constexpr, B_PAD: tl.constexpr,
):
    NEG: tl.constexpr = float("-inf")
    SENT: tl.constexpr = 2**31 - 1
    BIG: tl.constexpr = 2**62
    bt = tl.program_id(0).to(tl.int64)
    offs_r = tl.arange(0, PER_PAD)
    offs_p = tl.arange(0, P_PAD)
    in_r = offs_r < PER
    in_p = offs_p < P
    slot_b = tl.arange(0, B_PAD)
    chosen = tl.full([B_PAD], -1, dtype=tl.int64)  # tokens picked at this step, by slot
    for g in range(G):
        row = bt * B + g * PER + offs_r
        ptr = row[:, None] * P + offs_p[None, :]
        ok = in_r[:, None] & in_p[None, :]
        x = tl.load(cand_v_ptr + ptr, mask=ok, other=NEG)
        tok = tl.load(cand_i_ptr + ptr, mask=ok, other=SENT).to(tl.int64)
        active = ok & (tok != SENT)
        cnt = tl.zeros([PER_PAD, P_PAD], dtype=tl.int32)
        for i in range(g * PER):
            ti = tl.reduce(tl.where(slot_b == i, chosen, 0), 0, SUMF)
            cnt += (tok == ti).to(tl.int32)
        pen = x - lam * cnt.to(tl.float32)
        key = offs_r[:, None].to(tl.int64) * V + tok  # flat index within the group
        for n in range(PER):
            m = tl.reduce(tl.reduce(tl.where(active, pen, NEG), 1, MAXF), 0, MAXF)
            kmin = tl.reduce(tl.reduce(tl.where(active & (pen == m), key, BIG), 1, MINF), 0, MINF)
            sel = active & (key == kmin)
            raw = tl.reduce(tl.reduce(tl.where(sel, x, 0.0), 1, SUMF), 0, SUMF)
            t = kmin % V
            pos = g * PER + n
            out = bt * B + pos
            tl.store(scores_ptr + out, raw)
            tl.store(sel_ptr + out, m)
            tl.store(parents_ptr + out, g * PER + kmin // V)
            tl.store(tokens_ptr + out, t)
            chosen = tl.where(slot_b == pos, t, chosen)
            active = active & (~sel)


def diverse_beam_step_triton(
    logprobs: torch.Tensor,
    beam_scores: torch.Tensor,
    num_groups: int,
    diversity_penalty: float,
    *,
    block_v: Optional[int] = None,
    num_v_chunks: Optional[int] = None,
) -> DiverseBeamOutput:
    """Launcher of the fused step; same contract as ``diverse_beam_step_naive``.

    ``block_v`` and ``num_v_chunks`` are tuning knobs (tests use small ones); by default
    about 4 programs per SM on CUDA, with at most 4096 candidates per group row.
    """
    check_inputs(logprobs, beam_scores, num_groups, diversity_penalty)
    batch, B, V = logprobs.shape
    if B > MAX_BEAMS:
        raise ValueError(f"the Triton path supports B <= {MAX_BEAMS} beams, got {B}; "
                         "use backend='torch'")
    dev = logprobs.device
    R = batch * B
    per = B // num_groups
    KP = next_pow2(B)
    lp = logprobs.reshape(R, V)
    if lp.stride(1) != 1:
        lp = lp.contiguous()
    bs = beam_scores.reshape(R)

    BLOCK_R = 1
    if block_v is None:
        block_v = 1024 if dev.type == "cuda" else 128
    if block_v < 16 or block_v & (block_v - 1):
        raise ValueError(f"block_v must be a power of two >= 16, got {block_v}")
    n_tiles = triton.cdiv(V, block_v)
    if num_v_chunks is None:
        sms = 1
        if dev.type == "cuda":
            sms = torch.cuda.get_device_properties(dev).multi_processor_count
        num_v_chunks = max(1, triton.cdiv(4 * sms, triton.cdiv(R, BLOCK_R)))
    nc = max(1, min(num_v_chunks, n_tiles, max(1, 4096 // KP)))
    chunk_v = triton.cdiv(n_tiles, nc) * block_v
    nc = triton.cdiv(V, chunk_v)

    cand_v = torch.empty(R, nc, KP, dtype=torch.float32, device=dev)
    cand_i = torch.empty(R, nc, KP, dtype=torch.int32, device=dev)
    _beam_topk_kernel[(triton.cdiv(R, BLOCK_R), nc)](
        lp, bs, cand_v, cand_i, R, V, chunk_v, nc,
        lp.stride(0), lp.stride(1), bs.stride(0),
        BLOCK_R=BLOCK_R, BLOCK_V=block_v, KP=KP,
    )

    scores = torch.empty(batch, B, dtype=torch.float32, device=dev)
    sel = torch.empty(batch, B, dtype=torch.float32, device=dev)
    parents = torch.empty(batch, B, dtype=torch.int64, device=dev)
    tokens = torch.empty(batch, B, dtype=torch.int64, device=dev)
    P = nc * KP
    _group_select_kernel[(batch,)](
        cand_v, cand_i, scores, sel, parents, tokens,
        B, V, num_groups, per, P, float(diversity_penalty),
        PER_PAD=next_pow2(per), P_PAD=next_pow2(P), B_PAD=next_pow2(B),
    )
    return DiverseBeamOutput(scores, sel, parents, tokens)
