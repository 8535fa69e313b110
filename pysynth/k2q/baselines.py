"""The two baseline keyword-to-question systems of Ding & Balog (2018), Sect. 6.5.1 and Table 2.

Both learn from keyword-question pairs (the synthetic training data; the paper has 3.2 M) and map
a keyword query to one question.

:class:`SdmBaseline` -- retrieval
---------------------------------
"We retrieve the best matching question for each keyword query": the training questions
(distinct, in first-seen order) are indexed with :class:`pysynth.retrieval.Index` and each keyword
query is run with SDM (Metzler & Croft 2005; Dirichlet ``mu = 2500``, weights 0.85 / 0.10 / 0.05);
the output is the top-ranked question verbatim (ties: lower doc id, i.e. the question seen first).
Questions and queries are tokenized with :func:`pysynth.text.tokenize` (``"rouge"``: lower case,
``[a-z0-9]`` runs).  A query term that does not occur in the corpus keeps its place in the query
as a term of collection frequency 0 (all such terms share one id, ``vocab_size``, that no document
contains), so it is smoothed with ``0.5 / |C|`` exactly as the SDM definition of
:mod:`pysynth.retrieval` says, rather than being silently dropped.  When the T0 clusters are left
out of the training data (as :func:`pysynth.k2q.neural.make_synthetic_pairs` and the K2Q pipeline
do), the T0 question itself can never be retrieved.

:class:`TemplateBaseline` -- the template-based method (TBM)
------------------------------------------------------------
Dror et al. (2013) as Ding & Balog adapt it: synthetic pairs instead of a query log, term
similarity from word2vec vectors instead of TF-IDF weighted context vectors.  Exact algorithm:

*Tokens.*  :func:`pysynth.models.vocab.tokenize` (lower case, word tokens with inner apostrophes,
punctuation marks), with a possessive ``'s`` split off (``jocasta's`` -> ``jocasta``, ``'s``) so
that the entity can be a slot.  The *terms* of a keyword query are its tokens that contain a
letter or digit and do not start with an apostrophe.

1. *Templates* (fit).  For each pair ``(k, q)`` every term of ``k``, in keyword order, is aligned
   to the first not yet aligned token of ``q`` equal to it; the aligned question tokens become
   slots.  The template is ``q`` with its slots blanked (slots numbered in question order), and the
   instance stores the slot *fillers* (the original terms, in slot order).  Keyword terms absent
   from ``q`` (the extraneous terms of Sect. 6.4.4) are not part of the stored keyword query; a
   pair with no aligned term yields no template.  Every pair is one instance, so a template's
   frequency is the number of pairs that produce it.  The keyword-template database is the list of
   instances ``(fillers f_1..f_s, template)``.
2. *Term similarity.*  word2vec (gensim CBOW, ``vector_size`` 100, window 5, negative sampling 5,
   ``min_count`` 5, 20 epochs, ``workers=1`` and ``seed``, so the vectors are identical from run
   to run) is trained on the distinct training questions (terms only).  The vectors are
   mean-centred (the vocabulary's mean vector subtracted) before cosines are taken: word2vec
   trained on a few hundred thousand tokens puts all words in one narrow cone (median raw cosine
   0.4-0.8 on the stand-in data, about 0 after centring).  ``sim(a, b) = 1`` if ``a == b``; else
   the cosine when it is at least ``min_similarity`` (0.5); else 0 (also 0 when either word has no
   vector).
3. *Similar keyword queries.*  For a new query with terms ``t_1..t_n`` and an instance with
   ``s <= n`` slots, ``sim(query, instance) = sum_j sim(t_pi(j), f_j) / n`` for the injective map
   ``pi`` from slots to query terms that maximises ``sum_j [sim(t_pi(j), f_j) - order_weight *
   |pi(j) / (n - 1) - j / (s - 1)|]`` (0-based positions; Hungarian algorithm,
   :func:`scipy.optimize.linear_sum_assignment`; the second term, ``order_weight`` 0.05, makes
   the query's term order decide between fillings that the similarities do not separate, e.g.
   two unknown names; a fraction is 0 when its denominator is).  Instances with more slots than
   the query has terms are not candidates (a slot would stay empty); ``n - s`` query terms are
   dropped, which costs similarity.  The ``neighbors`` (5) most similar instances (similarity
   descending, instance index ascending; similarity 0 never counts) are found exactly: only
   instances holding a filler similar to some query term are candidates (inverted lists filler ->
   instances), and they are visited in decreasing order of the upper bound
   ``min(sum_j max_k sim(t_k, f_j), sum_k max_j sim(t_k, f_j)) / n`` until it falls below the
   ``neighbors``-th similarity.
4. *Candidates and ranking.*  Each template used by a neighbour is a candidate scored by the sum
   of the similarities of the neighbours that use it (template frequency among the similar
   keyword queries, weighted by similarity), optionally times a global frequency prior
   ``log(1 + freq) ** template_prior`` (default ``template_prior = 0``: off).  Ranking: score
   descending, then the best single neighbour similarity, then template id (first seen in the
   training pairs).  A candidate is instantiated with the assignment of its most similar
   neighbour: slot ``j`` gets query term ``t_pi(j)``.  The output is the top candidate,
   detokenized (lower case).

The defaults (``neighbors`` 5, ``min_similarity`` 0.5, ``order_weight`` 0.05, no prior) were
chosen on 500 held-out questions of the stand-in training pairs, never on T0
(``bench/RESULTS_table2.md``).  Not reproduced from Dror et al.: their learned ranking model
(features from a query log and a language model).

Empty input: a keyword query with no terms (e.g. ``""`` or ``"?"``) gives ``""`` from both
baselines, as does a query with no similar keyword query (TBM) or no query term in the corpus
(SDM); :meth:`SdmBaseline.generate` and :meth:`TemplateBaseline.generate` never raise for a str.

Examples
--------
>>> pairs = [("capital france", "what is the capital of france?"),
...          ("capital germany", "what is the capital of germany?"),
...          ("winnie pooh author", "who is the author of winnie the pooh?")]
>>> SdmBaseline().fit(pairs).generate(["capital of germany", "pooh"])
['what is the capital of germany?', 'who is the author of winnie the pooh?']
>>> TemplateBaseline().fit(pairs, seed=0).generate(["capital italy"])  # doctest: +SKIP
['what is the capital of italy?']
"""
from __future__ import annotations

