"""A toy stage for the runner tests: item i -> a few pseudo-random numbers keyed by (seed, i),
ragged, so parts have different shapes; ``finish`` writes JSON lines in input order."""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from pysynth import io, pipelines, store

FORMAT = "tests.toy"


class ToyKernel(pipelines.Kernel):
    def __init__(self, seed: int, sleep: float = 0.0, fail_at=None, calls=None):
        self.seed, self.sleep, self.fail_at, self.calls = seed, sleep, fail_at, calls

    def open(self, context: Path):
        return store.load(context / "toy", FORMAT, (1,), mmap=True).arrays["values"]

    def run_chunk(self, values, start, stop, workers=1):
        if self.calls is not None:
            self.calls.append((start, stop))
        if self.fail_at is not None and start >= self.fail_at:
            raise RuntimeError(f"toy failure at {start}")
        if self.sleep:
            time.sleep(self.sleep)
        lens = (values[start:stop] % 4).astype(np.int64)
        off = np.zeros(stop - start + 1, np.int64)
        np.cumsum(lens, out=off[1:])
        item = np.repeat(np.arange(start, stop), lens)
        draws = np.array([np.random.default_rng([self.seed, int(i)]).random() for i in np.unique(item)])
        x = draws[np.searchsorted(np.unique(item), item)] if item.size else np.zeros(0)
        return {"x": x.astype(np.float64) + (item % 2), "off": off}

    def check(self, d, n):
        return set(d) == {"x", "off"} and d["off"].shape == (n + 1,) and int(d["off"][-1]) == d["x"].shape[0]


class ToyStage(pipelines.Stage):
    name = "toy"

    def __init__(self, values, out, seed=0, **kernel_kw):
        self.values = np.asarray(values, dtype=np.int64)
        self.out, self.seed = Path(out), seed
        self.kernel = ToyKernel(seed, **kernel_kw)
        self.prepared = 0

    def signature(self):
        from pysynth import signature

        return signature.signature(FORMAT, 1, {"seed": self.seed},
                                   {"items": int(self.values.size), "sha256": signature.fingerprint(self.values.tolist())})

    def prepare(self, context, workers, log):
        self.prepared += 1
        log("[toy] prepare")
        store.save(context / "toy", FORMAT, 1, arrays={"values": self.values})
        return int(self.values.size)

    def finish(self, context, parts, info):
        rows = []
        for p in parts:
            off, x = p["off"], p["x"]
            rows += [{"x": x[a:b].tolist()} for a, b in zip(off[:-1].tolist(), off[1:].tolist())]
        io.write_jsonl(self.out, rows)
        io.write_json(self.out.with_name(self.out.name + ".meta.json"), dict(self.signature(), rows=len(rows)))
        return info


def main(argv):
    """``python _toy_stage.py OUT N CHUNK SLEEP [STOP]``: run the toy stage (subprocess tests)."""
    out, n, chunk, sleep = argv[0], int(argv[1]), int(argv[2]), float(argv[3])
    stop = int(argv[4]) if len(argv) > 4 else None
    stage = ToyStage(np.arange(n) * 7 % 11, out, sleep=sleep)
    pipelines.run(stage, out, chunk_size=chunk, progress=False, _stop_after_chunks=stop)


if __name__ == "__main__":
    import sys

    main(sys.argv[1:])
