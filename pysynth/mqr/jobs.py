"""``pysynth mqr rewrite`` as a pipeline stage: resumable, signed, atomic, local or Ray.

:func:`rewrite_file` rewrites ill-formed questions (Chu et al. 2020) with a :class:`~pysynth.mqr.rewrite.Rewriter`
on the row stage of :mod:`pysynth.pipelines` (:class:`~pysynth.pipelines.RowStage`): the input is read
through :mod:`pysynth.io`, chunks run in-process or on Ray actors, a killed run resumes after its last
finished chunk (``OUT.parts``), the output is written atomically and ``OUT.meta.json`` holds the run's
signature (decoding, model fingerprint, input hash, versions) and counts. ``--min-wellformed`` is the
row stage's filter (:class:`~pysynth.pipelines.ScoreFilter`): a rewrite under it gives the input back.
"""
from __future__ import annotations

import gzip
import json
import os
import stat
import sys
from pathlib import Path
from typing import Any, Dict, List, Optional, Tuple

import numpy as np

from pysynth import io, llm, pipelines
from pysynth import signature as _signature
from pysynth.decoding.config import SearchConfig, guard_changes
from pysynth.mqr.rewrite import DEFAULT_DECODING, DEFAULT_MODEL, check_decoding

__all__ = ["read_questions", "rewrite_file", "FORMAT", "FORMAT_VERSION"]

FORMAT = "pysynth.mqr.rewrite"
FORMAT_VERSION = 1
_ROW_SUFFIXES = (".jsonl", ".jsonl.gz", ".parquet", ".json")
_GUARDS = ("no_repeat_ngram", "no_stutter")  # in the decoding (and signature) only off their defaults


def read_questions(path, flag: str = "--in") -> Tuple[List[str], Optional[List[dict]]]:
    """``(texts, rows)`` of a rewrite input: JSONL/Parquet rows with a string ``question``
    (:func:`pysynth.io.read_rows`; rows kept), or plain text, one question per line (rows None).
    ``-`` (stdin) is sniffed: JSON objects or text."""
    name = str(path).lower()
    if name.endswith(_ROW_SUFFIXES):
        rows = list(io.read_rows(path, flag))
    else:
        if str(path) == "-":
            lines = [line.removesuffix("\n") for line in sys.stdin]
            if lines:
                lines[0] = io.strip_bom(lines[0])
        else:
            if not os.path.exists(path):
                raise ValueError(f"{flag}: no such file {str(path)!r}")
            with open(path, encoding="utf-8-sig", newline="") as f:  # a byte-order mark dropped
                # one line ending off, \r\n and a lone \r too (CRLF lines kept their \r: fuzz/intake.py)
                lines = [io.chomp(line) for line in f]
        if str(path) != "-" or not (lines and lines[0].lstrip().startswith("{")):
            return lines, None
        rows = [json.loads(x) for x in lines if x.strip()]
    rows = _check_rows(rows, flag)
    return [r["question"] for r in rows], rows


def _check_rows(rows: List[dict], flag: str) -> List[dict]:
    for i, r in enumerate(rows):
        if not isinstance(r, dict) or not isinstance(r.get("question"), str):
            raise ValueError(f"{flag} row {i + 1}: needs a string field 'question'")
    return rows


class _Kernel(pipelines.RowKernel):
    """Rewrites of questions ``[start, stop)`` (picklable: the configuration only)."""

    filter_field = "rewrite"  # --min-wellformed: the rewrite (under it: the input comes back)

    def __init__(self, model: Optional[str], backend: str, threads: int, decoding: Dict[str, Any],
                 batch_size: int, filters: tuple = (), llm_options=None):
        self.model, self.backend, self.threads, self.decoding = model, backend, threads, decoding
        self.batch_size, self.filters, self.llm = batch_size, filters, llm_options

    def load(self, context: Path, rows):
        from pysynth.mqr.rewrite import Rewriter

        return Rewriter(self.model, backend=self.backend, threads=self.threads, llm=self.llm)

    def generate(self, rw, rows: List[dict], start: int, workers: int) -> pipelines.Chunk:
        d = self.decoding
        out = rw.choices([r["question"] for r in rows], beam=d["beam"], batch_size=self.batch_size,
                         coverage=d["coverage"], wellformed=d["wellformed"], backoff=d["backoff"],
                         select=d["select"], **{k: d[k] for k in _GUARDS if k in d})
        # the choice travels with the row: model / rule / kept_input (safe selection), unreadable (no word
        # of the text in the model's vocabulary: the text comes back)
        # an LLM's failed reply: the input back, choice llm_empty / llm_unparsable / llm_refused
        return pipelines.Chunk([{**r, "rewrite": r["question"] if o is None else o[0],
                                 "choice": "unreadable" if o is None else o[1]} for r, o in zip(rows, out)],
                               counts=llm.usage(rw.generator) if hasattr(rw.generator, "role") else None)

    def judge(self, row: dict, keep: bool) -> None:
        row["rewritten"] = keep
        if not keep:
            row["rewrite"] = row["question"]

    def judge_filter(self, f, row: dict, keep: bool) -> None:
        self.judge(row, keep)  # --min-similarity too: a rewrite under it gives the input back

    def filter_when(self, row: dict) -> bool:
        return row.get("rewritten", True)  # a later filter skips a rewrite an earlier one gave back


