"""The issue's done-when: ``pysynth qagen generate --question-model openai:... --in sample`` against
llama.cpp's server, killed and rerun: the same bytes as an uninterrupted run, each prompt reaching
the server once (counted at the proxy), and a rerun of the finished run with no request at all."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path


def _qagen(spec: str, out: Path, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pysynth", "qagen", "generate", "-q", "--in", "sample",
                           "--out", str(out), "--question-model", spec, "--keep-discarded", "--chunk-size", "4",
                           "--max-new-tokens", "16", "--llm-concurrency", "2"],
                          capture_output=True, text=True, env={**os.environ, **(env or {})}, timeout=300)


def test_killed_and_rerun_against_the_server(spec, proxy, tmp_path):
    ref = tmp_path / "ref" / "triples.jsonl"
    ref.parent.mkdir()
    r = _qagen(spec, ref)
    assert r.returncode == 0, r.stderr[-2000:]
    asked = dict(proxy.prompts)
    assert asked and max(asked.values()) == 1

    proxy.reset()
    out = tmp_path / "run" / "triples.jsonl"
    out.parent.mkdir()
    killed = _qagen(spec, out, {"PYSYNTH_TEST_STOP_AFTER_CHUNKS": "2"})  # dies like kill -9 after 2 of 4 chunks
    assert killed.returncode == 75 and not out.exists()
    first_half = dict(proxy.prompts)
    assert 0 < len(first_half) < len(asked)
    r = _qagen(spec, out)
    assert r.returncode == 0, r.stderr[-2000:]
    # every prompt reached the server exactly once over the killed run and its rerun
    assert dict(proxy.prompts) == asked
    assert out.read_bytes() == ref.read_bytes()
    meta = Path(str(out) + ".meta.json")
    assert meta.read_bytes() == Path(str(ref) + ".meta.json").read_bytes()
    summary = json.loads(r.stdout.strip().splitlines()[-1])
    assert summary["chunks_resumed"] == 2 and summary["llm"]["requests"] > 0
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert len(rows) >= 16 and all("consistent" in x and "roundtrip_text" in x for x in rows)  # the roundtrip filter

    proxy.reset()
    r = _qagen(spec, out)
    assert r.returncode == 0 and proxy.posts == 0
    assert out.read_bytes() == ref.read_bytes() and meta.read_bytes() == Path(str(ref) + ".meta.json").read_bytes()
    assert json.loads(r.stdout.strip().splitlines()[-1])["llm"]["requests"] == 0
    sig = json.loads(meta.read_text())["models"]["question"]
    assert sig["backend"] == "openai" and sig["model"] == "tiny" and len(sig["prompt_sha256"]) == 64
