"""Table 2 of Ding & Balog (2018), Sect. 7.1: K2Q systems scored on the seed set T0.

Rows: the two baselines of Sect. 6.5.1 (:class:`~pysynth.k2q.baselines.SdmBaseline`,
:class:`~pysynth.k2q.baselines.TemplateBaseline`), fitted on a keyword-question pairs file (the
synthetic training data), and any trained neural models (EDNet / AttNet / CopyNet model folders,
:class:`pysynth.models.generate.Generator`).  Every row is scored by
:func:`pysynth.k2q.neural.evaluate_t0`, the same code for all rows: every T0 keyword query is
mapped to one question and scored against the question it was written for -- ROUGE-L, ROUGE-1,
ROUGE-2 (mean F-measure of :func:`pysynth.metrics.rouge`, rouge-score flavor, no stemming) and
corpus BLEU (:func:`pysynth.metrics.corpus_bleu`, sacrebleu 13a, divided by 100); ``*_multi``:
all questions of the query's paraphrase cluster as references.  Neural models decode with beam
search (``beam``, best hypothesis).  Baseline outputs are normalised like the references
(``detokenize(tokenize(.))`` of :mod:`pysynth.models.vocab`: lower case, punctuation glued),
which is the form the neural models emit; only BLEU is case-sensitive.

Outputs in ``out_dir`` (each written to a temporary file and renamed): ``table2.md`` (our rows
beside the paper's), ``table2.json`` (all numbers, timings, settings) and
``table2_outputs.jsonl`` (per T0 pair: keywords, reference, each system's output).
"""
from __future__ import annotations

import json
import os
import re
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from pysynth import signature as _signature
from pysynth.io import atomic_write_text
from pysynth.pipelines.progress import say

__all__ = ["run_table2", "load_pairs", "PAPER_TABLE2"]

#: Table 2 of the paper: (ROUGE-L, ROUGE-1, ROUGE-2, BLEU) on its T0 (1,000 pairs).
PAPER_TABLE2: Dict[str, Tuple[float, float, float, float]] = {
    "SDM": (0.3650, 0.4123, 0.1940, 0.2780),
    "TBM": (0.4357, 0.5134, 0.2056, 0.2858),
    "EDNet": (0.4338, 0.5236, 0.2464, 0.3045),
    "AttNet": (0.4945, 0.5748, 0.2877, 0.3672),
    "CopyNet": (0.5115, 0.6074, 0.3026, 0.3718),
}
_CANON = {"sdm": "SDM", "tbm": "TBM", "ednet": "EDNet", "attnet": "AttNet", "copynet": "CopyNet"}
METRICS = ("rougeL", "rouge1", "rouge2", "bleu")


def load_pairs(path: os.PathLike) -> List[Tuple[str, str]]:
    """``(keywords, question)`` pairs of a JSONL file (``.gz`` ok) with str fields ``keywords`` and
    ``question`` per row (other fields are ignored).

    Raises
    ------
    ValueError
        a row lacks either field or holds a non-str, or the file has no rows.
    """
    from pysynth.k2q.data import read_jsonl

    out = []
    for i, r in enumerate(read_jsonl(path), 1):
        if not isinstance(r, dict) or not isinstance(r.get("keywords"), str) or not isinstance(r.get("question"), str):
            raise ValueError(f"{path}: row {i} needs str fields 'keywords' and 'question' "
                             f"(got {sorted(r) if isinstance(r, dict) else type(r).__name__})")
        out.append((r["keywords"], r["question"]))
    if not out:
        raise ValueError(f"{path}: no keyword-question pairs")
    return out


class _AllWords:
    def __contains__(self, word: object) -> bool:
        return True


class _FixedOutputs:
    """The part of the :class:`~pysynth.models.generate.Generator` interface that
    :func:`~pysynth.k2q.neural.evaluate_t0` uses, answering from precomputed outputs, so that the
    baselines are scored by exactly the code that scores the neural models.  Its vocabulary
    contains every word: which queries get an output is the baseline's decision."""

    vocab = SimpleNamespace(stoi=_AllWords())

    def __init__(self, outputs: Mapping[str, str]):
        self._outputs = outputs

    def generate(self, texts: Sequence[str], **_: Any) -> list:
        return [SimpleNamespace(texts=[self._outputs[t]] if self._outputs[t] else []) for t in texts]


def _row_name(name: str) -> str:
    return _CANON.get(name.lower(), name)


