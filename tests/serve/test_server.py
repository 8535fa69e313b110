"""``pysynth serve`` end to end: a real server process on loopback, every endpoint, bad input,
batching, limits; the CLI's errors. Load and timings are measured in ``bench/serve_load.py``."""
from __future__ import annotations

import json
import socket
import subprocess
import sys
import threading
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

pytest.importorskip("fastapi")
pytest.importorskip("uvicorn")
pytest.importorskip("onnxruntime")

from _server import Server, read_until_closed  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
KWS = ["honda crf 230 top speed", "capital france", "python list sort", "how tall eiffel tower",
       "obama birthday", "best pizza new york", "java hashmap", "weather paris"]


@pytest.fixture(scope="module")
def server():
    with Server("--threads", "1") as s:
        yield s
        assert s.alive(), "the server died during the tests:\n" + "\n".join(s.log)


@pytest.fixture(scope="module")
def generator():
    from pysynth.models.generate import Generator

    return Generator.load("k2q-copynet-small", backend="onnx", device="cpu", threads=1)


def test_health_ready_openapi(server):
    assert server.get("/health") == (200, {"status": "ok"})
    status, body = server.get("/ready")
    assert status == 200 and body["ready"] is True
    assert body["models"]["k2q"]["model"] == "k2q-copynet-small"
    assert body["models"]["k2q"]["providers"][0] == "CPUExecutionProvider"
    status, spec = server.get("/openapi.json")
    assert status == 200
    assert {"/v1/k2q", "/v1/score", "/v1/duplicates", "/v1/wellformed", "/health", "/ready",
            "/metrics"} <= set(spec["paths"])
    assert body["models"]["wellformed"]["model"] == "wellformed-minilm"
    props = spec["components"]["schemas"]["K2QRequest"]["properties"]
    assert {"keywords", "n", "diverse"} <= set(props)


@pytest.mark.parametrize("method,body,kw", [
    ("greedy", {}, dict(method="greedy", beam=1, n=1)),
    ("beam", {"n": 3}, dict(method="beam", beam=3, n=3)),
    ("beam", {"n": 2, "beam": 5}, dict(method="beam", beam=5, n=2)),
    ("diverse", {"n": 3, "diverse": True}, dict(method="diverse", beam=6, groups=3, n=3)),
])
def test_k2q_matches_the_onnxruntime_generator(server, generator, method, body, kw):
    status, res = server.post("/v1/k2q", {"keywords": KWS[:3], **body})
    assert status == 200, res
    assert res["model"] == "k2q-copynet-small" and res["method"] == method
    want = [generator.generate([k], **kw)[0] for k in KWS[:3]]
    for r, w, k in zip(res["results"], want, KWS):
        assert r["keywords"] == k and r["truncated"] is False
        assert [q["text"] for q in r["questions"]] == w.texts
        # scores: float32 decoding, batched with whatever else was queued (see serve docs)
        assert [q["score"] for q in r["questions"]] == pytest.approx([round(s, 4) for s in w.scores], abs=2e-4)


def test_a_single_string_is_one_input(server):
    status, res = server.post("/v1/k2q", {"keywords": "capital france"})
    assert status == 200 and len(res["results"]) == 1
    assert res["results"][0]["questions"][0]["text"].endswith("?")


def test_concurrent_requests_are_batched_with_the_same_texts(server, generator):
    want = {k: generator.generate([k], method="beam", beam=3, n=3)[0].texts for k in KWS}

    def one(i):
        k = KWS[i % len(KWS)]
        return k, server.post("/v1/k2q", {"keywords": k, "n": 3})

    with ThreadPoolExecutor(32) as ex:
        results = list(ex.map(one, range(96)))
    for k, (status, res) in results:
        assert status == 200, res
        assert [q["text"] for q in res["results"][0]["questions"]] == want[k]
    status, text = server.get("/metrics")
    assert status == 200
    count = float(_metric(text, 'pysynth_batch_size_count{model="k2q"}'))
    total = float(_metric(text, 'pysynth_batch_size_sum{model="k2q"}'))
    assert total / count > 1.0, "concurrent requests were never batched"
    assert 'pysynth_requests_total{code="200",endpoint="/v1/k2q"}' in text
    assert "pysynth_request_seconds_bucket" in text and 'pysynth_queue_depth{model="k2q"} 0' in text


def _metric(text: str, name: str) -> str:
    for line in text.splitlines():
        if line.startswith(name + " "):
            return line.split()[-1]
    raise AssertionError(f"{name} not in /metrics")


