"""The few Prometheus metric types the server exports, in the text exposition format 0.0.4.

Written here rather than taken from ``prometheus_client``: four counters, two histograms and a
gauge are 80 lines, and the ``[serve]`` extra stays onnxruntime + the ASGI stack. Issue 28 asked
for ``prometheus_client`` unless it measured slower on the serving path; it did
(``bench/prom_compare.py``, RESULTS_hardening.md: a request's increment + 2 observations 24 vs
11 us, a scrape's render 0.9-1.5 ms vs 0.28 ms), so the metric names stay and this stays.
"""
from __future__ import annotations

import bisect
import math
import threading
from typing import Dict, Iterable, List, Sequence, Tuple

__all__ = ["Counter", "Histogram", "Gauge", "render"]

Labels = Tuple[Tuple[str, str], ...]


def _fmt_labels(labels: Labels, extra: Sequence[Tuple[str, str]] = ()) -> str:
    items = list(labels) + list(extra)
    if not items:
        return ""
    esc = (v.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") for _, v in items)
    return "{" + ",".join(f'{k}="{v}"' for (k, _), v in zip(items, esc)) + "}"


def _num(v: float) -> str:
    if math.isinf(v):
        return "+Inf" if v > 0 else "-Inf"
    return repr(float(v)) if not float(v).is_integer() else str(int(v))


class _Metric:
    kind = ""

    def __init__(self, name: str, help: str):
        self.name, self.help = name, help
        self._lock = threading.Lock()

    def header(self) -> List[str]:
        return [f"# HELP {self.name} {self.help}", f"# TYPE {self.name} {self.kind}"]


class Counter(_Metric):
    """A counter: :meth:`inc` here, or :meth:`track` a monotonic count kept elsewhere (read at
    scrape time). Its name ends in ``_total`` (the Prometheus convention)."""

    kind = "counter"

    def __init__(self, name: str, help: str):
        if not name.endswith("_total"):
            raise ValueError(f"name: a counter's name ends in _total, got {name!r}")
        super().__init__(name, help)
        self.values: Dict[Labels, float] = {}
        self.sources: Dict[Labels, object] = {}

    def inc(self, amount: float = 1.0, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        with self._lock:
            self.values[key] = self.values.get(key, 0.0) + amount

    def track(self, fn, **labels: str) -> None:
        self.sources[tuple(sorted(labels.items()))] = fn

    def lines(self) -> List[str]:
        vals = dict(self.values)
        vals.update((k, float(fn())) for k, fn in self.sources.items())  # type: ignore[operator]
        return self.header() + [f"{self.name}{_fmt_labels(k)} {_num(v)}" for k, v in sorted(vals.items())]


class Gauge(_Metric):
    """A gauge read at scrape time from a callable per label set."""

    kind = "gauge"

    def __init__(self, name: str, help: str):
        super().__init__(name, help)
        self.sources: Dict[Labels, object] = {}

    def track(self, fn, **labels: str) -> None:
        self.sources[tuple(sorted(labels.items()))] = fn

    def lines(self) -> List[str]:
        return self.header() + [f"{self.name}{_fmt_labels(k)} {_num(fn())}" for k, fn in sorted(self.sources.items())]


class Histogram(_Metric):
    kind = "histogram"

    def __init__(self, name: str, help: str, buckets: Iterable[float]):
        super().__init__(name, help)
        self.buckets = sorted(float(b) for b in buckets)
        self.series: Dict[Labels, List[float]] = {}  # per label set: bucket counts..., sum, count

    def observe(self, value: float, **labels: str) -> None:
        key = tuple(sorted(labels.items()))
        i = bisect.bisect_left(self.buckets, value)  # le is inclusive
        with self._lock:
            s = self.series.get(key)
            if s is None:
                s = self.series[key] = [0.0] * (len(self.buckets) + 2)
            if i < len(self.buckets):
                s[i] += 1
            s[-2] += value
            s[-1] += 1

    def lines(self) -> List[str]:
        out = self.header()
        for key, s in sorted(self.series.items()):
            cum = 0.0
            for b, c in zip(self.buckets, s):
                cum += c
                out.append(f"{self.name}_bucket{_fmt_labels(key, [('le', _num(b))])} {_num(cum)}")
            out.append(f"{self.name}_bucket{_fmt_labels(key, [('le', '+Inf')])} {_num(s[-1])}")
            out.append(f"{self.name}_sum{_fmt_labels(key)} {_num(s[-2])}")
            out.append(f"{self.name}_count{_fmt_labels(key)} {_num(s[-1])}")
        return out


def render(metrics: Iterable[_Metric]) -> str:
    """The exposition text of ``metrics`` (``Content-Type: text/plain; version=0.0.4``)."""
    return "\n".join(line for m in metrics for line in m.lines()) + "\n"
