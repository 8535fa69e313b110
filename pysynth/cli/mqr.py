"""``pysynth mqr mine``: question-rewriting pairs from Stack Exchange dumps (Chu et al. 2020)."""
from __future__ import annotations

import sys

from pysynth.cli import _common as C


def _dump(s: str) -> str:
    import argparse
    import os

    if not os.path.exists(s):
        raise argparse.ArgumentTypeError(f"no such dump directory or archive {s!r}")
    return s


def _cmd_mine(args) -> int:
    from pysynth import signature
    from pysynth.io import write_json, write_rows
    from pysynth.mqr import mine
    from pysynth.stackexchange import Dump

    C.check_output(args.out)
    dumps = [Dump(d) for d in args.dump]
    res = mine(dumps, mode=args.mode, splits=args.splits, min_valid=args.min_valid)
    write_rows(args.out, res.rows)  # the data first, the metadata last
    meta = {
        "signature": signature.signature(
            "pysynth.mqr.mine", 1, {"mode": args.mode, "splits": args.splits, "min_valid": args.min_valid},
            {"dumps": [{"site": d.site, "path": str(d.path)} for d in dumps], "rows": len(res.rows),
             "sha256": signature.fingerprint(res.rows)}),
        "counts": res.counts,
        "stats": res.stats,
    }
    if args.out != "-":
        write_json(args.out + ".meta.json", meta)
    _summary(res, sys.stderr)
    return 0


def _summary(res, f) -> None:
    keys = list(next(iter(res.counts.values())).keys()) if res.counts else []
    width = max([len(s) for s in res.counts] + [4])
    print(f"{'site':<{width}} " + " ".join(f"{k:>13}" for k in keys), file=f)
    for site, c in res.counts.items():
        print(f"{site:<{width}} " + " ".join(f"{c[k]:>13}" for k in keys), file=f)
    st = res.stats["all"]
    print(f"pysynth: mined {st['pairs']} pairs from {st['sites']} sites; counts and statistics in OUT.meta.json",
          file=f)


def add_commands(sub) -> None:
    m = sub.add_parser("mqr", help="question rewriting, MQR (Chu et al. 2020)")
    ms = m.add_subparsers(dest="mqr_command", required=True, metavar="VERB")
    mi = ms.add_parser("mine", help="ill-formed -> well-formed title pairs from Stack Exchange dumps",
                       description="Mine question-rewriting pairs from Stack Exchange title edits with the filters of "
                                   "Chu et al. 2020; writes rows {site, post_id, ill_formed, well_formed[, bleu, "
                                   "split]} and OUT.meta.json (counts per filter and site, statistics, signature).")
    mi.add_argument("--dump", required=True, action="append", type=_dump, metavar="DIR",
                    help="a site's dump: a directory of Posts.xml[.gz] + PostHistory.xml[.gz], or a .7z (repeatable)")
    mi.add_argument("--out", required=True, help="output JSONL/Parquet (- for stdout)")
    mi.add_argument("--mode", default="initial", choices=("initial", "last-edit", "all-edits"),
                    help="initial: first title -> current title (the paper); last-edit: the title before the last "
                         "edit; all-edits: every consecutive pair")
    mi.add_argument("--splits", action="store_true",
                    help="add bleu and split (devtest: sentence BLEU < 0.3, the paper's dev/test rule; else train)")
    mi.add_argument("--min-valid", type=C.float_in(0, False, 1, "a fraction in [0, 1]"), default=0.8,
                    help="share of valid characters both sides need (the paper: 0.8)")
    mi.set_defaults(func=_cmd_mine)
