"""Exact search and float64 re-scoring of a dense index's candidates (the ``"flat"`` kind's guarantee).

faiss proposes candidates with float32 scores; these methods re-score them in float64 from the
stored float32 vectors, with one expression everywhere (a sum over the contiguous last axis),
and order them by score descending, then doc id ascending. For ``"flat"`` indexes a rounding
error bound (Higham) decides when faiss's candidates provably hold the exact top ``k``;
otherwise more candidates are asked for, up to scoring the whole corpus.
"""
from __future__ import annotations

import math
from typing import Any, Dict, Optional, Tuple

import numpy as np

from pysynth.retrieval.vectors import gamma, top_k_order

__all__ = ["ExactSearch"]

# float64 elements per re-scoring block (32 MiB): bounds the gathered candidate vectors
_BLOCK = 1 << 22


class ExactSearch:
    """Re-scoring and exact search over ``self._index`` (a faiss index of float32 vectors), for
    :class:`pysynth.retrieval.dense.DenseIndex`, which provides ``_config`` (``n_docs``, ``dim``,
    ``metric``), ``_searcher(kk)`` (the faiss index that proposes ``kk`` candidates) and
    ``_max_norm`` (a cache, None until computed)."""

    _index: Any
    _config: Dict[str, Any]
    _max_norm: Optional[float]

    def _n_candidates(self, k: int) -> int:
        return min(self.n_docs, 2 * k + 16)

    def _score_block(self, q64: np.ndarray, v: np.ndarray) -> np.ndarray:
        """Scores [B, c] of queries [B, d] against vectors [B or 1, c, d], all float64.

        The same expression everywhere (a sum over the contiguous last axis), so a document's
        score never depends on which path or position computed it.
        """
        if self.metric == "ip":
            return (v * q64[:, None, :]).sum(-1)
        return -((v - q64[:, None, :]) ** 2).sum(-1)

    def _rescore(self, q: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """float64 scores [Q, c] of candidates ``ids`` [Q, c] (-inf where ``ids`` is -1)."""
        nq, c = ids.shape
        d = self.dim
        out = np.full((nq, c), -np.inf)
        rows = max(1, _BLOCK // max(1, c * d))
        for s in range(0, nq, rows):
            blk = ids[s:s + rows]
            flat = blk.reshape(-1)
            ok = flat >= 0
            v = np.zeros((flat.size, d), np.float64)
            if ok.any():
                v[ok] = self._index.reconstruct_batch(np.ascontiguousarray(flat[ok], dtype=np.int64))
            sc = self._score_block(q[s:s + rows].astype(np.float64), v.reshape(blk.shape[0], c, d))
            out[s:s + rows] = np.where(blk >= 0, sc, -np.inf)
        return out

    def _vectors(self, faiss) -> np.ndarray:
        """The flat index's float32 [n, d] storage, as a view (no copy)."""
        return faiss.rev_swig_ptr(self._index.get_xb(), self.n_docs * self.dim).reshape(self.n_docs, self.dim)

    def _brute_force(self, faiss, q: np.ndarray, k: int) -> Tuple[np.ndarray, np.ndarray]:
        """Exact top ``k`` of every query over the whole corpus, in blocks of documents."""
        x = self._vectors(faiss)
        nq = q.shape[0]
        q64 = q.astype(np.float64)
        best_ids = np.full((nq, 0), -1, np.int64)
        best = np.full((nq, 0), -np.inf)
        step = max(1, _BLOCK // max(1, nq * self.dim))
        for s in range(0, self.n_docs, step):
            v = x[s:s + step].astype(np.float64)[None]
            sc = self._score_block(q64, v)
            ids = np.broadcast_to(np.arange(s, s + v.shape[1], dtype=np.int64), sc.shape)
            best_ids, best = top_k_order(np.concatenate([best_ids, ids], 1), np.concatenate([best, sc], 1), k)
        return best_ids, best

    def _max_norm_of(self, faiss) -> float:
        if self._max_norm is None:
            x = self._vectors(faiss)
            m = 0.0
            for s in range(0, self.n_docs, 1 << 16):
                c = x[s:s + (1 << 16)].astype(np.float64)
                m = max(m, float((c * c).sum(-1).max()))
            self._max_norm = math.sqrt(m)
        return self._max_norm

    def _search_flat(self, faiss, q: np.ndarray, k: int) -> Tuple[np.ndarray, np.ndarray]:
        """Exact search: faiss candidates, float64 re-scoring, and a rounding-error check.

        faiss's float32 score of a document is within ``eps`` of its float64 score (Higham's
        bound for a d-term dot product, doubled for slack; the l2 bound covers faiss's
        ``|q|^2 + |x|^2 - 2 <q, x>`` form).  Every document faiss left out scores at most
        ``f_last + eps``, so when the k-th re-scored candidate beats that, nothing left out can
        enter the top k, ties included; otherwise the query asks for 4x more candidates.
        """
        n = self.n_docs
        nq = q.shape[0]
        ids_out = np.full((nq, min(k, n)), -1, np.int64)
        sc_out = np.full((nq, min(k, n)), -np.inf)
        kk = self._n_candidates(k)
        pending = np.arange(nq)
        if kk < n:
            qn = np.sqrt((q.astype(np.float64) ** 2).sum(-1))
            m = self._max_norm_of(faiss)
            bound = qn * m if self.metric == "ip" else (qn + m) ** 2
            eps = 2.0 * gamma(self.dim + 3) * bound
        while pending.size and kk < n:
            qp = q[pending]
            dist, cand = self._searcher(kk).search(qp, kk)
            ids, sc = top_k_order(cand, self._rescore(qp, cand), k)
            last = dist[:, -1].astype(np.float64)
            f_last = last if self.metric == "ip" else -last
            ok = sc[:, -1] > f_last + eps[pending]
            ids_out[pending[ok]] = ids[ok]
            sc_out[pending[ok]] = sc[ok]
            pending = pending[~ok]
            kk = min(n, 4 * kk)
        if pending.size:
            ids, sc = self._brute_force(faiss, q[pending], k)
            ids_out[pending] = ids
            sc_out[pending] = sc
        return ids_out, sc_out
