"""The compiled backend's per-index cache (pair statistics, #od:1 lists, rank maps, workers kept
across calls): results identical with and without it, reuse, its bound, threads sharing it."""
from __future__ import annotations

import gc
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from pysynth import _dispatch
from pysynth.retrieval import Index

from retrieval_helpers import BACKENDS, assert_same

pytestmark = pytest.mark.skipif("cpp" not in BACKENDS, reason="compiled extension not built")
W = (0.85, 0.10, 0.05)


@pytest.fixture(scope="module")
def corpus():
    # two "stopwords" (0, 1) in every document: lists of 9,000 postings (rank maps), pairs too
    # frequent to list (#od:1 lists), and pairs of rarer terms with listed window lists
    rng = np.random.default_rng(41)
    n = 9000
    rows = []
    for d in range(n):
        doc = [int(t) + 3 for t in rng.zipf(1.3, int(rng.integers(2, 9))) % 1500]
        for t in (0, 1, 2)[: 2 + d % 2]:
            doc.insert(int(rng.integers(0, len(doc) + 1)), t)
        rows.append(doc)
    ix = Index.build(rows, vocab_size=1503, workers=2)
    q = [[0, 1], [1, 0], [0, 1, 2], [2, 0, 1, 0], [5, 0, 1], [1, 1], [0, 0, 1]]
    q += [[0, 1, int(t)] for t in rng.integers(3, 80, 60)] + [[int(t), 1, 0, int(u)] for t, u in rng.integers(3, 300, (60, 2))]
    q += [rows[int(d)][:4] for d in rng.integers(0, n, 120)]
    off = np.zeros(len(q) + 1, np.int64)
    np.cumsum([len(x) for x in q], out=off[1:])
    ids = np.array([t for x in q for t in x], np.int32)
    targets = rng.integers(0, n, len(q)).astype(np.int32)
    return ix, ids, off, targets


def _reference(ix, ids, off, targets, model):
    """Results of the compiled backend without a cache (writable copies of the arrays)."""
    core = BACKENDS["cpp"]
    plain = {k: np.array(v) for k, v in ix.arrays.items()}
    assert core._cache_info(plain) is None  # writable arrays: nothing is kept for them
    res = core.search(plain, ids, off, model, 100, 2500.0, W, 1.5, 0.75, 2, True)
    ranks = core.target_ranks(plain, ids, off, targets, 100, model, 2500.0, W, 1.5, 0.75, 2)
    return tuple(res), ranks


def _rows(ids, off, lo, hi):
    return ids[off[lo] : off[hi]], off[lo : hi + 1] - off[lo]


@pytest.mark.parametrize("model", ["sdm", "bm25"])
def test_cache_reuse_gives_identical_results(corpus, model):
    ix, ids, off, targets = corpus
    core = BACKENDS["cpp"]
    ref, ref_ranks = _reference(ix, ids, off, targets, model)
    nq = off.shape[0] - 1
    with _dispatch.force("cpp", "retrieval"):
        for workers in (1, 2, 1):  # the first call fills the cache, the next ones reuse it
            got = ix.search(ids, off, k=100, model=model, dtype=np.float64, workers=workers)
            assert_same(tuple(got), ref)
            assert_same(ix.rank_of(ids, off, targets=targets, n=100, model=model, workers=workers), ref_ranks)
        # smaller batches (no od-list scan of their own) take what earlier calls kept
        for lo, hi in ((0, 7), (7, 70), (70, nq)):
            q, qo = _rows(ids, off, lo, hi)
            got = ix.search(q, qo, k=100, model=model, dtype=np.float64)
            assert_same(tuple(got), tuple(x[lo:hi] for x in ref))
            assert_same(ix.rank_of(q, qo, targets=targets[lo:hi], n=100, model=model), ref_ranks[lo:hi])
    info = core._cache_info(ix.arrays)
    assert info["workers"] >= 1 and info["rank_maps"] >= 1 and info["rank_maps_reused"] > 0
    if model == "sdm":
        assert info["pair_lists"] > 0 and info["pairs_reused"] > 0
        assert info["od_lists"] > 0 and info["od_lists_reused"] > 0
    assert 0 < info["bytes"] <= info["max_bytes"] and info["clears"] == info["pair_clears"] == 0
    # and the twin agrees
    sub = [ids[off[i] : off[i + 1]].tolist() for i in range(0, nq, 9)]
    outs = []
    for impl in sorted(BACKENDS):
        with _dispatch.force(impl, "retrieval"):
            outs.append(tuple(ix.search(sub, k=30, model=model, dtype=np.float64)))
    assert_same(outs[0], outs[1])


def test_cache_bound_is_kept(corpus):
    ix, ids, off, targets = corpus
    core = BACKENDS["cpp"]
    ref, ref_ranks = _reference(ix, ids, off, targets, "sdm")
    try:
        for bound in (0, 20_000, 400_000):
            info = core._cache_info(ix.arrays, max_bytes=bound)
            assert info["bytes"] <= bound
            with _dispatch.force("cpp", "retrieval"):
                for _ in range(2):
                    assert_same(tuple(ix.search(ids, off, k=100, dtype=np.float64)), ref)
                    assert_same(ix.rank_of(ids, off, targets=targets, n=100), ref_ranks)
            info = core._cache_info(ix.arrays)
            assert info["bytes"] <= bound
            if bound == 0:
                assert info["pair_stats"] == info["od_lists"] == info["rank_maps"] == info["workers"] == 0
        assert info["pair_clears"] > 0  # 400 kB: the lists of this batch do not all fit
    finally:
        core._cache_info(ix.arrays, max_bytes=128 << 20)


def test_cache_shared_by_threads(corpus):
    ix, ids, off, targets = corpus
    ref, ref_ranks = _reference(ix, ids, off, targets, "sdm")
    nq = off.shape[0] - 1
    cuts = [0, 3, 40, 41, 100, 180, nq]

    def job(j):
        lo, hi = cuts[j % (len(cuts) - 1)], cuts[j % (len(cuts) - 1) + 1]
        q, qo = _rows(ids, off, lo, hi)
        with _dispatch.force("cpp", "retrieval"):
            got = ix.search(q, qo, k=100, dtype=np.float64, workers=1 + j % 2)
            ranks = ix.rank_of(q, qo, targets=targets[lo:hi], n=100, workers=1 + j % 2)
        return lo, hi, tuple(got), ranks

    with ThreadPoolExecutor(4) as pool:
        for lo, hi, got, ranks in pool.map(job, range(24)):
            assert_same(got, tuple(x[lo:hi] for x in ref))
            assert_same(ranks, ref_ranks[lo:hi])


def test_cache_goes_with_its_index():
    # a new index (new arrays) never sees another one's cache, even at the same addresses
    core = BACKENDS["cpp"]
    for seed in range(3):
        rng = np.random.default_rng(seed)
        rows = [[int(t) for t in rng.integers(0, 30 + seed, 6)] for _ in range(300)]
        ix = Index.build(rows, vocab_size=40)
        q = [[1, 2], [2, 1, 3], [5, 5]]
        with _dispatch.force("cpp", "retrieval"):
            got = ix.search(q, k=50, dtype=np.float64)
        plain = {k: np.array(v) for k, v in ix.arrays.items()}
        want = core.search(plain, np.array([1, 2, 2, 1, 3, 5, 5], np.int32), np.array([0, 2, 5, 7]), "sdm", 50,
                           2500.0, W, 1.5, 0.75, 1, True)
        assert_same(tuple(got), tuple(want))
        assert core._cache_info(ix.arrays)["pair_stats"] >= 0
        del ix, plain
        gc.collect()
