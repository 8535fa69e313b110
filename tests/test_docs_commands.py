"""Every command in README.md and docs/*.md (their fenced ``bash`` blocks) runs as written (issue 28).

The ``pysynth`` commands that work offline on bundled data or small inputs run here, each page's in
order in one temporary folder (a later command reads what an earlier one wrote, e.g. ``kw.jsonl``),
with the small input files a page names seeded there. ``[--flag ...]`` groups are the pages'
optional parts: they are left out. Every other command is in :data:`SKIP` or :data:`SKIP_PROGRAMS`
with its reason, so a new command in the docs needs a decision here; a skip that matches no command
fails too.
"""
from __future__ import annotations

import gzip
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from test_docs import DOCS, README, ROOT

#: one command's time limit (seconds); the slowest (the README's qagen run) takes a few seconds
TIMEOUT = 120
_BASH = re.compile(r"^```(?:bash|sh)[^\n]*\n(.*?)^```", re.M | re.S)
_OPTIONAL = re.compile(r"\s\[-[^\]]*\]")

#: programs whose commands install, test or need a server or a cluster
SKIP_PROGRAMS = {
    "pip": "installs (checked by hand in a fresh venv: bench/RESULTS.md 'Models packaged apart')",
    "python3": "the test suite itself (.ci/run)",
    "curl": "needs a running server (tests/serve start one)",
    "ray": "starts a Ray cluster (docs/scale-out.md; tests/pipelines run the Ray executor)",
    "kubectl": "needs a Kubernetes cluster",
}
#: (page, the command's start) -> why it does not run here
SKIP = {
    ("README.md", "pysynth serve"): "starts a server (tests/serve)",
    ("docs/serving.md", "pysynth serve"): "starts a server (tests/serve)",
    ("docs/platform.md", "pysynth summq"): "the page's worked example of a sixth method, not in the package",
    ("docs/platform.md", "pysynth serve --model summq"): "the page's worked example of a sixth method",
    ("docs/models.md", "pysynth models install"): "installs a package (tests/test_model_packages.py: --dry-run)",
    ("docs/models.md", "pysynth k2q train"): "trains a model with torch (minutes)",
    ("docs/models.md", "pysynth export onnx --model runs/copynet"): "needs the model the skipped train writes",
    ("docs/k2q.md", "pysynth k2q train"): "trains a model with torch (minutes)",
    ("docs/k2q.md", "pysynth export onnx --model runs/copynet"): "needs the model the skipped train writes",
    ("docs/k2q.md", "pysynth k2q table1"): "needs ../shared/data and runs for minutes",
    ("docs/k2q.md", "pysynth k2q make-corpus --n 1000000"): "a million-row corpus for scale runs (tests/k2q: small n)",
    ("docs/dup.md", "pysynth dup pairs --in DUMP"): "needs a Stack Exchange dump (DUMP: shared data)",
    ("docs/dup.md", "pysynth dup evaluate-dqg --in DUMP"): "needs a Stack Exchange dump (DUMP: shared data)",
    ("docs/dup.md", "pysynth dup train"): "trains a model with torch (minutes)",
    ("docs/dup.md", "pysynth dup eval-data --source comqa"): "needs ../shared/data",
    ("docs/dup.md", "pysynth dup evaluate --in comqa_eval.jsonl"): "needs the file the skipped eval-data writes",
    ("docs/mqr.md", "pysynth mqr mine --in DUMP"): "needs a Stack Exchange dump (DUMP: shared data)",
    ("docs/mqr.md", "pysynth mqr train"): "trains a model with torch (minutes)",
    ("docs/mqr.md", "pysynth mqr evaluate"): "needs ../shared/data (Table 6) and runs for minutes",
    ("docs/paraphrase.md", "pysynth paraphrase generate --in q.jsonl --out p.jsonl --pivot DIR_EN_X"):
        "DIR_EN_X, DIR_X_EN: the page's placeholders for pivot models of your own",
    ("docs/paraphrase.md", "pysynth paraphrase train-pivot"): "trains a model with torch on ../shared/data",
    ("docs/qagen.md", "pysynth qagen generate --in squad.json"): "squad.json: a SQuAD file of your own, on Ray",
    ("docs/qagen.md", "pysynth qagen evaluate"): "needs a held-out SQuAD file (shared data) and runs for minutes",
    ("docs/qagen.md", "pysynth qagen train-"): "trains a model with torch on SQuAD (shared data)",
    ("docs/scale-out.md", "pysynth"): "starts Ray (local or a cluster; tests/pipelines run the Ray executor)",
    ("docs/llm.md", "vllm serve"): "starts an LLM server (a GPU, a 7B model download)",
    ("docs/llm.md", "llama-server"): "starts an LLM server (a GGUF model file)",
    ("docs/llm.md", "python -m llama_cpp.server"): "starts an LLM server (a GGUF model file)",
    ("docs/llm.md", "docker run"): "starts an LLM server in Docker (a GPU)",
    ("docs/llm.md", "S="): "names the LLM server of the commands below",
    ("docs/llm.md", "pysynth"): "needs an LLM server ($S) or a local causal LM folder (tests/llm use a fake server)",
}