BAD = [
    (b"{bad", 400, "malformed JSON"),
    (b"", 422, "body"),
    (b"[1, 2]", 422, "invalid request"),
    (b'"honda"', 422, "invalid request"),
    ({"keywords": 5}, 422, "keywords"),
    ({"keywords": None}, 422, "keywords"),
    ({"keywords": [1, 2]}, 422, "keywords"),
    ({"keywords": []}, 422, "keywords: empty list"),
    ({"keywords": "   "}, 422, "keywords[0]: empty"),
    ({"keywords": "zzqxv qqzzv"}, 422, "outside the model vocabulary"),
    ({"keywords": "!!! ???"}, 422, "keywords[0]"),
    ({"keywords": "x" * 1001}, 413, "over the limit"),
    ({"keywords": ["honda"] * 65}, 413, "over the limit"),
    ({"keywords": "honda", "n": "3"}, 422, "n:"),
    ({"keywords": "honda", "n": 0}, 422, "n:"),
    ({"keywords": "honda", "n": 11}, 422, "n:"),
    ({"keywords": "honda", "n": 2.5}, 422, "n:"),
    ({"keywords": "honda", "diverse": "yes"}, 422, "diverse"),
    ({"keywords": "honda", "beam": 1, "n": 3}, 422, "beam"),
    ({"keywords": "honda", "beam": 4, "n": 3, "diverse": True}, 422, "beam"),
    ({"keywords": "honda", "max_len": 0}, 422, "max_len"),
    ({"keywords": "honda", "diversity": -1}, 422, "diversity"),
    ({"keywords": "honda", "unknown": 1}, 422, "unknown"),
    ({"keywords": "a\udcff"}, 422, "unpaired surrogate"),
]


@pytest.mark.parametrize("body,status,msg", BAD, ids=[f"bad{i}" for i in range(len(BAD))])
def test_bad_k2q_requests_get_a_clear_4xx(server, body, status, msg):
    if isinstance(body, dict):
        data = json.dumps(body).encode()  # ensure_ascii: a lone surrogate travels as a \udcff escape
    else:
        data = body
    got, res = server.post("/v1/k2q", data)
    assert 400 <= got < 500, (got, res)
    assert got == status, res
    assert isinstance(res, dict) and msg in res["error"], res


