"""The Table 1 protocol of Ding & Balog (2018), Sect. 6.4: keyword query generation quality.

For each of the 12 configurations (3 term selection strategies x baseline / +phrases /
paraphrase / paraphrase+phrases) the keyword query generation model produces one keyword
query per T0 question; it is scored against the keyword queries K_q of the question's
paraphrase cluster with AvgRougeL and MaxRougeL (Eq. 17-18). Parameters are chosen by a
grid search (lambda in 0.1..0.9; alpha in 0.1..0.9, beta in 0.1..1-alpha; step 0.1) inside
5-fold cross-validation by cluster: P(s) and the parameters come from the 4 training folds,
the scores from the held-out fold. Everything is repeated R times (R candidates per question
in one call: the counter-based generator makes each repeat an independent draw).
"""
from __future__ import annotations

import csv
import json
import logging
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

import numpy as np

from pysynth import metrics, sampling
from pysynth import signature as _signature
from pysynth.io import atomic_write_text
from pysynth.k2q.data import load_question_set, load_seed_pairs, seed_clusters
from pysynth.k2q.keywords import KeywordGenerator
from pysynth.pipelines.progress import say

__all__ = ["run_table1", "PAPER_TABLE1", "grid"]

STRATEGIES = ("popular", "discriminative", "combination")
VARIANTS = ("baseline", "baseline+phrases", "paraphrase", "paraphrase+phrases")

#: Paper's Table 1 (AvgRougeL, MaxRougeL); rows as extracted from the paper text.
PAPER_TABLE1: Dict[str, tuple] = {}


def grid(model: str) -> List[Dict[str, float]]:
    """The paper's parameter grid (Sect. 6.1)."""
    if model == "baseline":
        return [{"lam": round(0.1 * i, 1)} for i in range(1, 10)]
    out = []
    for i in range(1, 10):
        a = round(0.1 * i, 1)
        for j in range(1, 10 - i + 1):
            out.append({"alpha": a, "beta": round(0.1 * j, 1)})
    return out


def _folds(clusters: Sequence[str], k: int, rng: np.random.Generator) -> List[List[str]]:
    order = list(clusters)
    rng.shuffle(order)
    return [order[f::k] for f in range(k)]


def run_table1(
    repeats: int = 10,
    folds: int = 5,
    seed: int = 0,
    workers: int = 1,
    data: Optional[str] = None,
    out_dir: Optional[str] = None,
    strategies: Sequence[str] = STRATEGIES,
    variants: Sequence[str] = VARIANTS,
    progress: bool = True,
) -> Dict[str, dict]:
    """Run the protocol; returns ``{row name: results}`` and writes files to ``out_dir``.

    Results per row: ``avg``/``max`` (mean AvgRougeL/MaxRougeL over questions and repeats),
    ``avg_std``/``max_std`` (standard deviation over questions of their repeat-averaged
    scores, the paper's parenthesised numbers), ``avg_std_repeats`` (over repeats of the
    corpus mean), the chosen parameters per fold, and the grid curve (Fig. 6).
    """
    t_start = time.perf_counter()
    pairs = load_seed_pairs(data)
    by_cluster = seed_clusters(pairs)
    qset = load_question_set(data, exclude_clusters=set(by_cluster))
    corpus_groups = [None if c < 0 else qset.cluster_names[c] for c in qset.cluster]
    questions = [p.question for p in pairs]
    groups = [p.cluster_id for p in pairs]
    ref_sets = [[pairs[j].keywords for j in by_cluster[p.cluster_id]] for p in pairs]
    rng = np.random.default_rng(seed)
    fold_clusters = _folds(list(by_cluster), folds, rng)
    fold_of_cluster = {c: f for f, cs in enumerate(fold_clusters) for c in cs}
    fold = np.array([fold_of_cluster[g] for g in groups])

    gens = {}
    for phrases in sorted({("phrases" in v) for v in variants}):
        gens[phrases] = KeywordGenerator(qset.questions, questions, corpus_groups, groups,
                                         phrases=phrases, workers=workers)
    n = len(pairs)
    hyps_refs = [r for r in ref_sets for _ in range(repeats)]
    results: Dict[str, dict] = {}
    for strategy in strategies:
        for variant in variants:
            name = f"{strategy} / {variant}"
            model_kind = "paraphrase" if variant.startswith("paraphrase") else "baseline"
            gen = gens["phrases" in variant]
            params = grid(model_kind)
            t0 = time.perf_counter()
            # avg_score[f][p] = per (question, repeat) scores with fold f's P(s) and params p
            test_avg = np.zeros((n, repeats))
            test_max = np.zeros((n, repeats))
            chosen = []
            curve = np.zeros((len(params), 2))
            for f in range(folds):
                train = fold != f
                ps = sampling.estimate_length_dist([pairs[i].keywords for i in np.flatnonzero(train)])
                best, best_score, best_scores = None, -1.0, None
                for pi, p in enumerate(params):
                    model = sampling.KeywordModel(model=model_kind, strategy=strategy, length_dist=ps, **p)
                    cands = gen.generate_ids(model, m=repeats, seed=seed, workers=workers)
                    kw = gen.decode(cands)
                    avg, mx = metrics.avg_max_rouge_l(kw, hyps_refs, workers=workers)
                    avg = avg.reshape(n, repeats)
                    mx = mx.reshape(n, repeats)
                    score = float(avg[train].mean())
                    curve[pi] += (avg[~train].sum(), mx[~train].sum())
                    if score > best_score:
                        best, best_score, best_scores = p, score, (avg, mx)
                chosen.append(best)
                test_avg[~train] = best_scores[0][~train]
                test_max[~train] = best_scores[1][~train]
            curve /= n * repeats
            q_avg, q_max = test_avg.mean(axis=1), test_max.mean(axis=1)
            results[name] = {
                "strategy": strategy,
                "variant": variant,
                "avg": float(test_avg.mean()),
                "max": float(test_max.mean()),
                "avg_std": float(q_avg.std()),
                "max_std": float(q_max.std()),
                "avg_std_repeats": float(test_avg.mean(axis=0).std()),
                "max_std_repeats": float(test_max.mean(axis=0).std()),
                "chosen": chosen,
                "grid": [dict(p, avg=float(c[0]), max=float(c[1])) for p, c in zip(params, curve)],
                "seconds": time.perf_counter() - t0,
            }
            if progress:
                r = results[name]
                say(f"{name:<40} AvgRougeL {r['avg']:.4f} ({r['avg_std']:.4f})  MaxRougeL {r['max']:.4f} "
                    f"({r['max_std']:.4f})  [{r['seconds']:.1f} s; params {chosen}]")
    total = time.perf_counter() - t_start
    meta = {"repeats": repeats, "folds": folds, "seed": seed, "workers": workers, "questions": n,
            "clusters": len(by_cluster), "corpus_questions": len(qset), "seconds": total}
    meta["signature"] = _signature.signature(
        "pysynth.k2q.table1", 1, {"repeats": repeats, "folds": folds, "seed": seed},
        {"t0_pairs": n, "sha256": _signature.fingerprint([[p.cluster_id, p.keywords, p.question] for p in pairs])})
    if out_dir:
        _write(Path(out_dir), results, meta)
    results["_meta"] = meta
    return results


