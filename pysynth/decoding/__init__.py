"""Decoding for sequence-to-sequence models: greedy, beam, diverse beam search and sampling.

The searches (:mod:`pysynth.decoding.search`, numpy) run over any backend of the one protocol
:class:`~pysynth.decoding.protocol.DecodingBackend`:

* :class:`pysynth.decoding.backends.TorchBackend` — a torch module (Triton kernels on CUDA);
* :class:`pysynth.decoding.ort.OrtBackend` — exported ONNX graphs on onnxruntime (no torch);
* :class:`pysynth.decoding.hf.HFBackend` — a local Hugging Face ``AutoModelForSeq2SeqLM``.

:class:`SearchConfig` holds the search settings every generator takes (validated once) and
:func:`run_search` runs the search it names. ``pysynth.decoding._reference`` is the readable one-sentence torch specification. Special ids
come from the backend (``backend.specials``). This package imports nothing from
:mod:`pysynth.models` (see the layering in :mod:`pysynth.models`); importing it does not import
torch.
"""
from pysynth.decoding.config import SearchConfig, run_search
from pysynth.decoding.protocol import DecodingBackend, SpecialIds
from pysynth.decoding.search import (
                                     Hypothesis,
                                     beam_search,
                                     diverse_beam_search,
                                     greedy_search,
                                     normalize_score,
                                     sample_search,
)

__all__ = ["SearchConfig", "run_search", "Hypothesis", "greedy_search", "beam_search", "diverse_beam_search", "sample_search",
           "normalize_score", "DecodingBackend", "SpecialIds"]
