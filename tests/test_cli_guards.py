"""The degenerate-output guards as one shared option (issue 26): ``--no-repeat-ngram N`` and
``--no-stutter/--allow-stutter`` on every generating command, validated in one place
(:func:`pysynth.cli._common.add_guards`), recorded in the run signature only off their defaults,
and the defaults giving the bytes of before."""
from __future__ import annotations

import gzip
import json
from html import escape
from pathlib import Path

import pytest

from pysynth.cli import _common as C
from pysynth.cli import build_parser, main
from pysynth.decoding.config import MAX_NO_REPEAT_NGRAM, SearchConfig, guard_changes

OFF = ("--no-repeat-ngram", "0", "--allow-stutter")
# one loop each, written by the shipped models with both guards off (and mended with them on)
LOOP_MQR = "How was this calculated calculated?"
LOOP_K2Q = "waka waka this time for africa"
# the default outputs before the guards became options (commit bddd3bf, onnxruntime, this repository's models)
MQR_BEFORE = "What is the capital of australia?\nHow was this calculated?\n"
K2Q_IN = [LOOP_K2Q, "honda crf 230 top speed", "nhl nhl teams playoffs"]  # one batch: the scores depend on it
# the questions of before, and their scores (rounded to 6 digits: the last one may move with the CPU's kernels)
K2Q_BEFORE = [
    (["what is the waka of waka this time for africa?", "what waka is waka this time for africa?",
      "what are the waka of waka this time for africa?", "what is the waka of waka in this time for africa?",
      "what is the waka of waka this time for the africa?"], [-6.178265, -6.699436, -7.051528, -7.978345, -10.66365]),
    (["what is the honda crf 230 top speed?", "what are the honda crf 230 top speed?",
      "what is the honda crf - 230 top speed?", "what is the honda crf 230 top?",
      "what is the honda crf 230 top speed of?"], [-3.118109, -4.842292, -6.006744, -6.859625, -9.987741]),
    (["what is the name of the nhl teams of nhl teams in playoffs?",
      "what is the name of the nhl teams of nhl teams playoffs?",
      "what is the name of the nhl teams in the playoffs teams of playoffs?",
      "what is the name of the nhl teams of the playoffs teams of playoffs?",
      "what is the name of the nhl teams of the playoffs nhl teams in playoffs?"],
     [-10.770241, -12.590272, -13.017002, -13.140599, -13.932527]),
]


def _files(tmp: Path) -> dict:
    """One small input per command, written under ``tmp``."""
    (tmp / "kw.jsonl").write_text(json.dumps({"keywords": "honda crf 230 top speed"}) + "\n")
    (tmp / "q.jsonl").write_text(json.dumps({"question": "what is the capital of australia?"}) + "\n")
    (tmp / "q.txt").write_text("capital of australia\n" + LOOP_MQR + "\n")
    (tmp / "ctx.jsonl").write_text(json.dumps({"id": "1", "context": "Oxygen was found in 1773."}) + "\n")
    (tmp / "ans.jsonl").write_text(json.dumps({"context": "Oxygen was found in 1773.", "answer_text": "1773",
                                               "answer_start": 20}) + "\n")
    (tmp / "squad.json").write_text(json.dumps({"data": []}))
    _dump(tmp / "tiny")
    return {"k2q generate": ["k2q", "generate", "--in", tmp / "kw.jsonl"],
            "paraphrase generate": ["paraphrase", "generate", "--in", tmp / "q.jsonl"],
            "mqr rewrite": ["mqr", "rewrite", "--in", tmp / "q.txt"],
            "dup pairs": ["dup", "pairs", "--method", "dqg", "--in", tmp / "tiny"],
            "qagen generate": ["qagen", "generate", "--in", tmp / "ctx.jsonl"],
            "qagen questions": ["qagen", "questions", "--in", tmp / "ans.jsonl"],
            "qagen evaluate": ["qagen", "evaluate", "--in", tmp / "squad.json"],
            # the evaluation commands that decode (dup evaluate-dqg prints its results: no --out)
            "dup evaluate-dqg": ["dup", "evaluate-dqg", "--in", tmp / "tiny"],
            "mqr evaluate": ["mqr", "evaluate", "--data", tmp],
            "k2q table2": ["k2q", "table2", "--in", tmp / "kw.jsonl"]}


