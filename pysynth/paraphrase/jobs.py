"""``pysynth paraphrase`` as a pipeline stage: resumable, signed, local or Ray, every row accounted for."""
from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from pysynth import io, llm, pipelines
from pysynth import signature as _signature
from pysynth.paraphrase.pipeline import ParaphraseConfig, Paraphraser, _keyword_generator, _out_row, _questions
from pysynth.pipelines.rows import check_rows, iter_rows

__all__ = ["run"]

FORMAT = "pysynth.paraphrase"
FORMAT_VERSION = 1


class _Kernel(pipelines.RowKernel):
    """Paraphrase rows ``[start, stop)`` (picklable: the configuration only)."""

    filter_field = "paraphrases"  # --min-wellformed: the chosen paraphrases' quality filter

    def __init__(self, cfg: ParaphraseConfig, candidates: bool, filters: tuple = (), llm=None):
        self.cfg, self.candidates, self.filters, self.llm = cfg, candidates, filters, llm
        self.sides = ("stats", "cands") if candidates else ("stats",)
        # --min-similarity is applied inside the selection; its column follows the wellformed drops
        self.filter_parallel = ("similarity",) if cfg.min_similarity is not None else ()

    def load(self, context: Path, rows):
        kw = None
        if self.cfg.pivot == "keywords":
            from pysynth.sampling.keywords import KeywordGenerator

            kw = KeywordGenerator.load(context / "keywords", mmap=True)
        return Paraphraser(self.cfg, keywords=kw, llm=self.llm)

    def generate(self, p: Paraphraser, rows: List[dict], start: int, workers: int) -> pipelines.Chunk:
        res = p.run(_questions(rows), first_index=start)
        counts: Counter = Counter()
        for stage in {id(s): s for s in (p.forward, p.backward) if hasattr(s, "role")}.values():
            counts.update(llm.usage(stage))  # an LLM pivot's requests, tokens and drops
        return pipelines.Chunk([_out_row(r, start + j, x) for j, (r, x) in enumerate(zip(rows, res))],
                               counts=counts, scratch={"res": res})

    def after_filters(self, p, chunk: pipelines.Chunk, start: int) -> None:
        out, res = chunk.rows, chunk.scratch["res"]
        if self.filters:
            for o, x in zip(out, res):
                x["counts"]["dropped_wellformed"] = o["dropped"]
                x["counts"]["chosen"] -= o["dropped"]
                if x["counts"]["chosen"] == 0 and not x["reason"] and o["dropped"]:
                    x["reason"] = o["reason"] = "every paraphrase under --min-wellformed"
        chunk.sides["stats"] = [{"counts": x["counts"], "reason": x["reason"]} for x in res]
        if self.candidates:
            cands = []
            for o, x in zip(out, res):
                cands.extend({"id": o["id"], "pivot": p["pivot"], "pivot_rank": p["rank"], "pivot_group": p["group"],
                              "pivot_logprob": p["logprob"], "rejected": p["rejected"]}
                             for p in x["pivots"] if p["rejected"])
                cands.extend({"id": o["id"], **c} for c in x["candidates"])
            chunk.sides["cands"] = cands

    def check(self, d, n: int) -> bool:
        return super().check(d, n) and check_rows(d, n, "stats")