def test_bad_bodies_content_types_and_sizes(server):
    # no JSON content type (curl -d without -H): 415 (a web page can send a form cross-origin; issue 27)
    got, res = server.request("POST", "/v1/k2q", b'{"keywords": "capital france"}',
                              headers={"Content-Type": "application/x-www-form-urlencoded"})
    assert got == 415 and "application/json" in res["error"], res
    # an oversized body is refused from its Content-Length, before it is read (a raw socket: urllib
    # would see the connection close while it still sends)
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"POST /v1/k2q HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Content-Length: 1200000\r\n\r\n" + b'{"keywords": "' + b"a " * 1000)
        reply = read_until_closed(sock)  # headers and body may come in separate segments
    assert reply.startswith(b"HTTP/1.1 413") and b"over the limit of 1048576 bytes" in reply
    # a chunked upload has no Content-Length: it is counted as it arrives
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(b"POST /v1/k2q HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                     b"Transfer-Encoding: chunked\r\n\r\n")
        chunk = b"a" * 65536
        try:
            for _ in range(40):
                sock.sendall(b"%x\r\n" % len(chunk) + chunk + b"\r\n")
        except OSError:
            pass  # the server answered and closed
        reply = sock.recv(65536)
    assert reply.startswith(b"HTTP/1.1 413"), reply[:200]
    got, res = server.post("/v1/k2q", b"\xff\xfe\x00garbage")
    assert got == 400, res
    got, res = server.get("/v1/k2q")
    assert got == 405 and res == {"error": "method GET is not allowed on /v1/k2q"}
    got, res = server.get("/no/such/path")
    assert got == 404 and res == {"error": "no such endpoint: /no/such/path"}
    assert server.get("/health")[0] == 200


def test_score_endpoint_equals_the_library(server):
    from pysynth.metrics import score_corpus

    hyps = ["the cat sat on the mat", "how do i bond wireless networks?"]
    refs = ["the cat is on the mat", "how to bond two wireless networks?"]
    status, res = server.post("/v1/score", {"hyps": hyps, "refs": refs, "metrics": ["bleu", "rougeL"]})
    assert status == 200, res
    want = json.loads(json.dumps(score_corpus(hyps, [refs], ["bleu", "rougeL"])))
    assert res == want
    status, res2 = server.post("/v1/score", {"hyps": hyps, "refs": [refs, refs], "metrics": ["bleu"]})
    assert status == 200 and res2["bleu_signature"]["nrefs"] == 2
    for body, msg in [({"hyps": hyps, "refs": refs[:1]}, "refs[0]"), ({"hyps": [], "refs": []}, "hyps"),
                      ({"hyps": hyps, "refs": refs, "metrics": ["meteor"]}, "--meteor"),
                      ({"hyps": hyps, "refs": refs, "metrics": ["cider"]}, "metrics"),
                      ({"hyps": hyps, "refs": refs, "bleu_flavor": "x"}, "bleu_flavor"),
                      ({"hyps": hyps, "refs": refs, "metrics": "bleu"}, "metrics"),
                      ({"hyps": "a", "refs": "b"}, "hyps")]:
        status, res = server.post("/v1/score", body)
        assert status == 422 and msg in res["error"], (body, res)


def test_score_serves_meteor_with_the_flag():
    """--meteor: METEOR over HTTP equals the library (Java-free Meteor 1.5)."""
    pytest.importorskip("pycocoevalcap")
    from pysynth.metrics import score_corpus

    hyps = ["the cat sat on the mat", "how do i bond wireless networks?"]
    refs = ["the cat is on the mat", "how to bond two wireless networks?"]
    with Server("--threads", "1", "--tasks", "wellformed", "--meteor", timeout=400) as s:
        status, res = s.post("/v1/score", {"hyps": hyps, "refs": refs, "metrics": ["meteor", "bleu"]})
        assert status == 200, res
        assert res == json.loads(json.dumps(score_corpus(hyps, [refs], ["meteor", "bleu"])))


def test_wellformed_endpoint_equals_the_library(server):
    from pysynth.quality import wellformedness

    texts = ["what is the capital of france?", "capital france"]
    status, res = server.post("/v1/wellformed", {"texts": texts})
    assert status == 200 and res["model"] == "wellformed-minilm"
    assert res["scores"] == [round(p, 4) for p in wellformedness(texts).tolist()]
    assert server.post("/v1/wellformed", {"texts": "capital france"})[1]["scores"] == res["scores"][1:]
    for body in ({"texts": []}, {"texts": 3}, {"texts": [""]}, {"text": "x"}):
        assert server.post("/v1/wellformed", body)[0] == 422


def test_k2q_min_wellformed_filters_and_scores(server):
    status, res = server.post("/v1/k2q", {"keywords": "capital france", "n": 5, "min_wellformed": 0.0})
    assert status == 200
    r = res["results"][0]
    assert r["dropped"] == 0 and all(0 <= q["wellformed"] <= 1 for q in r["questions"])
    cut = sorted(q["wellformed"] for q in r["questions"])[len(r["questions"]) // 2]
    status, res2 = server.post("/v1/k2q", {"keywords": "capital france", "n": 5, "min_wellformed": cut})
    r2 = res2["results"][0]
    assert [q["text"] for q in r2["questions"]] == [q["text"] for q in r["questions"] if q["wellformed"] >= cut]
    assert r2["dropped"] == len(r["questions"]) - len(r2["questions"]) > 0
    assert server.post("/v1/k2q", {"keywords": "capital france", "min_wellformed": 2})[0] == 422


def test_only_some_tasks():
    with Server("--threads", "1", "--tasks", "wellformed") as s:
        assert set(s.get("/ready")[1]["models"]) == {"wellformed"}
        status, res = s.post("/v1/k2q", {"keywords": "capital france"})
        assert status == 404 and "no k2q model loaded" in res["error"]
        assert s.post("/v1/wellformed", {"texts": "what?"})[0] == 200


def test_rewrite_endpoint(server):
    from pysynth.mqr.rewrite import DEFAULT_DECODING, Rewriter

    qs = ["Spaghetti carbonara, mixing", "install ubuntu on usb stick", "zzqxv qqzzv"]
    status, res = server.post("/v1/rewrite", {"questions": qs})
    assert status == 200 and res["model"] == "mqr-copynet-small"
    # the CLI's default decoding, the safe selection included (issue 26), with the reason of each choice
    want = Rewriter(threads=1).choices(qs, **DEFAULT_DECODING)
    assert [r["rewrite"] for r in res["results"]] == [w[0] for w in want[:2]] + [qs[2]]
    assert [r["reason"] for r in res["results"]] == [w[1] for w in want[:2]] + [None]
    assert [r["rewritten"] for r in res["results"]] == [w[1] != "kept_input" for w in want[:2]] + [False]
    plain = {"beam": 4, "coverage": 0, "rerank_wellformed": 0, "backoff": 0, "select": "model"}  # the beam's best
    status, res = server.post("/v1/rewrite", {"questions": qs, **plain})
    assert status == 200 and [r["rewrite"] for r in res["results"]] == Rewriter(threads=1).rewrite(
        qs, beam=4, coverage=0, wellformed=0, backoff=0, select="model")
    status, res = server.post("/v1/rewrite", {"questions": qs[0], "min_wellformed": 1.0, "beam": 1})
    r = res["results"][0]
    assert status == 200 and 0 <= r["wellformed"] <= 1 and (r["rewritten"] is False) == (r["rewrite"] == qs[0])
    for body in ({"questions": []}, {"questions": "x", "beam": 0}, {"question": "x"}, {"questions": "x", "coverage": -1},
                 {"questions": "x", "backoff": 2}, {"questions": "x", "rerank_wellformed": "high"},
                 {"questions": "x", "select": "best"}):
        assert server.post("/v1/rewrite", body)[0] == 422


def test_paraphrase_endpoint(server):
    from pysynth.paraphrase.pipeline import ParaphraseConfig, Paraphraser

    qs = ["How many animals can be seen?", "What color is the keyboard?"]
    status, res = server.post("/v1/paraphrase", {"questions": qs, "beams": 8, "groups": 4})
    assert status == 200, res
    want = Paraphraser(ParaphraseConfig(beams=8, groups=4, threads=1)).run(qs)
    assert [r["paraphrases"] for r in res["results"]] == [w["paraphrases"] for w in want]
    assert res["model"] == "fr" and all("candidates" not in r for r in res["results"])
    status, res = server.post("/v1/paraphrase", {"questions": qs[0], "beams": 4, "groups": 2, "mode": "diverse",
                                                 "candidates": True})
    assert status == 200 and res["results"][0]["candidates"]
    status, res = server.post("/v1/paraphrase", {"questions": qs, "beams": 8, "min_wellformed": 0.5})
    r = res["results"][0]
    assert status == 200 and len(r["wellformed"]) == len(r["paraphrases"]) and min(r["wellformed"], default=1) >= 0.5
    for body in ({"questions": qs, "beams": 6}, {"questions": []}, {"questions": "zzqx qqzv"},
                 {"questions": qs, "mode": "best"}):
        assert server.post("/v1/paraphrase", body)[0] == 422, body


def test_duplicates_without_a_collection_is_404(server):
    status, res = server.post("/v1/duplicates", {"queries": "x"})
    assert status == 404 and "--collection" in res["error"]


def test_page_is_served_offline(server):
    status, html = server.get("/")
    assert status == 200 and 'id="keywords"' in html and "/v1/k2q" in html
    assert "http://" not in html and "https://" not in html  # no external assets


def test_duplicates_over_a_collection(tmp_path):
    from pysynth.retrieval.collection import Collection

    docs = ["how do i sort a list in python", "what is the capital of france", "how tall is the eiffel tower",
            "sort a python list in reverse", "best pizza in new york"]
    col = Collection.build(docs, ids=[f"q{i}" for i in range(len(docs))])
    col.save(tmp_path / "col")
    with Server("--threads", "1", "--collection", str(tmp_path / "col")) as s:
        status, res = s.post("/v1/duplicates", {"queries": ["python sort list", "france capital"], "k": 2})
        assert status == 200, res
        want = col.search(["python sort list", "france capital"], model="bm25", k=2)
        assert [[h["id"] for h in r] for r in res["results"]] == want.ids
        assert [[h["score"] for h in r] for r in res["results"]] == want.scores
        status, res = s.post("/v1/duplicates", {"queries": "python sort", "model": "sdm", "k": 1})
        assert status == 200 and res["results"][0][0]["id"] in ("q0", "q3")
        for body in ({"queries": []}, {"queries": "x", "k": 0}, {"queries": "x", "model": "dense"}):
            assert s.post("/v1/duplicates", body)[0] == 422


def test_duplicates_over_a_dup_index_dense_hybrid_sparse(tmp_path):
    """A ``pysynth dup index`` folder as --collection: dense and hybrid search with the shipped
    detector on onnxruntime (the library's answers, ids and scores), BM25/SDM over its rows, and
    no torch in the server process."""
    pytest.importorskip("faiss")
    from pysynth.dup.search import build, search

    forum = ["how do I install python on ubuntu?", "what is the capital of france?",
             "how to install python 3 in ubuntu 20.04", "which city is the capital of france",
             "how do I bake bread?"]
    queries = ["installing python on ubuntu", "france capital city"]
    build([{"id": f"q{i}", "question": q} for i, q in enumerate(forum)], tmp_path / "dup")
    with Server("--threads", "1", "--collection", str(tmp_path / "dup")) as s:
        for model, hybrid in (("dense", False), ("hybrid", True)):
            status, res = s.post("/v1/duplicates", {"queries": queries, "model": model, "k": 3})
            assert status == 200, res
            want = search(tmp_path / "dup", queries, k=3, hybrid=hybrid)
            assert [[h["id"] for h in r] for r in res["results"]] == [[h["id"] for h in w["results"]] for w in want]
            got = [h["score"] for r in res["results"] for h in r]
            assert got == pytest.approx([h["score"] for w in want for h in w["results"]], abs=1e-6)
            assert [r[0]["id"] for r in res["results"]] == ["q0", "q3"]
        status, res = s.post("/v1/duplicates", {"queries": queries, "model": "bm25", "k": 2})
        assert status == 200 and res["results"][1][0]["id"] in ("q1", "q3")
        status, ready = s.get("/ready")
        # named by its folder and a fingerprint, never by its path (issue 27)
        assert ready["collection"].startswith("dup@") and str(tmp_path) not in json.dumps(ready)
    pid_modules = subprocess.run(
        [sys.executable, "-c", f"""
import sys
from pysynth.serve.models import SearchCollection
c = SearchCollection.load({str(tmp_path / "dup")!r})
c._run(("hybrid", 2), ["python on ubuntu"])
print(sorted(m for m in sys.modules if m.split(".")[0] in ("torch", "triton", "transformers")))
"""], capture_output=True, text=True, timeout=300)
    assert pid_modules.returncode == 0, pid_modules.stderr
    assert pid_modules.stdout.strip() == "[]"


def test_full_queue_is_503_with_retry_after_and_timeouts_are_504():
    with Server("--threads", "1", "--max-queue", "1", "--max-batch", "1") as s:
        body = {"keywords": KWS[:1], "n": 10, "beam": 30, "diverse": True}

        def one(_):
            return s.request_full("POST", "/v1/k2q", body)

        with ThreadPoolExecutor(16) as ex:
            results = list(ex.map(one, range(32)))
        codes = sorted({r[0] for r in results})
        assert set(codes) <= {200, 503} and 503 in codes and 200 in codes, codes
        full = next(r for r in results if r[0] == 503)
        assert full[2].get("retry-after") == "1" and "queue is full" in full[1]["error"]
        assert s.get("/health")[0] == 200
    with Server("--threads", "1", "--timeout", "0.0001") as s:
        status, res = s.post("/v1/k2q", {"keywords": KWS, "n": 10, "beam": 30, "diverse": True})
        assert status == 504 and "timed out" in res["error"]
        assert s.get("/health")[0] == 200
        status, text = s.get("/metrics")
        assert 'pysynth_requests_total{code="504",endpoint="/v1/k2q"}' in text


def test_no_batching_server_answers_the_same(generator):
    with Server("--threads", "1", "--no-batching") as s:
        with ThreadPoolExecutor(8) as ex:
            results = list(ex.map(lambda k: s.post("/v1/k2q", {"keywords": k}), KWS))
        for k, (status, res) in zip(KWS, results):
            assert status == 200
            assert res["results"][0]["questions"][0]["text"] == generator.generate([k], beam=1, n=1)[0].texts[0]
        _, text = s.get("/metrics")
        assert float(_metric(text, 'pysynth_batch_size_sum{model="k2q"}')) == float(
            _metric(text, 'pysynth_batch_size_count{model="k2q"}'))


def test_slow_and_silent_clients_do_not_block_others(server):
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    silent = socket.create_connection((host, int(port)))
    slow = socket.create_connection((host, int(port)))
    body = b'{"keywords": "capital france"}'
    slow.sendall(b"POST /v1/k2q HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
                 b"Content-Length: %d\r\n\r\n" % len(body) + body[:5])
    try:
        status, res = server.post("/v1/k2q", {"keywords": "java hashmap"}, timeout=10)
        assert status == 200
    finally:
        slow.sendall(body[5:])
        reply = slow.recv(4096)
        assert reply.startswith(b"HTTP/1.1 200")
        silent.close()
        slow.close()


@pytest.mark.parametrize("qagen", [False, True])
def test_serving_never_imports_torch(qagen):
    """No torch or triton on the serving path; transformers only for /v1/qagen (its Rust WordPiece
    tokenizer with offsets; transformers without torch)."""
    from pysynth.serve.models import TASKS

    tasks = {t: None for t in TASKS if qagen or t != "qagen"}
    forbidden = ("torch", "triton") if qagen else ("torch", "triton", "transformers")
    code = """
import sys, threading, time, json, urllib.request, socket
import uvicorn
from pysynth.serve import ServeConfig, create_app
app = create_app(ServeConfig(threads=1, models=TASKS))
sock = socket.socket(); sock.bind(("127.0.0.1", 0)); port = sock.getsockname()[1]
server = uvicorn.Server(uvicorn.Config(app, log_level="error"))
threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True).start()
for _ in range(200):
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/ready").read(); break
    except OSError:
        time.sleep(0.05)
req = urllib.request.Request(f"http://127.0.0.1:{port}/v1/k2q", data=json.dumps({"keywords": "capital france",
                             "n": 3, "diverse": True}).encode(), headers={"Content-Type": "application/json"})
assert urllib.request.urlopen(req).status == 200
urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/v1/score", data=json.dumps(
    {"hyps": ["a b"], "refs": ["a c"]}).encode(), headers={"Content-Type": "application/json"})).read()
if "qagen" in TASKS:
    urllib.request.urlopen(urllib.request.Request(f"http://127.0.0.1:{port}/v1/qagen", data=json.dumps(
        {"contexts": ["Oxygen was discovered by Carl Wilhelm Scheele in Uppsala in 1773."]}).encode(),
        headers={"Content-Type": "application/json"})).read()
server.should_exit = True
print(sorted(m for m in sys.modules if m.split(".")[0] in FORBIDDEN))
""".replace("TASKS", repr(tasks)).replace("FORBIDDEN", repr(forbidden))
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120, cwd=str(ROOT))
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip().splitlines()[-1] == "[]"


def _cli(*args, timeout=60):
    return subprocess.run([sys.executable, "-m", "pysynth", "serve", *args], capture_output=True, text=True,
                          timeout=timeout, stdin=subprocess.DEVNULL)


@pytest.mark.parametrize("args,code,msg", [
    (["--model", "no-such-model"], 2, "neither a shipped model"),
    (["--model", "nope=k2q-copynet-small"], 2, "unknown task"),
    (["--collection", "/no/such/dir"], 2, "no such collection directory"),
    (["--max-batch", "0"], 2, "--max-batch"),
    (["--timeout", "0"], 2, "--timeout"),
    (["--device", "tpu"], 2, "--device"),
    (["--tasks", "k2q,nope"], 2, "--tasks: unknown nope"),
    (["--tasks", "k2q", "--model", "rewrite=mqr-copynet-small"], 2, "not among --tasks"),
])
def test_cli_errors_are_one_line(args, code, msg, tmp_path):
    out = _cli(*args, "--port", "0")
    assert out.returncode == code, out.stderr
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("pysynth: error:") and msg in lines[0], out.stderr


def test_cli_model_without_onnx_export_and_port_in_use(tmp_path):
    import shutil

    from pysynth.models.registry import resolve

    d = tmp_path / "m"
    shutil.copytree(resolve("k2q-copynet-small").path, d, ignore=shutil.ignore_patterns("onnx"))
    out = _cli("--model", str(d), "--port", "0")
    assert out.returncode == 1 and "no onnx/ export" in out.stderr and "Traceback" not in out.stderr
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    try:
        out = _cli("--port", str(busy.getsockname()[1]))
    finally:
        busy.close()
    assert out.returncode == 1 and "cannot listen on" in out.stderr and "Traceback" not in out.stderr


def test_cuda_without_cuda_falls_back_with_a_warning():
    import onnxruntime

    if "CUDAExecutionProvider" in onnxruntime.get_available_providers():
        pytest.skip("onnxruntime has CUDA here")
    with Server("--threads", "1", "--device", "cuda") as s:
        assert any("warning" in line and "CPU" in line for line in s.log), s.log
        assert s.get("/ready")[1]["models"]["k2q"]["providers"] == ["CPUExecutionProvider"]
        assert s.post("/v1/k2q", {"keywords": "capital france"})[0] == 200


def test_model_errors_are_500_with_an_id_and_the_server_keeps_serving():
    """A model that raises: 500 with an error id; the batch's other requests and the server go on."""
    import asyncio

    from pysynth.serve.batching import Batcher

    def run(key, inputs):
        if "boom" in inputs:
            raise RuntimeError("model exploded")
        return [x.upper() for x in inputs]

    async def main():
        b = Batcher("t", run, max_batch=8, max_wait_ms=20)
        res = await asyncio.gather(b.submit(0, ["a"]), b.submit(0, ["boom"]), b.submit(0, ["c", "d"]),
                                   return_exceptions=True)
        again = await b.submit(0, ["e"])
        await b.stop()
        return res, again, b.stats

    res, again, stats = asyncio.run(main())
    assert res[0] == ["A"] and res[2] == ["C", "D"] and isinstance(res[1], RuntimeError)
    assert again == ["E"] and stats.failures == 1 and stats.batches >= 1


def test_a_failing_model_gives_500_with_an_id_over_http(caplog):
    import time
    import urllib.error
    import urllib.request

    import uvicorn

    from pysynth.serve import ServeConfig, create_app

    app = create_app(ServeConfig(threads=1, warmup=False, max_wait_ms=50))
    gen = app.state.pysynth["generators"]["k2q"].generator
    real = gen.generate

    def flaky(texts, **kw):
        if any("capital" in t for t in texts):
            raise RuntimeError("model exploded")
        return real(texts, **kw)

    gen.generate = flaky
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{sock.getsockname()[1]}"
    srv = uvicorn.Server(uvicorn.Config(app, log_level="critical"))
    t = threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True)
    t.start()
    try:
        for _ in range(200):
            try:
                urllib.request.urlopen(url + "/ready").read()
                break
            except OSError:
                time.sleep(0.05)

        def post(kw):
            req = urllib.request.Request(url + "/v1/k2q", data=json.dumps({"keywords": kw}).encode(),
                                         headers={"Content-Type": "application/json"})
            try:
                with urllib.request.urlopen(req) as r:
                    return r.status, json.loads(r.read())
            except urllib.error.HTTPError as err:
                return err.code, json.loads(err.read())

        with ThreadPoolExecutor(4) as ex:  # batched together: only the failing request fails
            res = list(ex.map(post, ["capital france", "java hashmap", "python list sort", "obama birthday"]))
        assert res[0][0] == 500 and len(res[0][1]["id"]) == 12 and "internal error" in res[0][1]["error"]
        assert [r[0] for r in res[1:]] == [200, 200, 200]
        assert post("java hashmap")[0] == 200
    finally:
        srv.should_exit = True
        t.join(10)


