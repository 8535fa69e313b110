"""The keyword query generation model (:class:`KeywordModel`, Ding & Balog 2018, Sect. 3.1)
and :func:`generate`."""
from __future__ import annotations

import math
from typing import Iterable, Mapping, Optional, Tuple

import numpy as np

from pysynth import _validate as _v
from pysynth._dispatch import backend
from pysynth.sampling.inputs import (
    QUESTION_WORDS,
    Candidates,
    Clusters,
    CollectionStats,
    TermDistributions,
    _is_corpus,
    _ragged,
    exclusion_mask,
)
from pysynth.sampling.lengths import default_length_dist

MODELS = ("baseline", "paraphrase")
STRATEGIES = ("popular", "discriminative", "combination")
_WEIGHT_SNAP = 1e-12  # mixture weights below this are 0 (1 - 0.7 - 0.3 = 5.6e-17)


def _unit(name: str, x) -> float:
    try:
        v = float(x)
    except (TypeError, ValueError):
        raise ValueError(f"{name} must be a number in [0, 1], got {x!r}") from None
    if not (math.isfinite(v) and 0.0 <= v <= 1.0):
        raise ValueError(f"{name} must be in [0, 1], got {v}")
    return v


def _vocab_size(q_ids, exclude, vocab) -> int:
    """V when no statistics say it: the mask's length, the vocabulary's, or max id + 1."""
    if exclude is not None:
        return len(exclude)
    if _is_corpus(vocab):
        return vocab.n_terms
    if isinstance(vocab, Mapping):
        return max(vocab.values(), default=-1) + 1
    if vocab is not None:
        return len(vocab)
    return int(q_ids.max()) + 1 if q_ids.size else 0


def _check_length_dist(p) -> np.ndarray:
    p = np.asarray(p, dtype=np.float64)
    if p.ndim != 1 or p.shape[0] < 2:
        raise ValueError("length_dist must be a 1-D array P(s) for s = 0 .. S (length >= 2)")
    if not np.all(np.isfinite(p)) or np.any(p < 0):
        raise ValueError("length_dist must be finite and non-negative")
    if p[0] != 0:
        raise ValueError(f"length_dist[0] = P(s = 0) must be 0 (a query has at least one term), got {p[0]}")
    total = p.sum()
    if not total > 0:
        raise ValueError("length_dist has no mass on any s >= 1: impossible length range")
    return np.ascontiguousarray(p / total)


