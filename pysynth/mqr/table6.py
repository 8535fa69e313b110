"""Table 6 of Chu et al. 2020 with pysynth's systems beside the paper's: BLEU-4 (nlg-eval's
pycocoevalcap scorer, ``flavor="coco"``), ROUGE-1/2/L F (rouge 0.3.2, ``flavor="pltrdy"``) on the
MQR test split against the well-formed references.

Rows: the ill-formed input, the rule floor (:func:`pysynth.mqr.rewrite.rule_floor`), pysynth's
rewriters, the well-formedness of each system's output (:mod:`pysynth.quality`: the automatic
stand-in for the paper's human Table 4/9 judgements), and the paper's released system outputs
re-scored (their columns must come out as the paper prints them, up to the 80 % test subset).
METEOR (the paper's last column) comes from the Meteor 1.5 jar (:mod:`pysynth.metrics.meteor`,
Java + pycocoevalcap); the Java-free implementation is not built yet.
"""
from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

__all__ = ["PAPER", "score_system", "table6"]

#: Chu et al. 2020, Table 6 (full test set): BLEU-4, ROUGE-1, ROUGE-2, ROUGE-L, METEOR
PAPER = {
    "ill_formed": (5.9, 50.9, 19.4, 45.5, 33.4),
    "lstm": (19.2, 55.8, 28.3, 52.8, 32.7),
    "transformer": (22.1, 59.8, 32.2, 56.6, 36.4),
    "GEC": (13.1, 52.4, 24.4, 47.5, 34.4),
    "nmt_de": (9.9, 41.6, 16.8, 38.2, 28.4),
    "nmt_fr": (9.3, 40.4, 15.7, 36.9, 27.5),
}


def score_system(hyps: Sequence[str], refs: Sequence[str], meteor: bool = True) -> Dict[str, Optional[float]]:
    """BLEU-4 (coco), ROUGE-1/2/L F (pltrdy) and METEOR (the Meteor 1.5 jar, nlg-eval's settings;
    None without Java / pycocoevalcap) on a 0-100 scale, as the paper computed them."""
    from pysynth import metrics as M

    b = M.corpus_bleu([h.strip() for h in hyps], [r.strip() for r in refs], flavor="coco")
    r = M.rouge(list(hyps), list(refs), types=["rouge1", "rouge2", "rougeL"], flavor="pltrdy").mean()
    out: Dict[str, Optional[float]] = {"bleu4": 100 * b.score, "rouge1": 100 * r["rouge1"]["f"],
                                       "rouge2": 100 * r["rouge2"]["f"], "rougeL": 100 * r["rougeL"]["f"],
                                       "meteor": None}
    if meteor:
        from pysynth.metrics.meteor import meteor as jar

        try:
            out["meteor"] = 100 * jar([h.strip() for h in hyps], [r.strip() for r in refs]).score
        except (ImportError, RuntimeError):
            pass
    return out


