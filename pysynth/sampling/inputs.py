"""Inputs and outputs of the keyword samplers: collection statistics, paraphrase clusters,
candidates, exclusion masks and the term models for inspection."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, NamedTuple, Optional, Tuple

import numpy as np

from pysynth import _validate as _v
from pysynth._dispatch import backend

#: Question words never sampled (Sect. 3.1.2: "how", "what", "where", "who", "why",
#: "when", etc.): the WH words and their common contractions.  Override with
#: ``KeywordModel(exclude_words=...)``; ids of phrases containing them are not affected.
QUESTION_WORDS: Tuple[str, ...] = (
    "what", "when", "where", "which", "who", "whom", "whose", "why", "how",
    "what's", "whats", "when's", "where's", "who's", "why's", "how's", "whatever", "whoever",
)


def _is_corpus(obj) -> bool:
    from pysynth import text  # lazily: text does not import sampling

    return isinstance(obj, text.Corpus)


def _ragged(obj, name: str) -> Tuple[np.ndarray, np.ndarray]:
    """(int32 ids, int64 offsets) from TokenIds-like, an (ids, offsets) tuple, id lists or a
    :class:`pysynth.text.Corpus`."""
    if obj is None:
        raise ValueError(f"{name} must be given (flat ids + offsets, or a list of id lists)")
    if _is_corpus(obj):  # validated when it was built or loaded
        return obj.ids, obj.offsets
    if hasattr(obj, "values") and hasattr(obj, "offsets") and not isinstance(obj, (list, tuple, dict)):
        ids, off = obj.values, obj.offsets
    elif (isinstance(obj, tuple) and len(obj) == 2 and isinstance(obj[0], np.ndarray)
          and isinstance(obj[1], np.ndarray)):
        ids, off = obj
    else:
        rows = list(obj)
        if any(isinstance(r, str) for r in rows[:1000]) or any(isinstance(t, str) for r in rows[:100] for t in r):
            raise TypeError(f"{name}: must be token ids (lists of int, or flat ids + offsets), got text; "
                            "tokenize first (pysynth.text.Corpus.from_tokens) or use pysynth.k2q.keywords for texts")
        lens = np.fromiter((len(r) for r in rows), dtype=np.int64, count=len(rows))
        off = np.zeros(len(rows) + 1, dtype=np.int64)
        np.cumsum(lens, out=off[1:])
        ids = np.fromiter((t for r in rows for t in r), dtype=np.int64, count=int(off[-1]))
    ids = np.asarray(ids)
    off = np.asarray(off)
    if ids.ndim != 1 or (ids.size and ids.dtype.kind not in "iu"):
        raise ValueError(f"{name}: ids must be a 1-D integer array, got {ids.dtype} with shape {ids.shape}")
    if off.size and off.dtype.kind not in "iu":
        raise ValueError(f"{name}: offsets must be a 1-D integer array of length n + 1, got dtype {off.dtype}")
    off = _v.offsets(off, ids.size, f"{name} offsets")
    if ids.size and (ids.min() < 0 or ids.max() > np.iinfo(np.int32).max):
        raise ValueError(f"{name}: ids must be in [0, 2**31)")
    return np.ascontiguousarray(ids, dtype=np.int32), np.ascontiguousarray(off, dtype=np.int64)


@dataclass(frozen=True)
class CollectionStats:
    """Collection statistics of the question corpus Q (Eq. 2, 4, 5).

    Parameters
    ----------
    cf : int64 array (V)
        n(t), the number of occurrences of each id in Q.
    df : int64 array (V)
        df(t), the number of questions of Q that contain it.
    n_docs : int
        N, the number of questions of Q.
    """

    cf: np.ndarray
    df: np.ndarray
    n_docs: int

    def __post_init__(self):
        cf = np.asarray(self.cf)
        df = np.asarray(self.df)
        if cf.ndim != 1 or df.ndim != 1 or cf.shape != df.shape:
            raise ValueError(f"stats: cf and df must be 1-D arrays of the same length (one entry per "
                             f"vocabulary id); got shapes {cf.shape} and {df.shape}")
        if cf.size and (cf.dtype.kind not in "iu" or df.dtype.kind not in "iu"):
            raise ValueError("stats: cf and df must be integer arrays")
        n_docs = self.n_docs
        if isinstance(n_docs, bool) or not isinstance(n_docs, (int, np.integer)) or n_docs < 0:
            raise ValueError(f"stats: n_docs must be an integer >= 0, got {n_docs!r}")
        if cf.size and (cf.min() < 0 or df.min() < 0):
            raise ValueError("stats: cf and df must be non-negative")
        if df.size and df.max() > n_docs:
            raise ValueError(f"stats: df must be <= n_docs = {n_docs}, got max df = {int(df.max())}")
        object.__setattr__(self, "cf", np.ascontiguousarray(cf, dtype=np.int64))
        object.__setattr__(self, "df", np.ascontiguousarray(df, dtype=np.int64))
        object.__setattr__(self, "n_docs", int(n_docs))

    @property
    def vocab_size(self) -> int:
        return int(self.cf.shape[0])

    @classmethod
    def from_documents(cls, documents, vocab_size: int) -> "CollectionStats":
        """Count cf, df and N over documents (questions): flat ids + offsets, id lists or a
        :class:`pysynth.text.Corpus` (compiled: one pass over the tokens, ``collection_stats``
        of the backend; 0.02 s for 1M questions).

        A :class:`pysynth.text.Corpus` already holds them (:meth:`of`); :meth:`KeywordModel.generate`
        on a corpus uses those, so they are counted once per corpus, not once per call.
        """
        ids, off = _ragged(documents, "documents")
        vocab_size = _v.int_range(vocab_size, "vocab_size", 0)
        if ids.size and ids.max() >= vocab_size:
            raise ValueError(f"documents contain id {int(ids.max())} >= vocab_size = {vocab_size}")
        cf, df = backend("sampling").collection_stats(ids, off, vocab_size)
        return cls(cf, df, off.shape[0] - 1)

    @classmethod
    def of(cls, corpus) -> "CollectionStats":
        """The statistics a :class:`pysynth.text.Corpus` carries (counted once when it was built,
        saved and loaded with it): ``cf``, ``df`` and ``n_docs``."""
        if not _is_corpus(corpus):
            raise TypeError(f"corpus must be a pysynth.text.Corpus, got {type(corpus).__name__}")
        return cls(corpus.cf, corpus.df, corpus.n_docs)


@dataclass(frozen=True)
class Clusters:
    """Paraphrase clusters: a ragged cluster table and the row of each question.

    Row ``j`` of the table (``values[offsets[j]:offsets[j+1]]``) is a cluster document: all
    paraphrases of one cluster concatenated (Sect. 3.1.3).  ``index[i]`` is the row of
    question ``i``, or ``-1`` when it has no paraphrases (then ``C_q = q``; so is an empty
    row or one with only excluded terms).  Whether a row includes the question itself is
    the caller's choice; :meth:`from_groups` includes it (the paper's clusters do).
    """

    values: np.ndarray
    offsets: np.ndarray
    index: np.ndarray

    def __post_init__(self):
        ids, off = _ragged((np.asarray(self.values), np.asarray(self.offsets)), "clusters")
        index = np.asarray(self.index)
        if index.ndim != 1 or (index.size and index.dtype.kind not in "iu"):
            raise ValueError("clusters.index must be a 1-D integer array (one row per question)")
        n_rows = off.shape[0] - 1
        if index.size and (index.min() < -1 or index.max() >= n_rows):
            raise ValueError(f"clusters.index must be -1 or a row of the cluster table [0, {n_rows})")
        object.__setattr__(self, "values", ids)
        object.__setattr__(self, "offsets", off)
        object.__setattr__(self, "index", np.ascontiguousarray(index, dtype=np.int64))

    @classmethod
    def from_groups(cls, questions, groups) -> "Clusters":
        """One row per distinct group: the member questions concatenated in question order.

        Parameters
        ----------
        questions : flat ids + offsets or id lists
        groups : sequence (n) of hashable cluster ids (e.g. ComQA ``cluster_id``), or None
            entries for questions without a cluster.
        """
        ids, off = _ragged(questions, "questions")
        n = off.shape[0] - 1
        groups = list(groups)
        if len(groups) != n:
            raise ValueError(f"groups must have one entry per question ({n}), got {len(groups)}")
        # clusters numbered in order of first appearance (C-level passes: ~1 s less at 3.17M questions)
        firsts = dict.fromkeys(groups)
        firsts.pop(None, None)
        codes: Dict[object, int] = dict(zip(firsts, range(len(firsts))))
        index = np.fromiter(map({**codes, None: -1}.__getitem__, groups), dtype=np.int64, count=n)
        order = np.argsort(np.where(index < 0, len(codes), index), kind="stable")
        order = order[index[order] >= 0]
        lens = np.diff(off)
        row_len = np.bincount(index[order], weights=lens[order], minlength=len(codes)).astype(np.int64)
        c_off = np.zeros(len(codes) + 1, dtype=np.int64)
        np.cumsum(row_len, out=c_off[1:])
        return cls(take_rows(ids, off, order)[0], c_off, index)

    @classmethod
    def per_question(cls, documents) -> "Clusters":
        """Row ``i`` is the cluster document of question ``i`` (flat ids + offsets or lists)."""
        ids, off = _ragged(documents, "clusters")
        return cls(ids, off, np.arange(off.shape[0] - 1, dtype=np.int64))


def take_rows(ids: np.ndarray, off: np.ndarray, rows: np.ndarray):
    """Rows ``rows`` of a ragged array (flat ``ids`` + ``off``) as a new ``(ids, offsets)`` pair,
    in the order given (a row may repeat).

    Examples
    --------
    >>> take_rows(np.array([1, 2, 3, 4]), np.array([0, 2, 3, 4]), np.array([2, 0]))
    (array([4, 1, 2]), array([0, 1, 3]))
    """
    starts = off[rows]
    lens = off[rows + 1] - starts
    new_off = np.zeros(rows.shape[0] + 1, dtype=np.int64)
    np.cumsum(lens, out=new_off[1:])
    idx = np.repeat(starts - new_off[:-1], lens) + np.arange(new_off[-1], dtype=np.int64)
    return ids[idx], new_off


class Candidates(NamedTuple):
    """Candidate keyword queries, question-major: candidate ``c`` of question ``i`` is
    ``ids[offsets[i*m + c]:offsets[i*m + c + 1]]``."""

    ids: np.ndarray
    offsets: np.ndarray

    @property
    def lengths(self) -> np.ndarray:
        """Number of terms of every candidate (int64, n * m)."""
        return np.diff(self.offsets)

    def as_lists(self, m: int) -> List[List[List[int]]]:
        """``[question][candidate] -> list of ids``."""
        rows = [self.ids[a:b].tolist() for a, b in zip(self.offsets[:-1], self.offsets[1:])]
        return [rows[i:i + m] for i in range(0, len(rows), m)]


def exclusion_mask(vocab, vocab_size: Optional[int] = None, words: Iterable[str] = QUESTION_WORDS,
                   extra_ids: Optional[Iterable[int]] = None) -> np.ndarray:
    """uint8 mask over the vocabulary: 1 for ``words`` found in ``vocab`` and ``extra_ids``.

    Parameters
    ----------
    vocab : mapping str -> id, sequence of str (id = position), or a :class:`pysynth.text.Corpus`
    vocab_size : int, optional
        Length of the mask (default: ``len(vocab)``).
    words : iterable of str
        Words never to sample (default :data:`QUESTION_WORDS`); matched as given and
        lower-cased.
    extra_ids : iterable of int, optional
        More ids never to sample.
    """
    if _is_corpus(vocab):  # its cached term index: no dict of the whole vocabulary per call
        lookup, size = vocab.get_id, vocab.n_terms
    elif isinstance(vocab, Mapping):
        lookup, size = (lambda w: vocab.get(w, -1)), max(vocab.values(), default=-1) + 1
    else:
        seq = list(vocab)
        index = {w: i for i, w in enumerate(seq)}
        lookup, size = (lambda w: index.get(w, -1)), len(seq)
    size = size if vocab_size is None else _v.int_range(vocab_size, "vocab_size", 0, 2**31 - 1)
    mask = np.zeros(size, dtype=np.uint8)
    for w in words:
        for key in {w, w.lower()}:
            i = lookup(key)
            if 0 <= i < size:
                mask[i] = 1
    if extra_ids is not None:
        extra = np.asarray(list(extra_ids), dtype=np.int64)
        if extra.size and (extra.min() < 0 or extra.max() >= size):
            raise ValueError(f"extra_ids must be ids in [0, {size})")
        mask[extra] = 1
    return mask


@dataclass
class TermDistributions:
    """The term models of Eq. 1-6 for inspection (computed with NumPy, independently of
    the samplers).

    ``question`` and ``cluster`` are CSR matrices ``(indptr, indices, data)`` with one row
    per question: P(t|q) and P(t|C_q) (Eq. 3, 4 or 5; terms ascending).  ``collection`` is
    P(t) (Eq. 2) over the vocabulary, ``weights`` the mixture weights (question, cluster,
    collection).
    """

    question: Tuple[np.ndarray, np.ndarray, np.ndarray]
    cluster: Tuple[np.ndarray, np.ndarray, np.ndarray]
    collection: np.ndarray
    weights: Tuple[float, float, float]

    def dense(self, i: int) -> np.ndarray:
        """P(t|theta_q) of question ``i`` over the whole vocabulary (Eq. 1 / Eq. 6)."""
        wq, wc, wb = self.weights
        out = wb * self.collection
        for (indptr, indices, data), w in ((self.question, wq), (self.cluster, wc)):
            a, b = indptr[i], indptr[i + 1]
            np.add.at(out, indices[a:b], w * data[a:b])
        return out
