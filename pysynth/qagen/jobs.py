"""``pysynth qagen generate`` as a pipeline stage: resumable, signed, local or Ray, every context accounted for."""
from __future__ import annotations

import json
import time
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from pysynth import io, pipelines, store
from pysynth import signature as _signature
from pysynth.models.registry import model_fingerprint
from pysynth.pipelines.rows import check_rows, iter_rows, pack_rows
from pysynth.qagen.data import Context, read_contexts
from pysynth.qagen.pipeline import QAGenConfig, QAGenerator, add_unanswerables

__all__ = ["run", "to_squad"]

FORMAT = "pysynth.qagen"
FORMAT_VERSION = 1
_CONTEXT = "pysynth.qagen.Context"


class _Kernel(pipelines.Kernel):
    """Roundtrip generation for contexts ``[start, stop)`` (picklable: the configuration only)."""

    def __init__(self, cfg: QAGenConfig, models: Dict[str, Optional[str]], threads: int, batch_size: int):
        self.cfg, self.models, self.threads, self.batch_size = cfg, models, threads, batch_size

    def open(self, context: Path):
        from pysynth.qagen.models import QuestionGenerator, SpanModel

        st = store.load(context / "contexts", _CONTEXT, (1,), mmap=False)
        pool = [Context(r["id"], r["title"], r["text"]) for r in iter_rows(st.arrays, "ctx")]
        span = SpanModel(self.models["answer"], threads=self.threads, batch_size=self.batch_size)
        qa = span if self.models["qa"] == self.models["answer"] else SpanModel(
            self.models["qa"], threads=self.threads, batch_size=self.batch_size)
        qg = QuestionGenerator(self.models["question"], threads=self.threads)
        return {"pool": pool, "index": {c.id: i for i, c in enumerate(pool)},
                "gen": QAGenerator(self.cfg, span, qg, qa)}

    def run_chunk(self, ctx, start: int, stop: int, workers: int = 1) -> Dict[str, np.ndarray]:
        rows = ctx["gen"].run(ctx["pool"][start:stop], first_index=start)
        negs, skipped = add_unanswerables(rows, ctx["pool"], ctx["index"], self.cfg.neg_fraction, self.cfg.seed)
        return {**pack_rows(rows), **pack_rows(negs, "negs"),
                "skipped_negatives": np.asarray([skipped], dtype=np.int64)}

    def check(self, d, n: int) -> bool:
        return check_rows(d, n) and "negs" in d and "skipped_negatives" in d


class _Stage(pipelines.Stage):
    name = "qagen"
    unit = "contexts"

    def __init__(self, cfg: QAGenConfig, contexts: List[Context], out: Path, models: Dict[str, Optional[str]],
                 keep_discarded: bool, squad_out: Optional[Path], threads: int, batch_size: int, input_sha: str):
        self.cfg, self.contexts, self.out, self.models = cfg, contexts, out, models
        self.keep_discarded, self.squad_out, self.input_sha = keep_discarded, squad_out, input_sha
        self.kernel = _Kernel(cfg, models, threads, batch_size)

    def signature(self) -> Dict[str, Any]:
        from pysynth.qagen.models import DEFAULT_QG_MODEL, DEFAULT_SPAN_MODEL

        defaults = {"answer": DEFAULT_SPAN_MODEL, "question": DEFAULT_QG_MODEL, "qa": DEFAULT_SPAN_MODEL}
        return _signature.signature(
            FORMAT, FORMAT_VERSION, {**self.cfg.as_dict(), "keep_discarded": self.keep_discarded},
            {"contexts": len(self.contexts), "sha256": self.input_sha},
            extra_versions=("onnxruntime",),
            models={k: model_fingerprint(v, defaults[k]) for k, v in self.models.items()})

    def prepare(self, context: Path, workers: int, log) -> int:
        store.save(context / "contexts", _CONTEXT, 1,
                   arrays=pack_rows([{"id": c.id, "title": c.title, "text": c.text} for c in self.contexts], "ctx"))
        return len(self.contexts)

    def describe_chunks(self, n_items: int, n_chunks: int, chunk_size: int) -> str:
        c = self.cfg
        return (f"{n_items:,} contexts: answer from the top {c.top_k} {'joint' if c.joint else 'independent'} spans, "
                f"question by {c.decode}, roundtrip match {c.match}; {n_chunks} chunk{'s' if n_chunks > 1 else ''} "
                f"of {chunk_size:,}")

    def finish(self, context: Path, parts: List[Dict[str, np.ndarray]], info) -> Dict[str, Any]:
        reasons: Counter = Counter()
        kept = negs = skipped = 0
        for p in parts:
            for r in iter_rows(p):
                kept += bool(r["consistent"])
                if r["reason"]:
                    reasons[r["reason"]] += 1
            negs += int(np.asarray(p["negs_off"]).shape[0] - 1)
            skipped += int(np.asarray(p["skipped_negatives"])[0])

        def rows():  # each context's row, then its unanswerable: the order does not depend on chunking
            for p in parts:
                negs = {r["source_context_id"]: r for r in iter_rows(p, "negs")}
                for r in iter_rows(p):
                    if r["consistent"] or self.keep_discarded:
                        yield r
                    if r["context_id"] in negs:
                        yield negs[r["context_id"]]

        n_out = io.write_rows(self.out, rows())
        if self.squad_out is not None:
            doc = to_squad(r for r in rows() if r["consistent"])
            io.atomic_write_text(self.squad_out, json.dumps(doc, ensure_ascii=False) + "\n")
        n = info.n_items
        summary = {"contexts": n, "kept": kept, "discarded": n - kept, "keep_rate": round(kept / n, 4) if n else 0.0,
                   "discarded_by_reason": dict(sorted(reasons.items())), "unanswerable": negs,
                   "unanswerable_skipped_single_paragraph": skipped, "rows_written": n_out,
                   "chunks_resumed": info.chunks_resumed,
                   "timings": {k: round(v, 3) for k, v in info.timings.items()}}
        info.log(f"      done: {kept:,} of {n:,} contexts kept ({summary['keep_rate']:.1%}), {negs:,} unanswerable "
                 f"added; discarded: {dict(reasons)}")
        return summary


