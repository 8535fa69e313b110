"""Pure-Python twins of the compiled text-stage functions (``pysynth._core.text``).

Same names, signatures, docstrings and results as the C++ side: this module is the
specification, the test oracle and the fallback (``PYSYNTH_IMPL=python``). It favours
obvious code over speed.

Two jobs for keyword query generation (Ding & Balog 2018, "Generating Synthetic Data for
Neural Keyword-to-Question Models", ICTIR '18):

* corpus statistics for the query generation model (Sect. 3.1.1): questions as vocabulary
  ids, collection term frequencies n(t) (Eq. 2), question frequencies df(t) and the number of
  questions N (Eq. 5);
* phrase detection (Sect. 3.1.4) after Mikolov et al. 2013 ("Distributed Representations of
  Words and Phrases and their Compositionality", NIPS '13, Sect. 4, Eq. 6), exactly as gensim
  4.4's ``gensim.models.phrases.Phrases`` and ``FrozenPhrases`` compute it.

gensim semantics reproduced here (read off ``gensim/models/phrases.py`` 4.4.0):

* **counting** (``Phrases._learn_vocab``): one dict keyed by *strings*. Every token that is
  not a connector word adds 1 to its own entry; a candidate is a non-connector token, any
  connector words after it, and the next non-connector token (``start_token``,
  ``in_between``, ``word``); it adds 1 to the entry of its tokens joined with the delimiter.
  Connector words are never counted as unigrams, and connector words before the first
  non-connector token of a sentence belong to no candidate. ``corpus_word_count`` counts all
  tokens. After each sentence, if the dict has more than ``max_vocab_size`` entries, entries
  with count < ``min_reduce`` are dropped and ``min_reduce`` grows by 1 (it starts at 1, so
  the first pruning drops nothing).
* **scoring** (``score_candidate``): a candidate needs count(word_a) > 0, count(word_b) > 0
  and count(joined) > 0; then ``score = scorer(...)`` and it is a phrase if
  ``not score <= threshold``. ``len_vocab`` is the number of dict entries (unigrams *and*
  candidates).
* **applying** (``analyze_sentence``): left to right, greedily: a candidate that scores is
  emitted as one joined token and the next candidate starts after it; otherwise its first
  token and the connector words are emitted and its last token starts the next candidate.
* **export / freeze** (``export_phrases``, ``FrozenPhrases``): every dict key containing the
  delimiter is split on it and scored as (first piece, last piece, key). A frozen model joins
  a candidate when its string is in the table with score > threshold. When tokens already
  contain the delimiter (a second pass over "honda_crf 230"), this re-splitting makes frozen
  and unfrozen models differ; that is gensim's behaviour and it is kept.

Keys in id space: a key is a tuple of vocabulary ids (one id: a unigram; two or more: a
candidate). Keys are sorted by (number of ids, ids). When two keys join to the same string,
they are one gensim entry, represented by the first of them in that order.
"""
from __future__ import annotations

import math
import re
from typing import Dict, List, Optional, Sequence, Tuple

import numpy as np

from pysynth import _validate as _v
from pysynth._validate import strings

__all__ = [
    "tokenize",
    "build_corpus",
    "count_phrases",
    "export_phrases",
    "apply_phrases",
    "apply_frozen",
    "phrase_score",
]

_INT64_MIN, _INT64_MAX = -(2**63), 2**63 - 1
_NON_ALNUM = re.compile(r"[^a-z0-9]+")

# --------------------------------------------------------------------------- inputs


_strings = strings  # shared with every twin: pysynth/_validate.py


def _check_workers(workers) -> None:
    _v.workers(workers)


def _int64(x, name: str) -> int:
    if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
        raise TypeError(f"{name} must be an int, got {type(x).__name__}")
    x = int(x)
    if not _INT64_MIN <= x <= _INT64_MAX:
        raise TypeError(f"{name} = {x} does not fit in 64 bits")
    return x


def _float(x, name: str) -> float:
    if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
        raise TypeError(f"{name} must be a number, got {type(x).__name__}")
    return float(x)


def _str(x, name: str) -> str:
    if not isinstance(x, str):
        raise TypeError(f"{name} must be str, got {type(x).__name__}")
    return x


