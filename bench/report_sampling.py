"""Tables of bench/RESULTS_sampling.md from pytest-benchmark JSON runs of bench_sampling.py.

    python bench/report_sampling.py /tmp/sampling_run1.json [/tmp/sampling_run2.json ...]

Per benchmark: best wall time over the runs, the CPU time of that round (process time:
all threads), throughput per CPU-second (= per core, robust on a busy machine) and per
wall-second, and the speed-up over the NumPy baseline per CPU-second.
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict


def main(paths):
    rows = defaultdict(list)
    meta = []
    for p in paths:
        d = json.load(open(p))
        mi = d["machine_info"]
        meta.append((p, mi.get("cpu_model") or mi.get("cpu", {}).get("brand_raw"), mi.get("nproc"),
                     mi.get("loadavg_at_start"), d.get("loadavg_at_end"), d.get("command")))
        for b in d["benchmarks"]:
            rows[(b["group"], b["name"])].append(b)
    print("| group | implementation | questions | candidates/s per core (CPU time) | terms/s per core | "
          "candidates/s (wall) | best wall s | CPU s | vs NumPy (per core) |")
    print("|---|---|---|---|---|---|---|---|---|")
    groups = sorted({g for g, _ in rows})
    for g in groups:
        best = {}
        for (gg, name), bs in rows.items():
            if gg != g:
                continue
            b = max(bs, key=lambda x: x["extra_info"]["candidates_per_cpu_s"])
            best[name] = b
        numpy = next((b for n, b in best.items() if "numpy" in n), None)
        ref = numpy["extra_info"]["candidates_per_cpu_s"] if numpy else None
        for name, b in sorted(best.items(), key=lambda kv: -kv[1]["extra_info"]["candidates_per_cpu_s"]):
            e = b["extra_info"]
            ratio = f"{e['candidates_per_cpu_s'] / ref:.2g}x" if ref else ""
            print(f"| {g} | {name.split('[')[0].replace('test_', '')}[{name.split('[')[1]} | {e['questions']:,} | "
                  f"{e['candidates_per_cpu_s'] / 1e6:.3f}M | {e['terms_per_cpu_s'] / 1e6:.2f}M | "
                  f"{e['candidates_per_s'] / 1e6:.3f}M | {b['stats']['min']:.2f} | {e['cpu_s']:.2f} | {ratio} |")
    print()
    for p, cpu, nproc, l0, l1, cmd in meta:
        print(f"- `{p}`: {cpu}, {nproc} cores, load average at start {l0}, at end {l1}; `{cmd}`")


if __name__ == "__main__":
    main(sys.argv[1:])
