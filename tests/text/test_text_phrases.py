"""Phrase detection: both backends agree on random corpora (Hypothesis), including the string
collisions gensim's string-keyed counting creates when tokens contain the delimiter; results do
not depend on threads; the Phrases / FrozenPhrases API."""
from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pysynth import _dispatch, text
from pysynth._dispatch import backend

from _parity import run_all


def has_cpp() -> bool:
    return "cpp" in _dispatch.available("text")


def _corpus_arrays(docs):
    ids, offsets, cf, df, vocab = text._reference._corpus_from_tokens(docs)  # noqa: SLF001
    return ids, offsets, vocab


# Tokens over tiny alphabets, so that candidates repeat and joined strings collide with
# tokens ("a_b" as a token and as "a" + "b"); delimiters with and without borders.
@st.composite
def phrase_cases(draw):
    alphabet = draw(st.sampled_from(["ab", "ab_", "a_", "abc", "xy "]))
    alphabet = alphabet.replace(" ", "")
    words = draw(st.lists(st.text(alphabet=alphabet, min_size=1, max_size=3), min_size=1, max_size=7, unique=True))
    docs = draw(st.lists(st.lists(st.sampled_from(words), max_size=10), max_size=9))
    connectors = draw(st.lists(st.sampled_from(words), max_size=2, unique=True))
    delimiter = draw(st.sampled_from(["_", "_", "__", "a", "ab", "_a_", " "]))
    scoring = draw(st.sampled_from(text.SCORINGS))
    if scoring == "default":
        threshold = draw(st.sampled_from([0.01, 0.5, 1.0, 3.0]))
    else:
        threshold = draw(st.sampled_from([-1.0, -0.3, 0.0, 0.3, 0.9]))
    return dict(
        docs=docs,
        connectors=connectors,
        delimiter=delimiter,
        max_vocab_size=draw(st.sampled_from([1, 3, 6, 10**6])),
        min_count=draw(st.integers(1, 3)),
        threshold=threshold,
        scoring=scoring,
        workers=draw(st.sampled_from([1, 2])),
        other=draw(st.lists(st.lists(st.sampled_from(words + ["zz", "a_b"]), max_size=8), max_size=5)),
    )


@settings(max_examples=250, deadline=None)
@given(case=phrase_cases())
def test_phrases_backends_agree(case):
    ids, offsets, vocab = _corpus_arrays(case["docs"])
    conn, d, w = case["connectors"], case["delimiter"], case["workers"]
    counts = run_all(
        "text", lambda: backend("text").count_phrases(ids, offsets, vocab, conn, d, case["max_vocab_size"], w)
    )
    ko, kt, kc, cwc, min_reduce = counts
    assert cwc == len(ids) and min_reduce >= 1
    assert np.all(kc >= 1) and np.all(np.diff(ko) >= 1)
    sc = (case["min_count"], case["threshold"], case["scoring"])
    names, scores = run_all("text", lambda: backend("text").export_phrases(vocab, ko, kt, kc, cwc, d, *sc))
    # learned on one corpus, applied to itself and to another corpus (vocabularies differ)
    for target in (case["docs"], case["other"]):
        tids, toff, tvocab = _corpus_arrays(target)
        run_all(
            "text",
            lambda: backend("text").apply_phrases(tids, toff, tvocab, conn, d, vocab, ko, kt, kc, cwc, *sc, w),
        )
        run_all(
            "text",
            lambda: backend("text").apply_frozen(tids, toff, tvocab, conn, d, names, scores, case["threshold"], w),
        )


@settings(max_examples=60, deadline=None)
@given(
    scoring=st.sampled_from(text.SCORINGS),
    counts=st.tuples(*[st.integers(0, 10**6)] * 3),
    len_vocab=st.integers(0, 10**7),
    min_count=st.integers(1, 10),
    extra=st.integers(0, 10**7),
)
def test_phrase_score_backends_agree(scoring, counts, len_vocab, min_count, extra):
    a, b, ab = counts
    cwc = a + b + ab + extra
    run_all("text", lambda: backend("text").phrase_score(scoring, a, b, ab, len_vocab, min_count, cwc))


