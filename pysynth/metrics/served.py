"""``POST /v1/score`` of ``pysynth serve``: corpus BLEU / ROUGE (and METEOR with ``--meteor``) by
:func:`pysynth.metrics.score_corpus`, on a worker thread (no batching: one request, one call)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Union

from pysynth.pipelines.served import Adapter, Context, Loaded, RequestError, check_unicode, param

__all__ = ["ScoreAdapter"]


@dataclass(kw_only=True)
class ScoreRequest:
    hyps: List[str] = param(description="hypotheses, one per segment")
    refs: Union[List[str], List[List[str]]] = param(description="one reference per segment, or a list of "
                                                                "reference streams aligned with hyps")
    metrics: List[str] = param(["bleu", "rouge1", "rouge2", "rougeL"])
    bleu_flavor: str = param("sacrebleu", pattern="^(sacrebleu|nltk|coco)$")
    rouge_flavor: str = param("rouge-score", pattern="^(rouge-score|pltrdy)$")
    stem: bool = False
    tokenize: Optional[str] = param(None, pattern="^(13a|intl|none)$")
    lowercase: bool = False


class ScoreAdapter(Adapter):
    name, route = "score", "/v1/score"
    summary = "corpus BLEU / ROUGE (pysynth.metrics.score_corpus)"
    request, errors = ScoreRequest, (422,)
    batched = False

    def load(self, spec, *, device="cpu", threads=0) -> Loaded:
        """``spec``: serve METEOR (its resources are found here, parsed by :meth:`warmup`)."""
        if spec:
            from pysynth.metrics.meteor import find_files

            find_files()  # ImportError naming the fix when pycocoevalcap's resources are missing
        return Loaded(bool(spec), self.name)

    def warmup(self, model: bool) -> None:
        if model:  # parse the resources (and build the paraphrase cache on a first run) before ready
            from pysynth.metrics.meteor import meteor

            meteor(["a b"], ["a b"])

    async def handle(self, req: ScoreRequest, ctx: Context):
        from pysynth.metrics import score_corpus

        if not req.hyps:
            raise RequestError(422, "hyps: empty list; give at least one segment")
        if len(req.hyps) > ctx.max_segments:
            raise RequestError(413, f"hyps: {len(req.hyps)} segments, over the limit of {ctx.max_segments}")
        refs = [req.refs] if req.refs and isinstance(req.refs[0], str) else req.refs
        for i, r in enumerate(refs):
            if len(r) != len(req.hyps):
                raise RequestError(422, f"refs[{i}]: {len(r)} segments but hyps has {len(req.hyps)}; they must align")
        if not refs:
            raise RequestError(422, "refs: empty list; give one reference per hypothesis")
        if "meteor" in req.metrics and not ctx.model(self.name).model:
            raise RequestError(422, "metrics: meteor is not served by this server; start it with --meteor (loads "
                                    "Meteor 1.5's resources once) or use `pysynth score --metrics meteor`")
        check_unicode(req.hyps, "hyps")
        for i, r in enumerate(refs):
            check_unicode(r, f"refs[{i}]")
        try:
            return await ctx.run(lambda: score_corpus(req.hyps, refs, req.metrics, req.bleu_flavor, req.rouge_flavor,
                                                      req.stem, req.tokenize, req.lowercase))
        except (ValueError, TypeError) as exc:
            raise RequestError(422, str(exc)) from None


ADAPTER = ScoreAdapter()
