"""Pure-Python twin of the compiled METEOR 1.5 (the specification; ``PYSYNTH_IMPL=python``).

Meteor 1.5 (Denkowski & Lavie 2014) as the jar runs with nlg-eval's ``-l en -norm``:

* :func:`normalize`: the jar's ``-norm`` tokenizer (Moses-style punctuation splitting, quote
  and dash normalisation, dashes between words dropped, English contractions split right,
  dots split unless a nonbreaking prefix), then Java's ``toLowerCase``;
* four matching stages (section 2.1 of the paper), in order: exact (Java ``String.hashCode``
  equality, as the jar compares word keys), stem (Snowball English, :func:`stem`), synonym
  (WordNet synsets of the word or of its morphological base form) and paraphrase (the phrase
  table, both directions);
* the jar's alignment search: one-to-one matches covering words nobody else covers are fixed,
  the rest resolved left to right over the reference with a beam of 40 partial alignments
  ranked by (weighted matched words desc, chunks asc, summed distance asc), stable; the
  search uses the weights 1/0.5/0.5/0.5 truncated to integers as the jar does, and keeps the
  jar's quirk of charging a branch's distance to the path it branched from;
* the score (section 2.3): weighted precision and recall with content/function-word weight
  delta, ``Fmean = P R / (alpha P + (1 - alpha) R)``, penalty ``gamma (chunks / m)^beta``,
  with the 'rank' task's English parameters alpha 0.85, beta 0.20, gamma 0.60, delta 0.75 and
  stage weights 1.0 / 0.6 / 0.8 / 0.6. Several references: the best-scoring one (first on ties).

:func:`meteor_stats` returns the 23 sufficient statistics per segment in the jar's order; the
corpus score is :func:`score_from_stats` of their column sums (the jar's ``EVAL`` line).
"""
from __future__ import annotations

import math
import re
from typing import Dict, List, Optional, Sequence, Set, Tuple

import numpy as np

from pysynth import _validate
from pysynth.metrics._meteor_data import FNV_OFFSET, FNV_PRIME, _nbp_table, fnv_ids  # noqa: F401
from pysynth.metrics._meteor_norm import _JTRIM, _TOK, clean, normalize, prepare  # noqa: F401

__all__ = ["normalize", "clean", "prepare", "meteor_normalize", "stem", "java_hash", "MeteorResources", "meteor_resources", "meteor_stats", "meteor_scores", "meteor_stem",
           "meteor_score_from_stats", "score_from_stats",
           "PARAMS", "WEIGHTS", "N_STATS", "corpus_stats"]

PARAMS = (0.85, 0.20, 0.60, 0.75)  # alpha, beta, gamma, delta: Meteor 1.5 'rank' task, English
WEIGHTS = (1.0, 0.6, 0.8, 0.6)  # exact, stem, synonym, paraphrase (scoring)
SEARCH_WEIGHTS = (1.0, 0.5, 0.5, 0.5)  # what the jar's scorer gives its aligner for the search
BEAM = 40
N_STATS = 23
_MASK64 = (1 << 64) - 1

# ---------------------------------------------------------------------------------------------
# -norm tokenization (edu.cmu.meteor.util.Normalizer, English): normalize, clean and prepare live in
# pysynth.metrics._meteor_norm (numpy-free, for a one-shot run); meteor_normalize is the compiled one's twin


def meteor_normalize(texts: Sequence[str], nbp: Dict[str, int]) -> List[Optional[str]]:
    """:func:`prepare` of each ASCII text; ``None`` for a text holding a non-ASCII character (the
    caller prepares those with :func:`prepare`). The compiled twin handles ASCII only.

    ``nbp``: the nonbreaking prefixes, ``{prefix: 1 (any context) or 2 (before a number only)}``.

    Raises
    ------
    TypeError
        ``texts`` not a sequence of str, ``nbp`` not a dict, a key not a str, a value not an int.
    ValueError
        a lone surrogate in a text or a key, a value other than 1 or 2.
    """
    texts = _validate.strings(texts, "texts")
    if not isinstance(nbp, dict):
        raise TypeError(f"nbp must be a dict of nonbreaking prefixes (str -> 1 or 2), got {type(nbp).__name__}")
    for k, v in nbp.items():
        if not isinstance(k, str):
            raise TypeError(f"nbp keys must be str, got {type(k).__name__}")
        if not isinstance(v, int) or isinstance(v, bool):
            raise TypeError(f"nbp values must be int (1 or 2), got {type(v).__name__}")
        if v not in (1, 2):
            raise ValueError("nbp values must be 1 (any context) or 2 (before a number only)")
        try:
            k.encode("utf-8")
        except UnicodeEncodeError:
            raise ValueError("nbp: a key is not valid Unicode (lone surrogate)") from None
    return [prepare(t, nbp) if t.isascii() else None for t in texts]


