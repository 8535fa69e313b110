"""bench_text.py JSON -> the Markdown tables of bench/RESULTS_text.md.

    python bench/report_text.py /tmp/text.json [more runs ...]

For each group: wall time (best and median round), CPU seconds per call (robust when other
processes share the machine), and gensim's time divided by pysynth's (wall: median/median;
CPU: per call). Extra runs are listed as a variance line per group (median wall of each run).
"""
from __future__ import annotations

import json
import sys
from collections import defaultdict

ORDER = ["text-tokenize", "text-learn", "text-learn-conn", "text-pipeline", "text-apply"]


def load(path):
    with open(path, encoding="utf-8") as f:
        return json.load(f)


def rows(run):
    groups = defaultdict(list)
    for b in run["benchmarks"]:
        groups[b["group"]].append(b)
    return groups


def main(paths):
    runs = [load(p) for p in paths]
    first = runs[0]
    mi = first["machine_info"]
    print(f"Machine: {mi.get('cpu_model', mi.get('cpu', {}).get('brand_raw'))}, {mi.get('nproc')} usable cores, "
          f"Python {mi.get('python_version_full', mi.get('python_version'))}; command: `{first.get('command', '?')}`\n")
    groups = rows(first)
    for g in ORDER + sorted(set(groups) - set(ORDER)):
        if g not in groups:
            continue
        bs = groups[g]
        ref = next((b for b in bs if b["extra_info"].get("tool") == "gensim"), None)
        print(f"### {g}\n")
        print("| tool | workers | best (s) | median (s) | CPU/call (s) | gensim/this (wall) | gensim/this (CPU) | other load (cores) |")
        print("|---|---|---|---|---|---|---|---|")
        for b in sorted(bs, key=lambda b: (b["extra_info"].get("tool") != "pysynth", b["extra_info"].get("workers") or 0)):
            st, ei = b["stats"], b["extra_info"]
            cpu = ei.get("cpu_seconds_per_call")
            if ref is not None and ref is not b:
                rw = f"{ref['stats']['median'] / st['median']:.1f}x"
                rc = ref["extra_info"].get("cpu_seconds_per_call")
                rcpu = f"{rc / cpu:.1f}x" if rc and cpu else "-"
            else:
                rw = rcpu = "1.0x" if b is ref else "-"
            print(f"| {ei.get('tool')} | {ei.get('workers')} | {st['min']:.3f} | {st['median']:.3f} | "
                  f"{cpu if cpu is not None else '-'} | {rw} | {rcpu} | {ei.get('other_load_cores', '-')} |")
        if len(runs) > 1:
            var = []
            for b in bs:
                meds = []
                for r in runs:
                    m = next((x for x in r["benchmarks"] if x["fullname"] == b["fullname"]), None)
                    if m:
                        meds.append(f"{m['stats']['median']:.3f}")
                var.append(f"{b['name']}: {' / '.join(meds)}")
            print("\nMedian wall per run: " + "; ".join(var))
        print()


if __name__ == "__main__":
    main(sys.argv[1:])