def test_phrase_score_values():
    ref = _dispatch.available("text")["python"]
    assert ref.phrase_score("default", 10, 20, 8, 1000, 5, 10000) == (8 - 5) / float(200) * 1000
    assert ref.phrase_score("default", 0, 20, 8, 1000, 5, 10000) == float("-inf")
    assert ref.phrase_score("npmi", 10, 20, 4, 1000, 5, 10000) == float("-inf")  # below min_count
    import math

    pa, pb, pab = 10 / 10000.0, 20 / 10000.0, 8 / 10000.0
    assert ref.phrase_score("npmi", 10, 20, 8, 1000, 5, 10000) == math.log(pab / (pa * pb)) / -math.log(pab)
    # where gensim would divide by zero: -inf (never reached with learned counts)
    assert ref.phrase_score("npmi", 1, 1, 1, 3, 1, 0) == float("-inf")
    assert ref.phrase_score("npmi", 1, 1, 1, 3, 1, 1) == float("-inf")


def _zipf_docs(n_docs, seed, words):
    """Zipf-distributed words; items with spaces ("new york") are fixed multi-word units."""
    rng = random.Random(seed)
    weights = [1.0 / (i + 1) ** 0.8 for i in range(len(words))]
    return [" ".join(rng.choices(words, weights, k=rng.randint(0, 10))).split() for _ in range(n_docs)]


@pytest.mark.skipif(not has_cpp(), reason="compiled extension not built")
@pytest.mark.parametrize("general", [False, True], ids=["fast-mode", "general-mode"])
def test_threads_do_not_change_results(general):
    """~90k tokens: chunked documents, owner-partitioned counting and part-wise sorting."""
    words = [f"w{i}" for i in range(1500)] + ["the", "of", "a"]
    words[5:5] = [f"u{i} v{i}" for i in range(40)] + [f"p{i} of the q{i}" for i in range(20)]
    if general:  # tokens with the delimiter: strings are compared, as in gensim
        words += ["w1_w2", "w3_w4_w5", "w0_w0"]
    docs = _zipf_docs(12000, 1, words)
    ids, offsets, vocab = _corpus_arrays(docs)
    core = _dispatch.available("text")["cpp"]
    conn = ["a", "of", "the"]
    args = ("_", 10**9)
    ref = core.count_phrases(ids, offsets, vocab, conn, *args, 1)
    sc = (3, 2.0, "default")
    ref_apply = core.apply_phrases(ids, offsets, vocab, conn, "_", vocab, *ref[:4], *sc, 1)
    names, scores = core.export_phrases(vocab, *ref[:4], "_", *sc)
    ref_frozen = core.apply_frozen(ids, offsets, vocab, conn, "_", names, scores, 2.0, 1)
    assert len(names) > 50
    for w in (2, 3, -1):
        got = core.count_phrases(ids, offsets, vocab, conn, *args, w)
        for a, b in zip(ref, got):
            assert np.array_equal(a, b)
        for r, g in (
            (ref_apply, core.apply_phrases(ids, offsets, vocab, conn, "_", vocab, *ref[:4], *sc, w)),
            (ref_frozen, core.apply_frozen(ids, offsets, vocab, conn, "_", names, scores, 2.0, w)),
        ):
            for a, b in zip(r[:4], g[:4]):
                assert np.array_equal(a, b)
            assert r[4] == g[4]
    twin = _dispatch.available("text")["python"]
    tw = twin.count_phrases(ids, offsets, vocab, conn, *args, 1)
    for a, b in zip(ref, tw):
        assert np.array_equal(a, b)
    tw_apply = twin.apply_phrases(ids, offsets, vocab, conn, "_", vocab, *ref[:4], *sc, 1)
    for a, b in zip(ref_apply[:4], tw_apply[:4]):
        assert np.array_equal(a, b)
    assert ref_apply[4] == tw_apply[4]


@pytest.mark.skipif(not has_cpp(), reason="compiled extension not built")
def test_pruning_on_a_larger_corpus():
    """max_vocab_size pruning replays gensim sentence by sentence (also through string classes)."""
    docs = _zipf_docs(3000, 2, [f"w{i}" for i in range(400)] + ["w1_w2"])
    ids, offsets, vocab = _corpus_arrays(docs)
    for mvs in (500, 2000):
        out = run_all("text", lambda: backend("text").count_phrases(ids, offsets, vocab, ["w0"], "_", mvs, 2))
        assert out[4] > 1  # min_reduce: it pruned


