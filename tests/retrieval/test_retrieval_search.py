"""SDM and BM25 search: hand-computed values, compiled-vs-twin parity, exact pruning, validation."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pysynth import _dispatch
from pysynth.retrieval import Index

from retrieval_helpers import BACKENDS, assert_same, call_all, queries_of, zipf_corpus

HAS_CPP = "cpp" in BACKENDS
W = (0.85, 0.10, 0.05)

# d0: 1 2 3   d1: 2 1   d2: 1 1 2 4   d3: 3          |C| = 10, N = 4
HAND = [[1, 2, 3], [2, 1], [1, 1, 2, 4], [3]]


def test_window_counts_by_hand():
    for name, mod in BACKENDS.items():
        od, uw = mod.ordered_count, mod.unordered_count
        # a at 0 and 2, b at 1: #od:1 matches a@0 b@1 only; #uw:8 checks (0,1) then (2,1)
        assert od([0, 2], [1], 1) == 1, name
        assert uw([0, 2], [1], False, 8) == 2, name
        # b's cursor never moves back: a@0 then a@1 share b@2
        assert od([0, 1], [2], 1) == 1 and od([0, 1], [2], 2) == 2, name
        # span check: max + 1 - min <= 8
        assert uw([0], [7], False, 8) == 1 and uw([0], [8], False, 8) == 0, name
        # the same term twice: every occurrence matches #uw, adjacent ones #od
        assert uw([0, 1, 5], [0, 1, 5], True, 8) == 3, name
        assert od([0, 1, 5], [0, 1, 5], 1) == 1, name
        assert od([], [1], 1) == 0 and uw([3], [], False, 8) == 0, name


def _hand_sdm():
    mu = 10.0
    P1, P2, Pod, Puw = 0.4, 0.3, 0.2, 0.4  # cf 4, 3, #od:1 2 (d0, d2), #uw:8 4 (d0, d1, d2 twice)

    def f(c, p, L):
        return math.log((c + mu * p) / (L + mu))

    def sdm(tf1, tf2, od, uw, L):
        return 0.85 * ((f(tf1, P1, L) + f(tf2, P2, L)) / 2) + 0.10 * f(od, Pod, L) + 0.05 * f(uw, Puw, L)

    return {0: sdm(1, 1, 1, 1, 3), 1: sdm(1, 1, 0, 1, 2), 2: sdm(2, 1, 1, 2, 4)}


@pytest.mark.parametrize("impl", sorted(BACKENDS))
def test_sdm_by_hand(impl):
    expected = _hand_sdm()
    with _dispatch.force(impl, "retrieval"):
        ix = Index.build(HAND, vocab_size=5)
        docs, scores, counts = ix.search([[1, 2]], k=5, mu=10.0, dtype=np.float64)
    order = sorted(expected, key=lambda d: (-expected[d], d))
    assert docs[0].tolist() == order + [-1, -1]
    assert counts.tolist() == [3]  # d3 holds no query term: not retrieved
    for j, d in enumerate(order):
        assert scores[0, j] == pytest.approx(expected[d], rel=1e-12)
    assert np.isnan(scores[0, 3:]).all()


@pytest.mark.parametrize("impl", sorted(BACKENDS))
def test_single_term_sdm_is_the_dirichlet_unigram(impl):
    with _dispatch.force(impl, "retrieval"):
        ix = Index.build(HAND, vocab_size=5)
        docs, scores, _ = ix.search([[3]], k=2, mu=10.0, dtype=np.float64)
    # cf(3) = 2 -> P = 0.2; d3 (|D| 1) before d0 (|D| 3)
    assert docs.tolist() == [[3, 0]]
    assert scores[0].tolist() == pytest.approx([math.log(3 / 11), math.log(3 / 13)], rel=1e-12)


@pytest.mark.parametrize("impl", sorted(BACKENDS))
def test_bm25_by_hand(impl):
    k1, b, N, avgdl = 1.2, 0.75, 4, 2.5
    idf = math.log(1 + (N - 3 + 0.5) / (3 + 0.5))  # df(1) = df(2) = 3

    def t(tf, L):
        return tf / (k1 * ((1 - b) + b * L / avgdl) + tf)

    expected = {0: idf * t(1, 3) + idf * t(1, 3), 1: idf * t(1, 2) * 2, 2: idf * t(2, 4) + idf * t(1, 4)}
    with _dispatch.force(impl, "retrieval"):
        ix = Index.build(HAND, vocab_size=5)
        docs, scores, _ = ix.search([[1, 2]], k=3, model="bm25", k1=k1, b=b, dtype=np.float64)
    order = sorted(expected, key=lambda d: (-expected[d], d))
    assert docs[0].tolist() == order
    assert scores[0].tolist() == pytest.approx([expected[d] for d in order], rel=1e-12)


def test_ties_break_by_doc_id():
    ix = Index.build([[1, 2], [3], [2, 1], [1, 2]], vocab_size=4)
    for model in ("sdm", "bm25"):
        for impl in BACKENDS:
            with _dispatch.force(impl, "retrieval"):
                docs, scores, _ = ix.search([[1]], k=3, model=model)
            assert docs.tolist() == [[0, 2, 3]] and len(set(scores[0].tolist())) == 1


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    seed=st.integers(0, 2**32 - 1),
    n_docs=st.integers(1, 70),
    vocab=st.integers(2, 20),
    k=st.integers(1, 80),
    model=st.sampled_from(["sdm", "bm25"]),
    mu=st.sampled_from([0.5, 10.0, 2500.0]),
    weights=st.sampled_from([W, (1.0, 0.0, 0.0), (0.0, 1.0, 1.0), (2.0, 3.0, 5.0)]),
    k1=st.sampled_from([0.0, 0.9, 1.5]),
    b=st.sampled_from([0.0, 0.4, 1.0]),
)
def test_search_parity_with_twin(seed, n_docs, vocab, k, model, mu, weights, k1, b):
    rng = np.random.default_rng(seed)
    ids, off = zipf_corpus(rng, n_docs, vocab, max_len=int(rng.integers(1, 14)))
    index = call_all("build_index", ids, off, vocab, 2)
    q, qo = queries_of(rng, 12, vocab, max_len=8)
    docs, scores, counts = call_all("search", index, q, qo, model, k, mu, weights, k1, b, 2, True)
    # candidates = documents holding a query term
    doc_sets = [set(ids[off[d] : off[d + 1]].tolist()) for d in range(n_docs)]
    for i in range(len(qo) - 1):
        terms = set(q[qo[i] : qo[i + 1]].tolist())
        n_cand = sum(1 for s in doc_sets if s & terms)
        assert counts[i] == min(k, n_cand)
    f32 = call_all("search", index, q, qo, model, k, mu, weights, k1, b, 1, False)
    assert_same(f32, (docs, scores.astype(np.float32), counts))
    targets = rng.integers(0, n_docs, len(qo) - 1).astype(np.int32)
    ranks = call_all("target_ranks", index, q, qo, targets, k, model, mu, weights, k1, b, 2)
    for i, t in enumerate(targets):
        hit = np.flatnonzero(docs[i] == t)
        assert ranks[i] == (hit[0] + 1 if hit.size else 0)


@settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2**32 - 1), n_docs=st.integers(1, 60), vocab=st.integers(1, 15))
def test_window_stats_parity(seed, n_docs, vocab):
    rng = np.random.default_rng(seed)
    ids, off = zipf_corpus(rng, n_docs, vocab, max_len=15)
    index = call_all("build_index", ids, off, vocab, 1)
    a = rng.integers(0, vocab, 30).astype(np.int32)
    b = rng.integers(0, vocab, 30).astype(np.int32)
    b[:8] = a[:8]
    call_all("window_stats", index, a, b, 2)


def _flat(rows):
    """Documents (lists of term ids) as the flat ids + offsets the core functions take."""
    off = np.zeros(len(rows) + 1, np.int64)
    np.cumsum([len(r) for r in rows], out=off[1:])
    return np.array([t for r in rows for t in r], np.int32), off


def test_window_stats_short_list_against_a_long_one():
    # a rare term against one in every document (>= 16 times longer: compute_pair reads the rare
    # term's documents from the forward index), repeated, adjacent or not, in both orders
    rng = np.random.default_rng(3)
    rows = []
    for d in range(600):
        doc = [int(t) for t in rng.integers(3, 40, int(rng.integers(1, 12)))]
        doc.insert(int(rng.integers(0, len(doc) + 1)), 0)
        if d % 37 == 0:
            at = int(rng.integers(0, len(doc) + 1))
            doc[at:at] = [1, 0] if d % 2 else [0, 1, 1]
        if d % 53 == 0:
            doc += [2, 0, 2, 0]
        rows.append(doc)
    ids, off = _flat(rows)
    index = call_all("build_index", ids, off, 40, 1)
    a = np.array([1, 0, 2, 0, 1, 2, 5, 0], np.int32)
    b = np.array([0, 1, 0, 2, 2, 1, 0, 5], np.int32)
    od, uw = call_all("window_stats", index, a, b, 2)
    assert od[:4].min() > 0 and uw[:4].min() > 0


def test_pairs_sharing_a_rare_term():
    # the compiled search computes pairs that share their shorter term in one pass over its
    # documents (compute_group): rare terms (1, 2; outside the index's frequent-pair table, which
    # keeps 1,024 terms) beside frequent ones (0, 3: >= 16 times longer lists) and beside other
    # rare ones, in both orders, repeated, a partner absent from some of their documents; scores
    # and ranks equal the twin's
    rng = np.random.default_rng(5)
    rows = []
    for d in range(3000):
        doc = [int(t) for t in rng.integers(6, 1206, int(rng.integers(6, 15)))]
        doc.insert(int(rng.integers(0, len(doc) + 1)), 0)
        if d % 3 == 0:
            doc.insert(int(rng.integers(0, len(doc) + 1)), 3)
        if d % 487 == 0:
            at = int(rng.integers(0, len(doc) + 1))
            doc[at:at] = [1, 0] if d % 2 else [0, 1, 3, 1, 7]
        if d % 433 == 0:
            doc += [2, 0, 2, 3, 2, 1] if d % 2 else [3, 2, 8]
        rows.append(doc)
    ids, off = _flat(rows)
    index = call_all("build_index", ids, off, 1206, 1)
    assert not {1, 2} & set(np.asarray(index["pair_terms"]).tolist())
    qs = [[0, 1, 0], [3, 1, 0, 1], [0, 2, 3, 2], [2, 0, 2, 1, 3], [1, 7, 1, 0], [3, 2, 0, 2, 9],
          [7, 1, 8, 1, 9], [8, 2, 7, 2, 1]]
    q = np.array([t for r in qs for t in r], np.int32)
    qo = np.zeros(len(qs) + 1, np.int64)
    np.cumsum([len(r) for r in qs], out=qo[1:])
    docs, scores, counts = call_all("search", index, q, qo, "sdm", 50, 2500.0, W, 1.2, 0.75, 2, True)
    assert counts.min() > 0
    with1 = [d for d, r in enumerate(rows) if 1 in r]
    with2 = [d for d, r in enumerate(rows) if 2 in r]
    targets = np.array(with1[:4] + with2[:4], np.int32)
    ranks = call_all("target_ranks", index, q, qo, targets, 50, "sdm", 2500.0, W, 1.2, 0.75, 1)
    assert (ranks > 0).sum() >= 4


@pytest.fixture(scope="module")
def medium():
    """5,000 short documents, 400 queries drawn from them (3-7 terms) and from the Zipf law."""
    rng = np.random.default_rng(11)
    ids, off = zipf_corpus(rng, 5000, 3000, max_len=15)
    ix = Index.build(ids, off, vocab_size=3000, workers=2)
    rows = []
    for d in rng.integers(0, 5000, 300):
        doc = ids[off[d] : off[d + 1]]
        if doc.size:
            m = min(doc.size, int(rng.integers(3, 8)))
            rows.append(doc[np.sort(rng.choice(doc.size, m, replace=False))].tolist())
    q2, qo2 = queries_of(rng, 100, 3000, max_len=7, s=1.1)
    rows += [q2[qo2[i] : qo2[i + 1]].tolist() for i in range(100)]
    return ix, rows


@pytest.mark.skipif(not HAS_CPP, reason="compiled extension not built")
@pytest.mark.parametrize("model", ["sdm", "bm25"])
def test_pruning_is_exact_at_scale(medium, model):
    # k = N scores every candidate (no pruning is possible): the pruned top-k must be its prefix
    ix, rows = medium
    with _dispatch.force("cpp", "retrieval"):
        full = ix.search(rows, k=ix.n_docs, model=model, dtype=np.float64, workers=2)
        for k in (1, 10, 100):
            got = ix.search(rows, k=k, model=model, dtype=np.float64, workers=2)
            assert_same(tuple(got), (full.docs[:, :k], full.scores[:, :k], np.minimum(full.counts, k)))
        targets = np.array([full.docs[i, min(i % 150, max(full.counts[i] - 1, 0))] for i in range(len(rows))])
        targets[targets < 0] = 0
        for n in (1, 50, 100):
            ranks = ix.rank_of(rows, targets=targets, n=n, model=model, workers=2)
            for i, t in enumerate(targets):
                hit = np.flatnonzero(full.docs[i, :n] == t)
                assert ranks[i] == (hit[0] + 1 if hit.size else 0)


@pytest.mark.skipif(not HAS_CPP, reason="compiled extension not built")
def test_pruning_is_exact_with_long_lists():
    # 30,000 documents over a small, steep vocabulary: lists of 10k+ postings take the impact
    # walk (with and without a full heap), its single-list group shortcut, the split
    # (all / tf >= 2) lists and the frequent-pair table
    rng = np.random.default_rng(5)
    ids, off = zipf_corpus(rng, 30000, 400, max_len=15, s=1.2)
    ix = Index.build(ids, off, vocab_size=400, workers=2)
    assert ix.df.max() > 10000
    q, qo = queries_of(rng, 150, 400, max_len=6, s=1.0)
    rows = [q[qo[i] : qo[i + 1]].tolist() for i in range(150)] + [[0], [1], [0, 0], [0, 1, 0], [2, 0]]
    with _dispatch.force("cpp", "retrieval"):
        for model in ("sdm", "bm25"):
            full = ix.search(rows, k=ix.n_docs, model=model, dtype=np.float64, workers=2)
            for k in (5, 100):
                got = ix.search(rows, k=k, model=model, dtype=np.float64, workers=2)
                assert_same(tuple(got), (full.docs[:, :k], full.scores[:, :k], np.minimum(full.counts, k)))
            targets = full.docs[np.arange(len(rows)), np.arange(len(rows)) % 90]
            targets[targets < 0] = 0
            ranks = ix.rank_of(rows, targets=targets, n=100, model=model, workers=2)
            for i, t in enumerate(targets):
                hit = np.flatnonzero(full.docs[i, :100] == t)
                assert ranks[i] == (hit[0] + 1 if hit.size else 0)


@pytest.mark.skipif(not HAS_CPP, reason="compiled extension not built")
def test_pruning_is_exact_with_od_lists():
    # two "stopwords" in every document (window lists far above the 8,192 that are listed), so a
    # batch of queries holding them gets the #od:1 lists of the unlisted pairs (build_od_lists);
    # each pair is adjacent in only part of the documents, in either order, sometimes twice
    rng = np.random.default_rng(17)
    n = 12000
    ids, off = zipf_corpus(rng, n, 2000, max_len=10, s=1.0)
    rows = []
    for d in range(n):
        doc = list(ids[off[d] : off[d + 1]] + 3)
        for t in (0, 1, 2)[: 2 + d % 2]:
            doc.insert(int(rng.integers(0, len(doc) + 1)), t)
        if d % 7 == 0:
            doc += [0, 1]
        rows.append(doc)
    ix = Index.build(rows, vocab_size=2003, workers=2)
    q = [[0, 1], [1, 0], [0, 1, 2], [2, 0, 1, 0], [5, 0, 1], [0, 1, 7, 2], [1, 1], [0, 0, 1]]
    q += [[0, 1, int(t)] for t in rng.integers(3, 60, 40)] + [[int(t), 1, 0] for t in rng.integers(3, 60, 40)]
    with _dispatch.force("cpp", "retrieval"):
        full = ix.search(q, k=n, model="sdm", dtype=np.float64, workers=2)
        for k in (1, 10, 100):
            got = ix.search(q, k=k, model="sdm", dtype=np.float64, workers=2)
            assert_same(tuple(got), (full.docs[:, :k], full.scores[:, :k], np.minimum(full.counts, k)))
        targets = full.docs[np.arange(len(q)), np.arange(len(q)) % 90]
        ranks = ix.rank_of(q, targets=targets, n=100, workers=2)
        for i, t in enumerate(targets):
            hit = np.flatnonzero(full.docs[i, :100] == t)
            assert ranks[i] == (hit[0] + 1 if hit.size else 0)


def test_medium_parity_with_twin(medium):
    ix, rows = medium
    sub = rows[::25] + [[], [5, 5], [7, 7, 7, 1]]
    for model in ("sdm", "bm25"):
        outs = []
        for impl in sorted(BACKENDS):
            with _dispatch.force(impl, "retrieval"):
                outs.append(tuple(ix.search(sub, k=20, model=model, dtype=np.float64)))
        for o in outs[1:]:
            assert_same(o, outs[0])


@pytest.mark.skipif(not HAS_CPP, reason="compiled extension not built")
def test_thread_count_invariance(medium):
    ix, rows = medium
    with _dispatch.force("cpp", "retrieval"):
        for model in ("sdm", "bm25"):
            ref = ix.search(rows, k=50, model=model, workers=1)
            for w in (2, 3, -1):
                assert_same(tuple(ix.search(rows, k=50, model=model, workers=w)), tuple(ref))
            t = np.arange(len(rows), dtype=np.int32) % ix.n_docs
            r1 = ix.rank_of(rows, targets=t, n=100, model=model, workers=1)
            assert_same(ix.rank_of(rows, targets=t, n=100, model=model, workers=2), r1)


def test_query_formats_and_empty_queries():
    ix = Index.build(HAND, vocab_size=5)
    a = ix.search([[1, 2], [], [3]], k=2)
    b = ix.search(np.array([1, 2, 3], np.int32), np.array([0, 2, 2, 3]), k=2)
    assert_same(tuple(a), tuple(b))
    assert a.counts.tolist() == [2, 0, 2] and a.docs[1].tolist() == [-1, -1]
    assert a.scores.dtype == np.float32
    # a term no document holds (cf = 0) retrieves nothing by itself but still scores
    assert ix.search([[0]], k=3).counts.tolist() == [0]
    assert ix.search([[0, 3]], k=3).docs.tolist() == [[3, 0, -1]]


@pytest.mark.parametrize(
    "kwargs, match",
    [
        (dict(k=0), "k must be >= 1"),
        (dict(model="tfidf"), "model"),
        (dict(weights=(1.0, 2.0)), "weights"),
        (dict(weights=(0.0, 0.0, 0.0)), "weights"),
        (dict(weights=(1.0, -0.1, 0.1)), "weights"),
        (dict(weights=(1.0, float("nan"), 0.1)), "weights"),
        (dict(mu=0.0), "mu"),
        (dict(mu=float("inf")), "mu"),
        (dict(model="bm25", k1=-1.0), "k1"),
        (dict(model="bm25", b=1.5), "b must"),
        (dict(workers=0), "workers"),
        (dict(dtype=np.int32), "dtype"),
    ],
)
def test_search_rejects_bad_arguments(kwargs, match):
    ix = Index.build(HAND, vocab_size=5)
    for impl in BACKENDS:
        with _dispatch.force(impl, "retrieval"):
            with pytest.raises(ValueError, match=match):
                ix.search([[1, 2]], **kwargs)


def test_bad_queries_and_targets():
    ix = Index.build(HAND, vocab_size=5)
    with pytest.raises(ValueError, match="vocab_size"):
        ix.search([[1, 9]])
    with pytest.raises(TypeError):
        ix.search([[1.5]])
    with pytest.raises(ValueError, match="n must be >= 1"):
        ix.rank_of([[1]], targets=[0], n=0)
    with pytest.raises(ValueError, match="one doc id per query"):
        ix.rank_of([[1]], targets=[0, 1])
    with pytest.raises(ValueError, match="doc ids"):
        ix.rank_of([[1]], targets=[4])


def test_core_functions_reject_bad_arguments_alike():
    index = call_all("build_index", *zipf_corpus(np.random.default_rng(0), 10, 5), 5, 1)
    q, qo = np.array([1, 2], np.int32), np.array([0, 2])
    bad_calls = [
        (q, qo, "sdm", 0, 2500.0, W, 1.5, 0.75, 1, True),
        (q, qo, "x", 5, 2500.0, W, 1.5, 0.75, 1, True),
        (q, qo, "sdm", 5, -1.0, W, 1.5, 0.75, 1, True),
        (q, qo, "sdm", 5, 2500.0, (1.0, 1.0), 1.5, 0.75, 1, True),
        (q, qo, "bm25", 5, 2500.0, W, 1.5, 2.0, 1, True),
        (np.array([1, 7], np.int32), qo, "sdm", 5, 2500.0, W, 1.5, 0.75, 1, True),
        (q, np.array([0, 3]), "sdm", 5, 2500.0, W, 1.5, 0.75, 1, True),
        (q, qo, "sdm", 5, 2500.0, W, 1.5, 0.75, -2, True),
    ]
    for args in bad_calls:
        with pytest.raises(ValueError):
            call_all("search", index, *args)
    with pytest.raises(ValueError):
        call_all("target_ranks", index, q, qo, np.array([10], np.int32), 5, "sdm", 2500.0, W, 1.5, 0.75, 1)
    with pytest.raises(ValueError):
        call_all("window_stats", index, np.array([0], np.int32), np.array([5], np.int32), 1)


@pytest.mark.skipif(not HAS_CPP, reason="compiled extension not built")
def test_pruning_is_exact_with_exact_ties():
    # keyword-query shape of issue 29: frequent terms in thousands of documents built from a few
    # patterns, so hundreds of documents share bit-identical scores around rank k (ties broken by
    # doc id); k below, at and above the lists' lengths, and the rank of a tied document
    rng = np.random.default_rng(29)
    patterns = [[0, 1, 5], [1, 0, 5], [0, 5, 1, 6], [0, 1], [2, 0, 1, 7], [3, 4], [0, 0, 1]]
    rows = [list(patterns[int(rng.integers(0, len(patterns)))]) for _ in range(6000)]
    for d in rng.integers(0, 6000, 300):
        rows[d] = rows[d] + [int(rng.integers(8, 400))]
    ix = Index.build(rows, vocab_size=400, workers=2)
    q = [[0, 1], [1, 0], [0, 1, 5], [5, 0, 1], [0, 0, 1], [3, 0, 1], [int(rows[9][-1]), 0, 1], [7, 1], [6, 0]]
    with _dispatch.force("cpp", "retrieval"):
        full = ix.search(q, k=ix.n_docs, model="sdm", dtype=np.float64, workers=2)
        assert (full.scores[:, 99] == full.scores[:, 100]).any()  # ties across rank 100
        for k in (1, 100, 1000, 7000):
            got = ix.search(q, k=k, model="sdm", dtype=np.float64, workers=2)
            kk = min(k, ix.n_docs)
            assert_same(tuple(got)[2], np.minimum(full.counts, k))
            assert_same((got.docs[:, :kk], got.scores[:, :kk]), (full.docs[:, :kk], full.scores[:, :kk]))
        targets = full.docs[np.arange(len(q)), [0, 50, 99, 100, 150, 99, 3, 10, 99]]
        targets[targets < 0] = 0
        ranks = ix.rank_of(q, targets=targets, n=100, workers=2)
        for i, t in enumerate(targets):
            hit = np.flatnonzero(full.docs[i, :100] == t)
            assert ranks[i] == (hit[0] + 1 if hit.size else 0)
    outs = []
    for impl in sorted(BACKENDS):
        with _dispatch.force(impl, "retrieval"):
            outs.append(tuple(ix.search(q[:4], k=120, model="sdm", dtype=np.float64)))
    for o in outs[1:]:
        assert_same(o, outs[0])
