"""What every command shares: the parser class, argument types, ``--in``/``--out`` helpers, model
resolution, the deprecated ``--model`` aliases, and the one error boundary (:func:`run`).

Exit status: 0 done, 1 the run failed (the library raised), 2 usage error (argparse, a bad flag
value, a missing input file), 130 interrupted, 141 stdout closed early (``pysynth ... | head``).
Every error is one stderr line ``pysynth: error: <message>``; ``PYSYNTH_DEBUG=1`` re-raises.
"""
from __future__ import annotations

import argparse
import contextlib
import gzip
import math
import os
import stat
import sys
import zlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Callable

from pysynth.io import atomic_open

PROG = "pysynth"


class UsageError(Exception):
    """Bad command-line input: exit status 2."""


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage dump): they become :class:`UsageError`."""

    def error(self, message: str):  # type: ignore[override]
        raise UsageError(message)


def say(msg: str) -> None:
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


def run(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> int:
    """Parse ``argv``, run the command, map every outcome to an exit status (see the module doc)."""
    debug = os.environ.get("PYSYNTH_DEBUG", "") not in ("", "0")
    try:
        args = parser.parse_args(argv)
        apply_model_alias(args)
        return int(args.func(args) or 0)
    except SystemExit as exc:  # --help, --version, or a library calling sys.exit
        code = exc.code
        if code is None or isinstance(code, int):
            return code or 0
        msg = str(code)
        say(f"error: {msg[len(PROG) + 2:] if msg.startswith(PROG + ': ') else msg}")
        return 1
    except UsageError as exc:
        if debug:
            raise
        say(f"error: {exc}")
        return 2
    except KeyboardInterrupt:
        if debug:
            raise
        say("error: interrupted")
        return 130
    except BrokenPipeError:
        _silence_stdout()  # the reader went away (| head): no message, no flush error at exit
        return 141
    except (ValueError, TypeError, OSError, ImportError, LookupError, RuntimeError) as exc:
        if debug:
            raise
        say(f"error: {_one_line(exc)}")
        return 1
    except Exception as exc:  # the one boundary: even a bug gets one line, not a traceback
        if debug:
            raise
        say(f"error: internal error: {type(exc).__name__}: {_one_line(exc)} "
            "(run with PYSYNTH_DEBUG=1 for the traceback)")
        return 1


def _one_line(exc: BaseException) -> str:
    if isinstance(exc, OSError) and exc.strerror and exc.filename is not None:
        msg = f"{exc.filename}: {exc.strerror}"
    elif isinstance(exc, KeyError):
        msg = f"missing {exc}"
    else:
        msg = str(exc) or type(exc).__name__
    return " ".join(msg.split())


def _silence_stdout() -> None:
    with contextlib.suppress(OSError, ValueError, AttributeError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())


# ------------------------------------------------------------------------- argument types

def positive_int(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {s!r}") from None
    if not 1 <= v <= 2**31 - 1:
        raise argparse.ArgumentTypeError(f"must be an integer in [1, 2**31 - 1], got {s!r}")
    return v


def workers(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        v = 0
    if v != -1 and v < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1 or -1 (all cores), got {s!r}")
    return v


def float_in(lo: float, lo_open: bool, hi: float | None, what: str) -> Callable[[str], float]:
    def parse(s: str) -> float:
        try:
            v = float(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what}, got {s!r}") from None
        if not (math.isfinite(v) and (v > lo if lo_open else v >= lo) and (hi is None or v <= hi)):
            raise argparse.ArgumentTypeError(f"must be {what}, got {s!r}")
        return v

    return parse


def sdm_weights(s: str) -> tuple[float, float, float]:
    what = "3 comma-separated numbers >= 0, not all 0 (unigram,ordered,unordered), e.g. 0.85,0.10,0.05"
    try:
        w = tuple(float(p) for p in s.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}; got {s!r}") from None
    if len(w) != 3 or not all(math.isfinite(x) and x >= 0 for x in w) or sum(w) <= 0:
        raise argparse.ArgumentTypeError(f"must be {what}; got {s!r}")
    return w  # type: ignore[return-value]


def input_file(s: str) -> str:
    """An existing file, or ``-`` (stdin)."""
    if s != "-" and not os.path.exists(s):
        raise argparse.ArgumentTypeError(f"no such file {s!r}")
    if s != "-" and os.path.isdir(s):
        raise argparse.ArgumentTypeError(f"{s!r} is a directory, not a file")
    return s


def input_dir(what: str) -> Callable[[str], str]:
    def parse(s: str) -> str:
        if not os.path.isdir(s):
            raise argparse.ArgumentTypeError(f"no such {what} directory {s!r}")
        return s

    return parse


def add_in(p: argparse.ArgumentParser, *aliases: str, required: bool = True, help: str, **kw) -> None:
    """``--in`` (``-`` reads stdin), with old spellings as ``aliases``."""
    p.add_argument("--in", *aliases, dest="inp", required=required, type=input_file, metavar="IN",
                   help=f"{help}; - reads stdin", **kw)


def add_min_wellformed(p: argparse.ArgumentParser) -> None:
    """``--min-wellformed P``, the question-quality filter of every generating command
    (:func:`pysynth.quality.filter_rows`)."""
    p.add_argument("--min-wellformed", type=float_in(0, False, 1, "a probability in [0, 1]"), default=None,
                   metavar="P", help="drop generated questions whose well-formedness probability (pysynth.quality, "
                                     "Faruqui & Das 2018) is below P; rows get a 'wellformed' list and a 'dropped' count")


def add_workers(p: argparse.ArgumentParser) -> None:
    p.add_argument("--workers", type=workers, default=1, help="threads (-1: all cores); results do not depend on it")


# ------------------------------------------------------------------------- rows in and out

def read_rows(path: str, flag: str = "--in") -> Iterator[Mapping]:
    """Rows of ``path`` (:func:`pysynth.io.read_rows`), with unreadable data reported as
    ValueError naming ``flag`` and the file (undecodable text, a corrupt gzip member)."""
    from pysynth.io import read_rows as _read_rows

    name = "<stdin>" if path == "-" else path
    try:
        yield from _read_rows(path, flag)
    except UnicodeDecodeError as exc:
        raise ValueError(f"{flag} {name!r}: not UTF-8 text ({exc.reason})") from None
    except (EOFError, zlib.error, gzip.BadGzipFile) as exc:
        raise ValueError(f"{flag} {name!r}: cannot read (corrupt gzip?): {exc}") from None


def check_output(path: str, flag: str = "--out") -> None:
    """Refuse an ``--out`` file that is a directory before any work is done."""
    if path != "-" and os.path.isdir(path):
        raise UsageError(f"argument {flag}: {path!r} is a directory")


def check_out_dir(path: str, flag: str = "--out") -> None:
    """An output directory may be new, empty, or a pysynth store (replaced); never other data."""
    from pysynth import store

    p = Path(path)
    if p.exists() and not p.is_dir():
        raise UsageError(f"argument {flag}: {path!r} exists and is not a directory")
    if p.is_dir() and any(p.iterdir()) and not store.is_store(p):
        raise UsageError(f"argument {flag}: {path!r} is a non-empty directory that holds no pysynth store; "
                         "choose a new path (an existing store there would be replaced)")


@contextlib.contextmanager
def output(path: str, flag: str = "--out") -> Iterator[IO[bytes]]:
    """A binary file for ``--out``: ``-`` is stdout; a FIFO or device is written directly; a
    regular file is written beside its target (through a symlink) and renamed into place when
    the block succeeds, so a failed run leaves no partial file.  ``.gz``: gzip-compressed."""
    if path == "-":
        yield sys.stdout.buffer
        sys.stdout.buffer.flush()
        return
    check_output(path, flag)
    try:
        st: os.stat_result | None = os.stat(path)
    except OSError:
        st = None
    if st is not None and not stat.S_ISREG(st.st_mode):
        with open(path, "wb") as f:
            yield f
        return
    target = Path(os.path.realpath(path))
    with atomic_open(target) as raw:
        if target.suffix == ".gz":
            with gzip.GzipFile(fileobj=raw, mode="wb", compresslevel=6, mtime=0) as gz:
                yield gz
        else:
            yield raw


def read_lines(path: str, flag: str) -> list:
    """Lines of a UTF-8 text file (``-``: stdin), without their newlines."""
    if path == "-":
        return [line.removesuffix("\n") for line in sys.stdin]
    try:
        with open(path, encoding="utf-8", newline="") as f:
            return [line.removesuffix("\n") for line in f]
    except UnicodeDecodeError as exc:
        raise ValueError(f"{flag} {path!r}: not UTF-8 text ({exc.reason})") from None


# ------------------------------------------------------------------------- models

def resolve_model(value: str | None, default: str | None = None, flag: str = "--model"):
    """:func:`pysynth.models.registry.resolve`, a bad value being a usage error."""
    from pysynth.models.registry import resolve

    try:
        return resolve(value, default=default, what=flag)
    except (ValueError, TypeError) as exc:
        raise UsageError(f"argument {exc}") from None


def add_model_alias(p: argparse.ArgumentParser, dest: str, flag: str, choices: Sequence[str]) -> None:
    """Accept the old ``--model X`` meaning ``flag X`` (hidden, deprecated); see
    :func:`apply_model_alias`.  ``--model`` now always names a model."""
    p.add_argument("--model", dest="_old_model", default=None, help=argparse.SUPPRESS)
    p.set_defaults(_model_alias=(dest, flag, tuple(choices)))


def apply_model_alias(args: argparse.Namespace) -> None:
    old = getattr(args, "_old_model", None)
    alias = getattr(args, "_model_alias", None)
    if old is None or alias is None:
        return
    dest, flag, choices = alias
    if old not in choices:
        raise UsageError(f"argument --model: this command takes no model; did you mean {flag} "
                         f"{{{','.join(choices)}}}? (got {old!r})")
    new = getattr(args, dest)
    if new is not None and new != old:
        raise UsageError(f"argument --model: conflicts with {flag} {new} (--model {old} is the deprecated "
                         f"spelling of {flag} {old})")
    say(f"warning: --model {old} is deprecated here; use {flag} {old}")
    setattr(args, dest, old)
