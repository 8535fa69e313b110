"""Text statistics and phrases for keyword query generation.

The keyword query generation models of Ding & Balog 2018 ("Generating Synthetic Data for
Neural Keyword-to-Question Models", ICTIR '18) sample terms of a question q with
probabilities built from corpus statistics over the large question set Q (Sect. 3.1.1):
collection term frequencies n(t) (Eq. 2), the occurrences n(t, q) in q (Eq. 3), question
frequencies df(t) and the number of questions N (Eq. 5). Sect. 3.1.4 adds phrases, detected
after Mikolov et al. 2013 (Eq. 6), so that "how fast is a 2004 honda crf 230" becomes
"how fast is a 2004 honda_crf_230" and ``honda_crf_230`` is sampled as one term.

* :func:`build_corpus` tokenizes questions into a :class:`Corpus`: flat int32 ids + int64
  offsets, ``cf`` = n(t), ``df`` = df(t), ``n_docs`` = N, ``vocab``. It saves to a versioned
  directory and loads back memory-mapped (:meth:`Corpus.save`, :meth:`Corpus.load`).
* :class:`Phrases` / :class:`FrozenPhrases` are gensim 4.4's ``Phrases`` /
  ``FrozenPhrases`` (same counts, scores, phrase tables and outputs, checked against gensim
  in ``tests/golden``), learned from and applied to a :class:`Corpus`. Repeated passes give
  longer phrases (:func:`phrase_passes`).

The heavy parts run compiled (``pysynth._core.text``, GIL released, ``workers`` threads,
results independent of ``workers``) with a pure-Python twin of every function in
:mod:`pysynth.text._reference` (``PYSYNTH_IMPL=python``).

Examples
--------
>>> from pysynth import text
>>> corpus = text.build_corpus(["Who plays in New York?", "new york weather", "a new car"])
>>> corpus.vocab[:3], corpus.cf[:3].tolist(), corpus.n_docs
(['new', 'york', 'a'], [3, 2, 1], 3)
>>> bigrams = text.Phrases(min_count=1, threshold=0.5).learn(corpus)
>>> bigrams.export_phrases()
{'new_york': 2.5}
>>> bigrams.apply(corpus).doc_terms(0)
['who', 'plays', 'in', 'new_york']
"""
from __future__ import annotations

import math
import os
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

from pysynth import _validate as _v
from pysynth import store
from pysynth._dispatch import backend

__all__ = [
    "Corpus",
    "Phrases",
    "FrozenPhrases",
    "build_corpus",
    "tokenize",
    "phrase_passes",
    "ENGLISH_CONNECTOR_WORDS",
    "TOKENIZERS",
    "SCORINGS",
    "FORMAT_VERSION",
]

#: gensim 4.4's ``ENGLISH_CONNECTOR_WORDS``: articles, some prepositions and conjunctions.
ENGLISH_CONNECTOR_WORDS = frozenset(
    " a an the "
    " for of with without at from to in on by "
    " and or ".split()
)
TOKENIZERS = ("rouge", "whitespace")
SCORINGS = ("default", "npmi")
#: Version of the :mod:`pysynth.store` formats written by :meth:`Corpus.save`,
#: :meth:`Phrases.save` and :meth:`FrozenPhrases.save` (1: the pre-store layout, refused).
FORMAT_VERSION = 2

PathLike = Union[str, "os.PathLike[str]"]


def _impl():
    return backend("text")


# --------------------------------------------------------------------- validation


def _check_int(value, name: str, minimum: Optional[int] = None) -> int:
    return _v.int_range(value, name, minimum)


def _check_tokenizer(tokenizer) -> str:
    return _v.choice(tokenizer, "tokenizer", TOKENIZERS)


def _check_delimiter(delimiter) -> str:
    if not isinstance(delimiter, str):
        raise TypeError(f"delimiter must be str, got {type(delimiter).__name__}")
    if not delimiter:
        raise ValueError("delimiter must be a non-empty string")
    if "\n" in delimiter:
        raise ValueError("delimiter must not contain a newline (the saved vocabulary is one term per line)")
    return delimiter


def _check_connectors(words) -> frozenset:
    if words is None:
        return frozenset()
    if isinstance(words, (str, bytes)):
        raise TypeError("connector_words must be a collection of str, not a single string; wrap it in a set")
    try:
        items = list(words)
    except TypeError:
        raise TypeError(f"connector_words must be a collection of str, got {type(words).__name__}") from None
    for w in items:
        if not isinstance(w, str):
            raise TypeError(f"connector_words must hold str, got {type(w).__name__}")
    return frozenset(items)


def _check_scoring(scoring) -> str:
    if callable(scoring):
        raise TypeError("scoring must be 'default' or 'npmi'; custom scoring functions are not supported")
    if scoring not in SCORINGS:
        raise ValueError(f"scoring must be 'default' or 'npmi', got {scoring!r}")
    return scoring


