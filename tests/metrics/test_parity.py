"""Compiled backend vs pure-Python twin: identical outputs on random inputs (Hypothesis).

Each test calls the backend functions directly (``pysynth._core.metrics.*`` and
``pysynth.metrics._reference.*``) and requires the same dtype, shape and values
(``np.array_equal``; floats bit-for-bit), or the same exception type.
"""
from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pysynth import _dispatch
from pysynth.metrics import TokenIds

from _parity import call_all

BACKENDS = _dispatch.available("metrics")
PY = BACKENDS["python"]
CPP = BACKENDS.get("cpp")

pytestmark = pytest.mark.skipif(CPP is None, reason="compiled extension not built")

SETTINGS = {
    "deadline": None,
    "suppress_health_check": [HealthCheck.too_slow, HealthCheck.data_too_large],
}

# ----------------------------------------------------------------------------- text

WORDS = [
    "the", "cat", "sat", "on", "mat", "a", "dog", "is", "how", "what", "to", "bond",
    "wireless", "networks", "running", "runs", "ran", "generously", "caresses", "ponies",
    "happily", "question", "questions", "answer", "answered", "relational", "sky", "dying",
    "agreed", "feed", "hopping", "I", "it", "x",
]
PUNCT = list(".,!?-'\"&;:<>()/")
SPECIAL = [
    "3.14", "1,000", "a-b", "&amp;", "&quot;", "&lt;", "&gt;", "<skipped>", "-\n", "\n",
    "\t", "  ", "   ", "42", "007", "x2", "2-3", "U.S.", "e.g.", "...", "--", "$5", "100%",
    "@user", "#tag", "{x}", "[y]", "~", "`", "^", "_", "|", "\\", "+", "=", "*",
]
UNICODE = [
    "İ", "\u212a", "é", "e\u0301", "\u00a0", "\u2028", "\u2029", "\x1c", "\x1d", "\x1e",
    "\x1f", "\x85", "\u3000", "\u2009", "\u200b", "\x0b", "\x0c", "\r", "中文", "日本語",
    "問題", "😀", "👍🏽", "ß", "ﬁ", "Σ", "ς", "İstanbul", "ǅ", "Ωmega", "Ⅻ", "²", "٣",
    "\ufeff", "\u0000", "\x7f", "ﾃｽﾄ", "Ǆ", "ẞ",
]
# Every code point str.split() / str.rstrip() treat as whitespace.
WHITESPACE = [chr(c) for c in range(0x3001) if chr(c).isspace()]
UNICODE += WHITESPACE
SEPS = [" "] * 20 + ["", "  ", "\t", "\n", "\u00a0", "\u3000", "\x85", "\u2028", "\x1c", "\r\n"] + WHITESPACE

word = st.tuples(st.sampled_from(WORDS), st.integers(0, 3)).map(
    lambda t: (t[0], t[0].upper(), t[0].capitalize(), t[0].lower())[t[1]]
)
piece = st.one_of(
    word, word, word, word,
    st.sampled_from(PUNCT),
    st.sampled_from(SPECIAL),
    st.sampled_from(UNICODE),
    st.text(max_size=3),  # arbitrary code points (no surrogates)
)
short_text = st.lists(st.tuples(piece, st.sampled_from(SEPS)), max_size=14).map(
    lambda ps: "".join(p + s for p, s in ps)
)
# Long texts (> 64 tokens): the compiled side's general hash path instead of the
# short-reference bit-matrix fast path. Built from a seed (cheap to generate).
_LONG_PIECES = WORDS * 3 + PUNCT + SPECIAL[:8] + UNICODE[:12]


def _long_from_seed(seed: int, n: int) -> str:
    rng = random.Random(seed)
    return "".join(rng.choice(_LONG_PIECES) + rng.choice(SEPS[:22]) for _ in range(n))


