"""Moved to :mod:`pysynth.datasets.stackexchange`; this alias keeps ``pysynth.stackexchange`` imports working."""
import sys

from pysynth.datasets import stackexchange as _stackexchange

sys.modules[__name__] = _stackexchange
