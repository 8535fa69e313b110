"""Overhead of ``pysynth index search`` (the CLI) over one ``Index.search`` call on the same queries.

The workload of ``bench_retrieval.py`` (Zipfian corpus, V = 300,000 term ids, 4-15 tokens,
seed 0; ``kqgm`` queries, seed 1) written as text: term id ``t`` is the word ``w<t>``.

    python bench/cli_retrieval.py data --dir /tmp/clibench            # docs.jsonl, queries.jsonl
    pysynth index build --in /tmp/clibench/docs.jsonl --out /tmp/clibench/ix --workers 2
    pysynth index search --index /tmp/clibench/ix --in /tmp/clibench/queries.jsonl \\
        --retrieval sdm --k 100 --workers 2 --out /tmp/clibench/runs.jsonl
    python bench/cli_retrieval.py direct --dir /tmp/clibench --workers 2   # + checks runs.jsonl

``direct`` tokenizes the queries as the CLI does (:meth:`Collection.query_ids`, untimed), then
times ``Index.load`` and
``Index.search(..., k=100, dtype=float64)`` (best of ``--rounds``, wall and CPU time), and checks that the CLI's
run file holds exactly the same doc ids and scores.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))


def _data(args) -> None:
    from bench_retrieval import VOCAB, make_queries, zipf_corpus

    from pysynth.retrieval import Index

    d = Path(args.dir)
    d.mkdir(parents=True, exist_ok=True)
    ids, off = zipf_corpus(args.docs)
    words = np.array([f"w{t}" for t in range(VOCAB)], dtype=object)
    df = Index.build(ids, off, vocab_size=VOCAB, workers=2).df
    q, qo = make_queries(ids, off, df, args.queries, "kqgm")
    with open(d / "docs.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"id": f"d{i:07d}", "text": " ".join(words[ids[off[i] : off[i + 1]]])})
                + "\n" for i in range(args.docs))
    with open(d / "queries.jsonl", "w", encoding="utf-8") as f:
        f.writelines(json.dumps({"qid": i, "text": " ".join(words[q[qo[i] : qo[i + 1]]])}) + "\n" for i in range(args.queries))
    print(
        f"wrote {d}/docs.jsonl ({args.docs:,} docs, {int(off[-1]):,} tokens), queries.jsonl ({args.queries:,})"
    )


def _direct(args) -> None:
    from pysynth.cli.index import format_runs, hit_prefixes
    from pysynth.retrieval import Index
    from pysynth.retrieval.collection import Collection

    d = Path(args.dir)
    rows = [json.loads(line) for line in open(d / "queries.jsonl", encoding="utf-8")]
    coll = Collection.load(d / "ix")
    q, qo = coll.query_ids([r["text"] for r in rows], workers=args.workers)
    t0, c0 = time.perf_counter(), time.process_time()
    ix = Index.load(d / "ix" / "index", workers=args.workers)
    t_load, c_load = time.perf_counter() - t0, time.process_time() - c0
    best = cpu = float("inf")
    for _ in range(args.rounds):
        t0, c0 = time.perf_counter(), time.process_time()
        hits = ix.search(q, qo, model="sdm", k=100, workers=args.workers, dtype=np.float64)
        best = min(best, time.perf_counter() - t0)
        cpu = min(cpu, time.process_time() - c0)
    n = len(rows)
    c0 = time.process_time()
    text = format_runs([json.dumps(r["qid"]) for r in rows], hits, hit_prefixes(coll.id_json))
    print(
        f"formatting the {int(hits.counts.sum()):,} hits as JSON lines (CLI code): CPU time {time.process_time() - c0:.2f} s"
    )
    print(
        f"Index.load {t_load:.2f} s (CPU {c_load:.2f} s); Index.search of {n:,} queries: best of {args.rounds} "
        f"{best:.2f} s = {n / best:,.0f} q/s (CPU time {cpu:.2f} s); load average {os.getloadavg()[0]:.1f}"
    )
    runs = d / "runs.jsonl"
    if runs.exists():
        got = [json.loads(line) for line in open(runs, encoding="utf-8")]
        assert [r["qid"] for r in got] == [r["qid"] for r in rows]
        for i, r in enumerate(got):
            c = int(hits.counts[i])
            expect = [
                [coll.ids[x], s]
                for x, s in zip(hits.docs[i, :c].tolist(), hits.scores[i, :c].tolist())
            ]
            assert r["hits"] == expect, f"query {i} differs"
        assert runs.read_text(encoding="utf-8") == text
        print(f"{runs}: identical doc ids and float64 scores for all {n:,} queries")


def main() -> None:
    p = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("data")
    a.add_argument("--dir", required=True)
    a.add_argument("--docs", type=int, default=1_000_000)
    a.add_argument("--queries", type=int, default=10_000)
    a.set_defaults(func=_data)
    b = sub.add_parser("direct")
    b.add_argument("--dir", required=True)
    b.add_argument("--workers", type=int, default=2)
    b.add_argument("--rounds", type=int, default=3)
    b.set_defaults(func=_direct)
    args = p.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
