"""Keyword query generation end to end: text statistics, phrases, sampling (Ding & Balog 2018).

:class:`KeywordGenerator` ties the stages together: it tokenizes the question corpus Q
(plus the questions to process) into one vocabulary (:func:`pysynth.text.build_corpus`),
optionally detects phrases with two gensim-identical passes (Sect. 3.1.4), counts the
collection statistics n(t), df(t), N (Eq. 2, 5), builds the paraphrase clusters C_q
(Sect. 3.1.3), and samples keyword queries with a :class:`pysynth.KeywordModel`
(Eq. 1-6, Alg. 1). Phrases come out as their words (``honda crf 230``).

Lived in ``pysynth.k2q.keywords`` before issue 25 (still importable from there): the paraphrase
method's keyword pivot uses it too, and methods do not import each other.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Dict, Hashable, List, Optional, Sequence

import numpy as np

from pysynth import store, text
from pysynth._dispatch import backend
from pysynth.sampling.inputs import Candidates, Clusters, CollectionStats, take_rows
from pysynth.sampling.model import KeywordModel

__all__ = ["KeywordGenerator", "DEFAULT_CONFIG", "PHRASE_PARAMS", "make_model", "take_rows"]

#: Phrase detection settings (gensim's defaults, two passes: bigrams then longer phrases).
PHRASE_PARAMS: Dict[str, object] = {"min_count": 5, "threshold": 10.0, "passes": 2}

#: Default configuration: the best row of our Table 1 reproduction (bench/RESULTS_k2q.md):
#: paraphrase model + phrases, discriminative strategy, alpha 0.9, beta 0.1 (the paper's
#: best strategy was combination; on this T0 discriminative scores higher).
DEFAULT_CONFIG: Dict[str, object] = {
    "model": "paraphrase",
    "strategy": "discriminative",
    "phrases": True,
    "lam": 0.1,
    "alpha": 0.9,
    "beta": 0.1,
}


@dataclass
class _Prepared:
    corpus: text.Corpus
    stats: CollectionStats
    clusters: Clusters


class KeywordGenerator:
    """Generate keyword queries for questions against the statistics of a question corpus.

    Parameters
    ----------
    corpus : list of str
        The question corpus Q the statistics come from.
    corpus_groups : list, optional
        A paraphrase-cluster id per corpus question (``None`` = no cluster).
    questions : list of str
        The questions to generate keyword queries for (added to the vocabulary and the
        statistics, as the paper's Q contains them).
    groups : list, optional
        A cluster id per question; questions and corpus rows with the same id form C_q.
    phrases : bool
        Detect phrases (two passes of gensim-identical :class:`pysynth.text.Phrases`).
    workers : int
        Threads for the compiled stages.
    """

    def __init__(
        self,
        corpus: Sequence[str],
        questions: Sequence[str],
        corpus_groups: Optional[Sequence[Optional[Hashable]]] = None,
        groups: Optional[Sequence[Optional[Hashable]]] = None,
        phrases: bool = True,
        workers: int = 1,
    ):
        corpus, questions = list(corpus), list(questions)
        if not questions:
            raise ValueError("questions is empty: pass at least one question")
        corpus_groups = [None] * len(corpus) if corpus_groups is None else list(corpus_groups)
        groups = [None] * len(questions) if groups is None else list(groups)
        if len(corpus_groups) != len(corpus):
            raise ValueError("corpus_groups must have one entry per corpus question")
        if len(groups) != len(questions):
            raise ValueError("groups must have one entry per question")
        self.n_corpus = len(corpus)
        self.questions = questions
        self.n_questions = len(questions)
        built = text.build_corpus(corpus + questions, tokenizer="rouge", workers=workers)
        self.phrase_models: list = []
        if phrases:
            params = dict(PHRASE_PARAMS)
            passes = int(params.pop("passes"))
            built, self.phrase_models = text.phrase_passes(built, passes=passes, workers=workers, **params)
        all_groups = corpus_groups + groups
        stats = CollectionStats(built.cf, built.df, built.n_docs)
        docs = (np.asarray(built.ids), np.asarray(built.offsets))
        table = Clusters.from_groups(docs, all_groups)
        self._doc_clusters = table.index
        q_index = table.index[self.n_corpus:]
        self._prep = _Prepared(built, stats, Clusters(table.values, table.offsets, q_index))
        off = np.asarray(built.offsets)[self.n_corpus:]
        self._q = (np.asarray(built.ids)[off[0] : off[-1]], off - off[0])
        self.vocab = list(built.vocab)

    @property
    def corpus(self) -> text.Corpus:
        return self._prep.corpus

    def question_terms(self, i: int) -> List[str]:
        ids, off = self._q
        return [self.vocab[t] for t in ids[off[i] : off[i + 1]]]

    def generate_ids(self, model: KeywordModel, m: int = 1, seed: int = 0, workers: int = 1,
                     subset: Optional[np.ndarray] = None, first_index: int = 0) -> Candidates:
        """Candidates (question-major ids) for all questions, or rows ``subset``.

        The random draws of the ``j``-th question given are keyed by ``first_index + j``
        (counter-based RNG), so consecutive slices of one list, each with its start as
        ``first_index``, give the rows of a single call; an array ``first_index`` gives each
        question's key (its position in that list), so any of them can be drawn alone."""
        ids, off = self._q
        clusters = self._prep.clusters
        if subset is not None:
            subset = np.asarray(subset, dtype=np.int64)
            ids, off = take_rows(ids, off, subset)
            clusters = Clusters(clusters.values, clusters.offsets, clusters.index[subset])
        return model.generate((ids, off), clusters, self._prep.stats, m=m, seed=seed,
                              workers=workers, vocab=self._prep.corpus, first_index=first_index)  # its term index: no dict per call

    def samplable(self, model: KeywordModel) -> np.ndarray:
        """Mask of the questions with at least one term the model may sample (not only question words)."""
        return model.samplable(self._q, vocab=self.vocab)

    def order_like_questions(self, cands: Candidates, rows: np.ndarray, m: int) -> Candidates:
        """Put each candidate's terms in the order they occur in its question.

        Candidate ``c`` belongs to question ``rows[c // m]``; a term's key is its first position
        in that question, and terms drawn from paraphrases only (not in the question) follow in
        the order they were sampled.  Keyword queries people write mostly keep the question's
        word order (T0), and SDM's ordered windows reward it.
        """
        ids, off = self._q
        cid, coff = np.asarray(cands.ids), np.asarray(cands.offsets)
        if cid.size == 0:
            return cands
        q_ids, q_off = take_rows(ids, off, np.asarray(rows, dtype=np.int64))
        return Candidates(backend("sampling").order_like_questions(q_ids, q_off, cid, coff, m), coff)

    @property
    def cluster_rows(self) -> np.ndarray:
        """Paraphrase-cluster row of every corpus document then question (-1: no cluster)."""
        return self._doc_clusters

    def decode(self, cands: Candidates) -> List[str]:
        """Keyword strings of candidates; phrases become their words."""
        vocab, ids = self.vocab, cands.ids.tolist()
        if len(ids) > len(vocab) // 4:  # many terms (a whole run's queries): each word's spelling once
            words = [w.replace("_", " ") for w in vocab]
            toks = [words[t] for t in ids]
        else:
            toks = [vocab[t].replace("_", " ") for t in ids]
        off = cands.offsets.tolist()
        return [" ".join(toks[a:b]) for a, b in zip(off[:-1], off[1:])]

    def generate(self, model: Optional[KeywordModel] = None, m: int = 20, seed: int = 0,
                 workers: int = 1) -> List[List[str]]:
        """``m`` keyword queries (strings) for every question."""
        model = model or make_model(**DEFAULT_CONFIG)
        flat = self.decode(self.generate_ids(model, m=m, seed=seed, workers=workers))
        return [flat[i * m : (i + 1) * m] for i in range(self.n_questions)]

    # -- storage: what a pipeline chunk needs, memory-mapped by every worker (pysynth.pipelines)
    def save(self, path) -> Path:
        """Save the generator's state to directory ``path`` (a :mod:`pysynth.store`, atomic).

        Saved: the tokenized corpus and questions (ids, offsets), the statistics n(t), df(t), N,
        the cluster table C_q and the vocabulary -- everything :meth:`generate_ids`,
        :meth:`order_like_questions`, :meth:`samplable` and :meth:`decode` use.  Not saved: the
        question texts and the phrase models (a loaded generator cannot phrase new text).
        """
        c = self._prep.corpus
        return store.save(path, _FORMAT, _FORMAT_VERSION, arrays={
            "ids": np.asarray(c.ids), "offsets": np.asarray(c.offsets), "cf": np.asarray(c.cf),
            "df": np.asarray(c.df), "cluster_values": np.asarray(self._prep.clusters.values),
            "cluster_offsets": np.asarray(self._prep.clusters.offsets),
            "cluster_index": np.asarray(self._doc_clusters),
        }, files={"vocab.txt": store.lines_to_bytes(self.vocab, "vocabulary term")}, meta={
            "n_corpus": self.n_corpus, "n_questions": self.n_questions, "n_docs": int(c.n_docs),
            "tokenizer": c.tokenizer, "history": list(c.history),
        })

    @classmethod
    def load(cls, path, mmap: bool = True) -> "KeywordGenerator":
        """Open a generator written by :meth:`save` (arrays memory-mapped unless ``mmap=False``);
        ``questions`` is ``None`` on it (the texts are not saved).

        Raises
        ------
        ValueError
            not a saved generator, another format version, or a missing/corrupt member.
        """
        st = store.load(path, _FORMAT, (_FORMAT_VERSION,), mmap=mmap, expect={
            "ids": (np.int32, (None,)), "offsets": (np.int64, (None,)), "cf": (np.int64, (None,)),
            "df": (np.int64, (None,)), "cluster_values": (np.int32, (None,)),
            "cluster_offsets": (np.int64, (None,)), "cluster_index": (np.int64, (None,))})
        try:
            return cls._from_store(st)
        except (KeyError, TypeError, ValueError, IndexError) as exc:  # consistent checksums, wrong content
            raise ValueError(f"{st.path} is not a consistent KeywordGenerator: {exc!r}") from None

    @classmethod
    def _from_store(cls, st) -> "KeywordGenerator":
        a, meta = st.arrays, st.meta
        vocab = st.read_lines("vocab.txt")
        built = text.Corpus(a["ids"], a["offsets"], a["cf"], a["df"], vocab, tokenizer=meta["tokenizer"],
                            history=meta["history"], validate=True)  # one pass: ids, offsets, cf/df
        self = cls.__new__(cls)
        self.n_corpus, self.n_questions = int(meta["n_corpus"]), int(meta["n_questions"])
        self.questions, self.phrase_models = None, []
        self._doc_clusters = a["cluster_index"]
        if self.n_corpus < 0 or self.n_corpus + self.n_questions != built.n_docs or \
                self._doc_clusters.shape[0] != built.n_docs:
            raise ValueError(f"n_corpus + n_questions and cluster_index must count the {built.n_docs} documents")
        clusters = Clusters(a["cluster_values"], a["cluster_offsets"], a["cluster_index"][self.n_corpus:])
        self._prep = _Prepared(built, CollectionStats(built.cf, built.df, int(meta["n_docs"])), clusters)
        off = np.asarray(built.offsets)[self.n_corpus:]
        self._q = (np.asarray(built.ids)[off[0] : off[-1]], off - off[0])
        self.vocab = vocab
        return self


# the store format keeps its first name: generators saved before the move still load
_FORMAT = "pysynth.k2q.KeywordGenerator"
_FORMAT_VERSION = 1


def make_model(model: str = "paraphrase", strategy: str = "discriminative", lam: float = 0.1,
               alpha: float = 0.9, beta: float = 0.1, length_dist=None, phrases: bool = True,
               **_ignored) -> KeywordModel:
    """A :class:`pysynth.sampling.KeywordModel` from a flat configuration dict."""
    return KeywordModel(model=model, strategy=strategy, lam=lam, alpha=alpha, beta=beta,
                                 length_dist=length_dist)
