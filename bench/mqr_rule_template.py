"""MQR rewrite (--select safe) with the rule floor's verb template "How to" vs "How can I" (issue 26).

Usage: python bench/mqr_rule_template.py dev 300 | test 1690   (writes /tmp/mqrsafe_SPLIT.json)
"""
import gzip
import json
import sys
import time

import pysynth.mqr.forms as F
from pysynth.mqr.rewrite import Rewriter
from pysynth.mqr.table6 import score_system

split, n = sys.argv[1], int(sys.argv[2])
rows = [json.loads(line) for line in gzip.open(f'/work/shared/data/mqr/{split}.jsonl.gz')][:n]
src = [r['ill_formed'] for r in rows]
ref = [r['well_formed'] for r in rows]
rw = Rewriter("mqr-copynet-small", threads=1)
out = {}
for t in ["How to", "How can I"]:
    F.VERB_TEMPLATE = t
    t0=time.time()
    hyp = rw.rewrite(src, beam=6, coverage=2, wellformed=0.5, backoff=0.7, select="safe")
    out[t]=hyp
    print(t, {k: round(v,2) for k,v in score_system(hyp, ref, meteor=True).items() if v}, round(time.time()-t0,1), flush=True)
json.dump({"src":src,"ref":ref,**out}, open(f'/tmp/mqrsafe_{split}.json','w'))
