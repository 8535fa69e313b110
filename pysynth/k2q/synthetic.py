"""Moved to :mod:`pysynth.data.synthetic`; this alias keeps ``pysynth.k2q.synthetic`` imports working."""
import sys

from pysynth.data import synthetic as _synthetic

sys.modules[__name__] = _synthetic
