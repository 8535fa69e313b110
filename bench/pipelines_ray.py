"""Local vs Ray executor of the K2Q pipeline (pysynth.pipelines): wall, CPU time, peak memory.

    python bench/pipelines_ray.py --n 1000000 --workers 2 [--executors local,ray] [--chunk-size 20000]

Each run is ``pysynth k2q synthesize --in CORPUS --out OUT --executor E --keep-parts`` in a
subprocess.  Its whole process tree (the driver and, for Ray, the GCS, raylet and worker
processes it starts) is sampled every 0.25 s from /proc: peak of the summed RSS and of the
summed PSS (proportional set size: the memory-mapped context shared by Ray's actors counts once),
and CPU time = sum over every process seen of its last user+system time.  The output bytes of
every executor are compared (sha256), and the run directory's context (tokenized corpus,
keyword-generator state, SDM index) is measured: bytes per question for docs/ray.md.
Rows are appended to ``bench/results/pipelines_ray.jsonl``.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
WORK = Path(os.environ.get("PYSYNTH_SCALE_DIR", "/tmp/pysynth_scale"))
TICK = os.sysconf("SC_CLK_TCK")


def corpus(n: int, seed: int = 0) -> Path:
    from pysynth.data.synthetic import write_corpus

    path = WORK / f"corpus_{n}_s{seed}.jsonl.gz"
    if not path.exists():
        WORK.mkdir(parents=True, exist_ok=True)
        write_corpus(path, n, seed=seed)
    return path


def _tree(root: int) -> list:
    """``root`` and all its descendants (from /proc/*/stat parent links)."""
    kids: dict = {}
    for d in os.listdir("/proc"):
        if d.isdigit():
            try:
                with open(f"/proc/{d}/stat") as f:
                    ppid = int(f.read().rsplit(")", 1)[1].split()[1])
            except (OSError, IndexError, ValueError):
                continue
            kids.setdefault(ppid, []).append(int(d))
    out, todo = [], [root]
    while todo:
        p = todo.pop()
        out.append(p)
        todo += kids.get(p, [])
    return out


def _sample(pid: int):
    """(rss_kib, pss_kib, cpu_s) of one process, or None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        cpu = (int(fields[11]) + int(fields[12])) / TICK
        rss = pss = 0
        with open(f"/proc/{pid}/smaps_rollup") as f:
            for line in f:
                if line.startswith("Rss:"):
                    rss = int(line.split()[1])
                elif line.startswith("Pss:"):
                    pss = int(line.split()[1])
        return rss, pss, cpu
    except (OSError, IndexError, ValueError):
        return None


def _dir_bytes(d: Path) -> int:
    return sum(p.stat().st_size for p in d.rglob("*") if p.is_file())


def run_one(src: Path, executor: str, workers: int, chunk_size: int) -> dict:
    out = WORK / f"bench_{executor}.jsonl"
    parts = out.with_name(out.name + ".parts")
    shutil.rmtree(parts, ignore_errors=True)
    cmd = [sys.executable, "-m", "pysynth", "k2q", "synthesize", "--in", str(src), "--out", str(out),
           "--workers", str(workers), "--chunk-size", str(chunk_size), "--executor", executor,
           "--keep-parts", "--quiet", "--restart"]
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    load0 = os.getloadavg()
    t = time.perf_counter()
    p = subprocess.Popen(cmd, env=env)
    peak_rss = peak_pss = peak_procs = 0
    cpu: dict = {}
    while p.poll() is None:
        rss = pss = 0
        pids = _tree(p.pid)
        for pid in pids:
            s = _sample(pid)
            if s is not None:
                rss, pss = rss + s[0], pss + s[1]
                cpu[pid] = max(cpu.get(pid, 0.0), s[2])
        peak_rss, peak_pss, peak_procs = max(peak_rss, rss), max(peak_pss, pss), max(peak_procs, len(pids))
        time.sleep(0.25)
    wall = time.perf_counter() - t
    if p.returncode:
        raise SystemExit(f"{executor} run failed ({p.returncode})")
    ctx = parts / "context"
    row = {
        "bench": "pipelines_executor", "executor": executor, "n": None, "workers": workers,
        "chunk_size": chunk_size, "wall_s": round(wall, 2), "cpu_s": round(sum(cpu.values()), 2),
        "peak_rss_mib": round(peak_rss / 1024, 1), "peak_pss_mib": round(peak_pss / 1024, 1),
        "peak_processes": peak_procs,
        "sha256": hashlib.sha256(out.read_bytes()).hexdigest(),
        "meta_sha256": hashlib.sha256(out.with_name(out.name + ".meta.json").read_bytes()).hexdigest(),
        "context_bytes": {d.name: _dir_bytes(d) for d in sorted(ctx.iterdir()) if d.is_dir()},
        "parts_bytes": sum(f.stat().st_size for f in parts.glob("part-*/*") if f.is_file()),
        "load_avg_before": load0, "load_avg_after": os.getloadavg(),
    }
    shutil.rmtree(parts, ignore_errors=True)
    return row


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--chunk-size", type=int, default=20_000)
    ap.add_argument("--executors", default="local,ray")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    sys.path.insert(0, str(ROOT))
    src = corpus(args.n, args.seed)
    rows = []
    for ex in args.executors.split(","):
        row = run_one(src, ex, args.workers, args.chunk_size)
        row.update(n=args.n, machine=f"{os.uname().nodename} {os.cpu_count()} cores",
                   date=time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime()))
        row["context_bytes_per_question"] = {k: round(v / args.n, 1) for k, v in row["context_bytes"].items()}
        rows.append(row)
        print(json.dumps(row), flush=True)
        out = HERE / "results" / "pipelines_ray.jsonl"
        out.parent.mkdir(exist_ok=True)
        with open(out, "a") as f:
            f.write(json.dumps(row) + "\n")
    if len({r["sha256"] + r["meta_sha256"] for r in rows}) > 1:
        raise SystemExit("executors disagree: " + ", ".join(f"{r['executor']} {r['sha256'][:12]}" for r in rows))
    print("| executor | wall s | CPU s | peak RSS MiB | peak PSS MiB | processes |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r['executor']} | {r['wall_s']} | {r['cpu_s']} | {r['peak_rss_mib']} | {r['peak_pss_mib']} | "
              f"{r['peak_processes']} |")


if __name__ == "__main__":
    main()
