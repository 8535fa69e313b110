"""``pysynth score`` (sacrebleu-like corpus BLEU / ROUGE of line files) and ``pysynth demo``."""
from __future__ import annotations

import json
import time

from pysynth.cli import _common as C
from pysynth.metrics import ROUGE_TYPES, score_corpus


def _metrics(s: str) -> list:
    import argparse

    ms = [m.strip() for m in s.split(",") if m.strip()]
    unknown = [m for m in ms if m not in ("bleu", "meteor") and m not in ROUGE_TYPES]
    if unknown or not ms:
        raise argparse.ArgumentTypeError(f"unknown metric(s) {unknown or [s]}; choose from bleu, meteor, "
                                         f"{', '.join(ROUGE_TYPES)}")
    return ms


def _cmd_score(args) -> int:
    if args.hyp == "-" and "-" in args.ref:
        raise C.UsageError("argument --ref: stdin (-) is already --hyp")
    C.check_output(args.out)
    hyps = C.read_lines(args.hyp, "--hyp")
    refs = [C.read_lines(p, "--ref") for p in args.ref]
    for p, r in zip(args.ref, refs):
        if len(r) != len(hyps):
            raise C.UsageError(f"argument --ref: {p!r} has {len(r)} lines but --hyp has {len(hyps)}; "
                               "they must align line by line")
    out = score_corpus(hyps, refs, args.metrics, args.bleu_flavor, args.rouge_flavor, args.stem, args.tokenize,
                       args.lowercase, args.workers)
    with C.output(args.out) as f:
        f.write((json.dumps(out, ensure_ascii=False) + "\n").encode("utf-8"))
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
    w = args.workers
    for name, hyps in systems.items():
        rs = M.rouge(hyps, refs, types=["rouge1", "rouge2", "rougeL", "rougeLsum"], workers=w).mean()
        rst = M.rouge(hyps, refs, types=["rouge1"], stem=True, workers=w).mean()
        pl = M.rouge(hyps, refs, types=["rouge1", "rouge2", "rougeL"], flavor="pltrdy").mean()
        vals = [
            M.corpus_bleu(hyps, refs, workers=w).score,
            100 * M.corpus_bleu(hyps, refs, flavor="nltk").score,
            100 * M.corpus_bleu([h.strip() for h in hyps], [r.strip() for r in refs], flavor="coco").score,
            100 * rs["rouge1"]["f"], 100 * rs["rouge2"]["f"], 100 * rs["rougeL"]["f"], 100 * rs["rougeLsum"]["f"],
            100 * rst["rouge1"]["f"], 100 * pl["rouge1"]["f"], 100 * pl["rouge2"]["f"], 100 * pl["rougeL"]["f"],
        ]
        print(f"{name:<28}" + "".join(f"{v:>10.2f}" for v in vals))
    dt = time.perf_counter() - t0
    import pysynth._dispatch as d

    print(f"scored {len(systems)} systems x {len(rows)} segments with every metric in {dt:.2f} s "
          f"(backend: {d.implementation('metrics')})")
    return 0


def add_commands(sub) -> None:
    s = sub.add_parser("score", help="corpus BLEU/ROUGE of a hypothesis file against reference files (one segment per line)")
    s.add_argument("--hyp", "--in", dest="hyp", required=True, type=C.input_file,
                   help="hypotheses, one segment per line (UTF-8); - reads stdin")
    s.add_argument("--ref", required=True, action="append", type=C.input_file,
                   help="references aligned with --hyp; repeat for several references")
    s.add_argument("--out", default="-", help="JSON scores (default -: stdout)")
    s.add_argument("--metrics", type=_metrics, default="bleu,rouge1,rouge2,rougeL",
                   help="comma list of bleu, rouge1, rouge2, rougeL, rougeLsum, meteor (Meteor 1.5 "
                        "with nlg-eval's settings, Java-free; needs pycocoevalcap's resource files)")
    s.add_argument("--bleu-flavor", default="sacrebleu", choices=["sacrebleu", "nltk", "coco"])
    s.add_argument("--rouge-flavor", default="rouge-score", choices=["rouge-score", "pltrdy"])
    s.add_argument("--tokenize", default=None, choices=["13a", "intl", "none"],
                   help="BLEU tokenizer (default: 13a for sacrebleu, none otherwise)")
    s.add_argument("--lowercase", action="store_true", help="lower-case before BLEU")
    s.add_argument("--stem", action="store_true", help="Porter stemmer for ROUGE (rouge-score flavor)")
    C.add_workers(s)
    s.set_defaults(func=_cmd_score)

    d = sub.add_parser("demo", help="score the bundled MQR sample with every metric and print a table")
    C.add_workers(d)
    d.set_defaults(func=_cmd_demo)
