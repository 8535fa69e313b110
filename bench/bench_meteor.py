"""METEOR 1.5: pysynth's Java-free flavor vs the Meteor 1.5 jar (pycocoevalcap / nlg-eval), like with like.

    taskset -c 1 python bench/bench_meteor.py [--data ../shared/data] [--system ill_formed] [--rounds 5]
                                              [--cache-build]

Same inputs for both: the MQR test set (1,690 segments, Chu et al. 2020) with one reference each. Run it
under ``taskset -c 1``: every process it starts (the JVMs, the fresh Pythons) inherits the one core.

* both one-shot (cold): a fresh process that reads the two files and prints the corpus score, timed from
  the parent around the whole process (start-up included on both sides), the three commands alternating
  round by round: the jar's own command line
  (``java -Xmx2G -jar meteor-1.5.jar hyp ref -l en -norm``) vs ``pysynth score --metrics meteor`` and a
  three-line Python script calling :func:`pysynth.metrics.meteor.meteor`;
* both warm: the jar kept open (one JVM in ``-stdio`` mode, resources loaded, JIT warmed by untimed
  rounds, every segment streamed in without waiting for the previous answer, then the ``EVAL`` line) vs a
  second call in one Python process (resources loaded, word analyses kept).

Best of ``--rounds`` for every row; corpus scores must be identical and segments equal to 1e-9.
``--cache-build`` also times the one-time paraphrase cache build.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from pysynth.metrics.meteor import meteor, meteor_jar

_SCRIPT = """
import sys
from pysynth.metrics.meteor import meteor
h = open(sys.argv[1], encoding="utf-8").read().split("\\n")[:-1]
r = open(sys.argv[2], encoding="utf-8").read().split("\\n")[:-1]
print(meteor(h, r).score)
"""


def _load(data: Path, system: str):
    test = [json.loads(x) for x in gzip.open(data / "mqr" / "test.jsonl.gz")]
    refs = [r["well_formed"].strip() for r in test]
    if system == "ill_formed":
        return [r["ill_formed"].strip() for r in test], refs
    rel = {r["row_idx"]: r for r in map(json.loads, gzip.open(data / "mqr" / "test_system_rewrites.jsonl.gz"))}
    return [rel[r["row_idx"]][system].strip() for r in test], refs


def _one_shot(cmds, rounds: int):
    """Best wall seconds of each ``(cmd, parse, env)`` in ``cmds`` as a fresh process, and what
    ``parse`` reads from its stdout; the commands alternate within each round (one after the other,
    ``rounds`` times), so a slow spell of the machine hits every side alike."""
    best, got = [float("inf")] * len(cmds), [None] * len(cmds)
    for _ in range(rounds):
        for i, (cmd, parse, env) in enumerate(cmds):
            t = time.perf_counter()
            out = subprocess.run(cmd, capture_output=True, text=True, check=True, env=env)
            best[i] = min(best[i], time.perf_counter() - t)
            got[i] = parse(out.stdout)
    return best, got


class _WarmJar:
    """One JVM in -stdio mode (what pycocoevalcap keeps open), fed without waiting per segment."""

    def __init__(self):
        jar = meteor_jar()
        self.p = subprocess.Popen(["java", "-Xmx2G", "-jar", str(jar), "-", "-", "-stdio", "-l", "en", "-norm"],
                                  cwd=str(jar.parent), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                  stderr=subprocess.DEVNULL, text=True, encoding="utf-8", bufsize=1)

    def score(self, hyps, refs):
        lines = [f"SCORE ||| {' '.join(r.split())} ||| {' '.join(h.split())}\n" for h, r in zip(hyps, refs)]

        def feed():
            self.p.stdin.write("".join(lines))
            self.p.stdin.flush()

        w = threading.Thread(target=feed)
        w.start()
        stats = [self.p.stdout.readline().strip() for _ in lines]
        w.join()
        self.p.stdin.write("EVAL ||| " + " ||| ".join(stats) + "\n")
        self.p.stdin.flush()
        seg = [float(self.p.stdout.readline()) for _ in lines]
        return float(self.p.stdout.readline()), seg

    def close(self):
        self.p.stdin.close()
        self.p.wait(30)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[2] / "shared" / "data"))
    ap.add_argument("--system", default="ill_formed")
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--jar-warmup", type=int, default=3, help="untimed rounds of the kept-open jar (JIT)")
    ap.add_argument("--cache-build", action="store_true")
    a = ap.parse_args()
    hyps, refs = _load(Path(a.data), a.system)
    hyps = [" ".join(x.split()) for x in hyps]  # one line each in the files both tools read
    refs = [" ".join(x.split()) for x in refs]
    n = len(hyps)
    print(f"cores allowed: {sorted(os.sched_getaffinity(0))}  load: {open('/proc/loadavg').read().split()[:3]}")
    if a.cache_build:
        from pysynth.metrics import _meteor_data as d

        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            d.build_paraphrase_cache(d.find_files().paraphrase, Path(tmp) / "p.bin")
            print(f"paraphrase cache build (one time): {time.perf_counter() - t:.1f} s")
    tmp = Path(tempfile.mkdtemp())
    (tmp / "hyp.txt").write_text("\n".join(hyps) + "\n", encoding="utf-8")
    (tmp / "ref.txt").write_text("\n".join(refs) + "\n", encoding="utf-8")
    meteor(hyps[:2], refs[:2])  # the caches exist before any timing
    jar = meteor_jar()

    def jar_final(out: str) -> float:
        return float([x for x in out.splitlines() if x.startswith("Final score:")][0].split()[-1])

    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    cli = Path(sys.executable).with_name("pysynth")
    (j1, p1, c1), (js, ps, cs) = _one_shot([
        (["java", "-Xmx2G", "-jar", str(jar), str(tmp / "hyp.txt"), str(tmp / "ref.txt"), "-l", "en", "-norm"],
         jar_final, None),
        ([sys.executable, "-c", _SCRIPT, str(tmp / "hyp.txt"), str(tmp / "ref.txt")],
         lambda o: float(o.split()[-1]), env),
        ([str(cli), "score", "--metrics", "meteor", "--hyp", str(tmp / "hyp.txt"), "--ref", str(tmp / "ref.txt")],
         lambda o: json.loads(o)["meteor"] / 100.0, env)], a.rounds)
    # warm: the jar kept open, JIT warmed up; pysynth's second call in this process
    wj = _WarmJar()
    try:
        for _ in range(a.jar_warmup):
            wj.score(hyps, refs)
        jw = float("inf")
        for _ in range(a.rounds):
            t = time.perf_counter()
            jws, jseg = wj.score(hyps, refs)
            jw = min(jw, time.perf_counter() - t)
    finally:
        wj.close()
    m = meteor(hyps, refs)
    pw = float("inf")
    for _ in range(a.rounds):
        t = time.perf_counter()
        m = meteor(hyps, refs)
        pw = min(pw, time.perf_counter() - t)
    assert js == ps == jws == m.score, (js, ps, jws, m.score)
    assert abs(cs - m.score) < 1e-12, (cs, m.score)
    diff = max(abs(x - y) for x, y in zip(m.segments, jseg))
    assert diff < 1e-9, diff
    same = sum(x == y for x, y in zip(m.segments, jseg))
    print(f"segments: {n}  corpus METEOR {m.score!r} from all (jar one-shot, jar warm, pysynth); segments "
          f"bit-equal to the jar's: {same} of {n} (max diff {diff:.1e}); impl {m.signature.get('impl')}; "
          f"best of {a.rounds}, cold runs alternating jar / script / CLI")
    print(f"both one-shot (whole process): jar CLI {j1:.3f} s | python script {p1:.3f} s -> {j1 / p1:.1f}x | "
          f"pysynth score CLI {c1:.3f} s -> {j1 / c1:.1f}x")
    print(f"both warm: jar kept open (-stdio, {a.jar_warmup} warm-up rounds) {jw:.3f} s | pysynth second call "
          f"{pw * 1e3:.1f} ms ({pw / n * 1e6:.1f} us/segment) -> {jw / pw:.1f}x")
    print(f"load after: {open('/proc/loadavg').read().split()[:3]}")


if __name__ == "__main__":
    main()