class KeywordModel:
    """A keyword query generation model (Ding & Balog 2018, Sect. 3.1).

    Parameters
    ----------
    model : {"baseline", "paraphrase"}
        Eq. 1 (question + collection) or Eq. 6 (question + paraphrase cluster + collection).
    strategy : {"popular", "discriminative", "combination"}
        The document model P(t|q) (and P(t|C_q)): Eq. 3, 4 or 5.  The paper's best is
        ``combination`` (Sect. 6.4.2).
    lam : float
        lambda of Eq. 1, the collection weight (baseline).  The paper tunes it on
        [0.1, 0.9] and finds quality decreasing with lambda (Sect. 6.4.3); default 0.1.
    alpha, beta : float
        Eq. 6 weights of P(t|q) and P(t|C_q) (paraphrase); ``alpha + beta <= 1``, the
        collection gets ``1 - alpha - beta``.  The paper tunes alpha in [0.1, 0.9], beta in
        [0.1, 1 - alpha] and finds quality increasing with both; defaults 0.5 and 0.4.
    length_dist : array-like, optional
        P(s) for s = 0 .. S (``length_dist[0] == 0``); default :func:`default_length_dist`
        (the seed pairs T0 on [3, 7]).  See :func:`estimate_length_dist`,
        :func:`poisson_length_dist`.
    exclude_words : iterable of str
        Words never sampled, mapped to ids through ``vocab`` in :meth:`generate`
        (default :data:`QUESTION_WORDS`).
    max_rejections : int
        Rejected attempts of a draw before it renormalizes explicitly (>= 0; any value gives
        the same distribution, but different candidates).
    """

    def __init__(self, model: str = "paraphrase", strategy: str = "combination", lam: float = 0.1,
                 alpha: float = 0.5, beta: float = 0.4, length_dist=None,
                 exclude_words: Iterable[str] = QUESTION_WORDS, max_rejections: int = 8):
        self.model = _v.choice(model, "model", MODELS)
        self.strategy = _v.choice(strategy, "strategy", STRATEGIES)
        self.lam = _unit("lam", lam)
        self.alpha = _unit("alpha", alpha)
        self.beta = _unit("beta", beta)
        if model == "paraphrase" and self.alpha + self.beta > 1.0 + _WEIGHT_SNAP:
            raise ValueError(f"alpha + beta must be <= 1 (Eq. 6), got {self.alpha} + {self.beta} = "
                             f"{self.alpha + self.beta}")
        self.length_dist = _check_length_dist(default_length_dist() if length_dist is None else length_dist)
        self.exclude_words = tuple(exclude_words)
        if isinstance(max_rejections, bool) or not isinstance(max_rejections, (int, np.integer)) \
                or max_rejections < 0:
            raise ValueError(f"max_rejections must be an integer >= 0, got {max_rejections!r}")
        self.max_rejections = int(max_rejections)

    def __repr__(self) -> str:
        p = f"lam={self.lam}" if self.model == "baseline" else f"alpha={self.alpha}, beta={self.beta}"
        return f"KeywordModel({self.model!r}, {self.strategy!r}, {p})"

    @property
    def weights(self) -> Tuple[float, float, float]:
        """Mixture weights (question, cluster, collection): Eq. 1 or Eq. 6."""
        if self.model == "baseline":
            w = (1.0 - self.lam, 0.0, self.lam)
        else:
            w = (self.alpha, self.beta, 1.0 - self.alpha - self.beta)
        return tuple(0.0 if abs(x) < _WEIGHT_SNAP else x for x in w)  # type: ignore[return-value]

    # -- inputs --------------------------------------------------------------------
    def _mask(self, exclude, vocab, vocab_size: int) -> np.ndarray:
        if exclude is None and vocab is None:
            raise ValueError("pass vocab= (to exclude the question words) or exclude= (a uint8 mask "
                             "over the vocabulary; np.zeros(V, np.uint8) excludes nothing)")
        mask = np.zeros(vocab_size, dtype=np.uint8)
        if exclude is not None:
            ex = np.asarray(exclude)
            if ex.ndim != 1 or ex.shape[0] != vocab_size:
                raise ValueError(f"exclude must be a 1-D mask with one entry per vocabulary id "
                                 f"({vocab_size}), got shape {ex.shape}")
            mask |= (ex != 0).astype(np.uint8)
        if vocab is not None:
            mask |= exclusion_mask(vocab, vocab_size, self.exclude_words)
        return mask

    def _inputs(self, questions, clusters, stats, exclude, vocab):
        q_ids, q_off = _ragged(questions, "questions")
        n = q_off.shape[0] - 1
        if _is_corpus(questions):  # statistics and vocabulary travel with the corpus
            if stats is None:
                stats = CollectionStats.of(questions)
            if exclude is None and vocab is None:
                vocab = questions
        if stats is None:  # counted over the questions on every call: pass a text.Corpus to count once
            stats = CollectionStats.from_documents((q_ids, q_off), _vocab_size(q_ids, exclude, vocab))
        if not isinstance(stats, CollectionStats):
            if isinstance(stats, tuple) and len(stats) == 3:
                stats = CollectionStats(*stats)
            else:
                raise ValueError("stats must be a CollectionStats (cf, df, n_docs)")
        V = stats.vocab_size
        if q_ids.size and q_ids.max() >= V:
            raise ValueError(f"questions contain id {int(q_ids.max())} >= the vocabulary size {V} of stats")
        mask = self._mask(exclude, vocab, V)
        if clusters is None:
            c_ids, c_off = np.zeros(0, np.int32), np.zeros(1, np.int64)
            c_idx = np.full(n, -1, np.int64)
        else:
            if not isinstance(clusters, Clusters):
                raise ValueError("clusters must be a Clusters (use Clusters.from_groups or "
                                 "Clusters.per_question) or None")
            c_ids, c_off, c_idx = clusters.values, clusters.offsets, clusters.index
            if c_idx.shape[0] != n:
                raise ValueError(f"clusters.index must have one entry per question ({n}), "
                                 f"got {c_idx.shape[0]}")
            if c_ids.size and c_ids.max() >= V:
                raise ValueError(f"clusters contain id {int(c_ids.max())} >= the vocabulary size {V} of stats")
        # (empty questions, questions with only excluded terms, and terms with cf = 0 / df = 0
        # where Eq. 4 / Eq. 5 need them are found by the backend, which reads every token
        # anyway: the same checks here cost 0.05 s of a 1.7 s call on 1M questions)
        wq, wc, wb = self.weights
        if wb > 0 and not np.any((stats.cf > 0) & (mask == 0)):
            raise ValueError(f"stats: the collection model (Eq. 2) is empty (cf is 0 for every "
                             f"non-excluded id), but its weight is {wb}")
        return q_ids, q_off, c_ids, c_off, c_idx, stats, mask

    @staticmethod
    def _samplable_counts(q_ids, q_off, mask) -> np.ndarray:
        ok = (mask[q_ids] == 0).astype(np.int64)
        csum = np.zeros(q_ids.shape[0] + 1, dtype=np.int64)
        np.cumsum(ok, out=csum[1:])
        return csum[q_off[1:]] - csum[q_off[:-1]]

    def samplable(self, questions, exclude=None, vocab=None, vocab_size: Optional[int] = None) -> np.ndarray:
        """Boolean mask of the questions with at least one term that may be sampled."""
        q_ids, q_off = _ragged(questions, "questions")
        if _is_corpus(questions) and exclude is None and vocab is None:
            vocab = questions
        if vocab_size is None:
            vocab_size = _vocab_size(q_ids, exclude, vocab)
        mask = self._mask(exclude, vocab, vocab_size)
        return self._samplable_counts(q_ids, q_off, mask) > 0

    # -- sampling --------------------------------------------------------------------
    def generate(self, questions, clusters=None, stats=None, m: int = 20, seed: int = 0,
                 workers: int = 1, *, exclude=None, vocab=None, first_index: int = 0) -> Candidates:
        """Draw ``m`` keyword query candidates for every question (Alg. 1).

        Parameters
        ----------
        questions : pysynth.text.Corpus, flat ids + offsets (``.values``/``.offsets``,
            ``(ids, offsets)``) or id lists
            A :class:`pysynth.text.Corpus` brings its statistics (counted once, when it was
            built; saved and loaded with it) and its vocabulary (for the question words).
        clusters : Clusters or None
            Paraphrase clusters (needed for ``model="paraphrase"``; ``None``: ``C_q = q``).
        stats : CollectionStats or None
            cf, df and N over the question corpus Q (default: the corpus's, or for ids counted
            over ``questions`` on every call, compiled: 0.02 s per 1M questions).
        m : int
            Candidates per question (the paper: 20).
        seed : int
            In [0, 2**64).
        workers : int
            C++ threads (``-1`` = all cores); the result does not depend on it.
        exclude : array-like of uint8, optional
            Mask over the vocabulary: non-zero ids are never sampled.
        vocab : mapping str -> id, sequence of str or pysynth.text.Corpus, optional
            Maps :attr:`exclude_words` to ids (added to ``exclude``).  One of ``exclude`` and
            ``vocab`` is required, unless ``questions`` is a corpus (then its vocabulary).
        first_index : int or int array
            Global index of ``questions[0]``: generating a corpus chunk by chunk with
            ``first_index`` = the chunk's start gives the same rows as one call.  Or one global
            index per question: any questions, in any order, get the rows one call gives them.

        Returns
        -------
        Candidates
            ``(ids, offsets)``, int32 / int64; ``n * m`` candidates, question-major.
        """
        # ValueError for every bad argument, as the compiled core raises
        m = _v.int_range(m, "m", 1, wrong_type=ValueError)
        if not isinstance(first_index, (np.ndarray, list, tuple)):  # an array is checked by the backend
            first_index = _v.int_range(first_index, "first_index", 0, wrong_type=ValueError)
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2 ** 64:
            raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
        workers = _v.workers(workers, wrong_type=ValueError)
        q_ids, q_off, c_ids, c_off, c_idx, stats, mask = self._inputs(questions, clusters, stats,
                                                                       exclude, vocab)
        wq, wc, wb = self.weights
        ids, offsets = backend("sampling").generate(
            q_ids, q_off, c_ids, c_off, c_idx, stats.cf, stats.df, stats.n_docs, mask,
            self.length_dist, self.strategy, wq, wc, wb, int(m), int(seed), first_index,
            self.max_rejections, int(workers))
        return Candidates(ids, offsets)

    def term_distributions(self, questions, clusters=None, stats=None, *, exclude=None,
                           vocab=None) -> TermDistributions:
        """P(t|q), P(t|C_q) and P(t) of every question (Eq. 2-6), vectorized with NumPy, for
        inspection and tests.  Same inputs as :meth:`generate`."""
        q_ids, q_off, c_ids, c_off, c_idx, stats, mask = self._inputs(questions, clusters, stats,
                                                                       exclude, vocab)
        lens = np.diff(q_off)
        if lens.size and lens.min() == 0:
            raise ValueError(f"question {int(np.argmin(lens))} is empty")
        bad = np.flatnonzero(self._samplable_counts(q_ids, q_off, mask) == 0)
        if bad.size:
            raise ValueError(f"question {int(bad[0])} has only excluded terms (question words or terms in "
                             "exclude); drop it (KeywordModel.samplable marks the others) or change the "
                             "exclusion mask")
        V = stats.vocab_size
        cfb = np.where(mask == 0, stats.cf, 0).astype(np.float64)
        collection = cfb / cfb.sum() if cfb.sum() > 0 else cfb
        q_csr = self._doc_model(q_ids, q_off, mask, stats, V)
        n = q_off.shape[0] - 1
        if c_ids.size:
            c_csr = self._doc_model(c_ids, c_off, mask, stats, V)
        else:
            c_csr = (np.zeros(c_off.shape[0], np.int64), np.zeros(0, np.int32), np.zeros(0))
        # per question: the cluster row, or q itself when there is none / it is empty
        c_len = np.diff(c_csr[0])
        use_c = (c_idx >= 0) & (c_len[np.maximum(c_idx, 0)] > 0 if c_len.size else False)
        parts_i, parts_d, lens = [], [], np.zeros(n, np.int64)
        for i in range(n):
            src, r = (c_csr, c_idx[i]) if use_c[i] else (q_csr, i)
            a, b = src[0][r], src[0][r + 1]
            parts_i.append(src[1][a:b])
            parts_d.append(src[2][a:b])
            lens[i] = b - a
        indptr = np.zeros(n + 1, np.int64)
        np.cumsum(lens, out=indptr[1:])
        cluster = (indptr, np.concatenate(parts_i) if n else np.zeros(0, np.int32),
                   np.concatenate(parts_d) if n else np.zeros(0))
        return TermDistributions(q_csr, cluster, collection, self.weights)

    def _doc_model(self, ids, off, mask, stats, V):
        n = off.shape[0] - 1
        row = np.repeat(np.arange(n, dtype=np.int64), np.diff(off))
        keep = mask[ids] == 0
        key, counts = np.unique(row[keep] * V + ids[keep].astype(np.int64), return_counts=True)
        r, t = key // V, (key % V).astype(np.int32)
        cnt = counts.astype(np.float64)
        if self.strategy == "popular":
            w = cnt
        elif self.strategy == "discriminative":
            w = 1.0 / stats.cf[t]
        else:
            with np.errstate(divide="ignore"):
                w = cnt * np.log(stats.n_docs / stats.df[t])
            zero_rows = np.bincount(r, weights=w, minlength=n) == 0
            w = np.where(zero_rows[r], cnt, w)
        tot = np.bincount(r, weights=w, minlength=n)
        indptr = np.zeros(n + 1, np.int64)
        np.cumsum(np.bincount(r, minlength=n), out=indptr[1:])
        with np.errstate(invalid="ignore", divide="ignore"):
            data = w / tot[r]
        return indptr, t, data


def generate(questions, clusters=None, stats=None, m: int = 20, seed: int = 0, workers: int = 1, *,
             model: Optional[KeywordModel] = None, exclude=None, vocab=None,
             first_index: int = 0) -> Candidates:
    """:meth:`KeywordModel.generate` with ``model`` (default ``KeywordModel()``: paraphrase
    model, combination strategy, alpha = 0.5, beta = 0.4, T0 lengths)."""
    model = model if model is not None else KeywordModel()
    return model.generate(questions, clusters, stats, m, seed, workers, exclude=exclude, vocab=vocab,
                          first_index=first_index)
