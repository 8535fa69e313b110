"""Speed of the metrics stage against the reference tools, all measured in the same run.

Run from the repository root:

    python -m pytest bench/bench_metrics.py --benchmark-only --benchmark-json=/tmp/bench.json
    python bench/report.py /tmp/bench.json            # ratio tables (markdown)

Groups (one operation each; throughput = items per round / best round time):

rouge-short       ROUGE-1/2/L, no stemmer, 100k question-length pairs (real questions)
rouge-short-synthetic  the same on the synthetic questions of bench/_data.py (second row:
                  made-up ASCII words, ~10 tokens and 67 bytes per text vs 7.8 and 41)
rouge-short-stem  the same with the Porter stemmer
rouge-long        ROUGE-1/2/L, 10k pairs of 100-300 tokens
bleu-corpus       corpus BLEU-4, sacrebleu 13a, 100k sentences (1 reference each)
bleu-corpus-nltk  nltk corpus_bleu (split tokens) vs pysynth flavor="nltk"
bleu-corpus-coco  pycocoevalcap Bleu(4) vs pysynth flavor="coco"
bleu-sentence     sentence BLEU of each of the 100k pairs (sacrebleu defaults)

pysynth runs with workers=1 and workers=2 in every group (the scaling numbers). The
pure-Python tools are slow, so some run on the first N pairs of the same (shuffled)
workload, and the report compares per-item throughput: rouge-score on 10,000 short /
500 long pairs, the sacrebleu sentence loops on 10,000 pairs. Everything else runs on
the full workload.

Before a tool is timed its scores are checked: pysynth must equal rouge-score, sacrebleu,
nltk and pycocoevalcap exactly (assert). For rouge-rust and rouge-score-rs the agreement
with rouge-score (on the rouge-score subset) and with pysynth (on the full workload) is
recorded in the JSON (``extra_info.agreement``) and printed, never asserted.

Fairness notes: sacrebleu caches tokenized lines (``functools.lru_cache`` keyed by the
tokenizer object and the line); every string of the workload occurs once, and each
round gets a fresh ``BLEU`` object and cleared caches, so no round reuses a cached line.
nltk gets pre-split tokens and pycocoevalcap prebuilt dicts (untimed), while pysynth is
timed from raw strings (it tokenizes inside). rouge-rust's ``score_batch_flat`` is timed
without reading its columns back into Python lists. The Rust tools use
``RAYON_NUM_THREADS`` threads (1 unless set; see conftest.py).
"""
from __future__ import annotations

import os
import time

import numpy as np
import pytest

pytest.importorskip("pytest_benchmark")

import pysynth.metrics as M  # noqa: E402

TYPES = ("rouge1", "rouge2", "rougeL")
ATTRS = ("precision", "recall", "fmeasure")

SUB_ROUGE_SHORT = 10_000  # rouge-score (pure Python), short pairs
SUB_ROUGE_LONG = 500  # rouge-score on 100-300 token pairs (~120 pairs/s)
SUB_SENT = 10_000  # sacrebleu sentence-BLEU loops

ROUNDS_FAST = int(os.environ.get("BENCH_ROUNDS_FAST", 15))  # pysynth
ROUNDS_RUST = int(os.environ.get("BENCH_ROUNDS_RUST", 10))
ROUNDS_SLOW = int(os.environ.get("BENCH_ROUNDS_SLOW", 3))  # pure-Python tools


def _rayon_threads() -> int:
    return int(os.environ.get("RAYON_NUM_THREADS", "0") or 0)


