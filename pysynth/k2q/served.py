"""``POST /v1/k2q`` of ``pysynth serve``: questions for keyword queries (Ding & Balog 2018) from a
pysynth seq2seq model's ONNX export (:class:`pysynth.models.generate.Generator` on onnxruntime),
greedy, beam or diverse beam search; ``min_wellformed`` scores them with the served classifier."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Hashable, List, Optional, Union

from pysynth.pipelines.served import Adapter, Context, Guards, Loaded, RequestError, param

__all__ = ["K2QAdapter"]

DEFAULT_MODEL = "k2q-copynet-small"


@dataclass(kw_only=True)
class K2QRequest(Guards):
    keywords: Union[str, List[str]] = param(description="one keyword query or a list of them",
                                            examples=["honda crf 230 top speed"])
    n: int = param(1, ge=1, le=10, description="questions per keyword query")
    diverse: bool = param(False, description="diverse beam search (Vijayakumar et al. 2016): n groups of beam/n")
    beam: Optional[int] = param(None, ge=1, le=32, description="beam size (default: 1 when n = 1 and not diverse, "
                                "i.e. greedy; n for beam search; 2n for diverse)")
    diversity: float = param(0.5, ge=0, le=100, description="Hamming diversity strength lambda (diverse only)")
    max_len: Optional[int] = param(None, ge=1, le=128, description="most output tokens (default: the model's)")
    min_wellformed: Optional[float] = param(None, ge=0, le=1, description="drop questions whose well-formedness "
                                            "probability is below this (each question then carries its "
                                            "'wellformed' score)")


@dataclass(kw_only=True)
class Question:
    text: str
    score: float = param(description="log-probability of the question under the model")
    wellformed: Optional[float] = param(None, description="well-formedness probability (with min_wellformed)")


@dataclass(kw_only=True)
class K2QResult:
    keywords: str
    questions: List[Question]
    truncated: bool = param(description="the input was cut to the model's max_src_len tokens")
    dropped: int = param(0, description="questions under min_wellformed")


@dataclass(kw_only=True)
class K2QResponse:
    model: str
    method: str
    results: List[K2QResult]


class K2QAdapter(Adapter):
    name, route = "k2q", "/v1/k2q"
    summary = "questions for keyword queries (Ding & Balog 2018)"
    request, response, errors = K2QRequest, K2QResponse, (422, 503, 504)
    default_model = DEFAULT_MODEL

    def load(self, spec, *, device="cpu", threads=0) -> Loaded:
        """The model's :class:`~pysynth.models.generate.Generator` on onnxruntime (:func:`pysynth.models.load`)."""
        from pysynth import models

        spec = spec or DEFAULT_MODEL
        if models.task_of(spec)[1] == "hf":
            raise ValueError(f"--model {self.name}: {spec} is a Hugging Face directory; the server runs pysynth "
                             "models with an ONNX export (pysynth export onnx)")
        t2t = models.load(spec, task="text2text", backend="onnx", device=device, threads=threads)
        return Loaded(t2t.gen, t2t.name, t2t.providers)

    def call(self, model, key: Hashable, inputs: List[Any]) -> List[Any]:
        """``key``: the requests' :class:`~pysynth.decoding.SearchConfig` (one search per batch)."""
        return model.generate(inputs, search=key, batch_size=max(1, len(inputs)))

    def warmup(self, model) -> None:
        word = next(w for w in model.vocab.itos if w.isalpha())
        model.generate([word], method="greedy", beam=1, n=1)
        model.generate([word], method="diverse", beam=4, groups=4, n=4)

    async def handle(self, req: K2QRequest, ctx: Context):
        from pysynth.decoding import SearchConfig
        from pysynth.models.generate import prepare_sources

        g = ctx.model(self.name)
        kws = ctx.texts(req.keywords, "keywords")
        if req.diverse:
            beam = req.beam or 2 * req.n  # two beams per group: n distinct questions survive de-duplication
            if beam % req.n:
                raise RequestError(422, f"beam: with diverse, beam={beam} must be a multiple of n={req.n} (n groups)")
            key = SearchConfig("dbs", beam, req.n, float(req.diversity), req.n, max_len=req.max_len, **req.guards)
        else:
            beam = req.beam or req.n
            if beam < req.n:
                raise RequestError(422, f"beam: {beam} is smaller than n={req.n}")
            key = SearchConfig("greedy" if beam == 1 else "beam", beam, 1, 0.0, req.n, max_len=req.max_len,
                               **req.guards)
        try:  # per request, before batching: one bad input never reaches a shared batch
            prepare_sources(kws, g.model.vocab, g.model.max_src_len, "keywords")
        except (ValueError, TypeError) as exc:
            raise RequestError(422, str(exc)) from None
        if req.min_wellformed is not None:
            ctx.model("wellformed", "min_wellformed: ")
        outs = await ctx.submit(self.name, key, kws)
        results = [{"keywords": kw, "truncated": bool(o.truncated), "dropped": 0,
                    "questions": [{"text": t, "score": round(s, 4)} for t, s in zip(o.texts, o.scores)]}
                   for kw, o in zip(kws, outs)]
        if req.min_wellformed is not None:
            flat = [q for r in results for q in r["questions"]]
            probs = await ctx.submit("wellformed", None, [q["text"] for q in flat]) if flat else []
            for q, p in zip(flat, probs):
                q["wellformed"] = round(p, 4)
            for r in results:
                keep = [q for q in r["questions"] if q["wellformed"] >= req.min_wellformed]
                r["dropped"] = len(r["questions"]) - len(keep)
                r["questions"] = keep
        return {"model": g.name, "method": key.method, "results": results}


ADAPTER = K2QAdapter()
