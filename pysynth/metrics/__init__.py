"""Evaluation metrics: ROUGE, BLEU (three flavors) and AvgRougeL/MaxRougeL.

Exactly the numbers of the reference tools, much faster. The compiled core counts
n-gram matches, totals, lengths and LCS lengths per segment (``pysynth._core.metrics``,
twin: :mod:`pysynth.metrics._reference`); the formulas in :mod:`._formulas` turn summed
statistics into scores with the tools' own floating-point operations (sacrebleu's design).

Flavors
-------
ROUGE (Lin 2004): ``rouge-score`` (Google's rouge-score 0.1.2, optional Porter stemmer)
and ``pltrdy`` (``rouge==0.3.2``, the tool MQR, Chu et al. 2020, reports).
BLEU (Papineni et al. 2002): ``sacrebleu`` (2.x; tokenizers 13a/intl/none; smoothing
none/floor/add-k/exp), ``nltk`` (``nltk.translate.bleu_score``, smoothing methods 0-7 of
Chen & Cherry 2014) and ``coco`` (pycocoevalcap's BleuScorer, used by nlg-eval).

References are given as in sacrebleu: a list of str (one reference per hypothesis) or a
list of reference *streams*, each a list of str aligned with the hypotheses. Pre-tokenized
input is a :class:`TokenIds` (flat int32 ids + int64 offsets).
"""
from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from pysynth import _validate as _v
from pysynth._dispatch import backend
from pysynth.metrics import _formulas
from pysynth.metrics._reference import tokenize_intl

__all__ = [
    "TokenIds",
    "Score",
    "RougeScores",
    "BLEUScore",
    "tokenize",
    "rouge",
    "corpus_bleu",
    "sentence_bleu",
    "avg_max_rouge_l",
    "ROUGE_FLAVORS",
    "BLEU_FLAVORS",
    "ROUGE_TYPES",
    "score_corpus",
]

ROUGE_FLAVORS = ("rouge-score", "pltrdy")
BLEU_FLAVORS = ("sacrebleu", "nltk", "coco")
_TOKENIZERS = {"sacrebleu": ("13a", "intl", "none"), "nltk": ("none", "13a", "intl"), "coco": ("none", "13a", "intl")}
_SMOOTH_DEFAULTS = {"none": None, "floor": 0.1, "add-k": 1, "exp": None}


@dataclass(frozen=True)
class TokenIds:
    """Pre-tokenized segments as flat ids + offsets (segment i = ``values[offsets[i]:offsets[i+1]]``).

    Parameters
    ----------
    values : numpy.ndarray of int32
    offsets : numpy.ndarray of int64, length n + 1, starting at 0 and ending at len(values)
    """

    values: np.ndarray
    offsets: np.ndarray

    def __post_init__(self):
        v = np.asarray(self.values)
        o = np.asarray(self.offsets)
        if v.ndim != 1 or (v.size and not np.issubdtype(v.dtype, np.integer)):
            raise TypeError("TokenIds.values must be a 1-d integer array")
        if o.ndim != 1 or o.size < 1 or (o.size and not np.issubdtype(o.dtype, np.integer)):
            raise TypeError("TokenIds.offsets must be a 1-d integer array of length n + 1")
        if v.size and (v.min() < 0 or v.max() > np.iinfo(np.int32).max):
            raise ValueError("TokenIds.values must be ids in [0, 2**31)")
        _v.offsets(o, v.size, "TokenIds.offsets", "len(values)")
        object.__setattr__(self, "values", v.astype(np.int32, copy=False))
        object.__setattr__(self, "offsets", o.astype(np.int64, copy=False))

    @classmethod
    def from_lists(cls, rows: Sequence[Sequence[int]]) -> "TokenIds":
        """Build from a list of id lists."""
        lens = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        offsets = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        values = np.fromiter((t for r in rows for t in r), dtype=np.int64, count=int(offsets[-1]))
        return cls(values, offsets)

    def __len__(self) -> int:
        return int(self.offsets.shape[0] - 1)

    def row(self, i: int) -> List[int]:
        """Ids of row ``i`` (negative ``i`` counts from the end, as for a list)."""
        n = len(self)
        if not -n <= i < n:
            raise IndexError(f"row {i} is out of range for {n} rows")
        i %= n
        return self.values[self.offsets[i] : self.offsets[i + 1]].tolist()

    def take(self, index: np.ndarray) -> "TokenIds":
        """Rows ``index`` (in that order) as a new TokenIds."""
        lens = np.diff(self.offsets)[index]
        offsets = np.zeros(len(index) + 1, dtype=np.int64)
        np.cumsum(lens, out=offsets[1:])
        parts = [self.values[self.offsets[i] : self.offsets[i + 1]] for i in index]
        values = np.concatenate(parts) if parts else np.zeros(0, np.int32)
        return TokenIds(values, offsets)


