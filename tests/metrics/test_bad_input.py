"""Bad input: a ValueError/TypeError whose message names the argument, under every
backend; odd but valid input: scored, never a crash."""
from __future__ import annotations

import re
import sys
from pathlib import Path

import numpy as np
import pytest

from pysynth import _dispatch
from pysynth import metrics as M
from pysynth.metrics import TokenIds

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from _parity import run_all

E = re.escape
H3 = ["a b", "c d", "e f"]


def ids(rows):
    return TokenIds.from_lists(rows)


# (id, call, exception type, regex the message must match)
CASES = [
    # hyps / refs: None, a single str, non-str elements
    ("hyps-None", lambda: M.rouge(None, ["a"]), TypeError, r"hyps .*None"),
    ("refs-None", lambda: M.rouge(["a"], None), TypeError, r"refs .*None"),
    ("bleu-hyps-None", lambda: M.corpus_bleu(None, ["a"]), TypeError, r"hyps .*None"),
    ("bleu-refs-None", lambda: M.corpus_bleu(["a"], None), TypeError, r"refs .*None"),
    ("sent-hyps-None", lambda: M.sentence_bleu(None, ["a"]), TypeError, r"hyps"),
    ("avg-hyps-None", lambda: M.avg_max_rouge_l(None, [["a"]]), TypeError, r"hyps"),
    ("avg-refsets-None", lambda: M.avg_max_rouge_l(["a"], None), (TypeError, ValueError), r"ref_sets"),
    ("tokenize-None", lambda: M.tokenize(None), TypeError, r"texts .*None"),
    ("hyps-str", lambda: M.rouge("a b", ["a"]), TypeError, r"hyps .*single string"),
    ("refs-str", lambda: M.rouge(["a b"], "a"), TypeError, r"refs .*single string"),
    ("bleu-hyps-str", lambda: M.corpus_bleu("a b", ["a"]), TypeError, r"hyps .*single string"),
    ("bleu-refs-str", lambda: M.corpus_bleu(["a b"], "a"), TypeError, r"refs .*single string"),
    ("tokenize-str", lambda: M.tokenize("a b"), TypeError, r"texts .*single string"),
    ("avg-refsets-str", lambda: M.avg_max_rouge_l(["a"], "a"), (TypeError, ValueError), r"ref_sets"),
    ("hyps-int", lambda: M.rouge(["a", "b", 3], H3), TypeError, E("hyps[2]") + ".*int"),
    ("hyps-none-elem", lambda: M.rouge(["a", "b", None], H3), TypeError, E("hyps[2]") + ".*NoneType"),
    ("hyps-bytes", lambda: M.rouge(["a", "b", b"c"], H3), TypeError, E("hyps[2]") + ".*bytes"),
    ("refs-int", lambda: M.rouge(H3, ["a", 5, "c"]), TypeError, E("refs[1]") + ".*int"),
    ("refs-bytes", lambda: M.rouge(H3, ["a", "b", b"c"]), TypeError, E("refs[2]") + ".*bytes"),
    ("bleu-hyps-int", lambda: M.corpus_bleu(["a", "b", 3], H3), TypeError, E("hyps[2]")),
    ("bleu-hyps-bytes", lambda: M.sentence_bleu(["a", "b", b"x"], H3), TypeError, E("hyps[2]")),
    ("bleu-refs-none-elem", lambda: M.corpus_bleu(H3, ["a", None, "c"]), TypeError, E("refs[1]")),
    ("bleu-intl-hyps-int", lambda: M.corpus_bleu(["a", "b", 3], H3, tokenize="intl"), TypeError, E("hyps[2]")),
    ("nltk-hyps-int", lambda: M.corpus_bleu(["a", "b", 3], H3, flavor="nltk"), TypeError, E("hyps[2]")),
    ("coco-hyps-int", lambda: M.corpus_bleu(["a", "b", 3], H3, flavor="coco"), TypeError, E("hyps[2]")),
    ("pltrdy-hyps-int", lambda: M.rouge(["a", "b", 3], H3, flavor="pltrdy"), TypeError, E("hyps[2]")),
    ("avg-hyps-int", lambda: M.avg_max_rouge_l(["a", "b", 3], [["a"]] * 3), TypeError, E("hyps[2]")),
    ("avg-refset-str", lambda: M.avg_max_rouge_l(["a"], ["abc"]), TypeError, E("ref_sets[0]")),
    ("tokenize-int", lambda: M.tokenize(["a", "b", 3]), TypeError, E("texts[2]")),
    ("tokenize-intl-int", lambda: M.tokenize(["a", "b", 3], "intl"), TypeError, E("texts[2]")),
    ("hyps-generator", lambda: M.rouge((h for h in H3), H3), TypeError, r"hyps"),
    ("hyps-int-obj", lambda: M.rouge(5, ["a"]), TypeError, r"hyps"),
    ("refs-stream-str", lambda: M.rouge(H3, [H3, "abc"]), TypeError, E("refs[1]") + ".*stream"),
    # lengths
    ("len-mismatch", lambda: M.rouge(["a", "b"], ["a"]), ValueError, r"stream 0 has 1 .*hyps has 2"),
    ("len-mismatch-stream", lambda: M.rouge(["a", "b"], [["a", "b"], ["a"]]), ValueError, r"stream 1 has 1 .*hyps has 2"),
    ("bleu-len-mismatch", lambda: M.corpus_bleu(["a", "b"], ["a", "b", "c"]), ValueError, r"stream 0 has 3 .*hyps has 2"),
    ("bleu-len-mismatch-stream", lambda: M.sentence_bleu(["a"], [["a"], []]), ValueError, r"stream 1 has 0 .*hyps has 1"),
    ("ids-len-mismatch", lambda: M.rouge(ids([[1], [2]]), ids([[1]])), ValueError, r"stream 0 has 1 .*hyps has 2"),
    ("avg-len-mismatch", lambda: M.avg_max_rouge_l(["a", "b"], [["a"]]), ValueError, r"ref_sets"),
    ("avg-empty-set", lambda: M.avg_max_rouge_l(["a", "b"], [["a"], []]), ValueError, E("ref_sets[1]") + ".*empty"),
    # empty corpus
    ("empty-corpus", lambda: M.rouge([], []), ValueError, r"hyps is empty"),
    ("empty-refs", lambda: M.rouge(["a"], []), ValueError, r"refs is empty"),
    ("bleu-empty-corpus", lambda: M.corpus_bleu([], []), ValueError, r"hyps is empty"),
    ("sent-empty-corpus", lambda: M.sentence_bleu([], []), ValueError, r"hyps is empty"),
    ("coco-empty-corpus", lambda: M.corpus_bleu([], [], flavor="coco"), ValueError, r"hyps is empty"),
    ("avg-empty-corpus", lambda: M.avg_max_rouge_l([], []), ValueError, r"hyps is empty"),
    ("ids-empty-corpus", lambda: M.rouge(TokenIds(np.zeros(0, np.int32), np.zeros(1, np.int64)), ["a"]), ValueError, r"hyps is empty"),
    ("pltrdy-all-empty-ignored", lambda: M.rouge(["", ""], ["a", "b"], flavor="pltrdy", ignore_empty=True), ValueError, r"hyps"),
    # max_order
    ("max_order-0", lambda: M.corpus_bleu(["a"], ["a"], max_order=0), ValueError, r"max_order"),
    ("max_order-neg", lambda: M.sentence_bleu(["a"], ["a"], max_order=-1), ValueError, r"max_order"),
    ("max_order-0-coco", lambda: M.sentence_bleu(["a"], ["a"], flavor="coco", max_order=0), ValueError, r"max_order"),
    ("max_order-float", lambda: M.corpus_bleu(["a"], ["a"], max_order=2.0), TypeError, r"max_order"),
    ("max_order-bool", lambda: M.corpus_bleu(["a"], ["a"], max_order=True), TypeError, r"max_order"),
    ("max_order-str", lambda: M.corpus_bleu(["a"], ["a"], max_order="4"), TypeError, r"max_order"),
    # workers
    ("workers-0", lambda: M.rouge(["a"], ["a"], workers=0), ValueError, r"workers"),
    ("workers-neg2", lambda: M.rouge(["a"], ["a"], workers=-2), ValueError, r"workers"),
    ("workers-str", lambda: M.rouge(["a"], ["a"], workers="2"), TypeError, r"workers"),
    ("workers-float", lambda: M.corpus_bleu(["a"], ["a"], workers=1.5), TypeError, r"workers"),
    ("workers-bool", lambda: M.sentence_bleu(["a"], ["a"], workers=True), TypeError, r"workers"),
    ("workers-None", lambda: M.avg_max_rouge_l(["a"], [["a"]], workers=None), TypeError, r"workers"),
    ("workers-0-bleu", lambda: M.corpus_bleu(["a"], ["a"], workers=0), ValueError, r"workers"),
    ("workers-0-tokenize", lambda: M.tokenize(["a"], workers=0), ValueError, r"workers"),
    ("workers-str-tokenize", lambda: M.tokenize(["a"], workers="2"), TypeError, r"workers"),
    # flavor / tokenize / types / smoothing
    ("rouge-flavor", lambda: M.rouge(["a"], ["a"], flavor="rouge"), ValueError, r"flavor.*'rouge'"),
    ("avg-flavor", lambda: M.avg_max_rouge_l(["a"], [["a"]], flavor="x"), ValueError, r"flavor"),
    ("bleu-flavor", lambda: M.corpus_bleu(["a"], ["a"], flavor="moses"), ValueError, r"flavor.*'moses'"),
    ("sent-flavor", lambda: M.sentence_bleu(["a"], ["a"], flavor="moses"), ValueError, r"flavor"),
    ("bleu-tokenize", lambda: M.corpus_bleu(["a"], ["a"], tokenize="zh"), ValueError, r"tokenize.*'zh'"),
    ("nltk-tokenize", lambda: M.corpus_bleu(["a"], ["a"], flavor="nltk", tokenize="char"), ValueError, r"tokenize"),
    ("sent-tokenize", lambda: M.sentence_bleu(["a"], ["a"], tokenize="rouge"), ValueError, r"tokenize"),
    ("tokenize-unknown", lambda: M.tokenize(["a"], "zh"), ValueError, r"tokenizer.*'zh'"),
    ("rougeX", lambda: M.rouge(["a"], ["a"], types=("rougeX",)), ValueError, r"types.*rougeX"),
    ("rouge0", lambda: M.rouge(["a"], ["a"], types=("rouge1", "rouge0")), ValueError, r"types.*rouge0"),
    ("rouge100", lambda: M.rouge(["a"], ["a"], types=("rouge100",)), ValueError, r"types.*rouge100"),
    ("rouge-l-lower", lambda: M.rouge(["a"], ["a"], types=("rougel",)), ValueError, r"types.*rougel"),
    ("types-empty", lambda: M.rouge(["a"], ["a"], types=()), ValueError, r"types"),
    ("pltrdy-rougeX", lambda: M.rouge(["a"], ["a"], types=("rouge-1",), flavor="pltrdy"), ValueError, r"types.*rouge-1"),
    ("smooth-unknown", lambda: M.corpus_bleu(["a"], ["a"], smooth_method="add-one"), ValueError, r"smooth_method.*add-one"),
    ("smooth-unknown-sent", lambda: M.sentence_bleu(["a"], ["a"], smooth_method="bogus"), ValueError, r"smooth_method"),
    ("nltk-smooth-8", lambda: M.corpus_bleu(["a"], ["a"], flavor="nltk", smooth_method=8), ValueError, r"smooth_method.*8"),
    ("nltk-smooth-method8", lambda: M.sentence_bleu(["a"], ["a"], flavor="nltk", smooth_method="method8"), ValueError, r"smooth_method"),
    ("nltk-smooth-neg", lambda: M.sentence_bleu(["a"], ["a"], flavor="nltk", smooth_method=-1), ValueError, r"smooth_method"),
    ("nltk-smooth-exp", lambda: M.corpus_bleu(["a"], ["a"], flavor="nltk", smooth_method="exp"), ValueError, r"smooth_method"),
    ("coco-smooth", lambda: M.corpus_bleu(["a"], ["a"], flavor="coco", smooth_method="exp"), ValueError, r"smooth"),
    # invalid Unicode
    ("surrogate-hyp", lambda: M.rouge(["a", "\ud800"], ["a", "b"]), ValueError, E("hyps[1]") + ".*surrogate"),
    ("surrogate-ref", lambda: M.rouge(["a", "b"], ["a", "x\udfffy"]), ValueError, E("refs[1]") + ".*surrogate"),
    ("surrogate-pltrdy", lambda: M.rouge(["\ud800 a"], ["a"], flavor="pltrdy"), ValueError, E("hyps[0]") + ".*surrogate"),
    ("surrogate-bleu", lambda: M.corpus_bleu(["a", "\ud800"], ["a", "b"]), ValueError, E("hyps[1]") + ".*surrogate"),
    ("surrogate-bleu-ref", lambda: M.sentence_bleu(["a", "b"], ["a", "\udc80"]), ValueError, E("refs[1]") + ".*surrogate"),
    ("surrogate-intl", lambda: M.corpus_bleu(["a", "\ud800"], ["a", "b"], tokenize="intl"), ValueError, E("hyps[1]") + ".*surrogate"),
    ("surrogate-tokenize", lambda: M.tokenize(["a", "\ud800"], "rouge"), ValueError, E("texts[1]") + ".*surrogate"),
    ("surrogate-tokenize-intl", lambda: M.tokenize(["a", "\ud800"], "intl"), ValueError, E("texts[1]") + ".*surrogate"),
    ("surrogate-avg", lambda: M.avg_max_rouge_l(["\ud800"], [["a"]]), ValueError, E("hyps[0]") + ".*surrogate"),
    # TokenIds
    ("ids-negative", lambda: TokenIds(np.array([1, -2], np.int32), np.array([0, 2])), ValueError, r"TokenIds.values"),
    ("ids-too-big", lambda: TokenIds(np.array([2**31], np.int64), np.array([0, 1])), ValueError, r"TokenIds.values"),
    ("ids-negative-from-lists", lambda: ids([[1, 2], [-1]]), ValueError, r"TokenIds.values"),
    ("ids-float", lambda: TokenIds(np.array([1.0]), np.array([0, 1])), TypeError, r"TokenIds.values"),
    ("ids-2d", lambda: TokenIds(np.array([[1]]), np.array([0, 1])), TypeError, r"TokenIds.values"),
    ("ids-offsets-end", lambda: TokenIds(np.array([1, 2]), np.array([0, 3])), ValueError, r"TokenIds.offsets"),
    ("ids-offsets-start", lambda: TokenIds(np.array([1, 2]), np.array([1, 2])), ValueError, r"TokenIds.offsets"),
    ("ids-offsets-decreasing", lambda: TokenIds(np.array([1, 2]), np.array([0, 2, 1, 2])), ValueError, r"TokenIds.offsets"),
    ("ids-offsets-empty", lambda: TokenIds(np.array([1]), np.array([], np.int64)), TypeError, r"TokenIds.offsets"),
    ("ids-offsets-float", lambda: TokenIds(np.array([1]), np.array([0.0, 1.0])), TypeError, r"TokenIds.offsets"),
    ("ids-mixed", lambda: M.rouge(ids([[1]]), ["a"]), ValueError, r"hyps and refs"),
    ("ids-mixed-streams", lambda: M.corpus_bleu(ids([[1]]), [ids([[1]]), ["a"]], tokenize="none"), (TypeError, ValueError), r"refs"),
    ("ids-13a", lambda: M.corpus_bleu(ids([[1]]), ids([[1]])), ValueError, r"tokenize='none'"),
    ("ids-intl", lambda: M.corpus_bleu(ids([[1]]), ids([[1]]), tokenize="intl"), ValueError, r"tokenize='intl'"),
    ("ids-lowercase", lambda: M.corpus_bleu(ids([[1]]), ids([[1]]), tokenize="none", lowercase=True), ValueError, r"lowercase.*hyps"),
    ("ids-pltrdy", lambda: M.rouge(ids([[1]]), ids([[1]]), flavor="pltrdy"), ValueError, r"pltrdy"),
    ("ids-lsum", lambda: M.rouge(ids([[1]]), ids([[1]]), types=("rougeLsum",)), ValueError, r"rougeLsum"),
    # pltrdy specifics
    ("pltrdy-empty-hyp", lambda: M.rouge(["a b", ""], ["a", "b"], flavor="pltrdy"), ValueError, E("hyps[1]") + ".*ignore_empty"),
    ("pltrdy-dots-hyp", lambda: M.rouge(["...", "a"], ["a", "b"], flavor="pltrdy"), ValueError, E("hyps[0]") + ".*ignore_empty"),
    ("pltrdy-empty-ref", lambda: M.rouge(["a", "b"], ["a", ""], flavor="pltrdy"), ValueError, E("hyps[1]") + ".*reference"),
    ("pltrdy-empty-multiref", lambda: M.rouge(["a", "b"], [["a", "b"], ["a", ""]], flavor="pltrdy"), ValueError, E("hyps[1]")),
    ("pltrdy-avg-empty", lambda: M.avg_max_rouge_l(["a", ""], [["a"], ["b"]], flavor="pltrdy"), ValueError, r"pltrdy"),
    ("pltrdy-lsum", lambda: M.rouge(["a"], ["a"], types=("rouge1", "rougeLsum"), flavor="pltrdy"), ValueError, r"pltrdy.*rougeLsum"),
    ("ignore_empty-rouge-score", lambda: M.rouge([""], ["a"], ignore_empty=True), ValueError, r"ignore_empty"),
]


