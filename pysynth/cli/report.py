"""``pysynth report``: one self-contained HTML page on the quality of a job's output
(:mod:`pysynth.quality.report`)."""
from __future__ import annotations

import json

from pysynth.cli import _common as C


def _cmd_report(args) -> int:
    from pysynth.quality.report import write_report

    C.check_output(args.out)
    print(json.dumps(write_report(args.inp, args.out, wellformed=args.wellformed, sample=args.sample,
                                  seed=args.seed, max_scored=args.max_scored, field=args.field)))
    return 0


def add_commands(sub) -> None:
    p = sub.add_parser("report", help="a static HTML quality report of a job's output (keep rate, drops, lengths, "
                                      "question words, diversity, well-formedness, sample rows)")
    C.add_in(p, help="the rows a generating command wrote (JSONL/Parquet; its OUT.meta.json beside them)",
             stdin=False)
    C.add_out(p, help="the HTML file: one page, no external assets (opens offline)")
    p.add_argument("--field", help="the column of generated text (default: the method's, e.g. question, questions, "
                                   "paraphrases, rewrite, keywords)")
    p.add_argument("--wellformed", choices=("auto", "on", "off"), default="auto",
                   help="score well-formedness when the rows have no wellformed column: auto (when the shipped "
                        "model and onnxruntime are there), on, off (default auto)")
    p.add_argument("--sample", type=C.count, default=100, help="rows shown per table, kept and discarded (100)")
    p.add_argument("--max-scored", type=C.positive_int, default=1000,
                   help="texts scored for well-formedness at most (1000)")
    p.add_argument("--seed", type=int, default=0, help="seed of the samples (0)")
    p.set_defaults(func=_cmd_report)
