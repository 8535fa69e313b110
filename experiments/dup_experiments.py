"""Rücklé et al. (2019) patterns on the data that exists here (bench/RESULTS_dup.md).

    python experiments/dup_experiments.py prep  OUT          # eval sets, exclusions, WS-TB pairs of all five dumps
    python experiments/dup_experiments.py eval  OUT NAME=MODEL [...]   # dense and hybrid rows -> OUT/results.jsonl
    python experiments/dup_experiments.py paired OUT SET A=MODEL B=MODEL   # bootstrap CI of the MAP difference
    python experiments/dup_experiments.py table OUT          # markdown of OUT/results.jsonl

Eval sets (``pysynth dup eval-data``, 20 BM25-hard negatives each): MQR test edit-duplicates, ComQA
dev clusters, and the PostLinks duplicates of ``stackexchange_dumps``. Training pairs: ``pysynth dup
pairs`` per dump, leaving out every question of a PostLinks eval row and every MQR question of the
same site (ai, beer, coffee share sites with MQR), 3 negatives per question.
"""
from __future__ import annotations

import gzip
import json
import subprocess
import sys
from pathlib import Path

from pysynth.data import shared_dir

SETS = {"mqr": ("mqr", "test"), "comqa": ("comqa", "train"), "postlinks": ("postlinks", "test")}
NEGATIVES = 3


def _cli(*args: str) -> str:
    r = subprocess.run([sys.executable, "-m", "pysynth", *args], capture_output=True, text=True)
    if r.returncode:
        raise SystemExit(f"pysynth {' '.join(args)} failed: {r.stderr.strip()}")
    sys.stderr.write(r.stderr)
    return r.stdout


def prep(out: Path) -> None:
    from pysynth.dup.data import exclude_ids

    out.mkdir(parents=True, exist_ok=True)
    data = shared_dir(None)
    for name, (source, split) in SETS.items():
        _cli("dup", "eval-data", "--source", source, "--split", split, "--negatives", "20", "--out",
             str(out / f"eval_{name}.jsonl"))
    links = [json.loads(x) for x in (out / "eval_postlinks.jsonl").read_text().splitlines()]
    excl = exclude_ids(links)
    mqr_ids: dict = {}
    for split in ("dev", "test"):
        with gzip.open(data / "mqr" / f"{split}.jsonl.gz", "rt", encoding="utf-8") as f:
            for line in f:
                r = json.loads(line)
                mqr_ids.setdefault(r["category"], set()).add(str(r["post_id"]))
    counts = {}
    parts = []
    for dump in sorted(p for p in (data / "stackexchange_dumps").iterdir() if p.is_dir()):
        ids = sorted(set(excl.get(dump.name, [])) | mqr_ids.get(dump.name, set()))
        ex = out / f"exclude_{dump.name}.txt"
        ex.write_text("".join(i + "\n" for i in ids))
        part = out / f"pairs_{dump.name}.jsonl"
        counts[dump.name] = {"excluded_ids": len(ids), **json.loads(_cli(
            "dup", "pairs", "--dump", str(dump), "--out", str(part), "--negatives", str(NEGATIVES),
            "--exclude-ids", str(ex)).strip().splitlines()[-1])}
        parts.append(part)
    with open(out / "pairs_wstb.jsonl", "w", encoding="utf-8") as f:
        for p in parts:
            f.write(p.read_text(encoding="utf-8"))
    (out / "pairs_counts.json").write_text(json.dumps(counts, indent=1))
    print(json.dumps(counts, indent=1))


def evaluate_models(out: Path, specs) -> None:
    """Dense scores once per (model, set); the dense and the hybrid (BM25-fused) rows from them."""
    from pysynth.dup.evaluate import check_rows, metrics, score_candidates
    from pysynth.dup.search import _scaled

    with open(out / "results.jsonl", "a", encoding="utf-8") as f:
        for spec in specs:
            name, _, model = spec.partition("=")
            model = model or name
            for set_name in SETS:
                rows, _ = check_rows(json.loads(x) for x in (out / f"eval_{set_name}.jsonl").read_text().splitlines())
                dense = score_candidates(rows, model)
                recs = [(name, dense)]
                if model not in ("bm25", "sdm"):
                    bm = score_candidates(rows, "bm25")
                    recs.append((name + " + BM25 (hybrid)", [0.5 * _scaled(d) + 0.5 * _scaled(b)
                                                            for d, b in zip(dense, bm)]))
                for n, sc in recs:
                    rec = {"name": n, "set": set_name, "queries": len(rows), **metrics(rows, sc)}
                    print(json.dumps(rec), flush=True)
                    f.write(json.dumps(rec) + "\n")


def paired(out: Path, set_name: str, a: str, b: str, samples: int = 2000) -> dict:
    """Paired bootstrap (seed 0) of the per-query AP difference ``a - b`` (``NAME=MODEL`` each) on
    one eval set: the mean MAP difference and its 95 % interval, x100."""
    import numpy as np

    from pysynth import ranking as R
    from pysynth.dup.evaluate import check_rows, score_candidates

    rows, _ = check_rows(json.loads(x) for x in (out / f"eval_{set_name}.jsonl").read_text().splitlines())
    labels = [[0] * len(r["negatives"]) + [1] * len(r["positives"]) for r in rows]
    ap = []
    for spec in (a, b):
        sc = score_candidates(rows, spec.partition("=")[2] or spec)
        ap.append(np.array([R.mean_average_precision([s.tolist()], [lab]) for s, lab in zip(sc, labels)]))
    d = ap[0] - ap[1]
    boot = d[np.random.default_rng(0).integers(0, len(d), (samples, len(d)))].mean(1)
    rec = {"set": set_name, "pair": f"{a.partition('=')[0]} - {b.partition('=')[0]}",
           "mean_MAP_diff": round(100 * float(d.mean()), 2),
           "ci95": [round(100 * float(np.percentile(boot, q)), 2) for q in (2.5, 97.5)]}
    print(json.dumps(rec))
    return rec


def table(out: Path) -> None:
    rows = [json.loads(x) for x in (out / "results.jsonl").read_text().splitlines()]
    last = {}
    for r in rows:
        last[(r["name"], r["set"])] = r
    names = list(dict.fromkeys(r["name"] for r in rows))
    print("| model | " + " | ".join(f"{s} MAP | {s} P@1 | {s} AUC(.05)" for s in SETS) + " |")
    print("|---" * (1 + 3 * len(SETS)) + "|")
    for n in names:
        cells = []
        for s in SETS:
            r = last.get((n, s))
            cells += [f"{r['MAP']:.1f}", f"{r['P@1']:.1f}", f"{r['AUC(0.05)']:.1f}"] if r else ["-"] * 3
        print(f"| {n} | " + " | ".join(cells) + " |")


if __name__ == "__main__":
    cmd, out = sys.argv[1], Path(sys.argv[2])
    if cmd == "prep":
        prep(out)
    elif cmd == "eval":
        evaluate_models(out, sys.argv[3:])
    elif cmd == "paired":
        paired(out, sys.argv[3], sys.argv[4], sys.argv[5])
    elif cmd == "table":
        table(out)
    else:
        raise SystemExit(f"unknown command {cmd!r}: prep | eval | paired | table")
