"""
pysynth compiled core (C++17); see pysynth._dispatch for backend selection
"""
from __future__ import annotations
from . import metrics
from . import ranking
<<<<<<< HEAD
from . import text
__all__: list[str] = ['build_info', 'metrics', 'ranking', 'text']
=======
from . import sampling
__all__: list[str] = ['build_info', 'metrics', 'ranking', 'sampling']
>>>>>>> k2q-sampling
def build_info() -> dict:
    ...
