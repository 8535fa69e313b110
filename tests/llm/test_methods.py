"""Every generation role end to end, through the commands, against llama.cpp's server and on a local
causal LM folder: the filters decide as before, the summary has its ``llm`` block, the signature
records the generator, and a rerun is byte-identical without a request."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from _servers import cli

CONTEXTS = [
    {"id": "c1", "title": "Paris", "context": "Paris is the capital of France. The Eiffel Tower was built in 1889 "
                                              "for the World's Fair and is 330 metres tall."},
    {"id": "c2", "title": "Hamlet", "context": "Hamlet is a tragedy written by William Shakespeare around 1600. "
                                               "It is set in Denmark."},
    {"id": "c3", "title": "Nile", "context": "The Nile is a river in Africa. It flows north into the "
                                             "Mediterranean Sea and is about 6650 kilometres long."},
]
QUESTIONS = ["what is the capital of france?", "who wrote hamlet?", "how long is the nile river"]


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    import sys

    d = tmp_path_factory.mktemp("data")
    (d / "ctx.jsonl").write_text("".join(json.dumps(c) + "\n" for c in CONTEXTS))
    rows = [{"context": c["context"], "answer_text": a, "answer_start": c["context"].index(a)}
            for c, a in zip(CONTEXTS, ["France", "William Shakespeare", "Africa"])]
    (d / "answers.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows))
    (d / "q.jsonl").write_text("".join(json.dumps({"id": i, "question": q}) + "\n" for i, q in enumerate(QUESTIONS)))
    (d / "k.jsonl").write_text("".join(json.dumps({"keywords": k}) + "\n" for k in ["paris capital", "nile length"]))
    sys.path.insert(0, str(Path(__file__).parents[1] / "dup"))
    from test_pairs import write_dump

    write_dump(d)
    return d


#: command -> (argv given the spec, the data folder and the output; the signature's models key)
COMMANDS = {
    "qagen": (lambda s, d, o: ["qagen", "generate", "--in", d / "ctx.jsonl", "--out", o, "--question-model", s,
                               "--keep-discarded"], "question"),
    "qagen-answers": (lambda s, d, o: ["qagen", "generate", "--in", d / "ctx.jsonl", "--out", o, "--answer-model", s,
                                       "--question-model", s, "--keep-discarded"], "answer"),
    "qagen-questions": (lambda s, d, o: ["qagen", "questions", "--in", d / "answers.jsonl", "--out", o,
                                         "--question-model", s], "question"),
    "paraphrase": (lambda s, d, o: ["paraphrase", "generate", "--in", d / "q.jsonl", "--out", o, "--pivot", s,
                                    "--min-similarity", "off", "--samples", "2", "--temperature", "0.8"],
                   "paraphraser"),
    "paraphrase-pivots": (lambda s, d, o: ["paraphrase", "generate", "--in", d / "q.jsonl", "--out", o,
                                           "--pivot", f"{s},{s}", "--min-similarity", "off"], "forward"),
    "mqr": (lambda s, d, o: ["mqr", "rewrite", "--in", d / "q.jsonl", "--out", o, "--model", s], "rewriter"),
    "dqg": (lambda s, d, o: ["dup", "pairs", "--in", d / "tiny", "--out", o, "--method", "dqg", "--model", s], "dqg"),
    "k2q": (lambda s, d, o: ["k2q", "generate", "--in", d / "k.jsonl", "--out", o, "--model", s, "--n", "3"], None),
}


def _rows(p: Path):
    return [json.loads(x) for x in p.read_text().splitlines()]


def _check_rows(name: str, rows, summary) -> None:
    """What each command's filters and reasons look like on LLM output."""
    llm_reasons = {"llm_empty", "llm_unparsable", "llm_refused"}
    if name.startswith("qagen") and name != "qagen-questions":
        from pysynth.qagen.pipeline import REASONS

        assert rows and all("consistent" in r for r in rows)  # the roundtrip filter decided every row
        assert all(r["reason"] in REASONS or r["reason"].startswith("rejected") for r in rows if r["reason"])
        assert summary["kept"] + summary["discarded"] == len([r for r in rows if not r["is_impossible"]])
    elif name == "qagen-questions":
        assert len(rows) == 3 and all("question" in r for r in rows)
        assert all(r["reason"] in llm_reasons for r in rows if "reason" in r)
    elif name.startswith("paraphrase"):
        assert len(rows) == 3 and all(isinstance(r["paraphrases"], list) for r in rows)
    elif name == "mqr":
        assert len(rows) == 3 and {r["choice"] for r in rows} <= {"model", "rule", "kept_input"} | llm_reasons
    elif name == "dqg":
        assert rows and all(r["method"] == "dqg" for r in rows)
    else:
        assert len(rows) == 2 and all(isinstance(r["questions"], list) for r in rows)
        assert all(r["reason"] in llm_reasons for r in rows if "reason" in r)


