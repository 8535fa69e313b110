"""Connection hygiene for ``pysynth serve``: idle and slow clients are dropped in seconds.

uvicorn times out a connection only between two requests (``timeout_keep_alive``, armed after a
response). A client that connects and sends nothing, or trickles its headers or its body, is
never timed out, and 2,100 such sockets keep ``--max-connections`` full so that every request,
``/health`` included, gets 503 until they close (issue 27). :func:`protocol_class` returns
uvicorn's HTTP protocol with two more timers:

* **idle**: a new connection that sends no byte within ``idle_timeout`` seconds is closed (as
  uvicorn's keep-alive timeout does after a response);
* **read**: once the first byte of a request arrives, the whole request (headers and body) must
  arrive within ``read_timeout`` seconds; past it the client gets 408 ``{"error": ...}`` and the
  connection is closed.

It also answers malformed HTTP and the ``--max-connections`` 503 as JSON ``{"error": message}``
(uvicorn answers them in plain text).
"""
from __future__ import annotations

import asyncio
import json
from typing import Optional

__all__ = ["protocol_class"]


def _raw(status: int, reason: str, message: str) -> bytes:
    body = json.dumps({"error": message}).encode()
    return (f"HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {len(body)}\r\n"
            "connection: close\r\n\r\n").encode() + body


async def _json_503(scope, receive, send) -> None:
    body = json.dumps({"error": "server busy: too many open connections (--max-connections); retry shortly"}).encode()
    await send({"type": "http.response.start", "status": 503, "headers": [
        (b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
        (b"connection", b"close"), (b"retry-after", b"1")]})
    await send({"type": "http.response.body", "body": body})


def protocol_class(read_timeout: float = 10.0, idle_timeout: float = 5.0, base: Optional[type] = None) -> type:
    """uvicorn's HTTP protocol (httptools when installed, else h11; or ``base``) with the idle and
    read timeouts of the module doc; pass it as ``uvicorn.Config(http=...)``.

    Parameters
    ----------
    read_timeout : seconds from a request's first byte to its last (headers and body).
    idle_timeout : seconds a new connection may stay silent.
    base : the uvicorn protocol class to extend (default: uvicorn's ``auto`` choice).
    """
    if not (read_timeout > 0 and idle_timeout > 0):
        raise ValueError(f"read_timeout, idle_timeout: must be > 0, got {read_timeout!r}, {idle_timeout!r}")
    if base is None:
        from uvicorn.protocols.http.auto import AutoHTTPProtocol

        base = AutoHTTPProtocol
    import sys

    # the --max-connections answer: uvicorn's protocol modules look this name up when over the limit
    module = sys.modules[base.__module__]
    if hasattr(module, "service_unavailable"):
        module.service_unavailable = _json_503

    class Guarded(base):  # type: ignore[misc, valid-type]
        _timer: Optional[asyncio.TimerHandle] = None
        _reading_for = False  # the cycle being read when the read timer was armed (False: none)

        def connection_made(self, transport):
            super().connection_made(transport)
            self._arm(idle_timeout, idle=True)

        def data_received(self, data: bytes) -> None:
            if self._reading_for is False:  # the first byte of a request: its read deadline starts
                self._reading_for = self.cycle
                self._arm(read_timeout)
            super().data_received(data)
            cyc = self.cycle
            if cyc is not None and cyc is not self._reading_for and not cyc.more_body:
                self._disarm()  # the request is in: the endpoint's own --timeout applies from here
                self._reading_for = False

        def connection_lost(self, exc) -> None:
            self._disarm()
            super().connection_lost(exc)

        def send_400_response(self, msg: str) -> None:
            if not self.transport.is_closing():
                self.transport.write(_raw(400, "Bad Request", f"malformed HTTP request: {msg}"))
                self.transport.close()

        def _arm(self, seconds: float, idle: bool = False) -> None:
            self._disarm()
            self._timer = self.loop.call_later(seconds, self._expired, idle)

        def _disarm(self) -> None:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

        def _expired(self, idle: bool) -> None:
            self._timer = None
            if self.transport.is_closing():
                return
            cyc = self.cycle
            if cyc is not None and cyc.response_started:  # mid-response: nothing more can be said
                self.transport.close()
                return
            if cyc is not None and not cyc.response_complete:
                cyc.disconnected = True  # the endpoint, if it runs, answers no one
                cyc.message_event.set()
            if not idle:
                self.transport.write(_raw(408, "Request Timeout", f"request not received within {read_timeout:g} s"))
            self.transport.close()

    Guarded.__name__ = Guarded.__qualname__ = f"Guarded{base.__name__}"
    return Guarded
