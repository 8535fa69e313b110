"""Roundtrip-consistent synthetic QA (Alberti et al. 2019): ``C -> A -> Q -> A'``, keep iff ``A' = A``.

:class:`QAGenerator` runs the four steps of the paper's Table 1 on a batch of contexts:

1. answer extraction: the top ``k = 10`` distinct spans of ``p(a | c)`` (joint span scoring,
   Sect. 3.1, at most ``L_A = 32`` wordpieces), ``A`` drawn uniformly from them (seeded per context;
   ``answers_per_context`` K > 1 draws K without replacement); a span that crosses a sentence
   boundary or is too long is rejected with a counted reason and the next draw replaces it;
2. question generation ``(C, A) -> Q`` (greedy by default, as the paper); a question that repeats
   a word trigram is decoded again by beam search (``no_repeat_ngram``) or discarded;
3. extractive QA ``(C, Q) -> A'`` with the SQuAD 2.0 no-answer score;
4. the roundtrip filter: with the shipped models (``match="auto"``) the learned filter of
   :mod:`pysynth.qagen.filter` (a score of the QA model's expected F1 with ``A``, the question's
   well-formedness and its log-probability under the generator; kept iff it reaches the threshold);
   ``match="exact"`` is the paper's: keep iff ``A'`` matches ``A`` (:func:`roundtrip_decision`):
   exact match after SQuAD normalisation, or token F1 >= tau; a no-answer prediction (and, with
   ``margin``, an answer whose score beats the no-answer score by less than ``margin``) discards.

Unanswerables (SQuAD 2.0 style): a kept question paired with another paragraph of the same
article (paragraphs never overlap), so that ``neg_fraction`` of the output rows are
unanswerable (the paper's 3M rows of which 2.4M answerable: 0.2).

Every context gives one decision row per drawn answer, at least one (kept or discarded, with its
reason and the scores behind it); nothing is dropped silently.
"""
from __future__ import annotations

import re
from collections import Counter
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from pysynth.qagen.data import Context, exact_match, f1_score

__all__ = ["QAGenConfig", "QAGenerator", "roundtrip_decision", "parse_match", "add_unanswerables", "REASONS",
           "SPAN_REJECTIONS", "span_rejection", "sentence_starts", "has_repeated_ngram", "ask_questions",
           "decode_options", "question_options", "resolve_match", "LOW_SCORE"]

#: why a triple was discarded (``reason`` of a row; ``None`` when kept)
REASONS = ("no_answer_span", "all_spans_rejected", "empty_question", "repeated_ngram", "roundtrip_no_answer",
           "roundtrip_margin", "roundtrip_mismatch", "llm_empty", "llm_unparsable", "llm_refused")
#: why a drawn answer span was rejected before question generation (counted as ``rejected_<reason>``)
SPAN_REJECTIONS = ("crosses_sentence", "too_many_words", "duplicate_answer")
_DECODES = ("greedy", "beam", "dbs", "sample")
#: a context over ``QAGenConfig.max_context_chars`` is not read: one row with this reason (issue 27)
TOO_LONG = "context_too_long"
REASONS += (TOO_LONG,)
#: the learned roundtrip filter (:mod:`pysynth.qagen.filter`) scored the triple below its threshold
LOW_SCORE = "roundtrip_low_score"
REASONS += (LOW_SCORE,)


def parse_match(spec: str) -> Tuple[str, Optional[float]]:
    """``"exact"`` -> ``("exact", 1.0)``; ``"f1:0.5"`` -> ``("f1", 0.5)``; ``"learned"`` ->
    ``("learned", None)`` (the shipped threshold); ``"learned:0.3"`` -> ``("learned", 0.3)``;
    ``"auto"`` -> ``("auto", None)`` (learned with the shipped models, exact otherwise:
    :func:`resolve_match`)."""
    if spec in ("exact", "auto", "learned"):
        return spec, 1.0 if spec == "exact" else None
    m = re.fullmatch(r"(f1|learned):([0-9]*\.?[0-9]+)", str(spec))
    if not m or not (0.0 < float(m.group(2)) <= 1.0 if m.group(1) == "f1" else 0.0 <= float(m.group(2)) <= 1.0):
        raise ValueError(f"match: must be 'auto', 'learned', 'learned:P' (0 <= P <= 1), 'exact' or 'f1:TAU' "
                         f"(0 < TAU <= 1, e.g. f1:0.5), got {spec!r}")
    return m.group(1), float(m.group(2))


