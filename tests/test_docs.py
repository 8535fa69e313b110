"""The README and docs/ stay what issue 25 asks: a short README with exactly the two set-up commands
(the test command identical to the one ``.ci/run`` runs), and no relative link to a missing file."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
DOCS = sorted((ROOT / "docs").glob("*.md"))

#: the main job on the bundled data (its output bytes are pinned by the k2q tests)
MAIN_COMMAND = "pip install . && pysynth k2q synthesize --out k2q_pairs.jsonl --workers 2"
#: the marker line in .ci/run after which the README's test command follows
CI_MARKER = "# --- the README's test command"

_LINK = re.compile(r"!?\[[^\]]*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
_FENCE = re.compile(r"^```[^\n]*\n(.*?)^```", re.M | re.S)


def _section(text: str, title: str) -> str:
    m = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, re.M | re.S)
    assert m, f"README.md has no '## {title}' section"
    return m.group(1)


def _ci_test_command() -> str:
    lines = (ROOT / ".ci" / "run").read_text(encoding="utf-8").splitlines()
    i = next(i for i, line in enumerate(lines) if line.startswith(CI_MARKER))
    return next(line for line in lines[i + 1:] if line.strip()).strip()


def test_readme_is_short():
    n = len(README.read_text(encoding="utf-8").splitlines())
    assert n <= 200, f"README.md has {n} lines; keep it at most 200 (details belong in docs/)"


def test_readme_has_exactly_the_two_setup_commands():
    blocks = [b.strip() for b in _FENCE.findall(_section(README.read_text(encoding="utf-8"), "Set up"))]
    assert blocks == [MAIN_COMMAND, _ci_test_command()], (
        "the Set up section must hold exactly two code blocks: the main job and .ci/run's test command; "
        f"found {blocks}")


def test_ci_runs_the_readme_test_command():
    cmd = _ci_test_command()
    assert cmd == 'python3 -m pip install -e ".[test]" && python3 -m pytest -q tests'
    assert README.read_text(encoding="utf-8").count(cmd) == 1


def _links(path: Path):
    text = path.read_text(encoding="utf-8")
    for m in _LINK.finditer(text):
        target = m.group(1)
        if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
            continue  # a URL (http:, mailto:) or an anchor in the same page
        yield text.count("\n", 0, m.start()) + 1, target.split("#", 1)[0]


@pytest.mark.parametrize("page", [README] + DOCS, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_point_to_files(page):
    missing = [f"line {line}: {target}" for line, target in _links(page)
               if not (page.parent / target).exists()]
    assert not missing, f"{page.relative_to(ROOT)} links to missing files: {missing}"


def test_every_method_has_a_page():
    names = {p.name for p in DOCS}
    for page in ("k2q.md", "qagen.md", "paraphrase.md", "mqr.md", "dup.md", "platform.md", "models.md",
                 "serving.md", "scale-out.md"):
        assert page in names, f"docs/{page} is missing"
