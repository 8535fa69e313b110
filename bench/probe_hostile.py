"""The hostile-but-fair probe of issue 27, rebuilt on the landed code: every CLI command x its numeric
flags x hostile values, hostile input files, bad ``--out`` paths (each case in its own child process
with a timeout), and a live loopback server (``pysynth serve`` on 127.0.0.1 only) under bounded
hostile HTTP. Each case is classified:

* ``crash`` -- a traceback, a signal, or an exit status outside 0/1/2;
* ``hang`` -- the case's timeout passed;
* ``5xx`` -- a server answer >= 500 (503 for a full queue or connection limit is ``shed``, not 5xx);
* ``path_leak`` -- a server answer holding an absolute path of this machine;
* ``wrong`` -- a silent wrong result: exit 0 with output that does not read back (or /dev/full
  "written"), files left in /dev beside a device output, a stderr of more than one error line, a 200 answer that is not the documented JSON
  or holds NaN/Infinity;
* ``ok`` -- a clean refusal (one ``pysynth: error:`` line, exit 1/2; a 4xx ``{"error": ...}``) or a
  correct result.

Resumable: results are appended to ``--out`` (JSON Lines, one per case, keyed by ``id``) and a rerun
skips the cases already there. Bounded: ``--minutes`` of wall time in all (default 25), CLI cases in
batches that each hold the shared CPU lock (``--lock``, default /work/locks/cpu when it exists),
parallelism 1.

    python bench/probe_hostile.py --out /tmp/probe.jsonl            # run (or resume)
    python bench/probe_hostile.py --out /tmp/probe.jsonl --report   # counts per class
"""
from __future__ import annotations

import argparse
import contextlib
import fcntl
import gzip
import json
import os
import re
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Tuple

ROOT = Path(__file__).resolve().parent.parent
HUGE = "9" * 3000
VALUES = ["0", "-1", "100000000000000000000", "1e20", "nan", "inf", HUGE, "", "abc"]

# (command, the flags it needs besides --in/--out, its numeric flags); {IN} is a one-row JSONL file
COMMANDS: List[Tuple[List[str], List[str], List[str]]] = [
    (["k2q", "keywords"], [], ["--m", "--seed", "--workers", "--lambda", "--alpha", "--beta"]),
    (["k2q", "synthesize"], ["--restart"], ["--m", "--n-results", "--keep", "--mu", "--weights", "--seed", "--workers",
                                            "--chunk-size", "--lambda", "--alpha", "--beta"]),
    (["k2q", "generate"], [], ["--beam", "--groups", "--diversity", "--seed", "--threads", "--alpha",
                               "--min-wellformed", "--min-similarity", "--no-repeat-ngram"]),
    (["k2q", "make-corpus"], ["--n", "3"], ["--n", "--seed"]),
    (["mqr", "rewrite"], [], ["--beam", "--threads", "--batch-size", "--min-wellformed", "--chunk-size",
                          "--no-repeat-ngram"]),
    (["quality", "wellformed"], [], ["--threads"]),
    (["paraphrase", "generate"], [], ["--beam", "--groups", "--diversity", "--unknown-penalty", "--length-penalty",
                                      "--threads", "--batch-size", "--seed", "--min-similarity",
                                      "--no-repeat-ngram"]),
    (["qagen", "generate"], [], ["--spans", "--beam", "--margin", "--neg-fraction", "--seed", "--threads",
                                 "--batch-size", "--answers-per-context", "--max-context-chars", "--min-wellformed",
                                 "--no-repeat-ngram"]),
    (["dup", "pairs"], [], ["--beam", "--threads", "--seed", "--workers", "--no-repeat-ngram"]),
    (["index", "build"], [], ["--workers"]),
    (["score"], [], ["--workers"]),
    (["report"], [], ["--seed"]),
    (["serve"], ["--host", "127.0.0.1", "--port", "{BUSY}"], ["--threads", "--timeout", "--max-batch", "--max-inputs", "--max-body-bytes",
                                  "--max-context-chars", "--max-hypotheses"]),
]