def test_phrases_api(text_impl):
    c = text.build_corpus(["new york city", "new york times", "in new york", "the bank of america", "bank of america"])
    p = text.Phrases(min_count=1, threshold=1.0, connector_words=text.ENGLISH_CONNECTOR_WORDS).learn(c)
    assert p.n_keys == len(p.counts()) and p.corpus_word_count == c.n_tokens
    assert p.counts()["new_york"] == 3 and p.counts()["bank_of_america"] == 2
    table = p.export_phrases()
    assert set(table) == {"new_york", "bank_of_america"}
    out = p.apply(c)
    assert out.doc_terms(3) == ["the", "bank_of_america"]
    assert out.history[-1]["kind"] == "Phrases" and out.history[-1]["min_count"] == 1
    assert p["i love new york".split()] == ["i", "love", "new_york"]
    assert p[[]] == []
    f = p.freeze()
    assert f.phrasegrams == table and f["new york".split()] == ["new_york"]
    assert list(f.apply(c).sentences()) == list(out.sentences())
    assert list(c.apply_phrases(f).sentences()) == list(out.sentences())
    assert p[c].vocab == out.vocab
    # gensim-style token lists are accepted too
    p2 = text.Phrases(min_count=1, threshold=1.0).learn([["new", "york"], ["new", "york", "city"]])
    assert "new_york" in p2.export_phrases()
    assert "Phrases<" in repr(p) and "FrozenPhrases<" in repr(f)


def test_phrase_passes(text_impl):
    c = text.build_corpus(["honda crf 230 speed", "a honda crf 230", "honda crf 230", "crf 230 honda"] * 3)
    out, models = text.phrase_passes(c, passes=2, min_count=1, threshold=0.5)
    assert len(models) == 2 and all(isinstance(m, text.FrozenPhrases) for m in models)
    assert out.doc_terms(2) == ["honda_crf_230"]
    assert [h["kind"] for h in out.history] == ["FrozenPhrases", "FrozenPhrases"]
    out2, models2 = text.phrase_passes(c, passes=1, frozen=False, min_count=1, threshold=0.5)
    assert isinstance(models2[0], text.Phrases)


@pytest.mark.parametrize("n_connectors", [3, 300], ids=["packed-keys", "many-connectors"])
def test_long_connector_runs(n_connectors):
    """Runs of up to 11 connector words, and more than 255 connector words (the compiled side
    packs runs of <= 7 of <= 255 connectors into one integer key and stores the rest apart)."""
    rng = random.Random(3)
    conns = [f"c{i}" for i in range(n_connectors)]
    words = [f"w{i}" for i in range(30)]
    docs = []
    for _ in range(400):
        doc = []
        for _ in range(rng.randint(1, 4)):
            doc.append(rng.choice(words[:6]))
            doc.extend(rng.choice(conns[:4] + conns[-2:]) for _ in range(rng.choice([0, 1, 2, 7, 8, 11])))
        doc.append(rng.choice(words))
        if rng.random() < 0.2:  # a frequent 11-term phrase: x + 9 connector words + y
            doc += ["x", *conns[:3] * 3, "y"]
        docs.append(doc)
    ids, offsets, vocab = _corpus_arrays(docs)
    ko, kt, kc, cwc, _ = run_all("text", lambda: backend("text").count_phrases(ids, offsets, vocab, conns, "_", 10**6, 1))
    assert max(np.diff(ko)) >= 10  # long runs counted
    names, scores = run_all("text", lambda: backend("text").export_phrases(vocab, ko, kt, kc, cwc, "_", 1, 0.5, "default"))
    out = run_all("text", lambda: backend("text").apply_phrases(ids, offsets, vocab, conns, "_", vocab, ko, kt, kc, cwc, 1, 0.5, "default", 1))
    assert any(v.count("_") >= 9 for v in out[4])
    run_all("text", lambda: backend("text").apply_frozen(ids, offsets, vocab, conns, "_", names, scores, 0.5, 1))