def resolve_match(spec: str, question_model: Optional[str], qa_model: Optional[str]) -> str:
    """The roundtrip test that ``match=spec`` means with these models (their registry names;
    None: the shipped default): ``auto`` is ``learned`` when the question generator is the shipped
    ``qagen-qg-copynet`` and the QA model the shipped ``qagen-span-minilm`` (the models the filter
    was fitted for), else ``exact``. ``learned`` with other models: ValueError."""
    from pysynth.qagen.models import DEFAULT_QG_MODEL, DEFAULT_SPAN_MODEL

    kind, _ = parse_match(spec)
    shipped = (question_model or DEFAULT_QG_MODEL) == DEFAULT_QG_MODEL and \
        (qa_model or DEFAULT_SPAN_MODEL) == DEFAULT_SPAN_MODEL
    if kind == "auto":
        return "learned" if shipped else "exact"
    if kind == "learned" and not shipped:
        raise ValueError(f"match: the learned roundtrip filter is fitted for {DEFAULT_QG_MODEL} (questions) and "
                         f"{DEFAULT_SPAN_MODEL} (QA), got {question_model!r} and {qa_model!r}; use 'exact' or "
                         "'f1:TAU' with other models")
    return spec


@dataclass
class QAGenConfig:
    """Settings of :class:`QAGenerator` (paper defaults).

    Parameters
    ----------
    top_k : int
        Distinct answer spans per context that ``A`` is drawn from (10).
    max_answer_len : int
        Longest extracted answer in wordpieces (``L_A = 32``).
    joint : bool
        Joint start-end span scoring (the paper: critical); False: independent start + end.
    decode : str
        Question decoding: ``greedy`` (the paper), ``beam``, ``dbs`` (diverse beam) or ``sample`` (top-k).
    beam_size, top_k_sample : int
        Beam width (beam / dbs) and the k of top-k sampling.
    match : str
        The roundtrip test: ``auto`` (``learned`` with the shipped models, ``exact`` with others),
        ``learned`` / ``learned:P`` (:mod:`pysynth.qagen.filter`: a score of the QA model's expected
        F1 with ``A``, the question's well-formedness and its log-probability under the generator;
        kept iff the score >= P, the shipped threshold by default; else reason
        ``roundtrip_low_score``), ``exact`` (the paper: SQuAD-normalised exact match of ``A'``
        and ``A``) or ``f1:TAU`` (token F1 >= TAU).
    margin : float or None
        Also require ``score(A') - null_score >= margin`` (the QA model's answerability margin).
    qa_max_answer_len : int
        Longest QA answer in wordpieces (30).
    neg_fraction : float
        Share of output rows that are unanswerable (0.2; 0 turns them off).
    min_wellformed : float or None
        Also discard a consistent triple whose question's well-formedness probability
        (:func:`pysynth.quality.wellformedness`, Faruqui & Das 2018) is below this (reason
        ``not_wellformed``); the kept rows get a ``wellformed`` field. None: no filter.
    seed : int
        Seeds the answer draw and the unanswerable pairing (per context, so any chunking gives
        the same rows).
    answers_per_context : int
        K: answers drawn per context without replacement from the top ``top_k`` spans (each one
        asked and checked: one decision row per answer). The first draw is the K = 1 draw (1).
    one_sentence : bool
        Reject a drawn span that crosses a sentence boundary (``rejected_crosses_sentence``); the
        next draw replaces it (True; issue 26).
    max_answer_words : int or None
        Reject a drawn span of more words than this (``rejected_too_many_words``; 10: 3.2 % of
        held-out SQuAD gold answers are longer). None: no limit.
    no_repeat_ngram : int
        N >= 2: the question search never repeats a token N-gram (:class:`pysynth.decoding.SearchConfig`),
        and a question that still repeats a word N-gram ("the class of the class of") or a word
        ("dias dias") is decoded again by beam search of width ``max(beam_size, 4)`` and the best
        hypothesis without one is taken; if none, the triple is discarded (reason
        ``repeated_ngram``). 0: off (3).
    no_stutter : bool
        The question search never says a token twice in a row (True; the other guard of
        :class:`pysynth.decoding.SearchConfig`).
    max_context_chars : int or None
        A context of more characters is not read (its span passes grow with its length: ~40 ms per
        256-token window on one core): it gets one row with reason ``context_too_long``, counted as
        every discard, and the run goes on. None: no limit (``qagen generate``: 100,000, the server's
        ``--max-context-chars``).

    The paper's pipeline (and pysynth's before issue 26, byte for byte): ``one_sentence=False,
    max_answer_words=None, no_repeat_ngram=0``.
    """

    top_k: int = 10
    max_answer_len: int = 32
    joint: bool = True
    decode: str = "greedy"
    beam_size: int = 4
    top_k_sample: int = 10
    match: str = "auto"
    margin: Optional[float] = None
    qa_max_answer_len: int = 30
    neg_fraction: float = 0.2
    seed: int = 0
    min_wellformed: Optional[float] = None
    answers_per_context: int = 1
    one_sentence: bool = True
    max_answer_words: Optional[int] = 10
    no_repeat_ngram: int = 3
    max_context_chars: Optional[int] = None
    no_stutter: bool = True

    def __post_init__(self):
        for k in ("top_k", "max_answer_len", "top_k_sample", "qa_max_answer_len"):
            v = getattr(self, k)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{k}: must be a positive integer, got {v!r}")
        if self.decode not in _DECODES:
            raise ValueError(f"decode: must be one of {_DECODES}, got {self.decode!r}")
        self.search  # noqa: B018 - validates the question decoding (beam_size ...)
        parse_match(self.match)
        if self.margin is not None and not np.isfinite(float(self.margin)):
            raise ValueError(f"margin: must be a finite number or None, got {self.margin!r}")
        if not isinstance(self.neg_fraction, (int, float)) or not 0.0 <= self.neg_fraction < 1.0:
            raise ValueError(f"neg_fraction: must be in [0, 1), got {self.neg_fraction!r}")
        if isinstance(self.seed, bool) or not isinstance(self.seed, int) or self.seed < 0:
            raise ValueError(f"seed: must be a non-negative integer, got {self.seed!r}")
        _int_opt(self.answers_per_context, "answers_per_context", 1)
        if self.max_answer_words is not None:
            _int_opt(self.max_answer_words, "max_answer_words", 1)
        _int_opt(self.no_repeat_ngram, "no_repeat_ngram", 0)
        if self.max_context_chars is not None:
            _int_opt(self.max_context_chars, "max_context_chars", 1)
        if self.no_repeat_ngram == 1:
            raise ValueError("no_repeat_ngram: must be 0 (off) or an n-gram size >= 2, got 1")
        if not isinstance(self.one_sentence, bool):
            raise ValueError(f"one_sentence: must be True or False, got {self.one_sentence!r}")
        if self.min_wellformed is not None and (isinstance(self.min_wellformed, bool)
                                                or not isinstance(self.min_wellformed, (int, float))
                                                or not 0.0 <= self.min_wellformed <= 1.0):
            raise ValueError(f"min_wellformed: must be a probability in [0, 1] or None, got {self.min_wellformed!r}")

    @property
    def search(self):
        """The question decoding as a :class:`pysynth.decoding.SearchConfig`
        (:func:`pysynth.qagen.models.question_search`)."""
        from pysynth.decoding.config import renamed
        from pysynth.qagen.models import question_search

        try:
            return question_search(self.decode, self.beam_size, self.top_k_sample, self.no_repeat_ngram,
                                   self.no_stutter)
        except ValueError as exc:
            raise renamed(exc, {"method": "decode", "top_k": "top_k_sample"}) from None

    def as_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        # runs without the filter or the answer options of issue 26 keep their signature;
        # no_repeat_ngram is always there (3, the default, since issue 26; 0: the search's ban is off
        # too, so such a run must not share a signature with one made before the search had it)
        for k, off in (("min_wellformed", None), ("answers_per_context", 1), ("one_sentence", False),
                       ("max_answer_words", None), ("max_context_chars", None), ("no_stutter", True)):
            if d[k] == off:
                del d[k]
        return d