def test_batcher_groups_by_key_and_respects_max_batch():
    import asyncio

    from pysynth.serve.batching import Batcher, QueueFull

    calls = []

    def run(key, inputs):
        calls.append((key, list(inputs)))
        return [(key, x) for x in inputs]

    async def main():
        b = Batcher("t", run, max_batch=3, max_wait_ms=50, max_queue=6)
        futs = [asyncio.ensure_future(b.submit(k, [i])) for i, k in enumerate("aabab")]
        await asyncio.sleep(0)
        with pytest.raises(QueueFull):
            await b.submit("a", list(range(5)))
        out = await asyncio.gather(*futs)
        big = await b.submit("c", list(range(5)))  # one request over max_batch runs alone
        await b.stop()
        return out, big

    out, big = asyncio.run(main())
    assert out == [[("a", 0)], [("a", 1)], [("b", 2)], [("a", 3)], [("b", 4)]]
    assert calls[:2] == [("a", [0, 1, 3]), ("b", [2, 4])] and calls[2] == ("c", [0, 1, 2, 3, 4])
    assert big == [("c", i) for i in range(5)]


def test_batcher_drops_requests_that_timed_out():
    import asyncio
    import time

    from pysynth.serve.batching import Batcher

    seen = []

    def run(key, inputs):
        seen.extend(inputs)
        time.sleep(0.2)
        return inputs

    async def main():
        b = Batcher("t", run, max_batch=1, max_wait_ms=0)
        first = asyncio.ensure_future(b.submit(0, ["slow"]))
        await asyncio.sleep(0.01)
        with pytest.raises(asyncio.TimeoutError):
            await b.submit(0, ["late"], timeout=0.05)
        assert await first == ["slow"]
        assert await b.submit(0, ["next"]) == ["next"]
        await b.stop()
        return b.stats

    stats = asyncio.run(main())
    assert seen == ["slow", "next"] and stats.dropped == 1


