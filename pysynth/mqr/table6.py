"""Table 6 of Chu et al. 2020 with pysynth's systems beside the paper's: BLEU-4 (nlg-eval's
pycocoevalcap scorer, ``flavor="coco"``), ROUGE-1/2/L F (rouge 0.3.2, ``flavor="pltrdy"``) on the
MQR test split against the well-formed references.

Rows: the ill-formed input, the rule floor (:func:`pysynth.mqr.rewrite.rule_floor`), pysynth's
rewriters, the well-formedness of each system's output (:mod:`pysynth.quality`: the automatic
stand-in for the paper's human Table 4/9 judgements), and the paper's released system outputs
re-scored (their columns must come out as the paper prints them, up to the 80 % test subset).
METEOR (the paper's last column) comes from :mod:`pysynth.metrics.meteor`'s Java-free flavor
``exact`` (Meteor 1.5 with nlg-eval's settings, the jar's scores; needs pycocoevalcap's resource
files, not Java).
"""
from __future__ import annotations

import gzip
import json
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

__all__ = ["PAPER", "PAPER7", "PAPER8", "score_system", "table6", "run_chain", "parse_step"]

#: Chu et al. 2020, Table 6 (full test set): BLEU-4, ROUGE-1, ROUGE-2, ROUGE-L, METEOR
PAPER = {
    "ill_formed": (5.9, 50.9, 19.4, 45.5, 33.4),
    "lstm": (19.2, 55.8, 28.3, 52.8, 32.7),
    "transformer": (22.1, 59.8, 32.2, 56.6, 36.4),
    "GEC": (13.1, 52.4, 24.4, 47.5, 34.4),
    "nmt_de": (9.9, 41.6, 16.8, 38.2, 28.4),
    "nmt_fr": (9.3, 40.4, 15.7, 36.9, 27.5),
}

#: Table 7 (the transformer with added training data) and Table 8 (chained methods): the paper's
#: numbers, keyed by the column of the released outputs where one exists (None: not released)
PAPER7 = {
    "MQR TRAIN": ("transformer", (22.1, 59.8, 32.2, 56.6, 36.4)),
    "MQR TRAIN + (well-formed, well-formed) pairs": (None, (21.1, 61.4, 32.1, 58.0, 36.8)),
    "MQR TRAIN + Quora": ("quora_stackexchange", (23.6, 60.5, 33.4, 57.5, 36.8)),
    "MQR TRAIN + Paralex": ("paralex_stackexchange", (21.7, 58.3, 31.3, 55.3, 35.7)),
    "MQR TRAIN + Quora + Paralex": ("paralex_quora_stackexchange", (23.1, 60.3, 33.0, 57.2, 36.7)),
}
PAPER8 = {
    "GEC -> Transformer (MQR + Quora)": (None, (24.8, 60.2, 33.9, 57.3, 36.8)),
    "Transformer (MQR + Quora) -> GEC": ("quora_stackexchange_gec", (26.3, 61.0, 35.4, 58.1, 37.3)),
    "Transformer (MQR) -> Transformer (MQR)": (None, (20.4, 55.8, 29.2, 52.5, 35.1)),
}
_COLS = ("bleu4", "rouge1", "rouge2", "rougeL", "meteor")


def parse_step(step: str, beam: int = 4) -> Tuple[str, dict]:
    """``MODEL[@beam=B,coverage=C,wellformed=W,backoff=F,select=S]`` -> ``(model, rewrite options)``: the
    decoding of one rewriter row (:meth:`pysynth.mqr.rewrite.Rewriter.rewrite`; ``select``: ``safe`` or
    ``model``, the default)."""
    model, _, opts = step.partition("@")
    kw: dict = {"beam": beam}
    for item in filter(None, opts.split(",")):
        key, _, val = item.partition("=")
        if key not in ("beam", "coverage", "wellformed", "backoff", "select"):
            raise ValueError(f"{step!r}: unknown option {key!r} (beam, coverage, wellformed, backoff, select)")
        if key == "select":
            kw[key] = val
            continue
        try:
            kw[key] = int(val) if key == "beam" else float(val)
        except ValueError:
            raise ValueError(f"{step!r}: {key} needs a number, got {val!r}") from None
    return model, kw


