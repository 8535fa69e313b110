"""One CLI grammar (issue 25): ``pysynth <method> <verb>``, ``--in``/``--out`` everywhere, one
spelling per flag from the shared groups, and the old spellings as deprecated aliases (one
``pysynth: warning:`` line each, then the same behaviour)."""
from __future__ import annotations

import argparse
import importlib.util
import os

import pytest

from pysynth.cli import _common, build_parser

WARN = "pysynth: warning: "


def _parse(*argv):
    """``(namespace, stderr lines)`` of parsing ``argv`` the way :func:`pysynth.cli.main` does."""
    from pysynth.cli import verbs

    p = build_parser()
    return p.parse_args(_common.upgrade_argv(list(argv), verbs(p)))


def _leaves(parser, path=()):
    subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    if not subs:
        yield path, parser
    for s in subs:
        for name, sp in s.choices.items():
            yield from _leaves(sp, path + (name,))


LEAVES = dict(_leaves(build_parser()))


# ---------------------------------------------------------------- paraphrase generate and the verb-less form

def test_paraphrase_generate_and_the_verbless_alias(capsys, tmp_path):
    a = _parse("paraphrase", "generate", "--in", "-", "--out", "o.jsonl")
    assert a.verb == "generate" and a.inp == "-" and a.beam == 16 and capsys.readouterr().err == ""
    b = _parse("paraphrase", "--in", "-", "--out", "o.jsonl", "--beams", "8")
    err = capsys.readouterr().err.splitlines()
    assert err == [WARN + "`pysynth paraphrase` without a verb is deprecated; use `pysynth paraphrase generate`",
                   WARN + "--beams is deprecated; use --beam"]
    assert b.func is a.func and b.beam == 8


def test_paraphrase_help_lists_verbs(cli):
    r = cli("paraphrase", "--help")
    assert r.code == 0 and "generate" in r.out and "train-pivot" in r.out and not r.err


def test_an_unknown_verb_is_not_taken_for_the_verbless_form(fails):
    assert "argument VERB: invalid choice: 'nope'" in fails(2, "paraphrase", "nope")


def test_verbless_paraphrase_runs_with_one_note(cli, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "no question"}\n')
    r = cli("paraphrase", "--in", bad, "--out", tmp_path / "o.jsonl", "--pivot", "keywords")
    assert r.code == 1 and r.err_lines[0].startswith(WARN + "`pysynth paraphrase` without a verb")
    assert len(r.err_lines) == 2 and r.err_lines[1].startswith("pysynth: error: ") and "question" in r.err


# ---------------------------------------------------------------- renamed verbs and flags

@pytest.mark.parametrize("old, new, argv, dest, value", [
    (("dup", "eval"), ("dup", "evaluate"), ["--in", "-"], "inp", "-"),
    (("mqr", "table6"), ("mqr", "evaluate"), ["--chain", "rule>rule"], "chain", ["rule>rule"]),
])
def test_renamed_verbs(capsys, old, new, argv, dest, value):
    a = _parse(*old, *argv)
    assert capsys.readouterr().err.splitlines() == [
        WARN + f"`pysynth {' '.join(old)}` is deprecated; use `pysynth {' '.join(new)}`"]
    b = _parse(*new, *argv)
    assert a.func is b.func and getattr(a, dest) == getattr(b, dest) == value
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("argv, old, new, dest, value", [
    (["qagen", "generate", "--out", "o"], ["--contexts", "sample"], "--in", "inp", "sample"),
    (["qagen", "generate", "--in", "sample", "--out", "o"], ["--top-k", "7"], "--spans", "spans", 7),
    (["qagen", "generate", "--in", "sample", "--out", "o"], ["--beam-size", "3"], "--beam", "beam", 3),
    (["paraphrase", "generate", "--in", "-", "--out", "o"], ["--beams", "8"], "--beam", "beam", 8),
    (["dup", "train", "--out", "o"], ["--pairs", "-"], "--in", "inp", "-"),
    (["dup", "evaluate"], ["--data", "-"], "--in", "inp", "-"),
    (["dup", "search", "--index", ".", "--out", "o"], ["--queries", "-"], "--in", "inp", "-"),
    (["dup", "search", "--index", ".", "--in", "-", "--out", "o"], ["--hybrid"], "--retrieval hybrid", "retrieval",
     "hybrid"),
    (["dup", "evaluate", "--in", "-"], ["--hybrid"], "--retrieval hybrid", "retrieval", "hybrid"),
    (["dup", "eval-data", "--out", "o"], ["--shared", "."], "--data", "data", "."),
    (["k2q", "train", "--out", "o"], ["--pairs", "synthetic"], "--in", "inp", "synthetic"),
    (["index", "search", "--index", ".", "--out", "o"], ["--queries", "-"], "--in", "inp", "-"),
])
def test_deprecated_flag_aliases(capsys, argv, old, new, dest, value):
    a = _parse(*argv, *old)
    assert capsys.readouterr().err.splitlines() == [WARN + f"{old[0]} is deprecated; use {new}"]
    assert getattr(a, dest) == value
    b = _parse(*argv, *new.split(), *old[1:])
    assert getattr(b, dest) == value and capsys.readouterr().err == ""


