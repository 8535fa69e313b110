"""The learned roundtrip filter (issue 26): its spec parsing, its score, the pipeline's decisions and
reasons with it, byte-identical jobs for any chunking/workers, and the CLI flag that turns it off."""
from __future__ import annotations

import json
import math
import re

import pytest

from pysynth.qagen import data as D
from pysynth.qagen.filter import FEATURES, FILTER_FILE, TripleFilter, expected_f1, load_filter
from pysynth.qagen.pipeline import LOW_SCORE, QAGenConfig, QAGenerator, parse_match, resolve_match

CTX = [("Oxygen", "Oxygen is a chemical element. It was found by Carl Scheele in Uppsala in 1773."),
       ("Oxygen", "Oxygen gas is 20.8% of the air. Joseph Priestley published his findings in 1775."),
       ("Rhine", "The Rhine begins in Graubunden and flows to the North Sea."),
       ("Rhine", "The river is 1,230 kilometres long. It forms part of the Swiss border.")]


def test_match_specs_and_resolution():
    assert parse_match("auto") == ("auto", None) and parse_match("learned") == ("learned", None)
    assert parse_match("learned:0.3") == ("learned", 0.3) and parse_match("learned:0") == ("learned", 0.0)
    assert parse_match("exact") == ("exact", 1.0) and parse_match("f1:0.5") == ("f1", 0.5)
    for bad in ("learned:1.5", "learned:", "auto:0.3", "f1:0", "smart"):
        with pytest.raises(ValueError, match="match"):
            parse_match(bad)
    assert QAGenConfig().match == "auto"
    assert resolve_match("auto", None, None) == "learned"
    assert resolve_match("auto", "qagen-qg-copynet", "qagen-span-minilm") == "learned"
    assert resolve_match("auto", "/some/folder", None) == "exact"  # fitted for the shipped models only
    assert resolve_match("auto", None, "openai:http://x?model=y") == "exact"
    assert resolve_match("f1:0.5", None, None) == "f1:0.5"
    with pytest.raises(ValueError, match="match: the learned roundtrip filter is fitted for"):
        resolve_match("learned", "k2q-copynet-small", None)


def test_expected_f1_and_score():
    nb = [{"text": "Carl Scheele", "score": 3.0, "null_score": 1.0}, {"text": "Scheele", "score": 2.0, "null_score": 1.0}]
    w = [math.exp(3.0), math.exp(2.0), math.exp(1.0)]
    assert expected_f1("Carl Scheele", nb) == pytest.approx((w[0] * 1.0 + w[1] * D.f1_score("Scheele", "Carl Scheele"))
                                                            / sum(w))
    assert expected_f1("Uppsala", nb) == 0.0 and expected_f1("x", []) == 0.0
    f = TripleFilter([1.0, 2.0, 0.1], -1.0, 0.5)
    assert f.score(0.5, 0.5, -5.0) == round(1 / (1 + math.exp(-(-1.0 + 0.5 + 1.0 - 0.5))), 4)
    assert f.score(1e9, 0, 0) == 1.0  # no overflow
    with pytest.raises(ValueError, match="coef"):
        TripleFilter([1.0], 0.0, 0.5)


def test_shipped_filter_file():
    raw = FILTER_FILE.read_bytes()
    assert len(raw) < 10_000
    d = json.loads(raw)
    f = load_filter()
    assert list(d["features"]) == list(FEATURES) and 0.0 < f.threshold < 1.0 and f.nbest == 20
    assert d["models"]["question"] == "qagen-qg-copynet" and d["models"]["qa"] == "qagen-span-minilm"
    # each input raises the score: agreement, a well-formed question, a likely question
    assert all(c > 0 for c in f.coef)


class _Extract:
    name, joint = "words", True

    def extract(self, contexts, k=10, max_answer_len=32, joint=None):
        return [[{"text": m.group(), "start": m.start(), "end": m.end(), "score": 1.0}
                 for m in re.finditer(r"[A-Z][a-z]+", c)][:k] for c in contexts]


class _ShippedQG:
    """A stand-in under the shipped generator's name: "what is X?" with a log-probability."""

    name = "qagen-qg-copynet"

    def generate(self, contexts, answers, scores=False, **kw):
        qs = [f"what is {c[a['start']:a['end']]}?" for c, a in zip(contexts, answers)]
        return [(q, -0.5 * len(q)) for q in qs] if scores else qs


class _ShippedQA:
    """A stand-in under the shipped span model's name: the question's last word, and a runner-up."""

    name = "qagen-span-minilm"

    def _spans(self, contexts, questions, k, max_answer_len, joint):
        out = []
        for c, q in zip(contexts, questions):
            w = q.split()[-1].rstrip("?")
            i = c.find(w)
            s = [{"text": w, "start": i, "end": i + len(w), "score": 2.0 + len(w) % 3, "null_score": 1.0},
                 {"text": c[:6], "start": 0, "end": 6, "score": 1.5, "null_score": 1.0}]
            out.append(s[:k] if i >= 0 else [])
        return out

    def answer(self, contexts, questions, max_answer_len=30):
        return [s[0] if s else {"text": None, "start": -1, "end": -1, "score": -1e9, "null_score": 1e9}
                for s in self._spans(contexts, questions, 1, max_answer_len, False)]


