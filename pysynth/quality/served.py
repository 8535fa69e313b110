"""``POST /v1/wellformed`` of ``pysynth serve``: the probability that each text is a well-formed
question (Faruqui & Das 2018), :class:`pysynth.quality.WellformednessModel` on onnxruntime. The
other endpoints' ``min_wellformed`` (and the rewrite rerank) use the model loaded here."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable, List, Union

from pysynth.pipelines.served import Adapter, Context, Loaded, param
from pysynth.quality import DEFAULT_MODEL, WellformednessModel

__all__ = ["WellformedAdapter"]


@dataclass(kw_only=True)
class WellformedRequest:
    texts: Union[str, List[str]] = param(examples=[["what is the capital of france?", "capital france"]])


@dataclass(kw_only=True)
class WellformedResponse:
    model: str
    scores: List[float] = param(description="probability that each text is a well-formed question "
                                            "(Faruqui & Das 2018: mean rating >= 0.8)")


class WellformedAdapter(Adapter):
    name, route = "wellformed", "/v1/wellformed"
    summary = "probability that each text is a well-formed question (Faruqui & Das 2018)"
    request, response, errors = WellformedRequest, WellformedResponse, (404, 422, 503)
    default_model = DEFAULT_MODEL
    batch_scale = 4  # one onnxruntime call: 4x the generators' inputs cost about as much

    def load(self, spec, *, device="cpu", threads=0) -> Loaded:
        m = WellformednessModel(spec, threads=threads, device=device)
        return Loaded(m, m.name, list(m.providers))

    def call(self, model: WellformednessModel, key: Hashable, inputs: List[Any]) -> List[Any]:
        return model(inputs, batch_size=max(1, len(inputs))).tolist()

    def warmup(self, model: WellformednessModel) -> None:
        model(["what is a warm-up?"])

    async def handle(self, req: WellformedRequest, ctx: Context):
        wf = ctx.model(self.name)
        texts = ctx.texts(req.texts, "texts")
        probs = await ctx.submit(self.name, None, texts)
        return {"model": wf.name, "scores": [round(p, 4) for p in probs]}


ADAPTER = WellformedAdapter()
