"""``pysynth serve`` under hostile-but-fair input (issue 27), loopback only, bounded in count and
time: origin safety (JSON only, Host allow-list, bearer token, CORS), one error shape, no paths in
responses, idle and slow connections dropped, per-request budgets, cancellation of timed-out work.
The 2,100-connection and cancellation measurements are ``bench/serve_hostile.py``."""
from __future__ import annotations

import asyncio
import json
import socket
import subprocess
import sys
import threading

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("onnxruntime")

from _server import Server, read_until_closed  # noqa: E402

KEY = "test-key-0123456789"
ORIGIN = "http://app.example:3000"


@pytest.fixture(scope="module")
def server():
    with Server("--threads", "1", "--tasks", "wellformed,qagen", "--read-timeout", "1", "--idle-timeout", "1",
                "--cors-origin", ORIGIN, "--allow-host", "pysynth.internal", api_key=KEY) as s:
        yield s
        assert s.alive(), "the server died during the tests:\n" + "\n".join(s.log)


def _addr(server):
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def _raw(server, data: bytes, timeout: float = 30) -> bytes:
    with socket.create_connection(_addr(server), timeout=timeout) as sock:
        sock.sendall(data)
        return read_until_closed(sock, limit=1 << 30)


def _only_error(res) -> bool:
    return isinstance(res, dict) and set(res) == {"error"} and isinstance(res["error"], str) and res["error"]


WF = {"texts": "what is the capital of france?"}


def test_json_only_host_allow_list_and_api_key(server):
    assert server.post("/v1/wellformed", WF)[0] == 200
    for ctype in ("text/plain", "application/x-www-form-urlencoded", "multipart/form-data; boundary=x", ""):
        status, res = server.request("POST", "/v1/wellformed", json.dumps(WF).encode(), headers={"Content-Type": ctype})
        assert status == 415 and _only_error(res), (ctype, res)
    status, res = server.request("POST", "/v1/wellformed", json.dumps(WF).encode(),
                                 headers={"Content-Type": "application/json; charset=utf-8"})
    assert status == 200, res
    for host in ("evil.example", "evil.example:8000", "127.0.0.1.evil.example", "localhost.evil.example"):
        status, res = server.request("POST", "/v1/wellformed", WF, headers={"Host": host})
        assert status == 421 and _only_error(res) and "--allow-host" in res["error"], (host, res)
    assert server.request("POST", "/v1/wellformed", WF, headers={"Host": "pysynth.internal:80"})[0] == 200
    assert server.request("GET", "/ready", headers={"Host": "localhost"})[0] == 200
    assert server.request("GET", "/ready", headers={"Host": "[::1]:8000"})[0] == 200
    for auth in ({"Authorization": ""}, {"Authorization": "Bearer wrong-key-0123"}, {"Authorization": KEY}):
        for method, path, body in (("POST", "/v1/wellformed", WF), ("GET", "/ready", None), ("GET", "/metrics", None)):
            status, res, hdrs = server.request_full(method, path, body, headers=auth)
            assert status == 401 and _only_error(res) and hdrs.get("www-authenticate") == "Bearer", (auth, path)
    assert server.request("GET", "/health", headers={"Authorization": ""}) == (200, {"status": "ok"})


def test_cors_only_for_the_configured_origin(server):
    status, res, hdrs = server.request_full("POST", "/v1/wellformed", WF, headers={"Origin": ORIGIN})
    assert status == 200 and hdrs["access-control-allow-origin"] == ORIGIN
    status, res, hdrs = server.request_full("OPTIONS", "/v1/wellformed", headers={
        "Origin": ORIGIN, "Access-Control-Request-Method": "POST", "Authorization": ""})
    assert status == 204 and hdrs["access-control-allow-origin"] == ORIGIN
    assert "content-type" in hdrs["access-control-allow-headers"]
    for origin in ("http://evil.example", "null", "http://app.example:3001"):
        status, res, hdrs = server.request_full("OPTIONS", "/v1/wellformed", headers={
            "Origin": origin, "Access-Control-Request-Method": "POST"})
        assert status == 403 and _only_error(res) and "access-control-allow-origin" not in hdrs
        status, res = server.request("POST", "/v1/wellformed", WF, headers={"Origin": origin})
        assert status == 403 and "--cors-origin" in res["error"]
    # the server's own page (same host) needs no CORS
    host, port = _addr(server)
    assert server.request("POST", "/v1/wellformed", WF, headers={"Origin": f"http://{host}:{port}"})[0] == 200