@dataclass
class Score:
    """Per-segment precision, recall and F-measure arrays."""

    precision: np.ndarray
    recall: np.ndarray
    fmeasure: np.ndarray

    def mean(self) -> Tuple[float, float, float]:
        """(P, R, F) means, summed left to right as rouge 0.3.2's ``avg=True`` does."""
        return (
            _formulas.seq_mean(self.precision),
            _formulas.seq_mean(self.recall),
            _formulas.seq_mean(self.fmeasure),
        )


class RougeScores(Dict[str, Score]):
    """``{rouge type: Score}`` with per-segment arrays; ``mean()`` gives corpus means."""

    flavor: str = "rouge-score"

    def mean(self) -> Dict[str, Dict[str, float]]:
        out = {}
        for k, s in self.items():
            p, r, f = s.mean()
            out[k] = {"p": p, "r": r, "f": f}
        return out


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


# ----------------------------------------------------------------------------- inputs


def _check_workers(workers) -> int:
    return _v.workers(workers)


def _check_hyps(hyps, name: str = "hyps") -> int:
    if hyps is None:
        raise TypeError(f"{name} must be a list of str or a TokenIds, got None")
    if isinstance(hyps, (str, bytes)):
        raise TypeError(f"{name} must be a list of str, not a single string; wrap it in a list")
    if not isinstance(hyps, TokenIds) and not hasattr(hyps, "__len__"):
        raise TypeError(f"{name} must be a list of str or a TokenIds, got {type(hyps).__name__}")
    n = len(hyps)
    if n == 0:
        raise ValueError(f"{name} is empty: pass at least one segment")
    return n


def _ref_streams(refs, n: int) -> list:
    """Normalise ``refs`` to a list of streams, each aligned with the n hypotheses."""
    if refs is None:
        raise TypeError("refs must be a list of str or a list of reference streams, got None")
    if isinstance(refs, (str, bytes)):
        raise TypeError("refs must be a list of str, not a single string; wrap it in a list")
    if isinstance(refs, TokenIds):
        streams = [refs]
    else:
        try:
            if not isinstance(refs, (list, tuple)):
                refs = list(refs)
        except TypeError:
            raise TypeError(f"refs must be a list of str or of reference streams, got {type(refs).__name__}") from None
        if not refs:
            raise ValueError("refs is empty: pass one reference per hypothesis (or reference streams)")
        first = refs[0]
        if isinstance(first, (list, tuple, TokenIds)):
            streams = refs
        else:
            streams = [refs]
    for k, s in enumerate(streams):
        if not isinstance(s, (list, tuple, TokenIds)):
            raise TypeError(f"refs[{k}] must be a reference stream (list of str), got {type(s).__name__}")
        if len(s) != n:
            raise ValueError(
                f"reference stream {k} has {len(s)} segments but hyps has {n}; "
                "every stream must hold one reference per hypothesis"
            )
    return streams


def _flatten(streams: list, n: int):
    """Flat references + offsets (hypothesis i owns rows i*R .. i*R+R-1)."""
    r = len(streams)
    offsets = np.arange(0, n * r + 1, r, dtype=np.int64)
    if r == 1:
        return streams[0], offsets
    if isinstance(streams[0], TokenIds):
        if not all(isinstance(s, TokenIds) for s in streams):
            raise TypeError("refs: mix of TokenIds and str streams; use one kind")
        rows = [s.row(i) for i in range(n) for s in streams]
        return TokenIds.from_lists(rows), offsets
    return [s[i] for i in range(n) for s in streams], offsets


_REF_INDEX = re.compile(r"^refs\[(\d+)\]")


def _renamed(exc: Exception, rename) -> Exception:
    """The backend names a flattened reference ``refs[k]``; say which stream/row it was."""
    m = _REF_INDEX.match(str(exc))
    if not m:
        return exc
    new = type(exc)(rename(int(m.group(1))) + str(exc)[m.end():])
    new.__cause__ = exc
    return new


