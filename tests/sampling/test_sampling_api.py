"""Public API of pysynth.sampling: validation (ValueError naming the argument, on every
backend), helpers (P(s), statistics, clusters, exclusion) and the documented edge cases."""
from __future__ import annotations

import gzip
import json

import numpy as np
import pytest

from pysynth import sampling
from pysynth.sampling import (
    Clusters,
    CollectionStats,
    KeywordModel,
    default_length_dist,
    estimate_length_dist,
    exclusion_mask,
    length_dist_from_counts,
    poisson_length_dist,
)

from _sampling_util import BACKENDS, api_all, core_all, core_args, ragged

VOCAB = ["what", "is", "the", "capital", "of", "france", "who", "wrote", "hamlet", "how",
         "paris", "shakespeare"]
QS = [[0, 1, 2, 3, 4, 5], [6, 7, 8], [9, 1, 10, 2, 3, 4, 5]]
STATS = CollectionStats.from_documents(QS, len(VOCAB))


def _gen(model=None, qs=QS, clusters=None, stats=STATS, **kw):
    model = model or KeywordModel("baseline", "combination", lam=0.2)
    kw.setdefault("vocab", VOCAB)
    return api_all(model.generate, qs, clusters, stats, **kw)


# ----------------------------------------------------------------------------------
# outputs
# ----------------------------------------------------------------------------------
def test_output_layout_and_rules():
    ids, off = _gen(m=20, seed=4)
    assert ids.dtype == np.int32 and off.dtype == np.int64 and off.shape == (61,)
    cands = sampling.Candidates(ids, off).as_lists(20)
    qwords = {VOCAB.index(w) for w in ("what", "who", "how")}
    for q, rows in zip(QS, cands):
        for cand in rows:
            assert len(cand) == len(set(cand))
            assert not qwords & set(cand)
            assert 1 <= len(cand) < len(q)
    assert sampling.Candidates(ids, off).lengths.sum() == ids.size


def test_short_questions_length_rule():
    """|q| <= 3 with P(s) on [3, 7]: s = max(1, |q| - 1)."""
    qs = [[6, 8], [8], [6, 7, 8], [7, 8, 10, 11]]
    ids, off = _gen(qs=qs, stats=None, m=50, seed=1)
    lens = np.diff(off).reshape(4, 50)
    assert np.all(lens[0] == 1) and np.all(lens[1] == 1) and np.all(lens[2] == 2)
    assert np.all(lens[3] == 3)  # only s = 3 < 4 has mass
    # a one-token question gives itself when lam = 0
    one = _gen(KeywordModel("baseline", "popular", lam=0.0), qs=[[8]], m=5)
    assert one[0].tolist() == [8] * 5


def test_support_smaller_than_s_gives_shorter_candidates():
    model = KeywordModel("baseline", "popular", lam=0.0, length_dist=[0, 0, 0, 0, 0, 1.0])
    ids, off = _gen(model, qs=[[0, 3, 3, 3, 5, 5, 3, 0]], m=10, seed=2)  # |q| = 8, support {3, 5}
    assert np.all(np.diff(off) == 2)
    assert sorted(set(ids.tolist())) == [3, 5]


def test_paraphrase_uses_cluster_terms_and_fallback():
    clusters = Clusters.from_groups(QS, ["a", None, "a"])
    assert clusters.index.tolist() == [0, -1, 0]
    assert clusters.values.tolist() == QS[0] + QS[2]
    model = KeywordModel("paraphrase", "popular", alpha=0.0, beta=1.0)
    ids, off = _gen(model, clusters=clusters, m=30, seed=7)
    rows = sampling.Candidates(ids, off).as_lists(30)
    assert {t for c in rows[0] for t in c} <= set(QS[0] + QS[2])
    assert any(10 in c for c in rows[0])               # "paris" only in the paraphrase
    assert {t for c in rows[1] for t in c} <= set(QS[1])  # no cluster: C_q = q
    # a cluster row with only excluded terms behaves like "no cluster"
    only_qwords = Clusters(*ragged([[0, 6, 9]]), np.array([-1, 0, -1]))
    none = Clusters(*ragged([[0, 6, 9]]), np.array([-1, -1, -1]))
    a = _gen(model, clusters=only_qwords, m=5, seed=3)
    b = _gen(model, clusters=none, m=5, seed=3)
    assert np.array_equal(a[0], b[0])


