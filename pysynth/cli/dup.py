"""``pysynth dup pairs | train | eval | eval-data | index | search``: duplicate-question detection
(Rücklé et al. 2019)."""
from __future__ import annotations

import json

from pysynth.cli import _common as C


def _cmd_eval(args) -> int:
    from pysynth.dup.evaluate import evaluate

    rows = list(C.read_rows(args.data, "--data"))
    print(json.dumps(evaluate(rows, args.model, workers=args.workers, hybrid=args.hybrid, alpha=args.alpha)))
    return 0


def _cmd_eval_data(args) -> int:
    from pysynth.data import shared_dir
    from pysynth.dup.data import eval_rows
    from pysynth.io import write_rows

    C.check_output(args.out)
    counts: dict = {}
    rows = eval_rows(shared_dir(args.shared), args.source, args.split, args.negatives, args.seed,
                     args.negatives_from, counts=counts)
    n = write_rows(args.out, rows)
    if counts:
        C.say(f"duplicate links per site (missing posts are dropped): {json.dumps(counts)}")
    C.say(f"{n:,} eval rows ({args.source}, {args.split}) -> {args.out}")
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
        from pysynth.dup.dqg import DEFAULT_MODEL

        model = str(C.resolve_model(args.model, default=DEFAULT_MODEL).path) if args.model else None
    summary = make_pairs(args.dump, args.out, args.method, negatives=args.negatives, min_words=args.min_words,
                         select=args.select, min_score=args.min_score, exclude=exclude,
                         holdout_linked=args.holdout_linked, seed=args.seed, model=model, beam=args.beam,
                         threads=args.threads, executor=executor_from_args(args), chunk_size=args.chunk_size,
                         resume=not args.restart)
    print(json.dumps(summary))
    return 0


def _cmd_train(args) -> int:
    from pysynth.dup.data import read_pairs

    C.check_out_dir(args.out)
    rows = list(C.read_rows(args.pairs, "--pairs"))
    read_pairs(rows, "--pairs")  # bad rows: one line before torch is imported

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
    for n, r in enumerate(C.read_rows(args.queries, "--queries"), 1):
        q = r.get(args.field) if isinstance(r, dict) else None
        if not isinstance(q, str) or not q.strip():
            raise ValueError(f"--queries row {n}: no non-empty {args.field!r} string")
        qs.append(q)
    res = search(args.index, qs, k=args.k, hybrid=args.hybrid, alpha=args.alpha, workers=args.workers)
    n = write_rows(args.out, res)
    C.say(f"{n:,} queries -> {args.out}")
    return 0