def _stats(fn, hyps, flat, offsets, n_streams, *args, ref_name=None):
    """Call a backend statistics function; errors about references name the caller's argument."""
    try:
        return fn(hyps, flat, offsets, *args)
    except (TypeError, ValueError) as exc:
        if ref_name is not None:
            raise _renamed(exc, ref_name) from None
        if n_streams > 1:
            raise _renamed(exc, lambda k: f"refs[{k % n_streams}][{k // n_streams}]") from None
        raise


def _lower(x, name):
    if isinstance(x, TokenIds):
        raise ValueError(f"lowercase=True needs strings; {name} holds token ids")
    return [s.lower() if isinstance(s, str) else s for s in x]


def tokenize(texts: Sequence[str], tokenizer: str = "13a", workers: int = 1) -> List[List[str]]:
    """Tokens of each text, as the reference tools see them.

    Parameters
    ----------
    texts : list of str
    tokenizer : {"13a", "intl", "none", "rouge", "rouge-stem"}
        sacrebleu's ``13a`` and ``intl``; ``none`` = ``str.split()``; ``rouge`` and
        ``rouge-stem`` = rouge-score's tokenizer without / with its Porter stemmer.
    workers : int
        Threads for the compiled path (``-1``: all cores).

    Examples
    --------
    >>> tokenize(["Hello, world!"], "13a")
    [['Hello', ',', 'world', '!']]
    """
    workers = _check_workers(workers)
    if tokenizer == "intl":
        return [tokenize_intl(t).split() for t in _strings_checked(texts, "texts")]
    return backend("metrics").tokenize(texts, tokenizer, workers)


def _strings_checked(texts, name):
    from pysynth.metrics._reference import _strings

    return _strings(texts, name)


# ------------------------------------------------------------------------------ ROUGE


def rouge(
    hyps,
    refs,
    *,
    types: Sequence[str] = ("rouge1", "rouge2", "rougeL"),
    flavor: str = "rouge-score",
    stem: bool = False,
    workers: int = 1,
    ignore_empty: bool = False,
) -> RougeScores:
    """ROUGE-N, ROUGE-L and ROUGE-Lsum precision/recall/F per segment (Lin 2004).

    Parameters
    ----------
    hyps : list of str or TokenIds
        System outputs.
    refs : list of str, list of reference streams, or TokenIds
        With several references, each type keeps the reference with the highest F-measure
        (first one on ties), as ``rouge_score.RougeScorer.score_multi`` does.
    types : sequence of str
        ``rouge1``, ``rouge2``, ... (any ``rougeN``), ``rougeL``, ``rougeLsum`` (newline-
        separated sentences; rouge-score flavor only).
    flavor : {"rouge-score", "pltrdy"}
        ``rouge-score``: identical to Google's rouge-score 0.1.2. ``pltrdy``: identical to
        ``rouge==0.3.2`` (``Rouge().get_scores``), including its quirks (n-gram sets,
        sentences split on ".", no lower-casing, union-LCS over word sets).
    stem : bool
        Porter stemmer (rouge-score's ``use_stemmer=True``).
    workers : int
        Threads (``-1``: all cores). Results do not depend on it.
    ignore_empty : bool
        pltrdy only: drop hypotheses that are ``""``, as ``get_scores(ignore_empty=True)``.

    Returns
    -------
    RougeScores
        ``{type: Score(precision, recall, fmeasure)}`` with one value per (kept) segment;
        ``.mean()`` averages them (0-1 scale).

    Examples
    --------
    >>> s = rouge(["the cat sat"], ["the cat sat down"])
    >>> round(s["rougeL"].fmeasure[0], 4)
    0.8571
    """
    _v.choice(flavor, "flavor", ROUGE_FLAVORS)
    if isinstance(types, str):
        types = [types]
    types = list(types)
    if not types:
        raise ValueError("types must name at least one ROUGE type, e.g. ('rouge1', 'rougeL')")
    for i, t in enumerate(types):
        if not isinstance(t, str):
            raise TypeError(f"types[{i}] must be a str such as 'rouge1' or 'rougeL', got {type(t).__name__}")
    workers = _check_workers(workers)
    n = _check_hyps(hyps)
    streams = _ref_streams(refs, n)
    if ignore_empty:
        if flavor != "pltrdy":
            raise ValueError("ignore_empty applies to flavor='pltrdy' only")
        keep = [i for i, h in enumerate(hyps) if not (isinstance(h, str) and len(h) == 0)]
        if len(keep) < n:
            hyps = [hyps[i] for i in keep]
            streams = [[s[i] for i in keep] for s in streams]
            n = _check_hyps(hyps)
    flat, offsets = _flatten(streams, n)
    be = backend("metrics")
    if flavor == "rouge-score":  # P/R/F straight from the texts: no statistics array
        prf = _stats(be.rouge_prf_texts, hyps, flat, offsets, len(streams), types, bool(stem), workers)
    else:
        stats = _stats(be.rouge_stats, hyps, flat, offsets, len(streams), types, flavor, bool(stem), workers)
    r = len(streams)
    out = RougeScores()
    out.flavor = flavor
    for t, name in enumerate(types):
        if flavor == "rouge-score":
            p, rc, f = prf[0, t], prf[1, t], prf[2, t]
        else:
            st = stats[:, t, :]
            bad = np.flatnonzero(st[:, 0] < 0)
            if bad.size:
                i = int(bad[0]) // r
                raise ValueError(
                    f"hyps[{i}] or its reference has no words for the pltrdy flavor (rouge 0.3.2 "
                    "raises 'Collections must contain at least 1 sentence.'); remove it, or pass "
                    "ignore_empty=True to skip empty hypotheses as the tool does"
                )
            p, rc, f = _formulas.pltrdy_prf("N" if name[5:].isdigit() else "L", st)
        if r > 1:
            p, rc, f = (x.reshape(n, r) for x in (p, rc, f))
            best = np.argmax(f, axis=1)
            rows = np.arange(n)
            p, rc, f = p[rows, best], rc[rows, best], f[rows, best]
        out[name] = Score(p, rc, f)
    return out


