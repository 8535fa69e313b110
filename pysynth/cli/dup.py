"""``pysynth dup pairs | train | evaluate | eval-data | index | search | train-dqg | export-dqg |
evaluate-dqg``: duplicate-question detection (Rücklé et al. 2019).

Every verb that scores with a detector defaults to the shipped one (``dup-minilm-wstb``);
``dup evaluate --retrieval bm25|sdm`` scores with a sparse retrieval model instead."""
from __future__ import annotations

import json

from pysynth.cli import _common as C

RETRIEVAL = ("dense", "hybrid", "bm25", "sdm")
SPARSE = ("bm25", "sdm")


def _retrieval_and_model(args) -> tuple:
    """(retrieval, model) of ``dup evaluate``; the old ``--model bm25|sdm`` means ``--retrieval``."""
    retrieval, model = args.retrieval, args.model
    if model in SPARSE:
        C.say(f"warning: --model {model} is deprecated here; use --retrieval {model}")
        if retrieval not in (None, model):
            raise C.UsageError(f"argument --model: conflicts with --retrieval {retrieval} (--model {model} is the "
                               f"deprecated spelling of --retrieval {model})")
        retrieval, model = model, None
    retrieval = retrieval or "dense"
    if retrieval in SPARSE:
        if model is not None:
            raise C.UsageError(f"argument --model: --retrieval {retrieval} scores without a model; leave out --model "
                               "or use --retrieval dense|hybrid")
        return retrieval, retrieval
    from pysynth.dup.search import DEFAULT_DETECTOR

    return retrieval, model or DEFAULT_DETECTOR


def _cmd_eval(args) -> int:
    from pysynth.dup.evaluate import evaluate

    retrieval, model = _retrieval_and_model(args)
    rows = list(C.read_rows(args.inp))
    print(json.dumps(evaluate(rows, model, workers=args.workers, hybrid=retrieval == "hybrid", alpha=args.alpha)))
    return 0


def _cmd_eval_data(args) -> int:
    from pysynth.data import shared_dir
    from pysynth.dup.data import SPLITS, eval_rows
    from pysynth.io import write_rows

    C.check_output(args.out)
    counts: dict = {}
    rows = eval_rows(shared_dir(args.data), args.source, args.split, args.negatives, args.seed,
                     args.negatives_from, counts=counts)
    n = write_rows(args.out, rows)
    if counts:
        C.say(f"duplicate links per site (missing posts are dropped): {json.dumps(counts)}")
    C.say(f"{n:,} eval rows ({args.source}{'' if args.source == 'postlinks' else ', ' + (args.split or SPLITS[args.source][0])}) -> {args.out}")
    return 0


def _cmd_pairs(args) -> int:
    from pysynth.dup.pairs import make_pairs
    from pysynth.pipelines import executor_from_args

    C.check_output(args.out)
    if args.out == "-":
        raise C.UsageError("argument --out: pairs are written by a resumable job; give a file, not -")
    exclude = C.read_lines(args.exclude_ids, "--exclude-ids") if args.exclude_ids else []
    model = None
    if args.method != "ws-tb":
        model = _title_model(args.model, llm=True)
    summary = make_pairs(args.inp, args.out, args.method, negatives=args.negatives, min_words=args.min_words,
                         select=args.select, min_score=args.min_score, exclude=exclude,
                         holdout_linked=args.holdout_linked, seed=args.seed, model=model, beam=args.beam,
                         threads=args.threads, min_wellformed=args.min_wellformed,
                         min_similarity=args.min_similarity, llm_options=C.llm_options(args, args.out),
                         **C.guards(args),
                         executor=executor_from_args(args), chunk_size=args.chunk_size, resume=not args.restart)
    print(json.dumps(summary))
    return 0


def _cmd_train(args) -> int:
    from pysynth.dup.data import read_pairs

    C.check_out_dir(args.out)
    rows = list(C.read_rows(args.inp))
    read_pairs(rows, "--in")  # bad rows: one line before torch is imported

    from pysynth.dup.train import save, train

    model, vocab, info = train(rows, arch=args.arch, epochs=args.epochs,
                               batch_size=args.batch_size, lr=args.lr, loss=args.loss, max_length=args.max_length,
                               pooling=args.pooling, embeddings=args.embeddings, negatives=args.negatives,
                               fraction=args.fraction, max_steps=args.max_steps, seed=args.seed,
                               threads=args.threads, log=C.say)
    save(model, vocab, args.out, info, quantize=not args.no_quantize, max_length=args.max_length,
         torch_weights=not args.onnx_only)
    print(json.dumps(info))
    return 0


