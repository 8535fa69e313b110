"""``POST /v1/qagen`` of ``pysynth serve``: roundtrip-consistent (context, question, answer) triples
(Alberti et al. 2019) by :meth:`pysynth.qagen.pipeline.QAGenerator.run` over a span model
(``pysynth.spans.onnx``: answer extraction and QA) and a question generator's ONNX export."""
from __future__ import annotations

import math
import re
from dataclasses import dataclass
from typing import Any, Dict, Hashable, List, Literal, Optional, Sequence, Union

from pysynth.models.spans import WINDOW_TOKENS, count_windows
from pysynth.pipelines.served import Adapter, Context, Guards, Loaded, RequestError, param

__all__ = ["QAGenAdapter", "estimate_cost"]

DEFAULT_MODELS = "qagen-span-minilm,qagen-qg-copynet"
#: the answer of a triple, as served
KEEP = ("context", "question", "answer_text", "answer_start", "roundtrip_text", "roundtrip_start", "consistent",
        "reason", "answer_rank", "answer_score", "qa_score", "null_score", "roundtrip_f1", "answer_draw")


@dataclass(kw_only=True)
class QAGenRequest(Guards):
    contexts: Union[str, List[str]] = param(examples=["Oxygen was discovered by Carl Wilhelm Scheele in Uppsala "
                                                      "in 1773."])
    top_k: int = param(10, ge=1, le=50, description="the answer is drawn from the top K spans")
    joint: bool = param(True, description="joint start-end span scores (Alberti et al. 2019, Sect. 3.1)")
    decode: Literal["greedy", "beam"] = param("greedy", description="question decoding")
    match: str = param("auto", description="roundtrip test: auto (the learned filter with the shipped models, "
                       "exact otherwise), learned or learned:P, exact, or f1:TAU")
    margin: Optional[float] = param(None, description="no-answer margin the QA answer must beat")
    seed: int = param(0, ge=0, description="seeds the answer draw (per context, not per batch)")
    answers_per_context: int = param(1, ge=1, le=10, description="K distinct answers drawn per context (each "
                                     "asked and checked: up to K results per context, in context order)")


@dataclass(kw_only=True)
class QAGenTriple:
    context: str
    question: Optional[str]
    answer_text: Optional[str]
    answer_start: int
    roundtrip_text: Optional[str]
    consistent: bool
    reason: Optional[str] = param(None, description="why the triple is inconsistent")
    answer_draw: Optional[int] = param(None, description="which of the K answers (answers_per_context > 1)")


@dataclass(kw_only=True)
class QAGenResponse:
    model: str
    results: List[QAGenTriple]


_PRETOKENS = re.compile(r"\w+|[^\w\s]")  # BERT's pre-tokenizer: words and single punctuation marks
#: wordpieces per pre-token: 1.09 on held-out SQuAD paragraphs (64 x 20,000 characters), with margin
WORDPIECES_PER_WORD = 1.25
#: measured on the shipped span model (issue 27, bench/qagen_memory.py): bytes per token of one
#: joint span-scorer call (its [T, 32] span table), per window token of a tokenizer batch
#: (ids, offsets, encodings), and per context character (the text, the JSON body, the answer)
SCORER_BYTES_PER_TOKEN, ENCODING_BYTES_PER_TOKEN, BYTES_PER_CHAR = 256_000, 600, 16


def estimate_cost(texts: Sequence[str], *, max_length: int = 256, stride: int = 96,
                  max_tokens: int = WINDOW_TOKENS, batch_size: int = 16, answers: int = 1,
                  question_tokens: int = 32) -> Dict[str, int]:
    """What a ``/v1/qagen`` request over ``texts`` costs, estimated before any work (no tokenizer).

    The span model reads each context in windows (:func:`pysynth.models.spans.predict_spans`):
    once to extract answers, once per drawn answer to check it (the question and 3 special tokens
    take ``question_tokens + 3`` places of a QA window). Wordpieces are estimated from BERT
    pre-tokens (:data:`WORDPIECES_PER_WORD`). Memory above the loaded models does not grow with
    a context's length: one scorer call (``max_tokens``), the tokenizer batch of the
    ``batch_size`` longest contexts, and the texts themselves.

    Parameters
    ----------
    texts : the request's contexts.
    max_length, stride, max_tokens, batch_size : the span model's windows
        (:class:`pysynth.models.span_model.SpanModel`).
    answers : answers drawn per context (each one asked and checked).
    question_tokens : wordpieces reserved for a question in a QA window.

    Returns
    -------
    dict
        ``contexts``, ``context_chars``, ``tokens`` (estimated wordpieces), ``windows`` (span
        model window passes: the work, ~40 ms each on one core here) and ``peak_bytes``
        (estimated memory of the request above the loaded models).

    Examples
    --------
    >>> estimate_cost(["Oxygen was discovered in 1773."])["windows"]
    2
    """
    if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
        raise TypeError("texts: must be a sequence of strings")
    tokens = [math.ceil(len(_PRETOKENS.findall(t)) * WORDPIECES_PER_WORD) for t in texts]
    ex = [count_windows(n, max_length, stride, 2) for n in tokens]
    qa = [count_windows(n, max_length, stride, question_tokens + 3) for n in tokens]
    biggest = sorted(ex, reverse=True)[:batch_size]
    peak = (SCORER_BYTES_PER_TOKEN * max(max_tokens, max_length)
            + ENCODING_BYTES_PER_TOKEN * max_length * sum(biggest)
            + BYTES_PER_CHAR * sum(len(t) for t in texts))
    return {"contexts": len(texts), "context_chars": sum(len(t) for t in texts), "tokens": sum(tokens),
            "windows": sum(ex) + answers * sum(qa), "peak_bytes": int(peak)}


