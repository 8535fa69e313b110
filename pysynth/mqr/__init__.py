"""Question rewriting, MQR (Chu et al. 2020): ill-formed questions rewritten into well-formed ones.

:mod:`.mining` mines the training pairs from Stack Exchange title edits (:mod:`pysynth.datasets.stackexchange`
reads the dumps) with the paper's filters and dev/test split rule.
"""
from pysynth.mqr.mining import FILTERS, MODES, QUESTION_WORDS, VALID_CHARS, MineResult, check_pair, mine, split_bleu

__all__ = ["mine", "MineResult", "check_pair", "split_bleu", "QUESTION_WORDS", "VALID_CHARS", "MODES", "FILTERS"]
