"""Fuzz targets: every binding of ``pysynth._core`` against its pure-Python twin (issue 17).

A target turns an arbitrary byte string into one call of a compiled function
(``pysynth._core.<stage>.<name>``) and of its twin (``pysynth.<stage>._reference.<name>``) with
the same arguments, and asserts (``tests/_parity.py``) that both return the same result
(same types, dtypes, shapes, bit-identical floats) or both raise the same exception type.

Inputs are mostly *almost valid*: a well-formed call built from the bytes, then, with some
probability, one field broken (negative or out-of-range ids, wrong dtype or length,
non-monotone offsets, NaN/inf parameters, unknown enum strings, bad worker counts, a mutated
index array) so that the validation paths are fuzzed as well as the kernels.

``TARGETS`` maps ``"<stage>.<name>"`` to the target; families are the stages, plus ``intake``
(:mod:`intake`: the readers, the server's parsing, ``_validate``, the CLI parser, qagen's cost model,
the WordPiece tokenizer, ``/v1/score``'s budget, ``.7z`` names) and ``core`` (``build_info``).
"""
from __future__ import annotations

import math
import os
import struct
import sys
from typing import Callable, Dict, List, Optional

import numpy as np

_TESTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests")
if _TESTS not in sys.path:
    sys.path.insert(0, _TESTS)

from pysynth import _dispatch  # noqa: E402

import _parity  # noqa: E402  (the tests' one comparison helper)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import intake  # noqa: E402  (the intake family: property targets)

__all__ = ["Src", "Built", "TARGETS", "families", "check"]


class Src:
    """Draw values from a byte string; reads past the end give zeros (so every input is usable)."""

    def __init__(self, data: bytes):
        self.d = data
        self.i = 0
        self.x = (len(data) * 0x9E3779B97F4A7C15 + sum(data[:64])) & 0xFFFFFFFFFFFFFFFF

    def byte(self) -> int:
        if self.i >= len(self.d):  # past the end: a fixed pseudo-random continuation (LCG)
            self.x = (self.x * 6364136223846793005 + 1442695040888963407) & 0xFFFFFFFFFFFFFFFF
            return self.x >> 56
        self.i += 1
        return self.d[self.i - 1]

    def int(self, lo: int, hi: int) -> int:
        """Uniform-ish in [lo, hi]."""
        span = hi - lo + 1
        if span <= 1:
            return lo
        nbytes = max(1, (span - 1).bit_length() + 7 >> 3)
        v = 0
        for _ in range(nbytes):
            v = (v << 8) | self.byte()
        return lo + v % span

    def chance(self, k: int) -> bool:
        """True with probability about 1/k."""
        return self.int(0, k - 1) == k - 1

    def bool(self) -> bool:
        return bool(self.byte() & 1)

    def pick(self, seq):
        return seq[self.int(0, len(seq) - 1)]

    def mostly(self, good, bad, k: int = 12):
        """One of ``good``; one of ``bad`` with probability about 1/k."""
        return self.pick(bad) if self.chance(k) else self.pick(good)

    def float(self) -> float:
        c = self.int(0, 15)
        if c == 0:
            return self.pick([math.nan, math.inf, -math.inf, -0.0, 0.0, 1e308, -1e308, 5e-324, 1.0, 0.5])
        if c == 1:
            raw = bytes(self.byte() for _ in range(8))
            return struct.unpack("<d", raw)[0]
        return (self.int(-1000, 1000)) / self.pick([1, 2, 3, 7, 10, 100])

    def ints(self, n: int, lo: int, hi: int) -> List[int]:
        return [self.int(lo, hi) for _ in range(n)]

    def word(self) -> str:
        alpha = self.pick(["abc", "abcdefghij", "aeiouybcdst", "AbC1 ", "é世ß\u0130Ω\u00a0'-."])
        return "".join(self.pick(alpha) for _ in range(self.int(0, 9)))

    def text(self) -> str:
        if self.chance(32):  # raw bytes as text
            return bytes(self.byte() for _ in range(self.int(0, 24))).decode("utf-8", "replace")
        seps = [" ", " ", " ", "\n", "\t", ", ", "? ", "'s ", "  "]
        return "".join(self.word() + self.pick(seps) for _ in range(self.int(0, 8)))

    def texts(self, n: int) -> List[str]:
        return [self.text() for _ in range(n)]

    def workers(self) -> int:
        return self.mostly([1, 1, 1, 2, 3, -1, 2 ** 31 - 1], [0, -2], 4) if self.chance(4) else 1


# ------------------------------------------------------------------------------------ helpers
def offsets_of(src: Src, n_items: int, n_rows: int) -> np.ndarray:
    """Valid int64 offsets (n_rows + 1) over n_items, occasionally broken."""
    cuts = sorted(src.int(0, n_items) for _ in range(max(n_rows - 1, 0)))
    off = np.array([0] + cuts + [n_items], dtype=np.int64) if n_rows > 0 else np.array([n_items], np.int64)
    if n_rows == 0 and n_items != 0:
        off = np.array([0], np.int64)
    if src.chance(12):
        off = break_offsets(src, off)
    return off


