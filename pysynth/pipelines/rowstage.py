"""One row stage for every generating method: rows in, rows out, every row accounted for.

:class:`RowStage` and :class:`RowKernel` are the :class:`~pysynth.pipelines.Stage` and
:class:`~pysynth.pipelines.Kernel` of the methods whose items are records (``qagen generate``,
``paraphrase generate``, ``dup pairs``, ``mqr rewrite``).  The base does the plumbing they shared:

* ``prepare`` packs the input rows (:meth:`RowStage.items`) into the run directory's context,
  where every worker memory-maps them;
* ``run_chunk`` slices the chunk's rows, calls the method's :meth:`RowKernel.generate`, applies
  the row filters (:class:`ScoreFilter`: ``--min-wellformed`` and any later one) **in this one
  place**, calls :meth:`RowKernel.after_filters`, and packs the output rows, the side outputs
  and the chunk's counters into the part;
* ``finish`` hands the parts to the method's :meth:`RowStage.write` (which writes the output
  atomically with :func:`pysynth.io.write_rows` and returns the summary) and then writes
  ``OUT.meta.json`` (the signature and the summary): data first, metadata last;
* :meth:`RowStage.run` picks the executor (``"local"``, ``"ray"`` or an executor object) and runs
  the stage resumably (:func:`pysynth.pipelines.run`).

A new generating method in a few lines::

    class Kernel(RowKernel):
        def __init__(self, model):
            self.model = model
        def load(self, context, rows):                 # once per worker: models
            return MyModel(self.model)
        def generate(self, model, rows, start, workers):
            return Chunk([{**r, "out": model(r["text"])} for r in rows])

    class Stage(RowStage):
        name = "mine"
        def __init__(self, rows, out, model):
            super().__init__(rows, out)
            self.kernel = Kernel(model)              # configuration only: pickled to Ray actors
        def signature(self):                         # what a resumed run must match
            return signature.signature("pysynth.mine", 1, {...}, self.input_fingerprint())
        def write(self, parts, info):                # the output, then the summary
            return {"rows": io.write_rows(self.out, self.iter_rows(parts))}

    Stage(rows, out, "my-model").run(executor="ray", chunk_size=256)

A row filter is one line in the kernel: ``filters = (ScoreFilter("wellformed", p, wellformedness),)``
with ``filter_field`` naming the generated text(s); :meth:`RowKernel.filter_when` and
:meth:`RowKernel.judge` say which rows it looks at and what a rejected one becomes.
"""
from __future__ import annotations

import functools
import os
import stat
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence

import numpy as np

from pysynth import io, store
from pysynth.pipelines.rows import check_rows, iter_rows, pack_rows
from pysynth.pipelines.runner import Kernel, RunInfo, Stage, run

__all__ = ["Chunk", "ScoreFilter", "PairScoreFilter", "RowKernel", "RowStage", "slice_rows", "meta_path", "ROWS_FORMAT"]

#: store format of the packed input rows in a run's context
ROWS_FORMAT = "pysynth.pipelines.Rows"
#: the summary keys that depend on the run, not on its input and configuration (left out of OUT.meta.json);
#: ``llm``: requests and cache hits depend on what the response cache already held
_VOLATILE = ("timings", "chunks_resumed", "llm")


def meta_path(out) -> Path:
    """``OUT.meta.json``: the signature and summary written beside a stage's output."""
    out = Path(out)
    return out.with_name(out.name + ".meta.json")


def slice_rows(arrays: Mapping[str, np.ndarray], start: int, stop: int, prefix: str = "rows") -> List[dict]:
    """Rows ``[start, stop)`` of arrays :func:`~pysynth.pipelines.rows.pack_rows` packed (memory-mapped:
    only the slice's bytes are read)."""
    off = arrays[prefix + "_off"]
    a, b = int(off[start]), int(off[stop])
    return list(iter_rows({prefix: arrays[prefix][a:b], prefix + "_off": np.asarray(off[start:stop + 1]) - a}, prefix))


