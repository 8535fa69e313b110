"""Exact parity of the compiled sampler and its Python twin, and invariance of the output
under the thread count and the chunking of the corpus (counter-based randomness)."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from pysynth import sampling
from pysynth.sampling import _reference as ref
from pysynth.sampling.inputs import take_rows

from _sampling_util import BACKENDS, NAMES, core_all, core_args

needs_cpp = pytest.mark.skipif("cpp" not in BACKENDS, reason="compiled extension not built")

VOCAB = 40
QUESTIONS = [
    [0, 1, 2, 3, 4, 5],          # "what is the capital of france"-like, 0 = question word
    [6, 7, 8],                   # |q| = 3: s = 2
    [0, 9],                      # |q| = 2: s = 1
    [10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 12],
    [20],                        # one token: s = 1
    [21, 22, 21, 22, 23, 24, 25, 26, 0, 0],
    [27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39],
]
CLUSTERS = [[1, 2, 3, 4, 5, 30, 31, 2], [7, 8, 9, 9], [0, 0], [12, 13, 33, 34, 35]]
CINDEX = [0, 1, -1, 3, 2, 3, 0]  # question 4 -> a row with only excluded terms: C_q = q


def _args(**kw):
    base = dict(vocab_size=VOCAB, exclude=[0])
    base.update(kw)
    return core_args(QUESTIONS, CLUSTERS, CINDEX, **base)


WEIGHTS = [(0.5, 0.3, 0.2), (0.9, 0.0, 0.1), (1.0, 0.0, 0.0), (0.0, 0.0, 1.0), (0.3, 0.7, 0.0),
           (0.0, 1.0, 0.0), (0.2, 0.2, 0.6)]


@pytest.mark.parametrize("strategy", ref.STRATEGIES)
@pytest.mark.parametrize("weights", WEIGHTS)
@pytest.mark.parametrize("max_rejections", [0, 1, 8])
def test_backends_identical(strategy, weights, max_rejections):
    ids, off = core_all("generate", **_args(strategy=strategy, weights=weights, m=6,
                                            max_rejections=max_rejections, seed=2018))
    assert ids.dtype == np.int32 and off.dtype == np.int64
    assert off.shape == (len(QUESTIONS) * 6 + 1,) and off[-1] == ids.shape[0]


def test_seed_and_index_change_the_output():
    a = core_all("generate", **_args(seed=1, m=5))
    b = core_all("generate", **_args(seed=2, m=5))
    c = core_all("generate", **_args(seed=1, m=5, first_index=1))
    assert not np.array_equal(a[0], b[0])
    assert not np.array_equal(a[0], c[0])
    big = core_all("generate", **_args(seed=2 ** 64 - 1, m=2, first_index=2 ** 62))
    assert big[1][-1] > 0


def test_random_words_spec():
    """word(k) = mix64(candidate_key + (k + 1) * GAMMA), recomputed here from the definition."""
    M = (1 << 64) - 1

    def mix(z):
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M
        return z ^ (z >> 31)

    for seed, q, c in [(0, 0, 0), (1, 2, 3), (2 ** 64 - 1, 10 ** 12, 19), (42, 7, 0)]:
        key = mix((mix((mix((seed + 0x9E3779B97F4A7C15) & M) + q * 0xD1B54A32D192ED03) & M)
                   + c * 0xD6E8FEB86659FD93) & M)
        want = [mix((key + (k + 1) * 0x9E3779B97F4A7C15) & M) for k in range(6)]
        got = core_all("random_words", seed, q, c, 6)
        assert got.dtype == np.uint64 and got.tolist() == want
    # the words look uniform: top bits of 4096 words
    w = core_all("random_words", 5, 1, 1, 4096)
    top = (w >> np.uint64(60)).astype(np.int64)
    counts = np.bincount(top, minlength=16)
    assert counts.min() > 180 and counts.max() < 340


@needs_cpp
@pytest.mark.parametrize("workers", [2, 3, -1])
def test_thread_count_invariance(workers):
    cpp = BACKENDS["cpp"]
    rng = np.random.default_rng(7)
    n, V = 3000, 500
    rows = [list(rng.integers(0, V, rng.integers(1, 14))) for _ in range(n)]
    crow = [list(rng.integers(0, V, rng.integers(0, 40))) for _ in range(400)]
    cidx = rng.integers(-1, 400, n)
    kw = core_args(rows, crow, cidx, vocab_size=V, exclude=[0, 1, 2], m=7, seed=99,
                   strategy="combination", weights=(0.4, 0.4, 0.2))
    for i in range(n):  # make every question samplable
        if all(t in (0, 1, 2) for t in rows[i]):
            kw["q_ids"][kw["q_offsets"][i]] = 3
    one = cpp.generate(**{**kw, "workers": 1})
    many = cpp.generate(**{**kw, "workers": workers})
    assert np.array_equal(one[0], many[0]) and np.array_equal(one[1], many[1])


def _questions(kw: dict, rows: np.ndarray) -> dict:
    """``kw`` (the arguments of ``generate``, without first_index) for the questions ``rows`` only."""
    q_ids, q_off = take_rows(kw["q_ids"], kw["q_offsets"], rows)
    rest = {k: v for k, v in kw.items() if k != "first_index"}
    return {**rest, "q_ids": q_ids, "q_offsets": q_off, "cluster_index": kw["cluster_index"][rows]}


@pytest.mark.parametrize("name", NAMES)
def test_chunking_invariance(name):
    """Generating questions a..b-1 with first_index=a reproduces those rows of one call."""
    mod = BACKENDS[name]
    m = 4
    kw = _args(m=m, seed=31, strategy="popular", weights=(0.5, 0.3, 0.2))
    full_ids, full_off = mod.generate(**kw)
    parts = []
    for a, b in [(0, 3), (3, 4), (4, 7)]:
        ids, off = mod.generate(**_questions(kw, np.arange(a, b)), first_index=a)
        assert np.array_equal(ids, full_ids[full_off[a * m]:full_off[b * m]])
        parts.append(np.diff(off))
    assert np.array_equal(np.concatenate(parts), np.diff(full_off))


@pytest.mark.parametrize("name", NAMES)
def test_question_index_draws_any_rows(name):
    """A per-question first_index (global indices, any subset, any order) gives those rows of one call."""
    mod = BACKENDS[name]
    m = 3
    kw = _args(m=m, seed=77, strategy="combination", weights=(0.5, 0.3, 0.2))
    full_ids, full_off = mod.generate(**kw)
    for pick in ([5, 1, 6], [3], [0, 1, 2, 3, 4, 5, 6], [6, 6]):
        pick = np.array(pick)
        for first in (pick, pick.astype(np.uint32), pick.tolist()):
            ids, off = mod.generate(**_questions(kw, pick), first_index=first)
            want = [full_ids[full_off[i * m + c]:full_off[i * m + c + 1]] for i in pick for c in range(m)]
            got = [ids[off[k]:off[k + 1]] for k in range(len(pick) * m)]
            assert all(np.array_equal(a, b) for a, b in zip(got, want))
    consecutive = mod.generate(**{**kw, "first_index": np.arange(2, 2 + len(QUESTIONS))})
    assert all(np.array_equal(a, b) for a, b in zip(consecutive, mod.generate(**{**kw, "first_index": 2})))
    for bad, match in ((np.array([0, 1]), "one entry per question"), (np.array([[0] * 7]), "1-D"),
                       (np.arange(7.0), "dtype kind"), (np.array([0, 1, 2, -1, 4, 5, 6]), r"first_index\[3\]")):
        with pytest.raises(ValueError, match=match):
            mod.generate(**{**kw, "first_index": bad})


def test_public_chunking_and_workers():
    vocab = ["what", "is", "the", "capital", "of", "france", "who", "wrote", "hamlet", "pooh",
             "author", "winnie", "creator"]
    qs = [[0, 1, 2, 3, 4, 5], [6, 7, 8], [6, 1, 2, 10, 4, 2, 9], [6, 1, 11, 2, 9, 12]]
    groups = ["a", "b", "c", "c"]
    clusters = sampling.Clusters.from_groups(qs, groups)
    model = sampling.KeywordModel("paraphrase", "combination", alpha=0.5, beta=0.3)
    stats = sampling.CollectionStats.from_documents(qs, len(vocab))
    for name in NAMES:
        from pysynth import _dispatch

        with _dispatch.force(name, "sampling"):
            full = model.generate(qs, clusters, stats, m=5, seed=3, vocab=vocab)
            for w in ([2, -1] if name == "cpp" else [1]):
                again = model.generate(qs, clusters, stats, m=5, seed=3, vocab=vocab, workers=w)
                assert np.array_equal(full.ids, again.ids)
            tail_clusters = sampling.Clusters(clusters.values, clusters.offsets, clusters.index[2:])
            tail = model.generate(qs[2:], tail_clusters, stats, m=5, seed=3, vocab=vocab,
                                  first_index=2)
            assert np.array_equal(tail.ids, full.ids[full.offsets[10]:])


# ----------------------------------------------------------------------------------
# Hypothesis: random small vocabularies, questions, clusters and parameters
# ----------------------------------------------------------------------------------
@st.composite
def instances(draw):
    V = draw(st.integers(1, 25))
    n = draw(st.integers(0, 6))
    tok = st.integers(0, V - 1)
    questions = [draw(st.lists(tok, min_size=1, max_size=12)) for _ in range(n)]
    n_rows = draw(st.integers(0, 4))
    rows = [draw(st.lists(tok, min_size=0, max_size=20)) for _ in range(n_rows)]
    cidx = [draw(st.integers(-1, n_rows - 1)) for _ in range(n)]
    n_ex = draw(st.integers(0, max(0, V - 1)))
    exclude = draw(st.lists(st.integers(0, V - 1), max_size=n_ex, unique=True))
    strategy = draw(st.sampled_from(ref.STRATEGIES))
    kind = draw(st.sampled_from(["baseline", "paraphrase", "pure"]))
    if kind == "baseline":
        lam = draw(st.sampled_from([0.0, 0.1, 0.5, 0.9, 1.0]))
        weights = (1.0 - lam, 0.0, lam)
    elif kind == "paraphrase":
        a = draw(st.sampled_from([0.0, 0.1, 0.3, 0.5, 0.7]))
        b = draw(st.sampled_from([0.0, 0.1, 0.3]))
        weights = (a, b, max(0.0, 1.0 - a - b))
    else:
        weights = draw(st.sampled_from([(1.0, 0.0, 0.0), (0.0, 1.0, 0.0), (0.0, 0.0, 1.0)]))
    S = draw(st.integers(1, 9))
    probs = draw(st.lists(st.sampled_from([0.0, 0.5, 1.0, 3.0]), min_size=S, max_size=S))
    length_dist = [0.0] + probs
    extra_cf = draw(st.lists(st.integers(0, 5), min_size=V, max_size=V))
    return dict(questions=questions, rows=rows, cidx=cidx, V=V, exclude=exclude, strategy=strategy,
                weights=weights, length_dist=length_dist, extra_cf=extra_cf,
                m=draw(st.integers(1, 4)), seed=draw(st.integers(0, 2 ** 64 - 1)),
                first_index=draw(st.integers(0, 10 ** 6)), max_rejections=draw(st.integers(0, 3)))


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(instances())
def test_hypothesis_parity_and_invariants(inst):
    V = inst["V"]
    stats = sampling.CollectionStats.from_documents(inst["questions"] + inst["rows"], V)
    cf = stats.cf + np.asarray(inst["extra_cf"], dtype=np.int64)
    stats = sampling.CollectionStats(cf, stats.df, stats.n_docs)
    kw = core_args(inst["questions"], inst["rows"], inst["cidx"], vocab_size=V,
                   exclude=inst["exclude"], stats=stats, length_dist=inst["length_dist"],
                   strategy=inst["strategy"], weights=inst["weights"], m=inst["m"],
                   seed=inst["seed"], first_index=inst["first_index"],
                   max_rejections=inst["max_rejections"])
    try:
        ids, off = core_all("generate", **kw)
    except ValueError:
        event("ValueError (both backends)")
        return  # e.g. a question with only excluded terms, an empty collection: both raised
    event("generated")
    m = inst["m"]
    excluded = set(inst["exclude"])
    assert off.shape == (len(inst["questions"]) * m + 1,)
    for i, q in enumerate(inst["questions"]):
        allowed = None
        if inst["weights"][2] == 0.0:  # no collection: only terms of q and C_q
            allowed = set(q)
            if inst["weights"][1] > 0 and inst["cidx"][i] >= 0:
                allowed |= set(inst["rows"][inst["cidx"][i]])
        for c in range(m):
            cand = ids[off[i * m + c]:off[i * m + c + 1]].tolist()
            assert len(cand) == len(set(cand)), "repeated term"
            assert not excluded & set(cand), "excluded term sampled"
            assert 1 <= len(cand) <= max(1, len(q) - 1) or len(q) == 1 and len(cand) == 1
            if allowed is not None:
                assert set(cand) <= allowed


# ----------------------------------------------------------------------------------
# the compiled backend's internal paths: long documents (guide tables, hashed dedupe),
# shared cluster rows (questions processed grouped by row), queries longer than 8 terms,
# 16-byte alias entries (sum cf >= 2**32), compaction of short candidates across threads
# ----------------------------------------------------------------------------------
def _long_corpus(seed, shared: bool, big_cf: bool):
    rng = np.random.default_rng(seed)
    V = 400
    n = 120
    rows = [list(rng.integers(0, V, rng.integers(1, 40))) for _ in range(n)]
    if shared:
        crows = [list(rng.integers(0, V, rng.integers(0, 150))) for _ in range(12)]
        cidx = rng.integers(-1, 12, n)
    else:
        crows = [list(rng.integers(0, V, rng.integers(0, 150))) for _ in range(n)]
        cidx = np.arange(n)
    stats = sampling.CollectionStats.from_documents(rows + crows, V)
    if big_cf:
        cf = stats.cf * (1 << 27) + rng.integers(0, 1 << 20, V)
        cf[stats.cf == 0] = 0
        stats = sampling.CollectionStats(cf, stats.df, stats.n_docs)
    return rows, crows, cidx, stats, V


@pytest.mark.parametrize("shared", [True, False])
@pytest.mark.parametrize("big_cf", [False, True])
@pytest.mark.parametrize("strategy", ref.STRATEGIES)
def test_long_documents_and_internal_paths(shared, big_cf, strategy):
    rows, crows, cidx, stats, V = _long_corpus(11, shared, big_cf)
    length_dist = [0.0] + [1.0] * 14  # up to 14 terms: the generic "chosen before?" path
    for R in (0, 2, 8):
        kw = core_args(rows, crows, cidx, vocab_size=V, exclude=[0, 1, 2], stats=stats,
                       length_dist=length_dist, strategy=strategy, weights=(0.4, 0.4, 0.2), m=3,
                       seed=123 + R, max_rejections=R)
        for i, r in enumerate(rows):  # every question samplable
            if all(t in (0, 1, 2) for t in r):
                kw["q_ids"][kw["q_offsets"][i]] = 5
        out = core_all("generate", **kw)
        if "cpp" in BACKENDS:
            many = BACKENDS["cpp"].generate(**{**kw, "workers": 3})
            assert np.array_equal(out[0], many[0]) and np.array_equal(out[1], many[1])


def test_short_candidates_compaction_across_threads():
    """lam = 0 and at most 3 distinct terms per question: long planned lengths are cut."""
    rng = np.random.default_rng(3)
    rows = [list(rng.integers(0, 4, rng.integers(6, 12))) for _ in range(400)]
    kw = core_args(rows, vocab_size=4, exclude=[0], length_dist=[0, 0, 0, 1, 1, 1],
                   strategy="popular", weights=(1.0, 0.0, 0.0), m=5, seed=9, max_rejections=1)
    for i, r in enumerate(rows):
        if all(t == 0 for t in r):
            kw["q_ids"][kw["q_offsets"][i]] = 1
    ids, off = core_all("generate", **kw)
    lens = np.diff(off)
    assert lens.max() <= 3 and lens.min() >= 1 and lens.sum() == ids.size
    if "cpp" in BACKENDS:
        for w in (2, 3, -1):
            again = BACKENDS["cpp"].generate(**{**kw, "workers": w})
            assert np.array_equal(ids, again[0]) and np.array_equal(off, again[1])