def test_combination_all_zero_idf_falls_back_to_popular():
    # every term occurs in every question: log(N / df) = 0 for all
    qs = [[1, 2, 2], [2, 1, 1]]
    stats = CollectionStats.from_documents(qs, 3)
    comb = KeywordModel("baseline", "combination", lam=0.0, length_dist=[0, 1.0])
    pop = KeywordModel("baseline", "popular", lam=0.0, length_dist=[0, 1.0])
    ex = np.zeros(3, np.uint8)
    a = _gen(comb, qs=qs, stats=stats, m=200, seed=1, exclude=ex, vocab=None)
    b = _gen(pop, qs=qs, stats=stats, m=200, seed=1, exclude=ex, vocab=None)
    assert np.array_equal(a[0], b[0])
    td = comb.term_distributions(qs, None, stats, exclude=ex)
    assert np.allclose(td.dense(0), [0, 1 / 3, 2 / 3])


def test_term_distributions_match_equations():
    stats = STATS
    model = KeywordModel("baseline", "discriminative", lam=0.25)
    td = model.term_distributions(QS, None, stats, vocab=VOCAB)
    cf = stats.cf.astype(float)
    # Eq. 4 for question 1 ("who wrote hamlet"; "who" excluded): 1/P(t) normalized
    inv = np.array([0, 0, 0, 0, 0, 0, 0, 1 / cf[7], 1 / cf[8], 0, 0, 0])
    cfb = cf.copy()
    cfb[[0, 6, 9]] = 0
    want = 0.75 * inv / inv.sum() + 0.25 * cfb / cfb.sum()
    assert np.allclose(td.dense(1), want)
    # Eq. 5 for question 0
    model5 = KeywordModel("baseline", "combination", lam=0.0)
    td5 = model5.term_distributions(QS, None, stats, vocab=VOCAB)
    w = np.zeros(len(VOCAB))
    for t in QS[0][1:]:
        w[t] += np.log(stats.n_docs / stats.df[t])
    assert np.allclose(td5.dense(0), w / w.sum())
    for i in range(3):
        assert abs(td.dense(i).sum() - 1) < 1e-12


def test_default_model_and_module_generate():
    a = api_all(sampling.generate, QS, Clusters.per_question(QS), STATS, m=4, seed=9, vocab=VOCAB)
    b = api_all(KeywordModel().generate, QS, Clusters.per_question(QS), STATS, m=4, seed=9,
                vocab=VOCAB)
    assert np.array_equal(a.ids, b.ids)
    w = KeywordModel().weights
    assert "paraphrase" in repr(KeywordModel()) and w[:2] == (0.5, 0.4) and abs(w[2] - 0.1) < 1e-12


def test_input_forms_are_equivalent():
    ids, off = ragged(QS)

    class TokenIdsLike:
        values = ids
        offsets = off

    a = _gen(qs=QS, m=3, seed=5)
    b = _gen(qs=(ids, off), m=3, seed=5)
    c = _gen(qs=TokenIdsLike(), m=3, seed=5)
    d = _gen(qs=QS, stats=None, m=3, seed=5)  # stats counted over the questions
    for x in (b, c, d):
        assert np.array_equal(a.ids, x.ids) and np.array_equal(a.offsets, x.offsets)


def test_weights_snap():
    assert KeywordModel("paraphrase", alpha=0.7, beta=0.3).weights == (0.7, 0.3, 0.0)
    assert KeywordModel("baseline", lam=0.3).weights == (0.7, 0.0, 0.3)


# ----------------------------------------------------------------------------------
# helpers
# ----------------------------------------------------------------------------------
def test_length_dist_helpers():
    p = default_length_dist()
    counts = np.array([133, 256, 208, 117, 48], float)
    assert np.allclose(p[3:], counts / counts.sum()) and p[:3].sum() == 0 and p.size == 8
    q = estimate_length_dist(["a b c", "a b c d", [1, 2, 3], 4, "a b", "a b c d e f g h"])
    assert np.allclose(q, [0, 0, 0, 0.5, 0.5, 0, 0, 0])
    assert np.allclose(length_dist_from_counts([0, 0, 1, 1], 1, 3), [0, 0, 0.5, 0.5])
    pp = poisson_length_dist(4.0, 1, 10)
    assert pp[0] == 0 and abs(pp.sum() - 1) < 1e-12 and np.argmax(pp) in (3, 4)
    with pytest.raises(ValueError, match="s_min"):
        length_dist_from_counts({3: 1}, 5, 4)
    with pytest.raises(ValueError, match="no query length"):
        estimate_length_dist(["a", "a b"], 3, 7)
    with pytest.raises(ValueError, match="mean"):
        poisson_length_dist(0.0)