def _cmd_index(args) -> int:
    from pysynth.dup.search import build

    C.check_out_dir(args.out)
    print(json.dumps(build(C.read_rows(args.inp), args.out, model=args.model, kind=args.kind,
                           text_field=args.field, workers=args.workers)))
    return 0


def _cmd_search(args) -> int:
    from pysynth.dup.search import search
    from pysynth.io import write_rows

    C.check_output(args.out)
    qs = []
    for n, r in enumerate(C.read_rows(args.inp), 1):
        q = r.get(args.field) if isinstance(r, dict) else None
        if not isinstance(q, str) or not q.strip():
            raise ValueError(f"--in row {n}: no non-empty {args.field!r} string")
        qs.append(q)
    res = search(args.index, qs, k=args.k, hybrid=args.retrieval == "hybrid", alpha=args.alpha, workers=args.workers)
    n = write_rows(args.out, res)
    C.say(f"{n:,} queries -> {args.out}")
    return 0


def _cmd_train_dqg(args) -> int:
    from pysynth.dup.dqg import train

    print(json.dumps(train(args.inp, args.out, args.arch, args.minutes, args.steps, args.threads, args.seed,
                           args.dev_fraction, args.vocab_size, holdout_linked=not args.keep_linked)))
    return 0


def _cmd_export_dqg(args) -> int:
    from pysynth.dup.dqg import export

    print(export(str(C.resolve_model(args.model).path), args.out, quantize=not args.float32))
    return 0


def _title_model(value, llm: bool = False):
    """``--model`` of the DQG commands: ``extract`` (no model), an LLM spec (``llm``), else a model's path
    (``None`` for the shipped default where ``llm``, which the pairs stage fingerprints by name)."""
    from pysynth.dup.dqg import DEFAULT_MODEL, EXTRACT

    if value == EXTRACT:
        return EXTRACT
    if llm:
        spec = C.llm_spec(value, "--model")
        if spec or not value:
            return spec
    return str(C.resolve_model(value, default=DEFAULT_MODEL).path)


def _cmd_evaluate_dqg(args) -> int:
    from pysynth.dup.dqg import EXTRACT, evaluate

    model = _title_model(args.model)
    backend = "onnx" if model == EXTRACT else C.backend(args.backend, model)  # the rule runs on neither
    res = evaluate(model, args.inp, backend, args.beam, args.limit, args.subset, args.threads,
                   args.dev_fraction, args.seed, **C.guards(args))
    print(json.dumps(res, ensure_ascii=False))
    return 0


def _dumps(p) -> None:
    C.add_in(p, "--dump", action="append", type=C.input_dir("dump"), metavar="DUMP", stdin=False,
             help="a site's dump folder (Posts.xml[.gz], PostLinks.xml[.gz]) or .7z archive; repeatable")


def _alpha(p) -> None:
    p.add_argument("--alpha", type=C.float_in(0, False, 1, "a number in [0, 1]"), default=0.5,
                   help="--retrieval hybrid: weight of the dense score (0.5)")


