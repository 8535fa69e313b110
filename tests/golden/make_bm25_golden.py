"""Write tests/golden/bm25s_lucene.json.gz: BM25 scores computed by bm25s itself.

Run with the reference environment (bm25s is not a pysynth dependency)::

    /tmp/refenv/bin/pip install bm25s
    /tmp/refenv/bin/python tests/golden/make_bm25_golden.py

A fixed pseudo-random corpus (Zipfian term ids, 0-14 tokens per document, some empty documents)
and queries (1-7 terms, repeats and terms absent from the corpus included) are indexed with
``bm25s.BM25(method="lucene", k1=1.5, b=0.75)`` (its defaults); for every query the score of
every document with a non-zero score is stored.  Term id ``t`` is the token string ``"t<t>"``.
"""
from __future__ import annotations

import gzip
import json
import random
import sys
from pathlib import Path

import bm25s
import numpy as np

OUT = Path(__file__).resolve().parent / "bm25s_lucene.json.gz"


def zipf_ids(rng: random.Random, n: int, vocab: int) -> list:
    weights = [1.0 / (r + 1) for r in range(vocab)]
    return rng.choices(range(vocab), weights=weights, k=n)


def main() -> None:
    rng = random.Random(20180101)
    vocab = 80  # ids 70..79 never occur in documents (queries use them: df = 0)
    docs = []
    for _ in range(400):
        n = rng.choice([0] * 1 + list(range(1, 15)))
        docs.append(zipf_ids(rng, n, 70))
    queries = []
    for i in range(80):
        q = zipf_ids(rng, rng.randint(1, 7), vocab)
        if i % 9 == 0:
            q.append(q[0])  # a repeated term
        if i % 13 == 0:
            q.append(70 + i % 10)  # a term no document has
        queries.append(q)
    k1, b = 1.5, 0.75
    retriever = bm25s.BM25(method="lucene", k1=k1, b=b)
    retriever.index([[f"t{t}" for t in d] for d in docs], show_progress=False)
    scores = []
    for q in queries:
        toks = [f"t{t}" for t in q if f"t{t}" in retriever.vocab_dict]
        if toks:
            s = np.asarray(retriever.get_scores(toks), dtype=np.float64)
        else:
            s = np.zeros(len(docs))
        nz = np.flatnonzero(s)
        scores.append([[int(d), float(s[d])] for d in nz])
    out = {
        "tool": "bm25s",
        "version": bm25s.__version__,
        "python": sys.version.split()[0],
        "method": "lucene",
        "k1": k1,
        "b": b,
        "vocab_size": vocab,
        "docs": docs,
        "queries": queries,
        "scores": scores,
        "note": "scores[i] = [doc, bm25s float32 score] for every document with a non-zero score",
    }
    # mtime 0 and sorted inputs: two runs write identical bytes
    with gzip.GzipFile(OUT, "wb", mtime=0) as f:
        f.write(json.dumps(out, separators=(",", ":")).encode("utf-8"))
    print(f"wrote {OUT} ({len(docs)} docs, {len(queries)} queries, bm25s {bm25s.__version__})")


if __name__ == "__main__":
    main()
