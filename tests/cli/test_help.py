"""Every command of the ``pysynth`` CLI, found by walking the argparse tree (issue 17):

* ``--help`` works (exit 0, a usage line naming the command);
* an unknown flag and a bad flag value are one ``pysynth: error:`` line, exit 2;
* every input file argument given a missing file, a directory, an empty file or a binary file
  ends in one ``pysynth: error:`` line and a non-zero exit (an empty file may also succeed),
  never a traceback and never the boundary's "internal error" (a bug that escaped as an
  unexpected exception type).

Commands are run in-process (:func:`pysynth.cli.main`); a new command is covered by adding it
to the parser.
"""
from __future__ import annotations

import argparse
import os

import pytest

from pysynth.cli import _common, build_parser


def _leaves(parser, path=()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
        return
    for s in subs:
        for name, sp in s.choices.items():
            yield from _leaves(sp, path + (name,))


LEAVES = {" ".join(path): p for path, p in _leaves(build_parser())}
# file-valued argument types (an existing file); --index takes a directory
FILE_TYPES = {"input_file", "_dump", "_contexts", "<lambda>"}


def _type_name(action) -> str:
    return getattr(action.type, "__name__", "") if action.type else ""


def _file_args(parser):
    return [a for a in parser._actions if a.option_strings and _type_name(a) in FILE_TYPES]


def _argv(cmd, parser, tmp_path, bad_file):
    """The command with every required argument filled; every file argument gets ``bad_file``."""
    argv = cmd.split()
    for a in parser._actions:
        if not a.option_strings or not (a.required or _type_name(a) in FILE_TYPES):
            continue
        flag = a.option_strings[0]
        if _type_name(a) in FILE_TYPES:
            val = bad_file
        elif "out" in a.dest:
            val = str(tmp_path / "out" / ("o" if "index" in cmd or "export" in cmd else "o.jsonl"))
        elif _type_name(a) == "parse":  # a directory (an index)
            (tmp_path / "dir").mkdir(exist_ok=True)
            val = str(tmp_path / "dir")
        elif a.choices:
            val = str(list(a.choices)[0])
        elif _type_name(a) == "int":
            val = "2"
        else:
            val = "x"
        argv += [flag, val]
    return argv


def check_one_line(r, what, allow_ok=False):
    assert "Traceback" not in r.err and "Traceback" not in r.out, f"{what}: traceback\n{r.err}"
    assert "internal error" not in r.err, f"{what}: an unexpected exception escaped: {r.err}"
    if allow_ok and r.code == 0:
        return
    assert r.code in (1, 2), f"{what}: exit {r.code}\n{r.err}"
    lines = r.err_lines
    assert lines and lines[-1].startswith("pysynth: error: "), f"{what}: {lines}"
    assert not [x for x in lines if x.startswith("pysynth: error")][:-1], f"{what}: more than one error line"


def test_the_tree_is_walked():
    assert {"score", "k2q generate", "index build", "index search", "serve"} <= set(LEAVES)


@pytest.mark.parametrize("cmd", ["", *sorted(LEAVES), *sorted({c.split()[0] for c in LEAVES if " " in c})])
def test_help(cmd, cli):
    r = cli(*cmd.split(), "--help")
    assert r.code == 0, r
    assert r.out.startswith("usage: pysynth" + (" " + cmd if cmd else "")), r.out[:200]
    assert "Traceback" not in r.err


@pytest.mark.parametrize("cmd", sorted(LEAVES))
def test_unknown_flag_is_one_line(cmd, cli):
    r = cli(*cmd.split(), "--no-such-flag", "1")
    check_one_line(r, cmd)
    assert r.code == 2


@pytest.mark.parametrize("cmd", sorted(c for c, p in LEAVES.items()
                                       if any(a.dest == "workers" for a in p._actions)))
def test_bad_flag_value_is_one_line(cmd, cli, tmp_path):
    good = tmp_path / "in.jsonl"
    good.write_text('{"text": "a"}\n')
    r = cli(*_argv(cmd, LEAVES[cmd], tmp_path, str(good)), "--workers", "0")
    check_one_line(r, f"{cmd} --workers 0")
    assert r.code == 2


def _bad_files(tmp_path):
    (tmp_path / "empty.jsonl").write_bytes(b"")
    (tmp_path / "binary.jsonl").write_bytes(os.urandom(64) + b"\x00\xff\xfe" + bytes(range(256)))
    (tmp_path / "a_dir").mkdir()
    return {"missing": str(tmp_path / "missing.jsonl"), "directory": str(tmp_path / "a_dir"),
            "empty": str(tmp_path / "empty.jsonl"), "binary": str(tmp_path / "binary.jsonl")}


FILE_COMMANDS = sorted(c for c, p in LEAVES.items() if _file_args(p))


@pytest.mark.parametrize("cmd", FILE_COMMANDS)
@pytest.mark.parametrize("kind", ["missing", "directory", "empty", "binary"])
def test_bad_input_file_is_one_line(cmd, kind, cli, tmp_path):
    bad = _bad_files(tmp_path)[kind]
    r = cli(*_argv(cmd, LEAVES[cmd], tmp_path, bad))
    check_one_line(r, f"{cmd} with a {kind} input file", allow_ok=kind == "empty")
    if kind == "missing":  # a usage error (a directory may be a valid input: a dump folder)
        assert r.code == 2, r


def test_file_commands_are_found():
    assert {"score", "k2q generate", "index build", "paraphrase generate", "quality wellformed"} <= set(FILE_COMMANDS)


def test_usage_error_type_is_the_parsers():
    assert issubclass(_common.Parser, argparse.ArgumentParser)
