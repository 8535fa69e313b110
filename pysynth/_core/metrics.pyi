"""
n-gram and LCS statistics for ROUGE and BLEU
"""
from __future__ import annotations
import collections.abc
import numpy
import numpy.typing
import typing
__all__: list[str] = ['bleu_stats', 'coco_sentence_scores', 'meteor_normalize', 'meteor_resources', 'meteor_score_from_stats', 'meteor_scores', 'meteor_stats', 'meteor_stem', 'porter_stem', 'rouge_prf', 'rouge_prf_texts', 'rouge_stats', 'sacrebleu_sentence_scores', 'tokenize']
class _MeteorResources:
    pass
def bleu_stats(hyps: typing.Any, refs: typing.Any, ref_offsets: typing.Any, tokenize: str, max_order: typing.SupportsInt | typing.SupportsIndex, workers: typing.SupportsInt | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.int64]:
    """
    BLEU sufficient statistics per hypothesis (Papineni et al. 2002, Eq. 1-2).
    
    Full docs: the twin pysynth.metrics._reference.bleu_stats.
    """
def coco_sentence_scores(stats: typing.Any, max_order: typing.SupportsInt | typing.SupportsIndex, workers: typing.SupportsInt | typing.SupportsIndex = 1) -> numpy.typing.NDArray[numpy.float64]:
    """
    pycocoevalcap's per-segment BLEU-1..max_order of each row of ``stats``.
    
    Full docs: the twin pysynth.metrics._reference.coco_sentence_scores.
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
def meteor_scores(res: _MeteorResources, hyps: typing.Any, refs: typing.Any, workers: typing.Any = 1) -> tuple:
    """
    (segment scores, corpus score) of normalized segments: the jar's computeMetrics of each segment's statistics and of their sum; see pysynth.metrics._meteor_ref.meteor_scores
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
    
    Full docs: the twin pysynth.metrics._reference.rouge_prf.
    """
def rouge_prf_texts(hyps: typing.Any, refs: typing.Any, ref_offsets: typing.Any, types: collections.abc.Sequence[str], stem: bool, workers: typing.SupportsInt | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.float64]:
    """
    rouge-score 0.1.2 precision, recall and F straight from the texts.
    
    Full docs: the twin pysynth.metrics._reference.rouge_prf_texts.
    """
def rouge_stats(hyps: typing.Any, refs: typing.Any, ref_offsets: typing.Any, types: collections.abc.Sequence[str], flavor: str, stem: bool, workers: typing.SupportsInt | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.int64]:
    """
    Integer ROUGE statistics for each (hypothesis, reference) row.
    
    Full docs: the twin pysynth.metrics._reference.rouge_stats.
    """
def sacrebleu_sentence_scores(stats: typing.Any, smooth_method: str, smooth_value: typing.SupportsFloat | typing.SupportsIndex, effective_order: bool, max_order: typing.SupportsInt | typing.SupportsIndex, workers: typing.SupportsInt | typing.SupportsIndex = 1) -> numpy.typing.NDArray[numpy.float64]:
    """
    sacrebleu's BLEU of each row of ``stats`` (see :func:`bleu_stats`).
    
    Full docs: the twin pysynth.metrics._reference.sacrebleu_sentence_scores.
    """
def tokenize(texts: typing.Any, tokenizer: str, workers: typing.SupportsInt | typing.SupportsIndex) -> list:
    """
    Tokens of each text: ``rouge``, ``rouge-stem``, ``13a`` or ``none`` (whitespace).
    
    Full docs: the twin pysynth.metrics._reference.tokenize.
    """