long_text = st.builds(_long_from_seed, st.integers(0, 2**32), st.integers(65, 200))
text = st.one_of(st.just(""), short_text, short_text, short_text, short_text, long_text)


@st.composite
def related(draw, base):
    """A text sharing material with ``base`` (so that matches happen), or an unrelated one."""
    kind = draw(st.integers(0, 4))
    if kind == 0:
        return base
    if kind in (1, 2):
        rng = random.Random(draw(st.integers(0, 2**32)))
        toks = [t for t in base.split(" ") if rng.random() < 0.75]
        if kind == 2:
            rng.shuffle(toks)
        extra = [rng.choice(WORDS) for _ in range(rng.randrange(4))]
        return " ".join(toks + extra)
    return draw(text)


@st.composite
def grouped(draw, min_refs=0, max_refs=3, max_hyps=5, hyp_text=text):
    """(hyps, flat refs, ref_offsets): 0..3 references per hypothesis."""
    hyps = draw(st.lists(hyp_text, min_size=1, max_size=max_hyps))
    counts = [draw(st.integers(min_refs, max_refs)) for _ in hyps]
    refs = []
    for h, c in zip(hyps, counts):
        refs.extend(draw(related(h)) for _ in range(c))
    offsets = np.zeros(len(hyps) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return hyps, refs, offsets


_HUGE_IDS = [2**31 - 1, 2**31 - 2, 65535, 65536, 0]


def _id_row(rng: random.Random, long: bool):
    n = rng.randint(65, 150) if long else rng.randint(0, 12)
    return [rng.choice(_HUGE_IDS) if rng.random() < 0.1 else rng.randint(0, 6) for _ in range(n)]


@st.composite
def grouped_ids(draw, min_refs=1, max_refs=3, max_hyps=5):
    """Token-id columns: small id alphabets (matches) plus a few huge ids."""
    rng = random.Random(draw(st.integers(0, 2**32)))
    p_long = draw(st.sampled_from([0.0, 0.2, 0.5]))
    hyps = [_id_row(rng, rng.random() < p_long) for _ in range(draw(st.integers(1, max_hyps)))]
    counts = [draw(st.integers(min_refs, max_refs)) for _ in hyps]
    refs = []
    for h, c in zip(hyps, counts):
        for _ in range(c):
            if h and rng.random() < 0.6:
                refs.append([t for t in h if rng.random() < 0.75])
            else:
                refs.append(_id_row(rng, rng.random() < p_long))
    offsets = np.zeros(len(hyps) + 1, dtype=np.int64)
    np.cumsum(counts, out=offsets[1:])
    return TokenIds.from_lists(hyps), TokenIds.from_lists(refs), offsets


def same(name, *args):
    """Run ``name`` on both backends; assert identical results; return the python result."""
    return call_all("metrics", name, *args)


ROUGE_TYPES = ["rouge1", "rouge2", "rouge3", "rouge4", "rougeL", "rouge5", "rouge12"]
types_rs = st.lists(st.sampled_from(ROUGE_TYPES + ["rougeLsum"] * 3), min_size=1, max_size=5)
types_pl = st.lists(st.sampled_from(ROUGE_TYPES), min_size=1, max_size=4)

# ---------------------------------------------------------------------------- tokenize


@settings(max_examples=150, **SETTINGS)
@given(texts=st.lists(text, min_size=0, max_size=6), tok=st.sampled_from(["rouge", "rouge-stem", "13a", "none"]))
def test_tokenize(texts, tok):
    same("tokenize", texts, tok, 1)


def _many_rows(n, seed):
    """Rows with many repeated tokens, non-ASCII words and empty texts (the compiled tokenize
    interns per thread and fills the rows on worker threads from 65,536 tokens on)."""
    rng = random.Random(seed)
    words = ["the", "The", "a", "Ünïcode", "straße", "日本語", "what's", "x" * 40, "co-op", "1,000", "déjà", "?"]
    words += [f"w{k}" for k in range(300)]
    return ["" if rng.random() < 0.05 else " ".join(rng.choice(words) for _ in range(rng.randint(1, 12))) for _ in range(n)]


@pytest.mark.skipif(CPP is None, reason="compiled backend not built")
@pytest.mark.parametrize("tok", ["rouge", "rouge-stem", "13a", "none"])
def test_tokenize_many_rows_any_workers(tok):
    texts = _many_rows(20_000, 5)
    want = PY.tokenize(texts, tok, 1)
    for w in (1, 2, 3, -1):
        assert CPP.tokenize(texts, tok, w) == want


@pytest.mark.skipif(CPP is None, reason="compiled backend not built")
def test_tokenize_shares_one_str_per_token_with_exact_refcounts():
    import sys

    out = CPP.tokenize(_many_rows(20_000, 6), "none", 2)
    tok = next(t for row in out for t in row if t == "w7")
    uses = sum(1 for row in out for t in row if t is tok)
    assert uses == sum(row.count("w7") for row in out) > 1  # one object for every occurrence
    assert sys.getrefcount(tok) == uses + 2  # the rows, `tok`, getrefcount's argument
    del out
    assert sys.getrefcount(tok) == 2


@settings(max_examples=60, **SETTINGS)
@given(texts=st.lists(st.sampled_from(UNICODE + SPECIAL + PUNCT), min_size=1, max_size=20))
def test_tokenize_odd_characters(texts):
    joined = ["".join(texts), " ".join(texts), "a".join(texts)]
    for tok in ("rouge", "rouge-stem", "13a", "none"):
        same("tokenize", texts + joined, tok, 1)


# Dense texts over a small alphabet: block boundaries of vectorised scanners, multi-byte
# UTF-8 sequences split across them, and tokens differing only by trailing NULs (exact
# short-string keys must include the length).
DENSE = "aZ9 .,-'&;é\u0130\u212a\u00a0\u3000😀\x00\n\t"


@settings(max_examples=100, **SETTINGS)
@given(texts=st.lists(st.text(alphabet=DENSE, max_size=150), min_size=1, max_size=6))
def test_tokenize_dense_alphabet(texts):
    for tok in ("rouge", "rouge-stem", "13a", "none"):
        same("tokenize", texts, tok, 1)


@settings(max_examples=100, **SETTINGS)
@given(
    hyps=st.lists(st.lists(st.text(alphabet="a\x00b", max_size=18), max_size=8).map(" ".join), min_size=1, max_size=4),
    data=st.data(),
)
def test_nul_padded_tokens(hyps, data):
    refs = [data.draw(st.lists(st.text(alphabet="a\x00b", max_size=18), max_size=8).map(" ".join)) for _ in hyps]
    off = np.arange(len(hyps) + 1, dtype=np.int64)
    for tok in ("none", "13a"):
        same("bleu_stats", hyps, refs, off, tok, 3, 1)
    same("rouge_stats", [h + " x" for h in hyps], [r + " x" for r in refs], off, ["rouge1", "rouge2", "rougeL"], "pltrdy", False, 1)


@settings(max_examples=60, **SETTINGS)
@given(words=st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=14), max_size=20))
def test_porter_stem(words):
    same("porter_stem", words)


