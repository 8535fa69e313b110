"""
Positional inverted index, SDM and BM25 retrieval; twin: pysynth.retrieval._reference
"""
from __future__ import annotations
import collections.abc
import numpy
import numpy.typing
import typing
__all__: list[str] = ['build_index', 'ordered_count', 'search', 'target_ranks', 'unordered_count', 'validate_index', 'window_stats']
def build_index(ids: typing.Any, offsets: typing.Any, vocab_size: typing.SupportsInt | typing.SupportsIndex, workers: typing.SupportsInt | typing.SupportsIndex) -> dict:
    """
    Build the positional index of the documents ``ids[offsets[d]:offsets[d+1]]``.
    
    Full docs: the twin pysynth.retrieval._reference.build_index.
    """
def ordered_count(A: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], B: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], width: typing.SupportsInt | typing.SupportsIndex) -> int:
    """
    Galago ``OrderedWindowIterator`` matches of ``#od:width(a b)`` in one document.
    
    Full docs: the twin pysynth.retrieval._reference.ordered_count.
    """
def search(index: typing.Any, query_ids: typing.Any, query_offsets: typing.Any, model: str, k: typing.SupportsInt | typing.SupportsIndex, mu: typing.SupportsFloat | typing.SupportsIndex, weights: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], k1: typing.SupportsFloat | typing.SupportsIndex, b: typing.SupportsFloat | typing.SupportsIndex, workers: typing.SupportsInt | typing.SupportsIndex, float64: bool) -> tuple:
    """
    Top ``k`` documents of every query, by SDM or BM25 (definitions in the module docstring).
    
    Full docs: the twin pysynth.retrieval._reference.search.
    """
def target_ranks(index: typing.Any, query_ids: typing.Any, query_offsets: typing.Any, targets: typing.Any, n: typing.SupportsInt | typing.SupportsIndex, model: str, mu: typing.SupportsFloat | typing.SupportsIndex, weights: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], k1: typing.SupportsFloat | typing.SupportsIndex, b: typing.SupportsFloat | typing.SupportsIndex, workers: typing.SupportsInt | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.int32]:
    """
    Rank (1-based) of ``targets[i]`` in the ranking of query ``i``, or 0 if not in the top ``n``.
    
    Full docs: the twin pysynth.retrieval._reference.target_ranks.
    """
def unordered_count(A: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], B: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], same_term: bool, width: typing.SupportsInt | typing.SupportsIndex) -> int:
    """
    Galago ``UnorderedWindowIterator`` matches of ``#uw:width(a b)`` in one document.
    
    Full docs: the twin pysynth.retrieval._reference.unordered_count.
    """
def validate_index(index: typing.Any, workers: typing.SupportsInt | typing.SupportsIndex) -> None:
    """
    Check an index completely; raise ``ValueError`` naming the first inconsistency.
    
    Full docs: the twin pysynth.retrieval._reference.validate_index.
    """
def window_stats(index: typing.Any, a: typing.Any, b: typing.Any, workers: typing.SupportsInt | typing.SupportsIndex) -> tuple:
    """
    Collection frequencies of the windows of the term pairs ``(a[i], b[i])``.
    
    Full docs: the twin pysynth.retrieval._reference.window_stats.
    """
