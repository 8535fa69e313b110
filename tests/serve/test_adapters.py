"""Served adapters (:mod:`pysynth.pipelines.served`): the request dataclasses as strict pydantic
models, the shared input checks, and a new method's adapter mounted by ``create_app`` with nothing
else to change (batching, limits, errors, ``/ready``, the schema)."""
from __future__ import annotations

import json
import socket
import threading
import time
import urllib.error
import urllib.request
from dataclasses import dataclass
from typing import List, Optional, Union

import pytest

from pysynth.pipelines.served import Adapter, Loaded, RequestError, check_texts, param


@dataclass(kw_only=True)
class EchoRequest:
    texts: Union[str, List[str]] = param(description="texts to shout", examples=["hi"])
    times: int = param(1, ge=1, le=3)
    weight: Optional[float] = param(None, ge=0, le=1)


@dataclass(kw_only=True)
class Shout:
    text: str
    times: int = param(description="repeats")


@dataclass(kw_only=True)
class EchoResponse:
    model: str
    results: List[Shout]


class EchoAdapter(Adapter):
    name, route, summary = "echo", "/v1/echo", "upper-case each text"
    request, response, errors = EchoRequest, EchoResponse, (404, 422, 503)
    default_model = "echo-default"
    calls: list = []

    def load(self, spec, *, device="cpu", threads=0):
        if spec == "bad":
            raise ValueError("--model echo=bad: no such echo")
        return Loaded(str.upper, spec or self.default_model, ["CPUExecutionProvider"])

    def call(self, model, key, inputs):
        self.calls.append((key, list(inputs)))
        return [model(t) * key for t in inputs]

    async def handle(self, req, ctx):
        g = ctx.model(self.name)
        texts = ctx.texts(req.texts, "texts")
        if any("!" in t for t in texts):
            raise RequestError(422, "texts: no shouting in the input")
        outs = await ctx.submit(self.name, req.times, texts)
        return {"model": g.name, "results": [{"text": o, "times": req.times} for o in outs]}


def test_request_dataclasses_become_strict_models():
    pytest.importorskip("pydantic")
    from pydantic import ValidationError

    from pysynth.serve.schemas import model_of

    cache: dict = {}
    body = model_of(EchoRequest, True, cache)
    assert body(texts="a").times == 1 and body(texts=["a"], weight=1).weight == 1
    for bad in ({"texts": "a", "times": "2"}, {"texts": "a", "times": 4}, {"texts": 5}, {"texts": "a", "x": 1},
                {"texts": "a", "weight": True}, {}):
        with pytest.raises(ValidationError):
            body(**bad)
    schema = body.model_json_schema()
    assert schema["additionalProperties"] is False and schema["required"] == ["texts"]
    assert schema["properties"]["times"] == {"default": 1, "maximum": 3, "minimum": 1, "title": "Times",
                                             "type": "integer"}
    out = model_of(EchoResponse, False, cache).model_json_schema()
    assert out["$defs"]["Shout"]["properties"]["times"]["description"] == "repeats"
    assert model_of(EchoRequest, True, cache) is body  # memoised


@pytest.mark.parametrize("value,status,msg", [
    ([], 422, "t: empty list"), (["a"] * 4, 413, "4 items"), ("abcd", 413, "t[0]: 4 characters"),
    (["a", " "], 422, "t[1]: empty string"), ("a\udcff", 422, "unpaired surrogate"),
])
def test_check_texts(value, status, msg):
    with pytest.raises(RequestError) as err:
        check_texts(value, "t", max_inputs=3, max_chars=3)
    assert err.value.status == status and msg in err.value.message
    assert check_texts("abc", "t", 3, 3) == ["abc"]


@pytest.fixture()
def echo_registered(monkeypatch):
    from pysynth.serve import models

    adapter = EchoAdapter()
    monkeypatch.setitem(models.ADAPTERS, "echo", adapter)
    monkeypatch.setitem(models.TASKS, "echo", adapter.default_model)
    return adapter


def test_a_new_adapter_is_served_with_nothing_else_to_change(echo_registered):
    pytest.importorskip("fastapi")
    uvicorn = pytest.importorskip("uvicorn")
    from pysynth.serve import ServeConfig, create_app

    with pytest.raises(ValueError, match="no such echo"):
        create_app(ServeConfig(models={"echo": "bad"}))
    app = create_app(ServeConfig(models={"echo": None}, warmup=False, max_wait_ms=50))
    assert "/v1/echo" in app.openapi()["paths"] and "EchoRequest" in app.openapi()["components"]["schemas"]
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    srv = uvicorn.Server(uvicorn.Config(app, log_level="critical"))
    t = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    t.start()

    def call(path, body=None):
        req = urllib.request.Request(url + path, data=None if body is None else json.dumps(body).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    try:
        for _ in range(200):
            try:
                if call("/ready")[0] == 200:
                    break
            except OSError:
                time.sleep(0.05)
        status, ready = call("/ready")
        assert status == 200 and ready["models"] == {"echo": {"model": "echo-default",
                                                              "providers": ["CPUExecutionProvider"]}}
        assert call("/v1/echo", {"texts": ["ab", "c"], "times": 2}) == (
            200, {"model": "echo-default", "results": [{"text": "ABAB", "times": 2}, {"text": "CC", "times": 2}]})
        assert echo_registered.calls[-1] == (2, ["ab", "c"])
        assert call("/v1/echo", {"texts": "hey!"}) == (422, {"error": "texts: no shouting in the input"})
        assert call("/v1/echo", {"texts": []})[0] == 422
        status, res = call("/v1/echo", {"texts": "a", "times": 9})
        assert status == 422 and res["error"].startswith("invalid request: times:")
        assert call("/v1/k2q", {"keywords": "x"})[0] == 404  # not loaded: the adapter's own message
    finally:
        srv.should_exit = True
        t.join(10)
