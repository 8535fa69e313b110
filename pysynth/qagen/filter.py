"""The learned roundtrip filter of ``pysynth qagen`` (issue 26): which asked triples to keep.

The paper keeps a triple iff the QA model's best answer ``A'`` equals the drawn answer ``A``
(:func:`pysynth.qagen.pipeline.roundtrip_decision`). Behind the span rejection that test separates
good triples from bad ones weakly (kept 34 % vs discarded 25 % correct on held-out SQuAD:
``bench/RESULTS_generators.md``). The learned filter scores each triple from three numbers the
shipped models already compute, and keeps it iff the score reaches a threshold:

* ``qa_expected_f1`` -- a soft roundtrip: the QA model's 20 best spans for ``(C, Q)`` and its
  no-answer score, softmaxed, each span weighted by its token F1 with ``A`` (no answer: F1 0);
* ``question_wellformed`` -- the question's well-formedness probability (``wellformed-minilm``,
  :func:`pysynth.quality.wellformedness`);
* ``question_logprob`` -- the question generator's log-probability of its question (how sure the
  generator was; garbled questions are improbable ones).

The score is a logistic regression of the three, fitted on 1,700 triples from the 22 SQuAD 1.1
train articles no shipped qagen model trained on (``experiments/roundtrip_fit.py``); its
coefficients and threshold are ``roundtrip_filter.json`` beside this module. They belong to the
shipped ``qagen-qg-copynet`` + ``qagen-span-minilm``: with other models the pipeline falls back to
the paper's exact test (``match="auto"``).
"""
from __future__ import annotations

import functools
import json
import math
from pathlib import Path
from typing import Any, Dict, Optional, Sequence

from pysynth.qagen.data import f1_score

__all__ = ["TripleFilter", "load_filter", "expected_f1", "FILTER_FILE", "FEATURES"]

FILTER_FILE = Path(__file__).with_name("roundtrip_filter.json")
#: the score's inputs, in the order of the coefficients
FEATURES = ("qa_expected_f1", "question_wellformed", "question_logprob")


def expected_f1(answer: str, nbest: Sequence[Dict[str, Any]]) -> float:
    """The F1 with ``answer`` expected under the QA model's span distribution: ``nbest`` (the
    spans of :func:`pysynth.models.spans.predict_spans`, with their ``score`` and the shared
    ``null_score``) and the no-answer score softmaxed together; no answer counts F1 0.

    >>> round(expected_f1("Paris", [{"text": "Paris", "score": 2.0, "null_score": 0.0}]), 3)
    0.881
    """
    if not nbest:
        return 0.0
    scores = [float(s["score"]) for s in nbest] + [float(nbest[0]["null_score"])]
    m = max(scores)
    w = [math.exp(s - m) for s in scores]
    return sum(wi * f1_score(s["text"], answer) for wi, s in zip(w, nbest)) / sum(w)


class TripleFilter:
    """A logistic score of :data:`FEATURES` and the threshold a kept triple reaches.

    Parameters
    ----------
    coef : one coefficient per feature of :data:`FEATURES` (raw, unstandardised inputs).
    intercept : float
    threshold : float
        Keep iff the score (a probability, rounded to 4 decimals) is at least this.
    nbest : int
        QA spans in :func:`expected_f1`.
    models : dict
        ``question`` / ``qa``: the models the coefficients were fitted for.
    """

    def __init__(self, coef: Sequence[float], intercept: float, threshold: float, nbest: int = 20,
                 models: Optional[Dict[str, str]] = None):
        if len(coef) != len(FEATURES):
            raise ValueError(f"coef: must hold {len(FEATURES)} numbers ({', '.join(FEATURES)}), got {len(coef)}")
        self.coef, self.intercept = [float(c) for c in coef], float(intercept)
        self.threshold, self.nbest = float(threshold), int(nbest)
        self.models = dict(models or {})

    def score(self, qa_expected_f1: float, question_wellformed: float, question_logprob: float) -> float:
        """The probability that the triple is good (the fitted proxy), rounded to 4 decimals so that
        float noise of batching never moves a decision."""
        z = self.intercept + sum(c * float(x) for c, x in zip(
            self.coef, (qa_expected_f1, question_wellformed, question_logprob)))
        return round(1.0 / (1.0 + math.exp(-max(-50.0, min(50.0, z)))), 4)


@functools.lru_cache(maxsize=None)
def load_filter(path: Optional[str] = None) -> TripleFilter:
    """The shipped filter (``roundtrip_filter.json``) or the one in ``path``."""
    d = json.loads(Path(path or FILTER_FILE).read_text(encoding="utf-8"))
    return TripleFilter([d["coef"][k] for k in FEATURES], d["intercept"], d["threshold"], d.get("nbest", 20),
                        d.get("models"))
