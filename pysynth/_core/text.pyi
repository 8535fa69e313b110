"""
Corpus statistics and gensim-identical phrase detection; twin: pysynth.text._reference
"""
from __future__ import annotations
import typing
__all__: list[str] = ['apply_frozen', 'apply_phrases', 'build_corpus', 'count_phrases', 'export_phrases', 'phrase_score', 'tokenize']
def apply_frozen(ids: typing.Any, offsets: typing.Any, vocab: typing.Any, connector_words: typing.Any, delimiter: str, phrases: typing.Any, scores: typing.Any, threshold: typing.SupportsFloat | typing.SupportsIndex, workers: typing.SupportsInt | typing.SupportsIndex) -> tuple:
    """
    Join phrases in every document with a phrase table: gensim 4.4 ``FrozenPhrases[sentence]``.
    
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
def apply_phrases(ids: typing.Any, offsets: typing.Any, vocab: typing.Any, connector_words: typing.Any, delimiter: str, model_vocab: typing.Any, key_offsets: typing.Any, key_terms: typing.Any, key_counts: typing.Any, corpus_word_count: typing.SupportsInt | typing.SupportsIndex, min_count: typing.SupportsInt | typing.SupportsIndex, threshold: typing.SupportsFloat | typing.SupportsIndex, scoring: str, workers: typing.SupportsInt | typing.SupportsIndex) -> tuple:
    """
    Join phrases in every document with a learned model: gensim 4.4 ``Phrases[sentence]``.
    
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
def build_corpus(texts: typing.Any, tokenizer: str, workers: typing.SupportsInt | typing.SupportsIndex) -> tuple:
    """
    Tokenize questions and count their terms (Ding & Balog 2018, Sect. 3.1.1).
    
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
def count_phrases(ids: typing.Any, offsets: typing.Any, vocab: typing.Any, connector_words: typing.Any, delimiter: str, max_vocab_size: typing.SupportsInt | typing.SupportsIndex, workers: typing.SupportsInt | typing.SupportsIndex) -> tuple:
    """
    Count unigrams and phrase candidates as gensim 4.4 ``Phrases`` learns them.
    
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
def export_phrases(vocab: typing.Any, key_offsets: typing.Any, key_terms: typing.Any, key_counts: typing.Any, corpus_word_count: typing.SupportsInt | typing.SupportsIndex, delimiter: str, min_count: typing.SupportsInt | typing.SupportsIndex, threshold: typing.SupportsFloat | typing.SupportsIndex, scoring: str) -> tuple:
    """
    The phrase table of a learned model: gensim 4.4 ``Phrases.export_phrases()``.
    
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
def phrase_score(scoring: str, worda_count: typing.SupportsInt | typing.SupportsIndex, wordb_count: typing.SupportsInt | typing.SupportsIndex, bigram_count: typing.SupportsInt | typing.SupportsIndex, len_vocab: typing.SupportsInt | typing.SupportsIndex, min_count: typing.SupportsInt | typing.SupportsIndex, corpus_word_count: typing.SupportsInt | typing.SupportsIndex) -> float:
    """
    Score of a phrase candidate, as gensim 4.4's scorers compute it (same float operations).
    
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
def tokenize(texts: typing.Any, tokenizer: str, workers: typing.SupportsInt | typing.SupportsIndex) -> list:
    """
    Split texts into tokens.
    
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
