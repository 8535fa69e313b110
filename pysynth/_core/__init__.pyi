"""
pysynth compiled core (C++17); see pysynth._dispatch for backend selection
"""
from __future__ import annotations
from . import metrics
from . import ranking
from . import text
from . import sampling
__all__: list[str] = ['build_info', 'metrics', 'ranking', 'sampling', 'text']
def build_info() -> dict:
    ...
