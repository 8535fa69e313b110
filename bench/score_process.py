"""Whole-process ``pysynth score`` vs the sacrebleu CLI (corpus BLEU, 13a), and in-process corpus BLEU vs
``sacrebleu.corpus_bleu`` on one worker: same inputs, same run, scores checked equal.

    python bench/score_process.py [--data ../shared/data] [--lines 100000] [--rounds 3] [--profile]

The text is real: SQuAD 1.1 train questions (Rajpurkar et al. 2016, CC BY-SA 4.0), each hypothesis
paired with another question on the same paragraph as its reference (so n-grams overlap as in real
system output); past the 87,599 questions the pairs go on with the question two further on.
"Whole process" is a fresh process from start to exit: interpreter, imports, reading the files,
signing the input, scoring, writing the JSON (what a shell script pays per call), for both tools,
with their modules byte-compiled (one untimed run of each first).
Rounds alternate the two tools; medians. ``--profile`` prints cProfile of ``pysynth score`` in process.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BIN = Path(sys.executable).parent


def squad_pairs(data: Path, n: int):
    """``n`` (hypothesis, reference) pairs of SQuAD questions from the same paragraph."""
    d = json.load(gzip.open(data / "squad11_train" / "train-v1.1.reconstructed.json.gz"))
    paras = [[" ".join(qa["question"].split()) for qa in p["qas"]] for a in d["data"] for p in a["paragraphs"]]
    paras = [p for p in paras if len(p) >= 2]
    hyps, refs = [], []
    for shift in (1, 2, 3):
        for qs in paras:
            for i, q in enumerate(qs):
                hyps.append(q)
                refs.append(qs[(i + shift) % len(qs)])
        if len(hyps) >= n:
            break
    return hyps[:n], refs[:n]


# byte-compiled modules cached as an installed package has them (this machine's shells set
# PYTHONDONTWRITEBYTECODE, which makes every process compile every module it imports)
ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _timed(cmd):
    t = time.perf_counter()
    out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=ENV)
    return time.perf_counter() - t, out.stdout


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--lines", type=int, default=100_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--profile", action="store_true")
    a = ap.parse_args()
    import sacrebleu

    from pysynth.metrics import corpus_bleu

    hyps, refs = squad_pairs(Path(a.data), a.lines)
    tmp = Path(tempfile.mkdtemp())
    (tmp / "hyp.txt").write_text("\n".join(hyps) + "\n", encoding="utf-8")
    (tmp / "ref.txt").write_text("\n".join(refs) + "\n", encoding="utf-8")
    ours = [str(BIN / "pysynth"), "score", "--hyp", str(tmp / "hyp.txt"), "--ref", str(tmp / "ref.txt"),
            "--metrics", "bleu"]
    # the sacrebleu CLI's own script, or its module where sacrebleu sits outside the venv (PYTHONPATH)
    sb = [str(BIN / "sacrebleu")] if (BIN / "sacrebleu").exists() else [sys.executable, "-m", "sacrebleu"]
    theirs = [*sb, str(tmp / "ref.txt"), "-i", str(tmp / "hyp.txt"), "-m", "bleu", "-w", "4"]
    ps, ss = [], []
    _timed(theirs), _timed(ours)  # untimed: byte-compile both tools once
    for _ in range(a.rounds):
        t, out = _timed(theirs)
        ss.append(t)
        s_score = json.loads(out)["score"]
        t, out = _timed(ours)
        ps.append(t)
        p_score = json.loads(out)["bleu"]
        assert round(p_score, 4) == s_score, (p_score, s_score)
    mp, ms = statistics.median(ps), statistics.median(ss)
    print(f"{len(hyps):,} lines (SQuAD 1.1 train questions), corpus BLEU {p_score:.4f} (sacrebleu CLI {s_score})")
    print(f"whole process: sacrebleu CLI {ms:.3f} s, pysynth score {mp:.3f} s -> {ms / mp:.1f}x "
          f"(medians of {a.rounds}; all: sacrebleu {[round(x, 3) for x in ss]}, pysynth {[round(x, 3) for x in ps]})")

    # in process, one worker: the library calls (tokenize + count + corpus sums), inputs already in memory
    pi, si = [], []
    for _ in range(a.rounds):
        t = time.perf_counter()
        sb = sacrebleu.corpus_bleu(hyps, [refs])
        si.append(time.perf_counter() - t)
        t = time.perf_counter()
        pb = corpus_bleu(hyps, [refs], workers=1)
        pi.append(time.perf_counter() - t)
        assert abs(pb.score - sb.score) < 1e-9, (pb.score, sb.score)
    mpi, msi = min(pi), min(si)
    print(f"in process, 1 worker: sacrebleu.corpus_bleu {msi:.3f} s, pysynth corpus_bleu {mpi:.4f} s -> "
          f"{msi / mpi:.0f}x (best of {a.rounds}; score {pb.score:.6f} both)")
    if a.profile:
        import cProfile
        import pstats

        from pysynth.cli import main as cli_main

        cProfile.runctx("cli_main(ours[1:] + ['--out', str(tmp / 'o.json')])", globals(),
                        {"cli_main": cli_main, "ours": ours, "tmp": tmp}, str(tmp / "p.out"))
        pstats.Stats(str(tmp / "p.out")).sort_stats("cumtime").print_stats(25)


if __name__ == "__main__":
    main()
