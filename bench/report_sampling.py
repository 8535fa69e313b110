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
    stats_rows = {name: bs for (g, name), bs in rows.items() if g == "sampling statistics"}
    for k in [k for k in rows if k[0] == "sampling statistics"]:
        del rows[k]
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
    # 1 -> 2 workers: best wall time of w1 over best wall time of w2, per model
    for g in groups:
        w = {n.split("[")[1].split("-")[0]: min(b["stats"]["min"] for b in bs)
             for (gg, n), bs in rows.items() if gg == g and n.startswith("test_cpp[")}
        if "w1" in w and "w2" in w:
            print(f"- {g}: 1 -> 2 workers {w['w1']:.2f} s -> {w['w2']:.2f} s = {w['w1'] / w['w2']:.2f}x")
    if stats_rows:
        print()
        print("| statistics (cf, df over the questions) | best wall s | CPU s | tokens/s |")
        print("|---|---|---|---|")
        for name, bs in sorted(stats_rows.items()):
            b = min(bs, key=lambda x: x["stats"]["min"])
            e = b["extra_info"]
            print(f"| {name.replace('test_', '')} | {b['stats']['min']:.3f} | {e['cpu_s']:.3f} | "
                  f"{e['tokens_per_s'] / 1e6:.0f}M |")
    print()
    for p, cpu, nproc, l0, l1, cmd in meta:
        print(f"- `{p}`: {cpu}, {nproc} cores, load average at start {l0}, at end {l1}; `{cmd}`")


if __name__ == "__main__":
    main(sys.argv[1:])
