"""The runner: one resumable, chunked, atomic, signed pipeline loop for every method.

A :class:`Stage` is three steps:

1. ``prepare(context, workers)`` -- once per run: writes everything a chunk needs (e.g. the
   SDM index, the tokenized corpus, the keyword generator's state) into the directory
   ``context`` and returns the number of items to process.
2. ``kernel`` -- a small picklable :class:`Kernel` whose ``open(context)`` memory-maps that
   directory and whose ``run_chunk(ctx, start, stop, workers)`` is *pure*: it depends only on
   the configuration, the prepared context and the range ``[start, stop)``, and returns a dict
   of numpy arrays.  Executors (:mod:`pysynth.pipelines.executors`) run it in-process or on Ray.
3. ``finish(context, parts, info)`` -- rows in input order from the parts (concatenated in
   chunk order), the output file(s) and the summary.

The runner owns everything else: the run directory ``OUT.parts/`` (``state.json`` = the stage's
signature and the chunk size; ``context/``; ``part-NNNNNN/``, one store each), resume-or-refuse (parts of a
different run raise unless ``resume=False``), atomic part files checked on load, removal of the
temporary files a killed run left, progress, and the merge.  Since every chunk is a pure function
of its range, the output does not depend on the executor, the chunk order, the number of workers,
or on whether (and where) the run was interrupted.
"""
from __future__ import annotations

import contextlib
import errno
import json
import os
import shutil
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Tuple, Union

import numpy as np

from pysynth import store
from pysynth.io import atomic_dir, write_json
from pysynth.pipelines.progress import Progress, say

__all__ = ["Stage", "Kernel", "RunInfo", "run", "parts_dir", "STATE", "CONTEXT"]

STATE = "state.json"
CONTEXT = "context"
PART_FORMAT = "pysynth.pipelines.Part"  # store format of a part; its meta holds [start, stop)
_ITEMS = "items.json"  # written by the runner into the context: the number of items


class Kernel:
    """The chunk function of a stage, shipped to executors (keep it small: configuration only).

    ``open(context)`` loads the prepared context (memory-mapped) once per worker;
    ``run_chunk(ctx, start, stop, workers)`` returns ``{name: ndarray}`` for items
    ``[start, stop)`` and must not depend on anything else; ``check(arrays, n)`` says whether a
    part loaded from disk is whole (shapes agree with ``n`` items).

    ``chunks_ahead``: with the local executor, how many later chunks may run beside the one
    being delivered, in threads of this process (0: one at a time).  Only for a ``run_chunk``
    that is thread-safe and spends part of its time single-threaded (Python between compiled
    calls that release the GIL): the other core then works on the next chunk.
    """

    chunks_ahead = 0

    def open(self, context: Path) -> Any:
        return context

    def run_chunk(self, ctx: Any, start: int, stop: int, workers: int = 1) -> Dict[str, np.ndarray]:
        raise NotImplementedError

    def check(self, arrays: Mapping[str, np.ndarray], n: int) -> bool:
        return True


class Stage:
    """One method of the toolkit as a pipeline stage (see the module doc).

    Attributes
    ----------
    name : str
        Short label of the progress line (``"kqgm+kqf+tdf"``).
    kernel : Kernel
        The picklable chunk function.
    """

    name = "stage"
    unit = "items"
    kernel: Kernel

    def signature(self) -> Dict[str, Any]:
        """What identifies the run (configuration, input fingerprint, versions): a JSON object."""
        raise NotImplementedError

    def prepare(self, context: Path, workers: int, log: Callable[[str], None]) -> int:
        """Write what chunks need into the empty directory ``context``; return the item count."""
        raise NotImplementedError

    def describe_chunks(self, n_items: int, n_chunks: int, chunk_size: int) -> Optional[str]:
        """A line announcing the chunk loop (None: none)."""
        return None

    def finish(self, context: Path, parts: List[Dict[str, np.ndarray]], info: "RunInfo") -> Any:
        """Merge the parts (in chunk order) and write the output; its return value is :func:`run`'s."""
        raise NotImplementedError


