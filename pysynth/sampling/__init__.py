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

Modules: :mod:`.lengths` (P(s)), :mod:`.inputs` (statistics, clusters, candidates,
exclusion masks) and :mod:`.model` (:class:`KeywordModel`, :func:`generate`); every public
name is importable from this package.

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
from pysynth.sampling.inputs import (
    QUESTION_WORDS,
    Candidates,
    Clusters,
    CollectionStats,
    TermDistributions,
    exclusion_mask,
)
from pysynth.sampling.lengths import (
    T0_KEYWORD_LENGTHS,
    default_length_dist,
    estimate_length_dist,
    keyword_lengths,
    length_dist_from_counts,
    poisson_length_dist,
)
from pysynth.sampling.model import MODELS, STRATEGIES, KeywordModel, generate

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
