"""Question rewriting (Chu et al. 2020): baselines, training data, the shipped rewriter, Table 6,
the CLI."""
from __future__ import annotations

import json
import random
import subprocess
import sys

import pytest

from pysynth.mqr.rewrite import noise, rule_floor, training_pairs, truecase

from _data_dir import DATA, need_data  # noqa: E402


def test_rule_floor():
    assert rule_floor("Spaghetti carbonara, mixing") == "How to spaghetti carbonara, mixing?"
    assert rule_floor("what is  ubuntu") == "what is ubuntu?"
    assert rule_floor("Install Ubuntu.") == "How to install Ubuntu?"
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


@need_data
def test_training_pairs_never_use_the_test_split():
    import gzip

    pairs, counts = training_pairs(DATA, noised=500, upsample=3, in_domain=True)
    test = {(json.loads(x)["ill_formed"], json.loads(x)["well_formed"]) for x in gzip.open(DATA / "mqr/test.jsonl.gz")}
    assert not test & set(pairs)
    assert counts["mqr_dev"] == 3 * 2112 and counts["identity"] == 2112 and 0 < counts["noised_squad"] <= 500
    assert counts["noised_in_domain"] > 2000
    assert counts["dropped_test_overlap"] == 3  # dev and test share one pair (x3 upsampled)
    assert len(pairs) == sum(counts.values()) - 2 * counts["dropped_test_overlap"]
    assert training_pairs(DATA, noised=500, upsample=3, in_domain=True) == (pairs, counts)
    plain, c = training_pairs(DATA, noised=500)
    assert c["mqr_dev"] == 2112 and "noised_in_domain" not in c and c["dropped_test_overlap"] == 1


@pytest.fixture(scope="module")
def rewriter():
    pytest.importorskip("onnxruntime")
    from pysynth.mqr.rewrite import Rewriter

    return Rewriter(threads=1)


def test_shipped_rewriter(rewriter):
    out = rewriter.rewrite(["Spaghetti carbonara, mixing", "install ubuntu on usb stick", "zzqxv qqzzv", ""])
    assert len(out) == 4 and out[2] == "zzqxv qqzzv" and out[3] == ""  # unreadable inputs come back as they are
    assert out[0].endswith("?") and out[0][0].isupper()
    assert rewriter.rewrite(["install ubuntu on usb stick"], beam=1)[0].endswith("?")


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
    assert len(lines) == 3 and lines[1] == "zzqxv qqzzv" and lines[0].endswith("?")
    r = _cli("rewrite", "--in", "-", "--out", "-", "--min-wellformed", "0.0",
             inp='{"question": "install ubuntu on usb stick", "id": 7}\n')
    assert r.returncode == 0, r.stderr
    row = json.loads(r.stdout)
    assert row["id"] == 7 and row["rewrite"].endswith("?") and row["rewritten"] is True and 0 <= row["wellformed"] <= 1
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "x"}\n')
    r = _cli("rewrite", "--in", str(bad), "--out", "-")
    assert r.returncode == 1 and "needs a string field 'question'" in r.stderr and "Traceback" not in r.stderr
