"""Readable torch reference of one CopyNet decode step (the specification of the Triton path).

Ding & Balog (ICTIR 2018), Sect. 4.2-4.3, Eq. 13-16, with the details their text leaves open
taken from Gu et al. (ACL 2016), "Incorporating Copying Mechanism in Sequence-to-Sequence
Learning" (CopyNet), Sect. 3.2, Eq. 4-8. One call scores one decoder step for ``B`` rows
(beams of one or more sources side by side).

Notation (shapes)::

    s       [B, H]        decoder state s_t
    h       [B, S, H]     encoder states h_1..h_S (pad positions arbitrary; beams of one source
                          may share memory: ``h_src[None].expand(beams, S, H)``)
    src_ids [B, S]        source token ids in the *extended* vocabulary: 0..V-1 are the
                          generation vocabulary, V..V+n_oov-1 the row's out-of-vocabulary
                          source words (pointer-generator convention), int64 (int32 accepted)
    src_mask[B, S]        True where the source position is real (None: all real); any
                          pattern is allowed (right or left padding, holes)
    W_o     [V, H], b_o [V] or None     generation projection
    W_c     [H, H]        copy projection, or None (see below)
    query   [B, H] or None  the state the attention and copy scores read (default: s)

Two options fit models whose output layer reads another vector than the decoder state (e.g.
Ding & Balog's CopyNet in ``pysynth.models.seq2seq``, where psi_g reads a readout layer r_t
while psi_c reads s_t): ``query`` gives the attention / copy query separately (then ``s`` is
only the generation input, [B, Hg], with ``W_o`` [V, Hg], and ``h``, ``query`` and ``W_c``
share the width Hq); ``W_c=None`` says that ``h`` already holds the copy features
tanh(h_j^T W_c) (computed once per source at encoding time, not once per step), so that
psi_c(j) = h_j . query. The attention of step 1 is then taken over ``h`` as given.

The step, all in float32 whatever the input dtype:

1. Attention (Eq. 13), Luong "dot" score: e_j = s . h_j (query . h_j) over the real positions;
   alpha = softmax(e); context c = sum_j alpha_j h_j. The paper leaves the score function
   sigma open ("usually a feedforward network"); the dot score keeps the step free of extra
   parameters (a "general" or MLP score is not offered by this op). The context is returned
   for the caller's next state update, as in CopyNet, where s_{t+1} reads c_t.
   A row with no real position gets alpha = 0 and c = 0.
2. Generation scores (Gu Eq. 7): psi_g(v) = W_o[v] . s + b_o[v] for v in the vocabulary.
   We take the projection (not precomputed logits) so that the fused kernel can do the
   [B, H] x [H, V] product tile by tile and never store [B, V] logits.
3. Copy scores (Eq. 16 / Gu Eq. 8): psi_c(j) = tanh(h_j^T W_c) . s_t for each real position
   j whose id is inside the extended vocabulary; sigma = tanh as in Gu et al. (With
   ``query``: . query instead of . s_t; with ``W_c=None``: h_j instead of tanh(h_j^T W_c).)
4. Mixture with one shared normalizer (Eq. 14-15 / Gu Eq. 4-6)::

       Z      = sum_{v<V} exp(psi_g(v)) + sum_{j real} exp(psi_c(j))
       p(y)   = [ 1{y<V} exp(psi_g(y)) + sum_{j: x_j = y} exp(psi_c(j)) ] / Z

   computed in log space: log p(y) = logaddexp(psi_g(y), log C(y)) - log Z with
   log C(y) = logsumexp_{j: x_j=y} psi_c(j) (a per-token log-sum-exp, no ``log(x + eps)``).
   An extended id >= V that is not in the row's source gets log p = -inf (probability 0).
   A row with no real position: the copy part contributes nothing (Z = sum exp psi_g, and
   log p is the plain generation log-softmax over the vocabulary).
5. Top-k of each row of log p over the extended vocabulary: values descending, ties broken
   by the lower token id (``kernels._common.topk_lowest_index``). k may exceed the number of
   finite entries; the rest are -inf entries, lowest id first.

Out-of-range ids at real positions raise ``ValueError`` (``check_ids=True``, the default;
on CUDA the check costs one device sync). With ``check_ids=False`` such positions still take
part in the attention but are dropped from the copy part; the Triton kernel does the same
and never writes out of bounds.
"""
from __future__ import annotations

from typing import NamedTuple, Optional