# ------------------------------------------------------------------------------ ROUGE


@settings(max_examples=120, **SETTINGS)
@given(g=grouped(), types=types_rs, stem=st.booleans(), workers=st.sampled_from([1, 2]))
def test_rouge_stats_rouge_score(g, types, stem, workers):
    hyps, refs, off = g
    stats = same("rouge_stats", hyps, refs, off, types, "rouge-score", stem, workers)
    assert stats.shape == (len(refs), len(types), 3)
    same("rouge_prf", stats)


@settings(max_examples=120, **SETTINGS)
@given(g=grouped(), types=types_pl, stem=st.booleans(), workers=st.sampled_from([1, 2]))
def test_rouge_stats_pltrdy(g, types, stem, workers):
    hyps, refs, off = g
    same("rouge_stats", hyps, refs, off, types, "pltrdy", stem, workers)


@settings(max_examples=80, **SETTINGS)
@given(
    g=grouped(hyp_text=st.one_of(short_text, long_text)),
    types=st.lists(st.sampled_from(["rougeL", "rougeLsum", "rouge1", "rouge2", "rouge4", "rouge9"]), min_size=1, max_size=3),
    flavor=st.sampled_from(["rouge-score", "pltrdy"]),
)
def test_rouge_stats_long(g, types, flavor):
    if flavor == "pltrdy":
        types = [t for t in types if t != "rougeLsum"] or ["rougeL"]
    hyps, refs, off = g
    same("rouge_stats", hyps, refs, off, types, flavor, True, 1)