def _busy_seconds():
    """Busy CPU seconds of the whole machine so far (all cores), from /proc/stat."""
    try:
        with open("/proc/stat", encoding="ascii") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = v[3] + (v[4] if len(v) > 4 else 0)  # idle + iowait
    return (sum(v[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _time(benchmark, fn, *, rounds, n, unit, tool, workers=None, setup=None, warmup=1, **info):
    benchmark.extra_info.update(
        {"tool": tool, "items": n, "unit": unit, "workers": workers, **info}
    )
    busy0, t0, self0 = _busy_seconds(), time.perf_counter(), os.times()
    if setup is not None:
        out = benchmark.pedantic(fn, setup=setup, rounds=rounds, iterations=1, warmup_rounds=warmup)
    else:
        out = benchmark.pedantic(fn, rounds=rounds, iterations=1, warmup_rounds=warmup)
    busy1, t1, self1 = _busy_seconds(), time.perf_counter(), os.times()
    if busy0 is not None and t1 > t0:
        mine = (self1.user - self0.user) + (self1.system - self0.system)
        # CPU used by *other* processes while this benchmark ran, in cores (0 = quiet machine)
        benchmark.extra_info["other_load_cores"] = round(max(0.0, (busy1 - busy0) - mine) / (t1 - t0), 2)
    return out


def _agreement(got: np.ndarray, want: np.ndarray) -> str:
    got, want = np.asarray(got, dtype=np.float64), np.asarray(want, dtype=np.float64)
    if got.shape != want.shape:
        return f"shape differs {got.shape} vs {want.shape}"
    if np.array_equal(got, want):
        return "exact"
    diff = np.abs(got - want)
    bad = int(np.count_nonzero(diff))
    if np.allclose(got, want, rtol=1e-9, atol=1e-12):
        return f"approx ({bad}/{got.size} values differ, max |diff| {diff.max():.3g})"
    return f"differs ({bad}/{got.size} values differ, max |diff| {diff.max():.3g})"


# ---------------------------------------------------------------------------- ROUGE


def _pysynth_rouge_matrix(scores) -> np.ndarray:
    """(types*attrs, n) matrix of a pysynth RougeScores."""
    return np.stack([getattr(scores[t], a) for t in TYPES for a in ATTRS])


def _rouge_score_matrix(results) -> np.ndarray:
    """(types*attrs, n) matrix of a list of rouge-score style {type: Score} dicts."""
    return np.array([[getattr(r[t], a) for r in results] for t in TYPES for a in ATTRS], dtype=np.float64)


def _fast_rouge_matrix(flat) -> np.ndarray:
    return np.array([getattr(flat, f"{t}_{a}") for t in TYPES for a in ATTRS], dtype=np.float64)


_REF_CACHE: dict = {}


def _rouge_score_reference(wl, n, stem):
    """rouge-score's scores on the first n pairs (computed once per session)."""
    key = ("rouge-score", wl.name, n, stem)
    if key not in _REF_CACHE:
        rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
        sc = rouge_scorer.RougeScorer(list(TYPES), use_stemmer=stem)
        res = [sc.score(target=r, prediction=h) for h, r in zip(wl.hyps[:n], wl.refs[:n])]
        _REF_CACHE[key] = _rouge_score_matrix(res)
    return _REF_CACHE[key]


def _pysynth_reference(wl, stem):
    key = ("pysynth", wl.name, stem)
    if key not in _REF_CACHE:
        _REF_CACHE[key] = _pysynth_rouge_matrix(M.rouge(wl.hyps, wl.refs, types=TYPES, stem=stem))
    return _REF_CACHE[key]


def _rouge_case(benchmark, wl, tool, stem, sub_rouge_score):
    """Check, then time, one ROUGE tool on workload wl."""
    n_all = len(wl)
    h, r = wl.hyps, wl.refs
    common = {"workload": wl.name, "source": wl.source, "stem": stem}
    if tool.startswith("pysynth"):
        workers = int(tool.split("-w")[1])
        want = _rouge_score_reference(wl, sub_rouge_score, stem)
        got = _pysynth_rouge_matrix(M.rouge(h, r, types=TYPES, stem=stem, workers=workers))
        assert np.array_equal(got[:, :sub_rouge_score], want), "pysynth != rouge-score"
        assert np.array_equal(got, _pysynth_reference(wl, stem)), "workers changed the scores"
        _time(
            benchmark, lambda: M.rouge(h, r, types=TYPES, stem=stem, workers=workers),
            rounds=ROUNDS_FAST, n=n_all, unit="pairs", tool="pysynth", workers=workers,
            agreement="exact (asserted vs rouge-score on the first %d pairs)" % sub_rouge_score, **common,
        )
    elif tool == "rouge-score":
        rouge_scorer = pytest.importorskip("rouge_score.rouge_scorer")
        want = _rouge_score_reference(wl, sub_rouge_score, stem)  # also warms up
        sc = rouge_scorer.RougeScorer(list(TYPES), use_stemmer=stem)
        hs, rs = h[:sub_rouge_score], r[:sub_rouge_score]
        out = _time(
            benchmark, lambda: [sc.score(target=b, prediction=a) for a, b in zip(hs, rs)],
            rounds=ROUNDS_SLOW, n=sub_rouge_score, unit="pairs", tool="rouge-score", workers=1,
            warmup=0, subset=sub_rouge_score, agreement="reference", **common,
        )
        assert np.array_equal(_rouge_score_matrix(out), want)
    elif tool == "rouge-rust":
        fast_rouge = pytest.importorskip("fast_rouge")
        if stem:
            pytest.skip("rouge-rust has no stemmer")
        want = _rouge_score_reference(wl, sub_rouge_score, stem)
        full = _fast_rouge_matrix(fast_rouge.score_batch_flat(r, h))
        agree = {
            "vs rouge-score": _agreement(full[:, :sub_rouge_score], want),
            "vs pysynth (full)": _agreement(full, _pysynth_reference(wl, stem)),
        }
        print(f"\nrouge-rust {wl.name}: {agree}")
        _time(
            benchmark, lambda: fast_rouge.score_batch_flat(r, h),
            rounds=ROUNDS_RUST, n=n_all, unit="pairs", tool="rouge-rust", workers=_rayon_threads(),
            threads=_rayon_threads(), agreement=agree, **common,
        )
    elif tool == "rouge-score-rs":
        rouge_score_rs = pytest.importorskip("rouge_score_rs")
        sc = rouge_score_rs.RougeScorer(list(TYPES), use_stemmer=stem)
        want = _rouge_score_reference(wl, sub_rouge_score, stem)
        full = _rouge_score_matrix(sc.score_batch(r, h))
        agree = {
            "vs rouge-score": _agreement(full[:, :sub_rouge_score], want),
            "vs pysynth (full)": _agreement(full, _pysynth_reference(wl, stem)),
        }
        print(f"\nrouge-score-rs {wl.name} stem={stem}: {agree}")
        _time(
            benchmark, lambda: sc.score_batch(r, h),
            rounds=ROUNDS_RUST, n=n_all, unit="pairs", tool="rouge-score-rs", workers=_rayon_threads(),
            threads=_rayon_threads(), agreement=agree, **common,
        )
    else:  # pragma: no cover
        raise AssertionError(tool)


ROUGE_TOOLS = ["pysynth-w1", "pysynth-w2", "rouge-score", "rouge-rust", "rouge-score-rs"]


@pytest.mark.benchmark(group="rouge-short")
@pytest.mark.parametrize("tool", ROUGE_TOOLS)
def test_rouge_short(benchmark, short_wl, tool):
    _rouge_case(benchmark, short_wl, tool, False, SUB_ROUGE_SHORT)


@pytest.fixture(scope="session")
def short_synthetic_wl():
    """The synthetic corpus of the same shape, whatever the shared data folder holds."""
    from _data import short_pairs

    return short_pairs(synthetic=True)


@pytest.mark.benchmark(group="rouge-short-synthetic")
@pytest.mark.parametrize("tool", ROUGE_TOOLS)
def test_rouge_short_synthetic(benchmark, short_synthetic_wl, tool):
    _rouge_case(benchmark, short_synthetic_wl, tool, False, SUB_ROUGE_SHORT)


@pytest.mark.benchmark(group="rouge-short-stem")
@pytest.mark.parametrize("tool", ["pysynth-w1", "pysynth-w2", "rouge-score", "rouge-score-rs", "rouge-rust"])
def test_rouge_short_stem(benchmark, short_wl, tool):
    _rouge_case(benchmark, short_wl, tool, True, SUB_ROUGE_SHORT)


@pytest.mark.benchmark(group="rouge-long")
@pytest.mark.parametrize("tool", ROUGE_TOOLS)
def test_rouge_long(benchmark, long_wl, tool):
    _rouge_case(benchmark, long_wl, tool, False, SUB_ROUGE_LONG)


# ----------------------------------------------------------------------------- BLEU


def _fresh_sacrebleu(**kw):
    """A new BLEU object with sacrebleu's tokenizer caches emptied (setup, untimed)."""
    from sacrebleu.metrics import BLEU
    from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a
    from sacrebleu.tokenizers.tokenizer_re import TokenizerRegexp

    Tokenizer13a.__call__.cache_clear()
    TokenizerRegexp.__call__.cache_clear()
    return BLEU(**kw)


@pytest.fixture(scope="session")
def sacrebleu_corpus_ref(short_wl):
    pytest.importorskip("sacrebleu")
    return _fresh_sacrebleu().corpus_score(short_wl.hyps, [short_wl.refs])


def _same_bleu(p, s):
    return (p.score == s.score and list(p.counts) == list(s.counts) and list(p.totals) == list(s.totals)
            and p.sys_len == s.sys_len and p.ref_len == s.ref_len)


@pytest.mark.benchmark(group="bleu-corpus")
@pytest.mark.parametrize("tool", ["pysynth-w1", "pysynth-w2", "sacrebleu"])
def test_bleu_corpus(benchmark, short_wl, sacrebleu_corpus_ref, tool):
    h, r, n = short_wl.hyps, short_wl.refs, len(short_wl)
    common = {"workload": short_wl.name, "source": short_wl.source, "tokenize": "13a"}
    if tool.startswith("pysynth"):
        w = int(tool.split("-w")[1])
        assert _same_bleu(M.corpus_bleu(h, r, tokenize="13a", workers=w), sacrebleu_corpus_ref)
        _time(benchmark, lambda: M.corpus_bleu(h, r, tokenize="13a", workers=w), rounds=ROUNDS_FAST,
              n=n, unit="sentences", tool="pysynth", workers=w, agreement="exact (asserted)", **common)
    else:
        out = _time(
            benchmark, lambda bleu: bleu.corpus_score(h, [r]),
            setup=lambda: ((_fresh_sacrebleu(),), {}), warmup=0,
            rounds=ROUNDS_SLOW, n=n, unit="sentences", tool="sacrebleu", workers=1, agreement="reference", **common,
        )
        assert out.score == sacrebleu_corpus_ref.score


@pytest.fixture(scope="session")
def nltk_inputs(short_wl):
    pytest.importorskip("nltk")
    return [[x.split()] for x in short_wl.refs], [x.split() for x in short_wl.hyps]


@pytest.mark.benchmark(group="bleu-corpus-nltk")
@pytest.mark.parametrize("tool", ["pysynth-w1", "pysynth-w2", "nltk"])
def test_bleu_corpus_nltk(benchmark, short_wl, nltk_inputs, tool):
    from nltk.translate.bleu_score import corpus_bleu as nltk_corpus_bleu

    h, r, n = short_wl.hyps, short_wl.refs, len(short_wl)
    refs_tok, hyps_tok = nltk_inputs
    key = ("nltk", n)
    if key not in _REF_CACHE:
        _REF_CACHE[key] = nltk_corpus_bleu(refs_tok, hyps_tok)
    want = _REF_CACHE[key]
    common = {"workload": short_wl.name, "source": short_wl.source, "flavor": "nltk"}
    if tool.startswith("pysynth"):
        w = int(tool.split("-w")[1])
        assert M.corpus_bleu(h, r, flavor="nltk", workers=w).score == want
        _time(benchmark, lambda: M.corpus_bleu(h, r, flavor="nltk", workers=w), rounds=ROUNDS_FAST,
              n=n, unit="sentences", tool="pysynth", workers=w, agreement="exact (asserted)", **common)
    else:
        out = _time(benchmark, lambda: nltk_corpus_bleu(refs_tok, hyps_tok), rounds=ROUNDS_SLOW, warmup=0,
                    n=n, unit="sentences", tool="nltk", workers=1, agreement="reference", **common)
        assert out == want


@pytest.fixture(scope="session")
def coco_inputs(short_wl):
    pytest.importorskip("pycocoevalcap")
    gts = {i: [x] for i, x in enumerate(short_wl.refs)}
    res = {i: [x] for i, x in enumerate(short_wl.hyps)}
    return gts, res


@pytest.mark.benchmark(group="bleu-corpus-coco")
@pytest.mark.parametrize("tool", ["pysynth-w1", "pysynth-w2", "pycocoevalcap"])
def test_bleu_corpus_coco(benchmark, short_wl, coco_inputs, tool):
    from pycocoevalcap.bleu.bleu import Bleu

    h, r, n = short_wl.hyps, short_wl.refs, len(short_wl)
    gts, res = coco_inputs
    key = ("coco", n)
    if key not in _REF_CACHE:
        _REF_CACHE[key] = Bleu(4).compute_score(gts, res, verbose=0)[0]
    want = _REF_CACHE[key]
    common = {"workload": short_wl.name, "source": short_wl.source, "flavor": "coco"}
    if tool.startswith("pysynth"):
        w = int(tool.split("-w")[1])
        assert list(M.corpus_bleu(h, r, flavor="coco", workers=w).bleu_n) == list(want)
        _time(benchmark, lambda: M.corpus_bleu(h, r, flavor="coco", workers=w), rounds=ROUNDS_FAST,
              n=n, unit="sentences", tool="pysynth", workers=w, agreement="exact (asserted)", **common)
    else:
        out = _time(benchmark, lambda: Bleu(4).compute_score(gts, res, verbose=0), rounds=ROUNDS_SLOW,
                    warmup=0, n=n, unit="sentences", tool="pycocoevalcap", workers=1, agreement="reference",
                    **common)
        assert list(out[0]) == list(want)


@pytest.fixture(scope="session")
def sacrebleu_sentence_ref(short_wl):
    pytest.importorskip("sacrebleu")
    bleu = _fresh_sacrebleu(effective_order=True)
    return np.array([bleu.sentence_score(a, [b]).score
                     for a, b in zip(short_wl.hyps[:SUB_SENT], short_wl.refs[:SUB_SENT])])


@pytest.mark.benchmark(group="bleu-sentence")
@pytest.mark.parametrize("tool", ["pysynth-w1", "pysynth-w2", "sacrebleu-BLEU.sentence_score", "sacrebleu.sentence_bleu"])
def test_bleu_sentence(benchmark, short_wl, sacrebleu_sentence_ref, tool):
    import sacrebleu

    h, r, n = short_wl.hyps, short_wl.refs, len(short_wl)
    hs, rs = h[:SUB_SENT], r[:SUB_SENT]
    common = {"workload": short_wl.name, "source": short_wl.source, "tokenize": "13a"}
    if tool.startswith("pysynth"):
        w = int(tool.split("-w")[1])
        got = M.sentence_bleu(h, r, workers=w)
        assert np.array_equal(got[:SUB_SENT], sacrebleu_sentence_ref), "pysynth != sacrebleu sentence_score"
        _time(benchmark, lambda: M.sentence_bleu(h, r, workers=w), rounds=ROUNDS_FAST, n=n,
              unit="sentences", tool="pysynth", workers=w,
              agreement="exact (asserted vs sacrebleu on the first %d)" % SUB_SENT, **common)
    elif tool == "sacrebleu-BLEU.sentence_score":
        # one fresh BLEU(effective_order=True) per round, reused for every sentence (the fast way)
        out = _time(
            benchmark, lambda bleu: [bleu.sentence_score(a, [b]).score for a, b in zip(hs, rs)],
            setup=lambda: ((_fresh_sacrebleu(effective_order=True),), {}), warmup=0,
            rounds=ROUNDS_SLOW, n=SUB_SENT, unit="sentences", tool="sacrebleu BLEU.sentence_score loop",
            workers=1, subset=SUB_SENT, agreement="reference", **common,
        )
        assert np.array_equal(np.array(out), sacrebleu_sentence_ref)
    else:
        # the documented one-call API: builds a BLEU object per sentence
        def setup():
            _fresh_sacrebleu()
            return (), {}

        out = _time(
            benchmark, lambda: [sacrebleu.sentence_bleu(a, [b]).score for a, b in zip(hs, rs)],
            setup=setup, warmup=0, rounds=ROUNDS_SLOW, n=SUB_SENT, unit="sentences",
            tool="sacrebleu.sentence_bleu loop", workers=1, subset=SUB_SENT, agreement="exact vs BLEU.sentence_score",
            **common,
        )
        assert np.array_equal(np.array(out), sacrebleu_sentence_ref)
