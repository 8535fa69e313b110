"""Scale runs of the K2Q pipeline and SDM throughput vs corpus size (issue: WikiAnswers scale).

Heavy (minutes to an hour), so a script rather than a pytest-benchmark test. Corpora come from
the Zipfian generator fitted to the real question sets (``pysynth.data.synthetic``).

    python bench/k2q_scale.py pipeline --n 1000000 --workers 2     # full pipeline, m=20, N=100
                                                                   # [--executor ray]
    python bench/k2q_scale.py sdm --sizes 100000,1000000,3170000   # search / rank_of q/s vs size, workers
                                                                   # (KQGM and content-word queries)

Results are appended as JSON lines to ``bench/results/k2q_scale.jsonl``.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
WORK = Path(os.environ.get("PYSYNTH_SCALE_DIR", "/tmp/pysynth_scale"))


def corpus(n: int, seed: int = 0) -> Path:
    """The synthetic corpus of ``n`` questions (made once, cached in $PYSYNTH_SCALE_DIR)."""
    from pysynth.data.synthetic import write_corpus

    path = WORK / f"corpus_{n}_s{seed}.jsonl.gz"
    if not path.exists():
        WORK.mkdir(parents=True, exist_ok=True)
        t = time.perf_counter()
        write_corpus(path, n, seed=seed)
        print(f"corpus {n:,}: {time.perf_counter() - t:.1f} s -> {path}", file=sys.stderr)
    return path


def _record(row: dict) -> None:
    row.update(machine=f"{platform.node()} {os.cpu_count()} cores", date=time.strftime("%Y-%m-%d %H:%M"),
               load_avg=os.getloadavg())
    out = HERE / "results" / "k2q_scale.jsonl"
    out.parent.mkdir(exist_ok=True)
    with open(out, "a") as f:
        f.write(json.dumps(row) + "\n")
    print(json.dumps(row, indent=1))


def cmd_pipeline(args) -> None:
    src = corpus(args.n, args.seed)
    out = WORK / f"pairs_{args.n}.jsonl"
    code = (
        "import json, sys, time; from pysynth.k2q.synthesize import synthesize, SynthesisConfig; "
        f"r = synthesize({str(src)!r}, {str(out)!r}, workers={args.workers}, chunk_size={args.chunk_size}, "
        f"config=SynthesisConfig(m={args.m}, n_results={args.N}), resume=False, executor={args.executor!r}); "
        "print('RESULT ' + json.dumps({'timings': r.timings, 'rows': r.meta['rows'], "
        "'coverage': r.meta['vocabulary_coverage']}))"
    )
    t = time.perf_counter()
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    wall = time.perf_counter() - t
    sys.stderr.write(p.stderr[-3000:])
    if p.returncode:
        raise SystemExit(f"pipeline failed ({p.returncode})")
    res = json.loads(next(x for x in p.stdout.splitlines() if x.startswith("RESULT "))[7:])
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024  # KiB -> MiB (Linux)
    _record({"bench": "k2q_pipeline", "n": args.n, "m": args.m, "N": args.N, "workers": args.workers,
             "executor": args.executor,
             "wall_s": wall, "peak_rss_mib": peak, "sdm_queries": args.n * args.m + args.n,
             "questions_per_s": args.n / res["timings"]["chunks_s"], **res})


def cmd_sdm(args) -> None:
    import numpy as np

    from pysynth import sampling
    from pysynth.k2q.data import read_jsonl
    from pysynth.k2q.keywords import KeywordGenerator
    from pysynth.retrieval import Index

    for n in [int(x) for x in args.sizes.split(",")]:
        rows = list(read_jsonl(corpus(n, args.seed)))
        qs = [r["question"] for r in rows]
        t = time.perf_counter()
        gen = KeywordGenerator([], qs, None, [r.get("cluster_id") for r in rows], phrases=False, workers=2)
        ix = Index.build(np.asarray(gen.corpus.ids), np.asarray(gen.corpus.offsets), len(gen.vocab), workers=2)
        build = time.perf_counter() - t
        rng = np.random.default_rng(0)
        sub = np.sort(rng.choice(n, size=min(args.queries, n), replace=False))
        model = sampling.KeywordModel(model="paraphrase", strategy="discriminative")
        sub = sub[gen.samplable(model)[sub]]
        cands = gen.generate_ids(model, m=1, seed=0, subset=sub)
        sets = {"kqgm": (np.asarray(cands.ids), np.asarray(cands.offsets), sub)}
        # the query shape, as compare_anserini.py draws it (3-7 distinct content words
        # of a random question, question order)
        from compare_anserini import make_queries

        sets["content"] = make_queries(gen.corpus, int(sub.size))
        for kind, (q, qo, targets) in sets.items():
            for w in (1, 2):
                for what in ("search", "rank_of"):
                    dt = float("inf")
                    for _ in range(args.rounds):  # best of rounds: the machine is shared
                        t = time.perf_counter()
                        if what == "search":
                            ix.search(q, qo, k=100, workers=w)
                        else:
                            ix.rank_of(q, qo, targets=targets, n=100, workers=w)
                        dt = min(dt, time.perf_counter() - t)
                    _record({"bench": f"sdm_{what}", "queries_kind": kind, "n_docs": n, "queries": int(targets.size),
                             "workers": w, "q_per_s": targets.size / dt, "rounds": args.rounds,
                             "mean_query_terms": float(np.diff(qo).mean()), "index_build_s": build})
        del ix, gen, rows, qs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("pipeline")
    p.add_argument("--n", type=int, default=1_000_000)
    p.add_argument("--m", type=int, default=20)
    p.add_argument("--N", type=int, default=100)
    p.add_argument("--workers", type=int, default=2)
    p.add_argument("--chunk-size", type=int, default=50_000)
    p.add_argument("--executor", choices=["local", "ray"], default="local",
                   help="pysynth.pipelines executor (bench/pipelines_ray.py compares both)")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=cmd_pipeline)
    s = sub.add_parser("sdm")
    s.add_argument("--sizes", default="100000,1000000,3170000")
    s.add_argument("--queries", type=int, default=20_000)
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--rounds", type=int, default=3)
    s.set_defaults(func=cmd_sdm)
    args = ap.parse_args()
    args.func(args)


if __name__ == "__main__":
    main()