COMMANDS = ["k2q generate", "paraphrase generate", "mqr rewrite", "dup pairs", "qagen generate", "qagen questions",
            "qagen evaluate", "dup evaluate-dqg", "mqr evaluate", "k2q table2"]


def _argv(tmp: Path, command: str) -> list:
    """``command``'s arguments with an output under ``tmp`` where it writes one."""
    return _files(tmp)[command] + ([] if command == "dup evaluate-dqg" else ["--out", tmp / "out"])


def _dump(d: Path) -> None:
    d.mkdir(exist_ok=True)
    long = "This sentence has more than ten words in it, about {} and nothing else at all."
    rows = "".join(f'  <row Id="{i}" PostTypeId="1" Score="1" Title="{escape(t)}" Body="{escape(b)}" />\n'
                   for i, t, b in ((1, "How do I clean a coffee grinder?", "<p>" + long.format("grinders") + "</p>"),
                                   (2, "Why is my coffee bitter?", "<p>" + long.format("bitter coffee") + "</p>"),
                                   (3, "Which beans for espresso?", "<p>" + long.format("beans") + "</p>")))
    (d / "Posts.xml").write_text(f'<?xml version="1.0" encoding="utf-8"?>\n<posts>\n{rows}</posts>\n')


def _parse(argv):
    argv = [str(a) for a in argv]
    return build_parser(argv[0]).parse_args(argv)


def _run(capsys, *argv):
    capsys.readouterr()
    code = main([str(a) for a in argv])
    out, err = capsys.readouterr()
    return code, out, err


# ------------------------------------------------------------------------------ the flags

@pytest.mark.parametrize("command", COMMANDS)
def test_every_generating_command_takes_the_guards(tmp_path, command):
    argv = _argv(tmp_path, command)
    a = _parse(argv)
    assert (a.no_repeat_ngram, a.no_stutter) == (SearchConfig.no_repeat_ngram, SearchConfig.no_stutter) == (3, True)
    assert C.guards(_parse(argv + list(OFF))) == {"no_repeat_ngram": 0, "no_stutter": False}
    assert C.guards(_parse(argv + ["--no-repeat-ngram", "4", "--no-stutter"])) == {"no_repeat_ngram": 4,
                                                                                  "no_stutter": True}


def test_one_definition():
    """Every parser with the guards has them from add_guards (one help text, one type), and the
    generating commands are exactly those."""
    from pysynth.cli import _leaves

    have = {}
    for p in _leaves(build_parser()):
        acts = {s: a for a in p._actions for s in a.option_strings}
        if "--no-repeat-ngram" in acts:
            a = acts["--no-repeat-ngram"]
            assert a.type is C.no_repeat_ngram and a.default == 3, p.prog
            assert acts["--allow-stutter"].dest == acts["--no-stutter"].dest == "no_stutter"
            have[" ".join(p.prog.split()[1:])] = a.help.split(";")[0]
    assert sorted(have) == sorted(COMMANDS)
    assert len(set(have.values())) == 1  # the same sentence everywhere


@pytest.mark.parametrize("value", ["-1", "1", str(MAX_NO_REPEAT_NGRAM + 1), "9" * 400, "2.5", "three", ""])
@pytest.mark.parametrize("command", COMMANDS)
def test_bad_values_are_one_line(tmp_path, capsys, command, value):
    code, _, err = _run(capsys, *_argv(tmp_path, command), "--no-repeat-ngram", value)
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err, err
    assert err.startswith("pysynth: error: argument --no-repeat-ngram: must be 0 (off) or an n-gram size in 2..")
    assert len(err) < 200  # a huge value is clipped


