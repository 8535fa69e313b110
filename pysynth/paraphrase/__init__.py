"""Paraphrase augmentation by pivoting through two seq2seq models with diverse beam search
(Granstedt 2017, Sect. 3).

* :func:`select` / :func:`score` / :func:`pivot_rejections` -- the thesis's two filters
  (:mod:`pysynth.paraphrase.filters`, Sect. 3.2.1);
* :class:`Paraphraser`, :class:`ParaphraseConfig`, :func:`paraphrase_rows`, :func:`round_trip` --
  the pipeline in memory (:mod:`pysynth.paraphrase.pipeline`);
* :func:`run` -- files in and out, resumable, local or Ray (``pysynth paraphrase``);
* :mod:`pysynth.paraphrase.pivots` -- the English<->French pivot models trained on Tatoeba.

Importing this package imports numpy only; models load when a :class:`Paraphraser` is built.
"""
from pysynth.paraphrase.filters import pivot_rejections, score, select
from pysynth.paraphrase.jobs import run
from pysynth.paraphrase.pipeline import ParaphraseConfig, Paraphraser, paraphrase_rows, round_trip

__all__ = ["select", "score", "pivot_rejections", "ParaphraseConfig", "Paraphraser", "paraphrase_rows",
           "round_trip", "run"]