def tokenize(norm: str) -> List[str]:
    return [w for w in _TOK.split(norm) if w]


def java_hash(word: str) -> int:
    """``java.lang.String.hashCode`` (over UTF-16 code units), as an unsigned 32-bit int."""
    h = 0
    b = word.encode("utf-16-le", "surrogatepass")
    for k in range(0, len(b), 2):
        h = (31 * h + (b[k] | (b[k + 1] << 8))) & 0xFFFFFFFF
    return h


# ---------------------------------------------------------------------------------------------
# Snowball English stemmer (Porter2), the org.tartarus.snowball englishStemmer the jar uses

_V = set("aeiouy")
_EXC1 = {"skis": "ski", "skies": "sky", "dying": "die", "lying": "lie", "tying": "tie", "idly": "idl",
         "gently": "gentl", "ugly": "ugli", "early": "earli", "only": "onli", "singly": "singl", "sky": "sky",
         "news": "news", "howe": "howe", "atlas": "atlas", "cosmos": "cosmos", "bias": "bias", "andes": "andes"}
_EXC2 = {"inning", "outing", "canning", "herring", "earring", "proceed", "exceed", "succeed"}
_STEP2 = [("ization", "ize"), ("ational", "ate"), ("fulness", "ful"), ("ousness", "ous"), ("iveness", "ive"),
          ("tional", "tion"), ("biliti", "ble"), ("lessli", "less"), ("entli", "ent"), ("ation", "ate"),
          ("alism", "al"), ("aliti", "al"), ("ousli", "ous"), ("iviti", "ive"), ("fulli", "ful"), ("enci", "ence"),
          ("anci", "ance"), ("abli", "able"), ("izer", "ize"), ("ator", "ate"), ("alli", "al"), ("bli", "ble"),
          ("ogi", "og"), ("li", "")]
_STEP3 = [("ational", "ate"), ("tional", "tion"), ("alize", "al"), ("icate", "ic"), ("iciti", "ic"), ("ative", ""),
          ("ical", "ic"), ("ness", ""), ("ful", "")]
_STEP2.sort(key=lambda x: -len(x[0]))
_STEP3.sort(key=lambda x: -len(x[0]))
_STEP4 = ["ement", "ance", "ence", "able", "ible", "ment", "ant", "ent", "ism", "ate", "iti", "ous", "ive", "ize",
          "ion", "al", "er", "ic"]
_STEP4.sort(key=len, reverse=True)


def _isv(c: str) -> bool:
    return c in _V


def _regions(w: str) -> Tuple[int, int]:
    n = len(w)

    def after_vc(i: int) -> int:
        while i < n and not _isv(w[i]):
            i += 1
        while i < n and _isv(w[i]):
            i += 1
        return i + 1 if i < n else n

    p1 = n
    for pre in ("gener", "commun", "arsen"):
        if w.startswith(pre):
            p1 = len(pre)
            break
    else:
        p1 = after_vc(0)
    p2 = after_vc(p1) if p1 < n else n
    return p1, p2


def _shortv(w: str, end: int) -> bool:
    """Snowball's ``shortv`` on ``w[:end]`` (backwards from ``end``)."""
    if end >= 3 and not _isv(w[end - 1]) and w[end - 1] not in "wxY" and _isv(w[end - 2]) and not _isv(w[end - 3]):
        return True
    return end == 2 and not _isv(w[1]) and _isv(w[0])