def _check_threshold(threshold, scoring: str) -> float:
    if isinstance(threshold, bool) or not isinstance(threshold, (int, float, np.integer, np.floating)):
        raise TypeError(f"threshold must be a number, got {type(threshold).__name__}")
    threshold = float(threshold)
    if math.isnan(threshold):
        raise ValueError("threshold must be a number, got nan")
    if scoring == "default" and threshold <= 0:
        raise ValueError(f"threshold must be > 0 for default scoring, got {threshold}")
    if scoring == "npmi" and not -1.0 <= threshold <= 1.0:
        raise ValueError(f"threshold must be in [-1, 1] for npmi scoring, got {threshold}")
    return threshold


def _texts(texts, name: str = "texts") -> List[str]:
    if texts is None:
        raise TypeError(f"{name} must be a sequence of str, got None")
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of str, not a single string; wrap it in a list")
    if not isinstance(texts, (list, tuple)):
        try:
            texts = list(texts)
        except TypeError:
            raise TypeError(f"{name} must be a sequence of str, got {type(texts).__name__}") from None
    return texts


# ------------------------------------------------------------------------ storage


def _load(path: PathLike, kind: str, mmap: bool, arrays: Mapping[str, type]) -> store.Stored:
    """The store of a ``pysynth.text.<kind>`` with 1-d ``arrays`` (name -> dtype)."""
    return store.load(path, f"pysynth.text.{kind}", (FORMAT_VERSION,), mmap=mmap,
                      expect={name: (dt, (None,)) for name, dt in arrays.items()})


def _lines(st: store.Stored, name: str, count: int, of: str) -> List[str]:
    """The lines of file ``name``: ``count`` of them, one per entry of array ``of``."""
    items = st.read_lines(name)
    if len(items) != count:
        raise ValueError(f"{st.path / name} has {len(items)} lines; {of} has {count} entries")
    return items


def _meta_params(st: store.Stored, keys: Sequence[str]) -> dict:
    missing = [k for k in keys if k not in st.meta]
    if missing:
        raise ValueError(f"{', '.join(missing)} missing")
    return {k: st.meta[k] for k in keys}


# ------------------------------------------------------------------------- corpus


