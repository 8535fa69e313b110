"""Dense retrieval on faiss: exactness of flat, recall and determinism of hnsw / ivf, the store, errors."""
from __future__ import annotations

import doctest
import json
import subprocess
import sys

import numpy as np
import pytest

from pysynth import store
from pysynth.retrieval import Hits, dense
from pysynth.retrieval.dense import FORMAT_VERSION, INDEX_FILE, DenseIndex

from _stores import edit_meta, restamp_file

# importing pysynth.retrieval.dense needs no faiss; everything below does
faiss = pytest.importorskip("faiss")


# --------------------------------------------------------------------------- helpers
def brute(x, q, k, metric="ip"):
    """The documented rule in plain numpy: float64 scores, score descending then doc id ascending."""
    x64, q64 = x.astype(np.float64), q.astype(np.float64)
    if metric == "ip":
        s = (x64[None] * q64[:, None]).sum(-1)
    else:
        s = -((x64[None] - q64[:, None]) ** 2).sum(-1)
    ids = np.broadcast_to(np.arange(x.shape[0]), s.shape)
    order = np.lexsort((ids, -s), axis=-1)[:, :k]
    return order, np.take_along_axis(s, order, -1)


def unit(a):
    a = a.astype(np.float64)
    n = np.sqrt((a * a).sum(-1, keepdims=True))
    return (a / np.where(n == 0, 1, n)).astype(np.float32)


def assert_exact(hits, x, q, k, metric):
    ids, scores = brute(x, q, k, metric)
    m = ids.shape[1]
    assert isinstance(hits, Hits)
    assert hits.docs.dtype == np.int32 and hits.counts.dtype == np.int32 and hits.scores.dtype == np.float32
    assert hits.docs.shape == hits.scores.shape == (q.shape[0], k)
    np.testing.assert_array_equal(hits.docs[:, :m], ids)
    np.testing.assert_array_equal(hits.scores[:, :m], scores.astype(np.float32))
    assert (hits.docs[:, m:] == -1).all() and np.isnan(hits.scores[:, m:]).all()
    assert (hits.counts == m).all()


def recall(hits, truth):
    return np.mean([len(set(a[a >= 0]) & set(b)) / len(b) for a, b in zip(hits.docs, truth.docs)])


def well_ordered(ix, hits, q, metric):
    """Approximate kinds: returned scores are the exact ones, ordered by the tie rule."""
    x = ix.faiss_index.reconstruct_n(0, ix.n_docs)
    for row, (docs, sc, c) in enumerate(zip(*hits)):
        d = docs[:c].astype(np.int64)
        q64, v = q[row].astype(np.float64), x[d].astype(np.float64)
        s = (v * q64).sum(-1) if metric == "ip" else -((v - q64) ** 2).sum(-1)
        np.testing.assert_array_equal(sc[:c], s.astype(np.float32))
        assert (np.lexsort((d, -s)) == np.arange(c)).all()


@pytest.fixture(scope="module")
def gauss():
    rng = np.random.default_rng(0)
    return rng.standard_normal((2000, 32)).astype(np.float32), rng.standard_normal((100, 32)).astype(np.float32)


@pytest.fixture(scope="module")
def clustered():
    rng = np.random.default_rng(1)
    centers = 3 * rng.standard_normal((20, 32))
    x = centers[rng.integers(0, 20, 2000)] + rng.standard_normal((2000, 32))
    q = centers[rng.integers(0, 20, 100)] + rng.standard_normal((100, 32))
    return x.astype(np.float32), q.astype(np.float32)


# --------------------------------------------------------------------------- flat: exact
@pytest.mark.parametrize("metric", ["ip", "l2"])
@pytest.mark.parametrize("normalize", [False, True])
def test_flat_equals_brute_force(gauss, metric, normalize):
    x, q = gauss
    ix = DenseIndex.build(x, metric=metric, normalize=normalize)
    xs, qs = (unit(x), unit(q)) if normalize else (x, q)
    assert_exact(ix.search(q, k=10), xs, qs, 10, metric)
    assert_exact(ix.search(q[:7], k=1), xs, qs[:7], 1, metric)