@dataclass
class RunInfo:
    """What :meth:`Stage.finish` gets besides the parts: the item count, the executor's thread
    count, a logger, the timings so far (``prepare_s``, ``chunks_s``) and counts (chunks resumed
    from disk, computed by this run, part files found damaged and computed again)."""

    n_items: int
    workers: int
    log: Callable[[str], None]
    timings: Dict[str, float] = field(default_factory=dict)
    chunks_resumed: int = 0
    chunks_computed: int = 0
    parts_redone: int = 0
    context_reused: bool = False


def parts_dir(out: Union[str, os.PathLike]) -> Path:
    """The run directory of output ``out``: ``OUT.parts`` beside it."""
    out = Path(out)
    return out.with_name(out.name + ".parts")


def _ranges(n: int, chunk_size: int) -> List[Tuple[int, int]]:
    return [(s, min(n, s + chunk_size)) for s in range(0, n, chunk_size)]


def _part_path(run_dir: Path, c: int) -> Path:
    return run_dir / f"part-{c:06d}"


def _save_part(path: Path, start: int, stop: int, arrays: Mapping[str, np.ndarray]) -> None:
    """One part = one small store (atomic; every array's dtype, shape and CRC-32 recorded)."""
    store.save(path, PART_FORMAT, 1, arrays={k: np.asarray(v) for k, v in arrays.items()},
               meta={"start": int(start), "stop": int(stop)})


def _load_part(path: Path, start: int, stop: int, kernel: Kernel) -> Optional[Dict[str, np.ndarray]]:
    """The part's arrays, or None when it is missing, unreadable, of another range or not whole
    (then it is computed again): the store checks sizes and the CRC-32 of every array."""
    if not path.is_dir():
        return None
    try:
        st = store.load(path, PART_FORMAT, (1,), mmap=False)
    except (OSError, ValueError):  # parts are swapped into place; anything unreadable is redone
        return None
    if [st.meta.get("start"), st.meta.get("stop")] != [start, stop] or not kernel.check(st.arrays, stop - start):
        return None
    return dict(st.arrays)


