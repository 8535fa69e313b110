"""Stack Exchange dump reader and MQR pair mining (Chu et al. 2020): filters, modes, splits, the
released data, bad dumps, the CLI."""
from __future__ import annotations

import gzip
import json
import shutil
import subprocess
import sys

import pytest

from pysynth.mqr import mining as M
from pysynth.stackexchange import Dump, iter_rows

from _data_dir import DATA  # noqa: E402

DUMPS = DATA / "stackexchange_dumps"
MQR = DATA / "mqr"
need_data = pytest.mark.skipif(not (DUMPS.is_dir() and MQR.is_dir()), reason="shared data not present")


def _xml(root: str, rows) -> str:
    from xml.sax.saxutils import quoteattr

    body = "".join("  <row " + " ".join(f"{k}={quoteattr(str(v))}" for k, v in r.items()) + " />\n" for r in rows)
    return f'\ufeff<?xml version="1.0" encoding="utf-8"?>\n<{root}>\n{body}</{root}>\n'


def _hist(hid, typ, pid, text=None):
    r = {"Id": hid, "PostHistoryTypeId": typ, "PostId": pid, "CreationDate": "2019-01-01T00:00:00.000"}
    if text is not None:
        r["Text"] = text
    return r


POSTS = [
    {"Id": 1, "PostTypeId": 1, "Title": "How do I fix a flat tire?"},
    {"Id": 2, "PostTypeId": 1, "Title": "Why is my chain squeaking?"},
    {"Id": 3, "PostTypeId": 1, "Title": "What brakes should I buy?"},
    {"Id": 4, "PostTypeId": 1, "Title": "Bike recommendations"},
    {"Id": 5, "PostTypeId": 1, "Title": "Is this merged?"},
    {"Id": 6, "PostTypeId": 1, "Title": "Can I ride in rain? [closed]"},
    {"Id": 7, "PostTypeId": 2, "Body": "an answer"},
    {"Id": 8, "PostTypeId": 1, "Title": "What is дорожный велосипед?"},
    {"Id": 9, "PostTypeId": 1, "Title": "How long do tires last"},
    {"Id": 1000000001, "PostTypeId": 1, "Title": "What is a fabricated row?"},
]
HISTORY = [
    _hist(1, 1, 1, "flat tire fix"), _hist(2, 2, 1, "body"), _hist(3, 4, 1, "fixing flat tire"),
    _hist(4, 4, 1, "How do I fix a flat tire?"),
    _hist(5, 1, 2, "chain squeak"), _hist(6, 4, 2, "Why is my chain squeaking"), _hist(7, 7, 2, "chain squeak"),
    _hist(8, 1, 3, "What brakes should I buy?"),  # never edited
    _hist(9, 1, 4, "bike recs"), _hist(10, 4, 4, "Bike recommendations"),  # not a question after the edit
    _hist(11, 1, 5, "merged thing"), _hist(12, 4, 5, "Is this merged?"), _hist(13, 37, 5),
    _hist(14, 1, 6, "can i ride in rain?"), _hist(15, 4, 6, "Can I ride in rain? [closed]"),
    _hist(16, 1, 8, "velo"), _hist(17, 4, 8, "What is дорожный велосипед?"),
    _hist(18, 1, 9, "tire life"), _hist(19, 4, 9, "How long do tires last"),
    _hist(20, 1, 11, "deleted question"), _hist(21, 4, 11, "Why was this deleted?"),
    _hist(22, 1, 1000000001, "fab"), _hist(23, 4, 1000000001, "What is a fabricated row?"),
]


@pytest.fixture
def dump(tmp_path):
    d = tmp_path / "bikes"
    d.mkdir()
    (d / "Posts.xml").write_text(_xml("posts", POSTS), encoding="utf-8")
    with gzip.open(d / "PostHistory.xml.gz", "wt", encoding="utf-8") as f:
        f.write(_xml("posthistory", HISTORY))
    return d


def test_reader_streams_rows_of_plain_and_gzip_tables(dump):
    d = Dump(dump)
    assert d.site == "bikes" and d.tables() == ["Posts", "PostHistory"]
    rows = list(d.rows("Posts"))
    assert [r["Id"] for r in rows] == [str(p["Id"]) for p in POSTS]
    assert rows[7]["Title"] == "What is дорожный велосипед?"
    assert len(list(d.rows("PostHistory"))) == len(HISTORY)