def _int_array(obj, name: str, dtype) -> np.ndarray:
    try:
        a = np.asarray(obj)
    except Exception:  # noqa: BLE001 - ragged lists and the like
        raise TypeError(f"{name} must be a 1-d integer array") from None
    if a.dtype.kind not in "iu" and not (a.dtype.kind == "b" and a.size == 0):
        raise TypeError(f"{name} must be a 1-d integer array, got dtype {a.dtype}")
    if a.ndim != 1:
        raise ValueError(f"{name} must be 1-d, got {a.ndim} dimensions")
    if a.size and a.dtype != dtype:
        info = np.iinfo(dtype)
        if int(a.min()) < info.min or int(a.max()) > info.max:
            raise ValueError(f"{name} holds values outside the range of {np.dtype(dtype)}")
    return a.astype(dtype)


def _offsets(obj, n: int, total: int, name: str) -> np.ndarray:
    off = np.asarray(obj, dtype=np.int64)
    if off.ndim == 1 and off.shape[0] != n + 1:
        raise ValueError(f"{name} must have {n + 1} entries, got {off.shape[0]}")
    return _v.offsets(off, total, name)


def _docs(ids, offsets, vocab) -> Tuple[List[List[int]], List[str]]:
    """Validated (documents as lists of ids, vocabulary)."""
    ids = _int_array(ids, "ids", np.int32)
    off = _int_array(offsets, "offsets", np.int64)
    if off.shape[0] < 1:
        raise ValueError("offsets must have n_docs + 1 >= 1 entries")
    off = _offsets(off, off.shape[0] - 1, ids.shape[0], "offsets")
    vocab = _strings(vocab, "vocab")
    if ids.size and not vocab:
        raise ValueError(f"ids: the vocabulary is empty but ids has {ids.size} entries")
    bad = np.nonzero((ids < 0) | (ids >= len(vocab)))[0]
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"ids[{i}] = {int(ids[i])} is outside [0, {len(vocab)}), the vocabulary size")
    flat = ids.tolist()
    return [flat[off[i] : off[i + 1]] for i in range(off.shape[0] - 1)], vocab


def _delimiter(delimiter) -> str:
    delimiter = _str(delimiter, "delimiter")
    if not delimiter:
        raise ValueError("delimiter must be a non-empty string")
    return delimiter


def _scoring(scoring) -> str:
    scoring = _str(scoring, "scoring")
    if scoring not in ("default", "npmi"):
        raise ValueError(f"scoring must be 'default' or 'npmi', got '{scoring}'")
    return scoring


def _tokenizer(tokenizer) -> str:
    tokenizer = _str(tokenizer, "tokenizer")
    if tokenizer not in ("rouge", "whitespace"):
        raise ValueError(f"tokenizer must be 'rouge' or 'whitespace', got '{tokenizer}'")
    return tokenizer


def _model_keys(vocab, key_offsets, key_terms, key_counts, vocab_name: str):
    """Validated model: (vocab, keys as id tuples, counts)."""
    vocab = _strings(vocab, vocab_name)
    ko = _int_array(key_offsets, "key_offsets", np.int64)
    kt = _int_array(key_terms, "key_terms", np.int32)
    kc = _int_array(key_counts, "key_counts", np.int64)
    if ko.shape[0] < 1:
        raise ValueError("key_offsets must have n_keys + 1 >= 1 entries")
    n_keys = ko.shape[0] - 1
    if kc.shape[0] != n_keys:
        raise ValueError(f"key_counts has {kc.shape[0]} entries but key_offsets describes {n_keys} keys")
    if ko[0] != 0 or ko[n_keys] != kt.shape[0]:
        raise ValueError(f"key_offsets must start at 0 and end at len(key_terms) = {kt.shape[0]}")
    if np.any(np.diff(ko) <= 0):
        k = int(np.nonzero(np.diff(ko) <= 0)[0][0])
        raise ValueError(f"key_offsets must be increasing: key {k} has no terms")
    bad = np.nonzero((kt < 0) | (kt >= len(vocab)))[0]
    if bad.size:
        i = int(bad[0])
        raise ValueError(f"key_terms[{i}] = {int(kt[i])} is outside [0, {len(vocab)}), the model vocabulary size")
    terms = kt.tolist()
    keys = [tuple(terms[ko[k] : ko[k + 1]]) for k in range(n_keys)]
    for k in range(1, n_keys):
        if not (len(keys[k - 1]), keys[k - 1]) < (len(keys[k]), keys[k]):
            raise ValueError(
                "keys must be sorted by (number of terms, terms) without repeats, as count_phrases "
                f"returns them; key {k} is out of order"
            )
    return vocab, keys, kc.tolist()


