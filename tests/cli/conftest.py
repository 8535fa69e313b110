"""``cli`` fixture: run ``pysynth.cli.main`` in-process and capture (status, stdout, stderr)."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import NamedTuple

import pytest

ROOT = Path(__file__).resolve().parents[2]


class Result(NamedTuple):
    code: int
    out: str
    err: str

    @property
    def err_lines(self):
        return self.err.splitlines()


@pytest.fixture
def cli(capsys):
    from pysynth.cli import main

    def run(*argv) -> Result:
        capsys.readouterr()
        code = main([str(a) for a in argv])
        out, err = capsys.readouterr()
        return Result(code, out, err)

    return run


@pytest.fixture
def fails(cli):
    """Run a command that must fail with ``code``: one ``pysynth: error:`` line last on stderr
    (only progress lines before it), no traceback; returns that line."""

    def run(code: int, *argv, only_line: bool = True) -> str:
        r = cli(*argv)
        assert r.code == code, r
        assert "Traceback" not in r.err
        lines = r.err_lines
        if only_line:
            assert len(lines) == 1, lines
        assert lines[-1].startswith("pysynth: error: "), lines
        return lines[-1]

    return run


@pytest.fixture
def pysynth_cmd():
    """(argv prefix, env) to run ``python -m pysynth`` from this checkout in a subprocess."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    env.pop("PYSYNTH_DEBUG", None)
    return [sys.executable, "-m", "pysynth"], env
