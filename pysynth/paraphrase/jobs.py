"""``pysynth paraphrase`` as a pipeline stage: resumable, signed, local or Ray, every row accounted for."""
from __future__ import annotations

import time
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from pysynth import io, pipelines, store
from pysynth import signature as _signature
from pysynth.paraphrase.pipeline import ParaphraseConfig, Paraphraser, _keyword_generator, _out_row, _questions
from pysynth.pipelines.rows import check_rows, iter_rows, pack_rows

__all__ = ["run"]

FORMAT = "pysynth.paraphrase"
FORMAT_VERSION = 1
_CONTEXT = "pysynth.paraphrase.Context"


def _slice(arrays, start: int, stop: int) -> List[dict]:
    off = arrays["rows_off"]
    a, b = int(off[start]), int(off[stop])
    sub = {"rows": arrays["rows"][a:b], "rows_off": np.asarray(off[start : stop + 1]) - a}
    return list(iter_rows(sub))


class _Kernel(pipelines.Kernel):
    """Paraphrase rows ``[start, stop)`` (picklable: the configuration only)."""

    def __init__(self, cfg: ParaphraseConfig, candidates: bool, min_wellformed: Optional[float] = None):
        self.cfg, self.candidates, self.min_wellformed = cfg, candidates, min_wellformed

    def open(self, context: Path):
        st = store.load(context / "rows", _CONTEXT, (1,), mmap=True)
        kw = None
        if self.cfg.pivot == "keywords":
            from pysynth.sampling.keywords import KeywordGenerator

            kw = KeywordGenerator.load(context / "keywords", mmap=True)
        return {"rows": st.arrays, "p": Paraphraser(self.cfg, keywords=kw)}

    def run_chunk(self, ctx, start: int, stop: int, workers: int = 1) -> Dict[str, np.ndarray]:
        rows = _slice(ctx["rows"], start, stop)
        res = ctx["p"].run(_questions(rows), first_index=start)
        out = [_out_row(r, start + j, x) for j, (r, x) in enumerate(zip(rows, res))]
        if self.min_wellformed is not None:  # --min-wellformed: the chosen paraphrases' quality filter
            from pysynth.quality import filter_rows

            filter_rows(out, "paraphrases", self.min_wellformed)
            for o, x in zip(out, res):
                x["counts"]["dropped_wellformed"] = o["dropped"]
                x["counts"]["chosen"] -= o["dropped"]
                if x["counts"]["chosen"] == 0 and not x["reason"] and o["dropped"]:
                    x["reason"] = o["reason"] = "every paraphrase under --min-wellformed"
        stats = [{"counts": x["counts"], "reason": x["reason"]} for x in res]
        d = {**pack_rows(out), **pack_rows(stats, "stats")}
        if self.candidates:
            cands = []
            for o, x in zip(out, res):
                cands.extend({"id": o["id"], "pivot": p["pivot"], "pivot_rank": p["rank"], "pivot_group": p["group"],
                              "pivot_logprob": p["logprob"], "rejected": p["rejected"]}
                             for p in x["pivots"] if p["rejected"])
                cands.extend({"id": o["id"], **c} for c in x["candidates"])
            d.update(pack_rows(cands, "cands"))
        return d

    def check(self, d, n: int) -> bool:
        return check_rows(d, n) and check_rows(d, n, "stats") and (not self.candidates or "cands" in d)


