"""Roundtrip-consistent synthetic QA (Alberti et al. 2019): ``C -> A -> Q -> A'``, keep iff ``A' = A``.

:class:`QAGenerator` runs the four steps of the paper's Table 1 on a batch of contexts:

1. answer extraction: the top ``k = 10`` distinct spans of ``p(a | c)`` (joint span scoring,
   Sect. 3.1, at most ``L_A = 32`` wordpieces), ``A`` drawn uniformly from them (seeded per context);
2. question generation ``(C, A) -> Q`` (greedy by default, as the paper);
3. extractive QA ``(C, Q) -> A'`` with the SQuAD 2.0 no-answer score;
4. the roundtrip filter: keep iff ``A'`` matches ``A`` (:func:`roundtrip_decision`): exact match
   after SQuAD normalisation by default, or token F1 >= tau; a no-answer prediction (and, with
   ``margin``, an answer whose score beats the no-answer score by less than ``margin``) discards.

Unanswerables (SQuAD 2.0 style): a kept question paired with another paragraph of the same
article (paragraphs never overlap), so that ``neg_fraction`` of the output rows are
unanswerable (the paper's 3M rows of which 2.4M answerable: 0.2).

Every context gives exactly one decision row (kept or discarded, with its reason and the
scores behind it); nothing is dropped silently.
"""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

from pysynth.qagen.data import Context, exact_match, f1_score

__all__ = ["QAGenConfig", "QAGenerator", "roundtrip_decision", "parse_match", "add_unanswerables", "REASONS"]

#: why a triple was discarded (``reason`` of a row; ``None`` when kept)
REASONS = ("no_answer_span", "empty_question", "roundtrip_no_answer", "roundtrip_margin", "roundtrip_mismatch")
_DECODES = ("greedy", "beam", "dbs", "sample")