def avg_max_rouge_l(
    hyps: Sequence[str],
    ref_sets: Sequence[Sequence[str]],
    *,
    flavor: str = "rouge-score",
    stem: bool = False,
    workers: int = 1,
) -> Tuple[np.ndarray, np.ndarray]:
    """AvgRougeL and MaxRougeL of each hypothesis over its own set of references.

    Ding & Balog (2018), Eq. 17-18: for a generated keyword query k and the set K_q of
    ground-truth keyword queries of q's paraphrase cluster,
    ``AvgRougeL = sum_{k' in K_q} RougeL(k, k') / |K_q|`` and
    ``MaxRougeL = max_{k' in K_q} RougeL(k, k')`` (RougeL = ROUGE-L F-measure).

    Parameters
    ----------
    hyps : list of str
    ref_sets : list of list of str
        A non-empty reference set per hypothesis (sizes may differ).

    Returns
    -------
    (avg, max) : two float64 arrays of length len(hyps)
    """
    _v.choice(flavor, "flavor", ROUGE_FLAVORS)
    workers = _check_workers(workers)
    n = _check_hyps(hyps)
    if ref_sets is None or isinstance(ref_sets, (str, bytes)) or len(ref_sets) != n:
        raise ValueError("ref_sets must hold one list of references per hypothesis")
    sizes = np.zeros(n + 1, dtype=np.int64)
    for i, s in enumerate(ref_sets):
        if isinstance(s, (str, bytes)) or not hasattr(s, "__len__"):
            raise TypeError(f"ref_sets[{i}] must be a list of str")
        if len(s) == 0:
            raise ValueError(f"ref_sets[{i}] is empty: every hypothesis needs at least one reference")
        sizes[i + 1] = len(s)
    offsets = np.cumsum(sizes)
    flat = [r for s in ref_sets for r in s]
    def set_name(k: int) -> str:
        i = int(np.searchsorted(offsets, k, side="right")) - 1
        return f"ref_sets[{i}][{k - int(offsets[i])}]"

    stats = _stats(backend("metrics").rouge_stats, hyps, flat, offsets, 1, ["rougeL"], flavor, bool(stem), workers, ref_name=set_name)
    if flavor == "pltrdy":
        if np.any(stats[:, 0, 0] < 0):
            raise ValueError("a hypothesis or reference has no words for the pltrdy flavor")
        f = _formulas.pltrdy_prf("L", stats[:, 0, :])[2]
    else:
        f = backend("metrics").rouge_prf(stats)[2, 0]
    starts = offsets[:-1]
    counts = sizes[1:]
    # Eq. 17 summed left to right within each group (np.add.reduceat sums pairwise):
    # step j adds the j-th reference's score of every group that has one.
    total = np.zeros(n)
    for j in range(int(counts.max())):
        live = counts > j
        total[live] += f[starts[live] + j]
    return total / counts, np.maximum.reduceat(f, starts)