import torch

from .._common import check_float, topk_lowest_index

NEG_INF = float("-inf")


class CopyAttentionOutput(NamedTuple):
    """Result of :func:`copy_attention_step`; every float is float32.

    logprobs       [B, V + n_oov]  log p(y) over the extended vocabulary (None when
                                   ``return_logprobs=False``)
    attn           [B, S]          attention weights alpha (0 at masked positions)
    context        [B, H]          context vector c = sum_j alpha_j h_j
    topk_values    [B, k]          the k largest log p(y) per row, descending
    topk_indices   [B, k] int64    their extended-vocabulary ids (ties: lower id first)
    """

    logprobs: Optional[torch.Tensor]
    attn: torch.Tensor
    context: torch.Tensor
    topk_values: torch.Tensor
    topk_indices: torch.Tensor


def check_inputs(s, h, src_ids, src_mask, W_o, b_o, W_c, n_oov, k, check_ids=True, query=None):
    """Shape/dtype/device validation shared by both backends (``ValueError``/``TypeError``)."""
    check_float("s", s, 2)
    check_float("h", h, 3)
    check_float("W_o", W_o, 2)
    B, H = s.shape
    if B < 1 or H < 1:
        raise ValueError(f"s must be [B, H] with B, H >= 1, got {tuple(s.shape)}")
    if query is not None:
        check_float("query", query, 2)
        if query.shape[0] != B or query.shape[1] < 1:
            raise ValueError(f"query must be [B={B}, Hq>=1], got {tuple(query.shape)}")
    Hq = H if query is None else query.shape[1]
    if h.shape[0] != B or h.shape[2] != Hq or h.shape[1] < 1:
        what = "H" if query is None else "Hq (the query width)"
        raise ValueError(f"h must be [B={B}, S>=1, {what}={Hq}], got {tuple(h.shape)}")
    S = h.shape[1]
    if W_o.shape[1] != H or W_o.shape[0] < 1:
        raise ValueError(f"W_o must be [V>=1, H={H}] (H: the width of s), got {tuple(W_o.shape)}")
    V = W_o.shape[0]
    if W_c is not None:
        check_float("W_c", W_c, 2)
        if tuple(W_c.shape) != (Hq, Hq):
            raise ValueError(f"W_c must be [{Hq}, {Hq}] (the width of h), got {tuple(W_c.shape)}")
    floats = [t for t in (s, h, W_o, W_c, query) if t is not None]
    dtypes = {t.dtype for t in floats}
    if len(dtypes) != 1:
        raise ValueError(f"s, h, W_o, W_c and query must share one dtype, got "
                         f"{sorted(map(str, dtypes))}")
    if b_o is not None:
        check_float("b_o", b_o, 1)
        if b_o.shape[0] != V:
            raise ValueError(f"b_o must be [V={V}], got {tuple(b_o.shape)}")
    if not isinstance(src_ids, torch.Tensor) or src_ids.dtype not in (torch.int64, torch.int32):
        raise ValueError("src_ids must be an int64 (or int32) tensor")
    if tuple(src_ids.shape) != (B, S):
        raise ValueError(f"src_ids must be [B, S] = [{B}, {S}], got {tuple(src_ids.shape)}")
    if src_mask is not None:
        if not isinstance(src_mask, torch.Tensor) or src_mask.dtype != torch.bool:
            raise ValueError("src_mask must be a bool tensor (True = real position) or None")
        if tuple(src_mask.shape) != (B, S):
            raise ValueError(f"src_mask must be [B, S] = [{B}, {S}], got {tuple(src_mask.shape)}")
    if not isinstance(n_oov, int) or isinstance(n_oov, bool) or n_oov < 0:
        raise ValueError(f"n_oov must be an int >= 0, got {n_oov!r}")
    if not isinstance(k, int) or isinstance(k, bool) or not 1 <= k <= V + n_oov:
        raise ValueError(f"k must be an int in [1, V + n_oov] = [1, {V + n_oov}], got {k!r}")
    devices = {t.device for t in (s, h, src_ids, W_o, W_c, b_o, src_mask, query) if t is not None}
    if len(devices) != 1:
        raise ValueError(f"all tensors must be on one device, got {sorted(map(str, devices))}")
    if check_ids:
        real = src_ids if src_mask is None else src_ids[src_mask]
        bad = (real < 0) | (real >= V + n_oov)
        if bool(bad.any()):
            raise ValueError(
                f"src_ids at real positions must be in [0, V + n_oov) = [0, {V + n_oov}); "
                f"found {int(real[bad][0])} (pass n_oov large enough, or mask the position)"
            )


