"""``pysynth score`` (files and stdin, JSON to --out or stdout) and ``pysynth demo``."""
from __future__ import annotations

import io
import json
import sys

import pytest

from pysynth import metrics as M

HYPS = ["what is the capital of france", "how tall is the eiffel tower ?", "who wrote hamlet"]
REFS = ["what is the capital city of france ?", "how tall is the eiffel tower ?", "who is the author of hamlet ?"]


@pytest.fixture
def files(tmp_path):
    h, r = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    h.write_text("\n".join(HYPS) + "\n")
    r.write_text("\n".join(REFS) + "\n")
    return h, r


def test_score_matches_the_library(cli, files, tmp_path, monkeypatch):
    h, r = files
    res = cli("score", "--hyp", h, "--ref", r, "--metrics", "bleu,rouge1,rougeLsum")
    assert res.code == 0 and not res.err
    out = json.loads(res.out)
    assert out["bleu"] == M.corpus_bleu(HYPS, [REFS]).score and out["n_segments"] == 3
    from pysynth import signature

    sig = out["signature"]  # the one run signature: format, config, input fingerprint, versions
    assert sig["format"] == "pysynth.score" and sig["config"]["metrics"] == ["bleu", "rouge1", "rougeLsum"]
    assert sig["input"] == {"segments": 3, "references": 1, "sha256": signature.fingerprint(HYPS, REFS)}
    assert out["rouge1"] == 100 * M.rouge(HYPS, [REFS], types=["rouge1"]).mean()["rouge1"]["f"]
    assert "rougeLsum" in out and "rouge2" not in out
    # stdin for the hypotheses (--in is the same flag), --out to a file
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(h.read_bytes())))
    assert cli("score", "--in", "-", "--ref", r, "--metrics", "bleu,rouge1,rougeLsum", "--out", tmp_path / "s.json").code == 0
    assert json.loads((tmp_path / "s.json").read_text()) == out
    coco = json.loads(cli("score", "--hyp", h, "--ref", r, "--ref", r, "--bleu-flavor", "coco", "--metrics", "bleu").out)
    assert len(coco["bleu_n"]) == 4


def test_score_errors(fails, files, tmp_path):
    h, r = files
    short = tmp_path / "short.txt"
    short.write_text("one line\n")
    line = fails(2, "score", "--hyp", h, "--ref", short)
    assert "argument --ref: " in line and "has 1 lines but --hyp has 3" in line
    assert "argument --metrics: unknown metric(s) ['bleu2']" in fails(2, "score", "--hyp", h, "--ref", r, "--metrics", "bleu2")
    assert "argument --ref: no such file" in fails(2, "score", "--hyp", h, "--ref", tmp_path / "none")
    assert "argument --ref: stdin (-) is already --hyp" in fails(2, "score", "--hyp", "-", "--ref", "-")
    (tmp_path / "latin1.txt").write_bytes("caf\xe9\n".encode("latin-1") * 3)
    assert "not UTF-8" in fails(1, "score", "--hyp", h, "--ref", tmp_path / "latin1.txt")


def test_demo(cli):
    r = cli("demo", "--workers", 2)
    assert r.code == 0 and "MQR test sample" in r.out and "scored 10 systems" in r.out


def test_score_imports_only_its_command(files, tmp_path):
    """``pysynth score`` builds a parser of its own module only (the other commands' imports cost 0.2 s);
    ``pysynth --help`` still lists every command."""
    import subprocess

    h, r = files
    code = ("import sys; from pysynth.cli import main; "
            f"rc = main(['score', '--hyp', {str(h)!r}, '--ref', {str(r)!r}, '--metrics', 'bleu', "
            f"'--out', {str(tmp_path / 'o.json')!r}]); "
            "print(rc, sorted(m for m in sys.modules if m.startswith('pysynth.cli.')))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout.split(" ", 1)
    assert out[0] == "0" and "pysynth.cli.serve" not in out[1] and "pysynth.cli.paraphrase" not in out[1]
    from pysynth.cli import _MODULES, build_parser, verbs

    assert set(verbs(build_parser())) == set(_MODULES)