def break_offsets(src: Src, off: np.ndarray):
    off = off.copy()
    how = src.int(0, 5)
    if how == 0 and len(off):
        off[src.int(0, len(off) - 1)] += src.pick([-1, 1, -5, 2 ** 40])
    elif how == 1:
        off = off[:-1]
    elif how == 2:
        off = off.astype(np.float64)
    elif how == 3:
        off = off.reshape(1, -1)
    elif how == 4 and len(off):
        off[0] = -1
    else:
        off = np.append(off, off[-1] if len(off) else 0)
    return off


def maybe_dtype(src: Src, a: np.ndarray) -> np.ndarray:
    """Sometimes another dtype (int64, int16, float, uint8, bool) or a non-contiguous view."""
    if not src.chance(10):
        return a
    how = src.int(0, 5)
    if how == 0:
        return a.astype(np.int64)
    if how == 1:
        return a.astype(np.float64) + (0.5 if src.bool() else 0.0)
    if how == 2:
        return np.repeat(a, 2)[::2]
    if how == 3:
        return a.astype(np.uint32) if a.dtype.kind == "i" and (a >= 0).all() else a.astype(np.int16)
    if how == 4:
        return a.tolist()
    return a.astype(np.bool_)


def ragged(src: Src, n_rows: int, max_len: int, vocab: int, min_len: int = 0):
    lens = [src.int(0 if src.chance(20) else min_len, max_len) for _ in range(n_rows)]
    ids = np.array(src.ints(sum(lens), 0, max(vocab - 1, 0)), dtype=np.int32)
    off = np.zeros(n_rows + 1, np.int64)
    np.cumsum(lens, out=off[1:])
    return ids, off


def poke(src: Src, a: np.ndarray) -> np.ndarray:
    """One element of an integer array set to a hostile value."""
    a = np.array(a, copy=True)
    if a.size:
        vals = [0, 1, 7, 255] if a.dtype.kind in "ub" else [-1, -2 ** 31, 2 ** 31 - 1, 0, 1, 7, a.size, a.size + 1]
        a.flat[src.int(0, a.size - 1)] = src.pick(vals)
    return a


# ------------------------------------------------------------------------------------ targets
TARGETS: Dict[str, Callable[[Src], tuple]] = {}


def target(name: str):
    def deco(fn):
        TARGETS[name] = fn
        return fn
    return deco


# metrics
@target("metrics.tokenize")
def _metrics_tokenize(s: Src):
    tok = s.mostly(["rouge", "rouge-stem", "13a", "none"], ["intl", "", "ROUGE"])
    return s.texts(s.int(0, 4)), tok, s.workers()


@target("metrics.porter_stem")
def _porter(s: Src):
    words = [s.word().lower() if s.int(0, 3) else s.word() for _ in range(s.int(0, 8))]
    if s.chance(50):
        words = words + [None]
    return (words,)


def _hyps_refs(s: Src):
    n = s.int(0, 4)
    hyps = s.texts(n)
    per = [s.int(0 if s.chance(10) else 1, 3) for _ in range(n)]
    refs = s.texts(sum(per))
    off = np.zeros(n + 1, np.int64)
    np.cumsum(per, out=off[1:])
    if s.chance(16):
        off = break_offsets(s, off)
    return hyps, refs, off


@target("metrics.rouge_stats")
def _rouge_stats(s: Src):
    hyps, refs, off = _hyps_refs(s)
    types = _rouge_types(s)
    flavor = "other" if s.chance(20) else s.pick(["rouge-score", "pltrdy"])
    if flavor == "pltrdy" and "rougeLsum" in types and not s.chance(8):
        flavor = "rouge-score"
    return hyps, refs, off, types, flavor, s.bool(), s.workers()


def _rouge_types(s: Src):
    types = [s.pick(["rouge1", "rouge2", "rougeL", "rougeLsum", "rouge4"])
             for _ in range(0 if s.chance(30) else s.int(1, 3))]
    if types and s.chance(8):
        types[0] = s.pick(["rouge9", "rouge0", "rougeX", "rouge", "ROUGE1"])
    return types


@target("metrics.rouge_prf_texts")
def _rouge_prf_texts(s: Src):
    hyps, refs, off = _hyps_refs(s)
    types = _rouge_types(s)
    return hyps, refs, off, types, s.bool(), s.workers()


@target("metrics.rouge_prf")
def _rouge_prf(s: Src):
    shape = (s.int(0, 4), s.int(0, 3), 3 if not s.chance(20) else s.int(0, 4))
    stats = np.array(s.ints(int(np.prod(shape)), -1 if s.chance(8) else 0, 12), np.int64).reshape(shape)
    if s.chance(20):
        stats = stats.reshape(-1)
    return (maybe_dtype(s, stats),)


@target("metrics.bleu_stats")
def _bleu_stats(s: Src):
    hyps, refs, off = _hyps_refs(s)
    tok = s.pick(["intl", "zh", ""]) if s.chance(10) else s.pick(["13a", "none"])
    return hyps, refs, off, tok, s.int(-1, 0) if s.chance(10) else s.int(1, 6), s.workers()


def _bleu_table(s: Src, max_order: int):
    n = s.int(0, 4)
    cols = 2 + 2 * max(max_order, 0)
    if s.chance(20):
        cols += s.pick([-1, 1])
    rows = []
    for _ in range(n):
        hl, rl = s.int(0, 12), s.int(0, 12)
        tot = [max(hl - k, 0) for k in range(max(max_order, 0))]
        cor = [s.int(0, t) for t in tot]
        rows.append(([hl, rl] + cor + tot + [0, 0])[:max(cols, 0)])
    a = np.array(rows, np.int64).reshape(n, max(cols, 0)) if rows else np.zeros((0, max(cols, 0)), np.int64)
    if s.chance(15):
        a = poke(s, a)
    return maybe_dtype(s, a)


