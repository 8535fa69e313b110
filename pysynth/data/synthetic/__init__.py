"""Synthetic question corpora fitted to real question sets, for K2Q pipeline runs at scale.

The keyword-to-question pipeline of Ding & Balog (2018) -- keyword generation (Sect. 3.1),
the SDM keyword query filter (Sect. 3.2) and the training data filter (Sect. 6.2) -- runs on
WikiAnswers, millions of questions in paraphrase clusters (Sect. 5).  The shared data hold
tens of thousands of real questions, so scale measurements need generated corpora whose
statistics match the real ones.  This module fits a small :class:`Profile` to a real question
set and generates corpora of any size from it.

What the profile holds (all fitted by :func:`fit_profile`; tokens are those of
:func:`pysynth.text.tokenize` with ``tokenizer="rouge"``, the tokenizer of
:func:`pysynth.text.build_corpus`), separately for questions in and out of clusters where
it matters:

* the *opening* of a question: its first two tokens when that pair is frequent ("what is",
  "how many"), else its first token when that is frequent, else nothing;
* the joint distribution of question length ``L`` and the number of content words ``c`` in
  the *body* (the tokens after the opening), given the opening's length;
* the unigram distribution of function words (:data:`FUNCTION_WORDS`) in the body;
* content words by frequency rank ``r``: the real counts of the ``top_words`` most frequent
  words (the head), then a power-law tail ``f(r) ~ r ** -s_tail`` fitted to the ranks
  around and after the head (Zipf 1949); a Zipf-Mandelbrot law ``f(r) ~ (r + q) ** -s``
  (Mandelbrot 1953) fitted to all frequent words is kept as a summary.  Heaps' law
  ``V = K * T ** beta`` (Heaps 1978), fitted on the last 1.5 decades of the real
  vocabulary-growth curve, gives the number ``V`` of distinct content words among ``T``
  content tokens.  Generation extrapolates: for a corpus larger than the data, the tail is
  cut at the rank where the expected number of distinct words equals Heaps' ``V`` at that
  corpus' ``T`` (so 3.17M questions get the vocabulary Heaps' law predicts, not the real
  one).  Ranks after the real words get deterministic pronounceable pseudo-words
  ("kelumo");
* paraphrase clusters: the fraction of questions in a cluster, the cluster-size
  distribution, and four probabilities calibrated so that generated clusters reproduce
  the real ones: paraphrases share their opening (``opening_copy_prob``, solved in closed
  form), have similar content-word counts (``shape_copy_prob``), and share content words
  (``copy_prob`` and ``core_weight``, matched by simulation to the fraction of a
  paraphrase's words found in its cluster-mates and to the pairwise Jaccard overlap).
  Clustered questions draw from the rank law tilted by ``r ** cluster_tilt``
  (``cluster_tilt``: their words are rarer than the others', fitted to the mean log rank).

Generation: every cluster gets a *topic*, a list of content words drawn from the rank law,
as long as its longest member needs.  A member keeps ``c`` topic words in topic order,
chosen with weights ``core_weight ** position`` (a small weight: a core that all
paraphrases share), and replaces each by a fresh draw with probability ``1 - copy_prob``;
questions outside clusters draw all content words fresh.  Function words fill the other
body positions at random.  Questions are shuffled, so clusters interleave.  The text is
word salad with realistic statistics: nothing here models syntax beyond openings.

The default profile (``synthetic_profile.json`` beside this module) is fitted by
:func:`pysynth.k2q.data.fit_default_profile` from the shared data (:func:`pysynth.k2q.data.load_question_set`
without the T0 clusters): ComQA/WikiAnswers clusters, query-wellformedness, MQR, SQuAD 2.0
and VQA questions.  Its cluster sizes are ComQA's (mean about 1.6 questions per cluster);
the paper's WikiAnswers has 26 per cluster.  Fit a profile to other data for other shapes.

Modules: :mod:`.profile` (the :class:`Profile`), :mod:`.fit` (:func:`fit_profile`),
:mod:`.generate` (:func:`generate_corpus`, :func:`iter_corpus`) and :mod:`.write`
(:func:`write_corpus`); every public name is importable from this package.

Examples
--------
>>> from pysynth.data.synthetic import generate_corpus
>>> questions, clusters = generate_corpus(5, seed=1)
>>> len(questions), len(clusters)
(5, 5)
>>> generate_corpus(5, seed=1) == (questions, clusters)
True
"""
from pysynth.data.synthetic.fit import fit_profile
from pysynth.data.synthetic.generate import generate_corpus, iter_corpus
from pysynth.data.synthetic.profile import (
    DEFAULT_PROFILE_PATH,
    FUNCTION_WORDS,
    GROUPS,
    PROFILE_FORMAT,
    PROFILE_VERSION,
    Profile,
    default_profile,
)
from pysynth.data.synthetic.write import write_corpus

__all__ = [
    "Profile",
    "fit_profile",
    "default_profile",
    "generate_corpus",
    "iter_corpus",
    "write_corpus",
    "FUNCTION_WORDS",
    "PROFILE_FORMAT",
    "PROFILE_VERSION",
    "DEFAULT_PROFILE_PATH",
    "GROUPS",
]