def test_t0_counts_match_shared_data(shared_data):
    path = shared_data / "k2q_seed_pairs" / "pairs.jsonl.gz"
    if not path.exists():
        pytest.skip("k2q seed pairs not found")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        kws = [json.loads(line)["keywords"] for line in f if line.strip()]
    lens = sampling.keyword_lengths(kws)
    assert dict(zip(*np.unique(lens, return_counts=True))) == sampling.T0_KEYWORD_LENGTHS
    assert np.allclose(estimate_length_dist(kws), default_length_dist())


def test_exclusion_mask_and_stats_and_clusters():
    mask = exclusion_mask(VOCAB)
    assert np.flatnonzero(mask).tolist() == [0, 6, 9]
    mask2 = exclusion_mask({"What": 0, "paris": 1}, vocab_size=4, words=["what"], extra_ids=[3])
    assert mask2.tolist() == [0, 0, 0, 1]  # vocabulary entries are matched as they are
    assert exclusion_mask(["a", "what"], words=["WHAT"]).tolist() == [0, 1]  # words lower-cased
    st = CollectionStats.from_documents([[1, 1, 2], [2, 3]], 5)
    assert st.cf.tolist() == [0, 2, 2, 1, 0] and st.df.tolist() == [0, 1, 2, 1, 0] and st.n_docs == 2
    cl = Clusters.from_groups([[1], [2, 3], [4]], ["x", "y", "x"])
    assert cl.values.tolist() == [1, 4, 2, 3] and cl.offsets.tolist() == [0, 2, 4]
    assert cl.index.tolist() == [0, 1, 0]
    model = KeywordModel()
    assert model.samplable([[0, 6], [0, 1]], vocab=VOCAB).tolist() == [False, True]


# ----------------------------------------------------------------------------------
# validation: ValueError naming the argument
# ----------------------------------------------------------------------------------
@pytest.mark.parametrize("kwargs,match", [
    (dict(model="bm25"), "model"),
    (dict(strategy="tfidf"), "strategy"),
    (dict(model="baseline", lam=1.5), "lam"),
    (dict(model="baseline", lam=-0.1), "lam"),
    (dict(lam=float("nan")), "lam"),
    (dict(alpha=1.2), "alpha"),
    (dict(beta=-1), "beta"),
    (dict(alpha=0.7, beta=0.4), "alpha \\+ beta"),
    (dict(length_dist=[0, 0, 0]), "length_dist"),
    (dict(length_dist=[0.5, 0.5]), "length_dist"),
    (dict(length_dist=[0, -1, 2]), "length_dist"),
    (dict(length_dist=[[0, 1]]), "length_dist"),
    (dict(max_rejections=-1), "max_rejections"),
])
def test_model_validation(kwargs, match):
    with pytest.raises(ValueError, match=match):
        KeywordModel(**kwargs)


@pytest.mark.parametrize("qs,kw,match", [
    ([[1, 2], []], {}, "question 1 is empty"),
    ([[1, 2], [0, 6, 9]], {}, "only excluded"),
    ([[1, 2], [3, 11]], dict(exclude=np.isin(np.arange(12), [3, 11]).astype(np.uint8), vocab=None),
     "only excluded"),
    (QS, dict(m=0), "m must"),
    (QS, dict(m=2.0), "m must"),
    (QS, dict(seed=-1), "seed"),
    (QS, dict(seed=2 ** 64), "seed"),
    (QS, dict(workers=0), "workers"),
    (QS, dict(first_index=-3), "first_index"),
    (QS, dict(vocab=None), "vocab="),
    (QS, dict(exclude=np.zeros(3, np.uint8)), "exclude"),
    ([[1, 2], [50]], {}, "questions contain id 50"),
])
def test_generate_validation(qs, kw, match):
    model = KeywordModel("baseline", "popular", lam=0.2)
    kw = {"vocab": VOCAB, **kw}
    with pytest.raises(ValueError, match=match):
        api_all(model.generate, qs, None, STATS, **kw)


