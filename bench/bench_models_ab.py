"""Before/after on the same machine: T0 beam/greedy decoding speed of two checkouts of pysynth.

Each measurement runs in a fresh process that imports pysynth from ROOT (so two checkouts,
e.g. ``main`` and a branch, never share a process), decodes the 800 T0 keyword queries with
the onnxruntime backend (batch 32, one thread) ``--rounds`` times and prints one JSON line:
tokens/s per round (best hypothesis per query incl. ``</s>``, as ``bench_models.py``), tokens per
CPU-second, the load average and an MD5 of the 800 best outputs (equal outputs: equal hashes).
Checkouts alternate ``--reps`` times, so a change of machine load hits both alike::

    python bench/bench_models_ab.py --roots ../main,. --beam 5 --reps 3 --rounds 3 > ab.jsonl
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

CHILD = r'''
import sys, time, json, os, hashlib
root, beam, rounds, threads = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4])
sys.path.insert(0, root)
from pysynth.decoding.ort import OrtBackend
from pysynth.k2q.data import load_seed_pairs
from pysynth.models.generate import Generator
from pysynth.k2q.neural import DEFAULT_MODEL
from pysynth.models.vocab import tokenize
g = Generator.load(DEFAULT_MODEL, backend="onnx")
g.backend = OrtBackend(g.backend.path, device="cpu", threads=threads)
kws = [k for k in (p.keywords for p in load_seed_pairs()) if any(w in g.vocab.stoi for w in tokenize(k))]
g.generate(kws[:32], beam=beam, n=1, batch_size=32)
per_s, per_cpu_s = [], []
for _ in range(rounds):
    t0, c0 = time.perf_counter(), time.process_time()
    res = g.generate(kws, beam=beam, n=1, batch_size=32, dedupe=False)
    dt, cpu = time.perf_counter() - t0, time.process_time() - c0
    ntok = sum(len(tokenize(r.texts[0])) + 1 for r in res if r.texts)
    per_s.append(round(ntok / dt))
    per_cpu_s.append(round(ntok / cpu))
print(json.dumps({"root": os.path.abspath(root), "step_path": getattr(g.backend, "step_path", "topk"),
                  "beam": beam, "tokens_per_s": per_s, "tokens_per_cpu_s": per_cpu_s,
                  "loadavg": round(os.getloadavg()[0], 2),
                  "best_md5": hashlib.md5("\n".join(r.texts[0] for r in res).encode()).hexdigest()[:12]}))
'''


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--roots", required=True, help="comma-separated checkout folders")
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=1)
    args = ap.parse_args(argv)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    for _ in range(args.reps):
        for root in args.roots.split(","):
            cmd = [sys.executable, "-c", CHILD, root, str(args.beam), str(args.rounds), str(args.threads)]
            out = subprocess.run(cmd, capture_output=True, text=True, env=env, check=True, cwd=root)
            print(out.stdout.strip().splitlines()[-1], flush=True)
    print(json.dumps({"date": time.strftime("%Y-%m-%d %H:%M"), "command": " ".join(sys.argv)}), flush=True)


if __name__ == "__main__":
    main()
