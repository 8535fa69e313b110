"""Collection statistics counted once (compiled) and carried by text.Corpus: parity of
``collection_stats``, generate() on a corpus, immutability, and the loader's recount."""
from __future__ import annotations

import numpy as np
import pytest

from pysynth import sampling, text
from pysynth.sampling import CollectionStats, KeywordModel

from _sampling_util import api_all, core_all
from _stores import restamp_array


def _docs(n=300, V=50, seed=0, max_len=12):
    rng = np.random.default_rng(seed)
    lens = rng.integers(0, max_len, n)  # empty documents included
    off = np.zeros(n + 1, np.int64)
    np.cumsum(lens, out=off[1:])
    ids = rng.zipf(1.3, int(off[-1])).astype(np.int64) % V
    return ids.astype(np.int32), off


def _numpy_stats(ids, off, V):
    cf = np.bincount(ids, minlength=V)
    df = np.zeros(V, np.int64)
    for i in range(off.shape[0] - 1):
        df[np.unique(ids[off[i]:off[i + 1]])] += 1
    return cf, df


def test_collection_stats_parity():
    for seed, (n, V) in enumerate([(300, 50), (5000, 7), (1, 1), (0, 0), (0, 5), (40000, 3)]):
        ids, off = _docs(n, max(V, 1), seed)
        if V == 0:
            ids = ids[:0]
            off = off[:1] * 0
        cf, df = core_all("collection_stats", ids, off, V)
        assert cf.dtype == df.dtype == np.int64 and cf.shape == df.shape == (V,)
        ref_cf, ref_df = _numpy_stats(ids, off, V)
        assert np.array_equal(cf, ref_cf) and np.array_equal(df, ref_df)


@pytest.mark.parametrize("args, pattern", [
    (([0, 5, 1], [0, 3], 5), "id 5 outside"),
    (([0, -1], [0, 2], 5), "id -1 outside"),
    (([0, 1], [1, 2], 5), "start at 0"),
    (([0, 1, 2], [0, 2, 1, 3], 5), "non-decreasing"),
    (([0, 1], [0, 3], 5), "must end at"),
    (([0, 1], [], 5), "at least one entry"),
    (([0, 1], [0, 2], -1), "vocab_size"),
    (([0.5], [0, 1], 5), "dtype|integer"),
])
def test_collection_stats_bad_input(args, pattern):
    ids, off, V = args
    with pytest.raises(ValueError, match=pattern):
        core_all("collection_stats", np.asarray(ids), np.asarray(off, dtype=np.int64), V)


def test_from_documents_matches_counts():
    ids, off = _docs(2000, 40, 3)
    ref = _numpy_stats(ids, off, 40)
    st = api_all(CollectionStats.from_documents, (ids, off), 40)
    assert np.array_equal(st.cf, ref[0]) and np.array_equal(st.df, ref[1]) and st.n_docs == 2000
    with pytest.raises(ValueError, match="vocab_size"):
        CollectionStats.from_documents((ids, off), 39)


def _corpus(n=400, V=60, seed=1):
    ids, off = _docs(n, V, seed)
    lens = np.diff(off)
    keep = np.flatnonzero(lens >= 2)  # questions of >= 2 tokens
    rows = [ids[off[i]:off[i + 1]].tolist() for i in keep]
    for r in rows:
        r[0] = 0  # "what" first: every question has a question word
        r[1] = 1 + r[1] % (V - 1)  # and a samplable term
    vocab = ["what"] + [f"w{t}" for t in range(1, V)]
    flat = np.array([t for r in rows for t in r], np.int32)
    o = np.zeros(len(rows) + 1, np.int64)
    np.cumsum([len(r) for r in rows], out=o[1:])
    return text.Corpus(flat, o, None, None, vocab)


def test_corpus_counts_its_statistics_once():
    c = _corpus()
    ref_cf, ref_df = _numpy_stats(np.asarray(c.ids), np.asarray(c.offsets), c.n_terms)
    assert np.array_equal(c.cf, ref_cf) and np.array_equal(c.df, ref_df)
    st = CollectionStats.of(c)
    assert st.n_docs == c.n_docs and np.array_equal(st.cf, c.cf)
    with pytest.raises(TypeError, match="text.Corpus"):
        CollectionStats.of((c.ids, c.offsets))
    with pytest.raises(ValueError, match="both cf and df"):
        text.Corpus(c.ids, c.offsets, c.cf, None, c.vocab)


