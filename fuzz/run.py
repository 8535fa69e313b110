"""Fuzz every ``pysynth._core`` binding against its pure-Python twin, one process per target.

Usage (from the repository root)::

    python fuzz/run.py --runs 1000000                       # every target, atheris if installed
    python fuzz/run.py --family retrieval --runs 20000 --engine random
    python fuzz/run.py --target retrieval.search --seconds 600
    python fuzz/run.py --replay /tmp/pysynth-fuzz/crash-retrieval.search-input.bin --target retrieval.search

Engines: ``atheris`` (coverage-guided libFuzzer over the Python code of the twins and the
argument builders; the C++ extension is not instrumented, so its branches guide the search only
through the outcomes they return), or ``random`` (seeded random byte strings; no extra
dependency, used by the CI smoke test ``tests/test_fuzz_smoke.py``).

Each target runs in its own child process, so a crash (segfault, abort, "double free") kills
only the child: the parent reports the input that was running (the child keeps the current input
in a memory-mapped file before every call, and libFuzzer writes its own crash file). A mismatch
(different results, or an input rejected by one backend only, or with another exception type) is
saved as ``mismatch-<target>-<n>.bin`` under ``--out`` and counted; the child goes on.

The summary (per target: inputs run, ok, rejected by both, mismatches, crashes, seconds) is
printed and merged into ``--json`` (default ``<out>/summary.json``).
"""
from __future__ import annotations

import argparse
import json
import mmap
import os
import random
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
CUR_SIZE = 1 << 16  # the current-input file: 4-byte length + up to 64 KiB of input


def _child(args) -> int:
    sys.path.insert(0, str(HERE))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    name = args.target
    cur_path = out / f".current-{name}"
    with open(cur_path, "wb") as f:
        f.truncate(CUR_SIZE + 4)
    cur_f = open(cur_path, "r+b")
    cur = mmap.mmap(cur_f.fileno(), CUR_SIZE + 4)
    stats = {"target": name, "engine": args.engine, "runs": 0, "ok": 0, "rejected": 0, "mismatches": 0,
             "crashes": 0, "seconds": 0.0, "mismatch_files": []}
    stats_path = out / f".stats-{name}.json"
    t0 = time.time()

    if args.engine == "atheris":
        import atheris

        with atheris.instrument_imports(include=["pysynth", "targets", "_parity"]):
            import targets
    else:
        import targets

    def flush():
        stats["seconds"] = round(time.time() - t0, 1)
        tmp = stats_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(stats))
        os.replace(tmp, stats_path)

    def one(data: bytes) -> None:
        data = data[:CUR_SIZE]
        cur[:4] = len(data).to_bytes(4, "little")
        cur[4:4 + len(data)] = data
        stats["runs"] += 1
        try:
            r = targets.check(name, data)
        except targets.Mismatch as exc:
            stats["mismatches"] += 1
            if len(stats["mismatch_files"]) < 20:
                p = out / f"mismatch-{name}-{stats['mismatches'] - 1}.bin"
                p.write_bytes(data)
                stats["mismatch_files"].append(str(p))
                print(f"MISMATCH {name} ({p}): {str(exc)[:400]}", flush=True)
            if stats["mismatches"] >= args.max_mismatches:
                flush()
                os._exit(3)
        else:
            stats[r] += 1
        if stats["runs"] % 2000 == 0:
            flush()
            if args.seconds and time.time() - t0 > args.seconds:
                os._exit(0)

    import atexit

    atexit.register(flush)
    if args.engine == "atheris":
        import atheris

        argv = [sys.argv[0], f"-runs={args.runs}", f"-artifact_prefix={out}/crash-{name}-", "-max_len=2048",
                f"-seed={args.seed}", "-print_final_stats=0"]
        if args.seconds:
            argv.append(f"-max_total_time={int(args.seconds)}")
        atheris.Setup(argv, one)
        atheris.Fuzz()
    else:
        rng = random.Random(f"{args.seed}:{name}")
        for _ in range(args.runs):
            n = rng.choice((rng.randrange(0, 48), rng.randrange(0, 256), rng.randrange(0, 1024)))
            one(rng.randbytes(n))
    flush()
    return 0


