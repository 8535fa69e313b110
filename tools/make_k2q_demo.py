"""Make ``pysynth/data/k2q_demo.jsonl.gz``, the bundled input of ``pysynth k2q synthesize``.

The 18k CC BY-SA questions of ``pysynth.data.questions_sample()`` (query-wellformedness >= 0.8, MQR
well-formed, SQuAD 2.0 dev) plus, for every MQR question, its ill-formed original from the MQR
dev/test splits: the two form a paraphrase cluster (``cluster_id`` "mqr:<split>:<row_idx>"), the
only CC BY-SA paraphrase clusters in the shared data. Run from the repository root:

    python tools/make_k2q_demo.py [SHARED_DATA_DIR]
"""
import gzip
import json
import sys
from pathlib import Path

from pysynth.data import k2q_demo
from pysynth.k2q.data import data_dir, read_jsonl

d = data_dir(sys.argv[1] if len(sys.argv) > 1 else None)
mqr = {}
for split in ("dev", "test"):
    for r in read_jsonl(d / "mqr" / f"{split}.jsonl.gz"):
        mqr.setdefault(" ".join(r["well_formed"].split()), (f"mqr:{split}:{r['row_idx']}", r["ill_formed"]))
rows, seen = [], set()
base = [r for r in k2q_demo() if r["source"] != "mqr-ill-formed"]  # the 18k questions_sample rows
for r in base:
    q = r["question"]
    cid = None
    extra = None
    if r["source"] == "mqr" and q in mqr:
        cid, ill = mqr[q]
        ill = " ".join(ill.split())
        if ill and ill.lower() not in seen and ill.lower() != q.lower():
            extra = ill
    seen.add(q.lower())
    rows.append({"id": len(rows), "question": q, "cluster_id": cid, "source": r["source"]})
    if extra is not None:
        seen.add(extra.lower())
        rows.append({"id": len(rows), "question": extra, "cluster_id": cid, "source": "mqr-ill-formed"})
out = Path("pysynth/data/k2q_demo.jsonl.gz")
with gzip.GzipFile(out, "wb", mtime=0) as f:
    for r in rows:
        f.write((json.dumps(r, ensure_ascii=False) + "\n").encode())
print(f"{out}: {len(rows)} rows, {sum(r['cluster_id'] is not None for r in rows)} in clusters")
