"""Load test of ``pysynth serve`` on loopback, in one run and side by side: throughput and latency
of dynamic batching vs ``--no-batching`` vs the obvious alternative (a FastAPI endpoint calling the
torch model per request) vs calling the onnxruntime decoder in-process; memory over a long run;
bad requests and slow clients.

    python bench/serve_load.py --quick                                  # smoke run, about a minute
    python bench/serve_load.py --requests 2000 --soak 20000 --write-results
    python bench/serve_load.py --requests 3000 --soak 100000 --write-results   # the long run

What is measured:

* Requests: one greedy question, ``POST /v1/k2q {"keywords": q}`` (n = 1), for a fixed list of
  keyword queries made from the bundled K2Q questions (:func:`pysynth.data.k2q_demo`): the first
  3-5 content words of each question (:data:`pysynth.k2q.neural.STOPWORDS` removed; the length
  drawn with a fixed seed), shuffled with that seed; the queries the server answers with 422 (no
  word the model knows) are dropped before any measurement.
* The client: a closed loop on raw ``asyncio.open_connection`` streams (HTTP/1.1 keep-alive, no
  dependencies; uvloop's event loop when it is installed, as it is with the ``[serve]`` extra): C
  connections, opened before the clock starts, each sending its next request when the previous
  answer is in, for a fixed number of requests and at most ``--max-s`` seconds per level. Per
  request: latency (send to last body byte) and status (0: connection error or a timeout). It
  shares the machine's cores with the server, the same for every configuration; its CPU time and
  the server process's (``/proc/PID/stat``) are reported per request.
* Servers, each a fresh process on 127.0.0.1 and a free port: ``pysynth serve`` (batching: the
  default ``--max-batch 32 --max-wait-ms 2``), the same with ``--no-batching``, and a minimal
  FastAPI app on uvicorn (written to a temp folder) whose sync endpoint calls
  ``Generator.load("k2q-copynet-small", backend="torch").generate([kw], method="greedy")`` per
  request. Every server gets ``--threads`` intra-op threads (onnxruntime ``--threads``, torch
  ``torch.set_num_threads``). In-process: the onnxruntime (and torch) generator called directly on
  the same queries, one question at a time, and the onnxruntime one on batches of 32 (the ceiling).
* The batching server's ``GET /metrics`` batch-size histogram, read before and after each level:
  inputs per model call at that concurrency.
* ``--soak N``: N requests at concurrency 64 to a fresh batching server, its VmRSS sampled every
  5 s (start, after a warm-up of N/10 requests at most 2,000, every sample, end).
* Faults, on the batching server after its levels: malformed JSON, wrong types, empty and
  over-long inputs, oversized bodies, non-JSON content types, bad framing (raw sockets; every one
  must get a 4xx, never a 5xx); then slow clients (the body one byte every 0.2 s; the headers one
  byte every 0.2 s), silent connections and clients that hang up mid-request, while four other
  connections keep sending valid requests, whose latencies must stay low; the server must be
  alive at the end and its ``pysynth_requests_total`` must count no 5xx.

The markdown report is printed; ``--write-results`` writes it to ``--out`` (default
``bench/RESULTS_serve.md``; a hand-written ``## Notes`` section already there is kept).
All traffic goes to 127.0.0.1, bounded in requests and seconds.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import platform
import random
import re
import signal
import socket
import subprocess
import sys
import tempfile
import textwrap
import time
import urllib.request
from pathlib import Path
from typing import Dict, List, Tuple

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests" / "serve"))

from _server import Server  # noqa: E402

TICK = os.sysconf("SC_CLK_TCK")
K2Q = "/v1/k2q"


# ------------------------------------------------------------------------------ the request mix

def keyword_queries(n: int, seed: int = 0) -> List[str]:
    """``n`` distinct keyword queries: the first 3-5 content words of the bundled K2Q questions."""
    from pysynth.data import k2q_demo
    from pysynth.k2q.neural import STOPWORDS
    from pysynth.models.vocab import tokenize

    rng = random.Random(seed)
    seen, qs = set(), []
    for row in k2q_demo():
        words = [t for t in tokenize(row["question"]) if t not in STOPWORDS and any(c.isalnum() for c in t)]
        k = rng.randint(3, 5)
        if len(words) >= 3:
            q = " ".join(words[:k])
            if q not in seen:
                seen.add(q)
                qs.append(q)
    rng.shuffle(qs)
    return qs[:n]


def valid_only(server: Server, qs: List[str]) -> Tuple[List[str], Dict[int, int]]:
    """The queries the server answers (200); the statuses of the dropped ones counted."""
    keep, dropped = [], {}
    for q in qs:
        status, _ = server.post(K2Q, {"keywords": q})
        if status == 200:
            keep.append(q)
        else:
            dropped[status] = dropped.get(status, 0) + 1
    return keep, dropped


# ------------------------------------------------------------------------------ the client

def _hostport(url: str) -> Tuple[str, int]:
    host, port = url.removeprefix("http://").rsplit(":", 1)
    return host, int(port)


def post_bytes(host: str, port: int, body: bytes, path: str = K2Q, ctype: str = "application/json") -> bytes:
    return (b"POST %s HTTP/1.1\r\nHost: %s:%d\r\nContent-Type: %s\r\nContent-Length: %d\r\n\r\n"
            % (path.encode(), host.encode(), port, ctype.encode(), len(body)) + body)


async def read_response(reader: asyncio.StreamReader) -> Tuple[int, bytes, bool]:
    """(status, body, the server keeps the connection) of one HTTP/1.1 response."""
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.split(b"\r\n")
    status = int(lines[0].split(b" ", 2)[1])
    hdrs = {}
    for line in lines[1:]:
        k, sep, v = line.partition(b":")
        if sep:
            hdrs[k.strip().lower()] = v.strip().lower()
    if b"content-length" in hdrs:
        body = await reader.readexactly(int(hdrs[b"content-length"]))
    elif hdrs.get(b"transfer-encoding") == b"chunked":
        parts = []
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0], 16)
            parts.append(await reader.readexactly(size + 2))
            if size == 0:
                break
        body = b"".join(p[:-2] for p in parts)
    else:
        body = await reader.read()
        return status, body, False
    return status, body, hdrs.get(b"connection") != b"close"


def _timeout(s: float):
    return asyncio.timeout(s) if hasattr(asyncio, "timeout") else _Deadline(s)  # 3.11+: no task per request


class _Deadline:
    """``asyncio.timeout`` for Python < 3.11 (cancels the running task at the deadline)."""

    def __init__(self, s: float):
        self.s, self.handle, self.fired = s, None, False

    async def __aenter__(self):
        task = asyncio.current_task()

        def fire():
            self.fired = True
            task.cancel()

        self.handle = asyncio.get_running_loop().call_later(self.s, fire)

    async def __aexit__(self, et, exc, tb):
        self.handle.cancel()
        if self.fired and et is asyncio.CancelledError:
            raise asyncio.TimeoutError
        return False


async def closed_loop(url: str, bodies: List[bytes], concurrency: int, total: int, max_s: float,
                      timeout: float = 60.0) -> dict:
    """``total`` requests (at most ``max_s`` seconds) over ``concurrency`` keep-alive connections,
    each sending its next request when the previous answer is in."""
    host, port = _hostport(url)
    reqs = [post_bytes(host, port, b) for b in bodies]
    lat: List[float] = []
    codes: List[int] = []
    nxt = [0]
    errors = (OSError, EOFError, ValueError, IndexError, asyncio.IncompleteReadError, asyncio.LimitOverrunError,
              asyncio.TimeoutError)

    async def connect():
        return await asyncio.wait_for(asyncio.open_connection(host, port), timeout)

    conns = await asyncio.gather(*(connect() for _ in range(concurrency)))
    deadline = time.perf_counter() + max_s

    async def worker(conn):
        while nxt[0] < total and time.perf_counter() < deadline:
            i = nxt[0]
            nxt[0] += 1
            t0 = time.perf_counter()
            keep = False
            try:
                if conn is None:
                    conn = await connect()
                reader, writer = conn
                async with _timeout(timeout):
                    writer.write(reqs[i % len(reqs)])
                    status, _, keep = await read_response(reader)
            except errors:
                status = 0
            lat.append(time.perf_counter() - t0)
            codes.append(status)
            if not keep and conn is not None:
                conn[1].close()
                conn = None
        if conn is not None:
            conn[1].close()

    cpu0, t0 = time.process_time(), time.perf_counter()
    await asyncio.gather(*(worker(c) for c in conns))
    wall = time.perf_counter() - t0
    return {"lat": lat, "codes": codes, "wall": wall, "client_cpu": time.process_time() - cpu0}


def run_async(coro):
    """``asyncio.run`` on uvloop's loop when it is installed (the client's own overhead is then smaller)."""
    try:
        import uvloop
    except ImportError:
        return asyncio.run(coro)
    if sys.version_info >= (3, 12):
        return asyncio.run(coro, loop_factory=uvloop.new_event_loop)
    loop = uvloop.new_event_loop()
    try:
        return loop.run_until_complete(coro)
    finally:
        loop.close()


def pct(xs: List[float], q: float) -> float:
    """Nearest-rank percentile."""
    if not xs:
        return float("nan")
    xs = sorted(xs)
    return xs[max(0, min(len(xs) - 1, math.ceil(len(xs) * q / 100) - 1))]


# ------------------------------------------------------------------------------ process readings

def cpu_s(pid: int) -> float:
    """User + system CPU seconds of process ``pid``."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def http_get(url: str, timeout: float = 10.0) -> str:
    with urllib.request.urlopen(url, timeout=timeout) as r:
        return r.read().decode()


