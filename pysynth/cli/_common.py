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
import logging
import math
import os
import stat
import sys
import zlib
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import IO, Callable

from pysynth import _validate as V

PROG = "pysynth"


class UsageError(Exception):
    """Bad command-line input: exit status 2."""


class HelpFormatter(argparse.HelpFormatter):
    """Leaves deprecated spellings (see :func:`deprecate`) out of ``--help``."""

    def _format_action_invocation(self, action):
        old = getattr(action, "deprecated", None)
        if not old:
            return super()._format_action_invocation(action)
        strings = action.option_strings
        action.option_strings = [s for s in strings if s not in old]
        try:
            return super()._format_action_invocation(action)
        finally:
            action.option_strings = strings


class Parser(argparse.ArgumentParser):
    """argparse with one-line errors (no usage dump): they become :class:`UsageError`."""

    def __init__(self, *args, **kw):
        kw.setdefault("formatter_class", HelpFormatter)
        super().__init__(*args, **kw)

    def error(self, message: str):  # type: ignore[override]
        for a in self._actions:  # "required: --in/--contexts" names the current spelling only
            old = getattr(a, "deprecated", None)
            if old:
                message = message.replace("/".join(a.option_strings),
                                          "/".join(s for s in a.option_strings if s not in old))
        raise UsageError(message)

    def _get_value(self, action, arg_string):
        # one place for every numeric flag: a plain ``type=float`` must be finite (``nan``/``inf`` are
        # refused, not silently turned into "every candidate rejected"), and no message echoes a huge value
        if action.type is float:
            try:
                v = float(arg_string)
            except ValueError:
                v = math.nan
            if not math.isfinite(v):
                raise argparse.ArgumentError(action, f"must be a finite number, got {V.clip(arg_string)}")
            return v
        if action.type is int:
            try:
                v = int(arg_string)
            except ValueError:
                raise argparse.ArgumentError(action, f"must be an integer, got {V.clip(arg_string)}") from None
            if not -2**63 <= v < 2**63:  # a plain int flag reaches C as a 64-bit integer (OverflowError beyond)
                raise argparse.ArgumentError(action, f"must be an integer in [-2**63, 2**63), got {V.clip(arg_string)}")
            return v
        return super()._get_value(action, arg_string)


def deprecate(action: argparse.Action, **old: str) -> argparse.Action:
    """Mark option strings of ``action`` as deprecated spellings (kept for one release).

    ``old`` maps each old spelling (``--beams``; the key spelt with ``_`` for ``-``) to what to write
    instead (``--beam``); using it prints one ``pysynth: warning:`` line and works as before.  The
    old strings must already be option strings of ``action`` (``p.add_argument("--beam", "--beams")``)."""
    names = {k if k.startswith("-") else "--" + k.replace("_", "-"): v for k, v in old.items()}
    missing = set(names) - set(action.option_strings)
    if missing:
        raise ValueError(f"deprecate: {sorted(missing)} are not option strings of {action.option_strings}")
    base = type(action)
    if not getattr(base, "_warns", False):
        action.__class__ = type(base.__name__, (_Warns, base), {})
    action.deprecated = {**getattr(action, "deprecated", {}), **names}  # type: ignore[attr-defined]
    return action


class _Warns:
    _warns = True

    def __call__(self, parser, namespace, values, option_string=None):
        new = self.deprecated.get(option_string)  # type: ignore[attr-defined]
        if new is not None:
            say(f"warning: {option_string} is deprecated; use {new}")
        super().__call__(parser, namespace, values, option_string)  # type: ignore[misc]


def alias(p: argparse.ArgumentParser, old: str, new: str, dest: str, const) -> None:
    """A hidden deprecated flag ``old`` that stores ``const`` in ``dest`` (``--hybrid`` for
    ``--retrieval hybrid``)."""
    deprecate(p.add_argument(old, dest=dest, action="store_const", const=const, default=argparse.SUPPRESS,
                             help=argparse.SUPPRESS), **{old: new})