def add_commands(sub) -> None:
    from pysynth.dup.search import DEFAULT_DETECTOR

    d = sub.add_parser("dup", help="duplicate question detection (Rücklé et al. 2019)")
    ds = d.add_subparsers(dest="dup_command", required=True, metavar="VERB")
    p = ds.add_parser("pairs", help="weakly supervised training pairs from Stack Exchange dumps (WS-TB, DQG or both)")
    _dumps(p)
    C.add_out(p, help="output JSONL/Parquet: {site, post_id, method, title, body, label[, neg_post_id]} (dqg rows: "
                      "body = a generated title)")
    p.add_argument("--method", choices=("ws-tb", "dqg", "both"), default="ws-tb",
                   help="ws-tb: (title, body); dqg: (title, title generated from the body); both: the union")
    p.add_argument("--negatives", type=C.count, default=1, help="random other questions per question (never itself, "
                                                                "a known duplicate or an excluded id)")
    p.add_argument("--min-words", type=C.positive_int, default=10, help="paragraphs shorter than this are dropped")
    p.add_argument("--select", choices=("tfidf", "all"), default="tfidf",
                   help="the body: the paragraph closest to the title (TF-IDF), or all paragraphs")
    p.add_argument("--min-score", type=int, default=None, help="leave out questions scored below this")
    p.add_argument("--exclude-ids", default=None, help="file of post ids to leave out (evaluation items), one per "
                                                       "line: ID (any site) or SITE:ID")
    p.add_argument("--holdout-linked", action="store_true",
                   help="leave out every question with a PostLinks duplicate (the dumps' duplicate eval items)")
    p.add_argument("--model", default=None, help="dqg/both: the title generator, an LLM spec "
                                                 "(openai:URL?model=NAME, hf-causal:DIR), or 'extract' (a title "
                                                 "chosen from the body's sentences, no model) (default: the shipped "
                                                 "dup-dqg-copynet; onnxruntime)")
    C.add_decoding(p, beam=1)
    C.add_guards(p, note="; dqg/both: the title search")
    C.add_threads(p, default=1, help="dqg/both: onnxruntime threads")
    C.add_min_wellformed(p)  # dqg/both: a generated title under it gives no pair (dqg_not_wellformed)
    C.add_min_similarity(p, "dqg/both: body vs generated title; under S the question gets no DQG pair, "
                            "counted as dqg_not_similar")
    C.add_llm(p, "--model")
    C.add_job(p, chunk_size=256, what="questions")
    p.set_defaults(func=_cmd_pairs)

    t = ds.add_parser("train", help="train a duplicate detector (BiLSTM / BiGRU / MiniLM) on weak pairs")
    C.add_in(t, "--pairs", help="JSONL/Parquet rows of pysynth dup pairs: {title, body, label, site?, post_id?}")
    C.add_out(t, help="detector folder to write (a store; --model DIR elsewhere)")
    t.add_argument("--arch", choices=("bilstm", "bigru", "minilm"), default="bilstm",
                   help="minilm: all-MiniLM-L6-v2 fine-tuned (pretrained on Stack Exchange and WikiAnswers pairs: "
                        "not an unsupervised reference)")
    t.add_argument("--loss", choices=("margin", "in-batch"), default="margin",
                   help="margin: Shah et al.'s hinge (0.25) over the file's negatives; in-batch: other positives")
    t.add_argument("--epochs", type=C.positive_int, default=None, help="default 10 (RNN), 1 (minilm)")
    t.add_argument("--batch-size", type=C.positive_int, default=None, help="default 100 (RNN), 32 (minilm)")
    t.add_argument("--lr", type=C.float_in(0, True, None, "a positive number"), default=None,
                   help="default 5e-4 Adam (RNN), 2e-5 AdamW with warm-up (minilm)")
    t.add_argument("--max-length", type=C.positive_int, default=128, help="word pieces per text")
    t.add_argument("--pooling", choices=("mean", "max"), default="mean", help="RNN pooling over tokens")
    t.add_argument("--embeddings", choices=("minilm", "random"), default="minilm",
                   help="RNN word-piece embeddings: MiniLM's table (frozen) or random (trained)")
    t.add_argument("--negatives", type=C.positive_int, default=None, help="negatives per positive (default: all "
                                                                          "in the file)")
    t.add_argument("--fraction", type=C.float_in(0, True, 1, "a number in (0, 1]"), default=1.0,
                   help="use this seeded share of the questions")
    t.add_argument("--max-steps", type=C.count, default=0, help="stop after this many updates (0: no limit)")
    t.add_argument("--seed", type=int, default=0)
    C.add_threads(t, default=1, help="torch threads")
    t.add_argument("--no-quantize", action="store_true", help="keep the ONNX weights float32")
    t.add_argument("--onnx-only", action="store_true", help="leave out model.safetensors (a shipped detector: "
                                                            "encoding needs only the ONNX graph)")
    t.set_defaults(func=_cmd_train)

    e = ds.add_parser("evaluate", help="P@1, P@5, MAP, MRR, AUC(0.05) of a detector or a retrieval model on eval "
                                       "rows (`dup eval`: deprecated)")
    C.add_in(e, "--data", help='JSONL/Parquet rows {"query", "positives": [...], "negatives": [...]}')
    e.add_argument("--retrieval", choices=RETRIEVAL, default=None,
                   help="dense (default): the --model's cosine; hybrid: fused with BM25 (min-max per query); bm25 "
                        "or sdm: pysynth.retrieval over the candidates (no model)")
    C.alias(e, "--hybrid", "--retrieval hybrid", "retrieval", "hybrid")
    C.add_model(e, DEFAULT_DETECTOR, "--retrieval dense|hybrid: a trained detector (a shipped name or a pysynth dup "
                                     "train folder), minilm (the offline MiniLM) or a local Hugging Face encoder")
    C.note_deprecated(e, "--model {bm25,sdm}", "--retrieval {bm25,sdm}")  # see _retrieval_and_model
    _alpha(e)
    C.add_workers(e)
    e.set_defaults(func=_cmd_eval)

    x = ds.add_parser("index", help="embed a forum's questions into a faiss index (+ BM25 for --retrieval hybrid "
                                    "search)")
    C.add_in(x, help='JSONL/Parquet rows {"id"?, "question"}')
    C.add_out(x, help="index folder to write")
    C.add_model(x, DEFAULT_DETECTOR, "a trained detector (a shipped name or a pysynth dup train folder), minilm "
                                     "(the offline MiniLM, needs torch) or a local Hugging Face encoder",
                value=DEFAULT_DETECTOR)
    x.add_argument("--kind", choices=("flat", "hnsw", "ivf"), default="flat", help="faiss index (flat: exact)")
    x.add_argument("--field", default="question", help="the rows' text field")
    C.add_workers(x)
    x.set_defaults(func=_cmd_index)

    s = ds.add_parser("search", help="the indexed questions closest to each query (dense, or --retrieval hybrid "
                                     "with BM25)")
    s.add_argument("--index", required=True, type=C.input_dir("index"), help="a folder from pysynth dup index")
    C.add_in(s, "--queries", help='JSONL/Parquet rows {"question", ...}')
    C.add_out(s, help='output JSONL/Parquet: {"query", "results": [{"id", "question", "score"}]}')
    s.add_argument("--k", type=C.positive_int, default=10)
    s.add_argument("--retrieval", choices=("dense", "hybrid"), default="dense",
                   help="dense: the index's detector; hybrid: min-max scaled dense and BM25 scores fused")
    C.alias(s, "--hybrid", "--retrieval hybrid", "retrieval", "hybrid")
    _alpha(s)
    s.add_argument("--field", default="question", help="the query rows' text field")
    C.add_workers(s)
    s.set_defaults(func=_cmd_search)

    m = ds.add_parser("eval-data", help="build eval rows from the shared data: MQR edit-duplicates, ComQA clusters "
                                        "or the dumps' PostLinks duplicates")
    m.add_argument("--source", choices=("mqr", "comqa", "postlinks"), default="mqr")
    m.add_argument("--split", default=None, help="mqr: test (default) | dev; comqa: dev (default) | train")
    m.add_argument("--negatives", type=C.positive_int, default=20, help="negatives per query")
    m.add_argument("--negatives-from", choices=("bm25", "random"), default="bm25",
                   help="bm25: the pool's questions BM25 ranks highest (hard); random: seeded draws (easy)")
    m.add_argument("--seed", type=int, default=0)
    C.add_data_dir(m)
    C.add_out(m, help="output JSONL/Parquet")
    m.set_defaults(func=_cmd_eval_data)
    _dqg_commands(ds)


