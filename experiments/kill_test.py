"""kill -9 at random moments, then rerun: the output must be byte-identical (issue 17, long jobs).

For every pipeline the runner (:mod:`pysynth.pipelines`) serves -- ``k2q synthesize``,
``paraphrase``, ``qagen generate``, ``dup pairs`` -- on a small input with small chunks (so a
kill lands between, inside and after chunk saves, in ``prepare`` and in ``finish``):

1. one uninterrupted run gives the reference output (and its duration T);
2. ``--kills`` times: start the same command, SIGKILL it after a random delay in [0, 0.9 T]
   (seeded), rerun it to completion, compare the output bytes with the reference (and
   ``OUT.meta.json`` without its timing fields), and record whether the rerun resumed chunks.

A full disk is simulated (``--full-disk``, root only) by running ``k2q synthesize`` with its run
directory on a tmpfs filled up to its last 1.4 MiB, then freeing space and rerunning.

Usage::

    python experiments/kill_test.py --kills 8 --json bench/results/kill_test.json

Writes a JSON summary; ``bench/RESULTS_hardening.md`` records the numbers of a run.
"""
from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

PARAPHRASE_QS = ["how fast is a honda crf 230", "what is the capital of france", "who wrote war and peace",
                 "how do i make cold brew coffee", "when was the eiffel tower built", "why is the sky blue",
                 "what is the population of new york", "how many legs does a spider have"]


def _k2q(work: Path):
    from pysynth.data import k2q_demo

    inp = work / "q.jsonl"
    if not inp.exists():
        inp.write_text("".join(json.dumps({"id": f"q{i}", "question": r["question"]}) + "\n"
                               for i, r in enumerate(k2q_demo()[:400])))
    return ["k2q", "synthesize", "--in", str(inp), "--m", "5", "--n-results", "10", "--chunk-size", "25"]


def _paraphrase(work: Path):
    inp = work / "p.jsonl"
    if not inp.exists():
        inp.write_text("".join(json.dumps({"id": i, "question": q}) + "\n" for i, q in enumerate(PARAPHRASE_QS)))
    return ["paraphrase", "--in", str(inp), "--beams", "2", "--groups", "2", "--chunk-size", "1", "--flat"]


def _qagen(work: Path):
    return ["qagen", "generate", "--contexts", "sample", "--chunk-size", "2", "--threads", "1"]


def _dup(work: Path):
    dump = Path(os.environ.get("PYSYNTH_SHARED_DATA", ROOT.parent / "shared" / "data")) / "stackexchange_dumps" / "coffee"
    if not dump.exists():
        return None
    return ["dup", "pairs", "--dump", str(dump), "--negatives", "1", "--chunk-size", "200"]


PIPELINES = {"k2q synthesize": _k2q, "paraphrase": _paraphrase, "qagen generate": _qagen, "dup pairs": _dup}
TIMING = ("seconds", "_s", "time", "elapsed", "per_s", "timings")


def _strip_timing(x):
    if isinstance(x, dict):
        return {k: _strip_timing(v) for k, v in x.items() if not any(t in k for t in TIMING)}
    if isinstance(x, list):
        return [_strip_timing(v) for v in x]
    return x


def _outputs(out: Path):
    data = out.read_bytes() if out.exists() else None
    meta_p = out.with_name(out.name + ".meta.json")
    meta = _strip_timing(json.loads(meta_p.read_text())) if meta_p.exists() else None
    return data, meta


def _clean(out: Path):
    for p in out.parent.glob(out.name + "*"):
        shutil.rmtree(p) if p.is_dir() else p.unlink()


def _cmd(argv, out):
    return [sys.executable, "-m", "pysynth", *argv, "--out", str(out)]


