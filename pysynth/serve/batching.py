"""Dynamic batching: concurrent requests to one model become one model call.

A :class:`Batcher` owns one model function ``run(key, inputs) -> outputs`` and one thread that
calls it. Requests queue up with :meth:`Batcher.submit`; while the model is busy the queue
fills, and the next call takes every queued input that shares the first request's ``key`` (the
decoding settings: requests with other settings cannot share a search), up to ``max_batch``
inputs. When the model is idle and the last call served several requests (clients are sending
concurrently), a request waits at most ``max_wait_ms`` for company; a lone client never waits,
so batching costs nothing at concurrency 1. The queue
is bounded (:class:`QueueFull`: the server answers 503 with ``Retry-After``); a request that
times out or whose client went away is dropped before it reaches the model, and a model call
whose requests have all timed out stops at its next decoding step
(:mod:`pysynth.decoding.cancel`), so it never holds the model thread past the timeout by more
than one step.

One failing input must not fail its neighbours: when a batch of several requests raises, each
request is run again alone and only the one that fails again gets the error.
"""
from __future__ import annotations

import asyncio
import collections
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any, Callable, Deque, Hashable, List, Optional, Sequence

from pysynth.decoding import cancel

__all__ = ["Batcher", "QueueFull", "BatchStats"]


class QueueFull(Exception):
    """The batcher's queue holds ``max_queue`` inputs already: try again later."""


@dataclass
class _Item:
    key: Hashable
    inputs: Sequence[Any]
    future: asyncio.Future
    t_enqueued: float


@dataclass
class BatchStats:
    """Counters of one batcher (read by ``GET /metrics``)."""

    batches: int = 0
    inputs: int = 0
    requests: int = 0
    dropped: int = 0  # timed out or cancelled before reaching the model, or stopped in it
    stopped: int = 0  # model calls stopped between decoding steps (every request of the batch gone)
    failures: int = 0
    sizes: List[int] = field(default_factory=list)  # inputs per model call, drained by the metrics


