"""Decoding for the seq2seq models: greedy, beam and diverse beam search.

``pysynth.decoding.search`` (numpy, batched) runs over a step backend
(``pysynth.decoding.backends.TorchBackend`` or ``pysynth.export.onnx.OrtBackend``);
``pysynth.decoding._reference`` is the readable one-sentence torch specification.
Importing this package does not import torch.
"""
from pysynth.decoding.search import (Hypothesis, beam_search, diverse_beam_search, greedy_search,
                                     normalize_score)

__all__ = ["Hypothesis", "greedy_search", "beam_search", "diverse_beam_search", "normalize_score"]
