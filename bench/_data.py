"""Workloads for the metrics benchmarks (fixed seeds, real text when it is there).

Real text comes from the project's shared data folder (``$PYSYNTH_SHARED_DATA``, default
``<repo>/../shared/data``). When that folder is absent, or ``PYSYNTH_BENCH_SYNTHETIC=1`` is
set, a synthetic corpus with the same shape is generated instead (a Zipf-distributed
vocabulary of made-up words); ``source`` in each workload says which one was used and the
benchmark JSON records it.

short  100,000 question-length pairs (5-15 whitespace tokens), 200,000 *distinct* strings:
       the unique real questions of VQA v2 (``question``), query-wellformedness
       (``query``, train/dev/test), MQR (``ill_formed``/``well_formed``, dev/test),
       ComQA/WikiAnswers and SQuAD 2.0 questions (about 70k), topped up to 200k with
       edited copies of them (1-3 word-level edits: substitute a word drawn from the real
       vocabulary, drop, duplicate or swap adjacent words), shuffled with seed 0 and paired
       at random (hyps = first 100k, refs = next 100k). Every string occurs once, so
       sacrebleu's lru_cache on its tokenizer gets no hits that pysynth would not get.
long   10,000 pairs of 100-300 token windows cut from the SQuAD 2.0 dev contexts (all
       contexts concatenated into one word stream; each window has a random start and a
       random length in [100, 300], seed 1), each paired with an independent window.
"""
from __future__ import annotations

import gzip
import json
import os
import random
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import List

ROOT = Path(__file__).resolve().parent.parent
SHARED_DATA = Path(os.environ.get("PYSYNTH_SHARED_DATA", ROOT.parent / "shared" / "data"))

N_SHORT = 100_000
N_LONG = 10_000
SHORT_MIN, SHORT_MAX = 5, 15
LONG_MIN, LONG_MAX = 100, 300


@dataclass
class Workload:
    name: str
    hyps: List[str]
    refs: List[str]
    source: str  # "real" or "synthetic"
    info: dict = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.hyps)

    def subset(self, n: int) -> "Workload":
        """The first n pairs (pairs are already in random order)."""
        return Workload(f"{self.name}[:{n}]", self.hyps[:n], self.refs[:n], self.source, dict(self.info))

    def tokens(self) -> int:
        return sum(len(s.split()) for s in self.hyps) + sum(len(s.split()) for s in self.refs)


def use_real() -> bool:
    if os.environ.get("PYSYNTH_BENCH_SYNTHETIC", "").strip() not in ("", "0"):
        return False
    return SHARED_DATA.is_dir()