def stem(word: str) -> str:
    """Snowball English (Porter2) stem of a lower-cased word."""
    if word in _EXC1:
        return _EXC1[word]
    if len(word) < 3:
        return word
    w = word[1:] if word.startswith("'") else word
    if w.startswith("y"):
        w = "Y" + w[1:]
    chars = list(w)
    for k in range(1, len(chars)):
        if chars[k] == "y" and _isv(chars[k - 1]):
            chars[k] = "Y"
    w = "".join(chars)
    p1, p2 = _regions(w)
    # Step 1a
    for suf in ("'s'", "'s", "'"):
        if w.endswith(suf):
            w = w[:-len(suf)]
            break
    if w.endswith("sses"):
        w = w[:-2]
    elif w.endswith("ied") or w.endswith("ies"):
        w = w[:-3] + ("i" if len(w) - 3 >= 2 else "ie")
    elif w.endswith("us") or w.endswith("ss"):
        pass
    elif w.endswith("s"):
        if any(_isv(c) for c in w[:-2]):
            w = w[:-1]
    if w in _EXC2:
        return w.replace("Y", "y")
    # Step 1b
    for suf in ("eedly", "ingly", "edly", "eed", "ing", "ed"):
        if w.endswith(suf):
            base = len(w) - len(suf)
            if suf in ("eed", "eedly"):
                if base >= p1:
                    w = w[:base] + "ee"
            elif any(_isv(c) for c in w[:base]):
                w = w[:base]
                if w.endswith(("at", "bl", "iz")):
                    w += "e"
                elif w.endswith(("bb", "dd", "ff", "gg", "mm", "nn", "pp", "rr", "tt")):
                    w = w[:-1]
                elif p1 == len(w) and _shortv(w, len(w)):
                    w += "e"
            break
    # Step 1c
    if len(w) > 2 and w[-1] in "yY" and not _isv(w[-2]):
        w = w[:-1] + "i"
    # Step 2
    for suf, rep in _STEP2:
        if w.endswith(suf):
            base = len(w) - len(suf)
            if base >= p1:
                if suf == "ogi":
                    if base > 0 and w[base - 1] == "l":
                        w = w[:base] + rep
                elif suf == "li":
                    if base > 0 and w[base - 1] in "cdeghkmnrt":
                        w = w[:base]
                else:
                    w = w[:base] + rep
            break
    # Step 3
    for suf, rep in _STEP3:
        if w.endswith(suf):
            base = len(w) - len(suf)
            if base >= p1 and (suf != "ative" or base >= p2):
                w = w[:base] + rep
            break
    # Step 4
    for suf in _STEP4:
        if w.endswith(suf):
            base = len(w) - len(suf)
            if base >= p2:
                if suf != "ion" or (base > 0 and w[base - 1] in "st"):
                    w = w[:base]
            break
    # Step 5
    if w.endswith("e"):
        base = len(w) - 1
        if base >= p2 or (base >= p1 and not _shortv(w, base)):
            w = w[:base]
    elif w.endswith("l"):
        base = len(w) - 1
        if base >= p2 and base > 0 and w[base - 1] == "l":
            w = w[:base]
    return w.replace("Y", "y")


# ---------------------------------------------------------------------------------------------
# resources

_SUFX = ("s", "ses", "xes", "zes", "ches", "shes", "men", "ies", "s", "ies", "es", "es", "ed", "ed", "ing", "ing",
         "er", "est", "er", "est")
_ADDR = ("", "s", "x", "z", "ch", "sh", "man", "y", "", "y", "e", "", "e", "", "e", "", "", "", "e", "e")


def _java_lines(b: bytes) -> List[str]:
    """Lines as Java's ``readLine`` gives them (``\\n``, ``\\r``, ``\\r\\n``; no empty last line after a
    final terminator). Bytes that are not UTF-8 become lone surrogates (``surrogateescape``), so a
    word compares equal to a line exactly when their bytes do, as in the compiled twin."""
    lines = b.decode("utf-8", "surrogateescape").replace("\r\n", "\n").replace("\r", "\n").split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


_SYNSET_ID = re.compile("-?[0-9]+")
_I32 = 2**31
_PARA_DTYPES = (("vocab_blob", np.uint8), ("vocab_off", np.int64), ("phr_tok", np.int32), ("phr_off", np.int64),
                ("grp_ptr", np.int64), ("grp_par", np.int32), ("htab_key", np.uint64), ("htab_val", np.int32),
                ("pfx_key", np.uint64), ("pfx_val", np.int32), ("grp_hash", np.uint64))
_REBUILD = "; delete the cache file to rebuild it"


def _offsets_ok(o: np.ndarray, n: int) -> bool:
    return len(o) >= 1 and o[0] == 0 and o[-1] == n and not (o[1:] < o[:-1]).any()


def _table_ok(val: np.ndarray) -> bool:
    """An open-addressing table (size a power of two or 0) whose probes end: an empty (< 0) slot."""
    n = len(val)
    return n == 0 or ((n & (n - 1)) == 0 and bool((val < 0).any()))