def test_dump_inputs_are_in_and_repeatable(capsys, tmp_path):
    for d in ("a", "b"):
        (tmp_path / d).mkdir()
    for verb in (["dup", "pairs", "--out", "o"], ["mqr", "mine", "--out", "o"], ["dup", "train-dqg", "--out", "o"],
                 ["dup", "evaluate-dqg"]):
        a = _parse(*verb, "--in", str(tmp_path / "a"), "--dump", str(tmp_path / "b"))
        assert a.inp == [str(tmp_path / "a"), str(tmp_path / "b")], verb
        assert capsys.readouterr().err.splitlines() == [WARN + "--dump is deprecated; use --in"]


def test_deprecated_spellings_are_not_in_help(cli):
    for cmd, old in ((["qagen", "generate"], "--contexts"), (["qagen", "generate"], "--top-k"),
                     (["paraphrase", "generate"], "--beams"), (["dup", "evaluate"], "--hybrid"),
                     (["dup", "evaluate"], "--data"), (["dup", "pairs"], "--dump")):
        r = cli(*cmd, "--help")
        assert r.code == 0 and old not in r.out and "--in" in r.out, (cmd, old)


def test_required_in_names_the_current_spelling(fails):
    assert fails(2, "qagen", "generate", "--out", "o") == \
        "pysynth: error: the following arguments are required: --in"
    assert fails(2, "dup", "train", "--out", "o") == "pysynth: error: the following arguments are required: --in"


# ---------------------------------------------------------------- --in sample, --retrieval, --model

def test_qagen_in_sample_is_documented_and_resolved(cli, monkeypatch):
    r = cli("qagen", "generate", "--help")
    assert "--in sample" in " ".join(r.out.split())
    seen = {}

    def fake_run(inp, out, cfg, **kw):
        seen.update(inp=inp, spans=cfg.top_k, beam=cfg.beam_size)
        return {"ok": 1}

    import pysynth.qagen.jobs as jobs
    from pysynth.data import qagen_sample_path

    monkeypatch.setattr(jobs, "run", fake_run)
    r = cli("qagen", "generate", "--in", "sample", "--out", os.devnull, "--spans", 4, "--beam", 2)
    assert r.code == 0, r
    assert seen == {"inp": str(qagen_sample_path()), "spans": 4, "beam": 2}


@pytest.fixture
def fake_dup_eval(monkeypatch):
    seen = {}

    def fake(rows, model, workers=1, batch_size=64, hybrid=False, alpha=0.5):
        seen.update(model=model, hybrid=hybrid, rows=len(list(rows)))
        return {"model": str(model)}

    import importlib

    monkeypatch.setattr(importlib.import_module("pysynth.dup.evaluate"), "evaluate", fake)
    return seen


@pytest.fixture
def eval_rows(tmp_path):
    p = tmp_path / "e.jsonl"
    p.write_text('{"query": "a", "positives": ["b"], "negatives": ["c"]}\n')
    return p


def test_dup_evaluate_retrieval_and_the_detector_default(cli, fails, fake_dup_eval, eval_rows):
    from pysynth.dup.search import DEFAULT_DETECTOR

    r = cli("dup", "evaluate", "--in", eval_rows)  # the shipped detector, like dup index
    assert r.code == 0 and not r.err and fake_dup_eval == {"model": DEFAULT_DETECTOR, "hybrid": False, "rows": 1}
    for method in ("bm25", "sdm"):
        r = cli("dup", "evaluate", "--in", eval_rows, "--retrieval", method)
        assert r.code == 0 and not r.err and fake_dup_eval["model"] == method and not fake_dup_eval["hybrid"]
    r = cli("dup", "evaluate", "--in", eval_rows, "--retrieval", "hybrid", "--model", "minilm")
    assert r.code == 0 and fake_dup_eval == {"model": "minilm", "hybrid": True, "rows": 1}
    r = cli("dup", "eval", "--data", eval_rows, "--model", "bm25")  # the old form: three notes, same run
    assert r.code == 0 and fake_dup_eval["model"] == "bm25"
    assert r.err_lines == [WARN + "`pysynth dup eval` is deprecated; use `pysynth dup evaluate`",
                           WARN + "--data is deprecated; use --in",
                           WARN + "--model bm25 is deprecated here; use --retrieval bm25"]
    assert "scores without a model" in fails(2, "dup", "evaluate", "--in", eval_rows, "--retrieval", "bm25",
                                             "--model", "minilm")


