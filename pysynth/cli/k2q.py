"""``pysynth k2q ...``: keyword-to-question synthetic data and models (Ding & Balog 2018).

keywords, synthesize, make-corpus (data); train, generate (seq2seq models); table1, table2
(the paper's experiments).  Library functions are imported inside the commands, so the parser
loads no torch and a renamed library function is fixed in one place.
"""
from __future__ import annotations

import json
import sys
import time
from pathlib import Path

from pysynth.cli import _common as C

KQGM = ("baseline", "paraphrase")
STRATEGIES = ("popular", "discriminative", "combination")
DEFAULT_MODEL = "k2q-copynet-small"


def _rows_with(src, field: str, flag: str = "--in", path: str | None = None) -> list:
    """The rows of ``src`` (a path, or rows read from ``path``), each with a string ``field``."""
    rows = list(C.read_rows(src, flag)) if path is None else list(src)
    path = src if path is None else path
    for i, r in enumerate(rows, 1):
        if not isinstance(r, dict) or not isinstance(r.get(field), str):
            raise ValueError(f"{flag} {path!r} row {i}: needs a string field {field!r}")
    return rows


# ------------------------------------------------------------------------------ data

def _cmd_keywords(args) -> int:
    from pysynth import sampling
    from pysynth.data import questions_sample
    from pysynth.io import write_rows
    from pysynth.k2q.keywords import DEFAULT_CONFIG, KeywordGenerator

    C.check_output(args.out)
    t0 = time.perf_counter()
    rows = _rows_with(args.inp, "question")
    if not rows:
        raise ValueError(f"--in {args.inp!r} has no rows")
    if args.corpus:
        crows = _rows_with(args.corpus, "question", "--corpus")
        corpus, cgroups = [r["question"] for r in crows], [r.get("cluster_id") for r in crows]
    else:
        corpus, cgroups = questions_sample(), None
    questions = [r["question"] for r in rows]
    groups = [r.get("cluster_id") for r in rows]
    phrases = DEFAULT_CONFIG["phrases"] if args.phrases is None else args.phrases
    print(f"[1/3] statistics over {len(corpus) + len(questions):,} questions"
          f"{' with phrase detection' if phrases else ''} ...", file=sys.stderr, flush=True)
    gen = KeywordGenerator(corpus, questions, cgroups, groups, phrases=phrases, workers=args.workers)
    model = sampling.KeywordModel(
        model=args.kqgm or "paraphrase", strategy=args.strategy,
        lam=DEFAULT_CONFIG["lam"] if args.lam is None else args.lam,
        alpha=DEFAULT_CONFIG["alpha"] if args.alpha is None else args.alpha,
        beta=DEFAULT_CONFIG["beta"] if args.beta is None else args.beta,
    )
    t1 = time.perf_counter()
    print(f"[2/3] sampling {args.m} candidates x {len(questions):,} questions ({model!r}) ...",
          file=sys.stderr, flush=True)
    kws = gen.generate(model, m=args.m, seed=args.seed, workers=args.workers)
    t2 = time.perf_counter()
    write_rows(args.out, (dict(r, keywords=k) for r, k in zip(rows, kws)))
    n = len(questions) * args.m
    print(f"[3/3] wrote {args.out}: {n:,} candidates in {t2 - t1:.2f} s ({n / max(t2 - t1, 1e-9):,.0f}/s); "
          f"total {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


def _cmd_synthesize(args) -> int:
    from pysynth.k2q.synthesize import PRESETS, SynthesisConfig, synthesize

    if args.out == "-":  # the run keeps resumable parts and a .meta.json beside its output
        raise C.UsageError("argument --out: k2q synthesize needs a file (it writes OUT.meta.json and "
                           "resumable parts beside it), not -")
    C.check_output(args.out)
    inp = args.inp
    if inp is None:
        from pysynth.data import k2q_demo_path

        inp = str(k2q_demo_path())
        C.say(f"no --in given: the bundled demo questions ({inp})")
    elif inp == "-":
        inp = C.read_rows("-")
    base = PRESETS[args.preset] if args.preset else SynthesisConfig()
    changes = {k: v for k, v in (
        ("model", args.kqgm), ("strategy", args.strategy), ("phrases", args.phrases),
        ("lam", args.lam), ("alpha", args.alpha), ("beta", args.beta), ("m", args.m),
        ("kqf", args.kqf), ("tdf", args.tdf), ("n_results", args.n_results), ("keep", args.keep),
        ("retrieval", args.retrieval), ("mu", args.mu), ("weights", args.weights), ("seed", args.seed))
        if v is not None}
    cfg = base.replace(**changes)
    from pysynth.pipelines import executor_from_args

    try:
        executor = executor_from_args(args)
    except ValueError as exc:  # a bad flag combination is a usage error
        raise C.UsageError(str(exc)) from None
    synthesize(inp, args.out, executor=executor, clusters=args.clusters, corpus=args.corpus, config=cfg,
               workers=args.workers, chunk_size=args.chunk_size, resume=not args.restart,
               keep_parts=args.keep_parts, progress=not args.quiet)
    return 0


def _cmd_make_corpus(args) -> int:
    from pysynth.data.synthetic import iter_corpus, write_corpus

    t0 = time.perf_counter()
    if args.out == "-":
        from pysynth.io import write_jsonl

        def rows():
            i = 0
            for qs, cl in iter_corpus(args.n, args.seed, args.profile):
                for q, c in zip(qs, cl.tolist()):
                    yield {"id": i, "question": q, "cluster_id": c if c >= 0 else None}
                    i += 1

        write_jsonl("-", rows())
    else:
        C.check_output(args.out)
        write_corpus(args.out, args.n, seed=args.seed, profile=args.profile)
    print(f"wrote {args.out}: {args.n:,} questions in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


# ------------------------------------------------------------------------------ models

def _cmd_train(args) -> int:
    from pysynth.models.config import Seq2SeqConfig, TrainConfig
    from pysynth.models.train import train

    if args.inp == "synthetic":
        from pysynth.k2q.neural import make_synthetic_pairs

        pairs = make_synthetic_pairs(samples_per_question=args.samples_per_question, seed=args.seed)
    else:
        pairs = _pairs(args.inp, "--in", args.source_field, args.target_field)
    dev = _pairs(args.dev, "--dev", args.source_field, args.target_field) if args.dev else None
    mc = Seq2SeqConfig(arch=args.arch or "copynet", vocab_size=args.vocab_size, emb_dim=args.emb_dim,
                       enc_hidden=args.enc_hidden, dec_hidden=args.dec_hidden,
                       tie_embeddings=args.tie_embeddings, dropout=args.dropout,
                       max_src_len=args.max_src_len, max_tgt_len=args.max_tgt_len)
    tc = TrainConfig(lr=args.lr, clip_norm=args.clip_norm, batch_size=args.batch_size,
                     max_steps=args.max_steps, max_epochs=args.max_epochs, max_minutes=args.max_minutes,
                     eval_every=args.eval_every, patience=args.patience, dev_fraction=args.dev_fraction,
                     eval_max_pairs=args.eval_max_pairs, ckpt_every=args.ckpt_every,
                     log_every=args.log_every, seed=args.seed, device=args.device, threads=args.threads)
    summary = train(pairs, args.out, mc, tc, dev_pairs=dev, resume=not args.no_resume)
    print(json.dumps(summary))
    return 0


def _pairs(path: str, flag: str, src_field: str, tgt_field: str) -> list:
    pairs = []
    for i, r in enumerate(C.read_rows(path, flag), 1):
        src, tgt = (r.get(src_field), r.get(tgt_field)) if isinstance(r, dict) else (None, None)
        if not isinstance(src, str) or not isinstance(tgt, str):
            raise ValueError(f"{flag} {path!r} row {i}: needs string fields {src_field!r} and {tgt_field!r}")
        pairs.append((src, tgt))
    return pairs


def _cmd_generate(args) -> int:
    from pysynth.io import write_rows
    from pysynth.models.generate import Generator

    C.check_output(args.out)
    spec = C.llm_spec(args.model, "--model")
    model = None if spec else C.resolve_model(args.model, default=DEFAULT_MODEL)
    if model is not None and model.kind != "pysynth":
        raise C.UsageError(f"argument --model: {str(model.path)!r} is a Hugging Face model; k2q generate runs "
                           f"pysynth seq2seq models ({DEFAULT_MODEL} or a `pysynth k2q train` folder)")
    rows = list(C.read_rows(args.inp))
    if rows and not any(isinstance(r, dict) and isinstance(r.get("keywords"), str) for r in rows):
        _rows_with(rows[:1], "keywords", path=args.inp)  # no row has the field: the wrong input, most likely
    backend = args.backend
    if backend == "auto" and (args.device not in (None, "cpu") or args.kernels == "triton"):
        backend = "torch"  # a GPU or the Triton kernels: the torch backend's
    if spec:  # an LLM in the k2q role: --n questions asked per reply, --samples replies
        from pysynth.llm.text2text import open_text_role

        gen = open_text_role(spec, "k2q", "keywords", C.llm_options(args, args.out), {"n": args.n}, what="--model")
    else:
        gen = Generator.load(str(model.path), backend=C.backend(backend, model.path), device=args.device,
                             kernels=args.kernels)
    groups = args.groups if args.diverse else 1
    beam = max(args.beam, args.groups) if args.diverse and args.groups else args.beam
    from pysynth.k2q.generate import generate_rows

    # a row the model cannot read is written with a "reason" (and counted), never aborting the batch
    rows, _ = generate_rows(gen, rows, progress=not args.quiet and len(rows) >= 100, beam=beam, n=args.n, groups=groups,
                            diversity=args.diversity, method=("diverse" if args.diverse else None),
                            batch_size=args.batch_size, length_penalty=args.length_penalty, alpha=args.alpha,
                            max_len=args.max_len, **C.guards(args))
    if args.min_wellformed is not None:
        from pysynth.quality import filter_rows

        filter_rows(rows, "questions", args.min_wellformed, parallel=("scores",))
    if args.min_similarity is not None:  # the meaning filter: keyword query vs each question
        from pysynth.models.embed import similarity
        from pysynth.pipelines import PairScoreFilter

        before = [r.get("dropped", 0) for r in rows]
        wf = ("wellformed",) if args.min_wellformed is not None else ()
        PairScoreFilter("similarity", args.min_similarity, similarity, source="keywords").apply(
            rows, "questions", parallel=("scores", *wf))
        for r, b in zip(rows, before):
            r["dropped"] += b  # both filters' drops
    write_rows(args.out, rows)
    if spec and args.out != "-":  # the LLM's requests, tokens, cache hits and drops (stdout is not the output)
        from collections import Counter

        from pysynth.llm import summary, usage

        print(json.dumps({"rows": len(rows), "reasons": dict(sorted(Counter(r["reason"] for r in rows
                                                                          if r.get("reason")).items())),
                          **summary(usage(gen), used=True)}))
    return 0


# ------------------------------------------------------------------------------ experiments

def _cmd_table1(args) -> int:
    from pysynth.k2q.table1 import run_table1

    run_table1(repeats=args.repeats, folds=args.folds, seed=args.seed, workers=args.workers,
               data=args.data, out_dir=args.out)
    print(f"wrote {args.out}/table1.md, table1.json, fig6_grid.csv, fig6.png", file=sys.stderr)
    return 0


def _table2_model(spec: str):
    """``NAME=MODEL`` or ``MODEL`` (a registry name or a model folder; NAME defaults to its name)."""
    import argparse

    name, sep, model = spec.partition("=")
    if not sep:
        name, model = Path(spec).name or spec, spec
    if not name or not model:
        raise argparse.ArgumentTypeError(f"expected [NAME=]MODEL (e.g. copynet=runs/copynet), got {spec!r}")
    return name, model


def _cmd_table2(args) -> int:
    from pysynth.k2q.table2 import run_table2

    models = {name: str(C.resolve_model(m).path) for name, m in (args.model or [])}
    baselines = [b.strip() for b in args.baselines.split(",") if b.strip() and b.strip() != "none"]
    # auto: onnx only when every model has an ONNX export (a training run folder has none)
    backend = "onnx" if all(C.backend(args.backend, m) == "onnx" for m in models.values()) \
        and C.backend(args.backend) == "onnx" else "torch"
    run_table2(args.inp, models, data=args.data, out_dir=args.out, beam=args.beam, baselines=baselines,
               limit=args.limit, workers=args.workers, seed=args.seed, backend=backend, **C.guards(args))
    print(f"wrote {args.out}/table2.md, table2.json, table2_outputs.jsonl", file=sys.stderr)
    return 0


# ------------------------------------------------------------------------------ parser

def _kqgm_args(p, default_note: str, strategy_default) -> None:
    p.add_argument("--kqgm", choices=KQGM, default=None, help=f"keyword query generation model ({default_note})")
    C.add_model_alias(p, "kqgm", "--kqgm", KQGM)
    p.add_argument("--strategy", choices=STRATEGIES, default=strategy_default,
                   help="keyword sampling strategy")
    g = p.add_mutually_exclusive_group()
    g.add_argument("--phrases", dest="phrases", action="store_true", default=None, help="detect phrases (default)")
    g.add_argument("--no-phrases", dest="phrases", action="store_false")
    p.add_argument("--lambda", dest="lam", type=float, default=None, help="Eq. 1 collection weight")
    p.add_argument("--alpha", type=float, default=None, help="Eq. 6 question weight")
    p.add_argument("--beta", type=float, default=None, help="Eq. 6 paraphrase weight")


def add_commands(sub) -> None:
    from pysynth._validate import MAX_CANDIDATES as MAX_M
    from pysynth._validate import MAX_DEPTH as MAX_N_RESULTS

    k2q = sub.add_parser("k2q", help="keyword-to-question synthetic data and models (Ding & Balog 2018)")
    ks = k2q.add_subparsers(dest="k2q_command", required=True, metavar="VERB")

    kw = ks.add_parser("keywords", help="generate keyword queries for questions (Ding & Balog 2018, Sect. 3.1)")
    C.add_in(kw, help='JSONL/Parquet rows {"question": ..., "cluster_id": optional}')
    C.add_out(kw, help='JSONL/Parquet output: input rows plus "keywords": [m strings]; - for stdout')
    kw.add_argument("--corpus", type=C.input_file,
                    help="JSONL question corpus for the statistics (default: the bundled 18k questions)")
    _kqgm_args(kw, "default paraphrase", "discriminative")
    kw.add_argument("--m", type=C.int_in(1, MAX_M, "candidates per question"), default=20,
                    help="candidates per question")
    kw.add_argument("--seed", type=int, default=0)
    C.add_workers(kw)
    kw.set_defaults(func=_cmd_keywords)

    sy = ks.add_parser(
        "synthesize", help="the K2Q synthetic-data pipeline: KQGM -> KQF -> TDF (Ding & Balog 2018, Sect. 3)",
        description="Pair every question with its best keyword query (m candidates, SDM keyword query "
                    "filter) and rank the pairs by the training data filter. Resumes an interrupted run.")
    C.add_in(sy, required=False, default=None,
             help='questions: JSONL (.gz) or Parquet rows {"question", "id"?, "cluster_id"?} '
                  "(default: the bundled 22k CC BY-SA demo questions)")
    C.add_out(sy, help="output .jsonl (+ .meta.json) or .parquet")
    sy.add_argument("--clusters", type=C.input_file, help='paraphrase clusters: JSONL rows {"cluster_id", "ids": [question ids]}')
    sy.add_argument("--corpus", type=C.input_file, help="extra questions for the statistics and the retrieval corpus only")
    sy.add_argument("--preset", choices=["baseline", "par", "par-ph", "par-ph-kqf", "par-ph-kqf-tdf"],
                    help="a Fig. 7 ablation configuration (other options override it)")
    _kqgm_args(sy, "default: the preset's, else paraphrase", None)
    sy.add_argument("--m", type=C.int_in(1, MAX_M, "candidates per question"), default=None,
                    help="candidates per question (default 20)")
    g = sy.add_mutually_exclusive_group()
    g.add_argument("--kqf", dest="kqf", action="store_true", default=None, help="keyword query filter (default)")
    g.add_argument("--no-kqf", dest="kqf", action="store_false")
    g = sy.add_mutually_exclusive_group()
    g.add_argument("--tdf", dest="tdf", action="store_true", default=None, help="training data filter (default)")
    g.add_argument("--no-tdf", dest="tdf", action="store_false")
    sy.add_argument("--n-results", dest="n_results", type=C.int_in(1, MAX_N_RESULTS, "SDM depth"), default=None,
                    help="N, SDM depth (default 100)")
    sy.add_argument("--keep", type=C.count, default=None, help="L: write only the L best pairs (default all)")
    sy.add_argument("--retrieval", choices=["sdm", "bm25"], default=None, help="retrieval model of the filters")
    sy.add_argument("--mu", type=float, default=None)
    sy.add_argument("--weights", type=C.sdm_weights, default=None, help="SDM weights, e.g. 0.85,0.10,0.05")
    sy.add_argument("--seed", type=int, default=None)
    C.add_workers(sy)
    sy.add_argument("--keep-parts", dest="keep_parts", action="store_true", help="keep the finished chunks' parts")
    sy.add_argument("--quiet", action="store_true", help="no progress lines")
    C.add_job(sy, chunk_size=20_000, what="questions")
    sy.set_defaults(func=_cmd_synthesize)

    mc = ks.add_parser("make-corpus", help="generate a synthetic question corpus with paraphrase clusters")
    mc.add_argument("--n", type=int, required=True, help="number of questions")
    C.add_out(mc, help='JSONL(.gz) rows {"id", "question", "cluster_id"}; - for stdout')
    mc.add_argument("--seed", type=int, default=0)
    mc.add_argument("--profile", type=C.input_file, default=None, help="profile JSON (default: the shipped one)")
    mc.set_defaults(func=_cmd_make_corpus)

    t = ks.add_parser("train", help="train EDNet/AttNet/CopyNet on keyword-question pairs")
    C.add_in(t, "--pairs", metavar="IN|synthetic", type=lambda s: s if s == "synthetic" else C.input_file(s),
             help="JSONL with 'keywords' and 'question' fields, or --in synthetic (stand-in pairs from Q minus T0)")
    from pysynth.models.config import ARCHS  # the registry's GRU seq2seq names

    t.add_argument("--arch", choices=ARCHS, default=None, help="architecture (default copynet)")
    C.add_model_alias(t, "arch", "--arch", ARCHS)
    C.add_out(t, help="run folder (resumes from its checkpoint.pt)")
    t.add_argument("--dev", type=C.input_file, help="JSONL dev pairs for early stopping (default: 2%% of --in)")
    t.add_argument("--source-field", default="keywords")
    t.add_argument("--target-field", default="question")
    t.add_argument("--samples-per-question", type=int, default=2, help="with --in synthetic")
    for flag, typ, default in (("--vocab-size", int, 44000), ("--emb-dim", int, 100), ("--enc-hidden", int, 200),
                               ("--dec-hidden", int, 400)):
        t.add_argument(flag, type=typ, default=default)
    t.add_argument("--tie-embeddings", action="store_true")
    t.add_argument("--dropout", type=float, default=0.5)
    t.add_argument("--max-src-len", type=int, default=32)
    t.add_argument("--max-tgt-len", type=int, default=40)
    t.add_argument("--lr", type=float, default=1e-4)
    t.add_argument("--clip-norm", type=float, default=0.1)
    t.add_argument("--batch-size", type=int, default=64)
    t.add_argument("--max-steps", type=int, default=0)
    t.add_argument("--max-epochs", type=int, default=10)
    t.add_argument("--max-minutes", type=float, default=0.0)
    t.add_argument("--eval-every", type=int, default=1000)
    t.add_argument("--patience", type=int, default=5)
    t.add_argument("--dev-fraction", type=float, default=0.02, help="dev share of --in when no --dev")
    t.add_argument("--eval-max-pairs", type=int, default=500, help="dev pairs decoded per evaluation")
    t.add_argument("--ckpt-every", type=int, default=500)
    t.add_argument("--log-every", type=int, default=100)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    C.add_threads(t, help="torch intra-op threads")
    t.add_argument("--no-resume", action="store_true", help="ignore an existing checkpoint in --out")
    t.set_defaults(func=_cmd_train)

    g = ks.add_parser("generate", help="questions for keyword queries (JSONL rows {'keywords'})")
    C.add_model(g, DEFAULT_MODEL, "a K2Q seq2seq model: a name or folder, or an LLM spec (openai:URL?model=NAME, "
                                  "hf-causal:DIR)")
    C.add_in(g, help="JSONL/Parquet rows {'keywords': str}")
    C.add_out(g, help="output JSONL/Parquet (- for stdout)")
    C.add_decoding(g, beam=5, groups=5, diversity=0.5, seed=False)
    C.add_guards(g)
    g.add_argument("--diverse", action="store_true", help="diverse beam search (--groups, --diversity)")
    g.add_argument("--n", type=C.positive_int, default=5, help="questions per keyword query (5)")
    C.add_backend(g)
    g.add_argument("--device", default=None, choices=("auto", "cpu", "cuda"), help="torch backend: the device")
    g.add_argument("--kernels", default="auto", choices=("auto", "triton", "torch"),
                   help="torch backend: fused Triton decode-step kernels (auto: on CUDA when triton is installed)")
    g.add_argument("--batch-size", type=C.positive_int, default=32)
    g.add_argument("--length-penalty", choices=("none", "average", "gnmt"), default="none")
    g.add_argument("--alpha", type=float, default=0.6, help="--length-penalty gnmt: alpha (0.6)")
    g.add_argument("--max-len", type=C.positive_int, default=None)
    C.add_min_wellformed(g)
    C.add_min_similarity(g, "keyword query vs question; rows get a 'similarity' list and a 'dropped' count")
    C.add_llm(g, "--model")
    g.set_defaults(func=_cmd_generate)

    t1 = ks.add_parser("table1", help="reproduce Table 1 and Fig. 6 of Ding & Balog 2018 on the shared data")
    t1.add_argument("--repeats", type=C.positive_int, default=10, help="R repetitions (the paper: 100)")
    t1.add_argument("--folds", type=C.positive_int, default=5)
    t1.add_argument("--seed", type=int, default=0)
    C.add_workers(t1)
    C.add_data_dir(t1)
    C.add_out(t1, required=False, default="results/k2q_table1", help="output folder (results/k2q_table1)")
    t1.set_defaults(func=_cmd_table1)

    t2 = ks.add_parser("table2", help="reproduce Table 2 of Ding & Balog 2018: SDM, TBM and neural K2Q models on T0")
    C.add_in(t2, "--pairs", stdin=False,
             help='JSONL keyword-question pairs {"keywords": str, "question": str} the baselines learn from (.gz ok)')
    t2.add_argument("--model", action="append", type=_table2_model, metavar="[NAME=]MODEL",
                    help="a trained model (folder or name), e.g. copynet=runs/copynet (repeatable)")
    C.add_out(t2, required=False, default="results/k2q_table2", help="output folder (results/k2q_table2)")
    C.add_data_dir(t2)
    C.add_decoding(t2, beam=5, seed=False)
    C.add_guards(t2, note="; the neural models (SDM and TBM do not search)")
    t2.add_argument("--baselines", default="sdm,tbm", help="comma-separated subset of sdm,tbm, or none")
    t2.add_argument("--limit", type=C.positive_int, default=None, help="score only the first N T0 pairs")
    C.add_workers(t2)
    t2.add_argument("--seed", type=int, default=0, help="TBM word2vec seed")
    C.add_backend(t2)
    t2.set_defaults(func=_cmd_table2)