def _model_dict(vocab, keys, counts, delimiter) -> Dict[str, int]:
    """gensim's ``Phrases.vocab``: joined key string -> count."""
    d: Dict[str, int] = {}
    first: Dict[str, int] = {}
    for k, (key, c) in enumerate(zip(keys, counts)):
        s = delimiter.join(vocab[t] for t in key)
        if s in d:
            raise ValueError(f"keys {first[s]} and {k} join to the same string '{s}'")
        d[s] = c
        first[s] = k
    return d


def _corpus_from_tokens(docs: List[List[str]]):
    """Token lists -> (ids, offsets, cf, df, vocab): ids by (cf desc, term asc)."""
    cf: Dict[str, int] = {}
    df: Dict[str, int] = {}
    for doc in docs:
        for t in doc:
            cf[t] = cf.get(t, 0) + 1
        for t in set(doc):
            df[t] = df.get(t, 0) + 1
    vocab = sorted(cf, key=lambda t: (-cf[t], t))
    index = {t: i for i, t in enumerate(vocab)}
    offsets = np.zeros(len(docs) + 1, dtype=np.int64)
    np.cumsum([len(d) for d in docs], out=offsets[1:])
    ids = np.fromiter((index[t] for d in docs for t in d), dtype=np.int32, count=int(offsets[-1]))
    return (
        ids,
        offsets,
        np.array([cf[t] for t in vocab], dtype=np.int64),
        np.array([df[t] for t in vocab], dtype=np.int64),
        vocab,
    )


# ------------------------------------------------------------------------ tokenizers


def _tokens(text: str, tokenizer: str) -> List[str]:
    if tokenizer == "rouge":
        return [t for t in _NON_ALNUM.split(text.lower()) if t]
    return text.split()


def tokenize(texts: Sequence[str], tokenizer: str, workers: int) -> List[List[str]]:
    """Split texts into tokens.

    Parameters
    ----------
    texts : sequence of str
    tokenizer : {"rouge", "whitespace"}
        ``"rouge"``: ``text.lower()``, then the runs of ``[a-z0-9]`` (rouge-score's tokenizer,
        also used by the AvgRougeL/MaxRougeL evaluation of Ding & Balog 2018, Eq. 17-18, so
        keyword queries and their evaluation see the same tokens; "what's" gives ``what``,
        ``s``). ``"whitespace"``: ``str.split()``, case kept, for pre-tokenized text.
    workers : int
        Threads (-1 = all cores); the result does not depend on it.

    Returns
    -------
    list of list of str

    Examples
    --------
    >>> tokenize(["How fast is a 2004 Honda CRF-230?"], "rouge", 1)
    [['how', 'fast', 'is', 'a', '2004', 'honda', 'crf', '230']]
    """
    texts = _strings(texts, "texts")
    tokenizer = _tokenizer(tokenizer)
    _check_workers(workers)
    return [_tokens(t, tokenizer) for t in texts]


# ----------------------------------------------------------------------- corpora


def build_corpus(texts: Sequence[str], tokenizer: str, workers: int):
    """Tokenize questions and count their terms (Ding & Balog 2018, Sect. 3.1.1).

    Parameters
    ----------
    texts : sequence of str
        One question per item.
    tokenizer : {"rouge", "whitespace"}
        See :func:`tokenize`.
    workers : int
        Threads (-1 = all cores); the result does not depend on it.

    Returns
    -------
    ids : numpy.ndarray of int32
        All tokens as vocabulary ids; question i is ``ids[offsets[i]:offsets[i+1]]``.
    offsets : numpy.ndarray of int64
        ``len(texts) + 1`` entries.
    cf : numpy.ndarray of int64
        Collection term frequency n(t) (Eq. 2).
    df : numpy.ndarray of int64
        Number of questions containing t, df(t) (Eq. 5).
    vocab : list of str
        Term of each id. Ids are ordered by descending cf, ties by the term (code point
        order); every term occurs at least once.

    Examples
    --------
    >>> ids, offsets, cf, df, vocab = build_corpus(["a b a", "b c"], "rouge", 1)
    >>> vocab, ids.tolist(), offsets.tolist(), cf.tolist(), df.tolist()
    (['a', 'b', 'c'], [0, 1, 0, 1, 2], [0, 3, 5], [2, 2, 1], [1, 2, 1])
    """
    texts = _strings(texts, "texts")
    tokenizer = _tokenizer(tokenizer)
    _check_workers(workers)
    return _corpus_from_tokens([_tokens(t, tokenizer) for t in texts])


