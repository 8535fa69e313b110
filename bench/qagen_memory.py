"""Peak memory of roundtrip QA generation on long contexts (issue 27, item 1).

Contexts are real text: held-out SQuAD 2.0 dev paragraphs (``dev-v2.0.explorer_rest``) joined with
blank spaces until they hold ``N`` characters (cut at a word boundary). Each measurement runs in
its own process and reads that process's peak RSS from ``os.wait4`` (``ru_maxrss``), so numbers
do not mix.

* ``cli``: ``pysynth qagen generate --in ctx.json --out out.jsonl --keep-discarded`` on one context of N characters
  (``--threads 1``).
* ``server``: the ``/v1/qagen`` adapter's batch call (what one batch of the server runs, no HTTP)
  on ``--server-contexts`` contexts of ``--server-chars`` characters; and the adapter's cost
  estimate (:func:`pysynth.qagen.served.estimate_cost`) for the same request.

``python bench/qagen_memory.py --chars 10000 20000 100000 [--server-contexts 8] [--server-chars 20000]``
prints one JSON line per run (``peak_rss_mb``, ``wall_s``, rows out).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SQUAD = HERE.parents[1] / "shared" / "data" / "squad2_dev_subset" / "dev-v2.0.explorer_rest.json.gz"


def long_context(n_chars: int, offset: int = 0) -> str:
    """``n_chars`` characters of real text: SQuAD paragraphs from paragraph ``offset`` on, joined."""
    from pysynth.qagen.data import read_squad

    paras = [c.text for c in read_squad(SQUAD)]
    out, i = [], offset
    while sum(len(p) + 1 for p in out) < n_chars:
        out.append(paras[i % len(paras)])
        i += 1
    text = " ".join(out)[:n_chars]
    return text[:text.rfind(" ")] if " " in text[-50:] else text


def _measure(cmd, env=None):
    t = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    out = p.stdout.read()
    err = p.stderr.read()
    _, status, ru = os.wait4(p.pid, 0)
    rc = os.waitstatus_to_exitcode(status)
    return {"rc": rc, "peak_rss_mb": round(ru.ru_maxrss / 1024, 1), "wall_s": round(time.perf_counter() - t, 1),
            "stdout": out.decode()[-400:], "stderr": err.decode()[-400:] if rc else ""}


def run_cli(n_chars: int, threads: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        src, dst = Path(tmp) / "ctx.json", Path(tmp) / "out.jsonl"
        src.write_text(json.dumps({"data": [{"title": "long", "paragraphs": [{"context": long_context(n_chars)}]}]}))
        r = _measure([sys.executable, "-m", "pysynth", "qagen", "generate", "--in", str(src), "--out", str(dst),
                      "--threads", str(threads), "--keep-discarded"])
        r["rows"] = sum(1 for _ in dst.open()) if dst.exists() else 0
    r.update(mode="cli", chars=n_chars)
    return r


_SERVER_CHILD = r"""
import json, sys
sys.path.insert(0, {bench!r})
from qagen_memory import long_context
from pysynth.qagen.served import ADAPTER
texts = [long_context({chars}, offset=7 * i) for i in range({n})]
est = None
try:
    from pysynth.qagen.served import estimate_cost
    est = estimate_cost(texts)
except ImportError:
    pass
m = ADAPTER.load(None, threads={threads})
out = ADAPTER.call(m.model, (), texts)
print(json.dumps({{"rows": len(out), "estimate": est}}, default=str))
"""


def run_server(n: int, n_chars: int, threads: int) -> dict:
    code = _SERVER_CHILD.format(bench=str(HERE), chars=n_chars, n=n, threads=threads)
    r = _measure([sys.executable, "-c", code])
    r.update(mode="server", contexts=n, chars=n_chars)
    return r


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--chars", type=int, nargs="*", default=[10000, 20000, 100000])
    ap.add_argument("--server-contexts", type=int, default=0, help="0: no server run")
    ap.add_argument("--server-chars", type=int, default=20000)
    ap.add_argument("--threads", type=int, default=1)
    a = ap.parse_args(argv)
    if not SQUAD.exists():
        sys.exit(f"needs {SQUAD}")
    for n in a.chars:
        print(json.dumps(run_cli(n, a.threads)), flush=True)
    if a.server_contexts:
        print(json.dumps(run_server(a.server_contexts, a.server_chars, a.threads)), flush=True)


if __name__ == "__main__":
    main()
