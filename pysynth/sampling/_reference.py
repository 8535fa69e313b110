"""Pure-Python twin of ``pysynth._core.sampling`` (the specification and test oracle).

Same function names and signatures as the compiled module, and the same integer and
floating-point operations in the same order, so that both backends emit the *same*
candidates for the same seed.  Readability over speed: plain loops, Python ints.

Keyword query generation model (KQGM) of Ding & Balog (2018), "Generating Synthetic
Data for Neural Keyword-to-Question Models", Sect. 3.1, Algorithm 1, which extends the
known-item query simulation of Azzopardi, de Rijke & Balog (2007), "Building Simulated
Queries for Known-Item Topics" (SIGIR'07).  The public, validating layer is
:mod:`pysynth.sampling`; this module (and the compiled one) re-checks its inputs and
raises ``ValueError`` for anything malformed.

Definitions
===========
Inputs (all over one vocabulary of ``V`` ids; a phrase such as ``honda_crf_230`` is one id)

* question ``q`` (row ``i`` of ``q_ids``/``q_offsets``), ``|q|`` = its number of tokens,
  excluded words included;
* cluster document ``C_q`` = row ``cluster_index[i]`` of the cluster table
  ``c_ids``/``c_offsets`` (its paraphrases concatenated); ``cluster_index[i] == -1``, or
  a row without any samplable token, means "no paraphrases": ``C_q = q``;
* ``cf[t]`` = n(t), the collection term frequency; ``df[t]`` the number of questions
  containing ``t``; ``n_docs`` = N, the number of questions of the collection;
* ``exclude[t] != 0``: ``t`` is never sampled (question words, Sect. 3.1.2, and anything
  else).  Excluded tokens are deleted from ``q`` and ``C_q`` before the estimates below,
  and from the collection model;
* ``length_dist[s]`` = P(s) for s = 0 .. S (``length_dist[0]`` must be 0);
* mixture weights ``w_question``, ``w_cluster``, ``w_collection`` (summing to 1):
  baseline Eq. 1 = (1 - lambda, 0, lambda); paraphrase Eq. 6 = (alpha, beta, 1 - alpha - beta).

Document model P(t|d) of a document d (d = q or C_q) from its non-excluded tokens, with
its distinct terms in order of first occurrence and weights

* ``popular`` (Eq. 3):         w(t) = n(t, d)
* ``discriminative`` (Eq. 4):  w(t) = 1.0 / cf[t]   (b(t, d) = 1; 1 / P(t) up to the constant
  sum_t n(t), which cancels)
* ``combination`` (Eq. 5):     w(t) = n(t, d) * log(N / df[t])   (``math.log(n_docs / df)``)

and P(t|d) = w(t) / W, W = w(t_0) + w(t_1) + ... summed left to right.  If every weight
is 0 (combination, every term in all N questions) the document falls back to the
``popular`` weights.  Collection model P(t) (Eq. 2) = cfB[t] / T with cfB[t] = cf[t] for
non-excluded terms (0 for excluded ones) and T = sum cfB.

Term model (Eq. 1 / Eq. 6): P(t|theta_q) = w_question P(t|q) + w_cluster P(t|C_q)
+ w_collection P(t).

Algorithm 1 (per question i and candidate c = 0 .. m-1)

1. length: ``S_q = min(|q| - 1, S)``; if ``sum_{1 <= s <= S_q} P(s) > 0``, s is drawn from
   P(s | 1 <= s <= S_q) (the paper's "s < |q|"); otherwise (short questions, e.g.
   ``|q| <= 3`` with P(s) on [3, 7]) ``s = max(1, |q| - 1)``: the longest query shorter
   than the question, one term for a one-token question.
2. s times: draw a term from P(t|theta_q) with the terms chosen so far zeroed and the rest
   renormalized (Alg. 1 line 9), i.e. s distinct terms, never an excluded one.  When no
   term with non-zero probability is left, the candidate stops early (it is shorter than
   s; the offsets tell).

A draw is *rejection sampling* from the full mixture (draw a component, then a term of
it; a term chosen before is rejected), which has exactly the zeroed-and-renormalized
distribution.  After ``max_rejections`` rejected attempts in a row, the draw is made by
*explicit renormalization* instead (below), which has the same distribution, so the
result never depends on the bound except through which random words are used; this
bounds the work of a draw and can never loop.

Randomness (counter-based: every word depends only on seed, question, candidate, counter)
-----------------------------------------------------------------------------------------
``mix64`` is the SplitMix64 finalizer (Steele, Lea & Flood 2014; Stafford's Mix13)::

    mix64(z): z = (z ^ z >> 30) * 0xBF58476D1CE4E5B9; z = (z ^ z >> 27) * 0x94D049BB133111EB;
              return z ^ z >> 31                                (all mod 2**64)

    seed_key      = mix64(seed + GAMMA)                          GAMMA = 0x9E3779B97F4A7C15
    question_key  = mix64(seed_key + (first_index + i) * KQ)     KQ    = 0xD1B54A32D192ED03
    candidate_key = mix64(question_key + c * KC)                 KC    = 0xD6E8FEB86659FD93
    word(k)       = mix64(candidate_key + (k + 1) * GAMMA)       k = 0, 1, 2, ... (the counter)

(``word`` is the SplitMix64 stream whose state starts at ``candidate_key``.)  Each
candidate uses its words in order: word 0 is its length; then each draw uses new words.
``unif(w) = (w >> 11) * 2**-53`` in [0, 1); ``below(w, n) = (w * n) >> 64`` in [0, n)
(bias below n / 2**64).  Because of ``first_index``, generating questions a..b-1 of a
corpus with ``first_index=a`` gives exactly the rows of one call over the whole corpus,
and no result depends on ``workers``.

Sampling a length (word 0): ``x = unif(w) * P_tot`` with ``cum[s] = P(1) + ... + P(s)``
(left to right) and ``P_tot = cum[S_q]``; s = the smallest s <= S_q with ``x < cum[s]``
(the largest s <= S_q with P(s) > 0 if rounding leaves none).

Draw attempt (rejection mode), components in the order question, cluster, collection:

* word a: ``u = unif(a)``; component = question if ``u < w_question``, else cluster if
  ``u < w_question + w_cluster``, else collection (a component of weight 0 is never
  taken: if rounding points at one, the last component with positive weight is used);
* question/cluster document: word b: ``x = unif(b) * W``; the term is the first one with
  ``x < cum_d[j]`` (``cum_d`` = prefix sums of the weights, left to right; the last term
  with a positive weight if rounding leaves none);
* collection: integer alias table (Walker 1977, built as Vose 1991 with exact integers,
  see :func:`_alias_table`) over all ``V`` ids (ids with cfB = 0 have ``prob = 0``): words
  b, c: ``j = below(b, V)``, ``r = below(c, T)``; the term is ``j`` if ``r < prob[j]`` else
  ``alias[j]``.  Exact: P(t) = cfB[t] / T (requires ``T * V < 2**62``).

Draw by explicit renormalization (after ``max_rejections`` rejections, ``0`` = always):
masses ``M_d = w_d * (R_d / W_d)`` with ``R_d`` = the sum of the weights of the not yet
chosen terms of d (left to right, skipping chosen ones), and
``M_B = w_collection * (float(R_B) / float(T))`` with ``R_B = T - sum of cfB over the chosen
terms`` (exact integers).  If ``M_q + M_c + M_B`` (left to right) is 0 the candidate ends.
Else word a: ``x = unif(a) * (M_q + M_c + M_B)`` picks the component as above (with the M's);
then for a document, word b: ``x = unif(b) * R_d``, the first not chosen term with
``x < (running sum of the not chosen weights)``; for the collection, word b:
``r = below(b, R_B)``, the first not chosen term (id order) whose running sum of cfB over
not chosen terms exceeds r.
"""
from __future__ import annotations