# ----------------------------------------------------------------------- scoring


def phrase_score(
    scoring: str,
    worda_count: int,
    wordb_count: int,
    bigram_count: int,
    len_vocab: int,
    min_count: int,
    corpus_word_count: int,
) -> float:
    """Score of a phrase candidate, as gensim 4.4's scorers compute it (same float operations).

    ``"default"`` is gensim's ``original_scorer``, the score of Mikolov et al. 2013 (Sect. 4,
    Eq. 6), ``(count(ab) - delta) / (count(a) * count(b))``, with ``delta = min_count`` and
    scaled by the vocabulary size::

        (bigram_count - min_count) / float(worda_count * wordb_count) * len_vocab

    (-inf if the product is 0). ``"npmi"`` is normalized pointwise mutual information
    (Bouma 2009), -inf when ``bigram_count < min_count``, else::

        p(x) = count(x) / float(corpus_word_count)
        log(p(ab) / (p(a) * p(b))) / -log(p(ab))

    with -inf where ``math.log`` raises (gensim catches ``ValueError``). Where gensim would
    raise ``ZeroDivisionError`` (``corpus_word_count == 0``, or ``p(ab) == 1``) the score is
    -inf here too; counts learned from a corpus never get there.

    Parameters
    ----------
    scoring : {"default", "npmi"}
    worda_count, wordb_count, bigram_count : int
        Counts of the first token, the last token and the joined candidate.
    len_vocab : int
        Number of entries of the phrase vocabulary (unigrams and candidates).
    min_count : int
    corpus_word_count : int
        All tokens of the corpus, connector words included.

    Returns
    -------
    float

    Examples
    --------
    >>> phrase_score("default", 10, 20, 8, 1000, 5, 10000)
    15.0
    """
    scoring = _scoring(scoring)
    a = _int64(worda_count, "worda_count")
    b = _int64(wordb_count, "wordb_count")
    ab = _int64(bigram_count, "bigram_count")
    n_vocab = _int64(len_vocab, "len_vocab")
    mc = _int64(min_count, "min_count")
    cwc = _int64(corpus_word_count, "corpus_word_count")
    return _score(scoring, a, b, ab, n_vocab, mc, cwc)


def _score(scoring: str, a: int, b: int, ab: int, n_vocab: int, mc: int, cwc: int) -> float:
    if scoring == "default":
        denom = a * b
        if denom == 0:
            return -math.inf
        return (ab - mc) / float(denom) * n_vocab
    if ab < mc or cwc == 0:
        return -math.inf
    total = float(cwc)
    pa = a / total
    pb = b / total
    pab = ab / total
    if pa * pb == 0.0:
        return -math.inf
    ratio = pab / (pa * pb)
    if not (ratio > 0.0 and pab > 0.0):
        return -math.inf
    den = -math.log(pab)
    if den == 0.0:
        return -math.inf
    return math.log(ratio) / den


# ----------------------------------------------------------------------- phrases


def _candidates(doc: List[int], is_conn: List[bool]):
    """gensim's candidates of one sentence: (start, in_between..., word) id tuples."""
    start, between = None, []
    for t in doc:
        if not is_conn[t]:
            if start is not None:
                yield (start, *between, t)
            start, between = t, []
        elif start is not None:
            between.append(t)


