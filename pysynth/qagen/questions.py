"""``pysynth qagen questions``: a question for each given answer (rows ``{context, answer_text,
answer_start}``), the "generate questions for these answers" call of lmqg-style QG libraries.

Every input row keeps its fields and gets ``question``; a bad row (a missing field, an
``answer_start`` where ``answer_text`` is not, an empty answer) is left out of the output and
counted with its reason (``skipped_by_reason``, the first ones listed with their row number in
``skipped_examples``). As a row stage (:class:`pysynth.pipelines.RowStage`) the job is resumable,
signed (``OUT.meta.json``) and atomic, with the same bytes for any chunking, worker count or
executor. :func:`generate_questions` is the same call in memory.
"""
from __future__ import annotations

from collections import Counter
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from pysynth import io, llm, pipelines
from pysynth import signature as _signature

__all__ = ["run", "generate_questions", "check_answer_row", "ROW_REASONS"]

FORMAT, FORMAT_VERSION = "pysynth.qagen.questions", 2  # 2: questions cased as in their context
#: why an input row gets no question
ROW_REASONS = ("not_an_object", "missing_context", "missing_answer_text", "missing_answer_start", "empty_answer",
               "bad_answer_start", "answer_start_mismatch")
_EXAMPLES = 20


def check_answer_row(row: Any) -> Optional[str]:
    """None for a usable row ``{context, answer_text, answer_start}``, else the reason (:data:`ROW_REASONS`).

    Examples
    --------
    >>> check_answer_row({"context": "Oxygen is O.", "answer_text": "O", "answer_start": 10})
    >>> check_answer_row({"context": "Oxygen is O.", "answer_text": "O", "answer_start": 3})
    'answer_start_mismatch'
    """
    if not isinstance(row, Mapping):
        return "not_an_object"
    for k in ("context", "answer_text", "answer_start"):
        if row.get(k) is None:
            return f"missing_{k}"
    c, a, s = row["context"], row["answer_text"], row["answer_start"]
    if not isinstance(c, str) or not c.strip():
        return "missing_context"
    if not isinstance(a, str) or not a.strip():
        return "empty_answer"
    if isinstance(s, bool) or not isinstance(s, int) or not 0 <= s <= len(c) - len(a):
        return "bad_answer_start"
    if c[s:s + len(a)] != a:
        return "answer_start_mismatch"
    return None


def _ask(qg, rows: List[Any], first_index: int, decode: str, beam_size: int, top_k_sample: int, seed: int,
         no_repeat_ngram: int, counts: Counter, no_stutter: bool = True) -> Tuple[List[Optional[dict]], List[dict]]:
    """``(out, bad)``: per row, the row with its question (None for a bad row), and the bad rows'
    ``{"row", "reason"}``."""
    from pysynth.qagen.pipeline import ask_questions, decode_options, has_repeated_ngram

    why = [check_answer_row(r) for r in rows]
    good = [i for i, w in enumerate(why) if w is None]
    spans = [{"start": rows[i]["answer_start"], "end": rows[i]["answer_start"] + len(rows[i]["answer_text"])}
             for i in good]
    qs = ask_questions(qg, [rows[i]["context"] for i in good], spans,
                       decode_options(decode, beam_size, top_k_sample, seed, [(first_index + i, 0) for i in good],
                                      no_repeat_ngram, no_stutter),
                       no_repeat_ngram, beam_size, counts)
    out: List[Optional[dict]] = [None] * len(rows)
    for i, q in zip(good, qs):
        out[i] = {**rows[i], "question": q}
        if not (q and q.strip()):
            counts["empty_questions"] += 1
            if getattr(q, "reason", None):  # an LLM's empty reply: its reason travels with the row
                out[i]["reason"] = q.reason
        elif no_repeat_ngram and has_repeated_ngram(q, no_repeat_ngram):
            counts["questions_with_repeated_ngram"] += 1
    bad = []
    for i, w in enumerate(why):
        if w is not None:
            counts[f"skipped_{w}"] += 1
            bad.append({"row": first_index + i, "reason": w})
    return out, bad


def generate_questions(rows: Iterable[Mapping[str, Any]], question_model=None, *, decode: str = "greedy",
                       beam_size: int = 4, top_k_sample: int = 10, seed: int = 0, no_repeat_ngram: int = 3,
                       no_stutter: bool = True, threads: int = 0) -> Tuple[List[dict], Dict[str, Any]]:
    """A question for each answer row, in memory: ``(rows with "question", report)``.

    Parameters
    ----------
    rows : dicts ``{context, answer_text, answer_start}`` (other fields are kept).
    question_model : a :class:`~pysynth.qagen.models.QuestionGenerator`, a model name or folder
        (default ``qagen-qg-copynet``).
    decode, beam_size, top_k_sample, seed : the question decoding (``greedy``, ``beam``, ``dbs``,
        ``sample``); sampling seeds are keyed by ``(seed, row number)``.
    no_repeat_ngram : the search never repeats a token n-gram, and questions still repeating a word
        n-gram are decoded again by beam search (:func:`pysynth.qagen.pipeline.ask_questions`); 0: off.
    no_stutter : the search never says a token twice in a row (True).
    threads : onnxruntime / torch threads.

    Returns
    -------
    rows : list of dict
        The usable rows with ``question`` (bad rows are left out).
    report : dict
        ``{"rows", "questions", "skipped_by_reason", "skipped_examples", ...}``.

    Examples
    --------
    >>> rows, report = generate_questions([{"context": "Oxygen was found in 1773.", "answer_text": "1773",
    ...                                     "answer_start": 20}])  # doctest: +SKIP
    """
    from pysynth.qagen.models import QuestionGenerator
    from pysynth.qagen.pipeline import question_options

    question_options(decode, beam_size, top_k_sample, seed, no_repeat_ngram, no_stutter)
    qg = question_model if isinstance(question_model, QuestionGenerator) else \
        QuestionGenerator(question_model, threads=threads)
    rows = list(rows)
    counts: Counter = Counter()
    out, bad = _ask(qg, rows, 0, decode, beam_size, top_k_sample, seed, no_repeat_ngram, counts, no_stutter)
    kept = [r for r in out if r is not None]
    return kept, _report(len(rows), len(kept), counts, bad)