def run_target(name: str, args) -> dict:
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stats_path = out / f".stats-{name}.json"
    stats_path.unlink(missing_ok=True)
    cmd = [sys.executable, __file__, "--child", "--target", name, "--runs", str(args.runs), "--engine", args.engine,
           "--seed", str(args.seed), "--out", str(out), "--seconds", str(args.seconds),
           "--max-mismatches", str(args.max_mismatches)]
    if args.nice:
        cmd = ["nice", "-n", str(args.nice)] + cmd
    pp = [x for x in (os.environ.get("PYTHONPATH", ""), str(ROOT)) if x]  # a given tree comes first
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(pp), OMP_NUM_THREADS="1")
    t0 = time.time()
    p = subprocess.run(cmd, env=env, capture_output=True, text=True)
    try:
        stats = json.loads(stats_path.read_text())
    except (OSError, ValueError):
        stats = {"target": name, "engine": args.engine, "runs": 0, "ok": 0, "rejected": 0, "mismatches": 0,
                 "crashes": 0, "mismatch_files": []}
    stats["seconds"] = round(time.time() - t0, 1)
    crashed = p.returncode not in (0, 3)
    if crashed:
        stats["crashes"] = 1
        cur = out / f".current-{name}"
        data = b""
        if cur.exists():
            raw = cur.read_bytes()
            data = raw[4:4 + int.from_bytes(raw[:4], "little")]
        crash = out / f"crash-{name}-input.bin"
        crash.write_bytes(data)
        sig = -p.returncode if p.returncode < 0 else None
        why = f"signal {signal.Signals(sig).name}" if sig else f"exit {p.returncode}"
        tail = (p.stderr or "").strip().splitlines()[-6:]
        stats["crash"] = {"why": why, "input": str(crash), "stderr_tail": tail}
        if args.engine == "random":  # the count includes the input that crashed
            stats["runs"] = max(stats.get("runs", 0), 1)
    return stats


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--target", help="one target, e.g. retrieval.search")
    ap.add_argument("--family", help="every target of one stage, e.g. retrieval")
    ap.add_argument("--runs", type=int, default=10_000, help="inputs per target")
    ap.add_argument("--seconds", type=float, default=0, help="stop a target after this long (0 = no limit)")
    ap.add_argument("--engine", choices=["atheris", "random", "auto"], default="auto")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=os.path.join(tempfile.gettempdir(), "pysynth-fuzz"),
                    help="crash/mismatch inputs and summary.json (default: $TMPDIR/pysynth-fuzz)")
    ap.add_argument("--json", help="summary file to merge into (default <out>/summary.json)")
    ap.add_argument("--nice", type=int, default=19)
    ap.add_argument("--max-mismatches", type=int, default=50)
    ap.add_argument("--replay", help="run one saved input and print the outcome")
    ap.add_argument("--list", action="store_true")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    if args.engine == "auto":
        try:
            import atheris  # noqa: F401
            args.engine = "atheris"
        except ImportError:
            args.engine = "random"
    if args.child:
        return _child(args)
    sys.path.insert(0, str(HERE))
    import targets

    if args.list:
        for fam, names in targets.families().items():
            print(fam, " ".join(names))
        return 0
    if args.replay:
        print(targets.TARGETS[args.target](targets.Src(Path(args.replay).read_bytes())))
        print(targets.check(args.target, Path(args.replay).read_bytes()))
        return 0
    names = [args.target] if args.target else (targets.families()[args.family] if args.family else list(targets.TARGETS))
    summary_path = Path(args.json or Path(args.out) / "summary.json")
    summary = json.loads(summary_path.read_text()) if summary_path.exists() else {}
    bad = 0
    for name in names:
        st = run_target(name, args)
        summary[name] = st
        summary_path.parent.mkdir(parents=True, exist_ok=True)
        summary_path.write_text(json.dumps(summary, indent=1, sort_keys=True))
        flag = "CRASH " + st["crash"]["why"] if st.get("crashes") else ("MISMATCH" if st["mismatches"] else "ok")
        print(f"{name:38s} {st['runs']:>9,} inputs  ok {st['ok']:>8,}  rejected {st['rejected']:>8,}  "
              f"mismatches {st['mismatches']}  {st['seconds']:.0f}s  {flag}", flush=True)
        bad += bool(st.get("crashes") or st["mismatches"])
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
