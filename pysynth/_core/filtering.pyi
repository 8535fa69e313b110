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
    
        Rows ``r = tokens[offsets[r]:offsets[r+1]]`` (e.g. the questions, or keyword queries, of the
        synthetic pairs); ``order`` is a permutation of the rows, best first (e.g. by TDF score).
        ``first[t]`` is the smallest ``j`` such that row ``order[j]`` contains ``t``, -1 when no row
        does.  The vocabulary coverage of the first ``L`` rows (Ding & Balog 2018, Fig. 8) is
        ``#{t : 0 <= first[t] < L} / #{t : first[t] >= 0}``.
    
        Returns int64 of length ``vocab_size``.
    """
def kqf_select(questions: typing.Any, candidate_offsets: typing.Any, results: typing.Any, result_offsets: typing.Any, depth: typing.SupportsInt | typing.SupportsIndex, workers: typing.SupportsInt | typing.SupportsIndex) -> tuple:
    """
    Keyword query filter (Ding & Balog 2018, Eq. 7): the best candidate query per question.
    
        Question ``i`` (document id ``questions[i]``) owns the candidate queries
        ``c in [candidate_offsets[i], candidate_offsets[i+1])``; candidate ``c`` retrieved the ranked
        list ``results[result_offsets[c]:result_offsets[c+1]]`` (best first).
    
        * ``rr[c] = 1 / rank`` where ``rank`` is the 1-based position of the first occurrence of
          ``questions[i]`` in the list (only its first ``depth`` entries when ``depth > 0``), and 0
          when the question is absent;
        * ``chosen[i]`` = the candidate (0-based index among the question's candidates) with the
          largest ``rr``; ties go to the **first** such candidate, so a question that none of its
          candidates retrieves gets candidate 0 (with ``best_rr`` 0: threshold on ``best_rr``);
          -1 for a question without candidates;
        * ``best_rr[i]`` = ``rr`` of the chosen candidate (0 when there is none).
    
        Returns ``(chosen int32, best_rr float64, rr float64)``.
    """
def tdf_precision(results: typing.Any, result_offsets: typing.Any, questions: typing.Any, clusters: typing.Any, include_self: bool, workers: typing.SupportsInt | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.float64]:
    """
    Training data filter quality score (Ding & Balog 2018, Eq. 8) of every pair.
    
        Pair ``i`` is (keyword query ``k_i``, question ``questions[i]``); ``k_i`` retrieved
        ``results[result_offsets[i]:result_offsets[i+1]]`` (entries < 0 are padding and ignored;
        a repeated doc id counts once).  ``C_q`` is the paraphrase cluster of ``q``: the documents
        whose ``clusters`` id equals ``clusters[q]``, ``q`` itself included when ``include_self``.
        ``P(k, q) = |C_q ∩ RR(k)| / |RR(k)|``, 0 when nothing was retrieved.
    
        Returns float64, one value per pair.
    """