@settings(max_examples=80, **SETTINGS)
@given(g=grouped(hyp_text=st.one_of(short_text, long_text)), types=types_rs, workers=st.sampled_from([1, 2]))
def test_rouge_stats_long_no_stemmer(g, types, workers):
    # the keyed tokens (no stemmer) feed the general interning path when a reference is long
    hyps, refs, off = g
    same("rouge_stats", hyps, refs, off, types, "rouge-score", False, workers)


@settings(max_examples=120, **SETTINGS)
@given(g=grouped(hyp_text=st.one_of(text, long_text)), types=types_rs, stem=st.booleans(),
       workers=st.sampled_from([1, 2]))
def test_rouge_prf_texts(g, types, stem, workers):
    hyps, refs, off = g
    prf = same("rouge_prf_texts", hyps, refs, off, types, stem, workers)
    assert prf.shape == (3, len(types), len(refs))
    want = CPP.rouge_prf(CPP.rouge_stats(hyps, refs, off, types, "rouge-score", stem, workers))
    assert np.array_equal(prf, want)


# Tokens the keyed tokenizer treats specially: 7/8/9-byte words (exact key vs hash), words
# sharing their first 8 bytes, words longer than 16 and 64 bytes (they cross SIMD blocks and
# bitmap words), case variants, and the two non-ASCII letters that lower-case to ASCII.
_EDGE = ["abcdefg", "abcdefgh", "abcdefghi", "ABCDEFGH", "abcdefghj", "internationalization",
         "internationalisation", "INTERNATIONALIZATION", "x" * 63, "x" * 64, "x" * 65, "X" * 65,
         "y" * 130, "a1b2c3d4e5", "A1B2C3D4E5", "K\u212aelvin", "\u0130stanbul", "stanbul", "\u0131",
         "\u00e9t\u00e9", "t\u00e9"]


@pytest.mark.parametrize("seed", range(40))
def test_rouge_keyed_token_edges(seed):
    rng = random.Random(seed)

    def t():
        n = rng.choice([0, 1, 3, 8, 20, 70])
        return "".join(rng.choice(_EDGE + WORDS) + rng.choice([" ", "", "-", ". ", "\n", "  "]) for _ in range(n))

    hyps = [t() for _ in range(12)]
    refs = [rng.choice([h, t()]) for h in hyps for _ in range(2)]
    off = np.arange(0, 2 * len(hyps) + 1, 2, dtype=np.int64)
    for types in (["rouge1", "rouge2", "rougeL"], ["rouge3", "rougeLsum"]):
        same("rouge_stats", hyps, refs, off, types, "rouge-score", False, 1 + seed % 2)
        same("rouge_prf_texts", hyps, refs, off, types, False, 1)


@settings(max_examples=100, **SETTINGS)
@given(g=grouped_ids(min_refs=0), types=st.lists(st.sampled_from(ROUGE_TYPES), min_size=1, max_size=4),
       workers=st.sampled_from([1, 2]))