def test_reader_is_lazy(tmp_path):
    big = tmp_path / "Posts.xml"
    with open(big, "w", encoding="utf-8") as f:
        f.write('<?xml version="1.0" encoding="utf-8"?>\n<posts>\n')
        for i in range(200_000):
            f.write(f'  <row Id="{i}" PostTypeId="1" Title="title number {i} padded {"x" * 40}" />\n')
        f.write("</posts>\n")
    it = iter_rows(big, "posts")
    first = next(it)  # one 1 MiB chunk parsed, not the 18 MB file
    assert first["Id"] == "0"
    assert sum(1 for _ in it) == 199_999


@pytest.mark.parametrize("content,msg", [
    ("<posts>\n  <row Id='1' Title='a' />\n  <row Id='2' Title='b\n</posts>", "broken XML at line"),
    ("<posts>\n  <row Id='1' />\n", "truncated XML \\(the file ends inside the table\\) at line"),
    ("", "truncated XML"),
    ("<posthistory>\n</posthistory>\n", "holds <posthistory> rows, not the <posts> table"),
])
def test_bad_xml_is_a_value_error_naming_the_file(tmp_path, content, msg):
    p = tmp_path / "Posts.xml"
    p.write_text(content)
    with pytest.raises(ValueError, match=msg) as exc:
        list(iter_rows(p, "posts"))
    assert str(p) in str(exc.value)


