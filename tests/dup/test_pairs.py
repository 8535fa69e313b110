"""Title-body weak supervision (Rücklé et al. 2019, Appendix A): HTML to text, paragraph choice,
WS-TB pairs on a shared dump (negatives never the question or its duplicates), the CLI; the
resumable ``make_pairs`` job for ws-tb / dqg / both on a tiny written dump (bad bodies counted,
kill + rerun byte-identical)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from html import escape
from pathlib import Path

import pytest

from pysynth.dup.pairs import draw_negatives, make_pairs, ws_tb_pairs
from pysynth.dup.prep import html_to_text, paragraphs, select_paragraph

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
    left_out = sum(counts.get(k, 0) for k in ("short_body", "no_title", "empty_body"))
    assert counts["kept"] + left_out == counts["questions"]
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
    assert json.loads(r.stdout)["dumps"]["coffee"]["pairs"] == sum(1 for _ in out.open())
    r = subprocess.run([sys.executable, "-m", "pysynth", "dup", "pairs", "--dump", str(DUMPS / "coffee"), "--out",
                        str(out), "--method", "dqg", "--model", str(tmp_path / "nope")], capture_output=True, text=True)
    assert r.returncode == 2 and "--model" in r.stderr and "Traceback" not in r.stderr


# ------------------------------------------------------------------------------ make_pairs on a written dump

LONG = "This sentence has more than ten words in it, about {} and nothing else at all."
POSTS = [  # (id, title, body html, score)
    (1, "How do I clean a {} grinder?", "<p>" + LONG + "</p><pre><code>rm -rf /</code></pre>", 3),
    (2, "Why is my {} bitter?", "<p>" + LONG + ' See <a href="http://x.org">this</a>.</p>', 1),
    (3, "Which {} beans for espresso?", "<ul><li>" + LONG + "</li><li>short</li></ul>", 0),
    (4, "Is {} healthy?", "", 2),  # empty body
    (5, "Broken {}", "<p>" + LONG + "<b><i>unclosed <a href=", 5),  # broken HTML: kept as text
    (6, "Short {}", "<p>too short</p>", 1),
    (7, "Duplicate of one {}", "<p>" + LONG + "</p>", 0),
    (8, "Where to buy {}?", "<p>" + LONG + "</p>", -2),
]


def write_dump(root: Path, site: str = "tiny", topic: str = "coffee") -> Path:
    d = root / site
    d.mkdir(parents=True)
    rows = "".join(f'  <row Id="{i}" PostTypeId="1" Score="{sc}" Title="{escape(t.format(topic))}" '
                   f'Body="{escape(b.format(topic))}" />\n' for i, t, b, sc in POSTS)
    rows += '  <row Id="100" PostTypeId="2" ParentId="1" Score="1" Body="&lt;p&gt;an answer&lt;/p&gt;" />\n'
    (d / "Posts.xml").write_text(f'<?xml version="1.0" encoding="utf-8"?>\n<posts>\n{rows}</posts>\n')
    (d / "PostLinks.xml").write_text('<?xml version="1.0" encoding="utf-8"?>\n<postlinks>\n'
                                     '  <row Id="1" PostId="7" RelatedPostId="1" LinkTypeId="3" />\n'
                                     '  <row Id="2" PostId="2" RelatedPostId="3" LinkTypeId="1" />\n</postlinks>\n')
    return d


def _rows(path):
    return [json.loads(x) for x in Path(path).read_text().splitlines()]


def test_draw_negatives():
    assert sorted(draw_negatives("k", 5, 10, {0})) == [1, 2, 3, 4]
    a = draw_negatives("k", 1000, 5, {3, 4})
    assert a == draw_negatives("k", 1000, 5, {3, 4}) and len(set(a)) == 5 and not {3, 4} & set(a)


def test_make_pairs_ws_tb(tmp_path):
    d = write_dump(tmp_path)
    s = make_pairs([d], tmp_path / "p.jsonl", "ws-tb", negatives=2, exclude=["tiny:8", "999", "other:1"],
                   progress=False)
    c = s["dumps"]["tiny"]
    assert c["questions"] == 8 and c["empty_body"] == 1 and c["short_body"] == 1 and c["excluded"] == 1
    assert c["kept"] == 5 and s["exclude_ids_unknown"] == 2  # 999 and other:1 name no question
    rows = _rows(tmp_path / "p.jsonl")
    assert len(rows) == c["pairs"] == 3 * 5
    assert {r["post_id"] for r in rows} == {"1", "2", "3", "5", "7"}
    for r in rows:
        if r["label"] == 0:  # 1 and 7 are PostLinks duplicates: never each other's negative
            assert r["neg_post_id"] != r["post_id"] and {r["post_id"], r["neg_post_id"]} != {"1", "7"}
    assert "rm -rf" not in json.dumps(rows) and "unclosed" in json.dumps(rows)
    plain, _ = ws_tb_pairs(d, negatives=2, exclude=["tiny:8", "999", "other:1"])
    assert plain == rows
    s = make_pairs([d], tmp_path / "h.jsonl", "ws-tb", holdout_linked=True, min_score=0, progress=False)
    assert s["dumps"]["tiny"]["eval_holdout"] == 2 and s["dumps"]["tiny"]["low_score"] == 1
    assert not {"1", "7"} & {r["post_id"] for r in _rows(tmp_path / "h.jsonl")}


def test_make_pairs_bad_input(tmp_path):
    d = write_dump(tmp_path)
    with pytest.raises(ValueError, match="exclude"):
        make_pairs([d], tmp_path / "p.jsonl", exclude=["abc"], progress=False)
    with pytest.raises(ValueError, match="given twice"):
        make_pairs([d, d], tmp_path / "p.jsonl", progress=False)
    with pytest.raises(ValueError, match="method"):
        make_pairs([d], tmp_path / "p.jsonl", "dqq", progress=False)
    with pytest.raises(ValueError, match="no such"):
        make_pairs([tmp_path / "missing"], tmp_path / "p.jsonl", progress=False)
    with pytest.raises(ValueError, match="model"):
        make_pairs([d], tmp_path / "p.jsonl", "dqg", model=str(tmp_path / "nope"), progress=False)
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "Posts.xml").write_text("<posts><row Id='1' PostTypeId='1' Title='t' Body='b")
    with pytest.raises(ValueError, match="Posts"):
        make_pairs([tmp_path / "broken"], tmp_path / "b.jsonl", progress=False)


def test_make_pairs_dqg_and_both(tmp_path):
    d = write_dump(tmp_path)
    s = make_pairs([d], tmp_path / "dqg.jsonl", "dqg", negatives=1, beam=2, chunk_size=2, progress=False)
    c = s["dumps"]["tiny"]
    dqg = _rows(tmp_path / "dqg.jsonl")
    assert c["kept"] == c["dqg_titles"] == 6 and c["pairs"] == len(dqg) == 12
    assert all(r["method"] == "dqg" and isinstance(r["body"], str) and r["body"].strip() for r in dqg)
    assert make_pairs([d], tmp_path / "dqg2.jsonl", "dqg", negatives=1, beam=2, chunk_size=3,
                      progress=False)["rows"] == 12
    assert (tmp_path / "dqg.jsonl").read_bytes() == (tmp_path / "dqg2.jsonl").read_bytes()  # chunking-free
    make_pairs([d], tmp_path / "ws.jsonl", "ws-tb", negatives=1, progress=False)
    s = make_pairs([d], tmp_path / "both.jsonl", "both", negatives=1, beam=2, progress=False)
    both = _rows(tmp_path / "both.jsonl")
    assert sorted(map(json.dumps, both)) == sorted(map(json.dumps, dqg + _rows(tmp_path / "ws.jsonl")))
    assert s["dumps"]["tiny"]["pairs"] == len(both)


_KILLED = """
import sys
from pysynth.dup.pairs import make_pairs
make_pairs([sys.argv[1]], sys.argv[2], "both", beam=2, chunk_size=2, progress=False, _stop_after_chunks=1)
"""


def test_make_pairs_resumes_byte_identical(tmp_path):
    d = write_dump(tmp_path)
    out = tmp_path / "r.jsonl"
    r = subprocess.run([sys.executable, "-c", _KILLED, str(d), str(out)], capture_output=True, text=True)
    assert r.returncode == 75, r.stderr  # died right after its first part landed
    assert not out.exists() and (tmp_path / "r.jsonl.parts").is_dir()
    s = make_pairs([d], out, "both", beam=2, chunk_size=2, progress=False)
    assert s["chunks_resumed"] == 1
    make_pairs([d], tmp_path / "fresh.jsonl", "both", beam=2, chunk_size=2, progress=False)
    assert out.read_bytes() == (tmp_path / "fresh.jsonl").read_bytes()
    r = subprocess.run([sys.executable, "-c", _KILLED, str(d), str(out)], capture_output=True, text=True)
    assert r.returncode == 75
    with pytest.raises(ValueError, match="different run"):  # other settings, same parts: refused
        make_pairs([d], out, "both", beam=1, chunk_size=2, progress=False)


def test_make_pairs_min_wellformed_filters_generated_titles(tmp_path):
    """--min-wellformed (the row stage's filter): a generated title under it gives no DQG pair."""
    d = write_dump(tmp_path)
    base = make_pairs([d], tmp_path / "a.jsonl", "dqg", beam=2, progress=False)
    same = make_pairs([d], tmp_path / "b.jsonl", "dqg", beam=2, min_wellformed=0.0, progress=False)
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    assert same["dumps"]["tiny"]["pairs"] == base["dumps"]["tiny"]["pairs"]
    s = make_pairs([d], tmp_path / "c.jsonl", "both", beam=2, min_wellformed=1.0, progress=False)
    c = s["dumps"]["tiny"]
    assert c["dqg_not_wellformed"] == base["dumps"]["tiny"]["dqg_titles"] and c["dqg_titles"] == 0
    assert {r["method"] for r in _rows(tmp_path / "c.jsonl")} == {"ws-tb"}
    with pytest.raises(ValueError, match="min_wellformed"):
        make_pairs([d], tmp_path / "e.jsonl", "dqg", min_wellformed=2, progress=False)


def test_make_pairs_dqg_extract_needs_no_model(tmp_path):
    d = write_dump(tmp_path)
    s = make_pairs([d], tmp_path / "x.jsonl", "dqg", model="extract", negatives=1, chunk_size=2, progress=False)
    rows = _rows(tmp_path / "x.jsonl")
    assert s["dumps"]["tiny"]["dqg_titles"] == 6 and len(rows) == 12
    bodies = {r["post_id"]: r["body"] for r in rows if r["label"] == 1}
    from pysynth.dup.dqg import extract_title
    from pysynth.dup.prep import questions

    assert bodies == {q["post_id"]: extract_title(q["body"]) for q in questions(d).rows}
    meta = json.loads((tmp_path / "x.jsonl.meta.json").read_text())
    assert '"dqg": {"name": "extract"' in json.dumps(meta)  # the rule, not a model fingerprint, is signed
