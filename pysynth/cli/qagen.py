"""``pysynth qagen generate | questions | evaluate | train-span | train-qg | train-encoder-qg``:
roundtrip-consistent synthetic QA (Alberti et al. 2019)."""
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
    if args.inp == "sample":
        from pysynth.data import qagen_sample_path

        args.inp = str(qagen_sample_path())
    cfg = QAGenConfig(top_k=args.spans, joint=not args.independent, decode=args.decode, beam_size=args.beam,
                      match=args.match, margin=args.margin, neg_fraction=args.neg_fraction, seed=args.seed,
                      min_wellformed=args.min_wellformed, **_answer_config(args))
    summary = run(args.inp, args.out, cfg, answer_model=args.answer_model, question_model=args.question_model,
                  qa_model=args.qa_model, llm=C.llm_options(args, args.out), keep_discarded=args.keep_discarded,
                  squad_out=args.squad_out,
                  executor=executor_from_args(args), chunk_size=args.chunk_size, threads=args.threads,
                  batch_size=args.batch_size, resume=not args.restart)
    print(json.dumps(summary))
    return 0


def _answer_config(args) -> dict:
    return {"answers_per_context": args.answers_per_context, "one_sentence": args.one_sentence,
            "max_answer_words": args.max_answer_words or None, **C.guards(args),
            "max_context_chars": getattr(args, "max_context_chars", None)}


def _cmd_questions(args) -> int:
    from pysynth.pipelines import executor_from_args
    from pysynth.qagen.questions import run

    C.check_output(args.out)
    summary = run(args.inp, args.out, question_model=args.question_model, decode=args.decode, beam_size=args.beam,
                  seed=args.seed, **C.guards(args), executor=executor_from_args(args),
                  chunk_size=args.chunk_size, threads=args.threads, resume=not args.restart,
                  llm_options=C.llm_options(args, args.out))
    print(json.dumps(summary))
    return 0


def _cmd_evaluate(args) -> int:
    from pysynth.qagen.evaluate import evaluate
    from pysynth.qagen.pipeline import QAGenConfig

    res = evaluate(args.inp, args.out, answer_model=args.answer_model, question_model=args.question_model,
                   qa_model=args.qa_model, limit=args.limit, seed=args.seed, threads=args.threads,
                   draws=args.draws, config=QAGenConfig(match=args.match, **_answer_config(args)),
                   roundtrip_only=args.roundtrip_only)
    print(json.dumps(res))
    return 0


def _cmd_train_span(args) -> int:
    from pysynth.models.encoders import save_pretrained
    from pysynth.qagen.train import export_span, train_span

    model, tok, info = train_span(args.squad11, args.squad2, args.n_qa, args.n_ae, args.n_qa2, args.epochs, args.lr,
                                  args.batch_size, args.max_length, args.seed, args.threads, args.init)
    save_pretrained(model, tok, str(args.out) + ".torch")
    info["train"] = {k: getattr(args, k) for k in ("n_qa", "n_ae", "n_qa2", "epochs", "lr", "batch_size",
                                                   "max_length", "seed", "init")}
    export_span(model, tok, args.out, info=info)
    print(json.dumps(info))
    return 0


def _cmd_train_qg(args) -> int:
    from pysynth.qagen.train import train_qg

    print(json.dumps(train_qg(args.squad11, args.out, args.minutes, args.threads, args.seed), default=str))
    return 0


def _cmd_train_encoder_qg(args) -> int:
    from pysynth.qagen.encoder_qg import train_encoder_qg

    print(json.dumps(train_encoder_qg(args.squad11, args.out, args.n, lr=args.lr, batch_size=args.batch_size,
                                      seed=args.seed, threads=args.threads)))
    return 0


def _match(s: str) -> str:
    import argparse

    from pysynth.qagen.pipeline import parse_match

    try:
        parse_match(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be auto, learned, learned:P (0 <= P <= 1), exact or f1:TAU "
                                         f"(0 < TAU <= 1), got {s!r}") from None
    return s


def _match_flag(p) -> None:
    p.add_argument("--match", type=_match, default="auto", metavar="SPEC",
                   help="roundtrip test: learned[:P] (keep a triple iff a score of the QA model's expected F1 with "
                        "the answer, the question's well-formedness and its log-probability reaches P, the shipped "
                        "threshold by default; else reason roundtrip_low_score), exact (the paper: SQuAD-normalised "
                        "exact match), f1:TAU (token F1 >= TAU) or auto: learned with the shipped models, exact "
                        "with others (auto)")


def _contexts(s: str) -> str:
    return s if s == "sample" else C.input_file(s)