def test_truncated_gzip_and_missing_tables(dump, tmp_path):
    raw = (dump / "PostHistory.xml.gz").read_bytes()
    bad = tmp_path / "cut"
    bad.mkdir()
    shutil.copy(dump / "Posts.xml", bad / "Posts.xml")
    (bad / "PostHistory.xml.gz").write_bytes(raw[: len(raw) // 2])
    with pytest.raises(ValueError, match="PostHistory.xml.gz: cannot read"):
        M.mine([bad])
    (bad / "PostHistory.xml.gz").unlink()
    with pytest.raises(ValueError, match="no PostHistory table.*it has: Posts"):
        M.mine([bad])
    with pytest.raises(ValueError, match="no such directory"):
        Dump(tmp_path / "nope")
    with pytest.raises(ValueError, match="unknown Stack Exchange table"):
        Dump(dump).rows("Questions")


def test_seven_zip_archives(dump, tmp_path):
    py7zr = pytest.importorskip("py7zr")
    arc = tmp_path / "bikes.stackexchange.com.7z"
    with py7zr.SevenZipFile(arc, "w") as z:
        z.write(dump / "Posts.xml", "Posts.xml")
        z.writestr(gzip.decompress((dump / "PostHistory.xml.gz").read_bytes()), "PostHistory.xml")
    d = Dump(arc)
    assert d.site == "bikes" and set(d.tables()) == {"Posts", "PostHistory"}
    assert M.mine([d]).rows == M.mine([Dump(dump)]).rows
    # a directory holding one archive is the same dump
    only = tmp_path / "only"
    only.mkdir()
    shutil.copy(arc, only / arc.name)
    assert Dump(only).tables() == d.tables()
    cut = tmp_path / "meta.bikes.stackexchange.com.7z"
    cut.write_bytes(arc.read_bytes()[:200])
    with pytest.raises(ValueError, match="7z"):
        Dump(cut).rows("Posts").__next__()
    assert Dump(cut).site == "bikes.meta"


def test_filters():
    assert M.check_pair("flat tire fix", "How do I fix a flat tire?") is None
    assert M.check_pair("what's this", "What's this thing?") is None  # a prefix test: "what's" starts with "what"
    assert M.check_pair("Can I ride?", "can i  ride? [closed]") == "unchanged"
    assert M.check_pair("bike recs", "Bike recommendations?") == "question_word"
    assert M.check_pair("tire life", "How long do tires last") == "question_mark"
    assert M.check_pair("velo", "What is дорожный велосипед?") == "valid_chars"
    assert M.valid_char_fraction("ab?") == 1.0 and M.valid_char_fraction("") == 0.0
    assert M.split_bleu(["how to fix tire"], ["how to fix tire ?"]).tolist() == [1.0]
    with pytest.raises(ValueError, match="align"):
        M.split_bleu(["a"], [])


def test_mining_counts_every_pair(dump):
    res = M.mine([dump], splits=True)
    got = {r["post_id"]: (r["ill_formed"], r["well_formed"]) for r in res.rows}
    assert got == {1: ("flat tire fix", "How do I fix a flat tire?"), 2: ("chain squeak", "Why is my chain squeaking?")}
    c = res.counts["bikes"]
    assert c == {"edited": 9, "fabricated": 1, "moved": 1, "missing": 1, "pairs": 6, "unchanged": 1,
                 "question_word": 1, "question_mark": 1, "valid_chars": 1, "kept": 2, "devtest": 2, "train": 0}
    # every edited question is accounted for
    assert c["edited"] == c["fabricated"] + c["moved"] + c["missing"] + c["pairs"]
    assert c["pairs"] == sum(c[f] for f in M.FILTERS) + c["kept"]
    assert all(r["split"] == "devtest" and r["bleu"] < 0.3 for r in res.rows)
    assert res.stats["all"]["pairs"] == 2 and res.stats["all"]["sites"] == 1


def test_modes(dump):
    last = {pid: (a, b) for pid, a, b in M.title_pairs(Dump(dump), "last-edit")}
    assert last[1] == ("fixing flat tire", "How do I fix a flat tire?")
    assert last[2] == ("Why is my chain squeaking", "Why is my chain squeaking?")  # before the rollback
    every = [(pid, a, b) for pid, a, b in M.title_pairs(Dump(dump), "all-edits") if pid == 1]
    assert every == [(1, "flat tire fix", "fixing flat tire"), (1, "fixing flat tire", "How do I fix a flat tire?")]
    with pytest.raises(ValueError, match="mode"):
        list(M.title_pairs(Dump(dump), "first"))
    with pytest.raises(ValueError, match="given twice"):
        M.mine([dump, dump])


@need_data
def test_every_released_pair_passes_the_filters_and_the_split_rule():
    rows = [json.loads(x) for f in ("dev", "test") for x in gzip.open(MQR / f"{f}.jsonl.gz")]
    assert len(rows) == 3802
    assert [M.check_pair(r["ill_formed"], r["well_formed"]) for r in rows] == [None] * len(rows)
    bleu = M.split_bleu([r["ill_formed"] for r in rows], [r["well_formed"] for r in rows])
    assert bleu.max() < 0.3


@need_data
def test_shared_dumps_reproduce_the_released_pairs():
    """Released dev/test pairs whose question is in the (older) shared dumps and was edited there
    come out exactly, as dev/test candidates."""
    rel = [json.loads(x) for f in ("dev", "test") for x in gzip.open(MQR / f"{f}.jsonl.gz")]
    sites = ["ai", "beer", "bicycles.meta", "french.meta"]
    res = M.mine([DUMPS / s for s in sites], splits=True)
    got = {(r["site"], r["post_id"]): r for r in res.rows}
    found = 0
    for site in sites:
        edited = {pid for pid, _, _ in M.title_pairs(Dump(DUMPS / site))}
        for r in rel:
            if r["category"] == site and int(r["post_id"]) in edited:
                g = got[(site, int(r["post_id"]))]
                assert (g["ill_formed"], g["well_formed"], g["split"]) == (r["ill_formed"], r["well_formed"], "devtest")
                found += 1
    assert found == 3
    assert sum(c["kept"] for c in res.counts.values()) == len(res.rows) == 254


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "pysynth", "mqr", "mine", *args], capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)


def test_cli(dump, tmp_path):
    out = tmp_path / "pairs.jsonl"
    r = _cli("--in", str(dump), "--out", str(out), "--splits")
    assert r.returncode == 0, r.stderr
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    assert [x["post_id"] for x in rows] == [1, 2] and rows[0]["site"] == "bikes"
    meta = json.loads((tmp_path / "pairs.jsonl.meta.json").read_text())
    assert meta["counts"]["bikes"]["kept"] == 2 and meta["signature"]["format"] == "pysynth.mqr.mine"
    assert "mined 2 pairs from 1 sites" in r.stderr
    r = _cli("--in", str(tmp_path / "none"), "--out", str(tmp_path / "x.jsonl"))
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "no such dump" in r.stderr
    (dump / "Posts.xml").write_text("<posts><row Id='1'")
    r = _cli("--in", str(dump), "--out", str(tmp_path / "y.jsonl"))
    assert r.returncode == 1 and r.stderr.count("\n") == 1 and "Posts.xml: truncated XML" in r.stderr
    assert not (tmp_path / "y.jsonl").exists()
