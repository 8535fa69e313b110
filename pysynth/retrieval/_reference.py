"""Pure-Python twin of ``pysynth._core.retrieval``: the specification and the test oracle.

Same function names and signatures as the compiled module.  Every score is computed with the
same floating-point operations, in the same order, as the C++ code, so both backends return
bit-identical scores and identical rankings.  Readability over speed: a query scores every
document of the collection with plain loops (fine for the small corpora of the tests; use the
compiled backend for real collections).

The index
---------
``build_index`` returns a dict of numpy arrays (documents ``d = 0..N-1``, vocabulary ``0..V-1``,
``T = |C|`` tokens, ``nnz`` (term, document) pairs):

====================  ===========  ========================================================
``indptr``            int64 V+1    postings of term t: ``[indptr[t], indptr[t+1])``
``doc_ids``           int32 nnz    document of each posting, ascending within a term
``tfs``               int32 nnz    occurrences of the term in that document (>= 1)
``pos_indptr``        int64 nnz+1  positions of posting p: ``positions[pos_indptr[p]:pos_indptr[p+1]]``
``positions``         int32 T      0-based token positions, ascending within a posting
``doc_offsets``       int64 N+1    forward index: document d is ``doc_tokens[doc_offsets[d]:doc_offsets[d+1]]``
``doc_tokens``        int32 T      the input ids
``doc_lengths``       int32 N      ``|D|``
``cf``                int64 V      collection frequency (occurrences in the collection)
``max_tf``            int32 V      largest tf of the term in one document (0 if unused)
``impact``            int32 nnz    per term, its postings (indices relative to ``indptr[t]``)
                                   ordered by tf descending, ``|D|`` ascending, doc ascending
``hi_indptr``         int64 V+1    the high layer: per term, its postings with tf >= 2, in doc
``hi_doc_ids``        int32 nh     order: ``hi_doc_ids[hi_indptr[t]:hi_indptr[t+1]]`` and their
``hi_tfs``            int32 nh     ``hi_tfs`` (for pruning: gain(1) on all, gain(tf) - gain(1) here)
``pair_terms``        int32 P      the frequent terms, ascending: ``df >= max(2, ceil(N / 1024))``,
                                   at most the 1024 most frequent (ties to the smaller id)
``pair_cf_od``        int64 P*P    #od:1 matches of ``(pair_terms[i], pair_terms[j])`` summed over
                                   the collection, at ``i * P + j``
``pair_cf_uw``        int64 P*P    #uw:8 likewise
``pair_max_od``       int32 P*P    largest #od:1 count of the pair in one document
``pair_max_uw``       int32 P*P    largest #uw:8 count of the pair in one document
====================  ===========  ========================================================

The pair table holds the window statistics SDM needs for pairs of frequent terms (the costly
ones: their posting lists are long); other pairs are counted at query time.

SDM (Metzler & Croft 2005), as Galago and Indri evaluate it
------------------------------------------------------------
A query is a sequence of ``n >= 1`` term ids ``q_1..q_n`` (repeats allowed; each occurrence
counts).  With Dirichlet smoothing ``f(c, cf) = log((c + mu * P) / (|D| + mu))`` where
``P = cf / |C|`` if ``cf > 0`` else ``0.5 / |C|`` (Galago's ``DirichletScorer``: an unseen
feature gets half an occurrence)::

    S_T = sum_{i=1..n}   f(tf(q_i, D),             cf(q_i))
    S_O = sum_{j=1..n-1} f(od(q_j, q_{j+1}, D),    cf_od(q_j, q_{j+1}))      #od:1
    S_U = sum_{j=1..n-1} f(uw(q_j, q_{j+1}, D),    cf_uw(q_j, q_{j+1}))      #uw:8
    n == 1:  score = S_T / n
    n >= 2:  score = l_T * (S_T / n) + l_O * (S_O / (n - 1)) + l_U * (S_U / (n - 1))

with ``(l_T, l_O, l_U) = weights / sum(weights)`` (default 0.85, 0.10, 0.05).  This is the
query ``#weight(0.85 #combine(q_1 .. q_n) 0.10 #combine(#od:1(q_1 q_2) ..) 0.05
#combine(#uw:8(q_1 q_2) ..))`` with ``#dirichlet`` leaves, ``#combine`` being the mean of its
children: Indri's dependence-model expansion (``-dm`` defaults combineWeight 0.85, owWeight
0.10, uwWeight 0.05, uwSize 8) and Galago's ``SequentialDependenceTraversal`` (which returns the
plain ``#combine`` of the unigrams for a one-term query: hence ``S_T / n`` for ``n == 1``).

Window counts in one document, from the ascending position lists ``A`` of ``a`` and ``B`` of
``b`` (exactly Galago's ``OrderedWindowIterator`` / ``UnorderedWindowIterator``, two terms):

* ``od`` (#od:1): for each ``p`` in ``A`` in order, take the first ``b`` at or after ``p + 1``
  (``b``'s cursor never moves back); a match when it starts at ``p + 1``.  That is the number
  of positions ``p`` with ``a`` at ``p`` and ``b`` at ``p + 1`` (also for ``a == b``).
* ``uw`` (#uw:8): look at the current occurrence of ``a`` and of ``b``; count a match when they
  lie within a span of 8 positions (``max(pa, pb) + 1 - min(pa, pb) <= 8``), then move the
  earlier one to its next occurrence; stop when either term runs out.  For ``a == b`` the two
  copies move together and every occurrence matches: ``uw = tf(a)``.

``cf_od`` / ``cf_uw`` are these counts summed over all documents; ``|C|`` = total tokens.

BM25 (bm25s ``method="lucene"``, Kamphuis et al. 2020)
-------------------------------------------------------
``idf(t) = log(1 + (N - df + 0.5) / (df + 0.5))``, ``avgdl = |C| / N``::

    score = sum over query occurrences i with tf(q_i, D) > 0 of
            idf(q_i) * (tf / (k1 * ((1 - b) + b * |D| / avgdl) + tf))

(bm25s sums float32 per-document contributions; these are float64 and agree to ~1e-7.)

Candidates and ranking
----------------------
Only documents containing at least one query term are retrieved (Galago and Indri score the
union of the query terms' postings).  Results are ordered by score descending, then document
id ascending; the top ``k`` are returned, padded with doc id -1 and score NaN.
"""
from __future__ import annotations