def test_corpus_is_immutable():
    ids = np.array([1, 2, 1], np.int32)
    c = text.Corpus(ids, [0, 2, 3], None, None, ["a", "b", "c"])
    assert ids.flags.writeable  # the caller's array keeps its flags
    for name in ("ids", "offsets", "cf", "df"):
        with pytest.raises(ValueError, match="read-only"):
            getattr(c, name)[0] = 0
        with pytest.raises(AttributeError):
            setattr(c, name, np.zeros(3, np.int64))
    assert c.cf.tolist() == [0, 2, 1] and c.df.tolist() == [0, 2, 1]


@pytest.mark.parametrize("model", [KeywordModel("paraphrase", "combination"),
                                   KeywordModel("baseline", "discriminative", lam=0.3)])
def test_generate_on_a_corpus(model):
    """A corpus brings its statistics and vocabulary: same candidates as the explicit call,
    on every backend and for any workers."""
    c = _corpus()
    groups = np.arange(c.n_docs) % 37
    clusters = sampling.Clusters.from_groups((np.asarray(c.ids), np.asarray(c.offsets)), groups)
    got = api_all(model.generate, c, clusters, m=5, seed=3)
    for w in (2, -1):
        assert all(np.array_equal(a, b) for a, b in zip(got, model.generate(c, clusters, m=5, seed=3, workers=w)))
    stats = CollectionStats.from_documents((c.ids, c.offsets), c.n_terms)
    ref = model.generate((c.ids, c.offsets), clusters, stats, m=5, seed=3, vocab=c.vocab)
    assert all(np.array_equal(a, b) for a, b in zip(got, ref))
    # the default (statistics counted over the ids on every call) is the same too
    dflt = model.generate((c.ids, c.offsets), clusters, m=5, seed=3, vocab=c.vocab, workers=2)
    assert all(np.array_equal(a, b) for a, b in zip(got, dflt))
    assert 0 not in set(got[0].tolist())  # "what" excluded through the corpus's vocabulary
    assert model.samplable(c).all()


def test_corpus_load_recounts_statistics(tmp_path):
    c = _corpus()
    d = c.save(tmp_path / "c")
    back = text.Corpus.load(d)
    assert np.array_equal(back.df, c.df) and np.array_equal(back.cf, c.cf)
    bad = np.array(c.df)
    bad[5] += 1  # consistent checksums, wrong statistics
    restamp_array(d, "df", bad)
    with pytest.raises(ValueError, match=r"df\.npy is inconsistent.*df\[5\]"):
        text.Corpus.load(d)
    text.Corpus.load(d, validate=False)  # not recounted
    (d / "df.npy").write_bytes((d / "df.npy").read_bytes()[:-8])  # truncated: the checksum
    with pytest.raises(ValueError, match="df"):
        text.Corpus.load(d)


def test_order_like_questions_by_hand_and_parity():
    # question 0: 5 3 7 3; question 1: 2 9. m = 2 candidates each
    q, qo = np.array([5, 3, 7, 3, 2, 9], np.int32), np.array([0, 4, 6], np.int64)
    c = np.array([7, 5, 3, 8, 3, 5, 9, 4, 2, 1, 9], np.int32)
    co = np.array([0, 4, 6, 9, 11], np.int64)
    out = core_all("order_like_questions", q, qo, c, co, 2)
    # present terms by first position; absent ones (8, 4, 1) after them, in their order
    assert out.tolist() == [5, 3, 7, 8, 5, 3, 2, 9, 4, 9, 1]
    rng = np.random.default_rng(2)
    n, m = 400, 5
    ql = rng.integers(0, 12, n)
    q = rng.integers(0, 30, ql.sum()).astype(np.int32)
    qo = np.concatenate([[0], np.cumsum(ql)]).astype(np.int64)
    cl = rng.integers(0, 7, n * m)
    c = rng.integers(0, 40, cl.sum()).astype(np.int32)
    co = np.concatenate([[0], np.cumsum(cl)]).astype(np.int64)
    out = core_all("order_like_questions", q, qo, c, co, m)
    for i in range(n * m):
        got, src = out[co[i]:co[i + 1]].tolist(), c[co[i]:co[i + 1]].tolist()
        assert sorted(got) == sorted(src)
    for bad in (dict(m=0), dict(m=3), dict(c_offsets=co[:-1]), dict(q_ids=-q - 1)):
        kw = dict(q_ids=q, q_offsets=qo, c_ids=c, c_offsets=co, m=m) | bad
        with pytest.raises(ValueError):
            core_all("order_like_questions", **kw)