def table6(data_dir: Union[str, Path], models: Optional[Dict[str, str]] = None, beam: int = 4,
           wellformed: bool = True, limit: Optional[int] = None, meteor: bool = True,
           round_trip: Optional[str] = "fr") -> List[dict]:
    """The rows of Table 6 (see the module doc); ``models``: ``{row name: model}`` rewriters
    (default ``{"pysynth CopyNet (mqr-copynet-small)": "mqr-copynet-small"}``); ``limit``: the
    first test rows only (for a quick check); ``round_trip``: the pivot of the round-trip
    translation baseline (:func:`pysynth.paraphrase.pipeline.round_trip`; None: no such row)."""
    from pysynth.mqr.rewrite import Rewriter, rule_floor

    d = Path(data_dir)
    with gzip.open(d / "mqr" / "test.jsonl.gz", "rt", encoding="utf-8") as f:
        test = [json.loads(line) for line in f][:limit]
    with gzip.open(d / "mqr" / "test_system_rewrites.jsonl.gz", "rt", encoding="utf-8") as f:
        released = {r["row_idx"]: r for r in map(json.loads, f)}
    ill = [r["ill_formed"] for r in test]
    refs = [r["well_formed"] for r in test]
    systems: Dict[str, tuple] = {"ill_formed (input)": ("ill_formed", ill), "rule floor": (None, [rule_floor(t)
                                                                                                 for t in ill])}
    timing = {}
    for name, model in (models or {"pysynth CopyNet (mqr-copynet-small)": "mqr-copynet-small"}).items():
        t0 = time.perf_counter()
        systems[name] = (None, Rewriter(model).rewrite(ill, beam=beam))
        timing[name] = time.perf_counter() - t0
    if round_trip:
        from pysynth.paraphrase.pipeline import round_trip as _rt

        t0 = time.perf_counter()
        name = f"round trip through French (pysynth en-fr/fr-en, beam {beam})"
        systems[name] = ("nmt_fr", _rt(ill, pivot=round_trip, beam=beam))
        timing[name] = time.perf_counter() - t0
    for sysname in ("transformer", "lstm", "GEC", "nmt_fr", "nmt_de"):
        systems[f"paper: {sysname} (released outputs)"] = (sysname, [released[r["row_idx"]][sysname] for r in test])
    rows = []
    for name, (paper_key, hyps) in systems.items():
        row = {"system": name, "n": len(hyps), **score_system(hyps, refs, meteor)}
        if paper_key in PAPER:
            row["paper"] = dict(zip(("bleu4", "rouge1", "rouge2", "rougeL", "meteor"), PAPER[paper_key]))
        if name in timing:
            row["rewrites_per_s"] = len(hyps) / timing[name]
        row["outputs"] = hyps
        rows.append(row)
    if wellformed:
        from pysynth.quality import wellformedness

        for row in rows:
            row["wellformed"] = float(wellformedness(row["outputs"]).mean())
        rows.append({"system": "reference (well-formed)", "n": len(refs), "wellformed": float(wellformedness(refs).mean())})
    return rows


def markdown(rows: List[dict], command: str) -> str:
    def f(x):
        return "-" if x is None else f"{x:.1f}"

    out = ["# MQR Table 6 (Chu et al. 2020) with pysynth's rewriters", "",
           f"Command: `{command}` — {time.strftime('%Y-%m-%d')}. MQR test: the shared 80 % (1,690 of 2,113 rows), "
           "one reference. BLEU-4 = pycocoevalcap (nlg-eval) flavour, ROUGE F = rouge 0.3.2 (pltrdy), both "
           "exact (`tests/metrics/test_paper_check.py`). Well-formed = mean probability of `pysynth.quality`'s "
           "classifier (the automatic stand-in for the paper's human Tables 4 and 9). METEOR: the Meteor 1.5 jar "
           "with nlg-eval's settings (`pysynth.metrics.meteor`, flavor `jar`).", "",
           "| system | BLEU-4 | ROUGE-1 | ROUGE-2 | ROUGE-L | METEOR | well-formed | paper BLEU-4 / R-1 / R-2 / R-L / "
           "METEOR |", "|---|---|---|---|---|---|---|---|"]
    for r in rows:
        p = r.get("paper")
        ptxt = " / ".join(f"{v:.1f}" for v in p.values()) if p else ""
        wf = f"{r['wellformed']:.3f}" if "wellformed" in r else "-"
        out.append(f"| {r['system']} | {f(r.get('bleu4'))} | {f(r.get('rouge1'))} | {f(r.get('rouge2'))} | "
                   f"{f(r.get('rougeL'))} | {f(r.get('meteor'))} | {wf} | {ptxt} |")
    speed = [r for r in rows if "rewrites_per_s" in r]
    if speed:
        out += [""] + [f"{r['system']}: {r['rewrites_per_s']:.0f} rewrites/s (onnxruntime, beam 4, one process)."
                       for r in speed]
    return "\n".join(out) + "\n"
