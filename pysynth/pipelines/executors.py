"""Executors: where a stage's chunks run.  Both give the same bytes (chunks are pure functions of
their range and of the prepared context; the runner merges parts in chunk order).

* :class:`LocalExecutor` (default) -- chunks one after another in this process; ``workers`` is
  the number of threads of the compiled code inside each chunk.
* :class:`RayExecutor` -- chunks on Ray actors (``pip install '.[ray]'``).  Each actor
  memory-maps the prepared context from the run directory once (so the run directory must be on
  a file system every node sees: a shared volume on a cluster) and runs the chunks it is given.
  Actors take ``num_cpus=0.5`` by default: full-CPU actors can deadlock a 2-CPU Ray
  (ray-project/ray#44687).
"""
from __future__ import annotations

import argparse
import os
import time
from pathlib import Path
from typing import Any, Iterator, List, Optional, Sequence, Tuple

from pysynth._validate import workers as _workers

__all__ = ["LocalExecutor", "RayExecutor", "add_executor_arguments", "executor_from_args", "make_executor"]


class LocalExecutor:
    """Run chunks in this process, in order, each with ``workers`` threads (-1 = all cores);
    a kernel's ``chunks_ahead`` later chunks may run beside the current one (see ``Kernel``),
    the threads then split among the chunks in flight."""

    name = "local"

    def __init__(self, workers: int = 1):
        self.workers = _workers(workers)

    def map(self, kernel, context: Path, chunks: Sequence[Tuple[int, int, int]]) -> Iterator[Tuple[int, dict, float]]:
        """Yield ``(chunk, arrays, seconds)`` for every ``(chunk, start, stop)``."""
        if not chunks:
            return
        ctx = kernel.open(context)
        # chunks in flight: 1 + the kernel's chunks_ahead, at most one per thread; the threads
        # are split among them (two chunks of one thread each beat one of two threads plus one
        # of two on 2 cores: 4-10 % at 3.17M questions, where oversubscribing cost cache)
        workers = (os.cpu_count() or 1) if self.workers == -1 else self.workers
        flight = max(1, min(1 + int(getattr(kernel, "chunks_ahead", 0) or 0), workers, len(chunks)))
        per = self.workers if flight == 1 else max(1, workers // flight)

        def run(c: int, a: int, b: int) -> Tuple[int, dict, float]:
            t = time.perf_counter()
            arrays = kernel.run_chunk(ctx, a, b, per)
            return c, arrays, time.perf_counter() - t

        if flight == 1:
            for c, a, b in chunks:
                yield run(c, a, b)
            return
        # the next chunks run in threads while this one is delivered; results still in order
        from collections import deque
        from concurrent.futures import ThreadPoolExecutor

        pool = ThreadPoolExecutor(max_workers=flight, thread_name_prefix="pysynth-chunk")
        todo = iter(chunks)
        pending = deque(pool.submit(run, *x) for _, x in zip(range(flight), todo))
        try:
            while pending:
                done = pending.popleft().result()
                nxt = next(todo, None)
                if nxt is not None:
                    pending.append(pool.submit(run, *nxt))
                yield done
        finally:  # interrupted or failed: start nothing more (a running chunk finishes in its thread)
            pool.shutdown(wait=False, cancel_futures=True)

    def __repr__(self) -> str:
        return f"LocalExecutor(workers={self.workers})"


def _import_ray():
    try:
        import ray
    except ImportError:
        raise ImportError("the ray executor needs Ray: pip install '.[ray]'") from None
    return ray


_ACTOR = None


def _actor_class(ray):
    """The Ray actor class, made once (``ray.remote`` needs ray imported: not at module import)."""
    global _ACTOR
    if _ACTOR is None:
        class ChunkActor:
            def __init__(self, kernel, context: str):
                self.kernel = kernel
                self.ctx = kernel.open(Path(context))  # memory-mapped: pages shared by the node's actors

            def run(self, c: int, a: int, b: int, threads: int):
                t = time.perf_counter()
                arrays = self.kernel.run_chunk(self.ctx, a, b, threads)
                return c, arrays, time.perf_counter() - t

        _ACTOR = ray.remote(ChunkActor)
    return _ACTOR


#: seconds to wait for a Ray head's port before giving up (ray.init itself retried for minutes: issue 27)
RAY_CONNECT_TIMEOUT = 10.0

#: the HTTP/2 client connection preface and an empty SETTINGS frame (RFC 9113, 3.4): a Ray GCS and a Ray
#: client server are gRPC servers, which answer with their own SETTINGS frame
_H2_PREFACE = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n" + b"\x00\x00\x00\x04\x00\x00\x00\x00\x00"


def _not_grpc(sock, deadline: float) -> Optional[str]:
    """None when the peer of ``sock`` answers the HTTP/2 preface with a SETTINGS frame (a gRPC
    server, as Ray's GCS and client server are), else what it did instead."""
    import socket

    head = b""
    try:
        sock.settimeout(max(0.05, deadline - time.monotonic()))
        sock.sendall(_H2_PREFACE)
        while len(head) < 9:
            sock.settimeout(max(0.05, deadline - time.monotonic()))
            chunk = sock.recv(9 - len(head))
            if not chunk:
                return f"closed the connection{f' after {head!r}' if head else ' without answering'}"
            head += chunk
    except socket.timeout:
        return f"accepts connections but {'stopped after ' + repr(head) if head else 'sends nothing'}"
    except OSError as exc:
        return f"dropped the connection ({exc.strerror or exc})"
    length, kind, flags, stream = int.from_bytes(head[:3], "big"), head[3], head[4], head[5:9]
    if kind != 4 or flags not in (0, 1) or stream != b"\0\0\0\0" or length % 6:
        return f"answers {head!r}, not HTTP/2 (a web server or another service?)"
    return None


def check_reachable(address: str, timeout: float = RAY_CONNECT_TIMEOUT) -> None:
    """Fail fast, with one clear ``ConnectionError``, when a Ray ``address`` (``host:port`` of the
    GCS, default port 6379, or ``ray://host:port``, default 10001) does not accept a TCP connection
    or does not answer an HTTP/2 handshake (Ray speaks gRPC: a web server, a port that closes at
    once, a silent one or another protocol made ``ray.init`` wait for minutes), all within
    ``timeout`` seconds.  ``"auto"`` and ``"local"`` are left to Ray (they look on this machine)."""
    import socket

    if address in ("auto", "local"):
        return
    deadline = time.monotonic() + timeout
    client = address.startswith("ray://")
    hostport = address[len("ray://"):] if client else address
    host, sep, port = hostport.rpartition(":")
    if not sep or not port.isdigit():
        host, port = hostport, "10001" if client else "6379"
    host = host.strip("[]") or "127.0.0.1"
    try:
        sock = socket.create_connection((host, int(port)), timeout=timeout)
    except (OSError, ValueError, OverflowError) as exc:
        raise ConnectionError(f"ray_address {address!r}: nothing answers at {host}:{port} within {timeout:g} s "
                              f"({getattr(exc, 'strerror', None) or exc}); start the cluster (`ray start --head`) "
                              "or fix --ray-address") from None
    with sock:
        why = _not_grpc(sock, deadline)
    if why is not None:
        raise ConnectionError(f"ray_address {address!r}: {host}:{port} is not a Ray head: it {why} (Ray speaks "
                              f"gRPC; probed for at most {timeout:g} s); check the port (the GCS: 6379, ray://: 10001) "
                              "or start the cluster (`ray start --head`)")


class RayExecutor:
    """Run chunks on Ray actors.

    Parameters
    ----------
    address : str or None
        ``None``: the Ray instance this process already joined, else ``ray.init()`` (a local
        one, stopped again after the run); otherwise ``ray.init(address=...)``, e.g. ``"auto"``,
        ``"10.0.0.1:6379"`` or ``"ray://head:10001"``.
    workers : int
        Threads of the stage's ``prepare`` and ``finish`` in this (the driver) process.
    actors : int or None
        Number of actors (default: the cluster's CPU count, at most one per chunk).
    threads : int
        Threads of the compiled code inside each actor's chunk.
    num_cpus : float
        Ray CPUs each actor reserves (0.5: see the module doc).
    max_in_flight : int
        Chunks queued per actor (2 keeps every actor busy while the driver writes a part).
    """

    name = "ray"

    def __init__(self, address: Optional[str] = None, workers: int = 1, actors: Optional[int] = None,
                 threads: int = 1, num_cpus: float = 0.5, max_in_flight: int = 2):
        if address is not None and (not isinstance(address, str) or not address):
            raise ValueError(f"ray_address must be a non-empty string like 'ray://head:10001' or None, got {address!r}")
        if actors is not None and (isinstance(actors, bool) or not isinstance(actors, int) or actors < 1):
            raise ValueError(f"actors must be None or an integer >= 1, got {actors!r}")
        if not (isinstance(num_cpus, (int, float)) and num_cpus > 0):
            raise ValueError(f"num_cpus must be a number > 0, got {num_cpus!r}")
        self.address, self.workers, self.actors = address, _workers(workers), actors
        self.threads, self.num_cpus, self.max_in_flight = _workers(threads), float(num_cpus), int(max_in_flight)

    def _init(self, ray) -> bool:
        """Join or start Ray; True when this call started it (then :meth:`map` shuts it down)."""
        if ray.is_initialized():
            return False
        if self.address is None:
            ray.init(include_dashboard=False, logging_level="WARNING", log_to_driver=False)
        else:
            check_reachable(self.address)
            ray.init(address=self.address, logging_level="WARNING", log_to_driver=False)
        return True

    def map(self, kernel, context: Path, chunks: Sequence[Tuple[int, int, int]]) -> Iterator[Tuple[int, dict, float]]:
        """Yield ``(chunk, arrays, seconds)`` as chunks finish (any order)."""
        if not chunks:
            return
        ray = _import_ray()
        started = self._init(ray)
        actors: List[Any] = []
        try:
            n_act = self.actors or max(1, int(ray.cluster_resources().get("CPU", 1)))
            n_act = min(n_act, len(chunks))
            cls = _actor_class(ray).options(num_cpus=self.num_cpus)
            actors = [cls.remote(kernel, str(Path(context).resolve())) for _ in range(n_act)]
            queue = list(chunks)
            pending = {}  # object ref -> actor index
            load = [0] * n_act

            def submit(i):
                c, a, b = queue.pop(0)
                pending[actors[i].run.remote(c, a, b, self.threads)] = i
                load[i] += 1

            for _ in range(self.max_in_flight):
                for i in range(n_act):
                    if queue:
                        submit(i)
            while pending:
                ready, _ = ray.wait(list(pending), num_returns=1)
                i = pending.pop(ready[0])
                load[i] -= 1
                if queue:
                    submit(i)
                yield ray.get(ready[0])
        finally:
            for a in actors:
                try:
                    ray.kill(a)
                except Exception:  # noqa: BLE001 - already gone
                    pass
            if started:
                ray.shutdown()

    def __repr__(self) -> str:
        return (f"RayExecutor(address={self.address!r}, workers={self.workers}, actors={self.actors}, "
                f"threads={self.threads}, num_cpus={self.num_cpus})")


def make_executor(executor: str = "local", *, workers: int = 1, ray_address: Optional[str] = None, **ray_options):
    """``"local"`` -> :class:`LocalExecutor` (``workers`` threads); ``"ray"`` -> :class:`RayExecutor`."""
    if executor == "local":
        if ray_address is not None:
            raise ValueError("ray_address is only used with executor='ray'; pass executor='ray' or drop it")
        return LocalExecutor(workers)
    if executor == "ray":
        return RayExecutor(ray_address, workers=workers, **ray_options)
    raise ValueError(f"executor must be 'local' or 'ray', got {executor!r}")


def add_executor_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """Add ``--executor local|ray`` and ``--ray-address ADDR`` to a pipeline command's parser."""
    parser.add_argument("--executor", choices=["local", "ray"], default="local",
                        help="where chunks run: in this process (default) or on Ray actors "
                             "(pip install '.[ray]'); the output is the same")
    parser.add_argument("--ray-address", dest="ray_address", default=None, metavar="ADDR",
                        help="Ray cluster to join (e.g. ray://head:10001 or auto); default: a local Ray")
    return parser


def executor_from_args(args: argparse.Namespace):
    """The executor named by :func:`add_executor_arguments`' flags (``args.workers`` threads)."""
    workers = getattr(args, "workers", 1)
    ex = getattr(args, "executor", "local") or "local"
    addr = getattr(args, "ray_address", None)
    if ex == "local" and addr is not None:
        raise ValueError("--ray-address needs --executor ray")
    if ex == "ray" and addr is not None:
        check_reachable(addr)  # before any work: an unreachable head is one line within seconds, not a hang
    return make_executor(ex, workers=workers, ray_address=addr)