def test_rouge_stats_token_ids(g, types, workers):
    hyps, refs, off = g
    stats = same("rouge_stats", hyps, refs, off, types, "rouge-score", False, workers)
    same("rouge_prf", stats)


@settings(max_examples=100, **SETTINGS)
@given(
    rows=st.integers(0, 8),
    ntypes=st.integers(1, 4),
    data=st.data(),
)
def test_rouge_prf_random(rows, ntypes, data):
    vals = data.draw(st.lists(st.integers(0, 10**6), min_size=rows * ntypes * 3, max_size=rows * ntypes * 3))
    stats = np.array(vals, dtype=np.int64).reshape(rows, ntypes, 3)
    if data.draw(st.booleans()):  # consistent statistics: matches <= both counts
        stats[..., 0] = np.minimum(stats[..., 0], np.minimum(stats[..., 1], stats[..., 2]))
    same("rouge_prf", stats)


# ------------------------------------------------------------------------------- BLEU


@settings(max_examples=120, **SETTINGS)
@given(g=grouped(min_refs=1), tok=st.sampled_from(["13a", "none"]), max_order=st.integers(1, 5),
       workers=st.sampled_from([1, 2]))
def test_bleu_stats(g, tok, max_order, workers):
    hyps, refs, off = g
    stats = same("bleu_stats", hyps, refs, off, tok, max_order, workers)
    assert stats.shape == (len(hyps), 2 + 2 * max_order)
    same("coco_sentence_scores", stats, max_order)
    for method, value in (("none", 0.0), ("floor", 0.1), ("add-k", 1.0), ("exp", 0.0)):
        for eff in (False, True):
            same("sacrebleu_sentence_scores", stats, method, value, eff, max_order)


@settings(max_examples=100, **SETTINGS)
@given(g=grouped_ids(), max_order=st.integers(1, 5), workers=st.sampled_from([1, 2]))
def test_bleu_stats_token_ids(g, max_order, workers):
    hyps, refs, off = g
    stats = same("bleu_stats", hyps, refs, off, "none", max_order, workers)
    same("coco_sentence_scores", stats, max_order)


@st.composite
def bleu_stat_rows(draw, max_order):
    rows = []
    for _ in range(draw(st.integers(0, 6))):
        h = draw(st.integers(0, 40))
        r = draw(st.one_of(st.integers(0, 40), st.just(h)))
        totals = [max(h - n, 0) for n in range(max_order)]
        if draw(st.integers(0, 4)) == 0:  # arbitrary (inconsistent) totals too
            totals = [draw(st.integers(0, 40)) for _ in range(max_order)]
        correct = [draw(st.integers(0, t)) for t in totals]
        if draw(st.booleans()):
            correct = [c if draw(st.integers(0, 2)) else 0 for c in correct]
        rows.append([h, r, *correct, *totals])
    return np.array(rows, dtype=np.int64).reshape(len(rows), 2 + 2 * max_order)


@settings(max_examples=150, **SETTINGS)
@given(
    data=st.data(),
    max_order=st.integers(1, 5),
    method=st.sampled_from(["none", "floor", "add-k", "exp"]),
    value=st.one_of(st.sampled_from([0.0, 0.1, 0.5, 1.0, 2.0, 3.0]), st.floats(0, 10, allow_nan=False)),
    eff=st.booleans(),
)
def test_sentence_scores_random_stats(data, max_order, method, value, eff):
    stats = data.draw(bleu_stat_rows(max_order))
    same("sacrebleu_sentence_scores", stats, method, value, eff, max_order)
    same("coco_sentence_scores", stats, max_order)


# ------------------------------------------------------------- workers and batching