import re
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from pysynth._validate import sequence as _sequence
from pysynth._validate import strings
from pysynth._validate import workers as _workers

__all__ = ["SdmBaseline", "TemplateBaseline", "tbm_tokenize", "keyword_terms"]


# --------------------------------------------------------------------------- input checks


def _pairs(pairs: Any, name: str, need_keywords: bool) -> Tuple[List[Optional[str]], List[str]]:
    """(keywords or None, questions) from pairs / dict rows / bare questions; checked."""
    items = _sequence(pairs, name, "(keywords, question) pairs")
    if not items:
        raise ValueError(f"{name} is empty: the baseline needs at least one (keywords, question) pair")
    kws: List[Optional[str]] = []
    qs: List[str] = []
    for i, it in enumerate(items):
        if isinstance(it, str):
            if need_keywords:
                raise TypeError(f"{name}[{i}] is a bare question: this baseline needs (keywords, question) pairs")
            k, q = None, it
        elif isinstance(it, dict):
            if "question" not in it or (need_keywords and "keywords" not in it):
                raise ValueError(f"{name}[{i}] needs the fields 'keywords' and 'question', got {sorted(it)}")
            k, q = it.get("keywords"), it["question"]
        elif isinstance(it, (tuple, list)) and len(it) == 2:
            k, q = it
        else:
            raise TypeError(f"{name}[{i}] must be a (keywords, question) pair, a dict or a question str, "
                            f"got {type(it).__name__}")
        if not isinstance(q, str):
            raise TypeError(f"{name}[{i}]: the question must be str, got {type(q).__name__}")
        if need_keywords and not isinstance(k, str):
            raise TypeError(f"{name}[{i}]: the keywords must be one str (space-separated terms), "
                            f"got {type(k).__name__}")
        kws.append(k)
        qs.append(q)
    return kws, qs