class _Stage(pipelines.Stage):
    name = "paraphrase"
    unit = "questions"

    def __init__(self, cfg: ParaphraseConfig, rows: List[dict], out: Path, candidates_out: Optional[Path],
                 flat: bool, min_wellformed: Optional[float] = None):
        self.cfg, self.rows, self.out, self.cands_out, self.flat = cfg, rows, out, candidates_out, flat
        self.min_wellformed = min_wellformed
        self.kernel = _Kernel(cfg, candidates_out is not None, min_wellformed)

    def signature(self) -> Dict[str, Any]:
        return _signature.signature(FORMAT, FORMAT_VERSION, {**{k: v for k, v in self.cfg.as_dict().items() if k != "threads"}, "flat": self.flat,
                                                             "candidates": self.cands_out is not None,
                                                             "min_wellformed": self.min_wellformed},
                                    {"rows": len(self.rows), "sha256": _signature.fingerprint(self.rows)},
                                    extra_versions=("onnxruntime",))

    def prepare(self, context: Path, workers: int, log) -> int:
        store.save(context / "rows", _CONTEXT, 1, arrays=pack_rows(self.rows))
        if self.cfg.pivot == "keywords":
            t = time.perf_counter()
            _keyword_generator(_questions(self.rows), workers=workers).save(context / "keywords")
            log(f"[1/2] keyword statistics over {len(self.rows):,} questions, {time.perf_counter() - t:.1f} s")
        return len(self.rows)

    def describe_chunks(self, n_items: int, n_chunks: int, chunk_size: int) -> str:
        c = self.cfg
        how = {"dbs": f"diverse beam search B={c.beams} G={c.groups} lambda={c.diversity}",
               "beam": f"beam search B={c.beams}", "sample": f"sampling {c.beams}"}[c.decode]
        return (f"[2/2] {n_items:,} questions through pivot {c.pivot!r}, {how}, mode {c.mode}, top {c.top}; "
                f"{n_chunks} chunk{'s' if n_chunks > 1 else ''} of {chunk_size:,}")

    def finish(self, context: Path, parts: List[Dict[str, np.ndarray]], info) -> Dict[str, Any]:
        counts: Counter = Counter()
        reasons: Counter = Counter()
        n_with = 0
        for p in parts:
            for s in iter_rows(p, "stats"):
                counts.update(s["counts"])
                if s["reason"]:
                    reasons[s["reason"].split(":")[0]] += 1
                n_with += bool(s["counts"].get("chosen"))

        def rows():
            for p in parts:
                for r in iter_rows(p):
                    if not self.flat:
                        yield r
                        continue
                    base = {k: v for k, v in r.items() if k not in ("paraphrases", "reason", "wellformed", "dropped")}
                    yield {**base, "paraphrase_of": None}
                    for k, q in enumerate(r["paraphrases"]):
                        wf = {"wellformed": r["wellformed"][k]} if "wellformed" in r else {}
                        yield {**base, "id": f"{r['id']}#p{k + 1}", "question": q, "paraphrase_of": r["id"], **wf}

        n_out = io.write_rows(self.out, rows())
        if self.cands_out is not None:
            io.write_rows(self.cands_out, (c for p in parts for c in iter_rows(p, "cands")))
        summary = {"questions": info.n_items, "with_paraphrases": n_with,
                   "without_paraphrases": info.n_items - n_with, "reasons": dict(sorted(reasons.items())),
                   "paraphrases": int(counts.get("chosen", 0)), "rows_written": n_out,
                   "dropped_wellformed": int(counts.get("dropped_wellformed", 0)),
                   "pivots": int(counts.get("pivots", 0)), "pivots_rejected": int(counts.get("pivots_rejected", 0)),
                   "pivot_rules": {k[5:]: int(v) for k, v in sorted(counts.items()) if k.startswith("rule_")},
                   "pivots_decoded": int(counts.get("pivots_decoded", 0)),
                   "candidates": int(counts.get("candidates", 0)),
                   "distinct_candidates": int(counts.get("distinct_candidates", 0)),
                   "chunks_resumed": info.chunks_resumed, "timings": {k: round(v, 3) for k, v in info.timings.items()}}
        info.log(f"      done: {n_with:,} of {info.n_items:,} questions got paraphrases "
                 f"({summary['paraphrases']:,} in all); {info.n_items - n_with:,} got none: {dict(reasons)}")
        return summary


def run(inp, out, config: Optional[ParaphraseConfig] = None, *, candidates_out=None, flat: bool = False,
        min_wellformed: Optional[float] = None, executor="local", workers: int = 1, ray_address: Optional[str] = None, chunk_size: int = 256,
        resume: bool = True, progress: bool = True, _stop_after_chunks: Optional[int] = None) -> Dict[str, Any]:
    """Paraphrase the rows of ``inp`` (``{"id"?, "question", ...}``, JSON Lines or Parquet) into ``out``.

    Resumable (``OUT.parts``), the same bytes for any executor, worker count or chunking.
    ``candidates_out``: every candidate (pivot, search scores, score components, chosen) and
    every rejected pivot with its rules. ``flat``: the augmented dataset, one row per original and
    per paraphrase (``paraphrase_of`` = the original's id). ``min_wellformed``: drop chosen
    paraphrases whose well-formedness (:mod:`pysynth.quality`) is below it; rows get
    ``wellformed`` and ``dropped``. Returns the summary (every question without paraphrases is
    counted with its reason).
    """
    cfg = config or ParaphraseConfig()
    rows = list(io.read_rows(inp, "in"))
    if not rows:
        raise ValueError("in: no rows; pass a JSON Lines or Parquet file of {\"question\": ...} rows")
    _questions(rows)
    if isinstance(executor, str):
        executor = pipelines.make_executor(executor, workers=workers, ray_address=ray_address)
    if min_wellformed is not None and not 0.0 <= float(min_wellformed) <= 1.0:
        raise ValueError(f"min_wellformed: must be a probability in [0, 1], got {min_wellformed!r}")
    stage = _Stage(cfg, rows, Path(out), Path(candidates_out) if candidates_out else None, flat, min_wellformed)
    t = time.perf_counter()
    summary = pipelines.run(stage, out, executor=executor, chunk_size=chunk_size, resume=resume, progress=progress,
                            _stop_after_chunks=_stop_after_chunks)
    summary["timings"]["total_s"] = round(time.perf_counter() - t, 3)
    return summary
