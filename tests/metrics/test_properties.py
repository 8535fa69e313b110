"""Properties of the public metrics API, under each backend (``impl`` fixture).

Ranges, identities (perfect match, empty hypothesis), symmetry of ROUGE-L F,
multi-reference = best single reference, AvgRougeL/MaxRougeL = mean/max of single runs,
corpus statistics = sums of sentence statistics, and TokenIds = equivalent strings.
"""
from __future__ import annotations

import math
import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pysynth import metrics as M
from pysynth.metrics import TokenIds

SETTINGS = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
}

WORDS = [
    "the", "cat", "sat", "on", "mat", "a", "dog", "how", "to", "bond", "wireless",
    "networks", "running", "runs", "question", "answers", "is", "what", "why", "x1",
]
PUNCT = [",", ".", "?", "!", "-", "'", "(", ")", "&", "3.14"]

word = st.tuples(st.sampled_from(WORDS), st.integers(0, 2)).map(
    lambda t: (t[0], t[0].upper(), t[0].capitalize())[t[1]]
)
token = st.one_of(word, word, word, st.sampled_from(PUNCT))
text = st.lists(token, max_size=25).map(" ".join)
words_text = st.lists(st.sampled_from(WORDS), min_size=1, max_size=25).map(" ".join)


def related(draw_seed, base: str) -> str:
    """Shares words with ``base`` (so that matches happen); never empty."""
    rng = random.Random(draw_seed)
    toks = [t for t in base.split() if rng.random() < 0.7]
    toks += [rng.choice(WORDS) for _ in range(rng.randrange(4))]
    if rng.random() < 0.3:
        rng.shuffle(toks)
    return " ".join(toks) or rng.choice(WORDS)


@st.composite
def pairs(draw, n_max=6, base=text):
    hyps = draw(st.lists(base, min_size=1, max_size=n_max))
    refs = [
        related(draw(st.integers(0, 2**32)), h) if draw(st.booleans()) else draw(base)
        for h in hyps
    ]
    return hyps, refs


@st.composite
def multi(draw, n_streams=(2, 3), base=text):
    hyps, refs = draw(pairs(base=base))
    k = draw(st.integers(*n_streams))
    streams = [refs] + [
        [related(draw(st.integers(0, 2**32)), h) if draw(st.booleans()) else draw(base) for h in hyps]
        for _ in range(k - 1)
    ]
    if draw(st.booleans()):  # duplicate a stream: ties must pick the first reference
        streams.append(list(streams[0]))
    return hyps, streams


def in_unit(x, hi=1.0):
    x = np.asarray(x, dtype=np.float64)
    return bool(np.all(np.isfinite(x)) and np.all(x >= 0.0) and np.all(x <= hi))


# ------------------------------------------------------------------------------ ranges


@settings(max_examples=40, **SETTINGS)
@given(p=pairs(), stem=st.booleans())
def test_rouge_score_in_unit_interval(impl, p, stem):
    hyps, refs = p
    got = M.rouge(hyps, refs, types=("rouge1", "rouge2", "rouge4", "rougeL", "rougeLsum"), stem=stem)
    for s in got.values():
        assert in_unit(s.precision) and in_unit(s.recall) and in_unit(s.fmeasure)
    for v in got.mean().values():
        assert all(0.0 <= x <= 1.0 for x in v.values())


@settings(max_examples=40, **SETTINGS)
@given(p=pairs(base=words_text))
def test_pltrdy_in_unit_interval(impl, p):
    hyps, refs = p
    got = M.rouge(hyps, refs, types=("rouge1", "rouge2", "rougeL"), flavor="pltrdy")
    for s in got.values():
        assert in_unit(s.precision) and in_unit(s.recall) and in_unit(s.fmeasure)


@settings(max_examples=40, **SETTINGS)
@given(p=pairs(), smooth=st.sampled_from(["none", "floor", "add-k", "exp"]), eff=st.booleans())
def test_bleu_in_range(impl, p, smooth, eff):
    hyps, refs = p
    s = M.sentence_bleu(hyps, refs, smooth_method=smooth, effective_order=eff)
    assert s.dtype == np.float64 and s.shape == (len(hyps),)
    assert in_unit(s, 100.0 + 1e-9)
    c = M.corpus_bleu(hyps, refs, smooth_method=smooth, effective_order=eff)
    assert 0.0 <= c.score <= 100.0 + 1e-9 and 0.0 <= c.bp <= 1.0
    coco = M.corpus_bleu(hyps, refs, flavor="coco")
    assert all(0.0 <= b <= 1.0 for b in coco.bleu_n) and coco.score == coco.bleu_n[-1]
    assert in_unit(M.sentence_bleu(hyps, refs, flavor="coco"))
    assert 0.0 <= M.corpus_bleu(hyps, refs, flavor="nltk").score <= 1.0
    assert in_unit(M.sentence_bleu(hyps, refs, flavor="nltk", smooth_method=1))