def note_deprecated(p: argparse.ArgumentParser, old: str, new: str) -> None:
    """Record an old spelling that the command itself recognises (for ``docs/cli.md``)."""
    p.deprecated_notes = [*getattr(p, "deprecated_notes", []), (old, new)]  # type: ignore[attr-defined]


# Renamed verbs and the verb-less ``pysynth paraphrase``: (method, old verb or None) -> new verb.
RENAMED_VERBS = {("paraphrase", None): "generate", ("dup", "eval"): "evaluate", ("mqr", "table6"): "evaluate"}


def upgrade_argv(argv: Sequence[str], verbs: Mapping[str, Sequence[str]]) -> list:
    """``argv`` with a deprecated verb spelling replaced (and one warning line on stderr).

    ``verbs``: each method's current verbs, so that ``pysynth paraphrase --in F`` (no verb) becomes
    ``pysynth paraphrase generate --in F`` while ``pysynth paraphrase --help`` lists the verbs."""
    argv = list(argv)
    if len(argv) < 2 or argv[0] not in verbs:
        return argv
    method, second = argv[0], argv[1]
    if (method, second) in RENAMED_VERBS:
        new = RENAMED_VERBS[method, second]
        say(f"warning: `pysynth {method} {second}` is deprecated; use `pysynth {method} {new}`")
        return [method, new, *argv[2:]]
    if (method, None) in RENAMED_VERBS and second.startswith("-") and second not in ("-h", "--help"):
        new = RENAMED_VERBS[method, None]
        say(f"warning: `pysynth {method}` without a verb is deprecated; use `pysynth {method} {new}`")
        return [method, new, *argv[1:]]
    return argv


def deprecated_module(module: str, argv: Sequence[str] | None, prefix: Sequence[str],
                      verbs: Mapping[str, str] | None = None) -> int:
    """The old ``python -m MODULE`` entry point of a trainer: a note, then the CLI.

    ``prefix``: the command it now is (``["quality", "train"]``); ``verbs`` maps the module's own
    first argument to the verb (``{"span": "train-span"}``) when it had subcommands."""
    from pysynth.cli import main

    argv = list(sys.argv[1:] if argv is None else argv)
    if verbs is not None and argv and argv[0] in verbs:
        prefix, argv = [*prefix, verbs[argv[0]]], argv[1:]
    say(f"warning: python -m {module} is deprecated; use `pysynth {' '.join(prefix)}`")
    return main([*prefix, *argv])


def say(msg: str) -> None:
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


class _StderrHandler(logging.StreamHandler):
    """A handler on the current ``sys.stderr`` (looked up at each record: tests swap it)."""

    def __init__(self):
        super().__init__(sys.stderr)

    @property
    def stream(self):  # type: ignore[override]
        return sys.stderr

    @stream.setter
    def stream(self, value):
        pass


class _Formatter(logging.Formatter):
    def format(self, record: logging.LogRecord) -> str:
        msg = super().format(record)
        if record.levelno >= logging.WARNING:  # the CLI's own warning spelling
            return f"{PROG}: {record.levelname.lower()}: {msg}"
        return msg


def configure_logging(verbose: int = 0, quiet: bool = False) -> Callable[[], None]:
    """The CLI's logging: one stderr handler on the root logger; pysynth's records at INFO
    (progress and stage lines; ``-q``: warnings and errors only; ``-v``: DEBUG); third-party
    libraries' warnings only unless ``-v``: this hides the "PyTorch was not found" advice of
    transformers (only its tokenizers are used without torch) and faiss's loader lines (which CPU
    build it picked).  Returns a function that restores the previous configuration."""
    root, log = logging.getLogger(), logging.getLogger("pysynth")
    before = (root.level, log.level, list(root.handlers), os.environ.get("TRANSFORMERS_NO_ADVISORY_WARNINGS"))
    for h in [h for h in root.handlers if isinstance(h, _StderrHandler)]:
        root.removeHandler(h)
    h = _StderrHandler()
    h.setFormatter(_Formatter("%(message)s"))
    root.addHandler(h)
    root.setLevel(logging.INFO if verbose else logging.WARNING)
    log.setLevel(logging.WARNING if quiet else (logging.DEBUG if verbose else logging.INFO))
    if not verbose:
        os.environ["TRANSFORMERS_NO_ADVISORY_WARNINGS"] = "1"

    def restore() -> None:
        root.removeHandler(h)
        for old in before[2]:
            if old not in root.handlers:
                root.addHandler(old)
        root.setLevel(before[0])
        log.setLevel(before[1])
        if before[3] is None:
            os.environ.pop("TRANSFORMERS_NO_ADVISORY_WARNINGS", None)
        else:
            os.environ["TRANSFORMERS_NO_ADVISORY_WARNINGS"] = before[3]

    return restore


