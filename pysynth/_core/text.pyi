"""
Corpus statistics and gensim-identical phrase detection; twin: pysynth.text._reference
"""
from __future__ import annotations
import typing
__all__: list[str] = ['apply_frozen', 'apply_phrases', 'build_corpus', 'count_phrases', 'export_phrases', 'phrase_score', 'tokenize']
def apply_frozen(ids: typing.Any, offsets: typing.Any, vocab: typing.Any, connector_words: typing.Any, delimiter: str, phrases: typing.Any, scores: typing.Any, threshold: typing.SupportsFloat | typing.SupportsIndex, workers: typing.SupportsInt | typing.SupportsIndex) -> tuple:
    """
    Join phrases in every document with a phrase table: gensim 4.4 ``FrozenPhrases[sentence]``.
    
    Full docs: the twin pysynth.text._reference.apply_frozen.
    """
def apply_phrases(ids: typing.Any, offsets: typing.Any, vocab: typing.Any, connector_words: typing.Any, delimiter: str, model_vocab: typing.Any, key_offsets: typing.Any, key_terms: typing.Any, key_counts: typing.Any, corpus_word_count: typing.SupportsInt | typing.SupportsIndex, min_count: typing.SupportsInt | typing.SupportsIndex, threshold: typing.SupportsFloat | typing.SupportsIndex, scoring: str, workers: typing.SupportsInt | typing.SupportsIndex) -> tuple:
    """
    Join phrases in every document with a learned model: gensim 4.4 ``Phrases[sentence]``.
    
    Full docs: the twin pysynth.text._reference.apply_phrases.
    """
def build_corpus(texts: typing.Any, tokenizer: str, workers: typing.SupportsInt | typing.SupportsIndex) -> tuple:
    """
    Tokenize questions and count their terms (Ding & Balog 2018, Sect. 3.1.1).
    
    Full docs: the twin pysynth.text._reference.build_corpus.
    """
def count_phrases(ids: typing.Any, offsets: typing.Any, vocab: typing.Any, connector_words: typing.Any, delimiter: str, max_vocab_size: typing.SupportsInt | typing.SupportsIndex, workers: typing.SupportsInt | typing.SupportsIndex) -> tuple:
    """
    Count unigrams and phrase candidates as gensim 4.4 ``Phrases`` learns them.
    
    Full docs: the twin pysynth.text._reference.count_phrases.
    """
def export_phrases(vocab: typing.Any, key_offsets: typing.Any, key_terms: typing.Any, key_counts: typing.Any, corpus_word_count: typing.SupportsInt | typing.SupportsIndex, delimiter: str, min_count: typing.SupportsInt | typing.SupportsIndex, threshold: typing.SupportsFloat | typing.SupportsIndex, scoring: str) -> tuple:
    """
    The phrase table of a learned model: gensim 4.4 ``Phrases.export_phrases()``.
    
    Full docs: the twin pysynth.text._reference.export_phrases.
    """
def phrase_score(scoring: str, worda_count: typing.SupportsInt | typing.SupportsIndex, wordb_count: typing.SupportsInt | typing.SupportsIndex, bigram_count: typing.SupportsInt | typing.SupportsIndex, len_vocab: typing.SupportsInt | typing.SupportsIndex, min_count: typing.SupportsInt | typing.SupportsIndex, corpus_word_count: typing.SupportsInt | typing.SupportsIndex) -> float:
    """
    Score of a phrase candidate, as gensim 4.4's scorers compute it (same float operations).
    
    Full docs: the twin pysynth.text._reference.phrase_score.
    """
def tokenize(texts: typing.Any, tokenizer: str, workers: typing.SupportsInt | typing.SupportsIndex) -> list:
    """
    Split texts into tokens.
    
    Full docs: the twin pysynth.text._reference.tokenize.
    """