#: a port the probe keeps bound: ``pysynth serve`` cases with accepted values fail to bind at once (as root
#: any port, even 1, would bind, and the server would run until the case's timeout)
BUSY_PORT = ["0"]

ROW = {"question": "how do i fix a flat tire", "keywords": "flat tire fix", "id": 1,
       "context": "Oxygen was discovered by Carl Wilhelm Scheele in Uppsala in 1773.",
       "title": "How do I fix a flat tire?", "body": "My bike tire is flat, how do I fix it?", "text": "a flat tire"}


# ------------------------------------------------------------------------------------------- cases

def _io_args(cmd: List[str], inp: str, out: str) -> List[str]:
    if cmd == ["score"]:
        return ["--hyp", inp, "--ref", inp] + (["--out", out] if out else [])
    if cmd == ["serve"]:
        return []
    if cmd == ["k2q", "make-corpus"]:
        return ["--out", out]
    if cmd == ["report"]:
        return ["--in", inp, "--out", out + ".html"]
    if cmd == ["index", "build"]:
        return ["--in", inp, "--out", out + ".index"]
    return ["--in", inp, "--out", out]


def cases(work: Path) -> Iterator[dict]:
    """Every case, in a fixed order (ids are stable across reruns)."""
    row = work / "row.jsonl"
    txt = work / "one.txt"
    for cmd, need, flags in COMMANDS:
        inp = str(txt if cmd == ["score"] else row)
        for flag in flags:
            for v in VALUES:
                vid = v if len(v) < 30 else f"{len(v)}digits"
                out = str(work / "out" / f"{'_'.join(cmd)}{flag}{vid}.jsonl")
                need2 = [x for x in need if not (x == flag or (need and need[0] == flag))]
                if cmd == ["k2q", "make-corpus"] and flag == "--n":
                    need2 = []
                need2 = [BUSY_PORT[0] if x == "{BUSY}" else x for x in need2]
                yield {"id": f"cli:{' '.join(cmd)} {flag} {vid}", "kind": "cli", "out": out,
                       "argv": cmd + need2 + _io_args(cmd, inp, out) + [f"{flag}={v}"]}
    files = {
        "empty": b"", "bom-only": b"\xef\xbb\xbf", "cut-bom": b"\xef\xbb", "binary": bytes(range(256)) * 4,
        "cut-gzip.jsonl.gz": gzip.compress(json.dumps(ROW).encode() * 50)[:40],
        "plain-as.jsonl.gz": json.dumps(ROW).encode() + b"\n",
        "deep": b"[" * 100_000 + b"]" * 100_000 + b"\n",
        "deep-object": json.dumps(ROW).encode()[:-1] + b', "x": ' + b"[" * 50_000 + b"]" * 50_000 + b"}\n",
        "surrogate": b'{"question": "why \\ud800 x", "context": "a \\udfff b", "keywords": "x \\ud800"}\n',
        "huge-line": json.dumps({**ROW, "question": "why " * 250_000}).encode() + b"\n",
        "crlf-bom": b"\xef\xbb\xbf" + (json.dumps(ROW).encode() + b"\r\n") * 3,
        "not-objects": b"[1, 2]\n\"x\"\n7\nnull\n",
    }
    for name, data in files.items():
        p = work / "files" / (name if name.endswith(".gz") else name + ".jsonl")
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        for cmd in (["quality", "wellformed"], ["k2q", "keywords"], ["k2q", "synthesize"], ["mqr", "rewrite"],
                    ["qagen", "generate"], ["dup", "pairs"], ["index", "build"], ["score"], ["k2q", "generate"],
                    ["paraphrase", "generate"], ["report"]):
            out = str(work / "out" / f"file-{name}-{'_'.join(cmd)}.jsonl")
            extra = ["--restart"] if cmd == ["k2q", "synthesize"] else []
            yield {"id": f"file:{' '.join(cmd)} {name}", "kind": "cli", "out": out,
                   "argv": cmd + extra + _io_args(cmd, str(p), out)}
    outs = {"directory": str(work), "dev-full": "/dev/full", "unwritable": "/proc/pysynth-probe/x.jsonl",
            "same-as-in": str(row), "gz": str(work / "out" / "o.jsonl.gz"), "dev-null": os.devnull}
    for name, out in outs.items():
        for cmd in (["quality", "wellformed"], ["k2q", "keywords"], ["k2q", "synthesize"], ["mqr", "rewrite"],
                    ["score"], ["dup", "pairs"]):
            if name == "same-as-in":  # a copy: the probe's own input stays intact for the other cases
                src = work / "files" / f"same-{'_'.join(cmd)}.jsonl"
                shutil.copy(row, src)
                out = str(src)
            argv = cmd + (["--restart"] if cmd == ["k2q", "synthesize"] else []) + (
                ["--hyp", str(txt), "--ref", str(txt), "--out", out] if cmd == ["score"] else
                ["--in", out if name == "same-as-in" else str(row), "--out", out])
            yield {"id": f"out:{' '.join(cmd)} {name}", "kind": "cli", "out": out, "argv": argv, "out_kind": name}


