"""A toy row stage for the row-stage tests: each row's text gets an upper-cased ``out`` and a list
of ``cands``; a length-based score stands in for the well-formedness classifier (no model)."""
from __future__ import annotations

from typing import List

from pysynth import io, pipelines, signature


def toy_score(texts: List[str]) -> List[float]:
    """A deterministic "probability" per text: its length / 10, at most 1."""
    return [min(1.0, len(t) / 10) for t in texts]


class ToyRowKernel(pipelines.RowKernel):
    sides = ("extra",)

    def __init__(self, field: str = "out", filters: tuple = (), fail_at=None):
        self.filter_field, self.filters, self.fail_at = field, filters, fail_at

    def generate(self, state, rows, start, workers):
        if self.fail_at is not None and start >= self.fail_at:
            raise RuntimeError(f"toy failure at {start}")
        out = [{**r, "out": r["text"].upper(), "cands": [r["text"], r["text"][::-1], r["text"][:3]]} for r in rows]
        return pipelines.Chunk(out, sides={"extra": [{"i": start + j} for j in range(len(rows)) if (start + j) % 3 == 0]},
                               counts={"seen": len(rows)})


class ToyRowStage(pipelines.RowStage):
    name = "toy rows"

    def __init__(self, rows, out, side_out=None, **kernel):
        super().__init__(rows, out)
        self.side_out = side_out
        self.kernel = ToyRowKernel(**kernel)

    def signature(self):
        f = [(x.name, x.threshold) for x in self.kernel.filters]
        return signature.signature("tests.toy_rows", 1, {"field": self.kernel.filter_field, "filters": f},
                                   self.input_fingerprint())

    def write(self, parts, info):
        n = io.write_rows(self.out, self.iter_rows(parts))
        if self.side_out is not None:
            io.write_rows(self.side_out, self.iter_rows(parts, "extra"))
        c = self.counts(parts)
        return {"rows": n, "seen": c["seen"], "dropped": c.get("dropped_wellformed", 0),
                "chunks_resumed": info.chunks_resumed, "timings": dict(info.timings)}