def _open_run_dir(run_dir: Path, out: Optional[Path], state: Mapping[str, Any], resume: bool) -> None:
    """Resume-or-refuse: keep ``run_dir`` when it holds this run, raise when it holds another
    (unless ``resume=False``: start over), then remove temporary files of a killed run."""
    if run_dir.exists():
        old = None
        try:
            old = json.loads((run_dir / STATE).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            pass
        if resume and old is not None and old != state:
            raise ValueError(f"{run_dir} holds parts of a different run (other inputs, configuration, "
                             f"version or chunk_size); delete it or pass resume=False (--restart)")
        if not resume or old is None:
            shutil.rmtree(run_dir)
    run_dir.mkdir(parents=True, exist_ok=True)
    # temporary files/folders of a killed run (ours by name: .OUT.*.tmp beside the output, and
    # .*.tmp in the run directory: parts, the context being prepared)
    stale = list(run_dir.glob(".*.tmp"))
    if out is not None:
        stale += list(out.parent.glob(f".{out.name}.*.tmp"))
    for p in stale:
        if p.is_dir():
            shutil.rmtree(p, ignore_errors=True)
        else:
            p.unlink(missing_ok=True)
    write_json(run_dir / STATE, state)


@contextlib.contextmanager
def _exclusive(run_dir: Path):
    """Hold the lock of ``run_dir``: a second run writing the same output is refused, never
    interleaved (it would resume the same parts, or ``--restart`` would delete them under the
    first). ``flock`` on ``.NAME.lock`` beside the run directory: the kernel releases it when the
    holder exits, ``kill -9`` included, so a killed run never leaves a stale lock. A finished run
    (its run directory gone) removes the file while it still holds the lock; a run that locked a
    file just removed that way (the path now names another file, or none) locks the path again,
    so two runs never hold two different files of one path."""
    try:
        import fcntl
    except ImportError:  # not POSIX: no lock
        yield
        return
    run_dir.parent.mkdir(parents=True, exist_ok=True)
    path = run_dir.parent / f".{run_dir.name}.lock"
    while True:
        fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "?"
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise
            raise RuntimeError(f"{run_dir.parent / run_dir.name.removesuffix('.parts')} is being written by "
                               f"another run (pid {holder}); wait for it to finish, or choose another output") from None
        try:
            same = os.path.samestat(os.fstat(fd), os.stat(path))
        except FileNotFoundError:
            same = False
        if same:
            break
        os.close(fd)  # a finished run removed the file we locked: lock the path's file again
    try:
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        yield
    finally:
        if not run_dir.exists():  # finished (parts removed): no .lock file left behind
            with contextlib.suppress(OSError):
                os.unlink(path)
        os.close(fd)  # releases the lock


def _no_space(exc: OSError, run_dir: Path, what: str) -> OSError:
    """ENOSPC/EDQUOT as one clear error that says the run is resumable."""
    return OSError(exc.errno, f"{exc.strerror} while {what}; free some space and run the same command again: "
                              f"the chunks already done in {run_dir} are kept and the run resumes there",
                   exc.filename)


def _context(stage: Stage, run_dir: Path, workers: int, log) -> Tuple[Path, int, bool]:
    """Prepare the context once per run (atomically); a resumed run reuses it."""
    ctx = run_dir / CONTEXT
    try:
        n = json.loads((ctx / _ITEMS).read_text(encoding="utf-8"))["items"]
        if isinstance(n, int) and n >= 0:
            return ctx, n, True
    except (OSError, ValueError, KeyError, TypeError):
        pass
    with atomic_dir(ctx) as tmp:
        n = int(stage.prepare(tmp, workers, log))
        (tmp / _ITEMS).write_text(json.dumps({"items": n}) + "\n", encoding="utf-8")
    return ctx, n, False


def run(stage: Stage, out: Union[str, os.PathLike], *, executor=None, chunk_size: int = 20_000,
        resume: bool = True, keep_parts: bool = False, progress: bool = True,
        run_dir: Optional[Union[str, os.PathLike]] = None, _stop_after_chunks: Optional[int] = None) -> Any:
    """Run ``stage`` to completion, resuming the chunks an earlier run of it finished.

    Parameters
    ----------
    stage : Stage
    out : path
        The output the stage writes; the run directory is ``OUT.parts`` unless ``run_dir``.
    executor : LocalExecutor, RayExecutor or None
        Where chunks run (default: in-process, 1 thread); the output does not depend on it.
    chunk_size : int
        Items per resumable chunk (recorded in ``state.json``: a rerun must use the same).
    resume : bool
        Continue a run directory of the same run (a different run raises ValueError);
        ``False`` discards it.
    keep_parts : bool
        Keep the run directory after ``finish``.
    progress : bool
        Stage lines and a progress bar (terminal) or periodic lines (otherwise) on stderr.

    Returns
    -------
    Whatever ``stage.finish`` returns.
    """
    from pysynth.pipelines.executors import LocalExecutor

    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        raise ValueError(f"chunk_size must be an integer >= 1, got {chunk_size!r}")
    if not isinstance(stage, Stage):
        raise TypeError(f"stage must be a pysynth.pipelines.Stage, got {type(stage).__name__}")
    executor = executor if executor is not None else LocalExecutor()
    if _stop_after_chunks is None and os.environ.get("PYSYNTH_TEST_STOP_AFTER_CHUNKS"):
        # the same test hook for commands run as subprocesses (die like ``kill -9`` after N parts)
        _stop_after_chunks = int(os.environ["PYSYNTH_TEST_STOP_AFTER_CHUNKS"])
    out = Path(out)
    from pysynth.io import is_device

    if run_dir is None and is_device(out):
        # a device or FIFO output (/dev/null, /dev/full) is written once: its run directory is a temporary
        # one, removed at the end whatever happens, never /dev/OUT.parts (issue 27 probe)
        import shutil
        import tempfile

        tmp = Path(tempfile.mkdtemp(prefix="pysynth-run-"))
        try:
            return run(stage, out, executor=executor, chunk_size=chunk_size, resume=False, keep_parts=False,
                       progress=progress, run_dir=tmp / "run.parts", _stop_after_chunks=_stop_after_chunks)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)
    run_dir = Path(run_dir) if run_dir is not None else parts_dir(out)
    log = (lambda msg: say(msg)) if progress else (lambda msg: None)
    timings: Dict[str, float] = {}
    state = {"signature": stage.signature(), "chunk_size": int(chunk_size)}
    with _exclusive(run_dir):
        try:
            return _run_locked(stage, out, executor, chunk_size, resume, keep_parts, progress, run_dir, log,
                               timings, state, _stop_after_chunks)
        except OSError as exc:
            if exc.errno in (errno.ENOSPC, getattr(errno, "EDQUOT", errno.ENOSPC)):
                raise _no_space(exc, run_dir, f"writing {exc.filename or out}") from None
            raise