def _para_arrays(para) -> Dict[str, np.ndarray]:
    """The cache's arrays, checked as the compiled ``meteor_resources`` checks them: each a 1-d
    array of exactly its dtype, and every index the matcher follows in range."""
    if not isinstance(para, dict):
        raise TypeError(f"para must be a dict of the paraphrase cache's arrays, got {type(para).__name__}")
    out = {}
    for k, dt in _PARA_DTYPES:
        if k not in para:
            raise ValueError(f"para: missing array '{k}'{_REBUILD}")
        a = para[k]
        if isinstance(a, memoryview):  # what the cache loader gives (the compiled side takes both)
            try:
                a = np.asarray(a)
            except (TypeError, ValueError, NotImplementedError):
                raise TypeError(f"para['{k}'] must be a memoryview of {np.dtype(dt)} items, got format "
                                f"{a.format!r}") from None
        if not isinstance(a, np.ndarray) or a.dtype != dt:
            got = a.dtype if isinstance(a, np.ndarray) else type(a).__name__
            raise TypeError(f"para['{k}'] must be a numpy array of dtype {np.dtype(dt)}, got {got}")
        if a.ndim != 1:
            raise ValueError(f"para['{k}'] must be a 1-d array")
        out[k] = a
    n_phr = len(out["phr_off"]) - 1
    bad = None
    if not _offsets_ok(out["vocab_off"], len(out["vocab_blob"])):
        bad = "vocab_off must start at 0, never decrease and end at len(vocab_blob)"
    elif not _offsets_ok(out["phr_off"], len(out["phr_tok"])):
        bad = "phr_off must start at 0, never decrease and end at len(phr_tok)"
    elif len(out["grp_ptr"]) != n_phr + 1 or not _offsets_ok(out["grp_ptr"], len(out["grp_par"])):
        bad = "grp_ptr must have len(phr_off) entries, start at 0, never decrease and end at len(grp_par)"
    elif len(out["grp_hash"]) != len(out["grp_par"]):
        bad = "grp_hash does not match grp_par"
    elif len(out["htab_val"]) != len(out["htab_key"]) or not _table_ok(out["htab_val"]):
        bad = "inconsistent phrase table (htab_key/htab_val)"
    elif len(out["pfx_val"]) != len(out["pfx_key"]) or not _table_ok(out["pfx_val"]):
        bad = "inconsistent prefix table (pfx_key/pfx_val)"
    elif ((out["grp_par"] < 0) | (out["grp_par"] >= n_phr)).any():
        bad = "grp_par holds a phrase id out of range"
    elif (out["htab_val"] >= n_phr).any():
        bad = "htab_val holds a phrase id out of range"
    if bad:
        raise ValueError(f"para: {bad}{_REBUILD}")
    return out


