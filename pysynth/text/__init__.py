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

Modules: :mod:`.corpus` (:class:`Corpus`, :func:`tokenize`, :func:`build_corpus`) and
:mod:`.phrases` (:class:`Phrases`, :class:`FrozenPhrases`, :func:`phrase_passes`); every
public name is importable from this package.

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
from pysynth.text._common import FORMAT_VERSION, TOKENIZERS
from pysynth.text.corpus import Corpus, build_corpus, tokenize
from pysynth.text.phrases import (
    ENGLISH_CONNECTOR_WORDS,
    SCORINGS,
    FrozenPhrases,
    Phrases,
    phrase_passes,
)

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
