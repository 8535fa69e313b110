"""Triton device helpers shared by the fused kernels (imported only by ``triton_*.py``).

Top-k in registers. A program keeps, per row, a buffer of its ``KP`` best (value, index)
pairs (``KP`` a power of two, >= k). Order everywhere: value descending, then index
ascending (the rule of ``kernels._common.topk_lowest_index``). ``SENTINEL`` marks an empty
slot or a padding element: it loses every tie, so real ``-inf`` entries (index < SENTINEL)
are still ranked, lowest index first, when a row has fewer finite entries than k.

A tile is merged by pulling its best not-yet-taken element and replacing the buffer's worst
slot if the element beats it. Only the elements that beat the buffer's worst slot *before*
the tile can enter, and the loop runs max-over-rows(count of those, capped at KP) times: the
first tile costs KP rounds, but once the buffer holds good values most tiles of a large
vocabulary cost zero or one round (the dynamic trip count is what keeps the 44K-vocabulary
scan close to a plain log-sum-exp pass).
"""
from __future__ import annotations

import triton
import triton.language as tl

SENTINEL = 2**31 - 1  # int32 max: "no element"

# Reductions are written ``tl.reduce(x, axis, MAXF)`` with the combine functions that
# ``tl.max`` / ``tl.min`` / ``tl.sum`` use themselves (those also upcast < 32-bit inputs;
# everything reduced here is fp32, int32 or int64 already), so the compiled code is the
# same. Why: ``tl.max`` is itself a jit function, and under TRITON_INTERPRET=1 each call of
# a jit function re-patches triton.language (about 4 ms), while ``tl.reduce`` with these
# three combine functions goes straight to numpy: the interpreter tests run ~10x faster.
try:
    from triton.language.standard import _elementwise_max as MAXF
    from triton.language.standard import _elementwise_min as MINF
    from triton.language.standard import _sum_combine as SUMF
except ImportError:  # renamed in a later triton: same results, only a slower interpreter

    @triton.jit
    def MAXF(a, b):
        return tl.maximum(a, b)

    @triton.jit
    def MINF(a, b):
        return tl.minimum(a, b)

    @triton.jit
    def SUMF(a, b):
        return a + b


@triton.jit
def logaddexp(a, b):
    """log(exp(a) + exp(b)) elementwise; -inf when both are -inf (no NaN, no log(0))."""
    m = tl.maximum(a, b)
    none = m == float("-inf")
    m_safe = tl.where(none, 0.0, m)
    total = tl.exp(a - m_safe) + tl.exp(b - m_safe)  # in [1, 2] unless both are -inf
    return tl.where(none, float("-inf"), m_safe + tl.log(tl.where(none, 1.0, total)))


@triton.jit
def beats(v1, i1, v2, i2):
    """(v1, i1) ranks before (v2, i2): larger value, or equal value and smaller index."""
    return (v1 > v2) | ((v1 == v2) & (i1 < i2))


@triton.jit
def topk_merge(best_v, best_i, tile_v, tile_i, KP: tl.constexpr):
    """Merge a [R, T] tile (values fp32, indices int32) into the [R, KP] top-KP buffers.

    ``beats`` and the worst-slot search are written inline: under TRITON_INTERPRET=1 every
    nested jit call costs milliseconds of re-patching, and this loop is the hot one.
    """
    SENT: tl.constexpr = 2**31 - 1
    slot = tl.arange(0, KP)[None, :]
    # worst slot: lowest value, among equal values the highest index (empty: -inf, SENT)
    wv = tl.reduce(best_v, 1, MINF)
    wi = tl.reduce(tl.where(best_v == wv[:, None], best_i, -1), 1, MAXF)
    at_worst = (best_v == wv[:, None]) & (best_i == wi[:, None])
    wpos = tl.reduce(tl.where(at_worst, slot, KP), 1, MINF)
    # only elements that beat the worst slot before this tile can enter
    active = (tile_v > wv[:, None]) | ((tile_v == wv[:, None]) & (tile_i < wi[:, None]))
    rounds = tl.minimum(tl.reduce(tl.reduce(active.to(tl.int32), 1, SUMF), 0, MAXF), KP)
    for _ in range(rounds):
        cv = tl.reduce(tl.where(active, tile_v, float("-inf")), 1, MAXF)
        ci = tl.reduce(tl.where(active & (tile_v == cv[:, None]), tile_i, SENT), 1, MINF)
        better = (cv > wv) | ((cv == wv) & (ci < wi))
        put = (slot == wpos[:, None]) & better[:, None]
        best_v = tl.where(put, cv[:, None], best_v)
        best_i = tl.where(put, ci[:, None], best_i)
        active = active & (tile_i != ci[:, None])
        wv = tl.reduce(best_v, 1, MINF)
        wi = tl.reduce(tl.where(best_v == wv[:, None], best_i, -1), 1, MAXF)
        at_worst = (best_v == wv[:, None]) & (best_i == wi[:, None])
        wpos = tl.reduce(tl.where(at_worst, slot, KP), 1, MINF)
    return best_v, best_i


@triton.jit
def rank_in_buffer(best_v, best_i, KP: tl.constexpr):
    """0-based sorted position of each slot of a [R, KP] buffer (a permutation per row).

    rank[r, s] = number of slots t that rank before slot s; identical (empty) slots are
    ordered by slot number.
    """
    slot = tl.arange(0, KP)
    v_s = best_v[:, :, None]
    i_s = best_i[:, :, None]
    v_t = best_v[:, None, :]
    i_t = best_i[:, None, :]
    same = (v_t == v_s) & (i_t == i_s)
    before = beats(v_t, i_t, v_s, i_s) | (same & (slot[None, None, :] < slot[None, :, None]))
    return tl.reduce(before.to(tl.int32), 2, SUMF)


@triton.jit
def tanh(x):
    """tanh via exp, saturating cleanly at +-1 (tl has no tanh outside libdevice)."""
    return 1.0 - 2.0 / (tl.exp(2.0 * x) + 1.0)


def next_pow2(n: int) -> int:
    return triton.next_power_of_2(max(1, int(n)))
