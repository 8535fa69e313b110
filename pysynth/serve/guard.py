"""The HTTP guard of ``pysynth serve``: what every request passes before an endpoint sees it.

A pure-ASGI middleware (cheaper than Starlette's ``BaseHTTPMiddleware``, which costs a task per
request), in this order:

1. **Host allow-list** (DNS rebinding): the ``Host`` header must name an allowed host
   (``localhost``, ``127.0.0.1``, ``[::1]`` and ``--allow-host``; ``*`` allows any) — else 421.
2. **Origin**: a request that carries an ``Origin`` header is refused (403) unless the origin is
   a ``--cors-origin`` or has the request's own host (the server's page). CORS headers are
   sent only for ``--cors-origin`` origins; their preflight (``OPTIONS``) is answered here.
3. **Bearer token** (``--api-key`` / ``PYSYNTH_API_KEY``): 401 without ``Authorization: Bearer
   KEY``; ``GET /health`` and the page ``GET /`` stay open.
4. **JSON only**: a ``POST`` must say ``Content-Type: application/json`` (415 otherwise: a web
   page can send ``text/plain`` cross-origin with no preflight, never ``application/json``).
5. **The body**: at most ``max_body`` bytes (413, from ``Content-Length`` before reading, or
   counted as a chunked upload arrives), UTF-8 (400), JSON (400), nested at most
   :data:`MAX_DEPTH` levels (422), with no ``NaN`` / ``Infinity`` / overflowing number (422).
   Python's JSON reader accepts ``NaN``; FastAPI would hand it to the endpoints.

Every refusal is JSON ``{"error": message}``. The request metrics are counted here too.
"""
from __future__ import annotations

import hmac
import json
import math
import time
from typing import Iterable, List, Optional, Sequence, Tuple

__all__ = ["Guard", "LOCAL_HOSTS", "MAX_DEPTH", "host_of", "parse_strict", "BodyError"]

#: the hosts a server accepts in its Host header without --allow-host
LOCAL_HOSTS = ("localhost", "127.0.0.1", "::1")
#: the deepest JSON nesting a request may have (the deepest schema has 3 levels)
MAX_DEPTH = 32
#: paths served without the bearer token
OPEN_PATHS = ("/health", "/")


class BodyError(Exception):
    """A request body the server refuses: ``status`` and message."""

    def __init__(self, status: int, message: str):
        super().__init__(message)
        self.status, self.message = status, message


def host_of(value: str) -> str:
    """The host name of a ``Host`` header or an origin's authority, lower case, without its port
    and brackets (``[::1]:8000`` -> ``::1``)."""
    v = value.strip().lower()
    if v.startswith("["):
        return v[1:v.find("]")] if "]" in v else v
    if v.count(":") == 1:
        v = v.split(":", 1)[0]
    return v.rstrip(".")


def _non_finite(token: str):
    raise BodyError(422, f"invalid number {token}: NaN and Infinity are not JSON numbers")


def _finite_float(token: str) -> float:
    x = float(token)
    if not math.isfinite(x):
        raise BodyError(422, f"number {token[:40]} is out of range (not a finite double)")
    return x


def _depth_over(obj, limit: int) -> bool:
    stack = [(obj, 1)]
    while stack:
        o, d = stack.pop()
        if isinstance(o, (list, dict)):
            if d > limit:
                return True
            stack.extend((c, d + 1) for c in (o.values() if isinstance(o, dict) else o))
    return False


def parse_strict(body: bytes):
    """``body`` as JSON, strictly: :class:`BodyError` 400 for bytes that are not UTF-8 or not
    JSON, 422 for ``NaN`` / ``Infinity`` / ``1e999`` or nesting deeper than :data:`MAX_DEPTH`."""
    try:
        text = body.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BodyError(400, f"request body is not valid UTF-8 (byte {exc.start})") from None
    try:
        obj = json.loads(text, parse_constant=_non_finite, parse_float=_finite_float)
    except RecursionError:
        raise BodyError(422, f"JSON nested deeper than {MAX_DEPTH} levels") from None
    except ValueError as exc:  # JSONDecodeError, an integer over Python's digit limit
        raise BodyError(400, f"malformed JSON: {exc}") from None
    if _depth_over(obj, MAX_DEPTH):
        raise BodyError(422, f"JSON nested deeper than {MAX_DEPTH} levels")
    return obj


async def send_error(send, status: int, message: str, headers: Iterable[Tuple[bytes, bytes]] = (),
                     close: bool = False) -> None:
    """Answer ``{"error": message}`` with ``status`` through the ASGI ``send``."""
    body = json.dumps({"error": message}).encode()
    hdrs = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()), *headers]
    if close:
        hdrs.append((b"connection", b"close"))
    await send({"type": "http.response.start", "status": status, "headers": hdrs})
    await send({"type": "http.response.body", "body": body})