def _int_opt(v, name: str, lo: int) -> None:
    if isinstance(v, bool) or not isinstance(v, int) or v < lo:
        raise ValueError(f"{name}: must be an integer >= {lo}, got {v!r}")


_ABBREV = re.compile(r"(?:\b[A-Za-z]\.|\b(?:Mr|Mrs|Ms|Dr|St|Jr|Sr|Prof|Gen|Col|Lt|Sgt|Capt|Rev|Gov|Sen|Rep|Inc|Co|"
                     r"Ltd|Corp|vs|etc|No|Vol|Fig|Mt|Ft|approx|ca|c)\.)[\"')\]]*\s*$")


def sentence_starts(context: str) -> List[int]:
    """Where the sentences of ``context`` after the first begin (the question generator's
    splitter, :func:`pysynth.qagen.data.qg_source`, without its breaks after an initial or a
    common abbreviation: "U.S. Army", "Dr. Smith")."""
    from pysynth.qagen.data import _sentence_bounds

    return [a for (a, _), (p0, p1) in zip(_sentence_bounds(context)[1:], _sentence_bounds(context))
            if not _ABBREV.search(context[p0:p1])]


def span_rejection(context: str, start: int, end: int, *, one_sentence: bool = True,
                   max_words: Optional[int] = None, starts: Optional[Sequence[int]] = None) -> Optional[str]:
    """Why the answer span ``context[start:end]`` is no answer to ask about, or None.

    ``crosses_sentence`` (``one_sentence``: a sentence begins inside the span, e.g. "1920), both it
    and Yale ... In 1903") or ``too_many_words`` (more than ``max_words`` words). ``starts``: the
    context's :func:`sentence_starts`, when the caller has them.

    Examples
    --------
    >>> c = "It ended in 1920. In 1903 it began."
    >>> span_rejection(c, 12, 25), span_rejection(c, 12, 16)
    ('crosses_sentence', None)
    """
    if one_sentence:
        if starts is None:
            starts = sentence_starts(context)
        if any(start < a < end for a in starts):
            return "crosses_sentence"
    if max_words is not None and len(context[start:end].split()) > max_words:
        return "too_many_words"
    return None


