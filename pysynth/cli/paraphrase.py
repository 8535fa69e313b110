"""``pysynth paraphrase``: paraphrases by pivoting through two seq2seq models (Granstedt 2017)."""
from __future__ import annotations

import json

from pysynth.cli import _common as C

#: ``paraphrase generate --min-similarity`` by default: the smallest S with >= 60 % of the chosen paraphrases at
#: cosine >= 0.7 under the judge on 150 ComQA dev questions (bench/RESULTS_generators.md, issue 26)
DEFAULT_MIN_SIMILARITY = 0.7


def _cmd_paraphrase(args) -> int:
    from pysynth.paraphrase.jobs import run
    from pysynth.paraphrase.pipeline import ParaphraseConfig
    from pysynth.pipelines import executor_from_args

    C.check_output(args.out)
    if args.candidates_out:
        C.check_output(args.candidates_out, "--candidates-out")
    cfg = ParaphraseConfig(pivot=args.pivot, decode=args.decode, beams=args.beam, groups=args.groups,
                           diversity=args.diversity, distinct=args.distinct, mode=args.mode, top=args.top, top_k=args.top_k, top_p=args.top_p,
                           unknown_penalty=args.unknown_penalty, length_penalty=args.length_penalty,
                           ban_unk=not args.allow_unk, strip_question=args.strip_question,
                           backend=C.backend(args.backend), threads=args.workers,
                           batch_size=args.batch_size, seed=args.seed, min_similarity=args.min_similarity,
                           **C.guards(args))
    summary = run(args.inp, args.out, cfg, candidates_out=args.candidates_out, flat=args.flat,
                  min_wellformed=args.min_wellformed, llm_options=C.llm_options(args, args.out),
                  executor=executor_from_args(args), chunk_size=args.chunk_size, resume=not args.restart)
    print(json.dumps(summary))
    return 0


def _cmd_train_pivot(args) -> int:
    from pysynth.data import shared_dir
    from pysynth.paraphrase.pivots import train_pivot

    print(json.dumps(train_pivot(shared_dir(args.data), args.out, args.direction, steps=args.steps,
                                 minutes=args.minutes, threads=args.threads, seed=args.seed)))
    return 0


def add_commands(sub) -> None:
    pp = sub.add_parser("paraphrase", help="paraphrases by pivoting through two seq2seq models with diverse beam "
                                           "search (Granstedt 2017)")
    ps = pp.add_subparsers(dest="verb", required=True, metavar="VERB")
    p = ps.add_parser("generate", help="paraphrase questions (`pysynth paraphrase --in ...` without the verb: "
                                       "deprecated)")
    C.add_in(p, help='JSONL/Parquet rows {"id"?, "question", ...}; other fields are carried to the paraphrases')
    C.add_out(p, help='output JSONL/Parquet: rows {"id", "question", "paraphrases", ...}')
    p.add_argument("--pivot", default="fr",
                   help="fr (the shipped English<->French models), keywords (keyword queries and the K2Q model), "
                        "FWD,BWD: two pysynth models, local Hugging Face translation model folders or LLM specs "
                        "(English->French, French->English), or one LLM spec (openai:URL?model=NAME, hf-causal:DIR): "
                        "the LLM paraphrases directly")
    p.add_argument("--decode", choices=("dbs", "beam", "sample"), default="dbs",
                   help="diverse beam search (default), beam search, or top-k/top-p sampling")
    C.add_decoding(p, beam=16, beam_aliases=("--beams",), groups=4, diversity=0.5, sampling=True)
    C.add_guards(p, note="; both pivot stages")
    p.add_argument("--distinct", action="store_true",
                   help="dbs: no two groups hold the same sequence, so each stage gives --beam distinct outputs "
                        "(the thesis's search, the default, lets groups merge)")
    p.add_argument("--mode", choices=("augmented", "diverse"), default="augmented",
                   help="augmented: the top scores > 0; diverse: unknowns cost 10, chosen paraphrases count as overlap")
    p.add_argument("--top", type=C.positive_int, default=3, help="paraphrases per question at most")
    p.add_argument("--unknown-penalty", type=float, default=None, help="per <unk> (default: 1 augmented, 10 diverse)")
    p.add_argument("--length-penalty", type=float, default=10.0, help="for a candidate > 2 words shorter (default 10)")
    p.add_argument("--allow-unk", action="store_true", help="let the models generate <unk> (the thesis's setting)")
    p.add_argument("--strip-question", action="store_true",
                   help="remove the pivot's final '?' before the backward model (the thesis's fix for its fre2eng "
                        "model; pysynth's rambles without it, so off by default)")
    p.add_argument("--candidates-out", default=None,
                   help="also write every candidate (pivot, search scores, score components) and rejected pivot")
    p.add_argument("--flat", action="store_true", help="write the augmented dataset: one row per original and paraphrase")
    C.add_backend(p)
    p.add_argument("--batch-size", type=C.positive_int, default=16, help="inputs per decoding batch")
    C.add_min_wellformed(p)
    C.add_min_similarity(p, "question vs paraphrase; applied inside the selection: the next best candidate at or "
                            "above S is chosen instead; rows get a 'similarity' list, --candidates-out a column; "
                            "the default was chosen on ComQA dev questions, see docs/paraphrase.md",
                         default=DEFAULT_MIN_SIMILARITY)
    C.add_llm(p, "--pivot")
    C.add_workers(p)
    C.add_job(p, chunk_size=256, what="questions")
    p.set_defaults(func=_cmd_paraphrase)

    t = ps.add_parser("train-pivot", help="train one pivot translation model (en-fr or fr-en) on the shared data "
                                          "(was python -m pysynth.paraphrase.pivots)")
    from pysynth.paraphrase.pivots import DIRECTIONS

    t.add_argument("--direction", required=True, choices=sorted(DIRECTIONS))
    C.add_out(t, help="training run folder (resumed when it holds a checkpoint)")
    C.add_data_dir(t)
    t.add_argument("--steps", type=C.positive_int, default=5000, help="training steps (5000)")
    t.add_argument("--minutes", type=C.float_in(0, False, None, "a number >= 0"), default=26.0,
                   help="also stop after this many minutes (0: no limit)")
    C.add_threads(t, default=2, help="torch threads")
    t.add_argument("--seed", type=int, default=0)
    t.set_defaults(func=_cmd_train_pivot)
