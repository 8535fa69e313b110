"""``pysynth serve`` under hostile clients (issue 27): idle and trickling connections, and the
latency of the next request after one that timed out.

    .venv/bin/python bench/serve_hostile.py idle [--conns 2100] [--baseline]
    .venv/bin/python bench/serve_hostile.py cancel [--questions 16 --beams 32 --timeout 3]

``idle``: opens ``--conns`` connections to a ``pysynth serve --tasks wellformed`` (the default
timeouts and ``--max-connections 2048``), silent ones and header tricklers (one byte a second),
and polls ``GET /health`` on a fresh connection every 0.25 s until it answers 200: prints the
seconds from the opening of the connections to the first 200 and the statuses seen before.
``--baseline`` does the same against the same application on plain uvicorn (no idle/read
timeouts: the server before issue 27), for 30 s.

``cancel``: ``pysynth serve --tasks paraphrase --timeout T``; one big paraphrase request (Q
questions, beams B = groups B) that times out, then at once a small one: prints the small
request's latency alone, right after the timeout, and the big request's full run time (a
server with a long timeout), so the thread the big one would have held is visible. Loopback only.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests" / "serve"))
from _server import Server  # noqa: E402


def _health(host: str, port: int, timeout: float = 2.0) -> str:
    try:
        with socket.create_connection((host, port), timeout=timeout) as s:
            s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            data = s.recv(4096)
        return data[9:12].decode() if data.startswith(b"HTTP/1.1 ") else ("closed" if not data else "garbage")
    except OSError as exc:
        return type(exc).__name__


def _hammer(host: str, port: int, conns: int, trickle: float, limit_s: float) -> dict:
    """Open ``conns`` sockets (a ``trickle`` share of them sends a header byte a second), then poll
    /health; the seconds to its first 200."""
    socks, t0 = [], time.perf_counter()
    for _ in range(conns):
        try:
            socks.append(socket.create_connection((host, port), timeout=5))
        except OSError:
            break
    opened = time.perf_counter() - t0
    n_trickle = int(len(socks) * trickle)
    stop = threading.Event()

    def trickler():
        for s in socks[:n_trickle]:
            try:
                s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Slow: ")
            except OSError:
                pass
        while not stop.wait(1.0):
            for s in socks[:n_trickle]:
                try:
                    s.sendall(b"a")
                except OSError:
                    pass

    threading.Thread(target=trickler, daemon=True).start()
    seen, first = {}, None
    while time.perf_counter() - t0 < limit_s:
        st = _health(host, port)
        seen[st] = seen.get(st, 0) + 1
        if st == "200":
            first = time.perf_counter() - t0
            break
        time.sleep(0.25)
    stop.set()
    alive = 0
    for s in socks:
        try:
            s.setblocking(False)
            s.recv(1, socket.MSG_PEEK)  # data (the server's 408) or b"" (closed): the server let go
        except BlockingIOError:
            alive += 1
        except OSError:
            pass
        s.close()
    return {"connections": len(socks), "opened_s": round(opened, 2), "tricklers": n_trickle,
            "first_200_s": None if first is None else round(first, 2), "statuses_before": seen,
            "still_open_at_end": alive}


def _baseline_server(conns_limit: int):
    """The same application on plain uvicorn (no idle/read timeouts), in this process."""
    import uvicorn

    from pysynth.serve import ServeConfig, create_app

    app = create_app(ServeConfig(models={"wellformed": None}, threads=1))
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    srv = uvicorn.Server(uvicorn.Config(app, log_level="critical", limit_concurrency=conns_limit,
                                        timeout_keep_alive=5))
    threading.Thread(target=srv.run, kwargs={"sockets": [sock]}, daemon=True).start()
    port = sock.getsockname()[1]
    for _ in range(600):
        if _health("127.0.0.1", port) == "200":
            break
        time.sleep(0.1)
    return srv, port


def idle(args) -> dict:
    out = {}
    with Server("--threads", "1", "--tasks", "wellformed", "--max-connections", "2048") as s:
        host, port = s.url.removeprefix("http://").rsplit(":", 1)
        out["silent"] = _hammer(host, int(port), args.conns, 0.0, 60)
        time.sleep(6)
        out["trickle"] = _hammer(host, int(port), args.conns, 1.0, 60)
    if args.baseline:
        srv, port = _baseline_server(2048)
        out["baseline_plain_uvicorn_silent"] = _hammer("127.0.0.1", port, args.conns, 0.0, 30)
        srv.should_exit = True
    return out


def cancel(args) -> dict:
    big = {"questions": [f"how many animals can be seen in picture {i}?" for i in range(args.questions)],
           "beams": args.beams, "groups": args.beams}
    small = {"questions": "What color is the keyboard?", "beams": 8, "groups": 4}
    out = {"big": {"questions": args.questions, "beams": args.beams, "groups": args.beams}}
    common = ("--threads", str(args.threads), "--tasks", "paraphrase", "--max-hypotheses", "10000000")
    with Server(*common, "--timeout", str(args.timeout)) as s:
        t = time.perf_counter()
        assert s.post("/v1/paraphrase", small)[0] == 200
        out["small_alone_s"] = [round(time.perf_counter() - t, 3)]
        for _ in range(2):
            t = time.perf_counter()
            s.post("/v1/paraphrase", small)
            out["small_alone_s"].append(round(time.perf_counter() - t, 3))
        t = time.perf_counter()
        status, res = s.post("/v1/paraphrase", big, timeout=600)
        out["big_status"], out["big_answer_s"] = status, round(time.perf_counter() - t, 3)
        t = time.perf_counter()
        status, _ = s.post("/v1/paraphrase", small, timeout=600)
        out["small_after_timeout_s"], out["small_after_status"] = round(time.perf_counter() - t, 3), status
        _, metrics = s.get("/metrics")
        out["dropped_metric"] = [ln for ln in metrics.splitlines() if ln.startswith("pysynth_dropped_requests_total{")]
    if args.full:
        with Server(*common, "--timeout", "600") as s:
            t = time.perf_counter()
            status, _ = s.post("/v1/paraphrase", big, timeout=900)
            out["big_full_run_s"], out["big_full_status"] = round(time.perf_counter() - t, 3), status
    return out


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="cmd", required=True)
    a = sub.add_parser("idle")
    a.add_argument("--conns", type=int, default=2100)
    a.add_argument("--baseline", action="store_true")
    c = sub.add_parser("cancel")
    c.add_argument("--questions", type=int, default=16)
    c.add_argument("--beams", type=int, default=32)
    c.add_argument("--timeout", type=float, default=3.0)
    c.add_argument("--threads", type=int, default=2)
    c.add_argument("--full", action="store_true", help="also time the big request run to its end")
    args = p.parse_args()
    print(f"# {time.strftime('%Y-%m-%d %H:%M')} load {os.getloadavg()[0]:.2f} cores {os.cpu_count()} "
          f"ulimit -n {__import__('resource').getrlimit(__import__('resource').RLIMIT_NOFILE)[0]}", flush=True)
    print(json.dumps(idle(args) if args.cmd == "idle" else cancel(args), indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