class Guard:
    """The middleware (see the module doc).

    Parameters
    ----------
    app : the ASGI application behind it.
    max_body : the largest request body in bytes.
    metrics : the server's metrics (``requests`` counter and ``latency`` histogram).
    routes : the paths counted under their own name (others: ``other``).
    allow_hosts : host names accepted in ``Host`` beside :data:`LOCAL_HOSTS`; ``*`` accepts any.
    cors_origins : origins (``https://app.example:8443``) sent CORS headers.
    api_key : the bearer token every request but :data:`OPEN_PATHS` needs (None: no auth).
    """

    def __init__(self, app, max_body: int, metrics, routes: set, allow_hosts: Sequence[str] = (),
                 cors_origins: Sequence[str] = (), api_key: Optional[str] = None):
        self.app, self.max_body, self.metrics, self.routes = app, max_body, metrics, routes
        hosts = [host_of(h) for h in allow_hosts]
        self.any_host = "*" in hosts
        self.hosts = frozenset(LOCAL_HOSTS) | frozenset(hosts)
        self.origins = frozenset(o.rstrip("/").lower() for o in cors_origins)
        self.key = ("Bearer " + api_key).encode() if api_key else None

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        t0 = time.perf_counter()
        path = scope["path"] if scope["path"] in self.routes else "other"
        status = [500]
        cors: List[Tuple[bytes, bytes]] = []

        async def send_(msg):
            if msg["type"] == "http.response.start":
                status[0] = msg["status"]
                if cors:
                    msg = dict(msg, headers=list(msg.get("headers", [])) + cors)
            await send(msg)

        try:
            headers = {}
            for k, v in scope["headers"]:  # the first of repeated headers (a second Host is not looked at)
                headers.setdefault(k, v)
            refused = self._refuse(scope, headers, cors)
            if refused is not None:
                return await send_error(send_, *refused)
            if scope["method"] == "OPTIONS" and b"access-control-request-method" in headers and cors:
                return await self._preflight(send_)
            if scope["method"] not in ("POST", "PUT", "PATCH"):
                return await self.app(scope, receive, send_)
            ctype = headers.get(b"content-type", b"").split(b";")[0].strip().lower()
            if ctype != b"application/json":
                return await send_error(send_, 415, "requests must be JSON: send Content-Type: application/json")
            body = await self._read(headers.get(b"content-length"), receive)
            if body is None:  # the client went away
                return
            if isinstance(body, BodyError):
                return await send_error(send_, body.status, body.message, close=body.status == 413)
            held = [{"type": "http.request", "body": body, "more_body": False}]

            async def replay():
                return held.pop() if held else await receive()

            await self.app(scope, replay, send_)
        finally:
            self.metrics.requests.inc(endpoint=path, code=str(status[0]))
            self.metrics.latency.observe(time.perf_counter() - t0, endpoint=path)

    def _refuse(self, scope, headers: dict, cors: list):
        """``(status, message, headers)`` of a request refused for its Host, Origin or token, else
        None (``cors`` gets the CORS headers of an allowed cross-origin request)."""
        host = headers.get(b"host")
        if host is None:
            return 400, "missing Host header", ()
        name = host_of(host.decode("latin-1"))
        if not self.any_host and name not in self.hosts:
            return 421, (f"Host {name[:100]!r} is not served here; start the server with --allow-host "
                         f"{name[:100]} to allow it"), ()
        origin = headers.get(b"origin")
        if origin is not None:
            o = origin.decode("latin-1").rstrip("/").lower()
            if o in self.origins:
                cors += [(b"access-control-allow-origin", origin), (b"vary", b"Origin")]
            elif o == "null" or host_of(o.partition("://")[2]) != name:  # not the server's own page
                return 403, (f"cross-origin request from {o[:100]!r} refused; start the server with "
                             "--cors-origin ORIGIN to allow one"), ()
        if self.key is not None and scope["path"] not in OPEN_PATHS and not (
                scope["method"] == "OPTIONS" and cors):
            token = headers.get(b"authorization", b"")
            if not hmac.compare_digest(token, self.key):
                return 401, "missing or wrong API key: send Authorization: Bearer KEY", \
                    ((b"www-authenticate", b"Bearer"),)
        return None

    @staticmethod
    async def _preflight(send) -> None:
        await send({"type": "http.response.start", "status": 204, "headers": [
            (b"access-control-allow-methods", b"GET, POST"),
            (b"access-control-allow-headers", b"authorization, content-type"),
            (b"access-control-max-age", b"600"), (b"content-length", b"0")]})
        await send({"type": "http.response.body", "body": b""})

    async def _read(self, length: Optional[bytes], receive):
        """The whole body, a :class:`BodyError`, or None when the client disconnected."""
        if length is not None:
            if not length.isdigit():
                return BodyError(400, "bad Content-Length header")
            if int(length) > self.max_body:
                return BodyError(413, f"request body of {int(length)} bytes is over the limit of "
                                      f"{self.max_body} bytes")
        parts, size = [], 0
        while True:
            msg = await receive()
            if msg["type"] != "http.request":
                return None
            part = msg.get("body", b"")
            size += len(part)
            if size > self.max_body:
                return BodyError(413, f"request body is over the limit of {self.max_body} bytes")
            parts.append(part)
            if not msg.get("more_body", False):
                break
        body = b"".join(parts)
        if body:
            try:
                parse_strict(body)
            except BodyError as exc:
                return exc
        return body
