"""Pure-Python twins of the compiled metrics functions (``pysynth._core.metrics``).

Same names, signatures and results as the C++ side: this module is the specification,
the test oracle and the fallback (``PYSYNTH_IMPL=python``). It favours obvious code over
speed. The tokenizers and statistics reproduce the reference tools:

* rouge-score 0.1.2 (Google): lower-case, ``[a-z0-9]+`` tokens, Porter stems (NLTK
  extensions) of tokens longer than 3 characters; multiset n-gram overlap; LCS;
  summary-level union LCS for ``rougeLsum`` (Lin 2004, Sect. 3.2).
* rouge 0.3.2 (pltrdy), the tool MQR (Chu et al. 2020) reports: sentences split on
  ``"."``, words on whitespace; n-gram *sets*; ROUGE-L as the size of the union of LCS
  word sets over sentence pairs.
* sacrebleu 2.x tokenizers ``13a``/``intl``/``none``; BLEU sufficient statistics
  (Papineni et al. 2002) shared by the sacrebleu, nltk and pycocoevalcap flavors.
"""
from __future__ import annotations

import math
import re
import unicodedata
from collections import Counter
from typing import List, Sequence, Tuple

import numpy as np

from pysynth import _validate as _v
from pysynth._validate import strings
from pysynth.metrics._porter import porter_stem as _stem_one

__all__ = [
    "tokenize",
    "rouge_stats",
    "rouge_prf",
    "rouge_prf_texts",
    "bleu_stats",
    "sacrebleu_sentence_scores",
    "coco_sentence_scores",
    "porter_stem",
]

# --------------------------------------------------------------------------- inputs


_strings = strings  # shared with every twin: pysynth/_validate.py


def _is_ids(obj) -> bool:
    return (
        obj is not None
        and hasattr(obj, "values")
        and hasattr(obj, "offsets")
        and not isinstance(obj, (list, tuple, str))
    )


def _offsets(obj, n: int, total: int, name: str) -> np.ndarray:
    off = np.asarray(obj, dtype=np.int64)
    if off.ndim == 1 and off.shape[0] != n + 1:
        raise ValueError(f"{name} must have {n + 1} entries, got {off.shape[0]}")
    return _v.offsets(off, total, name)


def _id_rows(obj, name: str) -> List[List[int]]:
    values = np.asarray(obj.values).astype(np.int32, copy=False)
    if values.ndim != 1:
        raise ValueError(f"{name}.values must be a 1-d int32 array")
    offs = np.asarray(obj.offsets)
    if offs.ndim != 1 or offs.shape[0] < 1:
        raise ValueError(f"{name}.offsets must be a 1-d int64 array of length n + 1")
    offs = _offsets(offs, offs.shape[0] - 1, values.shape[0], f"{name}.offsets")
    vals = values.tolist()
    return [vals[offs[i] : offs[i + 1]] for i in range(offs.shape[0] - 1)]


def _column(obj, name: str):
    """(is_ids, rows): rows are str, or lists of int ids."""
    if _is_ids(obj):
        return True, _id_rows(obj, name)
    return False, _strings(obj, name)


def _check_workers(workers: int) -> None:
    _v.workers(workers)


# ------------------------------------------------------------------------ tokenizers

_NON_ALNUM = re.compile(r"[^a-z0-9]+")

# sacrebleu's 13a rules (mteval-v13a), applied in this order.
_13A_RULES = [
    (re.compile(r"([\{-\~\[-\` -\&\(-\+\:-\@\/])"), r" \1 "),
    (re.compile(r"([^0-9])([\.,])"), r"\1 \2 "),
    (re.compile(r"([\.,])([^0-9])"), r" \1 \2"),
    (re.compile(r"([0-9])(-)"), r"\1 \2 "),
]


def _rouge_tokens(text: str, stem: bool) -> List[str]:
    toks = [t for t in _NON_ALNUM.split(text.lower()) if t]
    if stem:
        toks = [_stem_one(t) if len(t) > 3 else t for t in toks]
    return toks


def _tokenize_13a(line: str) -> str:
    line = line.rstrip()
    line = line.replace("<skipped>", "").replace("-\n", "").replace("\n", " ")
    if "&" in line:
        line = line.replace("&quot;", '"').replace("&amp;", "&")
        line = line.replace("&lt;", "<").replace("&gt;", ">")
    line = f" {line} "
    for pattern, repl in _13A_RULES:
        line = pattern.sub(repl, line)
    return " ".join(line.split())