def _models(p) -> None:
    p.add_argument("--answer-model", default=None, metavar="M",
                   help="answer extraction: a span model name or folder, or an LLM spec proposing answers (answers "
                        "not in the context are dropped) (default qagen-span-minilm)")
    p.add_argument("--question-model", default=None, metavar="M",
                   help="question generation: a seq2seq model name or folder, a local Hugging Face seq2seq "
                        "folder, or an LLM spec (openai:URL?model=NAME, hf-causal:DIR) (default qagen-qg-copynet)")
    p.add_argument("--qa-model", default=None, metavar="M",
                   help="question answering: a span model or a local Hugging Face extractive-QA folder "
                        "(default: the answer model)")
    C.add_threads(p, help="onnxruntime / torch threads per worker")


#: what qagen does besides the search's guards (--no-repeat-ngram's help)
_REDECODE = ("; a question that still repeats a word N-gram is decoded again by beam search (the best hypothesis "
             "without one is taken; qagen generate discards it otherwise, reason repeated_ngram)")


def _answer_flags(p) -> None:
    from pysynth.qagen.pipeline import QAGenConfig

    d = QAGenConfig()
    g = p.add_argument_group("answers")
    g.add_argument("--answers-per-context", type=C.positive_int, default=d.answers_per_context, metavar="K",
                   help=f"answers drawn per context without replacement from the top spans, each asked and checked "
                        f"({d.answers_per_context})")
    g.add_argument("--one-sentence", action=__import__("argparse").BooleanOptionalAction, default=d.one_sentence,
                   help="reject drawn answer spans that cross a sentence boundary (reason crosses_sentence; the next "
                        f"draw replaces them; {'on' if d.one_sentence else 'off'} by default)")
    g.add_argument("--max-answer-words", type=C.count, default=d.max_answer_words or 0, metavar="N",
                   help=f"reject drawn answer spans of more than N words (reason too_many_words); 0: no limit "
                        f"({d.max_answer_words or 0})")
    C.add_guards(p, note=_REDECODE)


