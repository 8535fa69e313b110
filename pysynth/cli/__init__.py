"""The ``pysynth`` command line: one parser, ``pysynth <method> <verb>``.

    pysynth score | demo                                         (:mod:`.score`)
    pysynth k2q keywords|synthesize|make-corpus|train|generate|table1|table2   (:mod:`.k2q`)
    pysynth index build|search      (``pysynth search``: alias)  (:mod:`.index`)
    pysynth mqr mine|rewrite|train|evaluate                      (:mod:`.mqr`)
    pysynth quality wellformed|train                             (:mod:`.quality`)
    pysynth paraphrase generate|train-pivot                      (:mod:`.paraphrase`)
    pysynth qagen generate|evaluate|train-span|train-qg|train-encoder-qg   (:mod:`.qagen`)
    pysynth dup pairs|train|evaluate|eval-data|index|search|train-dqg|export-dqg|evaluate-dqg   (:mod:`.dup`)
    pysynth export onnx|dataset                                  (:mod:`.export`)
    pysynth report                                               (:mod:`.report`)
    pysynth serve                                                (:mod:`.serve`)
    pysynth models list|path|install                             (:mod:`.models`)

Every row input is ``--in`` and every output ``--out`` (``-``: stdin / stdout); ``--model`` always
names a model (a registry name or a folder); the decoding, backend, threads and job flags come from
the shared groups of :mod:`._common`, one spelling each.  Old spellings work for one release with a
``pysynth: warning: ... is deprecated`` line (``docs/cli.md`` lists them).  Errors: one line
``pysynth: error: ...``, exit 2 for usage, 1 for a failed run (see :mod:`._common`).
"""
from __future__ import annotations

import argparse
from collections.abc import Sequence

from pysynth.cli import _common

__all__ = ["build_parser", "main", "verbs", "deprecated_module"]

deprecated_module = _common.deprecated_module  # the old ``python -m`` trainer entry points call it


# Command -> the module that adds it, in `pysynth --help` order. A run that names its command
# imports only that module: `pysynth score` spent 0.2 s importing the other ten (serve, paraphrase
# pivots, ...) before reading a line (bench/RESULTS.md, issue 29).
_MODULES = {"score": "score", "demo": "score", "k2q": "k2q", "index": "index", "search": "index", "mqr": "mqr",
            "quality": "quality", "paraphrase": "paraphrase", "qagen": "qagen", "dup": "dup", "export": "export",
            "report": "report", "serve": "serve", "models": "models"}


def build_parser(command: str | None = None) -> _common.Parser:
    """The ``pysynth`` parser: every command, or only ``command``'s module when one is named."""
    import importlib

    import pysynth
    from pysynth.cli import models

    p = _common.Parser(prog=_common.PROG, description="pysynth: synthetic question data toolkit",
                       epilog="--in/--out take - for stdin/stdout. Exit status: 0 done, 1 the run failed, "
                              "2 usage error, 130 interrupted. PYSYNTH_DEBUG=1 shows tracebacks.")
    p.add_argument("--version", action="version", version=f"pysynth {pysynth.__version__}")
    p.add_argument("--models-dir", action=models.ModelsDir, type=_common.input_dir("--models-dir"), metavar="DIR",
                   help="a folder of model folders (NAME/model.json), searched before the installed models "
                        "(as PYSYNTH_MODELS)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    names = [_MODULES[command]] if command in _MODULES else dict.fromkeys(_MODULES.values())
    for name in names:
        importlib.import_module(f"pysynth.cli.{name}").add_commands(sub)
    for leaf in _leaves(p):
        _add_verbosity(leaf)
    return p


def _command(argv: Sequence[str]) -> str | None:
    """The command ``argv`` names (its first word after the global options), or None."""
    i = 0
    while i < len(argv):
        a = argv[i]
        if a == "--models-dir":
            i += 2
        elif a.startswith("--models-dir="):
            i += 1
        else:
            return None if a.startswith("-") else a
    return None


def _leaves(parser: argparse.ArgumentParser) -> list:
    """The parsers that run a command (those without verbs of their own)."""
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        return [parser]
    return [leaf for a in subs for sp in dict.fromkeys(a.choices.values()) for leaf in _leaves(sp)]


def _add_verbosity(p: argparse.ArgumentParser) -> None:
    """``-v/--verbose`` and ``-q/--quiet`` on every command (:func:`._common.configure_logging`)."""
    have = p._option_string_actions
    if "-v" not in have and "--verbose" not in have:
        p.add_argument("-v", "--verbose", action="count", default=0,
                       help="more log lines (-v: debug, and third-party library messages)")
    if "--quiet" not in have:
        p.add_argument("-q", "--quiet", action="store_true", help="warnings and errors only: no progress")


def verbs(parser: argparse.ArgumentParser) -> dict:
    """``{command: [verbs]}`` of the parser (commands without verbs map to ``[]``)."""
    out = {}
    for a in parser._actions:
        if isinstance(a, argparse._SubParsersAction):
            for name, sp in a.choices.items():
                out[name] = [v for s in sp._actions if isinstance(s, argparse._SubParsersAction) for v in s.choices]
    return out


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``pysynth`` with ``argv`` (default ``sys.argv[1:]``); returns the exit status.

    A deprecated verb spelling (``pysynth paraphrase --in F``, ``pysynth dup eval``, ``pysynth mqr
    table6``) is rewritten to the current one with a one-line note on stderr."""
    import sys

    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(_command(argv))
    argv = _common.upgrade_argv(argv, verbs(parser))
    return _common.run(parser, argv)
