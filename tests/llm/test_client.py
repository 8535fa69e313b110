"""The OpenAI-compatible client against llama.cpp's server: protocol, n samples, seeds, retries on
429 / 5xx / timeouts / dropped connections, refusals, the concurrency limit, the key and the cache."""
from __future__ import annotations

import json

import pytest

from pysynth.llm import LLMError, LLMOptions, LLMParams, open_llm
from pysynth.llm.cache import ResponseCache

PROMPTS = ["Write a question about Paris.", "Who wrote Hamlet?", "What is the capital of France?"]


def _llm(url, api="chat", **kw):
    params = LLMParams(max_new_tokens=kw.pop("max_new_tokens", 12), n=kw.pop("n", 1),
                       temperature=kw.pop("temperature", 0.0), seed=kw.pop("seed", 0), stop=kw.pop("stop", ()))
    return open_llm(f"openai:{url}?model=tiny&api={api}", LLMOptions(params=params, **kw))


@pytest.mark.parametrize("api", ["chat", "completions"])
def test_both_apis_answer_every_prompt_with_usage(proxy, api):
    llm = _llm(proxy.url(), api, retries=0)
    replies = llm.complete(PROMPTS)
    assert [len(r["texts"]) for r in replies] == [1, 1, 1] and not any(r["refused"] for r in replies)
    assert all(r["prompt_tokens"] > 0 and r["completion_tokens"] > 0 for r in replies)
    u = llm.take_usage()
    assert u["requests"] == 3 and u["prompts"] == 3 and u["prompt_tokens"] == sum(r["prompt_tokens"] for r in replies)
    assert proxy.forwarded == 3
    body = proxy.bodies[0]
    assert body["model"] == "tiny" and body["max_tokens"] == 12 and ("messages" in body) == (api == "chat")
    assert llm.take_usage() == {}  # taken


def test_n_samples_are_topped_up_with_seed_plus_i(proxy):
    # llama.cpp's server returns one choice whatever n: the client asks again with seed + i
    llm = _llm(proxy.url(), n=3, temperature=0.9, seed=5)
    (r,) = llm.complete([PROMPTS[0]])
    assert len(r["texts"]) == 3
    seeds = [b["seed"] for b in proxy.bodies]
    assert seeds == [seeds[0], seeds[0] + 1, seeds[0] + 2] and proxy.bodies[0]["n"] == 3
    # the seed comes from the run's seed and the prompt, not from the position or the batch
    proxy.reset()
    _llm(proxy.url(), n=1, temperature=0.9, seed=5).complete(["other", PROMPTS[0]])
    assert seeds[0] in [b["seed"] for b in proxy.bodies]


def test_greedy_replies_are_deterministic(proxy):
    a = _llm(proxy.url()).complete(PROMPTS)
    b = _llm(proxy.url(), concurrency=1).complete(PROMPTS[::-1])[::-1]
    assert [r["texts"] for r in a] == [r["texts"] for r in b]


def test_stop_strings_cut_client_side(proxy):
    full = _llm(proxy.url(), max_new_tokens=24).complete([PROMPTS[1]])[0]["texts"][0]
    assert len(full) > 3
    cut = full[2:4]
    got = _llm(proxy.url(), max_new_tokens=24, stop=(cut,)).complete([PROMPTS[1]])[0]["texts"][0]
    assert cut not in got and full.startswith(got)
    assert proxy.bodies[-1]["stop"] == [cut]


@pytest.mark.parametrize("faults", [
    [("status", 429, "0")],                       # rate limited, Retry-After honoured
    [("status", 503, None), ("status", 500, None)],  # server errors, exponential backoff
    ["drop"],                                     # the connection closed without a reply
    ["slow"],                                     # no reply within the timeout
])
def test_transient_failures_are_retried(proxy, faults):
    proxy.slow_s = 2.0
    proxy.faults = list(faults)
    llm = _llm(proxy.url(), timeout=0.5, retries=3, concurrency=1)
    (r,) = llm.complete([PROMPTS[0]])
    assert len(r["texts"]) == 1 and not r["refused"]
    u = llm.take_usage()
    assert u["retries"] == len(faults) and u["requests"] == len(faults) + 1
    assert proxy.posts == len(faults) + 1 and proxy.forwarded == 1


def test_retries_exhausted_stop_the_run_without_the_key(proxy, monkeypatch):
    monkeypatch.setenv("PYSYNTH_LLM_API_KEY", "sk-very-secret-123")
    proxy.faults = [("status", 503, "0")] * 3
    with pytest.raises(LLMError, match="failed after 2 retries: HTTP 503") as e:
        _llm(proxy.url(), retries=2).complete([PROMPTS[0]])
    assert "sk-very-secret" not in str(e.value)
    assert proxy.auth == ["Bearer sk-very-secret-123"] * 3  # sent as a header, on every attempt


