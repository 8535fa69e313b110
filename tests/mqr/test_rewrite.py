"""Question rewriting (Chu et al. 2020): baselines, training data, the shipped rewriter, Table 6,
the CLI."""
from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from pysynth.mqr.rewrite import drop_rates, noise, respace, rule_floor, training_pairs, truecase

from _data_dir import DATA, need_data  # noqa: E402


def test_rule_floor():
    # issue 26: a template only where the form fits (more cases in test_select.py); before, "How to" everywhere
    assert rule_floor("Spaghetti carbonara, mixing") == "Spaghetti carbonara, mixing?"
    assert rule_floor("what is  ubuntu") == "What is ubuntu?"
    assert rule_floor("Install Ubuntu.") == "How can I install Ubuntu?"
    assert rule_floor("Does it work??") == "Does it work?"
    assert rule_floor("") == ""


def test_noise_is_seeded_and_keeps_words():
    q = "How do I fix a flat tire?"
    a = [noise(q, random.Random(s)) for s in range(20)]
    assert a == [noise(q, random.Random(s)) for s in range(20)]
    assert len(set(a)) > 3
    for x in a:
        assert set(w.lower() for w in x.replace("?", " ").replace(",", " ").split()) <= \
            {"how", "do", "i", "fix", "a", "flat", "tire"}


def test_truecase():
    assert truecase("how to mix a spaghetti carbonara?", "Spaghetti carbonara, mixing") == \
        "How to mix a spaghetti carbonara?"
    assert truecase("how do i install ubuntu on an usb stick?", "install Ubuntu on USB stick") == \
        "How do I install Ubuntu on an USB stick?"
    assert truecase("is it mine?", "it's mine") == "Is it mine?"
    assert truecase("can i do it?", "can i do it") == "Can I do it?"
    # a capitalised first word followed by another capitalised word is a name, not a sentence start
    assert truecase("why does my sony alpha 77 ii change?", "Sony Alpha 77 II changes") == \
        "Why does my Sony Alpha 77 II change?"
    assert truecase("how to bond wireless networks?", "Bonding wireless networks") == "How to bond wireless networks?"


def test_respace_glues_what_the_source_glues():
    assert respace("how does / etc / default / console - setup work?", "How does /etc/default/console-setup work") == \
        "how does /etc/default/console-setup work?"
    assert respace("what is a - b?", "a - b") == "what is a - b?"  # spaced in the source: kept
    assert respace("what is x?", "x") == "what is x?"


def test_noise_keeps_the_spacing_and_misspells_when_asked():
    q = "How do I mount /etc/fstab entries with off-site storage?"
    outs = [noise(q, random.Random(s), drop_q=1.0) for s in range(30)]
    assert all("/etc/fstab" in o.lower() and "off-site" in o.lower() for o in outs)
    assert any(o.lower().startswith("mount") for o in outs)
    typos = [noise("Which microcontroller supports hardware floating point?", random.Random(s), 0.0, typo=0.5)
             for s in range(10)]
    assert any("microcontroller" not in t.lower() for t in typos)


def test_drop_rates_follow_the_dev_openings():
    dev = [("fix tire", "How to fix a tire?"), ("tire fix", "How to fix a tire?"), ("when did x", "When did x?"),
           ("What is y", "What is y?")]
    targets = ["When did a happen?"] * 8 + ["How to do b?"] * 2
    r = drop_rates(targets, dev)
    assert set(r) == {"how to"} and 0 < r["how to"] <= 1  # only "how to" sources lack a question word in dev


def test_noise_flat_drop_rate_default():
    # the default keeps the earlier behaviour's knob: drop_q=0.6
    import inspect

    assert inspect.signature(noise).parameters["drop_q"].default == 0.6