import bisect
import math
from itertools import accumulate
from typing import List, Optional, Sequence, Tuple

import numpy as np

from pysynth import _validate as _v

__all__ = ["generate", "random_words", "STRATEGIES", "mix64"]

STRATEGIES = ("popular", "discriminative", "combination")

_M64 = (1 << 64) - 1
GAMMA = 0x9E3779B97F4A7C15
KQ = 0xD1B54A32D192ED03
KC = 0xD6E8FEB86659FD93
_TWO_M53 = 2.0 ** -53
_WEIGHT_EPS = 1e-9  # |w_question + w_cluster + w_collection - 1| allowed


def mix64(z: int) -> int:
    """SplitMix64 finalizer (Stafford Mix13), a bijection of 64-bit integers."""
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _M64
    return z ^ (z >> 31)


def _seed_key(seed: int) -> int:
    return mix64((seed + GAMMA) & _M64)


def _question_key(seed_key: int, gq: int) -> int:
    return mix64((seed_key + gq * KQ) & _M64)


def _candidate_key(question_key: int, c: int) -> int:
    return mix64((question_key + c * KC) & _M64)


class _Words:
    """The counter-based stream of one candidate: word(k) = mix64(key + (k + 1) * GAMMA)."""

    __slots__ = ("state",)

    def __init__(self, key: int):
        self.state = key

    def next(self) -> int:
        self.state = (self.state + GAMMA) & _M64
        return mix64(self.state)