def run(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> int:
    """Parse ``argv``, run the command, map every outcome to an exit status (see the module doc)."""
    debug = os.environ.get("PYSYNTH_DEBUG", "") not in ("", "0")
    restore = None
    try:
        args = parser.parse_args(argv)
        restore = configure_logging(getattr(args, "verbose", 0), getattr(args, "quiet", False))
        apply_model_alias(args)
        check_args(args)
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
        say(f"error: {error_line(exc)}")
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
        say(f"error: {V.clip_message(_one_line(exc))}")
        return 1
    except Exception as exc:  # the one boundary: even a bug gets one line, not a traceback
        if debug:
            raise
        say(f"error: internal error: {type(exc).__name__}: {V.clip_message(_one_line(exc))} "
            "(run with PYSYNTH_DEBUG=1 for the traceback)")
        return 1
    finally:
        if restore is not None:  # main() called in a program leaves its logging as it was
            restore()


def error_line(exc: BaseException) -> str:
    """A usage error's message as the one line the CLI prints: white space (argv may hold newlines)
    collapsed, huge words clipped (:func:`pysynth._validate.clip_message`)."""
    return V.clip_message(" ".join(str(exc).split()))


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

def check_args(args: argparse.Namespace) -> None:
    """The checks that involve several flags, run once for every command after parsing: the
    search fits (:func:`pysynth._validate.search_budget`: ``--beam`` x ``--batch-size``, and
    ``--groups`` divides ``--beam`` when the search is diverse) and no two outputs are one file
    (:func:`pysynth._validate.distinct_outputs`)."""
    beam = getattr(args, "beam", None)
    if isinstance(beam, int):
        diverse = getattr(args, "diverse", False) is True or getattr(args, "decode", None) == "dbs"
        batch = getattr(args, "batch_size", None)
        groups = getattr(args, "groups", None) if diverse else None
        try:
            V.search_budget(beam, batch if isinstance(batch, int) else None,
                            groups if isinstance(groups, int) else None, names=("--beam", "--batch-size", "--groups"))
        except ValueError as exc:
            raise UsageError(str(exc)) from None
    outs = [(f"--{d.replace('_', '-')}", getattr(args, d, None)) for d in ("out", "squad_out", "candidates_out")]
    try:
        V.distinct_outputs([(f, o) for f, o in outs if isinstance(o, str)])
    except ValueError as exc:
        raise UsageError(str(exc)) from None


def positive_int(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {V.clip(s)}") from None
    if not 1 <= v <= 2**31 - 1:
        raise argparse.ArgumentTypeError(f"must be an integer in [1, 2**31 - 1], got {V.clip(s)}")
    return v


def int_in(lo: int, hi: int, what: str) -> Callable[[str], int]:
    """An integer flag in ``lo .. hi`` (``what`` says what it counts, in the message)."""
    def parse(s: str) -> int:
        try:
            v = int(s)
        except ValueError:
            v = lo - 1
        if not lo <= v <= hi:
            raise argparse.ArgumentTypeError(f"must be an integer in {lo:,}..{hi:,} ({what}), got {V.clip(s)}")
        return v

    return parse


def beam_size(s: str) -> int:
    """``--beam``: 1 .. :data:`pysynth._validate.MAX_BEAM`."""
    try:
        return V.beam(int(s), "beam")
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer in 1..{V.MAX_BEAM} (hypotheses kept per input), "
                                         f"got {V.clip(s)}") from None


def _max_threads() -> int:
    return V.max_threads()


def workers(s: str) -> int:
    """``--workers``: -1 (all cores) or 1 .. 4 x the cores."""
    try:
        v = int(s)
    except ValueError:
        v = 0
    if v != -1 and not 1 <= v <= _max_threads():
        raise argparse.ArgumentTypeError(f"must be an integer in 1..{_max_threads()} (4 x the cores) or -1 "
                                         f"(all cores), got {V.clip(s)}")
    return v


def threads(s: str) -> int:
    """``--threads`` (a runtime's threads): 0 (the runtime's default), -1 (all cores, returned as
    the core count) or 1 .. 4 x the cores."""
    try:
        return V.threads(int(s))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer in 1..{_max_threads()} (4 x the cores), 0 (the "
                                         f"runtime's default) or -1 (all cores), got {V.clip(s)}") from None


def count(s: str) -> int:
    """An integer >= 0."""
    try:
        v = int(s)
    except ValueError:
        v = -1
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {V.clip(s)}")
    return v


def float_in(lo: float, lo_open: bool, hi: float | None, what: str) -> Callable[[str], float]:
    def parse(s: str) -> float:
        try:
            v = float(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what}, got {V.clip(s)}") from None
        if not (math.isfinite(v) and (v > lo if lo_open else v >= lo) and (hi is None or v <= hi)):
            raise argparse.ArgumentTypeError(f"must be {what}, got {V.clip(s)}")
        return v

    return parse


def sdm_weights(s: str) -> tuple[float, float, float]:
    what = "3 comma-separated numbers >= 0, not all 0 (unigram,ordered,unordered), e.g. 0.85,0.10,0.05"
    try:
        w = tuple(float(p) for p in s.split(","))
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}; got {V.clip(s)}") from None
    if len(w) != 3 or not all(math.isfinite(x) and x >= 0 for x in w) or sum(w) <= 0:
        raise argparse.ArgumentTypeError(f"must be {what}; got {V.clip(s)}")
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


