"""Keyword query generation models (KQGM): synthetic keyword queries for questions.

Ding & Balog (2018), "Generating Synthetic Data for Neural Keyword-to-Question Models"
(ICTIR'18, extended version), Sect. 3.1 and Algorithm 1, building on the known-item query
simulation of Azzopardi, de Rijke & Balog (2007), "Building Simulated Queries for
Known-Item Topics" (SIGIR'07).  For every question ``q`` of a corpus, ``m`` candidate
keyword queries are drawn (the paper uses ``m = 20``, Sect. 6.2, and keeps the best one
with its keyword query filter):

* a length ``s`` from P(s) restricted to ``s < |q|`` (Alg. 1 line 5; P(s) estimated from
  the seed pairs T0 on ``s`` in [3, 7], Sect. 6.1, or a Poisson as in Azzopardi et al.);
* ``s`` *distinct* terms from the term model P(t|theta_q) (Alg. 1 lines 6-9: a chosen term
  is zeroed and the rest renormalized), never a question word (Sect. 3.1.2); a phrase
  (``honda_crf_230``, Sect. 3.1.4) is one id, so it is sampled as a unit.

Term models (``KeywordModel(model=..., strategy=...)``)::

    baseline   (Eq. 1)  P(t|theta_q) = (1 - lam) P(t|q) + lam P(t)
    paraphrase (Eq. 6)  P(t|theta_q) = alpha P(t|q) + beta P(t|C_q) + (1 - alpha - beta) P(t)
    collection (Eq. 2)  P(t) = n(t) / sum_t' n(t')
    popular        (Eq. 3)  P(t|d) ~ n(t, d)
    discriminative (Eq. 4)  P(t|d) ~ b(t, d) / P(t)
    combination    (Eq. 5)  P(t|d) ~ n(t, d) log(N / df(t))

where ``d`` is the question or ``C_q``, the concatenation of the paraphrases of q's
cluster.  Question words (:data:`QUESTION_WORDS`, overridable) and any id flagged in an
exclusion mask are deleted from ``q``, ``C_q`` and the collection before estimating.

Data layout
-----------
All text is ids over one vocabulary of ``V`` ids (tokenization and phrase detection are
another stage's job; build a vocabulary yourself for small uses):

* ``questions``: flat int32 ids + int64 offsets (an object with ``.values`` / ``.offsets``
  such as :class:`pysynth.metrics.TokenIds`, a ``(ids, offsets)`` tuple of arrays, or a
  list of id lists);
* ``clusters``: :class:`Clusters`, a ragged *cluster table* (one row per paraphrase
  cluster: its paraphrases concatenated) plus ``index``, the row of each question (``-1``:
  no paraphrases).  :meth:`Clusters.from_groups` builds it from a cluster id per question;
  a question without paraphrases (index ``-1`` or an empty row) uses ``C_q = q``;
* ``stats``: :class:`CollectionStats` ``(cf, df, n_docs)`` over the question corpus Q.

The questions may also be a :class:`pysynth.text.Corpus`: it carries cf, df and N (counted
once, compiled, when it is built or made from ids with ``Corpus(ids, offsets, None, None,
vocab)``; saved and loaded with it), so repeated ``generate`` calls never recount them (on
1M questions counting took 10.1 s per call with NumPy, 0.02 s compiled).

Output: :class:`Candidates` ``(ids, offsets)``: candidate ``c`` of question ``i`` is
``ids[offsets[i*m + c]:offsets[i*m + c + 1]]`` (question-major).

Reproducibility
---------------
Every random number comes from a counter-based generator keyed by
``(seed, first_index + i, c, counter)`` (SplitMix64; defined in
:mod:`pysynth.sampling._reference`), so the candidates are identical for any ``workers``,
for any split of the corpus into chunks (pass ``first_index``), and between the compiled
backend and the pure-Python twin.  The compiled backend runs ``workers`` C++ threads with
the GIL released (``-1`` = all cores).

Edge cases (decisions)
----------------------
* ``|q|`` counts all tokens of the question, question words included.  When P(s) has no
  mass on ``1 <= s < |q|`` (e.g. ``|q| <= 3`` with the T0 distribution on [3, 7]) the
  length is ``s = max(1, |q| - 1)``: the longest query shorter than the question (one
  term for a one-token question).
* Fewer than ``s`` terms with non-zero probability (small vocabularies, ``lam = 0``): the
  candidate stops when they are used up, so it is shorter than ``s``.
* A combination-strategy document whose terms all occur in every question (all weights
  ``log(N/df) = 0``) falls back to the popular weights (Eq. 3).
* An empty question, or one with only excluded terms, is a ``ValueError`` (drop them
  first: :meth:`KeywordModel.samplable`); so is a sampled term with ``cf == 0``
  (discriminative) or ``df == 0`` (combination): compute the statistics over all questions
  and paraphrases.

Examples
--------
>>> import numpy as np
>>> from pysynth import sampling
>>> vocab = ["what", "is", "the", "capital", "of", "france", "who", "wrote", "hamlet"]
>>> qs = [[0, 1, 2, 3, 4, 5], [6, 7, 8]]            # what is the capital of france / ...
>>> stats = sampling.CollectionStats.from_documents(qs, vocab_size=len(vocab))
>>> model = sampling.KeywordModel("baseline", "combination", lam=0.1)
>>> ids, offsets = model.generate(qs, None, stats, m=3, seed=1, vocab=vocab)
>>> len(offsets) - 1
6
"""
from __future__ import annotations