class Corpus:
    """Questions as vocabulary ids, with the statistics of Ding & Balog 2018, Sect. 3.1.1.

    Question ``i`` is ``ids[offsets[i]:offsets[i+1]]``. Plain arrays, so other stages (the
    keyword query sampler) use them directly.

    Parameters
    ----------
    ids : numpy.ndarray of int32
        All tokens of all questions, as vocabulary ids.
    offsets : numpy.ndarray of int64
        ``n_docs + 1`` non-decreasing entries from 0 to ``len(ids)``.
    cf : numpy.ndarray of int64, or None
        Collection term frequency n(t) of each term (Eq. 2: P(t) = cf[t] / n_tokens).
    df : numpy.ndarray of int64, or None
        Number of questions that contain each term, df(t) (Eq. 5: log(N / df(t))).  With
        ``cf = df = None`` both are counted here (compiled, one pass over the ids).
    vocab : sequence of str
        Term of each id. :func:`build_corpus` orders ids by descending cf, ties by term.
    tokenizer : str
        How the questions were tokenized (recorded, saved).
    history : sequence of dict
        Phrase passes applied so far (parameters of each), recorded and saved.
    validate : bool
        Check shapes, offsets and id ranges (an O(n) pass).

    The arrays are kept as read-only views (no copy) and the attributes cannot be rebound,
    so the statistics always describe the ids: a changed corpus is a new ``Corpus``.  (Do
    not write into the arrays you passed in either.)

    Attributes
    ----------
    n_docs : int
        N, the number of questions.
    n_tokens : int
        Total number of tokens (the denominator of Eq. 2).
    n_terms : int
        Vocabulary size.
    """

    def __init__(
        self,
        ids,
        offsets,
        cf,
        df,
        vocab: Sequence[str],
        *,
        tokenizer: str = "rouge",
        history: Sequence[dict] = (),
        validate: bool = True,
    ):
        self._ids = _as_array(ids, np.int32, "ids")
        self._offsets = _as_array(offsets, np.int64, "offsets")
        self.vocab: List[str] = vocab if isinstance(vocab, list) else list(vocab)
        self.tokenizer = tokenizer
        self.history: List[dict] = [dict(h) for h in history]
        self._index: Optional[Dict[str, int]] = None
        if (cf is None) != (df is None):
            raise ValueError("pass both cf and df, or neither (None: counted from the ids)")
        if cf is None:
            _v.offsets(self._offsets, self._ids.shape[0], "offsets")
            cf, df = backend("sampling").collection_stats(self._ids, self._offsets, len(self.vocab))
        self._cf = _as_array(cf, np.int64, "cf")
        self._df = _as_array(df, np.int64, "df")
        if validate:
            self._validate()

    # read-only: the statistics are counted from (or given with) these ids
    ids = property(lambda self: self._ids, doc="int32 ids of all questions (read-only).")
    offsets = property(lambda self: self._offsets, doc="int64 row offsets, n_docs + 1 (read-only).")
    cf = property(lambda self: self._cf, doc="n(t), int64 per term (read-only).")
    df = property(lambda self: self._df, doc="df(t), int64 per term (read-only).")

    def _validate(self) -> None:
        _v.offsets(self.offsets, self.ids.shape[0], "offsets")
        V = len(self.vocab)
        if self.cf.shape[0] != V or self.df.shape[0] != V:
            raise ValueError(f"cf and df need one entry per vocabulary term ({V}); got {self.cf.shape[0]} and {self.df.shape[0]}")
        if self.ids.size:
            lo, hi = int(self.ids.min()), int(self.ids.max())
            if lo < 0 or hi >= V:
                raise ValueError(f"ids must lie in [0, {V}) (the vocabulary size); found {lo if lo < 0 else hi}")
        for i, t in enumerate(self.vocab):
            if not isinstance(t, str):
                raise TypeError(f"vocab[{i}] must be str, got {type(t).__name__}")
        if len(set(self.vocab)) != V:
            seen = set()
            dup = next(t for t in self.vocab if t in seen or seen.add(t))
            raise ValueError(f"vocab must hold distinct terms; {dup!r} is repeated")

    # -- sizes and lookups
    @property
    def n_docs(self) -> int:
        return int(self.offsets.shape[0] - 1)

    @property
    def n_tokens(self) -> int:
        return int(self.ids.shape[0])

    @property
    def n_terms(self) -> int:
        return len(self.vocab)

    def __len__(self) -> int:
        return self.n_docs

    def __repr__(self) -> str:
        return (
            f"Corpus(n_docs={self.n_docs}, n_tokens={self.n_tokens}, n_terms={self.n_terms}, "
            f"tokenizer={self.tokenizer!r}, phrase_passes={len(self.history)})"
        )

    def _lookup(self) -> Dict[str, int]:
        if self._index is None:
            self._index = {t: i for i, t in enumerate(self.vocab)}
        return self._index

    def term_id(self, term: str) -> int:
        """Id of ``term``; ``KeyError`` if it is not in the vocabulary."""
        try:
            return self._lookup()[term]
        except KeyError:
            raise KeyError(f"term {term!r} is not in the vocabulary") from None

    def get_id(self, term: str, default: int = -1) -> int:
        """Id of ``term``, or ``default`` if it is not in the vocabulary."""
        return self._lookup().get(term, default)

    def decode(self, ids: Iterable[int]) -> List[str]:
        """Terms of the given ids (an id outside ``[0, len(vocab))`` is an IndexError, not the
        term a Python negative index would give)."""
        v = self.vocab
        out = []
        for i in ids:
            i = int(i)
            if not 0 <= i < len(v):
                raise IndexError(f"ids: {i} is not a term id (vocabulary of {len(v)} terms)")
            out.append(v[i])
        return out

    def doc(self, i: int) -> np.ndarray:
        """Ids of question ``i`` (a view)."""
        if not -self.n_docs <= i < self.n_docs:
            raise IndexError(f"question {i} is out of range for {self.n_docs} questions")
        i %= max(self.n_docs, 1)
        return self.ids[self.offsets[i] : self.offsets[i + 1]]

    def doc_terms(self, i: int) -> List[str]:
        """Terms of question ``i``."""
        return self.decode(self.doc(i))

    def sentences(self) -> Iterator[List[str]]:
        """Every question as a list of terms (gensim's input format)."""
        v, ids, o = self.vocab, self.ids.tolist(), self.offsets.tolist()
        for i in range(self.n_docs):
            yield [v[t] for t in ids[o[i] : o[i + 1]]]

    def lengths(self) -> np.ndarray:
        """Number of tokens of each question, |q| (int64)."""
        return np.diff(self.offsets)

    # -- construction
    @classmethod
    def from_tokens(cls, sentences: Iterable[Sequence[str]], workers: int = 1) -> "Corpus":
        """A corpus from already tokenized questions (lists of non-empty str tokens)."""
        workers = _v.workers(workers)
        sents = _texts(sentences, "sentences")
        joined = []
        simple = True
        for i, s in enumerate(sents):
            if isinstance(s, (str, bytes)) or not isinstance(s, (list, tuple)):
                raise TypeError(f"sentences[{i}] must be a list of str tokens, got {type(s).__name__}")
            for t in s:
                if not isinstance(t, str):
                    raise TypeError(f"sentences[{i}] must hold str tokens, got {type(t).__name__}")
                if not t:
                    raise ValueError(f"sentences[{i}] holds an empty token; tokens must be non-empty")
            line = " ".join(s)
            if simple and line.split() != list(s):
                simple = False
            joined.append(line)
        if simple:
            ids, offsets, cf, df, vocab = _impl().build_corpus(joined, "whitespace", workers)
        else:  # tokens with whitespace inside: count them in Python
            from pysynth.text._reference import _corpus_from_tokens

            ids, offsets, cf, df, vocab = _corpus_from_tokens([list(s) for s in sents])
        return cls(ids, offsets, cf, df, vocab, tokenizer="pretokenized", validate=False)

    # -- phrases
    def apply_phrases(self, phrases: Union["Phrases", "FrozenPhrases"], workers: int = 1) -> "Corpus":
        """This corpus with phrases joined (same as ``phrases.apply(self)``)."""
        if not isinstance(phrases, (Phrases, FrozenPhrases)):
            raise TypeError(f"phrases must be a Phrases or FrozenPhrases, got {type(phrases).__name__}")
        return phrases.apply(self, workers=workers)

    # -- storage
    def save(self, path: PathLike) -> Path:
        """Save to directory ``path`` (a :mod:`pysynth.store`, written atomically; an existing
        store there is replaced, any other non-empty directory refused).

        Layout (format ``pysynth.text.Corpus``, version :data:`FORMAT_VERSION`): ``ids.npy``
        (int32), ``offsets.npy``, ``cf.npy``, ``df.npy`` (int64), ``vocab.txt`` (UTF-8, one
        term per line) and ``meta.json`` (checksums, tokenizer, phrase history).
        """
        return store.save(
            path, "pysynth.text.Corpus", FORMAT_VERSION,
            arrays={"ids": self.ids.astype(np.int32, copy=False), "offsets": self.offsets.astype(np.int64, copy=False),
                    "cf": self.cf.astype(np.int64, copy=False), "df": self.df.astype(np.int64, copy=False)},
            files={"vocab.txt": store.lines_to_bytes(self.vocab, "vocabulary term")},
            meta={"tokenizer": self.tokenizer, "history": self.history},
        )

    @classmethod
    def load(cls, path: PathLike, mmap: bool = True, validate: bool = True) -> "Corpus":
        """Load a corpus saved by :meth:`save`.

        Parameters
        ----------
        path : str or path-like
            The directory.
        mmap : bool
            Memory-map the arrays (``np.load(mmap_mode="r")``, read-only): a large corpus is
            analysed once and loaded in milliseconds.
        validate : bool
            Check offsets and id ranges, and recount cf and df from the ids (one compiled pass).
            Sizes and CRC-32 checksums are always checked.

        Raises
        ------
        FileNotFoundError
            ``path`` does not exist.
        ValueError
            Not a saved corpus, another format version (rebuild it), or missing, truncated,
            corrupt or inconsistent files.
        """
        st = _load(path, "Corpus", mmap, {"ids": np.int32, "offsets": np.int64, "cf": np.int64, "df": np.int64})
        a = st.arrays
        vocab = _lines(st, "vocab.txt", a["cf"].shape[0], "cf.npy")
        history = st.meta.get("history", [])
        if not isinstance(history, list):
            raise ValueError(f"{st.path / store.META}: history must be a list")
        corpus = cls(a["ids"], a["offsets"], a["cf"], a["df"], vocab, tokenizer=str(st.meta.get("tokenizer", "")),
                     history=history, validate=False)
        if validate:
            try:
                corpus._validate()
            except (ValueError, TypeError) as exc:
                raise ValueError(f"{st.path} is inconsistent: {exc}") from None
            # the saved statistics are the sampler's (pysynth.sampling): recounted, as they must
            # describe these ids exactly (compiled, one pass: 0.02 s for 10M tokens)
            cf, df = backend("sampling").collection_stats(corpus.ids, corpus.offsets, corpus.n_terms)
            for name, saved, counted in (("cf", corpus.cf, cf), ("df", corpus.df, df)):
                bad = np.flatnonzero(saved != counted)
                if bad.size:
                    t = int(bad[0])
                    raise ValueError(f"{st.path / (name + '.npy')} is inconsistent with ids.npy: {name}[{t}] = "
                                     f"{int(saved[t])}, but the ids count {int(counted[t])}")
        return corpus


