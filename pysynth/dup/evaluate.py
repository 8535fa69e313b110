"""Duplicate-question evaluation (Rücklé et al. 2019, Sect. 4): each query ranks its own
candidates (positives = its duplicates, negatives = other questions); P@1, P@5, MAP, MRR
(Lei et al. 2016's definitions) and AUC(0.05) (Shah et al. 2018's released ``AUCMeter``, the flavour
Rücklé et al. report: all (query, candidate) pairs pooled, the ROC curve up to a false-positive
rate of 0.05 without interpolation, divided by 0.05; ``truncation="qra_code"``), all from
:mod:`pysynth.ranking`.

Scorers: ``"bm25"`` (:mod:`pysynth.retrieval`'s BM25, k1 = 1.5, b = 0.75, with the statistics of
all the candidate texts of the file), ``"sdm"`` (the same index's sequential dependence model),
``"minilm"`` (cosine of the offline all-MiniLM-L6-v2 embeddings: pretrained on Stack Exchange and
WikiAnswers duplicate pairs among others, so it is not an unsupervised reference), a trained
detector (a shipped name such as ``dup-minilm-wstb`` or a ``pysynth dup train`` folder, on
onnxruntime: :class:`pysynth.dup.search.Encoder`), or a local Hugging Face encoder directory.
"""
from __future__ import annotations

from typing import Any, Dict, Iterable, List, Mapping, Sequence, Tuple

import numpy as np

__all__ = ["check_rows", "score_candidates", "hybrid_scores", "metrics", "evaluate", "search_pool", "SPARSE"]

SPARSE = ("bm25", "sdm")


def check_rows(rows: Iterable[Mapping[str, Any]], what: str = "data") -> Tuple[List[dict], Dict[str, int]]:
    """Validate eval rows ``{"query": str, "positives": [str], "negatives": [str]}``.

    Returns ``(usable rows, counts)``; a row without a positive or without any candidate is
    counted (``no_positive``, ``no_candidate``) and left out of the means, never silently.
    Raises ValueError naming the row for a missing field or a non-string text.
    """
    out, counts = [], {"rows": 0, "no_positive": 0, "no_candidate": 0}
    for i, r in enumerate(rows):
        counts["rows"] += 1
        if not isinstance(r, Mapping):
            raise ValueError(f"{what} row {i + 1}: expected an object, got {type(r).__name__}")
        q = r.get("query")
        if not isinstance(q, str) or not q.strip():
            raise ValueError(f"{what} row {i + 1}: 'query' must be a non-empty string")
        lists = []
        for key in ("positives", "negatives"):
            v = r.get(key, [])
            if not isinstance(v, list) or not all(isinstance(t, str) for t in v):
                raise ValueError(f"{what} row {i + 1}: {key!r} must be a list of strings")
            lists.append(v)
        pos, neg = lists
        if not pos and not neg:
            counts["no_candidate"] += 1
            continue
        if not pos:
            counts["no_positive"] += 1
            continue
        out.append({"query": q, "positives": pos, "negatives": neg})
    return out, counts


def search_pool(pool: Sequence[str], queries: Sequence[str], model: str = "bm25", k: int = 0, workers: int = 1):
    """:mod:`pysynth.retrieval` over the texts ``pool`` for ``queries`` (one vocabulary for both):
    the :class:`~pysynth.retrieval.Hits` of the top ``k`` (0: all) pool texts per query, or None
    when the pool has no token."""
    from pysynth import text
    from pysynth.retrieval import Index

    corpus = text.build_corpus(list(pool) + list(queries), workers=workers)
    ids, off = np.asarray(corpus.ids), np.asarray(corpus.offsets)
    n = len(pool)
    if off[n] == 0:
        return None
    index = Index.build(ids[: off[n]], off[: n + 1], vocab_size=len(corpus.vocab), workers=workers)
    return index.search(ids[off[n]:], off[n:] - off[n], model=model, k=k or n, workers=workers, dtype=np.float64)


def _sparse_scores(rows: Sequence[dict], model: str, workers: int) -> List[np.ndarray]:
    uniq = list(dict.fromkeys(c for r in rows for c in r["negatives"] + r["positives"]))
    pos = {t: i for i, t in enumerate(uniq)}
    hits = search_pool(uniq, [r["query"] for r in rows], model, workers=workers)
    if hits is None:  # no candidate has a token: every score ties
        return [np.zeros(len(r["negatives"]) + len(r["positives"])) for r in rows]
    out = []
    for j, r in enumerate(rows):
        got = {int(d): float(s) for d, s in zip(hits.docs[j][: hits.counts[j]], hits.scores[j][: hits.counts[j]])}
        # a candidate that shares no term with the query is not retrieved: it scores below every hit
        floor = min(got.values(), default=0.0) - 1.0
        out.append(np.array([got.get(pos[c], floor) for c in r["negatives"] + r["positives"]], dtype=np.float64))
    return out