import math
import operator
from dataclasses import dataclass
from typing import Dict, Iterable, List, Mapping, NamedTuple, Optional, Sequence, Tuple, Union

import numpy as np

from pysynth import _validate as _v
from pysynth._dispatch import backend

__all__ = [
    "QUESTION_WORDS",
    "T0_KEYWORD_LENGTHS",
    "MODELS",
    "STRATEGIES",
    "KeywordModel",
    "Candidates",
    "Clusters",
    "CollectionStats",
    "TermDistributions",
    "generate",
    "exclusion_mask",
    "keyword_lengths",
    "estimate_length_dist",
    "length_dist_from_counts",
    "poisson_length_dist",
    "default_length_dist",
]

MODELS = ("baseline", "paraphrase")
STRATEGIES = ("popular", "discriminative", "combination")

#: Question words never sampled (Sect. 3.1.2: "how", "what", "where", "who", "why",
#: "when", etc.): the WH words and their common contractions.  Override with
#: ``KeywordModel(exclude_words=...)``; ids of phrases containing them are not affected.
QUESTION_WORDS: Tuple[str, ...] = (
    "what", "when", "where", "which", "who", "whom", "whose", "why", "how",
    "what's", "whats", "when's", "where's", "who's", "why's", "how's", "whatever", "whoever",
)

#: Keyword query lengths (whitespace tokens) of the 800 hand-labeled pairs of the seed set
#: T0 shipped with the project (``k2q_seed_pairs/pairs.jsonl.gz``): ``{length: count}``.
#: :func:`default_length_dist` restricts them to s in [3, 7] (Sect. 6.1).
T0_KEYWORD_LENGTHS: Dict[int, int] = {2: 23, 3: 133, 4: 256, 5: 208, 6: 117, 7: 48, 8: 12, 9: 3}

_WEIGHT_SNAP = 1e-12  # mixture weights below this are 0 (1 - 0.7 - 0.3 = 5.6e-17)


# ----------------------------------------------------------------------------------
# length distributions P(s)
# ----------------------------------------------------------------------------------
def length_dist_from_counts(counts: Union[Mapping[int, float], Sequence[float]], s_min: int = 3,
                            s_max: int = 7) -> np.ndarray:
    """P(s) from a histogram of query lengths, restricted to ``s_min <= s <= s_max``.

    Parameters
    ----------
    counts : mapping ``{s: count}`` or sequence indexed by s
    s_min, s_max : int
        The range kept (Sect. 6.1 of Ding & Balog 2018: [3, 7]); ``1 <= s_min <= s_max``.

    Returns
    -------
    numpy.ndarray of float64, length ``s_max + 1``
        ``p[s]`` = P(s), 0 outside the range, summing to 1.
    """
    s_min, s_max = operator.index(s_min), operator.index(s_max)
    if not 1 <= s_min <= s_max:
        raise ValueError(f"s_min and s_max must satisfy 1 <= s_min <= s_max, got [{s_min}, {s_max}]")
    items = counts.items() if isinstance(counts, Mapping) else enumerate(counts)
    p = np.zeros(s_max + 1, dtype=np.float64)
    for s, c in items:
        s = operator.index(s)
        c = float(c)
        if not (math.isfinite(c) and c >= 0):
            raise ValueError(f"counts[{s}] must be a finite count >= 0, got {c}")
        if s_min <= s <= s_max:
            p[s] += c
    total = p.sum()
    if not total > 0:
        raise ValueError(f"no query length in the range [{s_min}, {s_max}]: "
                         "the length distribution would be empty")
    return p / total


def keyword_lengths(keywords: Iterable) -> np.ndarray:
    """Lengths (number of terms) of keyword queries: ``str`` are split on whitespace,
    sequences (id lists, token lists) are counted, integers are taken as lengths."""
    out = []
    for k in keywords:
        if isinstance(k, str):
            out.append(len(k.split()))
        elif isinstance(k, (int, np.integer)) and not isinstance(k, bool):
            out.append(int(k))
        else:
            out.append(len(k))
    return np.asarray(out, dtype=np.int64)