def _run_locked(stage, out, executor, chunk_size, resume, keep_parts, progress, run_dir, log, timings, state,
                _stop_after_chunks):
    """:func:`run` once the run directory is ours."""
    _open_run_dir(run_dir, out, state, resume)

    t = time.perf_counter()
    ctx, n, reused = _context(stage, run_dir, executor.workers, log)
    if reused:
        log(f"[resume] prepared context of an earlier run of this input and configuration: {ctx}")
    timings["prepare_s"] = time.perf_counter() - t
    ranges = _ranges(n, int(chunk_size))
    info = RunInfo(n, executor.workers, log, timings, context_reused=reused)

    t = time.perf_counter()
    line = stage.describe_chunks(n, len(ranges), int(chunk_size))
    if line:
        log(line)
    parts: List[Optional[Dict[str, np.ndarray]]] = [
        _load_part(_part_path(run_dir, c), a, b, stage.kernel) for c, (a, b) in enumerate(ranges)]
    todo = [c for c, p in enumerate(parts) if p is None]
    info.chunks_resumed = len(ranges) - len(todo)
    info.parts_redone = sum(_part_path(run_dir, c).exists() for c in todo)
    if info.parts_redone:
        log(f"[resume] {info.parts_redone} part file(s) unreadable, damaged or of another range: computed again")
    if info.chunks_resumed:
        log(f"[resume] {info.chunks_resumed} of {len(ranges)} chunks already done in {run_dir}")
    bar = Progress(n, progress, stage.name, unit=stage.unit,
                   initial=sum(b - a for c, (a, b) in enumerate(ranges) if parts[c] is not None))
    done = info.chunks_resumed
    try:
        if _stop_after_chunks is not None and done >= _stop_after_chunks and todo:
            os._exit(75)
        for c, arrays, seconds in executor.map(stage.kernel, ctx, [(c, *ranges[c]) for c in todo]):
            a, b = ranges[c]
            _save_part(_part_path(run_dir, c), a, b, arrays)
            parts[c] = {k: np.asarray(v) for k, v in arrays.items()}
            done += 1
            info.chunks_computed += 1
            bar.update(b - a, seconds)
            if _stop_after_chunks is not None and done >= _stop_after_chunks:
                bar.close()
                os._exit(75)  # test hook: die like a killed process, right after a part landed
    finally:
        bar.close()
    timings["chunks_s"] = time.perf_counter() - t
    result = stage.finish(ctx, parts, info)  # type: ignore[arg-type]
    if not keep_parts:
        shutil.rmtree(run_dir, ignore_errors=True)
    return result