def test_a_bad_status_stops_at_once_and_names_the_endpoint(proxy, monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-other-456")
    monkeypatch.delenv("PYSYNTH_LLM_API_KEY", raising=False)
    proxy.faults = [("status", 401, None)]
    with pytest.raises(LLMError, match="HTTP 401") as e:
        _llm(proxy.url(), retries=3).complete([PROMPTS[0]])
    assert proxy.posts == 1 and "sk-other" not in str(e.value) and proxy.url() in str(e.value)


def test_a_refused_prompt_is_a_reply_not_an_error(proxy):
    proxy.faults = ["refuse"]
    from pysynth.llm.roles import Role

    llm = _llm(proxy.url(), concurrency=1)
    out = Role("mqr", llm).ask([{"question": "a"}, {"question": "b"}])
    assert out[0].texts == [] and out[0].reason == "llm_refused" and out[1].reason is None
    assert llm.take_usage()["drop_llm_refused"] == 1


@pytest.mark.parametrize("limit", [1, 3])
def test_the_concurrency_limit_holds(proxy, limit):
    proxy.hold_s = 0.4  # requests stay in flight together long enough to be counted
    llm = _llm(proxy.url(), concurrency=limit)
    llm.complete([f"prompt number {i}" for i in range(7)])
    assert 1 <= proxy.max_in_flight <= limit
    if limit > 1:
        assert proxy.max_in_flight > 1  # the limit is used, not just respected
    assert proxy.forwarded == 7


def test_the_cache_answers_again_and_ignores_a_torn_line(proxy, tmp_path, monkeypatch):
    monkeypatch.setenv("PYSYNTH_LLM_API_KEY", "sk-cache-789")
    path = tmp_path / "cache.jsonl"
    first = _llm(proxy.url(), cache=str(path)).complete(PROMPTS)
    assert proxy.forwarded == 3 and len(path.read_text().splitlines()) == 3
    assert "sk-cache" not in path.read_text()
    proxy.reset()
    llm = _llm(proxy.url(), cache=str(path))
    assert llm.complete(PROMPTS) == first and proxy.posts == 0
    assert llm.take_usage()["cache_hits"] == 3
    # a kill in the middle of an append leaves a torn last line: that answer is asked again
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:2]) + lines[2][: len(lines[2]) // 2])
    assert len(ResponseCache(path)) == 2
    assert _llm(proxy.url(), cache=str(path)).complete(PROMPTS) == first and proxy.forwarded == 1
    docs = [json.loads(x) for x in path.read_text().splitlines() if x.startswith("{") and x.endswith("}")]
    assert len({d["key"] for d in docs}) == 3  # the torn line stays, a whole line follows it


def test_the_cache_key_holds_the_parameters(proxy, tmp_path):
    path = str(tmp_path / "c.jsonl")
    _llm(proxy.url(), cache=path).complete(PROMPTS[:1])
    _llm(proxy.url(), cache=path, max_new_tokens=5).complete(PROMPTS[:1])
    _llm(proxy.url(), "completions", cache=path).complete(PROMPTS[:1])
    assert proxy.forwarded == 3


def test_models_load_opens_an_llm(proxy):
    from pysynth import models

    llm = models.load(f"openai:{proxy.url()}?model=tiny", task="llm")
    assert llm.spec.model == "tiny" and llm.complete(["hi"])[0]["texts"]


@pytest.mark.parametrize("spec, msg", [
    ("openai:127.0.0.1:8000/v1?model=m", "no http"),
    ("openai:http://127.0.0.1:8000/v1", "names no model"),
    ("openai:http://127.0.0.1:8000/v1?model=m&api=embeddings", "api must be"),
    ("openai:http://127.0.0.1:8000/v1?model=m&key=sk", "never from the spec"),
    ("hf-causal:/no/such/dir", "not a directory"),
])
def test_bad_specs_say_the_syntax(spec, msg):
    from pysynth.llm import parse_spec

    with pytest.raises(ValueError, match=msg):
        parse_spec(spec)


def test_params_are_checked():
    for kw, msg in [({"n": 0}, "n: must be"), ({"temperature": -1}, "temperature"), ({"top_p": 0}, "top_p"),
                    ({"stop": [""]}, "stop")]:
        with pytest.raises(ValueError, match=msg):
            LLMParams(**kw)
    with pytest.raises(ValueError, match="concurrency"):
        LLMOptions(concurrency=0)
