"""Bad input: a TypeError/ValueError whose message names the argument, the same exception type
under every backend (the parity shim), never a crash."""
from __future__ import annotations

import numpy as np
import pytest

from pysynth import text
from pysynth._dispatch import backend

from _parity import run_all

C = text.Corpus([0, 1, 0], [0, 3], [2, 1], [1, 1], ["a", "b"], validate=False)
IDS, OFF, VOC = np.array([0, 1, 0], np.int32), np.array([0, 3], np.int64), ["a", "b"]
# a learned model of C: keys a, b, a_b, b_a
KO, KT, KC = np.array([0, 1, 2, 4, 6]), np.array([0, 1, 0, 1, 1, 0], np.int32), np.array([2, 1, 1, 1])


def low(name, *args):
    return lambda: getattr(backend("text"), name)(*args)


CASES = [
    # ------------------------------------------------------------- public API: corpora
    ("texts-None", lambda: text.build_corpus(None), TypeError, r"texts .*None"),
    ("texts-str", lambda: text.build_corpus("a b"), TypeError, r"texts .*single string"),
    ("texts-int-elem", lambda: text.build_corpus(["a", 3]), TypeError, r"texts\[1\] .*int"),
    ("texts-bytes-elem", lambda: text.build_corpus(["a", b"b"]), TypeError, r"texts\[1\] .*bytes"),
    ("texts-not-iterable", lambda: text.build_corpus(5), TypeError, r"texts"),
    ("texts-empty", lambda: text.build_corpus([]), ValueError, r"texts is empty"),
    ("texts-surrogate", lambda: text.build_corpus(["a\ud800"]), ValueError, r"texts\[0\].*surrogate"),
    ("tokenizer", lambda: text.build_corpus(["a"], tokenizer="nltk"), ValueError, r"tokenizer"),
    ("workers-0", lambda: text.build_corpus(["a"], workers=0), ValueError, r"workers"),
    ("workers-str", lambda: text.build_corpus(["a"], workers="2"), TypeError, r"workers"),
    ("tokenize-None", lambda: text.tokenize(None), TypeError, r"texts"),
    ("from-tokens-str", lambda: text.Corpus.from_tokens("a b"), TypeError, r"sentences"),
    ("from-tokens-str-row", lambda: text.Corpus.from_tokens(["a b"]), TypeError, r"sentences\[0\]"),
    ("from-tokens-int", lambda: text.Corpus.from_tokens([["a", 1]]), TypeError, r"sentences\[0\]"),
    ("from-tokens-empty-token", lambda: text.Corpus.from_tokens([["a", ""]]), ValueError, r"empty token"),
    # ----------------------------------------------------------- public API: phrases
    ("min_count-0", lambda: text.Phrases(min_count=0), ValueError, r"min_count"),
    ("min_count-float", lambda: text.Phrases(min_count=2.5), TypeError, r"min_count"),
    ("min_count-bool", lambda: text.Phrases(min_count=True), TypeError, r"min_count"),
    ("threshold-0-default", lambda: text.Phrases(threshold=0), ValueError, r"threshold"),
    ("threshold-neg", lambda: text.Phrases(threshold=-1.0), ValueError, r"threshold"),
    ("threshold-nan", lambda: text.Phrases(threshold=float("nan")), ValueError, r"threshold"),
    ("threshold-str", lambda: text.Phrases(threshold="10"), TypeError, r"threshold"),
    ("threshold-npmi-range", lambda: text.Phrases(threshold=1.5, scoring="npmi"), ValueError, r"threshold"),
    ("scoring-unknown", lambda: text.Phrases(scoring="pmi"), ValueError, r"scoring"),
    ("scoring-callable", lambda: text.Phrases(scoring=lambda **k: 0.0), TypeError, r"scoring"),
    ("delimiter-empty", lambda: text.Phrases(delimiter=""), ValueError, r"delimiter"),
    ("delimiter-int", lambda: text.Phrases(delimiter=5), TypeError, r"delimiter"),
    ("delimiter-newline", lambda: text.Phrases(delimiter="\n"), ValueError, r"delimiter"),
    ("connectors-str", lambda: text.Phrases(connector_words="the"), TypeError, r"connector_words"),
    ("connectors-int", lambda: text.Phrases(connector_words=[1]), TypeError, r"connector_words"),
    ("max_vocab_size-0", lambda: text.Phrases(max_vocab_size=0), ValueError, r"max_vocab_size"),
    ("learn-str", lambda: text.Phrases().learn("a b c"), TypeError, r"corpus"),
    ("learn-None", lambda: text.Phrases().learn(None), TypeError, r"corpus"),
    ("learn-bad-token", lambda: text.Phrases().learn([["a", None]]), TypeError, r"sentences\[0\]"),
    ("learn-workers", lambda: text.Phrases().learn(C, workers=-2), ValueError, r"workers"),
    ("apply-str", lambda: text.Phrases().apply("a b"), TypeError, r"corpus"),
    ("getitem-str", lambda: text.Phrases()["a b"], TypeError, r"list of str tokens"),
    ("apply_phrases-type", lambda: C.apply_phrases({"a_b": 1.0}), TypeError, r"phrases"),
    ("frozen-list", lambda: text.FrozenPhrases([("a_b", 1.0)]), TypeError, r"phrasegrams"),
    ("frozen-score", lambda: text.FrozenPhrases({"a_b": "x"}), TypeError, r"phrasegrams\['a_b'\]"),
    ("frozen-key", lambda: text.FrozenPhrases({1: 2.0}), TypeError, r"phrasegrams keys"),
    ("frozen-threshold", lambda: text.FrozenPhrases({}, threshold=float("nan")), ValueError, r"threshold"),
    ("passes-0", lambda: text.phrase_passes(C, passes=0), ValueError, r"passes"),
    # ------------------------------------------------------------- compiled functions
    ("ids-float", low("count_phrases", [0.5], [0, 1], VOC, [], "_", 10, 1), TypeError, r"ids"),
    ("ids-2d", low("count_phrases", [[0]], [0, 1], VOC, [], "_", 10, 1), ValueError, r"ids"),
    ("ids-range", low("count_phrases", [0, 2], [0, 2], VOC, [], "_", 10, 1), ValueError, r"ids\[1\] = 2"),
    ("ids-negative", low("count_phrases", [0, -1], [0, 2], VOC, [], "_", 10, 1), ValueError, r"ids\[1\] = -1"),
    ("ids-wide", low("count_phrases", np.array([2**32]), [0, 1], VOC, [], "_", 10, 1), ValueError, r"ids"),
    ("ids-no-vocab", low("count_phrases", [0], [0, 1], [], [], "_", 10, 1), ValueError, r"vocabulary is empty"),
    ("offsets-end", low("count_phrases", IDS, [0, 2], VOC, [], "_", 10, 1), ValueError, r"offsets"),
    ("offsets-decreasing", low("count_phrases", IDS, [0, 2, 1, 3], VOC, [], "_", 10, 1), ValueError, r"offsets"),
    ("offsets-empty", low("count_phrases", IDS, np.zeros(0, np.int64), VOC, [], "_", 10, 1), ValueError, r"offsets"),
    ("vocab-int", low("count_phrases", IDS, OFF, ["a", 2], [], "_", 10, 1), TypeError, r"vocab\[1\]"),
    ("connectors-low", low("count_phrases", IDS, OFF, VOC, None, "_", 10, 1), TypeError, r"connector_words"),
    ("delimiter-low", low("count_phrases", IDS, OFF, VOC, [], "", 10, 1), ValueError, r"delimiter"),
    ("workers-low", low("count_phrases", IDS, OFF, VOC, [], "_", 10, 0), ValueError, r"workers"),
    ("tokenizer-low", low("build_corpus", ["a"], "spacy", 1), ValueError, r"tokenizer"),
    ("scoring-low", low("export_phrases", VOC, KO, KT, KC, 3, "_", 1, 0.1, "pmi"), ValueError, r"scoring"),
    ("keys-unsorted", low("export_phrases", VOC, KO, KT[[1, 0, 2, 3, 4, 5]], KC, 3, "_", 1, 0.1, "default"),
     ValueError, r"sorted"),
    ("keys-empty-key", low("export_phrases", VOC, [0, 1, 1, 2], [0, 1], [1, 1, 1], 3, "_", 1, 0.1, "default"),
     ValueError, r"key_offsets"),
    ("keys-range", low("export_phrases", VOC, [0, 1], [7], [1], 3, "_", 1, 0.1, "default"), ValueError, r"key_terms"),
    ("keys-counts-len", low("export_phrases", VOC, KO, KT, KC[:2], 3, "_", 1, 0.1, "default"), ValueError,
     r"key_counts"),
    ("keys-same-string", low("export_phrases", ["a", "b", "a_b"], [0, 1, 3], [2, 0, 1], [1, 1], 3, "_", 1, 0.1,
                             "default"), ValueError, r"same string"),
    ("cwc-negative", low("export_phrases", VOC, KO, KT, KC, -1, "_", 1, 0.1, "default"), ValueError,
     r"corpus_word_count"),
    ("model-vocab", low("apply_phrases", IDS, OFF, VOC, [], "_", None, KO, KT, KC, 3, 1, 0.1, "default", 1),
     TypeError, r"model_vocab"),
    ("frozen-dup", low("apply_frozen", IDS, OFF, VOC, [], "_", ["a_b", "a_b"], [1.0, 2.0], 0.5, 1), ValueError,
     r"phrases must be distinct"),
    ("frozen-scores-len", low("apply_frozen", IDS, OFF, VOC, [], "_", ["a_b"], [1.0, 2.0], 0.5, 1), ValueError,
     r"scores"),
    ("frozen-scores-2d", low("apply_frozen", IDS, OFF, VOC, [], "_", ["a_b"], [[1.0]], 0.5, 1), TypeError,
     r"scores"),
    ("frozen-scores-str", low("apply_frozen", IDS, OFF, VOC, [], "_", ["a_b"], ["x"], 0.5, 1), TypeError,
     r"scores"),
    ("frozen-phrases-str", low("apply_frozen", IDS, OFF, VOC, [], "_", "a_b", [1.0], 0.5, 1), TypeError,
     r"phrases"),
]


@pytest.mark.parametrize("call,exc,pattern", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_bad_input(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        run_all("text", call)


def test_odd_but_valid_input(text_impl):
    """No tokens at all, connector-only questions, a single question: handled, not errors."""
    c = text.build_corpus(["???", "", "the of"])
    assert c.n_docs == 3 and c.n_tokens == 2 and c.vocab == ["of", "the"]
    p = text.Phrases(min_count=1, threshold=0.1, connector_words=text.ENGLISH_CONNECTOR_WORDS).learn(c)
    assert p.n_keys == 0 and p.export_phrases() == {}
    assert list(p.apply(c).sentences()) == [[], [], ["the", "of"]]
    empty = text.build_corpus([""])
    assert text.Phrases().learn(empty).n_keys == 0
    assert text.Phrases().freeze().apply(empty).n_docs == 1