def test_every_dup_verb_defaults_to_the_shipped_detector():
    from pysynth.dup.search import DEFAULT_DETECTOR

    assert _parse("dup", "index", "--in", "-", "--out", "o").model == DEFAULT_DETECTOR
    assert _parse("dup", "evaluate", "--in", "-").retrieval is None  # None: dense with the detector
    assert DEFAULT_DETECTOR in " ".join(LEAVES["dup", "evaluate"].format_help().split())


def test_model_names_models_only():
    for path, p in LEAVES.items():
        for a in p._actions:
            if "--model" in a.option_strings and a.help != argparse.SUPPRESS:
                assert a.choices is None, path  # never a method name list
        assert not any(set(a.option_strings) & {"--beams", "--beam-size", "--contexts", "--pairs", "--queries",
                                                "--dump"} and not getattr(a, "deprecated", None)
                       for a in p._actions), path


# ---------------------------------------------------------------- threads / workers and backend

@pytest.mark.parametrize("value", ["0x", "-2", "abc", str(4 * (os.cpu_count() or 1) + 1), "1.5"])
def test_threads_are_validated(fails, value):
    msg = fails(2, "quality", "wellformed", "--in", "-", "--out", "-", "--threads", value)
    assert msg.startswith("pysynth: error: argument --threads: must be an integer in 1..") and value in msg


def test_threads_values():
    assert _common.threads("0") == 0 and _common.threads("3") == 3
    assert _common.threads("-1") == (os.cpu_count() or 1)
    assert _common.workers("-1") == -1
    with pytest.raises(argparse.ArgumentTypeError, match="4 x the cores"):
        _common.workers(str(4 * (os.cpu_count() or 1) + 1))


def test_every_threads_and_workers_flag_is_validated():
    for path, p in LEAVES.items():
        for a in p._actions:
            if a.dest == "threads":
                assert a.type is _common.threads, path
            if a.dest == "workers":
                assert a.type is _common.workers, path


def test_backend_is_auto_everywhere():
    found = []
    for path, p in LEAVES.items():
        for a in p._actions:
            if a.dest == "backend":
                assert a.default == "auto" and set(a.choices) == {"auto", "onnx", "torch"}, path
                found.append(path)
    assert {("k2q", "generate"), ("paraphrase", "generate"), ("mqr", "rewrite")} <= set(found)


def test_backend_auto_resolution(tmp_path, monkeypatch):
    assert _common.backend("torch") == "torch" and _common.backend("onnx") == "onnx"
    has_ort = importlib.util.find_spec("onnxruntime") is not None
    assert _common.backend("auto") == ("onnx" if has_ort else "torch")
    run = tmp_path / "run"
    (run / "model").mkdir(parents=True)
    assert _common.backend("auto", run / "model") == "torch"  # a training run without an export
    (run / "onnx").mkdir()
    assert _common.backend("auto", run / "model") == ("onnx" if has_ort else "torch")
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    assert _common.backend("auto", run / "model") == "torch"


# ---------------------------------------------------------------- the old python -m side doors

@pytest.mark.parametrize("module, argv, cmd", [
    ("pysynth.quality.train", ["--help"], "quality train"),
    ("pysynth.qagen.train", ["span", "--help"], "qagen train-span"),
    ("pysynth.qagen.train", ["qg", "--help"], "qagen train-qg"),
    ("pysynth.dup.dqg", ["eval", "--help"], "dup evaluate-dqg"),
    ("pysynth.paraphrase.pivots", ["--help"], "paraphrase train-pivot"),
])
def test_python_m_trainers_are_deprecated_shims(capsys, monkeypatch, module, argv, cmd):
    import runpy
    import sys
    import warnings

    monkeypatch.setattr(sys, "argv", [module, *argv])
    with warnings.catch_warnings(), pytest.raises(SystemExit) as exc:
        warnings.simplefilter("ignore", RuntimeWarning)  # runpy: the module is already imported
        runpy.run_module(module, run_name="__main__")
    assert exc.value.code == 0
    out, err = capsys.readouterr()
    assert err.startswith(WARN + f"python -m {module} is deprecated; use `pysynth {cmd.split()[0]}")
    assert out.startswith(f"usage: pysynth {cmd}"), out[:100]


# ---------------------------------------------------------------- docs/cli.md

def test_cli_reference_is_up_to_date():
    """docs/cli.md is generated from the parser: rerun ``python tools/cli_reference.py`` after a CLI change."""
    import runpy
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    render = runpy.run_path(str(root / "tools" / "cli_reference.py"))["render"]
    text = render()
    for cmd in ("pysynth paraphrase generate", "pysynth qagen train-span", "pysynth dup evaluate", "--retrieval"):
        assert cmd in text
    assert (root / "docs" / "cli.md").read_text(encoding="utf-8") == text, \
        "docs/cli.md is out of date: run python tools/cli_reference.py"