def batch_hist(url: str, model: str = "k2q") -> Dict[str, float]:
    """The ``pysynth_batch_size`` histogram of ``model`` from ``GET /metrics``: cumulative bucket
    counts by ``le``, ``sum`` and ``count``."""
    out: Dict[str, float] = {}
    for line in http_get(url + "/metrics").splitlines():
        if not line.startswith("pysynth_batch_size") or f'model="{model}"' not in line:
            continue
        name, value = line.rsplit(" ", 1)
        m = re.search(r'le="([^"]+)"', name)
        if m:
            out[m.group(1)] = float(value)
        elif name.startswith("pysynth_batch_size_sum"):
            out["sum"] = float(value)
        elif name.startswith("pysynth_batch_size_count"):
            out["count"] = float(value)
    return out


def hist_delta(a: Dict[str, float], b: Dict[str, float]) -> dict:
    """Model calls and inputs between two readings; calls per bucket (non-cumulative)."""
    calls = b.get("count", 0) - a.get("count", 0)
    inputs = b.get("sum", 0) - a.get("sum", 0)
    les = sorted((k for k in b if k not in ("sum", "count")), key=lambda k: float(k))
    per, prev = {}, 0.0
    for le in les:
        cum = b[le] - a.get(le, 0)
        if cum - prev:
            per[le] = int(cum - prev)
        prev = cum
    return {"calls": int(calls), "inputs": int(inputs), "mean": inputs / calls if calls else float("nan"),
            "buckets": per}


# ------------------------------------------------------------------------------ the levels

