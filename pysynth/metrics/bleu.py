"""BLEU (Papineni et al. 2002) in the sacrebleu, nltk and coco flavors: corpus and sentence
scores from summed n-gram statistics."""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Union

import numpy as np

import pysynth.metrics._formulas as _formulas
from pysynth import _validate as _v
from pysynth._dispatch import backend
from pysynth.metrics._reference import tokenize_intl
from pysynth.metrics.inputs import (
    TokenIds,
    _check_hyps,
    _check_workers,
    _flatten,
    _lower,
    _ref_streams,
    _stats,
    _strings_checked,
)

BLEU_FLAVORS = ("sacrebleu", "nltk", "coco")
_TOKENIZERS = {"sacrebleu": ("13a", "intl", "none"), "nltk": ("none", "13a", "intl"), "coco": ("none", "13a", "intl")}
_SMOOTH_DEFAULTS = {"none": None, "floor": 0.1, "add-k": 1, "exp": None}


@dataclass
class BLEUScore:
    """Corpus BLEU with its sufficient statistics.

    ``score`` is on the flavor's own scale: 0-100 for sacrebleu, 0-1 for nltk and coco
    (as the tools return it). ``bleu_n`` holds coco's BLEU-1..max_order.
    """

    score: float
    flavor: str
    counts: List[int]
    totals: List[int]
    sys_len: int
    ref_len: int
    precisions: List[float] = field(default_factory=list)
    bp: float = 1.0
    bleu_n: List[float] = field(default_factory=list)
    signature: Dict[str, object] = field(default_factory=dict)

    def __float__(self) -> float:
        return float(self.score)




def _bleu_inputs(hyps, refs, flavor, tokenize, lowercase, max_order, workers):
    _v.choice(flavor, "flavor", BLEU_FLAVORS)
    if isinstance(max_order, bool) or not isinstance(max_order, (int, np.integer)):
        raise TypeError(f"max_order must be an int >= 1, got {type(max_order).__name__}")
    if max_order < 1:
        raise ValueError(f"max_order must be >= 1, got {max_order}")
    workers = _check_workers(workers)
    if tokenize is None:
        tokenize = "13a" if flavor == "sacrebleu" else "none"
    if tokenize not in _TOKENIZERS[flavor]:
        raise ValueError(f"tokenize must be one of {_TOKENIZERS[flavor]} for flavor {flavor!r}, got {tokenize!r}")
    n = _check_hyps(hyps)
    streams = _ref_streams(refs, n)
    if lowercase:
        hyps = _lower(hyps, "hyps")
        streams = [_lower(s, "refs") for s in streams]
    if tokenize == "intl":
        if isinstance(hyps, TokenIds):
            raise ValueError("tokenize='intl' needs strings; token ids are already tokenized")
        hyps = [tokenize_intl(h) for h in _strings_checked(hyps, "hyps")]
        streams = [[tokenize_intl(r) for r in _strings_checked(s, f"refs[{k}]")] for k, s in enumerate(streams)]
        tokenize = "none"
    flat, offsets = _flatten(streams, n)
    stats = _stats(backend("metrics").bleu_stats, hyps, flat, offsets, len(streams), tokenize, int(max_order), workers)
    return stats, tokenize, streams, hyps, n


def _smoothing(flavor, smooth_method, smooth_value, sentence):
    if flavor == "sacrebleu":
        if smooth_method is None:
            smooth_method = "exp"
        if smooth_method not in _SMOOTH_DEFAULTS:
            raise ValueError(f"smooth_method must be one of {tuple(_SMOOTH_DEFAULTS)} for sacrebleu, got {smooth_method!r}")
        if smooth_value is None:
            smooth_value = _SMOOTH_DEFAULTS[smooth_method]
        elif isinstance(smooth_value, bool) or not isinstance(smooth_value, (int, float, np.integer, np.floating)) \
                or not math.isfinite(smooth_value) or smooth_value < 0:
            # nan / inf would come out as a nan or inf score, not as an error
            raise ValueError(f"smooth_value must be a finite number >= 0, got {smooth_value!r}")
        return smooth_method, smooth_value
    if flavor == "nltk":
        m = 0 if smooth_method is None else smooth_method
        if isinstance(m, str) and m.startswith("method") and m[6:].isdigit():
            m = int(m[6:])
        if isinstance(m, bool) or not isinstance(m, (int, np.integer)) or not 0 <= m <= 7:
            raise ValueError(f"smooth_method for nltk must be 0..7 (SmoothingFunction().methodN), got {smooth_method!r}")
        return int(m), smooth_value
    if smooth_method not in (None, "none"):
        raise ValueError("the coco flavor has no smoothing options")
    return None, None


def _last_tokens(hyps, streams, tokenize, n):
    """Tokens of the last segment (nltk smoothing methods 5-7 read them)."""

    if isinstance(hyps, TokenIds):
        return hyps.row(n - 1), [s.row(n - 1) for s in streams]
    last = [hyps[n - 1]] + [s[n - 1] for s in streams]
    toks = backend("metrics").tokenize(last, tokenize, 1)
    return toks[0], toks[1:]