def _cat(ch: str) -> str:
    return unicodedata.category(ch)[0]


def tokenize_intl(line: str) -> str:
    """sacrebleu's ``intl`` tokenizer (mteval-v14 international) with :mod:`unicodedata`.

    The three rules ``(\\P{N})(\\p{P}) -> '\\1 \\2 '``, ``(\\p{P})(\\P{N}) -> ' \\1 \\2'`` and
    ``(\\p{S}) -> ' \\1 '`` are applied as ``re.sub`` would (leftmost, non-overlapping).
    Characters whose category differs between this Python's Unicode database and the
    ``regex`` module's can tokenize differently.
    """
    line = line.rstrip()

    def pairs(s: str, first, second, repl) -> str:
        out, i, n = [], 0, len(s)
        while i < n:
            if i + 1 < n and first(s[i]) and second(s[i + 1]):
                out.append(repl(s[i], s[i + 1]))
                i += 2
            else:
                out.append(s[i])
                i += 1
        return "".join(out)

    line = pairs(line, lambda c: _cat(c) != "N", lambda c: _cat(c) == "P", lambda a, b: f"{a} {b} ")
    line = pairs(line, lambda c: _cat(c) == "P", lambda c: _cat(c) != "N", lambda a, b: f" {a} {b}")
    line = "".join(f" {c} " if _cat(c) == "S" else c for c in line)
    return " ".join(line.split())


def _pltrdy_sentences(text: str) -> List[List[str]]:
    sents = [" ".join(p.split()) for p in text.split(".") if len(p) > 0]
    return [s.split(" ") for s in sents]


def tokenize(texts, tokenizer: str, workers: int) -> List[List[str]]:
    """Tokens of each text: ``rouge``, ``rouge-stem``, ``13a`` or ``none`` (whitespace)."""
    items = _strings(texts, "texts")
    _check_workers(workers)
    if tokenizer == "rouge":
        return [_rouge_tokens(t, False) for t in items]
    if tokenizer == "rouge-stem":
        return [_rouge_tokens(t, True) for t in items]
    if tokenizer == "13a":
        return [_tokenize_13a(t).split() for t in items]
    if tokenizer == "none":
        return [t.split() for t in items]
    raise ValueError(f"tokenizer must be one of rouge, rouge-stem, 13a, none; got '{tokenizer}'")


def porter_stem(words) -> List[str]:
    """Porter stems (NLTK extensions) of a list of lower-case words."""
    return [_stem_one(w) for w in _strings(words, "words")]


# ------------------------------------------------------------------------------ ROUGE


def _ngrams(tokens: Sequence, n: int) -> List[tuple]:
    return [tuple(tokens[i : i + n]) for i in range(len(tokens) - n + 1)]


def _lcs_table(x: Sequence, y: Sequence) -> List[List[int]]:
    t = [[0] * (len(y) + 1) for _ in range(len(x) + 1)]
    for i in range(1, len(x) + 1):
        for j in range(1, len(y) + 1):
            if x[i - 1] == y[j - 1]:
                t[i][j] = t[i - 1][j - 1] + 1
            else:
                t[i][j] = max(t[i - 1][j], t[i][j - 1])
    return t


def _summary_hits(hyp_sents: List[list], ref_sents: List[list]) -> int:
    """rouge-score's summary-level union LCS hits, clamped by token counts (ROUGE 1.5.5)."""
    cnt_c = Counter(t for s in hyp_sents for t in s)
    cnt_r = Counter(t for s in ref_sents for t in s)
    hits = 0
    for r in ref_sents:
        union = set()
        for c in hyp_sents:
            t = _lcs_table(r, c)
            i, j = len(r), len(c)
            while i > 0 and j > 0:
                if r[i - 1] == c[j - 1]:
                    union.add(i - 1)
                    i -= 1
                    j -= 1
                elif t[i][j - 1] > t[i - 1][j]:
                    j -= 1
                else:
                    i -= 1
        for q in sorted(union):
            tok = r[q]
            if cnt_c[tok] > 0 and cnt_r[tok] > 0:
                hits += 1
                cnt_c[tok] -= 1
                cnt_r[tok] -= 1
    return hits


def _pltrdy_union(hyp_sents: List[list], ref_sents: List[list]) -> int:
    """rouge 0.3.2: |union of the LCS word sets| over (reference, hypothesis) sentences."""
    union = set()
    for x in ref_sents:
        for y in hyp_sents:
            t = _lcs_table(x, y)
            i, j = len(x), len(y)
            while i > 0 and j > 0:
                if x[i - 1] == y[j - 1]:
                    union.add(x[i - 1])
                    i -= 1
                    j -= 1
                elif t[i - 1][j] > t[i][j - 1]:
                    i -= 1
                else:
                    j -= 1
    return len(union)