def _paper_row(name: str) -> Optional[str]:
    key = re.split(r"[-_ ]", name.lower(), maxsplit=1)[0]
    return _CANON.get(key) if _CANON.get(key) in PAPER_TABLE2 else None


def _metrics(res: dict) -> dict:
    return {k: v for k, v in res.items() if k != "hyps"}


def run_table2(
    pairs_path: os.PathLike,
    model_dirs: Optional[Mapping[str, os.PathLike]] = None,
    data: Optional[os.PathLike] = None,
    out_dir: Optional[os.PathLike] = None,
    beam: int = 5,
    *,
    baselines: Sequence[str] = ("sdm", "tbm"),
    limit: Optional[int] = None,
    workers: int = 1,
    seed: int = 0,
    backend: str = "torch",
    tbm_params: Optional[Mapping[str, Any]] = None,
    progress: bool = True,
    no_repeat_ngram: int = 3,
    no_stutter: bool = True,
) -> Dict[str, dict]:
    """Score SDM, TBM and the given neural models on T0; returns ``{row name: results}``.

    Parameters
    ----------
    pairs_path : JSONL keyword-question pairs the baselines learn from (:func:`load_pairs`).
    model_dirs : ``{name: model folder}``; names ``ednet`` / ``attnet`` / ``copynet`` become the
        paper's row names (EDNet, AttNet, CopyNet); other names are kept as given.
    data : the shared data folder (T0), default as :func:`pysynth.k2q.data.data_dir`.
    out_dir : where to write ``table2.md``, ``table2.json`` and ``table2_outputs.jsonl`` (None:
        nothing is written).
    beam : beam size of the neural models.
    baselines : which of ``"sdm"``, ``"tbm"`` to run.
    limit : score only the first ``limit`` T0 pairs (quick runs, tests).
    workers : threads for the baselines (outputs do not depend on it).
    seed : the TBM word2vec seed.
    backend : ``"torch"`` or ``"onnx"`` for the neural models.
    tbm_params : keyword arguments of :class:`~pysynth.k2q.baselines.TemplateBaseline`.
    no_repeat_ngram, no_stutter : the neural models' degenerate-output guards
        (:class:`pysynth.decoding.SearchConfig`; on by default); recorded in ``_meta`` and the
        signature only off their defaults.

    Returns
    -------
    dict
        Per row: ``rougeL``, ``rouge1``, ``rouge2``, ``bleu`` (and ``*_multi``), ``n``,
        ``n_empty`` (queries without an output), ``fit_s`` / ``generate_s`` (baselines) or
        ``generate_s`` (neural: decoding and scoring), ``paper`` (the paper's four numbers or
        None); key ``"_meta"``: settings, sizes and total time.
    """
    from pysynth.decoding.config import guard_changes
    from pysynth.k2q.baselines import SdmBaseline, TemplateBaseline
    from pysynth.k2q.data import load_seed_pairs
    from pysynth.k2q.neural import evaluate_t0
    from pysynth.models.vocab import detokenize, tokenize

    t_start = time.perf_counter()
    guards = guard_changes(no_repeat_ngram, no_stutter)
    unknown = [b for b in baselines if b not in ("sdm", "tbm")]
    if unknown:
        raise ValueError(f"baselines: unknown {unknown}; choose from 'sdm', 'tbm'")
    model_dirs = dict(model_dirs or {})
    for name, d in model_dirs.items():
        if not (Path(d) / "config.json").is_file():
            raise FileNotFoundError(f"model {name!r}: {d} is not a model folder (no config.json)")
    if limit is not None and (not isinstance(limit, int) or limit < 1):
        raise ValueError(f"limit must be a positive int or None, got {limit!r}")
    t0 = load_seed_pairs(data)
    if limit is not None:
        t0 = t0[:limit]
    train = load_pairs(pairs_path)
    kws = [p.keywords for p in t0]
    distinct = list(dict.fromkeys(kws))

    def log(msg: str) -> None:
        if progress:
            say(msg)

    results: Dict[str, dict] = {}
    outputs: Dict[str, List[str]] = {}
    for b in baselines:
        name = _row_name(b)
        t1 = time.perf_counter()
        if b == "sdm":
            model = SdmBaseline().fit(train, workers=workers)
        else:
            model = TemplateBaseline(**dict(tbm_params or {})).fit(train, seed=seed)
        t2 = time.perf_counter()
        gen = model.generate(distinct, workers=workers)
        t3 = time.perf_counter()
        fixed = {k: (detokenize(tokenize(h)) if h else "") for k, h in zip(distinct, gen)}
        res = evaluate_t0(_FixedOutputs(fixed), pairs=t0, beam=beam)
        outputs[name] = res["hyps"]
        results[name] = dict(_metrics(res), n_empty=sum(1 for h in res["hyps"] if not h),
                             fit_s=t2 - t1, generate_s=t3 - t2, model=repr(model))
        log(f"{name:<10} " + "  ".join(f"{m} {results[name][m]:.4f}" for m in METRICS)
            + f"  [fit {t2 - t1:.1f} s, generate {t3 - t2:.1f} s for {len(distinct)} queries]")
    for given, d in model_dirs.items():
        from pysynth.models.generate import Generator

        name = _row_name(given)
        t1 = time.perf_counter()
        gen = Generator.load(d, backend=backend)
        res = evaluate_t0(gen, pairs=t0, beam=beam, no_repeat_ngram=no_repeat_ngram, no_stutter=no_stutter)
        t2 = time.perf_counter()
        outputs[name] = res["hyps"]
        results[name] = dict(_metrics(res), n_empty=sum(1 for h in res["hyps"] if not h),
                             generate_s=t2 - t1, model_dir=str(d), backend=backend)
        log(f"{name:<10} " + "  ".join(f"{m} {results[name][m]:.4f}" for m in METRICS)
            + f"  [load + beam-{beam} decode + score {t2 - t1:.1f} s]")
    for name, r in results.items():
        p = _paper_row(name)
        r["paper"] = dict(zip(METRICS, PAPER_TABLE2[p])) if p else None
    meta = {
        "pairs": str(pairs_path), "train_pairs": len(train),
        "train_questions": len({q for _, q in train}), "t0_pairs": len(t0),
        "t0_distinct_queries": len(distinct), "beam": beam, "workers": workers, "seed": seed,
        "limit": limit, "backend": backend, **guards, "seconds": time.perf_counter() - t_start,
    }
    meta["signature"] = _signature.signature(
        "pysynth.k2q.table2", 1, {"beam": beam, "seed": seed, "limit": limit, "backend": backend,
                                  "models": {k: str(v) for k, v in dict(model_dirs or {}).items()},
                                  "baselines": list(baselines), **guards},
        {"train_pairs": len(train), "t0_pairs": len(t0),
         "sha256": _signature.fingerprint([list(p) for p in train], [[p.cluster_id, p.keywords, p.question] for p in t0])})
    if out_dir is not None:
        _write(Path(out_dir), results, meta, t0, outputs)
    results["_meta"] = meta
    return results