def test_prometheus_text_format():
    from pysynth.serve import prom

    c = prom.Counter("x_total", "help")
    c.inc(endpoint='a"b')
    h = prom.Histogram("h", "help", [1, 2])
    for v in (0.5, 1, 3):
        h.observe(v, m="k")
    text = prom.render([c, h])
    assert 'x_total{endpoint="a\\"b"} 1' in text
    assert 'h_bucket{m="k",le="1"} 2' in text and 'h_bucket{m="k",le="2"} 2' in text
    assert 'h_bucket{m="k",le="+Inf"} 3' in text and 'h_count{m="k"} 3' in text and 'h_sum{m="k"} 4.5' in text


def test_threads_in_flight_do_not_share_state(server):
    """Many threads, mixed decoding settings at once: every answer is its own."""
    bodies = [{"keywords": KWS[i % 8], "n": 1 + i % 3, "diverse": bool(i % 2)} for i in range(48)]
    lock, answers = threading.Lock(), {}

    def one(i):
        r = server.post("/v1/k2q", bodies[i])
        with lock:
            answers[i] = r

    with ThreadPoolExecutor(24) as ex:
        list(ex.map(one, range(48)))
    for i, (status, res) in answers.items():
        assert status == 200, res
        assert res["results"][0]["keywords"] == bodies[i]["keywords"]
        assert res["method"] == ("diverse" if bodies[i]["diverse"] else ("greedy" if bodies[i]["n"] == 1 else "beam"))
        assert 1 <= len(res["results"][0]["questions"]) <= bodies[i]["n"]