class _Stage(pipelines.RowStage):
    name = "paraphrase"
    unit = "questions"

    def __init__(self, cfg: ParaphraseConfig, rows: List[dict], out: Path, candidates_out: Optional[Path],
                 flat: bool, min_wellformed: Optional[float] = None, llm_options=None):
        super().__init__(rows, out)
        self.llm = llm_options
        self.cfg, self.cands_out, self.flat = cfg, candidates_out, flat
        self.min_wellformed = min_wellformed
        filters = ()
        if min_wellformed is not None:
            from pysynth.quality import wellformedness

            filters = (pipelines.ScoreFilter("wellformed", min_wellformed, wellformedness),)
        self.kernel = _Kernel(cfg, candidates_out is not None, filters, llm_options)

    def signature(self) -> Dict[str, Any]:
        cfg = {k: v for k, v in self.cfg.as_dict().items() if k != "threads"}
        return _signature.signature(FORMAT, FORMAT_VERSION, {**cfg, "flat": self.flat,
                                                             "candidates": self.cands_out is not None,
                                                             "min_wellformed": self.min_wellformed},
                                    self.input_fingerprint(), extra_versions=("onnxruntime",), **self._llm_models())

    def _llm_models(self) -> Dict[str, Any]:
        """The signature's ``models`` entry of LLM pivots (none for pysynth models, as before)."""
        fwd, bwd = self.cfg.models
        if self.cfg.direct:
            return {"models": {"paraphraser": llm.fingerprint(bwd, "paraphrase", self.llm)}}
        if fwd is not None and llm.is_llm_spec(fwd) or llm.is_llm_spec(bwd):
            return {"models": {k: llm.fingerprint(m, "translate", self.llm) if llm.is_llm_spec(m) else m
                               for k, m in (("forward", fwd), ("backward", bwd))}}
        return {}

    def prepare_more(self, context: Path, rows: List[dict], workers: int, log) -> None:
        if self.cfg.pivot == "keywords":
            t = time.perf_counter()
            _keyword_generator(_questions(rows), workers=workers).save(context / "keywords")
            log(f"[1/2] keyword statistics over {len(rows):,} questions, {time.perf_counter() - t:.1f} s")

    def describe_chunks(self, n_items: int, n_chunks: int, chunk_size: int) -> str:
        c = self.cfg
        how = {"dbs": f"diverse beam search B={c.beams} G={c.groups} lambda={c.diversity}",
               "beam": f"beam search B={c.beams}", "sample": f"sampling {c.beams}"}[c.decode]
        return (f"[2/2] {n_items:,} questions through pivot {c.pivot!r}, {how}, mode {c.mode}, top {c.top}; "
                f"{n_chunks} chunk{'s' if n_chunks > 1 else ''} of {chunk_size:,}")

    def write(self, parts: List[Dict[str, np.ndarray]], info) -> Dict[str, Any]:
        counts: Counter = Counter()
        reasons: Counter = Counter()
        n_with = 0
        for p in parts:
            for s in iter_rows(p, "stats"):
                counts.update(s["counts"])
                if s["reason"]:
                    reasons[s["reason"].split(":")[0]] += 1
                n_with += bool(s["counts"].get("chosen"))

        per = ("similarity", "wellformed") if self.cfg.min_similarity is not None else ("wellformed",)

        def rows():
            for r in self.iter_rows(parts):
                if not self.flat:
                    yield r
                    continue
                base = {k: v for k, v in r.items() if k not in ("paraphrases", "reason", "dropped", *per)}
                yield {**base, "paraphrase_of": None}
                for k, q in enumerate(r["paraphrases"]):
                    wf = {f: r[f][k] for f in per if f in r}
                    yield {**base, "id": f"{r['id']}#p{k + 1}", "question": q, "paraphrase_of": r["id"], **wf}

        n_out = io.write_rows(self.out, rows())
        if self.cands_out is not None:
            io.write_rows(self.cands_out, self.iter_rows(parts, "cands"))
        summary = {"questions": info.n_items, "with_paraphrases": n_with,
                   "without_paraphrases": info.n_items - n_with, "reasons": dict(sorted(reasons.items())),
                   "paraphrases": int(counts.get("chosen", 0)), "rows_written": n_out,
                   "dropped_wellformed": int(counts.get("dropped_wellformed", 0)),
                   **({"below_similarity": int(counts.get("below_similarity", 0))}
                      if self.cfg.min_similarity is not None else {}),
                   "pivots": int(counts.get("pivots", 0)), "pivots_rejected": int(counts.get("pivots_rejected", 0)),
                   "pivot_rules": {k[5:]: int(v) for k, v in sorted(counts.items()) if k.startswith("rule_")},
                   "pivots_decoded": int(counts.get("pivots_decoded", 0)),
                   "candidates": int(counts.get("candidates", 0)),
                   "distinct_candidates": int(counts.get("distinct_candidates", 0)),
                   **llm.summary(self.counts(parts), bool(self._llm_models())),
                   "chunks_resumed": info.chunks_resumed, "timings": {k: round(v, 3) for k, v in info.timings.items()}}
        info.log(f"      done: {n_with:,} of {info.n_items:,} questions got paraphrases "
                 f"({summary['paraphrases']:,} in all); {info.n_items - n_with:,} got none: {dict(reasons)}")
        return summary


def run(inp, out, config: Optional[ParaphraseConfig] = None, *, candidates_out=None, flat: bool = False,
        min_wellformed: Optional[float] = None, llm_options=None, executor="local", workers: int = 1, ray_address: Optional[str] = None, chunk_size: int = 256,
        resume: bool = True, progress: bool = True, _stop_after_chunks: Optional[int] = None) -> Dict[str, Any]:
    """Paraphrase the rows of ``inp`` (``{"id"?, "question", ...}``, JSON Lines or Parquet) into ``out``.

    Resumable (``OUT.parts``), the same bytes for any executor, worker count or chunking.
    ``candidates_out``: every candidate (pivot, search scores, score components, chosen) and
    every rejected pivot with its rules. ``flat``: the augmented dataset, one row per original and
    per paraphrase (``paraphrase_of`` = the original's id). ``min_wellformed``: drop chosen
    paraphrases whose well-formedness (:mod:`pysynth.quality`) is below it; rows get
    ``wellformed`` and ``dropped``. ``config.min_similarity``: the meaning filter, inside the
    selection (a candidate under it is never chosen); rows get ``similarity`` (the chosen
    paraphrases' cosines), candidates a ``similarity`` column, the summary ``below_similarity``. Returns the summary (every question without paraphrases is
    counted with its reason). ``config.pivot`` may be an LLM spec (direct paraphrasing) or two
    (translation there and back); ``llm_options`` (:class:`pysynth.llm.LLMOptions`) configures them.
    """
    cfg = config or ParaphraseConfig()
    rows = list(io.read_rows(inp, "in"))
    if not rows:
        raise ValueError("in: no rows; pass a JSON Lines or Parquet file of {\"question\": ...} rows")
    _questions(rows)
    stage = _Stage(cfg, rows, Path(out), Path(candidates_out) if candidates_out else None, flat, min_wellformed,
                   llm_options)
    return stage.run(executor=executor, workers=workers, ray_address=ray_address, chunk_size=chunk_size,
                     resume=resume, progress=progress, _stop_after_chunks=_stop_after_chunks)
