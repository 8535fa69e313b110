"""The CLI functions (k2q train / generate, export onnx) on a tiny model."""
from __future__ import annotations

import argparse
import json

import pytest

torch = pytest.importorskip("torch")

from pysynth.models.cli import add_k2q_model_commands  # noqa: E402


def run(argv):
    p = argparse.ArgumentParser(prog="pysynth")
    add_k2q_model_commands(p.add_subparsers(dest="command", required=True))
    args = p.parse_args(argv)
    return args.func(args)


def test_train_generate_export(tmp_path, capsys):
    pairs = tmp_path / "pairs.jsonl"
    with open(pairs, "w") as f:
        for i in range(24):
            f.write(json.dumps({"keywords": f"alpha w{i % 5} beta", "question": f"what is alpha w{i % 5} beta?"}) + "\n")
    model = tmp_path / "m"
    assert run(["k2q", "train", "--pairs", str(pairs), "--model", "attnet", "--out", str(model),
                "--emb-dim", "8", "--enc-hidden", "6", "--dec-hidden", "12", "--max-steps", "3",
                "--batch-size", "8", "--eval-every", "0", "--log-every", "1", "--device", "cpu"]) == 0
    summary = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert summary["steps"] == 3
    kin, kout = tmp_path / "kw.jsonl", tmp_path / "out.jsonl"
    kin.write_text("\n".join(json.dumps({"keywords": k}) for k in ["alpha w1", "beta w3 gamma"]) + "\n")
    assert run(["k2q", "generate", "--model", str(model), "--in", str(kin), "--out", str(kout),
                "--beam", "4", "--n", "3"]) == 0
    rows = [json.loads(x) for x in kout.read_text().splitlines()]
    assert [r["keywords"] for r in rows] == ["alpha w1", "beta w3 gamma"]
    assert all(1 <= len(r["questions"]) <= 3 and len(r["scores"]) == len(r["questions"]) for r in rows)
    assert run(["k2q", "generate", "--model", str(model), "--in", str(kin), "--out", str(kout),
                "--diverse", "--groups", "2", "--beam", "4", "--diversity", "1.0", "--n", "4"]) == 0
    pytest.importorskip("onnxruntime")
    onnx_dir = model / "onnx"
    assert run(["export", "onnx", "--model", str(model), "--out", str(onnx_dir), "--torchscript"]) == 0
    kout2 = tmp_path / "out2.jsonl"
    assert run(["k2q", "generate", "--model", str(model), "--in", str(kin), "--out", str(kout2),
                "--beam", "4", "--n", "3", "--backend", "onnx"]) == 0
    rows2 = [json.loads(x) for x in kout2.read_text().splitlines()]
    run(["k2q", "generate", "--model", str(model), "--in", str(kin), "--out", str(kout), "--beam", "4", "--n", "3"])
    rows1 = [json.loads(x) for x in kout.read_text().splitlines()]
    assert [r["questions"] for r in rows1] == [r["questions"] for r in rows2]


def test_bad_rows_exit_with_message(tmp_path):
    kin = tmp_path / "kw.jsonl"
    kin.write_text(json.dumps({"query": "x"}) + "\n")
    with pytest.raises(SystemExit, match="keywords"):
        run(["k2q", "generate", "--in", str(kin), "--out", str(tmp_path / "o.jsonl")])