def test_qagen_endpoint(server):
    """POST /v1/qagen: the rows of QAGenerator on the shipped models, whatever the batch."""
    from pysynth.data import qagen_sample_path
    from pysynth.qagen.data import Context, read_contexts
    from pysynth.qagen.models import QuestionGenerator, SpanModel
    from pysynth.qagen.pipeline import QAGenConfig, QAGenerator

    ctx = [c.text for c in read_contexts(qagen_sample_path())[:3]]
    g = QAGenerator(QAGenConfig(neg_fraction=0.0), SpanModel(threads=1), QuestionGenerator(threads=1))
    want = [g.run([Context("0", "", t)], indices=[0])[0] for t in ctx]
    status, res = server.post("/v1/qagen", {"contexts": ctx})
    assert status == 200 and res["model"] == "qagen-span-minilm,qagen-qg-copynet"
    for r, w in zip(res["results"], want):
        assert (r["question"], r["answer_text"], r["roundtrip_text"], r["consistent"], r["reason"]) == \
            (w["question"], w["answer_text"], w["roundtrip_text"], w["consistent"], w["reason"])
    status, one = server.post("/v1/qagen", {"contexts": ctx[1]})
    assert status == 200 and one["results"][0]["question"] == res["results"][1]["question"]
    # K answers per context: the pipeline's decision rows for each context, in context order
    g2 = QAGenerator(QAGenConfig(neg_fraction=0.0, answers_per_context=2), g.span, g.qg)
    want2 = [r for t in ctx for r in g2.run([Context("0", "", t)], indices=[0])]
    status, res2 = server.post("/v1/qagen", {"contexts": ctx, "answers_per_context": 2})
    assert status == 200 and len(res2["results"]) == len(want2) > len(ctx)
    assert [(r["context"], r["question"], r["answer_text"], r.get("answer_draw")) for r in res2["results"]] == \
        [(r["context"], r["question"], r["answer_text"], r.get("answer_draw")) for r in want2]
    for body in ({"contexts": []}, {"contexts": ["  "]}, {"contexts": ctx, "match": "f1:3"}, {"contexts": ctx, "x": 1},
                 {"contexts": ctx, "top_k": 0}, {"contexts": ctx, "answers_per_context": 11}):
        assert server.post("/v1/qagen", body)[0] == 422, body


