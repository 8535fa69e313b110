"""The :class:`Corpus` of questions as ids with their statistics, :func:`tokenize` and
:func:`build_corpus`."""
from __future__ import annotations

from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Optional, Sequence

import numpy as np

from pysynth import _validate as _v
from pysynth import store
from pysynth._dispatch import backend
from pysynth.text._common import (
    FORMAT_VERSION,
    PathLike,
    _check_tokenizer,
    _impl,
    _lines,
    _load,
    _PhraseModel,
    _texts,
)


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
        given = cf is not None
        if cf is None:
            _v.offsets(self._offsets, self._ids.shape[0], "offsets")
            cf, df = backend("sampling").collection_stats(self._ids, self._offsets, len(self.vocab))
        self._cf = _as_array(cf, np.int64, "cf")
        self._df = _as_array(df, np.int64, "df")
        if validate:
            self._validate()
            if given:
                self._check_stats()

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

    def _check_stats(self) -> None:
        # given cf/df must be the ids' own counts: Eq. 2 and 5 would silently use wrong statistics
        cf, df = backend("sampling").collection_stats(self._ids, self._offsets, len(self.vocab))
        for name, want, got in (("cf", cf, self._cf), ("df", df, self._df)):
            bad = np.flatnonzero(np.asarray(want, np.int64) != got)
            if bad.size:
                t = int(bad[0])
                raise ValueError(f"{name} disagrees with the ids: {name}[{t}] ({self.vocab[t]!r}) = {int(got[t])}, "
                                 f"the ids give {int(want[t])} ({bad.size} terms differ); pass cf=None, df=None to "
                                 "count them from the ids")

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
    def apply_phrases(self, phrases: _PhraseModel, workers: int = 1) -> "Corpus":
        """This corpus with phrases joined (same as ``phrases.apply(self)``; ``phrases``: a
        :class:`~pysynth.text.Phrases` or :class:`~pysynth.text.FrozenPhrases`)."""
        if not isinstance(phrases, _PhraseModel):
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
