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

import json
import math
import os
from pathlib import Path
from typing import Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple, Union

import numpy as np

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
#: Version of the on-disk formats written by :meth:`Corpus.save` and :meth:`Phrases.save`.
FORMAT_VERSION = 1

PathLike = Union[str, "os.PathLike[str]"]


def _impl():
    return backend("text")


# --------------------------------------------------------------------- validation


def _check_int(value, name: str, minimum: Optional[int] = None) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(value).__name__}")
    value = int(value)
    if minimum is not None and value < minimum:
        raise ValueError(f"{name} must be >= {minimum}, got {value}")
    return value


def _check_workers(workers) -> int:
    workers = _check_int(workers, "workers")
    if workers != -1 and workers < 1:
        raise ValueError(f"workers must be >= 1 or -1 (all cores), got {workers}")
    return workers


def _check_tokenizer(tokenizer) -> str:
    if tokenizer not in TOKENIZERS:
        raise ValueError(f"tokenizer must be one of {', '.join(TOKENIZERS)}; got {tokenizer!r}")
    return tokenizer


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


def _write_json(path: Path, obj) -> None:
    path.write_text(json.dumps(obj, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def _write_lines(path: Path, items: Sequence[str], what: str) -> None:
    for s in items:
        if "\n" in s:
            raise ValueError(f"cannot save {what} {s!r}: it contains a newline")
    data = "".join(s + "\n" for s in items)
    with open(path, "w", encoding="utf-8", newline="") as f:
        f.write(data)


def _read_meta(directory: Path, kind: str) -> dict:
    if not directory.exists():
        raise FileNotFoundError(f"{directory} does not exist")
    meta_path = directory / "meta.json"
    if not directory.is_dir() or not meta_path.is_file():
        raise ValueError(f"{directory} is not a saved pysynth {kind}: meta.json is missing")
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError(f"{meta_path} is corrupt: {exc}") from None
    if not isinstance(meta, dict) or meta.get("format") != f"pysynth.text.{kind}":
        raise ValueError(f"{meta_path} does not describe a pysynth.text.{kind} (format={meta.get('format') if isinstance(meta, dict) else None!r})")
    version = meta.get("format_version")
    if version != FORMAT_VERSION:
        raise ValueError(
            f"{directory} has format version {version!r}; this pysynth reads version {FORMAT_VERSION}. "
            "Rebuild it with this version of pysynth."
        )
    return meta


def _meta_int(meta: dict, key: str, directory: Path) -> int:
    v = meta.get(key)
    if isinstance(v, bool) or not isinstance(v, int) or v < 0:
        raise ValueError(f"{directory}/meta.json: {key} must be a non-negative int, got {v!r}")
    return v


def _load_array(directory: Path, name: str, dtype, length: int, mmap: bool) -> np.ndarray:
    path = directory / name
    if not path.is_file():
        raise ValueError(f"{directory} is incomplete: {name} is missing")
    try:
        a = np.load(path, mmap_mode="r" if mmap else None, allow_pickle=False)
    except Exception as exc:  # noqa: BLE001 - numpy raises many types for broken files
        raise ValueError(f"{path} is corrupt or truncated: {exc}") from None
    if not isinstance(a, np.ndarray) or a.dtype != np.dtype(dtype) or a.ndim != 1:
        raise ValueError(f"{path} must hold a 1-d {np.dtype(dtype)} array, got {getattr(a, 'dtype', None)} with shape {getattr(a, 'shape', None)}")
    if a.shape[0] != length:
        raise ValueError(f"{path} has {a.shape[0]} entries; meta.json says {length}")
    return a


def _load_lines(directory: Path, name: str, count: int) -> List[str]:
    path = directory / name
    if not path.is_file():
        raise ValueError(f"{directory} is incomplete: {name} is missing")
    try:
        data = path.read_bytes().decode("utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path} is corrupt: {exc}") from None
    if count == 0:
        if data:
            raise ValueError(f"{path} should be empty; meta.json says 0 entries")
        return []
    if not data.endswith("\n"):
        raise ValueError(f"{path} is truncated (no final newline)")
    items = data[:-1].split("\n")
    if len(items) != count:
        raise ValueError(f"{path} has {len(items)} lines; meta.json says {count}")
    return items


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
    cf : numpy.ndarray of int64
        Collection term frequency n(t) of each term (Eq. 2: P(t) = cf[t] / n_tokens).
    df : numpy.ndarray of int64
        Number of questions that contain each term, df(t) (Eq. 5: log(N / df(t))).
    vocab : sequence of str
        Term of each id. :func:`build_corpus` orders ids by descending cf, ties by term.
    tokenizer : str
        How the questions were tokenized (recorded, saved).
    history : sequence of dict
        Phrase passes applied so far (parameters of each), recorded and saved.
    validate : bool
        Check shapes, offsets and id ranges (an O(n) pass).

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
        self.ids = _as_array(ids, np.int32, "ids")
        self.offsets = _as_array(offsets, np.int64, "offsets")
        self.cf = _as_array(cf, np.int64, "cf")
        self.df = _as_array(df, np.int64, "df")
        self.vocab: List[str] = vocab if isinstance(vocab, list) else list(vocab)
        self.tokenizer = tokenizer
        self.history: List[dict] = [dict(h) for h in history]
        self._index: Optional[Dict[str, int]] = None
        if validate:
            self._validate()

    def _validate(self) -> None:
        o = self.offsets
        if o.shape[0] < 1:
            raise ValueError("offsets must have n_docs + 1 >= 1 entries")
        if o[0] != 0 or o[-1] != self.ids.shape[0]:
            raise ValueError(f"offsets must start at 0 and end at len(ids) = {self.ids.shape[0]}")
        if o.shape[0] > 1 and np.any(o[1:] < o[:-1]):
            raise ValueError("offsets must be non-decreasing")
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
        """Terms of the given ids."""
        v = self.vocab
        return [v[int(i)] for i in ids]

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
        workers = _check_workers(workers)
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
        """Save to directory ``path`` (created; an existing saved corpus there is replaced).

        Layout (format version :data:`FORMAT_VERSION`): ``meta.json`` (format, version,
        counts, tokenizer, phrase history), ``ids.npy`` (int32), ``offsets.npy``, ``cf.npy``,
        ``df.npy`` (int64) and ``vocab.txt`` (UTF-8, one term per line). ``meta.json`` is
        written last, so an interrupted save does not load.
        """
        d = Path(path)
        d.mkdir(parents=True, exist_ok=True)
        meta_path = d / "meta.json"
        if meta_path.exists():
            meta_path.unlink()
        np.save(d / "ids.npy", np.ascontiguousarray(self.ids, dtype=np.int32), allow_pickle=False)
        np.save(d / "offsets.npy", np.ascontiguousarray(self.offsets, dtype=np.int64), allow_pickle=False)
        np.save(d / "cf.npy", np.ascontiguousarray(self.cf, dtype=np.int64), allow_pickle=False)
        np.save(d / "df.npy", np.ascontiguousarray(self.df, dtype=np.int64), allow_pickle=False)
        _write_lines(d / "vocab.txt", self.vocab, "vocabulary term")
        _write_json(
            meta_path,
            {
                "format": "pysynth.text.Corpus",
                "format_version": FORMAT_VERSION,
                "n_docs": self.n_docs,
                "n_tokens": self.n_tokens,
                "n_terms": self.n_terms,
                "tokenizer": self.tokenizer,
                "history": self.history,
            },
        )
        return d

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
            Check offsets, id ranges and cf totals (one pass over the arrays).

        Raises
        ------
        FileNotFoundError
            ``path`` does not exist.
        ValueError
            Not a saved corpus, another format version, or missing, truncated or inconsistent
            files.
        """
        d = Path(path)
        meta = _read_meta(d, "Corpus")
        n_docs = _meta_int(meta, "n_docs", d)
        n_tokens = _meta_int(meta, "n_tokens", d)
        n_terms = _meta_int(meta, "n_terms", d)
        ids = _load_array(d, "ids.npy", np.int32, n_tokens, mmap)
        offsets = _load_array(d, "offsets.npy", np.int64, n_docs + 1, mmap)
        cf = _load_array(d, "cf.npy", np.int64, n_terms, mmap)
        df = _load_array(d, "df.npy", np.int64, n_terms, mmap)
        vocab = _load_lines(d, "vocab.txt", n_terms)
        history = meta.get("history", [])
        if not isinstance(history, list):
            raise ValueError(f"{d}/meta.json: history must be a list")
        corpus = cls(ids, offsets, cf, df, vocab, tokenizer=str(meta.get("tokenizer", "")), history=history, validate=False)
        if validate:
            try:
                corpus._validate()
            except (ValueError, TypeError) as exc:
                raise ValueError(f"{d} is inconsistent: {exc}") from None
            if int(cf.sum()) != n_tokens:
                raise ValueError(f"{d} is inconsistent: cf sums to {int(cf.sum())}, not n_tokens = {n_tokens}")
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
    return _impl().tokenize(_texts(texts), _check_tokenizer(tokenizer), _check_workers(workers))


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
    workers = _check_workers(workers)
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
        workers = _check_workers(workers)
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
        workers = _check_workers(workers)
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
        """Save to directory ``path``: ``meta.json`` (parameters, counts, format version),
        ``terms.txt`` (one term per line), ``key_offsets.npy``, ``key_terms.npy``,
        ``key_counts.npy``."""
        d = Path(path)
        d.mkdir(parents=True, exist_ok=True)
        meta_path = d / "meta.json"
        if meta_path.exists():
            meta_path.unlink()
        np.save(d / "key_offsets.npy", np.ascontiguousarray(self.key_offsets, dtype=np.int64), allow_pickle=False)
        np.save(d / "key_terms.npy", np.ascontiguousarray(self.key_terms, dtype=np.int32), allow_pickle=False)
        np.save(d / "key_counts.npy", np.ascontiguousarray(self.key_counts, dtype=np.int64), allow_pickle=False)
        _write_lines(d / "terms.txt", self.terms, "term")
        _write_json(
            meta_path,
            dict(
                self.params(),
                format="pysynth.text.Phrases",
                format_version=FORMAT_VERSION,
                n_terms=len(self.terms),
                n_keys=self.n_keys,
                n_key_terms=int(self.key_terms.shape[0]),
                corpus_word_count=self.corpus_word_count,
                min_reduce=self.min_reduce,
            ),
        )
        return d

    @classmethod
    def load(cls, path: PathLike, mmap: bool = True) -> "Phrases":
        """Load a model saved by :meth:`save` (``ValueError`` for broken or other-version files)."""
        d = Path(path)
        meta = _read_meta(d, "Phrases")
        try:
            model = cls(
                min_count=meta["min_count"], threshold=meta["threshold"], max_vocab_size=meta["max_vocab_size"],
                delimiter=meta["delimiter"], scoring=meta["scoring"], connector_words=meta["connector_words"],
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{d}/meta.json has invalid parameters: {exc}") from None
        n_keys = _meta_int(meta, "n_keys", d)
        model.terms = _load_lines(d, "terms.txt", _meta_int(meta, "n_terms", d))
        model.key_offsets = _load_array(d, "key_offsets.npy", np.int64, n_keys + 1, mmap)
        model.key_terms = _load_array(d, "key_terms.npy", np.int32, _meta_int(meta, "n_key_terms", d), mmap)
        model.key_counts = _load_array(d, "key_counts.npy", np.int64, n_keys, mmap)
        model.corpus_word_count = _meta_int(meta, "corpus_word_count", d)
        model.min_reduce = _meta_int(meta, "min_reduce", d)
        ko = model.key_offsets
        if ko[0] != 0 or ko[-1] != model.key_terms.shape[0] or (n_keys and np.any(ko[1:] <= ko[:-1])):
            raise ValueError(f"{d} is inconsistent: key_offsets must increase from 0 to len(key_terms)")
        if model.key_terms.size and (int(model.key_terms.min()) < 0 or int(model.key_terms.max()) >= len(model.terms)):
            raise ValueError(f"{d} is inconsistent: key_terms outside the vocabulary")
        if len(set(model.terms)) != len(model.terms):
            raise ValueError(f"{d}/terms.txt repeats a term")
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
        workers = _check_workers(workers)
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
        """Save to directory ``path``: ``meta.json``, ``phrases.txt`` (one per line),
        ``scores.npy`` (float64)."""
        d = Path(path)
        d.mkdir(parents=True, exist_ok=True)
        meta_path = d / "meta.json"
        if meta_path.exists():
            meta_path.unlink()
        names = list(self.phrasegrams)
        np.save(d / "scores.npy", np.fromiter(self.phrasegrams.values(), dtype=np.float64, count=len(names)), allow_pickle=False)
        _write_lines(d / "phrases.txt", names, "phrase")
        _write_json(
            meta_path,
            dict(self.params(), format="pysynth.text.FrozenPhrases", format_version=FORMAT_VERSION, n_phrases=len(names)),
        )
        return d

    @classmethod
    def load(cls, path: PathLike) -> "FrozenPhrases":
        """Load a table saved by :meth:`save` (``ValueError`` for broken or other-version files)."""
        d = Path(path)
        meta = _read_meta(d, "FrozenPhrases")
        n = _meta_int(meta, "n_phrases", d)
        names = _load_lines(d, "phrases.txt", n)
        scores = _load_array(d, "scores.npy", np.float64, n, mmap=False)
        if len(set(names)) != n:
            raise ValueError(f"{d}/phrases.txt repeats a phrase")
        try:
            return cls(
                dict(zip(names, scores.tolist())), threshold=meta["threshold"], delimiter=meta["delimiter"],
                connector_words=meta["connector_words"], min_count=meta["min_count"], scoring=meta["scoring"],
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{d}/meta.json has invalid parameters: {exc}") from None


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
    workers = _check_workers(workers)
    corpus = _as_corpus(corpus, workers)
    models: List[Union[Phrases, FrozenPhrases]] = []
    for _ in range(passes):
        model: Union[Phrases, FrozenPhrases] = Phrases(**params).learn(corpus, workers=workers)
        if frozen:
            model = model.freeze()
        corpus = model.apply(corpus, workers=workers)
        models.append(model)
    return corpus, models
