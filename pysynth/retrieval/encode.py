"""Moved: the ONNX text encoder is in the model stack since issue 25 (a stage keeps vectors only).

* ``OnnxEncoder``, ``load``, ``FORMAT``, ``FORMAT_VERSION`` -> :mod:`pysynth.models.embed`
* ``export`` -> :func:`pysynth.export.encoder.export_bi_encoder`

This module imports nothing from the model stack; reading one of the old names raises an
ImportError that names the new place.
"""
from __future__ import annotations

__all__: list = []

_MOVED = {"OnnxEncoder": "pysynth.models.embed.OnnxEncoder", "load": "pysynth.models.embed.load",
          "FORMAT": "pysynth.models.embed.FORMAT", "FORMAT_VERSION": "pysynth.models.embed.FORMAT_VERSION",
          "export": "pysynth.export.encoder.export_bi_encoder"}


def __getattr__(name: str):
    new = _MOVED.get(name)
    if new is None:
        raise AttributeError(f"module 'pysynth.retrieval.encode' has no attribute {name!r}")
    mod, _, attr = new.rpartition(".")
    raise ImportError(f"pysynth.retrieval.encode.{name} moved to {new} (issue 25: retrieval keeps vectors only); "
                      f"use: from {mod} import {attr}")
