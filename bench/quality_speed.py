"""Speed of the well-formedness classifier (pysynth.quality): texts/s of the shipped int8-weight
ONNX model on onnxruntime with 1 and 2 threads (tokenizer included), on the 3,080
query-wellformedness test queries, and its accuracy there. The float32 torch weights are not
shipped, so there is no torch row.

    python bench/quality_speed.py [--data ../shared/data]
"""
from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    a = ap.parse_args()
    rows = [json.loads(x) for x in gzip.open(Path(a.data) / "query_wellformedness" / "test.jsonl.gz")]
    texts = [r["query"] for r in rows]
    from pysynth.quality import WellformednessModel

    lines = ["| engine | threads | texts/s | test accuracy |", "|---|---|---|---|"]
    for threads in (1, 2):
        m = WellformednessModel(threads=threads)
        m(texts[:64])
        t0 = time.perf_counter()
        p = m(texts)
        dt = time.perf_counter() - t0
        acc = float(((p >= 0.5) == [r["wellformedness"] >= 0.8 for r in rows]).mean())
        lines.append(f"| pysynth onnxruntime (int8 weights) | {threads} | {len(texts) / dt:.0f} | {100 * acc:.1f} % |")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
