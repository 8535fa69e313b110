"""Save / load: round trips (memory-mapped or not), and broken directories -> ValueError."""
from __future__ import annotations

import json

import numpy as np
import pytest

from pysynth import text

TEXTS = [
    "How fast is a 2004 Honda CRF 230?", "honda crf 230 top speed", "is the honda crf 230 a good bike",
    "who owns bank of america", "bank of america routing number", "what is the price of a honda crf 230",
]


@pytest.fixture
def corpus(text_impl):
    c = text.build_corpus(TEXTS)
    p = text.Phrases(min_count=1, threshold=0.5, connector_words=text.ENGLISH_CONNECTOR_WORDS).learn(c)
    return p.apply(c)  # a corpus with phrase terms and a history


def _same_corpus(a, b):
    for name in ("ids", "offsets", "cf", "df"):
        x, y = getattr(a, name), getattr(b, name)
        assert x.dtype == y.dtype and np.array_equal(x, y), name
    assert a.vocab == b.vocab and a.tokenizer == b.tokenizer and a.history == b.history


@pytest.mark.parametrize("mmap", [True, False])
def test_corpus_round_trip(corpus, tmp_path, mmap):
    d = corpus.save(tmp_path / "c")
    assert sorted(p.name for p in d.iterdir()) == ["cf.npy", "df.npy", "ids.npy", "meta.json", "offsets.npy", "vocab.txt"]
    meta = json.loads((d / "meta.json").read_text())
    assert meta["format"] == "pysynth.text.Corpus" and meta["format_version"] == text.FORMAT_VERSION
    assert meta["n_docs"] == corpus.n_docs and meta["tokenizer"] == "rouge"
    back = text.Corpus.load(d, mmap=mmap)
    _same_corpus(corpus, back)
    if mmap:
        assert isinstance(back.ids, np.memmap) and not back.ids.flags.writeable
    # read-only, memory-mapped arrays go straight into the compiled functions
    p = text.Phrases(min_count=1, threshold=0.5).learn(back)
    assert p.apply(back).n_docs == corpus.n_docs
    # saving again over the same directory replaces it
    corpus.save(d)
    _same_corpus(corpus, text.Corpus.load(d))


def test_phrases_round_trip(corpus, tmp_path):
    p = text.Phrases(min_count=1, threshold=0.5, connector_words={"of", "the"}, delimiter="+").learn(corpus)
    back = text.Phrases.load(p.save(tmp_path / "p"))
    assert back.params() == p.params()
    assert back.counts() == p.counts() and back.export_phrases() == p.export_phrases()
    assert (back.corpus_word_count, back.min_reduce) == (p.corpus_word_count, p.min_reduce)
    _same_corpus(back.apply(corpus), p.apply(corpus))
    f = p.freeze()
    fb = text.FrozenPhrases.load(f.save(tmp_path / "f"))
    assert fb.phrasegrams == f.phrasegrams and fb.params() == f.params()
    _same_corpus(fb.apply(corpus), f.apply(corpus))


def test_empty_round_trip(tmp_path, text_impl):
    c = text.build_corpus([""])
    _same_corpus(c, text.Corpus.load(c.save(tmp_path / "c")))
    p = text.Phrases().learn(c)
    assert text.Phrases.load(p.save(tmp_path / "p")).n_keys == 0
    assert text.FrozenPhrases.load(p.freeze().save(tmp_path / "f")).phrasegrams == {}


# --------------------------------------------------------------------- broken files


def _edit_meta(d, **changes):
    meta = json.loads((d / "meta.json").read_text())
    meta.update(changes)
    (d / "meta.json").write_text(json.dumps(meta))


def _truncate(path, keep):
    data = path.read_bytes()
    path.write_bytes(data[:keep] if keep >= 0 else data[:keep])