def _as_array(a, dtype, name: str) -> np.ndarray:
    arr = np.asanyarray(a)  # keeps np.memmap (no copy)
    if arr.ndim != 1:
        raise ValueError(f"{name} must be a 1-d array, got {arr.ndim} dimensions")
    if arr.size and arr.dtype.kind not in "iu":
        raise TypeError(f"{name} must be an integer array, got dtype {arr.dtype}")
    if arr.dtype != dtype:
        if arr.size:
            info = np.iinfo(dtype)
            if int(arr.min()) < info.min or int(arr.max()) > info.max:
                raise ValueError(f"{name} holds values outside the range of {np.dtype(dtype)}")
        arr = arr.astype(dtype)
    arr = arr.view()  # a read-only view; the caller's array keeps its flags
    arr.flags.writeable = False
    return arr


def tokenize(texts: Sequence[str], tokenizer: str = "rouge", workers: int = 1) -> List[List[str]]:
    """Tokens of each text.

    Parameters
    ----------
    texts : sequence of str
    tokenizer : {"rouge", "whitespace"}
        ``"rouge"`` (default): lower-case, runs of ``[a-z0-9]`` (rouge-score's tokenizer,
        the one the K2Q evaluation uses; "what's" gives ``what``, ``s``). ``"whitespace"``:
        ``str.split()``.
    workers : int
        Threads (-1 = all cores).

    Returns
    -------
    list of list of str

    Examples
    --------
    >>> tokenize(["How fast is a 2004 Honda CRF-230?"])
    [['how', 'fast', 'is', 'a', '2004', 'honda', 'crf', '230']]
    """
    return _impl().tokenize(_texts(texts), _check_tokenizer(tokenizer), _v.workers(workers))