# ------------------------------------------------------------------------- shared argument groups

def add_in(p: argparse.ArgumentParser, *aliases: str, required: bool = True, help: str, type=input_file,
           stdin: bool = True, **kw) -> argparse.Action:
    """``--in``, where every command reads its rows (``-`` reads stdin); ``aliases``: old spellings,
    accepted with a deprecation note."""
    a = p.add_argument("--in", *aliases, dest="inp", required=required, type=type, metavar=kw.pop("metavar", "IN"),
                       help=f"{help}; - reads stdin" if stdin else help, **kw)
    return deprecate(a, **{o: "--in" for o in aliases}) if aliases else a


def add_out(p: argparse.ArgumentParser, help: str, *, required: bool = True, **kw) -> argparse.Action:
    """``--out``, where every command writes."""
    return p.add_argument("--out", required=required, help=help, **kw)


def add_data_dir(p: argparse.ArgumentParser) -> None:
    """``--data DIR``: the shared data folder (``--shared``: deprecated)."""
    deprecate(p.add_argument("--data", "--shared", dest="data", default=None, type=input_dir("data"), metavar="DIR",
                             help="shared data folder (default: ../shared/data or $PYSYNTH_DATA)"), shared="--data")


def add_model(p: argparse.ArgumentParser, default: str | None, what: str, **kw) -> argparse.Action:
    """``--model``: a model only (a shipped name or a folder), never a method."""
    note = f"default: the shipped {default}" if default else kw.pop("default_note", "required")
    return p.add_argument("--model", default=kw.pop("value", None), metavar=kw.pop("metavar", "MODEL"),
                          help=f"{what} ({note})", **kw)


