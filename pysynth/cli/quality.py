"""``pysynth quality wellformed``: the well-formedness probability of questions (:mod:`pysynth.quality`)."""
from __future__ import annotations

from pysynth.cli import _common as C


def _cmd_wellformed(args) -> int:
    from pysynth.io import write_rows
    from pysynth.quality import wellformedness

    C.check_output(args.out)
    rows = list(C.read_rows(args.inp))
    for i, r in enumerate(rows):
        if not isinstance(r.get(args.field), str):
            raise ValueError(f"--in row {i + 1}: no string field {args.field!r} (use --field NAME)")
    probs = wellformedness([r[args.field] for r in rows], args.model, threads=args.threads)
    write_rows(args.out, ({**r, "wellformed": round(float(p), 6)} for r, p in zip(rows, probs)))
    return 0


def add_commands(sub) -> None:
    q = sub.add_parser("quality", help="question quality scores")
    qs = q.add_subparsers(dest="quality_command", required=True, metavar="VERB")
    w = qs.add_parser("wellformed", help="probability that each question is well-formed (Faruqui & Das 2018)")
    C.add_in(w, help="JSONL/Parquet rows with a text field")
    w.add_argument("--out", required=True, help="output JSONL/Parquet (- for stdout): the rows plus 'wellformed'")
    w.add_argument("--field", default="question", help="the text field (default: question)")
    w.add_argument("--model", default=None, help="a classifier name or folder (default: the shipped wellformed-minilm)")
    w.add_argument("--threads", type=int, default=0, help="onnxruntime threads (0: default)")
    w.set_defaults(func=_cmd_wellformed)