def test_both_stutter_flags_are_one_line(tmp_path, capsys):
    code, _, err = _run(capsys, *_files(tmp_path)["mqr rewrite"], "--out", tmp_path / "o", "--no-stutter",
                        "--allow-stutter")
    assert code == 2 and err == "pysynth: error: argument --allow-stutter: not allowed with argument --no-stutter\n"


def test_the_limits_are_accepted(tmp_path):
    argv = _files(tmp_path)["k2q generate"] + ["--out", tmp_path / "o"]
    for v in (0, 2, MAX_NO_REPEAT_NGRAM):
        assert _parse(argv + ["--no-repeat-ngram", v]).no_repeat_ngram == v


def test_search_config_and_guard_changes_refuse_bad_values():
    with pytest.raises(ValueError, match=r"no_repeat_ngram: must be at most 1024 \(0: off\), got 1000\S*\.\.\."):
        SearchConfig(no_repeat_ngram=10**300)
    with pytest.raises(ValueError, match="no_repeat_ngram: must be an integer >= 0"):
        guard_changes(-1)
    with pytest.raises(TypeError, match="no_stutter: must be True or False"):
        guard_changes(3, 1)
    assert guard_changes() == guard_changes(3, True) == {}
    assert guard_changes(0, False) == {"no_repeat_ngram": 0, "no_stutter": False}


# ------------------------------------------------------------------------------ off: other outputs, signed

@pytest.fixture
def shipped():
    pytest.importorskip("onnxruntime")


def test_mqr_rewrite_off_lets_the_loop_through_and_signs_it(tmp_path, capsys, shipped):
    argv = _files(tmp_path)["mqr rewrite"]
    assert _run(capsys, *argv, "--out", tmp_path / "d.txt")[0] == 0
    assert (tmp_path / "d.txt").read_text() == MQR_BEFORE  # the bytes of before
    assert _run(capsys, *argv, "--out", tmp_path / "o.txt", *OFF)[0] == 0
    assert (tmp_path / "o.txt").read_text().splitlines()[1] == LOOP_MQR
    d, o = (json.loads((tmp_path / f"{n}.txt.meta.json").read_text())["config"] for n in "do")
    assert not {"no_repeat_ngram", "no_stutter"} & set(d)  # the default run's signature is the one of before
    assert o == {**d, "no_repeat_ngram": 0, "no_stutter": False}


def test_k2q_generate_off_lets_the_loop_through(tmp_path, capsys, shipped):
    (tmp_path / "w.jsonl").write_text(json.dumps({"keywords": LOOP_K2Q}) + "\n")
    qs = {}
    for name, flags in (("d", ()), ("o", OFF)):
        assert _run(capsys, "k2q", "generate", "--in", tmp_path / "w.jsonl", "--out", tmp_path / f"{name}.jsonl",
                    "--n", "2", *flags)[0] == 0
        qs[name] = json.loads((tmp_path / f"{name}.jsonl").read_text())["questions"]
    assert not any("waka waka" in q for q in qs["d"]) and all("waka waka" in q for q in qs["o"]), qs
    (tmp_path / "b.jsonl").write_text("".join(json.dumps({"keywords": k}) + "\n" for k in K2Q_IN))
    assert _run(capsys, "k2q", "generate", "--in", tmp_path / "b.jsonl", "--out", tmp_path / "b.out.jsonl")[0] == 0
    rows = [json.loads(line) for line in (tmp_path / "b.out.jsonl").read_text().splitlines()]
    assert [r["questions"] for r in rows] == [q for q, _ in K2Q_BEFORE]
    for r, (_, scores) in zip(rows, K2Q_BEFORE):
        assert r["scores"] == pytest.approx(scores, abs=1e-4)


