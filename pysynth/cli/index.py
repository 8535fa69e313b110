"""``pysynth index build`` and ``pysynth index search`` (alias ``pysynth search``): SDM / BM25
search of a JSON Lines collection, over :class:`pysynth.retrieval.collection.Collection`.

``index build --in DOCS.jsonl --out DIR``: rows ``{"id": str or int, unique, "text": str}``.
``index search --index DIR --in Q.jsonl --out RUNS.jsonl``: rows ``{"qid", "text"}`` in, rows
``{"qid": ..., "hits": [[doc_id, score], ...]}`` out, in input order: at most ``k`` hits, score
descending then document order; ids are echoed as given; scores are float64 written with
Python's shortest round-trip ``repr``.  ``-`` is stdin / stdout; ``.gz`` output is compressed.

Queries stream in batches of ``--batch-size``: one batch is searched (compiled, GIL released)
while the previous one is formatted and written, so memory stays bounded for any number of
queries and the output never depends on ``--workers`` or ``--batch-size``.
"""
from __future__ import annotations

import operator
import time
from collections.abc import Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor

from pysynth.cli import _common as C

DEFAULT_BATCH = 2_000
_PROGRESS_EVERY_S = 1.0
RETRIEVAL = ("sdm", "bm25")


def _cmd_build(args) -> int:
    from pysynth.retrieval.collection import Collection

    C.check_out_dir(args.out)  # before the work
    t0 = time.perf_counter()
    name = "<stdin>" if args.inp == "-" else args.inp
    coll = Collection.from_rows(C.read_rows(args.inp), tokenizer=args.tokenizer, workers=args.workers,
                                what=f"--in {name!r}")
    t1 = time.perf_counter()
    coll.save(args.out)
    t2 = time.perf_counter()
    ix = coll.index
    C.say(f"index build: {ix.n_docs:,} documents, {coll.n_terms:,} terms, {ix.n_tokens:,} tokens -> {args.out} "
          f"in {t2 - t0:.1f} s (read and index {t1 - t0:.1f} s, write {t2 - t1:.1f} s)")
    return 0


def hit_prefixes(id_json: Sequence[str]) -> list[str]:
    """``"[<doc id JSON>,"`` of every document number (one join and one split, fast)."""
    return ("[" + ",\n[".join(id_json) + ",").split("\n")


def format_runs(qids: Sequence[str], hits, prefix: Sequence[str]) -> str:
    """Output lines of a batch, ``{"qid":<qid JSON>,"hits":[[<doc id>,<score>],...]}``; ``hits``
    are float64 :class:`~pysynth.retrieval.Hits`; ``repr(float)`` reads back as the same float."""
    lines = []
    add, rep = operator.add, float.__repr__
    for qid, drow, srow, c in zip(qids, hits.docs.tolist(), hits.scores.tolist(), hits.counts.tolist()):
        h = "],".join(map(add, [prefix[d] for d in drow[:c]], map(rep, srow[:c]))) + "]" if c else ""
        lines.append(f'{{"qid":{qid},"hits":[{h}]}}\n')
    return "".join(lines)


def _batches(path: str, size: int) -> Iterator[tuple[list[str], list[str]]]:
    from pysynth.retrieval.collection import check_text, encode_id

    where = "--in " + repr("<stdin>" if path == "-" else path)
    qids: list[str] = []
    texts: list[str] = []
    for n, row in enumerate(C.read_rows(path), 1):
        if not isinstance(row, dict):
            raise ValueError(f"{where} row {n}: expected a JSON object, got {type(row).__name__}")
        for key in ("qid", "text"):
            if key not in row:
                raise ValueError(f"{where} row {n}: missing field {key!r}")
        qids.append(encode_id(row["qid"], f"{where} row {n}: 'qid'"))
        texts.append(check_text(row["text"], f"{where} row {n}: 'text'"))
        if len(texts) == size:
            yield qids, texts
            qids, texts = [], []
    if texts:
        yield qids, texts


