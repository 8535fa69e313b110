"""A real ``pysynth serve`` process on a free loopback port, for the serving tests and benchmarks."""
from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from typing import List, Optional


class Server:
    """``pysynth serve --port 0 ARGS`` in a subprocess; ``url`` once it is ready (``GET /ready``).

    Use as a context manager; :meth:`stop` sends SIGINT and then kills. ``log`` holds the
    process's stderr lines (read on a thread so the pipe never fills).
    """

    def __init__(self, *args: str, env: Optional[dict] = None, timeout: float = 120.0, api_key: Optional[str] = None):
        self.auth = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        cmd = [sys.executable, "-m", "pysynth", "serve", "--port", "0", "--log-level", "warning", *args]
        e = dict(os.environ, **(env or {}))
        if api_key:
            e["PYSYNTH_API_KEY"] = api_key
        e.setdefault("PYTHONUNBUFFERED", "1")
        self.proc = subprocess.Popen(cmd, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                     stderr=subprocess.PIPE, text=True, env=e)
        self.log: List[str] = []
        self._port = threading.Event()
        self.url = ""
        threading.Thread(target=self._read, daemon=True).start()
        deadline = time.monotonic() + timeout
        while not self._port.wait(0.1):
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("pysynth serve did not start:\n" + "\n".join(self.log))
        while True:
            try:
                status, _ = self.get("/ready")
                if status == 200:
                    break
            except OSError:
                pass
            if self.proc.poll() is not None or time.monotonic() > deadline:
                self.stop()
                raise RuntimeError("pysynth serve did not get ready:\n" + "\n".join(self.log))
            time.sleep(0.1)

    def _read(self):
        for line in self.proc.stderr:
            self.log.append(line.rstrip("\n"))
            m = re.search(r"on (http://[^/\s]+)/", line)
            if m and not self.url:
                self.url = m.group(1)
                self._port.set()

    def request(self, method: str, path: str, body=None, headers: Optional[dict] = None, timeout: float = 60):
        """(status, parsed JSON or text) of one request; ``body``: bytes are sent as they are."""
        status, parsed, _ = self.request_full(method, path, body, headers, timeout)
        return status, parsed

    def request_full(self, method: str, path: str, body=None, headers: Optional[dict] = None, timeout: float = 60):
        """(status, parsed JSON or text, response headers with lower-case names) of one request."""
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method,
                                     headers={"Content-Type": "application/json", **self.auth, **(headers or {})})
        try:
            with urllib.request.urlopen(req, timeout=timeout) as r:
                status, raw, hdrs = r.status, r.read(), r.headers
        except urllib.error.HTTPError as err:
            status, raw, hdrs = err.code, err.read(), err.headers
        ctype = hdrs.get("Content-Type", "")
        parsed = json.loads(raw) if "json" in ctype and raw else raw.decode("utf-8", "replace")
        return status, parsed, {k.lower(): v for k, v in hdrs.items()}

    def get(self, path: str, **kw):
        return self.request("GET", path, **kw)

    def post(self, path: str, body, **kw):
        return self.request("POST", path, body, **kw)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        return self.proc.returncode

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.stop()


def read_until_closed(sock, limit: int = 1 << 20) -> bytes:
    """Everything a raw socket receives until the server closes it (or ``limit`` bytes, or an error)."""
    out = b""
    while len(out) < limit:
        try:
            part = sock.recv(65536)
        except OSError:
            break
        if not part:
            break
        out += part
    return out
