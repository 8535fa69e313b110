"""Keyword query generation end to end (Ding & Balog 2018): moved to
:mod:`pysynth.sampling.keywords` (issue 25); the names stay importable from here."""
from pysynth.sampling.keywords import (  # noqa: F401 - re-exported (public API)
    DEFAULT_CONFIG,
    PHRASE_PARAMS,
    KeywordGenerator,
    make_model,
    take_rows,
)

__all__ = ["KeywordGenerator", "DEFAULT_CONFIG", "PHRASE_PARAMS", "make_model", "take_rows"]