DEEP = b'{"texts": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
ERRORS = [
    ("GET", "/no/such/path", None, 404),
    ("GET", "/v1/wellformed", None, 405),
    ("DELETE", "/v1/wellformed", None, 405),
    ("OPTIONS", "/v1/wellformed", None, 405),
    ("GET", "/docs", None, 404),  # off by default: Swagger UI loads its assets from a CDN
    ("POST", "/v1/wellformed", b'{"texts": "\xff\xfe honda"}', 400),
    ("POST", "/v1/wellformed", b"{bad", 400),
    ("POST", "/v1/wellformed", b"\xef\xbb\xbf{}", 400),
    ("POST", "/v1/wellformed", b'{"texts": "a", "x": 1' + b"9" * 5000 + b"}", 400),
    ("POST", "/v1/wellformed", DEEP, 422),
    ("POST", "/v1/wellformed", b'{"texts": ' + b"[" * 40 + b"]" * 40 + b"}", 422),
    ("POST", "/v1/wellformed", b'{"texts": NaN}', 422),
    ("POST", "/v1/qagen", b'{"contexts": "Oxygen was found in 1773.", "margin": NaN}', 422),
    ("POST", "/v1/qagen", b'{"contexts": "Oxygen was found in 1773.", "margin": Infinity}', 422),
    ("POST", "/v1/qagen", b'{"contexts": "Oxygen was found in 1773.", "margin": -Infinity}', 422),
    ("POST", "/v1/qagen", b'{"contexts": "Oxygen was found in 1773.", "margin": 1e999}', 422),
    ("POST", "/v1/qagen", b'{"contexts": "?!?!?!. ,,,"}', 422),
    ("POST", "/v1/qagen", b'{"contexts": ["Oxygen was found in 1773.", "... --- ..."]}', 422),
    ("POST", "/v1/wellformed", b'{"texts": 3}', 422),
    ("POST", "/v1/k2q", b'{"keywords": "capital france"}', 404),
]


@pytest.mark.parametrize("method,path,body,status", ERRORS, ids=[f"err{i}" for i in range(len(ERRORS))])
def test_one_error_shape_everywhere(server, method, path, body, status):
    got, res = server.request(method, path, body)
    assert got == status and _only_error(res), (got, res)


def test_malformed_http_is_json_and_no_response_shows_a_path(server):
    reply = _raw(server, b"HELLO\r\n\r\n")
    assert reply.startswith(b"HTTP/1.1 400") and b'{"error": "malformed HTTP request' in reply
    status, ready = server.get("/ready")
    assert status == 200 and ready["models"]["qagen"]["model"] == "qagen-span-minilm,qagen-qg-copynet"
    text = json.dumps(ready)
    assert "/work" not in text and "/home" not in text and "/tmp" not in text
    status, metrics = server.get("/metrics")
    assert "# TYPE pysynth_dropped_requests_total counter" in metrics
    assert 'pysynth_dropped_requests_total{model="wellformed"} 0' in metrics


def test_public_names_hide_paths(tmp_path):
    from pysynth.serve.models import public_name

    (tmp_path / "mymodel").mkdir()
    (tmp_path / "mymodel" / "meta.json").write_text("{}")
    name = public_name(str(tmp_path / "mymodel"))
    assert name.startswith("mymodel@") and len(name) == len("mymodel@") + 12 and str(tmp_path) not in name
    assert public_name("k2q-copynet-small") == "k2q-copynet-small"
    assert public_name(f"qagen-span-minilm,{tmp_path / 'mymodel'}") == f"qagen-span-minilm,{name}"


