"""The positional index: build parity (compiled vs twin), layout, validation, save/load, corruption."""
from __future__ import annotations

import json
import shutil

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pysynth import _dispatch, store
from pysynth.retrieval import ARRAYS, FORMAT_VERSION, Index

from _stores import restamp_array, write_meta
from retrieval_helpers import BACKENDS, assert_same, call_all, queries_of, zipf_corpus

HAS_CPP = "cpp" in BACKENDS


def test_hand_example_layout():
    # doc 0: a b a   doc 1: (empty)   doc 2: b c   doc 3: a
    docs = [[0, 1, 0], [], [1, 2], [0]]
    a = call_all("build_index", *_flat(docs), 4, 1)
    assert a["indptr"].tolist() == [0, 2, 4, 5, 5]  # term 3 unused
    assert a["doc_ids"].tolist() == [0, 3, 0, 2, 2]
    assert a["tfs"].tolist() == [2, 1, 1, 1, 1]
    assert a["pos_indptr"].tolist() == [0, 2, 3, 4, 5, 6]
    assert a["positions"].tolist() == [0, 2, 0, 1, 0, 1]
    assert a["doc_lengths"].tolist() == [3, 0, 2, 1]
    assert a["cf"].tolist() == [3, 2, 1, 0]
    assert a["max_tf"].tolist() == [2, 1, 1, 0]
    # impact order per term: tf desc, |D| asc, doc asc.  term 0: doc0 (tf 2) then doc3;
    # term 1: doc2 (|D| 2) before doc0 (|D| 3)
    assert a["impact"].tolist() == [0, 1, 1, 0, 0]
    assert a["doc_tokens"].tolist() == [0, 1, 0, 1, 2, 0]
    assert a["doc_offsets"].tolist() == [0, 3, 3, 5, 6]
    # frequent-pair table: N = 4 -> df >= 2 -> terms 0 and 1; entry (i, j) at i * 2 + j.
    # (0,0): doc0 a@0,2: no adjacent pair, #uw = tf: 2 (+1 in doc3).  (0,1): doc0 0@0 1@1 is
    # one #od:1 match; #uw:8 checks (0,1) then (2,1): 2.  (1,0): 1@1 0@2: #od 1, #uw 2.
    assert a["pair_terms"].tolist() == [0, 1]
    assert a["pair_cf_od"].tolist() == [0, 1, 1, 0]
    assert a["pair_cf_uw"].tolist() == [3, 2, 2, 2]
    assert a["pair_max_od"].tolist() == [0, 1, 1, 0]
    assert a["pair_max_uw"].tolist() == [2, 2, 2, 1]
    call_all("validate_index", a, 1)


def _flat(docs):
    off = np.zeros(len(docs) + 1, np.int64)
    np.cumsum([len(d) for d in docs], out=off[1:])
    ids = np.array([t for d in docs for t in d], np.int32)
    return ids, off


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 2**32 - 1), st.integers(1, 60), st.integers(1, 25))
def test_build_parity_and_validity(seed, n_docs, vocab):
    rng = np.random.default_rng(seed)
    ids, off = zipf_corpus(rng, n_docs, vocab, max_len=int(rng.integers(1, 16)))
    vocab = max(vocab, int(ids.max()) + 1)
    a = call_all("build_index", ids, off, vocab, 2)
    assert set(a) == set(ARRAYS)
    call_all("validate_index", a, 2)
    # invariants
    assert a["positions"].shape[0] == off[-1] == a["cf"].sum() == a["tfs"].sum()
    assert np.array_equal(a["doc_tokens"], ids) and np.array_equal(a["doc_offsets"], off)


@pytest.mark.skipif(not HAS_CPP, reason="compiled extension not built")
@pytest.mark.parametrize("workers", [1, 2, 3, -1])
def test_build_thread_invariance(workers):
    rng = np.random.default_rng(7)
    ids, off = zipf_corpus(rng, 20000, 500, max_len=15)
    ref = BACKENDS["cpp"].build_index(ids, off, 500, 1)
    got = BACKENDS["cpp"].build_index(ids, off, 500, workers)
    assert_same(got, ref)
    BACKENDS["cpp"].validate_index(got, workers)


@pytest.mark.parametrize(
    "docs, offsets, vocab, match",
    [
        ([], None, 3, "empty corpus"),
        ([[], []], None, 3, "empty corpus"),
        ([[0, 5]], None, 3, "outside"),
        ([[0, -1]], None, 3, r"\[0, 2\*\*31"),
        (np.array([0, 1], np.int32), np.array([0, 3]), 3, "offsets"),
        (np.array([0, 1], np.int32), np.array([1, 2]), 3, "offsets"),
        ([[0, 1]], None, 0, "vocab_size"),
    ],
)
def test_build_rejects_bad_input(docs, offsets, vocab, match):
    for impl in BACKENDS:
        with _dispatch.force(impl, "retrieval"):
            with pytest.raises(ValueError, match=match):
                Index.build(docs, offsets, vocab_size=vocab)


