"""pysynth.text.Phrases / FrozenPhrases against gensim 4.4.0 (tests/golden/phrases_gensim.json.gz).

Everything is compared exactly: the phrase vocabulary (size, corpus word count, a sha256 of all
(key, count) pairs, min_reduce), the exported phrase table with its float scores (``==``: both
sides run the same IEEE double operations as gensim, in the same order, and ``log`` is the C
library's in both Python and C++), and the transformed sentences of the unfrozen and frozen
models on training and held-out questions. The compiled backend checks every setting; the
pure-Python twin (slower) checks four settings that cover both scorers, connector words,
pruning and another delimiter, plus the toy two-pass run (the paper's honda_crf_230).
"""
from __future__ import annotations

import hashlib
import json
import re

import pytest

from pysynth import _dispatch, text

PY_SETTINGS = {"low", "npmi_connectors", "pruned", "delimiter"}
PY_TWO_PASS = {"toy_two_pass"}
SETTINGS = [
    "gensim_defaults", "low", "high_min_count", "npmi", "npmi_negative", "connectors",
    "npmi_connectors", "pruned", "delimiter",
]
TWO_PASS = ["two_pass", "two_pass_defaults", "toy_two_pass"]


def _impls(names_for_python, name):
    out = []
    for impl in ("cpp", "python"):
        marks = []
        if impl == "python" and name not in names_for_python:
            continue
        out.append(pytest.param(impl, name, id=f"{impl}-{name}", marks=marks))
    return out


def _force(impl):
    if impl not in _dispatch.available("text"):
        pytest.skip("compiled extension not built")
    return _dispatch.force(impl, "text")


def _params(p):
    p = dict(p)
    if p.get("connector_words") == "connectors":
        p["connector_words"] = text.ENGLISH_CONNECTOR_WORDS
    return p


def _digest(counts):
    blob = json.dumps(sorted(counts.items()), ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()


def _check_model(model, expected, corpus, sample, heldout_corpus):
    assert model.corpus_word_count == expected["corpus_word_count"]
    assert model.n_keys == expected["len_vocab"]
    assert model.min_reduce == expected["min_reduce"]
    assert _digest(model.counts()) == expected["vocab_sha256"]
    table = model.export_phrases()
    assert table == dict(map(tuple, expected["phrasegrams"]))  # exact float equality
    frozen = model.freeze()
    assert frozen.phrasegrams == table
    out = model.apply(corpus)
    assert [out.doc_terms(i) for i in sample] == expected["sample"]
    # one sentence at a time (gensim's loop over the counts dict / the phrase table)
    assert [model[corpus.doc_terms(i)] for i in sample[:60]] == expected["sample"][:60]
    assert [frozen[corpus.doc_terms(i)] for i in sample[:60]] == expected["sample_frozen"][:60]
    fout = frozen.apply(corpus)
    assert [fout.doc_terms(i) for i in sample] == expected["sample_frozen"]
    held = model.apply(heldout_corpus)
    assert list(held.sentences()) == expected["heldout"]
    held_f = frozen.apply(heldout_corpus)
    assert list(held_f.sentences()) == expected["heldout_frozen"]
    return frozen


@pytest.fixture(scope="module")
def corpora(phrases_golden):
    g = phrases_golden
    return {
        "train": text.build_corpus(g["texts"]),
        "toy": text.build_corpus(g["toy_texts"]),
        "heldout": text.Corpus.from_tokens(text.tokenize(g["heldout_texts"])),
    }


def test_tokenizer_matches_golden_script(phrases_golden):
    g = phrases_golden
    texts = g["texts"][::50] + g["heldout_texts"] + g["toy_texts"]
    expected = [re.findall("[a-z0-9]+", t.lower()) for t in texts]
    for impl in _dispatch.available("text"):
        with _dispatch.force(impl, "text"):
            assert text.tokenize(texts) == expected


def test_connector_words_match_gensim(phrases_golden):
    assert sorted(text.ENGLISH_CONNECTOR_WORDS) == phrases_golden["english_connector_words"]


@pytest.mark.parametrize("impl,name", [p for n in SETTINGS for p in _impls(PY_SETTINGS, n)])
def test_setting(impl, name, phrases_golden, corpora):
    g = phrases_golden
    expected = g["settings"][name]
    with _force(impl):
        model = text.Phrases(**_params(expected["params"])).learn(corpora["train"])
        _check_model(model, expected, corpora["train"], g["sample"], corpora["heldout"])


@pytest.mark.parametrize("impl,name", [p for n in TWO_PASS for p in _impls(PY_TWO_PASS, n)])
def test_two_pass(impl, name, phrases_golden, corpora):
    g = phrases_golden
    entry = g["two_pass"][name]
    params = _params(entry["params"])
    corpus = corpora[entry["corpus"]]
    idx = g["sample"] if entry["corpus"] == "train" else list(range(corpus.n_docs))
    with _force(impl):
        bigram = text.Phrases(**params).learn(corpus)
        for mode in ("unfrozen", "frozen"):
            desc = entry[mode]
            first = bigram if mode == "unfrozen" else bigram.freeze()
            pass1 = first.apply(corpus)
            assert [pass1.doc_terms(i) for i in idx] == desc["pass1_sample"]
            trigram = text.Phrases(**params).learn(pass1)
            frozen = _check_model(trigram, desc, pass1, idx, first.apply(corpora["heldout"]))
            second = trigram if mode == "unfrozen" else frozen
            final = second.apply(pass1)
            assert [final.doc_terms(i) for i in idx] == desc["final_sample"]


def test_paper_example_honda_crf_230(phrases_golden, corpora):
    """Ding & Balog 2018, Sect. 3.1.4: two passes turn "honda crf 230" into one term."""
    out, models = text.phrase_passes(corpora["toy"], passes=2, **_params(phrases_golden["two_pass"]["toy_two_pass"]["params"]))
    assert out.doc_terms(0) == ["how", "fast", "is", "a", "2004", "honda_crf_230"]
    assert "honda_crf_230" in models[1].phrasegrams
    assert "honda_crf_230" in out.vocab and "crf" not in out.vocab
