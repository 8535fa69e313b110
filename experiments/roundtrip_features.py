"""Dump per-triple features of the default roundtrip pipeline, for studying filters offline (issue 26).

Runs ``pysynth qagen`` generation with the defaults (K = 1, span rejection, question guard) over
SQuAD paragraphs for ``--draws`` seeds, exactly as ``pysynth qagen evaluate --roundtrip-only``
does, and writes one JSON line per asked triple: the decision row, the evaluate proxy labels
(``answer_ok``, ``triple_ok``), the answer extractor's top spans of the context (joint scores),
the QA model's 20 best spans for the question (independent scores, with the no-answer score),
the question's well-formedness probability, and (``OUT`` with ``.qg.json``) the question
generator's log-probability of its greedy question. Everything a filter could use, computed once.

Sets (``--set``):

* ``dev19``: the 19 SQuAD 2.0 dev articles of ``dev-v2.0.explorer_rest`` (the results file's
  held-out set; no shipped model trained on them);
* ``sq11held``: the 22 SQuAD 1.1 train articles held out from every shipped qagen model's training
  (``split_articles(..., HELD_OUT_FRACTION, SPLIT_SEED)``; the CopyNet's early-stopping dev set).

::

    flock /work/locks/cpu .venv/bin/python experiments/roundtrip_features.py --set dev19 --draw 0 \
        --out /work/runs/h1/dev19_d0.jsonl --threads 2
"""
from __future__ import annotations

import argparse
import dataclasses
import json
import time
from pathlib import Path

SETS = {"dev19": "../shared/data/squad2_dev_subset/dev-v2.0.explorer_rest.json.gz",
        "sq11held": "../shared/data/squad11_train/train-v1.1.reconstructed.json.gz"}


class _CachedSpans:
    """The span model with its answer extraction cached per context text (the draws share it)."""

    def __init__(self, span):
        self.span, self.cache = span, {}

    def extract(self, texts, **kw):
        miss = [t for t in dict.fromkeys(texts) if t not in self.cache]
        if miss:
            for t, s in zip(miss, self.span.extract(miss, **kw)):
                self.cache[t] = s
        return [self.cache[t] for t in texts]

    def answer(self, *a, **kw):
        return self.span.answer(*a, **kw)


def contexts_of(name: str, root: Path):
    from pysynth.qagen.data import HELD_OUT_FRACTION, SPLIT_SEED, read_squad, split_articles

    ctx = read_squad(root / SETS[name])
    if name == "sq11held":
        ctx = split_articles(ctx, HELD_OUT_FRACTION, SPLIT_SEED)[1]
    return ctx


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--set", choices=sorted(SETS), required=True)
    ap.add_argument("--draw", type=int, required=True, help="seed of the answer draw (evaluate's draw d)")
    ap.add_argument("--out", required=True)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--nbest", type=int, default=20)
    args = ap.parse_args(argv)

    from pysynth.qagen.evaluate import correctness
    from pysynth.qagen.models import QuestionGenerator, SpanModel
    from pysynth.qagen.pipeline import QAGenConfig, QAGenerator
    from pysynth.quality import wellformedness

    root = Path(__file__).resolve().parents[1]
    contexts = contexts_of(args.set, root)
    by_id = {c.id: c for c in contexts}
    span = SpanModel(threads=args.threads)
    qg = QuestionGenerator(threads=args.threads)
    cached = _CachedSpans(span)
    # the paper's exact test decides "consistent" (the learned filter is fitted on these rows)
    cfg = dataclasses.replace(QAGenConfig(match="exact"), seed=args.draw, neg_fraction=0.0)
    t = time.perf_counter()
    rows = [r for r in QAGenerator(cfg, cached, qg, span).run(contexts) if r.get("answer_text") is not None]
    t_gen = time.perf_counter() - t
    asked = [r for r in rows if r.get("qa_score") is not None]
    nbest = span._spans([r["context"] for r in asked], [r["question"] for r in asked], args.nbest, 30, False)
    nb_of = {id(r): n for r, n in zip(asked, nbest)}
    wf = wellformedness([r["question"] or "" for r in rows], threads=args.threads)
    # the question generator's log-probability of its greedy question (the search of the pipeline)
    from pysynth.qagen.data import qg_source
    from pysynth.qagen.models import question_search

    gens = qg.model.generate([qg_source(r["context"], r["answer_start"], r["answer_start"] + len(r["answer_text"]))
                              for r in rows], question_search("greedy"), batch_size=32)
    qg_out = [{"id": r["id"], "draw": args.draw, "qg_score": float(g.scores[0]) if g.texts else None,
               "qg_len": len(g.texts[0].split()) if g.texts else 0, "same": bool(g.texts) and g.texts[0] == r["question"]}
              for r, g in zip(rows, gens)]
    Path(args.out[:-len(".jsonl")] + ".qg.json").write_text(json.dumps(qg_out), encoding="utf-8")
    with open(args.out, "w", encoding="utf-8") as f:
        for r, w in zip(rows, wf):
            ext = cached.cache[r["context"]]
            out = {k: v for k, v in r.items() if k != "context"}
            out.update(draw=args.draw, wellformed=round(float(w), 4), **correctness(r, by_id[r["context_id"]]),
                       ext=[[s["text"], s["start"], round(float(s["score"]), 4)] for s in ext],
                       qa_nbest=[[s["text"], s["start"], round(float(s["score"]), 4)] for s in nb_of.get(id(r), [])],
                       qa_null=round(float(nb_of[id(r)][0]["null_score"]), 4) if nb_of.get(id(r)) else None)
            f.write(json.dumps(out, ensure_ascii=False) + "\n")
    print(json.dumps({"set": args.set, "draw": args.draw, "contexts": len(contexts), "triples": len(rows),
                      "generate_s": round(t_gen, 1), "total_s": round(time.perf_counter() - t, 1)}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
