"""Evaluation metrics: ROUGE, BLEU (three flavors) and AvgRougeL/MaxRougeL.

Exactly the numbers of the reference tools, much faster. The compiled core counts
n-gram matches, totals, lengths and LCS lengths per segment (``pysynth._core.metrics``,
twin: :mod:`pysynth.metrics._reference`); the formulas in :mod:`._formulas` turn summed
statistics into scores with the tools' own floating-point operations (sacrebleu's design).

Flavors
-------
ROUGE (Lin 2004): ``rouge-score`` (Google's rouge-score 0.1.2, optional Porter stemmer)
and ``pltrdy`` (``rouge==0.3.2``, the tool MQR, Chu et al. 2020, reports).
BLEU (Papineni et al. 2002): ``sacrebleu`` (2.x; tokenizers 13a/intl/none; smoothing
none/floor/add-k/exp), ``nltk`` (``nltk.translate.bleu_score``, smoothing methods 0-7 of
Chen & Cherry 2014) and ``coco`` (pycocoevalcap's BleuScorer, used by nlg-eval).

References are given as in sacrebleu: a list of str (one reference per hypothesis) or a
list of reference *streams*, each a list of str aligned with the hypotheses. Pre-tokenized
input is a :class:`TokenIds` (flat int32 ids + int64 offsets).

Modules: :mod:`.inputs` (:class:`TokenIds`, :func:`tokenize`), :mod:`.rouge_scores` (ROUGE,
AvgRougeL/MaxRougeL), :mod:`.bleu`, :mod:`.meteor` and :mod:`.score` (:func:`score_corpus`);
every public name is importable from this package.  ``pysynth.metrics.meteor`` is the
METEOR module, and calling it scores: ``pysynth.metrics.meteor(hyps, refs)`` is
``pysynth.metrics.meteor.meteor(hyps, refs)``, also exported here as :func:`meteor_score`.
"""
import types as _types
from typing import TYPE_CHECKING

from pysynth.metrics import meteor as _meteor_module
from pysynth.metrics.meteor import MeteorScore, meteor_jar
from pysynth.metrics.meteor import meteor as meteor_score

if TYPE_CHECKING:
    from pysynth.metrics.bleu import BLEU_FLAVORS, BLEUScore, corpus_bleu, sentence_bleu
    from pysynth.metrics.inputs import TokenIds, tokenize
    from pysynth.metrics.rouge_scores import ROUGE_FLAVORS, RougeScores, Score, avg_max_rouge_l, rouge
    from pysynth.metrics.score import ROUGE_TYPES, score_corpus

# The BLEU and ROUGE names load on first use: a METEOR-only `pysynth score` process spent ~30 ms
# importing them (and their twins) for nothing (bench/RESULTS_mqr.md, issue 29).
_LAZY = {
    "BLEU_FLAVORS": "bleu", "BLEUScore": "bleu", "corpus_bleu": "bleu", "sentence_bleu": "bleu",
    "TokenIds": "inputs", "tokenize": "inputs",
    "ROUGE_FLAVORS": "rouge_scores", "RougeScores": "rouge_scores", "Score": "rouge_scores",
    "avg_max_rouge_l": "rouge_scores", "rouge": "rouge_scores",
    "ROUGE_TYPES": "score", "score_corpus": "score",
}


def __getattr__(name):
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(f"pysynth.metrics.{_LAZY[name]}"), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module 'pysynth.metrics' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))


class _CallableModule(_types.ModuleType):
    """The METEOR module, callable as its scoring function (the README's ``metrics.meteor(hyps, refs)``)."""

    def __call__(self, *args, **kwargs):
        return self.meteor(*args, **kwargs)


_meteor_module.__class__ = _CallableModule
_CallableModule.__call__.__doc__ = _meteor_module.meteor.__doc__

__all__ = [
    "TokenIds",
    "Score",
    "RougeScores",
    "BLEUScore",
    "tokenize",
    "rouge",
    "corpus_bleu",
    "sentence_bleu",
    "avg_max_rouge_l",
    "ROUGE_FLAVORS",
    "BLEU_FLAVORS",
    "ROUGE_TYPES",
    "score_corpus",
    "meteor_score",
    "MeteorScore",
    "meteor_jar",
]
