"""Keyword-to-question (K2Q, Ding & Balog 2018) with the neural seq2seq models of :mod:`pysynth.models`.

* :func:`make_synthetic_pairs` — a stand-in for the paper's keyword query generation model
  (Sect. 3, Algorithm 1) until the K2Q pipeline lands: keywords = the question's terms minus a
  question-word/stopword list, in question order, of random length 3-7 (a seeded subset when the
  question has more content terms). No paraphrase model, phrase detection or filters.
* :func:`generate_questions` — the Fig. 1 experience: the most likely question for a keyword
  query plus diverse alternatives (diverse beam search, Vijayakumar et al. 2016).
* :func:`evaluate_t0` — ROUGE-L/1/2 F and BLEU on the seed set T0 (Sect. 7.1, Table 2).
"""
from __future__ import annotations

import random
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple, Union

from pysynth.models.vocab import detokenize, tokenize

__all__ = ["STOPWORDS", "keywords_of", "make_synthetic_pairs", "default_model_dir", "generate_questions",
           "evaluate_t0", "get_generator", "DEFAULT_MODEL"]

# question words, auxiliaries, pronouns, articles, prepositions, conjunctions
STOPWORDS = frozenset("""
what whats what's who whos who's whom whose which where wheres where's when whens why how hows how's
is are was were be been being am do does did done doing can could should would will shall may might must
have has had having get gets got the a an of to in on for at by with from about as into onto over under
than then so if or and but nor not no yes any some many much more most very too also just
i me my mine you your yours he him his she her hers it its they them their theirs we us our ours
this that these those there here such one ones thing things
s t don't doesn't didn't isn't aren't wasn't weren't can't couldn't won't wouldn't shouldn't
""".split())


def keywords_of(question: str, rng: random.Random, min_len: int = 3, max_len: int = 7) -> List[str]:
    """Keyword tokens for ``question``: content terms in question order, a random subset of a
    length drawn uniformly from ``[min_len, max_len]`` (all terms when there are fewer)."""
    terms = [t for t in tokenize(question) if t not in STOPWORDS and any(c.isalnum() for c in t)]
    k = rng.randint(min_len, max_len)
    if len(terms) <= k:
        return terms
    keep = sorted(rng.sample(range(len(terms)), k))
    return [terms[i] for i in keep]


def make_synthetic_pairs(
    questions: Optional[Sequence[str]] = None,
    samples_per_question: int = 1,
    seed: int = 0,
    min_terms: int = 1,
    sources: Sequence[str] = ("comqa", "wellformed", "mqr", "squad"),
) -> List[Tuple[str, str]]:
    """Synthetic ``(keywords, question)`` pairs (stand-in for the K2Q pipeline; see module doc).

    Parameters
    ----------
    questions : the questions (default: the question set Q of the shared data *excluding the T0
        clusters*, from ``pysynth.k2q.data``; VQA questions are left out by default because they
        are 37K image questions unlike the WikiAnswers-style T0 queries).
    samples_per_question : keyword queries drawn per question.
    seed : the random seed (same seed, same pairs).
    min_terms : questions with fewer content terms are skipped.
    """
    if questions is None:
        from pysynth.k2q.data import load_question_set, load_seed_pairs

        t0 = {p.cluster_id for p in load_seed_pairs()}
        questions = load_question_set(exclude_clusters=t0, sources=sources).questions
    rng = random.Random(seed)
    pairs, seen = [], set()
    for q in questions:
        for _ in range(samples_per_question):
            kw = keywords_of(q, rng)
            pair = (" ".join(kw), q)
            if len(kw) >= min_terms and pair not in seen:
                seen.add(pair)
                pairs.append(pair)
    return pairs


#: the registry name of the shipped K2Q model (:mod:`pysynth.models.registry`)
DEFAULT_MODEL = "k2q-copynet-small"


def default_model_dir() -> Path:
    """The directory of the shipped model ``k2q-copynet-small`` (resolved by the model registry)."""
    from pysynth.models.registry import resolve

    return resolve(DEFAULT_MODEL).path


_CACHE: Dict[tuple, object] = {}


def get_generator(model=None, backend: str = "auto"):
    """A cached :class:`~pysynth.models.generate.Generator` for a model folder (default: shipped)."""
    from pysynth.models.generate import Generator

    key = (str(model) if model is not None else None, backend)
    if key not in _CACHE:
        _CACHE[key] = Generator.load(model if model is not None else DEFAULT_MODEL, backend=backend)
    return _CACHE[key]


