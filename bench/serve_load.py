"""Load test of ``pysynth serve`` on loopback: throughput and latency, batching on vs off, vs the
obvious alternative (a FastAPI endpoint calling the torch model per request), vs calling the
onnxruntime decoder in-process; memory over a long run; bad requests and slow clients.

    python bench/serve_load.py [--requests 3000] [--soak 100000] [--threads 1] [--write-results]
    python bench/serve_load.py --quick            # a smoke run (a minute)

Every server is a fresh process on 127.0.0.1 (a free port). The client is a closed loop written
on asyncio streams (HTTP/1.1 keep-alive, no dependencies): C connections, each sending its next
request when the previous answer is in, for a fixed number of requests and at most ``--max-s``
seconds. Requests: one greedy question (``{"keywords": q}``) for keyword queries made from the
bundled K2Q questions (content words, fixed seed). The client shares the 2 cores with the
server, the same for every configuration. Results: printed as markdown, and written to
``bench/RESULTS_serve.md`` with ``--write-results``.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import os
import platform
import random
import re
import socket
import statistics
import subprocess
import sys
import tempfile
import textwrap
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(ROOT / "tests" / "serve"))

from _server import Server  # noqa: E402

STOP = set("what which who whom whose when where why how is are was were do does did can could should would will "
           "the a an of in on at to for from by with and or is it its this that be been i you my your me we our "
           "there their they he she his her as if not no".split())


# ------------------------------------------------------------------------------ workload

def keyword_queries(n: int, seed: int = 0) -> list:
    """Keyword queries from the bundled K2Q questions: their first 2-5 content words."""
    from pysynth.data import k2q_demo

    rng = random.Random(seed)
    qs = []
    for row in k2q_demo():
        words = [w for w in re.findall(r"[a-z0-9]+", row["question"].lower()) if w not in STOP]
        if len(words) >= 2:
            qs.append(" ".join(words[: rng.randint(2, 5)]))
    rng.shuffle(qs)
    return qs[:n]


def valid_queries(url_server: Server, qs: list) -> list:
    """Drop the queries the model refuses (422: every word outside its vocabulary)."""
    keep = []
    for q in qs:
        status, _ = url_server.post("/v1/k2q", {"keywords": q})
        if status == 200:
            keep.append(q)
    return keep


# ------------------------------------------------------------------------------ the client

async def _request(reader, writer, host: str, path: str, body: bytes):
    writer.write(b"POST %s HTTP/1.1\r\nHost: %s\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n"
                 % (path.encode(), host.encode(), len(body)) + body)
    await writer.drain()
    head = await reader.readuntil(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    m = re.search(rb"(?i)content-length:\s*(\d+)", head)
    data = await reader.readexactly(int(m.group(1))) if m else b""
    return status, data


async def closed_loop(url: str, bodies: list, concurrency: int, total: int, max_s: float, path: str = "/v1/k2q"):
    """``total`` requests over ``concurrency`` keep-alive connections; returns (latencies s,
    statuses, wall s)."""
    host, port = url.removeprefix("http://").rsplit(":", 1)
    lat, codes, counter = [], [], [0]
    t_end = time.perf_counter() + max_s

    async def conn(k):
        reader, writer = await asyncio.open_connection(host, int(port))
        try:
            while counter[0] < total and time.perf_counter() < t_end:
                i = counter[0]
                counter[0] += 1
                t0 = time.perf_counter()
                status, _ = await _request(reader, writer, f"{host}:{port}", path, bodies[i % len(bodies)])
                lat.append(time.perf_counter() - t0)
                codes.append(status)
        finally:
            writer.close()

    t0 = time.perf_counter()
    await asyncio.gather(*(conn(k) for k in range(concurrency)))
    return lat, codes, time.perf_counter() - t0


def pct(xs, q):
    xs = sorted(xs)
    return xs[min(len(xs) - 1, int(round(q / 100 * (len(xs) - 1))))] if xs else float("nan")


def run_levels(url: str, bodies: list, levels, requests: int, max_s: float) -> dict:
    out = {}
    asyncio.run(closed_loop(url, bodies, 8, 64, 30))  # warm-up
    for c in levels:
        lat, codes, wall = asyncio.run(closed_loop(url, bodies, c, requests, max_s))
        ok = sum(1 for s in codes if s == 200)
        out[c] = {"requests": len(codes), "errors": len(codes) - ok, "rps": len(codes) / wall,
                  "p50_ms": 1e3 * pct(lat, 50), "p95_ms": 1e3 * pct(lat, 95), "p99_ms": 1e3 * pct(lat, 99)}
        print(f"  c={c:<3} {out[c]['rps']:8.1f} req/s  p50 {out[c]['p50_ms']:7.2f} ms  p95 {out[c]['p95_ms']:7.2f}"
              f"  p99 {out[c]['p99_ms']:7.2f}  errors {out[c]['errors']}", flush=True)
    return out


# ------------------------------------------------------------------------------ the alternatives

TORCH_APP = textwrap.dedent('''
    """What a user would write first: FastAPI, the torch model, one generate() per request."""
    import os
    import torch
    from fastapi import FastAPI
    from pydantic import BaseModel
    from pysynth.models.generate import Generator

    torch.set_num_threads(int(os.environ.get("THREADS", "1")))
    gen = Generator.load("k2q-copynet-small", backend="torch", device="cpu")
    app = FastAPI()

    class Req(BaseModel):
        keywords: str

    @app.post("/v1/k2q")
    def k2q(req: Req):
        g = gen.generate([req.keywords], method="greedy", beam=1, n=1)[0]
        return {"results": [{"keywords": req.keywords, "questions": [{"text": t, "score": s}
                for t, s in zip(g.texts, g.scores)]}]}

    @app.get("/ready")
    def ready():
        return {"ready": True}
''')


class TorchServer:
    """The torch baseline on uvicorn (its default settings) in a subprocess."""

    def __init__(self, threads: int):
        self.dir = tempfile.TemporaryDirectory()
        Path(self.dir.name, "torch_app.py").write_text(TORCH_APP)
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()
        self.url = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen([sys.executable, "-m", "uvicorn", "torch_app:app", "--port", str(port),
                                      "--log-level", "warning", "--no-access-log"], cwd=self.dir.name,
                                     env=dict(os.environ, THREADS=str(threads)), stdout=subprocess.DEVNULL,
                                     stderr=subprocess.DEVNULL)
        import urllib.request

        for _ in range(600):
            try:
                urllib.request.urlopen(self.url + "/ready", timeout=1).read()
                return
            except OSError:
                time.sleep(0.1)
        raise RuntimeError("the torch baseline did not start")

    def stop(self):
        self.proc.terminate()
        self.proc.wait(10)
        self.dir.cleanup()


def in_process_p50(queries: list, threads: int, n: int = 300) -> float:
    from pysynth.models.generate import Generator

    g = Generator.load("k2q-copynet-small", backend="onnx", device="cpu", threads=threads)
    for q in queries[:20]:
        g.generate([q], method="greedy", beam=1, n=1)
    lat = []
    for q in queries[:n]:
        t0 = time.perf_counter()
        g.generate([q], method="greedy", beam=1, n=1)
        lat.append(time.perf_counter() - t0)
    return 1e3 * statistics.median(lat)


# ------------------------------------------------------------------------------ memory, faults

def rss_mb(pid: int) -> float:
    with open(f"/proc/{pid}/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def soak(server: Server, bodies: list, n: int, max_s: float) -> dict:
    pid = server.proc.pid
    samples = [("start", rss_mb(pid))]
    done = {"lat": [], "codes": []}

    async def main():
        async def sampler():
            t0 = time.perf_counter()
            while True:
                await asyncio.sleep(5)
                samples.append((f"{time.perf_counter() - t0:.0f}s", rss_mb(pid)))

        task = asyncio.create_task(sampler())
        lat, codes, wall = await closed_loop(server.url, bodies, 64, n, max_s)
        task.cancel()
        done.update(lat=lat, codes=codes, wall=wall)

    asyncio.run(main())
    samples.append(("end", rss_mb(pid)))
    rss = [v for _, v in samples]
    after_warm = samples[2][1] if len(samples) > 2 else rss[0]
    return {"requests": len(done["codes"]), "errors": sum(1 for c in done["codes"] if c != 200),
            "rps": len(done["codes"]) / done["wall"], "rss_start_mb": rss[0], "rss_after_10s_mb": after_warm,
            "rss_end_mb": rss[-1], "rss_max_mb": max(rss), "samples": len(samples)}


def faults(server: Server) -> dict:
    bad = {
        "malformed JSON": b"{bad",
        "not an object": b"[1, 2]",
        "wrong type": json.dumps({"keywords": 5}).encode(),
        "empty keywords": json.dumps({"keywords": ""}).encode(),
        "empty list": json.dumps({"keywords": []}).encode(),
        "over-long input": json.dumps({"keywords": "x" * 5000}).encode(),
        "too many inputs": json.dumps({"keywords": ["honda"] * 500}).encode(),
        "n out of range": json.dumps({"keywords": "honda", "n": 99}).encode(),
        "unknown field": json.dumps({"keywords": "honda", "x": 1}).encode(),
        "out of vocabulary": json.dumps({"keywords": "qqzzv xxqzv"}).encode(),
        "lone surrogate": b'{"keywords": "a\\udcff"}',
        "oversized body (2 MB)": b'{"keywords": "' + b"a " * 1_000_000 + b'"}',
    }
    out = {}
    for name, body in bad.items():
        status, _ = server.request("POST", "/v1/k2q", body)
        out[name] = status
    ctype = server.request("POST", "/v1/k2q", b'{"keywords": "capital france"}',
                           headers={"Content-Type": "text/plain"})[0]
    out["text/plain content type (valid body)"] = ctype
    # slow and silent clients while valid requests go on
    host, port = server.url.removeprefix("http://").rsplit(":", 1)
    silent = [socket.create_connection((host, int(port))) for _ in range(20)]
    slow = socket.create_connection((host, int(port)))
    body = b'{"keywords": "capital france"}'
    slow.sendall(b"POST /v1/k2q HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % len(body))
    lat = []
    for i, b in enumerate(body):
        slow.sendall(bytes([b]))
        t0 = time.perf_counter()
        status, _ = server.post("/v1/k2q", {"keywords": "java hashmap"})
        lat.append(time.perf_counter() - t0)
        assert status == 200
        time.sleep(0.1)
    reply = slow.recv(4096)
    for s in silent + [slow]:
        s.close()
    out["slow client (1 byte / 0.1 s) answered"] = int(reply.split(b" ", 2)[1])
    out["others during slow + 20 silent clients: max latency ms"] = round(1e3 * max(lat), 2)
    out["server alive"] = server.alive()
    return out


# ------------------------------------------------------------------------------ main

def machine() -> str:
    cpu = "?"
    try:
        cpu = next(line.split(":", 1)[1].strip() for line in open("/proc/cpuinfo") if line.startswith("model name"))
    except (OSError, StopIteration):
        pass
    return f"{os.cpu_count()} cores ({cpu}), Python {platform.python_version()}, {platform.system()}"


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=3000, help="requests per concurrency level")
    ap.add_argument("--levels", default="1,8,64")
    ap.add_argument("--threads", type=int, default=1, help="onnxruntime / torch intra-op threads of every server")
    ap.add_argument("--soak", type=int, default=0, help="requests of the memory run at concurrency 64 (0: skip)")
    ap.add_argument("--max-s", type=float, default=120, help="cap per level, seconds")
    ap.add_argument("--quick", action="store_true", help="200 requests per level, a 2,000-request soak")
    ap.add_argument("--skip-torch", action="store_true")
    ap.add_argument("--write-results", action="store_true")
    ap.add_argument("--out", default=str(HERE / "RESULTS_serve.md"))
    a = ap.parse_args(argv)
    if a.quick:
        a.requests, a.soak = 200, a.soak or 2000
    levels = [int(x) for x in a.levels.split(",")]
    t_all = time.time()
    res: dict = {}
    flags = ["--threads", str(a.threads), "--max-queue", "4096"]
    print("workload ...", flush=True)
    with Server(*flags) as s:
        qs = valid_queries(s, keyword_queries(600))
    bodies = [json.dumps({"keywords": q}).encode() for q in qs]
    print(f"{len(qs)} keyword queries, e.g. {qs[:3]}", flush=True)
    res["inproc_p50_ms"] = in_process_p50(qs, a.threads)
    print(f"in-process onnxruntime greedy p50: {res['inproc_p50_ms']:.2f} ms", flush=True)
    print("pysynth serve (batching) ...", flush=True)
    with Server(*flags) as s:
        res["batching"] = run_levels(s.url, bodies, levels, a.requests, a.max_s)
        _, text = s.get("/metrics")
        tot = float(re.search(r'pysynth_batch_size_sum\{model="k2q"\} (\S+)', text).group(1))
        cnt = float(re.search(r'pysynth_batch_size_count\{model="k2q"\} (\S+)', text).group(1))
        res["mean_batch"] = tot / cnt
        res["faults"] = faults(s)
    print("pysynth serve --no-batching ...", flush=True)
    with Server(*flags, "--no-batching") as s:
        res["nobatch"] = run_levels(s.url, bodies, levels, a.requests, a.max_s)
    if not a.skip_torch:
        print("FastAPI + torch per request ...", flush=True)
        ts = TorchServer(a.threads)
        try:
            res["torch"] = run_levels(ts.url, bodies, levels, a.requests, a.max_s)
        finally:
            ts.stop()
    if a.soak:
        print(f"soak: {a.soak} requests at c=64 ...", flush=True)
        with Server(*flags) as s:
            res["soak"] = soak(s, bodies, a.soak, max_s=3600)
    res["seconds"] = time.time() - t_all
    md = report(res, a, levels)
    print(md)
    if a.write_results:
        Path(a.out).write_text(md)
        (HERE / "results").mkdir(exist_ok=True)
        (HERE / "results" / "serve_load.json").write_text(json.dumps(res, indent=1, default=str))
    return 0


def report(res: dict, a, levels) -> str:
    cmd = "python bench/serve_load.py " + " ".join(sys.argv[1:])
    hi = max(levels)
    lines = [
        "# Serving: `pysynth serve` under load", "",
        f"Command: `{cmd}` — {time.strftime('%Y-%m-%d')}, {machine()}; every server with "
        f"{a.threads} intra-op thread(s); the client on the same machine (loopback). Requests: one greedy question "
        "for a keyword query (`{\"keywords\": q}`), closed loop over keep-alive connections.", "",
        "| server | concurrency | req/s | p50 ms | p95 ms | p99 ms | errors |", "|---|---|---|---|---|---|---|"]
    names = {"batching": "pysynth serve (dynamic batching)", "nobatch": "pysynth serve --no-batching",
             "torch": "FastAPI + torch generate() per request"}
    for key in ("batching", "nobatch", "torch"):
        for c, r in res.get(key, {}).items():
            lines.append(f"| {names[key]} | {c} | {r['rps']:.1f} | {r['p50_ms']:.2f} | {r['p95_ms']:.2f} | "
                         f"{r['p99_ms']:.2f} | {r['errors']} |")
    b, nb = res["batching"], res["nobatch"]
    lines += ["", "| target | measured | met |", "|---|---|---|",
              f"| batching / no batching throughput at c={hi} >= 3x | {b[hi]['rps'] / nb[hi]['rps']:.2f}x | "
              f"{'yes' if b[hi]['rps'] >= 3 * nb[hi]['rps'] else 'no'} |"]
    if "torch" in res:
        t = res["torch"]
        lines.append(f"| batching / FastAPI+torch throughput at c={hi} >= 5x | {b[hi]['rps'] / t[hi]['rps']:.2f}x | "
                     f"{'yes' if b[hi]['rps'] >= 5 * t[hi]['rps'] else 'no'} |")
    if 1 in b:
        r = b[1]["p50_ms"] / res["inproc_p50_ms"]
        lines.append(f"| p50 at c=1 within 2x of the in-process onnxruntime call ({res['inproc_p50_ms']:.2f} ms) | "
                     f"{r:.2f}x | {'yes' if r <= 2 else 'no'} |")
    lines += ["", f"Mean inputs per model call in the batching server over its run: {res['mean_batch']:.1f}."]
    if "soak" in res:
        s = res["soak"]
        lines += ["", f"Memory over {s['requests']:,} requests at c=64 ({s['rps']:.0f} req/s, {s['errors']} errors): "
                      f"RSS {s['rss_start_mb']:.0f} MiB at start, {s['rss_after_10s_mb']:.0f} MiB after 10 s, "
                      f"{s['rss_end_mb']:.0f} MiB at the end, max {s['rss_max_mb']:.0f} MiB ({s['samples']} samples)."]
    lines += ["", "Bad requests and slow clients (status per case; none may be 5xx):", "",
              "| case | result |", "|---|---|"]
    lines += [f"| {k} | {v} |" for k, v in res["faults"].items()]
    lines += ["", f"Whole run: {res['seconds']:.0f} s.", ""]
    return "\n".join(lines)


if __name__ == "__main__":
    raise SystemExit(main())
