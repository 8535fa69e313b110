"""
Keyword query generation (Ding & Balog 2018, Alg. 1); twin: pysynth.sampling._reference
"""
from __future__ import annotations
import numpy
import numpy.typing
import typing
__all__: list[str] = ['collection_stats', 'generate', 'order_like_questions', 'random_words']
def collection_stats(ids: typing.Any, offsets: typing.Any, vocab_size: typing.Any) -> tuple:
    """
    Collection statistics of documents ``ids[offsets[i]:offsets[i+1]]`` over the ids
    ``[0, vocab_size)`` (Ding & Balog 2018, Eq. 2 and 5).
    
    Full docs: the twin pysynth.sampling._reference.collection_stats.
    """
def generate(q_ids: typing.Any, q_offsets: typing.Any, c_ids: typing.Any, c_offsets: typing.Any, cluster_index: typing.Any, cf: typing.Any, df: typing.Any, n_docs: typing.Any, exclude: typing.Any, length_dist: typing.Any, strategy: str, w_question: typing.Any, w_cluster: typing.Any, w_collection: typing.Any, m: typing.Any, seed: typing.Any, first_index: typing.Any, max_rejections: typing.Any, workers: typing.Any) -> tuple:
    """
    Sample ``m`` keyword query candidates per question (Ding & Balog 2018, Alg. 1).
    
    Full docs: the twin pysynth.sampling._reference.generate.
    """
def order_like_questions(q_ids: typing.Any, q_offsets: typing.Any, c_ids: typing.Any, c_offsets: typing.Any, m: typing.Any) -> numpy.typing.NDArray[numpy.int32]:
    """
    Terms of every candidate in the order they occur in its question: candidate ``c``
    belongs to question ``c // m``.
    
    Full docs: the twin pysynth.sampling._reference.order_like_questions.
    """
def random_words(seed: typing.Any, question_index: typing.Any, candidate_index: typing.Any, count: typing.Any) -> numpy.typing.NDArray[numpy.uint64]:
    """
    The first ``count`` random words of candidate ``candidate_index`` of question
    ``question_index`` (global index, i.e. ``first_index + i``), as uint64.
    
    Full docs: the twin pysynth.sampling._reference.random_words.
    """