def build_corpus(texts: Sequence[str], tokenizer: str = "rouge", workers: int = 1) -> Corpus:
    """Tokenize questions and collect the statistics of Ding & Balog 2018, Sect. 3.1.1.

    Parameters
    ----------
    texts : sequence of str
        The question set Q, one question per item (at least one).
    tokenizer : {"rouge", "whitespace"}
        See :func:`tokenize`.
    workers : int
        Threads (-1 = all cores); the result does not depend on it.

    Returns
    -------
    Corpus
        Ids ordered by descending collection frequency, ties by term (code point order).

    Raises
    ------
    TypeError
        ``texts`` is not a sequence of str.
    ValueError
        ``texts`` is empty, or an unknown tokenizer.

    Examples
    --------
    >>> c = build_corpus(["What is a CRF 230?", "what is it"])
    >>> c.vocab, c.cf.tolist(), c.df.tolist(), c.n_docs
    (['is', 'what', '230', 'a', 'crf', 'it'], [2, 2, 1, 1, 1, 1], [2, 2, 1, 1, 1, 1], 2)
    """
    texts = _texts(texts)
    tokenizer = _check_tokenizer(tokenizer)
    workers = _v.workers(workers)
    if len(texts) == 0:
        raise ValueError("texts is empty: a corpus needs at least one question")
    ids, offsets, cf, df, vocab = _impl().build_corpus(texts, tokenizer, workers)
    return Corpus(ids, offsets, cf, df, vocab, tokenizer=tokenizer, validate=False)


# ------------------------------------------------------------------------ phrases


def _as_corpus(corpus, workers: int) -> Corpus:
    if isinstance(corpus, Corpus):
        return corpus
    if corpus is None or isinstance(corpus, (str, bytes)):
        raise TypeError("corpus must be a Corpus or a sequence of token lists")
    return Corpus.from_tokens(corpus, workers=workers)