import math
import operator
import sys
from typing import Dict, Mapping, Sequence, Tuple

import numpy as np

from pysynth import _validate as _v

__all__ = [
    "build_index",
    "validate_index",
    "search",
    "target_ranks",
    "window_stats",
    "ordered_count",
    "unordered_count",
]

ORDERED_WIDTH = 1
UNORDERED_WIDTH = 8
_I32_MAX = 2**31 - 1

_DTYPES = {
    "indptr": np.int64,
    "doc_ids": np.int32,
    "tfs": np.int32,
    "pos_indptr": np.int64,
    "positions": np.int32,
    "doc_offsets": np.int64,
    "doc_tokens": np.int32,
    "doc_lengths": np.int32,
    "cf": np.int64,
    "max_tf": np.int32,
    "impact": np.int32,
    "hi_indptr": np.int64,
    "hi_doc_ids": np.int32,
    "hi_tfs": np.int32,
    "pair_terms": np.int32,
    "pair_cf_od": np.int64,
    "pair_cf_uw": np.int64,
    "pair_max_od": np.int32,
    "pair_max_uw": np.int32,
}
MAX_PAIR_TERMS = 1024


def select_pair_terms(df: Sequence[int], n_docs: int) -> list:
    """The frequent terms of the pair table (ascending ids): ``df >= max(2, ceil(N / 1024))``,
    the ``MAX_PAIR_TERMS`` most frequent of them, ties to the smaller id."""
    min_df = max(2, -(-n_docs // 1024))
    terms = [t for t in range(len(df)) if df[t] >= min_df]
    if len(terms) > MAX_PAIR_TERMS:
        terms = sorted(sorted(terms, key=lambda t: -df[t])[:MAX_PAIR_TERMS])
    return terms


# --------------------------------------------------------------------------
# building and checking the index
# --------------------------------------------------------------------------
def _check_offsets(offsets: np.ndarray, n_ids: int, name: str) -> None:
    _v.offsets(offsets, n_ids, name, "the number of ids")


def build_index(ids, offsets, vocab_size: int, workers: int) -> Dict[str, np.ndarray]:
    """Build the positional index of the documents ``ids[offsets[d]:offsets[d+1]]``.

    Parameters
    ----------
    ids : int32 array, all documents' term ids back to back, each in ``[0, vocab_size)``.
    offsets : int64 array of length N + 1 (``offsets[0] == 0``, non-decreasing).
    vocab_size : int, V.
    workers : int, threads (-1 = all cores); the result never depends on it.

    Returns
    -------
    dict of numpy arrays, see the module docstring.

    Raises
    ------
    ValueError for malformed offsets, ids outside ``[0, vocab_size)`` or an empty corpus (no
    documents, or no tokens at all).
    """
    _workers(workers)
    ids = np.asarray(ids, dtype=np.int32)
    offsets = np.asarray(offsets, dtype=np.int64)
    vocab_size = operator.index(vocab_size)
    _check_offsets(offsets, ids.shape[0], "offsets")
    n_docs = offsets.shape[0] - 1
    if n_docs == 0:
        raise ValueError("the corpus is empty (no documents); pass at least one document")
    if not 1 <= vocab_size <= _I32_MAX:
        raise ValueError(f"vocab_size must be in [1, 2**31 - 1], got {vocab_size}")
    n_tokens = int(offsets[-1])
    if n_tokens == 0:
        raise ValueError(f"the corpus is empty (all {n_docs} documents have no tokens)")
    for i in range(n_tokens):
        t = int(ids[i])
        if t < 0 or t >= vocab_size:
            raise ValueError(f"ids[{i}] = {t} is outside [0, vocab_size = {vocab_size})")
    # postings[t] = list of (doc, [positions])
    postings = [[] for _ in range(vocab_size)]
    for d in range(n_docs):
        doc = ids[offsets[d] : offsets[d + 1]].tolist()
        seen = {}
        for pos, t in enumerate(doc):
            if t not in seen:
                seen[t] = []
                postings[t].append((d, seen[t]))
            seen[t].append(pos)
    lengths = np.diff(offsets).tolist()
    indptr = [0]
    doc_ids, tfs, pos_indptr, positions = [], [], [0], []
    cf, max_tf, impact = [], [], []
    for t in range(vocab_size):
        occ, mx = 0, 0
        plist_t = postings[t]
        impact.extend(
            sorted(range(len(plist_t)), key=lambda j: (-len(plist_t[j][1]), lengths[plist_t[j][0]], j))
        )
        for d, plist in plist_t:
            doc_ids.append(d)
            tfs.append(len(plist))
            positions.extend(plist)
            pos_indptr.append(len(positions))
            occ += len(plist)
            mx = max(mx, len(plist))
        indptr.append(len(doc_ids))
        cf.append(occ)
        max_tf.append(mx)
    df = [indptr[t + 1] - indptr[t] for t in range(vocab_size)]
    pair_terms = select_pair_terms(df, n_docs)
    cf_od, cf_uw, mx_od, mx_uw = _pair_table(ids, offsets, n_docs, pair_terms)
    hi_indptr, hi_doc_ids, hi_tfs = [0], [], []
    for t in range(vocab_size):
        for p in range(indptr[t], indptr[t + 1]):
            if tfs[p] >= 2:
                hi_doc_ids.append(doc_ids[p])
                hi_tfs.append(tfs[p])
        hi_indptr.append(len(hi_doc_ids))
    return {
        "hi_indptr": np.array(hi_indptr, dtype=np.int64),
        "hi_doc_ids": np.array(hi_doc_ids, dtype=np.int32),
        "hi_tfs": np.array(hi_tfs, dtype=np.int32),
        "pair_terms": np.array(pair_terms, dtype=np.int32),
        "pair_cf_od": np.array(cf_od, dtype=np.int64),
        "pair_cf_uw": np.array(cf_uw, dtype=np.int64),
        "pair_max_od": np.array(mx_od, dtype=np.int32),
        "pair_max_uw": np.array(mx_uw, dtype=np.int32),
        "indptr": np.array(indptr, dtype=np.int64),
        "doc_ids": np.array(doc_ids, dtype=np.int32),
        "tfs": np.array(tfs, dtype=np.int32),
        "pos_indptr": np.array(pos_indptr, dtype=np.int64),
        "positions": np.array(positions, dtype=np.int32),
        "doc_offsets": offsets.copy(),
        "doc_tokens": ids[:n_tokens].copy(),
        "doc_lengths": np.diff(offsets).astype(np.int32),
        "cf": np.array(cf, dtype=np.int64),
        "max_tf": np.array(max_tf, dtype=np.int32),
        "impact": np.array(impact, dtype=np.int32),
    }


def _arrays(index: Mapping[str, np.ndarray]) -> Dict[str, np.ndarray]:
    """The index arrays, checked for presence, dtype, dimension and mutual sizes."""
    out = {}
    for name, dt in _DTYPES.items():
        if name not in index:
            raise ValueError(f"index: array {name!r} is missing")
        a = index[name]
        if not isinstance(a, np.ndarray) or a.dtype != np.dtype(dt) or a.ndim != 1:
            got = f"{a.dtype}{a.shape}" if isinstance(a, np.ndarray) else type(a).__name__
            raise ValueError(f"index: {name} must be a 1-D {np.dtype(dt).name} array, got {got}")
        out[name] = a
    V = out["cf"].shape[0]
    N = out["doc_lengths"].shape[0]
    nnz = out["doc_ids"].shape[0]
    T = out["positions"].shape[0]
    expect = {
        "indptr": V + 1, "doc_ids": nnz, "tfs": nnz, "pos_indptr": nnz + 1, "positions": T,
        "doc_offsets": N + 1, "doc_tokens": T, "doc_lengths": N, "cf": V, "max_tf": V,
        "impact": nnz,
        "hi_indptr": V + 1,
        "hi_doc_ids": out["hi_doc_ids"].shape[0],
        "hi_tfs": out["hi_doc_ids"].shape[0],
        "pair_terms": out["pair_terms"].shape[0],
        "pair_cf_od": out["pair_terms"].shape[0] ** 2,
        "pair_cf_uw": out["pair_terms"].shape[0] ** 2,
        "pair_max_od": out["pair_terms"].shape[0] ** 2,
        "pair_max_uw": out["pair_terms"].shape[0] ** 2,
    }
    for name, n in expect.items():
        if out[name].shape[0] != n:
            raise ValueError(f"index: {name} has {out[name].shape[0]} entries, expected {n}")
    return out


def _pair_table(ids, offsets, n_docs: int, pair_terms):
    """#od:1 and #uw:8 counts (summed, largest in one document) of every pair of ``pair_terms``."""
    P = len(pair_terms)
    slot = {t: i for i, t in enumerate(pair_terms)}
    cf_od, cf_uw = [0] * (P * P), [0] * (P * P)
    mx_od, mx_uw = [0] * (P * P), [0] * (P * P)
    for d in range(n_docs):
        doc = ids[offsets[d] : offsets[d + 1]].tolist()
        here = sorted({t for t in doc if t in slot})
        for a in here:
            for b in here:
                A, B = _pos(doc, a), _pos(doc, b)
                i = slot[a] * P + slot[b]
                od = ordered_count(A, B, ORDERED_WIDTH)
                uw = unordered_count(A, B, a == b, UNORDERED_WIDTH)
                cf_od[i] += od
                cf_uw[i] += uw
                mx_od[i] = max(mx_od[i], od)
                mx_uw[i] = max(mx_uw[i], uw)
    return cf_od, cf_uw, mx_od, mx_uw


def validate_index(index: Mapping[str, np.ndarray], workers: int) -> None:
    """Check an index completely; raise ``ValueError`` naming the first inconsistency.

    Checks: array dtypes and sizes; ``indptr``, ``pos_indptr`` and ``doc_offsets`` start at 0,
    never decrease and end at the array sizes; ``doc_lengths`` match ``doc_offsets``; within
    each term the doc ids ascend and lie in ``[0, N)``; ``tfs >= 1`` and equal to the number of
    positions of the posting; every position lies inside its document, ascends, and points at a
    token equal to the term; ``impact`` orders each term's postings as documented; the high
    layer is exactly each term's postings with tf >= 2; ``cf`` and
    ``max_tf`` agree with the postings; ``pair_terms`` are the selected frequent terms and the
    pair table's counts lie in range (``0 <= max <= cf <= |C|``) and equal the counts of the
    documents (recomputed: one pass over the frequent terms' tokens).  An index that
    passes is safe to search (and, as its postings then cover every token exactly once,
    consistent with its documents).
    """
    _workers(workers)
    a = _arrays(index)
    V, N = a["cf"].shape[0], a["doc_lengths"].shape[0]
    nnz, T = a["doc_ids"].shape[0], a["positions"].shape[0]
    if not 1 <= N <= _I32_MAX:
        raise ValueError(f"index: n_docs must be in [1, 2**31 - 1], got {N}")
    if not 1 <= V <= _I32_MAX:
        raise ValueError(f"index: vocab_size must be in [1, 2**31 - 1], got {V}")
    if T < 1:
        raise ValueError(f"index: n_tokens must be >= 1, got {T}")
    if not 1 <= nnz <= T:
        raise ValueError(f"index: n_postings must be in [1, n_tokens], got {nnz}")
    indptr, doc_offsets, pos_indptr = a["indptr"], a["doc_offsets"], a["pos_indptr"]
    if indptr[0] != 0:
        raise ValueError(f"index: indptr[0] must be 0, got {int(indptr[0])}")
    for t in range(V):
        if indptr[t + 1] < indptr[t]:
            raise ValueError(f"index: indptr is not non-decreasing at term {t}")
    if indptr[V] != nnz:
        raise ValueError(f"index: indptr[-1] = {int(indptr[V])} but there are {nnz} postings")
    if doc_offsets[0] != 0:
        raise ValueError("index: doc_offsets[0] must be 0")
    for d in range(N):
        length = int(doc_offsets[d + 1]) - int(doc_offsets[d])
        if length < 0 or length > _I32_MAX:
            raise ValueError(f"index: doc_offsets is not non-decreasing at document {d}")
        if int(a["doc_lengths"][d]) != length:
            raise ValueError(
                f"index: doc_lengths[{d}] = {int(a['doc_lengths'][d])} but doc_offsets gives {length}"
            )
    if doc_offsets[N] != T:
        raise ValueError(f"index: doc_offsets[-1] = {int(doc_offsets[N])} but n_tokens = {T}")
    if pos_indptr[0] != 0:
        raise ValueError("index: pos_indptr[0] must be 0")
    for p in range(nnz):
        if a["tfs"][p] < 1:
            raise ValueError(f"index: tfs[{p}] = {int(a['tfs'][p])} < 1")
        if int(pos_indptr[p + 1]) - int(pos_indptr[p]) != int(a["tfs"][p]):
            raise ValueError(f"index: pos_indptr does not match tfs at posting {p}")
    if pos_indptr[nnz] != T:
        raise ValueError(f"index: pos_indptr[-1] = {int(pos_indptr[nnz])} but n_tokens = {T}")
    hi_indptr = a["hi_indptr"]
    if hi_indptr[0] != 0 or hi_indptr[V] != a["hi_doc_ids"].shape[0]:
        raise ValueError("index: hi_indptr does not span the high layer")
    for t in range(V):
        if hi_indptr[t + 1] < hi_indptr[t]:
            raise ValueError(f"index: hi_indptr is not non-decreasing at term {t}")
    for t in range(V):
        h = int(hi_indptr[t])
        for p in range(int(indptr[t]), int(indptr[t + 1])):
            if a["tfs"][p] < 2:
                continue
            if h >= hi_indptr[t + 1] or a["hi_doc_ids"][h] != a["doc_ids"][p] or a["hi_tfs"][h] != a["tfs"][p]:
                raise ValueError(f"index: the high layer of term {t} is not its postings with tf >= 2")
            h += 1
        if h != hi_indptr[t + 1]:
            raise ValueError(f"index: the high layer of term {t} has extra entries")
    for t in range(V):
        prev, occ, mx = -1, 0, 0
        for p in range(int(indptr[t]), int(indptr[t + 1])):
            d = int(a["doc_ids"][p])
            if d <= prev or d >= N:
                why = "is not a document id" if d >= N else "is not ascending within its term"
                raise ValueError(f"index: doc_ids[{p}] = {d} {why}")
            prev = d
            length, base = int(a["doc_lengths"][d]), int(doc_offsets[d])
            last = -1
            for j in range(int(pos_indptr[p]), int(pos_indptr[p + 1])):
                pos = int(a["positions"][j])
                if pos <= last or pos >= length or int(a["doc_tokens"][base + pos]) != t:
                    raise ValueError(
                        f"index: positions[{j}] = {pos} does not point at term {t} in document {d}"
                    )
                last = pos
            occ += int(a["tfs"][p])
            mx = max(mx, int(a["tfs"][p]))
        p0, df = int(indptr[t]), int(indptr[t + 1] - indptr[t])
        imp = a["impact"][p0 : p0 + df].tolist()
        if sorted(imp) != list(range(df)):
            raise ValueError(f"index: impact of term {t} is not a permutation of its postings")

        def key(j):
            return (-int(a["tfs"][p0 + j]), int(a["doc_lengths"][a["doc_ids"][p0 + j]]), j)

        for j in range(1, df):
            if key(imp[j]) < key(imp[j - 1]):
                raise ValueError(
                    f"index: impact is not in (tf desc, length asc, doc asc) order at {p0 + j}"
                )
        if occ != int(a["cf"][t]):
            raise ValueError(
                f"index: cf[{t}] = {int(a['cf'][t])} but the postings hold {occ} occurrences"
            )
        if mx != int(a["max_tf"][t]):
            raise ValueError(f"index: max_tf[{t}] = {int(a['max_tf'][t])} but the largest tf is {mx}")
    df = np.diff(indptr).tolist()
    if a["pair_terms"].tolist() != select_pair_terms(df, N):
        raise ValueError("index: pair_terms are not the frequent terms of the index")
    for i in range(a["pair_cf_od"].shape[0]):
        cod, cuw = int(a["pair_cf_od"][i]), int(a["pair_cf_uw"][i])
        mod, muw = int(a["pair_max_od"][i]), int(a["pair_max_uw"][i])
        if not (0 <= cod <= T and 0 <= cuw <= T and 0 <= mod <= cod and 0 <= muw <= cuw):
            raise ValueError(f"index: pair table entry {i} is out of range")
    want = _pair_table(a["doc_tokens"], a["doc_offsets"].tolist(), N, a["pair_terms"].tolist())
    got = [a[k].tolist() for k in ("pair_cf_od", "pair_cf_uw", "pair_max_od", "pair_max_uw")]
    for i in range(len(want[0])):
        if any(w[i] != g[i] for w, g in zip(want, got)):
            raise ValueError(f"index: pair table entry {i} does not match the documents")


# --------------------------------------------------------------------------
# window counts (Galago's iterators, two terms)
# --------------------------------------------------------------------------
def ordered_count(A: Sequence[int], B: Sequence[int], width: int) -> int:
    """Galago ``OrderedWindowIterator`` matches of ``#od:width(a b)`` in one document.

    For each position ``p`` of ``a`` (ascending), ``b``'s cursor moves to its first occurrence at
    or after ``p + 1`` (it never moves back); a match when that occurrence starts less than
    ``width`` positions after ``p + 1``.  Stops when ``b`` runs out.
    """
    j, c = 0, 0
    for p in A:
        end = p + 1
        while j < len(B) and B[j] < end:
            j += 1
        if j == len(B):
            break
        if B[j] - end < width:
            c += 1
    return c


def unordered_count(A: Sequence[int], B: Sequence[int], same_term: bool, width: int) -> int:
    """Galago ``UnorderedWindowIterator`` matches of ``#uw:width(a b)`` in one document.

    Look at the current occurrence of each term; a match when ``max + 1 - min <= width``; then
    advance the occurrence(s) at the minimum; stop when a term runs out.  Two copies of the same
    term (``same_term``) advance together, so every occurrence matches.
    """
    if same_term:
        return min(len(A), len(B))
    i = j = c = 0
    while i < len(A) and j < len(B):
        lo, hi = min(A[i], B[j]), max(A[i], B[j]) + 1
        if hi - lo <= width:
            c += 1
        if A[i] == lo:
            i += 1
        if B[j] == lo:
            j += 1
    return c


def _docs(a: Mapping[str, np.ndarray]):
    off, toks = a["doc_offsets"], a["doc_tokens"]
    return [toks[off[d] : off[d + 1]].tolist() for d in range(off.shape[0] - 1)]


def _pos(doc, t):
    return [i for i, x in enumerate(doc) if x == t]


def _window_cf(docs, a: int, b: int) -> Tuple[int, int]:
    od = uw = 0
    for doc in docs:
        A, B = _pos(doc, a), _pos(doc, b)
        if A and B:
            od += ordered_count(A, B, ORDERED_WIDTH)
            uw += unordered_count(A, B, a == b, UNORDERED_WIDTH)
    return od, uw


def window_stats(index: Mapping[str, np.ndarray], a, b, workers: int) -> Tuple[np.ndarray, np.ndarray]:
    """Collection frequencies of the windows of the term pairs ``(a[i], b[i])``.

    Returns ``(cf_od, cf_uw)``, int64 arrays: the ``#od:1`` and ``#uw:8`` match counts of
    :func:`ordered_count` / :func:`unordered_count` summed over all documents.
    """
    _workers(workers)
    ix = _arrays(index)
    validate_index(ix, workers)
    a = np.asarray(a, dtype=np.int32)
    b = np.asarray(b, dtype=np.int32)
    if a.ndim != 1 or b.shape != a.shape:
        raise ValueError(f"a and b must be 1-D arrays of the same length, got {a.shape} and {b.shape}")
    V = ix["cf"].shape[0]
    for i in range(a.shape[0]):
        if not (0 <= a[i] < V and 0 <= b[i] < V):
            raise ValueError(f"term ids of pair {i} are outside [0, vocab_size = {V})")
    docs = _docs(ix)
    od = np.zeros(a.shape[0], dtype=np.int64)
    uw = np.zeros(a.shape[0], dtype=np.int64)
    for i in range(a.shape[0]):
        od[i], uw[i] = _window_cf(docs, int(a[i]), int(b[i]))
    return od, uw


# --------------------------------------------------------------------------
# scoring
# --------------------------------------------------------------------------
_workers = _v.workers


def _ln(x: float) -> float:
    """C's ``log``: -inf at 0 (a denormal ``mu`` underflows the Dirichlet term to 0), NaN below;
    ``math.log`` raises there instead."""
    return math.log(x) if x > 0 else (-math.inf if x == 0 else math.nan)


def _check_params(model: str, mu: float, weights, k1: float, b: float):
    if model not in ("sdm", "bm25"):
        raise ValueError(f"model must be 'sdm' or 'bm25', got {model!r}")
    w = tuple(float(x) for x in weights)
    if len(w) != 3:
        raise ValueError(f"weights must be 3 numbers (unigram, ordered, unordered), got {len(w)}")
    mu, k1, b = float(mu), float(k1), float(b)
    if model == "sdm":
        if not (math.isfinite(mu) and mu >= sys.float_info.min):  # a denormal mu gives -inf scores
            raise ValueError(f"mu must be a finite number > 0 (at least {sys.float_info.min!r}), got {mu}")
        for x in w:
            if not (math.isfinite(x) and x >= 0):
                raise ValueError(
                    f"weights must be 3 finite numbers >= 0 (unigram, ordered, unordered), got {x}"
                )
        if not w[0] + w[1] + w[2] > 0:
            raise ValueError("weights must not all be 0")
    else:
        if not (math.isfinite(k1) and k1 >= 0):
            raise ValueError(f"k1 must be a finite number >= 0, got {k1}")
        if not 0 <= b <= 1:
            raise ValueError(f"b must be in [0, 1], got {b}")
    return mu, w, k1, b


def _queries(ix, query_ids, query_offsets):
    q = np.asarray(query_ids, dtype=np.int32)
    off = np.asarray(query_offsets, dtype=np.int64)
    if q.ndim != 1:
        raise ValueError("query_ids must be a 1-D array")
    _check_offsets(off, q.shape[0], "query_offsets")
    V = ix["cf"].shape[0]
    for j in range(q.shape[0]):
        if not 0 <= q[j] < V:
            raise ValueError(f"query ids[{j}] = {int(q[j])} is outside [0, vocab_size = {V})")
    return [q[off[i] : off[i + 1]].tolist() for i in range(off.shape[0] - 1)]


class _Scorer:
    """Scores of one query against every document (the definitions of the module docstring)."""

    def __init__(self, ix, docs, query, model, mu, w, k1, b):
        self.ix, self.docs, self.q, self.model = ix, docs, query, model
        self.mu, self.k1, self.b = mu, k1, b
        self.C = int(ix["doc_offsets"][-1])
        self.N = len(docs)
        n = len(query)
        if model == "sdm":
            total = w[0] + w[1] + w[2]
            self.lam = (w[0] / total, w[1] / total, w[2] / total)
            self.p_uni = [self._background(int(ix["cf"][t])) for t in query]
            self.p_od, self.p_uw = [], []
            for j in range(n - 1):
                od, uw = _window_cf(docs, query[j], query[j + 1])
                self.p_od.append(self._background(od))
                self.p_uw.append(self._background(uw))
        else:
            self.avgdl = self.C / self.N
            self.idf = []
            for t in query:
                df = int(ix["indptr"][t + 1] - ix["indptr"][t])
                self.idf.append(math.log(1 + (self.N - df + 0.5) / (df + 0.5)))

    def _background(self, cf: int) -> float:
        return cf / self.C if cf > 0 else 0.5 / self.C

    def matches(self, d: int) -> bool:
        doc = self.docs[d]
        return any(t in doc for t in self.q)

    def score(self, d: int) -> float:
        doc, q, n = self.docs[d], self.q, len(self.q)
        L = len(doc)
        if self.model == "bm25":
            k1, b = self.k1, self.b
            score = 0.0
            for i, t in enumerate(q):
                tf = doc.count(t)
                if tf > 0:
                    score += self.idf[i] * (tf / (k1 * ((1 - b) + b * L / self.avgdl) + tf))
            return score
        mu = self.mu
        st = 0.0
        for i, t in enumerate(q):
            st += _ln((doc.count(t) + mu * self.p_uni[i]) / (L + mu))
        if n == 1:
            return st / n
        so = su = 0.0
        for j in range(n - 1):
            a, bb = q[j], q[j + 1]
            A, B = _pos(doc, a), _pos(doc, bb)
            od = ordered_count(A, B, ORDERED_WIDTH) if A and B else 0
            uw = unordered_count(A, B, a == bb, UNORDERED_WIDTH) if A and B else 0
            so += _ln((od + mu * self.p_od[j]) / (L + mu))
            su += _ln((uw + mu * self.p_uw[j]) / (L + mu))
        lt, lo, lu = self.lam
        return lt * (st / n) + lo * (so / (n - 1)) + lu * (su / (n - 1))

    def ranking(self):
        """All candidates (documents with a query term) as (score, doc), best first."""
        scored = [(self.score(d), d) for d in range(self.N) if self.matches(d)]
        scored.sort(key=lambda x: (-x[0], x[1]))
        return scored


def search(
    index: Mapping[str, np.ndarray],
    query_ids,
    query_offsets,
    model: str,
    k: int,
    mu: float,
    weights,
    k1: float,
    b: float,
    workers: int,
    float64: bool,
):
    """Top ``k`` documents of every query, by SDM or BM25 (definitions in the module docstring).

    Parameters
    ----------
    index : the arrays of a built (or loaded and validated) index.
    query_ids, query_offsets : queries as flat int32 term ids + int64 offsets (length Q + 1).
    model : ``"sdm"`` or ``"bm25"``.
    k : results per query (>= 1).
    mu, weights : SDM Dirichlet prior and (unigram, #od:1, #uw:8) weights (normalized to sum 1).
    k1, b : BM25 parameters.
    workers : threads (-1 = all cores); results never depend on it.
    float64 : return float64 scores (else float32, rounded from the same float64 values).

    Returns
    -------
    (docs, scores, counts): int32 (Q, k) doc ids, best first, -1 padded; float32/float64
    (Q, k) scores, NaN padded; int32 (Q,) number of results.  Only documents containing at least
    one query term are retrieved; ties are broken by doc id ascending.
    """
    _workers(workers)
    k = operator.index(k)
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    mu, w, k1, b = _check_params(model, mu, weights, k1, b)
    ix = _arrays(index)
    validate_index(ix, workers)  # never trust a dict: a bad doc id must not index out of bounds
    queries = _queries(ix, query_ids, query_offsets)
    docs = _docs(ix)
    nq = len(queries)
    out_docs = np.full((nq, k), -1, dtype=np.int32)
    out_scores = np.full((nq, k), np.nan, dtype=np.float64)
    counts = np.zeros(nq, dtype=np.int32)
    for i, query in enumerate(queries):
        if not query:
            continue
        ranked = _Scorer(ix, docs, query, model, mu, w, k1, b).ranking()[:k]
        counts[i] = len(ranked)
        for j, (s, d) in enumerate(ranked):
            out_docs[i, j] = d
            out_scores[i, j] = s
    return out_docs, out_scores if float64 else out_scores.astype(np.float32), counts


def target_ranks(
    index: Mapping[str, np.ndarray],
    query_ids,
    query_offsets,
    targets,
    n: int,
    model: str,
    mu: float,
    weights,
    k1: float,
    b: float,
    workers: int,
) -> np.ndarray:
    """Rank (1-based) of ``targets[i]`` in the ranking of query ``i``, or 0 if not in the top ``n``.

    The ranking is the one :func:`search` returns (score descending, doc id ascending, only
    documents with a query term), so ``target_ranks(..., n)[i] == r > 0`` exactly when
    ``search(..., k=n)[0][i, r - 1] == targets[i]``.  Used by the keyword query filter (the
    reciprocal rank of a question under its candidate queries) without materializing top-n lists.
    """
    _workers(workers)
    n = operator.index(n)
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    mu, w, k1, b = _check_params(model, mu, weights, k1, b)
    ix = _arrays(index)
    validate_index(ix, workers)  # never trust a dict: a bad doc id must not index out of bounds
    queries = _queries(ix, query_ids, query_offsets)
    targets = np.asarray(targets, dtype=np.int32)
    if targets.shape != (len(queries),):
        raise ValueError(f"targets must have one entry per query ({len(queries)}), got shape {targets.shape}")
    N = ix["doc_lengths"].shape[0]
    for i in range(targets.shape[0]):
        if not 0 <= targets[i] < N:
            raise ValueError(f"targets[{i}] = {int(targets[i])} is not a document id in [0, {N})")
    docs = _docs(ix)
    out = np.zeros(len(queries), dtype=np.int32)
    for i, query in enumerate(queries):
        if not query:
            continue
        for r, (_, d) in enumerate(_Scorer(ix, docs, query, model, mu, w, k1, b).ranking()[:n]):
            if d == targets[i]:
                out[i] = r + 1
                break
    return out
