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


def build_parser() -> _common.Parser:
    import pysynth
    from pysynth.cli import dup, export, index, k2q, models, mqr, paraphrase, qagen, quality, report, score, serve

    p = _common.Parser(prog=_common.PROG, description="pysynth: synthetic question data toolkit",
                       epilog="--in/--out take - for stdin/stdout. Exit status: 0 done, 1 the run failed, "
                              "2 usage error, 130 interrupted. PYSYNTH_DEBUG=1 shows tracebacks.")
    p.add_argument("--version", action="version", version=f"pysynth {pysynth.__version__}")
    p.add_argument("--models-dir", action=models.ModelsDir, type=_common.input_dir("--models-dir"), metavar="DIR",
                   help="a folder of model folders (NAME/model.json), searched before the installed models "
                        "(as PYSYNTH_MODELS)")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    score.add_commands(sub)  # score, demo
    k2q.add_commands(sub)
    index.add_commands(sub)  # index build/search, search
    mqr.add_commands(sub)
    quality.add_commands(sub)
    paraphrase.add_commands(sub)
    qagen.add_commands(sub)
    dup.add_commands(sub)
    export.add_commands(sub)
    report.add_commands(sub)
    serve.add_commands(sub)
    models.add_commands(sub)
    for leaf in _leaves(p):
        _add_verbosity(leaf)
    return p


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

    parser = build_parser()
    argv = _common.upgrade_argv(sys.argv[1:] if argv is None else argv, verbs(parser))
    return _common.run(parser, argv)
