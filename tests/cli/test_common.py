"""The one parser and the one error boundary: --help of every command, exit statuses (2 usage,
1 failure, 130 interrupt, quiet broken pipe), one stderr line and never a traceback."""
from __future__ import annotations

import argparse
import subprocess
import sys

import pytest

from pysynth.cli import build_parser, main


def _commands():
    """Every (sub)command path of the parser, e.g. ("k2q", "synthesize")."""
    out = []

    def walk(p, path):
        subs = [a for a in p._actions if isinstance(a, argparse._SubParsersAction)]
        if not subs:
            out.append(path)
        for a in subs:
            for name, sp in a.choices.items():
                walk(sp, path + (name,))

    walk(build_parser(), ())
    return out


COMMANDS = _commands()


def test_grammar_lists_every_command():
    assert set(COMMANDS) == {
        ("score",), ("demo",), ("search",), ("index", "build"), ("index", "search"), ("export", "onnx"), ("serve",),
        ("export", "dataset"), ("report",),
        ("quality", "wellformed"), ("quality", "train"), ("paraphrase", "generate"), ("paraphrase", "train-pivot"),
        *(("qagen", v) for v in ("generate", "questions", "evaluate", "train-span", "train-qg", "train-encoder-qg")),
        *(("dup", v) for v in ("pairs", "train", "evaluate", "eval-data", "index", "search", "train-dqg", "export-dqg",
                               "evaluate-dqg")),
        *(("mqr", v) for v in ("mine", "rewrite", "train", "evaluate")),
        *(("k2q", v) for v in ("keywords", "synthesize", "make-corpus", "train", "generate", "table1", "table2")),
        *(("models", v) for v in ("list", "path", "install")),
    }


@pytest.mark.parametrize("path", [(), ("k2q",), ("index",), ("export",), ("mqr",), ("quality",), ("dup",), ("qagen",),
                                  ("paraphrase",), *COMMANDS],
                         ids=" ".join)
def test_help_of_every_command(cli, path):
    r = cli(*path, "--help")
    assert r.code == 0 and r.out.startswith("usage: pysynth") and not r.err


def test_version(cli):
    r = cli("--version")
    assert r.code == 0 and r.out.startswith("pysynth ")


@pytest.mark.parametrize("argv, match", [
    ([], "the following arguments are required: COMMAND"),
    (["nope"], "argument COMMAND: invalid choice: 'nope'"),
    (["k2q"], "required: VERB"),
    (["index", "build", "--in", "-"], "the following arguments are required: --out"),
    (["score", "--hyp", "-", "--ref", "-", "--bogus"], "unrecognized arguments: --bogus"),
    (["k2q", "keywords", "--in", "missing.jsonl", "--out", "o.jsonl"], "argument --in: no such file 'missing.jsonl'"),
    (["k2q", "keywords", "--in", "-", "--out", "o.jsonl", "--m", "0"], "argument --m: must be an integer in 1..1,000"),
    (["k2q", "keywords", "--in", "-", "--out", "o.jsonl", "--model", "copynet"],
     "argument --model: this command takes no model; did you mean --kqgm {baseline,paraphrase}?"),
    (["k2q", "generate", "--in", "-", "--out", "-", "--model", "no-such-model"],
     "argument --model: 'no-such-model' is neither a shipped model ("),
    (["k2q", "train", "--in", "synthetic", "--out", "m", "--model", "transformer"], "did you mean --arch"),
    (["export", "onnx", "--model", "nope", "--out", "o"], "argument --model: 'nope' is neither"),
    (["search", "--index", "nope", "--in", "-", "--out", "-"], "argument --index: no such index directory 'nope'"),
])
def test_usage_errors_exit_2_with_one_line(fails, tmp_path, monkeypatch, argv, match):
    monkeypatch.chdir(tmp_path)
    line = fails(2, *argv)
    assert match in line, line
    assert list(tmp_path.iterdir()) == []  # nothing written


def test_failures_exit_1_with_one_line(fails, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"id": 1, "text": "a"}\n{"id": 2, "text": \n')
    line = fails(1, "index", "build", "--in", bad, "--out", tmp_path / "ix")
    assert "bad.jsonl:2: not valid JSON" in line
    assert sorted(p.name for p in tmp_path.iterdir()) == ["bad.jsonl"]


def test_interrupt_debug_and_internal_errors(cli, monkeypatch):
    from pysynth.cli import score

    def boom(exc):
        def f(args):
            raise exc
        return f

    for exc, code, msg in ((KeyboardInterrupt(), 130, "pysynth: error: interrupted"),
                           (ValueError("bad value\nsecond line"), 1, "pysynth: error: bad value second line"),
                           (FileNotFoundError(2, "No such file or directory", "x.bin"), 1,
                            "pysynth: error: x.bin: No such file or directory"),
                           (SystemExit("pysynth: old style"), 1, "pysynth: error: old style"),
                           (ZeroDivisionError("oops"), 1, "pysynth: error: internal error: ZeroDivisionError: oops")):
        monkeypatch.setattr(score, "_cmd_demo", boom(exc))
        r = cli("demo")
        assert r.code == code and r.err_lines == [r.err_lines[0]] and r.err_lines[0].startswith(msg), r
    monkeypatch.setenv("PYSYNTH_DEBUG", "1")  # developers get the exception itself
    with pytest.raises(ZeroDivisionError):
        main(["demo"])


def test_subprocess_exit_statuses_and_broken_pipe(tmp_path, pysynth_cmd):
    PY, env = pysynth_cmd
    p = subprocess.run([*PY, "search", "--index", str(tmp_path / "nope"), "--in", "-", "--out", "-"],
                       env=env, capture_output=True, text=True, stdin=subprocess.DEVNULL)
    assert p.returncode == 2 and p.stderr == f"pysynth: error: argument --index: no such index directory {str(tmp_path / 'nope')!r}\n"
    p = subprocess.run([sys.executable, "-m", "pysynth.cli", "--version"], env=env, capture_output=True, text=True,
                       check=False)
    assert p.returncode == 0 and p.stdout.startswith("pysynth ")
    # a reader that goes away early (| head): quiet exit, no traceback, no "Exception ignored"
    src = subprocess.Popen([*PY, "k2q", "make-corpus", "--n", "200000", "--out", "-"], env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    src.stdout.readline()
    src.stdout.close()
    err = src.stderr.read().decode()
    assert src.wait(timeout=120) == 141 and err == "", err