@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_flat_exact_ties(metric):
    rng = np.random.default_rng(2)
    # 50 shuffled copies of each of 12 vectors: a tie group is larger than the 2k + 16 candidates
    # first asked of faiss, which then returns an arbitrary part of it
    dup = np.repeat(rng.standard_normal((12, 8)), 50, axis=0).astype(np.float32)
    rng.shuffle(dup)
    ix = DenseIndex.build(dup, metric=metric)
    assert_exact(ix.search(dup[:6], k=10), dup, dup[:6], 10, metric)
    assert_exact(ix.search(dup[:3], k=60), dup, dup[:3], 60, metric)
    # distinct small-integer vectors: many equal scores from different vectors, all exact in float32
    grid = rng.integers(-2, 3, size=(400, 4)).astype(np.float32)
    q = rng.integers(-2, 3, size=(25, 4)).astype(np.float32)
    ix = DenseIndex.build(grid, metric=metric)
    assert_exact(ix.search(q, k=10), grid, q, 10, metric)
    # zero query under ip: every document ties at 0, so the answer is the first k ids
    if metric == "ip":
        hits = ix.search(np.zeros((1, 4), np.float32), k=5)
        assert hits.docs.tolist() == [[0, 1, 2, 3, 4]] and (hits.scores == 0).all()
    # differences below float32 resolution: x = (1 + j ulp, 4, ..., 4), j = 3 for the last 20 docs
    # and 0..2 before them.  faiss's float32 scores (~113) tie, so its first candidates are an
    # arbitrary part of the corpus (the lowest ids, for ip); the float64 order puts docs 280..289 first
    near = np.full((300, 8), 4.0, np.float32)
    j = np.where(np.arange(300) >= 280, 3, rng.integers(0, 3, 300))
    near[:, 0] = 1 + j.astype(np.float32) * np.float32(2.0**-23)
    q = np.repeat(near[-1:], 25, axis=0)
    ix = DenseIndex.build(near, metric=metric)
    hits = ix.search(q, k=10)
    assert_exact(hits, near, q, 10, metric)
    assert hits.docs[0].tolist() == list(range(280, 290))


def test_tie_rule_and_padding_by_hand():
    x = np.array([[1, 0], [0, 1], [1, 0], [0.5, 0.5]], np.float32)
    ix = DenseIndex.build(x)
    docs, scores, counts = ix.search(np.array([[1, 0], [1, 1]], np.float32), k=6)
    assert docs.tolist() == [[0, 2, 3, 1, -1, -1], [0, 1, 2, 3, -1, -1]]
    assert scores[0, :4].tolist() == [1, 1, 0.5, 0] and np.isnan(scores[:, 4:]).all()
    assert counts.tolist() == [4, 4]


@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
def test_k_larger_than_n_pads(kind):
    x = np.random.default_rng(3).standard_normal((5, 3)).astype(np.float32)
    ix = DenseIndex.build(x, kind=kind, metric="l2")
    hits = ix.search(x, k=8)
    assert hits.docs.shape == (5, 8) and hits.counts.tolist() == [5] * 5
    assert hits.docs[:, 0].tolist() == [0, 1, 2, 3, 4]  # each vector is its own nearest
    assert (hits.docs[:, 5:] == -1).all() and np.isnan(hits.scores[:, 5:]).all()
    assert_exact(hits, x, x, 8, "l2")


def test_empty_queries_and_float64_scores(gauss):
    x, q = gauss
    ix = DenseIndex.build(x[:50])
    hits = ix.search(np.zeros((0, 32), np.float32), k=3)
    assert hits.docs.shape == (0, 3) and hits.scores.shape == (0, 3) and hits.counts.shape == (0,)
    h64 = ix.search(q[:4].astype(np.float64), k=3, dtype=np.float64)
    ids, scores = brute(x[:50], q[:4], 3)
    assert h64.scores.dtype == np.float64
    np.testing.assert_array_equal(h64.docs, ids)
    np.testing.assert_array_equal(h64.scores, scores)