class MeteorResources:
    """Function words, WordNet data and the paraphrase cache (arrays from :mod:`._meteor_data`).

    Parameters
    ----------
    function_words, exceptions, synsets : bytes, the jar's files.
    para : dict of the cache's arrays (``vocab_blob`` ... ``grp_hash``), each of its exact dtype.
    max_len : longest phrase in the table (paraphrases longer than it are never matched).

    Raises
    ------
    TypeError
        a file that is not bytes, ``para`` not a dict, an array not a numpy array of its dtype,
        ``max_len`` not an int.
    ValueError
        a missing or 2-d array, offsets or phrase ids out of range, a hash table without an
        empty slot, ``max_len`` outside ``[0, 2**31)``, a synset id that is not an int32.
    """

    def __init__(self, function_words: bytes, exceptions: bytes, synsets: bytes, para: Dict[str, np.ndarray],
                 max_len: int):
        for name, b in (("function_words", function_words), ("exceptions", exceptions), ("synsets", synsets)):
            if not isinstance(b, bytes):
                raise TypeError(f"{name} must be bytes (the jar's file), got {type(b).__name__}")
        if not isinstance(para, dict):
            raise TypeError(f"para must be a dict of the paraphrase cache's arrays, got {type(para).__name__}")
        self.max_len = _validate.int_range(max_len, "max_len", 0, _I32 - 1)
        arrays = _para_arrays(para)
        self.function = set(_java_lines(function_words))
        self.bases: Dict[str, List[str]] = {}
        ex = _java_lines(exceptions)
        for k in range(0, len(ex) - 1, 2):
            for form in _TOK.split(ex[k + 1]):
                if form:
                    self.bases.setdefault(form, []).append(ex[k])
        self.synsets: Dict[str, Set[int]] = {}
        sy = _java_lines(synsets)
        for k in range(0, len(sy) - 1, 2):
            ids = set()
            for t in _TOK.split(sy[k + 1]):
                if t:
                    if not _SYNSET_ID.fullmatch(t) or not -_I32 <= int(t) < _I32:
                        raise ValueError(f"synsets: line {k + 2} holds a token that is not a synset id (a 32-bit "
                                         "integer); pass the jar's synonym/english.synsets")
                    ids.add(int(t))
            self.synsets[sy[k]] = ids  # a later line wins, as in Java
        blob = bytes(arrays["vocab_blob"])
        off = arrays["vocab_off"]
        self.vocab: Dict[bytes, int] = {}
        for i in range(len(off) - 1):
            self.vocab.setdefault(blob[off[i]:off[i + 1]], i)  # a word listed twice keeps its first id
        self.phr_tok = arrays["phr_tok"]
        self.phr_off = arrays["phr_off"]
        self.grp_ptr = arrays["grp_ptr"]
        self.grp_par = arrays["grp_par"]
        self.grp_hash = arrays["grp_hash"]
        self.htab_key = arrays["htab_key"]
        self.htab_val = arrays["htab_val"]
        self.pfx_key = arrays["pfx_key"]
        self.pfx_val = arrays["pfx_val"]
        self._syn_cache: Dict[str, Set[int]] = {}

    # synonyms (edu.cmu.meteor.aligner.SynonymDictionary)
    def _morph(self, w: str) -> str:
        if w.endswith("ss") or len(w) <= 2:
            return w
        for suf, add in zip(_SUFX, _ADDR):
            if w.endswith(suf):
                cand = w[:len(w) - len(suf)] + add
                if cand in self.synsets:
                    return cand
        return ""

    def synset_ids(self, w: str) -> Set[int]:
        got = self._syn_cache.get(w)
        if got is None:
            got = set(self.synsets.get(w, ()))
            bases = self.bases.get(w)
            if bases is not None:
                for b in bases:
                    got |= self.synsets.get(b, set())
            else:
                got |= self.synsets.get(self._morph(w), set())
            self._syn_cache[w] = got
        return got

    # paraphrases (edu.cmu.meteor.aligner.ParaphraseTransducer)
    def word_id(self, w: str) -> int:
        return self.vocab.get(w.encode("utf-8", "surrogatepass"), -1)

    def _phrase(self, ids: Sequence[int], h: int) -> int:
        size = len(self.htab_key)
        if size == 0:
            return -1
        slot = h & (size - 1)
        while True:
            v = int(self.htab_val[slot])
            if v < 0:
                return -1
            if int(self.htab_key[slot]) == h:
                a, b = self.phr_off[v], self.phr_off[v + 1]
                if list(self.phr_tok[a:b]) == list(ids):
                    return v
            slot = (slot + 1) & (size - 1)

    def _is_prefix(self, h: int) -> bool:
        size = len(self.pfx_key)
        if size == 0:
            return True
        slot = h & (size - 1)
        while True:
            if self.pfx_val[slot] < 0:
                return False
            if int(self.pfx_key[slot]) == h:
                return True
            slot = (slot + 1) & (size - 1)

    def paths(self, line: List[int], start: int) -> List[Tuple[int, List[int]]]:
        """(phrase length, paraphrase word ids) for phrases starting at ``start``, the transducer's order.

        The cache's index decides, as in the compiled matcher: the walk stops where the prefix
        table has no longer phrase, and a paraphrase is found through its ``grp_hash`` among the
        line's word spans of 1 to ``max_len`` known words (for a cache that
        :func:`~pysynth.metrics._meteor_data.build_paraphrase_cache` wrote, exactly the table's pairs).
        """
        out = []
        h = FNV_OFFSET
        for ln in range(1, min(self.max_len, len(line) - start) + 1):
            t = line[start + ln - 1]
            if t < 0:
                break
            h = ((h ^ (t & 0xFFFFFFFF)) * FNV_PRIME) & _MASK64
            p = self._phrase(line[start:start + ln], h)
            if p >= 0:
                for k in range(self.grp_ptr[p], self.grp_ptr[p + 1]):
                    q = self.grp_par[k]
                    words = [int(w) for w in self.phr_tok[self.phr_off[q]:self.phr_off[q + 1]]]
                    if (1 <= len(words) <= self.max_len and min(words) >= 0
                            and fnv_ids(words) == int(self.grp_hash[k])):
                        out.append((ln, words))
            if not self._is_prefix(h):
                break
        return out


# ---------------------------------------------------------------------------------------------
# alignment (edu.cmu.meteor.aligner.Aligner)