BROKEN = {
    "no-meta": (lambda d: (d / "meta.json").unlink(), r"meta.json is missing"),
    "meta-not-json": (lambda d: (d / "meta.json").write_text("{oops"), r"meta.json is corrupt"),
    "meta-list": (lambda d: (d / "meta.json").write_text("[1, 2]"), r"does not describe"),
    "other-format": (lambda d: _edit_meta(d, format="pysynth.text.Phrases"), r"does not describe"),
    "version-2": (lambda d: _edit_meta(d, format_version=2), r"format version 2.*reads version 1"),
    "version-missing": (lambda d: _edit_meta(d, format_version=None), r"format version None"),
    "count-not-int": (lambda d: _edit_meta(d, n_docs="6"), r"n_docs must be a non-negative int"),
    "count-mismatch": (lambda d: _edit_meta(d, n_docs=5), r"offsets.npy has 7 entries; meta.json says 6"),
    "ids-missing": (lambda d: (d / "ids.npy").unlink(), r"incomplete: ids.npy is missing"),
    "ids-truncated": (lambda d: _truncate(d / "ids.npy", -7), r"ids.npy is corrupt or truncated"),
    "ids-header-only": (lambda d: _truncate(d / "ids.npy", 20), r"ids.npy is corrupt or truncated"),
    "ids-garbage": (lambda d: (d / "ids.npy").write_bytes(b"not an npy file at all"), r"ids.npy is corrupt"),
    "ids-float": (lambda d: np.save(d / "ids.npy", np.zeros(32)), r"ids.npy must hold a 1-d int32 array"),
    "ids-pickle": (lambda d: np.save(d / "ids.npy", np.array([{"a": 1}], dtype=object)), r"ids.npy is corrupt"),
    "ids-out-of-range": (lambda d: np.save(d / "ids.npy", np.full(32, 99, np.int32)), r"inconsistent: ids must lie"),
    "offsets-decreasing": (
        lambda d: np.save(d / "offsets.npy", np.array([0, 9, 3, 20, 25, 30, 32], np.int64)),
        r"inconsistent: offsets must be non-decreasing",
    ),
    "cf-wrong-total": (lambda d: np.save(d / "cf.npy", np.ones(np.load(d / "cf.npy").shape, np.int64)), r"cf sums"),
    "vocab-missing": (lambda d: (d / "vocab.txt").unlink(), r"vocab.txt is missing"),
    "vocab-short": (lambda d: (d / "vocab.txt").write_text("a\nb\n"), r"vocab.txt has 2 lines"),
    "vocab-truncated": (lambda d: _truncate(d / "vocab.txt", -1), r"vocab.txt is truncated"),
    "vocab-binary": (lambda d: (d / "vocab.txt").write_bytes(b"\xff\xfe\n"), r"vocab.txt is corrupt"),
}


@pytest.mark.parametrize("breaker,pattern", list(BROKEN.values()), ids=list(BROKEN))
def test_broken_corpus(corpus, tmp_path, breaker, pattern):
    d = corpus.save(tmp_path / "c")
    assert corpus.n_docs == 6 and corpus.n_tokens == 32  # the breakers assume these sizes
    breaker(d)
    with pytest.raises(ValueError, match=pattern):
        text.Corpus.load(d, mmap=True)
    with pytest.raises(ValueError, match=pattern):
        text.Corpus.load(d, mmap=False)


def test_load_paths(tmp_path):
    with pytest.raises(FileNotFoundError):
        text.Corpus.load(tmp_path / "nope")
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="meta.json is missing"):
        text.Corpus.load(tmp_path / "file")
    with pytest.raises(ValueError, match="meta.json is missing"):
        text.Phrases.load(tmp_path)


def test_broken_models(corpus, tmp_path):
    p = text.Phrases(min_count=1, threshold=0.5).learn(corpus)
    d = p.save(tmp_path / "p")
    _edit_meta(d, threshold=-3)
    with pytest.raises(ValueError, match="invalid parameters.*threshold"):
        text.Phrases.load(d)
    d = p.save(tmp_path / "p2")
    np.save(d / "key_terms.npy", np.full(np.load(d / "key_terms.npy").shape, 10**6, np.int32))
    with pytest.raises(ValueError, match="key_terms outside the vocabulary"):
        text.Phrases.load(d)
    d = p.save(tmp_path / "p3")
    _truncate(d / "key_counts.npy", -3)
    with pytest.raises(ValueError, match="key_counts.npy is corrupt or truncated"):
        text.Phrases.load(d)
    with pytest.raises(ValueError, match="does not describe a pysynth.text.FrozenPhrases"):
        text.FrozenPhrases.load(p.save(tmp_path / "p4"))
    f = p.freeze().save(tmp_path / "f")
    (f / "phrases.txt").write_text("a\na\n" * 50)
    _edit_meta(f, n_phrases=100)
    np.save(f / "scores.npy", np.ones(100))
    with pytest.raises(ValueError, match="repeats a phrase"):
        text.FrozenPhrases.load(f)


def test_newline_cannot_be_saved(tmp_path):
    c = text.Corpus.from_tokens([["a\nb"]])
    with pytest.raises(ValueError, match="newline"):
        c.save(tmp_path / "c")
