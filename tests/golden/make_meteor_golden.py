"""Golden METEOR 1.5 values (the jar that pycocoevalcap ships, nlg-eval's ``-l en -norm``) for the
Java-free implementation to match and for CI without Java.

    python tests/golden/make_meteor_golden.py [--data ../shared/data]   # ~2 min (one JVM per system)

Writes ``tests/golden/meteor_mqr.json``: 200 MQR test segments (ill-formed input, reference and
the paper's LSTM / Transformer rewrites; CC BY-SA 4.0, Chu et al. 2020) with each segment's
METEOR and the corpus METEOR of those 200, and the corpus METEOR of every system on the whole
shared test subset (1,690 rows) beside the paper's Table 6 column.
"""
from __future__ import annotations

import argparse
import gzip
import json
from pathlib import Path

from pysynth.metrics.meteor import meteor

PAPER = {"ill_formed": 33.4, "lstm": 32.7, "transformer": 36.4, "GEC": 34.4, "nmt_de": 28.4, "nmt_fr": 27.5}


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[3] / "shared" / "data"))
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "meteor_mqr.json"))
    a = ap.parse_args()
    d = Path(a.data) / "mqr"
    test = [json.loads(x) for x in gzip.open(d / "test.jsonl.gz")]
    rel = {r["row_idx"]: r for r in map(json.loads, gzip.open(d / "test_system_rewrites.jsonl.gz"))}
    refs = [r["well_formed"].strip() for r in test]
    outs = {"ill_formed": [r["ill_formed"].strip() for r in test]}
    outs.update({s: [rel[r["row_idx"]][s].strip() for r in test] for s in ("lstm", "transformer", "GEC", "nmt_de",
                                                                           "nmt_fr")})
    full = {s: meteor(h, refs).score for s, h in outs.items()}
    small = {}
    for s in ("ill_formed", "lstm", "transformer"):
        m = meteor(outs[s][:200], refs[:200])
        small[s] = {"corpus": m.score, "segments": m.segments, "hyps": outs[s][:200]}
    doc = {"tool": "meteor-1.5.jar (pycocoevalcap 1.2) -l en -norm, corpus score = the EVAL line's last value",
           "refs": refs[:200], "systems": small,
           "full_test": {"n": len(test), "corpus": full, "paper": PAPER}}
    Path(a.out).write_text(json.dumps(doc, indent=0, ensure_ascii=False) + "\n", encoding="utf-8")
    for s, v in full.items():
        print(f"{s:<12} {100 * v:6.2f}  paper {PAPER[s]}")


if __name__ == "__main__":
    main()
