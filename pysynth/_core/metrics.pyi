"""
n-gram and LCS statistics for ROUGE and BLEU
"""
from __future__ import annotations
import collections.abc
import numpy
import numpy.typing
import typing
__all__: list[str] = ['bleu_stats', 'coco_sentence_scores', 'meteor_normalize', 'meteor_resources', 'meteor_score_from_stats', 'meteor_stats', 'meteor_stem', 'porter_stem', 'rouge_prf', 'rouge_prf_texts', 'rouge_stats', 'sacrebleu_sentence_scores', 'tokenize']
class _MeteorResources:
    pass
def bleu_stats(hyps: typing.Any, refs: typing.Any, ref_offsets: typing.Any, tokenize: str, max_order: typing.SupportsInt | typing.SupportsIndex, workers: typing.SupportsInt | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.int64]:
    """
    BLEU sufficient statistics per hypothesis (Papineni et al. 2002, Eq. 1-2).
    
        Returns
        -------
        numpy.ndarray of int64, shape (N, 2 + 2 * max_order)
            hyp length, closest reference length (ties: the shorter, as sacrebleu, nltk and
            pycocoevalcap all do), clipped matches per order 1..max_order (clipped by the max
            count over the references), hypothesis n-grams per order.
    """
def coco_sentence_scores(stats: typing.Any, max_order: typing.SupportsInt | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.float64]:
    """
    pycocoevalcap's per-segment BLEU-1..max_order of each row of ``stats``.
    """
def meteor_normalize(texts: typing.Any, nbp: typing.Any) -> list:
    """
    The jar's -norm of each ASCII text (None for the others); see pysynth.metrics._meteor_ref.meteor_normalize
    """
def meteor_resources(function_words: bytes, exceptions: bytes, synsets: bytes, para: dict, max_len: typing.SupportsInt | typing.SupportsIndex) -> _MeteorResources:
    """
    METEOR 1.5 resources: the jar's function words and WordNet files (bytes) and the paraphrase cache's arrays; see pysynth.metrics._meteor_ref.meteor_resources
    """
def meteor_score_from_stats(st: typing.Annotated[numpy.typing.ArrayLike, numpy.float64]) -> float:
    """
    The jar's computeMetrics (see pysynth.metrics._meteor_ref.score_from_stats)
    """
def meteor_stats(res: _MeteorResources, hyps: typing.Any, refs: typing.Any, workers: typing.SupportsInt | typing.SupportsIndex = 1) -> numpy.typing.NDArray[numpy.float64]:
    """
    Sufficient statistics (n x 23) of normalized segments; see pysynth.metrics._meteor_ref.meteor_stats
    """
def meteor_stem(word: str) -> str:
    """
    Snowball English stem (see pysynth.metrics._meteor_ref.stem)
    """
def porter_stem(words: typing.Any) -> list:
    """
    Porter stems of a list of lowercase words (NLTK_EXTENSIONS variant).
    
    Equal to ``[nltk.stem.porter.PorterStemmer().stem(w) for w in words]`` (nltk 3.10.4)
    for lowercase words, and to the pure-Python twin ``pysynth.metrics._porter.porter_stem``
    for every str. Porter, M. F., "An algorithm for suffix stripping", Program 14(3), 1980.
    
    Parameters
    ----------
    words : sequence of str
        Lowercase tokens (no case folding is done).
    
    Returns
    -------
    list of str
        One stem per word; a word that needs no change is returned as the same object.
    """
def rouge_prf(stats: typing.Any) -> numpy.typing.NDArray[numpy.float64]:
    """
    rouge-score 0.1.2 precision, recall and F from :func:`rouge_stats` output.
    
        rouge-score divides n-gram matches by ``max(count, 1)`` and returns zeros for ROUGE-L
        when either side is empty; since matches never exceed either count, both rules give
        the same numbers, so one formula serves every type.
    
        Returns
        -------
        numpy.ndarray of float64, shape (3, types, rows): P, R, F.
    """
def rouge_prf_texts(hyps: typing.Any, refs: typing.Any, ref_offsets: typing.Any, types: collections.abc.Sequence[str], stem: bool, workers: typing.SupportsInt | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.float64]:
    """
    rouge-score 0.1.2 precision, recall and F straight from the texts.
    
        ``rouge_prf(rouge_stats(hyps, refs, ref_offsets, types, "rouge-score", stem, workers))``
        in one call: the compiled version computes each row's P/R/F in the worker thread that
        counted it and never builds the statistics array.
    
        Returns
        -------
        numpy.ndarray of float64, shape (3, types, len(refs)): P, R, F.
    """
def rouge_stats(hyps: typing.Any, refs: typing.Any, ref_offsets: typing.Any, types: collections.abc.Sequence[str], flavor: str, stem: bool, workers: typing.SupportsInt | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.int64]:
    """
    Integer ROUGE statistics for each (hypothesis, reference) row.
    
        Parameters
        ----------
        hyps : sequence of str or TokenIds
            N hypotheses.
        refs : sequence of str or TokenIds
            M references, grouped per hypothesis by ``ref_offsets``.
        ref_offsets : array of int64, length N + 1
            Hypothesis i owns references ``refs[ref_offsets[i]:ref_offsets[i + 1]]``.
        types : list of str
            ``rougeN`` (any N >= 1), ``rougeL``, ``rougeLsum``.
        flavor : {"rouge-score", "pltrdy"}
        stem : bool
            Porter-stem tokens longer than 3 characters (rouge-score flavor).
        workers : int
            Threads (ignored here; validated).
    
        Returns
        -------
        numpy.ndarray of int64, shape (M, len(types), 3)
            Per reference row and type: (matches, hypothesis count, reference count); see
            ``csrc/include/pysynth/ngram.hpp`` for each type's exact meaning. pltrdy rows whose
            hypothesis or reference has no sentence are ``-1``.
    """
def sacrebleu_sentence_scores(stats: typing.Any, smooth_method: str, smooth_value: typing.SupportsFloat | typing.SupportsIndex, effective_order: bool, max_order: typing.SupportsInt | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.float64]:
    """
    sacrebleu's BLEU of each row of ``stats`` (see :func:`bleu_stats`).
    """
def tokenize(texts: typing.Any, tokenizer: str, workers: typing.SupportsInt | typing.SupportsIndex) -> list:
    """
    Tokens of each text: ``rouge``, ``rouge-stem``, ``13a`` or ``none`` (whitespace).
    """
