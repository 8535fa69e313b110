"""``POST /v1/rewrite`` of ``pysynth serve``: ill-formed questions rewritten into well-formed ones
(MQR, Chu et al. 2020) by :meth:`pysynth.mqr.rewrite.Rewriter.choices` on onnxruntime, with the
rerank, back-off and safe selection of ``pysynth mqr rewrite`` (the served well-formedness
classifier scores the beam and the candidates); each result says which candidate was chosen
(``reason``: ``model``, ``rule``, ``kept_input``)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable, List, Literal, Optional, Union

from pysynth.mqr.rewrite import DEFAULT_DECODING, DEFAULT_MODEL, Rewriter
from pysynth.pipelines.served import Adapter, Context, Guards, Loaded, param

__all__ = ["RewriteAdapter"]


@dataclass(kw_only=True)
class RewriteRequest(Guards):
    questions: Union[str, List[str]] = param(examples=["Spaghetti carbonara, mixing"])
    beam: int = param(DEFAULT_DECODING["beam"], ge=1, le=16, description="beam size (1: greedy)")
    coverage: float = param(DEFAULT_DECODING["coverage"], ge=0, le=100, description="rerank the beam by the share of "
                            "the question's words kept (0: the beam's best); as `pysynth mqr rewrite`")
    rerank_wellformed: Optional[float] = param(
        None, ge=0, le=100, description="weight of the well-formedness log-probability in the rerank (default: "
        f"{DEFAULT_DECODING['wellformed']} when the wellformed model is served, else 0)")
    backoff: float = param(DEFAULT_DECODING["backoff"], ge=0, le=1, description="a rewrite keeping less than this "
                           "share of the question's words is replaced by the rule floor")
    min_wellformed: Optional[float] = param(None, ge=0, le=1, description="keep a rewrite only when its "
                                            "well-formedness is >= this (else the input)")
    select: Optional[Literal["safe", "model"]] = param(
        None, description="safe: the input, the rule floor or the model's rewrite, whichever is best by "
        "well-formedness and kept words, never worse than the input (reason kept_input when the input comes back); "
        "model: the model's rewrite, the rule floor on back-off (default: safe when the wellformed model is "
        "served, else model)")


@dataclass(kw_only=True)
class Rewrite:
    question: str
    rewrite: str
    rewritten: bool = param(description="false: the input came back (no known word, kept_input, or under "
                                        "min_wellformed)")
    reason: Optional[str] = param(None, description="model, rule (the rule floor) or kept_input (the safe selection "
                                                    "found nothing better than the input), min_wellformed (the rewrite was under it); null: no "
                                                    "known word")
    wellformed: Optional[float] = None


@dataclass(kw_only=True)
class RewriteResponse:
    model: str
    results: List[Rewrite]


class RewriteAdapter(Adapter):
    name, route = "rewrite", "/v1/rewrite"
    summary = "rewrite ill-formed questions into well-formed ones (MQR, Chu et al. 2020)"
    request, response, errors = RewriteRequest, RewriteResponse, (404, 422, 503)
    default_model = DEFAULT_MODEL

    def load(self, spec, *, device="cpu", threads=0) -> Loaded:
        from pysynth import models

        spec = spec or DEFAULT_MODEL
        if models.task_of(spec)[1] == "hf":
            raise ValueError(f"--model {self.name}: {spec} is a Hugging Face directory; the server runs pysynth "
                             "models with an ONNX export (pysynth export onnx)")
        t2t = models.load(spec, task="text2text", backend="onnx", device=device, threads=threads)
        return Loaded(Rewriter.from_generator(t2t.gen), t2t.name, t2t.providers)

    def call(self, model: Rewriter, key: Hashable, inputs: List[Any]) -> List[Any]:
        beam, coverage, wellformed, backoff, scorer, select, guards = key  # type: ignore[misc]
        return model.choices(inputs, beam=beam, batch_size=max(1, len(inputs)), coverage=coverage,
                             wellformed=wellformed, backoff=backoff, scorer=scorer, select=select, **dict(guards))

    def warmup(self, model: Rewriter) -> None:
        word = next(w for w in model.generator.vocab.itos if w.isalpha())
        model.generator.generate([word], method="greedy", beam=1, n=1)
        model.generator.generate([word], method="beam", beam=4, n=4)

    async def handle(self, req: RewriteRequest, ctx: Context):
        g = ctx.model(self.name)
        qs = ctx.texts(req.questions, "questions")
        if req.min_wellformed is not None:
            ctx.model("wellformed", "min_wellformed: ")
        weight = req.rerank_wellformed
        if weight is None:  # the CLI's default decoding where the classifier is served
            weight = DEFAULT_DECODING["wellformed"] if ctx.has("wellformed") else 0.0
        select = req.select or (DEFAULT_DECODING["select"] if ctx.has("wellformed") else "model")
        scorer = ctx.model("wellformed", "rerank_wellformed: ").model if weight else None
        if select == "safe":
            scorer = ctx.model("wellformed", "select=safe: ").model
        rerank = bool(req.coverage or weight) and req.beam > 1
        # the batch key: requests with one decoding share a beam search (and the classifier's scoring)
        key = (req.beam, req.coverage if rerank else 0, weight if rerank else 0, req.backoff,
               scorer if rerank or select == "safe" else None, select, tuple(req.guards.items()))
        outs = await ctx.submit(self.name, key, qs)
        results = [{"question": q, "rewrite": q if o is None else o[0],
                    "rewritten": o is not None and o[1] != "kept_input", "reason": None if o is None else o[1]}
                   for q, o in zip(qs, outs)]
        if req.min_wellformed is not None:
            probs = await ctx.submit("wellformed", None, [r["rewrite"] for r in results])
            for r, p in zip(results, probs):
                r["wellformed"] = round(p, 4)
                if r["rewritten"] and p < req.min_wellformed:
                    r.update(rewrite=r["question"], rewritten=False, reason="min_wellformed")
        return {"model": g.name, "results": results}


ADAPTER = RewriteAdapter()
