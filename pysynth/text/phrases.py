"""Phrase detection of gensim 4.4 (:class:`Phrases`, :class:`FrozenPhrases`) on a
:class:`~pysynth.text.Corpus`, and repeated passes (:func:`phrase_passes`)."""
from __future__ import annotations

import math
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Tuple, Union

import numpy as np

from pysynth import _validate as _v
from pysynth import store
from pysynth.text._common import (
    FORMAT_VERSION,
    PathLike,
    _check_int,
    _impl,
    _lines,
    _load,
    _meta_params,
    _PhraseModel,
)
from pysynth.text.corpus import Corpus

#: gensim 4.4's ``ENGLISH_CONNECTOR_WORDS``: articles, some prepositions and conjunctions.
ENGLISH_CONNECTOR_WORDS = frozenset(
    " a an the "
    " for of with without at from to in on by "
    " and or ".split()
)
SCORINGS = ("default", "npmi")


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




def _as_corpus(corpus, workers: int) -> Corpus:
    if isinstance(corpus, Corpus):
        return corpus
    if corpus is None or isinstance(corpus, (str, bytes)):
        raise TypeError("corpus must be a Corpus or a sequence of token lists")
    return Corpus.from_tokens(corpus, workers=workers)


class Phrases(_PhraseModel):
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
    >>> from pysynth.text import build_corpus
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


class FrozenPhrases(_PhraseModel):
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
    from pysynth.text._reference import _analyze

    return _analyze(tokens, model.connector_words, model._decider())


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