class _Stage(pipelines.RowStage):
    name = "mqr rewrite"
    unit = "questions"

    def __init__(self, rows: List[dict], text: bool, out, model: Optional[str], backend: str, threads: int,
                 decoding: Dict[str, Any], batch_size: int, min_wellformed: Optional[float],
                 min_similarity: Optional[float] = None, llm_options=None):
        super().__init__(rows, out)
        self.llm = llm_options
        self.text, self.model, self.backend, self.decoding = text, model, backend, decoding
        self.min_wellformed, self.min_similarity = min_wellformed, min_similarity
        filters = ()
        if min_wellformed is not None:
            from pysynth.quality import wellformedness

            filters = (pipelines.ScoreFilter("wellformed", min_wellformed, wellformedness, digits=6),)
        if min_similarity is not None:  # the meaning filter: question vs rewrite
            import functools

            from pysynth.models.embed import similarity

            filters += (pipelines.PairScoreFilter("similarity", min_similarity,
                                                  functools.partial(similarity, threads=threads)),)
        self.kernel = _Kernel(model, backend, threads, decoding, batch_size, filters, llm_options)

    def signature(self) -> Dict[str, Any]:
        from pysynth.models.registry import generator_fingerprint

        cfg = {"input": "text" if self.text else "rows", **self.decoding, "backend": self.backend,
               **({"min_wellformed": self.min_wellformed} if self.min_wellformed is not None else {}),
               **({"min_similarity": self.min_similarity} if self.min_similarity is not None else {})}
        return _signature.signature(FORMAT, FORMAT_VERSION, cfg, self.input_fingerprint(),
                                    extra_versions=("onnxruntime",),
                                    models={"rewriter": generator_fingerprint(self.model, DEFAULT_MODEL, "mqr",
                                                                                  self.llm)})

    def describe_chunks(self, n_items: int, n_chunks: int, chunk_size: int) -> str:
        d = self.decoding
        return (f"{n_items:,} questions, beam {d['beam']}, coverage {d['coverage']}, wellformed {d['wellformed']}, "
                f"backoff {d['backoff']}; {n_chunks} chunk{'s' if n_chunks > 1 else ''} of {chunk_size:,}")

    def write(self, parts: List[Dict[str, np.ndarray]], info) -> Dict[str, Any]:
        changed = 0

        choices: Dict[str, int] = {}

        def rows():
            nonlocal changed
            for r in self.iter_rows(parts):
                changed += r["rewrite"] != r["question"]
                c = r.get("choice", "model")
                choices[c] = choices.get(c, 0) + 1
                yield r

        if self.text:
            n_out = _write_text(self.out, (r["rewrite"] for r in rows()))
        else:
            n_out = io.write_rows(self.out, rows())
        counts = self.counts(parts)
        summary = {"questions": info.n_items, "changed": changed, "unchanged": info.n_items - changed,
                   "choices": dict(sorted(choices.items())),
                   "dropped_wellformed": int(counts.get("dropped_wellformed", 0)), "rows_written": n_out,
                   **({"dropped_similarity": int(counts.get("dropped_similarity", 0))}
                      if self.min_similarity is not None else {}),
                   **llm.summary(counts, llm.is_llm_spec(self.model)),
                   "chunks_resumed": info.chunks_resumed, "timings": {k: round(v, 3) for k, v in info.timings.items()}}
        info.log(f"      done: {changed:,} of {info.n_items:,} questions rewritten"
                 + (f", {summary['dropped_wellformed']:,} rewrites under --min-wellformed" if self.kernel.filters
                    else ""))
        return summary