@dataclass
class Chunk:
    """What :meth:`RowKernel.generate` returns for the rows of a chunk.

    Attributes
    ----------
    rows : list of dict
        The main output rows, one per input row (in order).
    sides : dict of str to list of dict
        Side outputs (any number of rows each), e.g. candidates or extra rows.
    counts : Counter
        Counters the stage sums over every chunk (reasons, filter drops).
    scratch : dict
        Anything :meth:`RowKernel.after_filters` needs; not stored in the part.
    """

    rows: List[dict]
    sides: Dict[str, List[dict]] = field(default_factory=dict)
    counts: Counter = field(default_factory=Counter)
    scratch: Dict[str, Any] = field(default_factory=dict)

    def __post_init__(self):
        self.counts = Counter(self.counts)


@dataclass(frozen=True)
class ScoreFilter:
    """A row filter over generated texts: keep a text when ``score(text) >= threshold``.

    The one implementation of ``--min-wellformed`` (``ScoreFilter("wellformed", p,
    pysynth.quality.wellformedness)``) for every generating command; :class:`RowKernel` applies its
    filters to every chunk, :func:`pysynth.quality.filter_rows` calls :meth:`apply` too.

    Parameters
    ----------
    name : str
        The row field the scores are recorded in; the counter of drops is ``dropped_<name>``.
    threshold : float
        A probability in [0, 1].
    score : callable
        ``texts -> probabilities`` (one batched call per chunk); a module-level function, so the
        filter pickles to Ray actors.
    digits : int
        Decimals of the recorded scores.
    flag : str
        The option's name in error messages.
    """

    name: str
    threshold: float
    score: Callable[[List[str]], Sequence[float]]
    digits: int = 4
    flag: str = "min_wellformed"

    def __post_init__(self):
        try:
            ok = not isinstance(self.threshold, bool) and 0.0 <= float(self.threshold) <= 1.0
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ValueError(f"{self.flag}: must be a probability in [0, 1], got {self.threshold!r}")

    def apply(self, rows: List[dict], field: str, *, parallel: Sequence[str] = (),
              when: Optional[Callable[[dict], bool]] = None, judge: Optional[Callable[[dict, bool], None]] = None,
              probs: Optional[Sequence[float]] = None) -> int:
        """Filter ``rows`` in place; every text is scored in one call. Returns the number dropped.

        A **list** ``row[field]``: its texts under the threshold are dropped (with the same positions
        of the lists named in ``parallel``, e.g. their scores); ``row[name]`` gets the kept texts'
        scores and ``row["dropped"]`` the count. A **text** ``row[field]``: ``row[name]`` gets its
        score and ``judge(row, keep)`` decides what the row becomes (default: a rejected row gets
        ``reason = "not_<name>"``). Rows for which ``when(row)`` is false are left alone. ``probs``:
        the scores, one per text in row order, when the caller computed them."""
        todo = [r for r in rows if when is None or when(r)]
        texts = [t for r in todo for t in (r[field] if isinstance(r[field], list) else [r[field]])]
        if probs is None:
            probs = list(self.score(texts)) if texts else []
        elif len(probs) != len(texts):
            raise ValueError(f"probs: {len(probs)} values for {len(texts)} texts")
        i = dropped = 0
        for r in todo:
            if not isinstance(r[field], list):
                p = probs[i]
                i += 1
                keep = bool(p >= self.threshold)
                r[self.name] = round(float(p), self.digits)
                (judge or self._reject)(r, keep)
                dropped += not keep
                continue
            n = len(r[field])
            p = [float(x) for x in probs[i:i + n]]
            i += n
            keep_at = [j for j in range(n) if p[j] >= self.threshold]
            for name in (field, *parallel):
                r[name] = [r[name][j] for j in keep_at]
            r[self.name] = [round(p[j], self.digits) for j in keep_at]
            r["dropped"] = n - len(keep_at)
            dropped += n - len(keep_at)
        return dropped

    def _reject(self, row: dict, keep: bool) -> None:
        if not keep:
            row["reason"] = f"not_{self.name}"