class Batcher:
    """Group concurrent requests into model calls.

    Parameters
    ----------
    name : str
        Shown in metrics and logs (the endpoint's model).
    run : callable ``run(key, inputs) -> list``
        The model call; returns one output per input, in order. Runs in the batcher's own thread.
    max_batch : int
        Most inputs in one model call (a single request larger than this runs alone).
    max_wait_ms : float
        How long the first request of an idle batcher waits for others (0: never waits).
    max_queue : int
        Most inputs waiting; :meth:`submit` raises :class:`QueueFull` beyond it.
    """

    def __init__(self, name: str, run: Callable[[Hashable, List[Any]], List[Any]], *, max_batch: int = 32,
                 max_wait_ms: float = 2.0, max_queue: int = 1024):
        if max_batch < 1:
            raise ValueError(f"max_batch: must be >= 1, got {max_batch!r}")
        if not max_wait_ms >= 0:
            raise ValueError(f"max_wait_ms: must be >= 0, got {max_wait_ms!r}")
        if max_queue < 1:
            raise ValueError(f"max_queue: must be >= 1, got {max_queue!r}")
        self.name = name
        self.run = run
        self.max_batch = int(max_batch)
        self.max_wait = float(max_wait_ms) / 1000.0
        self.max_queue = int(max_queue)
        self.stats = BatchStats()
        self._queue: Deque[_Item] = collections.deque()
        self._queued_inputs = 0
        self._wake: Optional[asyncio.Event] = None
        self._task: Optional[asyncio.Task] = None
        self._last_requests = 1  # requests in the previous model call: > 1 means concurrent clients
        # one thread: the model's own intra-op threads use the cores; two concurrent calls would
        # only fight over them
        self._pool = ThreadPoolExecutor(1, thread_name_prefix=f"pysynth-{name}")

    @property
    def queue_depth(self) -> int:
        """Inputs waiting for the model."""
        return self._queued_inputs

    def start(self) -> None:
        """Start the batching loop on the running event loop."""
        if self._task is None:
            self._wake = asyncio.Event()
            self._task = asyncio.get_running_loop().create_task(self._loop(), name=f"batcher-{self.name}")

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            try:
                await self._task
            except asyncio.CancelledError:
                pass
            self._task = None
        for it in self._queue:
            if not it.future.done():
                it.future.set_exception(RuntimeError("server shutting down"))
        self._queue.clear()
        self._queued_inputs = 0
        self._pool.shutdown(wait=False, cancel_futures=True)

    async def submit(self, key: Hashable, inputs: Sequence[Any], timeout: Optional[float] = None) -> List[Any]:
        """Queue ``inputs`` (run with settings ``key``) and wait for their outputs.

        Raises :class:`QueueFull` at once when the queue is full, ``asyncio.TimeoutError`` after
        ``timeout`` seconds (the inputs are dropped if they have not reached the model yet), and
        whatever the model raised for these inputs run alone.
        """
        if self._task is None:
            self.start()
        n = len(inputs)
        if self._queued_inputs + n > self.max_queue and self._queued_inputs > 0:
            raise QueueFull(f"{self.name}: {self._queued_inputs} inputs queued (max_queue {self.max_queue})")
        fut = asyncio.get_running_loop().create_future()
        self._queue.append(_Item(key, inputs, fut, time.perf_counter()))
        self._queued_inputs += n
        self.stats.requests += 1
        self._wake.set()
        # on timeout wait_for cancels the future; the loop skips cancelled items
        return await asyncio.wait_for(fut, timeout)

    def _take(self) -> List[_Item]:
        """Pop the head request and every later one with its key, up to ``max_batch`` inputs."""
        head = self._queue.popleft()
        batch, total = [head], len(head.inputs)
        keep: Deque[_Item] = collections.deque()
        while self._queue:
            it = self._queue.popleft()
            if it.future.done():  # timed out or cancelled while queued
                self._queued_inputs -= len(it.inputs)
                self.stats.dropped += 1
                continue
            if it.key == head.key and total + len(it.inputs) <= self.max_batch:
                batch.append(it)
                total += len(it.inputs)
            else:
                keep.append(it)
        self._queue = keep
        self._queued_inputs -= total
        return batch

    async def _loop(self) -> None:
        loop = asyncio.get_running_loop()
        while True:
            while not self._queue:
                self._wake.clear()
                await self._wake.wait()
            head = self._queue[0]
            if head.future.done():
                self._queue.popleft()
                self._queued_inputs -= len(head.inputs)
                self.stats.dropped += 1
                continue
            # an idle model with concurrent clients: give them max_wait to join the first request
            wait = head.t_enqueued + self.max_wait - time.perf_counter()
            if wait > 0 and self._queued_inputs < self.max_batch and self._last_requests > 1:
                await asyncio.sleep(wait)
            batch = self._take()
            self._last_requests = len(batch)
            inputs = [x for it in batch for x in it.inputs]
            self.stats.batches += 1
            self.stats.inputs += len(inputs)
            self.stats.sizes.append(len(inputs))
            try:
                outs = await loop.run_in_executor(self._pool, self._call, batch, batch[0].key, inputs)
                if len(outs) != len(inputs):
                    raise RuntimeError(f"{self.name}: model returned {len(outs)} outputs for {len(inputs)} inputs")
            except cancel.Cancelled:
                self._stopped(batch)
                continue
            except Exception as exc:
                if len(batch) == 1:
                    self.stats.failures += 1
                    if not batch[0].future.done():
                        batch[0].future.set_exception(exc)
                    continue
                await self._run_alone(batch)
                continue
            i = 0
            for it in batch:
                n = len(it.inputs)
                if not it.future.done():
                    it.future.set_result(outs[i : i + n])
                i += n

    def _call(self, batch: List[_Item], key: Hashable, inputs: List[Any]) -> List[Any]:
        """``run(key, inputs)`` on the model thread, stopped between decoding steps once every
        request of ``batch`` is done (timed out or cancelled)."""
        with cancel.scope(lambda: all(it.future.done() for it in batch)):
            return self.run(key, inputs)

    def _stopped(self, batch: List[_Item]) -> None:
        self.stats.stopped += 1
        self.stats.dropped += len(batch)
        for it in batch:  # a stop means all were done; a late one still gets an answer
            if not it.future.done():
                it.future.set_exception(asyncio.TimeoutError())

    async def _run_alone(self, batch: List[_Item]) -> None:
        """A batch failed: run its requests one by one so only the failing one gets the error."""
        loop = asyncio.get_running_loop()
        for it in batch:
            if it.future.done():
                continue
            try:
                outs = await loop.run_in_executor(self._pool, self._call, [it], it.key, list(it.inputs))
            except cancel.Cancelled:
                self._stopped([it])
                continue
            except Exception as exc:
                self.stats.failures += 1
                if not it.future.done():
                    it.future.set_exception(exc)
                continue
            if not it.future.done():
                it.future.set_result(outs)