def _parse_types(types) -> List[Tuple[str, int]]:
    out = []
    for s in types:
        if s == "rougeL":
            out.append(("L", 0))
        elif s == "rougeLsum":
            out.append(("Lsum", 0))
        elif isinstance(s, str) and re.fullmatch(r"rouge[0-9]{1,2}", s):
            n = int(s[5:])
            if n < 1:
                raise ValueError(f"types: {s} needs n >= 1")
            out.append(("N", n))
        else:
            raise ValueError(
                f"types: unknown ROUGE type '{s}'; use rouge1..rouge9 (any rougeN), rougeL or rougeLsum"
            )
    if not out:
        raise ValueError("types must name at least one ROUGE type")
    return out


def rouge_stats(hyps, refs, ref_offsets, types, flavor: str, stem: bool, workers: int) -> np.ndarray:
    """Integer ROUGE statistics for each (hypothesis, reference) row.

    Parameters
    ----------
    hyps : sequence of str or TokenIds
        N hypotheses.
    refs : sequence of str or TokenIds
        M references, grouped per hypothesis by ``ref_offsets``.
    ref_offsets : array of int64, length N + 1
        Hypothesis i owns references ``refs[ref_offsets[i]:ref_offsets[i + 1]]``.
    types : list of str
        ``rougeN`` (any N >= 1), ``rougeL``, ``rougeLsum``.
    flavor : {"rouge-score", "pltrdy"}
    stem : bool
        Porter-stem tokens longer than 3 characters (rouge-score flavor).
    workers : int
        Threads (ignored here; validated).

    Returns
    -------
    numpy.ndarray of int64, shape (M, len(types), 3)
        Per reference row and type: (matches, hypothesis count, reference count); see
        ``csrc/include/pysynth/ngram.hpp`` for each type's exact meaning. pltrdy rows whose
        hypothesis or reference has no sentence are ``-1``.
    """
    if flavor not in ("rouge-score", "pltrdy"):
        raise ValueError(f"flavor must be 'rouge-score' or 'pltrdy', got '{flavor}'")
    parsed = _parse_types(types)
    h_ids, h_rows = _column(hyps, "hyps")
    r_ids, r_rows = _column(refs, "refs")
    off = _offsets(ref_offsets, len(h_rows), len(r_rows), "ref_offsets")
    _check_workers(workers)
    if h_ids != r_ids:
        raise ValueError("hyps and refs must both be strings or both be token ids")
    pltrdy = flavor == "pltrdy"
    lsum = any(k == "Lsum" for k, _ in parsed)
    if pltrdy and lsum:
        raise ValueError("the pltrdy flavor has no rougeLsum")
    if h_ids and (pltrdy or lsum):
        raise ValueError(
            "token ids carry no sentence boundaries: use strings for pltrdy or rougeLsum"
        )

    def prep(x):
        """(flat tokens, sentences); sentences is None for pltrdy texts without any."""
        if h_ids:
            return list(x), [list(x)]
        if pltrdy:
            sents = _pltrdy_sentences(x)
            return [w for s in sents for w in s], (sents or None)
        sents = [_rouge_tokens(s, stem) for s in x.split("\n") if len(s)] if lsum else []
        return _rouge_tokens(x, stem), sents

    out = np.zeros((len(r_rows), len(parsed), 3), dtype=np.int64)
    for i, h in enumerate(h_rows):
        ht, hs = prep(h)
        for j in range(off[i], off[i + 1]):
            rt, rs = prep(r_rows[j])
            for t, (kind, n) in enumerate(parsed):
                if pltrdy and (hs is None or rs is None):
                    out[j, t] = (-1, -1, -1)
                elif kind == "N" and pltrdy:
                    hg, rg = set(_ngrams(ht, n)), set(_ngrams(rt, n))
                    out[j, t] = (len(hg & rg), len(hg), len(rg))
                elif kind == "N":
                    hc, rc = Counter(_ngrams(ht, n)), Counter(_ngrams(rt, n))
                    match = sum(min(c, hc[g]) for g, c in rc.items())
                    out[j, t] = (match, sum(hc.values()), sum(rc.values()))
                elif kind == "L" and pltrdy:
                    out[j, t] = (_pltrdy_union(hs, rs), len(set(ht)), len(set(rt)))
                elif kind == "L":
                    lcs = _lcs_table(rt, ht)[-1][-1] if ht and rt else 0
                    out[j, t] = (lcs, len(ht), len(rt))
                else:
                    out[j, t] = (_summary_hits(hs, rs), len(ht), len(rt))
    return out