def run_levels(url: str, pid: int, bodies: List[bytes], levels: List[int], requests: int, max_s: float,
               metrics: bool) -> Dict[int, dict]:
    run_async(closed_loop(url, bodies, 8, 200, 60))  # warm-up: connections, caches, thread pools
    out = {}
    for c in levels:
        h0 = batch_hist(url) if metrics else None
        cpu0 = cpu_s(pid)
        r = run_async(closed_loop(url, bodies, c, requests, max_s))
        srv_cpu = cpu_s(pid) - cpu0
        n, lat = len(r["codes"]), r["lat"]
        codes: Dict[str, int] = {}
        for s in r["codes"]:
            codes[str(s)] = codes.get(str(s), 0) + 1
        row = {"requests": n, "errors": n - codes.get("200", 0), "codes": codes, "rps": n / r["wall"],
               "wall_s": r["wall"], "p50_ms": 1e3 * pct(lat, 50), "p95_ms": 1e3 * pct(lat, 95),
               "p99_ms": 1e3 * pct(lat, 99), "max_ms": 1e3 * max(lat), "server_cpu_ms": 1e3 * srv_cpu / n,
               "client_cpu_ms": 1e3 * r["client_cpu"] / n}
        if metrics:
            row["batch"] = hist_delta(h0, batch_hist(url))
        out[c] = row
        print(f"  c={c:<3} {row['rps']:8.1f} req/s  p50 {row['p50_ms']:7.2f} ms  p95 {row['p95_ms']:7.2f}  p99 "
              f"{row['p99_ms']:7.2f}  errors {row['errors']}  server CPU {row['server_cpu_ms']:.2f} ms/req"
              + (f"  mean batch {row['batch']['mean']:.1f}" if metrics else ""), file=sys.stderr, flush=True)
    return out


# ------------------------------------------------------------------------------ the alternatives