def count_phrases(ids, offsets, vocab, connector_words, delimiter: str, max_vocab_size: int, workers: int):
    """Count unigrams and phrase candidates as gensim 4.4 ``Phrases`` learns them.

    This is ``Phrases._learn_vocab`` (see the module docstring for the exact rules, including
    ``max_vocab_size`` pruning) on a corpus of vocabulary ids; phrases are then scored with
    :func:`phrase_score` (Mikolov et al. 2013, Eq. 6; Ding & Balog 2018, Sect. 3.1.4).

    Parameters
    ----------
    ids, offsets : array_like of int
        The corpus (flat int32 ids, int64 offsets with n_docs + 1 entries).
    vocab : sequence of str
        Term of each id.
    connector_words : sequence of str
        Words that may sit inside a phrase but never start or end one (gensim's
        ``connector_words``, e.g. ``ENGLISH_CONNECTOR_WORDS``).
    delimiter : str
        Glue between the tokens of a phrase (gensim: ``"_"``). Non-empty.
    max_vocab_size : int
        gensim's pruning threshold on the number of distinct keys.
    workers : int
        Threads (-1 = all cores); the result does not depend on it.

    Returns
    -------
    key_offsets : numpy.ndarray of int64
        Key k is ``key_terms[key_offsets[k]:key_offsets[k+1]]``: one id for a unigram, two or
        more for a candidate "a [connectors...] b". Keys are sorted by (number of ids, ids);
        keys that join to the same string are one entry (the first one represents it).
    key_terms : numpy.ndarray of int32
    key_counts : numpy.ndarray of int64
        gensim's counts (``Phrases.vocab`` values), all >= 1.
    corpus_word_count : int
        All tokens, connector words included.
    min_reduce : int
        1 + the number of prunings.

    Examples
    --------
    >>> ko, kt, kc, cwc, mr = count_phrases([0, 1, 0, 1], [0, 2, 4], ["new", "york"], [], "_", 100, 1)
    >>> ko.tolist(), kt.tolist(), kc.tolist(), cwc, mr
    ([0, 1, 2, 4], [0, 1, 0, 1], [2, 2, 2], 4, 1)
    """
    docs, vocab = _docs(ids, offsets, vocab)
    conn = set(_strings(connector_words, "connector_words"))
    delimiter = _delimiter(delimiter)
    max_vocab_size = _int64(max_vocab_size, "max_vocab_size")
    _check_workers(workers)
    is_conn = [t in conn for t in vocab]

    def join(key):
        return delimiter.join(vocab[t] for t in key)

    # gensim's loop, string keyed, with pruning; `rep` remembers each string's first key.
    counts: Dict[str, int] = {}
    rep: Dict[str, Tuple[int, ...]] = {}
    min_reduce = 1
    total_words = 0

    key_str: Dict[Tuple[int, ...], str] = {}  # a cache: each key is joined once

    def add(key):
        s = key_str.get(key)
        if s is None:
            s = key_str[key] = join(key)
            old = rep.get(s)
            if old is None or (len(key), key) < (len(old), old):
                rep[s] = key
        counts[s] = counts.get(s, 0) + 1

    for doc in docs:
        for t in doc:
            if not is_conn[t]:
                add((t,))
        for cand in _candidates(doc, is_conn):
            add(cand)
        total_words += len(doc)
        if len(counts) > max_vocab_size:
            for s in list(counts):
                if counts[s] < min_reduce:
                    del counts[s]
            min_reduce += 1
    keys = sorted(((rep[s], c) for s, c in counts.items()), key=lambda kc: (len(kc[0]), kc[0]))
    key_offsets = np.zeros(len(keys) + 1, dtype=np.int64)
    np.cumsum([len(k) for k, _ in keys], out=key_offsets[1:])
    key_terms = np.array([t for k, _ in keys for t in k], dtype=np.int32)
    key_counts = np.array([c for _, c in keys], dtype=np.int64)
    return key_offsets, key_terms, key_counts, total_words, min_reduce