def estimate_length_dist(keywords: Iterable, s_min: int = 3, s_max: int = 7) -> np.ndarray:
    """Estimate P(s) from the keyword queries of seed pairs (Sect. 6.1: the hand-labeled
    set T0, restricted to ``s`` in [3, 7]).

    Parameters
    ----------
    keywords : iterable of str, of token/id sequences, or of int lengths
        The keyword queries (after phrase detection if it is used, so that a phrase counts
        as one term).
    s_min, s_max : int
        The range kept.

    Returns
    -------
    numpy.ndarray of float64, length ``s_max + 1`` (``p[s]`` = P(s)).

    Examples
    --------
    >>> estimate_length_dist(["best picture nominees 2009", "hamlet author", "a b c"]).round(2)
    array([0. , 0. , 0. , 0.5, 0.5, 0. , 0. , 0. ])
    """
    lens = keyword_lengths(keywords)
    return length_dist_from_counts(np.bincount(lens[lens >= 0]) if lens.size else [], s_min, s_max)


def poisson_length_dist(mean: float, s_min: int = 1, s_max: Optional[int] = None) -> np.ndarray:
    """Truncated Poisson P(s) (Azzopardi et al. 2007 draw the query length from a Poisson
    with the mean length of human queries): ``P(s) ~ exp(-mean) mean**s / s!`` on
    ``s_min <= s <= s_max`` (default ``s_max``: ``ceil(mean + 10 sqrt(mean) + 10)``).

    Examples
    --------
    >>> p = poisson_length_dist(4.44, s_min=1, s_max=12)
    >>> round(float(p @ np.arange(13)), 2)
    4.49
    """
    mean = float(mean)
    if not (math.isfinite(mean) and mean > 0):
        raise ValueError(f"mean must be a positive number, got {mean}")
    if s_max is None:
        s_max = int(math.ceil(mean + 10 * math.sqrt(mean) + 10))
    s_min, s_max = operator.index(s_min), operator.index(s_max)
    if not 1 <= s_min <= s_max:
        raise ValueError(f"s_min and s_max must satisfy 1 <= s_min <= s_max, got [{s_min}, {s_max}]")
    s = np.arange(s_max + 1, dtype=np.float64)
    logp = -mean + s * math.log(mean) - np.array([math.lgamma(x + 1) for x in s])
    p = np.where((s >= s_min) & (s <= s_max), np.exp(logp - logp[s_min:].max()), 0.0)
    return p / p.sum()


def default_length_dist() -> np.ndarray:
    """P(s) of the project's seed pairs T0 (:data:`T0_KEYWORD_LENGTHS`) on s in [3, 7]."""
    return length_dist_from_counts(T0_KEYWORD_LENGTHS, 3, 7)


# ----------------------------------------------------------------------------------
# data containers
# ----------------------------------------------------------------------------------
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
        codes: Dict[object, int] = {}
        index = np.array([-1 if g is None else codes.setdefault(g, len(codes)) for g in groups],
                         dtype=np.int64)
        order = np.argsort(np.where(index < 0, len(codes), index), kind="stable")
        order = order[index[order] >= 0]
        lens = np.diff(off)
        row_len = np.bincount(index[order], weights=lens[order], minlength=len(codes)).astype(np.int64)
        c_off = np.zeros(len(codes) + 1, dtype=np.int64)
        np.cumsum(row_len, out=c_off[1:])
        take = np.concatenate([np.arange(off[i], off[i + 1]) for i in order]) if len(order) else \
            np.zeros(0, np.int64)
        return cls(ids[take], c_off, index)

    @classmethod
    def per_question(cls, documents) -> "Clusters":
        """Row ``i`` is the cluster document of question ``i`` (flat ids + offsets or lists)."""
        ids, off = _ragged(documents, "clusters")
        return cls(ids, off, np.arange(off.shape[0] - 1, dtype=np.int64))


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
    size = size if vocab_size is None else operator.index(vocab_size)
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


# ----------------------------------------------------------------------------------
# the model
# ----------------------------------------------------------------------------------
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
        first_index : int
            Global index of ``questions[0]``: generating a corpus chunk by chunk with
            ``first_index`` = the chunk's start gives the same rows as one call.

        Returns
        -------
        Candidates
            ``(ids, offsets)``, int32 / int64; ``n * m`` candidates, question-major.
        """
        # ValueError for every bad argument, as the compiled core raises
        m = _v.int_range(m, "m", 1, wrong_type=ValueError)
        first_index = _v.int_range(first_index, "first_index", 0, wrong_type=ValueError)
        if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or not 0 <= seed < 2 ** 64:
            raise ValueError(f"seed must be an integer in [0, 2**64), got {seed!r}")
        workers = _v.workers(workers, wrong_type=ValueError)
        q_ids, q_off, c_ids, c_off, c_idx, stats, mask = self._inputs(questions, clusters, stats,
                                                                       exclude, vocab)
        wq, wc, wb = self.weights
        ids, offsets = backend("sampling").generate(
            q_ids, q_off, c_ids, c_off, c_idx, stats.cf, stats.df, stats.n_docs, mask,
            self.length_dist, self.strategy, wq, wc, wb, int(m), int(seed), int(first_index),
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