class Phrases:
    """Phrase detection of gensim 4.4 ``gensim.models.phrases.Phrases``, on a :class:`Corpus`.

    Mikolov et al. 2013 (Sect. 4, Eq. 6) score a bigram "a b" by
    ``(count(ab) - delta) / (count(a) * count(b))``; gensim's default scorer uses
    ``delta = min_count`` and multiplies by the vocabulary size, and a candidate scoring
    above ``threshold`` is joined into one token ``a_b``. Ding & Balog 2018 (Sect. 3.1.4)
    use these phrases as terms of the keyword query generation model. Everything gensim
    does is reproduced exactly (counts, pruning, scores, left-to-right joining, connector
    words, ``export_phrases`` / ``freeze``); see :mod:`pysynth.text._reference` for the
    rules. gensim's ``add_vocab`` (incremental updates) is not provided: :meth:`learn`
    learns from one corpus, like ``Phrases(sentences)``.

    Parameters
    ----------
    min_count : int
        gensim's ``min_count`` (>= 1): subtracted in the default score; for ``npmi``, the
        least count of a bigram.
    threshold : float
        A candidate is a phrase if its score is above this (> 0 for ``"default"``; in
        [-1, 1] for ``"npmi"``).
    max_vocab_size : int
        gensim's pruning limit on the number of distinct unigrams + candidates.
    delimiter : str
        Joins the tokens of a phrase (non-empty, no newline).
    scoring : {"default", "npmi"}
        gensim's ``original_scorer`` or ``npmi_scorer`` (custom functions: not supported).
    connector_words : collection of str
        Words that may sit inside a phrase but never start or end one, e.g.
        :data:`ENGLISH_CONNECTOR_WORDS` ("bank_of_america").

    Attributes
    ----------
    terms : list of str
        Vocabulary of the corpus the counts were learned from; the key ids refer to it.
    key_offsets, key_terms, key_counts : numpy.ndarray
        gensim's ``Phrases.vocab`` in id space (see :func:`pysynth.text._reference.count_phrases`);
        :meth:`counts` gives it as gensim's dict.
    corpus_word_count : int
        All tokens counted, connector words included.
    min_reduce : int
        1 + the number of ``max_vocab_size`` prunings while counting.

    Examples
    --------
    >>> c = build_corpus(["new york city", "new york times", "in new york"])
    >>> p = Phrases(min_count=1, threshold=1.0).learn(c)
    >>> p["i love new york".split()]
    ['i', 'love', 'new_york']
    >>> p.freeze().phrasegrams
    {'new_york': 2.0}
    """

    def __init__(
        self,
        min_count: int = 5,
        threshold: float = 10.0,
        max_vocab_size: int = 40_000_000,
        delimiter: str = "_",
        scoring: str = "default",
        connector_words: Iterable[str] = frozenset(),
    ):
        self.min_count = _check_int(min_count, "min_count", 1)
        self.scoring = _check_scoring(scoring)
        self.threshold = _check_threshold(threshold, self.scoring)
        self.max_vocab_size = _check_int(max_vocab_size, "max_vocab_size", 1)
        self.delimiter = _check_delimiter(delimiter)
        self.connector_words = _check_connectors(connector_words)
        self.terms: List[str] = []  # the strings key_terms refer to (the learning corpus vocab)
        self.key_offsets = np.zeros(1, dtype=np.int64)
        self.key_terms = np.zeros(0, dtype=np.int32)
        self.key_counts = np.zeros(0, dtype=np.int64)
        self.corpus_word_count = 0
        self.min_reduce = 1

    def params(self) -> dict:
        """The constructor arguments (connector words sorted)."""
        return {
            "min_count": self.min_count,
            "threshold": self.threshold,
            "max_vocab_size": self.max_vocab_size,
            "delimiter": self.delimiter,
            "scoring": self.scoring,
            "connector_words": sorted(self.connector_words),
        }

    def __repr__(self) -> str:
        return (
            f"Phrases<{self.n_keys} vocab, min_count={self.min_count}, threshold={self.threshold}, "
            f"max_vocab_size={self.max_vocab_size}, scoring={self.scoring!r}>"
        )

    @property
    def n_keys(self) -> int:
        """Distinct unigrams + candidates (gensim: ``len(phrases.vocab)``)."""
        return int(self.key_counts.shape[0])

    def learn(self, corpus, workers: int = 1) -> "Phrases":
        """Count unigrams and candidates of ``corpus`` (gensim: ``Phrases(sentences, ...)``).

        Parameters
        ----------
        corpus : Corpus or sequence of list of str
        workers : int
            Threads (-1 = all cores); the result does not depend on it.

        Returns
        -------
        Phrases
            ``self``, with the counts of this corpus (replacing earlier ones).
        """
        workers = _v.workers(workers)
        corpus = _as_corpus(corpus, workers)
        ko, kt, kc, cwc, mr = _impl().count_phrases(
            corpus.ids, corpus.offsets, corpus.vocab, sorted(self.connector_words), self.delimiter,
            self.max_vocab_size, workers,
        )
        self.terms = list(corpus.vocab)
        self.key_offsets, self.key_terms, self.key_counts = ko, kt, kc
        self.corpus_word_count, self.min_reduce = int(cwc), int(mr)
        return self

    def _decider(self):
        """gensim's ``Phrases.score_candidate`` over the counts dict (built once, then cached)."""
        from pysynth.text._reference import _score

        cache = getattr(self, "_dict_cache", None)
        if cache is None or cache[0] is not self.key_counts:
            cache = (self.key_counts, self.counts())
            self._dict_cache = cache
        d, n_vocab, delim = cache[1], len(cache[1]), self.delimiter
        scoring, min_count, cwc, threshold = self.scoring, self.min_count, self.corpus_word_count, self.threshold

        def decide(a, between, b):
            ca, cb = d.get(a, 0), d.get(b, 0)
            if ca <= 0 or cb <= 0:
                return None
            phrase = delim.join([a, *between, b])
            c = d.get(phrase, 0)
            if c <= 0 or _score(scoring, ca, cb, c, n_vocab, min_count, cwc) <= threshold:
                return None
            return phrase

        return decide

    def counts(self) -> Dict[str, int]:
        """gensim's ``Phrases.vocab``: unigram or joined candidate -> count."""
        v, d = self.terms, self.delimiter
        ko, kt = self.key_offsets.tolist(), self.key_terms.tolist()
        return {d.join(v[t] for t in kt[ko[k] : ko[k + 1]]): int(c) for k, c in enumerate(self.key_counts.tolist())}

    def export_phrases(self) -> Dict[str, float]:
        """All phrases of the learned counts with their scores (gensim ``export_phrases()``)."""
        names, scores = _impl().export_phrases(
            self.terms, self.key_offsets, self.key_terms, self.key_counts, self.corpus_word_count,
            self.delimiter, self.min_count, self.threshold, self.scoring,
        )
        return dict(zip(names, scores.tolist()))

    def freeze(self) -> "FrozenPhrases":
        """The phrase table alone (gensim ``freeze()`` / ``FrozenPhrases(phrases)``)."""
        return FrozenPhrases(
            self.export_phrases(), threshold=self.threshold, delimiter=self.delimiter,
            connector_words=self.connector_words, min_count=self.min_count, scoring=self.scoring,
        )

    def apply(self, corpus, workers: int = 1) -> Corpus:
        """``corpus`` with phrases joined into single terms (gensim ``phrases[sentences]``).

        Parameters
        ----------
        corpus : Corpus or sequence of list of str
        workers : int
            Threads (-1 = all cores); the result does not depend on it.

        Returns
        -------
        Corpus
            A new corpus; its vocabulary holds the phrases that occur and drops the words
            that no longer occur on their own; ids are re-ordered by cf.
        """
        workers = _v.workers(workers)
        corpus = _as_corpus(corpus, workers)
        out = _impl().apply_phrases(
            corpus.ids, corpus.offsets, corpus.vocab, sorted(self.connector_words), self.delimiter,
            self.terms, self.key_offsets, self.key_terms, self.key_counts, self.corpus_word_count,
            self.min_count, self.threshold, self.scoring, workers,
        )
        hist = corpus.history + [dict(self.params(), kind="Phrases", n_keys=self.n_keys)]
        return Corpus(*out, tokenizer=corpus.tokenizer, history=hist, validate=False)

    def __getitem__(self, sentence):
        """gensim-style: a list of str tokens -> joined tokens; a Corpus -> :meth:`apply`.

        A single sentence runs gensim's loop in Python over :meth:`counts` (built on the
        first call: large for big models; :meth:`freeze` first for a lighter table). For
        many sentences, build a :class:`Corpus` and call :meth:`apply`.
        """
        return _getitem(self, sentence)

    # -- storage
    def save(self, path: PathLike) -> Path:
        """Save to directory ``path`` (a :mod:`pysynth.store`, format ``pysynth.text.Phrases``):
        ``terms.txt`` (one term per line), ``key_offsets.npy``, ``key_terms.npy``,
        ``key_counts.npy`` and ``meta.json`` (parameters, counts, checksums)."""
        return store.save(
            path, "pysynth.text.Phrases", FORMAT_VERSION,
            arrays={"key_offsets": self.key_offsets.astype(np.int64, copy=False),
                    "key_terms": self.key_terms.astype(np.int32, copy=False),
                    "key_counts": self.key_counts.astype(np.int64, copy=False)},
            files={"terms.txt": store.lines_to_bytes(self.terms, "term")},
            meta=dict(self.params(), corpus_word_count=self.corpus_word_count, min_reduce=self.min_reduce),
        )

    @classmethod
    def load(cls, path: PathLike, mmap: bool = True) -> "Phrases":
        """Load a model saved by :meth:`save` (``ValueError`` for broken or other-version files)."""
        st = _load(path, "Phrases", mmap, {"key_offsets": np.int64, "key_terms": np.int32, "key_counts": np.int64})
        d = st.path
        try:
            model = cls(**_meta_params(st, ("min_count", "threshold", "max_vocab_size", "delimiter", "scoring",
                                            "connector_words")))
            model.corpus_word_count = _v.int_range(st.meta.get("corpus_word_count"), "corpus_word_count", 0)
            model.min_reduce = _v.int_range(st.meta.get("min_reduce"), "min_reduce", 0)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{d / store.META} has invalid parameters: {exc}") from None
        model.terms = st.read_lines("terms.txt")
        ko, kt, kc = st.arrays["key_offsets"], st.arrays["key_terms"], st.arrays["key_counts"]
        model.key_offsets, model.key_terms, model.key_counts = ko, kt, kc
        n_keys = kc.shape[0]
        if ko.shape[0] != n_keys + 1 or ko[0] != 0 or ko[-1] != kt.shape[0] or (n_keys and np.any(ko[1:] <= ko[:-1])):
            raise ValueError(f"{d} is inconsistent: key_offsets must increase from 0 to len(key_terms) "
                             "with one entry per key count + 1")
        if kt.size and (int(kt.min()) < 0 or int(kt.max()) >= len(model.terms)):
            raise ValueError(f"{d} is inconsistent: key_terms outside the vocabulary")
        if len(set(model.terms)) != len(model.terms):
            raise ValueError(f"{d / 'terms.txt'} repeats a term")
        return model