def test_build_core_rejects_bad_input():
    # the same errors straight from the compiled function and the twin
    with pytest.raises(ValueError):
        call_all("build_index", np.array([0, 3], np.int32), np.array([0, 2]), 3, 1)
    with pytest.raises(ValueError):
        call_all("build_index", np.zeros(0, np.int32), np.array([0]), 3, 1)
    with pytest.raises(ValueError):
        call_all("build_index", np.array([0], np.int32), np.array([0, 1]), 3, 0)  # workers


def test_build_accepts_token_ids_objects_and_lists():
    from pysynth.metrics import TokenIds

    docs = [[2, 1], [0], [1, 1, 2]]
    a = Index.build(docs)
    b = Index.build(TokenIds.from_lists(docs))
    c = Index.build(*_flat(docs), vocab_size=3)
    for x in (b, c):
        assert_same(dict(x.arrays), dict(a.arrays))
    assert (a.n_docs, a.vocab_size, a.n_tokens, a.n_postings) == (3, 3, 6, 5)
    assert a.df.tolist() == [1, 2, 2]
    with pytest.raises(TypeError):
        Index.build([[0.5, 1.0]])
    with pytest.raises(ValueError, match="offsets"):
        Index.build(np.array([0, 1], np.int32))  # flat ids without offsets
    with pytest.raises(TypeError):
        Index({})


# --------------------------------------------------------------------------
# save / load
# --------------------------------------------------------------------------
@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    rng = np.random.default_rng(3)
    ids, off = zipf_corpus(rng, 300, 40)
    ix = Index.build(ids, off, vocab_size=40)
    d = tmp_path_factory.mktemp("index")
    ix.save(d)
    return ix, d


@pytest.mark.parametrize("mmap", [True, False])
def test_save_load_round_trip(saved, mmap):
    ix, d = saved
    back = Index.load(d, mmap=mmap)
    assert_same({k: np.asarray(v) for k, v in back.arrays.items()}, dict(ix.arrays))
    if mmap:
        assert isinstance(back.arrays["positions"], np.memmap)
    rng = np.random.default_rng(4)
    q, qo = queries_of(rng, 30, 40)
    for model in ("sdm", "bm25"):
        assert_same(tuple(back.search(q, qo, model=model, k=7)), tuple(ix.search(q, qo, model=model, k=7)))
    meta = json.loads((d / "meta.json").read_text())
    assert meta["format_version"] == FORMAT_VERSION and meta["meta"]["n_docs"] == 300
    # saving a loaded (memory-mapped) index again works and gives the same files
    d2 = d.parent / (d.name + "_again")
    back.save(d2)
    assert json.loads((d2 / "meta.json").read_text()) == meta


def _copy(d, tmp_path):
    dst = tmp_path / "copy"
    shutil.copytree(d, dst)
    return dst


@pytest.mark.parametrize("name", list(ARRAYS))
def test_truncated_file_is_refused(saved, tmp_path, name):
    _, d = saved
    c = _copy(d, tmp_path)
    f = c / f"{name}.npy"
    data = f.read_bytes()
    for cut in (len(data) - 4, 100, 10):  # lose data, lose most of it, lose the header
        f.write_bytes(data[:cut])
        with pytest.raises(ValueError, match=name):
            Index.load(c)


@pytest.mark.parametrize("name", ["doc_ids", "positions", "impact", "cf", "doc_lengths"])
def test_flipped_bytes_are_refused(saved, tmp_path, name):
    _, d = saved
    c = _copy(d, tmp_path)
    f = c / f"{name}.npy"
    data = bytearray(f.read_bytes())
    data[-3] ^= 0x5A
    f.write_bytes(bytes(data))
    with pytest.raises(ValueError, match="CRC-32"):
        Index.load(c)


def test_missing_meta_version_and_files(saved, tmp_path):
    _, d = saved
    c = _copy(d, tmp_path)
    meta = json.loads((c / "meta.json").read_text())
    for v in (FORMAT_VERSION + 1, 1):  # 1: an index saved before pysynth.store
        write_meta(c, dict(meta, format_version=v))
        with pytest.raises(ValueError, match=f"format version {v}; .*rebuild"):
            Index.load(c)
    write_meta(c, dict(meta, format="other"))
    with pytest.raises(ValueError, match="does not describe"):
        Index.load(c)
    (c / "meta.json").write_text("{not json")
    with pytest.raises(ValueError, match="corrupt"):
        Index.load(c)
    bad = json.loads(json.dumps(meta))
    bad["arrays"]["tfs"]["shape"] = [1]
    write_meta(c, bad)
    with pytest.raises(ValueError, match=r"tfs is int32\[1\] in meta.json, expected int32\["):
        Index.load(c)
    bad = json.loads(json.dumps(meta))
    bad["meta"]["n_postings"] = "many"
    write_meta(c, bad)
    with pytest.raises(ValueError, match="meta.json is corrupt or incomplete: a size"):
        Index.load(c)
    bad = json.loads(json.dumps(meta))
    bad["meta"]["n_docs"] += 1  # sizes disagree with the arrays
    write_meta(c, bad)
    with pytest.raises(ValueError, match=r"doc_offsets is int64\[\d+\] in meta.json, expected int64"):
        Index.load(c)
    write_meta(c, meta)
    (c / "impact.npy").unlink()
    with pytest.raises(ValueError, match="incomplete: impact.npy is missing"):
        Index.load(c)
    (c / "meta.json").unlink()
    with pytest.raises(ValueError, match="is not a saved pysynth.retrieval.index: meta.json is missing"):
        Index.load(c)
    with pytest.raises(ValueError, match="not a pysynth index: it does not exist"):
        Index.load(tmp_path / "nowhere")


