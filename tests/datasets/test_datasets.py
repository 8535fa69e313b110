"""The format readers of pysynth.datasets: SQuAD, Stack Exchange, Tatoeba, VQA."""
from __future__ import annotations

import doctest
import gzip
import json

import pytest

from pysynth.datasets import squad, stackexchange, tatoeba, vqa

DOC = {"data": [
    {"title": "A", "paragraphs": [
        {"context": "Paris is in France.", "qas": [
            {"id": "1", "question": "Where is  Paris?", "answers": [{"text": "France", "answer_start": 12}]}]},
        {"context": "x", "qas": []}]},
    {"title": "B", "paragraphs": [{"context": "y", "qas": [{"id": "2", "question": "Why?", "answers": []}]}]}]}


def test_squad_paragraphs_and_questions(tmp_path):
    path = tmp_path / "s.json.gz"
    path.write_bytes(gzip.compress(json.dumps(DOC).encode()))
    doc = squad.load(path)
    assert doc == DOC
    got = [(p.article, p.index, p.title, p.context, len(p.qas)) for p in squad.paragraphs(doc)]
    assert got == [(0, 0, "A", "Paris is in France.", 1), (0, 1, "A", "x", 0), (1, 0, "B", "y", 1)]
    assert squad.questions(doc) == ["Where is  Paris?", "Why?"]  # as written


@pytest.mark.parametrize("doc, match", [
    ({"x": 1}, "not SQuAD JSON"),
    ({"data": [{"title": "A"}]}, r"data\[0\]: expected an article"),
    ({"data": [{"paragraphs": [{"qas": []}]}]}, r"paragraphs\[0\]: no 'context'"),
    ({"data": [{"paragraphs": [{"context": "abc", "qas": {}}]}]}, "'qas' must be a list"),
    ({"data": [{"paragraphs": [{"context": "abc", "qas": [
        {"id": "q", "answers": [{"text": "b", "answer_start": 0}]}]}]}]}, "is not at answer_start=0"),
])
def test_squad_bad_documents(doc, match):
    with pytest.raises(ValueError, match=match):
        list(squad.paragraphs(doc, "f.json"))


def test_squad_bad_files(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"data": [')
    with pytest.raises(ValueError, match="malformed JSON at line 1"):
        squad.load(bad)
    latin = tmp_path / "latin.json"
    latin.write_bytes(b'{"t": "\xe9"}')
    with pytest.raises(ValueError, match="not UTF-8"):
        squad.load(latin)
    cut = tmp_path / "cut.json.gz"
    cut.write_bytes(gzip.compress(b"{}" * 100)[:12])
    with pytest.raises(ValueError, match="not a readable gzip"):
        squad.load(cut)


def test_squad_doctest():
    assert doctest.testmod(squad).failed == 0


def test_stackexchange_old_module_is_the_new_one():
    import pysynth.stackexchange as old
    from pysynth.stackexchange import Dump, open_dump

    assert old is stackexchange and Dump is stackexchange.Dump and open_dump is stackexchange.open_dump


def test_duplicate_links(tmp_path):
    (tmp_path / "Posts.xml").write_text('<posts>\n<row Id="1" PostTypeId="1" Title="a"/>\n</posts>\n')
    assert list(stackexchange.duplicate_links(tmp_path)) == []  # no PostLinks table
    (tmp_path / "PostLinks.xml").write_text(
        '<postlinks>\n<row Id="1" PostId="1" RelatedPostId="2" LinkTypeId="3"/>\n'
        '<row Id="2" PostId="3" RelatedPostId="4" LinkTypeId="1"/>\n'
        '<row Id="3" PostId="5" RelatedPostId="5" LinkTypeId="3"/>\n</postlinks>\n')
    assert list(stackexchange.duplicate_links(stackexchange.Dump(tmp_path))) == [("1", "2"), ("5", "5")]


def test_tatoeba_and_vqa(tmp_path):
    with pytest.raises(ValueError, match="tatoeba_eng_fra.pairs.jsonl.gz not found"):
        tatoeba.read_pairs(tmp_path)
    (tmp_path / "tatoeba_eng_fra").mkdir()
    with gzip.open(tmp_path / "tatoeba_eng_fra" / "pairs.jsonl.gz", "wt") as f:
        f.write('{"en": "Hi.", "fr": "Salut."}\n')
    assert tatoeba.read_pairs(tmp_path) == [{"en": "Hi.", "fr": "Salut."}]
    with pytest.raises(ValueError, match="split: must be one of"):
        vqa.split_path(tmp_path, "test")
    (tmp_path / "vqa_v2_subset").mkdir()
    with gzip.open(tmp_path / "vqa_v2_subset" / "valid.jsonl.gz", "wt") as f:
        f.write('{"question": "What color?", "answers": ["red"]}\n')
    assert [r["question"] for r in vqa.read_split(tmp_path, "valid")] == ["What color?"]


def test_title_events_and_question_titles(tmp_path):
    (tmp_path / "PostHistory.xml").write_text(
        '<posthistory>\n<row Id="1" PostHistoryTypeId="1" PostId="7" Text="first"/>\n'
        '<row Id="2" PostHistoryTypeId="2" PostId="7" Text="body"/>\n'
        '<row Id="3" PostHistoryTypeId="4" PostId="7" Text="second"/>\n'
        '<row Id="4" PostHistoryTypeId="7" PostId="7"/>\n'
        '<row Id="5" PostHistoryTypeId="35" PostId="8"/>\n</posthistory>\n')
    (tmp_path / "Posts.xml").write_text(
        '<posts>\n<row Id="7" PostTypeId="1" Title="now"/>\n<row Id="9" PostTypeId="2"/>\n'
        '<row Id="8" PostTypeId="1"/>\n</posts>\n')
    assert list(stackexchange.title_events(tmp_path)) == [
        (7, "initial", "first"), (7, "edit", "second"), (7, "rollback", None), (8, "moved", None)]
    assert list(stackexchange.question_titles(tmp_path)) == [(7, "now")]
