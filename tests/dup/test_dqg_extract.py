"""The learned extractive title writer (``--model extract``, :func:`pysynth.dup.dqg.extract_title`):
the candidates a body offers, their features, and the scorer's choice among them."""
from __future__ import annotations

import pytest

from pysynth.dup.dqg import (
    _TITLE_WEIGHTS,
    EXTRACT,
    TITLE_FEATURES,
    TitleGenerator,
    _title_candidates,
    extract_title,
    rule_title,
)

BODIES = [
    "I have a dataset of licence plates of two kinds. Would it be better to split this into two smaller networks, "
    "each recognizing one type of plate, or should one network handle both?",
    "I read about Markov chains in a book. What are examples of the application of a Markov chain and can it be used "
    "to create artificial intelligence?",
    "Just wondering, is it ok to ask questions if you know the answer already?",
    "In connection with the moderator elections, we will be holding a Q&A with the candidates. Please post your "
    "questions here.",
    "When I grind beans at home for the espresso machine in the kitchen, how fine should the grind be?",
]


@pytest.mark.parametrize("body, want", [
    (BODIES[0], "Would it be better to split this into two smaller networks?"),  # the first clause, asked
    (BODIES[1], "What are examples of the application of a Markov chain?"),
    (BODIES[2], "Is it ok to ask questions if you know the answer already?"),  # "Just wondering," trimmed
    (BODIES[3], "In connection with the moderator elections"),  # no question: a cut, not ending on "a"
    ("I tried a burr grinder. So, how do I adjust the grind size? It is too fine.", "How do I adjust the grind size?"),
    ("", ""), ("  \n ", ""),
])
def test_extract_title(body, want):
    assert extract_title(body) == want


def test_the_choice_is_the_best_scored_candidate():
    assert len(_TITLE_WEIGHTS) == len(TITLE_FEATURES)
    for body in BODIES:
        texts, rows = _title_candidates(body)
        assert texts and len(texts) == len(rows) == len(set(texts)) and {len(r) for r in rows} == {len(TITLE_FEATURES)}
        rule = rule_title(body)
        assert rule in texts or not rule.endswith("?")  # a cut title of the rule is cut back off a short word here
        scores = [sum(w * x for w, x in zip(_TITLE_WEIGHTS, r)) for r in rows]
        assert extract_title(body) == texts[scores.index(max(scores))]
        for t in texts:  # a title ends neither on a full stop nor, when cut, on a short function word
            assert not t.endswith((".", ",", ";", ":"))
            last = t.split()[-1]  # (a cut keeps 3 words at least)
            assert len(t.split()) <= 3 or t.endswith("?") or not (last.islower() and len(last) <= 3), t
    assert _title_candidates("") == ([], [])


def test_candidate_forms():
    texts, rows = _title_candidates(BODIES[4])
    f = {name: i for i, name in enumerate(TITLE_FEATURES)}
    tail = texts.index("How fine should the grind be?")  # the asking clause after the comma
    assert rows[tail][f["tail"]] == 1.0 and rows[tail][f["wh_start"]] == 1.0 and rows[tail][f["ends_question"]] == 1
    # a sentence that asks in its last clause gives no first-clause question ("When I grind ...?")
    assert not any(t.endswith("kitchen?") for t in texts)
    texts, rows = _title_candidates(BODIES[2])  # "Just wondering, is it ok ...?": the clause after the comma
    k = texts.index(extract_title(BODIES[2]))
    assert rows[k][f["tail"]] == 1.0 and rows[k][f["first_question"]] == 1.0 and rows[k][f["cut"]] == 0.0
    texts, rows = _title_candidates("I tried it. So, how do I adjust the grind size?")
    k = texts.index("How do I adjust the grind size?")
    assert rows[k][f["trimmed"]] == 1.0 and rows[k][f["second_sentence"]] == rows[k][f["last_sentence"]] == 1.0


def test_generator_spec_and_errors():
    gen = TitleGenerator(EXTRACT)
    assert gen.generate(BODIES + [""]) == [(extract_title(b), "") for b in BODIES] + [("", "empty")]
    assert gen.generate(BODIES) == gen.generate(list(reversed(BODIES)))[::-1]  # a body's title needs only the body
    for bad in (None, 3, b"bytes"):
        with pytest.raises(TypeError, match="body"):
            extract_title(bad)