def _write_text(out: Path, texts) -> int:
    """One text per line (a newline inside becomes a space): ``-`` is stdout, a FIFO or device is
    written directly, a file atomically (``.gz``: gzip, no name or time in the header)."""
    n = 0

    def write(f):
        nonlocal n
        for t in texts:
            f.write((t.replace("\n", " ") + "\n").encode("utf-8"))
            n += 1

    if str(out) == "-":
        write(sys.stdout.buffer)
        sys.stdout.buffer.flush()
    elif out.exists() and not stat.S_ISREG(out.stat().st_mode):
        with open(out, "wb") as f:
            write(f)
    elif out.suffix == ".gz":
        def write_gz(raw):
            with gzip.GzipFile(filename="", fileobj=raw, mode="wb", compresslevel=6, mtime=0) as gz:
                write(gz)

        io.atomic_write(out, write_gz)
    else:
        io.atomic_write(out, write)
    return n


def rewrite_file(inp, out, *, model: Optional[str] = None, backend: str = "auto", threads: int = 0,
                 beam: int = DEFAULT_DECODING["beam"], coverage: float = DEFAULT_DECODING["coverage"],
                 wellformed: float = DEFAULT_DECODING["wellformed"], backoff: float = DEFAULT_DECODING["backoff"],
                 select: str = DEFAULT_DECODING["select"], min_wellformed: Optional[float] = None,
                 min_similarity: Optional[float] = None, no_repeat_ngram: int = SearchConfig.no_repeat_ngram,
                 no_stutter: bool = SearchConfig.no_stutter, batch_size: int = 64, executor="local", workers: int = 1,
                 ray_address: Optional[str] = None, chunk_size: int = 512, resume: bool = True,
                 progress: bool = True, llm_options=None, _stop_after_chunks: Optional[int] = None) -> Dict[str, Any]:
    """Rewrite the questions of ``inp`` into ``out`` (``pysynth mqr rewrite``).

    Parameters
    ----------
    inp : path, ``-`` or a list of str / of row dicts
        Plain text (one question per line) gives plain text out, line for line; JSONL/Parquet rows
        ``{"question", ...}`` (:func:`read_questions`) get a ``rewrite`` field.
    out : path or ``-``
        The output, the same kind as the input (``-``: stdout, not resumable, no metadata); beside
        a file, ``OUT.meta.json`` (signature and counts) and, while it runs, ``OUT.parts``.
    model, backend, threads : the rewriter (:class:`~pysynth.mqr.rewrite.Rewriter`; default the shipped
        ``mqr-copynet-small``; ``auto``: onnxruntime when installed and the model has an export).
        ``model`` may be an LLM spec (:mod:`pysynth.llm`; ``llm_options``: its
        :class:`pysynth.llm.LLMOptions`): its replies are the candidates the selection ranks.
    beam, coverage, wellformed, backoff, select : the decoding of :meth:`~pysynth.mqr.rewrite.Rewriter.rewrite`
        (defaults: :data:`~pysynth.mqr.rewrite.DEFAULT_DECODING`, chosen on held-out MQR dev pairs;
        ``select="safe"``: the input, the rule floor or the model's rewrite, never worse than the input).
    min_wellformed : float or None
        A rewrite whose well-formedness (:mod:`pysynth.quality`) is below it gives the input back;
        rows get ``wellformed`` and ``rewritten``.
    min_similarity : float or None
        The meaning filter: a rewrite whose cosine with its question
        (:func:`pysynth.models.embed.similarity`) is below it gives the input back; rows get
        ``similarity`` and ``rewritten``, the summary ``dropped_similarity``.
    no_repeat_ngram, no_stutter : the search's degenerate-output guards (:class:`pysynth.decoding.SearchConfig`;
        on by default; ``0, False``: the plain beam search).
    executor, workers, ray_address, chunk_size, resume, progress : the run
        (:meth:`pysynth.pipelines.RowStage.run`); the output bytes do not depend on them.

    Returns
    -------
    dict : the summary (questions, changed, unchanged, dropped_wellformed, rows_written, ...).
    """
    check_decoding(coverage, wellformed, backoff, select)
    if isinstance(beam, bool) or not isinstance(beam, int) or beam < 1:
        raise ValueError(f"beam: must be a positive integer, got {beam!r}")
    if isinstance(inp, (str, os.PathLike)):
        texts, rows = read_questions(inp)
    elif all(isinstance(x, str) for x in inp):
        texts, rows = list(inp), None
    else:
        rows = _check_rows(list(inp), "inp")
    text = rows is None
    decoding = {"beam": beam, "coverage": coverage, "wellformed": wellformed, "backoff": backoff, "select": select,
                **guard_changes(no_repeat_ngram, no_stutter)}
    stage = _Stage([{"question": t} for t in texts] if text else rows, text, out, model, backend, threads,
                   decoding, batch_size, min_wellformed, min_similarity, llm_options)
    return stage.run(executor=executor, workers=workers, ray_address=ray_address, chunk_size=chunk_size,
                     resume=resume, progress=progress, _stop_after_chunks=_stop_after_chunks)