def export_phrases(
    vocab,
    key_offsets,
    key_terms,
    key_counts,
    corpus_word_count: int,
    delimiter: str,
    min_count: int,
    threshold: float,
    scoring: str,
):
    """The phrase table of a learned model: gensim 4.4 ``Phrases.export_phrases()``.

    Every key whose joined string contains the delimiter is split on it and scored as
    (first piece, last piece, whole key) with :func:`phrase_score`; keys scoring above the
    threshold are phrases. This table is what ``FrozenPhrases`` (gensim's ``freeze()``) uses.

    Parameters
    ----------
    vocab : sequence of str
        Term of each id of the keys.
    key_offsets, key_terms, key_counts : array_like
        As returned by :func:`count_phrases`.
    corpus_word_count : int
    delimiter : str
    min_count : int
    threshold : float
    scoring : {"default", "npmi"}

    Returns
    -------
    phrases : list of str
        Joined phrases, in key order.
    scores : numpy.ndarray of float64

    Examples
    --------
    >>> export_phrases(["new", "york"], [0, 1, 2, 4], [0, 1, 0, 1], [2, 2, 2], 4, "_", 1, 0.1, "default")
    (['new_york'], array([0.75]))
    """
    vocab, keys, counts = _model_keys(vocab, key_offsets, key_terms, key_counts, "vocab")
    cwc = _int64(corpus_word_count, "corpus_word_count")
    if cwc < 0:
        raise ValueError("corpus_word_count must be >= 0")
    delimiter = _delimiter(delimiter)
    min_count = _int64(min_count, "min_count")
    threshold = _float(threshold, "threshold")
    scoring = _scoring(scoring)
    d = _model_dict(vocab, keys, counts, delimiter)
    n_vocab = len(d)
    phrases, scores = [], []
    for s, c in d.items():  # gensim: for token in self.vocab
        pieces = s.split(delimiter)
        if len(pieces) < 2:
            continue
        ca, cb = d.get(pieces[0], 0), d.get(pieces[-1], 0)
        if ca <= 0 or cb <= 0 or c <= 0:
            continue
        score = _score(scoring, ca, cb, c, n_vocab, min_count, cwc)
        if score <= threshold:
            continue
        phrases.append(s)
        scores.append(score)
    return phrases, np.array(scores, dtype=np.float64)


def _analyze(doc: List[str], conn: set, decide):
    """gensim ``analyze_sentence`` on tokens; decide(a, between, b) -> joined phrase or None."""
    out: List[str] = []
    start, between = None, []
    for w in doc:
        if w not in conn:
            if start:
                phrase = decide(start, between, w)
                if phrase is not None:
                    out.append(phrase)
                    start, between = None, []
                else:
                    out.append(start)
                    out.extend(between)
                    start, between = w, []
            else:
                start, between = w, []
        elif start:
            between.append(w)
        else:
            out.append(w)
    if start:
        out.append(start)
        out.extend(between)
    return out