class _Path:
    __slots__ = ("matches", "m1", "m2", "all1", "all2", "chunks", "idx", "last", "dist", "used1", "used2")

    def copy(self) -> "_Path":
        p = _Path()
        p.matches, p.used1, p.used2 = list(self.matches), list(self.used1), list(self.used2)
        p.m1, p.m2, p.all1, p.all2 = self.m1, self.m2, self.all1, self.all2
        p.chunks, p.idx, p.last, p.dist = self.chunks, self.idx, self.last, self.dist
        return p


def _key(p: _Path):
    return (-(p.m1 + p.m2), p.chunks, p.dist)


def _take(p: _Path, m) -> None:
    mod, start, length, mstart, mlen = m
    w = SEARCH_WEIGHTS[mod]
    p.m1 = int(p.m1 + mlen * w)  # the jar keeps these in ints: += truncates
    p.m2 = int(p.m2 + length * w)
    p.all1 += mlen
    p.all2 += length
    if p.last != -1 and mstart != p.last:
        p.chunks += 1
    p.idx = start + length
    p.last = mstart + mlen


def _resolve(matches: List[list], start: _Path) -> _Path:
    n2 = len(matches)
    nxt = [start]
    for cur in range(n2 + 1):
        paths = sorted(nxt, key=_key)
        nxt = []
        for path in paths[:BEAM]:
            if cur == n2:
                if path.last != -1:
                    path.chunks += 1
                nxt.append(path)
                continue
            if path.used2[cur]:
                if cur < path.idx:
                    nxt.append(path)
                elif path.matches[path.idx] is not None:
                    m = path.matches[path.idx]
                    _take(path, m)
                    path.dist += abs(m[1] - m[3])
                    nxt.append(path)
                continue
            for m in matches[cur]:
                _, s, ln, ms, ml = m
                if any(path.used2[s:s + ln]) or any(path.used1[ms:ms + ml]):
                    continue
                q = path.copy()
                for k in range(s, s + ln):
                    q.used2[k] = True
                for k in range(ms, ms + ml):
                    q.used1[k] = True
                q.matches[cur] = m
                _take(q, m)
                path.dist += abs(s - ms)  # sic: the jar charges the parent path
                nxt.append(q)
            if path.last != -1:
                path.chunks += 1
                path.last = -1
            path.idx += 1
            nxt.append(path)
        if not nxt:
            nxt.append(paths[0])
    return sorted(nxt, key=_key)[0]


def _align(res: MeteorResources, w1: List[str], w2: List[str], cache: dict) -> List[float]:
    def info(w):
        got = cache.get(w)
        if got is None:
            got = cache[w] = (java_hash(w), java_hash(stem(w)), res.synset_ids(w), res.word_id(w), w in res.function)
        return got

    i1 = [info(w) for w in w1]
    i2 = [info(w) for w in w2]
    n1, n2 = len(w1), len(w2)
    matches: List[list] = [[] for _ in range(n2)]
    cov1 = [0] * n1
    cov2 = [0] * n2
    h1 = [x[0] for x in i1]
    h2 = [x[0] for x in i2]
    stages = 1 if h1 == h2 else 4
    # exact
    for j in range(n2):
        for i in range(n1):
            if h1[i] == h2[j]:
                matches[j].append((0, j, 1, i, 1))
                cov1[i] += 1
                cov2[j] += 1
    if stages > 1:
        for j in range(n2):  # stem
            for i in range(n1):
                if i1[i][1] == i2[j][1] and h1[i] != h2[j]:
                    matches[j].append((1, j, 1, i, 1))
                    cov1[i] += 1
                    cov2[j] += 1
        for j in range(n2):  # synonym
            for i in range(n1):
                if i1[i][2] & i2[j][2] and h1[i] != h2[j]:
                    matches[j].append((2, j, 1, i, 1))
                    cov1[i] += 1
                    cov2[j] += 1
        l1 = [x[3] for x in i1]
        l2 = [x[3] for x in i2]
        for j in range(n2):  # paraphrase: phrases of the reference found in the test
            for ln, words in res.paths(l2, j):
                for i in range(n1):
                    if l1[i:i + len(words)] == words:
                        matches[j].append((3, j, ln, i, len(words)))
                        for k in range(len(words)):
                            cov1[i + k] += 1
                        for k in range(ln):
                            cov2[j + k] += 1
        for i in range(n1):  # and phrases of the test found in the reference
            for ln, words in res.paths(l1, i):
                for j in range(n2):
                    if l2[j:j + len(words)] == words:
                        matches[j].append((3, j, len(words), i, ln))
                        for k in range(ln):
                            cov1[i + k] += 1
                        for k in range(len(words)):
                            cov2[j + k] += 1
    start = _Path()
    start.matches = [None] * n2
    start.used1, start.used2 = [False] * n1, [False] * n2
    start.m1 = start.m2 = start.all1 = start.all2 = start.chunks = start.idx = start.dist = 0
    start.last = -1
    for j in range(n2):
        if len(matches[j]) == 1:
            m = matches[j][0]
            _, s, ln, ms, ml = m
            if all(cov2[j + k] == 1 for k in range(ln)) and all(cov1[ms + k] == 1 for k in range(ml)):
                start.matches[j] = m
                for k in range(ln):
                    start.used2[j + k] = True
                for k in range(ml):
                    start.used1[ms + k] = True
    best = _resolve(matches, start)
    f1 = [x[4] for x in i1]
    f2 = [x[4] for x in i2]
    cm1, cm2, fm1, fm2 = [0] * 4, [0] * 4, [0] * 4, [0] * 4
    tm1 = tm2 = chunks = 0
    last = -1
    idx = 0
    while idx < n2:
        m = best.matches[idx]
        if m is None:
            if last != -1:
                chunks += 1
                last = -1
            idx += 1
            continue
        mod, s, ln, ms, ml = m
        for k in range(ms, ms + ml):
            if f1[k]:
                fm1[mod] += 1
            else:
                cm1[mod] += 1
        for k in range(s, s + ln):
            if f2[k]:
                fm2[mod] += 1
            else:
                cm2[mod] += 1
        tm1 += ml
        tm2 += ln
        if last != -1 and ms != last:
            chunks += 1
        idx = s + ln
        last = ms + ml
    if last != -1:
        chunks += 1
    st = [float(n1), float(n2), float(sum(f1)), float(sum(f2))]
    st += [float(x) for x in cm1 + cm2 + fm1 + fm2]
    st += [float(chunks), float(sum(cm1) + sum(fm1)), float(sum(cm2) + sum(fm2))]
    return st