# --------------------------------------------------------------------------- SDM baseline
class SdmBaseline:
    """Retrieve the best-matching training question with SDM (Ding & Balog 2018, Sect. 6.5.1).

    Parameters
    ----------
    mu : float
        Dirichlet prior of SDM (default 2500).
    weights : 3 floats
        Weights of the unigram, ``#od:1`` and ``#uw:8`` parts (default 0.85, 0.10, 0.05).

    Attributes (after :meth:`fit`)
    -------------------------------
    questions : list of str
        The distinct training questions; doc id ``d`` is ``questions[d]``.
    corpus : pysynth.text.Corpus
        Their tokens (tokenizer ``"rouge"``).
    index : pysynth.retrieval.Index
        The SDM index over ``corpus`` (vocabulary ``corpus.n_terms + 1``: the last id is the
        shared id of out-of-corpus query terms).

    Examples
    --------
    >>> sdm = SdmBaseline().fit(["who wrote hamlet?", "what is the capital of france?"])
    >>> sdm.generate(["france capital", "hamlet author", ""])
    ['what is the capital of france?', 'who wrote hamlet?', '']
    """

    def __init__(self, mu: float = 2500.0, weights: Sequence[float] = (0.85, 0.10, 0.05)):
        self.mu = float(mu)
        self.weights = tuple(float(w) for w in weights)
        self.questions: List[str] = []
        self.corpus = None
        self.index = None
        self._lookup: Dict[str, int] = {}

    def __repr__(self) -> str:
        return f"SdmBaseline(mu={self.mu}, weights={self.weights}, questions={len(self.questions)})"

    def fit(self, pairs: Any, workers: int = 1) -> "SdmBaseline":
        """Index the questions of ``pairs``.

        Parameters
        ----------
        pairs : sequence
            ``(keywords, question)`` pairs, dicts with a ``"question"`` field, or question
            strings (the keywords are not used).  Duplicate questions are indexed once.
        workers : int
            Threads for tokenizing and indexing (-1 = all cores).

        Raises
        ------
        ValueError
            ``pairs`` is empty, or no question has a token.
        TypeError
            ``pairs`` (or an item) is not of one of the forms above.
        """
        from pysynth import text
        from pysynth.retrieval import Index

        workers = _workers(workers)
        _, qs = _pairs(pairs, "pairs", need_keywords=False)
        seen: Dict[str, None] = {}
        for q in qs:
            seen.setdefault(q, None)
        questions = list(seen)
        corpus = text.build_corpus(questions, tokenizer="rouge", workers=workers)
        if corpus.n_tokens == 0:
            raise ValueError("pairs: no question has a token (letters or digits) to index")
        self.index = Index.build(corpus.ids, corpus.offsets, vocab_size=corpus.n_terms + 1, workers=workers)
        self.corpus = corpus
        self.questions = questions
        self._lookup = {t: i for i, t in enumerate(corpus.vocab)}
        return self

    def _check_fitted(self) -> None:
        if self.index is None:
            raise RuntimeError("SdmBaseline is not fitted: call fit(pairs) first")

    def query_ids(self, keywords_list: Sequence[str], workers: int = 1) -> List[List[int]]:
        """Term ids of each keyword query (out-of-corpus terms: ``corpus.n_terms``)."""
        from pysynth import text

        self._check_fitted()
        kws = strings(keywords_list, "keywords_list")
        oov = self.corpus.n_terms
        return [[self._lookup.get(t, oov) for t in toks]
                for toks in text.tokenize(kws, tokenizer="rouge", workers=_workers(workers))]

    def retrieve(self, keywords_list: Sequence[str], k: int = 10, workers: int = 1):
        """The top ``k`` questions of each query as :class:`pysynth.retrieval.Hits` (doc ids index
        :attr:`questions`; -1 padded)."""
        q = self.query_ids(keywords_list, workers)
        return self.index.search(q, k=k, model="sdm", mu=self.mu, weights=self.weights,
                                 workers=_workers(workers))

    def generate(self, keywords_list: Sequence[str], workers: int = 1) -> List[str]:
        """The best-matching training question for each keyword query (``""`` when no term of the
        query occurs in the corpus, e.g. an empty query)."""
        hits = self.retrieve(keywords_list, k=1, workers=workers)
        return [self.questions[int(d)] if c > 0 else "" for d, c in zip(hits.docs[:, 0], hits.counts)]


