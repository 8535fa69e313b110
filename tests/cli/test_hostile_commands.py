"""Issue 27, items 8-11: the commands under hostile-but-fair input give one clear error line (or a
correct result) before any model loads: bounded threads and beams, finite floats, diverse groups
that divide the beam, no two outputs on one file, no huge value echoed back."""
from __future__ import annotations

import json
import os

import pytest

from pysynth import _validate as V


@pytest.fixture
def rows(tmp_path):
    p = tmp_path / "in.jsonl"
    p.write_text(json.dumps({"question": "how are you", "keywords": "capital france"}) + "\n")
    return str(p)


# ------------------------------------------------------------------ item 8: threads and beams

@pytest.mark.parametrize("argv", [
    ("mqr", "rewrite", "--threads", "99999"),
    ("qagen", "generate", "--threads", "99999"),
    ("dup", "pairs", "--threads", str(V.max_threads() + 1)),
])
def test_threads_over_four_per_core_is_refused(fails, rows, tmp_path, argv):
    line = fails(2, *argv, "--in", rows, "--out", tmp_path / "o.jsonl")
    assert "--threads" in line and f"1..{V.max_threads()}" in line


def test_serve_threads_is_validated(fails):
    line = fails(2, "serve", "--threads", "99999")
    assert "--threads" in line and "4 x the cores" in line


@pytest.mark.parametrize("argv", [
    ("mqr", "rewrite"), ("paraphrase", "generate"), ("dup", "pairs", "--method", "both"),
    ("qagen", "generate", "--decode", "beam"), ("k2q", "generate"),
])
def test_beam_is_bounded(fails, rows, tmp_path, argv):
    line = fails(2, *argv, "--beam", "100000", "--in", rows, "--out", tmp_path / "o.jsonl")
    assert f"--beam: must be an integer in 1..{V.MAX_BEAM}" in line


def test_beam_times_batch_is_bounded(fails, rows, tmp_path):
    line = fails(2, "paraphrase", "generate", "--beam", "256", "--batch-size", "128", "--in", rows,
                 "--out", tmp_path / "o.jsonl")
    assert "32,768 hypotheses" in line and "--batch-size <= 64" in line


def test_validate_threads_and_budget_for_services():
    """The server's config calls the same checks (``_validate.threads``)."""
    assert V.threads(0) == 0 and V.threads(-1) == (os.cpu_count() or 1) and V.threads(1) == 1
    for bad in (99999, -2, V.max_threads() + 1):
        with pytest.raises(ValueError, match="threads"):
            V.threads(bad)
    with pytest.raises(TypeError, match="threads"):
        V.threads(2.5)
    V.search_budget(16, 16, 4)
    with pytest.raises(ValueError, match="beam"):
        V.search_budget(100_000)
    with pytest.raises(ValueError, match="groups must divide beam"):
        V.search_budget(6, None, 7)


# ------------------------------------------------------------------ items 10-11: floats, groups, outputs

@pytest.mark.parametrize("flag, value", [("--unknown-penalty", "nan"), ("--length-penalty", "inf"),
                                         ("--length-penalty", "-inf"), ("--unknown-penalty", "NaN")])
def test_paraphrase_penalties_must_be_finite(fails, rows, tmp_path, flag, value):
    line = fails(2, "paraphrase", "generate", f"{flag}={value}", "--in", rows, "--out", tmp_path / "o.jsonl")
    assert f"{flag}: must be a finite number" in line


def test_paraphrase_config_refuses_nan_penalties():
    from pysynth.paraphrase.pipeline import ParaphraseConfig

    with pytest.raises(ValueError, match="unknown_penalty must be a finite number"):
        ParaphraseConfig(unknown_penalty=float("nan"))
    with pytest.raises(ValueError, match="length_penalty"):
        ParaphraseConfig(length_penalty=float("inf"))


def test_every_float_flag_is_finite(fails, rows, tmp_path):
    line = fails(2, "k2q", "generate", "--alpha", "nan", "--in", rows, "--out", tmp_path / "o.jsonl")
    assert "--alpha: must be a finite number" in line


@pytest.mark.parametrize("beam, groups", [("6", "7"), ("8", "3")])
def test_diverse_groups_must_divide_the_beam(fails, rows, tmp_path, beam, groups):
    line = fails(2, "k2q", "generate", "--diverse", "--groups", groups, "--beam", beam, "--in", rows,
                 "--out", tmp_path / "o.jsonl")
    assert "--groups must divide --beam" in line and f"--beam {beam}, --groups {groups}" in line
    line = fails(2, "paraphrase", "generate", "--decode", "dbs", "--groups", groups, "--beam", beam, "--in", rows,
                 "--out", tmp_path / "o.jsonl")
    assert "--groups must divide --beam" in line


def test_groups_are_not_checked_when_the_search_is_not_diverse(cli, rows, tmp_path):
    from pysynth.cli import build_parser
    from pysynth.cli._common import check_args

    args = build_parser().parse_args(["paraphrase", "generate", "--decode", "beam", "--beam", "2", "--in", rows,
                                      "--out", str(tmp_path / "o.jsonl")])
    check_args(args)  # groups 4 > beam 2, but beam search has no groups


@pytest.mark.parametrize("argv", [
    ("qagen", "generate", "--squad-out", "{out}"),
    ("qagen", "generate", "--squad-out", "{dir}/../{base}/o.jsonl"),
    ("paraphrase", "generate", "--candidates-out", "{out}"),
])
def test_two_outputs_on_one_file_are_refused(fails, rows, tmp_path, argv):
    out = str(tmp_path / "o.jsonl")
    argv = [a.format(out=out, dir=tmp_path, base=tmp_path.name) for a in argv]
    line = fails(2, *argv, "--in", rows, "--out", out)
    assert "are the same file" in line and "--out" in line
    assert not os.path.exists(out)


def test_two_outputs_on_stdout_are_refused(fails, rows):
    line = fails(2, "paraphrase", "generate", "--candidates-out", "-", "--in", rows, "--out", "-")
    assert "same file (stdout)" in line


def test_symlinked_outputs_are_one_file(fails, rows, tmp_path):
    out = tmp_path / "o.jsonl"
    out.write_text("")
    (tmp_path / "link.jsonl").symlink_to(out)
    line = fails(2, "paraphrase", "generate", "--candidates-out", tmp_path / "link.jsonl", "--in", rows,
                 "--out", out)
    assert "are the same file" in line


@pytest.mark.parametrize("argv", [
    ("score", "--hyp", "{rows}", "--ref", "{rows}", "--workers", "9" * 20),
    ("score", "--hyp", "{rows}", "--ref", "{rows}", "--workers", "9" * 10_000),
    ("mqr", "rewrite", "--in", "{rows}", "--out", "-", "--beam", "7" * 10_000),
    ("k2q", "generate", "--in", "{rows}", "--out", "-", "--alpha", "1" * 10_000 + "x"),
    ("dup", "pairs", "--in", "{rows}", "--out", "-", "--seed", "x" * 10_000),
])
def test_a_huge_value_is_not_echoed_whole(fails, rows, argv):
    line = fails(2, *[a.format(rows=rows) for a in argv])
    assert len(line) < 300, line
