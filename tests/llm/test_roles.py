"""Prompt templates (strict variables, overrides, hashes) and lenient reply parsing: no server needed."""
from __future__ import annotations

import pytest

from pysynth.llm import LLMOptions, fingerprint, summary
from pysynth.llm.roles import ROLES, Failed, load_template, locate, parse_reply


@pytest.mark.parametrize("reply, want", [
    ("What is X?", ["What is X?"]),
    ('"What is X?"', ["What is X?"]),
    ("Question: What is X?", ["What is X?"]),
    ("1. What is X?\n2) Who is Y?\n3: Where is Z?", ["What is X?", "Who is Y?", "Where is Z?"]),
    ("- one?\n* two?\n\u2022 three?", ["one?", "two?", "three?"]),
    ("Here are three paraphrases:\n1. a b?\n2. c d?", ["a b?", "c d?"]),
    ('["a?", "b?"]', ["a?", "b?"]),
    ('{"questions": ["a?", "b?"]}', ["a?", "b?"]),
    ('{"question": "a?"}', ["a?"]),
    ('```json\n["a?", "b?"]\n```', ["a?", "b?"]),
    ("```\nTitle: How to brew coffee?\n```", ["How to brew coffee?"]),
    ("**Question:** what  is\tX?", ["what is X?"]),
    ("\u201cSmart quotes?\u201d", ["Smart quotes?"]),
    ("", []), ("   \n ", []), ("...\n--\n?", []), ("[]", []), ("{}", []),
])
def test_parse_reply(reply, want):
    assert parse_reply(reply) == want
    assert parse_reply(reply, many=False) == want[:1]


def test_every_default_template_loads_and_uses_its_variables():
    for name, role in ROLES.items():
        text, sha = load_template(name)
        assert len(sha) == 64
        for v in role.required:
            assert "{" + v + "}" in text


@pytest.mark.parametrize("body, msg", [
    ("Passage {context} answer {answer} and {colour}", r"uses \{colour\}, which the qagen role does not have"),
    ("Passage {context} only", r"does not use \{answer\}"),
    ("{context.upper} {answer}", "a variable is a plain"),
    ("{context!r} {answer}", "a variable is a plain"),
    ('{"json": 1} {context} {answer}', "which the qagen role does not have|a variable is a plain"),
    ("{context} {answer", "not a valid template"),
])
def test_templates_are_checked_strictly(tmp_path, body, msg):
    f = tmp_path / "p.txt"
    f.write_text(body)
    with pytest.raises(ValueError, match=msg):
        load_template("qagen", str(f))


def test_literal_braces_and_the_hash_of_an_override(tmp_path):
    f = tmp_path / "p.txt"
    f.write_text('Reply as JSON {{"question": "..."}}.\nPassage: {context}\nAnswer: {answer}\n')
    text, sha = load_template("qagen", str(f))
    assert sha != load_template("qagen")[1]
    assert text.format(context="c", answer="a").startswith('Reply as JSON {"question": "..."}')
    spec = "openai:http://127.0.0.1:9/v1?model=m"
    a, b = fingerprint(spec, "qagen"), fingerprint(spec, "qagen", LLMOptions(prompt=str(f)))
    assert a["prompt_sha256"] != b["prompt_sha256"] == sha
    assert set(a) == {"backend", "model", "api", "role", "prompt_sha256", "params"} and a["model"] == "m"
    assert "127.0.0.1" not in str(a)  # where it runs is not what it is


def test_failed_is_an_empty_text_with_a_reason():
    f = Failed("llm_unparsable")
    assert f == "" and not f.strip() and f.reason == "llm_unparsable" and isinstance(f, str)


def test_locate_and_the_summary_block():
    assert locate("The Eiffel Tower is in Paris.", "paris") == 23 and locate("abc", "x") is None
    assert summary({}) == {} and summary({}, used=True)["llm"]["requests"] == 0
    block = summary({"llm_requests": 3, "llm_drop_llm_empty": 1, "other": 5})["llm"]
    assert block["requests"] == 3 and block["dropped"] == {"llm_empty": 1}
