"""Exact parity with the reference tools, through golden tables computed by them.

rouge-score 0.1.2, rouge 0.3.2 (pltrdy), sacrebleu 2.6.0, nltk 3.10.4 and pycocoevalcap 1.2
produced ``tests/golden/metrics_golden.json.gz`` (see ``tests/golden/README.md``). Every
test runs once per backend (``impl`` fixture) and compares floats with ``==``.
"""
from __future__ import annotations

import numpy as np
import pytest

from pysynth import metrics as M


def _corpus(golden, name, n_refs=None):
    c = golden["corpora"][name]
    refs = c["refs"] if n_refs is None else c["refs"][:n_refs]
    return c["hyps"], refs


def test_rouge_tokens(golden, impl):
    for stem in (False, True):
        rows = [r for r in golden["rouge_tokens"] if r["stem"] == stem]
        got = M.tokenize([r["text"] for r in rows], "rouge-stem" if stem else "rouge")
        assert got == [r["tokens"] for r in rows]


def test_sacrebleu_tokens(golden, impl):
    for tok in ("13a", "intl"):
        table = golden["sacrebleu_tokens"][tok]
        # BLEU tokenizes text.rstrip(); *_rstrip lists the texts where that differs.
        fixed = golden["sacrebleu_tokens"].get(f"{tok}_rstrip", {})
        texts = sorted(table)
        got = M.tokenize(texts, tok)
        want = [fixed.get(t, table[t]).split() for t in texts]
        assert got == want


@pytest.mark.parametrize("idx", range(20))
def test_rouge_score(golden, impl, idx):
    if idx >= len(golden["rouge_score"]):
        pytest.skip("no such entry")
    e = golden["rouge_score"][idx]
    hyps, refs = _corpus(golden, e["corpus"])
    got = M.rouge(hyps, refs if e["multi"] else refs[0], types=e["types"], stem=e["stem"])
    for t in e["types"]:
        want = np.array(e["scores"][t], dtype=np.float64)
        s = got[t]
        assert np.array_equal(s.precision, want[:, 0]), t
        assert np.array_equal(s.recall, want[:, 1]), t
        assert np.array_equal(s.fmeasure, want[:, 2]), t


PLTRDY = {"rouge-1": "rouge1", "rouge-2": "rouge2", "rouge-l": "rougeL"}


def test_pltrdy(golden, impl):
    for e in golden["pltrdy"]:
        hyps, refs = _corpus(golden, e["corpus"])
        kw = dict(types=list(PLTRDY.values()), flavor="pltrdy", ignore_empty=e["ignore_empty"])
        if e["error"]:
            with pytest.raises(ValueError, match="no words"):
                M.rouge(hyps, refs[0], **kw)
        else:
            got = M.rouge(hyps, refs[0], **kw)
            for m, t in PLTRDY.items():
                want = np.array(e["per_segment"][m])
                assert np.array_equal(got[t].precision, want[:, 0]), (e["corpus"], m)
                assert np.array_equal(got[t].recall, want[:, 1]), (e["corpus"], m)
                assert np.array_equal(got[t].fmeasure, want[:, 2]), (e["corpus"], m)
            mean = got.mean()
            for m, t in PLTRDY.items():
                assert mean[t] == e["avg"][m], (e["corpus"], m)
        if e["ignore_empty"]:
            continue
        # Every segment alone: scores where the tool scores, ValueError where it raises.
        for i, (h, r) in enumerate(zip(hyps, refs[0])):
            ind = {m: e["per_segment_individual"][m][i] for m in PLTRDY}
            if i in e["segment_errors"]:
                with pytest.raises(ValueError):
                    M.rouge([h], [r], types=list(PLTRDY.values()), flavor="pltrdy")
                continue
            got = M.rouge([h], [r], types=list(PLTRDY.values()), flavor="pltrdy")
            for m, t in PLTRDY.items():
                assert [got[t].precision[0], got[t].recall[0], got[t].fmeasure[0]] == ind[m], (i, m)


def _bleu_kw(e):
    return dict(
        tokenize=e["tokenize"],
        smooth_method=e["smooth_method"],
        smooth_value=e["smooth_value"],
        lowercase=e["lowercase"],
        effective_order=e["effective_order"],
    )


def _subset(entries, impl):
    # The pure-Python twin is slow; it runs every 4th entry (the Hypothesis parity tests
    # compare the two backends on random inputs).
    return entries if impl == "cpp" else entries[::4]


def test_sacrebleu_corpus(golden, impl):
    for e in _subset(golden["sacrebleu_corpus"], impl):
        hyps, refs = _corpus(golden, e["corpus"], e["n_refs"])
        got = M.corpus_bleu(hyps, refs, **_bleu_kw(e))
        assert got.score == e["score"], e
        assert got.counts == e["counts"] and got.totals == e["totals"], e
        assert got.precisions == e["precisions"] and got.bp == e["bp"], e
        assert (got.sys_len, got.ref_len) == (e["sys_len"], e["ref_len"]), e


def test_sacrebleu_sentence(golden, impl):
    for e in _subset(golden["sacrebleu_sentence"], impl):
        hyps, refs = _corpus(golden, e["corpus"], e["n_refs"])
        got = M.sentence_bleu(hyps, refs, **_bleu_kw(e))
        assert np.array_equal(got, np.array(e["scores"])), e


def _nltk_refs(golden, e):
    return _corpus(golden, e["corpus"], e["n_refs"])


def test_nltk_corpus(golden, impl):
    for e in golden["nltk_corpus"]:
        hyps, refs = _nltk_refs(golden, e)
        if e["error"]:
            with pytest.raises(ValueError):
                M.corpus_bleu(hyps, refs, flavor="nltk", smooth_method=e["method"])
            continue
        got = M.corpus_bleu(hyps, refs, flavor="nltk", smooth_method=e["method"])
        assert got.score == e["score"], e


def test_nltk_sentence(golden, impl):
    for e in golden["nltk_sentence"]:
        hyps, refs = _nltk_refs(golden, e)
        errors = {int(k) for k in e["errors"]}
        ok = [i for i in range(len(hyps)) if i not in errors]
        got = M.sentence_bleu([hyps[i] for i in ok], [[s[i] for i in ok] for s in refs], flavor="nltk", smooth_method=e["method"])
        want = np.array([e["scores"][i] for i in ok], dtype=np.float64)
        assert np.array_equal(got, want), (e["corpus"], e["method"], e["n_refs"])
        for i in sorted(errors)[:3]:
            with pytest.raises(ValueError):
                M.sentence_bleu([hyps[i]], [[s[i]] for s in refs], flavor="nltk", smooth_method=e["method"])


def test_coco(golden, impl):
    for e in golden["coco"]:
        hyps, refs = _corpus(golden, e["corpus"], e["n_refs"])
        got = M.corpus_bleu(hyps, refs, flavor="coco")
        assert got.bleu_n == e["corpus_scores"], e["corpus"]
        want = np.array(e["sentence_scores"])
        for k in range(1, 5):
            s = M.sentence_bleu(hyps, refs, flavor="coco", max_order=k)
            assert np.array_equal(s, want[:, k - 1]), (e["corpus"], k)