def parse_match(spec: str) -> Tuple[str, float]:
    """``"exact"`` -> ``("exact", 1.0)``; ``"f1:0.5"`` -> ``("f1", 0.5)``."""
    if spec == "exact":
        return "exact", 1.0
    m = re.fullmatch(r"f1:([0-9]*\.?[0-9]+)", str(spec))
    if not m or not 0.0 < float(m.group(1)) <= 1.0:
        raise ValueError(f"match: must be 'exact' or 'f1:TAU' with 0 < TAU <= 1 (e.g. f1:0.5), got {spec!r}")
    return "f1", float(m.group(1))


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
        ``exact`` (SQuAD-normalised exact match) or ``f1:TAU`` (token F1 >= TAU).
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
    """

    top_k: int = 10
    max_answer_len: int = 32
    joint: bool = True
    decode: str = "greedy"
    beam_size: int = 4
    top_k_sample: int = 10
    match: str = "exact"
    margin: Optional[float] = None
    qa_max_answer_len: int = 30
    neg_fraction: float = 0.2
    seed: int = 0
    min_wellformed: Optional[float] = None

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
            return question_search(self.decode, self.beam_size, self.top_k_sample)
        except ValueError as exc:
            raise renamed(exc, {"method": "decode", "top_k": "top_k_sample"}) from None

    def as_dict(self) -> Dict[str, Any]:
        d = asdict(self)
        if d["min_wellformed"] is None:  # runs without the filter keep their signature
            del d["min_wellformed"]
        return d


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


def _rng(seed: int, index: int, salt: int) -> np.random.Generator:
    return np.random.default_rng([seed, index, salt])


class QAGenerator:
    """The roundtrip pipeline over loaded models.

    Parameters
    ----------
    config : QAGenConfig
    span_model : :class:`pysynth.qagen.models.SpanModel` (answer extraction), default the shipped one.
    question_model : :class:`pysynth.qagen.models.QuestionGenerator`, default the shipped one.
    qa_model : :class:`SpanModel` for ``A'``; default ``span_model`` (the shipped model does both roles).
    """

    def __init__(self, config: Optional[QAGenConfig] = None, span_model=None, question_model=None, qa_model=None):
        from pysynth.qagen.models import QuestionGenerator, SpanModel

        self.cfg = config or QAGenConfig()
        self.span = span_model if span_model is not None else SpanModel()
        self.qg = question_model if question_model is not None else QuestionGenerator()
        self.qa = qa_model if qa_model is not None else self.span
        self.timings = {"extract_s": 0.0, "generate_s": 0.0, "answer_s": 0.0}

    def _decode_options(self, indices: Sequence[int]) -> Dict[str, Any]:
        c = self.cfg
        if c.decode == "greedy":
            return {"method": "greedy"}
        if c.decode == "beam":
            return {"method": "beam", "beam_size": c.beam_size}
        if c.decode == "dbs":
            return {"method": "dbs", "beam_size": c.beam_size}
        return {"method": "sample", "top_k": c.top_k_sample,
                "seeds": [int(_rng(c.seed, i, 2).integers(2**31)) for i in indices]}

    def run(self, contexts: Sequence[Context], first_index: int = 0,
            indices: Optional[Sequence[int]] = None) -> List[Dict[str, Any]]:
        """One decision row per context (see :mod:`pysynth.qagen.pipeline`). Random draws are
        keyed by ``(seed, index)``: ``indices`` (default ``first_index, first_index + 1, ...``, the
        contexts' positions in the whole input), so any chunking or batching gives the same rows."""
        import time

        c = self.cfg
        if indices is None:
            indices = range(first_index, first_index + len(contexts))
        elif len(indices) != len(contexts):
            raise ValueError("indices: must hold one index per context")
        texts = [x.text for x in contexts]
        t = time.perf_counter()
        spans = self.span.extract(texts, k=c.top_k, max_answer_len=c.max_answer_len, joint=c.joint)
        self.timings["extract_s"] += time.perf_counter() - t
        rows: List[Dict[str, Any]] = []
        picks: List[int] = []
        for i, (ctx, cand) in enumerate(zip(contexts, spans)):
            row = {"id": f"{ctx.id}", "title": ctx.title, "context_id": ctx.id, "context": ctx.text}
            if not cand:
                rows.append({**row, "question": None, "answer_text": None, "answer_start": -1, "roundtrip_text": None,
                             "roundtrip_start": -1, "consistent": False, "is_impossible": False,
                             "reason": "no_answer_span"})
                continue
            r = int(_rng(c.seed, indices[i], 1).integers(len(cand)))  # A uniformly from the top k
            a = cand[r]
            rows.append({**row, "answer_text": a["text"], "answer_start": a["start"], "answer_rank": r + 1,
                         "answer_score": round(float(a["score"]), 4), "answer_candidates": len(cand)})
            picks.append(i)
        if picks:
            t = time.perf_counter()
            qs = self.qg.generate([texts[i] for i in picks],
                                  [{"start": rows[i]["answer_start"],
                                    "end": rows[i]["answer_start"] + len(rows[i]["answer_text"])} for i in picks],
                                  **self._decode_options([indices[i] for i in picks]))
            self.timings["generate_s"] += time.perf_counter() - t
            asked = [j for j, q in zip(picks, qs) if q and q.strip()]
            t = time.perf_counter()
            preds = self.qa.answer([texts[j] for j in asked], [qs[picks.index(j)] for j in asked],
                                   max_answer_len=c.qa_max_answer_len) if asked else []
            self.timings["answer_s"] += time.perf_counter() - t
            pred_of = dict(zip(asked, preds))
            for j, q in zip(picks, qs):
                row = rows[j]
                row["question"] = q
                if j not in pred_of:
                    row.update(roundtrip_text=None, roundtrip_start=-1, consistent=False, is_impossible=False,
                               reason="empty_question")
                    continue
                p = pred_of[j]
                ok, reason, f1 = roundtrip_decision(row["answer_text"], p, c.match, c.margin)
                row.update(roundtrip_text=p["text"], roundtrip_start=p["start"], consistent=ok, is_impossible=False,
                           roundtrip_f1=round(f1, 4), qa_score=round(float(p["score"]), 4),
                           null_score=round(float(p["null_score"]), 4), reason=reason)
        if c.min_wellformed is not None:  # the --min-wellformed filter of every generating command
            from pysynth.pipelines import ScoreFilter
            from pysynth.quality import wellformedness

            ScoreFilter("wellformed", c.min_wellformed, wellformedness).apply(
                rows, "question", when=lambda r: r["consistent"], judge=judge_wellformed)
        return rows


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
        g = _rng(seed, i, 3)
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