@dataclass(frozen=True)
class PairScoreFilter(ScoreFilter):
    """A row filter over (source, generated text) pairs: keep a text when ``score(sources, texts)
    >= threshold`` for the source it was made from.

    The one implementation of ``--min-similarity`` (the meaning filters of issue 26:
    ``PairScoreFilter("similarity", s, pysynth.models.embed.similarity, source="body")``): the
    cosine between each source text and its output. :class:`RowKernel` applies it like any
    :class:`ScoreFilter`; the source of output row ``i`` is field :attr:`source` of input row ``i``.

    Parameters
    ----------
    name, digits : str, int
        As :class:`ScoreFilter` (the column and the counter ``dropped_<name>``).
    threshold : float
        A cosine in [-1, 1].
    score : callable
        ``(sources, texts) -> scores`` (one batched call per chunk; a module-level function or a
        ``functools.partial`` of one, so the filter pickles to Ray actors).
    source : str
        The input row's field the output was made from (``body``, ``keywords``, ``question``).
    reason : str
        What a rejected text row gets as ``reason`` (default ``not_similar``).
    flag : str
        The option's name in error messages.
    """

    source: str = "question"
    reason: str = "not_similar"
    flag: str = "min_similarity"

    def __post_init__(self):
        try:
            ok = not isinstance(self.threshold, bool) and -1.0 <= float(self.threshold) <= 1.0
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise ValueError(f"{self.flag}: must be a cosine in [-1, 1] (e.g. 0.6), got {self.threshold!r}")

    def apply(self, rows: List[dict], field: str, *, parallel: Sequence[str] = (),
              when: Optional[Callable[[dict], bool]] = None, judge: Optional[Callable[[dict, bool], None]] = None,
              probs: Optional[Sequence[float]] = None, inputs: Optional[Sequence[dict]] = None) -> int:
        """:meth:`ScoreFilter.apply` with the sources of the texts: ``inputs[i][source]`` for
        ``rows[i]`` (default ``rows`` themselves). Returns the number dropped."""
        inputs = rows if inputs is None else inputs
        if len(inputs) != len(rows):
            raise ValueError(f"inputs: {len(inputs)} input rows for {len(rows)} output rows")
        if probs is None:
            srcs, texts = [], []
            for r, x in zip(rows, inputs):
                if when is None or when(r):
                    got = r[field] if isinstance(r[field], list) else [r[field]]
                    texts.extend(got)
                    srcs.extend([x[self.source]] * len(got))
            probs = [float(p) for p in self.score(srcs, texts)] if texts else []
        return super().apply(rows, field, parallel=parallel, when=when, judge=judge, probs=probs)

    def _reject(self, row: dict, keep: bool) -> None:
        if not keep:
            row["reason"] = self.reason


def _transient(out: Path) -> bool:
    """Stdout, a FIFO or a device: written once, with no run directory or metadata beside it."""
    if str(out) == "-":
        return True
    try:
        return not stat.S_ISREG(os.stat(out).st_mode)
    except OSError:
        return False


class _Opened:
    """A worker's view of the context: the packed input rows (memory-mapped) and the kernel's state."""

    __slots__ = ("rows", "state")

    def __init__(self, rows, state):
        self.rows, self.state = rows, state