# ------------------------------------------------------------------------------ the guards (issue 26)

OFF = {"no_repeat_ngram": 0, "no_stutter": False}
DEFAULTS = {"no_repeat_ngram": 3, "no_stutter": True}  # the library's, spelt out
#: each endpoint that decodes, a request whose output the guards change (the shipped models), and
#: what its output says with them off: a word twice in a row where the library's CLI shows one too
LOOPS = {
    "/v1/k2q": ({"keywords": "waka waka this time for africa", "n": 2}, "waka waka"),
    "/v1/rewrite": ({"questions": "How was this calculated calculated?"}, "calculated calculated"),
    "/v1/qagen": (14, "dias dias"),  # the sample's 15th context: "When did ondemar Dias Dias Dias?"
    "/v1/paraphrase": ({"questions": "Where where is the station?", "beams": 8, "groups": 4}, None),
}
BAD_GUARDS = [("no_repeat_ngram", -1), ("no_repeat_ngram", 1), ("no_repeat_ngram", 10**6), ("no_repeat_ngram", "x"),
              ("no_repeat_ngram", True), ("no_repeat_ngram", 2.5), ("no_stutter", 3), ("no_stutter", "no"),
              ("no_stutter", None)]


def _texts(res) -> list:
    r = res["results"]
    return [t for x in r for t in ([q["text"] for q in x["questions"]] if "questions" in x else
                                   x["paraphrases"] if "paraphrases" in x else
                                   [x["rewrite"] if "rewrite" in x else x["question"]])]