def has_repeated_ngram(text: Optional[str], n: int = 3) -> bool:
    """Whether ``text`` loops: it repeats a word ``n``-gram, or says a word (not a number) twice in
    a row (lower-cased words, punctuation ignored).

    >>> has_repeated_ngram("what class of the class of the class?"), has_repeated_ngram("when did dias dias?")
    (True, True)
    >>> has_repeated_ngram("who won in 1903?")
    False
    """
    words = re.findall(r"\w+", (text or "").lower())
    if any(a == b and not a.isdigit() for a, b in zip(words, words[1:])):
        return True
    grams = [tuple(words[i:i + n]) for i in range(len(words) - n + 1)]
    return len(set(grams)) < len(grams)


def ask_questions(qg, contexts: Sequence[str], answers: Sequence[Dict[str, int]], options: Dict[str, Any],
                  no_repeat_ngram: int = 0, beam_size: int = 4, counts: Optional[Counter] = None,
                  logprobs: Optional[List[Optional[float]]] = None) -> List[str]:
    """One question per ``(context, answer)`` from ``qg`` (:class:`pysynth.qagen.models.QuestionGenerator`)
    decoded with ``options`` (its ``generate`` keywords), with the repeated-n-gram guard.

    ``no_repeat_ngram`` N >= 2: questions that repeat a word N-gram are decoded again by beam
    search (width ``max(beam_size, 4)``, every hypothesis returned) and the best hypothesis
    without a repeated N-gram replaces them; where every hypothesis repeats one, the question
    is kept as it is (the caller decides; :func:`has_repeated_ngram` tells). ``counts`` gets
    ``questions_redecoded`` and ``questions_fixed``. ``logprobs``: a list that gets each
    question's log-probability under ``qg`` (None where its kind has none).
    """
    scored = logprobs is not None
    qs = list(qg.generate(list(contexts), list(answers), **options, **({"scores": True} if scored else {}))) \
        if contexts else []
    lps = [None] * len(qs)
    if scored:
        lps, qs = [lp for _, lp in qs], [q for q, _ in qs]
        logprobs[:] = lps
    if no_repeat_ngram < 2 or not hasattr(qg, "nbest"):
        return qs
    bad = [i for i, q in enumerate(qs) if has_repeated_ngram(q, no_repeat_ngram)]
    if not bad:
        return qs
    nb = qg.nbest([contexts[i] for i in bad], [answers[i] for i in bad], beam_size=max(beam_size, 4),
                  **({"scores": True} if scored else {}))
    fixed = 0
    for i, hyps in zip(bad, nb):
        hyps = hyps if scored else [(h, None) for h in hyps]
        good = [(h, lp) for h, lp in hyps if h.strip() and not has_repeated_ngram(h, no_repeat_ngram)]
        if good:
            (qs[i], lps[i]), fixed = good[0], fixed + 1
    if scored:
        logprobs[:] = lps
    if counts is not None:
        counts["questions_redecoded"] += len(bad)
        counts["questions_fixed"] += fixed
    return qs