class FrozenPhrases:
    """A phrase table: gensim 4.4 ``FrozenPhrases`` (what ``Phrases.freeze()`` returns).

    A candidate (token, connector words, token) is joined when its joined string is in
    ``phrasegrams`` with a score above ``threshold``. Smaller and faster than
    :class:`Phrases`; cannot learn. Note gensim's behaviour on later passes (kept here): the
    table scores every phrase by its first and last *words*, so a second-pass model frozen
    from counts over "honda_crf 230" may hold fewer phrases than the unfrozen one joins.

    Parameters
    ----------
    phrasegrams : mapping of str to float
        Phrase -> score.
    threshold, delimiter, connector_words, min_count, scoring
        As for :class:`Phrases` (``min_count`` and ``scoring`` are recorded only).
    """

    def __init__(
        self,
        phrasegrams: Mapping[str, float],
        threshold: float = 10.0,
        delimiter: str = "_",
        connector_words: Iterable[str] = frozenset(),
        min_count: int = 5,
        scoring: str = "default",
    ):
        if not isinstance(phrasegrams, Mapping):
            raise TypeError(f"phrasegrams must be a mapping of phrase -> score, got {type(phrasegrams).__name__}")
        table: Dict[str, float] = {}
        for k, v in phrasegrams.items():
            if not isinstance(k, str):
                raise TypeError(f"phrasegrams keys must be str, got {type(k).__name__}")
            if isinstance(v, bool) or not isinstance(v, (int, float, np.integer, np.floating)):
                raise TypeError(f"phrasegrams[{k!r}] must be a number, got {type(v).__name__}")
            if v != v:  # nan never passes the threshold test: the phrase would silently never join
                raise ValueError(f"phrasegrams[{k!r}] is nan; scores must be numbers")
            table[k] = float(v)
        self.phrasegrams = table
        self.min_count = _check_int(min_count, "min_count", 1)
        self.scoring = _check_scoring(scoring)
        self.threshold = _check_threshold(threshold, self.scoring)
        self.delimiter = _check_delimiter(delimiter)
        self.connector_words = _check_connectors(connector_words)

    def __repr__(self) -> str:
        return f"FrozenPhrases<{len(self.phrasegrams)} phrases, min_count={self.min_count}, threshold={self.threshold}>"

    def params(self) -> dict:
        return {
            "min_count": self.min_count,
            "threshold": self.threshold,
            "delimiter": self.delimiter,
            "scoring": self.scoring,
            "connector_words": sorted(self.connector_words),
        }

    def export_phrases(self) -> Dict[str, float]:
        """The phrase table (a copy)."""
        return dict(self.phrasegrams)

    def _decider(self):
        """gensim's ``FrozenPhrases.score_candidate``."""
        table, delim, threshold = self.phrasegrams, self.delimiter, self.threshold

        def decide(a, between, b):
            phrase = delim.join([a, *between, b])
            return phrase if table.get(phrase, -math.inf) > threshold else None

        return decide

    def apply(self, corpus, workers: int = 1) -> Corpus:
        """``corpus`` with phrases joined (gensim ``frozen[sentences]``); see :meth:`Phrases.apply`."""
        workers = _v.workers(workers)
        corpus = _as_corpus(corpus, workers)
        names = list(self.phrasegrams)
        scores = np.fromiter(self.phrasegrams.values(), dtype=np.float64, count=len(names))
        out = _impl().apply_frozen(
            corpus.ids, corpus.offsets, corpus.vocab, sorted(self.connector_words), self.delimiter,
            names, scores, self.threshold, workers,
        )
        hist = corpus.history + [dict(self.params(), kind="FrozenPhrases", n_phrases=len(names))]
        return Corpus(*out, tokenizer=corpus.tokenizer, history=hist, validate=False)

    def __getitem__(self, sentence):
        """gensim-style: a list of str tokens -> joined tokens; a Corpus -> :meth:`apply`."""
        return _getitem(self, sentence)

    def save(self, path: PathLike) -> Path:
        """Save to directory ``path`` (a :mod:`pysynth.store`, format
        ``pysynth.text.FrozenPhrases``): ``phrases.txt`` (one per line), ``scores.npy``
        (float64) and ``meta.json`` (parameters, checksums)."""
        names = list(self.phrasegrams)
        scores = np.fromiter(self.phrasegrams.values(), dtype=np.float64, count=len(names))
        return store.save(path, "pysynth.text.FrozenPhrases", FORMAT_VERSION, arrays={"scores": scores},
                          files={"phrases.txt": store.lines_to_bytes(names, "phrase")}, meta=self.params())

    @classmethod
    def load(cls, path: PathLike) -> "FrozenPhrases":
        """Load a table saved by :meth:`save` (``ValueError`` for broken or other-version files)."""
        st = _load(path, "FrozenPhrases", False, {"scores": np.float64})
        scores = st.arrays["scores"]
        names = _lines(st, "phrases.txt", scores.shape[0], "scores.npy")
        if len(set(names)) != len(names):
            raise ValueError(f"{st.path / 'phrases.txt'} repeats a phrase")
        try:
            return cls(dict(zip(names, scores.tolist())),
                       **_meta_params(st, ("threshold", "delimiter", "connector_words", "min_count", "scoring")))
        except (TypeError, ValueError) as exc:
            raise ValueError(f"{st.path / store.META} has invalid parameters: {exc}") from None


