"""Per-request budgets of ``pysynth serve``, decided before any work starts.

Each endpoint has a cost model over its validated request (:func:`cost`); a request whose cost is
over the server's :class:`Budget` is refused with 413 and a message that names the sizes, the
limit and the fix. The units:

* **hypotheses** (the generators): sequences decoded at once for the request, the measure of both
  a search's memory and its time per step. ``/v1/k2q``: inputs x beam; ``/v1/rewrite``: inputs x
  beam; ``/v1/paraphrase``: the two pivot stages, inputs x B + (inputs x B) x B (every pivot
  sentence is decoded back with B beams). Measured on 2 cores: 64 questions with B = 32 (67,584
  hypotheses) held the model thread 119 s (issue 27), about 1.8 ms per hypothesis; the default
  budget of 8,192 is about 15 s, inside the default 30 s timeout.
* **tokens per segment** (``/v1/score``): whitespace tokens of each hypothesis and reference;
  ROUGE-L and ROUGE-Lsum fill an n x m table per segment pair (20k x 20k tokens took 1.6 GB), so
  their total **LCS cells** (sum of n x m over segments and reference streams) has its own budget
  (compiled: 200M cells of ROUGE-L + ROUGE-Lsum took 0.22 s on 2 cores; the per-segment limit
  bounds one table to 2,000 x 2,000). METEOR's alignment search grows like n x m x max(n, m) in
  the worst case (one repeated word: 256 tokens 0.69 s, 512 tokens 4.9 s, 1,024 tokens 31 s), so
  a METEOR segment has a lower token limit and a request a **METEOR work** budget: the sum of
  n x m x max(n, m) over its segment pairs (250M: about 10 s in that worst case).
* **context characters** (``/v1/qagen``): the characters of all contexts of one request (the span
  model and the question generator run over each context).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Dict, List, Optional

from pysynth._validate import MAX_CONTEXT_CHARS
from pysynth.pipelines.served import RequestError

__all__ = ["Budget", "check", "cost"]


@dataclass
class Budget:
    """The limits of one request (``pysynth serve --max-hypotheses`` ...).

    max_hypotheses : sequences decoded at once by one generator request.
    max_segment_tokens : whitespace tokens of any ``/v1/score`` segment (hypothesis or reference).
    max_lcs_cells : the sum of n x m over the segment pairs of ROUGE-L / ROUGE-Lsum in one request.
    max_meteor_tokens : whitespace tokens of a segment scored by METEOR.
    max_meteor_work : the sum of n x m x max(n, m) over the METEOR segment pairs of one request.
    max_context_chars : characters of all the contexts of one ``/v1/qagen`` request.
    """

    max_hypotheses: int = 8192
    max_segment_tokens: int = 2000
    max_lcs_cells: int = 200_000_000
    max_meteor_tokens: int = 256
    max_meteor_work: int = 250_000_000
    max_context_chars: int = MAX_CONTEXT_CHARS  # qagen generate's --max-context-chars default too


def _count(value: Any) -> int:
    return 1 if isinstance(value, str) else len(value)


def _k2q(req) -> Dict[str, int]:
    beam = req.beam or (2 * req.n if req.diverse else req.n)
    return {"hypotheses": _count(req.keywords) * beam}


def _rewrite(req) -> Dict[str, int]:
    return {"hypotheses": _count(req.questions) * req.beam}


def _paraphrase(req) -> Dict[str, int]:
    n, b = _count(req.questions), req.beams
    return {"hypotheses": n * b + n * b * b}


def _qagen(req) -> Dict[str, int]:
    items = [req.contexts] if isinstance(req.contexts, str) else req.contexts
    return {"context_chars": sum(len(t) for t in items if isinstance(t, str))}


def _score(req) -> Dict[str, int]:
    refs = [req.refs] if req.refs and isinstance(req.refs[0], str) else req.refs
    hyp_tokens = [len(h.split()) for h in req.hyps]
    longest, cells, work = max(hyp_tokens, default=0), 0, 0
    lcs = any(m in ("rougeL", "rougeLsum") for m in req.metrics)
    met = "meteor" in req.metrics
    for stream in refs:
        for h, r in zip(hyp_tokens, stream):
            m = len(r.split()) if isinstance(r, str) else 0
            longest = max(longest, m)
            cells += h * m if lcs else 0
            work += h * m * max(h, m) if met else 0
    return {"segment_tokens": longest, "lcs_cells": cells, "meteor": int(met), "meteor_work": work}


_MODELS: Dict[str, Callable[[Any], Dict[str, int]]] = {
    "k2q": _k2q, "rewrite": _rewrite, "paraphrase": _paraphrase, "qagen": _qagen, "score": _score}


def cost(task: str, req: Any) -> Dict[str, int]:
    """The cost of the validated request ``req`` of endpoint ``task`` in the units of the module
    doc (``{}`` for an endpoint without a cost model: its input limits bound it)."""
    model = _MODELS.get(task)
    return model(req) if model is not None else {}


def check(task: str, req: Any, budget: Budget) -> Dict[str, int]:
    """:func:`cost` of ``req``, or :class:`~pysynth.pipelines.served.RequestError` 413 when it
    is over ``budget`` (the message names the sizes, the limit and the fix)."""
    c = cost(task, req)
    over: List[str] = []
    hyps = c.get("hypotheses")
    if hyps is not None and hyps > budget.max_hypotheses:
        over.append(f"{hyps:,} hypotheses to decode, over the budget of {budget.max_hypotheses:,} per request "
                    "(--max-hypotheses); send fewer inputs or smaller beams")
    chars = c.get("context_chars")
    if chars is not None and chars > budget.max_context_chars:
        over.append(f"contexts: {chars:,} characters in all, over the budget of {budget.max_context_chars:,} "
                    "per request (--max-context-chars); send fewer or shorter contexts")
    tokens: Optional[int] = c.get("segment_tokens")
    limit = min(budget.max_segment_tokens, budget.max_meteor_tokens) if c.get("meteor") else budget.max_segment_tokens
    if tokens is not None and tokens > limit:
        over.append(f"a segment of {tokens:,} tokens, over the limit of {limit:,} tokens per segment"
                    + (" with meteor (--max-meteor-tokens)" if c.get("meteor") and limit < budget.max_segment_tokens
                       else " (--max-segment-tokens)"))
    cells = c.get("lcs_cells")
    if cells is not None and cells > budget.max_lcs_cells:
        over.append(f"ROUGE-L needs {cells:,} LCS cells (tokens of each hypothesis x its references), over the "
                    f"budget of {budget.max_lcs_cells:,} per request (--max-lcs-cells)")
    work = c.get("meteor_work")
    if work and work > budget.max_meteor_work:
        over.append(f"METEOR needs {work:,} alignment units (n x m x max(n, m) over the segments), over the "
                    f"budget of {budget.max_meteor_work:,} per request (--max-meteor-work); send fewer or shorter "
                    "segments")
    if over:
        raise RequestError(413, "request over budget: " + "; ".join(over))
    return c
