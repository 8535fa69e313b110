"""MQR stages' speed: mining a Stack Exchange dump (pysynth's streamed expat reader + the miner vs a
plain ``xml.etree.ElementTree.iterparse`` script doing the same join), rewrites/s (onnxruntime vs
torch, beam 4 and greedy), METEOR segments/s (the jar).

    python bench/mqr_speed.py [--data ../shared/data] [--repeat 5]

Peak memory: ``ru_maxrss`` of a fresh process per mining run. Prints a markdown table.
"""
from __future__ import annotations

import argparse
import gzip
import json
import subprocess
import sys
import time
from pathlib import Path

ITERPARSE = r'''
import gzip, sys, time, resource
import xml.etree.ElementTree as ET
d = sys.argv[1]
t0 = time.perf_counter()
first, edited, n = {}, set(), 0
for _, el in ET.iterparse(gzip.open(d + "/PostHistory.xml.gz")):
    if el.tag == "row":
        n += 1
        t = el.get("PostHistoryTypeId")
        if t == "1":
            first.setdefault(el.get("PostId"), el.get("Text"))
        elif t in ("4", "7"):
            edited.add(el.get("PostId"))
    el.clear()
pairs = 0
for _, el in ET.iterparse(gzip.open(d + "/Posts.xml.gz")):
    if el.tag == "row":
        n += 1
        if el.get("Id") in edited and el.get("Title") is not None:
            pairs += 1
    el.clear()
print(n, pairs, time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
'''

PYSYNTH = r'''
import sys, time, resource
from pysynth.mqr.mining import title_pairs
from collections import Counter
from pysynth.stackexchange import Dump
d = Dump(sys.argv[1])
t0 = time.perf_counter()
c = Counter()
pairs = sum(1 for _ in title_pairs(d, "initial", c))
print(0, pairs, time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)
'''


def rows_of(d: Path) -> int:
    return sum(sum(1 for line in gzip.open(d / f) if b"<row " in line) for f in ("PostHistory.xml.gz", "Posts.xml.gz"))


def run(code: str, d: Path):
    out = subprocess.run([sys.executable, "-c", code, str(d)], capture_output=True, text=True, check=True)
    n, pairs, secs, rss = out.stdout.split()
    return int(pairs), float(secs), int(rss) / 1024


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--repeat", type=int, default=5)
    a = ap.parse_args()
    data = Path(a.data)
    dump = max((p for p in (data / "stackexchange_dumps").iterdir() if (p / "PostHistory.xml.gz").exists()),
               key=lambda p: (p / "PostHistory.xml.gz").stat().st_size)
    rows = rows_of(dump)
    lines = [f"# MQR stages: speed ({time.strftime('%Y-%m-%d')}, `python bench/mqr_speed.py`)", "",
             f"Mining `{dump.name}` (the largest shared dump: {rows:,} rows in PostHistory + Posts), best of "
             f"{a.repeat} fresh processes:", "", "| reader | pairs found | seconds | rows/s | peak RSS MiB |",
             "|---|---|---|---|---|"]
    res = {}
    for name, code in (("pysynth (expat, streamed) title_pairs", PYSYNTH), ("xml.etree iterparse + clear()", ITERPARSE)):
        best = min((run(code, dump) for _ in range(a.repeat)), key=lambda r: r[1])
        res[name] = best
        lines.append(f"| {name} | {best[0]} | {best[1]:.3f} | {rows / best[1]:,.0f} | {best[2]:.0f} |")
    r = list(res.values())
    lines += ["", f"pysynth / iterparse: {r[1][1] / r[0][1]:.2f}x faster (the iterparse script only joins ids; "
              "pysynth's pairs also apply the migration/merge checks).", ""]
    # rewrites/s
    from pysynth.mqr.rewrite import Rewriter

    test = [json.loads(x)["ill_formed"] for x in gzip.open(data / "mqr" / "test.jsonl.gz")]
    lines += ["Rewrites of the 1,690 MQR test questions (one process, 2 threads):", "",
              "| backend | beam | rewrites/s |", "|---|---|---|"]
    import torch

    torch.set_num_threads(2)
    for backend in ("onnx", "torch"):
        rw = Rewriter(backend=backend, threads=2) if backend == "onnx" else Rewriter(backend="torch")
        for beam in (4, 1):
            rw.rewrite(test[:50], beam=beam)
            t0 = time.perf_counter()
            rw.rewrite(test, beam=beam)
            lines.append(f"| {backend} | {beam} | {len(test) / (time.perf_counter() - t0):.0f} |")
    try:
        from pysynth.metrics.meteor import meteor

        refs = [json.loads(x)["well_formed"] for x in gzip.open(data / "mqr" / "test.jsonl.gz")]
        t0 = time.perf_counter()
        meteor(test, refs, flavor="jar")
        dt = time.perf_counter() - t0
        lines += ["", f"METEOR (jar, JVM start and paraphrase table load included): {len(test)} segments in "
                      f"{dt:.1f} s = {len(test) / dt:.0f} segments/s; the Java-free flavor: bench/bench_meteor.py."]
    except (ImportError, RuntimeError) as exc:
        lines += ["", f"METEOR jar not run: {exc}"]
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