def roundtrip_decision(answer: str, predicted: Dict[str, Any], match: str = "exact",
                       margin: Optional[float] = None) -> Tuple[bool, Optional[str], float]:
    """``(consistent, reason, f1)`` of one triple (Alberti et al. 2019, Table 1 step 4).

    ``predicted`` is :meth:`SpanModel.answer`'s dict. No answer (``score < null_score``, or no
    span) -> ``roundtrip_no_answer``; with ``margin``, ``score - null_score < margin`` ->
    ``roundtrip_margin``; otherwise the texts must match (``exact``, or ``f1:TAU``) or
    ``roundtrip_mismatch``. ``f1`` is the SQuAD token F1 of ``A'`` vs ``A`` (0 without ``A'``).
    """
    kind, tau = parse_match(match)
    text = predicted.get("text")
    if text is None or predicted["score"] < predicted["null_score"]:
        return False, "roundtrip_no_answer", 0.0
    f1 = f1_score(text, answer)
    if margin is not None and predicted["score"] - predicted["null_score"] < margin:
        return False, "roundtrip_margin", f1
    ok = exact_match(text, answer) if kind == "exact" else f1 >= tau
    return ok, None if ok else "roundtrip_mismatch", f1


def decode_options(decode: str, beam_size: int, top_k_sample: int, seed: int,
                   keys: Sequence[Tuple[int, int]], no_repeat_ngram: int = 3, no_stutter: bool = True) -> Dict[str, Any]:
    """:meth:`QuestionGenerator.generate <pysynth.qagen.models.QuestionGenerator.generate>` keywords of
    ``decode``; sampling seeds are keyed by ``(seed, index, draw)`` per question (``keys``); the
    search's guards only off their defaults (any question generator takes the default call)."""
    from pysynth.decoding.config import guard_changes

    guards = guard_changes(no_repeat_ngram, no_stutter)
    if decode == "greedy":
        return {"method": "greedy", **guards}
    if decode in ("beam", "dbs"):
        return {"method": decode, "beam_size": beam_size, **guards}
    return {"method": "sample", "top_k": top_k_sample,
            "seeds": [int(_rng(seed, i, 2, j).integers(2**31)) for i, j in keys], **guards}


def question_options(decode: str = "greedy", beam_size: int = 4, top_k_sample: int = 10, seed: int = 0,
                     no_repeat_ngram: int = 3, no_stutter: bool = True) -> Dict[str, Any]:
    """The question decoding settings of ``qagen questions``, validated (``ValueError`` naming the
    argument), as a dict (``no_stutter`` only when off: the signatures of before)."""
    if decode not in _DECODES:
        raise ValueError(f"decode: must be one of {_DECODES}, got {decode!r}")
    from pysynth.decoding.config import renamed
    from pysynth.qagen.models import question_search

    try:
        question_search(decode, beam_size, top_k_sample)
    except ValueError as exc:
        raise renamed(exc, {"method": "decode", "top_k": "top_k_sample"}) from None
    _int_opt(seed, "seed", 0)
    _int_opt(no_repeat_ngram, "no_repeat_ngram", 0)
    if no_repeat_ngram == 1:
        raise ValueError("no_repeat_ngram: must be 0 (off) or an n-gram size >= 2, got 1")
    from pysynth.decoding.config import guard_changes

    guard_changes(no_repeat_ngram, no_stutter)
    return {"decode": decode, "beam_size": beam_size, "top_k_sample": top_k_sample, "seed": seed,
            "no_repeat_ngram": no_repeat_ngram, **({} if no_stutter else {"no_stutter": False})}


def _rng(seed: int, index: int, salt: int, draw: int = 0) -> np.random.Generator:
    # the first answer of a context keeps the K = 1 key, so K = 1 runs give the same bytes as before
    return np.random.default_rng([seed, index, salt] + ([draw] if draw else []))


