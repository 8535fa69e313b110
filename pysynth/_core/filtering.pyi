"""
Keyword query filter, training data filter, vocabulary coverage; twin: pysynth.filtering._reference
"""
from __future__ import annotations
import numpy
import numpy.typing
import typing
__all__: list[str] = ['first_rank', 'kqf_select', 'tdf_precision']
def first_rank(tokens: typing.Any, offsets: typing.Any, order: typing.Any, vocab_size: typing.SupportsInt | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.int64]:
    """
    First rank position at which each term appears when rows are taken in ``order``.
    
    Full docs: the twin pysynth.filtering._reference.first_rank.
    """
def kqf_select(questions: typing.Any, candidate_offsets: typing.Any, results: typing.Any, result_offsets: typing.Any, depth: typing.SupportsInt | typing.SupportsIndex, workers: typing.SupportsInt | typing.SupportsIndex) -> tuple:
    """
    Keyword query filter (Ding & Balog 2018, Eq. 7): the best candidate query per question.
    
    Full docs: the twin pysynth.filtering._reference.kqf_select.
    """
def tdf_precision(results: typing.Any, result_offsets: typing.Any, questions: typing.Any, clusters: typing.Any, include_self: bool, workers: typing.SupportsInt | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.float64]:
    """
    Training data filter quality score (Ding & Balog 2018, Eq. 8) of every pair.
    
    Full docs: the twin pysynth.filtering._reference.tdf_precision.
    """
