"""
Keyword query generation (Ding & Balog 2018, Alg. 1); twin: pysynth.sampling._reference
"""
from __future__ import annotations
import numpy
import numpy.typing
import typing
__all__: list[str] = ['collection_stats', 'generate', 'random_words']
def collection_stats(ids: typing.Any, offsets: typing.Any, vocab_size: typing.Any) -> tuple:
    """
    Collection statistics of documents ``ids[offsets[i]:offsets[i+1]]`` over the ids
        ``[0, vocab_size)`` (Ding & Balog 2018, Eq. 2 and 5).
    """
def generate(q_ids: typing.Any, q_offsets: typing.Any, c_ids: typing.Any, c_offsets: typing.Any, cluster_index: typing.Any, cf: typing.Any, df: typing.Any, n_docs: typing.Any, exclude: typing.Any, length_dist: typing.Any, strategy: str, w_question: typing.Any, w_cluster: typing.Any, w_collection: typing.Any, m: typing.Any, seed: typing.Any, first_index: typing.Any, max_rejections: typing.Any, workers: typing.Any) -> tuple:
    """
    Sample ``m`` keyword query candidates per question (Ding & Balog 2018, Alg. 1).
    
        Parameters
        ----------
        q_ids, q_offsets : int32 ids, int64 offsets (n + 1)
            The questions (after phrase detection: a phrase is one id).
        c_ids, c_offsets : int32 ids, int64 offsets (n_clusters + 1)
            The cluster table: row j = the concatenated paraphrases of a cluster.
        cluster_index : int64 (n)
            Row of the cluster table of each question, ``-1`` for none (then ``C_q = q``).
        cf, df : int64 (V)
            Collection term frequency n(t) and question frequency df(t) over the corpus Q.
        n_docs : int
            N, the number of questions of the corpus Q (Eq. 5).
        exclude : uint8 (V)
            Non-zero = never sampled (question words, ...).
        length_dist : float64 (S + 1)
            P(s) for s = 0 .. S; ``length_dist[0]`` must be 0.
        strategy : {"popular", "discriminative", "combination"}
            P(t|q) of Eq. 3, 4 or 5.
        w_question, w_cluster, w_collection : float
            Mixture weights of P(t|q), P(t|C_q) and P(t) (Eq. 1: 1-lambda, 0, lambda;
            Eq. 6: alpha, beta, 1-alpha-beta); non-negative, summing to 1.
        m : int
            Candidates per question (>= 1).
        seed : int
            In [0, 2**64).
        first_index : int
            Global index of the first question (the random stream of question i is keyed by
            ``first_index + i``), so that chunked calls reproduce one call.
        max_rejections : int
            Rejected attempts before a draw switches to explicit renormalization (>= 0).
        workers : int
            Threads (``-1`` = all cores); the result never depends on it.
    
        Returns
        -------
        (ids, offsets) : int32 array, int64 array of length n * m + 1
            Candidate ``c`` of question ``i`` is ``ids[offsets[i*m + c] : offsets[i*m + c + 1]]``.
    """
def random_words(seed: typing.Any, question_index: typing.Any, candidate_index: typing.Any, count: typing.Any) -> numpy.typing.NDArray[numpy.uint64]:
    """
    The first ``count`` random words of candidate ``candidate_index`` of question
        ``question_index`` (global index, i.e. ``first_index + i``), as uint64.
    
        Word 0 decides the candidate's length; the later words its terms (see the module
        docstring).  Exposed so that the counter-based generator can be tested on its own.
    """