class QAGenerator:
    """The roundtrip pipeline over loaded models.

    Parameters
    ----------
    config : QAGenConfig
    span_model : :class:`pysynth.qagen.models.SpanModel` (answer extraction), default the shipped one.
    question_model : :class:`pysynth.qagen.models.QuestionGenerator`, default the shipped one.
    qa_model : :class:`SpanModel` for ``A'``; default ``span_model`` (the shipped model does both roles).
    threads : int
        onnxruntime threads of the well-formedness model of the learned filter (0: its default).

    Attributes
    ----------
    match : str
        The roundtrip test in use (``config.match`` resolved by :func:`resolve_match` for these models).
    """

    def __init__(self, config: Optional[QAGenConfig] = None, span_model=None, question_model=None, qa_model=None,
                 threads: int = 0):
        from pysynth.qagen.models import QuestionGenerator, SpanModel

        self.cfg = config or QAGenConfig()
        self.span = span_model if span_model is not None else SpanModel()
        self.qg = question_model if question_model is not None else QuestionGenerator()
        self.qa = qa_model if qa_model is not None else self.span
        self.threads = threads
        self.timings = {"extract_s": 0.0, "generate_s": 0.0, "answer_s": 0.0}
        self.match = resolve_match(self.cfg.match, getattr(self.qg, "name", "<custom>"),
                                   getattr(self.qa, "name", "<custom>"))
        self.filter = None
        if self.match.startswith("learned"):
            from pysynth.qagen.filter import load_filter

            self.filter = load_filter()
            self.threshold = parse_match(self.match)[1]
            if self.threshold is None:
                self.threshold = self.filter.threshold

    def _decode_options(self, keys: Sequence[Tuple[int, int]]) -> Dict[str, Any]:
        c = self.cfg
        return decode_options(c.decode, c.beam_size, c.top_k_sample, c.seed, keys, c.no_repeat_ngram, c.no_stutter)

    def draw_answers(self, context: str, cand: Sequence[Dict[str, Any]], index: int,
                     counts: Optional[Counter] = None) -> List[Tuple[int, Dict[str, Any]]]:
        """``(rank, span)`` of the answers of one context: up to ``answers_per_context`` spans drawn
        uniformly without replacement from ``cand`` (the top spans) with the generator of
        ``(seed, index)``; a rejected span (:func:`span_rejection`, or an answer text already
        drawn: ``duplicate_answer``) is counted in ``counts`` as ``rejected_<reason>`` and the next
        draw replaces it. The first draw is the one of K = 1."""
        from pysynth.qagen.data import normalize_answer

        c = self.cfg
        g = _rng(c.seed, index, 1)
        left, out, seen = list(range(len(cand))), [], set()
        starts = sentence_starts(context) if c.one_sentence else None
        while left and len(out) < c.answers_per_context:
            r = left.pop(int(g.integers(len(left))))
            a = cand[r]
            why = span_rejection(context, a["start"], a["start"] + len(a["text"]), one_sentence=c.one_sentence,
                                 max_words=c.max_answer_words, starts=starts)
            if why is None and out and normalize_answer(a["text"]) in seen:
                why = "duplicate_answer"
            if why is not None:
                if counts is not None:
                    counts[f"rejected_{why}"] += 1
                continue
            seen.add(normalize_answer(a["text"]))
            out.append((r, a))
        return out

    def run(self, contexts: Sequence[Context], first_index: int = 0,
            indices: Optional[Sequence[int]] = None, counts: Optional[Counter] = None) -> List[Dict[str, Any]]:
        """The decision rows of ``contexts``: one per drawn answer (up to ``answers_per_context``),
        at least one per context, in context order (see :mod:`pysynth.qagen.pipeline`). Random
        draws are keyed by ``(seed, index)``: ``indices`` (default ``first_index, first_index + 1,
        ...``, the contexts' positions in the whole input), so any chunking or batching gives the
        same rows. ``counts`` (a Counter) gets the rejected spans, the answers a context could not
        give (``answers_unavailable``) and the question guard's counters."""
        import time

        c = self.cfg
        counts = Counter() if counts is None else counts
        if indices is None:
            indices = range(first_index, first_index + len(contexts))
        elif len(indices) != len(contexts):
            raise ValueError("indices: must hold one index per context")
        texts = [x.text for x in contexts]
        limit = c.max_context_chars
        read = [i for i, x in enumerate(texts) if limit is None or len(x) <= limit]
        t = time.perf_counter()
        spans: List[Any] = [None] * len(texts)  # None: over the budget, never read
        for i, s in zip(read, self.span.extract([texts[i] for i in read], k=c.top_k, max_answer_len=c.max_answer_len,
                                                joint=c.joint) if read else []):
            spans[i] = s
        self.timings["extract_s"] += time.perf_counter() - t
        rows: List[Dict[str, Any]] = []
        picks: List[Tuple[int, int, int]] = []  # (row, context, draw)
        for i, (ctx, cand) in enumerate(zip(contexts, spans)):
            row = {"id": f"{ctx.id}", "title": ctx.title, "context_id": ctx.id, "context": ctx.text}
            if cand is None:
                counts[TOO_LONG] += 1
                rows.append({**row, "question": None, "answer_text": None, "answer_start": -1, "roundtrip_text": None,
                             "roundtrip_start": -1, "consistent": False, "is_impossible": False, "reason": TOO_LONG})
                continue
            drawn = self.draw_answers(ctx.text, cand, indices[i], counts)
            if c.answers_per_context > 1:
                counts["answers_unavailable"] += c.answers_per_context - len(drawn)
            if not drawn:
                rows.append({**row, "question": None, "answer_text": None, "answer_start": -1, "roundtrip_text": None,
                             "roundtrip_start": -1, "consistent": False, "is_impossible": False,
                             "reason": "no_answer_span" if not cand else "all_spans_rejected"})
                continue
            for j, (r, a) in enumerate(drawn):
                extra = {"id": f"{ctx.id}#a{j}"} if j else {}
                if c.answers_per_context > 1:
                    extra["answer_draw"] = j
                picks.append((len(rows), i, j))
                rows.append({**row, **extra, "answer_text": a["text"], "answer_start": a["start"],
                             "answer_rank": r + 1, "answer_score": round(float(a["score"]), 4),
                             "answer_candidates": len(cand)})
        if picks:
            self._ask_and_check(rows, picks, texts, indices, counts)
        if c.min_wellformed is not None:  # the --min-wellformed filter of every generating command
            from pysynth.pipelines import ScoreFilter
            from pysynth.quality import wellformedness

            ScoreFilter("wellformed", c.min_wellformed, wellformedness).apply(
                rows, "question", when=lambda r: r["consistent"], judge=judge_wellformed)
        return rows

    def _ask_and_check(self, rows, picks, texts, indices, counts) -> None:
        """Steps 2-4 for the drawn answers ``picks`` (``(row, context, draw)``), in place."""
        import time

        c = self.cfg
        t = time.perf_counter()
        lps: Optional[List[Optional[float]]] = [] if self.filter is not None else None
        qs = ask_questions(self.qg, [texts[i] for _, i, _ in picks],
                           [{"start": rows[k]["answer_start"], "end": rows[k]["answer_start"] +
                             len(rows[k]["answer_text"])} for k, _, _ in picks],
                           self._decode_options([(indices[i], j) for _, i, j in picks]),
                           c.no_repeat_ngram, c.beam_size, counts, lps)
        self.timings["generate_s"] += time.perf_counter() - t
        # an LLM's empty reply carries its reason (pysynth.llm.Failed: llm_empty, llm_unparsable, llm_refused)
        bad = {n: getattr(q, "reason", None) or "empty_question" for n, q in enumerate(qs) if not (q and q.strip())}
        if c.no_repeat_ngram:
            bad.update({n: "repeated_ngram" for n, q in enumerate(qs)
                        if n not in bad and has_repeated_ngram(q, c.no_repeat_ngram)})
        asked = [n for n in range(len(picks)) if n not in bad]
        t = time.perf_counter()
        if self.filter is None:
            preds = self.qa.answer([texts[picks[n][1]] for n in asked], [qs[n] for n in asked],
                                   max_answer_len=c.qa_max_answer_len) if asked else []
        else:  # the QA model's n-best for the filter's expected F1; its best span is answer()'s
            nbest = self.qa._spans([texts[picks[n][1]] for n in asked], [qs[n] for n in asked], self.filter.nbest,
                                   c.qa_max_answer_len, False) if asked else []
            preds = [nb[0] if nb else {"text": None, "start": -1, "end": -1, "score": float("-inf"),
                                       "null_score": float("inf")} for nb in nbest]
            scores = self._triple_scores([rows[picks[n][0]]["answer_text"] for n in asked], [qs[n] for n in asked],
                                         nbest, [lps[n] for n in asked])
        self.timings["answer_s"] += time.perf_counter() - t
        pred_of = dict(zip(asked, preds))
        score_of = dict(zip(asked, scores)) if self.filter is not None else {}
        for n, ((k, _, _), q) in enumerate(zip(picks, qs)):
            row = rows[k]
            row["question"] = q
            if n in bad:
                row.update(roundtrip_text=None, roundtrip_start=-1, consistent=False, is_impossible=False,
                           reason=bad[n])
                continue
            p = pred_of[n]
            if self.filter is None:
                ok, reason, f1 = roundtrip_decision(row["answer_text"], p, self.match, c.margin)
            else:
                ok, reason, f1 = self._learned_decision(row["answer_text"], p, score_of[n])
                row.update(score_of[n])
            row.update(roundtrip_text=p["text"], roundtrip_start=p["start"], consistent=ok, is_impossible=False,
                       roundtrip_f1=round(f1, 4), qa_score=round(float(p["score"]), 4),
                       null_score=round(float(p["null_score"]), 4), reason=reason)

    def _triple_scores(self, answers, questions, nbest, logprobs) -> List[Dict[str, float]]:
        """The learned filter's inputs and score of each asked triple (rounded: the row's fields)."""
        from pysynth.qagen.filter import expected_f1
        from pysynth.quality import load

        wf = load(None, self.threads)(list(questions)) if questions else []
        out = []
        for a, nb, w, lp in zip(answers, nbest, wf, logprobs):
            x = (round(expected_f1(a, nb), 4), round(float(w), 4), round(float(lp if lp is not None else -50.0), 4))
            out.append({"qa_expected_f1": x[0], "question_wellformed": x[1], "question_logprob": x[2],
                        "triple_score": self.filter.score(*x)})
        return out

    def _learned_decision(self, answer: str, p: Dict[str, Any], s: Dict[str, float]):
        """``(keep, reason, f1)`` by the learned filter (the margin, when set, still applies)."""
        f1 = f1_score(p["text"], answer) if p["text"] is not None and p["score"] >= p["null_score"] else 0.0
        if self.cfg.margin is not None and p["text"] is not None and p["score"] - p["null_score"] < self.cfg.margin:
            return False, "roundtrip_margin", f1
        ok = s["triple_score"] >= self.threshold
        return ok, None if ok else LOW_SCORE, f1


