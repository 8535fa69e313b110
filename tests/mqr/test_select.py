"""Rewrites never worse than the input (issue 26): the rule floor's templates fit the input's form
(:mod:`pysynth.mqr.forms`), the safe selection (:func:`pysynth.mqr.rewrite.select`) and its hard
rule, and ``mqr rewrite``'s default."""
from __future__ import annotations

import random

import pytest

from pysynth.mqr.forms import form_of, rule_floor, template_misfit, verb_lemma
from pysynth.mqr.rewrite import SAFE, content_words, dropped_share, hard_rule, overlap, select

# (input, rule floor): the issue's examples first
RULE_CASES = [
    ("capital of australia", "What is the capital of australia?"),
    ("Time Magazine aiding Al Capone?", "Time Magazine aiding Al Capone?"),
    ("Capital of Australia", "What is the capital of Australia?"),
    ("difference between let and var", "What is the difference between let and var?"),
    ("use of semicolons in python", "What is the use of semicolons in python?"),
    ("install ubuntu on usb stick", "How can I install ubuntu on usb stick?"),
    ("Install Ubuntu.", "How can I install Ubuntu?"),
    ("Blocking Venting from Rodents", "How can I block Venting from Rodents?"),
    ("Setting up a proxy", "How can I set up a proxy?"),
    ("Safely Increase Size of Door Bolt?", "How can I safely increase Size of Door Bolt?"),
    ("Downsample a texture", "How can I downsample a texture?"),
    ("Work around the power line safely", "How can I work around the power line safely?"),
    # no template fits: casing and "?" only
    ("Spaghetti carbonara, mixing", "Spaghetti carbonara, mixing?"),
    ("Air conditioner trips circuit breaker", "Air conditioner trips circuit breaker?"),
    ("Using perfume is haram in Islam?", "Using perfume is haram in Islam?"),
    ("Log Transform of Flow Accumulation", "Log Transform of Flow Accumulation?"),
    ("Bonding wireless networks", "Bonding wireless networks?"),
    ("iPhone battery drain", "iPhone battery drain?"),
    ("Furnace needs frequent power resets.", "Furnace needs frequent power resets?"),
    ("Geary - How to print emails", "Geary - How to print emails?"),
    ("what is  ubuntu", "What is ubuntu?"),
    ("Does it work??", "Does it work?"),
    ("can't set aperture on Nikon D7200", "Can't set aperture on Nikon D7200?"),
    ("", ""),
]


@pytest.mark.parametrize("text,want", RULE_CASES)
def test_rule_floor_fits_the_form(text, want):
    assert rule_floor(text) == want


def test_rule_floor_never_puts_how_before_a_non_verb():
    # "How to"/"How can I" only before a known verb: every "How to X" output has a verb for X
    texts = [t for t, _ in RULE_CASES] + ["my laptop make noise", "Raspberry Pi alternatives", "for loop in bash",
                                          "the best way to learn", "Windows 10 update failed", "login issue"]
    for t in texts:
        out = rule_floor(t)
        if out.startswith(("How to ", "How can I ")):
            nxt = out.split()[2 if out.startswith("How to ") else 3]
            assert verb_lemma(nxt) == nxt.lower() or form_of(t)[0] == "verb", (t, out)
        assert not template_misfit(out, t), (t, out)


def test_legacy_rule_floor_is_the_first_version():
    assert rule_floor("capital of australia", legacy=True) == "How to capital of australia?"
    assert rule_floor("Spaghetti carbonara, mixing", legacy=True) == "How to spaghetti carbonara, mixing?"
    assert rule_floor("what is  ubuntu", legacy=True) == "what is ubuntu?"


def test_form_of_and_verb_lemma():
    assert form_of("capital of australia") == ("noun", 0)
    assert form_of("Safely increase size of door bolt") == ("verb", 1)
    assert form_of("Why not") == ("question", 0)
    assert form_of("") == ("other", 0)
    assert [verb_lemma(w) for w in ("blocking", "using", "setting", "install", "bonding", "thing")] == \
        ["block", "use", "set", "install", "", ""]


def test_template_misfit_catches_the_issue_examples():
    assert template_misfit("How can I capital of australia?", "capital of australia")
    assert template_misfit("How to Time Magazine aiding Al Capone?", "Time Magazine aiding Al Capone?")
    assert template_misfit("How to blocking venting?", "blocking venting")
    assert not template_misfit("How can I block venting from rodents?", "Blocking Venting from Rodents")
    assert not template_misfit("How to remove Google Scholar citations?", "Remove Google Scholar citations")
    assert not template_misfit("How can I downsample a texture?", "Downsample a texture")
    assert not template_misfit("What is the capital of Australia?", "capital of australia")


def test_content_words_drop_and_overlap():
    assert content_words("How do I install Ubuntu on a USB stick?") == ["install", "ubuntu", "usb", "stick"]
    assert dropped_share("install ubuntu on usb stick", "How do I install Ubuntu?") == 0.5
    assert dropped_share("how to", "What?") == 0.0  # no content word: nothing to drop
    assert overlap("install ubuntu", "How do I install Ubuntu?") == 1.0
    assert overlap("install ubuntu", "How do I install Debian?") == 0.5