@target("metrics.coco_sentence_scores")
def _coco(s: Src):
    mo = s.int(-1, 0) if s.chance(12) else s.int(1, 5)
    return _bleu_table(s, mo), mo, s.workers()


@target("metrics.sacrebleu_sentence_scores")
def _sacre(s: Src):
    mo = s.int(-1, 0) if s.chance(12) else s.int(1, 5)
    return (_bleu_table(s, mo), s.mostly(["none", "floor", "add-k", "exp"], ["bad"]), s.float(),
            s.bool(), mo, s.workers())


# metrics: METEOR 1.5 on tiny synthetic resources in the jar's formats
_MW = ["a", "the", "of", "is", "what", "how", "do", "new", "york", "city", "big", "apple", "run", "running", "ran",
       "runs", "car", "cars", "auto", "automobile", "mouse", "mice", "go", "went", "happy", "glad", "quickly", "fast",
       "'s", "n't", ",", ".", "?", "1990", "3.5", "é", "naïve", "日本", "ß", "x-ray", "a.b", "𝔘"]
_EXC = [("run", "ran running"), ("mouse", "mice"), ("go", "went gone"), ("be", "is are was"), ("car", "cars\tautos")]


class Built:
    """An argument made per backend: ``<backend module>.<func>(*args)``. :func:`check` makes it
    with each backend's own function (``meteor_stats`` takes resources that only its backend's
    ``meteor_resources`` makes); an exception while making it is that backend's outcome."""

    def __init__(self, func: str, *args):
        self.func, self.args = func, args

    def make(self, mod):
        return getattr(mod, self.func)(*self.args)

    def __repr__(self):
        return f"Built({self.func!r}, ...)"


def _lines(s: Src, lines: List[str]) -> bytes:
    end = s.pick(["\n", "\n", "\n", "\r\n", "\r"])
    return (end.join(lines) + (end if s.int(0, 3) else "")).encode()


def _garbage(s: Src):
    how = s.int(0, 5)
    if how == 0:
        return bytes(s.byte() for _ in range(s.int(0, 40)))
    if how == 1:
        return s.pick(["run\n", None, bytearray(b"run\nran"), 7])
    if how == 2:  # a word with bytes that are not UTF-8 (a lone surrogate's encoding, a cut sequence)
        return s.pick([b"the\n\xed\xa0\x80\nof\n", b"car\xc3\n1\n", b"\xff\n2 3\n", b"\xe6\x97\n"])
    return "\n".join(s.word() for _ in range(s.int(0, 6))).encode("utf-8", "surrogatepass")


def _meteor_inputs(s: Src, hostile: int, phrases: Optional[List[str]] = None):
    """(function_words, exceptions, synsets, para, max_len): tiny resources in the jar's formats
    and a paraphrase table turned into the cache's arrays by the real builder; one part broken
    with probability about 1/``hostile``. The table's phrases are appended to ``phrases``."""
    from pysynth.metrics._meteor_data import paraphrase_arrays

    fw = _lines(s, [s.pick(_MW) for _ in range(s.int(0, 6))])
    ex = _lines(s, [x for _ in range(s.int(0, 3)) for x in s.pick(_EXC)])
    sy = []
    for _ in range(s.int(0, 8)):
        sy += [s.pick(_MW), " ".join(str(s.int(0, 5)) for _ in range(s.int(0, 3)))]
    table = []
    for _ in range(s.int(0, 6)):
        pair = [" ".join(s.pick(_MW) for _ in range(s.int(1, 3))) for _ in range(2)]
        table += [b"0.5"] + [p.encode() for p in pair]
        if phrases is not None:
            phrases += pair
    para, meta = paraphrase_arrays(table)
    max_len = meta["max_len"]
    if s.chance(hostile):
        how = s.int(0, 12)
        if how == 10:  # valid, but the index disagrees with the table: only lookups change
            max_len = s.int(0, max_len)
        elif how == 11:
            para = dict(para, pfx_val=np.full_like(para["pfx_val"], -1))  # the walk stops after one word
        elif how == 12:
            k = s.pick(["htab_key", "pfx_key", "grp_hash"])
            if para[k].size:
                para = dict(para)
                b = para[k].copy()
                b[s.int(0, b.size - 1)] ^= np.uint64(1 << s.int(0, 63))
                para[k] = b
        elif how == 0:
            fw = _garbage(s)
        elif how == 1:
            ex = _garbage(s)
        elif how == 2:
            if sy and s.bool():  # a synset id that is not an int32
                sy[-1] = s.pick(["x", "+5", "2147483648", "-2147483649", "1.5", "\u0663", "-", "1e3", "-0"])
            else:
                sy = None
        elif how == 3:
            max_len = s.pick([0, 1, -1, 2 ** 31 - 1, 2 ** 31, 2 ** 63, -(2 ** 63), 1.5, True, np.int64(2), "3", None])
        elif how == 4:
            para = s.pick([list(para.items()), None, {k: v for k, v in para.items() if k != s.pick(sorted(para))}])
        else:
            para = dict(para)
            k = s.pick(sorted(para))
            a = para[k]
            w = s.int(0, 8)
            if w == 0:
                para[k] = maybe_dtype(s, a) if s.bool() else a.astype(a.dtype.newbyteorder(">"))
            elif w == 1:
                para[k] = a.reshape(1, -1) if s.bool() else np.repeat(a, 2)[::2]  # 2-d; a strided view (valid)
            elif w == 2:
                para[k] = a[:-1] if a.size and s.bool() else np.append(a, a[-1:] if a.size else np.zeros(1, a.dtype))
            elif w == 3 and k in ("htab_val", "pfx_val"):
                para[k] = np.abs(a)  # no empty slot: a probe would never end
            elif a.dtype.kind in "iu":
                b = a.copy()
                if b.size:
                    neg = [-1, -2 ** 31] if b.dtype.kind == "i" else []
                    b.flat[s.int(0, b.size - 1)] = s.pick([0, 1, 2, 7, 127, b.size] + neg)
                para[k] = b
    if sy is not None:
        sy = _lines(s, sy)
    elif s.bool():
        sy = "car\n1\n"
    return fw, ex, sy, para, max_len