@need_data
def test_training_pairs_never_use_the_test_split():
    import gzip

    pairs, counts = training_pairs(DATA, noised=500, upsample=3, in_domain=1, prior=True)
    test = {(json.loads(x)["ill_formed"], json.loads(x)["well_formed"]) for x in gzip.open(DATA / "mqr/test.jsonl.gz")}
    assert not test & set(pairs)
    assert counts["mqr_dev"] == 3 * 2112 and counts["identity"] > 2112 and 0 < counts["noised_squad"] <= 500
    assert counts["noised_in_domain"] > 2000
    assert counts["dropped_test_overlap"] == 3  # dev and test share one pair (x3 upsampled)
    assert len(pairs) == sum(counts.values()) - 2 * counts["dropped_test_overlap"]
    assert training_pairs(DATA, noised=500, upsample=3, in_domain=1, prior=True) == (pairs, counts)
    plain, c = training_pairs(DATA, noised=500)
    assert c["mqr_dev"] == 2112 and c["identity"] == 2112 and c["noised_in_domain"] == 0
    # the held-out dev pairs are used nowhere, not even noised or as identity pairs
    dev = [json.loads(x) for x in gzip.open(DATA / "mqr/dev.jsonl.gz")]
    held = {r["well_formed"] for r in dev[-50:]}
    ex, c = training_pairs(DATA, noised=0, in_domain=2, exclude=held)
    assert not held & {w for _, w in ex} and c["mqr_dev"] <= 2112 - 49
    no_id, c = training_pairs(DATA, noised=0, identity=False)
    assert "identity" not in c and all(a != b for a, b in no_id)


@need_data
def test_paralex_pairs_from_comqa_clusters():
    pytest.importorskip("onnxruntime")
    from pysynth.mqr.rewrite import paralex_pairs

    pairs, c = paralex_pairs(DATA, limit=60)
    assert c["clusters"] > 5 and c["pairs"] == len(pairs) > 0
    # one target per cluster: every source of a target comes from the same cluster, never the target itself
    assert all(a != b for a, b in pairs)


def test_run_chain_rule_steps():
    from pysynth.mqr.table6 import run_chain

    assert run_chain(["rule", "rule"], ["install ubuntu", "Why not?"]) == ["How can I install ubuntu?", "Why not?"]


@pytest.fixture(scope="module")
def rewriter():
    pytest.importorskip("onnxruntime")
    from pysynth.mqr.rewrite import Rewriter

    return Rewriter(threads=1)


def test_rewrite_defaults_are_the_clis(rewriter):
    from pysynth.mqr.rewrite import DEFAULT_DECODING

    qs = ["capital of australia", "install ubuntu on usb stick"]
    assert rewriter.rewrite(qs) == rewriter.rewrite(qs, **DEFAULT_DECODING)


def test_shipped_rewriter(rewriter):
    out = rewriter.rewrite(["Spaghetti carbonara, mixing", "install ubuntu on usb stick", "zzqxv qqzzv", ""])
    assert len(out) == 4 and out[2] == "zzqxv qqzzv" and out[3] == ""  # unreadable inputs come back as they are
    assert out[0].endswith("?") and out[0][0].isupper()
    assert rewriter.rewrite(["install ubuntu on usb stick"], beam=1)[0].endswith("?")


def test_rewrite_reranking(rewriter):
    qs = ["install ubuntu on usb stick", "Bonding wireless networks", "zzqxv qqzzv"]
    off = {"coverage": 0.0, "wellformed": 0.0, "backoff": 0.0, "select": "model"}  # the plain beam's best
    plain = rewriter.rewrite(qs, beam=4, **off)
    cov = rewriter.rewrite(qs, beam=4, **{**off, "coverage": 2.0})
    wf = rewriter.rewrite(qs, beam=4, **{**off, "coverage": 2.0, "wellformed": 0.5})
    assert len(cov) == len(wf) == 3 and cov[2] == wf[2] == "zzqxv qqzzv"
    assert rewriter.rewrite(qs, beam=1, **{**off, "coverage": 2.0}) == rewriter.rewrite(qs, beam=1, **off)
    for bad in (-1, True, "2"):
        with pytest.raises(ValueError, match="coverage: must be a number >= 0"):
            rewriter.rewrite(qs, coverage=bad)
    # the rerank keeps more of the question's words than the plain beam's best, or as many
    kept = lambda o, q: sum(w in o.lower() for w in q.lower().split())  # noqa: E731
    assert sum(kept(o, q) for o, q in zip(cov, qs)) >= sum(kept(o, q) for o, q in zip(plain, qs))


def test_parse_step():
    from pysynth.mqr.table6 import parse_step

    assert parse_step("mqr-copynet-small") == ("mqr-copynet-small", {"beam": 4})
    assert parse_step("/a/run@beam=6,coverage=2,wellformed=0.5") == \
        ("/a/run", {"beam": 6, "coverage": 2.0, "wellformed": 0.5})
    assert parse_step("m@beam=6,select=safe") == ("m", {"beam": 6, "select": "safe"})
    with pytest.raises(ValueError, match="unknown option 'beem'"):
        parse_step("m@beem=3")
    with pytest.raises(ValueError, match="coverage needs a number"):
        parse_step("m@coverage=x")


