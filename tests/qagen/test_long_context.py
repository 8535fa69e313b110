"""Long qagen contexts window by window (issue 27): the span scorer sees a bounded number of tokens
per call whatever a context's length, the spans do not depend on that bound, and the server's
cost estimate counts the windows before any work."""
from __future__ import annotations

import pytest

from pysynth.models.spans import WINDOW_TOKENS, count_windows

pytest.importorskip("transformers")
pytest.importorskip("onnxruntime")

TEXT = ("Oxygen is a chemical element with symbol O and atomic number 8. It was discovered by Carl Wilhelm "
        "Scheele in Uppsala in 1773 or earlier. Joseph Priestley published his findings in 1775. The Rhine "
        "is a European river that begins in the Swiss canton of Graubünden and flows to the North Sea. ")


@pytest.fixture(scope="module")
def span():
    from pysynth.models.span_model import SpanModel

    return SpanModel(threads=1)  # the shipped qagen-span-minilm (onnxruntime)


class _Recorder:
    """A span scorer that records the shape of every call."""

    def __init__(self, scorer):
        self.scorer, self.shapes = scorer, []

    def span_scores(self, input_ids, attention_mask, token_type_ids=None, outputs=None):
        self.shapes.append(tuple(input_ids.shape))
        return self.scorer.span_scores(input_ids, attention_mask, token_type_ids, outputs)


def test_scorer_calls_are_bounded_and_spans_do_not_depend_on_the_bound(span):
    from pysynth.models.spans import predict_spans

    texts = [TEXT * 40, TEXT, TEXT * 3]  # ~2,700 wordpieces: many windows
    rec = _Recorder(span.scorer)
    small = predict_spans(rec, span.tokenizer, texts, None, 10, 32, 256, 96, True, 16, max_tokens=512)
    assert rec.shapes and all(b * t <= max(512, t) for b, t in rec.shapes)
    assert sum(b for b, _ in rec.shapes) == sum(count_windows(len(span.tokenizer(t)["input_ids"]) - 2)
                                               for t in texts)
    whole = predict_spans(span.scorer, span.tokenizer, texts, None, 10, 32, 256, 96, True, 16, max_tokens=None)
    one = predict_spans(span.scorer, span.tokenizer, texts, None, 10, 32, 256, 96, True, 16, max_tokens=1)
    assert small == whole == one  # the same floats: the windows keep their batch's padding
    qs = ["who discovered oxygen?"] * 3
    a = predict_spans(span.scorer, span.tokenizer, texts, qs, 1, 30, 256, 96, False, 16, max_tokens=256)
    b = predict_spans(span.scorer, span.tokenizer, texts, qs, 1, 30, 256, 96, False, 16, max_tokens=None)
    assert a == b
    assert max(s["end"] for s in whole[0]) > 0
    with pytest.raises(ValueError, match="max_tokens"):
        predict_spans(span.scorer, span.tokenizer, texts, max_tokens=0)


def test_span_model_max_tokens(span):
    from pysynth.models.span_model import SpanModel

    assert span.max_tokens == WINDOW_TOKENS
    with pytest.raises(ValueError, match="max_tokens"):
        SpanModel(max_tokens=0)


@pytest.mark.parametrize("reps", [1, 5, 17, 60])
def test_count_windows_matches_the_tokenizer(span, reps):
    text = TEXT * reps
    enc = span.tokenizer([text], truncation=True, max_length=256, stride=96, return_overflowing_tokens=True)
    n = len(span.tokenizer(text, add_special_tokens=False)["input_ids"])
    assert count_windows(n, 256, 96) == len(enc["input_ids"])
    q = "who discovered oxygen in uppsala?"
    nq = len(span.tokenizer(q, add_special_tokens=False)["input_ids"])
    enc = span.tokenizer([q], [text], truncation="only_second", max_length=256, stride=96,
                         return_overflowing_tokens=True)
    assert count_windows(n, 256, 96, nq + 3) == len(enc["input_ids"])


def test_count_windows_errors():
    assert count_windows(0) == 1 and count_windows(254) == 1 and count_windows(255) == 2
    with pytest.raises(ValueError, match="stride"):
        count_windows(1000, 128, 96, 40)


def test_estimate_cost_windows_grow_memory_does_not():
    from pysynth.qagen.served import estimate_cost

    short, long = estimate_cost([TEXT]), estimate_cost([TEXT * 200])
    assert short["contexts"] == 1 and short["windows"] == 2 and short["context_chars"] == len(TEXT)
    assert long["windows"] > 100 * short["windows"] / 2
    # one long context: its windows run a few at a time; only the text itself grows
    assert long["peak_bytes"] - short["peak_bytes"] < 200 * len(TEXT) * 16 + 600 * 256 * long["windows"]
    assert long["peak_bytes"] < 2 * short["peak_bytes"]
    assert estimate_cost([TEXT] * 4, answers=3)["windows"] == 4 * (1 + 3)
    assert estimate_cost([])["windows"] == 0
    with pytest.raises(TypeError, match="texts"):
        estimate_cost(TEXT)


def test_tokenizer_batches_bounded_by_characters(span, monkeypatch):
    from pysynth.models import spans as S

    texts = [TEXT * 40, TEXT * 3, TEXT, TEXT * 2]
    calls = []
    tok = span.tokenizer

    def counting(*args, **kw):
        calls.append(len(args[-1]))
        return tok(*args, **kw)

    base = S.predict_spans(span.scorer, counting, texts, None, 10, 32, 256, 96, True, 16)
    assert calls == [4]
    calls.clear()
    monkeypatch.setattr(S, "BATCH_CHARS", len(TEXT) * 6)
    got = S.predict_spans(span.scorer, counting, texts, None, 10, 32, 256, 96, True, 16)
    assert calls == [1, 3]  # the long context alone, the others together
    assert [[(s["start"], s["end"]) for s in r] for r in got] == [[(s["start"], s["end"]) for s in r] for r in base]