# -------------------------------------------------------------------------- identities


@settings(max_examples=40, **SETTINGS)
@given(hyps=st.lists(text, min_size=1, max_size=5), stem=st.booleans())
def test_identical_rouge_score(impl, hyps, stem):
    types = ("rouge1", "rouge2", "rouge3", "rouge4", "rougeL", "rougeLsum")
    got = M.rouge(hyps, hyps, types=types, stem=stem)
    ntok = [len(t) for t in M.tokenize(hyps, "rouge-stem" if stem else "rouge")]
    for t in types:
        n = int(t[5:]) if t[5:].isdigit() else 1
        for i, k in enumerate(ntok):
            want = 1.0 if k >= n else 0.0
            assert got[t].precision[i] == want and got[t].recall[i] == want, (t, hyps[i])
            assert got[t].fmeasure[i] == want, (t, hyps[i])


@settings(max_examples=30, **SETTINGS)
@given(hyps=st.lists(words_text, min_size=1, max_size=5))
def test_identical_pltrdy(impl, hyps):
    got = M.rouge(hyps, hyps, types=("rouge1", "rouge2", "rougeL"), flavor="pltrdy")
    for t in ("rouge1", "rougeL"):
        assert np.all(got[t].precision == 1.0) and np.all(got[t].recall == 1.0)
        assert np.allclose(got[t].fmeasure, 1.0, rtol=0, atol=1e-7)


@settings(max_examples=40, **SETTINGS)
@given(hyps=st.lists(st.lists(token, min_size=4, max_size=25).map(" ".join), min_size=1, max_size=5))
def test_identical_bleu(impl, hyps):
    assert M.corpus_bleu(hyps, hyps).score == pytest.approx(100.0, rel=1e-12)
    assert np.allclose(M.sentence_bleu(hyps, hyps), 100.0, rtol=1e-12, atol=0)
    for eff in (False, True):
        for sm in ("none", "floor", "add-k", "exp"):
            s = M.sentence_bleu(hyps, hyps, smooth_method=sm, effective_order=eff, tokenize="none")
            assert np.allclose(s, 100.0, rtol=1e-12, atol=0), (sm, eff)
    assert M.corpus_bleu(hyps, hyps, flavor="nltk").score == pytest.approx(1.0, rel=1e-12)
    assert M.corpus_bleu(hyps, hyps, flavor="coco").bleu_n == pytest.approx([1.0] * 4, rel=1e-6)


@settings(max_examples=30, **SETTINGS)
@given(refs=st.lists(text, min_size=1, max_size=5), stem=st.booleans())
def test_empty_hypothesis_scores_zero(impl, refs, stem):
    hyps = [""] * len(refs)
    got = M.rouge(hyps, refs, types=("rouge1", "rouge2", "rougeL", "rougeLsum"), stem=stem)
    for s in got.values():
        assert np.all(s.precision == 0) and np.all(s.recall == 0) and np.all(s.fmeasure == 0)
    for sm in ("none", "floor", "add-k", "exp"):
        for eff in (False, True):
            assert np.all(M.sentence_bleu(hyps, refs, smooth_method=sm, effective_order=eff) == 0.0)
    assert M.corpus_bleu(hyps, refs).score == 0.0
    assert np.all(M.sentence_bleu(hyps, refs, flavor="coco") < 1e-6)
    assert np.all(M.sentence_bleu(hyps, refs, flavor="nltk") == 0.0)


# ---------------------------------------------------------------------------- symmetry


@settings(max_examples=50, **SETTINGS)
@given(p=pairs(), stem=st.booleans())
def test_rouge_l_f_symmetric(impl, p, stem):
    hyps, refs = p
    types = ("rouge1", "rouge2", "rougeL")
    a = M.rouge(hyps, refs, types=types, stem=stem)
    b = M.rouge(refs, hyps, types=types, stem=stem)
    for t in types:
        assert np.array_equal(a[t].fmeasure, b[t].fmeasure), t
        assert np.array_equal(a[t].precision, b[t].recall), t
        assert np.array_equal(a[t].recall, b[t].precision), t


# ------------------------------------------------------------------- multi-reference


def _best_single(hyps, streams, **kw):
    singles = [M.rouge(hyps, s, **kw) for s in streams]
    out = {}
    for t in singles[0]:
        f = np.stack([s[t].fmeasure for s in singles], axis=1)
        best = np.argmax(f, axis=1)  # first on ties
        out[t] = tuple(
            np.array([getattr(singles[b][t], attr)[i] for i, b in enumerate(best)])
            for attr in ("precision", "recall", "fmeasure")
        )
    return out


