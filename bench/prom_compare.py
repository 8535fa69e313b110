"""Issue 28: the server's hand-written Prometheus metrics (``pysynth.serve.prom``) vs ``prometheus_client``
on the serving path, measured on loopback.

Two tiny ASGI apps (Starlette on uvicorn, 127.0.0.1, one process each, in turn) hold the server's
metrics (``pysynth_requests_total`` by endpoint and status, ``pysynth_request_seconds`` histogram,
``pysynth_batch_size`` histogram, ``pysynth_queue_depth`` gauge, ``pysynth_dropped_requests_total``)
in one library or the other. ``POST /work`` does what every served request does to them (one counter
increment, two histogram observations); ``GET /metrics`` renders them. A client on one keep-alive
connection sends ``--requests`` POSTs then ``--scrapes`` GETs to each app and reports the median and
p90 latency of each; the in-process cost of the same increment and render is timed too.

    python bench/prom_compare.py --requests 3000 --scrapes 300
"""
from __future__ import annotations

import argparse
import http.client
import json
import socket
import statistics
import subprocess
import sys
import time

APP = r'''
import sys, time
from starlette.applications import Starlette
from starlette.responses import PlainTextResponse, JSONResponse
from starlette.routing import Route
KIND = sys.argv[1]
LAT = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]
BATCH = [1, 2, 4, 8, 16, 32, 64, 128, 256]
if KIND == "pysynth":
    from pysynth.serve.prom import Counter, Gauge, Histogram, render
    req = Counter("pysynth_requests_total", "HTTP requests by endpoint and status code")
    lat = Histogram("pysynth_request_seconds", "request latency (seconds) by endpoint", LAT)
    bat = Histogram("pysynth_batch_size", "inputs per model call", BATCH)
    q = Gauge("pysynth_queue_depth", "inputs waiting for a model"); q.track(lambda: 0, model="k2q")
    drop = Counter("pysynth_dropped_requests_total", "dropped"); drop.track(lambda: 0, model="k2q")
    def inc(t):
        req.inc(endpoint="/v1/k2q", status="200"); lat.observe(t, endpoint="/v1/k2q"); bat.observe(4, model="k2q")
    def scrape():
        return render([req, lat, bat, q, drop])
else:
    import prometheus_client as pc
    reg = pc.CollectorRegistry()
    req = pc.Counter("pysynth_requests", "HTTP requests by endpoint and status code", ["endpoint", "status"], registry=reg)
    lat = pc.Histogram("pysynth_request_seconds", "request latency (seconds) by endpoint", ["endpoint"], buckets=LAT, registry=reg)
    bat = pc.Histogram("pysynth_batch_size", "inputs per model call", ["model"], buckets=BATCH, registry=reg)
    q = pc.Gauge("pysynth_queue_depth", "inputs waiting for a model", ["model"], registry=reg)
    q.labels(model="k2q").set_function(lambda: 0)
    drop = pc.Counter("pysynth_dropped_requests", "dropped", ["model"], registry=reg); drop.labels(model="k2q")
    def inc(t):
        req.labels(endpoint="/v1/k2q", status="200").inc(); lat.labels(endpoint="/v1/k2q").observe(t)
        bat.labels(model="k2q").observe(4)
    def scrape():
        return pc.generate_latest(reg).decode()
async def work(request):
    t = time.perf_counter(); inc(time.perf_counter() - t + 0.003); return JSONResponse({"ok": 1})
async def metrics(request):
    return PlainTextResponse(scrape(), media_type="text/plain; version=0.0.4")
n = 20000
t = time.perf_counter()
for _ in range(n): inc(0.003)
inc_us = (time.perf_counter() - t) / n * 1e6
t = time.perf_counter()
for _ in range(2000): scrape()
render_us = (time.perf_counter() - t) / 2000 * 1e6
print(f"INPROC {inc_us:.3f} {render_us:.1f}", flush=True)
app = Starlette(routes=[Route("/work", work, methods=["POST"]), Route("/metrics", metrics)])
import uvicorn
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="error", access_log=False)
'''


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def measure(kind: str, requests: int, scrapes: int) -> dict:
    port = _free_port()
    p = subprocess.Popen([sys.executable, "-c", APP, kind, str(port)], stdout=subprocess.PIPE, text=True)
    try:
        line = p.stdout.readline().split()  # type: ignore[union-attr]
        inc_us, render_us = float(line[1]), float(line[2])
        deadline = time.time() + 60
        while True:
            try:
                c = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
                c.request("GET", "/metrics")
                c.getresponse().read()
                break
            except OSError:
                if time.time() > deadline:
                    raise
                time.sleep(0.2)
        post, get = [], []
        for _ in range(requests):
            t = time.perf_counter()
            c.request("POST", "/work", body=b"{}", headers={"Content-Type": "application/json"})
            c.getresponse().read()
            post.append(time.perf_counter() - t)
        size = 0
        for _ in range(scrapes):
            t = time.perf_counter()
            c.request("GET", "/metrics")
            size = len(c.getresponse().read())
            get.append(time.perf_counter() - t)
    finally:
        p.terminate()
        p.wait(10)

    def q(xs, f):
        return round(statistics.quantiles(xs, n=10)[8] * 1e6, 1) if f == "p90" else round(statistics.median(xs) * 1e6, 1)

    return {"impl": kind, "inproc_increment_us": round(inc_us, 3), "inproc_render_us": round(render_us, 1),
            "post_median_us": q(post, "med"), "post_p90_us": q(post, "p90"), "scrape_median_us": q(get, "med"),
            "scrape_p90_us": q(get, "p90"), "scrape_bytes": size}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=3000)
    ap.add_argument("--scrapes", type=int, default=300)
    ap.add_argument("--rounds", type=int, default=2, help="alternate the two apps this many times")
    args = ap.parse_args(argv)
    rows = []
    for _ in range(args.rounds):
        for kind in ("pysynth", "prometheus_client"):
            rows.append(measure(kind, args.requests, args.scrapes))
            print(json.dumps(rows[-1]), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
