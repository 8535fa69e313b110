"""Granstedt 2017's filters (Sect. 3.2.1): the thesis's Tables 3.6 and 3.7 come out exactly."""
from __future__ import annotations

import pytest

from pysynth.paraphrase import filters as S

# Table 3.1: diverse beam search output for "Is this a grocery store?" (B=16, G=4, lambda=0.5);
# the thesis prints <unk> runs glued together
T31 = ["Is it an <unk>", "Is this", "Is it", "Is it a",
       "Do you think this is a grocery store", "Do you think it is a grocery store", "Do you think this is a",
       "Do you think this is a grocery", "Do you think this is a grocery store <unk>",
       "Do you think it is a grocery store <unk>", "Do you think this is a store store <unk>",
       "<unk><unk><unk><unk><unk><unk><unk><unk><unk><unk><unk>", "Is it a store store <unk><unk><unk><unk>",
       "Is it a store store <unk><unk><unk><unk><unk>", "Is it an Grocery Store", "Is it a grocery store",
       "Is it an grocery store", "Is it an", "Is it an independent grocery store <unk><unk>",
       "Is it an independent grocery store <unk>", "Is it an independent grocery <unk><unk>",
       "Is it a grocery store <unk>", "Is it a grocery store <unk><unk>", "Is it a grocery store <unk><unk><unk>",
       "Is it a grocery store </s>"]

# Table 3.6 ("augmented") and Table 3.7 ("diverse"): source -> the three printed selections
T36 = {
    "Is this a grocery store ?": ["Do you think it is a grocery store?", "Do you think that this is?",
                                  "Do you think that this is a?"],
    "Are these items for sale ?": ["Do you think they are selling?", "Do those articles have been intended for sale?",
                                   "Do they want to sell their?"],
    "What is for sale under this tent ?": ["What does it mean for the sale under this?",
                                           "What does it do for the sale under the?",
                                           "What do we need to do for the sale under that <unk>?"],
    "Is the bird sitting on a plant ?": ["Are there any birds sitting on an?", "Do you have any birds sitting on?",
                                         "Are there any birds sitting on a plant?"],
    "What color is the keyboard ?": ["How are you using the keyboard as a?",
                                     "How are you using the keyboard as a colour <unk>?",
                                     "How are you using the keyboard as a <unk>?"],
    "How many animals can be seen ?": ["How many animals can they be viewed?", "How many animals can be viewed?",
                                       "How many animals can be considered?"],
    "What shape is the bench seat ?": ["Which form is the seat of the House?", "How is the seat of the head of?",
                                       "What form is the seat of the seat of the group?"],
}
T37 = {
    "Is this a grocery store ?": ["Do you think it is a grocery store?", "Is it an Grocery Store?",
                                  "Do the grocery store are a convenience?"],
    "Are these items for sale ?": ["Do you think they are selling?", "Do those articles have been intended for sale?",
                                   "Do they want to be sold?"],
    "What is for sale under this tent ?": ["What do you need to do to sell?",
                                           "What does it mean for the sale under this?",
                                           "What is a sales under this?"],
    "Is the bird sitting on a plant ?": ["Are there any birds sitting on an?", "Do you have any birds sitting on?",
                                         "Does the birds sit on a?"],
    "What color is the keyboard ?": ["How are you using the keyboard as a?", "Is there any colour that?",
                                     "How does the keyboard form?"],
    "How many animals can be seen ?": ["How many animals can they be viewed?", "How many animals can be considered?",
                                       "How many animals can be found?"],
    "What shape is the bench seat ?": ["Which form is the seat of the House?", "How is the seat of the head of?",
                                       "What form is the seat of the seat of the group?"],
}


def _pool(*tables, src):
    """The candidates the backward model gave (as printed: "?" restored, so strip it), in order."""
    out = []
    for t in tables:
        for c in t[src]:
            c = S.strip_question(c)
            if c not in out:
                out.append(c)
    return out + (T31 if src.startswith("Is this a grocery") else [])