def _unif(w: int) -> float:
    return (w >> 11) * _TWO_M53


def _below(w: int, n: int) -> int:
    return (w * n) >> 64


def _check_seed(seed) -> int:
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, (int, np.integer)):
        raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
    seed = int(seed)
    if not 0 <= seed <= _M64:
        raise ValueError(f"seed must be an integer in [0, 2**64), got {seed}")
    return seed


def _check_int(name: str, value, lo: int) -> int:
    # the compiled core raises ValueError for a wrong type too
    return _v.int_range(value, name, lo, (1 << 63) - 1, wrong_type=ValueError)


def _check_workers(workers) -> None:
    _v.workers(workers)


def random_words(seed: int, question_index: int, candidate_index: int, count: int) -> np.ndarray:
    """The first ``count`` random words of candidate ``candidate_index`` of question
    ``question_index`` (global index, i.e. ``first_index + i``), as uint64.

    Word 0 decides the candidate's length; the later words its terms (see the module
    docstring).  Exposed so that the counter-based generator can be tested on its own.
    """
    seed = _check_seed(seed)
    q = _check_int("question_index", question_index, 0)
    c = _check_int("candidate_index", candidate_index, 0)
    count = _check_int("count", count, 0)
    words = _Words(_candidate_key(_question_key(_seed_key(seed), q), c))
    return np.array([words.next() for _ in range(count)], dtype=np.uint64)


def collection_stats(ids, offsets, vocab_size: int) -> Tuple[np.ndarray, np.ndarray]:
    """Collection statistics of documents ``ids[offsets[i]:offsets[i+1]]`` over the ids
    ``[0, vocab_size)`` (Ding & Balog 2018, Eq. 2 and 5).

    Parameters
    ----------
    ids : int32 (n_ids)
    offsets : int64 (n_docs + 1), from 0 to ``n_ids``, non-decreasing
    vocab_size : int
        V; every id must lie in ``[0, V)``.

    Returns
    -------
    (cf, df) : int64 arrays of length V
        ``cf[t]`` = n(t), the occurrences of ``t``; ``df[t]`` = the number of documents
        containing ``t`` (``n_docs`` = N is ``len(offsets) - 1``).  Single-threaded by
        design: it is memory-bound and runs once per corpus (0.022 s for 1M questions).
    """
    V = _check_int("vocab_size", vocab_size, 0)
    a = _as(ids, np.int32, "ids")
    off = _as(offsets, np.int64, "offsets")
    _v.offsets(off, a.shape[0], "offsets", "the number of ids")
    if off.shape[0] - 1 >= 0xFFFFFFFF:
        raise ValueError("offsets: at most 2**32 - 2 documents")
    if a.size and (int(a.min()) < 0 or int(a.max()) >= V):
        bad = int(a[(a < 0) | (a >= V)][0])
        raise ValueError(f"ids contains id {bad} outside the vocabulary [0, {V})")
    n = off.shape[0] - 1
    cf = np.bincount(a, minlength=V).astype(np.int64)
    row = np.repeat(np.arange(n, dtype=np.int64), np.diff(off))
    pairs = np.unique(row * V + a.astype(np.int64))  # distinct (document, id)
    df = np.bincount(pairs % V if V else pairs, minlength=V).astype(np.int64)
    return cf, df