def _run_twice(name, spec, data, tmp_path, counter):
    argv, key = COMMANDS[name]
    out = tmp_path / "out.jsonl"
    summary = cli(*argv(spec, data, out), "--max-new-tokens", "16")
    first = out.read_bytes()
    meta = Path(str(out) + ".meta.json")
    _check_rows(name, _rows(out), summary)
    block = summary["llm"]
    assert block["requests"] > 0 and block["prompt_tokens"] > 0  # (a re-ask, e.g. the n-gram guard: a cache hit)
    assert Path(str(out) + ".llm-cache.jsonl").is_file()
    m1 = meta.read_bytes() if key else None
    before = counter()
    again = cli(*argv(spec, data, out), "--max-new-tokens", "16")
    assert counter() == before, "a rerun asked the LLM again"
    assert again["llm"]["requests"] == 0 and again["llm"]["cache_hits"] > 0
    assert out.read_bytes() == first
    if key:
        assert meta.read_bytes() == m1
        doc = json.loads(m1)
        assert "llm" not in doc["summary"]  # requests and cache hits depend on the cache: not signed
        return doc["models"][key]
    return None


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_role_against_the_server(name, spec, proxy, data, tmp_path, monkeypatch):
    monkeypatch.setenv("PYSYNTH_LLM_API_KEY", "sk-role-test")
    sig = _run_twice(name, spec, data, tmp_path, lambda: proxy.posts)
    assert proxy.auth and all(a == "Bearer sk-role-test" for a in proxy.auth)
    for p in tmp_path.iterdir():
        assert "sk-role-test" not in p.read_text(errors="replace"), p  # not in the output, cache or signature
    if sig is not None:
        assert sig["backend"] == "openai" and sig["model"] == "tiny" and sig["api"] == "chat"
        assert len(sig["prompt_sha256"]) == 64 and sig["params"]["max_new_tokens"] == 16


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_every_role_on_a_local_causal_lm(name, hf_llama, data, tmp_path):
    from pysynth.llm import client

    calls = []
    orig = client.LLM.complete

    def counting(self, prompts, params=None):
        calls.append(sum(self.cache is None or self.cache.get(self.key(p, params)) is None for p in prompts))
        return orig(self, prompts, params)

    client.LLM.complete = counting
    try:
        sig = _run_twice(name, f"hf-causal:{hf_llama}", data, tmp_path, lambda: sum(calls))
    finally:
        client.LLM.complete = orig
    if sig is not None:
        assert sig["backend"] == "hf-causal" and sig["model"] == "tiny-llama" and len(sig["sha256"]) == 64


def test_a_causal_folder_is_an_llm_spec_and_loads(hf_llama):
    from pysynth import models
    from pysynth.llm import LLMOptions, LLMParams, is_llm_spec, open_llm

    assert is_llm_spec(str(hf_llama)) and is_llm_spec(hf_llama)
    llm = models.load(str(hf_llama))
    assert llm.backend.name == "hf-causal" and "assistant:" in llm.backend.render("hi")  # the chat template
    # sampling: a prompt's samples do not depend on the prompts beside it (seeded per prompt)
    p = LLMParams(max_new_tokens=8, temperature=1.0, n=2, seed=3)
    a = open_llm(hf_llama, LLMOptions(params=p, concurrency=4)).complete(["what is the city", "who was king"])
    b = open_llm(hf_llama, LLMOptions(params=p, concurrency=1)).complete(["who was king"])
    assert a[1]["texts"] == b[0]["texts"] and len(a[1]["texts"]) == 2
    # beam search, batched with left padding
    beam = open_llm(hf_llama, LLMOptions(params=LLMParams(max_new_tokens=6, beams=3, n=2)))
    assert all(len(r["texts"]) == 2 for r in beam.complete(["what is", "the capital of the city of paris is"]))


def test_a_prompt_file_changes_the_signature(spec, data, tmp_path):
    f = tmp_path / "mine.txt"
    f.write_text("Rewrite as a question: {question}\n")
    out = tmp_path / "m.jsonl"
    cli("mqr", "rewrite", "--in", data / "q.jsonl", "--out", out, "--model", spec, "--prompt", f,
        "--max-new-tokens", "8")
    import hashlib

    sig = json.loads(Path(str(out) + ".meta.json").read_text())["models"]["rewriter"]
    assert sig["prompt_sha256"] == hashlib.sha256(f.read_bytes()).hexdigest()


def test_a_bad_template_or_spec_is_one_clean_line(spec, data, tmp_path, capsys):
    from pysynth.cli import main

    f = tmp_path / "bad.txt"
    f.write_text("Rewrite {query}\n")
    assert main(["mqr", "rewrite", "-q", "--in", str(data / "q.jsonl"), "--out", str(tmp_path / "o.jsonl"),
                 "--model", spec, "--prompt", str(f)]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "{query}" in err[0] and "{question}" in err[0]
    assert main(["k2q", "generate", "--in", str(data / "k.jsonl"), "--out", "-",
                 "--model", "openai:http://127.0.0.1:9/v1"]) == 2
    assert "names no model" in capsys.readouterr().err
