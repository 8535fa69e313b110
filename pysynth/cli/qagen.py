"""``pysynth qagen generate | evaluate``: roundtrip-consistent synthetic QA (Alberti et al. 2019)."""
from __future__ import annotations

import json

from pysynth.cli import _common as C


def _cmd_generate(args) -> int:
    from pysynth.pipelines import executor_from_args
    from pysynth.qagen.jobs import run
    from pysynth.qagen.pipeline import QAGenConfig

    C.check_output(args.out)
    if args.squad_out:
        C.check_output(args.squad_out, "--squad-out")
    if args.contexts == "sample":
        from pysynth.data import qagen_sample_path

        args.contexts = str(qagen_sample_path())
    cfg = QAGenConfig(top_k=args.top_k, joint=not args.independent, decode=args.decode, beam_size=args.beam_size,
                      match=args.match, margin=args.margin, neg_fraction=args.neg_fraction, seed=args.seed,
                      min_wellformed=args.min_wellformed)
    summary = run(args.contexts, args.out, cfg, answer_model=args.answer_model, question_model=args.question_model,
                  qa_model=args.qa_model, keep_discarded=args.keep_discarded, squad_out=args.squad_out,
                  executor=executor_from_args(args), chunk_size=args.chunk_size, threads=args.threads,
                  batch_size=args.batch_size, resume=not args.restart)
    print(json.dumps(summary))
    return 0


def _cmd_evaluate(args) -> int:
    from pysynth.qagen.evaluate import evaluate

    res = evaluate(args.squad, args.out, answer_model=args.answer_model, question_model=args.question_model,
                   qa_model=args.qa_model, limit=args.limit, seed=args.seed, threads=args.threads)
    print(json.dumps(res))
    return 0


def _match(s: str) -> str:
    import argparse

    from pysynth.qagen.pipeline import parse_match

    try:
        parse_match(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be 'exact' or 'f1:TAU' with 0 < TAU <= 1, got {s!r}") from None
    return s


def _contexts(s: str) -> str:
    return s if s == "sample" else C.input_file(s)


def _models(p) -> None:
    p.add_argument("--answer-model", default=None, metavar="M",
                   help="answer extraction: a span model name or folder (default qagen-span-minilm)")
    p.add_argument("--question-model", default=None, metavar="M",
                   help="question generation: a seq2seq model name or folder, or a local Hugging Face seq2seq "
                        "folder (default qagen-qg-copynet)")
    p.add_argument("--qa-model", default=None, metavar="M",
                   help="question answering: a span model or a local Hugging Face extractive-QA folder "
                        "(default: the answer model)")
    p.add_argument("--threads", type=int, default=0, help="onnxruntime / torch threads per worker (0: default)")


def add_commands(sub) -> None:
    from pysynth.pipelines import add_executor_arguments

    q = sub.add_parser("qagen", help="roundtrip-consistent synthetic QA generation (Alberti et al. 2019)")
    qs = q.add_subparsers(dest="verb", required=True, metavar="VERB")
    p = qs.add_parser("generate", help="contexts -> answer -> question -> roundtrip answer; keep consistent triples")
    p.add_argument("--contexts", required=True, type=_contexts,
                   help="SQuAD JSON (v1.1/v2.0; its questions are ignored), JSONL {id?, title?, context} or plain "
                        "text (blank-line separated passages); .gz allowed; 'sample': the bundled SQuAD sample")
    p.add_argument("--out", required=True, help="output JSONL/Parquet: one row per kept triple or unanswerable")
    _models(p)
    p.add_argument("--top-k", type=C.positive_int, default=10, help="answers are drawn from the top K spans (10)")
    p.add_argument("--independent", action="store_true",
                   help="score answer spans by independent start/end (the paper's joint scoring is the default)")
    p.add_argument("--decode", choices=("greedy", "beam", "dbs", "sample"), default="greedy",
                   help="question decoding (greedy: the paper)")
    p.add_argument("--beam-size", type=C.positive_int, default=4)
    p.add_argument("--match", type=_match, default="exact",
                   help="roundtrip test: exact (SQuAD-normalised exact match) or f1:TAU (token F1 >= TAU)")
    p.add_argument("--margin", type=float, default=None,
                   help="also require the QA answer to beat its no-answer score by this margin")
    p.add_argument("--neg-fraction", type=C.float_in(0, False, 1, "a number in [0, 1)"), default=0.2,
                   help="share of unanswerable rows (a kept question on another paragraph of its article; 0.2)")
    p.add_argument("--min-wellformed", type=C.float_in(0, False, 1, "a probability in [0, 1]"), default=None,
                   metavar="P", help="also discard kept triples whose question's well-formedness probability "
                                     "(pysynth.quality) is below P (reason not_wellformed)")
    p.add_argument("--keep-discarded", action="store_true", help="also write discarded triples (consistent=false)")
    p.add_argument("--squad-out", default=None, help="also write the kept set as SQuAD 2.0 JSON")
    p.add_argument("--batch-size", type=C.positive_int, default=16, help="contexts per model call")
    p.add_argument("--chunk-size", type=C.positive_int, default=64, help="contexts per resumable chunk")
    p.add_argument("--restart", action="store_true", help="discard finished chunks of an earlier run")
    p.add_argument("--seed", type=int, default=0)
    C.add_workers(p)
    add_executor_arguments(p)
    p.set_defaults(func=_cmd_generate)

    e = qs.add_parser("evaluate", help="kept vs discarded correctness, answer recall@10, keep rate, QA EM/F1 on "
                                       "held-out SQuAD articles")
    e.add_argument("--squad", required=True, type=C.input_file, help="SQuAD JSON with gold questions (v1.1/v2.0)")
    e.add_argument("--out", required=True, help="output folder: results.json and the blind labelling sheet")
    _models(e)
    e.add_argument("--limit", type=int, default=0, help="paragraphs to use (0: all)")
    e.add_argument("--seed", type=int, default=0)
    e.set_defaults(func=_cmd_evaluate)
