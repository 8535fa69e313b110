"""Extractive titles for DQG, chosen on four Stack Exchange sites and scored on the fifth
(bench/RESULTS_generators.md, "Extractive titles"): for each site in turn, the ``max_words`` /
``fallback_words`` of :func:`pysynth.dup.dqg.rule_title` (the session-9 rule) with the best corpus BLEU on the other
four sites (questions pooled; the criterion: corpus BLEU + ROUGE-L, so that short, precise but
incomplete titles do not win on BLEU's precision alone), then BLEU / ROUGE-L of those titles and of lead-12 (the body's first
12 words) on the held-out site. BLEU = sacrebleu lower-cased corpus BLEU as in ``dup evaluate-dqg``.

    python experiments/dqg_extract.py [--data DIR]     # DIR: stackexchange_dumps (default: ../shared)
"""
from __future__ import annotations

import argparse
import itertools
import json


def main() -> None:
    from pysynth import metrics
    from pysynth.data import shared_dir
    from pysynth.dup.dqg import rule_title
    from pysynth.dup.prep import questions

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=None)
    a = p.parse_args()
    root = shared_dir(a.data) / "stackexchange_dumps"
    sites = sorted(d.name for d in root.iterdir() if d.is_dir())
    rows = {s: questions(root / s).rows for s in sites}
    grid = list(itertools.product(range(10, 21), range(4, 15)))
    memo: dict = {}

    def score(site, hyps_of, names=("bleu",)):
        refs = [r["title"] for r in rows[site]]
        return metrics.score_corpus([hyps_of(r["body"]) for r in rows[site]], [refs], list(names), lowercase=True)

    def bleu_counts(site, p):  # the titles; pooled over the sites, as corpus BLEU is not a mean of sites
        if (site, p) not in memo:
            memo[site, p] = [rule_title(r["body"], *p) for r in rows[site]]
        return memo[site, p]

    out = []
    for tgt in sites:
        src = [s for s in sites if s != tgt]
        refs = [r["title"] for s in src for r in rows[s]]
        def criterion(p):
            m = metrics.score_corpus([h for s in src for h in bleu_counts(s, p)], [refs], ["bleu", "rougeL"],
                                     lowercase=True)
            return m["bleu"] + m["rougeL"]

        best = max(grid, key=criterion)
        got = score(tgt, lambda b: rule_title(b, *best), ("bleu", "rougeL"))
        lead = score(tgt, lambda b: " ".join(b.split()[:12]), ("bleu", "rougeL"))
        rec = {"held_out": tgt, "questions": len(rows[tgt]), "max_words": best[0], "fallback_words": best[1],
               "bleu": round(got["bleu"], 2), "rougeL": round(got["rougeL"], 2), "lead12_bleu": round(lead["bleu"], 2),
               "lead12_rougeL": round(lead["rougeL"], 2), "gain": round(got["bleu"] - lead["bleu"], 2)}
        print(json.dumps(rec), flush=True)
        out.append(rec)


if __name__ == "__main__":
    main()