def _segment(s: Src, phrases: List[str], hostile: bool = True) -> str:
    if hostile and s.chance(10):
        return s.pick(["", " ", "a" * s.int(1, 3000), "\ud800", "run \udfff", "the\x0bcar", "\x00", "1,000.50 ...",
                       "é" * 300, s.text()])
    sep = s.pick([" ", " ", " ", " ", "  ", "\t", "\r", "\x0c", "\n"])
    return sep.join(s.pick(phrases) if phrases and s.chance(3) else s.pick(_MW) for _ in range(s.int(0, 8)))


# Resources are opaque (each backend has its own type): compared by what they score on probe
# segments, fixed ones over every word of _MW and ones drawn with the input's table phrases.
_PROBE_H = [" ".join(_MW[i::5]) for i in range(5)] + [" ".join(_MW[::-1]), ""]
_PROBE_R = [[" ".join(_MW[i::3]), " ".join(_MW[i + 1::4])] for i in range(5)] + [[" ".join(_MW)], ["a"]]
_probe: Dict[str, tuple] = {}


@target("metrics.meteor_resources")
def _meteor_resources(s: Src):
    phrases: List[str] = []
    args = _meteor_inputs(s, 3, phrases)
    hyps = [_segment(s, phrases, False) for _ in range(3)]
    refs = [[_segment(s, phrases, False) for _ in range(2)] for _ in hyps]
    _probe["metrics.meteor_resources"] = (_PROBE_H + hyps, _PROBE_R + refs)
    return args


OBSERVE: Dict[str, Callable] = {  # what check() compares: f(backend module, result)
    "metrics.meteor_resources": lambda mod, res: mod.meteor_stats(res, *_probe["metrics.meteor_resources"], 1),
}


@target("metrics.meteor_stats")
def _meteor_stats(s: Src):
    phrases: List[str] = []
    res = Built("meteor_resources", *_meteor_inputs(s, 16, phrases))
    n = s.int(0, 4)
    hyps = [_segment(s, phrases) for _ in range(n)]
    refs = [[_segment(s, phrases) for _ in range(s.int(0 if s.chance(8) else 1, 3))] for _ in range(n)]
    workers = s.workers()
    if s.chance(10):
        how = s.int(0, 5)
        if how == 0:
            refs = s.pick([refs[:-1] if refs else [["a"]], "the car", None, {0: ["a"]}, tuple(refs), iter(refs)])
        elif how == 1 and refs:
            refs[-1] = s.pick(["the car", None, ("a", "b"), [1], [b"car"]])
        elif how == 2:
            hyps = s.pick(["the car", None, hyps + [None], tuple(hyps), b"car"])
        elif how == 3:
            workers = s.pick([0, -2, 2 ** 63, -(2 ** 63), 1.5, True, "1", np.int64(2), None])
        else:
            res = s.pick([None, "res", Built("meteor_stem", "x")])
    return res, hyps, refs, workers


@target("metrics.meteor_scores")
def _meteor_scores(s: Src):
    # the one-shot path's scores from the same inputs (segment scores and the corpus EVAL, no numpy)
    return _meteor_stats(s)


_SUFFIXES = ["", "s", "es", "ies", "ied", "sses", "ss", "us", "'s", "'s'", "'", "ing", "ingly", "ed", "edly", "eed",
             "eedly", "ly", "li", "ogi", "bli", "ational", "tional", "ization", "fulness", "ousness", "iveness",
             "alism", "aliti", "ation", "ator", "alize", "icate", "iciti", "ative", "ical", "ness", "ful", "ement",
             "ment", "ance", "ence", "able", "ible", "ant", "ent", "ism", "ate", "iti", "ous", "ive", "ize", "ion",
             "sion", "tion", "al", "er", "ic", "e", "ll", "y", "Y", "at", "bl", "iz", "bb", "tt", "ogi"]


