"""``POST /v1/paraphrase`` of ``pysynth serve``: paraphrases by pivoting through two pysynth models
on onnxruntime with diverse beam search (Granstedt 2017), :meth:`pysynth.paraphrase.pipeline.Paraphraser.run`;
``min_wellformed`` filters them with the served classifier (:func:`pysynth.quality.filter_rows`)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, Hashable, List, Literal, Optional, Union

from pysynth.pipelines.served import Adapter, Context, Guards, Loaded, RequestError, param

__all__ = ["ParaphraseAdapter"]

DEFAULT_PIVOT = "fr"


@dataclass(kw_only=True)
class ParaphraseRequest(Guards):
    questions: Union[str, List[str]] = param(examples=["How many animals can be seen?"])
    decode: Literal["dbs", "beam"] = param("dbs", description="diverse beam search or beam search (both stages)")
    beams: int = param(16, ge=1, le=32, description="B: outputs per input in each stage")
    groups: int = param(4, ge=1, le=32, description="G: diverse beam search groups (B a multiple of G)")
    diversity: float = param(0.5, ge=0, le=100, description="lambda (Hamming)")
    mode: Literal["augmented", "diverse"] = param("augmented", description="Granstedt 2017's two filters")
    top: int = param(3, ge=1, le=16, description="paraphrases per question at most")
    candidates: bool = param(False, description="also return every candidate with its score components")
    min_wellformed: Optional[float] = param(None, ge=0, le=1, description="drop paraphrases whose "
                                            "well-formedness probability is below this")
    min_similarity: Optional[float] = param(None, ge=-1, le=1, description="meaning filter inside the selection: "
                                            "a candidate whose cosine with its question (dup-minilm-wstb) is "
                                            "below this is never chosen")


@dataclass(kw_only=True)
class Paraphrases:
    question: str
    paraphrases: List[str]
    reason: Optional[str] = param(None, description="why there is none (e.g. no candidate scored above 0)")
    counts: Dict[str, int]
    candidates: Optional[List[Dict[str, Any]]] = None
    wellformed: Optional[List[float]] = param(None, description="the kept paraphrases' probabilities "
                                              "(with min_wellformed)")
    dropped: int = param(0, description="paraphrases under min_wellformed")
    similarity: Optional[List[float]] = param(None, description="the paraphrases' cosines with the question "
                                              "(with min_similarity)")


@dataclass(kw_only=True)
class ParaphraseResponse:
    model: str
    results: List[Paraphrases]


class ParaphraseAdapter(Adapter):
    name, route = "paraphrase", "/v1/paraphrase"
    summary = "paraphrases by pivoting through two models with diverse beam search (Granstedt 2017)"
    request, response, errors = ParaphraseRequest, ParaphraseResponse, (404, 422, 503)
    default_model = DEFAULT_PIVOT

    def load(self, spec, *, device="cpu", threads=0) -> Loaded:
        from pysynth import models
        from pysynth.paraphrase.pipeline import ParaphraseConfig, Paraphraser

        spec = spec or DEFAULT_PIVOT
        if spec == "keywords":
            raise ValueError("--model paraphrase=keywords: the keyword pivot samples from collection statistics "
                             "of a whole input file; use `pysynth paraphrase --pivot keywords`")
        cfg = ParaphraseConfig(pivot=spec, threads=threads)
        stages = []
        for m in cfg.models:
            if models.task_of(m)[1] == "hf":
                raise ValueError(f"--model {self.name}: {m} is a Hugging Face directory; the server runs "
                                 "pysynth models with an ONNX export (pysynth export onnx)")
            stages.append(models.load(m, task="text2text", backend="onnx", device=device, threads=threads))
        p = Paraphraser(cfg, forward=stages[0], backward=stages[1])
        return Loaded(p, spec, stages[0].providers)

    def call(self, model, key: Hashable, inputs: List[Any]) -> List[Any]:
        return model.run(inputs, config=model.cfg.replace(**dict(key)))  # type: ignore[arg-type]

    def warmup(self, model) -> None:
        model.run(["what is a warm-up?"], config=model.cfg.replace(beams=4, groups=2))

    async def handle(self, req: ParaphraseRequest, ctx: Context):
        g = ctx.model(self.name)
        qs = ctx.texts(req.questions, "questions")
        if req.decode == "dbs" and req.beams % req.groups:
            raise RequestError(422, f"beams: {req.beams} must be a multiple of groups={req.groups}")
        for i, t in enumerate(qs):  # per request, before batching: one bad input never reaches a shared batch
            why = g.model.forward.valid(t)
            if why:
                raise RequestError(422, f"questions[{i}]: {why}")
        key = (("decode", req.decode), ("beams", req.beams), ("groups", req.groups if req.decode == "dbs" else 1),
               ("diversity", float(req.diversity)), ("mode", req.mode), ("top", req.top), *req.guards.items())
        if req.min_similarity is not None:
            key += (("min_similarity", float(req.min_similarity)),)
        if req.min_wellformed is not None:
            ctx.model("wellformed", "min_wellformed: ")
        outs = await ctx.submit(self.name, key, qs)
        results = [{"question": q, "paraphrases": o["paraphrases"], "reason": o["reason"], "counts": o["counts"],
                    "dropped": 0, **({"candidates": o["candidates"]} if req.candidates else {}),
                    **({"similarity": o["similarity"]} if "similarity" in o else {})}
                   for q, o in zip(qs, outs)]
        if req.min_wellformed is not None:
            from pysynth.quality import filter_rows

            flat = [p for r in results for p in r["paraphrases"]]
            probs = await ctx.submit("wellformed", None, flat) if flat else []
            filter_rows(results, "paraphrases", req.min_wellformed, probs=probs,
                        parallel=("similarity",) if req.min_similarity is not None else ())
        return {"model": g.name, "results": results}


ADAPTER = ParaphraseAdapter()