def run_chain(steps: Sequence[str], texts: Sequence[str], beam: int = 4, cache: Optional[dict] = None,
              **guards) -> List[str]:
    """Table 8's "A -> B": run each step on the previous step's output. A step is ``rule`` (the
    rule floor) or a rewriter (a shipped name, a model folder or a training run), with its
    decoding as :func:`parse_step` reads it (default: the best of a beam of ``beam``); ``guards``:
    ``no_repeat_ngram``, ``no_stutter`` of every rewriter's search (:class:`pysynth.decoding.SearchConfig`)."""
    from pysynth.mqr.rewrite import Rewriter, rule_floor

    cache = {} if cache is None else cache
    out = list(texts)
    for step in steps:
        if step == "rule":
            out = [rule_floor(t) for t in out]
        else:
            model, kw = parse_step(step, beam)
            if model not in cache:
                cache[model] = Rewriter(model)
            # an option the step does not name is off (the plain beam's best), not Rewriter.rewrite's default
            out = cache[model].rewrite(out, **{"coverage": 0.0, "wellformed": 0.0, "backoff": 0.0, "select": "model",
                                               **kw}, **guards)
    return out


def score_system(hyps: Sequence[str], refs: Sequence[str], meteor: bool = True) -> Dict[str, Optional[float]]:
    """BLEU-4 (coco), ROUGE-1/2/L F (pltrdy) and METEOR (Meteor 1.5, nlg-eval's settings, Java-free;
    None without pycocoevalcap) on a 0-100 scale, as the paper computed them."""
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


#: the round-trip baseline's models (the paraphrase pivot "fr")
ROUND_TRIP_FR = ("en-fr-copynet-small", "fr-en-copynet-small")


def table6(data_dir: Union[str, Path], models: Optional[Dict[str, str]] = None, beam: int = 4,
           wellformed: bool = True, limit: Optional[int] = None, meteor: bool = True,
           round_trip: Optional[str] = "fr", ablations: Optional[Dict[str, str]] = None,
           chains: Optional[Dict[str, Sequence[str]]] = None, paper_tables: bool = True, *,
           no_repeat_ngram: int = 3, no_stutter: bool = True) -> List[dict]:
    """The rows of Table 6 (see the module doc), and of Tables 7 and 8 when asked.

    Parameters
    ----------
    models : ``{row name: model spec}`` rewriters (:func:`parse_step`; default: the shipped
        ``mqr-copynet-small`` at beam 4 and with ``pysynth mqr rewrite``'s decoding).
    limit : the first test rows only (for a quick check).
    round_trip : the pivot of the round-trip translation baseline, ``"fr"`` (the shipped en-fr and
        fr-en models) or two models ``"FWD,BWD"`` (:func:`pysynth.models.text2text.round_trip`;
        None: no such row).
    ablations : Table 7 rows, ``{row name: model}`` (rewriters trained on other data mixes).
    chains : Table 8 rows, ``{row name: [A, B, ...]}`` (:func:`run_chain`).
    paper_tables : with ``ablations`` or ``chains``, also re-score the paper's released Table 7/8
        outputs (``quora_stackexchange`` ...) and list the paper's numbers.
    no_repeat_ngram, no_stutter : the degenerate-output guards of every search (the rewriters and
        the round trip; :class:`pysynth.decoding.SearchConfig`, on by default).

    Every row has ``table`` (6, 7 or 8).
    """
    from pysynth.decoding.config import guard_changes
    from pysynth.mqr.rewrite import rule_floor

    guards = guard_changes(no_repeat_ngram, no_stutter)  # validated before any data is read; only off the defaults

    d = Path(data_dir)
    with gzip.open(d / "mqr" / "test.jsonl.gz", "rt", encoding="utf-8") as f:
        test = [json.loads(line) for line in f][:limit]
    with gzip.open(d / "mqr" / "test_system_rewrites.jsonl.gz", "rt", encoding="utf-8") as f:
        released = {r["row_idx"]: r for r in map(json.loads, f)}
    ill = [r["ill_formed"] for r in test]
    refs = [r["well_formed"] for r in test]
    systems: Dict[str, tuple] = {"ill_formed (input)": ("ill_formed", ill), "rule floor": (None, [rule_floor(t)
                                                                                                 for t in ill])}
    timing: Dict[str, float] = {}
    table: Dict[str, int] = {}
    cache: dict = {}
    if not models:
        from pysynth.mqr.rewrite import DEFAULT_DECODING

        opts = ",".join(f"{k}={v}" for k, v in DEFAULT_DECODING.items())
        models = {"pysynth CopyNet (mqr-copynet-small), beam 4": "mqr-copynet-small",
                  "pysynth CopyNet (mqr-copynet-small), the rewrite defaults": f"mqr-copynet-small@{opts}"}
    for name, model in models.items():
        t0 = time.perf_counter()
        systems[name] = (None, run_chain([model], ill, beam, cache, **guards))
        timing[name] = time.perf_counter() - t0
    if round_trip:
        from pysynth.models.text2text import round_trip as _rt

        pair = ROUND_TRIP_FR if round_trip == "fr" else [p.strip() for p in round_trip.split(",")]
        if len(pair) != 2 or not all(pair):
            raise ValueError(f"round_trip: must be 'fr' or two models 'FWD,BWD', got {round_trip!r}")
        fwd, bwd = pair
        t0 = time.perf_counter()
        name = f"round trip through French (pysynth en-fr/fr-en, beam {beam})"
        systems[name] = ("nmt_fr", _rt(ill, fwd, bwd, beam=beam, backend="onnx", **guards))
        timing[name] = time.perf_counter() - t0
    for sysname in ("transformer", "lstm", "GEC", "nmt_fr", "nmt_de"):
        systems[f"paper: {sysname} (released outputs)"] = (sysname, [released[r["row_idx"]][sysname] for r in test])
    paper_rows: Dict[str, tuple] = {}
    for tab, extra, paper in ((7, ablations, PAPER7), (8, chains, PAPER8)):
        if not extra:
            continue
        for name, spec in extra.items():
            systems[name] = (None, run_chain([spec] if tab == 7 else list(spec), ill, beam, cache, **guards))
            table[name] = tab
        if paper_tables:
            for pname, (col, nums) in paper.items():
                name = f"paper: {pname}" + (" (released outputs)" if col else "")
                table[name] = tab
                paper_rows[name] = nums
                if col:
                    systems[name] = (None, [released[r["row_idx"]][col] for r in test])
    rows = []
    for name, (paper_key, hyps) in systems.items():
        row = {"system": name, "table": table.get(name, 6), "n": len(hyps), **score_system(hyps, refs, meteor)}
        if paper_key in PAPER:
            row["paper"] = dict(zip(_COLS, PAPER[paper_key]))
        elif name in paper_rows:
            row["paper"] = dict(zip(_COLS, paper_rows[name]))
        if name in timing:
            row["rewrites_per_s"] = len(hyps) / timing[name]
        row["outputs"] = hyps
        rows.append(row)
    for name, nums in paper_rows.items():  # the paper's rows without released outputs: numbers only
        if name not in systems:
            rows.append({"system": name, "table": table[name], "paper": dict(zip(_COLS, nums))})
    if wellformed:
        from pysynth.quality import wellformedness

        for row in rows:
            if "outputs" in row:
                row["wellformed"] = float(wellformedness(row["outputs"]).mean())
        rows.append({"system": "reference (well-formed)", "table": 6, "n": len(refs),
                     "wellformed": float(wellformedness(refs).mean())})
    return rows