def _write(out: Path, results: Dict[str, dict], meta: dict, t0: list, outputs: Dict[str, List[str]]) -> None:
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "table2.json", json.dumps({"meta": meta, "rows": results}, indent=1) + "\n")
    lines = [
        (f"Table 2 (Ding & Balog 2018) on {meta['t0_pairs']} T0 pairs; baselines fitted on "
         f"{meta['train_pairs']:,} pairs from `{meta['pairs']}`; neural models: beam {meta['beam']}."),
        "",
        ("| method | ROUGE-L | ROUGE-1 | ROUGE-2 | BLEU | paper ROUGE-L | paper ROUGE-1 | paper ROUGE-2 "
         "| paper BLEU | empty outputs | fit s | generate s |"),
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for name, r in results.items():
        paper = r["paper"] or {}
        ours = " | ".join(f"{r[m]:.4f}" for m in METRICS)
        theirs = " | ".join(f"{paper[m]:.4f}" if paper else "-" for m in METRICS)
        fit = f"{r['fit_s']:.2f}" if "fit_s" in r else "-"
        lines.append(f"| {name} | {ours} | {theirs} | {r['n_empty']} | {fit} | {r['generate_s']:.2f} |")
    atomic_write_text(out / "table2.md", "\n".join(lines) + "\n")
    rows = []
    for i, p in enumerate(t0):
        rows.append(json.dumps({"cluster_id": p.cluster_id, "keywords": p.keywords, "question": p.question,
                                "outputs": {name: hyps[i] for name, hyps in outputs.items()}},
                               ensure_ascii=False))
    atomic_write_text(out / "table2_outputs.jsonl", "\n".join(rows) + "\n")