@target("metrics.meteor_stem")
def _meteor_stem(s: Src):
    if s.chance(12):
        return (s.pick([None, b"running", "\ud800", "run\udcff", 5, "a" * s.int(0, 5000), s.text(), ["run"]]),)
    if s.chance(6):
        return (s.pick(["skis", "skies", "dying", "news", "inning", "proceed", "generously", "communication",
                        "arsenal", "'tis", "sayyid", "yyy", "y", "'", "''", "Y", "é" + "ing", "日本ing", "𝔘ness"]),)
    pre = s.pick(["", "", "", "'", "y", "gener", "commun", "arsen", "Y", "é"])
    body = "".join(s.pick("aeiouybcdlnrstgw'") for _ in range(s.int(0, 6)))
    return (pre + body + s.pick(_SUFFIXES) + (s.pick(_SUFFIXES) if s.chance(4) else ""),)


@target("metrics.meteor_normalize")
def _meteor_normalize(s: Src):
    if s.chance(10):
        return s.pick([None, "abc", [b"a"], ["a\ud800"], [5]]), s.pick([{}, {"Mr": 1}, {"x": 3}, {1: 1}, [], None])
    parts = ["Mr", "No", "U.S", "DOTMULTI", "...", "''", "--", "|||", "'s", "n't", "1,000", "3.5", "a.b.", "é"]
    texts = ["".join(s.pick(parts) if s.chance(3) else s.pick(" .,'`-\"?!|\t\n\x0b\x1c\x01aZ09")
                     for _ in range(s.int(0, 12))) for _ in range(s.int(0, 4))] + s.texts(s.int(0, 2))
    return texts, s.pick([{}, {"Mr": 1, "No": 2, "U.S": 1}, {"a": 2, "b": 1}])


@target("metrics.meteor_score_from_stats")
def _meteor_score(s: Src):
    if s.chance(3):
        st = [s.float() for _ in range(23)]
    else:
        tl, rl = s.int(0, 12), s.int(0, 12)
        tf, rf = s.int(0, tl), s.int(0, rl)
        tc = [s.int(0, 3) for _ in range(4)]
        rc = [s.int(0, 3) for _ in range(4)]
        tfn = [s.int(0, 2) for _ in range(4)]
        rfn = [s.int(0, 2) for _ in range(4)]
        twm, rwm = sum(tc) + sum(tfn), sum(rc) + sum(rfn)
        st = [tl, rl, tf, rf] + tc + rc + tfn + rfn + [s.int(0, max(twm, 1)), twm, rwm]
        if s.chance(4):
            st[s.int(0, 22)] = s.float()
    a = np.array(st, np.float64)
    if s.chance(8):
        how = s.int(0, 5)
        if how == 0:
            a = a[:s.pick([0, 22])] if s.bool() else np.append(a, 1.0)
        elif how == 1:
            a = a.reshape(1, 23) if s.bool() else np.stack([a, a])
        elif how == 2:
            a = s.pick([None, "abc", [None] * 23, ["1"] * 23, 3.0, [1] * 23, a.astype(object)])
        else:
            a = maybe_dtype(s, a)
    return (a,)


# ranking
@target("ranking.auc_at")
def _auc(s: Src):
    n = s.int(0, 12)
    scores = np.array([s.pick([0.0, 1.0, 0.5, s.float()]) for _ in range(n)], np.float64)
    labels = np.array(s.ints(n, 0, 1 if not s.chance(20) else 3), np.int8)
    if n >= 2 and not s.chance(8):
        labels[0], labels[-1] = 1, 0
    if s.chance(20):
        labels = labels[:-1]
    return maybe_dtype(s, scores), maybe_dtype(s, labels), s.pick([1.0, 0.5, 0.1, s.float()]), s.bool()


@target("ranking.ranking_stats")
def _rstats(s: Src):
    q = s.int(0, 4)
    n = s.int(0, 12)
    scores = np.array([s.pick([0.0, 1.0, 0.5, s.float()]) for _ in range(n)], np.float64)
    labels = np.array(s.ints(n, 0, 1 if not s.chance(20) else 3), np.int8)
    return maybe_dtype(s, scores), maybe_dtype(s, labels), offsets_of(s, n, q), s.int(-1, 0) if s.chance(12) else s.int(1, 6)


# text
@target("text.tokenize")
def _text_tokenize(s: Src):
    return s.texts(s.int(0, 4)), s.mostly(["rouge", "whitespace"], ["13a", ""]), s.workers()


@target("text.build_corpus")
def _build_corpus(s: Src):
    return s.texts(s.int(0, 5)), s.mostly(["rouge", "whitespace"], ["bad", ""]), s.workers()