class QAGenAdapter(Adapter):
    name, route = "qagen", "/v1/qagen"
    summary = "roundtrip-consistent question-answer pairs for contexts (Alberti et al. 2019)"
    request, response, errors = QAGenRequest, QAGenResponse, (404, 413, 422, 503)
    default_model = DEFAULT_MODELS

    def load(self, spec, *, device="cpu", threads=0) -> Loaded:
        """``spec``: ``SPAN,QG`` (a span model and a question generator; None: the shipped pair)."""
        from pysynth import models
        from pysynth.qagen.models import QuestionGenerator
        from pysynth.qagen.pipeline import QAGenerator

        spec = spec or DEFAULT_MODELS
        parts = spec.split(",")
        if len(parts) != 2 or not all(parts):
            raise ValueError(f"--model {self.name}={spec}: expected SPAN,QG (a span model and a question generator)")
        span = models.load(parts[0], task="spans", device=device, threads=threads)
        # one window per scorer call (~40 ms on one core; 1 to 16 windows per call ran at the same
        # speed): a request that timed out stops before the next window (cancel.checkpoint), and the
        # spans do not depend on it (predict_spans keeps each batch's padding)
        span.max_tokens = span.max_length
        if span.backend != "onnx":
            raise ValueError(f"--model {self.name}: {parts[0]} is not an ONNX span model (pysynth.spans.onnx store); "
                             "the server runs onnxruntime only")
        qg = QuestionGenerator(parts[1], backend="onnx", threads=threads, device=device)
        if qg.kind != "seq2seq":
            raise ValueError(f"--model {self.name}: {parts[1]} is not a pysynth seq2seq model with an ONNX export")
        return Loaded(QAGenerator(None, span, qg), spec, list(span.scorer.sess.get_providers()))

    def call(self, model, key: Hashable, inputs: List[Any]) -> List[Any]:
        from pysynth.qagen.data import Context as QAContext
        from pysynth.qagen.pipeline import QAGenConfig, QAGenerator

        # one config per key (requests with other settings are other batches), over the loaded
        # models; every context is drawn for as index 0, so its answer does not depend on its batch
        run = QAGenerator(QAGenConfig(**dict(key), neg_fraction=0.0), model.span, model.qg, model.qa)  # type: ignore[arg-type]
        rows = run.run([QAContext(str(i), "", t) for i, t in enumerate(inputs)], indices=[0] * len(inputs))
        groups: List[List[Dict[str, Any]]] = [[] for _ in inputs]  # the K decision rows of each input
        for r in rows:
            groups[int(r["context_id"])].append(r)
        return groups

    def warmup(self, model) -> None:
        self.call(model, (), ["Oxygen was discovered by Carl Wilhelm Scheele in 1773."])

    async def handle(self, req: QAGenRequest, ctx: Context):
        from pysynth.qagen.pipeline import parse_match

        g = ctx.model(self.name)
        # contexts are paragraphs: 20x the per-text limit of the other endpoints
        texts = ctx.texts(req.contexts, "contexts", max_chars=20 * ctx.max_chars)
        for i, t in enumerate(texts):  # the question generator needs a word to start from (else a 500)
            if not any(c.isalnum() for c in t):
                raise RequestError(422, f"contexts[{i}]: no word (only punctuation, symbols or spaces)")
        try:
            parse_match(req.match)
        except ValueError as exc:
            raise RequestError(422, str(exc)) from None
        key = (("top_k", req.top_k), ("joint", req.joint), ("decode", req.decode), ("match", req.match),
               ("margin", None if req.margin is None else float(req.margin)), ("seed", req.seed),
               ("answers_per_context", req.answers_per_context), *req.guards.items())
        outs = await ctx.submit(self.name, key, texts)
        return {"model": g.name, "results": [{**{k: o[k] for k in KEEP if k in o}, "context": t}
                                             for t, group in zip(texts, outs) for o in group]}


ADAPTER = QAGenAdapter()
