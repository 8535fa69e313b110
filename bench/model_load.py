"""Load time and first-call latency of one model folder against another (issue 28: a model
package's graphs on one shared external-data file vs the checkout's graphs with their weights
embedded). Each measurement is a fresh process (page cache warm for both: one unmeasured run of
each first); the two folders alternate.

    python bench/model_load.py EMBEDDED_DIR EXTERNAL_DIR [--runs 7]

Prints one JSON line per folder: median load seconds (``text2text(path, "onnx", threads=1)``:
store checks and the three onnxruntime sessions), median first ``generate`` seconds (beam 5, one
sentence), median peak RSS (MiB), and the outputs' agreement.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys

CHILD = r"""
import json, resource, sys, time
t0 = time.perf_counter()
from pysynth.decoding.config import SearchConfig
from pysynth.models.text2text import text2text
t1 = time.perf_counter()
m = text2text(sys.argv[1], "onnx", threads=1)
t2 = time.perf_counter()
out = m.generate(["I like to read books in the evening."], SearchConfig(beam=5))
t3 = time.perf_counter()
print(json.dumps({"load_s": t2 - t1, "first_s": t3 - t2, "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
                  "texts": out[0].texts, "scores": [float(s) for s in out[0].scores]}))
"""


def _run(path: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, path], capture_output=True, text=True, check=True).stdout
    return json.loads(out.strip().splitlines()[-1])


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("folders", nargs=2)
    p.add_argument("--runs", type=int, default=7)
    args = p.parse_args(argv)
    for f in args.folders:
        _run(f)  # page cache warm for both
    runs = {f: [] for f in args.folders}
    for _ in range(args.runs):
        for f in args.folders:
            runs[f].append(_run(f))
    ref = runs[args.folders[0]][0]
    for f, rs in runs.items():
        print(json.dumps({"folder": f, "runs": len(rs),
                          "load_s": round(statistics.median(r["load_s"] for r in rs), 4),
                          "first_call_s": round(statistics.median(r["first_s"] for r in rs), 4),
                          "peak_rss_mib": round(statistics.median(r["rss_mib"] for r in rs), 1),
                          "same_outputs": all(r["texts"] == ref["texts"] and r["scores"] == ref["scores"] for r in rs)}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
