"""Every generating command is a resumable, signed job (issue 25): ``pysynth mqr rewrite``,
``qagen generate``, ``paraphrase generate``, ``dup pairs`` and ``k2q synthesize`` write
``OUT.meta.json`` with a signature, resume after a kill to the bytes of an uninterrupted run with
another chunk size, and accept ``--executor ray`` (run on Ray in ``test_pipelines_ray.py``).

The kill: ``PYSYNTH_TEST_STOP_AFTER_CHUNKS=1`` makes the runner ``os._exit(75)`` right after the
first part lands, like ``kill -9`` (the environment form of ``pipelines.run(_stop_after_chunks=)``).
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pysynth import pipelines

ROOT = Path(__file__).resolve().parents[2]
SIGNATURE_KEYS = {"format", "format_version", "config", "input", "versions"}
QS = ["install ubuntu on usb stick", "Spaghetti carbonara, mixing", "zzqxv qqzzv", "python list sort reverse",
      "what is the capital of france", "Is this a grocery store?", "how many animals can be seen"]


def _pysynth(*args, env=None, timeout=300):
    e = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]), **(env or {}))
    return subprocess.run([sys.executable, "-m", "pysynth", *map(str, args)], capture_output=True, text=True,
                          timeout=timeout, env=e)


def _killed_then_resumed(tmp_path, argv, out_name, chunk_kill, chunk_ref):
    """Run ``argv`` to ``OUT`` killed after its first chunk, rerun it; an uninterrupted run with
    another chunk size to ``REF``. Returns (out, ref)."""
    out, ref = tmp_path / out_name, tmp_path / ("ref-" + out_name)
    r = _pysynth(*argv, "--out", out, "--chunk-size", chunk_kill, env={"PYSYNTH_TEST_STOP_AFTER_CHUNKS": "1"})
    assert r.returncode == 75, r.stderr[-3000:]
    assert not out.exists() and len(list(pipelines.parts_dir(out).glob("part-*"))) == 1
    r = _pysynth(*argv, "--out", out, "--chunk-size", chunk_kill)
    assert r.returncode == 0, r.stderr[-3000:]
    assert "[resume] 1 of" in r.stderr and not pipelines.parts_dir(out).exists()
    r = _pysynth(*argv, "--out", ref, "--chunk-size", chunk_ref)
    assert r.returncode == 0, r.stderr[-3000:]
    assert out.read_bytes() == ref.read_bytes() and out.stat().st_size > 0
    meta = json.loads(pipelines.meta_path(out).read_text())
    assert SIGNATURE_KEYS <= set(meta) and len(meta["versions"]) > 0
    assert pipelines.meta_path(out).read_bytes() == pipelines.meta_path(ref).read_bytes()
    return out, ref, meta


def test_mqr_rewrite_text_and_rows(tmp_path):
    pytest.importorskip("onnxruntime")
    inp = tmp_path / "q.txt"
    inp.write_text("".join(q + "\n" for q in QS))
    out, _, meta = _killed_then_resumed(tmp_path, ["mqr", "rewrite", "--in", inp], "r.txt", 2, 100)
    assert meta["format"] == "pysynth.mqr.rewrite" and meta["models"]["rewriter"]["model"]
    assert meta["input"]["rows"] == len(QS) and meta["summary"]["questions"] == len(QS)
    lines = out.read_text().splitlines()
    assert len(lines) == len(QS) and lines[2] == "zzqxv qqzzv" and lines[0].endswith("?")
    # the same rewrites as --out - (stdout: no run directory, no metadata)
    r = _pysynth("mqr", "rewrite", "--in", inp, "--out", "-")
    assert r.returncode == 0 and r.stdout == out.read_text(), r.stderr
    rows = tmp_path / "q.jsonl"
    rows.write_text("".join(json.dumps({"question": q, "id": i}) + "\n" for i, q in enumerate(QS)))
    out, _, meta = _killed_then_resumed(tmp_path, ["mqr", "rewrite", "--in", rows, "--min-wellformed", "0.5"],
                                        "r.jsonl", 3, 4)
    got = [json.loads(x) for x in out.read_text().splitlines()]
    assert [g["id"] for g in got] == list(range(len(QS))) and meta["config"]["min_wellformed"] == 0.5
    for g, line in zip(got, lines):
        assert g["rewritten"] == (g["wellformed"] >= 0.5) and g["rewrite"] == (line if g["rewritten"] else g["question"])
    assert meta["summary"]["dropped_wellformed"] == sum(not g["rewritten"] for g in got)


def test_qagen_generate(tmp_path):
    pytest.importorskip("onnxruntime")
    from pysynth.data import qagen_sample_path
    from pysynth.qagen.data import read_contexts

    inp = tmp_path / "c.jsonl"
    inp.write_text("".join(json.dumps({"id": c.id, "title": c.title, "context": c.text}) + "\n"
                           for c in read_contexts(qagen_sample_path())[:4]))
    _, _, meta = _killed_then_resumed(tmp_path, ["qagen", "generate", "--in", inp, "--keep-discarded"],
                                      "qa.jsonl", 2, 3)
    assert meta["format"] == "pysynth.qagen" and meta["summary"]["contexts"] == 4


def test_paraphrase_generate(tmp_path):
    inp = tmp_path / "p.jsonl"
    inp.write_text("".join(json.dumps({"id": f"q{i}", "question": q}) + "\n" for i, q in enumerate(QS)))
    _, _, meta = _killed_then_resumed(tmp_path, ["paraphrase", "generate", "--in", inp, "--pivot", "keywords",
                                                 "--beam", "4", "--groups", "2"], "p.out.jsonl", 2, 5)
    assert meta["format"] == "pysynth.paraphrase" and meta["summary"]["questions"] == len(QS)


def test_dup_pairs(tmp_path):
    pytest.importorskip("onnxruntime")
    sys.path.insert(0, str(ROOT / "tests" / "dup"))
    from test_pairs import write_dump

    d = write_dump(tmp_path)
    _, _, meta = _killed_then_resumed(tmp_path, ["dup", "pairs", "--in", d, "--method", "both"], "pairs.jsonl", 2, 4)
    assert meta["format"] == "pysynth.dup.pairs" and meta["models"]["dqg"]["model"]
    assert meta["summary"]["dumps"]["tiny"]["pairs"] == meta["summary"]["rows"]


def test_k2q_synthesize(tmp_path):
    from pysynth.data import k2q_demo

    inp = tmp_path / "k.jsonl"
    inp.write_text("".join(json.dumps(r) + "\n" for r in k2q_demo()[:600]))
    _, _, meta = _killed_then_resumed(tmp_path, ["k2q", "synthesize", "--in", inp, "--m", "5"],
                                      "k.out.jsonl", 200, 600)
    assert meta["format"] == "pysynth.k2q.synthetic"


@pytest.mark.parametrize("workers", [1, 2])
def test_k2q_synthesize_demo_bytes_are_pinned(tmp_path, workers):
    """The bundled demo's output (bench/RESULTS_pipeline.md: the same bytes since the runner)."""
    out = tmp_path / "demo.jsonl"
    r = _pysynth("k2q", "synthesize", "--out", out, "--workers", workers, "--quiet")
    assert r.returncode == 0, r.stderr[-3000:]
    assert hashlib.sha256(out.read_bytes()).hexdigest() == \
        "e60e58886cdea78a2c633ed7f7377b3069193ea15418f6008bc9e157d906fc22"


@pytest.mark.parametrize("argv", [
    ["mqr", "rewrite", "--in", "-", "--out", "o"],
    ["qagen", "generate", "--in", "sample", "--out", "o"],
    ["paraphrase", "generate", "--in", "-", "--out", "o"],
    ["dup", "pairs", "--in", ".", "--out", "o"],
    ["k2q", "synthesize", "--out", "o"],
])
def test_every_generating_command_takes_the_job_flags(argv):
    from pysynth.cli import build_parser

    a = build_parser().parse_args([*argv, "--executor", "ray", "--ray-address", "auto", "--chunk-size", "7",
                                   "--restart"])
    assert (a.executor, a.ray_address, a.chunk_size, a.restart) == ("ray", "auto", 7, True)
    ex = pipelines.executor_from_args(a)
    assert isinstance(ex, pipelines.RayExecutor) and ex.address == "auto"
