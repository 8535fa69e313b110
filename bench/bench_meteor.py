"""METEOR 1.5 segments/s: pysynth's Java-free flavor vs the Meteor 1.5 jar (pycocoevalcap / nlg-eval).

    python bench/bench_meteor.py [--data ../shared/data] [--system ill_formed] [--rounds 3] [--cache-build]

Same inputs for both: the MQR test set (1,690 segments, Chu et al. 2020) with one reference each.
Rounds alternate jar / pysynth in one process; scores must be identical. "cold" is a fresh
Python process scoring once (loads the word lists from the jar and memory-maps the paraphrase
cache: what one ``pysynth score`` run pays); "warm" is a second call in the same process. The
jar's time is one call of the wrapper (JVM start, resource loading, scoring: what nlg-eval and
pycocoevalcap pay per call). "loaded, new words": resources loaded, none of the segments' words
analysed yet (word analyses are kept per process). ``--cache-build`` also times the one-time
paraphrase cache build.
"""
from __future__ import annotations

import argparse
import gzip
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pysynth.metrics.meteor import meteor

_COLD = """
import json, sys, time
t0 = time.perf_counter()
from pysynth.metrics.meteor import meteor
h, r = json.load(open(sys.argv[1]))
m = meteor(h, r, workers=int(sys.argv[2]))
t1 = time.perf_counter()
print(json.dumps({"s": t1 - t0, "score": m.score}))
"""
# resources loaded, but none of these words analysed yet (the word cache is per process)
_FIRST = """
import json, sys, time
from pysynth.metrics.meteor import meteor
h, r = json.load(open(sys.argv[1]))
meteor(["unrelated words"], ["other words"])
t0 = time.perf_counter()
m = meteor(h, r, workers=int(sys.argv[2]))
print(json.dumps({"s": time.perf_counter() - t0, "score": m.score}))
"""


def _load(data: Path, system: str):
    test = [json.loads(x) for x in gzip.open(data / "mqr" / "test.jsonl.gz")]
    refs = [r["well_formed"].strip() for r in test]
    if system == "ill_formed":
        return [r["ill_formed"].strip() for r in test], refs
    rel = {r["row_idx"]: r for r in map(json.loads, gzip.open(data / "mqr" / "test_system_rewrites.jsonl.gz"))}
    return [rel[r["row_idx"]][system].strip() for r in test], refs


def _jar_warm(hyps, refs, rounds):
    """The jar kept open (pycocoevalcap's ``Meteor``: one JVM, resources loaded once, segments sent
    over -stdio): seconds of the best warm call after one untimed call, and its corpus score."""
    from pycocoevalcap.meteor.meteor import Meteor

    gts = {i: [r] for i, r in enumerate(refs)}
    res = {i: [h] for i, h in enumerate(hyps)}
    m = Meteor()
    try:
        m.compute_score(gts, res)
        ts, score = [], None
        for _ in range(rounds):
            t = time.perf_counter()
            score, _ = m.compute_score(gts, res)
            ts.append(time.perf_counter() - t)
    finally:
        m.close() if hasattr(m, "close") else None
    return min(ts), score


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--system", default="ill_formed")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--workers", type=int, default=1)
    ap.add_argument("--cache-build", action="store_true")
    a = ap.parse_args()
    hyps, refs = _load(Path(a.data), a.system)
    n = len(hyps)
    if a.cache_build:
        from pysynth.metrics import _meteor_data as d

        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            d.build_paraphrase_cache(d.find_files().paraphrase, Path(tmp) / "p.bin")
            print(f"paraphrase cache build (one time): {time.perf_counter() - t:.1f} s")
    with tempfile.NamedTemporaryFile("w", suffix=".json", delete=False) as f:
        json.dump([hyps, refs], f)
        inp = f.name
    meteor(hyps[:2], refs[:2])  # make sure the cache exists
    jar, cold, first, warm = [], [], [], []
    for _ in range(a.rounds):
        t = time.perf_counter()
        mj = meteor(hyps, refs, flavor="jar")
        jar.append(time.perf_counter() - t)
        out = subprocess.run([sys.executable, "-c", _COLD, inp, str(a.workers)], capture_output=True, text=True,
                             check=True)
        got = json.loads(out.stdout.strip().splitlines()[-1])
        cold.append(got["s"])
        out = subprocess.run([sys.executable, "-c", _FIRST, inp, str(a.workers)], capture_output=True, text=True,
                             check=True)
        first.append(json.loads(out.stdout.strip().splitlines()[-1])["s"])
        t = time.perf_counter()
        me = meteor(hyps, refs, workers=a.workers)
        warm.append(time.perf_counter() - t)
        assert got["score"] == me.score == mj.score, (got["score"], me.score, mj.score)
        diff = max(abs(x - y) for x, y in zip(me.segments, mj.segments))
        assert diff < 1e-9, diff
    mj_, mc, mw = statistics.median(jar), statistics.median(cold), statistics.median(warm)
    mf = statistics.median(first)
    print(f"segments: {n}  corpus METEOR {me.score:.6f} (jar {mj.score:.6f}, identical; max segment diff {diff:.1e})")
    print(f"jar (pycocoevalcap meteor-1.5.jar, -l en -norm): {mj_:.3f} s  {n / mj_:,.0f} seg/s")
    print(f"pysynth exact, cold process (load + score):      {mc:.3f} s  {n / mc:,.0f} seg/s  {mj_ / mc:.1f}x")
    print(f"pysynth exact, loaded, words new to the process:  {mf:.3f} s  {n / mf:,.0f} seg/s  {mj_ / mf:.1f}x")
    print(f"pysynth exact, warm call (same inputs again):     {mw:.3f} s  {n / mw:,.0f} seg/s  {mj_ / mw:.1f}x")
    print(f"impl: {me.signature.get('impl')}  rounds: {a.rounds} (medians)")
    # like with like: both one-shot (a fresh process each; the jar's JVM start + load vs pysynth's
    # interpreter-level load), both warm (resources loaded, the same segments scored again)
    jw, js = _jar_warm(hyps, refs, a.rounds)
    assert abs(js - me.score) < 1e-4, (js, me.score)
    print(f"like with like -- one-shot: jar {mj_:.3f} s vs pysynth cold process {mc:.3f} s -> {mj_ / mc:.1f}x; "
          f"warm: jar kept open (pycocoevalcap Meteor, best of {a.rounds}) {jw:.3f} s vs pysynth warm "
          f"{mw:.3f} s -> {jw / mw:.1f}x (jar warm score {js:.6f})")


if __name__ == "__main__":
    main()