def _getitem(model, sentence):
    """One sentence goes through gensim's loop in Python (the twin's ``_analyze``, microseconds);
    a Corpus goes through the batch path (:meth:`apply`, compiled)."""
    if isinstance(sentence, Corpus):
        return model.apply(sentence)
    if isinstance(sentence, (str, bytes)) or sentence is None:
        raise TypeError("pass a list of str tokens (one sentence) or a Corpus")
    try:
        tokens = list(sentence)
    except TypeError:
        raise TypeError("pass a list of str tokens (one sentence) or a Corpus") from None
    for t in tokens:
        if not isinstance(t, str):
            raise TypeError(f"sentence tokens must be str, got {type(t).__name__}")
    from pysynth.text import _reference

    return _reference._analyze(tokens, model.connector_words, model._decider())


def phrase_passes(
    corpus: Corpus, passes: int = 2, frozen: bool = True, workers: int = 1, **params
) -> Tuple[Corpus, List[Union[Phrases, FrozenPhrases]]]:
    """Learn and apply phrases ``passes`` times: bigrams, then trigrams and longer.

    Pass k learns :class:`Phrases` on the output of pass k - 1 (gensim practice:
    ``trigram = Phrases(bigram[sentences])``); with two passes "honda crf 230" can become
    ``honda_crf_230`` (Ding & Balog 2018, Sect. 3.1.4).

    Parameters
    ----------
    corpus : Corpus
    passes : int
        Number of passes (>= 1).
    frozen : bool
        Apply each pass's :class:`FrozenPhrases` (gensim ``freeze()``, the usual practice)
        instead of the :class:`Phrases` model; they differ on later passes (see
        :class:`FrozenPhrases`).
    workers : int
        Threads (-1 = all cores).
    **params
        :class:`Phrases` arguments, the same for every pass.

    Returns
    -------
    (Corpus, list)
        The final corpus and the model of each pass.
    """
    passes = _check_int(passes, "passes", 1)
    workers = _v.workers(workers)
    corpus = _as_corpus(corpus, workers)
    models: List[Union[Phrases, FrozenPhrases]] = []
    for _ in range(passes):
        model: Union[Phrases, FrozenPhrases] = Phrases(**params).learn(corpus, workers=workers)
        if frozen:
            model = model.freeze()
        corpus = model.apply(corpus, workers=workers)
        models.append(model)
    return corpus, models