def test_statistics_validation():
    qs = [[1, 2, 3], [10, 11]]
    stats = CollectionStats.from_documents(qs[:1], len(VOCAB))  # 10, 11: cf = df = 0
    for strategy, match in (("discriminative", "cf 0"), ("combination", "df 0")):
        with pytest.raises(ValueError, match=match):
            api_all(KeywordModel("baseline", strategy).generate, qs, None, stats, vocab=VOCAB)
    api_all(KeywordModel("baseline", "popular").generate, qs, None, stats, vocab=VOCAB)  # fine
    # the paraphrases need statistics too
    clusters = Clusters(*ragged([[1, 10]]), np.array([0, 0]))
    with pytest.raises(ValueError, match="cluster row 0 has term 10 with df 0"):
        api_all(KeywordModel("paraphrase", "combination").generate, [[1, 2, 3], [1, 3]], clusters,
                stats, vocab=VOCAB)
    with pytest.raises(ValueError, match="df must be <= n_docs"):
        CollectionStats(np.ones(3, np.int64), np.array([1, 5, 1]), 2)
    with pytest.raises(ValueError, match="non-negative"):
        CollectionStats(np.array([1, -1]), np.array([1, 1]), 2)
    with pytest.raises(ValueError, match="same length"):
        CollectionStats(np.ones(3, np.int64), np.ones(2, np.int64), 2)
    with pytest.raises(ValueError, match="collection model"):
        ex = np.ones(len(VOCAB), np.uint8)
        ex[1] = 0
        api_all(KeywordModel("baseline", "popular", lam=0.5).generate, [[1, 2]], None,
                CollectionStats(np.where(np.arange(12) == 1, 0, 1), np.zeros(12, np.int64), 1),
                exclude=ex, vocab=None)
    with pytest.raises(ValueError, match="clusters.index"):
        Clusters(*ragged([[1]]), np.array([0, 1]))


# the core functions guard their inputs too (both backends raise ValueError)
def _core(**kw):
    base = core_args([[1, 2, 3], [4, 5]], [[1, 4]], [0, -1], vocab_size=8, exclude=[0])
    base.update(kw)
    return base


@pytest.mark.parametrize("kw", [
    dict(strategy="nope"),
    dict(m=0),
    dict(seed=-1),
    dict(seed=2 ** 64),
    dict(seed=1.5),
    dict(first_index=-1),
    dict(max_rejections=-2),
    dict(workers=0),
    dict(w_question=1.5, w_collection=-0.5),
    dict(w_question=0.5, w_cluster=0.2, w_collection=0.2),
    dict(w_question=float("nan")),
    dict(length_dist=np.array([0.0])),
    dict(length_dist=np.array([0.1, 0.9])),
    dict(length_dist=np.array([0.0, np.inf])),
    dict(length_dist=np.array([0.0, 0.0])),
    dict(q_offsets=np.array([0, 2, 4])),
    dict(q_offsets=np.array([0, 4, 3, 5])),
    dict(q_ids=np.array([1, 2, 3, 4, 9], np.int32)),
    dict(q_ids=np.array([1, 2, 3, -4, 5], np.int32)),
    dict(q_ids=np.array([1.0, 2, 3, 4, 5])),
    dict(q_ids=np.array([[1, 2, 3, 4, 5]], np.int32)),
    dict(cluster_index=np.array([0, 1])),
    dict(cluster_index=np.array([0])),
    dict(cf=np.ones(7, np.int64)),
    dict(df=np.full(8, 5, np.int64)),
    dict(cf=-np.ones(8, np.int64)),
    dict(n_docs=-1),
    dict(q_ids=np.array([0, 0, 0, 4, 5], np.int32)),
    dict(q_offsets=np.array([0, 0, 5])),
    dict(strategy="discriminative", cf=np.array([1, 1, 1, 0, 1, 1, 1, 1])),
    dict(strategy="combination", df=np.array([1, 1, 1, 1, 1, 0, 1, 1])),
])
def test_core_guards(kw):
    with pytest.raises(ValueError):
        core_all("generate", **_core(**kw))


def test_core_guard_error_is_the_first_bad_question():
    q = [[1, 2]] * 5000 + [[]] + [[1]] * 100 + [[]]
    kw = core_args(q, vocab_size=4, exclude=[0], workers=-1)
    for name, mod in BACKENDS.items():
        with pytest.raises(ValueError, match="question 5000 is empty"):
            mod.generate(**kw)


def test_no_questions():
    ids, off = core_all("generate", **core_args([], vocab_size=3, m=4, weights=(1.0, 0.0, 0.0)))
    assert ids.shape == (0,) and off.tolist() == [0]