def test_qagen_questions_off_lets_the_loop_through_and_signs_it(tmp_path, capsys, shipped):
    from pysynth.data import qagen_sample_path

    with gzip.open(qagen_sample_path(), "rt", encoding="utf-8") as f:
        p = json.load(f)["data"][1]["paragraphs"][1]  # Amazon rainforest: "... the dinosaurs of the dinosaurs ..."
    a = p["qas"][0]["answers"][0]
    (tmp_path / "a.jsonl").write_text(json.dumps({"context": p["context"], "answer_text": a["text"],
                                                  "answer_start": a["answer_start"]}) + "\n")
    out = {}
    for name, flags in (("d", ()), ("o", OFF)):
        assert _run(capsys, "qagen", "questions", "--in", tmp_path / "a.jsonl", "--out", tmp_path / f"{name}.jsonl",
                    *flags)[0] == 0
        out[name] = json.loads((tmp_path / f"{name}.jsonl").read_text())["question"]
    assert out["d"] == "What may the extinction of the dinosaurs of the Cretaceous?"  # cased as in the context
    assert "of the dinosaurs of the dinosaurs" in out["o"].lower(), out
    d, o = (json.loads((tmp_path / f"{n}.jsonl.meta.json").read_text())["config"] for n in "do")
    assert d["no_repeat_ngram"] == 3 and "no_stutter" not in d  # as before
    assert o == {**d, "no_repeat_ngram": 0, "no_stutter": False}


def test_dup_pairs_signs_the_guards(tmp_path, capsys, shipped):
    argv = _files(tmp_path)["dup pairs"]
    for name, flags in (("d", ()), ("o", OFF)):
        assert _run(capsys, *argv, "--out", tmp_path / f"{name}.jsonl", *flags)[0] == 0
    d, o = (json.loads((tmp_path / f"{n}.jsonl.meta.json").read_text())["config"] for n in "do")
    assert not {"no_repeat_ngram", "no_stutter"} & set(d)
    assert o == {**d, "no_repeat_ngram": 0, "no_stutter": False}


def test_title_generator_takes_the_guards(shipped):
    from pysynth.dup.dqg import TitleGenerator

    g = TitleGenerator()
    body = ["This sentence has more than ten words in it, about coffee coffee coffee grinders and nothing else."]
    assert g.generate(body) == g.generate(body, no_repeat_ngram=3, no_stutter=True)
    with pytest.raises(ValueError, match="no_repeat_ngram"):
        g.generate(body, no_repeat_ngram=-1)


def test_paraphrase_and_qagen_hand_the_guards_on(tmp_path, capsys, monkeypatch):
    """The commands whose runs load several models: the configuration they build (their run signature)."""
    import pysynth.paraphrase.jobs
    import pysynth.qagen.evaluate
    import pysynth.qagen.jobs

    got = {}
    monkeypatch.setattr(pysynth.paraphrase.jobs, "run", lambda inp, out, cfg, **kw: got.update(p=cfg) or {})
    monkeypatch.setattr(pysynth.qagen.jobs, "run", lambda inp, out, cfg, **kw: got.update(g=cfg) or {})
    monkeypatch.setattr(pysynth.qagen.evaluate, "evaluate", lambda *a, config, **kw: got.update(e=config) or {})
    files = _files(tmp_path)
    for flags in ((), OFF):
        for command in ("paraphrase generate", "qagen generate", "qagen evaluate"):
            assert _run(capsys, *files[command], "--out", tmp_path / "o", *flags)[0] == 0
        for cfg in got.values():
            assert (cfg.search.no_repeat_ngram, cfg.search.no_stutter) == ((3, True) if not flags else (0, False))
        p = got["p"].as_dict()
        assert (p.get("no_repeat_ngram"), p.get("no_stutter")) == ((None, None) if not flags else (0, False))
        for k in "ge":  # qagen records no_repeat_ngram at its default too (its signature since issue 26), and 0
            d = got[k].as_dict()
            assert (d.get("no_repeat_ngram"), d.get("no_stutter")) == ((3, None) if not flags else (0, False))