def to_squad(rows, version: str = "v2.0") -> Dict[str, Any]:
    """SQuAD 2.0 JSON of generated rows (kept triples and unanswerables), grouped by article
    and context, for QA training (ids are the rows' ids)."""
    arts: Dict[str, Dict[str, Any]] = {}
    for r in rows:
        a = arts.setdefault(r["title"], {"title": r["title"], "paragraphs": [], "_by": {}})
        par = a["_by"].get(r["context_id"])
        if par is None:
            par = a["_by"][r["context_id"]] = {"context": r["context"], "qas": []}
            a["paragraphs"].append(par)
        qa = {"id": r["id"], "question": r["question"], "is_impossible": bool(r["is_impossible"]),
              "answers": [] if r["is_impossible"] else [{"text": r["answer_text"], "answer_start": r["answer_start"]}]}
        par["qas"].append(qa)
    for a in arts.values():
        a.pop("_by")
    return {"version": version, "data": list(arts.values())}


def run(inp, out, config: Optional[QAGenConfig] = None, *, answer_model: Optional[str] = None,
        question_model: Optional[str] = None, qa_model: Optional[str] = None, keep_discarded: bool = False,
        squad_out=None, executor="local", workers: int = 1, ray_address: Optional[str] = None,
        chunk_size: int = 64, threads: int = 0, batch_size: int = 16, resume: bool = True, progress: bool = True,
        _stop_after_chunks: Optional[int] = None) -> Dict[str, Any]:
    """Generate roundtrip-consistent (context, question, answer) triples from the contexts of
    ``inp`` (:func:`pysynth.qagen.data.read_contexts`: SQuAD JSON, JSONL or plain text) into
    ``out`` (JSONL or Parquet): kept triples and unanswerables, plus discarded triples with
    ``keep_discarded``; ``squad_out`` also writes the kept set as SQuAD 2.0 JSON.

    Resumable (``OUT.parts``), the same bytes for any executor, worker count or chunking; the
    run's signature holds the configuration, the models' fingerprints, the seed and the input
    hash. Returns the summary (every context is counted: kept, or discarded with its reason).
    """
    cfg = config or QAGenConfig()
    contexts = read_contexts(inp)
    ids = Counter(c.id for c in contexts)
    dup = [k for k, v in ids.items() if v > 1]
    if dup:
        raise ValueError(f"contexts: id {dup[0]!r} occurs {ids[dup[0]]} times; ids must be unique")
    if isinstance(executor, str):
        executor = pipelines.make_executor(executor, workers=workers, ray_address=ray_address)
    sha = _signature.fingerprint([[c.id, c.title, c.text] for c in contexts])
    models = {"answer": answer_model, "question": question_model, "qa": qa_model if qa_model else answer_model}
    stage = _Stage(cfg, contexts, Path(out), models, keep_discarded, Path(squad_out) if squad_out else None,
                   threads, batch_size, sha)
    t = time.perf_counter()
    summary = pipelines.run(stage, out, executor=executor, chunk_size=chunk_size, resume=resume, progress=progress,
                            _stop_after_chunks=_stop_after_chunks)
    summary["timings"]["total_s"] = round(time.perf_counter() - t, 3)
    return summary