def masked_softmax(e: torch.Tensor, valid: torch.Tensor) -> torch.Tensor:
    """Softmax over the last dim restricted to ``valid``; all-invalid rows give zeros."""
    e = e.masked_fill(~valid, NEG_INF)
    m = e.amax(dim=-1, keepdim=True)
    m = torch.where(torch.isfinite(m), m, torch.zeros_like(m))  # all-masked row: any shift
    p = torch.exp(e - m)  # exp(-inf) = 0 at masked positions
    # The max position contributes exp(0) = 1, so the sum is >= 1 unless the row is all
    # masked (sum 0, alpha 0): clamp keeps 0 / 0 away without biasing any real row.
    return p / p.sum(dim=-1, keepdim=True).clamp_min(torch.finfo(p.dtype).tiny)


def scatter_logsumexp(scores: torch.Tensor, ids: torch.Tensor, valid: torch.Tensor, n: int):
    """out[b, y] = logsumexp of scores[b, j] over valid j with ids[b, j] == y; -inf if none.

    Per-token max first, so the sum of exponentials is >= 1 wherever it is non-zero.
    """
    B = scores.shape[0]
    tgt = torch.where(valid, ids, torch.full_like(ids, n))  # invalid -> spare column n
    scores = scores.masked_fill(~valid, NEG_INF)
    mx = torch.full((B, n + 1), NEG_INF, dtype=scores.dtype, device=scores.device)
    mx = mx.scatter_reduce(1, tgt, scores, reduce="amax", include_self=True)
    shift = mx.gather(1, tgt)
    shift = torch.where(valid, shift, torch.zeros_like(shift))
    ex = torch.exp(scores - shift)  # 0 where invalid
    sums = torch.zeros_like(mx).scatter_add(1, tgt, ex)
    out = torch.where(sums > 0, mx + torch.log(sums.clamp_min(torch.finfo(sums.dtype).tiny)),
                      torch.full_like(mx, NEG_INF))
    return out[:, :n]


def copy_attention_step_naive(
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
) -> CopyAttentionOutput:
    """One CopyNet decode step in plain torch (float32 math); see the module docstring."""
    check_inputs(s, h, src_ids, src_mask, W_o, b_o, W_c, n_oov, k, check_ids, query)
    B, S, _ = h.shape
    V = W_o.shape[0]
    n_ext = V + n_oov
    s32, h32, W_o32 = s.float(), h.float(), W_o.float()
    q32 = s32 if query is None else query.float()
    ids = src_ids.long()
    valid = torch.ones(B, S, dtype=torch.bool, device=s.device) if src_mask is None else src_mask

    # 1. attention (Eq. 13), dot score
    e = torch.einsum("bsh,bh->bs", h32, q32)
    attn = masked_softmax(e, valid)
    context = torch.einsum("bs,bsh->bh", attn, h32)

    # 2. generation scores psi_g [B, V] (Gu Eq. 7)
    psi_g = s32 @ W_o32.T
    if b_o is not None:
        psi_g = psi_g + b_o.float()

    # 3. copy scores psi_c [B, S] (Eq. 16, Gu Eq. 8), only for positions that can be copied
    copy_valid = valid & (ids >= 0) & (ids < n_ext)
    feats = h32 if W_c is None else torch.tanh(h32 @ W_c.float())
    psi_c = torch.einsum("bsh,bh->bs", feats, q32)
    psi_c = psi_c.masked_fill(~copy_valid, NEG_INF)

    # 4. shared normalizer (Gu Eq. 6) and the mixture (Eq. 14-15)
    log_z = torch.logaddexp(torch.logsumexp(psi_g, dim=1), torch.logsumexp(psi_c, dim=1))
    log_copy = scatter_logsumexp(psi_c, ids, copy_valid, n_ext)  # [B, V + n_oov]
    gen_ext = torch.nn.functional.pad(psi_g, (0, n_oov), value=NEG_INF)
    logprobs = torch.logaddexp(gen_ext, log_copy) - log_z[:, None]

    # 5. top-k, ties by lower id
    top_v, top_i = topk_lowest_index(logprobs, k)
    return CopyAttentionOutput(logprobs if return_logprobs else None, attn, context, top_v, top_i)