def test_python_api_keywords():
    """The API functions that build a SearchConfig take the same keyword names."""
    from pysynth.paraphrase.pipeline import ParaphraseConfig
    from pysynth.qagen.models import question_search
    from pysynth.qagen.pipeline import QAGenConfig, decode_options, question_options

    assert ParaphraseConfig(no_repeat_ngram=0, no_stutter=False).search.no_stutter is False
    assert QAGenConfig(no_repeat_ngram=4, no_stutter=False).search == \
        SearchConfig(decode="greedy", beam=4, n=1, top_k=10, no_repeat_ngram=4, no_stutter=False)
    assert question_search("beam", 4, 10, 0, False).no_repeat_ngram == 0
    assert decode_options("greedy", 4, 10, 0, [(0, 0)]) == {"method": "greedy"}  # any generator takes it
    assert decode_options("greedy", 4, 10, 0, [(0, 0)], 0, False) == {"method": "greedy", "no_repeat_ngram": 0,
                                                                    "no_stutter": False}
    assert "no_stutter" not in question_options() and question_options(no_stutter=False)["no_stutter"] is False
    for bad, err in (({"no_repeat_ngram": 2000}, ValueError), ({"no_stutter": "no"}, TypeError)):
        for make in (ParaphraseConfig, QAGenConfig):
            with pytest.raises(err, match=next(iter(bad))):
                make(**bad)
    with pytest.raises(ValueError, match="no_repeat_ngram"):
        from pysynth.mqr.jobs import rewrite_file

        rewrite_file(["a question"], "-", no_repeat_ngram=-1)


# ------------------------------------------------------------------------------ the evaluation commands (b)

def test_evaluation_commands_hand_the_guards_on(tmp_path, capsys, monkeypatch):
    """mqr evaluate and k2q table2 (their runs read the shared data): the keywords they call with."""
    import pysynth.k2q.table2
    import pysynth.mqr.table6

    got = {}
    monkeypatch.setattr(pysynth.mqr.table6, "table6", lambda *a, **kw: got.update(m=kw) or [])
    monkeypatch.setattr(pysynth.k2q.table2, "run_table2", lambda *a, **kw: got.update(k=kw) or {})
    for flags, want in (((), (3, True)), (OFF, (0, False)), (("--no-repeat-ngram", "5"), (5, True))):
        for command in ("mqr evaluate", "k2q table2"):
            assert _run(capsys, *_argv(tmp_path, command), *flags)[0] == 0, command
        for kw in got.values():
            assert (kw["no_repeat_ngram"], kw["no_stutter"]) == want


def test_dup_evaluate_dqg_off_names_the_guards(tmp_path, capsys, shipped):
    argv = _argv(tmp_path, "dup evaluate-dqg")
    res = {}
    for name, flags in (("d", ()), ("o", OFF)):
        code, out, _ = _run(capsys, *argv, *flags)
        assert code == 0
        res[name] = json.loads(out)
    assert not {"no_repeat_ngram", "no_stutter"} & set(res["d"])  # the results of before
    assert set(res["o"]) == set(res["d"]) | {"no_repeat_ngram", "no_stutter"}
    assert (res["o"]["no_repeat_ngram"], res["o"]["no_stutter"]) == (0, False)
    assert [e["generated"] for e in res["o"]["examples"]] != [e["generated"] for e in res["d"]["examples"]]


def test_k2q_table2_neural_rows_take_the_guards(shipped):
    """The neural rows' search (evaluate_t0): the loop of k2q generate comes through only with the guards off."""
    from types import SimpleNamespace

    from pysynth.k2q.neural import evaluate_t0
    from pysynth.models.generate import Generator

    gen = Generator.load("k2q-copynet-small", backend="onnx", device="cpu", threads=1)
    pairs = [SimpleNamespace(keywords=LOOP_K2Q, question="what is waka waka?", cluster_id="c")]
    on, off = (evaluate_t0(gen, pairs=pairs, **kw)["hyps"][0] for kw in ({}, dict(no_repeat_ngram=0, no_stutter=False)))
    assert on == K2Q_BEFORE[0][0][0] and "waka waka" in off, (on, off)
    with pytest.raises(ValueError, match="no_repeat_ngram"):
        from pysynth.k2q.table2 import run_table2

        run_table2("missing.jsonl", no_repeat_ngram=-1)  # refused before any file is read