def _jsonl(path: Path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def _squad(path: Path) -> dict:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return json.load(f)


def _ok_short(s: str) -> bool:
    return SHORT_MIN <= len(s.split()) <= SHORT_MAX


# ------------------------------------------------------------------------- real text


def _real_questions() -> List[str]:
    """Unique real questions of 5-15 tokens, in first-seen order (deterministic)."""
    seen = {}

    def add(s):
        if isinstance(s, str):
            s = s.strip()
            if _ok_short(s) and s not in seen:
                seen[s] = None

    d = SHARED_DATA
    p = d / "vqa_v2_subset" / "train.jsonl.gz"
    if p.exists():
        for r in _jsonl(p):
            add(r.get("question"))
    for split in ("train", "dev", "test"):
        p = d / "query_wellformedness" / f"{split}.jsonl.gz"
        if p.exists():
            for r in _jsonl(p):
                add(r.get("query"))
    for split in ("dev", "test"):
        p = d / "mqr" / f"{split}.jsonl.gz"
        if p.exists():
            for r in _jsonl(p):
                add(r.get("ill_formed"))
                add(r.get("well_formed"))
    p = d / "comqa_wikianswers_clusters" / "train.jsonl.gz"
    if p.exists():
        for r in _jsonl(p):
            for q in r.get("questions", []):
                add(q)
    p = d / "squad2_dev_subset" / "dev-v2.0.subset.json.gz"
    if p.exists():
        for art in _squad(p)["data"]:
            for para in art["paragraphs"]:
                for qa in para["qas"]:
                    add(qa.get("question"))
    return list(seen)


def _real_context_words() -> List[str]:
    p = SHARED_DATA / "squad2_dev_subset" / "dev-v2.0.subset.json.gz"
    words: List[str] = []
    for art in _squad(p)["data"]:
        for para in art["paragraphs"]:
            words.extend(para["context"].split())
    return words


# ------------------------------------------------------------------------ synthetic


def _synthetic_vocab(rng: random.Random, n: int = 20_000) -> List[str]:
    letters = "abcdefghijklmnopqrstuvwxyz"
    vocab, seen = [], set()
    while len(vocab) < n:
        w = "".join(rng.choice(letters) for _ in range(rng.randint(2, 9)))
        if w not in seen:
            seen.add(w)
            vocab.append(w)
    return vocab


@lru_cache(maxsize=4)
def _zipf_cum(n: int) -> tuple:
    acc, out = 0.0, []
    for r in range(n):
        acc += 1.0 / (r + 1)
        out.append(acc)
    return tuple(out)


def _zipf_words(rng: random.Random, vocab: List[str], k: int) -> List[str]:
    return rng.choices(vocab, cum_weights=_zipf_cum(len(vocab)), k=k)


def _synthetic_questions(rng: random.Random, n: int) -> List[str]:
    vocab = _synthetic_vocab(rng)
    heads = ["What", "How", "Why", "Which", "Where", "When", "Who", "Is", "Can", "Does"]
    out, seen = [], set()
    while len(out) < n:
        k = rng.randint(SHORT_MIN, SHORT_MAX) - 1
        words = [rng.choice(heads)] + _zipf_words(rng, vocab, k - 1) + [rng.choice(vocab) + "?"]
        s = " ".join(words)
        if s not in seen:
            seen.add(s)
            out.append(s)
    return out


# -------------------------------------------------------------------------- builders


def _edit(rng: random.Random, words: List[str], vocab: List[str]) -> List[str]:
    w = list(words)
    for _ in range(rng.randint(1, 3)):
        op = rng.randrange(4)
        i = rng.randrange(len(w))
        if op == 0:
            w[i] = rng.choice(vocab)
        elif op == 1 and len(w) > SHORT_MIN:
            del w[i]
        elif op == 2 and len(w) < SHORT_MAX:
            w.insert(i, w[i])
        elif len(w) > 1:
            j = min(i + 1, len(w) - 1)
            if j == i:
                i, j = i - 1, i
            w[i], w[j] = w[j], w[i]
    return w


@lru_cache(maxsize=None)
def short_pairs(n: int = N_SHORT, synthetic: bool = False) -> Workload:
    """n random pairs of distinct question-length strings (2n distinct strings).

    ``synthetic=True``: the synthetic corpus even when the real text is there (the
    benchmark's second row, workload ``short-synthetic``)."""
    rng = random.Random(0)
    real = use_real() and not synthetic
    base = _real_questions() if real else []
    if real and len(base) < 1000:  # folder present but the files are not: fall back
        real = False
    if not real:
        base = _synthetic_questions(random.Random(0), min(2 * n, 70_000))
    n_base = len(base)
    vocab = sorted({w for s in base for w in s.split()})
    pool = list(base[: 2 * n])
    seen = set(pool)
    while len(pool) < 2 * n:
        src = base[rng.randrange(n_base)].split()
        s = " ".join(_edit(rng, src, vocab))
        if s not in seen and _ok_short(s):
            seen.add(s)
            pool.append(s)
    rng.shuffle(pool)
    info = {"distinct_strings": len(set(pool)), "real_questions": n_base if real else 0}
    name = "short-synthetic" if synthetic else "short"
    return Workload(name, pool[:n], pool[n : 2 * n], "real" if real else "synthetic", info)


@lru_cache(maxsize=None)
def long_pairs(n: int = N_LONG) -> Workload:
    """n pairs of 100-300 token windows of SQuAD contexts (or synthetic text)."""
    rng = random.Random(1)
    real = use_real() and (SHARED_DATA / "squad2_dev_subset" / "dev-v2.0.subset.json.gz").exists()
    if real:
        words = _real_context_words()
    else:
        vrng = random.Random(1)
        words = _zipf_words(vrng, _synthetic_vocab(vrng), 80_000)

    def window():
        k = rng.randint(LONG_MIN, LONG_MAX)
        start = rng.randrange(len(words) - k)
        return " ".join(words[start : start + k])

    hyps = [window() for _ in range(n)]
    refs = [window() for _ in range(n)]
    return Workload("long", hyps, refs, "real" if real else "synthetic", {"stream_words": len(words)})


if __name__ == "__main__":  # quick look: python bench/_data.py
    for w in (short_pairs(), long_pairs()):
        lens = [len(s.split()) for s in w.hyps + w.refs]
        print(w.name, w.source, len(w), "pairs; tokens min/mean/max",
              min(lens), round(sum(lens) / len(lens), 1), max(lens), w.info)
        print("  e.g.", repr(w.hyps[0][:120]), "|", repr(w.refs[0][:120]))
