"""Progress of a pipeline run on stderr: a tqdm bar on a terminal, plain periodic lines otherwise
(logs, CI, ``nohup``), and plain lines when tqdm is not installed.  tqdm is imported lazily."""
from __future__ import annotations

import logging
import math
import sys
import time

__all__ = ["Progress", "say"]


_log = logging.getLogger("pysynth.pipelines")


def say(msg: str) -> None:
    """A stage or progress line: an INFO record of ``pysynth.pipelines`` once the program set the
    level of the ``pysynth`` logger (the CLI does: ``-q``/``-v``), else printed on stderr as before."""
    if logging.getLogger("pysynth").level != logging.NOTSET:
        _log.info(msg)
    else:
        print(msg, file=sys.stderr, flush=True)


def _hms(seconds: float) -> str:
    return time.strftime("%H:%M:%S", time.gmtime(math.ceil(seconds)))


class Progress:
    """Items done of ``total``, with rate and ETA.

    The rate counts the items this run computed (not those resumed from disk) over the wall time
    since the first chunk started, so it is right for parallel executors too.  Plain lines are
    printed at most every ``every`` seconds, and always for the last chunk.
    """

    def __init__(self, total: int, enabled: bool, label: str, initial: int = 0, every: float = 10.0,
                 unit: str = "items"):
        self.total, self.enabled, self.label, self.unit = int(total), bool(enabled), label, unit
        self.done, self.computed = int(initial), 0
        self.every, self.t0, self.last = every, time.perf_counter(), -math.inf
        self.bar = None
        if self.enabled and sys.stderr.isatty():
            try:
                from tqdm import tqdm
            except ImportError:
                tqdm = None
            if tqdm is not None:
                self.bar = tqdm(total=self.total, initial=self.done, desc=f"[{label}]", unit=" " + unit,
                                unit_scale=True, file=sys.stderr, dynamic_ncols=True, smoothing=0.1)

    def update(self, n_new: int, seconds: float = 0.0) -> None:
        self.done += n_new
        self.computed += n_new
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.update(n_new)
            return
        now = time.perf_counter()
        if self.done < self.total and now - self.last < self.every:
            return
        self.last = now
        rate = self.computed / max(now - self.t0, 1e-9)
        left = self.total - self.done
        eta = "00:00:00" if left <= 0 else ("--:--" if rate <= 0 else _hms(left / rate))
        say(f"[{self.label}] {self.done:,}/{self.total:,} {self.unit} ({100 * self.done / max(self.total, 1):.1f}%)"
            f"  {rate:,.0f} q/s  ETA {eta}")

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None
