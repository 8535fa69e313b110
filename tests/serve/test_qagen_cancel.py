"""``/v1/qagen`` timeouts stop the span passes too (issue 27): the served span scorer reads one window
per call and checks the request's cancel scope before each, so a request that timed out holds the
model thread for at most one more window (~40 ms), not its whole context. Counted in scorer calls,
not timed."""
from __future__ import annotations

import asyncio
import threading

import pytest

pytest.importorskip("onnxruntime")
pytest.importorskip("transformers")

TEXT = ("Oxygen is a chemical element with symbol O and atomic number 8. It was discovered by Carl Wilhelm "
        "Scheele in Uppsala in 1773 or earlier. Joseph Priestley published his findings in 1775. The Rhine "
        "is a European river that begins in the Swiss canton of Graubünden and flows to the North Sea. ")
LONG = TEXT * 40  # ~2,700 wordpieces: about 17 windows of 256


class _Counting:
    """The span scorer, counting its calls; ``hold`` (an Event) blocks call number ``at`` until set."""

    def __init__(self, scorer, at: int = 0, hold: threading.Event | None = None):
        self.scorer, self.calls, self.at, self.hold, self.windows = scorer, 0, at, hold, 0
        self.reached = threading.Event()

    def span_scores(self, input_ids, *args, **kw):
        self.calls += 1
        self.windows += int(input_ids.shape[0])
        if self.calls == self.at and self.hold is not None:
            self.reached.set()
            self.hold.wait(60)
        return self.scorer.span_scores(input_ids, *args, **kw)

    def __getattr__(self, name):
        return getattr(self.scorer, name)


@pytest.fixture(scope="module")
def served():
    from pysynth.qagen.served import ADAPTER

    loaded = ADAPTER.load(None, threads=1)
    return ADAPTER, loaded.model


def _windows(model, text: str) -> int:
    from pysynth.models.spans import count_windows

    return count_windows(len(model.span.tokenizer(text)["input_ids"]) - 2)


def test_the_served_scorer_reads_one_window_per_call_and_stops_in_scope(served):
    from pysynth.decoding import cancel

    adapter, model = served
    total = _windows(model, LONG)
    assert total > 8
    real = model.span.scorer
    try:
        model.span.scorer = rec = _Counting(real)
        with cancel.scope(lambda: rec.calls >= 3), pytest.raises(cancel.Cancelled):
            adapter.call(model, (), [LONG])
        assert rec.calls == 3 and rec.windows == 3  # stopped before the 4th window of ~17
        model.span.scorer = rec = _Counting(real)
        with cancel.scope(lambda: False):
            groups = adapter.call(model, (), [LONG])
        # extraction reads every window, the roundtrip QA pass again: one window per call throughout
        assert rec.windows >= total and rec.calls == rec.windows and len(groups) == 1
    finally:
        model.span.scorer = real


def test_a_timed_out_qagen_request_stops_its_span_passes(served):
    """Through the batcher: the request times out while its 2nd window is scored; the 3rd is never
    scored, the thread is free and the next request is answered."""
    from pysynth.serve.batching import Batcher

    adapter, model = served
    real = model.span.scorer
    hold = threading.Event()
    rec = _Counting(real, at=2, hold=hold)

    async def main():
        b = Batcher("qagen", lambda k, x: adapter.call(model, k, x), max_batch=8, max_wait_ms=0)
        model.span.scorer = rec
        slow = asyncio.ensure_future(b.submit((), [LONG], timeout=0.5))
        await asyncio.get_running_loop().run_in_executor(None, rec.reached.wait, 60)
        with pytest.raises(asyncio.TimeoutError):
            await slow
        hold.set()  # the 2nd window finishes; the check before the 3rd sees the request gone
        model.span.scorer = quick = _Counting(real)
        got = await b.submit((), ["Oxygen was discovered by Carl Wilhelm Scheele in 1773."], timeout=120)
        await b.stop()
        return got, b.stats, quick.calls

    try:
        got, stats, quick_calls = asyncio.run(main())
    finally:
        model.span.scorer = real
        hold.set()
    assert rec.calls == 2 < _windows(model, LONG), "the span passes ran on after the request timed out"
    assert stats.stopped == 1 and stats.dropped == 1
    assert len(got) == 1 and quick_calls >= 1