def generate_questions(
    keywords: Union[str, Sequence[str]],
    n: int = 5,
    diverse: bool = True,
    *,
    model=None,
    backend: str = "auto",
    beam: int = 5,
    groups: Optional[int] = None,
    diversity: float = 0.8,
) -> Union[List[Tuple[str, float]], List[List[Tuple[str, float]]]]:
    """Questions for a keyword query: the most likely one first, then alternatives.

    Parameters
    ----------
    keywords : a keyword query, or a list of them
    n : questions per query
    diverse : alternatives from diverse beam search (``groups`` groups of 2 beams, strength
        ``diversity``) instead of the rest of the plain beam's n-best list. The first question
        is always the best hypothesis of plain beam search with ``beam`` beams.
    model : model folder (default: the shipped ``k2q-copynet-small``) or a ``Generator``
    backend : ``auto`` (onnx when onnxruntime is installed, else torch), ``torch`` or ``onnx``

    Returns
    -------
    list of ``(question, score)`` (score = log-probability), or one such list per query.

    Examples
    --------
    >>> generate_questions("bible verse education", n=3)  # doctest: +SKIP
    [('what is the bible verse about education?', -2.1), ...]
    """
    from pysynth.models.generate import Generator

    single = isinstance(keywords, str)
    queries = [keywords] if single else list(keywords)
    if not isinstance(n, int) or n < 1:
        raise ValueError(f"n: must be a positive integer, got {n!r}")
    gen = model if isinstance(model, Generator) else get_generator(model, backend)
    best = gen.generate(queries, beam=beam, n=beam if not diverse else 1)
    out = []
    if diverse and n > 1:
        G = groups or n
        alt = gen.generate(queries, beam=2 * G, groups=G, diversity=diversity, method="diverse")
    for i, b in enumerate(best):
        items = list(zip(b.texts, b.scores))
        seen = {t for t, _ in items}
        extra = list(zip(alt[i].texts, alt[i].scores)) if diverse and n > 1 else []
        for t, s in extra:
            if t not in seen:
                items.append((t, s))
                seen.add(t)
        out.append(items[:n])
    return out[0] if single else out


def evaluate_t0(generator=None, pairs=None, beam: int = 5, batch_size: int = 32, *, no_repeat_ngram: int = 3,
                no_stutter: bool = True) -> Dict[str, float]:
    """ROUGE-L/1/2 F (rouge-score flavor, mean) and corpus BLEU (sacrebleu, 0-1 scale) on T0.

    Each T0 keyword query is decoded (beam search, best hypothesis) and scored against the
    question it was written for (one reference), as in Sect. 7.1; ``*_multi`` scores use all
    questions of the query's paraphrase cluster as references. Queries whose every token is
    outside the vocabulary get an empty output. ``no_repeat_ngram``, ``no_stutter``: the search's
    degenerate-output guards (:class:`pysynth.decoding.SearchConfig`).
    """
    from pysynth import metrics
    from pysynth.k2q.data import load_seed_pairs

    gen = generator or get_generator()
    pairs = pairs if pairs is not None else load_seed_pairs()
    kws = [p.keywords for p in pairs]
    refs = [detokenize(tokenize(p.question)) for p in pairs]
    ok = [i for i, k in enumerate(kws) if tokenize(k) and any(w in gen.vocab.stoi for w in tokenize(k))]
    res = gen.generate([kws[i] for i in ok], beam=beam, n=1, batch_size=batch_size, no_repeat_ngram=no_repeat_ngram,
                       no_stutter=no_stutter)
    hyps = [""] * len(kws)
    for i, g in zip(ok, res):
        hyps[i] = g.texts[0] if g.texts else ""
    r = metrics.rouge(hyps, refs, types=("rougeL", "rouge1", "rouge2")).mean()
    bleu = metrics.corpus_bleu(hyps, [refs]).score / 100.0
    # multi-reference: all questions of the cluster
    by_cluster: Dict[str, List[str]] = {}
    for p, ref in zip(pairs, refs):
        by_cluster.setdefault(p.cluster_id, [])
        if ref not in by_cluster[p.cluster_id]:
            by_cluster[p.cluster_id].append(ref)
    width = max(len(v) for v in by_cluster.values())
    streams = [[(by_cluster[p.cluster_id] + [by_cluster[p.cluster_id][0]] * width)[j] for p in pairs]
               for j in range(width)]
    rm = metrics.rouge(hyps, streams, types=("rougeL", "rouge1", "rouge2")).mean()
    bm = metrics.corpus_bleu(hyps, streams).score / 100.0
    return {"rougeL": r["rougeL"]["f"], "rouge1": r["rouge1"]["f"], "rouge2": r["rouge2"]["f"], "bleu": bleu,
            "rougeL_multi": rm["rougeL"]["f"], "rouge1_multi": rm["rouge1"]["f"],
            "rouge2_multi": rm["rouge2"]["f"], "bleu_multi": bm, "n": len(pairs),
            "n_invalid": len(kws) - len(ok), "hyps": hyps}
