"""Worker scaling of the metric paths and the tokenizers: workers=2 against workers=1 (issue 29).

Run from the repository root, under the CPU lock, with one BLAS thread:

    OPENBLAS_NUM_THREADS=1 OMP_NUM_THREADS=1 flock /work/locks/cpu .venv/bin/python bench/bench_scaling.py [--rounds 7]

Workload: the SQuAD 1.1 train questions (87,599, from ``$PYSYNTH_SHARED_DATA/squad11_train``)
tiled to 100,001; hyps = questions 0..99,999, refs = questions 1..100,000 (each hypothesis is
paired with the next question); every list item is a distinct str object (as text read from a
file is). The public API of each path is called with ``workers=1`` and ``workers=2``, both warm
(one untimed call each first), in ``--rounds`` rounds that alternate w=1 / w=2; the outputs of
the two are checked equal before timing. Printed: best and median ms of each, the ratio of the
bests and of the medians, and the range of the per-round ratios (w=1 of a round / w=2 of the
same round).
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import time
from pathlib import Path

import numpy as np

from pysynth import metrics as M
from pysynth import text as T

DATA = Path(os.environ.get("PYSYNTH_SHARED_DATA", Path(__file__).resolve().parents[2] / "shared" / "data"))
TYPES = ["rouge1", "rouge2", "rougeL"]


def questions(n: int = 100_001) -> list:
    with gzip.open(DATA / "squad11_train" / "train-v1.1.reconstructed.json.gz", "rt", encoding="utf-8") as f:
        d = json.load(f)
    qs = [q["question"] for a in d["data"] for p in a["paragraphs"] for q in p["qas"]]
    return [qs[i % len(qs)].encode().decode() for i in range(n)]  # distinct objects


def jobs(h: list, r: list) -> dict:
    return {
        "corpus BLEU 13a (sacrebleu)": lambda w: M.corpus_bleu(h, [r], workers=w),
        "corpus BLEU nltk": lambda w: M.corpus_bleu(h, [r], flavor="nltk", workers=w),
        "corpus BLEU coco": lambda w: M.corpus_bleu(h, [r], flavor="coco", workers=w),
        "sentence BLEU": lambda w: M.sentence_bleu(h, [r], workers=w),
        "ROUGE-1/2/L": lambda w: M.rouge(h, r, types=TYPES, workers=w),
        "ROUGE-1/2/L, Porter stemmer": lambda w: M.rouge(h, r, types=TYPES, stem=True, workers=w),
        "metrics.tokenize(h, '13a')": lambda w: M.tokenize(h, "13a", workers=w),
        "text.tokenize(h + r)": lambda w: T.tokenize(h + r, workers=w),
        # control: the same tokens as flat ids + offsets (no Python object per row), i.e. what
        # the machine gives a call that is parallel from end to end in this run
        "control: text.build_corpus(h + r)": lambda w: T.build_corpus(h + r, workers=w),
    }


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return np.array_equal(a, b)
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if hasattr(a, "__dataclass_fields__"):
        return _same(vars(a), vars(b))
    if isinstance(a, T.Corpus):
        return _same(a.ids, b.ids) and _same(a.offsets, b.offsets) and a.vocab == b.vocab
    return a == b  # lists of lists of str compare in C


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", default="", help="run the paths whose name contains this")
    args = ap.parse_args()
    q = questions()
    h, r = q[:-1], q[1:]
    print(f"# {time.strftime('%Y-%m-%d %H:%M:%S', time.gmtime())} UTC, load {open('/proc/loadavg').read().split()[:3]}, "
          f"pysynth from {Path(M.__file__).parents[1]}")
    print("| path | w=1 best / median (ms) | w=2 best / median (ms) | 1 -> 2 best | median | round range |")
    print("|---|---:|---:|---:|---:|---:|")
    for name, f in jobs(h, r).items():
        if args.only not in name:
            continue
        assert _same(f(1), f(2)), f"{name}: workers changed the output"
        res = {1: [], 2: []}
        for _ in range(args.rounds):
            for w in (1, 2):
                t = time.perf_counter()
                f(w)
                res[w].append(time.perf_counter() - t)
        b1, b2 = min(res[1]), min(res[2])
        m1, m2 = statistics.median(res[1]), statistics.median(res[2])
        per = [a / b for a, b in zip(res[1], res[2])]
        print(f"| {name} | {b1 * 1e3:.1f} / {m1 * 1e3:.1f} | {b2 * 1e3:.1f} / {m2 * 1e3:.1f} | {b1 / b2:.2f}x | "
              f"{m1 / m2:.2f}x | {min(per):.2f}-{max(per):.2f}x |", flush=True)
    print(f"# end load {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