def judge_wellformed(row: Dict[str, Any], keep: bool) -> None:
    """A consistent triple whose question is under ``--min-wellformed`` is discarded (``not_wellformed``)."""
    if not keep:
        row.update(consistent=False, reason="not_wellformed")


def add_unanswerables(rows: List[Dict[str, Any]], pool: Sequence[Context], index_of: Dict[str, int],
                      neg_fraction: float, seed: int) -> Tuple[List[Dict[str, Any]], int]:
    """Unanswerable rows for kept triples: each kept row, with probability
    ``neg_fraction / (1 - neg_fraction)`` (so that ``neg_fraction`` of all output rows are
    unanswerable), gets a copy whose context is another paragraph of the same article (drawn
    with ``seed`` and the row's context index). Returns ``(rows, skipped)``: ``skipped`` counts
    the draws whose article has no other paragraph (or no title)."""
    if neg_fraction <= 0:
        return [], 0
    p = neg_fraction / (1.0 - neg_fraction)
    by_title: Dict[str, List[int]] = {}
    for j, ctx in enumerate(pool):
        if ctx.title:
            by_title.setdefault(ctx.title, []).append(j)
    out, skipped = [], 0
    for r in rows:
        if not r.get("consistent"):
            continue
        i = index_of[r["context_id"]]
        g = _rng(seed, i, 3, int(r.get("answer_draw", 0)))
        if g.random() >= p:
            continue
        others = [j for j in by_title.get(pool[i].title, []) if j != i and pool[j].text != pool[i].text]
        if not others:
            skipped += 1
            continue
        o = pool[others[int(g.integers(len(others)))]]
        out.append({"id": r["id"] + "#neg", "title": o.title, "context_id": o.id, "context": o.text,
                    "question": r["question"], "answer_text": "", "answer_start": -1, "roundtrip_text": None,
                    "roundtrip_start": -1, "consistent": True, "is_impossible": True, "reason": None,
                    "source_context_id": r["context_id"]})
    return out, skipped