def _dense_scores(rows: Sequence[dict], model: Any, batch_size: int) -> List[np.ndarray]:
    from pysynth.dup.search import embedder
    from pysynth.models.embed import encode_texts

    cands = list(dict.fromkeys(c for r in rows for c in r["negatives"] + r["positives"]))
    pos = {t: i for i, t in enumerate(cands)}
    m = embedder(model)
    ce = encode_texts(cands, m, batch_size=batch_size).astype(np.float64)
    qe = encode_texts([r["query"] for r in rows], m, batch_size=batch_size).astype(np.float64)
    ce /= np.maximum(np.linalg.norm(ce, axis=1, keepdims=True), 1e-12)
    qe /= np.maximum(np.linalg.norm(qe, axis=1, keepdims=True), 1e-12)
    return [ce[[pos[c] for c in r["negatives"] + r["positives"]]] @ qe[j] for j, r in enumerate(rows)]


def score_candidates(rows: Sequence[dict], model: Any = "bm25", workers: int = 1,
                     batch_size: int = 64) -> List[np.ndarray]:
    """Per row, the scores of ``negatives + positives`` (in that order) under ``model``."""
    if isinstance(model, str) and model in SPARSE:
        return _sparse_scores(rows, model, workers)
    return _dense_scores(rows, model, batch_size)


def hybrid_scores(rows: Sequence[dict], model: Any, alpha: float = 0.5, workers: int = 1,
                  batch_size: int = 64) -> List[np.ndarray]:
    """Per row, ``alpha * dense + (1 - alpha) * bm25`` with each score min-max scaled over the
    row's candidates: the fusion of ``pysynth dup search --hybrid``
    (:func:`pysynth.dup.search._scaled`)."""
    from pysynth.dup.search import _scaled

    if not 0.0 <= float(alpha) <= 1.0:
        raise ValueError(f"alpha: must be in [0, 1], got {alpha!r}")
    dense = _dense_scores(rows, model, batch_size)
    sparse = _sparse_scores(rows, "bm25", workers)
    return [alpha * _scaled(d) + (1 - alpha) * _scaled(s) for d, s in zip(dense, sparse)]


def evaluate(rows: Iterable[Mapping[str, Any]], model: Any = "bm25", workers: int = 1,
             batch_size: int = 64, hybrid: bool = False, alpha: float = 0.5) -> Dict[str, Any]:
    """P@1, P@5, MAP, MRR and AUC(0.05) (0-100) of ``model`` on eval ``rows`` (see the module doc).
    ``hybrid``: a dense ``model`` fused with BM25 (:func:`hybrid_scores`, weight ``alpha``).

    Ties between equal scores are broken by the candidate's position (the rule of
    :mod:`pysynth.ranking`), and the negatives come first: a tie never counts for the model. Returns the metrics and the row counts (rows without a
    positive are counted and left out, as in Lei et al.'s evaluation).
    """
    usable, counts = check_rows(rows)
    if not usable:
        raise ValueError("data: no row has both a query and a positive; nothing to evaluate")
    if hybrid and isinstance(model, str) and model in SPARSE:
        raise ValueError(f"model: hybrid fuses a dense encoder with BM25; {model!r} is sparse")
    scores = (hybrid_scores(usable, model, alpha, workers, batch_size) if hybrid
              else score_candidates(usable, model, workers, batch_size))
    name = model if isinstance(model, str) else str(model)
    return {"model": f"{name} + bm25 (hybrid, alpha {alpha})" if hybrid else name, "queries": len(usable), **counts,
            **metrics(usable, scores)}


def metrics(rows: Sequence[dict], scores: Sequence[np.ndarray]) -> Dict[str, float]:
    """P@1, P@5, MAP, MRR, AUC(0.05) (0-100, 2 decimals) of per-row ``scores`` of
    ``negatives + positives`` (:func:`score_candidates`' order) on usable ``rows``."""
    from pysynth import ranking as R

    labels = [[0] * len(r["negatives"]) + [1] * len(r["positives"]) for r in rows]
    s = [np.asarray(x).tolist() for x in scores]
    out = {"P@1": 100 * R.precision_at_k(s, labels, k=1), "P@5": 100 * R.precision_at_k(s, labels, k=5),
           "MAP": 100 * R.mean_average_precision(s, labels), "MRR": 100 * R.mean_reciprocal_rank(s, labels),
           "AUC(0.05)": 100 * R.auc_at(s, labels, max_fpr=0.05, truncation="qra_code")}
    return {k: round(v, 2) for k, v in out.items()}