TORCH_APP = textwrap.dedent('''
    """What a user would write first: FastAPI, the torch model loaded once, one generate() per request."""
    import os

    import torch
    from fastapi import FastAPI
    from pydantic import BaseModel

    from pysynth.models.generate import Generator

    torch.set_num_threads(int(os.environ["THREADS"]))
    gen = Generator.load("k2q-copynet-small", backend="torch", device="cpu")
    app = FastAPI()


    class Req(BaseModel):
        keywords: str


    @app.post("/v1/k2q")
    def k2q(req: Req):
        out = gen.generate([req.keywords], method="greedy", beam=1, n=1)[0]
        return {"results": [{"keywords": req.keywords,
                             "questions": [{"text": t, "score": s} for t, s in zip(out.texts, out.scores)]}]}


    @app.get("/ready")
    def ready():
        return {"ready": True}
''')


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class TorchServer:
    """The torch baseline on uvicorn (its defaults: uvloop + httptools when installed, as for
    ``pysynth serve``) in a subprocess on a free loopback port."""

    def __init__(self, threads: int, timeout: float = 180.0):
        self.dir = tempfile.TemporaryDirectory(prefix="serve_load_")
        Path(self.dir.name, "torch_app.py").write_text(TORCH_APP)
        port = free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.log = open(Path(self.dir.name, "log.txt"), "w+")
        env = dict(os.environ, THREADS=str(threads), PYTHONPATH=self.dir.name)
        self.proc = subprocess.Popen([sys.executable, "-m", "uvicorn", "torch_app:app", "--host", "127.0.0.1",
                                      "--port", str(port), "--log-level", "warning", "--no-access-log"],
                                     cwd=self.dir.name, env=env, stdin=subprocess.DEVNULL,
                                     stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + timeout
        while True:
            try:
                http_get(self.url + "/ready", timeout=2)
                return
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("the FastAPI + torch baseline did not start")
            time.sleep(0.2)

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        self.dir.cleanup()


def in_process(queries: List[str], backend: str, threads: int, n: int = 300) -> dict:
    """Latency of one greedy question called on the generator directly (and, for onnx, the
    throughput of batches of 32: the model's ceiling on this machine)."""
    from pysynth.models.generate import Generator

    if backend == "torch":
        import torch

        torch.set_num_threads(threads)
        g = Generator.load("k2q-copynet-small", backend="torch", device="cpu")
    else:
        g = Generator.load("k2q-copynet-small", backend="onnx", device="cpu", threads=threads)
    qs = queries[:n]
    for q in qs[:20]:
        g.generate([q], method="greedy", beam=1, n=1)
    lat = []
    for q in qs:
        t0 = time.perf_counter()
        g.generate([q], method="greedy", beam=1, n=1)
        lat.append(time.perf_counter() - t0)
    out = {"calls": len(lat), "p50_ms": 1e3 * pct(lat, 50), "p95_ms": 1e3 * pct(lat, 95),
           "per_s": len(lat) / sum(lat)}
    if backend == "onnx":
        t0 = time.perf_counter()
        for i in range(0, len(qs), 32):
            g.generate(qs[i:i + 32], method="greedy", beam=1, n=1, batch_size=32)
        out["batch32_per_s"] = len(qs) / (time.perf_counter() - t0)
    return out


def paired_c1(url: str, queries: List[str], threads: int, total: int, block: int = 25) -> dict:
    """p50 of one greedy question at concurrency 1 over HTTP and in-process, measured in alternating
    blocks of ``block`` questions (the same questions both ways), so that both see the same
    background load of a shared machine."""
    from pysynth.models.generate import Generator

    g = Generator.load("k2q-copynet-small", backend="onnx", device="cpu", threads=threads)
    for q in queries[:20]:
        g.generate([q], method="greedy", beam=1, n=1)
    srv: List[float] = []
    inp: List[float] = []
    codes: List[int] = []
    i = 0
    while len(srv) < total:
        qs = [queries[(i + k) % len(queries)] for k in range(block)]
        i += block
        for q in qs:
            t0 = time.perf_counter()
            g.generate([q], method="greedy", beam=1, n=1)
            inp.append(time.perf_counter() - t0)
        r = run_async(closed_loop(url, [json.dumps({"keywords": q}).encode() for q in qs], 1, block, 60))
        srv += r["lat"]
        codes += r["codes"]
    return {"requests": len(srv), "errors": sum(1 for c in codes if c != 200), "server_p50_ms": 1e3 * pct(srv, 50),
            "inproc_p50_ms": 1e3 * pct(inp, 50), "server_p95_ms": 1e3 * pct(srv, 95),
            "inproc_p95_ms": 1e3 * pct(inp, 95)}


# ------------------------------------------------------------------------------ memory

def soak(bodies: List[bytes], n: int, flags: List[str], max_s: float) -> dict:
    """``n`` requests at concurrency 64 to a fresh batching server, its RSS sampled every 5 s."""
    with Server(*flags) as s:
        pid = s.proc.pid
        rss_start = rss_mb(pid)
        warm = run_async(closed_loop(s.url, bodies, 64, min(2000, max(200, n // 10)), max_s))
        rss_warm = rss_mb(pid)
        samples = [(0.0, rss_warm)]

        async def main():
            async def sampler():
                t0 = time.perf_counter()
                while True:
                    await asyncio.sleep(5)
                    samples.append((time.perf_counter() - t0, rss_mb(pid)))

            task = asyncio.ensure_future(sampler())
            try:
                return await closed_loop(s.url, bodies, 64, n, max_s)
            finally:
                task.cancel()

        r = run_async(main())
        rss_end = rss_mb(pid)
        samples.append((r["wall"], rss_end))
        alive = s.alive()
    rss = [v for _, v in samples]
    print(f"  {len(r['codes'])} requests in {r['wall']:.0f} s, RSS {rss_start:.0f} -> {rss_warm:.0f} -> "
          f"{rss_end:.0f} MiB (max {max(rss):.0f})", file=sys.stderr, flush=True)
    return {"requests": len(r["codes"]), "errors": sum(1 for c in r["codes"] if c != 200),
            "warmup_requests": len(warm["codes"]), "warmup_errors": sum(1 for c in warm["codes"] if c != 200),
            "rps": len(r["codes"]) / r["wall"], "wall_s": r["wall"], "p99_ms": 1e3 * pct(r["lat"], 99),
            "rss_start_mb": rss_start, "rss_warm_mb": rss_warm, "rss_end_mb": rss_end, "rss_max_mb": max(rss),
            "samples": [(round(t, 1), round(v, 1)) for t, v in samples], "alive": alive}


# ------------------------------------------------------------------------------ faults

async def raw_exchange(host: str, port: int, data: bytes, timeout: float = 10.0) -> int:
    """Send ``data`` on a fresh connection, return the response status (0: none)."""
    try:
        reader, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout)
    except OSError:
        return 0
    try:
        try:
            writer.write(data)
            await writer.drain()
        except OSError:  # the server answered (413) and closed before reading it all
            pass
        status, _, _ = await asyncio.wait_for(read_response(reader), timeout)
        return status
    except (OSError, ValueError, IndexError, asyncio.IncompleteReadError, asyncio.TimeoutError):
        return 0
    finally:
        writer.close()


def bad_requests(host: str, port: int) -> List[Tuple[str, str, int]]:
    """(case, expected, status) of each malformed request, sent on its own connection."""
    def j(obj) -> bytes:
        return json.dumps(obj).encode()

    def post(body: bytes, ctype: str = "application/json", path: str = K2Q) -> bytes:
        return post_bytes(host, port, body, path, ctype)

    def raw(head: str, body: bytes = b"") -> bytes:
        return head.replace("HOST", f"{host}:{port}").replace("\n", "\r\n").encode() + body

    big = b'{"keywords": "' + b"a " * 1_000_000 + b'"}'
    chunked = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in [big[i:i + 65536] for i in range(0, len(big), 65536)])
    cases = [
        ("malformed JSON `{bad`", "400", post(b"{bad")),
        ("truncated JSON", "400", post(b'{"keywords": "honda')),
        ("invalid UTF-8 in the body", "4xx", post(b'{"keywords": "\xff\xfe honda"}')),
        ("empty body", "4xx", post(b"")),
        ("JSON array, not an object", "422", post(b"[1, 2]")),
        ("JSON string, not an object", "422", post(b'"honda civic"')),
        ("keywords: number", "422", post(j({"keywords": 5}))),
        ("keywords: null", "422", post(j({"keywords": None}))),
        ("keywords: list of numbers", "422", post(j({"keywords": [1, 2]}))),
        ("keywords missing", "422", post(j({"n": 1}))),
        ("n: string", "422", post(j({"keywords": "honda civic", "n": "3"}))),
        ("n: float", "422", post(j({"keywords": "honda civic", "n": 1.5}))),
        ("diverse: string", "422", post(j({"keywords": "honda civic", "diverse": "yes"}))),
        ("unknown field", "422", post(j({"keywords": "honda civic", "temperature": 1}))),
        ("n = 0", "422", post(j({"keywords": "honda civic", "n": 0}))),
        ("n = 99", "422", post(j({"keywords": "honda civic", "n": 99}))),
        ("beam < n", "422", post(j({"keywords": "honda civic", "n": 4, "beam": 2}))),
        ("beam = 10000", "422", post(j({"keywords": "honda civic", "beam": 10000}))),
        ("keywords: empty string", "422", post(j({"keywords": ""}))),
        ("keywords: whitespace", "422", post(j({"keywords": "  \t "}))),
        ("keywords: empty list", "422", post(j({"keywords": []}))),
        ("keywords: out of vocabulary", "422", post(j({"keywords": "qqzzv xxqzv"}))),
        ("keywords: lone surrogate escape", "422", post(b'{"keywords": "honda \\udcff"}')),
        ("keywords: 5,000 characters", "413", post(j({"keywords": "honda " * 833}))),
        ("keywords: 500 inputs", "413", post(j({"keywords": ["honda civic"] * 500}))),
        ("body of 2 MB (Content-Length)", "413", post(big)),
        ("body of 2 MB (chunked)", "413",
         raw("POST /v1/k2q HTTP/1.1\nHost: HOST\nContent-Type: application/json\nTransfer-Encoding: chunked\n\n",
             chunked + b"0\r\n\r\n")),
        ("Content-Length: abc", "400",
         raw("POST /v1/k2q HTTP/1.1\nHost: HOST\nContent-Type: application/json\nContent-Length: abc\n\n", b"{}")),
        ("form-urlencoded `keywords=honda`", "415",
         post(b"keywords=honda+civic", "application/x-www-form-urlencoded")),
        ("multipart/form-data", "415",
         post(b'--xx\r\nContent-Disposition: form-data; name="keywords"\r\n\r\nhonda\r\n--xx--\r\n',
              "multipart/form-data; boundary=xx")),
        ("text/plain, not JSON", "415", post(b"honda civic", "text/plain")),
        ("text/plain holding valid JSON (refused: issue 27)", "415", post(j({"keywords": "honda civic"}), "text/plain")),
        ("GET /v1/k2q", "405", raw("GET /v1/k2q HTTP/1.1\nHost: HOST\n\n")),
        ("POST /v1/nothing", "404", post(j({"keywords": "honda civic"}), path="/v1/nothing")),
        ("garbage request line", "400", raw("HELLO\n\n")),
    ]

    async def main():
        return [(name, want, await raw_exchange(host, port, data)) for name, want, data in cases]

    return run_async(main())


def _ok(want: str, status: int) -> bool:
    """The hard check: a 4xx for a bad request (a 2xx where the documented answer is one)."""
    return 200 <= status < 300 if want.startswith("2") else 400 <= status < 500


def _documented(want: str, status: int) -> bool:
    return status == int(want) if want.isdigit() else _ok(want, status)


async def slow_clients(host: str, port: int, body: bytes, seconds: float, silent_n: int, hangup_n: int) -> dict:
    """Slow and silent clients, and clients hanging up, while four connections send valid requests."""
    t_start = time.perf_counter()
    out: dict = {}

    k = int(seconds / 0.2)  # bytes that trickle

    async def slow_body():  # the headers and most of the body at once, then its last k bytes one every 0.2 s
        r, w = await asyncio.open_connection(host, port)
        pad = body[:-1] + b" " * max(0, k - len(body)) + body[-1:]  # JSON allows the spaces
        w.write(post_bytes(host, port, pad)[:-k])
        for b in pad[-k:]:
            w.write(bytes([b]))
            await asyncio.sleep(0.2)
        try:
            status, _, _ = await asyncio.wait_for(read_response(r), 10)
        except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.TimeoutError):
            status = 0
        w.close()
        out["slow body: status"] = status
        out["slow body: seconds"] = round(time.perf_counter() - t_start, 1)

    async def slow_head():  # the request line and headers one byte every 0.2 s, then the body
        r, w = await asyncio.open_connection(host, port)
        data = post_bytes(host, port, body)
        head, rest = data[:k], data[k:]
        for b in head:
            w.write(bytes([b]))
            await asyncio.sleep(0.2)
        w.write(rest)
        try:
            status, _, _ = await asyncio.wait_for(read_response(r), 10)
        except (OSError, ValueError, asyncio.IncompleteReadError, asyncio.TimeoutError):
            status = 0
        w.close()
        out["slow headers: status"] = status

    async def closed_by_server(r) -> bool:
        try:
            return (await asyncio.wait_for(r.read(1), 0.05)) == b""
        except asyncio.TimeoutError:
            return False
        except OSError:
            return True

    async def silent():  # connect and send nothing / stop halfway through a body; does the server close them?
        conns = await asyncio.gather(*(asyncio.open_connection(host, port) for _ in range(silent_n)))
        stalled = await asyncio.open_connection(host, port)
        stalled[1].write(post_bytes(host, port, body)[:-5])
        await asyncio.sleep(seconds + 2)  # past uvicorn's keep-alive timeout (5 s)
        closed = sum([await closed_by_server(r) for r, _ in conns])
        out["silent connections closed by the server"] = f"{closed}/{silent_n} after {seconds + 2:.0f} s"
        out["stalled body closed by the server"] = (f"{'yes' if await closed_by_server(stalled[0]) else 'no'} "
                                                    f"after {seconds + 2:.0f} s")
        for _, w in conns + [stalled]:
            w.close()

    async def hangups():  # send a valid request, close before the answer
        for _ in range(hangup_n):
            _, w = await asyncio.open_connection(host, port)
            w.write(post_bytes(host, port, body))
            await w.drain()
            w.close()
            await asyncio.sleep(seconds / hangup_n / 2)

    async def probes():  # valid requests from other connections meanwhile
        await asyncio.sleep(0.5)  # the slow and silent clients are connected by now
        return await closed_loop(f"http://{host}:{port}", [body], 4, 100000, seconds - 1.0, timeout=10)

    res = await asyncio.gather(slow_body(), slow_head(), silent(), hangups(), probes())
    p = res[-1]
    out["probe requests"] = len(p["codes"])
    out["probe errors"] = sum(1 for c in p["codes"] if c != 200)
    out["probe p50 ms"] = round(1e3 * pct(p["lat"], 50), 2)
    out["probe max ms"] = round(1e3 * max(p["lat"]), 2) if p["lat"] else float("nan")
    return out


def faults(server: Server, body: bytes, slow_s: float) -> dict:
    host, port = _hostport(server.url)
    cases = bad_requests(host, port)
    for name, want, status in cases:
        if not _documented(want, status):
            print(f"  {'NOT A 4xx' if not _ok(want, status) else 'not as documented'}: {name}: {status} "
                  f"(expected {want})", file=sys.stderr, flush=True)
    slow = run_async(slow_clients(host, port, body, slow_s, silent_n=20, hangup_n=20))
    after, _ = server.post(K2Q, json.loads(body))
    fives = 0
    for line in http_get(server.url + "/metrics").splitlines():
        m = re.match(r'pysynth_requests_total\{.*code="5\d\d".*\} (\S+)', line)
        if m:
            fives += int(float(m.group(1)))
    return {"cases": cases, "slow": slow, "valid request after": after, "alive": server.alive(),
            "5xx in /metrics": fives}


# ------------------------------------------------------------------------------ main

def machine() -> dict:
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            cpu = next(line.split(":", 1)[1].strip() for line in f if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    nproc = subprocess.run(["nproc"], capture_output=True, text=True).stdout.strip() or str(os.cpu_count())
    return {"nproc": nproc, "cpu": cpu, "python": platform.python_version(), "system": platform.system(),
            "load": os.getloadavg()}


def missing_default_models() -> List[str]:
    """Tasks whose shipped default model is not installed (``pysynth serve`` without ``--model``
    would refuse to start): the benchmark serves ``k2q-copynet-small`` for them, idle."""
    from pysynth.models.registry import models
    from pysynth.serve.models import TASKS

    return [t for t, m in TASKS.items() if m is not None and m not in models()]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0].replace("``", "`"),
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=2000, help="requests per concurrency level (default 2000)")
    ap.add_argument("--levels", default="1,8,64", help="concurrency levels (default 1,8,64)")
    ap.add_argument("--threads", type=int, default=1,
                    help="intra-op threads of every model: onnxruntime --threads, torch.set_num_threads "
                         "(default 1: the client and the event loop need the other core of a 2-core machine)")
    ap.add_argument("--queries", type=int, default=600, help="keyword queries in the mix (default 600)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--soak", type=int, default=0, help="requests of the memory run at concurrency 64 (0: none)")
    ap.add_argument("--max-s", type=float, default=120.0, help="wall-clock cap per level, seconds (default 120)")
    ap.add_argument("--soak-max-s", type=float, default=1800.0, help="wall-clock cap of the soak (default 1800)")
    ap.add_argument("--slow-s", type=float, default=5.0, help="how long the slow clients take (default 5 s)")
    ap.add_argument("--quick", action="store_true", help="a smoke run: 200 requests per level")
    ap.add_argument("--skip-torch", action="store_true", help="no FastAPI + torch baseline")
    ap.add_argument("--write-results", action="store_true", help="write the markdown to --out")
    ap.add_argument("--out", default=None, help="the markdown file (default bench/RESULTS_serve.md; "
                                                "written with --write-results or when given)")
    ap.add_argument("--json", default=None, help="also write the raw results as JSON here")
    a = ap.parse_args(argv)
    if a.quick:
        a.requests = min(a.requests, 200)
    levels = [int(x) for x in a.levels.split(",")]
    hi = max(levels)
    t_all = time.time()
    res: dict = {"machine": machine(), "date": time.strftime("%Y-%m-%d %H:%M"), "threads": a.threads,
                 "requests": a.requests, "levels": levels}
    try:
        import uvloop  # noqa: F401

        res["client_loop"] = "uvloop"
    except ImportError:
        res["client_loop"] = "asyncio"
    flags = ["--threads", str(a.threads)]
    res["stand_ins"] = missing_default_models()
    for task in res["stand_ins"]:
        flags += ["--model", f"{task}=k2q-copynet-small"]
        print(f"warning: the shipped {task} model is not in this checkout; serving k2q-copynet-small for it "
              "(idle during the test)", file=sys.stderr, flush=True)

    print("pysynth serve (batching) ...", file=sys.stderr, flush=True)
    with Server(*flags) as s:
        qs, dropped = valid_only(s, keyword_queries(a.queries, a.seed))
        res["queries"] = {"valid": len(qs), "dropped": dropped, "examples": qs[:5]}
        print(f"  {len(qs)} keyword queries ({dropped or 'none'} dropped), e.g. {qs[:3]}", file=sys.stderr, flush=True)
        bodies = [json.dumps({"keywords": q}).encode() for q in qs]
        res["batching"] = run_levels(s.url, s.proc.pid, bodies, levels, a.requests, a.max_s, metrics=True)
        if 1 in levels:
            res["paired_c1"] = p = paired_c1(s.url, qs, a.threads, a.requests)
            print(f"  c=1 paired with in-process: p50 {p['server_p50_ms']:.2f} ms over HTTP, "
                  f"{p['inproc_p50_ms']:.2f} ms in-process", file=sys.stderr, flush=True)
        print("  faults ...", file=sys.stderr, flush=True)
        res["faults"] = faults(s, bodies[0], a.slow_s)
    print("pysynth serve --no-batching ...", file=sys.stderr, flush=True)
    with Server(*flags, "--no-batching") as s:
        res["nobatch"] = run_levels(s.url, s.proc.pid, bodies, levels, a.requests, a.max_s, metrics=True)
    if not a.skip_torch:
        print("FastAPI + torch generate() per request ...", file=sys.stderr, flush=True)
        ts = TorchServer(a.threads)
        try:
            res["torch"] = run_levels(ts.url, ts.proc.pid, bodies, levels, a.requests, a.max_s, metrics=False)
        finally:
            ts.stop()
    print("in-process ...", file=sys.stderr, flush=True)
    res["inproc"] = {"onnx": in_process(qs, "onnx", a.threads)}
    if not a.skip_torch:
        res["inproc"]["torch"] = in_process(qs, "torch", a.threads)
    print(f"  onnxruntime greedy p50 {res['inproc']['onnx']['p50_ms']:.2f} ms", file=sys.stderr, flush=True)
    if a.soak:
        print(f"soak: {a.soak} requests at c=64 ...", file=sys.stderr, flush=True)
        res["soak"] = soak(bodies, a.soak, flags, a.soak_max_s)
    res["seconds"] = time.time() - t_all
    res["machine"]["load_end"] = os.getloadavg()
    md = report(res, a, hi)
    print(md)
    out = Path(a.out) if a.out else HERE / "RESULTS_serve.md"
    if a.write_results or a.out:
        notes = ""
        if out.exists():
            old = out.read_text()
            i = old.find("\n## Notes")
            notes = old[i:] if i >= 0 else ""
        out.write_text(md + notes)
        print(f"wrote {out}", file=sys.stderr, flush=True)
    if a.json:
        Path(a.json).write_text(json.dumps(res, indent=1, default=str))
    return 0 if res["clean"] else 1  # targets missed are reported, not failures


def _f(x: float, d: int = 2) -> str:
    return f"{x:.{d}f}"


def report(res: dict, a, hi: int) -> str:
    m = res["machine"]
    cmd = "python bench/serve_load.py " + " ".join(sys.argv[1:])
    names = {"batching": "pysynth serve (batching)", "nobatch": "pysynth serve --no-batching",
             "torch": "FastAPI + torch, generate() per request"}
    lines = [
        "# Serving: `pysynth serve` under load", "",
        f"Command: `{cmd.strip()}`", "",
        f"Machine: `nproc` = {m['nproc']}, {m['cpu']}, Python {m['python']}, {m['system']}; load average "
        f"{m['load'][0]:.2f} at the start, {m['load_end'][0]:.2f} at the end (a shared machine: other jobs ran "
        f"beside this one). Date: {res['date']}. Whole run: {res['seconds']:.0f} s.", "",
        f"Every model with {res['threads']} intra-op thread(s) (`pysynth serve --threads {res['threads']}`, "
        f"`torch.set_num_threads({res['threads']})` in the baseline and in-process); the client "
        f"(asyncio streams on {res['client_loop']}, closed loop over keep-alive connections) runs on the same "
        f"cores. Requests: one greedy question, `POST /v1/k2q {{\"keywords\": q}}`, over "
        f"{res['queries']['valid']} keyword queries from the bundled K2Q questions (first 3-5 content words, "
        f"seed {a.seed}; e.g. " + ", ".join(f"`{q}`" for q in res["queries"]["examples"][:3]) + "); "
        f"dropped for a non-200 answer: {res['queries']['dropped'] or 'none'}. {res['requests']} requests per "
        "level after a warm-up of 200." + (
            " Models not in this checkout, served by `k2q-copynet-small` (loaded, never called): "
            + ", ".join(f"`--model {t}=k2q-copynet-small`" for t in res["stand_ins"]) + "."
            if res["stand_ins"] else ""), "",
        "## Throughput and latency", "",
        "| server | concurrency | requests | req/s | p50 ms | p95 ms | p99 ms | errors | server CPU ms/req "
        "| client CPU ms/req | mean inputs per model call |",
        "|---|---|---|---|---|---|---|---|---|---|---|"]
    for key in ("batching", "nobatch", "torch"):
        for c, r in res.get(key, {}).items():
            mb = _f(r["batch"]["mean"], 1) if "batch" in r else "-"
            lines.append(f"| {names[key]} | {c} | {r['requests']} | {r['rps']:.1f} | {_f(r['p50_ms'])} | "
                         f"{_f(r['p95_ms'])} | {_f(r['p99_ms'])} | {r['errors']} | {_f(r['server_cpu_ms'])} | "
                         f"{_f(r['client_cpu_ms'])} | {mb} |")
    ip = res["inproc"]
    lines += ["", "In-process, one question per call (same queries, same threads):", "",
              "| decoder | calls | p50 ms | p95 ms | questions/s |", "|---|---|---|---|---|",
              f"| onnxruntime `Generator.generate([q])` | {ip['onnx']['calls']} | {_f(ip['onnx']['p50_ms'])} | "
              f"{_f(ip['onnx']['p95_ms'])} | {ip['onnx']['per_s']:.0f} |"]
    if "torch" in ip:
        lines.append(f"| torch `Generator.generate([q])` | {ip['torch']['calls']} | {_f(ip['torch']['p50_ms'])} | "
                     f"{_f(ip['torch']['p95_ms'])} | {ip['torch']['per_s']:.0f} |")
    lines += ["", f"onnxruntime on batches of 32 in-process: {ip['onnx']['batch32_per_s']:.0f} questions/s "
                  "(the model's ceiling here, with no HTTP and no client on the cores)."]

    b, nb = res["batching"], res["nobatch"]
    targets = {}
    rows = []
    if hi in b and hi in nb:
        x = b[hi]["rps"] / nb[hi]["rps"]
        targets["batching/no-batching"] = x >= 3
        rows.append(f"| throughput at c={hi}: batching / --no-batching | >= 3x | {x:.2f}x "
                    f"({b[hi]['rps']:.0f} / {nb[hi]['rps']:.0f} req/s) | {'yes' if x >= 3 else '**no**'} |")
    if "torch" in res and hi in b:
        x = b[hi]["rps"] / res["torch"][hi]["rps"]
        targets["batching/torch"] = x >= 5
        rows.append(f"| throughput at c={hi}: batching / FastAPI + torch | >= 5x | {x:.2f}x "
                    f"({b[hi]['rps']:.0f} / {res['torch'][hi]['rps']:.1f} req/s) | {'yes' if x >= 5 else '**no**'} |")
    if "paired_c1" in res:
        p = res["paired_c1"]
        x = p["server_p50_ms"] / p["inproc_p50_ms"]
        targets["p50 c=1 / in-process"] = x <= 2
        rows.append(f"| p50 at c=1 (batching server) / in-process onnxruntime p50, measured in alternating blocks "
                    f"of 25 ({p['requests']} each) | <= 2x | {x:.2f}x ({_f(p['server_p50_ms'])} / "
                    f"{_f(p['inproc_p50_ms'])} ms) | {'yes' if x <= 2 else '**no**'} |")
    if 1 in b:
        x = b[1]["p50_ms"] / ip["onnx"]["p50_ms"]
        rows.append(f"| the same from the c=1 level and the in-process table (minutes apart) | - | {x:.2f}x "
                    f"({_f(b[1]['p50_ms'])} / {_f(ip['onnx']['p50_ms'])} ms) | - |")
    lines += ["", "## Targets", "", "| ratio | target | measured | met |", "|---|---|---|---|", *rows]

    if hi in b:
        h = b[hi]["batch"]
        dist = ", ".join(f"<= {le}: {n}" for le, n in h["buckets"].items())
        lines += ["", f"## Batch sizes at c={hi} (`GET /metrics`, `pysynth_batch_size`, read before and after the "
                      "level)", "",
                  f"{h['calls']} model calls for {h['inputs']} inputs: **{h['mean']:.1f} inputs per call** on "
                  f"average; calls per histogram bucket: {dist}. At the other levels: "
                  + ", ".join(f"c={c}: {r['batch']['mean']:.2f}" for c, r in b.items() if c != hi) + "."]

    if "soak" in res:
        s = res["soak"]
        lines += ["", "## Memory", "",
                  f"A fresh batching server; {s['warmup_requests']} warm-up requests at c=64, then "
                  f"{s['requests']:,} requests at c=64 in {s['wall_s']:.0f} s ({s['rps']:.0f} req/s, p99 "
                  f"{s['p99_ms']:.0f} ms), VmRSS every 5 s ({len(s['samples'])} samples). Errors: "
                  f"{s['errors'] + s['warmup_errors']}. Alive at the end: {'yes' if s['alive'] else '**no**'}.", "",
                  "| RSS at start (ready, no request yet) | after warm-up | end | max | end - after warm-up |",
                  "|---|---|---|---|---|",
                  f"| {s['rss_start_mb']:.1f} MiB | {s['rss_warm_mb']:.1f} MiB | {s['rss_end_mb']:.1f} MiB | "
                  f"{s['rss_max_mb']:.1f} MiB | {s['rss_end_mb'] - s['rss_warm_mb']:+.1f} MiB |"]

    f = res["faults"]
    counts: Dict[int, int] = {}
    for _, _, st in f["cases"]:
        counts[st] = counts.get(st, 0) + 1
    bad_ok = all(_ok(w, st) for _, w, st in f["cases"])
    lines += ["", "## Bad requests and slow clients (batching server, after its levels)", "",
              "Each case on its own connection, raw bytes. The check: a 4xx for every bad request, never a 5xx; "
              "`documented`: the status the server's docs give for it (`pysynth/serve/app.py`).",
              "", "| case | documented | status | 4xx | as documented |", "|---|---|---|---|---|"]
    lines += [f"| {n} | {w} | {st} | {('yes' if _ok(w, st) else '**no**') if not w.startswith('2') else '(valid)'} "
              f"| {'yes' if _documented(w, st) else '**no**'} |" for n, w, st in f["cases"]]
    lines += ["", "Statuses: " + ", ".join(f"{k}: {v}" for k, v in sorted(counts.items())) + ".", ""]
    sl = f["slow"]
    lines += [f"For {a.slow_s:.0f} s: one client sending the last {int(a.slow_s / 0.2)} bytes of a valid request's "
              "body one byte every 0.2 s (padded with spaces), one sending its request line and headers one byte "
              "every 0.2 s, 20 connections that send nothing, one that stops 5 bytes before the end of its body, "
              "and 20 that send a valid request and hang up before the answer; meanwhile 4 other connections send "
              "valid requests in a closed loop.", "",
              "| check | result |", "|---|---|",
              f"| slow body: status of its answer | {sl.get('slow body: status')} (after "
              f"{sl.get('slow body: seconds')} s) |",
              f"| slow headers: status of its answer | {sl.get('slow headers: status')} |",
              f"| silent connections closed by the server | {sl.get('silent connections closed by the server')} |",
              f"| stalled body closed by the server | {sl.get('stalled body closed by the server')} |",
              f"| valid requests meanwhile: count, errors | {sl['probe requests']}, {sl['probe errors']} |",
              f"| valid requests meanwhile: p50, max latency | {sl['probe p50 ms']} ms, {sl['probe max ms']} ms |",
              f"| a valid request afterwards | {f['valid request after']} |",
              f"| 5xx answers counted by `GET /metrics` over the server's life | {f['5xx in /metrics']} |",
              f"| server process alive at the end | {'yes' if f['alive'] else '**no**'} |"]
    prompt = sl["probe errors"] == 0 and sl["probe requests"] > 0 and sl["probe max ms"] < 1000
    errors = sum(r["errors"] for k in ("batching", "nobatch", "torch") for r in res.get(k, {}).values())
    errors += res["paired_c1"]["errors"] if "paired_c1" in res else 0
    errors += (res["soak"]["errors"] + res["soak"]["warmup_errors"]) if "soak" in res else 0
    res["targets"] = targets
    res["clean"] = bool(bad_ok and prompt and f["alive"] and f["5xx in /metrics"] == 0 and errors == 0
                        and f["valid request after"] == 200)
    lines += ["", f"Checks: valid requests without error: {'yes' if errors == 0 else f'**no** ({errors})'}; every "
                  f"bad request a 4xx: {'yes' if bad_ok else '**no**'}; valid requests answered "
                  f"promptly (< 1 s) beside slow clients: {'yes' if prompt else '**no**'}; server alive: "
                  f"{'yes' if f['alive'] else '**no**'}.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
