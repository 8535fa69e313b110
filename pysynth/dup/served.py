"""``POST /v1/duplicates`` of ``pysynth serve``: search the loaded ``--collection`` for duplicates of
each query: a :class:`pysynth.retrieval.collection.Collection` (``bm25``, ``sdm``) or a duplicate
index of ``pysynth dup index`` (:class:`pysynth.dup.search.DupIndex`: ``dense``, ``hybrid``, and
``bm25``/``sdm`` over its rows). The dense side runs only onnxruntime detectors (no torch)."""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Hashable, List, Union

from pysynth.pipelines.served import Adapter, Context, Loaded, RequestError, param

__all__ = ["DuplicatesAdapter", "Searchable"]


@dataclass(kw_only=True)
class DupRequest:
    queries: Union[str, List[str]]
    k: int = param(10, ge=1, le=1000)
    model: str = param("bm25", pattern="^(bm25|sdm|dense|hybrid)$")


@dataclass(kw_only=True)
class Hit:
    id: Union[str, int]
    score: float


@dataclass(kw_only=True)
class DupResponse:
    model: str
    results: List[List[Hit]]


class Searchable:
    """A search collection or a duplicate index, searched by :meth:`search`."""

    def __init__(self, path: Union[str, Path]):
        from pysynth import store
        from pysynth.dup import search as dup_search
        from pysynth.retrieval.collection import Collection

        self.path, self.collection, self.dup = str(path), None, None
        if store.format_of(Path(path) / "docs") == dup_search.FORMAT:
            self.dup = dup_search.DupIndex.load(path)
            if not dup_search.is_detector(self.dup.model):
                # the serving path never imports torch: only onnxruntime detectors encode here
                raise ValueError(f"collection: {path} was indexed with the encoder {self.dup.model!r}, which runs "
                                 f"on torch; rebuild it with `pysynth dup index --model "
                                 f"{dup_search.DEFAULT_DETECTOR}` (onnxruntime) to serve it")
        else:
            self.collection = Collection.load(path)

    @property
    def models(self) -> tuple:
        """The search models it serves."""
        return ("bm25", "sdm", "dense", "hybrid") if self.dup is not None else ("bm25", "sdm")

    def search(self, texts: List[str], model: str, k: int) -> List[tuple]:
        """``(ids, scores)`` of the top ``k`` documents of each query."""
        if self.dup is None:
            res = self.collection.search(texts, model=model, k=k)
            return list(zip(res.ids, res.scores))
        docs = self.dup.docs
        if model in ("dense", "hybrid"):
            ranked = self.dup.ranked(texts, k=k, hybrid=model == "hybrid")
        else:
            res = self.dup.sparse.search_docs(texts, model=model, k=min(k, len(docs)))
            ranked = [list(zip(res.docs[i, :int(res.counts[i])].tolist(), res.scores[i, :int(res.counts[i])].tolist()))
                      for i in range(len(texts))]
        return [([docs[j]["id"] for j, _ in r], [float(s) for _, s in r]) for r in ranked]


class DuplicatesAdapter(Adapter):
    name, route = "duplicates", "/v1/duplicates"
    summary = ("search the loaded collection (BM25 / SDM; dense / hybrid on a duplicate index) for duplicates of "
               "each query")
    request, response, errors = DupRequest, DupResponse, (404, 422, 503)
    missing = "no collection loaded (start the server with --collection DIR, built by `pysynth index build`)"

    def load(self, spec, *, device="cpu", threads=0) -> Loaded:
        """``spec``: the collection or duplicate-index directory."""
        return Loaded(Searchable(spec), str(spec))

    def call(self, model: Searchable, key: Hashable, inputs: List[Any]) -> List[Any]:
        search_model, k = key  # type: ignore[misc]
        return model.search(inputs, search_model, k)

    async def handle(self, req: DupRequest, ctx: Context):
        col = ctx.model(self.name).model
        if req.model not in col.models:
            raise RequestError(422, f"model: {req.model} needs a duplicate index (`pysynth dup index`); the loaded "
                                    f"collection serves {', '.join(col.models)}")
        qs = ctx.texts(req.queries, "queries")
        outs = await ctx.submit(self.name, (req.model, req.k), qs)
        return {"model": req.model, "results": [[{"id": i, "score": s} for i, s in zip(ids, scores)]
                                                for ids, scores in outs]}


ADAPTER = DuplicatesAdapter()