def _write(out: Path, results: Dict[str, dict], meta: dict) -> None:
    out.mkdir(parents=True, exist_ok=True)
    atomic_write_text(out / "table1.json", json.dumps({"meta": meta, "rows": results}, indent=1))
    lines = ["| strategy | model | AvgRougeL (std) | MaxRougeL (std) | chosen parameters per fold |", "|---|---|---|---|---|"]
    for r in results.values():
        lines.append(f"| {r['strategy']} | {r['variant']} | {r['avg']:.4f} ({r['avg_std']:.4f}) | "
                     f"{r['max']:.4f} ({r['max_std']:.4f}) | {r['chosen']} |")
    atomic_write_text(out / "table1.md", "\n".join(lines) + "\n")
    with open(out / "fig6_grid.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["row", "lam", "alpha", "beta", "avg_rouge_l", "max_rouge_l"])
        for name, r in results.items():
            for g in r["grid"]:
                w.writerow([name, g.get("lam", ""), g.get("alpha", ""), g.get("beta", ""), g["avg"], g["max"]])
    _plot(out / "fig6.png", results)


def _plot(path: Path, results: Dict[str, dict]) -> None:
    """Fig. 6: AvgRougeL/MaxRougeL as lambda (baseline) and alpha, beta (paraphrase) vary."""
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        logging.getLogger(__name__).warning("matplotlib is not installed (pip install '.[plot]'): wrote the grid "
                                            "to %s only", path.with_name("fig6_grid.csv"))
        return
    fig, axes = plt.subplots(1, 4, figsize=(18, 4))
    for r in results.values():
        if r["variant"] == "baseline":
            xs = [g["lam"] for g in r["grid"]]
            axes[0].plot(xs, [g["avg"] for g in r["grid"]], marker="o", label=r["strategy"])
            axes[1].plot(xs, [g["max"] for g in r["grid"]], marker="o", label=r["strategy"])
        if r["variant"] == "paraphrase" and r["strategy"] == "combination":
            for a in sorted({g["alpha"] for g in r["grid"]}):
                gs = [g for g in r["grid"] if g["alpha"] == a]
                axes[2].plot([g["beta"] for g in gs], [g["avg"] for g in gs], marker=".", label=f"alpha={a}")
                axes[3].plot([g["beta"] for g in gs], [g["max"] for g in gs], marker=".", label=f"alpha={a}")
    for ax, title, xl in zip(axes, ["(a) baseline AvgRougeL", "(b) baseline MaxRougeL",
                                    "(c) paraphrase (combination) AvgRougeL", "(d) paraphrase (combination) MaxRougeL"],
                             ["lambda", "lambda", "beta", "beta"]):
        ax.set_title(title)
        ax.set_xlabel(xl)
        ax.grid(alpha=0.3)
        if ax.get_legend_handles_labels()[0]:
            ax.legend(fontsize=6)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