# --------------------------------------------------------------------------- TBM
_POSSESSIVE = re.compile(r"^(\w.*)('s)$")
_TERM = re.compile(r"[^\W_]")


def tbm_tokenize(text: str) -> List[str]:
    """TBM tokens: :func:`pysynth.models.vocab.tokenize` with a possessive ``'s`` split off.

    >>> tbm_tokenize("Who was Jocasta's first husband?")
    ['who', 'was', 'jocasta', "'s", 'first', 'husband', '?']
    """
    from pysynth.models.vocab import tokenize

    out: List[str] = []
    for t in tokenize(text):
        m = _POSSESSIVE.match(t)
        if m:
            out.extend(m.groups())
        else:
            out.append(t)
    return out


def _is_term(tok: str) -> bool:
    return not tok.startswith("'") and _TERM.search(tok) is not None


def keyword_terms(keywords: str) -> List[str]:
    """The terms of a keyword query as TBM sees them (:func:`tbm_tokenize`, word tokens only).

    >>> keyword_terms("Honda CRF-230 top speed?")
    ['honda', 'crf', '230', 'top', 'speed']
    """
    return [t for t in tbm_tokenize(keywords) if _is_term(t)]


def _detok(tokens: Sequence[str]) -> str:
    from pysynth.models.vocab import detokenize

    return detokenize(tokens).replace(" 's", "'s")


def _require(module: str):
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise ImportError(
            f"TemplateBaseline needs {module.split('.')[0]} (word2vec term similarity): "
            "pip install '.[bench]' (or: pip install gensim)"
        ) from exc


