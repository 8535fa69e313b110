"""``pysynth k2q generate`` (issue 28): the README line runs with torch absent (``--backend auto``
picks onnxruntime), and a row the model cannot read is written with a ``reason`` and counted,
never aborting the batch."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("onnxruntime")

ROOT = Path(__file__).resolve().parents[2]

# Makes `import torch` fail and importlib.util.find_spec("torch") answer None, as on a machine
# where torch is not installed (the interpreter's own torch stays on disk, out of reach).
BLOCK_TORCH = '''
import importlib.util
import sys

def _blocked(name):
    return name == "torch" or name.startswith("torch.")

class _NoTorch:
    def find_spec(self, name, path=None, target=None):
        if _blocked(name):
            raise ModuleNotFoundError(f"No module named {name!r}", name=name)
        return None

_find_spec = importlib.util.find_spec
importlib.util.find_spec = lambda name, package=None: None if _blocked(name) else _find_spec(name, package)
sys.meta_path.insert(0, _NoTorch())
'''

KEYWORDS = ["honda crf 230 top speed", "capital australia", "zzqxqv vvbnmq", "flat tire fix bike"]


def _run(tmp_path, *args, block_torch=False, stdin=None):
    env = dict(os.environ)
    if block_torch:
        (tmp_path / "blocker").mkdir(exist_ok=True)
        (tmp_path / "blocker" / "sitecustomize.py").write_text(BLOCK_TORCH)
        env["PYTHONPATH"] = os.pathsep.join([str(tmp_path / "blocker"), str(ROOT), env.get("PYTHONPATH", "")])
    return subprocess.run([sys.executable, "-m", "pysynth", *args], capture_output=True, text=True, env=env,
                          input=stdin, timeout=300)


def _rows(path):
    return [json.loads(x) for x in Path(path).read_text().splitlines()]


def test_the_blocker_blocks_torch(tmp_path):
    code = "import importlib.util as u\ntry:\n import torch\nexcept ImportError:\n print(u.find_spec('torch'))"
    env = dict(os.environ)
    (tmp_path / "sitecustomize.py").write_text(BLOCK_TORCH)
    env["PYTHONPATH"] = str(tmp_path)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=60)
    assert r.returncode == 0 and r.stdout.strip() == "None", r.stderr


def test_generate_without_torch_and_with_an_unreadable_row(tmp_path):
    inp = tmp_path / "kw.jsonl"
    inp.write_text("".join(json.dumps({"keywords": k}) + "\n" for k in KEYWORDS))
    out = tmp_path / "out.jsonl"
    r = _run(tmp_path, "k2q", "generate", "--in", str(inp), "--out", str(out), "--n", "3", block_torch=True)
    assert r.returncode == 0, r.stderr
    assert "torch" not in r.stderr.lower()  # no "No module named 'torch'", no "PyTorch was not found"
    rows = _rows(out)
    assert [r["keywords"] for r in rows] == KEYWORDS
    bad = rows[2]
    assert bad["questions"] == [] and bad["scores"] == [] and bad["reason"] == "out_of_vocabulary"
    for row in rows[:2] + rows[3:]:
        assert "reason" not in row and 1 <= len(row["questions"]) <= 3 and len(row["scores"]) == len(row["questions"])
    assert "1 of 4 keyword queries got no questions: out_of_vocabulary 1" in r.stderr
    # -q: warnings only; the summary is a warning, so it stays
    r = _run(tmp_path, "k2q", "generate", "--in", str(inp), "--out", "-", "--n", "3", "-q", block_torch=True)
    assert r.returncode == 0 and _rows_text(r.stdout) == rows and "[k2q generate]" not in r.stderr


def _rows_text(text):
    return [json.loads(x) for x in text.splitlines()]


def test_every_reason_and_the_wrong_field(tmp_path):
    lines = [{"keywords": "capital australia"}, {"keywords": 3}, {"query": "x"}, {"keywords": " ?? "},
             {"keywords": "qqqzzv"}]
    r = _run(tmp_path, "k2q", "generate", "--in", "-", "--out", "-", "--n", "2", "--min-wellformed", "0.0",
             stdin="".join(json.dumps(x) + "\n" for x in lines))
    assert r.returncode == 0, r.stderr
    rows = _rows_text(r.stdout)
    assert [x.get("reason") for x in rows] == [None, "no_keywords", "no_keywords", "empty", "out_of_vocabulary"]
    assert rows[0]["questions"] and all(x["dropped"] == 0 for x in rows)
    # no row has the field: the wrong input, one clean error line (exit 1)
    r = _run(tmp_path, "k2q", "generate", "--in", "-", "--out", "-", stdin='{"query": "x"}\n')
    assert r.returncode == 1 and "row 1: needs a string field 'keywords'" in r.stderr


def test_generate_rows_library():
    from pysynth.k2q.generate import REASONS, generate_rows
    from pysynth.models.generate import Generator

    gen = Generator.load(None, backend="onnx", default="k2q-copynet-small")
    rows, counts = generate_rows(gen, [{"keywords": k} for k in KEYWORDS], beam=2, n=1, max_len=8)
    assert counts == {"out_of_vocabulary": 1} and set(counts) <= set(REASONS)
    alone = gen.generate([k for k in KEYWORDS if k != KEYWORDS[2]], beam=2, n=1, max_len=8)
    assert [r["questions"] for r in rows if "reason" not in r] == [g.texts for g in alone]
    with pytest.raises(ValueError, match="no row has a string field 'keywords'"):
        generate_rows(gen, [{"query": "x"}])


def test_the_library_loads_without_torch_by_default(tmp_path):
    code = ("import sys\nfrom pysynth.models.generate import Generator\n"
            "g = Generator.load(default='k2q-copynet-small')\n"
            "print(type(g.backend).__name__, 'torch' in sys.modules, g.generate(['capital australia'], beam=2, n=1)[0].texts)")
    env = dict(os.environ)
    (tmp_path / "sitecustomize.py").write_text(BLOCK_TORCH)
    env["PYTHONPATH"] = os.pathsep.join([str(tmp_path), str(ROOT)])
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("OrtBackend False [")
