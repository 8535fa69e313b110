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
    
        Parameters
        ----------
        ids : int32 array, all documents' term ids back to back, each in ``[0, vocab_size)``.
        offsets : int64 array of length N + 1 (``offsets[0] == 0``, non-decreasing).
        vocab_size : int, V.
        workers : int, threads (-1 = all cores); the result never depends on it.
    
        Returns
        -------
        dict of numpy arrays, see the module docstring.
    
        Raises
        ------
        ValueError for malformed offsets, ids outside ``[0, vocab_size)`` or an empty corpus (no
        documents, or no tokens at all).
    """
def ordered_count(A: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], B: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], width: typing.SupportsInt | typing.SupportsIndex) -> int:
    """
    Galago ``OrderedWindowIterator`` matches of ``#od:width(a b)`` in one document.
    
        For each position ``p`` of ``a`` (ascending), ``b``'s cursor moves to its first occurrence at
        or after ``p + 1`` (it never moves back); a match when that occurrence starts less than
        ``width`` positions after ``p + 1``.  Stops when ``b`` runs out.
    """
def search(index: typing.Any, query_ids: typing.Any, query_offsets: typing.Any, model: str, k: typing.SupportsInt | typing.SupportsIndex, mu: typing.SupportsFloat | typing.SupportsIndex, weights: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], k1: typing.SupportsFloat | typing.SupportsIndex, b: typing.SupportsFloat | typing.SupportsIndex, workers: typing.SupportsInt | typing.SupportsIndex, float64: bool) -> tuple:
    """
    Top ``k`` documents of every query, by SDM or BM25 (definitions in the module docstring).
    
        Parameters
        ----------
        index : the arrays of a built (or loaded and validated) index.
        query_ids, query_offsets : queries as flat int32 term ids + int64 offsets (length Q + 1).
        model : ``"sdm"`` or ``"bm25"``.
        k : results per query (>= 1).
        mu, weights : SDM Dirichlet prior and (unigram, #od:1, #uw:8) weights (normalized to sum 1).
        k1, b : BM25 parameters.
        workers : threads (-1 = all cores); results never depend on it.
        float64 : return float64 scores (else float32, rounded from the same float64 values).
    
        Returns
        -------
        (docs, scores, counts): int32 (Q, k) doc ids, best first, -1 padded; float32/float64
        (Q, k) scores, NaN padded; int32 (Q,) number of results.  Only documents containing at least
        one query term are retrieved; ties are broken by doc id ascending.
    """
def target_ranks(index: typing.Any, query_ids: typing.Any, query_offsets: typing.Any, targets: typing.Any, n: typing.SupportsInt | typing.SupportsIndex, model: str, mu: typing.SupportsFloat | typing.SupportsIndex, weights: collections.abc.Sequence[typing.SupportsFloat | typing.SupportsIndex], k1: typing.SupportsFloat | typing.SupportsIndex, b: typing.SupportsFloat | typing.SupportsIndex, workers: typing.SupportsInt | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.int32]:
    """
    Rank (1-based) of ``targets[i]`` in the ranking of query ``i``, or 0 if not in the top ``n``.
    
        The ranking is the one :func:`search` returns (score descending, doc id ascending, only
        documents with a query term), so ``target_ranks(..., n)[i] == r > 0`` exactly when
        ``search(..., k=n)[0][i, r - 1] == targets[i]``.  Used by the keyword query filter (the
        reciprocal rank of a question under its candidate queries) without materializing top-n lists.
    """
def unordered_count(A: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], B: collections.abc.Sequence[typing.SupportsInt | typing.SupportsIndex], same_term: bool, width: typing.SupportsInt | typing.SupportsIndex) -> int:
    """
    Galago ``UnorderedWindowIterator`` matches of ``#uw:width(a b)`` in one document.
    
        Look at the current occurrence of each term; a match when ``max + 1 - min <= width``; then
        advance the occurrence(s) at the minimum; stop when a term runs out.  Two copies of the same
        term (``same_term``) advance together, so every occurrence matches.
    """
def validate_index(index: typing.Any, workers: typing.SupportsInt | typing.SupportsIndex) -> None:
    """
    Check an index completely; raise ``ValueError`` naming the first inconsistency.
    
        Checks: array dtypes and sizes; ``indptr``, ``pos_indptr`` and ``doc_offsets`` start at 0,
        never decrease and end at the array sizes; ``doc_lengths`` match ``doc_offsets``; within
        each term the doc ids ascend and lie in ``[0, N)``; ``tfs >= 1`` and equal to the number of
        positions of the posting; every position lies inside its document, ascends, and points at a
        token equal to the term; ``impact`` orders each term's postings as documented; the high
        layer is exactly each term's postings with tf >= 2; ``cf`` and
        ``max_tf`` agree with the postings; ``pair_terms`` are the selected frequent terms and the
        pair table's counts lie in range (``0 <= max <= cf <= |C|``) and equal the counts of the
        documents (recomputed: one pass over the frequent terms' tokens).  An index that
        passes is safe to search (and, as its postings then cover every token exactly once,
        consistent with its documents).
    """
def window_stats(index: typing.Any, a: typing.Any, b: typing.Any, workers: typing.SupportsInt | typing.SupportsIndex) -> tuple:
    """
    Collection frequencies of the windows of the term pairs ``(a[i], b[i])``.
    
        Returns ``(cf_od, cf_uw)``, int64 arrays: the ``#od:1`` and ``#uw:8`` match counts of
        :func:`ordered_count` / :func:`unordered_count` summed over all documents.
    """