def _div(a: float, b: float) -> float:
    """IEEE division (C's ``a / b``): Python raises on a zero divisor, signed or not."""
    if b != 0:
        return a / b
    if a == 0 or math.isnan(a):
        return math.nan
    return math.copysign(math.inf, a) * math.copysign(1.0, b)


def score_from_stats(st: Sequence[float]) -> float:
    """Meteor's ``computeMetrics`` on one stats vector (or on summed ones), same operation order."""
    alpha, beta, gamma, delta = PARAMS
    tl, rl, tf, rf = st[0], st[1], st[2], st[3]
    tc, rc, tfn, rfn = st[4:8], st[8:12], st[12:16], st[16:20]
    chunks, twm, rwm = st[20], st[21], st[22]
    tlen = delta * (tl - tf) + (1.0 - delta) * tf
    rlen = delta * (rl - rf) + (1.0 - delta) * rf
    tw = 0.0
    rw = 0.0
    for i in range(4):
        tw += tc[i] * WEIGHTS[i] * delta
    for i in range(4):
        rw += rc[i] * WEIGHTS[i] * delta
    for i in range(4):
        tw += tfn[i] * WEIGHTS[i] * (1.0 - delta)
    for i in range(4):
        rw += rfn[i] * WEIGHTS[i] * (1.0 - delta)
    p = _div(tw, tlen)
    r = _div(rw, rlen)
    fmean = _div(1.0, _div(1.0 - alpha, p) + _div(alpha, r))
    ttot = rtot = 0.0
    for i in range(4):  # summed pairwise, as the compiled twin does (equal for integer counts)
        ttot += tc[i] + tfn[i]
        rtot += rc[i] + rfn[i]
    if ttot == tl and rtot == rl and chunks == 1:
        frag = 0.0
    else:
        frag = _div(chunks, (twm + rwm) / 2)
    if math.isnan(frag):
        return 0.0
    # C's pow: NaN for a negative base (math.pow raises), +inf at +-inf
    pen = gamma * (math.nan if frag < 0 and not math.isinf(frag) else math.pow(frag, beta))
    score = fmean * (1.0 - pen)
    if math.isnan(score):
        return 0.0
    return max(score, 0.0)


def meteor_resources(function_words: bytes, exceptions: bytes, synsets: bytes, para: Dict[str, np.ndarray],
                     max_len: int) -> MeteorResources:
    """The resources :func:`meteor_stats` reads (see :class:`MeteorResources`)."""
    return MeteorResources(function_words, exceptions, synsets, para, max_len)