@settings(max_examples=40, **SETTINGS)
@given(g=grouped(max_hyps=12), types=types_rs, flavor=st.sampled_from(["rouge-score", "pltrdy"]))
def test_workers_do_not_matter(g, types, flavor):
    hyps, refs, off = g
    if flavor == "pltrdy":
        types = [t for t in types if t != "rougeLsum"] or ["rougeL"]
    base = CPP.rouge_stats(hyps, refs, off, types, flavor, True, 1)
    for w in (2, 3, -1):
        assert np.array_equal(CPP.rouge_stats(hyps, refs, off, types, flavor, True, w), base)
    base_tok = CPP.tokenize(hyps + refs, "rouge-stem", 1)
    assert CPP.tokenize(hyps + refs, "rouge-stem", -1) == base_tok
    if np.all(np.diff(off) > 0):
        b = CPP.bleu_stats(hyps, refs, off, "13a", 4, 1)
        for w in (2, -1):
            assert np.array_equal(CPP.bleu_stats(hyps, refs, off, "13a", 4, w), b)


def _corpus(n, seed):
    rng = np.random.default_rng(seed)
    vocab = WORDS + ["İ", "é", "3.14", ",", ".", "中文", "&amp;", "\u00a0"]
    hyps, refs, counts = [], [], []
    for i in range(n):
        ln = int(rng.integers(0, 90 if i % 50 == 0 else 20))
        h = " ".join(rng.choice(vocab, ln))
        hyps.append(h)
        c = int(rng.integers(1, 4))
        counts.append(c)
        for _ in range(c):
            toks = h.split()
            keep = [t for t in toks if rng.random() < 0.7] + list(rng.choice(vocab, int(rng.integers(0, 5))))
            refs.append(" ".join(keep) if rng.random() < 0.9 else "")
    off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(counts, out=off[1:])
    return hyps, refs, off


def _chunks(fn, hyps, refs, off, size):
    parts = []
    for s in range(0, len(hyps), size):
        e = min(s + size, len(hyps))
        sub_off = off[s : e + 1] - off[s]
        parts.append(fn(hyps[s:e], refs[off[s] : off[e]], sub_off))
    return np.concatenate(parts, axis=0)


@pytest.mark.parametrize("workers", [1, 2, -1])
def test_large_batch_equals_chunks(workers):
    hyps, refs, off = _corpus(3000, 7)
    types = ["rouge1", "rouge2", "rougeL", "rougeLsum"]
    big = CPP.rouge_stats(hyps, refs, off, types, "rouge-score", True, workers)
    small = _chunks(lambda h, r, o: CPP.rouge_stats(h, r, o, types, "rouge-score", True, 1), hyps, refs, off, 37)
    assert np.array_equal(big, small)
    big = CPP.rouge_stats(hyps, refs, off, ["rouge1", "rougeL"], "pltrdy", False, workers)
    small = _chunks(lambda h, r, o: CPP.rouge_stats(h, r, o, ["rouge1", "rougeL"], "pltrdy", False, 1), hyps, refs, off, 53)
    assert np.array_equal(big, small)
    big = CPP.bleu_stats(hyps, refs, off, "13a", 4, workers)
    small = _chunks(lambda h, r, o: CPP.bleu_stats(h, r, o, "13a", 4, 1), hyps, refs, off, 41)
    assert np.array_equal(big, small)
    assert CPP.tokenize(hyps, "13a", workers) == [t for s in range(0, 3000, 100) for t in CPP.tokenize(hyps[s : s + 100], "13a", 1)]


def test_large_batch_matches_python():
    hyps, refs, off = _corpus(600, 11)
    for args in (
        (["rouge1", "rouge2", "rougeL", "rougeLsum"], "rouge-score", True),
        (["rouge1", "rouge2", "rougeL"], "pltrdy", False),
    ):
        assert np.array_equal(CPP.rouge_stats(hyps, refs, off, *args, -1), PY.rouge_stats(hyps, refs, off, *args, 1))
    assert np.array_equal(CPP.bleu_stats(hyps, refs, off, "13a", 4, -1), PY.bleu_stats(hyps, refs, off, "13a", 4, 1))


