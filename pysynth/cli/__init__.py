"""The ``pysynth`` command line: one parser, ``pysynth <method> <verb>``.

    pysynth score | demo                                         (:mod:`.score`)
    pysynth k2q keywords|synthesize|make-corpus|train|generate|table1|table2   (:mod:`.k2q`)
    pysynth index build|search      (``pysynth search``: alias)  (:mod:`.index`)
    pysynth mqr mine                                             (:mod:`.mqr`)
    pysynth quality wellformed                                   (:mod:`.quality`)
    pysynth paraphrase                                           (:mod:`.paraphrase`)
    pysynth qagen generate|evaluate                              (:mod:`.qagen`)
    pysynth dup pairs|train|eval|eval-data|index|search          (:mod:`.dup`)
    pysynth export onnx                                          (:mod:`.export`)
    pysynth serve                                                (:mod:`.serve`)

``--in`` / ``--out`` take ``-`` for stdin / stdout; ``--model`` always names a model (a registry
name or a folder).  Errors: one line ``pysynth: error: ...``, exit 2 for usage, 1 for a failed
run (see :mod:`._common`).
"""
from __future__ import annotations

from collections.abc import Sequence

from pysynth.cli import _common

__all__ = ["build_parser", "main"]


def build_parser() -> _common.Parser:
    import pysynth
    from pysynth.cli import dup, export, index, k2q, mqr, paraphrase, qagen, quality, score, serve

    p = _common.Parser(prog=_common.PROG, description="pysynth: synthetic question data toolkit",
                       epilog="--in/--out take - for stdin/stdout. Exit status: 0 done, 1 the run failed, "
                              "2 usage error, 130 interrupted. PYSYNTH_DEBUG=1 shows tracebacks.")
    p.add_argument("--version", action="version", version=f"pysynth {pysynth.__version__}")
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
    serve.add_commands(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run ``pysynth`` with ``argv`` (default ``sys.argv[1:]``); returns the exit status."""
    return _common.run(build_parser(), argv)