def _report(n: int, asked: int, counts: Counter, bad: List[dict]) -> Dict[str, Any]:
    skipped = {k[len("skipped_"):]: int(v) for k, v in sorted(counts.items()) if k.startswith("skipped_")}
    return {"rows": n, "questions": asked, "skipped": n - asked, "skipped_by_reason": skipped,
            "skipped_examples": bad[:_EXAMPLES], "empty_questions": int(counts["empty_questions"]),
            "questions_redecoded": int(counts["questions_redecoded"]),
            "questions_fixed": int(counts["questions_fixed"]),
            "questions_with_repeated_ngram": int(counts["questions_with_repeated_ngram"])}


class _Kernel(pipelines.RowKernel):
    sides = ("bad",)

    def __init__(self, model: Optional[str], options: Dict[str, Any], threads: int, llm=None):
        self.model, self.options, self.threads, self.llm = model, options, threads, llm

    def load(self, context: Path, rows):
        from pysynth.qagen.models import QuestionGenerator

        return QuestionGenerator(self.model, threads=self.threads, llm=self.llm)

    def generate(self, qg, rows: List[dict], start: int, workers: int) -> pipelines.Chunk:
        counts: Counter = Counter()
        out, bad = _ask(qg, [r["row"] for r in rows], start, counts=counts, **self.options)
        if qg.kind == "llm":
            counts.update(llm.usage(qg.role))
        return pipelines.Chunk([{"out": o} for o in out], sides={"bad": bad}, counts=counts)


class _Stage(pipelines.RowStage):
    name, unit = "qagen-questions", "answers"

    def __init__(self, rows: List[Any], out: Path, model: Optional[str], options: Dict[str, Any], threads: int,
                 llm_options=None):
        super().__init__([{"row": r} for r in rows], out)  # wrapped: a bad row need not be an object
        self.model, self.options, self.llm = model, options, llm_options
        self.kernel = _Kernel(model, options, threads, llm_options)

    def signature(self) -> Dict[str, Any]:
        from pysynth.models.registry import generator_fingerprint
        from pysynth.qagen.models import DEFAULT_QG_MODEL

        return _signature.signature(FORMAT, FORMAT_VERSION, dict(self.options), self.input_fingerprint(),
                                    extra_versions=("onnxruntime",),
                                    models={"question": generator_fingerprint(self.model, DEFAULT_QG_MODEL, "qagen",
                                                                                  self.llm)})

    def write(self, parts, info) -> Dict[str, Any]:
        n_out = io.write_rows(self.out, (r["out"] for r in self.iter_rows(parts) if r["out"] is not None))
        bad = list(self.iter_rows(parts, "bad"))
        counts = self.counts(parts)
        summary = {**_report(info.n_items, n_out, counts, bad), **llm.summary(counts, llm.is_llm_spec(self.model)),
                   "chunks_resumed": info.chunks_resumed,
                   "timings": {k: round(v, 3) for k, v in info.timings.items()}}
        info.log(f"      done: {n_out:,} questions for {info.n_items:,} rows; skipped: {summary['skipped_by_reason']}")
        return summary


def run(inp, out, *, question_model: Optional[str] = None, decode: str = "greedy", beam_size: int = 4,
        top_k_sample: int = 10, seed: int = 0, no_repeat_ngram: int = 3, no_stutter: bool = True,
        executor="local", workers: int = 1,
        ray_address: Optional[str] = None, chunk_size: int = 256, threads: int = 0, resume: bool = True,
        progress: bool = True, llm_options=None, _stop_after_chunks: Optional[int] = None) -> Dict[str, Any]:
    """Questions for the answer rows of ``inp`` (JSONL / Parquet / an iterable of dicts
    ``{context, answer_text, answer_start}``) into ``out``: each usable row with ``question``.

    Resumable (``OUT.parts``), signed (``OUT.meta.json``: the decoding, the model's fingerprint,
    the input hash), atomic; the same bytes for any chunking, worker count or executor. Returns
    the summary: ``rows``, ``questions``, ``skipped_by_reason`` (every left-out row counted) and
    ``skipped_examples`` (row number and reason of the first ones). See :func:`generate_questions`
    for the parameters; ``question_model`` may be an LLM spec (``llm_options``: a
    :class:`pysynth.llm.LLMOptions`; a row it gave no question gets ``reason`` ``llm_*``).
    """
    from pysynth.qagen.pipeline import question_options

    options = question_options(decode, beam_size, top_k_sample, seed, no_repeat_ngram, no_stutter)
    rows = list(io.read_rows(inp, "--in"))
    return _Stage(rows, Path(out), question_model, options, threads, llm_options).run(
        executor=executor, workers=workers, ray_address=ray_address, chunk_size=chunk_size, resume=resume,
        progress=progress, _stop_after_chunks=_stop_after_chunks)