def rouge_prf(stats) -> np.ndarray:
    """rouge-score 0.1.2 precision, recall and F from :func:`rouge_stats` output.

    rouge-score divides n-gram matches by ``max(count, 1)`` and returns zeros for ROUGE-L
    when either side is empty; since matches never exceed either count, both rules give
    the same numbers, so one formula serves every type.

    Returns
    -------
    numpy.ndarray of float64, shape (3, types, rows): P, R, F.
    """
    s = np.asarray(stats, dtype=np.int64)
    if s.ndim != 3 or s.shape[2] != 3:
        raise ValueError("stats must be an int64 array of shape (rows, types, 3)")
    out = np.zeros((3, s.shape[1], s.shape[0]))
    for j, row in enumerate(s.tolist()):
        for t, (m, h, r) in enumerate(row):
            p = m / max(h, 1)
            rc = m / max(r, 1)
            out[0, t, j], out[1, t, j] = p, rc
            out[2, t, j] = 2 * p * rc / (p + rc) if p + rc > 0 else 0.0
    return out


def rouge_prf_texts(hyps, refs, ref_offsets, types, stem: bool, workers: int) -> np.ndarray:
    """rouge-score 0.1.2 precision, recall and F straight from the texts.

    ``rouge_prf(rouge_stats(hyps, refs, ref_offsets, types, "rouge-score", stem, workers))``
    in one call: the compiled version computes each row's P/R/F in the worker thread that
    counted it and never builds the statistics array.

    Returns
    -------
    numpy.ndarray of float64, shape (3, types, len(refs)): P, R, F.
    """
    return rouge_prf(rouge_stats(hyps, refs, ref_offsets, types, "rouge-score", stem, workers))


# ------------------------------------------------------------------------------- BLEU


def bleu_stats(hyps, refs, ref_offsets, tokenize: str, max_order: int, workers: int) -> np.ndarray:
    """BLEU sufficient statistics per hypothesis (Papineni et al. 2002, Eq. 1-2).

    Returns
    -------
    numpy.ndarray of int64, shape (N, 2 + 2 * max_order)
        hyp length, closest reference length (ties: the shorter, as sacrebleu, nltk and
        pycocoevalcap all do), clipped matches per order 1..max_order (clipped by the max
        count over the references), hypothesis n-grams per order.
    """
    h_ids, h_rows = _column(hyps, "hyps")
    r_ids, r_rows = _column(refs, "refs")
    off = _offsets(ref_offsets, len(h_rows), len(r_rows), "ref_offsets")
    if tokenize not in ("13a", "none"):
        raise ValueError(f"tokenize must be '13a' or 'none' in the compiled path, got '{tokenize}'")
    if max_order < 1:
        raise ValueError("max_order must be >= 1")
    _check_workers(workers)
    if h_ids != r_ids:
        raise ValueError("hyps and refs must both be strings or both be token ids")
    if h_ids and tokenize != "none":
        raise ValueError("token ids are already tokenized: use tokenize='none'")
    if np.any(np.diff(off) == 0):
        raise ValueError("every hypothesis needs at least one reference")

    def toks(x):
        if h_ids:
            return list(x)
        return _tokenize_13a(x).split() if tokenize == "13a" else x.split()

    def grams(tokens):
        return Counter(g for n in range(1, max_order + 1) for g in _ngrams(tokens, n))

    out = np.zeros((len(h_rows), 2 + 2 * max_order), dtype=np.int64)
    for i, h in enumerate(h_rows):
        ht = toks(h)
        ref_max: Counter = Counter()
        ref_lens = []
        for j in range(off[i], off[i + 1]):
            rt = toks(r_rows[j])
            ref_lens.append(len(rt))
            for g, c in grams(rt).items():
                ref_max[g] = max(ref_max[g], c)
        closest = min(ref_lens, key=lambda rl: (abs(rl - len(ht)), rl))
        correct = [0] * max_order
        total = [0] * max_order
        for g, c in grams(ht).items():
            total[len(g) - 1] += c
            correct[len(g) - 1] += min(c, ref_max.get(g, 0))
        out[i] = [len(ht), closest, *correct, *total]
    return out


