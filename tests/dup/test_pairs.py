"""Title-body weak supervision (Rücklé et al. 2019, Appendix A): HTML to text, paragraph choice,
WS-TB pairs on a shared dump (negatives never the question or its duplicates), the CLI."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pysynth.dup.pairs import html_to_text, paragraphs, select_paragraph, ws_tb_pairs

DATA = Path(os.environ.get("PYSYNTH_DATA", Path(__file__).resolve().parents[3] / "shared" / "data"))
DUMPS = DATA / "stackexchange_dumps"
need_data = pytest.mark.skipif(not DUMPS.is_dir(), reason="shared data not present")


@pytest.mark.parametrize("body, want", [
    ('<p>Hello <a href="http://x.com/a">the docs</a>, see http://foo.org/x</p>', "Hello the docs, see URL"),
    ("<p>a</p><pre><code>x = 1\ny = 2</code></pre><p>b</p>", "a\nb"),
    ("<ul><li>one</li><li>two &amp; three</li></ul>", "one\ntwo & three"),
    ('<p>Use <code>ls -la</code> <img src="a.png" alt="x"/>now</p>', "Use ls -la now"),
    ("<p>unclosed <b>bold", "unclosed bold"), ("", ""), ("plain text", "plain text"),
])
def test_html_to_text(body, want):
    assert html_to_text(body) == want


def test_paragraphs_and_selection():
    text = "too short\n" + "a b c d e f g h i j about beer hops\n" + "one two three four five six seven eight nine ten"
    ps = paragraphs(text)
    assert len(ps) == 2
    assert select_paragraph("what are beer hops", ps, {"beer": 1, "hops": 1}, 10) == 0
    with pytest.raises(TypeError, match="body"):
        html_to_text(None)


@need_data
def test_ws_tb_on_a_dump():
    rows, counts = ws_tb_pairs(DUMPS / "beer", negatives=3, seed=1)
    assert counts["kept"] + counts.get("short_body", 0) + counts.get("no_title", 0) == counts["questions"]
    assert counts["pairs"] == len(rows) == 4 * counts["kept"]
    again, _ = ws_tb_pairs(DUMPS / "beer", negatives=3, seed=1)
    assert again == rows
    from pysynth.stackexchange import open_dump

    dups = {(r["PostId"], r["RelatedPostId"]) for r in open_dump(DUMPS / "beer").rows("PostLinks")
            if r["LinkTypeId"] == "3"}
    dups |= {(b, a) for a, b in dups}
    for r in rows:
        if r["label"] == 0:
            assert r["neg_post_id"] != r["post_id"] and (r["post_id"], r["neg_post_id"]) not in dups
    keep, c2 = ws_tb_pairs(DUMPS / "beer", negatives=0, exclude=[rows[0]["post_id"]], min_score=1)
    assert c2["excluded"] == 1 and c2["low_score"] > 0 and all(r["label"] == 1 for r in keep)


@need_data
def test_cli(tmp_path):
    out = tmp_path / "p.jsonl"
    r = subprocess.run([sys.executable, "-m", "pysynth", "dup", "pairs", "--dump", str(DUMPS / "coffee"), "--out",
                        str(out), "--negatives", "1"], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)[str(DUMPS / "coffee")]["pairs"] == sum(1 for _ in out.open())
    r = subprocess.run([sys.executable, "-m", "pysynth", "dup", "pairs", "--dump", str(DUMPS / "coffee"), "--out",
                        str(out), "--method", "dqg"], capture_output=True, text=True)
    assert r.returncode == 2 and "not built yet" in r.stderr and "Traceback" not in r.stderr