@pytest.mark.parametrize("call,exc,pattern", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_message(impl, call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


@pytest.mark.parametrize("call", [c[1] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input_same_error_under_every_backend(call):
    with pytest.raises((TypeError, ValueError)):
        run_all("metrics", call)


# ------------------------------------------------------------------- known pysynth bugs


def test_multi_stream_ref_error_names_stream_and_row(impl):
    with pytest.raises(TypeError) as info:
        M.rouge(H3, [H3, ["a", 5, "c"]])  # stream 1, row 1; flattened row 3
    msg = str(info.value)
    assert "refs[3]" not in msg and "[1]" in msg, msg


def test_avg_max_ref_set_error_names_ref_sets(impl):
    with pytest.raises(TypeError, match=E("ref_sets[1]")):
        M.avg_max_rouge_l(["a", "b"], [["a"], ["b", 3]])


def test_non_str_rouge_type_same_error_under_every_backend():
    with pytest.raises((TypeError, ValueError), match="types"):
        run_all("metrics", lambda: M.rouge(["a"], ["a"], types=["rouge1", 1]))


# ------------------------------------------------------- empty strings are scored


def test_empty_strings_scored_rouge_score(impl):
    got = M.rouge(["", "a b", "", "x"], ["a b", "", "", "x"], types=("rouge1", "rouge2", "rougeL", "rougeLsum"))
    for t, s in got.items():
        assert s.fmeasure.shape == (4,)
        assert list(s.fmeasure[:3]) == [0.0, 0.0, 0.0], t
        assert s.fmeasure[3] == (1.0 if t != "rouge2" else 0.0), t
    assert M.avg_max_rouge_l([""], [["", "a"]])[0][0] == 0.0


def test_empty_strings_scored_sacrebleu(impl):
    hyps, refs = ["", "a b c d", "", "  "], ["a b c d", "", "", ""]
    s = M.sentence_bleu(hyps, refs)
    assert s.shape == (4,) and np.all(s == 0.0)
    c = M.corpus_bleu(hyps, refs)
    assert c.score == 0.0 and c.sys_len == 4 and c.ref_len == 4
    assert M.corpus_bleu([""], [""]).score == 0.0
    for sm in ("none", "floor", "add-k", "exp"):
        assert np.all(M.sentence_bleu(hyps, refs, smooth_method=sm) == 0.0)
    assert np.all(np.isfinite(M.sentence_bleu(hyps, refs, flavor="coco")))
    assert M.tokenize([""], "13a") == [[]] and M.tokenize([""], "rouge") == [[]]


def test_pltrdy_ignore_empty_skips(impl):
    got = M.rouge(["a b", "", "c"], ["a b", "x", "c"], flavor="pltrdy", ignore_empty=True)
    assert got["rouge1"].fmeasure.shape == (2,)


# ----------------------------------------------------------------- never a crash

_LONG_WORD = "".join("ab,cd.ef-3.1!" for _ in range(800))[:10_000]  # 10k chars, no space
_MANY = " ".join(f"w{i % 97}" for i in range(5000))  # 5000 tokens
_PUNCT = "!?.,;:-()[]{}<>&\"'/\\@#$%^*_+=|~`" * 20
_ODD = [_LONG_WORD, "x" * 10_000, _MANY, _PUNCT, "\u00a0" * 50, "\n" * 100, "中" * 3000, "😀" * 2000]


def _finite(*arrays):
    return all(bool(np.all(np.isfinite(np.asarray(a, dtype=np.float64)))) for a in arrays)


@pytest.mark.parametrize("hyp", _ODD, ids=["10k-no-space", "x10k", "5000-tokens", "punct", "nbsp", "newlines", "cjk", "emoji"])
def test_odd_inputs_score_finite(impl, hyp):
    short = "w1 w2 w3 ab cd . ! x"
    refs = [short, _PUNCT, hyp[:300]]
    hyps = [hyp] * len(refs)
    for stem in (False, True):
        r = M.rouge(hyps, refs, types=("rouge1", "rouge2", "rougeL", "rougeLsum"), stem=stem)
        assert _finite(*(s.fmeasure for s in r.values()), *(s.precision for s in r.values()))
    for flavor in ("sacrebleu", "coco", "nltk"):
        assert _finite(M.sentence_bleu(hyps, refs, flavor=flavor), M.corpus_bleu(hyps, refs, flavor=flavor).score)
    assert _finite(M.corpus_bleu(hyps, refs, tokenize="intl").score)
    avg, mx = M.avg_max_rouge_l([hyp], [refs])
    assert _finite(avg, mx)
    toks = M.tokenize([hyp], "13a")
    assert isinstance(toks[0], list)
    try:
        p = M.rouge(hyps, refs, types=("rouge1", "rougeL"), flavor="pltrdy")
        assert _finite(*(s.fmeasure for s in p.values()))
    except ValueError as exc:  # texts without words: the tool raises too
        assert "pltrdy" in str(exc)


def test_long_identical_texts():
    """5000-token hypothesis = reference (compiled side only; the twin's LCS is quadratic)."""
    if "cpp" not in _dispatch.available("metrics"):
        pytest.skip("compiled extension not built")
    with _dispatch.force("cpp", "metrics"):
        r = M.rouge([_MANY, _LONG_WORD], [_MANY, _LONG_WORD], types=("rouge1", "rouge4", "rougeL", "rougeLsum"), workers=2)
        for s in r.values():
            assert np.all(s.fmeasure == 1.0)
        b = M.corpus_bleu([_MANY, _LONG_WORD], [_MANY, _LONG_WORD])
        assert b.score == pytest.approx(100.0)
        p = M.rouge([_MANY], [_MANY], flavor="pltrdy")
        assert p["rouge1"].precision[0] == 1.0