class RowKernel(Kernel):
    """The chunk function of a :class:`RowStage` (picklable: keep it to the configuration).

    Attributes
    ----------
    sides : tuple of str
        Names of the side outputs every chunk returns (see :class:`Chunk`).
    filters : tuple of ScoreFilter
        Applied by :meth:`run_chunk` to ``filter_field`` of the rows :meth:`filter_when` selects.
    filter_field : str or None
        The generated text (a str) or texts (a list) of a row the filters score.
    """

    sides: tuple = ()
    filters: tuple = ()
    filter_field: Optional[str] = None
    filter_parallel: tuple = ()

    def load(self, context: Path, rows: Mapping[str, np.ndarray]) -> Any:
        """Once per worker: what :meth:`generate` needs (models); ``rows`` are the packed input rows."""
        return None

    def generate(self, state: Any, rows: List[dict], start: int, workers: int) -> Chunk:
        """The output rows of input rows ``rows`` (items ``start``, ``start + 1``, ...)."""
        raise NotImplementedError

    def filter_when(self, row: dict) -> bool:
        """Whether the filters look at ``row`` (default: every row)."""
        return True

    def judge(self, row: dict, keep: bool) -> None:
        """What a row whose text the (first) filter scored becomes (``keep``: at or above the threshold)."""
        if not keep:
            row["reason"] = f"not_{self.filters[0].name}"

    def judge_filter(self, f: ScoreFilter, row: dict, keep: bool) -> None:
        """What a row whose text filter ``f`` scored becomes: :meth:`judge` for the first filter
        (``--min-wellformed``), the filter's own rule for a later one (``--min-similarity``: reason
        ``not_similar``)."""
        if f is self.filters[0]:
            self.judge(row, keep)
        else:
            f._reject(row, keep)

    def after_filters(self, state: Any, chunk: Chunk, start: int) -> None:
        """Hook after the filters (e.g. side rows made from the kept rows)."""

    # -- the base's part of the chunk
    def open(self, context: Path) -> _Opened:
        rows = RowStage.load_rows(context, mmap=True)
        return _Opened(rows, self.load(context, rows))

    def run_chunk(self, ctx: _Opened, start: int, stop: int, workers: int = 1) -> Dict[str, np.ndarray]:
        chunk = self.generate(ctx.state, slice_rows(ctx.rows, start, stop), start, workers)
        if len(chunk.rows) != stop - start:
            raise RuntimeError(f"{type(self).__name__}.generate: {len(chunk.rows)} rows for {stop - start} inputs")
        inputs = None
        for k, f in enumerate(self.filters):  # the one place every generating command's row filters run
            kw = {}
            if isinstance(f, PairScoreFilter):  # scored against the input rows the texts were made from
                inputs = inputs if inputs is not None else slice_rows(ctx.rows, start, stop)
                kw["inputs"] = inputs
            # list texts: a later filter drops the earlier filters' score columns with its texts
            earlier = tuple(g.name for g in self.filters[:k])
            before = [r.get("dropped", 0) if isinstance(r.get(self.filter_field), list) else None for r in chunk.rows]
            chunk.counts[f"dropped_{f.name}"] += f.apply(chunk.rows, self.filter_field,
                                                         parallel=(*self.filter_parallel, *earlier),
                                                         when=self.filter_when,
                                                         judge=functools.partial(self.judge_filter, f), **kw)
            if k:  # ``dropped``: every filter's drops
                for r, b in zip(chunk.rows, before):
                    if b is not None and isinstance(r.get("dropped"), int):
                        r["dropped"] += b
        self.after_filters(ctx.state, chunk, start)
        out = pack_rows(chunk.rows)
        for name in self.sides:
            out.update(pack_rows(chunk.sides.get(name, []), name))
        out.update(pack_rows([dict(chunk.counts)], "counts"))
        return out

    def check(self, arrays: Mapping[str, np.ndarray], n: int) -> bool:
        return (check_rows(arrays, n) and check_rows(arrays, 1, "counts")
                and all(s in arrays and s + "_off" in arrays for s in self.sides))