def test_idle_and_slow_clients_are_dropped(server):
    """--idle-timeout 1, --read-timeout 1: a silent connection is closed, a body promising more than
    it sends gets 408, a header trickle is cut; 200 idle sockets do not keep /health out."""
    assert _raw(server, b"") == b""  # silent: closed by the server (not by the 30 s socket timeout)
    reply = _raw(server, b"POST /v1/wellformed HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                         b"Authorization: Bearer " + KEY.encode() + b"\r\nContent-Length: 100\r\n\r\n" + b'{"texts": ')
    assert reply.startswith(b"HTTP/1.1 408") and b'"error"' in reply, reply
    with socket.create_connection(_addr(server), timeout=30) as sock:
        closed = False
        for ch in b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: " + b"a" * 200:
            try:
                sock.sendall(bytes([ch]))
            except OSError:
                closed = True
                break
            if _readable(sock):  # the server answered (408) or closed
                closed = True
                break
            threading.Event().wait(0.05)
        assert closed, "a header trickle of 10 s was never cut"
    idle = [socket.create_connection(_addr(server), timeout=30) for _ in range(200)]
    try:
        assert server.get("/health", headers={"Authorization": ""}, timeout=30)[0] == 200
    finally:
        for s in idle:
            s.close()


def test_max_connections_answers_json_503_and_recovers():
    with Server("--threads", "1", "--tasks", "wellformed", "--max-connections", "4", "--idle-timeout", "1") as s:
        idle = [socket.create_connection(_addr(s), timeout=30) for _ in range(6)]
        try:
            status, res, hdrs = s.request_full("GET", "/ready")
            assert status == 503 and _only_error(res) and "--max-connections" in res["error"], res
            assert hdrs.get("retry-after") == "1"
        finally:
            for c in idle:
                c.close()
        assert s.get("/ready", timeout=30)[0] == 200


def _readable(sock) -> bool:
    import select

    return bool(select.select([sock], [], [], 0)[0])


def test_budgets_refuse_before_work(server):
    big = "a " * 120_000
    status, res = server.post("/v1/score", {"hyps": [big], "refs": ["a b"]})
    assert status == 413 and "120,000 tokens" in res["error"], res
    status, res = server.post("/v1/score", {"hyps": ["w " * 2000] * 51, "refs": ["w " * 2000] * 51,
                                            "metrics": ["rougeL"]})
    assert status == 413 and "LCS cells" in res["error"], res
    status, res = server.post("/v1/score", {"hyps": ["w " * 300], "refs": ["w " * 300], "metrics": ["meteor"]})
    assert status == 413 and "meteor" in res["error"], res
    status, res = server.post("/v1/score", {"hyps": ["w " * 300] * 2, "refs": ["w " * 300] * 2,
                                            "metrics": ["bleu", "rougeLsum"]})
    assert status == 200, res
    # refused by its cost before the 404 of a model this server does not load
    status, res = server.post("/v1/paraphrase", {"questions": ["how tall is it?"] * 64, "beams": 32, "groups": 32})
    assert status == 413 and "67,584 hypotheses" in res["error"] and "--max-hypotheses" in res["error"], res
    status, res = server.post("/v1/qagen", {"contexts": ["Oxygen was found in 1773. " * 700] * 6})
    assert status == 413 and "--max-context-chars" in res["error"], res


def test_budget_cost_models():
    from pysynth.k2q.served import K2QRequest
    from pysynth.metrics.served import ScoreRequest
    from pysynth.paraphrase.served import ParaphraseRequest
    from pysynth.pipelines.served import RequestError
    from pysynth.serve.budget import Budget, check, cost

    assert cost("k2q", K2QRequest(keywords=["a"] * 64, n=10, beam=32)) == {"hypotheses": 2048}
    assert cost("k2q", K2QRequest(keywords="a", n=3, diverse=True)) == {"hypotheses": 6}
    assert cost("paraphrase", ParaphraseRequest(questions=["q"] * 8, beams=16)) == {"hypotheses": 8 * 16 * 17}
    assert cost("duplicates", object()) == {}
    req = ScoreRequest(hyps=["a b c", "d"], refs=[["a b", "d e f"], ["x", "y"]], metrics=["rougeL", "meteor"])
    assert cost("score", req) == {"segment_tokens": 3, "lcs_cells": 3 * 2 + 1 * 3 + 3 * 1 + 1 * 1, "meteor": 1,
                                  "meteor_work": 3 * 2 * 3 + 1 * 3 * 3 + 3 * 1 * 3 + 1}
    with pytest.raises(RequestError, match="--max-meteor-work"):
        check("score", ScoreRequest(hyps=["w " * 200] * 40, refs=["w " * 200] * 40, metrics=["meteor"]), Budget())
    with pytest.raises(RequestError, match="2,176 hypotheses"):
        check("paraphrase", ParaphraseRequest(questions=["q"] * 8, beams=16), Budget(max_hypotheses=2000))


def test_strict_json_parse():
    from pysynth.serve.guard import BodyError, host_of, parse_strict

    assert parse_strict(b'{"a": [1, 2.5, -0.0, 1e308]}') == {"a": [1, 2.5, -0.0, 1e308]}
    for bad, status in ((b"NaN", 422), (b"[-Infinity]", 422), (b"[1e400]", 422), (b"\xff", 400), (b"[", 400),
                        (b"[" * 33 + b"]" * 33, 422), (b"[" * 50_000 + b"]" * 50_000, 422)):
        with pytest.raises(BodyError) as err:
            parse_strict(bad)
        assert err.value.status == status, bad
    assert [host_of(h) for h in ("LocalHost:80", "[::1]:8000", "127.0.0.1", "example.com.", "[::1]")] == \
        ["localhost", "::1", "127.0.0.1", "example.com", "::1"]


def test_cli_origin_safety_errors():
    def cli(*args):
        return subprocess.run([sys.executable, "-m", "pysynth", "serve", "--port", "0", *args], capture_output=True,
                              text=True, timeout=120, stdin=subprocess.DEVNULL, env={**__import__("os").environ,
                                                                                      "PYSYNTH_API_KEY": ""})

    for args, msg in ((["--host", "0.0.0.0"], "--api-key"), (["--api-key", "short"], "at least 8"),
                      (["--read-timeout", "0"], "--read-timeout"), (["--threads", "99999"], "--threads")):
        out = cli(*args)
        lines = out.stderr.strip().splitlines()
        assert out.returncode == 2 and len(lines) == 1 and msg in lines[0], out.stderr


def test_a_search_stops_between_steps_when_its_requests_are_gone():
    """The batcher's model call runs in a cancel scope: once every request of the batch timed out,
    the next decoding step raises Cancelled, the thread is free, the next request is served."""
    from pysynth.decoding import cancel
    from pysynth.serve.batching import Batcher

    steps = []

    def run(key, inputs):
        for _ in range(2000):  # a long search: 2000 steps of 5 ms
            cancel.checkpoint()
            steps.append(1)
            threading.Event().wait(0.005)
        return inputs

    def quick(key, inputs):
        return inputs

    async def main():
        b = Batcher("t", lambda k, x: run(k, x) if k == "slow" else quick(k, x), max_batch=4, max_wait_ms=0)
        with pytest.raises(asyncio.TimeoutError):
            await b.submit("slow", ["big"], timeout=0.1)
        got = await b.submit("fast", ["next"], timeout=60)
        await b.stop()
        return got, b.stats

    got, stats = asyncio.run(main())
    assert got == ["next"] and stats.stopped == 1 and stats.dropped == 1
    assert len(steps) < 2000, "the search ran to its end after its request timed out"


def test_searches_are_unchanged_outside_a_cancel_scope_and_stop_inside_one():
    from pysynth.decoding import cancel
    from pysynth.models.generate import Generator

    g = Generator.load("k2q-copynet-small", backend="onnx", device="cpu", threads=1)
    kw = ["capital france", "java hashmap"]
    want = [(o.texts, o.scores) for o in g.generate(kw, method="diverse", beam=4, groups=2, n=4)]
    with cancel.scope(lambda: False):
        assert [(o.texts, o.scores) for o in g.generate(kw, method="diverse", beam=4, groups=2, n=4)] == want
    for method, beam, groups in (("greedy", 1, 1), ("beam", 4, 1), ("diverse", 4, 2)):
        with cancel.scope(lambda: True), pytest.raises(cancel.Cancelled):
            g.generate(kw, method=method, beam=beam, groups=groups, n=beam)


def test_h11_guard_and_a_library_valueerror_is_422(monkeypatch):
    """The connection guard on uvicorn's h11 protocol too (no httptools); an input the library
    refuses with ValueError inside the model call is the client's 422, not a 500."""
    import time
    import urllib.error
    import urllib.request

    import uvicorn
    from uvicorn.protocols.http.h11_impl import H11Protocol

    from pysynth.serve import ServeConfig, create_app
    from pysynth.serve.conn import protocol_class
    from pysynth.serve.models import ADAPTERS

    wf = ADAPTERS["wellformed"]
    real = wf.call

    def picky(model, key, inputs):
        if any("refuse me" in t for t in inputs):
            raise ValueError("texts[0]: refused by the library")
        return real(model, key, inputs)

    monkeypatch.setattr(wf, "call", picky)
    app = create_app(ServeConfig(models={"wellformed": None}, threads=1, warmup=False))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    srv = uvicorn.Server(uvicorn.Config(app, log_level="critical", http=protocol_class(1, 1, base=H11Protocol)))
    t = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    t.start()

    def post(text):
        req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/wellformed", data=json.dumps({"texts": text}).encode(),
                                     headers={"Content-Type": "application/json"})
        try:
            with urllib.request.urlopen(req, timeout=30) as r:
                return r.status, json.loads(r.read())
        except urllib.error.HTTPError as err:
            return err.code, json.loads(err.read())

    try:
        for _ in range(400):
            try:
                if post("what?")[0] == 200:
                    break
            except OSError:
                time.sleep(0.05)
        status, res = post("please refuse me")
        assert status == 422 and "refused by the library" in res["error"], res
        assert post("what is it?")[0] == 200
        with socket.create_connection(("127.0.0.1", port), timeout=30) as c:
            assert c.recv(100) == b""  # silent: closed at the idle timeout
        with socket.create_connection(("127.0.0.1", port), timeout=30) as c:
            c.sendall(b"POST /v1/wellformed HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                      b"Content-Length: 50\r\n\r\n{")
            assert c.recv(4096).startswith(b"HTTP/1.1 408")
    finally:
        srv.should_exit = True
        t.join(10)