def meteor_stem(word: str) -> str:
    """Snowball English stem (:func:`stem`; the compiled twin's name).

    Raises
    ------
    TypeError
        ``word`` is not a str.
    ValueError
        ``word`` holds a lone surrogate (not valid Unicode).
    """
    if not isinstance(word, str):
        raise TypeError(f"word must be str, got {type(word).__name__}")
    try:
        word.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError("word is not valid Unicode (lone surrogate); clean the text first") from None
    return stem(word)


def meteor_score_from_stats(st) -> float:
    """The jar's computeMetrics on one statistics vector (:func:`score_from_stats`).

    Raises
    ------
    TypeError
        ``st`` does not convert to float64 (the compiled binding's argument cast fails).
    ValueError
        ``st`` is not a vector of 23.
    """
    try:
        a = np.asarray(st, np.float64)
    except Exception:  # noqa: BLE001 - whatever numpy raises, pybind11's cast gives a TypeError
        raise TypeError(f"st must convert to a float64 vector of {N_STATS}, got {type(st).__name__}") from None
    if a.ndim != 1 or a.shape[0] != N_STATS:
        raise ValueError(f"st must be a vector of {N_STATS}, got shape {a.shape}")
    return score_from_stats([float(x) for x in a])


def corpus_stats(stats: np.ndarray) -> np.ndarray:
    """Sum per-segment statistics as the jar's ``EVAL`` does: a segment matched perfectly (every
    word matched, one chunk) adds no chunk, so identical segments cost no fragmentation."""
    st = np.asarray(stats, np.float64).reshape(-1, N_STATS)
    tot = st.sum(0)
    ttot = st[:, 4:8].sum(1) + st[:, 12:16].sum(1)
    rtot = st[:, 8:12].sum(1) + st[:, 16:20].sum(1)
    perfect = (ttot == st[:, 0]) & (rtot == st[:, 1]) & (st[:, 20] == 1)
    tot[20] = st[~perfect, 20].sum()
    return tot


def meteor_stats(res: MeteorResources, hyps: Sequence[str], refs: Sequence[Sequence[str]],
                 workers: int = 1) -> np.ndarray:
    """Sufficient statistics (``n x 23``) of normalized, lower-cased segments.

    ``hyps[i]`` is scored against each of ``refs[i]`` (space-separated tokens, the output of
    :func:`normalize`); the best-scoring reference's statistics are kept, the first on ties.
    ``workers`` (>= 1, or -1 for all cores) is checked as the compiled twin checks it; the
    result does not depend on it.

    Raises
    ------
    TypeError
        ``res`` not made by :func:`meteor_resources`, ``hyps`` or a ``refs[i]`` not a sequence of
        str, ``refs`` not a sequence, ``workers`` not an int.
    ValueError
        ``len(refs) != len(hyps)``, a lone surrogate in a text, ``workers`` 0 or below -1.
    """
    if not isinstance(res, MeteorResources):
        raise TypeError(f"res must be made by meteor_resources, got {type(res).__name__}")
    hyps = _validate.strings(hyps, "hyps")
    # the checks (and their order) of the compiled binding: refs is a sequence (PySequence_Check)
    if isinstance(refs, (str, dict)) or not hasattr(type(refs), "__getitem__"):
        raise TypeError("refs must be a sequence of lists of str (the references of each hypothesis)")
    if len(refs) != len(hyps):
        raise ValueError(f"refs: {len(refs)} entries but hyps has {len(hyps)}")
    refs = [_validate.strings(refs[i], f"refs[{i}]") for i in range(len(hyps))]
    _validate.workers(workers)
    out = np.zeros((len(hyps), N_STATS), np.float64)
    cache: dict = {}
    for i, h in enumerate(hyps):
        w1 = tokenize(h)
        best: Optional[List[float]] = None
        best_score = -1.0
        for r in refs[i]:
            st = _align(res, w1, tokenize(r), cache)
            sc = score_from_stats(st)
            if sc > best_score:
                best, best_score = st, sc
        if best is not None:
            out[i] = best
    return out


def meteor_scores(res: MeteorResources, hyps: Sequence[str], refs: Sequence[Sequence[str]],
                  workers: int = 1) -> Tuple[List[float], float]:
    """Each segment's score and the corpus score: :func:`score_from_stats` of each row of
    :func:`meteor_stats` and of :func:`corpus_stats` (the jar's ``EVAL``); the corpus score of no
    segment is 0.0. Arguments and errors are those of :func:`meteor_stats`."""
    st = meteor_stats(res, hyps, refs, workers)
    seg = [score_from_stats([float(x) for x in row]) for row in st]
    return seg, (score_from_stats([float(x) for x in corpus_stats(st)]) if len(st) else 0.0)