# ------------------------------------------------------------------------------------------- running

def classify_cli(case: dict, rc: Optional[int], err: str, timeout: bool) -> Tuple[str, str]:
    if timeout:
        return "hang", "timeout"
    lines = [x for x in err.splitlines() if x.strip()]
    if "Traceback" in err or rc is None or rc < 0 or rc not in (0, 1, 2):
        return "crash", f"rc {rc}: {lines[-1][:200] if lines else ''}"
    errors = [x for x in lines if x.startswith("pysynth: error:")]
    if rc != 0:
        if len(errors) != 1 or not lines[-1].startswith("pysynth: error:"):
            return "wrong", f"rc {rc} without one error line: {lines[-3:]}"
        if len(lines[-1]) > 600:
            return "wrong", f"error line of {len(lines[-1])} characters"
        return "ok", lines[-1][:300]
    out = case.get("out", "")
    if case.get("out_kind") == "dev-full":
        return "wrong", "exit 0 writing to /dev/full"
    if case["argv"][:1] == ["serve"]:
        return "wrong", "serve exited 0 on a port that is in use"
    if out and out not in ("-", os.devnull) and not out.startswith("/dev/") and Path(out).is_file() \
            and out.endswith((".jsonl", ".gz")) and case.get("out_kind") != "same-as-in":
        try:
            sys.path.insert(0, str(ROOT))
            from pysynth import io

            if out.endswith(".gz") and Path(out).read_bytes()[:2] != b"\x1f\x8b":
                return "wrong", "a .gz output that is not gzip"
            rows = list(io.read_rows(out))
            bad = [r for r in rows if not isinstance(r, dict)]
            if bad or re.search(r"\bNaN\b|\bInfinity\b", Path(out).read_bytes()[:1_000_000].decode("utf-8", "replace")):
                return "wrong", "output rows that are not objects, or NaN/Infinity in the output"
        except Exception as exc:  # noqa: BLE001 - the output does not read back
            return "wrong", f"exit 0 but the output does not read back: {type(exc).__name__}: {str(exc)[:200]}"
    return "ok", "exit 0"


@contextlib.contextmanager
def cpu_lock(path: Optional[str]):
    if not path or not os.path.exists(path):
        yield
        return
    with open(path, "a") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(f, fcntl.LOCK_UN)


def run_cli(case: dict, timeout: float, env: dict) -> dict:
    t = time.perf_counter()
    try:
        p = subprocess.run([sys.executable, "-m", "pysynth", *case["argv"]], capture_output=True, timeout=timeout,
                           env=env, cwd=str(ROOT), stdin=subprocess.DEVNULL)
        rc, err, to = p.returncode, p.stderr.decode("utf-8", "replace"), False
    except subprocess.TimeoutExpired as exc:
        rc, err, to = None, (exc.stderr or b"").decode("utf-8", "replace"), True
    cls, why = classify_cli(case, rc, err, to)
    return {"id": case["id"], "class": cls, "why": why, "rc": rc, "seconds": round(time.perf_counter() - t, 2)}