class RowStage(Stage):
    """A generating method as a resumable, signed pipeline stage over rows.

    Subclasses set ``name``, ``unit`` and ``kernel`` and define :meth:`signature` and
    :meth:`write`; :meth:`items` (default: the ``rows`` given) may compute the input rows in
    ``prepare``; :meth:`prepare_more` adds to the context.

    Parameters
    ----------
    rows : list of dict or None
        The input rows (None: :meth:`items` computes them).
    out : path
        The main output (JSON Lines or Parquet; ``-``: stdout, no metadata).
    """

    unit = "rows"
    kernel: RowKernel

    def __init__(self, rows: Optional[List[dict]], out):
        self.rows, self.out = rows, Path(out)

    def input_fingerprint(self) -> Dict[str, Any]:
        """``{"rows", "sha256"}`` of the input rows (the ``input`` of most signatures)."""
        from pysynth import signature

        return {"rows": len(self.rows), "sha256": signature.fingerprint(self.rows)}

    def items(self, workers: int, log: Callable[[str], None]) -> List[dict]:
        """The input rows, packed into the context (called once per run)."""
        return self.rows

    def context_arrays(self) -> Dict[str, np.ndarray]:
        """More arrays stored beside the packed rows (read in :meth:`RowKernel.load` / :meth:`write`)."""
        return {}

    def prepare_more(self, context: Path, rows: List[dict], workers: int, log: Callable[[str], None]) -> None:
        """Hook: more of the context (e.g. statistics over the input)."""

    def prepare(self, context: Path, workers: int, log) -> int:
        rows = self.items(workers, log)
        store.save(context / "rows", ROWS_FORMAT, 1, arrays={**pack_rows(rows), **self.context_arrays()})
        self.prepare_more(context, rows, workers, log)
        return len(rows)

    def write(self, parts: List[Dict[str, np.ndarray]], info: RunInfo) -> Dict[str, Any]:
        """Write the output(s) from the parts (in chunk order); return the summary."""
        raise NotImplementedError

    # -- helpers for write()
    @staticmethod
    def load_rows(context: Path, mmap: bool = False) -> Dict[str, np.ndarray]:
        """The arrays :meth:`prepare` stored: the packed input rows and :meth:`context_arrays`."""
        return dict(store.load(context / "rows", ROWS_FORMAT, (1,), mmap=mmap).arrays)

    @staticmethod
    def iter_rows(parts: List[Dict[str, np.ndarray]], prefix: str = "rows") -> Iterator[dict]:
        """The rows (or one side output) of every part, in input order."""
        for p in parts:
            yield from iter_rows(p, prefix)

    @staticmethod
    def counts(parts: List[Dict[str, np.ndarray]]) -> Counter:
        """The chunks' :attr:`Chunk.counts`, summed."""
        c: Counter = Counter()
        for p in parts:
            for d in iter_rows(p, "counts"):
                c.update(d)
        return c

    def meta(self, summary: Mapping[str, Any]) -> Dict[str, Any]:
        """``OUT.meta.json``: the signature, then the summary without its run-dependent keys."""
        return {**self.signature(), "summary": {k: v for k, v in summary.items() if k not in _VOLATILE}}

    def finish(self, context: Path, parts: List[Dict[str, np.ndarray]], info: RunInfo) -> Dict[str, Any]:
        summary = self.write(parts, info)
        if not _transient(self.out):  # data first, metadata last (a rerun replaces both)
            io.write_json(meta_path(self.out), self.meta(summary))
        return summary

    def run(self, *, executor="local", workers: int = 1, ray_address: Optional[str] = None, chunk_size: int = 256,
            resume: bool = True, progress: bool = True, _stop_after_chunks: Optional[int] = None) -> Dict[str, Any]:
        """Run the stage to completion (resuming an interrupted run of it) and return the summary.

        ``executor``: ``"local"``, ``"ray"`` (with ``workers`` threads and ``ray_address``) or an
        executor object (:func:`pysynth.pipelines.make_executor`). An output ``-`` (stdout), a FIFO
        or a device runs in a temporary run directory (nothing to resume, no metadata)."""
        from pysynth.pipelines.executors import make_executor

        if isinstance(executor, str):
            executor = make_executor(executor, workers=workers, ray_address=ray_address)
        t = time.perf_counter()
        kw = dict(executor=executor, chunk_size=chunk_size, progress=progress, _stop_after_chunks=_stop_after_chunks)
        if _transient(self.out):
            import tempfile

            with tempfile.TemporaryDirectory(prefix="pysynth-") as tmp:
                summary = run(self, self.out, resume=False, run_dir=os.path.join(tmp, "run.parts"), **kw)
        else:
            summary = run(self, self.out, resume=resume, **kw)
        if isinstance(summary.get("timings"), dict):
            summary["timings"]["total_s"] = round(time.perf_counter() - t, 3)
        return summary