# ------------------------------------------------------------------------------- BLEU


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
    score = _formulas.nltk_corpus_bleu(stats, max_order, weights, sm, last_hyp, last_refs)
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
        return be.sacrebleu_sentence_scores(stats, sm, value, bool(effective_order), int(max_order))
    if flavor == "coco":
        return be.coco_sentence_scores(stats, int(max_order))[:, -1].copy()
    weights = (0.25, 0.25, 0.25, 0.25) if max_order == 4 else (1 / max_order,) * max_order
    out = np.empty(n, dtype=np.float64)
    for i in range(n):
        last_hyp, last_refs = _last_tokens(hyps2, streams, tok, i + 1) if sm in (5, 6, 7) else ([], [])
        out[i] = _formulas.nltk_corpus_bleu(stats[i : i + 1], max_order, weights, sm, last_hyp, last_refs)
    return out


#: the ROUGE variants :func:`score_corpus` reports
ROUGE_TYPES = ("rouge1", "rouge2", "rougeL", "rougeLsum")


def score_corpus(
    hyps: Sequence[str],
    refs: Sequence[Sequence[str]],
    metrics: Sequence[str],
    bleu_flavor: str = "sacrebleu",
    rouge_flavor: str = "rouge-score",
    stem: bool = False,
    tokenize: str | None = None,
    lowercase: bool = False,
    workers: int = 1,
) -> dict:
    """Corpus scores on a 0-100 scale: BLEU at corpus level, ROUGE as the mean F-measure, with
    the signature of the run (what ``pysynth score`` prints and ``POST /v1/score`` returns).

    ``metrics``: any of ``bleu``, ``meteor`` (:func:`pysynth.metrics.meteor.meteor`: the Meteor
    1.5 jar, needs Java and pycocoevalcap) and :data:`ROUGE_TYPES`; the other arguments are
    those of :func:`corpus_bleu` and :func:`rouge`.
    """
    if isinstance(metrics, str):
        raise TypeError(f"metrics: expected a list of metric names, got the str {metrics!r}; e.g. ['bleu', 'rougeL']")
    unknown = [m for m in metrics if m not in ("bleu", "meteor") and m not in ROUGE_TYPES]
    if unknown or not metrics:
        raise ValueError(f"metrics: unknown {unknown or 'empty list'}; choose from bleu, meteor, "
                         f"{', '.join(ROUGE_TYPES)}")
    out: dict = {}
    if "bleu" in metrics:
        b = corpus_bleu(hyps, list(refs), flavor=bleu_flavor, tokenize=tokenize, lowercase=lowercase, workers=workers)
        out["bleu"] = b.score if bleu_flavor == "sacrebleu" else 100.0 * b.score
        if bleu_flavor == "coco":
            out["bleu_n"] = [100.0 * x for x in b.bleu_n]
        out["bleu_signature"] = b.signature
    rtypes = [m for m in metrics if m in ROUGE_TYPES]
    if rtypes:
        r = rouge(hyps, list(refs), types=rtypes, flavor=rouge_flavor, stem=stem, workers=workers)
        for t, v in r.mean().items():
            out[t] = 100.0 * v["f"]
        out["rouge_signature"] = {"flavor": rouge_flavor, "stem": stem, "nrefs": len(refs)}
    if "meteor" in metrics:
        from pysynth.metrics.meteor import meteor

        m = meteor(hyps, list(refs), workers=workers)
        out["meteor"] = 100.0 * m.score
        out["meteor_signature"] = m.signature
    out["n_segments"] = len(hyps)
    from pysynth import signature

    out["signature"] = signature.signature(
        "pysynth.score", 1,
        {"metrics": list(metrics), "bleu_flavor": bleu_flavor, "rouge_flavor": rouge_flavor, "stem": stem,
         "tokenize": tokenize, "lowercase": lowercase},
        {"segments": len(hyps), "references": len(refs), "sha256": signature.fingerprint(hyps, *refs)})
    return out