@need_data
def test_table6_quick(rewriter):
    from pysynth.mqr.table6 import table6

    rows = table6(DATA, {"pysynth": "mqr-copynet-small"}, limit=200, wellformed=False, meteor=False)
    by = {r["system"]: r for r in rows}
    assert by["ill_formed (input)"]["paper"]["bleu4"] == 5.9
    assert by["pysynth"]["bleu4"] > by["ill_formed (input)"]["bleu4"]
    assert all(len(r["outputs"]) == 200 for r in rows)
    rt = next(r for s, r in by.items() if s.startswith("round trip through French"))
    assert rt["paper"]["bleu4"] == 9.3 and rt["bleu4"] > 0  # Chu et al.'s NMT fr row beside it


@need_data
def test_table7_table8_rows(rewriter):
    from pysynth.mqr.table6 import markdown, table6

    rows = table6(DATA, {"pysynth": "mqr-copynet-small"}, limit=60, wellformed=False, meteor=False,
                  round_trip=None, ablations={"same model": "mqr-copynet-small"},
                  chains={"rule -> pysynth": ["rule", "mqr-copynet-small"]})
    by = {r["system"]: r for r in rows}
    assert by["same model"]["table"] == 7 and by["same model"]["outputs"] == by["pysynth"]["outputs"]
    assert by["rule -> pysynth"]["table"] == 8 and len(by["rule -> pysynth"]["outputs"]) == 60
    gec = by["paper: Transformer (MQR + Quora) -> GEC (released outputs)"]
    assert gec["table"] == 8 and gec["paper"]["bleu4"] == 26.3 and gec["bleu4"] > 10
    assert by["paper: MQR TRAIN + (well-formed, well-formed) pairs"]["paper"]["rouge1"] == 61.4
    md = markdown(rows, "pysynth mqr table6")
    assert "## Table 7" in md and "## Table 8" in md


def _cli(*args, inp=None):
    return subprocess.run([sys.executable, "-m", "pysynth", "mqr", *args], capture_output=True, text=True,
                          timeout=120, input=inp)


def test_cli_rewrite(tmp_path):
    pytest.importorskip("onnxruntime")
    txt = tmp_path / "q.txt"
    txt.write_text("Spaghetti carbonara, mixing\nzzqxv qqzzv\ninstall ubuntu on usb stick\n")
    r = _cli("rewrite", "--in", str(txt), "--out", "-")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 3 and lines[1] == "zzqxv qqzzv" and lines[2].endswith("?")
    # the safe selection (issue 26) may give a question back unchanged (kept_input) rather than a worse rewrite
    assert lines[0] == "Spaghetti carbonara, mixing" or lines[0].endswith("?")
    r = _cli("rewrite", "--in", "-", "--out", "-", "--min-wellformed", "0.0",
             inp='{"question": "install ubuntu on usb stick", "id": 7}\n')
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout)
    assert row["id"] == 7 and row["rewrite"].endswith("?") and row["rewritten"] is True and 0 <= row["wellformed"] <= 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "x"}\n')
    r = _cli("rewrite", "--in", str(bad), "--out", "-")
    assert r.returncode == 1 and "needs a string field 'question'" in r.stderr and "Traceback" not in r.stderr


def test_cli_table6_bad_chain(tmp_path):
    r = _cli("evaluate", "--chain", "rule", "--out", str(tmp_path / "t"))
    assert r.returncode == 2 and "--chain: expected [NAME=]A>B" in r.stderr and "Traceback" not in r.stderr


def test_cli_rewrite_defaults_are_the_dev_chosen_decoding():
    from pysynth.cli import build_parser
    from pysynth.mqr.rewrite import DEFAULT_DECODING

    a = build_parser().parse_args(["mqr", "rewrite", "--in", "-", "--out", "-"])
    assert {"beam": a.beam, "coverage": a.coverage, "wellformed": a.rerank_wellformed,
            "backoff": a.backoff, "select": a.select} == DEFAULT_DECODING


def test_truecase_respaces_too():
    # /v1/rewrite calls truecase alone: it gets the source's spacing as well
    assert truecase("how does / etc / fstab work?", "how does /etc/fstab work") == "How does /etc/fstab work?"
