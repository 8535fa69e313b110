"""Command line: ``pysynth score`` (sacrebleu-like corpus scoring) and ``pysynth demo``; the
stages add theirs (``k2q``, ``export``, ``index`` / ``search``: :mod:`pysynth.retrieval.cli`)."""
from __future__ import annotations

import argparse
import json
import sys
import time
from typing import List, Optional, Sequence

ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")


def _read_lines(path: str, what: str) -> List[str]:
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return [line[:-1] if line.endswith("\n") else line for line in f]
    except OSError as exc:
        raise SystemExit(f"pysynth: cannot read {what} file {path!r}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise SystemExit(f"pysynth: {what} file {path!r} is not UTF-8: {exc}") from None


def score_corpus(
    hyps: Sequence[str],
    refs: Sequence[Sequence[str]],
    metrics: Sequence[str],
    bleu_flavor: str = "sacrebleu",
    rouge_flavor: str = "rouge-score",
    stem: bool = False,
    tokenize: Optional[str] = None,
    lowercase: bool = False,
    workers: int = 1,
) -> dict:
    """Corpus scores on a 0-100 scale: BLEU at corpus level, ROUGE as the mean F-measure."""
    from pysynth import metrics as M

    out: dict = {}
    unknown = [m for m in metrics if m != "bleu" and m not in ROUGE_TYPES]
    if unknown:
        raise ValueError(f"--metrics: unknown metric(s) {unknown}; choose from bleu, {', '.join(ROUGE_TYPES)}")
    if "bleu" in metrics:
        b = M.corpus_bleu(hyps, list(refs), flavor=bleu_flavor, tokenize=tokenize, lowercase=lowercase, workers=workers)
        out["bleu"] = b.score if bleu_flavor == "sacrebleu" else 100.0 * b.score
        if bleu_flavor == "coco":
            out["bleu_n"] = [100.0 * x for x in b.bleu_n]
        out["bleu_signature"] = b.signature
    rtypes = [m for m in metrics if m in ROUGE_TYPES]
    if rtypes:
        r = M.rouge(hyps, list(refs), types=rtypes, flavor=rouge_flavor, stem=stem, workers=workers)
        for t, v in r.mean().items():
            out[t] = 100.0 * v["f"]
        out["rouge_signature"] = {"flavor": rouge_flavor, "stem": stem, "nrefs": len(refs)}
    out["n_segments"] = len(hyps)
    return out


def _cmd_score(args) -> int:
    hyps = _read_lines(args.hyp, "--hyp")
    refs = [_read_lines(p, "--ref") for p in args.ref]
    for p, r in zip(args.ref, refs):
        if len(r) != len(hyps):
            raise SystemExit(f"pysynth: --ref {p!r} has {len(r)} lines but --hyp has {len(hyps)}; they must align line by line")
    metrics = [m.strip() for m in args.metrics.split(",") if m.strip()]
    try:
        out = score_corpus(hyps, refs, metrics, args.bleu_flavor, args.rouge_flavor, args.stem, args.tokenize, args.lowercase, args.workers)
    except (ValueError, TypeError) as exc:
        raise SystemExit(f"pysynth: {exc}") from None
    print(json.dumps(out, ensure_ascii=False))
    return 0


def _cmd_demo(args) -> int:
    """Score the bundled MQR sample (ill-formed questions and nine rewriting systems)."""
    from pysynth import metrics as M
    from pysynth.data import MQR_SYSTEMS, mqr_sample

    rows = mqr_sample()
    refs = [r["well_formed"] for r in rows]
    systems = {"ill_formed": [r["ill_formed"] for r in rows]}
    systems.update({s: [r["systems"][s] for r in rows] for s in MQR_SYSTEMS})
    cols = ["sacreBLEU", "nltkBLEU", "cocoBLEU4", "R1", "R2", "RL", "RLsum", "R1-stem", "pl-R1", "pl-R2", "pl-RL"]
    print(f"MQR test sample: {len(rows)} questions, reference = the well-formed rewrite (CC BY-SA 4.0, Chu et al. 2020)")
    print("BLEU: sacrebleu 13a, nltk (whitespace, method0), pycocoevalcap; ROUGE F: rouge-score (R*) and rouge 0.3.2 (pl-*)")
    print(f"{'system':<28}" + "".join(f"{c:>10}" for c in cols))
    t0 = time.perf_counter()
    for name, hyps in systems.items():
        rs = M.rouge(hyps, refs, types=["rouge1", "rouge2", "rougeL", "rougeLsum"], workers=args.workers).mean()
        rst = M.rouge(hyps, refs, types=["rouge1"], stem=True, workers=args.workers).mean()
        pl = M.rouge(hyps, refs, types=["rouge1", "rouge2", "rougeL"], flavor="pltrdy").mean()
        vals = [
            M.corpus_bleu(hyps, refs, workers=args.workers).score,
            100 * M.corpus_bleu(hyps, refs, flavor="nltk").score,
            100 * M.corpus_bleu([h.strip() for h in hyps], [r.strip() for r in refs], flavor="coco").score,
            100 * rs["rouge1"]["f"],
            100 * rs["rouge2"]["f"],
            100 * rs["rougeL"]["f"],
            100 * rs["rougeLsum"]["f"],
            100 * rst["rouge1"]["f"],
            100 * pl["rouge1"]["f"],
            100 * pl["rouge2"]["f"],
            100 * pl["rougeL"]["f"],
        ]
        print(f"{name:<28}" + "".join(f"{v:>10.2f}" for v in vals))
    dt = time.perf_counter() - t0
    import pysynth._dispatch as d

    print(f"scored {len(systems)} systems x {len(rows)} segments with every metric in {dt:.2f} s (backend: {d.implementation('metrics')})")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="pysynth", description="pysynth: synthetic question data toolkit")
    sub = p.add_subparsers(dest="command", required=True)

    s = sub.add_parser("score", help="corpus BLEU/ROUGE of a hypothesis file against reference files (one segment per line)")
    s.add_argument("--hyp", required=True, help="hypotheses, one segment per line (UTF-8)")
    s.add_argument("--ref", required=True, action="append", help="references aligned with --hyp; repeat for several references")
    s.add_argument("--metrics", default="bleu,rouge1,rouge2,rougeL", help="comma list of bleu, rouge1, rouge2, rougeL, rougeLsum")
    s.add_argument("--bleu-flavor", default="sacrebleu", choices=["sacrebleu", "nltk", "coco"])
    s.add_argument("--rouge-flavor", default="rouge-score", choices=["rouge-score", "pltrdy"])
    s.add_argument("--tokenize", default=None, choices=["13a", "intl", "none"], help="BLEU tokenizer (default: 13a for sacrebleu, none otherwise)")
    s.add_argument("--lowercase", action="store_true", help="lower-case before BLEU")
    s.add_argument("--stem", action="store_true", help="Porter stemmer for ROUGE (rouge-score flavor)")
    s.add_argument("--workers", type=int, default=1, help="threads (-1: all cores)")
    s.set_defaults(func=_cmd_score)

    k2q = sub.add_parser("k2q", help="keyword-to-question synthetic data (Ding & Balog 2018)")
    k2q_sub = k2q.add_subparsers(dest="k2q_command", required=True)
    from pysynth.k2q.cli import add_commands as add_k2q_commands

    add_k2q_commands(k2q_sub)
    from pysynth.models.cli import add_k2q_model_commands

    add_k2q_model_commands(sub, k2q_sub)  # k2q train / generate, export onnx
    from pysynth.retrieval.cli import add_commands as add_retrieval_commands

    add_retrieval_commands(sub)  # index build, search

    d = sub.add_parser("demo", help="score the bundled MQR sample with every metric and print a table")
    d.add_argument("--workers", type=int, default=1)
    d.set_defaults(func=_cmd_demo)
    return p


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = build_parser().parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
