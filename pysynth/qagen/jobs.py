"""``pysynth qagen generate`` as a pipeline stage: resumable, signed, local or Ray, every context accounted for."""
from __future__ import annotations

import dataclasses
import json
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Optional

import numpy as np

from pysynth import io, pipelines
from pysynth import signature as _signature
from pysynth.llm import is_llm_spec
from pysynth.llm import summary as llm_summary
from pysynth.llm import usage as llm_usage
from pysynth.models.registry import generator_fingerprint
from pysynth.pipelines.rows import iter_rows
from pysynth.qagen.data import Context, read_contexts
from pysynth.qagen.pipeline import QAGenConfig, QAGenerator, add_unanswerables, judge_wellformed, resolve_match

__all__ = ["run", "to_squad"]

FORMAT = "pysynth.qagen"
FORMAT_VERSION = 2  # 2: questions cased as in their context (QuestionGenerator._cased)


class _Kernel(pipelines.RowKernel):
    """Roundtrip generation for contexts ``[start, stop)`` (picklable: the configuration only)."""

    sides = ("negs", "more")  # more: the 2nd..Kth answers of a context (--answers-per-context)
    filter_field = "question"  # --min-wellformed: a consistent triple's question

    def __init__(self, cfg: QAGenConfig, models: Dict[str, Optional[str]], threads: int, batch_size: int,
                 llm=None):
        self.cfg, self.models, self.threads, self.batch_size, self.llm = cfg, models, threads, batch_size, llm
        if cfg.min_wellformed is not None:
            from pysynth.quality import wellformedness

            self.filters = (pipelines.ScoreFilter("wellformed", cfg.min_wellformed, wellformedness),)

    def load(self, context: Path, rows):
        from pysynth.llm import is_llm_spec
        from pysynth.qagen.models import LLMAnswers, QuestionGenerator, SpanModel

        pool = [Context(r["id"], r["title"], r["text"]) for r in iter_rows(rows)]
        m = self.models
        span = LLMAnswers(m["answer"], self.llm) if is_llm_spec(m["answer"]) else \
            SpanModel(m["answer"], threads=self.threads, batch_size=self.batch_size)
        qa = span if m["qa"] == m["answer"] else SpanModel(m["qa"], threads=self.threads, batch_size=self.batch_size)
        qg = QuestionGenerator(m["question"], threads=self.threads, llm=self.llm)
        # the filter runs in the row stage (RowKernel.run_chunk), not inside the generator
        gen = QAGenerator(dataclasses.replace(self.cfg, min_wellformed=None), span, qg, qa, threads=self.threads)
        return {"pool": pool, "index": {c.id: i for i, c in enumerate(pool)}, "gen": gen}

    def generate(self, ctx, rows: List[dict], start: int, workers: int) -> pipelines.Chunk:
        counts: Counter = Counter()
        gen = ctx["gen"]
        out = gen.run(ctx["pool"][start:start + len(rows)], first_index=start, counts=counts)
        for m in (gen.span, gen.qg):  # what the LLMs asked and dropped (the summary's llm block)
            if hasattr(m, "role"):
                counts.update(llm_usage(m.role))
            counts.update(getattr(m, "counts", {}))
            getattr(m, "counts", {}).clear()
        main, more = [], []
        for r in out:  # a context's first decision is its row; the others ride in a side output
            (more if main and main[-1]["context_id"] == r["context_id"] else main).append(r)
        return pipelines.Chunk(main, sides={"more": more}, counts=counts)

    def filter_when(self, row: dict) -> bool:
        return bool(row["consistent"])

    def judge(self, row: dict, keep: bool) -> None:
        judge_wellformed(row, keep)

    def after_filters(self, ctx, chunk: pipelines.Chunk, start: int) -> None:
        more = chunk.sides["more"]
        for f in self.filters:  # the same filters on the 2nd..Kth answers' rows
            chunk.counts[f"dropped_{f.name}"] += f.apply(more, self.filter_field, when=self.filter_when,
                                                         judge=self.judge)
        # unanswerables are made from the triples the filters kept
        negs, skipped = add_unanswerables(chunk.rows + more, ctx["pool"], ctx["index"], self.cfg.neg_fraction,
                                          self.cfg.seed)
        chunk.sides["negs"] = negs
        chunk.counts["skipped_negatives"] = skipped