def test_unbalanced_groups_and_high_orders():
    """200 references for one hypothesis, none for others; BLEU orders up to 20."""
    rng = random.Random(0)

    def t(n):
        return " ".join(rng.choice("abcdefgh") for _ in range(n))

    hyps = [t(rng.randint(0, 80)) for _ in range(7)]
    counts = [200, 0, 1, 0, 57, 3, 0]
    refs = [t(rng.randint(0, 80)) for _ in range(sum(counts))]
    off = np.zeros(len(hyps) + 1, np.int64)
    np.cumsum(counts, out=off[1:])
    for flavor, types in (("rouge-score", ["rouge1", "rouge3", "rougeL", "rougeLsum"]), ("pltrdy", ["rouge2", "rougeL"])):
        want = same("rouge_stats", hyps, refs, off, types, flavor, True, 1)
        for w in (2, -1, 16):
            assert np.array_equal(CPP.rouge_stats(hyps, refs, off, types, flavor, True, w), want)
    counts = [c or 1 for c in counts]
    refs = [t(rng.randint(0, 80)) for _ in range(sum(counts))]
    np.cumsum(counts, out=off[1:])
    for max_order in (1, 7, 10, 20):
        want = same("bleu_stats", hyps, refs, off, "13a", max_order, 1)
        assert np.array_equal(CPP.bleu_stats(hyps, refs, off, "13a", max_order, -1), want)
        same("coco_sentence_scores", want, max_order)
        same("sacrebleu_sentence_scores", want, "exp", 0.0, True, max_order)


@pytest.mark.skipif(CPP is None, reason="compiled backend not built")
def test_sentence_scores_any_workers():
    """Sentence scores split across threads (rows > one block of 16,384): the same floats."""
    hyps, refs, off = _corpus(40_000, 13)
    stats = CPP.bleu_stats(hyps, refs, off, "13a", 4, 2)
    stats[::7, 2:6] = 0  # zero matches: the smoothing branches
    for method, value in (("exp", 0.0), ("floor", 0.1), ("add-k", 1.0), ("none", 0.0)):
        want = PY.sacrebleu_sentence_scores(stats[:3000], method, value, True, 4)
        assert np.array_equal(CPP.sacrebleu_sentence_scores(stats[:3000], method, value, True, 4, 2), want)
        one = CPP.sacrebleu_sentence_scores(stats, method, value, True, 4, 1)
        for w in (2, 3, -1):
            assert np.array_equal(CPP.sacrebleu_sentence_scores(stats, method, value, True, 4, w), one)
    one = CPP.coco_sentence_scores(stats, 4, 1)
    assert np.array_equal(PY.coco_sentence_scores(stats[:3000], 4, 1), one[:3000])
    for w in (2, 3, -1):
        assert np.array_equal(CPP.coco_sentence_scores(stats, 4, w), one)


def test_concurrent_calls_from_python_threads():
    """The compiled functions release the GIL: concurrent callers must not share state."""
    import threading

    jobs = [_corpus(300, seed) for seed in range(6)]
    types = ["rouge1", "rouge2", "rougeL", "rougeLsum"]

    def run(job, w):
        h, r, o = job
        return (
            CPP.rouge_stats(h, r, o, types, "rouge-score", True, w),
            CPP.rouge_stats(h, r, o, ["rouge1", "rougeL"], "pltrdy", False, w),
            CPP.bleu_stats(h, r, o, "13a", 4, w),
            CPP.tokenize(h, "rouge-stem", w),
        )

    want = [run(job, 1) for job in jobs]
    bad = []

    def work(k):
        for _ in range(5):
            got = run(jobs[k], (1, 2, -1)[k % 3])
            if not all(np.array_equal(a, b) if isinstance(a, np.ndarray) else a == b for a, b in zip(got, want[k])):
                bad.append(k)

    threads = [threading.Thread(target=work, args=(k,)) for k in range(len(jobs))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert bad == []