def test_hard_rule():
    src = "wiimote pairing with ubuntu laptop"  # 5 content words
    assert not hard_rule(src, "How do I need ubuntu?", 0.3, 0.2)  # less well-formed, drops 80 %
    assert hard_rule(src, "How do I need ubuntu?", 0.3, 0.9)  # more well-formed: the rule does not apply
    assert hard_rule(src, "How to pair a wiimote with an ubuntu laptop?", 0.3, 0.2)  # drops 1 of 5 (20 %)


def test_select_keeps_the_input_rather_than_a_worse_text():
    # the model's rewrite is less well-formed than the input and drops most words: never chosen
    out, why = select("Time Magazine aiding Al Capone?", "How do I need?", [0.5, 0.4, 0.45])
    assert (out, why) == ("Time Magazine aiding Al Capone?", "kept_input")
    # the model's rewrite is far more well-formed and keeps the words: chosen
    out, why = select("install ubuntu on usb stick", "How do I install Ubuntu on a USB stick?", [0.1, 0.6, 0.95])
    assert (out, why) == ("How do I install Ubuntu on a USB stick?", "model")
    # a broken template from the model is no candidate: the rule floor instead
    out, why = select("capital of australia", "How can I capital of australia?", [0.05, 0.9, 0.95])
    assert (out, why) == ("What is the capital of australia?", "rule")
    # no model rewrite (unreadable, or back-off): the rule floor or the input
    assert select("capital of australia", None, [0.05, 0.9, 0.0]) == ("What is the capital of australia?", "rule")
    # the rule floor's casing and "?" against the input: by well-formedness when the margin asks for it
    assert select("Spaghetti carbonara, mixing", None, [0.3, 0.2, 0.0], settings={"margin": 0.0})[1] == "kept_input"
    assert select("Spaghetti carbonara, mixing", None, [0.3, 0.5, 0.0], settings={"margin": 0.0}) == \
        ("Spaghetti carbonara, mixing?", "rule")
    # back-off: a rewrite keeping under 70 % of the words is no candidate (the default margin -1: the rule floor
    # wins over the input whenever it passes the hard rule)
    assert select("install ubuntu on usb stick", "How do I fix it?", [0.1, 0.05, 0.99], backoff=0.7) == \
        ("How can I install ubuntu on usb stick?", "rule")
    # ... with fallback, the next of the beam (in the rerank's order) that keeps them is
    beam = ["How do I fix it?", "How do I install Ubuntu on a USB stick?", "How to install Ubuntu?"]
    assert select("install ubuntu on usb stick", beam, [0.1, 0.05, 0.99, 0.9, 0.95], backoff=0.7,
                  settings={"fallback": True}) == ("How do I install Ubuntu on a USB stick?", "model")


def test_select_never_breaks_the_hard_rule():
    rng = random.Random(0)
    words = "install ubuntu usb stick wifi driver laptop battery python list sort the how do i on a".split()
    for _ in range(2000):
        src = " ".join(rng.sample(words, rng.randint(1, 7)))
        model = " ".join(rng.sample(words, rng.randint(1, 7))) + "?"
        wf = [rng.random() for _ in range(3)]
        settings = {"drop_weight": rng.choice([0.0, 1.0]), "overlap_weight": rng.choice([0.0, 0.25]),
                    "model_bonus": rng.choice([0.0, 0.5, 2.0]), "margin": rng.choice([-1.0, 0.0])}
        out, why = select(src, model, wf, settings=settings)
        wf_out = {"model": wf[2], "rule": wf[1], "kept_input": wf[0]}[why]
        assert hard_rule(src, out, wf[0], wf_out, SAFE["max_drop"]), (src, model, wf, out, why)
        assert (why == "kept_input") == (out == src)


@pytest.fixture(scope="module")
def rewriter():
    pytest.importorskip("onnxruntime")
    from pysynth.mqr.rewrite import Rewriter

    return Rewriter(threads=1)


def test_safe_rewrites_of_the_issue_examples(rewriter):
    from pysynth.mqr.rewrite import DEFAULT_DECODING
    from pysynth.quality import wellformedness

    qs = ["capital of australia", "Time Magazine aiding Al Capone?", "install ubuntu on usb stick", "zzqxv qqzzv"]
    assert DEFAULT_DECODING["select"] == "safe"
    got = rewriter.choices(qs, **DEFAULT_DECODING)
    assert got[3] is None  # unreadable: the input stays, no choice made
    for q, (out, why) in zip(qs, got[:3]):
        assert why in ("model", "rule", "kept_input") and (why == "kept_input") == (out == q)
        assert not template_misfit(out, q), (q, out)
        assert not out.startswith(("How can I capital", "How to Time")), out
        wf_q, wf_out = wellformedness([q, out]).tolist()
        assert hard_rule(q, out, wf_q, wf_out)
    # the first version's behaviour stays reachable
    old = rewriter.rewrite(qs, **{**DEFAULT_DECODING, "select": "model"})
    assert old[0] == "How can I capital of australia?"  # the model's own broken template, now never chosen
    assert rewriter.rewrite(qs, **DEFAULT_DECODING) == [q if c is None else c[0] for q, c in zip(qs, got)]
    with pytest.raises(ValueError, match="select: must be one of safe, model"):
        rewriter.rewrite(qs, select="best")