def add_decoding(p: argparse.ArgumentParser, *, beam: int | None = None, beam_aliases: Sequence[str] = (),
                 groups: int | None = None, diversity: float | None = None, sampling: bool = False,
                 seed: bool = True) -> None:
    """The decoding flags, one spelling each: ``--beam`` (old: ``--beams``, ``--beam-size``),
    ``--groups``, ``--diversity``, ``--top-k``/``--top-p`` (sampling only) and ``--seed``."""
    g = p.add_argument_group("decoding")
    if beam is not None:
        a = g.add_argument("--beam", *beam_aliases, type=beam_size, default=beam, metavar="B",
                           help=f"beam size: hypotheses kept per input, at most {V.MAX_BEAM} ({beam})")
        if beam_aliases:
            deprecate(a, **{o: "--beam" for o in beam_aliases})
    if groups is not None:
        g.add_argument("--groups", type=positive_int, default=groups, metavar="G",
                       help=f"diverse beam search groups ({groups})")
    if diversity is not None:
        g.add_argument("--diversity", type=float_in(0, False, None, "a number >= 0"), default=diversity,
                       metavar="LAMBDA", help=f"diverse beam search: Hamming diversity penalty ({diversity})")
    if sampling:
        g.add_argument("--top-k", type=count, default=0, metavar="K", help="sampling: the K most likely tokens (0: off)")
        g.add_argument("--top-p", type=float_in(0, True, 1, "a probability in (0, 1]"), default=1.0, metavar="P",
                       help="sampling: nucleus mass (1: off)")
    if seed:
        g.add_argument("--seed", type=int, default=0, help="random seed (0)")


BACKENDS = ("auto", "onnx", "torch")


def add_backend(p: argparse.ArgumentParser) -> None:
    """``--backend auto|onnx|torch`` (default auto: see :func:`backend`)."""
    p.add_argument("--backend", choices=BACKENDS, default="auto",
                   help="auto (default): onnx when onnxruntime is installed (and the model has an ONNX export), "
                        "else torch")


def backend(value: str, model: str | os.PathLike | None = None) -> str:
    """``auto`` -> ``onnx`` when onnxruntime is installed (and ``model``, a model folder, has an
    ONNX export: an ``onnx/`` store beside it, or is one), else ``torch``; other values unchanged."""
    if value != "auto":
        return value
    import importlib.util

    if importlib.util.find_spec("onnxruntime") is None:
        return "torch"
    if model is None:
        return "onnx"
    from pysynth.decoding.ort import ONNX_FORMAT
    from pysynth.store import format_of

    d = Path(model)
    try:
        exported = format_of(d) == ONNX_FORMAT
    except (OSError, ValueError):
        exported = False
    # a model store with its export in onnx/, or a training run's model/ beside the run's onnx/
    return "onnx" if exported or (d / "onnx").is_dir() or (d.name == "model" and (d.parent / "onnx").is_dir()) \
        else "torch"


def add_threads(p: argparse.ArgumentParser, default: int = 0, help: str = "onnxruntime / torch threads") -> None:
    """``--threads N`` (validated by :func:`threads`)."""
    p.add_argument("--threads", type=threads, default=default, metavar="N",
                   help=f"{help} (default {default}; 0: the runtime's default, -1: all cores)")


def add_job(p: argparse.ArgumentParser, chunk_size: int, what: str = "rows") -> None:
    """A resumable job's flags: ``--chunk-size``, ``--restart``, ``--executor``, ``--ray-address``."""
    from pysynth.pipelines import add_executor_arguments

    g = p.add_argument_group("job (resumable, signed, atomic)")
    g.add_argument("--chunk-size", dest="chunk_size", type=positive_int, default=chunk_size,
                   help=f"{what} per resumable chunk ({chunk_size:,})")
    g.add_argument("--restart", action="store_true", help="discard finished chunks of an earlier run")
    add_executor_arguments(g)


def add_min_wellformed(p: argparse.ArgumentParser) -> None:
    """``--min-wellformed P``, the question-quality filter of every generating command
    (:func:`pysynth.quality.filter_rows`)."""
    p.add_argument("--min-wellformed", type=float_in(0, False, 1, "a probability in [0, 1]"), default=None,
                   metavar="P", help="drop generated questions whose well-formedness probability (pysynth.quality, "
                                     "Faruqui & Das 2018) is below P; rows get a 'wellformed' list and a 'dropped' count")