class TemplateBaseline:
    """Template-based K2Q (TBM; Dror et al. 2013 as adapted by Ding & Balog 2018, Sect. 6.5.1).

    The algorithm is the module docstring's, step by step.

    Parameters
    ----------
    neighbors : int
        Similar keyword queries whose templates are candidates (default 5).
    min_similarity : float
        Cosines below this count as 0 (default 0.5).
    order_weight : float
        Weight of the keep-the-query-order penalty in slot assignment (default 0.05).
    template_prior : float
        Exponent ``p`` of a global template-frequency prior: candidate scores are multiplied by
        ``log(1 + freq(template)) ** p``; 0 (default) turns it off.
    vector_size, window, min_count, epochs, sg, negative : word2vec settings (gensim names).

    Examples
    --------
    >>> pairs = [("capital france", "what is the capital of france?"),
    ...          ("capital germany", "what is the capital of germany?")]
    >>> tbm = TemplateBaseline().fit(pairs, seed=0)  # doctest: +SKIP
    >>> tbm.generate(["capital spain"])  # doctest: +SKIP
    ['what is the capital of spain?']
    """

    def __init__(
        self,
        neighbors: int = 5,
        min_similarity: float = 0.5,
        order_weight: float = 0.05,
        template_prior: float = 0.0,
        vector_size: int = 100,
        window: int = 5,
        min_count: int = 5,
        epochs: int = 20,
        sg: int = 0,
        negative: int = 5,
    ):
        if isinstance(neighbors, bool) or not isinstance(neighbors, (int, np.integer)) or neighbors < 1:
            raise ValueError(f"neighbors must be a positive int, got {neighbors!r}")
        if not 0.0 <= float(min_similarity) <= 1.0:
            raise ValueError(f"min_similarity must be in [0, 1], got {min_similarity!r}")
        if not 0.0 <= float(order_weight) < 1.0:
            raise ValueError(f"order_weight must be in [0, 1), got {order_weight!r}")
        self.neighbors = int(neighbors)
        self.min_similarity = float(min_similarity)
        self.order_weight = float(order_weight)
        if not float(template_prior) >= 0.0:
            raise ValueError(f"template_prior must be >= 0, got {template_prior!r}")
        self.template_prior = float(template_prior)
        self.w2v_params = dict(vector_size=int(vector_size), window=int(window), min_count=int(min_count),
                               epochs=int(epochs), sg=int(sg), negative=int(negative))
        self.seed: Optional[int] = None
        self.templates: List[Tuple[Optional[str], ...]] = []
        self.template_freq: np.ndarray = np.zeros(0, np.int64)
        self.terms: List[str] = []
        self.n_instances = 0
        self.wv = None
        self._fitted = False

    def __repr__(self) -> str:
        return (f"TemplateBaseline(neighbors={self.neighbors}, min_similarity={self.min_similarity}, "
                f"order_weight={self.order_weight}, templates={len(self.templates)}, "
                f"instances={self.n_instances})")

    # ------------------------------------------------------------------ fit
    @staticmethod
    def extract(keywords: str, question: str) -> Tuple[Tuple[Optional[str], ...], Tuple[str, ...]]:
        """Step 1 for one pair: ``(template, fillers)``; slots are ``None`` in ``template``,
        ``fillers`` in slot (question) order; ``fillers == ()`` when no term aligns.

        >>> TemplateBaseline.extract("pooh winnie author", "Who is the author of Winnie the Pooh?")
        (('who', 'is', 'the', None, 'of', None, 'the', None, '?'), ('author', 'winnie', 'pooh'))
        """
        q = tbm_tokenize(question)
        slot = [False] * len(q)
        for t in keyword_terms(keywords):
            for p, w in enumerate(q):
                if not slot[p] and w == t:
                    slot[p] = True
                    break
        template = tuple(None if s else w for w, s in zip(q, slot))
        fillers = tuple(w for w, s in zip(q, slot) if s)
        return template, fillers

    def fit(self, pairs: Any, seed: int = 0, workers: int = 1) -> "TemplateBaseline":
        """Extract the templates of ``pairs`` and train the word2vec term vectors.

        Parameters
        ----------
        pairs : sequence of ``(keywords, question)`` pairs or dicts with ``"keywords"`` and
            ``"question"`` (str each).
        seed : word2vec seed; with the fixed single worker thread the vectors, and so every
            output, are the same in every run.
        workers : checked but unused: word2vec always runs one thread, for determinism.

        Raises
        ------
        ValueError
            ``pairs`` is empty, or no pair has a keyword term that occurs in its question.
        ImportError
            gensim (or scipy) is not installed: ``pip install '.[bench]'``.
        """
        _workers(workers)
        kws, qs = _pairs(pairs, "pairs", need_keywords=True)
        gensim_models = _require("gensim.models")
        _require("scipy.optimize")
        tmpl_id: Dict[Tuple[Optional[str], ...], int] = {}
        templates: List[Tuple[Optional[str], ...]] = []
        term_id: Dict[str, int] = {}
        inst_t: List[int] = []
        inst_f: List[Tuple[int, ...]] = []
        for k, q in zip(kws, qs):
            template, fillers = self.extract(k, q)
            if not fillers:
                continue
            tid = tmpl_id.setdefault(template, len(templates))
            if tid == len(templates):
                templates.append(template)
            inst_t.append(tid)
            inst_f.append(tuple(term_id.setdefault(f, len(term_id)) for f in fillers))
        if not inst_t:
            raise ValueError("pairs: no pair has a keyword term that occurs in its question, so no "
                             "template can be extracted")
        smax = max(len(f) for f in inst_f)
        fill = np.full((len(inst_f), smax), -1, dtype=np.int32)
        for i, f in enumerate(inst_f):
            fill[i, : len(f)] = f
        self._inst_template = np.asarray(inst_t, dtype=np.int32)
        self._inst_fillers = fill
        self._inst_slots = (fill >= 0).sum(axis=1).astype(np.int32)
        # inverted lists filler term -> instances (CSR), to find the instances a query touches
        rows = np.repeat(np.arange(len(inst_f), dtype=np.int32), self._inst_slots)
        terms_flat = fill[fill >= 0]
        order = np.lexsort((rows, terms_flat))
        self._post = rows[order]
        self._post_ptr = np.zeros(len(term_id) + 1, dtype=np.int64)
        np.cumsum(np.bincount(terms_flat, minlength=len(term_id)), out=self._post_ptr[1:])
        self.templates = templates
        self.template_freq = np.bincount(self._inst_template, minlength=len(templates)).astype(np.int64)
        self.terms = list(term_id)
        self._term_id = term_id
        self.n_instances = len(inst_t)

        # step 2: word2vec on the distinct training questions, one thread, seeded
        seen: Dict[str, None] = {}
        for q in qs:
            seen.setdefault(q, None)
        sentences = [[t for t in tbm_tokenize(q) if _is_term(t)] for q in seen]
        sentences = [s for s in sentences if s]
        w2v = gensim_models.Word2Vec(sentences=sentences, workers=1, seed=int(seed), **self.w2v_params)
        self.wv = w2v.wv
        self._mean = (np.asarray(self.wv.vectors, dtype=np.float64).mean(axis=0) if len(self.wv)
                      else np.zeros(self.wv.vector_size))
        self.seed = int(seed)
        self._term_vecs = self._unit_vectors(self.terms)
        self._rows: Dict[str, Tuple[np.ndarray, np.ndarray]] = {}
        self._rows_key = self.min_similarity
        self._fitted = True
        return self

    def _unit_vectors(self, words: Sequence[str]) -> np.ndarray:
        """Mean-centred, unit-length word2vec vectors (zeros for words without a vector)."""
        d = self.wv.vector_size
        out = np.zeros((len(words), d), dtype=np.float32)
        for i, w in enumerate(words):
            j = self.wv.key_to_index.get(w)
            if j is not None:
                v = np.asarray(self.wv.vectors[j], dtype=np.float64) - self._mean
                nrm = float(np.sqrt(v @ v))
                if nrm > 0:
                    out[i] = v / nrm
        return out

    def similarity(self, a: str, b: str) -> float:
        """Term similarity of step 2: 1 for equal words, else the cosine of their word2vec
        vectors when it is at least ``min_similarity``, else 0 (also 0 without vectors)."""
        self._check_fitted()
        if a == b:
            return 1.0
        va, vb = self._unit_vectors([a, b])
        c = float((va[None, :] @ vb[:, None])[0, 0])
        return c if c >= self.min_similarity and c > 0.0 else 0.0

    # ------------------------------------------------------------------ generate
    def _check_fitted(self) -> None:
        if not self._fitted:
            raise RuntimeError("TemplateBaseline is not fitted: call fit(pairs) first")

    def _term_rows(self, terms: Sequence[str]) -> None:
        """Cache, for each term, its similar filler terms as (filler ids, similarities) (step 2)."""
        if self._rows_key != self.min_similarity:  # the cache holds rows for one threshold
            self._rows, self._rows_key = {}, self.min_similarity
        todo = [t for t in dict.fromkeys(terms) if t not in self._rows]
        for c in range(0, len(todo), 256):
            chunk = todo[c : c + 256]
            sims = self._unit_vectors(chunk) @ self._term_vecs.T  # (chunk, F) float32
            for t, row in zip(chunk, sims):
                idx = np.flatnonzero((row >= self.min_similarity) & (row > 0.0)).astype(np.int64)
                val = row[idx].astype(np.float64)
                j = self._term_id.get(t)
                if j is not None:  # a word is always similar to itself: exactly 1
                    k = np.searchsorted(idx, j)
                    if k < idx.size and idx[k] == j:
                        val[k] = 1.0
                    else:
                        idx, val = np.insert(idx, k, j), np.insert(val, k, 1.0)
                self._rows[t] = (idx, val)

    def _sim_matrix(self, terms: Sequence[str]) -> np.ndarray:
        """(n, F + 1) similarities of the query terms to every filler term; the last column (the
        padding of instances with fewer slots) is 0."""
        self._term_rows(terms)
        s = np.zeros((len(terms), len(self.terms) + 1))
        for k, t in enumerate(terms):
            idx, val = self._rows[t]
            s[k, idx] = val
        return s

    def _assign(self, sim: np.ndarray, i: int) -> Tuple[float, np.ndarray]:
        """Step 3 for instance ``i``: (similarity, query term index of each slot)."""
        from scipy.optimize import linear_sum_assignment

        s = int(self._inst_slots[i])
        a = sim[:, self._inst_fillers[i, :s]]  # (n, s)
        n = a.shape[0]
        pq = np.arange(n) / (n - 1) if n > 1 else np.zeros(1)
        ps = np.arange(s) / (s - 1) if s > 1 else np.zeros(1)
        rows, cols = linear_sum_assignment(a - self.order_weight * np.abs(pq[:, None] - ps[None, :]),
                                           maximize=True)
        which = np.empty(s, dtype=np.int64)
        which[cols] = rows
        return float(a[rows, cols].sum()) / n, which

    def _neighbors(self, sim: np.ndarray) -> List[Tuple[float, int, np.ndarray]]:
        """Step 3: the top ``neighbors`` instances as ``(similarity, instance, assignment)``."""
        n = sim.shape[0]
        touched = np.flatnonzero(sim.max(axis=0) > 0.0)
        if touched.size == 0:
            return []
        # the instances that hold a touched filler: concatenated posting slices, vectorized
        starts, lens = self._post_ptr[touched], np.diff(self._post_ptr)[touched]
        pos = np.repeat(starts - np.cumsum(lens) + lens, lens) + np.arange(int(lens.sum()))
        hit = np.zeros(self.n_instances, dtype=bool)
        hit[self._post[pos]] = True
        hit &= self._inst_slots <= n
        cand = np.flatnonzero(hit)
        if cand.size == 0:
            return []
        # upper bounds of the assignment: every slot takes its best query term, or every query
        # term its best slot; the smaller one prunes almost all candidates
        g = sim[:, self._inst_fillers[cand]]  # (n, C, smax); padding (-1) reads the 0 column
        ub = np.minimum(g.max(axis=0).sum(axis=1), g.max(axis=2).sum(axis=0)) / n
        del g
        o = np.lexsort((cand, -ub))
        order, ub = cand[o], ub[o]
        m = self.neighbors
        best: List[Tuple[float, int, np.ndarray]] = []
        for u, i in zip(ub, order):
            if len(best) >= m and u + 1e-9 < best[-1][0]:
                break
            score, which = self._assign(sim, int(i))
            if score <= 0.0:
                continue
            best.append((score, int(i), which))
            best.sort(key=lambda x: (-x[0], x[1]))
            del best[m:]
        return best

    def rank(self, keywords: str, n: int = 5) -> List[Tuple[str, float]]:
        """The top ``n`` candidate questions for one keyword query with their scores (step 4);
        ``[]`` when the query has no term or no similar keyword query."""
        self._check_fitted()
        if not isinstance(keywords, str):
            raise TypeError(f"keywords must be str, got {type(keywords).__name__}")
        terms = keyword_terms(keywords)
        if not terms:
            return []
        nb = self._neighbors(self._sim_matrix(terms))
        votes: Dict[int, List[Any]] = {}
        for score, i, which in nb:  # best first: the first neighbour of a template is its best
            tid = int(self._inst_template[i])
            if tid in votes:
                votes[tid][0] += score
            else:
                votes[tid] = [score, score, which]
        p = self.template_prior
        if p:
            for tid, v in votes.items():
                v[0] *= float(np.log1p(self.template_freq[tid])) ** p
        ranked = sorted(votes.items(), key=lambda kv: (-kv[1][0], -kv[1][1], kv[0]))
        out: List[Tuple[str, float]] = []
        seen = set()
        for tid, (total, _, which) in ranked:
            fill = iter(terms[k] for k in which)
            text = _detok([next(fill) if w is None else w for w in self.templates[tid]])
            if text not in seen:
                seen.add(text)
                out.append((text, float(total)))
            if len(out) >= n:
                break
        return out

    def generate(self, keywords_list: Sequence[str], workers: int = 1) -> List[str]:
        """The top-ranked question for each keyword query (``""`` when :meth:`rank` has none).

        ``workers`` threads share the queries; the outputs do not depend on it.
        """
        self._check_fitted()
        kws = strings(keywords_list, "keywords_list")
        w = _workers(workers)
        self._term_rows([t for k in kws for t in keyword_terms(k)])

        def one(k: str) -> str:
            r = self.rank(k, n=1)
            return r[0][0] if r else ""

        if w == 1 or len(kws) < 2:
            return [one(k) for k in kws]
        with ThreadPoolExecutor(max_workers=w) as ex:
            return list(ex.map(one, kws, chunksize=max(1, len(kws) // (4 * w))))