def add_commands(sub) -> None:
    q = sub.add_parser("qagen", help="roundtrip-consistent synthetic QA generation (Alberti et al. 2019)")
    qs = q.add_subparsers(dest="verb", required=True, metavar="VERB")
    p = qs.add_parser("generate", help="contexts -> answer -> question -> roundtrip answer; keep consistent triples")
    C.add_in(p, "--contexts", type=_contexts, metavar="IN|sample",
             help="contexts: SQuAD JSON (v1.1/v2.0; its questions are ignored), JSONL {id?, title?, context} or plain "
                  "text (blank-line separated passages); .gz allowed; --in sample: the bundled SQuAD sample")
    C.add_out(p, help="output JSONL/Parquet: one row per kept triple or unanswerable")
    _models(p)
    C.deprecate(p.add_argument("--spans", "--top-k", dest="spans", type=C.positive_int, default=10, metavar="K",
                               help="answers are drawn from the top K spans (10)"), top_k="--spans")
    p.add_argument("--independent", action="store_true",
                   help="score answer spans by independent start/end (the paper's joint scoring is the default)")
    p.add_argument("--decode", choices=("greedy", "beam", "dbs", "sample"), default="greedy",
                   help="question decoding (greedy: the paper)")
    C.add_decoding(p, beam=4, beam_aliases=("--beam-size",))
    _match_flag(p)
    p.add_argument("--margin", type=float, default=None,
                   help="also require the QA answer to beat its no-answer score by this margin")
    p.add_argument("--neg-fraction", type=C.float_in(0, False, 1, "a number in [0, 1)"), default=0.2,
                   help="share of unanswerable rows (a kept question on another paragraph of its article; 0.2)")
    p.add_argument("--max-context-chars", type=C.int_in(1, 2**31 - 1, "characters"), default=C.V.MAX_CONTEXT_CHARS,
                   metavar="N", help="a longer context is not read: one discarded row (reason context_too_long), "
                                     f"counted; the run goes on (default {C.V.MAX_CONTEXT_CHARS:,}, as pysynth serve)")
    p.add_argument("--min-wellformed", type=C.float_in(0, False, 1, "a probability in [0, 1]"), default=None,
                   metavar="P", help="also discard kept triples whose question's well-formedness probability "
                                     "(pysynth.quality) is below P (reason not_wellformed)")
    _answer_flags(p)
    p.add_argument("--keep-discarded", action="store_true", help="also write discarded triples (consistent=false)")
    p.add_argument("--squad-out", default=None, help="also write the kept set as SQuAD 2.0 JSON")
    p.add_argument("--batch-size", type=C.positive_int, default=16, help="contexts per model call")
    C.add_llm(p, "--question-model or --answer-model")
    C.add_workers(p)
    C.add_job(p, chunk_size=64, what="contexts")
    p.set_defaults(func=_cmd_generate)

    w = qs.add_parser("questions", help="a question for each given answer: rows {context, answer_text, answer_start} "
                                        "-> the rows with 'question'")
    C.add_in(w, help="JSONL/Parquet rows {context, answer_text, answer_start} (other fields are kept); bad rows are "
                     "left out and counted with their reason")
    C.add_out(w, help="output JSONL/Parquet: the rows with 'question'")
    w.add_argument("--question-model", default=None, metavar="M",
                   help="a seq2seq model name or folder, a local Hugging Face seq2seq folder, or an LLM spec "
                        "(openai:URL?model=NAME, hf-causal:DIR) (default qagen-qg-copynet)")
    C.add_threads(w, help="onnxruntime / torch threads per worker")
    w.add_argument("--decode", choices=("greedy", "beam", "dbs", "sample"), default="greedy",
                   help="question decoding (greedy)")
    C.add_decoding(w, beam=4)
    C.add_guards(w, note=_REDECODE)
    C.add_llm(w, "--question-model")
    C.add_workers(w)
    C.add_job(w, chunk_size=256, what="answers")
    w.set_defaults(func=_cmd_questions)

    e = qs.add_parser("evaluate", help="kept vs discarded correctness, answer recall@10, keep rate, QA EM/F1 on "
                                       "held-out SQuAD articles")
    C.add_in(e, "--squad", help="SQuAD JSON with gold questions (v1.1/v2.0)", stdin=False)
    C.add_out(e, help="output folder: results.json and the blind labelling sheet")
    _models(e)
    e.add_argument("--limit", type=C.count, default=0, help="paragraphs to use (0: all)")
    e.add_argument("--seed", type=int, default=0)
    e.add_argument("--draws", type=C.positive_int, default=2, help="generation runs, seeds SEED, SEED+1, ... (2)")
    e.add_argument("--roundtrip-only", action="store_true",
                   help="only kept vs discarded (skip recall@10, QG from gold answers and QA scores)")
    _match_flag(e)
    _answer_flags(e)
    e.set_defaults(func=_cmd_evaluate)

    s = qs.add_parser("train-span", help="train the answer-extraction + QA span model on SQuAD (torch + "
                                         "transformers; was python -m pysynth.qagen.train span)")
    _squad11(s)
    s.add_argument("--squad2", required=True, type=C.input_file, help="SQuAD 2.0 JSON with unanswerable questions")
    C.add_out(s, help="ONNX store to write (the torch weights go to OUT.torch)")
    s.add_argument("--n-qa", type=C.count, default=7000, help="QA questions (7000)")
    s.add_argument("--n-ae", type=C.count, default=4000, help="answer-extraction contexts (4000)")
    s.add_argument("--n-qa2", type=C.count, default=0, help="SQuAD 2.0 questions (0: all)")
    s.add_argument("--epochs", type=C.positive_int, default=1)
    s.add_argument("--lr", type=C.float_in(0, True, None, "a positive number"), default=5e-5)
    s.add_argument("--batch-size", type=C.positive_int, default=16)
    s.add_argument("--max-length", type=C.positive_int, default=192)
    s.add_argument("--seed", type=int, default=0)
    C.add_threads(s, help="torch threads")
    s.add_argument("--init", default=None, help="continue from a span-encoder folder (OUT.torch of a run)")
    s.set_defaults(func=_cmd_train_span)

    g = qs.add_parser("train-qg", help="train the CopyNet question generator on SQuAD (torch; was "
                                       "python -m pysynth.qagen.train qg)")
    _squad11(g)
    C.add_out(g, help="training run folder (resumed when it holds a checkpoint)")
    g.add_argument("--minutes", type=C.float_in(0, False, None, "a number >= 0"), default=45.0,
                   help="stop after this many minutes (45)")
    C.add_threads(g, help="torch threads")
    g.add_argument("--seed", type=int, default=0)
    g.set_defaults(func=_cmd_train_qg)

    x = qs.add_parser("train-encoder-qg", help="fine-tune MiniLM as an encoder-only question generator (torch + "
                                               "transformers; was python -m pysynth.qagen.encoder_qg)")
    _squad11(x)
    C.add_out(x, help="model folder to write")
    x.add_argument("--n", type=C.positive_int, default=8000, help="SQuAD 1.1 train questions (8000)")
    x.add_argument("--lr", type=C.float_in(0, True, None, "a positive number"), default=5e-5)
    x.add_argument("--batch-size", type=C.positive_int, default=16)
    x.add_argument("--seed", type=int, default=0)
    C.add_threads(x, help="torch threads")
    x.set_defaults(func=_cmd_train_encoder_qg)


def _squad11(p) -> None:
    p.add_argument("--squad11", required=True, type=C.input_file, help="SQuAD 1.1 train JSON")