def add_commands(sub) -> None:
    d = sub.add_parser("dup", help="duplicate question detection (Rücklé et al. 2019)")
    ds = d.add_subparsers(dest="dup_command", required=True, metavar="VERB")
    p = ds.add_parser("pairs", help="weakly supervised training pairs from Stack Exchange dumps (WS-TB, DQG or both)")
    p.add_argument("--dump", action="append", required=True, type=C.input_dir("dump"),
                   help="a site's dump folder (Posts.xml[.gz], PostLinks.xml[.gz]) or .7z archive; repeatable")
    p.add_argument("--out", required=True, help="output JSONL/Parquet: {site, post_id, method, title, body, label[, "
                                                "neg_post_id]} (dqg rows: body = a generated title)")
    p.add_argument("--method", choices=("ws-tb", "dqg", "both"), default="ws-tb",
                   help="ws-tb: (title, body); dqg: (title, title generated from the body); both: the union")
    p.add_argument("--negatives", type=int, default=1, help="random other questions per question (never itself, a "
                                                            "known duplicate or an excluded id)")
    p.add_argument("--min-words", type=C.positive_int, default=10, help="paragraphs shorter than this are dropped")
    p.add_argument("--select", choices=("tfidf", "all"), default="tfidf",
                   help="the body: the paragraph closest to the title (TF-IDF), or all paragraphs")
    p.add_argument("--min-score", type=int, default=None, help="leave out questions scored below this")
    p.add_argument("--exclude-ids", default=None, help="file of post ids to leave out (evaluation items), one per "
                                                       "line: ID (any site) or SITE:ID")
    p.add_argument("--holdout-linked", action="store_true",
                   help="leave out every question with a PostLinks duplicate (the dumps' duplicate eval items)")
    p.add_argument("--model", default=None, help="dqg/both: the title generator (default: the shipped "
                                                 "dup-dqg-copynet; onnxruntime)")
    p.add_argument("--beam", type=C.positive_int, default=1, help="dqg/both: beam size (1: greedy, the default)")
    p.add_argument("--threads", type=int, default=1, help="dqg/both: onnxruntime threads")
    p.add_argument("--chunk-size", type=C.positive_int, default=256, help="questions per resumable chunk")
    p.add_argument("--restart", action="store_true", help="discard finished chunks of an earlier run")
    p.add_argument("--seed", type=int, default=0)
    from pysynth.pipelines import add_executor_arguments

    add_executor_arguments(p)
    p.set_defaults(func=_cmd_pairs)
    t = ds.add_parser("train", help="train a duplicate detector (BiLSTM / BiGRU / MiniLM) on weak pairs")
    t.add_argument("--pairs", required=True, type=C.input_file,
                   help="JSONL/Parquet rows of pysynth dup pairs: {title, body, label, site?, post_id?}")
    t.add_argument("--out", required=True, help="detector folder to write (a store; --model DIR elsewhere)")
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
    t.add_argument("--max-steps", type=int, default=0, help="stop after this many updates (0: no limit)")
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--threads", type=int, default=1, help="torch threads (default 1; 0: torch's default)")
    t.add_argument("--no-quantize", action="store_true", help="keep the ONNX weights float32")
    t.add_argument("--onnx-only", action="store_true", help="leave out model.safetensors (a shipped detector: "
                                                            "encoding needs only the ONNX graph)")
    t.set_defaults(func=_cmd_train)
    e = ds.add_parser("eval", help="P@1, P@5, MAP, MRR, AUC(0.05) of a scorer on eval rows")
    e.add_argument("--data", required=True, type=C.input_file,
                   help='JSONL/Parquet rows {"query", "positives": [...], "negatives": [...]}; - reads stdin')
    e.add_argument("--model", default="bm25",
                   help="bm25 or sdm (pysynth.retrieval over the candidates), minilm (the offline MiniLM, "
                        "cosine), a trained detector (a shipped name or a pysynth dup train folder), or a local "
                        "Hugging Face encoder folder")
    e.add_argument("--hybrid", action="store_true", help="fuse the dense --model with BM25 (min-max per query)")
    e.add_argument("--alpha", type=C.float_in(0, False, 1, "a number in [0, 1]"), default=0.5,
                   help="--hybrid: weight of the dense score")
    C.add_workers(e)
    e.set_defaults(func=_cmd_eval)
    x = ds.add_parser("index", help="embed a forum's questions into a faiss index (+ BM25 for --hybrid search)")
    C.add_in(x, help='JSONL/Parquet rows {"id"?, "question"}')
    x.add_argument("--out", required=True, help="index folder to write")
    x.add_argument("--model", default="dup-minilm-wstb", help="a trained detector (a shipped name or a pysynth dup "
                                                              "train folder; default: the shipped dup-minilm-wstb), "
                                                              "minilm (the offline MiniLM, needs torch) or a local "
                                                              "Hugging Face encoder")
    x.add_argument("--kind", choices=("flat", "hnsw", "ivf"), default="flat", help="faiss index (flat: exact)")
    x.add_argument("--field", default="question", help="the rows' text field")
    C.add_workers(x)
    x.set_defaults(func=_cmd_index)
    s = ds.add_parser("search", help="the indexed questions closest to each query (dense, or --hybrid with BM25)")
    s.add_argument("--index", required=True, type=C.input_dir("index"), help="a folder from pysynth dup index")
    s.add_argument("--queries", required=True, type=C.input_file, help='JSONL/Parquet rows {"question", ...}')
    s.add_argument("--out", required=True, help='output JSONL/Parquet: {"query", "results": [{"id", "question", '
                                                '"score"}]}')
    s.add_argument("--k", type=C.positive_int, default=10)
    s.add_argument("--hybrid", action="store_true", help="fuse min-max scaled dense and BM25 scores")
    s.add_argument("--alpha", type=C.float_in(0, False, 1, "a number in [0, 1]"), default=0.5,
                   help="--hybrid: weight of the dense score")
    s.add_argument("--field", default="question", help="the query rows' text field")
    C.add_workers(s)
    s.set_defaults(func=_cmd_search)
    m = ds.add_parser("eval-data", help="build eval rows from the shared data: MQR edit-duplicates, ComQA clusters "
                                        "or the dumps' PostLinks duplicates")
    m.add_argument("--source", choices=("mqr", "comqa", "postlinks"), default="mqr")
    m.add_argument("--split", default="test", help="mqr: dev|test; comqa: train|dev")
    m.add_argument("--negatives", type=C.positive_int, default=20, help="negatives per query")
    m.add_argument("--negatives-from", choices=("bm25", "random"), default="bm25",
                   help="bm25: the pool's questions BM25 ranks highest (hard); random: seeded draws (easy)")
    m.add_argument("--seed", type=int, default=0)
    m.add_argument("--shared", default=None, type=C.input_dir("shared"),
                   help="shared data folder (default: ../shared/data or $PYSYNTH_DATA)")
    m.add_argument("--out", required=True, help="output JSONL/Parquet")
    m.set_defaults(func=_cmd_eval_data)