def _check_stats(stats, max_order: int) -> np.ndarray:
    if max_order < 1:
        raise ValueError("max_order must be >= 1")
    s = np.asarray(stats, dtype=np.int64)
    if s.ndim != 2 or s.shape[1] != 2 + 2 * max_order:
        raise ValueError(f"stats must be an int64 array of shape (n, {2 + 2 * max_order})")
    if s.size and s.min() < 0:  # counts: a negative one would give NaN or a math domain error
        raise ValueError("stats must be non-negative counts")
    return s


def _my_log(x: float) -> float:
    return -9999999999 if x == 0.0 else math.log(x)


def sacrebleu_bleu(correct, total, sys_len, ref_len, smooth_method, smooth_value, effective_order, max_order):
    """sacrebleu ``BLEU.compute_bleu`` from summed statistics.

    Returns (score, precisions, bp, counts, totals); like sacrebleu, add-k smoothing adds
    k to the returned counts and totals of orders 2 and up.
    """
    correct, total = list(correct), list(total)
    bp = 1.0
    if sys_len < ref_len:
        bp = math.exp(1 - ref_len / sys_len) if sys_len > 0 else 0.0
    precisions = [0.0] * max_order
    if not any(correct):
        return 0.0, precisions, bp, correct, total
    smooth_mteval = 1.0
    eff_order = max_order
    for n in range(1, max_order + 1):
        if smooth_method == "add-k" and n > 1:
            correct[n - 1] += smooth_value
            total[n - 1] += smooth_value
        if total[n - 1] == 0:
            break
        if effective_order:
            eff_order = n
        if correct[n - 1] == 0:
            if smooth_method == "exp":
                smooth_mteval *= 2
                precisions[n - 1] = 100.0 / (smooth_mteval * total[n - 1])
            elif smooth_method == "floor":
                precisions[n - 1] = 100.0 * smooth_value / total[n - 1]
        else:
            precisions[n - 1] = 100.0 * correct[n - 1] / total[n - 1]
    score = bp * math.exp(sum([_my_log(p) for p in precisions[:eff_order]]) / eff_order)
    return score, precisions, bp, correct, total


def sacrebleu_sentence_scores(
    stats, smooth_method: str, smooth_value: float, effective_order: bool, max_order: int, workers: int = 1
) -> np.ndarray:
    """sacrebleu's BLEU of each row of ``stats`` (see :func:`bleu_stats`)."""
    s = _check_stats(stats, max_order)
    _check_workers(workers)
    if smooth_method not in ("none", "floor", "add-k", "exp"):
        raise ValueError(f"smooth_method must be one of none, floor, add-k, exp; got '{smooth_method}'")
    if not math.isfinite(smooth_value) or smooth_value < 0:
        raise ValueError(f"smooth_value must be a finite number >= 0, got {smooth_value!r}")
    out = np.empty(s.shape[0], dtype=np.float64)
    for i, row in enumerate(s.tolist()):
        out[i] = sacrebleu_bleu(
            row[2 : 2 + max_order], row[2 + max_order :], row[0], row[1],
            smooth_method, smooth_value, effective_order, max_order,
        )[0]
    return out


def coco_bleu(correct, guess, testlen, reflen, max_order):
    """pycocoevalcap ``BleuScorer``: BLEU-1..max_order from (summed) statistics."""
    tiny, small = 1e-15, 1e-9
    bleus, bleu = [], 1.0
    for k in range(max_order):
        bleu *= (float(correct[k]) + tiny) / (float(guess[k]) + small)
        bleus.append(bleu ** (1.0 / (k + 1)))
    ratio = (testlen + tiny) / (reflen + small)
    if ratio < 1:
        bleus = [b * math.exp(1 - 1 / ratio) for b in bleus]
    return bleus


def coco_sentence_scores(stats, max_order: int, workers: int = 1) -> np.ndarray:
    """pycocoevalcap's per-segment BLEU-1..max_order of each row of ``stats``."""
    s = _check_stats(stats, max_order)
    _check_workers(workers)
    out = np.empty((s.shape[0], max_order), dtype=np.float64)
    for i, row in enumerate(s.tolist()):
        out[i] = coco_bleu(row[2 : 2 + max_order], row[2 + max_order :], row[0], row[1], max_order)
    return out


# METEOR 1.5 (the compiled metrics stage's meteor_* functions): twins live in _meteor_ref
from pysynth.metrics._meteor_ref import (  # noqa: E402,F401
    meteor_normalize,
    meteor_resources,
    meteor_score_from_stats,
    meteor_scores,
    meteor_stats,
    meteor_stem,
)
