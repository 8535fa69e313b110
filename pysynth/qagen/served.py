"""``POST /v1/qagen`` of ``pysynth serve``: roundtrip-consistent (context, question, answer) triples
(Alberti et al. 2019) by :meth:`pysynth.qagen.pipeline.QAGenerator.run` over a span model
(``pysynth.spans.onnx``: answer extraction and QA) and a question generator's ONNX export."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable, List, Literal, Optional, Union

from pysynth.pipelines.served import Adapter, Context, Loaded, RequestError, param

__all__ = ["QAGenAdapter"]

DEFAULT_MODELS = "qagen-span-minilm,qagen-qg-copynet"
#: the answer of a triple, as served
KEEP = ("context", "question", "answer_text", "answer_start", "roundtrip_text", "roundtrip_start", "consistent",
        "reason", "answer_rank", "answer_score", "qa_score", "null_score", "roundtrip_f1")


@dataclass(kw_only=True)
class QAGenRequest:
    contexts: Union[str, List[str]] = param(examples=["Oxygen was discovered by Carl Wilhelm Scheele in Uppsala "
                                                      "in 1773."])
    top_k: int = param(10, ge=1, le=50, description="the answer is drawn from the top K spans")
    joint: bool = param(True, description="joint start-end span scores (Alberti et al. 2019, Sect. 3.1)")
    decode: Literal["greedy", "beam"] = param("greedy", description="question decoding")
    match: str = param("exact", description="roundtrip test: exact or f1:TAU")
    margin: Optional[float] = param(None, description="no-answer margin the QA answer must beat")
    seed: int = param(0, ge=0, description="seeds the answer draw (per context, not per batch)")


@dataclass(kw_only=True)
class QAGenTriple:
    context: str
    question: Optional[str]
    answer_text: Optional[str]
    answer_start: int
    roundtrip_text: Optional[str]
    consistent: bool
    reason: Optional[str] = param(None, description="why the triple is inconsistent")


@dataclass(kw_only=True)
class QAGenResponse:
    model: str
    results: List[QAGenTriple]


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
        return run.run([QAContext(str(i), "", t) for i, t in enumerate(inputs)], indices=[0] * len(inputs))

    def warmup(self, model) -> None:
        self.call(model, (), ["Oxygen was discovered by Carl Wilhelm Scheele in 1773."])

    async def handle(self, req: QAGenRequest, ctx: Context):
        from pysynth.qagen.pipeline import parse_match

        g = ctx.model(self.name)
        # contexts are paragraphs: 20x the per-text limit of the other endpoints
        texts = ctx.texts(req.contexts, "contexts", max_chars=20 * ctx.max_chars)
        try:
            parse_match(req.match)
        except ValueError as exc:
            raise RequestError(422, str(exc)) from None
        key = (("top_k", req.top_k), ("joint", req.joint), ("decode", req.decode), ("match", req.match),
               ("margin", None if req.margin is None else float(req.margin)), ("seed", req.seed))
        outs = await ctx.submit(self.name, key, texts)
        return {"model": g.name, "results": [{**{k: o[k] for k in KEEP if k in o}, "context": t}
                                             for t, o in zip(texts, outs)]}


ADAPTER = QAGenAdapter()