def test_mqr_evaluate_off_lets_the_loop_through(tmp_path, capsys, shipped):
    """mqr evaluate on a two-row test split: every rewriter row and the round trip take the guards."""
    (tmp_path / "mqr").mkdir()
    test = [{"row_idx": i, "ill_formed": q, "well_formed": w}
            for i, (q, w) in enumerate(((LOOP_MQR, "How was this calculated?"),
                                        ("capital of australia", "What is the capital of Australia?")))]
    released = [{"row_idx": r["row_idx"], **{k: r["well_formed"] for k in ("transformer", "lstm", "GEC", "nmt_fr",
                                                                           "nmt_de")}} for r in test]
    for name, rows in (("test", test), ("test_system_rewrites", released)):
        with gzip.open(tmp_path / "mqr" / f"{name}.jsonl.gz", "wt", encoding="utf-8") as f:
            f.writelines(json.dumps(r) + "\n" for r in rows)
    outs = {}
    for name, flags in (("d", ()), ("o", OFF)):
        assert _run(capsys, "mqr", "evaluate", "--data", tmp_path, "--out", tmp_path / name, *flags)[0] == 0
        outs[name] = {r["system"]: r["outputs"] for r in map(json.loads, (tmp_path / name / "rewrites.jsonl")
                                                                 .read_text().splitlines())}
    assert outs["d"].keys() == outs["o"].keys()
    models = [k for k in outs["d"] if k.startswith("pysynth CopyNet")]
    assert len(models) == 2 and any(k.startswith("round trip") for k in outs["d"])
    for k in models:
        assert outs["d"][k][0] != LOOP_MQR and outs["o"][k][0] == LOOP_MQR, (k, outs)


def test_round_trip_takes_the_guards(monkeypatch):
    """The round-trip row's two searches (pysynth.models.text2text.round_trip) get the guards."""
    from types import SimpleNamespace

    from pysynth.models import text2text

    seen = []

    class Fake(text2text.Text2Text):
        lowercases = False

        def __init__(self):
            pass

        def valid(self, text):
            return None

        def generate(self, texts, search, batch_size=16):
            seen.append((search.no_repeat_ngram, search.no_stutter))
            return [SimpleNamespace(texts=[t]) for t in texts]

    assert text2text.round_trip(["a b"], Fake(), Fake()) == ["a b"]
    assert text2text.round_trip(["a b"], Fake(), Fake(), no_repeat_ngram=0, no_stutter=False) == ["a b"]
    assert seen == [(3, True)] * 2 + [(0, False)] * 2


# ------------------------------------------------------------------------------ qagen's signature (c)

def test_qagen_generate_signs_no_repeat_ngram_0(tmp_path):
    """qagen generate --no-repeat-ngram 0 is in the run signature (as every command's guards off their
    defaults), and a default run keeps the signature it had."""
    from pysynth.cli.qagen import _answer_config
    from pysynth.qagen.pipeline import QAGenConfig

    def cfg(*flags):
        a = _parse(_argv(tmp_path, "qagen generate") + list(flags))
        return QAGenConfig(**_answer_config(a)).as_dict()

    d = cfg()
    assert d["no_repeat_ngram"] == 3 and "no_stutter" not in d  # as before
    assert cfg("--no-repeat-ngram", "0") == {**d, "no_repeat_ngram": 0}
    assert cfg("--allow-stutter") == {**d, "no_stutter": False}
    assert cfg("--no-repeat-ngram", "4") == {**d, "no_repeat_ngram": 4}
    assert len({str(sorted(c.items())) for c in (d, cfg(*OFF), cfg("--no-repeat-ngram", "0"))}) == 3