def commands(page: Path):
    """``(line, command)`` of every command in ``page``'s bash blocks: continuation lines joined,
    comment-only lines left out."""
    text = page.read_text(encoding="utf-8")
    for m in _BASH.finditer(text):
        line = text.count("\n", 0, m.start(1)) + 1
        pending, start = "", line
        for i, raw in enumerate(m.group(1).splitlines()):
            s = raw.strip()
            if not pending:
                start = line + i
            if not s or (s.startswith("#") and not pending):
                continue
            if s.endswith("\\"):
                pending += s[:-1] + " "
                continue
            yield start, pending + s
            pending = ""


def _name(page: Path) -> str:
    return str(page.relative_to(ROOT))


def skip_reason(page: Path, command: str):
    prog = command.split()[0]
    if prog in SKIP_PROGRAMS:
        return SKIP_PROGRAMS[prog]
    return next((why for (p, start), why in SKIP.items() if p == _name(page) and command.startswith(start)), None)


def _seed(d: Path) -> None:
    """The small inputs the pages' commands name (from the bundled data)."""
    with gzip.open(ROOT / "pysynth" / "data" / "k2q_demo.jsonl.gz", "rt", encoding="utf-8") as f:
        rows = [json.loads(next(f)) for _ in range(12)]  # few: paraphrase decodes each through two pivots
    (d / "questions.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    (d / "q.jsonl").write_text("".join(json.dumps({"question": r["question"]}) + "\n" for r in rows[:4]),
                               encoding="utf-8")
    (d / "queries.jsonl").write_text("".join(json.dumps({"id": i, "question": r["question"]}) + "\n"
                                             for i, r in enumerate(rows[:3])), encoding="utf-8")
    (d / "clusters.jsonl").write_text("".join(json.dumps({"cluster_id": f"c{i}", "ids": [rows[2 * i]["id"],
                                                                                    rows[2 * i + 1]["id"]]}) + "\n"
                                              for i in range(3)), encoding="utf-8")
    with gzip.open(ROOT / "pysynth" / "data" / "qagen_sample.json.gz", "rt", encoding="utf-8") as f:
        para = json.load(f)["data"][0]["paragraphs"][0]
    answers = [{"context": para["context"], "answer_text": a["text"], "answer_start": a["answer_start"]}
               for qa in para["qas"][:2] for a in qa["answers"][:1]]
    (d / "answers.jsonl").write_text("".join(json.dumps(a) + "\n" for a in answers), encoding="utf-8")


def test_every_skip_is_a_command_of_its_page():
    all_commands = {(_name(p), c) for p in [README, *DOCS] for _, c in commands(p)}
    stale = [k for k in SKIP if (ROOT / k[0]).is_file()
             and not any(p == k[0] and c.startswith(k[1]) for p, c in all_commands)]
    assert not stale, f"SKIP entries that match no command (a doc changed): {stale}"


@pytest.mark.slow
@pytest.mark.parametrize("page", [README, *DOCS], ids=_name)
def test_the_commands_of_a_page_run(page, tmp_path):
    _seed(tmp_path)
    env = {**os.environ, "PATH": os.pathsep.join([str(Path(sys.executable).parent), os.environ.get("PATH", "")])}
    env.pop("PYSYNTH_DEBUG", None)
    ran, failed = 0, []
    for line, command in commands(page):
        if skip_reason(page, command) is not None:
            continue
        cmd = _OPTIONAL.sub("", command)
        try:
            done = subprocess.run(["bash", "-c", f"set -o pipefail; {cmd}"], cwd=tmp_path, env=env, text=True,
                                  capture_output=True, timeout=TIMEOUT, stdin=subprocess.DEVNULL)
        except subprocess.TimeoutExpired:
            failed.append(f"{_name(page)}:{line}: {command}\n  timed out after {TIMEOUT} s")
            continue
        ran += 1
        if done.returncode != 0:
            failed.append(f"{_name(page)}:{line}: {command}\n  exit {done.returncode}: {done.stderr.strip()[-600:]}")
    assert not failed, "\n".join(failed)
    if ran == 0:
        pytest.skip(f"{_name(page)}: no command runs offline on bundled data")