def min_similarity(s: str) -> float | None:
    """``--min-similarity``: a cosine in [-1, 1], or ``off`` (no meaning filter)."""
    if s.strip().lower() in ("off", "none"):
        return None
    return float_in(-1, False, 1, "a cosine in [-1, 1] (e.g. 0.7) or off")(s)


def add_min_similarity(p: argparse.ArgumentParser, pair: str, default: float | None = None) -> None:
    """``--min-similarity S``, the meaning filter of every command that rewrites a text
    (:func:`pysynth.models.embed.similarity`, :class:`pysynth.pipelines.PairScoreFilter`);
    ``pair`` says which two texts are compared."""
    p.add_argument("--min-similarity", type=min_similarity, default=default, metavar="S",
                   help=f"meaning filter: keep an output only when its cosine with its source under the shipped "
                        f"encoder dup-minilm-wstb is >= S ({pair}; off: no filter; "
                        f"default {'off' if default is None else default})")


def no_repeat_ngram(s: str) -> int:
    """``--no-repeat-ngram``: 0 (off) or an n-gram size in 2 .. :data:`pysynth.decoding.config.MAX_NO_REPEAT_NGRAM`."""
    from pysynth.decoding.config import MAX_NO_REPEAT_NGRAM as hi

    try:
        v = int(s)
    except ValueError:
        v = -1
    if v != 0 and not 2 <= v <= hi:  # 1 would ban every repeated word ("the ... the")
        raise argparse.ArgumentTypeError(f"must be 0 (off) or an n-gram size in 2..{hi}, got {V.clip(s)}")
    return v


def add_guards(p: argparse.ArgumentParser, note: str = "") -> None:
    """The degenerate-output guards of every search (issue 26, :class:`pysynth.decoding.SearchConfig`):
    ``--no-repeat-ngram N`` and ``--no-stutter/--allow-stutter``, defaults SearchConfig's; read them with
    :func:`guards`. ``note``: what the command does besides (appended to the help)."""
    from pysynth.decoding.config import SearchConfig as S

    g = p.add_argument_group("degenerate-output guards (every search; --no-repeat-ngram 0 --allow-stutter: "
                             "the plain search)")
    g.add_argument("--no-repeat-ngram", type=no_repeat_ngram, default=S.no_repeat_ngram, metavar="N",
                   help=f"no output repeats a token N-gram; 0: off ({S.no_repeat_ngram}){note}")
    x = g.add_mutually_exclusive_group()
    x.add_argument("--no-stutter", dest="no_stutter", action="store_true", default=S.no_stutter,
                   help="no output says a token twice in a row" + (" (default)" if S.no_stutter else ""))
    x.add_argument("--allow-stutter", dest="no_stutter", action="store_false",
                   help="let a token follow itself" + ("" if S.no_stutter else " (default)"))


def guards(args: argparse.Namespace) -> dict:
    """``{"no_repeat_ngram", "no_stutter"}`` of :func:`add_guards`'s flags: the keywords of every
    generating API (:class:`pysynth.decoding.SearchConfig`'s field names)."""
    return {"no_repeat_ngram": args.no_repeat_ngram, "no_stutter": args.no_stutter}


