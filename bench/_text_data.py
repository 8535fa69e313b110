"""Workload of the text-stage benchmark: about 1M question-like strings (fixed seed).

The paper's question set Q (Ding & Balog 2018, Sect. 5) has 3.2M WikiAnswers questions; the
shared data holds about 70k real questions (``_data._real_questions()``: VQA v2, query
well-formedness, MQR, ComQA/WikiAnswers, SQuAD 2.0). Copying them 14 times would give every
bigram a count that is a multiple of 14, so instead a first-order word Markov chain is
trained on their ``rouge`` tokens and 1M new questions are sampled from it (start and end
states included, lengths 3-20 tokens). With probability ``NOISE`` a sampled word is replaced
by a word drawn from the unigram distribution, which creates unseen bigrams (as a larger
corpus would). Questions are written with a capital first letter and a trailing ``?`` so the
tokenizer has something to do. Without the shared data (or with
``PYSYNTH_BENCH_SYNTHETIC=1``) the chain is trained on ``_data``'s synthetic Zipf questions.

The questions are cached in the temp folder (``cache_file``); ``python bench/_text_data.py``
prints a summary.
"""
from __future__ import annotations

import os
import re
import tempfile
from functools import lru_cache
from pathlib import Path
from typing import List

import _data
import numpy as np

N_QUESTIONS = 1_000_000
NOISE = 0.05
MIN_LEN, MAX_LEN = 3, 20
_TOKEN = re.compile(r"[a-z0-9]+")


def cache_file(n: int = N_QUESTIONS, seed: int = 0) -> Path:
    """The questions as a text file, one per line (written on first use, then reused)."""
    path = Path(tempfile.gettempdir()) / f"pysynth_bench_text_v1_{source()}_{n}_{seed}.txt"
    if not path.exists():
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        tmp.write_text("".join(q + "\n" for q in _generate(n, seed)), encoding="utf-8")
        tmp.replace(path)
    return path


@lru_cache(maxsize=2)
def questions(n: int = N_QUESTIONS, seed: int = 0) -> List[str]:
    """n generated questions (cached on disk, see cache_file)."""
    return cache_file(n, seed).read_text(encoding="utf-8").split("\n")[:-1]


def _generate(n: int, seed: int) -> List[str]:
    real = _data.use_real()
    base = _data._real_questions() if real else []
    if len(base) < 1000:
        import random

        real = False
        base = _data._synthetic_questions(random.Random(0), 70_000)
    sents = [_TOKEN.findall(s.lower()) for s in base]
    sents = [s for s in sents if s]
    words = sorted({w for s in sents for w in s})
    index = {w: i for i, w in enumerate(words)}
    V = len(words)
    end = V  # the end state; rows 0..V-1 are words, row V+1 is the start state
    start = V + 1
    src, dst = [], []
    for s in sents:
        ids = [index[w] for w in s]
        src.extend([start] + ids)
        dst.extend(ids + [end])
    src = np.asarray(src, np.int64)
    dst = np.asarray(dst, np.int64)
    # transition counts as a CSR matrix over (src, dst), rows sorted by src
    key = src * (V + 2) + dst
    uniq, cnt = np.unique(key, return_counts=True)
    row = uniq // (V + 2)
    col = uniq % (V + 2)
    cum = np.cumsum(cnt).astype(np.float64)
    row_end = np.searchsorted(row, np.arange(V + 2), side="right")
    row_begin = np.searchsorted(row, np.arange(V + 2), side="left")
    before = np.where(row_begin > 0, cum[np.maximum(row_begin - 1, 0)], 0.0)
    total = np.where(row_end > 0, cum[np.maximum(row_end - 1, 0)], 0.0) - before
    unigram = np.bincount(dst[dst < V], minlength=V).astype(np.float64)
    unigram_cum = np.cumsum(unigram)

    rng = np.random.default_rng(seed)
    out = np.full((n, MAX_LEN), -1, np.int64)
    state = np.full(n, start, np.int64)
    alive = np.ones(n, bool)
    for step in range(MAX_LEN):
        rows = np.nonzero(alive)[0]
        if rows.size == 0:
            break
        st = state[rows]
        u = rng.random(rows.size)
        pick = np.searchsorted(cum, before[st] + u * total[st], side="right")
        nxt = col[np.minimum(pick, cum.size - 1)]
        if step < MIN_LEN:  # too short: resample a word instead of ending
            bad = nxt == end
            if bad.any():
                nxt[bad] = np.searchsorted(unigram_cum, rng.random(bad.sum()) * unigram_cum[-1], side="right")
        noise = (rng.random(rows.size) < NOISE) & (nxt != end)
        if noise.any():
            nxt[noise] = np.searchsorted(unigram_cum, rng.random(noise.sum()) * unigram_cum[-1], side="right")
        finished = nxt == end
        keep = rows[~finished]
        out[keep, step] = nxt[~finished]
        state[keep] = nxt[~finished]
        alive[rows[finished]] = False
    words_arr = np.asarray(words, dtype=object)
    result = []
    for r in out:
        toks = words_arr[r[r >= 0]].tolist()
        s = " ".join(toks)
        result.append(s[:1].upper() + s[1:] + "?")
    return result


def source() -> str:
    return "real" if _data.use_real() else "synthetic"


if __name__ == "__main__":
    import time

    t = time.perf_counter()
    qs = questions()
    print(f"{len(qs)} questions in {time.perf_counter() - t:.1f}s ({source()})")
    lens = [len(q.split()) for q in qs]
    print("tokens/question mean", sum(lens) / len(lens), "total", sum(lens))
    for q in qs[:8]:
        print("  ", q)