def _env():
    env = dict(os.environ, PYTHONPATH=str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", ""), OMP_NUM_THREADS="1")
    env.pop("PYSYNTH_DEBUG", None)
    return env


def run_pipeline(name: str, argv, work: Path, kills: int, rng: random.Random, log) -> dict:
    out = work / "out.jsonl"
    _clean(out)
    t0 = time.monotonic()
    r = subprocess.run(_cmd(argv, out), env=_env(), capture_output=True, text=True)
    T = time.monotonic() - t0
    if r.returncode != 0:
        return {"pipeline": name, "error": r.stderr.strip().splitlines()[-1:]}
    ref = _outputs(out)
    res = {"pipeline": name, "command": "pysynth " + " ".join(argv[:2]) + " ...", "reference_s": round(T, 2),
           "output_bytes": len(ref[0]), "kills": []}
    log(f"{name}: reference run {T:.1f}s, {len(ref[0]):,} bytes")
    for k in range(kills):
        _clean(out)
        delay = rng.uniform(0.0, 0.9 * T)  # reruns are faster than the (cold) reference run
        p = subprocess.Popen(_cmd(argv, out), env=_env(), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(delay)
        finished_before_kill = p.poll() is not None
        if not finished_before_kill:
            p.send_signal(signal.SIGKILL)
        p.wait()
        run_dir = out.with_name(out.name + ".parts")
        parts = len(list(run_dir.glob("part-*"))) if run_dir.exists() else 0
        r = subprocess.run(_cmd(argv, out), env=_env(), capture_output=True, text=True)
        resumed = [x for x in r.stderr.splitlines() if "[resume]" in x and "chunks already done" in x]
        got = _outputs(out)
        same = r.returncode == 0 and got[0] == ref[0] and got[1] == ref[1]
        leftovers = sorted(p.name for p in work.glob(".*.tmp")) + sorted(p.name for p in work.glob("*.tmp"))
        res["kills"].append({"delay_s": round(delay, 2), "killed": not finished_before_kill, "parts_on_disk": parts,
                             "resumed": resumed[0].split("] ", 1)[1] if resumed else None, "rerun_exit": r.returncode,
                             "identical": same, "temp_leftovers": leftovers})
        log(f"  kill {k + 1}: at {delay:.2f}s ({'killed' if not finished_before_kill else 'had finished'}), "
            f"{parts} parts on disk -> rerun {'identical' if same else 'DIFFERENT'}"
            + (f" ({resumed[0].strip()})" if resumed else ""))
    res["identical"] = sum(k["identical"] for k in res["kills"])
    res["killed"] = sum(k["killed"] for k in res["kills"])
    return res


def full_disk(work: Path, log) -> dict:
    """k2q synthesize with the output (and so its run directory) on an almost full tmpfs."""
    mnt = work / "tmpfs"
    mnt.mkdir(exist_ok=True)
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64m", "tmpfs", str(mnt)], capture_output=True).returncode:
        return {"skipped": "cannot mount a tmpfs (needs root)"}
    try:
        argv = _k2q(work)
        out = mnt / "out.jsonl"
        ballast = mnt / "ballast"
        free = os.statvfs(mnt).f_bavail * os.statvfs(mnt).f_frsize
        ballast.write_bytes(b"\0" * (free - 1400 * 1024))  # leave 1.4 MiB: the run dies among the part saves
        r = subprocess.run(_cmd(argv, out), env=_env(), capture_output=True, text=True)
        lines = r.stderr.strip().splitlines()
        first = {"exit": r.returncode, "stderr_last": lines[-1] if lines else "", "traceback": "Traceback" in r.stderr,
                 "parts_kept": len(list(mnt.glob("out.jsonl.parts/part-*")))}
        log(f"full disk: exit {r.returncode}: {first['stderr_last'][:300]}")
        ballast.unlink()
        r2 = subprocess.run(_cmd(argv, out), env=_env(), capture_output=True, text=True)
        ref = work / "ref_fd.jsonl"
        subprocess.run(_cmd(argv, ref), env=_env(), capture_output=True, text=True, check=True)
        same = r2.returncode == 0 and out.read_bytes() == ref.read_bytes()
        resumed = [x for x in r2.stderr.splitlines() if "chunks already done" in x]
        log(f"full disk: after freeing space the rerun exits {r2.returncode}, "
            f"{'identical' if same else 'DIFFERENT'} ({resumed[0].strip() if resumed else 'no chunks resumed'})")
        return {"first_run": first, "rerun_exit": r2.returncode, "identical": same,
                "resumed": resumed[0].split("] ", 1)[1] if resumed else None}
    finally:
        subprocess.run(["umount", str(mnt)], capture_output=True)


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--kills", type=int, default=8)
    ap.add_argument("--seed", type=int, default=17)
    ap.add_argument("--only", action="append", choices=sorted(PIPELINES), help="pipelines to run (default all)")
    ap.add_argument("--work", default=None, help="work directory (default: a temporary one)")
    ap.add_argument("--json", default=str(ROOT / "bench" / "results" / "kill_test.json"))
    ap.add_argument("--full-disk", action="store_true")
    args = ap.parse_args(argv)
    import tempfile

    work_root = Path(args.work or tempfile.mkdtemp(prefix="pysynth-kill-"))
    rng = random.Random(args.seed)
    summary = {"date": time.strftime("%Y-%m-%d"), "kills_per_pipeline": args.kills, "seed": args.seed,
               "pipelines": []}

    def log(msg):
        print(msg, flush=True)

    for name in args.only or list(PIPELINES):
        work = work_root / name.replace(" ", "_")
        work.mkdir(parents=True, exist_ok=True)
        argv_ = PIPELINES[name](work)
        if argv_ is None:
            summary["pipelines"].append({"pipeline": name, "skipped": "input data not found"})
            log(f"{name}: skipped (no data)")
            continue
        summary["pipelines"].append(run_pipeline(name, argv_, work, args.kills, rng, log))
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(summary, indent=1))
    if args.full_disk:
        summary["full_disk"] = full_disk(work_root, log)
    Path(args.json).write_text(json.dumps(summary, indent=1))
    bad = [p for p in summary["pipelines"] if "kills" in p and p["identical"] != len(p["kills"])]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
