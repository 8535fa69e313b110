"""``pysynth k2q train | generate`` and ``pysynth export onnx`` on a tiny model (moved from
tests/models/test_cli.py): --arch (old --model ARCH), --model names a model, --out -."""
from __future__ import annotations

import io
import json
import sys

import pytest

torch = pytest.importorskip("torch")


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    from pysynth.cli import main

    d = tmp_path_factory.mktemp("m")
    pairs = d / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"keywords": f"alpha w{i % 5} beta", "question": f"what is alpha w{i % 5} beta?"})
                             + "\n" for i in range(24)))
    torch.set_num_threads(1)
    argv = ["k2q", "train", "--pairs", str(pairs), "--out", str(d / "m"), "--emb-dim", "8", "--enc-hidden", "6",
            "--dec-hidden", "12", "--max-steps", "3", "--batch-size", "8", "--eval-every", "0", "--log-every", "1",
            "--device", "cpu"]
    assert main([*argv, "--arch", "attnet"]) == 0
    return d, d / "m", pairs, argv


def test_train_summary_and_deprecated_model_arch(cli, trained, tmp_path):
    d, model, _pairs, argv = trained
    assert json.loads((model / "model" / "config.json").read_text())["arch"] == "attnet"
    argv = [a if a != str(d / "m") else str(tmp_path / "m2") for a in argv]
    r = cli(*argv, "--model", "attnet")  # the old spelling of --arch attnet
    assert r.code == 0 and json.loads(r.out.strip().splitlines()[-1])["steps"] == 3
    assert "pysynth: warning: --model attnet is deprecated here; use --arch attnet" in r.err_lines


def test_generate_and_export(cli, trained, tmp_path, monkeypatch):
    _, model, _, _ = trained
    kin, kout = tmp_path / "kw.jsonl", tmp_path / "out.jsonl"
    kin.write_text("".join(json.dumps({"keywords": k}) + "\n" for k in ["alpha w1", "beta w3 gamma"]))
    assert cli("k2q", "generate", "--model", model, "--in", kin, "--out", kout, "--beam", 4, "--n", 3).code == 0
    rows = [json.loads(x) for x in kout.read_text().splitlines()]
    assert [r["keywords"] for r in rows] == ["alpha w1", "beta w3 gamma"]
    assert all(1 <= len(r["questions"]) <= 3 and len(r["scores"]) == len(r["questions"]) for r in rows)
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(kin.read_bytes())))
    r = cli("k2q", "generate", "--model", model, "--in", "-", "--out", "-", "--beam", 4, "--n", 3)
    assert r.code == 0 and r.out == kout.read_text()
    assert cli("k2q", "generate", "--model", model, "--in", kin, "--out", tmp_path / "d.jsonl", "--diverse",
               "--groups", 2, "--beam", 4, "--diversity", 1.0, "--n", 4).code == 0
    pytest.importorskip("onnxruntime")
    onnx_dir = model / "onnx"
    r = cli("export", "onnx", "--model", model, "--out", onnx_dir, "--torchscript")
    assert r.code == 0 and json.loads(r.out)["onnx_dir"] == str(onnx_dir)
    kout2 = tmp_path / "out2.jsonl"
    assert cli("k2q", "generate", "--model", model, "--in", kin, "--out", kout2, "--beam", 4, "--n", 3,
               "--backend", "onnx").code == 0
    assert [json.loads(x)["questions"] for x in kout2.read_text().splitlines()] == [r["questions"] for r in rows]


def test_generate_default_model_is_the_shipped_one(cli, tmp_path):
    kin = tmp_path / "kw.jsonl"
    kin.write_text(json.dumps({"keywords": "honda crf top speed"}) + "\n")
    a = cli("k2q", "generate", "--in", kin, "--out", "-", "--beam", 2, "--n", 1, "--max-len", 8)
    b = cli("k2q", "generate", "--model", "k2q-copynet-small", "--in", kin, "--out", "-", "--beam", 2, "--n", 1,
            "--max-len", 8)
    assert a.code == b.code == 0 and a.out == b.out and json.loads(a.out)["questions"]


def test_bad_rows_and_models(fails, trained, tmp_path):
    _, model, _, _ = trained
    kin = tmp_path / "kw.jsonl"
    kin.write_text(json.dumps({"query": "x"}) + "\n")
    line = fails(1, "k2q", "generate", "--model", model, "--in", kin, "--out", tmp_path / "o.jsonl")
    assert f"--in {str(kin)!r} row 1: needs a string field 'keywords'" in line
    assert "argument --model" in fails(2, "k2q", "generate", "--model", tmp_path, "--in", kin, "--out", "-")
    line = fails(1, "k2q", "train", "--in", kin, "--out", tmp_path / "m")
    assert "row 1: needs string fields 'keywords' and 'question'" in line
    assert "argument --arch: invalid choice" in fails(2, "k2q", "train", "--in", kin, "--out", tmp_path / "m",
                                                      "--arch", "bert")
    assert not (tmp_path / "o.jsonl").exists() and not (tmp_path / "m").exists()