class _Stage(pipelines.RowStage):
    name = "qagen"
    unit = "contexts"

    def __init__(self, cfg: QAGenConfig, contexts: List[Context], out: Path, models: Dict[str, Optional[str]],
                 keep_discarded: bool, squad_out: Optional[Path], threads: int, batch_size: int, input_sha: str,
                 llm=None):
        super().__init__([{"id": c.id, "title": c.title, "text": c.text} for c in contexts], out)
        self.cfg, self.contexts, self.models = cfg, contexts, models
        self.keep_discarded, self.squad_out, self.input_sha = keep_discarded, squad_out, input_sha
        self.kernel = _Kernel(cfg, models, threads, batch_size, llm)
        self.llm = llm

    def signature(self) -> Dict[str, Any]:
        from pysynth.qagen.models import DEFAULT_QG_MODEL, DEFAULT_SPAN_MODEL

        defaults = {"answer": DEFAULT_SPAN_MODEL, "question": DEFAULT_QG_MODEL, "qa": DEFAULT_SPAN_MODEL}
        return _signature.signature(
            FORMAT, FORMAT_VERSION, {**self.cfg.as_dict(), "keep_discarded": self.keep_discarded},
            {"contexts": len(self.contexts), "sha256": self.input_sha},
            extra_versions=("onnxruntime",),
            models={k: generator_fingerprint(v, defaults[k], *(("qagen", self.llm) if k == "question" else
                                                                 ("answers", self.llm.replace(prompt=None) if self.llm else None)))
                    for k, v in self.models.items()})

    def describe_chunks(self, n_items: int, n_chunks: int, chunk_size: int) -> str:
        c = self.cfg
        k = f"{c.answers_per_context} answers" if c.answers_per_context > 1 else "answer"
        return (f"{n_items:,} contexts: {k} from the top {c.top_k} {'joint' if c.joint else 'independent'} spans, "
                f"question by {c.decode}, roundtrip match {c.match}; {n_chunks} chunk{'s' if n_chunks > 1 else ''} "
                f"of {chunk_size:,}")

    @staticmethod
    def decisions(parts: List[Dict[str, np.ndarray]]):
        """Every decision row with its unanswerable (or None), in input order: each context's
        answers in draw order, whatever the chunking."""
        for p in parts:
            negs = {r["id"][:-len("#neg")]: r for r in iter_rows(p, "negs")}
            more: Dict[str, List[dict]] = {}
            for r in iter_rows(p, "more"):
                more.setdefault(r["context_id"], []).append(r)
            for r in iter_rows(p):
                for x in [r] + more.get(r["context_id"], []):
                    yield x, negs.get(x["id"])

    def write(self, parts: List[Dict[str, np.ndarray]], info) -> Dict[str, Any]:
        reasons: Counter = Counter()
        kept = decided = 0
        kept_contexts = set()
        for r, _ in self.decisions(parts):
            decided += 1
            kept += bool(r["consistent"])
            if r["consistent"]:
                kept_contexts.add(r["context_id"])
            if r["reason"]:
                reasons[r["reason"]] += 1
        negs = sum(int(np.asarray(p["negs_off"]).shape[0] - 1) for p in parts)
        counts = self.counts(parts)
        skipped = int(counts["skipped_negatives"])

        def rows():  # each answer's row, then its unanswerable: the order does not depend on chunking
            for r, neg in self.decisions(parts):
                if r["consistent"] or self.keep_discarded:
                    yield r
                if neg is not None:
                    yield neg

        n_out = io.write_rows(self.out, rows())
        if self.squad_out is not None:
            doc = to_squad(r for r in rows() if r["consistent"])
            io.atomic_write_text(self.squad_out, json.dumps(doc, ensure_ascii=False) + "\n")
        n = info.n_items
        summary = {"contexts": n, "roundtrip_filter": resolve_match(self.cfg.match, self.models["question"],
                                                                    self.models["qa"]),
                   "kept": kept, "discarded": decided - kept,
                   "keep_rate": round(kept / decided, 4) if decided else 0.0,
                   "discarded_by_reason": dict(sorted(reasons.items())), "unanswerable": negs,
                   "unanswerable_skipped_single_paragraph": skipped, "rows_written": n_out,
                   "chunks_resumed": info.chunks_resumed,
                   **self._answer_summary(decided, len(kept_contexts), counts),
                   **llm_summary(counts, used=any(is_llm_spec(v) for v in self.models.values())),
                   "timings": {k: round(v, 3) for k, v in info.timings.items()}}
        info.log(f"      done: {kept:,} of {decided:,} triples kept ({summary['keep_rate']:.1%}) from "
                 f"{len(kept_contexts):,} of {n:,} contexts, {negs:,} unanswerable added; discarded: {dict(reasons)}")
        return summary

    def _answer_summary(self, decided: int, kept_contexts: int, counts: Counter) -> Dict[str, Any]:
        """The summary keys of the answer options (absent from runs without them)."""
        c, out = self.cfg, {}
        if c.answers_per_context > 1:
            out.update(answers=decided, answers_unavailable=int(counts["answers_unavailable"]))
        out["contexts_kept"] = kept_contexts
        rejected = {k[len("rejected_"):]: int(v) for k, v in sorted(counts.items()) if k.startswith("rejected_")}
        if c.one_sentence or c.max_answer_words is not None or c.answers_per_context > 1:
            out["spans_rejected"] = rejected
        if c.no_repeat_ngram:
            out["questions_redecoded"] = int(counts["questions_redecoded"])
            out["questions_fixed"] = int(counts["questions_fixed"])
        return out


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
        question_model: Optional[str] = None, qa_model: Optional[str] = None, llm=None, keep_discarded: bool = False,
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

    ``question_model`` / ``answer_model`` may be LLM specs (:mod:`pysynth.llm`, configured by
    ``llm``, a :class:`pysynth.llm.LLMOptions`): the roundtrip check (``qa_model``, a span model)
    decides as for any generator; the summary gets an ``llm`` block.
    """
    cfg = config or QAGenConfig()
    contexts = read_contexts(inp)
    ids = Counter(c.id for c in contexts)
    dup = [k for k, v in ids.items() if v > 1]
    if dup:
        raise ValueError(f"contexts: id {dup[0]!r} occurs {ids[dup[0]]} times; ids must be unique")
    sha = _signature.fingerprint([[c.id, c.title, c.text] for c in contexts])
    models = {"answer": answer_model, "question": question_model,
              "qa": qa_model if qa_model or is_llm_spec(answer_model) else answer_model}
    stage = _Stage(cfg, contexts, Path(out), models, keep_discarded, Path(squad_out) if squad_out else None,
                   threads, batch_size, sha, llm)
    return stage.run(executor=executor, workers=workers, ray_address=ray_address, chunk_size=chunk_size,
                     resume=resume, progress=progress, _stop_after_chunks=_stop_after_chunks)