def add_workers(p: argparse.ArgumentParser) -> None:
    """``--workers N`` (validated by :func:`workers`)."""
    p.add_argument("--workers", type=workers, default=1, metavar="N",
                   help="threads (default 1; -1: all cores); results do not depend on it")


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
        try:
            with open(path, "wb") as f:
                yield f
        except OSError as exc:  # /dev/full: "PATH: No space left on device", as every writer says it
            if exc.filename is not None or not exc.errno:
                raise
            raise OSError(exc.errno, exc.strerror, path) from None
        return
    from pysynth.io import atomic_open  # not for stdout: a one-shot `pysynth score` skips pysynth.io

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
        from pysynth.io import strip_bom

        lines = [line.removesuffix("\n") for line in sys.stdin]
        return [strip_bom(lines[0]), *lines[1:]] if lines else lines
    try:
        with open(path, encoding="utf-8-sig", newline="") as f:  # a byte-order mark dropped, as by every reader
            text = f.read()
    except UnicodeDecodeError as exc:
        raise ValueError(f"{flag} {path!r}: not UTF-8 text ({exc.reason})") from None
    if "\r" in text:  # lines also end at a lone \r (newline=""): iterate as the file would
        import io

        from pysynth.io import chomp

        return [chomp(line) for line in io.StringIO(text, newline="")]
    lines = text.split("\n")  # one split, no per-line Python
    if lines[-1] == "":
        lines.pop()
    return lines


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


# ------------------------------------------------------------------- LLM generators (issue 30, docs/llm.md)

def add_llm(p: argparse.ArgumentParser, flag: str) -> None:
    """The flags of an LLM generator, used when ``flag``'s value is an LLM spec
    (``openai:http://HOST:PORT/v1?model=NAME``, ``hf-causal:DIR``; :mod:`pysynth.llm`)."""
    g = p.add_argument_group(f"LLM generator (when {flag} is openai:http://HOST:PORT/v1?model=NAME, hf-causal:DIR or "
                             "a local causal LM folder; docs/llm.md)")
    g.add_argument("--prompt", type=input_file, default=None, metavar="FILE",
                   help="a prompt template replacing the role's default (its {variables}: docs/llm.md)")
    g.add_argument("--llm-cache", default=None, metavar="FILE",
                   help="response cache, JSON Lines (default OUT.llm-cache.jsonl; off: none): a rerun asks nothing twice")
    g.add_argument("--llm-concurrency", type=positive_int, default=4, metavar="N",
                   help="requests in flight at most; a local model: prompts per batch (4)")
    g.add_argument("--llm-timeout", type=float_in(0, True, None, "a number of seconds > 0"), default=60.0, metavar="S",
                   help="seconds per request before it is retried (60)")
    g.add_argument("--llm-retries", type=count, default=4, metavar="N",
                   help="retries after a 429, 5xx, timeout or dropped connection, with backoff (4)")
    g.add_argument("--max-new-tokens", type=positive_int, default=64, metavar="N", help="tokens per reply at most (64)")
    g.add_argument("--temperature", type=float_in(0, False, 5, "a number in [0, 5]"), default=0.0, metavar="T",
                   help="0: greedy (default); above 0: sampling, seeded by --seed and the prompt")
    g.add_argument("--samples", type=positive_int, default=1, metavar="N", help="replies per prompt (1)")


def llm_options(args: argparse.Namespace, out: str | None = None):
    """The :class:`pysynth.llm.LLMOptions` of :func:`add_llm`'s flags; the cache defaults to
    ``OUT.llm-cache.jsonl`` beside a file output."""
    from pysynth.llm import LLMOptions, LLMParams

    cache = args.llm_cache
    if cache is None and out not in (None, "-"):
        cache = f"{out}.llm-cache.jsonl"
    if cache is not None and cache.strip().lower() in ("off", "none"):
        cache = None
    params = LLMParams(max_new_tokens=args.max_new_tokens, temperature=args.temperature,
                       top_p=getattr(args, "top_p", 1.0) or 1.0, n=args.samples, seed=getattr(args, "seed", 0) or 0)
    return LLMOptions(params=params, prompt=args.prompt, cache=cache, concurrency=args.llm_concurrency,
                      timeout=args.llm_timeout, retries=args.llm_retries)


def llm_spec(value: str | None, flag: str) -> str | None:
    """``value`` when it is an LLM spec (checked: a bad one is a usage error naming ``flag``), else None."""
    from pysynth.llm import is_llm_spec, parse_spec

    if value is None or not is_llm_spec(value):
        return None
    try:
        parse_spec(value, flag)
    except ValueError as exc:
        raise UsageError(str(exc)) from None
    return value
