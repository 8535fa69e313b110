"""pysynth.models.wordpiece on its two implementations (issue 28): the tokenizers library gives the
same ids as the pure-Python specification, on awkward strings and on the shared questions."""
from __future__ import annotations

import gzip
import json
import sys

import pytest

from pysynth.models.registry import resolve
from pysynth.models.wordpiece import WordPiece

pytest.importorskip("tokenizers")

VOCAB = resolve("wellformed-minilm").path / "vocab.txt"
AWKWARD = ["what is the capital of australia?", "Ünïcödé café naïve", "日本語のテキスト と English", "a\x00b\ufffdc",
           "tab\there\nnew line", "x" * 150, "y" * 100, "", "   ", "$^`~ @#", "émigré’s “quotes” — dash",
           "\u200b zero\u00a0width", "C++ vs. C#: which?", "don't can't won't", "ﬁ ligature Ⅻ", "😀 emoji!"]


def _shared_texts():
    from pysynth.data import shared_dir

    try:
        shared = shared_dir()
    except FileNotFoundError:
        return []
    texts = []
    for name in ("query_wellformedness/dev.jsonl.gz", "query_wellformedness/test.jsonl.gz",
                 "mqr/dev.jsonl.gz", "mqr/test.jsonl.gz"):
        p = shared / name
        if p.is_file():
            for line in gzip.open(p, "rt", encoding="utf-8"):
                texts += [v for v in json.loads(line).values() if isinstance(v, str)]
    return texts


@pytest.fixture(scope="module")
def both():
    py, fast = WordPiece(VOCAB, impl="python"), WordPiece(VOCAB, impl="tokenizers")
    assert (py.impl, fast.impl, WordPiece(VOCAB).impl) == ("python", "tokenizers", "tokenizers")
    return py, fast


@pytest.mark.parametrize("max_length", [10**6, 128, 4, 2])
def test_same_ids_on_awkward_strings(both, max_length):
    py, fast = both
    for t in AWKWARD:
        assert fast.encode(t, max_length) == py.encode(t, max_length), t
    a, b = py.batch(AWKWARD, max_length), fast.batch(AWKWARD, max_length)
    assert all((a[k] == b[k]).all() and a[k].dtype == b[k].dtype for k in a)


def test_same_ids_on_the_shared_questions(both):
    texts = _shared_texts()
    if not texts:
        pytest.skip("shared data not present")
    py, fast = both
    assert [e for e in fast.batch(texts[:5000], 128)["input_ids"].tolist()] == \
        py.batch(texts[:5000], 128)["input_ids"].tolist()
    bad = [t for t in texts if fast.encode(t, 10**6) != py.encode(t, 10**6)]
    assert not bad, f"{len(bad)} of {len(texts)} differ, e.g. {bad[:3]}"


def test_errors_and_fallback(both, monkeypatch):
    _, fast = both
    with pytest.raises(TypeError, match=r"texts\[1\]: expected str"):
        fast.batch(["a", 3])
    with pytest.raises(TypeError, match="text: expected str"):
        fast.encode(None)
    with pytest.raises(ValueError, match="impl: must be one of"):
        WordPiece(VOCAB, impl="rust")
    monkeypatch.setitem(sys.modules, "tokenizers", None)  # as if not installed
    assert WordPiece(VOCAB).impl == "python"
    with pytest.raises(ImportError, match="pip install tokenizers"):
        WordPiece(VOCAB, impl="tokenizers")
