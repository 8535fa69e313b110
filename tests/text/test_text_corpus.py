"""Corpus building: both backends agree (Hypothesis), match an obvious oracle, and do not
depend on the number of threads; the Corpus API."""
from __future__ import annotations

import random
import re
from collections import Counter

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pysynth import _dispatch, text
from pysynth._dispatch import backend

from _parity import run_all


def has_cpp() -> bool:
    return "cpp" in _dispatch.available("text")

# Characters that stress both tokenizers: case, digits, apostrophes, punctuation, Python
# whitespace (NBSP, U+2028, \x1c, \x85, U+3000), the two non-ASCII letters whose lower case
# is ASCII (U+0130, Kelvin sign), other letters, and underscores.
ALPHABET = "aAbBzZ09 _'-?.,\t\n\u00a0\u2028\x1c\x85\u3000\u0130\u212a\u00e9\u00df\u4e2d"
texts_st = st.lists(st.text(alphabet=ALPHABET, max_size=25), max_size=12)


def oracle(texts, tokenizer):
    toks = [
        re.findall("[a-z0-9]+", t.lower()) if tokenizer == "rouge" else t.split() for t in texts
    ]
    cf = Counter(t for d in toks for t in d)
    df = Counter(t for d in toks for t in set(d))
    vocab = sorted(cf, key=lambda t: (-cf[t], t))
    return toks, vocab, [cf[t] for t in vocab], [df[t] for t in vocab]


@settings(max_examples=150, deadline=None)
@given(texts=texts_st, tokenizer=st.sampled_from(text.TOKENIZERS), workers=st.sampled_from([1, 2, 3]))
def test_build_corpus_parity_and_oracle(texts, tokenizer, workers):
    out = run_all("text", lambda: backend("text").build_corpus(texts, tokenizer, workers))
    ids, offsets, cf, df, vocab = out
    toks, o_vocab, o_cf, o_df = oracle(texts, tokenizer)
    assert vocab == o_vocab
    assert cf.tolist() == o_cf and df.tolist() == o_df
    assert ids.dtype == np.int32 and offsets.dtype == np.int64 and cf.dtype == np.int64
    assert [[vocab[t] for t in ids[offsets[i] : offsets[i + 1]]] for i in range(len(texts))] == toks
    assert run_all("text", lambda: backend("text").tokenize(texts, tokenizer, workers)) == toks


def _zipf_texts(n_docs, seed, vocab_size=3000, extra=()):
    rng = random.Random(seed)
    words = [f"w{i}" for i in range(vocab_size)] + list(extra)
    weights = [1.0 / (i + 1) for i in range(len(words))]
    return [" ".join(rng.choices(words, weights, k=rng.randint(0, 14))) for _ in range(n_docs)]


@pytest.mark.skipif(not has_cpp(), reason="compiled extension not built")
def test_threads_do_not_change_results():
    """Large enough for several chunks (2048 questions) and the owner-partitioned counting."""
    texts = _zipf_texts(12000, 0)
    core = _dispatch.available("text")["cpp"]
    ref = core.build_corpus(texts, "rouge", 1)
    for w in (2, 3, 5, -1):
        got = core.build_corpus(texts, "rouge", w)
        for a, b in zip(ref[:4], got[:4]):
            assert np.array_equal(a, b)
        assert ref[4] == got[4]
    twin = _dispatch.available("text")["python"].build_corpus(texts, "rouge", 1)
    for a, b in zip(ref[:4], twin[:4]):
        assert np.array_equal(a, b)
    assert ref[4] == twin[4]


def test_corpus_api(text_impl):
    c = text.build_corpus(["Who is the author of the Pooh?", "who is winnie the pooh's creator", "..."])
    assert c.n_docs == 3 == len(c)
    assert c.n_tokens == int(c.cf.sum()) == 14
    assert c.n_terms == len(c.vocab) == len(c.cf) == len(c.df)
    assert c.vocab[:4] == ["the", "is", "pooh", "who"]  # cf 3, then cf 2 alphabetically
    assert c.cf[:4].tolist() == [3, 2, 2, 2] and c.df[:4].tolist() == [2, 2, 2, 2]
    assert c.doc_terms(1) == ["who", "is", "winnie", "the", "pooh", "s", "creator"]
    assert c.doc_terms(-1) == [] and c.doc(2).size == 0
    assert c.term_id("pooh") == 2 and c.get_id("piglet") == -1
    with pytest.raises(KeyError, match="piglet"):
        c.term_id("piglet")
    with pytest.raises(IndexError):
        c.doc(3)
    assert c.decode(c.doc(0)) == c.doc_terms(0)
    assert list(c.sentences()) == [c.doc_terms(i) for i in range(3)]
    assert c.lengths().tolist() == [7, 7, 0]
    assert c.tokenizer == "rouge" and "n_docs=3" in repr(c)