@pytest.mark.parametrize("route", list(LOOPS))
def test_every_decoding_endpoint_takes_the_guards(server, route):
    body, loop = LOOPS[route]
    if route == "/v1/qagen":
        from pysynth.data import qagen_sample_path
        from pysynth.qagen.data import read_contexts

        body = {"contexts": read_contexts(qagen_sample_path())[body].text}
    status, plain = server.post(route, body)
    assert status == 200, plain
    assert server.post(route, {**body, **DEFAULTS}) == (200, plain)  # the defaults are the library's
    status, off = server.post(route, {**body, **OFF})
    assert status == 200 and _texts(off) != _texts(plain), (plain, off)
    if loop:
        assert not any(loop in t.lower() for t in _texts(plain)) and any(loop in t.lower() for t in _texts(off)), \
            (plain, off)
    assert server.post(route, {**body, "no_repeat_ngram": 2})[0] == 200
    for field, value in BAD_GUARDS:
        status, res = server.post(route, {**body, field: value})
        assert status == 422 and list(res) == ["error"] and field in res["error"], (field, value, res)
    _, res = server.post(route, {**body, "no_repeat_ngram": 1})
    assert res["error"] == "no_repeat_ngram: must be 0 (off) or an n-gram size in 2..1024, got 1"  # as the CLI


def test_the_guards_are_in_the_schema_of_each_decoding_endpoint(server):
    schemas = server.get("/openapi.json")[1]["components"]["schemas"]
    for name in ("K2QRequest", "RewriteRequest", "ParaphraseRequest", "QAGenRequest"):
        props = schemas[name]["properties"]
        assert props["no_repeat_ngram"]["default"] == 3 and props["no_stutter"]["default"] is True, name
        assert (props["no_repeat_ngram"]["minimum"], props["no_repeat_ngram"]["maximum"]) == (0, 1024), name
    assert "no_repeat_ngram" not in schemas["DupRequest"]["properties"]  # a search, no decoding


def test_the_guard_fields_default_to_the_searchs_defaults():
    from pysynth.decoding.config import MAX_NO_REPEAT_NGRAM, SearchConfig
    from pysynth.pipelines.served import Guards

    g = Guards()
    assert (g.no_repeat_ngram, g.no_stutter) == (SearchConfig.no_repeat_ngram, SearchConfig.no_stutter)
    assert MAX_NO_REPEAT_NGRAM == 1024