def _corpus(s: Src):
    """A small corpus in the layout of build_corpus (valid unless broken)."""
    vocab = [s.pick(["a", "b", "c", "of", "the", "new", "york", "x_y", "é", "ab"]) + str(i % 3) * (i // 10)
             for i in range(s.int(1, 8))]
    vocab = list(dict.fromkeys(vocab))
    ids, off = ragged(s, s.int(0, 5), 7, len(vocab))
    if s.chance(15):
        ids = poke(s, ids)
    if s.chance(15):
        off = break_offsets(s, off)
    connectors = [w for w in vocab if w.startswith(("of", "the"))] if s.bool() else []
    return maybe_dtype(s, ids), off, vocab, connectors


def _delim(s: Src) -> str:
    return s.mostly(["_", "_", "_", " ", "__", "é"], ["", "\n"])


@target("text.count_phrases")
def _count_phrases(s: Src):
    ids, off, vocab, conn = _corpus(s)
    return ids, off, vocab, conn, _delim(s), s.pick([100, 100, 3, 1, 0, -1, 10 ** 9]), s.workers()


def _model(s: Src):
    from pysynth.text import _reference as ref

    ids, off, vocab, conn = _corpus(s)
    try:
        ko, kt, kc, cwc, _ = ref.count_phrases(ids, off, vocab, conn, "_", 100, 1)
    except Exception:  # noqa: BLE001 - a broken corpus: fall back to an empty model
        ko, kt, kc, cwc = np.zeros(1, np.int64), np.zeros(0, np.int32), np.zeros(0, np.int64), 0
    if s.chance(12):
        kt = poke(s, kt)
    if s.chance(12):
        kc = poke(s, kc)
    if s.chance(12):
        ko = break_offsets(s, ko)
    return ids, off, vocab, conn, ko, kt, kc, cwc + (s.int(-2, 2) if s.chance(10) else 0)


@target("text.export_phrases")
def _export(s: Src):
    _, _, vocab, _, ko, kt, kc, cwc = _model(s)
    return (vocab, ko, kt, kc, cwc, _delim(s), s.int(-1, 3), s.pick([0.1, 0.0, -1.0, 10.0, s.float()]),
            s.mostly(["default", "npmi"], ["bad"]))


@target("text.apply_phrases")
def _apply(s: Src):
    ids, off, vocab, conn, ko, kt, kc, cwc = _model(s)
    return (ids, off, vocab, conn, _delim(s), vocab if s.int(0, 3) else vocab[::-1], ko, kt, kc, cwc,
            s.int(-1, 3), s.pick([0.1, 0.0, -1.0, 10.0, s.float()]), s.mostly(["default", "npmi"], ["bad"]), s.workers())


@target("text.apply_frozen")
def _frozen(s: Src):
    ids, off, vocab, conn = _corpus(s)
    d = _delim(s)
    phrases = [d.join(s.pick(vocab) for _ in range(s.int(1, 3))) for _ in range(s.int(0, 4))]
    scores = np.array([s.pick([1.0, 0.5, s.float()]) for _ in phrases], np.float64)
    if s.chance(20):
        scores = scores[:-1]
    return ids, off, vocab, conn, d, phrases, maybe_dtype(s, scores), s.pick([0.1, 0.0, 2.0, s.float()]), s.workers()


@target("text.phrase_score")
def _pscore(s: Src):
    big = s.chance(8)

    def c():
        return s.int(-1, 2 ** 62) if big else s.int(0, 30)
    return s.mostly(["default", "npmi"], ["bad"]), c(), c(), c(), c(), s.int(-1, 5), c()


# sampling
@target("sampling.collection_stats")
def _cstats(s: Src):
    V = s.int(0, 12)
    ids, off = ragged(s, s.int(0, 6), 8, max(V, 1))
    if s.chance(10):
        ids = poke(s, ids)  # an id outside [0, V)
    if s.chance(12):
        off = break_offsets(s, off)
    vocab = s.pick([-1, 2 ** 63, "3", None]) if s.chance(12) else V
    return maybe_dtype(s, ids), off, vocab


@target("sampling.random_words")
def _rw(s: Src):
    seed = s.mostly([0, 1, 2 ** 64 - 1, s.int(0, 2 ** 64 - 1)], [-1, 2 ** 64])
    return seed, s.pick([0, 5, 2 ** 62, s.int(-1, 100)]), s.pick([0, 3, s.int(-1, 50)]), s.int(-1, 40)


@target("sampling.order_like_questions")
def _order(s: Src):
    V = s.int(1, 10)
    n, m = s.int(0, 4), s.int(1, 3)
    q_ids, q_off = ragged(s, n, 8, V)
    c_ids, c_off = ragged(s, n * m if not s.chance(10) else s.int(0, 9), 6, V + 2)
    kw = dict(q_ids=q_ids, q_offsets=q_off, c_ids=c_ids, c_offsets=c_off, m=m)
    if s.chance(4):  # break one field
        key = s.pick(list(kw))
        v = kw[key]
        if key == "m":
            kw[key] = s.pick([0, -1, 2 ** 63, "2", None])
        elif key.endswith("offsets"):
            kw[key] = break_offsets(s, v)
        else:
            kw[key] = poke(s, v) if s.bool() else maybe_dtype(s, v)
    return kw


@target("sampling.generate")
def _gen(s: Src):
    V = s.int(1, 12)
    n = s.int(0, 5)
    q_ids, q_off = ragged(s, n, 8, V, 1)
    c_ids, c_off = ragged(s, s.int(0, 3), 8, V)
    ci = np.array([s.int(-1, len(c_off) - 2) for _ in range(n)], np.int64)
    cf = np.bincount(np.concatenate([q_ids, c_ids]), minlength=V).astype(np.int64)
    df = np.zeros(V, np.int64)
    for i in range(n):
        df[np.unique(q_ids[q_off[i]:q_off[i + 1]])] += 1
    ex = np.array([1 if s.chance(4) else 0 for _ in range(V)], np.uint8)
    S = s.int(1, 6)
    ld = np.array([0.0] + [s.int(0, 4) for _ in range(S)], np.float64)
    ld = ld / ld.sum() if ld.sum() > 0 else ld
    w = [s.int(0, 4) for _ in range(3)]
    tot = sum(w) or 1
    w = [x / tot for x in w]
    kw = dict(q_ids=q_ids, q_offsets=q_off, c_ids=c_ids, c_offsets=c_off, cluster_index=ci, cf=cf, df=df,
              n_docs=n, exclude=ex, length_dist=ld, strategy=s.pick(["popular", "discriminative", "combination"]),
              w_question=w[0], w_cluster=w[1], w_collection=w[2], m=s.int(1, 4), seed=s.int(0, 2 ** 64 - 1),
              first_index=s.pick([0, 1, 2 ** 62]), max_rejections=s.int(0, 8), workers=s.workers())
    if s.chance(3):  # break one field
        key = s.pick(list(kw))
        v = kw[key]
        if isinstance(v, np.ndarray):
            kw[key] = break_offsets(s, v) if key.endswith("offsets") else (
                poke(s, v) if v.dtype.kind in "iu" and s.bool() else maybe_dtype(s, v[:-1] if s.bool() else v))
            if v.dtype.kind == "f":
                kw[key] = np.array(v, copy=True)
                if v.size:
                    kw[key][s.int(0, v.size - 1)] = s.float()
        elif isinstance(v, str):
            kw[key] = "bad"
        elif isinstance(v, float):
            kw[key] = s.float()
        else:
            kw[key] = s.pick([-1, 0, 2 ** 63, -(2 ** 63)])
    return kw


# retrieval
def _index(s: Src, mutate: bool = True):
    from pysynth.retrieval import _reference as ref

    V = s.int(1, 10)
    ids, off = ragged(s, s.int(1, 6), 8, V)
    if ids.size == 0:
        ids, off = np.array([0], np.int32), np.array([0] + [1] * (len(off) - 1), np.int64)
    ix = ref.build_index(ids, off, V, 1)
    if mutate and s.chance(3):
        name = s.pick(sorted(ix))
        a = ix[name]
        how = s.int(0, 3)
        if how == 0 or a.size == 0:
            ix[name] = a[:-1] if a.size else np.zeros(1, a.dtype)
        elif how == 1:
            ix[name] = a.astype(np.int64 if a.dtype == np.int32 else np.int32)
        else:
            ix[name] = poke(s, a)
        if s.chance(10):
            del ix[name]
    return ix, V


def _queries(s: Src, V: int):
    q, qo = ragged(s, s.int(0, 4), 5, V + 1 if s.chance(10) else V)
    if s.chance(15):
        q = poke(s, q)
    if s.chance(15):
        qo = break_offsets(s, qo)
    return maybe_dtype(s, q), qo


def _params(s: Src):
    if s.chance(6):
        w = [s.pick([0.85, 0.1, 0.05, 0.0, 1.0, s.float()]) for _ in range(s.pick([3, 3, 2, 4]))]
    else:
        w = [s.int(0, 10) / 10 for _ in range(3)]
    return (s.pick(["sdm", "bm25"]) if not s.chance(20) else "ql", s.pick([2500.0, 1.0, 10.0, s.float()]), w,
            s.pick([1.2, 0.0, s.float()]), s.pick([0.75, 0.0, 1.0, s.float()]))


@target("retrieval.build_index")
def _build_index(s: Src):
    V = s.int(0, 12)
    ids, off = ragged(s, s.int(0, 6), 8, max(V, 1))
    if s.chance(8):
        ids = poke(s, ids)
    if s.chance(10):
        off = break_offsets(s, off)
    return maybe_dtype(s, ids), off, s.mostly([max(V, 1)], [0, -1, 2 ** 31]), s.workers()


@target("retrieval.validate_index")
def _validate(s: Src):
    ix, _ = _index(s)
    return ix, s.workers()


@target("retrieval.search")
def _search(s: Src):
    ix, V = _index(s)
    q, qo = _queries(s, V)
    model, mu, w, k1, b = _params(s)
    return ix, q, qo, model, s.int(-1, 0) if s.chance(10) else s.int(1, 8), mu, w, k1, b, s.workers(), s.bool()


@target("retrieval.target_ranks")
def _target_ranks(s: Src):
    ix, V = _index(s)
    q, qo = _queries(s, V)
    nq = max(len(qo) - 1, 0) if isinstance(qo, np.ndarray) and qo.ndim == 1 else 0
    t = np.array(s.ints(nq + (s.int(-1, 1) if s.chance(15) else 0), -1, 7), np.int32)
    model, mu, w, k1, b = _params(s)
    n = s.int(-1, 0) if s.chance(10) else s.int(1, 8)
    return ix, q, qo, maybe_dtype(s, t), n, model, mu, w, k1, b, s.workers()


@target("retrieval.window_stats")
def _window(s: Src):
    ix, V = _index(s)
    n = s.int(0, 5)
    a = np.array(s.ints(n, -1 if s.chance(10) else 0, V), np.int32)
    b = np.array(s.ints(n + (s.int(-1, 1) if s.chance(15) else 0), 0, V), np.int32)
    return ix, maybe_dtype(s, a), b, s.workers()


def _positions(s: Src):
    out, p = [], s.int(-1 if s.chance(10) else 0, 3)
    for _ in range(s.int(0, 8)):
        out.append(p)
        p += s.int(0 if s.chance(10) else 1, 4)
    return out


@target("retrieval.ordered_count")
def _ordered(s: Src):
    return _positions(s), _positions(s), s.pick([1, 1, 2, 8, 0, -1, 2 ** 31 - 1])


@target("retrieval.unordered_count")
def _unordered(s: Src):
    a = _positions(s)
    same = s.chance(3)
    return a, a if same else _positions(s), same, s.pick([8, 1, 2, 3, 0, -1, 2 ** 31 - 1])


# filtering
@target("filtering.first_rank")
def _first_rank(s: Src):
    V = s.int(1, 10)
    n = s.int(0, 5)
    tok, off = ragged(s, n, 6, max(V, 1))
    order = np.array(s.ints(n, 0, max(n - 1, 0)) if s.chance(4) else list(range(n)), np.int64)
    if s.int(0, 1) and n:
        order = order[np.argsort(np.array(s.ints(n, 0, 100)), kind="stable")]
    if s.chance(10):
        order = poke(s, order)
    if s.chance(10):
        tok = poke(s, tok)
    if s.chance(10):
        off = break_offsets(s, off)
    return maybe_dtype(s, tok), off, maybe_dtype(s, order), s.mostly([V], [0, -1])


@target("filtering.kqf_select")
def _kqf(s: Src):
    n = s.int(0, 4)
    qs = np.array(s.ints(n, -1 if s.chance(10) else 0, 6), np.int64)
    n_c = s.int(0, 8)
    co = offsets_of(s, n_c, n)
    res, ro = ragged(s, n_c, 5, 7)
    if s.chance(10):
        ro = break_offsets(s, ro)
    return maybe_dtype(s, qs), co, maybe_dtype(s, res), ro, s.mostly([0, 1, 2, 3, 4], [-1]), s.workers()


@target("filtering.tdf_precision")
def _tdf(s: Src):
    n = s.int(0, 4)
    res, ro = ragged(s, n, 5, 7)
    if s.chance(3):
        res = res - 1  # padding entries
    qs = np.array(s.ints(n, -1 if s.chance(10) else 0, 6), np.int64)
    cl = np.array(s.ints(7 + (s.int(-2, 0) if s.chance(10) else 0), -1, 3), np.int64)
    if s.chance(10):
        ro = break_offsets(s, ro)
    return maybe_dtype(s, res), ro, maybe_dtype(s, qs), maybe_dtype(s, cl), s.bool(), s.workers()


# decoding
@target("decoding.topk_from_parts")
def _topk(s: Src):
    n, V, S, n_ext = s.int(0, 4), s.int(0, 12), s.int(0, 4), s.int(0, 3)
    ls = np.array([s.pick([-1.0, -2.0, 0.0, s.float()]) for _ in range(n * V)], np.float32).reshape(n, V)
    shift = np.array([s.pick([0.0, -1.0, s.float()]) for _ in range(n)], np.float32)
    if s.chance(20):
        shift = shift.reshape(-1, 1)
    touched = np.array([s.pick([-1.0, 0.0, s.float()]) for _ in range(n * S)], np.float32).reshape(n, S)
    src_ext = np.array(s.ints(n * S, 0, max(V + n_ext - 1, 0)), np.int64).reshape(n, S)
    if s.chance(10):
        src_ext = poke(s, src_ext)
    k = s.int(-1, V + n_ext + 1)
    floor = s.pick([float(np.float32(math.log(1e-12))), -math.inf, -3.0, s.float()])
    args = [ls, shift, touched, src_ext]
    if s.chance(8):
        j = s.int(0, 3)
        args[j] = maybe_dtype(s, args[j]) if s.bool() else args[j][:-1]
    return (*args, -1 if s.chance(20) else n_ext, k, floor, s.workers())


# ------------------------------------------------------------------------------------ checking
class Mismatch(AssertionError):
    """The compiled function and its twin disagree."""


def check(name: str, data: bytes) -> str:
    """Run target ``name`` on ``data``: ``"ok"`` or ``"rejected"`` (both raised the same type, or
    an intake target's documented error); raises :class:`Mismatch` otherwise."""
    if name in intake.PROPERTIES:
        try:
            return intake.PROPERTIES[name](Src(data))
        except Exception as exc:  # noqa: BLE001 - a failed property or an undocumented exception
            raise Mismatch(f"{name}: {type(exc).__name__}: {str(exc)[:500]}") from None
    stage, func = name.split(".")
    args = TARGETS[name](Src(data))
    kwargs = args if isinstance(args, dict) else None
    mods = _dispatch.available(stage)
    if "cpp" not in mods:
        raise RuntimeError("the compiled extension is not built")
    out = {}
    for impl in ("python", "cpp"):
        mod = mods[impl]

        def call(fn=getattr(mod, func), mod=mod):
            def arg(v):
                return v.make(mod) if isinstance(v, Built) else v
            got = fn(**{k: arg(v) for k, v in kwargs.items()}) if kwargs is not None else fn(*[arg(v) for v in args])
            return OBSERVE[name](mod, got) if name in OBSERVE else got
        out[impl] = _parity._outcome(call)
    try:
        _parity._compare(out, name)
    except AssertionError as exc:
        raise Mismatch(f"{exc}") from None
    except Exception:  # noqa: BLE001 - the twin's exception, re-raised by _compare: both rejected
        return "rejected"
    return "ok"


# the intake family (fuzz/intake.py): properties of the code that reads user input, no twin
TARGETS.update(intake.PROPERTIES)


def families() -> Dict[str, List[str]]:
    fam: Dict[str, List[str]] = {}
    for n in TARGETS:
        fam.setdefault(n.split(".")[0], []).append(n)
    return fam