def corpus_bleu(
    hyps,
    refs,
    *,
    flavor: str = "sacrebleu",
    tokenize: Optional[str] = None,
    smooth_method: Union[str, int, None] = None,
    smooth_value: Optional[float] = None,
    lowercase: bool = False,
    effective_order: bool = False,
    max_order: int = 4,
    workers: int = 1,
) -> BLEUScore:
    """Corpus-level BLEU (Papineni et al. 2002), identical to the chosen reference tool.

    Parameters
    ----------
    hyps : list of str or TokenIds
    refs : list of str, list of reference streams, or TokenIds
    flavor : {"sacrebleu", "nltk", "coco"}
        ``sacrebleu``: ``sacrebleu.metrics.BLEU(...).corpus_score`` (score 0-100).
        ``nltk``: ``nltk.translate.bleu_score.corpus_bleu`` on ``str.split()`` tokens, uniform
        weights (score 0-1). ``coco``: pycocoevalcap ``Bleu(max_order).compute_score``
        (score = BLEU-max_order, 0-1; ``bleu_n`` has BLEU-1..max_order).
    tokenize : {"13a", "intl", "none"}, optional
        Default ``13a`` for sacrebleu, ``none`` (whitespace) for nltk and coco.
    smooth_method : str or int, optional
        sacrebleu: ``none``, ``floor``, ``add-k``, ``exp`` (default). nltk: 0-7 (method0 default).
    smooth_value : float, optional
        sacrebleu floor (default 0.1) / add-k (default 1) value.
    lowercase : bool
    effective_order : bool
        sacrebleu: stop at the highest order with a non-zero count.
    max_order : int
    workers : int

    Returns
    -------
    BLEUScore

    Examples
    --------
    >>> round(corpus_bleu(["the cat sat on the mat"], ["the cat sat on the mat"]).score, 1)
    100.0
    """
    sm, sv = _smoothing(flavor, smooth_method, smooth_value, False)
    stats, tok, streams, hyps2, n = _bleu_inputs(hyps, refs, flavor, tokenize, lowercase, max_order, workers)
    total = stats.sum(axis=0)
    sys_len, ref_len = int(total[0]), int(total[1])
    counts = [int(x) for x in total[2 : 2 + max_order]]
    totals = [int(x) for x in total[2 + max_order :]]
    sig = {"flavor": flavor, "tok": tok if tokenize != "intl" else "intl", "smooth": sm, "case": "lc" if lowercase else "mixed", "nrefs": len(streams), "max_order": max_order}
    if flavor == "sacrebleu":
        score, precisions, bp, counts, totals = _formulas.sacrebleu_bleu(
            counts, totals, sys_len, ref_len, sm, sv, effective_order, max_order
        )
        sig["eff"] = "yes" if effective_order else "no"
        return BLEUScore(score, flavor, counts, totals, sys_len, ref_len, precisions, bp, signature=sig)
    if flavor == "coco":
        bleus = _formulas.coco_bleu(counts, totals, sys_len, ref_len, max_order)
        return BLEUScore(bleus[-1], flavor, counts, totals, sys_len, ref_len, bleu_n=bleus, signature=sig)
    last_hyp, last_refs = _last_tokens(hyps2, streams, tok, n)
    weights = (0.25, 0.25, 0.25, 0.25) if max_order == 4 else (1 / max_order,) * max_order
    score = _formulas.nltk_corpus_bleu(stats, max_order, weights, sm, last_hyp, last_refs, totals=total)
    return BLEUScore(score, flavor, counts, totals, sys_len, ref_len, signature=sig)


def sentence_bleu(
    hyps,
    refs,
    *,
    flavor: str = "sacrebleu",
    tokenize: Optional[str] = None,
    smooth_method: Union[str, int, None] = None,
    smooth_value: Optional[float] = None,
    lowercase: bool = False,
    effective_order: bool = True,
    max_order: int = 4,
    workers: int = 1,
) -> np.ndarray:
    """Sentence-level BLEU of every hypothesis against its own references.

    Same flavors and options as :func:`corpus_bleu`; the defaults follow
    ``sacrebleu.sentence_bleu`` (``exp`` smoothing, ``effective_order=True``). For each
    segment i the result equals the tool's sentence score of ``hyps[i]``: sacrebleu
    ``BLEU.sentence_score(...).score``, ``nltk.sentence_bleu``, and pycocoevalcap's
    per-segment BLEU-max_order.

    Returns
    -------
    numpy.ndarray of float64, length len(hyps)
    """
    sm, sv = _smoothing(flavor, smooth_method, smooth_value, True)
    stats, tok, streams, hyps2, n = _bleu_inputs(hyps, refs, flavor, tokenize, lowercase, max_order, workers)
    be = backend("metrics")
    if flavor == "sacrebleu":
        value = 0.0 if sv is None else float(sv)
        return be.sacrebleu_sentence_scores(stats, sm, value, bool(effective_order), int(max_order), workers)
    if flavor == "coco":
        return be.coco_sentence_scores(stats, int(max_order), workers)[:, -1].copy()
    weights = (0.25, 0.25, 0.25, 0.25) if max_order == 4 else (1 / max_order,) * max_order
    out = np.empty(n, dtype=np.float64)
    for i in range(n):
        last_hyp, last_refs = _last_tokens(hyps2, streams, tok, i + 1) if sm in (5, 6, 7) else ([], [])
        out[i] = _formulas.nltk_corpus_bleu(stats[i : i + 1], max_order, weights, sm, last_hyp, last_refs)
    return out