@settings(max_examples=40, **SETTINGS)
@given(m=multi(), stem=st.booleans())
def test_multi_ref_is_best_single_rouge_score(impl, m, stem):
    hyps, streams = m
    kw = {"types": ("rouge1", "rouge2", "rougeL", "rougeLsum"), "stem": stem}
    got = M.rouge(hyps, streams, **kw)
    want = _best_single(hyps, streams, **kw)
    for t, (p, r, f) in want.items():
        assert np.array_equal(got[t].precision, p), t
        assert np.array_equal(got[t].recall, r), t
        assert np.array_equal(got[t].fmeasure, f), t


@settings(max_examples=30, **SETTINGS)
@given(m=multi(base=words_text))
def test_multi_ref_is_best_single_pltrdy(impl, m):
    hyps, streams = m
    kw = {"types": ("rouge1", "rouge2", "rougeL"), "flavor": "pltrdy"}
    got = M.rouge(hyps, streams, **kw)
    want = _best_single(hyps, streams, **kw)
    for t, (p, r, f) in want.items():
        assert np.array_equal(got[t].precision, p), t
        assert np.array_equal(got[t].recall, r), t
        assert np.array_equal(got[t].fmeasure, f), t


@settings(max_examples=40, **SETTINGS)
@given(
    hyps=st.lists(text, min_size=1, max_size=5),
    data=st.data(),
    stem=st.booleans(),
)
def test_avg_max_rouge_l(impl, hyps, data, stem):
    ref_sets = [
        data.draw(st.lists(st.one_of(text, st.just(h)), min_size=1, max_size=6)) for h in hyps
    ]
    avg, mx = M.avg_max_rouge_l(hyps, ref_sets, stem=stem)
    assert avg.dtype == np.float64 and avg.shape == (len(hyps),) and mx.shape == (len(hyps),)
    for i, (h, rs) in enumerate(zip(hyps, ref_sets)):
        fs = [float(M.rouge([h], [r], types=("rougeL",), stem=stem)["rougeL"].fmeasure[0]) for r in rs]
        assert mx[i] == max(fs)
        # Exactly sum(fs) / len(fs) is expected but not what the package gives (1 ulp off:
        # see test_avg_rouge_l_is_sequential_mean below); within rounding here.
        assert avg[i] == pytest.approx(sum(fs) / len(fs), rel=4e-16 * len(fs), abs=0)
        assert avg[i] <= mx[i]


def test_avg_rouge_l_is_sequential_mean(impl):
    hyp, refs = "the the the the the", ["the the the the the", "the", "the"]
    fs = [float(M.rouge([hyp], [r], types=("rougeL",))["rougeL"].fmeasure[0]) for r in refs]
    assert fs == [1.0, 0.33333333333333337, 0.33333333333333337]
    avg, mx = M.avg_max_rouge_l([hyp], [refs])
    assert mx[0] == 1.0
    assert avg[0] == sum(fs) / len(fs) == float(np.mean(fs))  # 0.5555555555555557


@settings(max_examples=20, **SETTINGS)
@given(hyps=st.lists(words_text, min_size=1, max_size=4), data=st.data())
def test_avg_max_rouge_l_pltrdy(impl, hyps, data):
    ref_sets = [data.draw(st.lists(words_text, min_size=1, max_size=4)) for _ in hyps]
    avg, mx = M.avg_max_rouge_l(hyps, ref_sets, flavor="pltrdy")
    for i, (h, rs) in enumerate(zip(hyps, ref_sets)):
        fs = [float(M.rouge([h], [r], types=("rougeL",), flavor="pltrdy")["rougeL"].fmeasure[0]) for r in rs]
        assert mx[i] == max(fs)
        assert avg[i] == pytest.approx(sum(fs) / len(fs), rel=4e-16 * len(fs), abs=0)


# ------------------------------------------------------------------ corpus = sum(sent)


@settings(max_examples=30, **SETTINGS)
@given(m=multi(n_streams=(1, 3)), flavor=st.sampled_from(["sacrebleu", "coco", "nltk"]),
       max_order=st.integers(1, 5))
def test_corpus_counts_are_sums(impl, m, flavor, max_order):
    hyps, streams = m
    kw = {"flavor": flavor, "max_order": max_order}
    corp = M.corpus_bleu(hyps, streams, **kw)
    singles = [M.corpus_bleu([h], [[s[i]] for s in streams], **kw) for i, h in enumerate(hyps)]
    assert corp.counts == [sum(x) for x in zip(*(s.counts for s in singles))]
    assert corp.totals == [sum(x) for x in zip(*(s.totals for s in singles))]
    assert corp.sys_len == sum(s.sys_len for s in singles)
    assert corp.ref_len == sum(s.ref_len for s in singles)
    assert len(corp.counts) == len(corp.totals) == max_order