def test_from_tokens(text_impl):
    sents = [["new", "york", "city"], [], ["new", "york"], ["a b", "c"]]  # "a b": a space inside
    c = text.Corpus.from_tokens(sents)
    assert list(c.sentences()) == sents
    assert c.vocab == ["new", "york", "a b", "c", "city"]
    simple = text.Corpus.from_tokens(sents[:3])
    assert list(simple.sentences()) == sents[:3]


def test_corpus_validation():
    with pytest.raises(ValueError, match="offsets"):
        text.Corpus([0, 1], [0, 1], [1, 1], [1, 1], ["a", "b"])
    with pytest.raises(ValueError, match="ids"):
        text.Corpus([0, 5], [0, 2], [1, 1], [1, 1], ["a", "b"])
    with pytest.raises(ValueError, match="cf and df"):
        text.Corpus([0, 1], [0, 2], [1], [1, 1], ["a", "b"])
    with pytest.raises(TypeError, match="ids"):
        text.Corpus([0.5], [0, 1], [1], [1], ["a"])
    with pytest.raises(ValueError, match="'a' is repeated"):
        text.Corpus([0, 1], [0, 2], [1, 1], [1, 1], ["a", "a"])


@pytest.mark.skipif(not has_cpp(), reason="compiled backend not built")
def test_tokenize_many_rows_any_workers():
    # > 65,536 tokens: rows filled on worker threads from one str per distinct token
    rng = random.Random(3)
    words = ["New", "york", "ÜNÏCODE", "straße", "日本語", "what's", "2004", "crf-230", "x" * 40]
    words += [f"w{k}" for k in range(200)]
    texts = ["" if rng.random() < 0.05 else " ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) for _ in range(15_000)]
    for tokenizer in text.TOKENIZERS:
        want = run_all("text", lambda: backend("text").tokenize(texts, tokenizer, 1))
        assert want == oracle(texts, tokenizer)[0]
        for w in (2, 3, -1):
            assert backend("text").tokenize(texts, tokenizer, w) == want


@pytest.mark.skipif(not has_cpp(), reason="compiled backend not built")
@pytest.mark.parametrize("n", [1, 2047, 2048, 2049, 4096, 6145])
def test_tokenize_pipelined_rows_at_chunk_edges(n):
    # workers > 1: the calling thread makes the row lists of each finished 2,048-row chunk
    # while the other workers tokenize; every row, empty ones included, must come out once
    texts = ["" if i % 7 == 0 else f"Row {i} what's up, w{i % 13}" for i in range(n)]
    want = backend("text").tokenize(texts, "rouge", 1)
    for w in (2, 3):
        assert backend("text").tokenize(texts, "rouge", w) == want
    assert want[-1] == ([] if (n - 1) % 7 == 0 else ["row", str(n - 1), "what", "s", "up", f"w{(n - 1) % 13}"])


@pytest.mark.parametrize("enabled", [True, False])
def test_tokenize_restores_gc_state(enabled):
    # the compiled tokenize pauses the cyclic GC while it makes the rows; the caller's state
    # must come back, and rows must still equal the twin's (shared str objects are equal str)
    import gc

    texts = ["How fast is a 2004 Honda CRF-230?", "", "who is who", "Ünïcode straße"] * 50
    was = gc.isenabled()
    try:
        (gc.enable if enabled else gc.disable)()
        out = run_all("text", text.tokenize, texts, workers=2)
        assert gc.isenabled() == enabled
    finally:
        (gc.enable if was else gc.disable)()
    assert out[0] == ["how", "fast", "is", "a", "2004", "honda", "crf", "230"]