def apply_phrases(
    ids,
    offsets,
    vocab,
    connector_words,
    delimiter: str,
    model_vocab,
    key_offsets,
    key_terms,
    key_counts,
    corpus_word_count: int,
    min_count: int,
    threshold: float,
    scoring: str,
    workers: int,
):
    """Join phrases in every document with a learned model: gensim 4.4 ``Phrases[sentence]``.

    Left to right, greedily (``analyze_sentence``): a candidate (token, connector words,
    token) whose first and last tokens and joined string all have counts > 0 and whose
    :func:`phrase_score` is above the threshold becomes one token. Ding & Balog 2018,
    Sect. 3.1.4: "how fast is a 2004 honda crf 230" -> "how fast is a 2004 honda_crf_230"
    (after two passes).

    Parameters
    ----------
    ids, offsets, vocab : corpus to transform (see :func:`build_corpus`)
    connector_words : sequence of str
    delimiter : str
    model_vocab, key_offsets, key_terms, key_counts, corpus_word_count :
        The model, as returned by :func:`count_phrases` on a corpus with vocabulary
        ``model_vocab`` (it may differ from ``vocab``: terms are matched by string).
    min_count : int
    threshold : float
    scoring : {"default", "npmi"}
    workers : int
        Threads (-1 = all cores); the result does not depend on it.

    Returns
    -------
    ids, offsets, cf, df, vocab
        The transformed corpus, in the layout of :func:`build_corpus` (phrases are terms;
        terms that no longer occur are dropped; ids by descending cf, ties by term).

    Examples
    --------
    >>> model = count_phrases([0, 1, 0, 1], [0, 2, 4], ["new", "york"], [], "_", 100, 1)
    >>> out = apply_phrases([0, 1, 0, 1], [0, 2, 4], ["new", "york"], [], "_", ["new", "york"],
    ...                     *model[:4], 1, 0.1, "default", 1)
    >>> out[0].tolist(), out[4]
    ([0, 0], ['new_york'])
    """
    docs, vocab = _docs(ids, offsets, vocab)
    conn = set(_strings(connector_words, "connector_words"))
    delimiter = _delimiter(delimiter)
    mvocab, keys, counts = _model_keys(model_vocab, key_offsets, key_terms, key_counts, "model_vocab")
    cwc = _int64(corpus_word_count, "corpus_word_count")
    if cwc < 0:
        raise ValueError("corpus_word_count must be >= 0")
    min_count = _int64(min_count, "min_count")
    threshold = _float(threshold, "threshold")
    scoring = _scoring(scoring)
    _check_workers(workers)
    d = _model_dict(mvocab, keys, counts, delimiter)
    n_vocab = len(d)
    cache: Dict[Tuple[str, ...], Optional[str]] = {}

    def decide(a: str, between: List[str], b: str) -> Optional[str]:  # Phrases.score_candidate
        key = (a, *between, b)
        if key in cache:
            return cache[key]
        result = None
        ca = d.get(a, 0)
        cb = d.get(b, 0)
        phrase = delimiter.join(key)
        c = d.get(phrase, 0)
        if ca > 0 and cb > 0 and c > 0:
            if not _score(scoring, ca, cb, c, n_vocab, min_count, cwc) <= threshold:
                result = phrase
        cache[key] = result
        return result

    out = [_analyze([vocab[t] for t in doc], conn, decide) for doc in docs]
    return _corpus_from_tokens(out)


def apply_frozen(ids, offsets, vocab, connector_words, delimiter: str, phrases, scores, threshold: float, workers: int):
    """Join phrases in every document with a phrase table: gensim 4.4 ``FrozenPhrases[sentence]``.

    A candidate is joined when its joined string is in ``phrases`` with a score above the
    threshold (gensim: ``phrasegrams.get(phrase, -inf) > threshold``); otherwise as
    :func:`apply_phrases`.

    Parameters
    ----------
    ids, offsets, vocab : corpus to transform (see :func:`build_corpus`)
    connector_words : sequence of str
    delimiter : str
    phrases : sequence of str
        Distinct phrase strings (e.g. from :func:`export_phrases`).
    scores : array_like of float
        Score of each phrase.
    threshold : float
    workers : int
        Threads (-1 = all cores); the result does not depend on it.

    Returns
    -------
    ids, offsets, cf, df, vocab
        The transformed corpus (see :func:`apply_phrases`).

    Examples
    --------
    >>> out = apply_frozen([0, 1, 2], [0, 3], ["a", "new", "york"], [], "_", ["new_york"], [5.0], 1.0, 1)
    >>> out[4], out[0].tolist()
    (['a', 'new_york'], [0, 1])
    """
    docs, vocab = _docs(ids, offsets, vocab)
    conn = set(_strings(connector_words, "connector_words"))
    delimiter = _delimiter(delimiter)
    phrases = _strings(phrases, "phrases")
    try:
        sc = np.asarray(scores, dtype=np.float64)
    except (TypeError, ValueError):
        raise TypeError("scores must be a 1-d float array") from None
    if sc.ndim != 1:
        raise TypeError("scores must be a 1-d float array")
    if sc.shape[0] != len(phrases):
        raise ValueError(f"scores has {sc.shape[0]} entries but phrases has {len(phrases)}")
    threshold = _float(threshold, "threshold")
    _check_workers(workers)
    table: Dict[str, float] = {}
    for p, s in zip(phrases, sc.tolist()):
        if p in table:
            raise ValueError(f"phrases must be distinct; '{p}' is repeated")
        table[p] = s

    def decide(a: str, between: List[str], b: str) -> Optional[str]:  # FrozenPhrases.score_candidate
        phrase = delimiter.join([a, *between, b])
        return phrase if table.get(phrase, -math.inf) > threshold else None

    out = [_analyze([vocab[t] for t in doc], conn, decide) for doc in docs]
    return _corpus_from_tokens(out)