def _cmd_search(args) -> int:
    from pysynth.retrieval.collection import Collection

    t0 = time.perf_counter()
    model = args.retrieval or "sdm"
    if model == "sdm" and (args.k1 is not None or args.b is not None):
        C.say("note: --k1 / --b apply to --retrieval bm25 only; ignored")
    if model == "bm25" and (args.mu is not None or args.weights is not None):
        C.say("note: --mu / --weights apply to --retrieval sdm only; ignored")
    params = {"model": model, "k": args.k, "mu": 2500.0 if args.mu is None else args.mu,
              "weights": (0.85, 0.10, 0.05) if args.weights is None else args.weights,
              "k1": 1.5 if args.k1 is None else args.k1, "b": 0.75 if args.b is None else args.b,
              "workers": args.workers}
    C.check_output(args.out)
    try:
        coll = Collection.load(args.index, workers=args.workers)
    except ValueError as exc:
        raise ValueError(f"--index {args.index!r}: {exc} (rebuild it with `pysynth index build`)") from None
    t_load = time.perf_counter() - t0
    prefix = hit_prefixes(coll.id_json)
    n = n_empty = 0
    search_s = 0.0
    last = time.perf_counter()

    def search(texts):
        ts = time.perf_counter()
        return coll.search_docs(texts, **params), time.perf_counter() - ts

    def emit(f, qids, fut) -> None:
        nonlocal n, n_empty, last, search_s
        hits, dt = fut.result()
        search_s += dt
        f.write(format_runs(qids, hits, prefix).encode("utf-8"))
        n += len(qids)
        n_empty += int((hits.counts == 0).sum())
        now = time.perf_counter()
        if now - last >= _PROGRESS_EVERY_S:
            last = now
            C.say(f"search: {n:,} queries, {n / (now - t0):,.0f} q/s")

    with ThreadPoolExecutor(max_workers=1, thread_name_prefix="pysynth-search") as pool, C.output(args.out) as f:
        # batch i is formatted and written while batch i+1 is searched (the search releases the GIL)
        pending = None
        for qids, texts in _batches(args.inp, args.batch_size):
            fut = pool.submit(search, texts)
            if pending is not None:
                emit(f, *pending)
            pending = (qids, fut)
        if pending is not None:
            emit(f, *pending)
    el = time.perf_counter() - t0
    C.say(f"search: {n:,} queries ({n_empty:,} without hits), {model} k={args.k} -> {args.out} in {el:.2f} s, "
          f"{n / max(el, 1e-9):,.0f} q/s (index load {t_load:.2f} s; search {search_s:.2f} s, overlapped "
          "with reading and writing)")
    return 0


def _search_args(s) -> None:
    s.add_argument("--index", required=True, metavar="DIR", type=C.input_dir("index"),
                   help="directory written by `pysynth index build`")
    C.add_in(s, "--queries", help='JSONL (.gz) or Parquet rows {"qid": string or int, "text": string}')
    s.add_argument("--out", required=True, metavar="RUNS.jsonl",
                   help='JSONL rows {"qid", "hits": [[doc_id, score], ...]} (.gz: compressed; -: stdout)')
    s.add_argument("--retrieval", default=None, choices=RETRIEVAL, help="retrieval model (default sdm)")
    C.add_model_alias(s, "retrieval", "--retrieval", RETRIEVAL)
    s.add_argument("--k", type=C.positive_int, default=100, help="results per query (default 100)")
    s.add_argument("--mu", type=C.float_in(0.0, True, None, "a finite number > 0"), default=None,
                   help="SDM Dirichlet prior (default 2500)")
    s.add_argument("--weights", type=C.sdm_weights, default=None,
                   help="SDM weights of unigrams, #od:1 and #uw:8 windows (default 0.85,0.10,0.05)")
    s.add_argument("--k1", type=C.float_in(0.0, False, None, "a finite number >= 0"), default=None,
                   help="BM25 k1 (default 1.5)")
    s.add_argument("--b", type=C.float_in(0.0, False, 1.0, "a number in [0, 1]"), default=None,
                   help="BM25 b (default 0.75)")
    C.add_workers(s)
    s.add_argument("--batch-size", type=C.positive_int, default=DEFAULT_BATCH,
                   help=f"queries read and searched at a time (default {DEFAULT_BATCH:,}); bounds memory")
    s.set_defaults(func=_cmd_search)


def add_commands(sub) -> None:
    from pysynth.text import TOKENIZERS

    ip = sub.add_parser("index", help="build and search a retrieval index of a JSONL collection (SDM / BM25)")
    isub = ip.add_subparsers(dest="index_command", required=True, metavar="VERB")
    b = isub.add_parser("build", help='index JSONL rows {"id", "text"} into a directory',
                        description="Tokenize and index a JSONL collection for `pysynth index search`.")
    C.add_in(b, help='JSONL (.gz) or Parquet rows {"id": string or int, unique, "text": string}')
    b.add_argument("--out", required=True, metavar="DIR",
                   help="collection directory (written atomically; an existing one there is replaced)")
    b.add_argument("--tokenizer", default="rouge", choices=TOKENIZERS,
                   help="rouge (default): lower-case [a-z0-9]+ runs; whitespace: str.split()")
    C.add_workers(b)
    b.set_defaults(func=_cmd_build)

    desc = "Top-k SDM / BM25 results of JSONL queries against a `pysynth index build` directory."
    _search_args(isub.add_parser("search", help="rank an index for JSONL queries with SDM or BM25", description=desc))
    _search_args(sub.add_parser("search", help="alias of `pysynth index search`", description=desc))
