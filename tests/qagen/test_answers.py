"""Roundtrip QA that yields data (issue 26): several answers per context, span rejection before
question generation, the repeated-n-gram guard, and ``qagen questions`` (answers in, questions out)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter

import pytest

from pysynth.qagen import data as D
from pysynth.qagen.pipeline import (
    QAGenConfig,
    QAGenerator,
    ask_questions,
    has_repeated_ngram,
    sentence_starts,
    span_rejection,
)

CTX = [
    ("Oxygen", "Oxygen is a chemical element with symbol O and atomic number 8. It was discovered by Carl Wilhelm "
               "Scheele in Uppsala in 1773 or earlier."),
    ("Oxygen", "Oxygen gas constitutes 20.8% of the Earth's atmosphere. Joseph Priestley published his findings in "
               "1775 in London."),
    ("Rhine", "The Rhine is a European river that begins in the Swiss canton of Graubünden and flows to the North "
              "Sea."),
    ("Rhine", "The river is 1,230 kilometres long. It forms part of the border between Switzerland and Germany."),
    ("Solo", "Prime numbers have exactly two divisors. The number 2 is the only even prime, Euclid showed."),
]


def _contexts():
    return [D.Context(str(i), t, c) for i, (t, c) in enumerate(CTX)]


class _Words:
    """Answer extraction proposing every capitalised word, then two-word and cross-sentence spans."""

    name, joint = "words", True

    def extract(self, contexts, k=10, max_answer_len=32, joint=None):
        import re

        out = []
        for c in contexts:
            spans = [{"text": m.group(), "start": m.start(), "end": m.end(), "score": 1.0}
                     for m in re.finditer(r"[A-Z][a-z]+", c)]
            dot = c.find(". ")
            if dot > 5:  # a span across the first sentence boundary
                spans.append({"text": c[dot - 3:dot + 5], "start": dot - 3, "end": dot + 5, "score": 0.5})
            out.append(spans[:k])
        return out


class _Echo:
    """QA answering ``"what is X?"`` with X (when X is in the context)."""

    name = "echo"

    def answer(self, contexts, questions, max_answer_len=30):
        out = []
        for c, q in zip(contexts, questions):
            w = q[len("what is "):].rstrip("?")
            i = c.find(w)
            out.append({"text": w, "start": i, "end": i + len(w), "score": 3.0, "null_score": 0.0} if i >= 0
                       else {"text": "nothing", "start": 0, "end": 1, "score": 0.0, "null_score": 1.0})
        return out


class _Ask:
    """Asks ``what is A?``; loops for answers starting with "S" unless beam-decoded again."""

    name = "ask"

    def generate(self, contexts, answers, **kw):
        return [f"what is {c[a['start']:a['end']]}?" if not c[a["start"]:a["end"]].startswith("S")
                else "what of the what of the what?" for c, a in zip(contexts, answers)]

    def nbest(self, contexts, answers, beam_size=4):
        return [["what of the what of the what?", f"what is {c[a['start']:a['end']]}?"]
                for c, a in zip(contexts, answers)]


def _gen(**kw):
    return QAGenerator(QAGenConfig(**kw), _Words(), _Ask(), _Echo())


# ------------------------------------------------------------------------------ K answers

def test_k_distinct_answers_and_the_first_is_the_k1_draw():
    cs = _contexts()
    one = _gen(seed=5).run(cs)
    three = _gen(seed=5, answers_per_context=3).run(cs)
    assert len(one) == 5 and len(three) == 15  # every context has >= 3 candidate spans
    by_ctx = {}
    for r in three:
        by_ctx.setdefault(r["context_id"], []).append(r)
    assert list(by_ctx) == [c.id for c in cs]
    for first, rows in zip(one, by_ctx.values()):
        assert [r["answer_draw"] for r in rows] == [0, 1, 2]
        assert len({(r["answer_start"], r["answer_text"]) for r in rows}) == 3
        assert len({D.normalize_answer(r["answer_text"]) for r in rows}) == 3
        assert {k: v for k, v in rows[0].items() if k != "answer_draw"} == first  # K = 1's draw comes first
    assert len({r["id"] for r in three}) == 15 and three[1]["id"] == "0#a1"


def test_k_answers_any_chunking_and_never_more_than_available():
    cs = _contexts()
    rows = _gen(seed=2, answers_per_context=4).run(cs)
    again = _gen(seed=2, answers_per_context=4).run(cs[2:], first_index=2)
    assert again == [r for r in rows if int(r["context_id"]) >= 2]
    counts = Counter()
    many = _gen(answers_per_context=50, one_sentence=False, max_answer_words=None).run(cs[4:], first_index=4,
                                                                                         counts=counts)
    spans = _Words().extract([cs[4].text])[0]
    assert len(many) == len(spans) and counts["answers_unavailable"] == 50 - len(spans)


# ------------------------------------------------------------------------------ span rejection

def test_span_rejection_reasons():
    c = "It ended in 1920. In 1903 it began. The U.S. Army and Dr. Smith won it."
    assert span_rejection(c, 12, 25) == "crosses_sentence"
    assert span_rejection(c, 12, 16) is None
    us = c.index("U.S. Army")
    assert span_rejection(c, us, us + len("U.S. Army")) is None  # an abbreviation is no sentence boundary
    dr = c.index("Dr. Smith")
    assert span_rejection(c, dr, dr + len("Dr. Smith")) is None
    assert len(sentence_starts(c)) == 2
    assert span_rejection(c, 0, 16, max_words=3) == "too_many_words"
    assert span_rejection(c, 0, 16, max_words=4) is None
    assert span_rejection(c, 12, 25, one_sentence=False) is None


def test_rejected_spans_are_replaced_and_counted():
    cs = _contexts()
    counts = Counter()
    rows = _gen(answers_per_context=3, one_sentence=True, max_answer_words=1).run(cs, counts=counts)
    assert counts["rejected_crosses_sentence"] + counts["rejected_too_many_words"] >= 1
    for r in rows:
        s = r["answer_start"]
        assert span_rejection(r["context"], s, s + len(r["answer_text"]), max_words=1) is None
    assert len(rows) == 15  # the next draws replaced the rejected spans
    # a context whose every span is rejected still gives its decision row
    counts = Counter()
    rows = _gen(max_answer_words=1).run([D.Context("x", "", "the sea is blue. Big Red Sun")], counts=counts)
    assert rows[0]["reason"] == "all_spans_rejected" or rows[0]["answer_text"] in ("Big", "Red", "Sun")
    words = QAGenerator(QAGenConfig(max_answer_words=1), _Long(), _Ask(), _Echo())
    rows = words.run([D.Context("x", "", "the sea is very blue")], counts=counts)
    assert rows[0]["reason"] == "all_spans_rejected" and not rows[0]["consistent"]
    assert counts["rejected_too_many_words"] >= 1


class _Long:
    name, joint = "long", True

    def extract(self, contexts, k=10, max_answer_len=32, joint=None):
        return [[{"text": c[:10], "start": 0, "end": 10, "score": 1.0}] for c in contexts]


def test_config_validates_the_answer_options():
    for kw, needle in [({"answers_per_context": 0}, "answers_per_context"), ({"max_answer_words": 0}, "max_answer_words"),
                       ({"no_repeat_ngram": 1}, "no_repeat_ngram"), ({"one_sentence": 1}, "one_sentence")]:
        with pytest.raises(ValueError, match=needle):
            QAGenConfig(**kw)
    legacy = QAGenConfig(answers_per_context=1, one_sentence=False, max_answer_words=None, no_repeat_ngram=0).as_dict()
    assert not {"answers_per_context", "one_sentence", "max_answer_words"} & set(legacy)
    assert legacy["no_repeat_ngram"] == 0  # the search bans nothing: never the signature of a default run
    d = QAGenConfig()  # issue 26's defaults: span rejection and the question guard on, one answer
    assert (d.answers_per_context, d.one_sentence, d.max_answer_words, d.no_repeat_ngram) == (1, True, 10, 3)


# ------------------------------------------------------------------------------ the question guard

def test_repeated_ngram_guard_redecodes_or_discards():
    assert has_repeated_ngram("what class of the class of the class?")
    assert has_repeated_ngram("when did dias dias?") and not has_repeated_ngram("who won in 1903?")
    cs = _contexts()
    off = _gen(no_repeat_ngram=0).run(cs[2:3], first_index=2)
    counts = Counter()
    on = _gen(no_repeat_ngram=3).run(cs[2:3], first_index=2, counts=counts)
    if off[0]["answer_text"].startswith("S"):
        assert off[0]["question"] == "what of the what of the what?"
        assert on[0]["question"] == f"what is {on[0]['answer_text']}?" and counts["questions_fixed"] == 1
    c = Counter()
    qs = ask_questions(_Ask(), ["Sea"], [{"start": 0, "end": 3}], {}, 3, 4, c)
    assert qs == ["what is Sea?"] and c == Counter(questions_redecoded=1, questions_fixed=1)

    class _Stuck(_Ask):
        def nbest(self, contexts, answers, beam_size=4):
            return [["what of the what of the what?"] for _ in contexts]

    rows = QAGenerator(QAGenConfig(no_repeat_ngram=3, max_answer_words=None), _Long(), _Stuck(), _Echo()).run(
        [D.Context("x", "", "Sunny days are warm")])
    assert rows[0]["reason"] == "repeated_ngram" and not rows[0]["consistent"]


# ------------------------------------------------------------------------------ the job

def test_generate_job_k_answers_same_bytes_any_chunking_and_workers(tmp_path):
    pytest.importorskip("onnxruntime")
    from pysynth.qagen.jobs import run

    arts = {}
    for t, c in CTX:
        arts.setdefault(t, []).append({"context": c, "qas": []})
    inp = tmp_path / "in.json"
    inp.write_text(json.dumps({"version": "v2.0", "data": [{"title": t, "paragraphs": p} for t, p in arts.items()]}))
    cfg = QAGenConfig(answers_per_context=3, one_sentence=True, max_answer_words=10, no_repeat_ngram=3,
                      neg_fraction=0.5, match="f1:0.01")
    outs = []
    for name, kw in (("a", {"chunk_size": 64}), ("b", {"chunk_size": 2, "workers": 2})):
        s = run(inp, tmp_path / f"{name}.jsonl", cfg, keep_discarded=True, progress=False, threads=1, **kw)
        outs.append((tmp_path / f"{name}.jsonl").read_bytes())
    assert outs[0] == outs[1]
    rows = [json.loads(x) for x in outs[0].splitlines()]
    decided = [r for r in rows if not r["is_impossible"]]
    assert len(decided) == s["answers"] == s["kept"] + s["discarded"] and s["contexts"] == 5
    assert s["answers"] + s["answers_unavailable"] == 15 and len({r["id"] for r in rows}) == len(rows)
    assert set(s["spans_rejected"]) <= {"crosses_sentence", "too_many_words", "duplicate_answer"}
    negs = [r for r in rows if r["is_impossible"]]
    assert len(negs) == s["unanswerable"]
    for n in negs:  # each unanswerable follows the kept triple it was made from
        src = rows[rows.index(n) - 1]
        assert n["id"] == src["id"] + "#neg" and src["consistent"] and n["question"] == src["question"]


# ------------------------------------------------------------------------------ qagen questions

def _answer_rows():
    good = []
    for i, (_, c) in enumerate(CTX):
        w = c.split()[3].strip(".,")
        good.append({"id": f"r{i}", "context": c, "answer_text": w, "answer_start": c.index(w), "extra": i})
    bad = [{"context": CTX[0][1], "answer_text": "Oxygen", "answer_start": 5},  # not at answer_start
           {"context": CTX[0][1], "answer_start": 0},
           {"answer_text": "x", "answer_start": 0},
           {"context": CTX[0][1], "answer_text": "Oxygen", "answer_start": "0"},
           {"context": CTX[0][1], "answer_text": "  ", "answer_start": 0},
           {"context": "abc", "answer_text": "abc", "answer_start": 2}]
    return good[:2] + bad + good[2:]


def test_questions_library_call():
    from pysynth.qagen.questions import check_answer_row, generate_questions

    assert check_answer_row([1]) == "not_an_object"
    rows, rep = generate_questions(_answer_rows())
    assert [r["id"] for r in rows] == [f"r{i}" for i in range(5)] and all(r["question"] for r in rows)
    assert all(r["extra"] == i for i, r in enumerate(rows))  # the rows keep their fields
    assert rep["skipped_by_reason"] == {"answer_start_mismatch": 1, "missing_answer_text": 1, "missing_context": 1,
                                        "bad_answer_start": 2, "empty_answer": 1}
    assert rep["skipped"] == 6 and [e["row"] for e in rep["skipped_examples"]] == [2, 3, 4, 5, 6, 7]
    with pytest.raises(ValueError, match="decode"):
        generate_questions([], decode="nope")


def _write(path, rows):
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _cli(*args, env=None):
    return subprocess.run([sys.executable, "-m", "pysynth", "qagen", *map(str, args)], capture_output=True, text=True,
                          env={**os.environ, **(env or {})})


def test_questions_cli_same_bytes_any_chunking_and_resume(tmp_path):
    inp = _write(tmp_path / "in.jsonl", _answer_rows())
    a = _cli("questions", "--in", inp, "--out", tmp_path / "a.jsonl", "--chunk-size", "64")
    assert a.returncode == 0, a.stderr[-2000:]
    s = json.loads(a.stdout.strip().splitlines()[-1])
    assert s["rows"] == 11 and s["questions"] == 5 and sum(s["skipped_by_reason"].values()) == 6
    meta = json.loads((tmp_path / "a.jsonl.meta.json").read_text())
    assert meta["format"] == "pysynth.qagen.questions" and meta["config"]["no_repeat_ngram"] == 3
    k = _cli("questions", "--in", inp, "--out", tmp_path / "b.jsonl", "--chunk-size", "3", env={"PYSYNTH_TEST_STOP_AFTER_CHUNKS": "1"})
    assert k.returncode == 75, k.stderr[-2000:]
    b = _cli("questions", "--in", inp, "--out", tmp_path / "b.jsonl", "--chunk-size", "3")
    assert b.returncode == 0 and json.loads(b.stdout.strip().splitlines()[-1])["chunks_resumed"] == 1
    assert (tmp_path / "a.jsonl").read_bytes() == (tmp_path / "b.jsonl").read_bytes()
    rows = [json.loads(x) for x in (tmp_path / "a.jsonl").read_text().splitlines()]
    assert [r["id"] for r in rows] == [f"r{i}" for i in range(5)]


def test_cli_parses_the_answer_flags(tmp_path):
    from pysynth.cli import build_parser

    a = build_parser().parse_args(["qagen", "generate", "--in", "sample", "--out", "o.jsonl", "--answers-per-context",
                                   "3", "--max-answer-words", "0", "--no-one-sentence", "--no-repeat-ngram", "0"])
    assert (a.answers_per_context, a.max_answer_words, a.one_sentence, a.no_repeat_ngram) == (3, 0, False, 0)
    for bad in (["--answers-per-context", "0"], ["--no-repeat-ngram", "1"], ["--max-answer-words", "-1"]):
        r = _cli("generate", "--in", "sample", "--out", tmp_path / "o.jsonl", *bad)
        assert r.returncode == 2 and bad[0] in r.stderr and "Traceback" not in r.stderr
    r = _cli("questions", "--in", tmp_path / "missing.jsonl", "--out", tmp_path / "o.jsonl")
    assert r.returncode == 2 and "Traceback" not in r.stderr
