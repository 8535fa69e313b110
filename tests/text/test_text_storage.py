"""Save / load: round trips (memory-mapped or not), and broken directories -> ValueError."""
from __future__ import annotations

import json

import numpy as np
import pytest

from pysynth import store, text

from _stores import edit_meta, restamp_array, restamp_file, write_meta

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
    assert meta["arrays"]["offsets"]["shape"] == [corpus.n_docs + 1] and meta["meta"]["tokenizer"] == "rouge"
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
    edit_meta(d, owner=False, **changes)


def _truncate(path, keep):
    data = path.read_bytes()
    path.write_bytes(data[:keep] if keep >= 0 else data[:keep])


def _resave(name, fn):
    """Rewrite array ``name`` as ``fn(old)`` with a matching checksum (a consistent store
    holding wrong data): only the corpus's own checks can refuse it."""
    return lambda d: restamp_array(d, name, fn(np.load(d / f"{name}.npy")))


# Store-level damage (meta.json, sizes, checksums) and corpus-level inconsistency.
BROKEN = {
    "no-meta": (lambda d: (d / "meta.json").unlink(), r"meta.json is missing"),
    "meta-not-json": (lambda d: (d / "meta.json").write_text("{oops"), r"meta.json is corrupt"),
    "meta-list": (lambda d: (d / "meta.json").write_text("[1, 2]"), r"does not describe"),
    "other-format": (lambda d: _edit_meta(d, format="pysynth.text.Phrases"), r"does not describe"),
    "version-3": (lambda d: _edit_meta(d, format_version=3), r"format version 3.*reads version\(s\) 2.*rebuild"),
    "version-1-old-layout": (lambda d: _edit_meta(d, format_version=1), r"format version 1.*rebuild"),
    "version-missing": (lambda d: _edit_meta(d, format_version=None), r"format version None"),
    "arrays-not-object": (lambda d: _edit_meta(d, arrays=[1]), r"meta.json is corrupt or incomplete: 'arrays'"),
    "shape-not-int": (lambda d: _edit_meta(d, arrays=dict(json.loads((d / "meta.json").read_text())["arrays"],
                                                             ids={"dtype": "<i4", "shape": ["x"], "crc32": 0})),
                      r"meta.json is corrupt or incomplete"),
    "ids-not-recorded": (lambda d: _edit_meta(d, arrays={}), r"incomplete: array 'ids' is not in meta.json"),
    "ids-missing": (lambda d: (d / "ids.npy").unlink(), r"incomplete: ids.npy is missing"),
    "ids-truncated": (lambda d: _truncate(d / "ids.npy", -7), r"ids.npy (is truncated or corrupt|holds)"),
    "ids-header-only": (lambda d: _truncate(d / "ids.npy", 20), r"ids.npy is truncated or corrupt"),
    "ids-garbage": (lambda d: (d / "ids.npy").write_bytes(b"not an npy file at all"), r"ids.npy is truncated or corrupt"),
    "ids-float": (lambda d: np.save(d / "ids.npy", np.zeros(32)), r"ids.npy holds float64\[32\], expected int32\[32\]"),
    "ids-longer": (lambda d: np.save(d / "ids.npy", np.zeros(40, np.int32)), r"ids.npy holds int32\[40\], expected"),
    "ids-pickle": (lambda d: np.save(d / "ids.npy", np.array([{"a": 1}], dtype=object)), r"ids.npy is truncated or corrupt"),
    "ids-flipped": (lambda d: np.save(d / "ids.npy", np.full(32, 1, np.int32)), r"ids.npy is corrupt: its CRC-32"),
    "ids-out-of-range": (_resave("ids", lambda a: np.full(32, 99, np.int32)), r"inconsistent: ids must lie"),
    "offsets-decreasing": (
        _resave("offsets", lambda a: np.array([0, 9, 3, 20, 25, 30, 32], np.int64)),
        r"inconsistent: offsets must be non-decreasing",
    ),
    "offsets-end": (_resave("offsets", lambda a: np.array([0, 9, 13, 20, 25, 30], np.int64)),
                    r"inconsistent: offsets must end at len\(ids\) = 32"),
    "cf-wrong-total": (_resave("cf", lambda a: np.ones(a.shape, np.int64)), r"cf\.npy is inconsistent with ids\.npy: cf\[0\]"),
    "df-wrong": (_resave("df", lambda a: a + 1), r"df\.npy is inconsistent with ids\.npy: df\[0\]"),
    "vocab-missing": (lambda d: (d / "vocab.txt").unlink(), r"vocab.txt is missing"),
    "vocab-short": (lambda d: (d / "vocab.txt").write_text("a\nb\n"), r"vocab.txt is truncated or corrupt: 4 bytes"),
    "vocab-short-restamped": (lambda d: restamp_file(d, "vocab.txt", b"a\nb\n"),
                              r"vocab.txt has 2 lines; cf.npy has 20 entries"),
    "vocab-truncated": (lambda d: _truncate(d / "vocab.txt", -1), r"vocab.txt is truncated"),
    "vocab-edited": (lambda d: (d / "vocab.txt").write_bytes(b"X" + (d / "vocab.txt").read_bytes()[1:]),
                     r"vocab.txt is truncated or corrupt: its size/CRC-32"),
    "vocab-binary": (lambda d: restamp_file(d, "vocab.txt", b"\xff\xfe\n"), r"vocab.txt is corrupt"),
    "vocab-no-newline": (lambda d: restamp_file(d, "vocab.txt", b"a\nb"), r"vocab.txt is truncated \(no final newline"),
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
    edit_meta(d, threshold=-3)
    with pytest.raises(ValueError, match="invalid parameters.*threshold"):
        text.Phrases.load(d)
    edit_meta(d, threshold=0.5, min_reduce=None)
    with pytest.raises(ValueError, match="invalid parameters.*min_reduce"):
        text.Phrases.load(d)
    doc = json.loads((d / "meta.json").read_text())
    del doc["meta"]["scoring"]
    write_meta(d, doc)
    with pytest.raises(ValueError, match="invalid parameters: scoring missing"):
        text.Phrases.load(d)
    d = p.save(tmp_path / "p2")
    restamp_array(d, "key_terms", np.full(np.load(d / "key_terms.npy").shape, 10**6, np.int32))
    with pytest.raises(ValueError, match="key_terms outside the vocabulary"):
        text.Phrases.load(d)
    restamp_array(d, "key_offsets", np.load(d / "key_offsets.npy")[:-1])
    with pytest.raises(ValueError, match="inconsistent: key_offsets must increase"):
        text.Phrases.load(d)
    d = p.save(tmp_path / "p2b")
    restamp_file(d, "terms.txt", (d / "terms.txt").read_bytes() * 2)
    with pytest.raises(ValueError, match="terms.txt repeats a term"):
        text.Phrases.load(d)
    d = p.save(tmp_path / "p3")
    _truncate(d / "key_counts.npy", -3)
    with pytest.raises(ValueError, match="key_counts.npy (is truncated or corrupt|holds)"):
        text.Phrases.load(d)
    with pytest.raises(ValueError, match="does not describe a pysynth.text.FrozenPhrases"):
        text.FrozenPhrases.load(p.save(tmp_path / "p4"))
    f = p.freeze().save(tmp_path / "f")
    restamp_file(f, "phrases.txt", b"a\na\n" * 50)
    with pytest.raises(ValueError, match=r"phrases.txt has 100 lines; scores.npy has \d+ entries"):
        text.FrozenPhrases.load(f)
    restamp_array(f, "scores", np.ones(100))
    with pytest.raises(ValueError, match="phrases.txt repeats a phrase"):
        text.FrozenPhrases.load(f)
    f = p.freeze().save(tmp_path / "f2")
    edit_meta(f, scoring="cosine")
    with pytest.raises(ValueError, match="invalid parameters.*scoring"):
        text.FrozenPhrases.load(f)


def test_newline_cannot_be_saved(tmp_path):
    c = text.Corpus.from_tokens([["a\nb"]])
    with pytest.raises(ValueError, match="newline"):
        c.save(tmp_path / "c")


def test_save_is_atomic_and_refuses_foreign_directories(corpus, tmp_path, monkeypatch):
    d = corpus.save(tmp_path / "c")
    before = {p.name: p.read_bytes() for p in d.iterdir()}
    # a writer killed half-way leaves the old corpus whole
    monkeypatch.setattr(store, "lines_to_bytes", lambda *a, **k: (_ for _ in ()).throw(KeyboardInterrupt))
    with pytest.raises(KeyboardInterrupt):
        corpus.save(d)
    monkeypatch.undo()
    assert {p.name: p.read_bytes() for p in d.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["c"]
    text.Corpus.load(d)
    # a directory that is not a store is never replaced
    other = tmp_path / "mine"
    other.mkdir()
    (other / "notes.txt").write_text("keep me")
    with pytest.raises(ValueError, match="not a pysynth store: refusing to replace it"):
        corpus.save(other)
    assert (other / "notes.txt").read_text() == "keep me"
