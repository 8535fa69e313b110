"""``pysynth paraphrase``: paraphrases by pivoting through two seq2seq models (Granstedt 2017)."""
from __future__ import annotations

import json

from pysynth.cli import _common as C


def _cmd_paraphrase(args) -> int:
    from pysynth.paraphrase.jobs import run
    from pysynth.paraphrase.pipeline import ParaphraseConfig
    from pysynth.pipelines import executor_from_args

    C.check_output(args.out)
    if args.candidates_out:
        C.check_output(args.candidates_out, "--candidates-out")
    cfg = ParaphraseConfig(pivot=args.pivot, decode=args.decode, beams=args.beams, groups=args.groups,
                           diversity=args.diversity, mode=args.mode, top=args.top, top_k=args.top_k, top_p=args.top_p,
                           unknown_penalty=args.unknown_penalty, length_penalty=args.length_penalty,
                           ban_unk=not args.allow_unk, strip_question=args.strip_question,
                           backend=args.backend, threads=args.workers,
                           batch_size=args.batch_size, seed=args.seed)
    summary = run(args.inp, args.out, cfg, candidates_out=args.candidates_out, flat=args.flat,
                  min_wellformed=args.min_wellformed,
                  executor=executor_from_args(args), chunk_size=args.chunk_size, resume=not args.restart)
    print(json.dumps(summary))
    return 0


def add_commands(sub) -> None:
    from pysynth.pipelines import add_executor_arguments

    p = sub.add_parser("paraphrase", help="paraphrases by pivoting through two seq2seq models with diverse beam "
                                          "search (Granstedt 2017)")
    C.add_in(p, help='JSONL/Parquet rows {"id"?, "question", ...}; other fields are carried to the paraphrases')
    p.add_argument("--out", required=True, help='output JSONL/Parquet: rows {"id", "question", "paraphrases", ...}')
    p.add_argument("--pivot", default="fr",
                   help="fr (the shipped English<->French models), keywords (keyword queries and the K2Q model), "
                        "or FWD,BWD: two pysynth models or local Hugging Face translation model folders")
    p.add_argument("--decode", choices=("dbs", "beam", "sample"), default="dbs",
                   help="diverse beam search (default), beam search, or top-k/top-p sampling")
    p.add_argument("--beams", type=C.positive_int, default=16, help="B: outputs per input in each stage")
    p.add_argument("--groups", type=C.positive_int, default=4, help="G: diverse beam search groups")
    p.add_argument("--diversity", type=C.float_in(0, False, None, "a number >= 0"), default=0.5,
                   help="lambda: Hamming diversity penalty")
    p.add_argument("--mode", choices=("augmented", "diverse"), default="augmented",
                   help="augmented: the top scores > 0; diverse: unknowns cost 10, chosen paraphrases count as overlap")
    p.add_argument("--top", type=C.positive_int, default=3, help="paraphrases per question at most")
    p.add_argument("--top-k", type=int, default=0, help="--decode sample: top-k (0: off)")
    p.add_argument("--top-p", type=C.float_in(0, True, 1, "a probability in (0, 1]"), default=1.0,
                   help="--decode sample: nucleus mass")
    p.add_argument("--unknown-penalty", type=float, default=None, help="per <unk> (default: 1 augmented, 10 diverse)")
    p.add_argument("--length-penalty", type=float, default=10.0, help="for a candidate > 2 words shorter (default 10)")
    p.add_argument("--allow-unk", action="store_true", help="let the models generate <unk> (the thesis's setting)")
    p.add_argument("--strip-question", action="store_true",
                   help="remove the pivot's final '?' before the backward model (the thesis's fix for its fre2eng "
                        "model; pysynth's rambles without it, so off by default)")
    p.add_argument("--candidates-out", default=None,
                   help="also write every candidate (pivot, search scores, score components) and rejected pivot")
    p.add_argument("--flat", action="store_true", help="write the augmented dataset: one row per original and paraphrase")
    p.add_argument("--backend", choices=("onnx", "torch"), default="onnx")
    p.add_argument("--batch-size", type=C.positive_int, default=16, help="inputs per decoding batch")
    p.add_argument("--chunk-size", type=C.positive_int, default=256, help="questions per resumable chunk")
    p.add_argument("--restart", action="store_true", help="discard finished chunks of an earlier run")
    p.add_argument("--seed", type=int, default=0)
    C.add_min_wellformed(p)
    C.add_workers(p)
    add_executor_arguments(p)
    p.set_defaults(func=_cmd_paraphrase)