# ------------------------------------------------------------------------------------------- the server

PATH_RE = re.compile(r"(/work/|/tmp/|/root/|/home/|/usr/|site-packages|/proc/)")


def _raw(port: int, data: bytes, timeout: float = 10.0, read: bool = True) -> Tuple[Optional[int], bytes]:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as s:
        s.sendall(data)
        if not read:
            return None, b""
        buf = b""
        with contextlib.suppress(socket.timeout, ConnectionResetError):
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
                m = re.search(rb"\r\n\r\n", buf)
                if m:
                    head = buf[:m.start()].decode("latin-1")
                    cl = re.search(r"(?i)content-length:\s*(\d+)", head)
                    if cl and len(buf) >= m.end() + int(cl.group(1)):
                        break
    m = re.match(rb"HTTP/1\.[01] (\d{3})", buf)
    return (int(m.group(1)) if m else None), buf


def _req(path: str, body: bytes, ctype: str = "application/json", host: str = "127.0.0.1", extra: str = "",
         method: str = "POST") -> bytes:
    return (f"{method} {path} HTTP/1.1\r\nHost: {host}\r\nContent-Type: {ctype}\r\nContent-Length: {len(body)}\r\n"
            f"Connection: close\r\n{extra}\r\n").encode() + body


def server_cases() -> Iterator[dict]:
    """~1,000 bounded requests."""
    bodies = {
        "/v1/k2q": [{"keywords": v} for v in ("capital france", "", " ", ["a", "b"], [], 7, None, ["x"] * 500,
                                             "x" * 100_000, "\ud800", ["é世"] * 3)]
        + [{"keywords": "capital france", k: v} for k in ("n", "beam", "diversity", "max_len", "min_wellformed",
                                                                "no_repeat_ngram", "no_stutter")
           for v in (0, -1, 1e20, 10**30, 1.5, "3", True, None, 33, 129)],
        "/v1/wellformed": [{"texts": v} for v in ("is this ok?", [], [""] * 100, ["a"] * 100_000, 3, [None], ["x" * 50_000])],
        "/v1/rewrite": [{"questions": "spaghetti carbonara mixing", k: v} for k in ("beam", "coverage", "backoff",
                                                                                  "min_wellformed", "select",
                                                                                  "no_repeat_ngram", "no_stutter")
                        for v in (0, -1, 17, 1e20, 1e308, "model", None, 0.5)],
        "/v1/score": [{"hyps": h, "refs": r, "metrics": m} for h, r in (([], []), (["a"], ["a"]), (["a"], []),
                                                                       (["a b"] * 3, [["a"] * 3, ["b"] * 3]),
                                                                       (["w " * 120_000], ["w " * 10]),
                                                                       (["x"], [["y"]]), ([1], [2]))
                      for m in (["bleu"], ["rougeLsum"], ["meteor"], ["nope"], [], ["bleu", "rougeL", "rouge2"])],
        "/v1/qagen": [{"contexts": v} for v in ("Oxygen was discovered by Scheele in 1773.", "?!?!?!. ,,,", "", [],
                                                ["x " * 60_000], ["Paris is in France."] * 3)]
        + [{"contexts": "Oxygen was discovered by Scheele in 1773.", k: v} for k in ("margin", "answers_per_context",
                                                                                     "top_k", "beam",
                                                                                     "no_repeat_ngram", "no_stutter")
           for v in (0, -1, 1e20, 11, "x", None)],
    }
    n = 0
    for path, objs in bodies.items():
        for i, obj in enumerate(objs):
            body = json.dumps(obj, ensure_ascii=False).encode("utf-8", "surrogatepass")
            yield {"id": f"http:{path} body {i}", "data": _req(path, body)}
            n += 1
    raw_bodies = [b"NaN", b'{"keywords": NaN}', b'{"margin": Infinity}', b"1e999", b"[" * 100_000, b"\xff\xfe",
                  b"\xef\xbb\xbf{}", b'{"keywords": "' + b"9" * 5000 + b'"}', b"{" * 40 + b"}" * 40, b"", b"{",
                  b'{"keywords": 1' + b"0" * 5000 + b"}"]
    for path in ("/v1/k2q", "/v1/score", "/v1/qagen", "/v1/wellformed"):
        for i, b in enumerate(raw_bodies):
            yield {"id": f"http:{path} raw {i}", "data": _req(path, b)}
        for ct in ("text/plain", "application/x-www-form-urlencoded", "", "application/json; charset=latin-1",
                   "multipart/form-data; boundary=x"):
            yield {"id": f"http:{path} ctype {ct!r}", "data": _req(path, b'{"keywords": "a b"}', ctype=ct)}
        for host in ("evil.example", "127.0.0.1.evil.example", "localhost:1", "[::1]", "", "a" * 5000, "LOCALHOST."):
            yield {"id": f"http:{path} host {host[:40]!r}", "data": _req(path, b'{"keywords": "a b"}', host=host)}
        for origin in ("http://evil.example", "null", "http://127.0.0.1:1"):
            yield {"id": f"http:{path} origin {origin}", "data": _req(path, b'{"keywords": "a b"}',
                                                                      extra=f"Origin: {origin}\r\n")}
        for method in ("GET", "PUT", "DELETE", "OPTIONS", "PATCH"):
            yield {"id": f"http:{path} method {method}", "data": _req(path, b"{}", method=method)}
    for path in ("/", "/health", "/ready", "/metrics", "/docs", "/openapi.json", "/nope", "/../../etc/passwd",
                 "/v1/../ready", "/%00", "/" + "a" * 10_000):
        yield {"id": f"http:GET {path[:40]}", "data": _req(path, b"", method="GET")}
    malformed = [b"GARBAGE\r\n\r\n", b"GET / HTTP/9.9\r\n\r\n", b"GET /health HTTP/1.1\r\n" + b"X: y\r\n" * 5000 + b"\r\n",
                 b"POST /v1/k2q HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: -5\r\n\r\n",
                 b"POST /v1/k2q HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 99999999999999999999\r\n\r\n",
                 b"POST /v1/k2q HTTP/1.1\r\nHost: 127.0.0.1\r\nTransfer-Encoding: chunked\r\n"
                 b"Content-Type: application/json\r\n\r\nzz\r\n",
                 b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\nHost: evil\r\n\r\n", b"\x16\x03\x01\x00\xa5\x01",
                 b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n\x00\r\n\r\n"]
    for i, m in enumerate(malformed):
        yield {"id": f"http:malformed {i}", "data": m}
    # repeat the cheap valid mix to reach ~1,000 requests (the budgeted model calls, batched)
    for i in range(max(0, 1000 - n - 4 * (len(raw_bodies) + 20) - 40)):
        path = ("/v1/k2q", "/v1/wellformed", "/v1/score")[i % 3]
        obj = ({"keywords": f"capital france {i % 7}"} if path == "/v1/k2q" else {"texts": [f"is it ok {i}?"]}
               if path == "/v1/wellformed" else {"hyps": [f"a b {i}"], "refs": [f"a b {i % 5}"]})
        yield {"id": f"http:mix {i}", "data": _req(path, json.dumps(obj).encode())}
    yield {"id": "http:slowloris", "slowloris": True}
    yield {"id": "http:short-body", "short_body": True}


def classify_http(status: Optional[int], body: bytes, case_id: str) -> Tuple[str, str]:
    if status is None:
        return ("ok", "connection closed without an answer") if "malformed" in case_id else ("wrong", "no answer")
    text = body.decode("utf-8", "replace")
    if PATH_RE.search(text.split("\r\n\r\n", 1)[-1]):
        return "path_leak", PATH_RE.search(text).group(0)
    if status == 503:
        return "shed", "503"
    if status >= 500:
        return "5xx", f"{status}: {text[-200:]}"
    payload = text.split("\r\n\r\n", 1)[-1]
    if status >= 400:
        try:
            obj = json.loads(payload)
        except ValueError:
            return "wrong", f"{status} without a JSON error: {payload[:100]!r}"
        if not (isinstance(obj, dict) and set(obj) == {"error"}):
            return "wrong", f"{status} error of another shape: {payload[:100]!r}"
        return "ok", f"{status}"
    if "/metrics" in case_id or case_id.startswith("http:GET /") and not case_id.startswith("http:GET /ready") \
            and not case_id.startswith("http:GET /health") and not case_id.startswith("http:GET /openapi"):
        return "ok", f"{status}"
    if re.search(r"\bNaN\b|\bInfinity\b", payload):
        return "wrong", "NaN/Infinity in a 200 answer"
    try:
        json.loads(payload)
    except ValueError:
        return "wrong", f"{status} answer that is not JSON: {payload[:100]!r}"
    return "ok", f"{status}"


def run_http(case: dict, port: int) -> dict:
    t = time.perf_counter()
    try:
        if case.get("slowloris"):  # 50 sockets trickling headers, bounded: then /health must answer
            socks = []
            for _ in range(50):
                s = socket.create_connection(("127.0.0.1", port), timeout=5)
                s.sendall(b"GET /health HTTP/1.1\r\nHost: 127.0.0.1\r\n")
                socks.append(s)
            status, body = _raw(port, _req("/health", b"", method="GET"), timeout=20)
            for s in socks:
                s.close()
        elif case.get("short_body"):  # promises 100 bytes, sends 11: must end at the read timeout
            status, body = _raw(port, b"POST /v1/k2q HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json"
                                      b"\r\nContent-Length: 100\r\n\r\n{\"keywords\"", timeout=30)
        else:
            status, body = _raw(port, case["data"], timeout=60)
    except (socket.timeout, TimeoutError):
        return {"id": case["id"], "class": "hang", "why": "no answer in time", "seconds": round(time.perf_counter() - t, 2)}
    except OSError as exc:
        return {"id": case["id"], "class": "ok" if "malformed" in case["id"] else "wrong",
                "why": f"{type(exc).__name__}: {exc}", "seconds": round(time.perf_counter() - t, 2)}
    cls, why = classify_http(status, body, case["id"])
    return {"id": case["id"], "class": cls, "why": why, "status": status, "seconds": round(time.perf_counter() - t, 2)}


def start_server(env: dict, log: Path) -> Tuple[subprocess.Popen, int]:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    p = subprocess.Popen([sys.executable, "-m", "pysynth", "serve", "--host", "127.0.0.1", "--port", str(port),
                          "--tasks", "k2q,wellformed,rewrite,qagen", "--threads", "1", "--timeout", "20",
                          "--read-timeout", "5", "--idle-timeout", "3"],
                         stdout=open(log, "wb"), stderr=subprocess.STDOUT, env=env, cwd=str(ROOT))
    deadline = time.time() + 180
    while time.time() < deadline:
        with contextlib.suppress(OSError):
            st, _ = _raw(port, _req("/ready", b"", method="GET"), timeout=5)
            if st == 200:
                return p, port
        if p.poll() is not None:
            raise RuntimeError(f"the server exited ({p.returncode}): {log.read_text()[-500:]}")
        time.sleep(1)
    p.kill()
    raise RuntimeError("the server was not ready within 180 s")


# ------------------------------------------------------------------------------------------- main

def report(path: Path) -> Dict[str, Counter]:
    out: Dict[str, Counter] = {"cli": Counter(), "http": Counter()}
    for line in path.read_text().splitlines():
        r = json.loads(line)
        out["http" if r["id"].startswith("http:") else "cli"][r["class"]] += 1
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="results, JSON Lines (appended; a rerun resumes)")
    ap.add_argument("--minutes", type=float, default=25.0, help="wall-time bound of this run (25)")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per CLI case (120)")
    ap.add_argument("--batch", type=int, default=20, help="CLI cases per CPU-lock hold (20)")
    ap.add_argument("--lock", default="/work/locks/cpu", help="the shared CPU lock ('' for none)")
    ap.add_argument("--only", choices=("cli", "http"), default=None)
    ap.add_argument("--report", action="store_true")
    args = ap.parse_args(argv)
    out = Path(args.out)
    if args.report:
        for k, c in report(out).items():
            print(k, sum(c.values()), dict(sorted(c.items())))
        return 0
    deadline = time.time() + 60 * args.minutes
    done = set()
    if out.exists():
        done = {json.loads(x)["id"] for x in out.read_text().splitlines() if x.strip()}
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen(1)
    BUSY_PORT[0] = str(busy.getsockname()[1])
    work = Path(tempfile.mkdtemp(prefix="pysynth-probe-"))
    (work / "out").mkdir()
    (work / "row.jsonl").write_text(json.dumps(ROW) + "\n")
    (work / "one.txt").write_text("a flat tire\n")
    env = dict(os.environ, PYTHONPATH=str(ROOT), OMP_NUM_THREADS="1")
    env.pop("PYSYNTH_DEBUG", None)
    f = out.open("a")

    def record(r: dict) -> None:
        f.write(json.dumps(r) + "\n")
        f.flush()
        if r["class"] != "ok":
            print(f"{r['class']:9s} {r['id'][:90]}: {r['why'][:160]}", flush=True)

    try:
        if args.only in (None, "http"):
            todo = [c for c in server_cases() if c["id"] not in done]
            print(f"{len(todo)} HTTP cases to run", flush=True)
            if todo:
                with cpu_lock(args.lock):
                    proc, port = start_server(env, work / "server.log")
                    try:
                        for c in todo:
                            if time.time() > deadline:
                                break
                            if proc.poll() is not None:
                                record({"id": c["id"], "class": "crash", "why": f"server exited {proc.returncode}"})
                                break
                            record(run_http(c, port))
                    finally:
                        proc.terminate()
                        with contextlib.suppress(subprocess.TimeoutExpired):
                            proc.wait(20)
                        if proc.poll() is None:
                            proc.kill()
                        log = (work / "server.log").read_text(errors="replace")
                        if "Traceback" in log:
                            record({"id": "http:server log", "class": "crash",
                                    "why": log[log.index("Traceback"):][:400]})
        if args.only in (None, "cli") and time.time() < deadline:
            todo = [c for c in cases(work) if c["id"] not in done]
            print(f"{len(todo)} CLI cases to run", flush=True)
            for b in range(0, len(todo), args.batch):
                if time.time() > deadline:
                    break
                with cpu_lock(args.lock):
                    for c in todo[b:b + args.batch]:
                        if time.time() > deadline:
                            break
                        dev = set(os.listdir("/dev"))
                        r = run_cli(c, min(args.timeout, max(5.0, deadline - time.time())), env)
                        litter = sorted(set(os.listdir("/dev")) - dev)
                        if litter:  # e.g. /dev/null.meta.json, /dev/full.parts: files written beside a device
                            r.update({"class": "wrong", "why": f"left {litter} in /dev"})
                            for n in litter:
                                p = Path("/dev") / n
                                shutil.rmtree(p, ignore_errors=True) if p.is_dir() else p.unlink()
                        record(r)
                        if os.path.exists("/dev/full") and not stat.S_ISCHR(os.stat("/dev/full").st_mode):
                            record({"id": f"{c['id']} (/dev/full replaced)", "class": "wrong",
                                    "why": "the device node /dev/full was replaced by a regular file"})
                            os.unlink("/dev/full")  # put the device back (as root)
                            os.mknod("/dev/full", 0o666 | stat.S_IFCHR, os.makedev(1, 7))
    finally:
        f.close()
        shutil.rmtree(work, ignore_errors=True)
    for k, c in report(out).items():
        print(k, sum(c.values()), dict(sorted(c.items())))
    return 0


if __name__ == "__main__":
    sys.exit(main())