def _dqg_commands(ds) -> None:
    """Duplicate question generation (the title generator of ``dup pairs --method dqg``); was
    ``python -m pysynth.dup.dqg train|export|eval``."""
    t = ds.add_parser("train-dqg", help="train a body -> title generator (DQG) on dumps (torch)")
    _dumps(t)
    C.add_out(t, help="training run folder (resumed when it holds a checkpoint)")
    t.add_argument("--arch", choices=("copynet", "attnet"), default="copynet", help="copynet: copy; attnet: no copy")
    t.add_argument("--minutes", type=C.float_in(0, False, None, "a number >= 0"), default=20.0,
                   help="stop after this many minutes (0: no limit)")
    t.add_argument("--steps", type=C.count, default=0, help="stop after this many steps (0: no limit)")
    C.add_threads(t, default=1, help="torch threads")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--dev-fraction", type=C.float_in(0, True, 1, "a number in (0, 1)"), default=0.05)
    t.add_argument("--vocab-size", type=C.positive_int, default=8000)
    t.add_argument("--keep-linked", action="store_true",
                   help="train on the questions with a PostLinks duplicate too (default: held out for evaluation)")
    t.set_defaults(func=_cmd_train_dqg)

    x = ds.add_parser("export-dqg", help="ONNX export (int8 weights) of a trained title generator")
    x.add_argument("--model", required=True, help="a training run folder or model directory")
    C.add_out(x, help="the export folder (an asset directory)")
    x.add_argument("--float32", action="store_true", help="keep float32 weights")
    x.set_defaults(func=_cmd_export_dqg)

    v = ds.add_parser("evaluate-dqg", help="BLEU/ROUGE of generated titles against the real ones")
    C.add_model(v, "dup-dqg-copynet", "the title generator: a name or folder, or 'extract' (a title chosen "
                                      "from the body's sentences, no model)")
    _dumps(v)
    C.add_backend(v)
    C.add_decoding(v, beam=1)
    C.add_guards(v, note="; the title search")
    C.add_threads(v, default=1, help="onnxruntime threads")
    v.add_argument("--limit", type=C.count, default=0, help="first N questions per dump (0: all)")
    v.add_argument("--subset", choices=("all", "linked", "dev"), default="all",
                   help="linked: the questions with a PostLinks duplicate (held out of training); dev: the "
                        "training run's dev split of these dumps (--seed, --dev-fraction)")
    v.add_argument("--dev-fraction", type=C.float_in(0, True, 1, "a number in (0, 1)"), default=0.05)
    v.set_defaults(func=_cmd_evaluate_dqg)