# --------------------------------------------------------------------------- hnsw / ivf
@pytest.mark.parametrize("metric", ["ip", "l2"])
def test_approximate_recall(gauss, clustered, metric):
    x, q = gauss
    truth = DenseIndex.build(x, metric=metric).search(q, k=10)
    hnsw = DenseIndex.build(x, kind="hnsw", metric=metric)
    hits = hnsw.search(q, k=10)
    assert recall(hits, truth) >= 0.9
    well_ordered(hnsw, hits, q, metric)
    # unclustered Gaussian data needs many IVF cells probed; embeddings of real text are clustered
    ivf = DenseIndex.build(x, kind="ivf", metric=metric)
    hits = ivf.search(q, k=10, nprobe=ivf.config["nlist"] // 2)
    assert recall(hits, truth) >= 0.9
    well_ordered(ivf, hits, q, metric)
    assert recall(ivf.search(q, k=10, nprobe=1), truth) < recall(hits, truth)
    # a beam narrower than k still returns k results (faiss's HNSW stops at efSearch)
    assert (hnsw.search(q, k=40, ef_search=1).counts == 40).all()
    xc, qc = clustered
    truth = DenseIndex.build(xc, metric=metric).search(qc, k=10)
    ivf = DenseIndex.build(xc, kind="ivf", metric=metric)
    assert ivf.config["nlist"] == 51 and ivf.config["nprobe"] == 8  # the defaults for n = 2000
    assert recall(ivf.search(qc, k=10), truth) >= 0.9


@pytest.mark.parametrize("kind", ["hnsw", "ivf"])
def test_builds_are_deterministic(gauss, kind):
    x, q = gauss
    a = DenseIndex.build(x, kind=kind, seed=7)
    b = DenseIndex.build(x, kind=kind, seed=7)
    c = DenseIndex.build(x, kind=kind, seed=8)
    assert bytes(faiss.serialize_index(a.faiss_index)) == bytes(faiss.serialize_index(b.faiss_index))
    assert bytes(faiss.serialize_index(a.faiss_index)) != bytes(faiss.serialize_index(c.faiss_index))
    ha, hb = a.search(q, k=10), b.search(q, k=10, workers=2)
    np.testing.assert_array_equal(ha.docs, hb.docs)
    np.testing.assert_array_equal(ha.scores, hb.scores)


# --------------------------------------------------------------------------- store
@pytest.mark.parametrize("kind", ["flat", "hnsw", "ivf"])
@pytest.mark.parametrize("mmap", [True, False])
def test_save_load_round_trip(tmp_path, gauss, kind, mmap):
    x, q = gauss
    ix = DenseIndex.build(x[:500], kind=kind, metric="l2", normalize=True, seed=3)
    ix.save(tmp_path / "ix")
    doc = json.loads((tmp_path / "ix" / store.META).read_text())
    assert doc["format_version"] == FORMAT_VERSION and set(doc["files"]) == {INDEX_FILE} and not doc["arrays"]
    back = DenseIndex.load(tmp_path / "ix", mmap=mmap)
    assert back.config == ix.config and repr(back) == repr(ix)
    h1, h2 = ix.search(q, k=10), back.search(q, k=10)
    np.testing.assert_array_equal(h1.docs, h2.docs)
    np.testing.assert_array_equal(h1.scores, h2.scores)
    ix.save(tmp_path / "ix")  # replacing an existing store is fine


@pytest.fixture
def saved(tmp_path, gauss):
    d = tmp_path / "ix"
    DenseIndex.build(gauss[0][:300], kind="ivf", nlist=4).save(d)
    return d


@pytest.mark.parametrize("mmap", [True, False])
def test_bit_flip_is_refused(saved, mmap):
    f = saved / INDEX_FILE
    data = bytearray(f.read_bytes())
    data[len(data) // 2] ^= 0x10
    f.write_bytes(bytes(data))
    with pytest.raises(ValueError, match=r"index\.faiss is truncated or corrupt"):
        DenseIndex.load(saved, mmap=mmap)


@pytest.mark.parametrize("mmap", [True, False])
def test_truncation_is_refused(saved, mmap):
    f = saved / INDEX_FILE
    f.write_bytes(f.read_bytes()[:-100])
    with pytest.raises(ValueError, match=r"index\.faiss is truncated or corrupt"):
        DenseIndex.load(saved, mmap=mmap)


def test_wrong_version_and_format_are_refused(saved):
    edit_meta(saved, owner=False, format_version=FORMAT_VERSION + 1)
    with pytest.raises(ValueError, match="format version 2.*rebuild"):
        DenseIndex.load(saved)
    edit_meta(saved, owner=False, format_version=FORMAT_VERSION, format="pysynth.retrieval.index")
    with pytest.raises(ValueError, match="does not describe"):
        DenseIndex.load(saved)


@pytest.mark.parametrize("mmap", [True, False])
def test_garbage_with_matching_checksum_is_refused(saved, mmap):
    restamp_file(saved, INDEX_FILE, b"\x00" * 64)
    with pytest.raises(ValueError, match=r"index\.faiss is not a readable faiss index"):
        DenseIndex.load(saved, mmap=mmap)


def test_index_that_disagrees_with_meta_is_refused(saved, gauss):
    other = DenseIndex.build(gauss[0][:300], kind="hnsw")
    restamp_file(saved, INDEX_FILE, bytes(faiss.serialize_index(other.faiss_index)))
    with pytest.raises(ValueError, match="does not match meta.json"):
        DenseIndex.load(saved)


def test_hnsw_parameters_that_disagree_with_meta_are_refused(tmp_path, gauss):
    DenseIndex.build(gauss[0][:200], kind="hnsw", hnsw_m=8).save(tmp_path / "h")
    edit_meta(tmp_path / "h", hnsw_m=16)
    with pytest.raises(ValueError, match="HNSW M is 8, expected 16"):
        DenseIndex.load(tmp_path / "h")


@pytest.mark.parametrize("change", [{"kind": "annoy"}, {"n_docs": "300"}, {"nprobe": 99}, {"normalize": 1}])
def test_corrupt_meta_is_refused(saved, change):
    edit_meta(saved, **change)
    with pytest.raises(ValueError, match="meta.json is corrupt or incomplete"):
        DenseIndex.load(saved)


def test_missing_store_is_refused(tmp_path):
    with pytest.raises(ValueError, match="does not exist"):
        DenseIndex.load(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ValueError, match="meta.json is missing"):
        DenseIndex.load(tmp_path / "empty")


# --------------------------------------------------------------------------- argument errors
X = np.ones((10, 4), np.float32)


@pytest.mark.parametrize("kwargs, exc, match", [
    ({"embeddings": np.ones(4, np.float32)}, ValueError, r"embeddings must be 2-D.*\[None, :\]"),
    ({"embeddings": np.ones((0, 4), np.float32)}, ValueError, "embeddings has no rows"),
    ({"embeddings": np.ones((3, 0), np.float32)}, ValueError, "at least one column"),
    ({"embeddings": np.array([[1.0, np.nan]])}, ValueError, r"embeddings\[0, 1\] is nan"),
    ({"embeddings": np.array([[1e300, 1.0]])}, ValueError, r"embeddings\[0, 0\] is inf.*overflow float32"),
    ({"embeddings": np.array([["a", "b"]])}, TypeError, "embeddings must hold real numbers.*np.float32"),
    ({"embeddings": "text"}, TypeError, "embeddings must be a float32 array"),
    ({"kind": "lsh"}, ValueError, "kind must be one of 'flat', 'hnsw', 'ivf'"),
    ({"metric": "cosine"}, ValueError, "metric must be one of 'ip', 'l2'"),
    ({"normalize": "yes"}, TypeError, "normalize must be True or False"),
    ({"kind": "hnsw", "hnsw_m": 1}, ValueError, "hnsw_m must be >= 2"),
    ({"kind": "hnsw", "ef_search": 0}, ValueError, "ef_search must be >= 1"),
    ({"kind": "ivf", "nlist": 11}, ValueError, r"nlist = 11 is more than the 10 embeddings.*nlist <= 10"),
    ({"kind": "ivf", "nlist": 2.5}, TypeError, "nlist must be an int"),
    ({"kind": "flat", "nlist": 4}, ValueError, "nlist applies to kind='ivf' only"),
    ({"kind": "ivf", "ef_construction": 40}, ValueError, "ef_construction applies to kind='hnsw' only"),
    ({"seed": -1}, ValueError, "seed must be >= 0"),
    ({"workers": 0}, ValueError, "workers must be >= 1 or -1"),
])
def test_build_argument_errors(kwargs, exc, match):
    kwargs = {"embeddings": X, **kwargs}
    with pytest.raises(exc, match=match):
        DenseIndex.build(**kwargs)


def test_search_argument_errors():
    ix = DenseIndex.build(X, kind="hnsw")
    with pytest.raises(ValueError, match=r"queries must have d = 4 columns"):
        ix.search(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError, match=r"queries must be 2-D.*queries\[None, :\]"):
        ix.search(np.ones(4, np.float32))
    with pytest.raises(ValueError, match=r"queries\[1, 0\] is inf"):
        ix.search(np.array([[1, 1, 1, 1], [np.inf, 0, 0, 0]], np.float32))
    with pytest.raises(ValueError, match="k must be >= 1"):
        ix.search(X, k=0)
    with pytest.raises(TypeError, match="k must be an int"):
        ix.search(X, k=True)
    with pytest.raises(ValueError, match="nprobe applies to kind='ivf' indexes only"):
        ix.search(X, nprobe=3)
    with pytest.raises(ValueError, match="dtype must be float32 or float64"):
        ix.search(X, dtype=np.float16)
    with pytest.raises(TypeError, match="DenseIndex.build"):
        DenseIndex(None, {})


def test_small_nlist_warns_and_defaults():
    with pytest.warns(UserWarning, match="training points per IVF cell"):
        ix = DenseIndex.build(X, kind="ivf", nlist=10, nprobe=50)
    assert ix.config["nprobe"] == 10  # capped at nlist
    assert DenseIndex.build(X, kind="ivf").config["nlist"] == 1  # n // 39 == 0 -> 1


def test_import_is_lazy_and_missing_faiss_is_explained(monkeypatch):
    code = ("import sys, pysynth.retrieval.dense; "
            "print(sorted(m for m in ('faiss', 'torch', 'transformers') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True)
    assert out.stdout.strip() == "[]"
    monkeypatch.setitem(sys.modules, "faiss", None)  # import faiss now raises ImportError
    with pytest.raises(ImportError, match=r"pip install '\.\[dist\]'"):
        DenseIndex.build(X)


def test_docstring_examples():
    result = doctest.testmod(dense, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


def test_text_encoder_moved_to_the_model_stack():
    with pytest.raises(ImportError, match=r"pysynth\.models\.embed\.encode_texts"):
        from pysynth.retrieval.dense import encode_texts  # noqa: F401