_TITLES = {6: "", 7: "Table 7 (training data: identity pairs, Paralex-style pairs)",
           8: "Table 8 (chained methods: \"A -> B\" runs B on A's output)"}


def markdown(rows: List[dict], command: str) -> str:
    def f(x):
        return "-" if x is None else f"{x:.1f}"

    head = ["| system | BLEU-4 | ROUGE-1 | ROUGE-2 | ROUGE-L | METEOR | well-formed | paper BLEU-4 / R-1 / R-2 / R-L / "
            "METEOR |", "|---|---|---|---|---|---|---|---|"]
    out = ["# MQR Table 6 (Chu et al. 2020) with pysynth's rewriters", "",
           f"Command: `{command}` — {time.strftime('%Y-%m-%d')}. MQR test: the shared 80 % (1,690 of 2,113 rows), "
           "one reference. BLEU-4 = pycocoevalcap (nlg-eval) flavour, ROUGE F = rouge 0.3.2 (pltrdy), both "
           "exact (`tests/metrics/test_paper_check.py`). Well-formed = mean probability of `pysynth.quality`'s "
           "classifier (the automatic stand-in for the paper's human Tables 4 and 9). METEOR: Meteor 1.5 "
           "with nlg-eval's settings, Java-free (`pysynth.metrics.meteor`, flavor `exact`: the jar's "
           "scores).", ""] + head
    for tab in (6, 7, 8):
        sel = [r for r in rows if r.get("table", 6) == tab]
        if not sel:
            continue
        if tab != 6:
            out += ["", f"## {_TITLES[tab]}", ""] + head
        for r in sel:
            p = r.get("paper")
            ptxt = " / ".join(f"{v:.1f}" for v in p.values()) if p else ""
            wf = f"{r['wellformed']:.3f}" if "wellformed" in r else "-"
            out.append(f"| {r['system']} | {f(r.get('bleu4'))} | {f(r.get('rouge1'))} | {f(r.get('rouge2'))} | "
                       f"{f(r.get('rougeL'))} | {f(r.get('meteor'))} | {wf} | {ptxt} |")
    speed = [r for r in rows if "rewrites_per_s" in r]
    if speed:
        out += [""] + [f"{r['system']}: {r['rewrites_per_s']:.0f} rewrites/s (one process; onnxruntime where the "
                       "model has an ONNX export, else torch; the machine may be shared)." for r in speed]
    return "\n".join(out) + "\n"
