"""
pysynth compiled core (C++17); see pysynth._dispatch for backend selection
"""
from __future__ import annotations
from . import decoding
from . import filtering
from . import metrics
from . import ranking
from . import retrieval
from . import sampling
from . import text
__all__: list[str] = ['build_info', 'decoding', 'filtering', 'metrics', 'ranking', 'retrieval', 'sampling', 'text']
def build_info() -> dict:
    ...