@settings(max_examples=30, **SETTINGS)
@given(p=pairs(), sm=st.sampled_from(["none", "floor", "add-k", "exp"]), eff=st.booleans(),
       max_order=st.integers(1, 5))
def test_sentence_equals_single_segment_corpus(impl, p, sm, eff, max_order):
    hyps, refs = p
    kw = {"smooth_method": sm, "effective_order": eff, "max_order": max_order}
    sent = M.sentence_bleu(hyps, refs, **kw)
    for i, (h, r) in enumerate(zip(hyps, refs)):
        assert sent[i] == M.corpus_bleu([h], [r], **kw).score
    coco = M.sentence_bleu(hyps, refs, flavor="coco", max_order=max_order)
    for i, (h, r) in enumerate(zip(hyps, refs)):
        assert coco[i] == M.corpus_bleu([h], [r], flavor="coco", max_order=max_order).bleu_n[-1]


@settings(max_examples=30, **SETTINGS)
@given(p=pairs())
def test_lowercase_equals_lowered_input(impl, p):
    hyps, refs = p
    a = M.corpus_bleu(hyps, refs, lowercase=True)
    b = M.corpus_bleu([h.lower() for h in hyps], [r.lower() for r in refs])
    assert (a.score, a.counts, a.totals) == (b.score, b.counts, b.totals)


# ---------------------------------------------------------------------------- TokenIds


def _to_ids(texts, vocab):
    return TokenIds.from_lists([[vocab.setdefault(w, len(vocab)) for w in t.split()] for t in texts])


@settings(max_examples=40, **SETTINGS)
@given(m=multi(n_streams=(1, 3)), max_order=st.integers(1, 5))
def test_token_ids_bleu(impl, m, max_order):
    hyps, streams = m
    vocab: dict = {}
    h_ids = _to_ids(hyps, vocab)
    r_ids = [_to_ids(s, vocab) for s in streams]
    kw = {"tokenize": "none", "max_order": max_order}
    a = M.corpus_bleu(hyps, streams, **kw)
    b = M.corpus_bleu(h_ids, r_ids, **kw)
    assert (a.score, a.counts, a.totals, a.sys_len, a.ref_len) == (b.score, b.counts, b.totals, b.sys_len, b.ref_len)
    assert np.array_equal(M.sentence_bleu(hyps, streams, **kw), M.sentence_bleu(h_ids, r_ids, **kw))
    for flavor in ("coco", "nltk"):
        kw2 = {"flavor": flavor, "max_order": max_order}
        assert M.corpus_bleu(hyps, streams, **kw2).score == M.corpus_bleu(h_ids, r_ids, **kw2).score
        assert np.array_equal(M.sentence_bleu(hyps, streams, **kw2), M.sentence_bleu(h_ids, r_ids, **kw2))
    for method in (5, 6, 7):  # nltk methods that read the last segment's tokens
        x = _outcome(M.corpus_bleu, hyps, streams, flavor="nltk", smooth_method=method)
        y = _outcome(M.corpus_bleu, h_ids, r_ids, flavor="nltk", smooth_method=method)
        assert x == y, method


def _outcome(fn, *args, **kw):
    """The score, or the exception type (nltk method 6 raises where nltk asserts)."""
    try:
        v = fn(*args, **kw).score
    except ValueError as exc:
        return type(exc)
    return "nan" if math.isnan(v) else v


@settings(max_examples=40, **SETTINGS)
@given(m=multi(n_streams=(1, 3), base=st.lists(st.sampled_from(WORDS), max_size=25).map(" ".join)))
def test_token_ids_rouge(impl, m):
    hyps, streams = m  # lower-case alphanumeric words: rouge-score's tokens are the words
    vocab: dict = {}
    h_ids = _to_ids(hyps, vocab)
    r_ids = [_to_ids(s, vocab) for s in streams]
    types = ("rouge1", "rouge2", "rouge3", "rougeL")
    a = M.rouge(hyps, streams, types=types)
    b = M.rouge(h_ids, r_ids, types=types)
    for t in types:
        assert np.array_equal(a[t].precision, b[t].precision), t
        assert np.array_equal(a[t].recall, b[t].recall), t
        assert np.array_equal(a[t].fmeasure, b[t].fmeasure), t
    if len(streams) == 1:
        a = M.rouge(hyps, streams[0], types=types)
        b = M.rouge(h_ids, r_ids[0], types=types)
        for t in types:
            assert np.array_equal(a[t].fmeasure, b[t].fmeasure), t