@pytest.mark.parametrize("src", list(T36))
def test_table_3_6_augmented(src):
    # the augmented run's pool: its selections + Table 3.1's rejected candidates. Table 3.7's
    # "What do you need to do to sell" scores 5 in both modes, so it cannot have been in the pool
    # that gave Table 3.6's two 4s: the two tables come from different candidate lists.
    got = S.select(src, _pool(T36, src=src), mode="augmented", top=3)
    assert [S.restore_question(g, src) for g in got] == T36[src]


@pytest.mark.parametrize("src", list(T37))
def test_table_3_7_diverse(src):
    got = S.select(src, _pool(T37, T36, src=src), mode="diverse", top=3)
    assert [S.restore_question(g, src) for g in got] == T37[src]


def test_scores_and_components():
    chosen, scored = S.select("What color is the keyboard ?", _pool(T36, src="What color is the keyboard ?"),
                              return_scores=True)
    by = {s.text: s for s in scored}
    s = by["How are you using the keyboard as a colour <unk>"]
    # {How are you using the keyboard as a colour} = 9 words, {the keyboard} overlap, one unknown
    assert (s.words, s.overlap, s.unknown, s.length, s.illegal, s.score) == (9, 2, 1.0, 0.0, 0.0, 6.0)
    assert s.chosen and sum(x.chosen for x in scored) == 3
    g = S.score("Is it a grocery store </s>", "Is this a grocery store ?")
    assert g.illegal == 10 and g.score == 1 - 10  # "it" is the only new word
    assert S.score("How many birds are <unk>!!", "How many birds ?").illegal == 10
    short = S.score("Is it", "Is the bird sitting on a plant ?")
    assert short.length == 10 and short.score == 1 - 10


def test_case_and_unknowns():
    assert S.score("is THIS", "Is this", case_sensitive=False).score == 0
    assert S.score("is THIS", "Is this").score == 2
    a = S.analyze("How many birds are <unk>! ?")
    assert a.words == ("How", "many", "birds", "are") and a.unknowns == 1 and a.multi_punct
    assert S.analyze("store<unk><unk>").unknowns == 2


def test_pivot_filter_rules():
    src = "How many animals can be seen ?"
    assert S.pivot_rejections("Combien d'animaux peuvent être vus ?", src) == []
    assert S.pivot_rejections("Combien </s>", src) == ["illegal_tokens", "too_short"]
    assert S.pivot_rejections("Combien d'animaux peuvent être vus !!", src) == ["multiple_punctuation"]
    assert S.pivot_rejections("Combien <unk> peuvent <unk> vus", src) == ["unknown_density"]
    assert S.pivot_rejections("Combien <unk> peuvent être vus", src) == []  # 1 in 5: not above


def test_modes_and_edges():
    assert S.select("a b ?", []) == []
    assert S.select("What is it ?", ["What is it", "What is it"]) == []  # nothing new: score 0
    got = S.select("What is it ?", ["What was that", "What was that", "Which one"], top=2)
    assert got == ["What was that", "Which one"]  # repeats scored once
    assert S.restore_question("what is it", "What is it ?") == "what is it?"
    assert S.restore_question("what is it", "What is it.") == "what is it"
    assert S.strip_question("Est-ce un magasin ?") == "Est-ce un magasin"


@pytest.mark.parametrize("kw, exc, match", [
    (dict(mode="best"), ValueError, "mode"), (dict(top=0), ValueError, "top"), (dict(top=True), ValueError, "top"),
    (dict(candidates="abc"), TypeError, "candidates"), (dict(candidates=[1]), TypeError, r"candidates\[0\]"),
    (dict(original=None), TypeError, "original"),
])
def test_bad_arguments(kw, exc, match):
    args = dict(original="What is it ?", candidates=["What was it"])
    args.update(kw)
    with pytest.raises(exc, match=match):
        S.select(**args)
