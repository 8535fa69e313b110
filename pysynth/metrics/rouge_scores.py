"""ROUGE (Lin 2004) in the rouge-score and pltrdy flavors, and AvgRougeL/MaxRougeL (Ding &
Balog 2018, Eq. 17-18)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Sequence, Tuple

import numpy as np

import pysynth.metrics._formulas as _formulas
from pysynth import _validate as _v
from pysynth._dispatch import backend
from pysynth.metrics.inputs import _check_hyps, _check_workers, _flatten, _ref_streams, _stats

ROUGE_FLAVORS = ("rouge-score", "pltrdy")


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
    >>> round(float(s["rougeL"].fmeasure[0]), 4)
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