def _tamper(a, name, fn):
    b = {k: np.array(v) for k, v in a.items()}
    fn(b[name])
    return b


TAMPER = {
    "doc id out of range": ("doc_ids", lambda x: x.__setitem__(0, 10**6)),
    "doc ids not ascending": ("doc_ids", lambda x: x.__setitem__(slice(0, 2), x[0:2][::-1])),
    "negative tf": ("tfs", lambda x: x.__setitem__(0, -3)),
    "position out of doc": ("positions", lambda x: x.__setitem__(0, 10**6)),
    "position on other term": ("positions", lambda x: x.__setitem__(slice(None), 0)),
    "indptr decreasing": ("indptr", lambda x: x.__setitem__(1, -5)),
    "indptr end": ("indptr", lambda x: x.__setitem__(-1, x[-1] + 1)),
    "pos_indptr": ("pos_indptr", lambda x: x.__setitem__(1, x[1] + 1)),
    "doc_offsets": ("doc_offsets", lambda x: x.__setitem__(1, 10**9)),
    "doc_lengths": ("doc_lengths", lambda x: x.__setitem__(0, x[0] + 1)),
    "cf": ("cf", lambda x: x.__setitem__(0, x[0] + 1)),
    "max_tf": ("max_tf", lambda x: x.__setitem__(0, 0)),
    "impact repeated": ("impact", lambda x: x.__setitem__(slice(None), 0)),
    "impact out of range": ("impact", lambda x: x.__setitem__(0, -1)),
    "impact order": ("impact", lambda x: x.__setitem__(slice(None), x[::-1])),
    "doc token": ("doc_tokens", lambda x: x.__setitem__(0, (x[0] + 1) % 40)),
    "pair terms": ("pair_terms", lambda x: x.__setitem__(0, x[0] + 1)),
    "pair cf negative": ("pair_cf_od", lambda x: x.__setitem__(0, -1)),
    "pair max above cf": ("pair_max_uw", lambda x: x.__setitem__(0, 10**6)),
}


@pytest.mark.parametrize("case", sorted(TAMPER))
def test_inconsistent_arrays_are_refused_without_crashing(saved, case):
    # checksum-consistent but wrong data: the structural check catches it (never a crash)
    ix, _ = saved
    name, fn = TAMPER[case]
    bad = _tamper(dict(ix.arrays), name, fn)
    with pytest.raises(ValueError):
        call_all("validate_index", bad, 2)


def test_inconsistent_file_with_matching_checksum_is_refused(saved, tmp_path):
    ix, d = saved
    c = _copy(d, tmp_path)
    bad = np.array(ix.arrays["doc_ids"])
    bad[0] = ix.n_docs + 5
    restamp_array(c, "doc_ids", bad)
    for mmap in (True, False):
        with pytest.raises(ValueError, match="inconsistent index"):
            Index.load(c, mmap=mmap)


def test_save_is_atomic_and_refuses_foreign_directories(saved, tmp_path, monkeypatch):
    ix, d = saved
    c = _copy(d, tmp_path)
    before = {p.name: p.read_bytes() for p in c.iterdir()}

    def killed(*args, **kwargs):
        raise KeyboardInterrupt

    monkeypatch.setattr(store, "_save_npy", killed)  # the writer dies after creating its temporary dir
    with pytest.raises(KeyboardInterrupt):
        ix.save(c)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in c.iterdir()} == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["copy"]  # no temporary left behind
    Index.load(c)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep me")
    with pytest.raises(ValueError, match="not a pysynth store: refusing to replace it"):
        ix.save(tmp_path / "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep me"


def test_validate_rejects_wrong_dtypes_and_sizes(saved):
    ix, _ = saved
    a = dict(ix.arrays)
    with pytest.raises(ValueError):
        call_all("validate_index", dict(a, tfs=a["tfs"].astype(np.int64)), 1)
    with pytest.raises(ValueError):
        call_all("validate_index", dict(a, cf=a["cf"][:-1]), 1)
    b = dict(a)
    del b["impact"]
    with pytest.raises(ValueError):
        call_all("validate_index", b, 1)