def _contexts():
    return [D.Context(str(i), t, c) for i, (t, c) in enumerate(CTX)]


def test_learned_decisions_reasons_and_threshold():
    pytest.importorskip("onnxruntime")
    from pysynth.quality import wellformedness

    cs = _contexts()
    gen = QAGenerator(QAGenConfig(seed=1), _Extract(), _ShippedQG(), _ShippedQA())
    assert gen.match == "learned" and gen.threshold == load_filter().threshold
    rows = gen.run(cs)
    asked = [r for r in rows if r.get("triple_score") is not None]
    assert asked and len(asked) == len(rows)
    f = load_filter()
    wf = wellformedness([r["question"] for r in asked])
    for r, w in zip(asked, wf):
        nb = _ShippedQA()._spans([r["context"]], [r["question"]], 20, 30, False)[0]
        assert r["qa_expected_f1"] == round(expected_f1(r["answer_text"], nb), 4)
        assert r["question_wellformed"] == round(float(w), 4)
        assert r["question_logprob"] == -0.5 * len(r["question"])
        assert r["triple_score"] == f.score(r["qa_expected_f1"], r["question_wellformed"], r["question_logprob"])
        assert r["consistent"] == (r["triple_score"] >= f.threshold)
        assert r["reason"] == (None if r["consistent"] else LOW_SCORE)
        assert r["roundtrip_text"] == nb[0]["text"]
    # the threshold is tunable: 0 keeps every asked triple, 1 none
    keep_all = QAGenerator(QAGenConfig(seed=1, match="learned:0"), _Extract(), _ShippedQG(), _ShippedQA()).run(cs)
    assert all(r["consistent"] for r in keep_all)
    keep_none = QAGenerator(QAGenConfig(seed=1, match="learned:1"), _Extract(), _ShippedQG(), _ShippedQA()).run(cs)
    assert not any(r["consistent"] for r in keep_none) and {r["reason"] for r in keep_none} == {LOW_SCORE}
    # a margin still applies on top
    margin = QAGenerator(QAGenConfig(seed=1, match="learned:0", margin=100.0), _Extract(), _ShippedQG(),
                         _ShippedQA()).run(cs)
    assert {r["reason"] for r in margin} == {"roundtrip_margin"}
    # per-context seeds: a later chunk alone gives the same rows
    assert QAGenerator(QAGenConfig(seed=1), _Extract(), _ShippedQG(), _ShippedQA()).run(cs[2:], first_index=2) \
        == rows[2:]
    # exact: the paper's test, no filter fields
    ex = QAGenerator(QAGenConfig(seed=1, match="exact"), _Extract(), _ShippedQG(), _ShippedQA())
    assert ex.match == "exact" and all("triple_score" not in r for r in ex.run(cs))
    with pytest.raises(ValueError, match="match"):
        QAGenerator(QAGenConfig(match="learned"), _Extract(), type("Q", (_ShippedQG,), {"name": "other"})(),
                    _ShippedQA())


def test_default_job_same_bytes_any_chunking_and_workers_and_the_sample(tmp_path):
    pytest.importorskip("onnxruntime")
    from pysynth.data import qagen_sample_path
    from pysynth.qagen.jobs import run

    outs = []
    for name, kw in (("a", {"chunk_size": 64}), ("b", {"chunk_size": 5, "workers": 2})):
        s = run(qagen_sample_path(), tmp_path / f"{name}.jsonl", keep_discarded=True, progress=False, threads=1, **kw)
        outs.append((tmp_path / f"{name}.jsonl").read_bytes())
        assert s["roundtrip_filter"] == "learned"
    assert outs[0] == outs[1]
    rows = [json.loads(x) for x in outs[0].splitlines()]
    decided = [r for r in rows if not r["is_impossible"]]
    assert s["kept"] + s["discarded"] == len(decided) == s["contexts"] == 16
    assert sum(s["discarded_by_reason"].values()) == s["discarded"]
    for r in decided:
        if r["reason"] in (None, LOW_SCORE):
            assert r["consistent"] == (r["triple_score"] >= load_filter().threshold)
    # issue 26: a first run on the bundled sample keeps at least 4 of its 16 contexts
    assert s["contexts_kept"] >= 4


def test_cli_match_flag(tmp_path):
    from pysynth.cli import build_parser

    squad = tmp_path / "s.json"
    squad.write_text('{"data": []}')
    for verb in ("generate", "evaluate"):
        args = ["qagen", verb, "--in", "sample" if verb == "generate" else str(squad), "--out", str(tmp_path / "o")]
        assert build_parser().parse_args(args).match == "auto"
        assert build_parser().parse_args(args + ["--match", "exact"]).match == "exact"
        assert build_parser().parse_args(args + ["--match", "learned:0.4"]).match == "learned:0.4"
        with pytest.raises(Exception, match="--match: must be auto, learned"):
            build_parser().parse_args(args + ["--match", "learned:2"])