def order_like_questions(q_ids, q_offsets, c_ids, c_offsets, m: int) -> np.ndarray:
    """Terms of every candidate in the order they occur in its question: candidate ``c``
    belongs to question ``c // m``.

    A term's key is its first position in the question; terms absent from it (drawn from
    paraphrases only) follow in their own order.  Keyword queries people write mostly keep
    the question's word order (T0), and SDM's ordered windows reward it.

    Parameters
    ----------
    q_ids : int32 (n_ids), q_offsets : int64 (n_questions + 1)
        The questions' terms.
    c_ids : int32, c_offsets : int64 (n_questions * m + 1)
        The candidates' terms, ``m`` per question.
    m : int
        Candidates per question (>= 1).

    Returns
    -------
    int32 array like ``c_ids``: each candidate's terms reordered (``c_offsets`` unchanged).
    """
    m = _check_int("m", m, 1)
    q = _as(q_ids, np.int32, "q_ids")
    q_off = _v.offsets(_as(q_offsets, np.int64, "q_offsets"), q.shape[0], "q_offsets", "the number of ids")
    cid = _as(c_ids, np.int32, "c_ids")
    coff = _v.offsets(_as(c_offsets, np.int64, "c_offsets"), cid.shape[0], "c_offsets", "the number of ids")
    nq, nc = q_off.shape[0] - 1, coff.shape[0] - 1
    if nc // m != nq or nc % m:
        raise ValueError(f"c_offsets must hold m = {m} candidates per question ({nq} questions), got {nc} candidates")
    for name, a in (("q_ids", q), ("c_ids", cid)):
        if a.size and int(a.min()) < 0:
            raise ValueError(f"{name} contains the negative id {int(a.min())}")
    if cid.size == 0:
        return cid.copy()
    V = np.int64(max(int(q.max(initial=0)), int(cid.max(initial=0))) + 1)
    q_row = np.repeat(np.arange(nq, dtype=np.int64), np.diff(q_off))
    pos = np.arange(q.shape[0], dtype=np.int64) - q_off[q_row]
    key = q_row * V + q
    order = np.lexsort((pos, key))
    ukey, first = np.unique(key[order], return_index=True)  # first occurrence of each (question, term)
    upos = pos[order][first]
    c_idx = np.repeat(np.arange(nc, dtype=np.int64), np.diff(coff))
    j = np.arange(cid.shape[0], dtype=np.int64) - coff[c_idx]
    ckey = (c_idx // m) * V + cid
    at = np.minimum(np.searchsorted(ukey, ckey), max(ukey.shape[0] - 1, 0))
    found = (ukey[at] == ckey) if ukey.size else np.zeros(ckey.shape, bool)
    p = np.where(found, upos[at] if ukey.size else 0, (1 << 40) + j)
    return cid[np.lexsort((p, c_idx))]


# ----------------------------------------------------------------------------------
# validation (the same checks, in the same order, as csrc/src/sampling.cpp)
# ----------------------------------------------------------------------------------
def _as(a, dtype, name: str) -> np.ndarray:
    arr = np.asarray(a)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be 1-D, got {arr.ndim}-D")
    if arr.size and arr.dtype != dtype:
        if dtype == np.float64:
            if arr.dtype.kind not in "fiu":
                raise ValueError(f"{name} must be a float64 array, got {arr.dtype}")
        elif arr.dtype.kind not in "iub":
            raise ValueError(f"{name} must be an integer array, got {arr.dtype}")
    return np.ascontiguousarray(arr, dtype=dtype)


def _check_offsets(off: np.ndarray, total: int, name: str) -> None:
    _v.offsets(off, total, name, "the number of ids")


def _check_ids(ids: np.ndarray, vocab: int, name: str) -> None:
    if ids.size and (int(ids.min()) < 0 or int(ids.max()) >= vocab):
        bad = int(ids[(ids < 0) | (ids >= vocab)][0])
        raise ValueError(f"{name} contains id {bad} outside the vocabulary [0, {vocab}) of cf")


class _Doc:
    """Distinct samplable terms of a document (first-occurrence order) with weights."""

    __slots__ = ("terms", "w", "cum", "total", "last")

    def __init__(self, terms: List[int], w: List[float]):
        self.terms = terms
        self.w = w
        self.cum = list(accumulate(w))
        self.total = self.cum[-1] if w else 0.0
        last = -1
        for j, x in enumerate(w):
            if x > 0.0:
                last = j
        self.last = last


def _doc(tokens, strategy: int, exclude, cf, idf) -> Optional[_Doc]:
    counts = {}
    for t in tokens:
        t = int(t)
        if exclude[t]:
            continue
        counts[t] = counts.get(t, 0) + 1
    if not counts:
        return None
    terms = list(counts)
    if strategy == 0:
        w = [float(n) for n in counts.values()]
    elif strategy == 1:
        w = [1.0 / cf[t] for t in terms]
    else:
        w = [n * idf[t] for t, n in counts.items()]
        if all(x == 0.0 for x in w):
            w = [float(n) for n in counts.values()]
    return _Doc(terms, w)


def _alias_table(cfb: Sequence[int]) -> Tuple[List[int], List[int], List[int], int]:
    """Integer alias table over all ids ``j = 0 .. V-1``.

    Scaled weights ``a[j] = cfB[j] * V``, bucket capacity ``T = sum cfB``. Vose's
    construction with exact integers: ``small`` / ``large`` are the indices with
    ``a < T`` / ``a >= T`` in increasing order, used as stacks (pop from the end); pop
    ``l`` from small and ``g`` from large, ``prob[l] = a[l]``, ``alias[l] = g``,
    ``a[g] -= T - a[l]``, push ``g`` to small if ``a[g] < T`` else to large; at the end
    every index left in either stack gets ``prob = T`` (alias itself).
    Returns (terms with cfB > 0 ascending, prob, alias, T).
    """
    n = len(cfb)
    T = sum(cfb)
    a = [x * n for x in cfb]
    prob = [0] * n
    alias = list(range(n))
    small = [j for j in range(n) if a[j] < T]
    large = [j for j in range(n) if a[j] >= T]
    while small and large:
        lo = small.pop()
        g = large.pop()
        prob[lo] = a[lo]
        alias[lo] = g
        a[g] = a[g] - (T - a[lo])
        if a[g] < T:
            small.append(g)
        else:
            large.append(g)
    for j in large:
        prob[j] = T
    for j in small:
        prob[j] = T
    terms = [t for t, x in enumerate(cfb) if x > 0]
    return terms, prob, alias, T


def _pick3(x: float, m0: float, m1: float, m2: float) -> int:
    """First component k with x < m0 + .. + mk (left to right); else the last with m > 0."""
    if x < m0:
        return 0
    if x < m0 + m1:
        return 1
    if m2 > 0.0:
        return 2
    return 1 if m1 > 0.0 else 0


def generate(q_ids, q_offsets, c_ids, c_offsets, cluster_index, cf, df, n_docs, exclude,
             length_dist, strategy, w_question, w_cluster, w_collection, m, seed, first_index,
             max_rejections, workers):
    """Sample ``m`` keyword query candidates per question (Ding & Balog 2018, Alg. 1).

    Parameters
    ----------
    q_ids, q_offsets : int32 ids, int64 offsets (n + 1)
        The questions (after phrase detection: a phrase is one id).
    c_ids, c_offsets : int32 ids, int64 offsets (n_clusters + 1)
        The cluster table: row j = the concatenated paraphrases of a cluster.
    cluster_index : int64 (n)
        Row of the cluster table of each question, ``-1`` for none (then ``C_q = q``).
    cf, df : int64 (V)
        Collection term frequency n(t) and question frequency df(t) over the corpus Q.
    n_docs : int
        N, the number of questions of the corpus Q (Eq. 5).
    exclude : uint8 (V)
        Non-zero = never sampled (question words, ...).
    length_dist : float64 (S + 1)
        P(s) for s = 0 .. S; ``length_dist[0]`` must be 0.
    strategy : {"popular", "discriminative", "combination"}
        P(t|q) of Eq. 3, 4 or 5.
    w_question, w_cluster, w_collection : float
        Mixture weights of P(t|q), P(t|C_q) and P(t) (Eq. 1: 1-lambda, 0, lambda;
        Eq. 6: alpha, beta, 1-alpha-beta); non-negative, summing to 1.
    m : int
        Candidates per question (>= 1).
    seed : int
        In [0, 2**64).
    first_index : int or int array (n)
        Global index of the first question (the random stream of question i is keyed by
        ``first_index + i``), so that chunked calls reproduce one call; or the global index
        of each question (any questions of a corpus, in any order, as one call gives them).
    max_rejections : int
        Rejected attempts before a draw switches to explicit renormalization (>= 0).
    workers : int
        Threads (``-1`` = all cores); the result never depends on it.

    Returns
    -------
    (ids, offsets) : int32 array, int64 array of length n * m + 1
        Candidate ``c`` of question ``i`` is ``ids[offsets[i*m + c] : offsets[i*m + c + 1]]``.
    """
    # ---- arguments ----
    if strategy not in STRATEGIES:
        raise ValueError(f"strategy must be one of {', '.join(STRATEGIES)}; got {strategy!r}")
    strat = STRATEGIES.index(strategy)
    m = _check_int("m", m, 1)
    seed = _check_seed(seed)
    qindex = None
    if isinstance(first_index, (np.ndarray, list, tuple)):  # one global index per question
        qindex = np.asarray(first_index)
        if qindex.ndim != 1:
            raise ValueError(f"first_index must be 1-D, got {qindex.ndim}-D")
        if qindex.size and qindex.dtype.kind not in "iu":
            raise ValueError(f"first_index has an unsupported dtype kind '{qindex.dtype.kind}'")
        qindex = qindex.astype(np.int64)
        first_index = 0
    else:
        first_index = _check_int("first_index", first_index, 0)
    max_rejections = _check_int("max_rejections", max_rejections, 0)
    _check_workers(workers)
    weights = []
    for name, x in (("w_question", w_question), ("w_cluster", w_cluster), ("w_collection", w_collection)):
        x = float(x)
        if not (math.isfinite(x) and 0.0 <= x <= 1.0):
            raise ValueError(f"{name} must be in [0, 1], got {x}")
        weights.append(x)
    wq, wc, wb = weights
    if abs(wq + wc + wb - 1.0) > _WEIGHT_EPS:
        raise ValueError(f"w_question + w_cluster + w_collection must be 1, got {wq + wc + wb!r}")

    # ---- arrays ----
    qi = _as(q_ids, np.int32, "q_ids")
    qo = _as(q_offsets, np.int64, "q_offsets")
    ci = _as(c_ids, np.int32, "c_ids")
    co = _as(c_offsets, np.int64, "c_offsets")
    cidx = _as(cluster_index, np.int64, "cluster_index")
    cfa = _as(cf, np.int64, "cf")
    dfa = _as(df, np.int64, "df")
    exa = _as(exclude, np.uint8, "exclude")
    pl = _as(length_dist, np.float64, "length_dist")
    n_docs = _check_int("n_docs", n_docs, 0)
    V = cfa.shape[0]
    if dfa.shape[0] != V or exa.shape[0] != V:
        raise ValueError(f"cf, df and exclude must have one entry per vocabulary id; got "
                         f"{V}, {dfa.shape[0]} and {exa.shape[0]}")
    _check_offsets(qo, qi.shape[0], "q_offsets")
    _check_offsets(co, ci.shape[0], "c_offsets")
    n = qo.shape[0] - 1
    n_clusters = co.shape[0] - 1
    if cidx.shape[0] != n:
        raise ValueError(f"cluster_index must have one entry per question ({n}), got {cidx.shape[0]}")
    if qindex is not None and qindex.shape[0] != n:
        raise ValueError(f"first_index must be an int or have one entry per question ({n}), got {qindex.shape[0]}")
    if qindex is not None and n and int(qindex.min()) < 0:
        i = int(np.argmax(qindex < 0))
        raise ValueError(f"first_index[{i}] must be >= 0, got {int(qindex[i])}")
    if n and (int(cidx.min()) < -1 or int(cidx.max()) >= n_clusters):
        raise ValueError(f"cluster_index must be -1 or a row of the cluster table [0, {n_clusters})")
    _check_ids(qi, V, "q_ids")
    _check_ids(ci, V, "c_ids")
    if V and (int(cfa.min()) < 0 or int(dfa.min()) < 0):
        raise ValueError("cf and df must be non-negative")
    if V and int(dfa.max()) > n_docs:
        raise ValueError(f"df must be <= n_docs ({n_docs}); got df = {int(dfa.max())}")
    if pl.shape[0] < 2 or not np.all(np.isfinite(pl)) or np.any(pl < 0):
        raise ValueError("length_dist must be finite, non-negative, of length S + 1 >= 2")
    if pl[0] != 0.0:
        raise ValueError(f"length_dist[0] = P(s = 0) must be 0, got {float(pl[0])}")
    if not pl.sum() > 0.0:
        raise ValueError("length_dist must have a positive entry for some s >= 1")
    if n * m > (1 << 62):
        raise ValueError(f"n * m = {n * m} candidates is too many")

    cf_l = [int(x) for x in cfa]
    ex_l = [int(x) != 0 for x in exa]
    cfb = [0 if ex_l[t] else cf_l[t] for t in range(V)]
    T = sum(cfb)
    if wb > 0.0 and T == 0:
        raise ValueError("the collection model (Eq. 2) is empty: cf is 0 for every non-excluded "
                         "term, but w_collection > 0")
    if T * max(V, 1) >= (1 << 62):
        raise ValueError(f"sum(cf) * (vocabulary size) = {T * V} must be < 2**62")
    idf = None
    if strat == 2:
        idf = [math.log(n_docs / int(d)) if d > 0 else math.inf for d in dfa]

    def check_doc_terms(ids_row, where: str) -> None:
        for t in ids_row:
            t = int(t)
            if ex_l[t]:
                continue
            if strat == 1 and cf_l[t] == 0:
                raise ValueError(f"{where} has term {t} with cf 0: the discriminative strategy "
                                 "(Eq. 4) needs cf > 0 for every sampled term; compute stats over "
                                 "all questions and paraphrases")
            if strat == 2 and int(dfa[t]) == 0:
                raise ValueError(f"{where} has term {t} with df 0: the combination strategy "
                                 "(Eq. 5) needs df > 0 for every sampled term; compute stats over "
                                 "all questions and paraphrases")

    # questions: non-empty, at least one samplable token, statistics defined
    for i in range(n):
        row = qi[qo[i]:qo[i + 1]]
        if row.shape[0] == 0:
            raise ValueError(f"question {i} is empty")
        if all(ex_l[int(t)] for t in row):
            raise ValueError(f"question {i} has only excluded terms (question words or terms "
                             "in exclude); drop it (KeywordModel.samplable marks the others) or change the "
                             "exclusion mask")
        check_doc_terms(row, f"question {i}")
    if wc > 0.0:
        used = sorted({int(x) for x in cidx if x >= 0})
        for j in used:
            check_doc_terms(ci[co[j]:co[j + 1]], f"cluster row {j}")

    # ---- tables ----
    S = pl.shape[0] - 1
    pl_l = [float(x) for x in pl]
    len_cum = list(accumulate(pl_l))  # len_cum[0] = 0.0 = P(0)
    alias = _alias_table(cfb) if wb > 0.0 else None

    def draw_length(w0: int, L: int) -> int:
        sq = min(L - 1, S)
        total = len_cum[sq] if sq >= 1 else 0.0
        if not total > 0.0:
            return max(1, L - 1)
        x = _unif(w0) * total
        for s in range(1, sq + 1):
            if x < len_cum[s]:
                return s
        return max(s for s in range(1, sq + 1) if pl_l[s] > 0.0)

    def draw_doc(d: _Doc, w: int) -> int:
        x = _unif(w) * d.total
        j = bisect.bisect_right(d.cum, x)
        if j >= len(d.terms):
            j = d.last
        return d.terms[j]

    def draw_collection(w1: int, w2: int) -> int:
        _, prob, alias_of, total = alias
        j = _below(w1, V)
        r = _below(w2, total)
        return j if r < prob[j] else alias_of[j]

    def remaining(d: _Doc, chosen) -> float:
        r = 0.0
        for t, x in zip(d.terms, d.w):
            if t not in chosen:
                r += x
        return r

    def draw_doc_explicit(d: _Doc, rem: float, chosen, w: int) -> int:
        x = _unif(w) * rem
        acc = 0.0
        last = None
        for t, y in zip(d.terms, d.w):
            if t in chosen or not y > 0.0:
                continue
            acc += y
            last = t
            if x < acc:
                return t
        return last

    def draw_collection_explicit(rem: int, chosen, w: int) -> int:
        terms = alias[0]
        r = _below(w, rem)
        acc = 0
        for t in terms:
            if t in chosen:
                continue
            acc += cfb[t]
            if acc > r:
                return t
        raise AssertionError("unreachable: r < remaining collection mass")

    # ---- sampling ----
    out_ids: List[int] = []
    offsets = np.zeros(n * m + 1, dtype=np.int64)
    skey = _seed_key(seed)
    for i in range(n):
        row = qi[qo[i]:qo[i + 1]]
        L = int(row.shape[0])
        dq = _doc(row, strat, ex_l, cf_l, idf)
        dc = dq
        if wc > 0.0 and cidx[i] >= 0:
            j = int(cidx[i])
            dc = _doc(ci[co[j]:co[j + 1]], strat, ex_l, cf_l, idf) or dq
        docs = (dq, dc)
        qkey = _question_key(skey, first_index + i if qindex is None else int(qindex[i]))
        for c in range(m):
            words = _Words(_candidate_key(qkey, c))
            s = draw_length(words.next(), L)
            chosen: List[int] = []
            chosen_set = set()
            while len(chosen) < s:
                t = None
                for _attempt in range(max_rejections):
                    u = _unif(words.next())
                    k = _pick3(u, wq, wc, wb)
                    if k < 2:
                        t = draw_doc(docs[k], words.next())
                    else:
                        t = draw_collection(words.next(), words.next())
                    if t not in chosen_set:
                        break
                    t = None
                if t is None:  # explicit renormalization over the terms not chosen yet
                    rq = remaining(dq, chosen_set)
                    rc = remaining(dc, chosen_set)
                    mq = wq * (rq / dq.total)
                    mc = wc * (rc / dc.total)
                    rb = 0
                    mb = 0.0
                    if wb > 0.0:
                        rb = T - sum(cfb[x] for x in chosen)
                        mb = wb * (float(rb) / float(T))
                    tot = mq + mc + mb
                    if not tot > 0.0:
                        break  # no term with non-zero probability is left
                    x = _unif(words.next()) * tot
                    k = _pick3(x, mq, mc, mb)
                    if k == 0:
                        t = draw_doc_explicit(dq, rq, chosen_set, words.next())
                    elif k == 1:
                        t = draw_doc_explicit(dc, rc, chosen_set, words.next())
                    else:
                        t = draw_collection_explicit(rb, chosen_set, words.next())
                chosen.append(t)
                chosen_set.add(t)
            out_ids.extend(chosen)
            offsets[i * m + c + 1] = len(out_ids)
    return np.array(out_ids, dtype=np.int32), offsets
