"""Does roundtrip-filtered synthetic data help? Alberti et al. (2019), Fig. 1, at 2-core scale.

Protocol (one command, resumable: every finished step leaves a file in ``--out`` and is skipped
on a rerun):

1. **Generate** with the shipped roundtrip pipeline (:class:`pysynth.qagen.QAGenerator`, default
   settings plus ``--answers-per-context``) from the SQuAD 1.1 train articles the shipped
   generators never trained on (the held-out 5 %, :data:`pysynth.qagen.data.HELD_OUT_FRACTION`;
   their questions ignored): ``synthetic.jsonl``, one decision row per drawn answer.
2. For each synthetic-set size N: **pretrain** the MiniLM span QA model (fresh from the pretrained
   MiniLM, as the shipped span model) on (a) N roundtrip-consistent triples, (b) N triples drawn
   from all generated ones (consistent or not: the same generator without the filter), and
   (c) nothing; then **fine-tune** each on the same ``--labelled`` SQuAD 1.1 train questions (other
   articles), and **evaluate** SQuAD 2.0 EM / F1 on ``--eval-questions`` questions of the 19 shared
   SQuAD 2.0 dev articles no pysynth model trained on (:func:`pysynth.qagen.evaluate.qa_scores`).

The paper pretrains BERT on millions of synthetic triples and fine-tunes on all of SQuAD 2.0; here
the pretraining sets have hundreds of triples and the labelled set a few hundred questions, so the
question is only whether the direction holds (filtered > unfiltered > none) at this scale.

Example (the run in ``bench/RESULTS_generators.md``)::

    nice -n 5 .venv/bin/python experiments/qagen_fig1.py --out /work/runs/fig1 --sizes 300,745 \\
        --labelled 500 --eval-questions 400 --answers-per-context 3 --max-length 160 --threads 1
"""
from __future__ import annotations

import argparse
import json
import os
import random
import sys
import time
from pathlib import Path
from typing import Dict, List

HERE = Path(__file__).resolve().parent
DATA = HERE.parent.parent / "shared" / "data"


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def atomic_json(path: Path, obj) -> None:
    tmp = path.with_name(f".{path.name}.tmp")
    tmp.write_text(json.dumps(obj, indent=1))
    os.replace(tmp, path)


def generate(out: Path, squad11: Path, k: int, seed: int, limit: int) -> List[dict]:
    """The decision rows of the held-out SQuAD 1.1 train paragraphs (cached in ``synthetic.jsonl``)."""
    path = out / "synthetic.jsonl"
    if path.is_file():
        return [json.loads(x) for x in path.read_text().splitlines()]
    from pysynth.qagen import QAGenConfig, QAGenerator
    from pysynth.qagen.data import HELD_OUT_FRACTION, SPLIT_SEED, read_squad, split_articles

    _, held = split_articles(read_squad(squad11), HELD_OUT_FRACTION, SPLIT_SEED)
    if limit:
        held = held[:limit]
    for c in held:
        c.qas = []  # questions ignored
    cfg = QAGenConfig(seed=seed, **({"answers_per_context": k} if k > 1 else {}))
    gen = QAGenerator(cfg)
    rows: List[dict] = []
    t = time.perf_counter()
    for i in range(0, len(held), 64):
        rows += gen.run(held[i:i + 64], first_index=i)
        log(f"generated {i + 64}/{len(held)} contexts, {len(rows)} rows")
    tmp = path.with_name(".synthetic.jsonl.tmp")
    tmp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    os.replace(tmp, path)
    atomic_json(out / "generate.json", {"contexts": len(held), "rows": len(rows), "seconds": round(time.perf_counter() - t, 1),
                                        "config": {k: v for k, v in vars(cfg).items() if not k.startswith("_")}})
    return rows


def as_contexts(rows: List[dict]):
    """Triples as SQuAD-style contexts (one question each) for :func:`pysynth.qagen.train.span_examples`."""
    from pysynth.qagen.data import Context

    return [Context(r["id"], r.get("title", ""), r["context"],
                    [{"id": f"{r['id']}-{i}", "question": r["question"],
                      "answers": [{"text": r["answer_text"], "answer_start": r["answer_start"]}]}])
            for i, r in enumerate(rows)]


def train(model, examples, epochs: int, lr: float, batch_size: int, seed: int) -> Dict:
    from pysynth.models.train import EncoderTrainer, bucket_batches, warmup_linear
    from pysynth.qagen.train import span_batch_loss

    lengths = [len(x[0]) for x in examples]
    per_epoch = [bucket_batches(lengths, batch_size, 50, seed + ep) for ep in range(epochs)]
    total = sum(len(b) for b in per_epoch)
    opt, sched = warmup_linear(model.parameters(), lr, total)

    model.train()
    return EncoderTrainer(model, opt, sched, batches=per_epoch.__getitem__,
                          loss=lambda b: span_batch_loss(model, examples, b), clip_norm=1.0,
                          total_steps=total, log=log, log_every=50).fit(epochs)


def forced_scores(span_model, contexts) -> Dict:
    """EM / F1 on the answerable questions with the best span always taken (the no-answer score
    ignored): at a few hundred labelled questions the models' no-answer calibration swamps
    :func:`pysynth.qagen.evaluate.qa_scores`; this measures the span finding alone."""
    from pysynth.qagen.data import exact_match, f1_score

    items = [(c, qa) for c in contexts for qa in c.qas if qa.get("answers") and not qa.get("is_impossible")]
    preds = span_model.answer([c.text for c, _ in items], [qa["question"] for _, qa in items])
    em = f1 = 0.0
    for (c, qa), p in zip(items, preds):
        golds = [a["text"] for a in qa["answers"]]
        em += max(float(exact_match(p["text"] or "", g)) for g in golds)
        f1 += max(f1_score(p["text"] or "", g) for g in golds)
    n = max(len(items), 1)
    return {"n": len(items), "em": round(100 * em / n, 2), "f1": round(100 * f1 / n, 2)}


def condition(name: str, out: Path, synth: List[dict], labelled, eval_ctx, args) -> Dict:
    path = out / f"result_{name}.json"
    if path.is_file():
        res = json.loads(path.read_text())
        if "forced" not in res["scores"]:  # results of a run before the forced-span metric
            from pysynth.models.span_model import SpanModel

            res["scores"]["forced"] = forced_scores(SpanModel(out / f"model_{name}", threads=args.threads), eval_ctx)
            atomic_json(path, res)
        return res
    import torch

    from pysynth.models.encoders import SpanEncoder, require_minilm, save_pretrained, wordpiece_tokenizer
    from pysynth.models.span_model import SpanModel
    from pysynth.models.train import seed_torch
    from pysynth.qagen.evaluate import qa_scores
    from pysynth.qagen.train import span_examples

    d = require_minilm()
    seed_torch(args.seed, args.threads)
    tok = wordpiece_tokenizer(d / "vocab.txt")
    model = SpanEncoder.from_bert(d, max_answer_len=32, joint=True)
    t0 = time.perf_counter()
    res: Dict = {"condition": name, "synthetic": len(synth), "labelled": len(labelled)}
    if synth:
        ex = span_examples(as_contexts(synth), tok, "qa", args.max_length)
        res["pretrain"] = {"windows": len(ex), **{k: v for k, v in train(model, ex, args.pretrain_epochs, args.lr, 16, args.seed).items()
                                                 if k in ("steps", "seconds")}}
    ex = span_examples(labelled, tok, "qa", args.max_length)
    res["finetune"] = {"windows": len(ex), **{k: v for k, v in train(model, ex, args.epochs, args.lr, 16, args.seed + 7).items()
                                             if k in ("steps", "seconds")}}
    model.eval()
    mdir = out / f"model_{name}"
    with torch.no_grad():
        save_pretrained(model, tok, mdir)
        sm = SpanModel(mdir, threads=args.threads)
        res["scores"] = {**qa_scores(sm, eval_ctx), "forced": forced_scores(sm, eval_ctx)}
    res["seconds"] = round(time.perf_counter() - t0, 1)
    atomic_json(path, res)
    log(json.dumps(res))
    return res


def pick(rows: List[dict], n: int, seed: int) -> List[dict]:
    rows = sorted(rows, key=lambda r: r["id"])
    return random.Random(seed).sample(rows, n) if n < len(rows) else rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, type=Path)
    ap.add_argument("--data", type=Path, default=DATA)
    ap.add_argument("--sizes", default="250,1000", help="synthetic-set sizes (comma-separated)")
    ap.add_argument("--labelled", type=int, default=300, help="SQuAD 1.1 train questions to fine-tune on")
    ap.add_argument("--eval-questions", type=int, default=600)
    ap.add_argument("--answers-per-context", type=int, default=3)
    ap.add_argument("--contexts", type=int, default=0, help="at most this many held-out paragraphs (0: all)")
    ap.add_argument("--epochs", type=int, default=3, help="fine-tuning epochs")
    ap.add_argument("--pretrain-epochs", type=int, default=2, help="epochs over the synthetic set")
    ap.add_argument("--lr", type=float, default=8e-5)
    ap.add_argument("--max-length", type=int, default=192)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args(argv)
    args.out.mkdir(parents=True, exist_ok=True)
    from pysynth.qagen.data import HELD_OUT_FRACTION, SPLIT_SEED, read_squad, split_articles

    squad11 = args.data / "squad11_train" / "train-v1.1.reconstructed.json.gz"
    rows = generate(args.out, squad11, args.answers_per_context, args.seed, args.contexts)
    with_q = [r for r in rows if r.get("question") and not r.get("is_impossible") and r.get("answer_start", -1) >= 0]
    kept = [r for r in with_q if r.get("consistent")]
    log(f"{len(rows)} rows, {len(with_q)} generated triples, {len(kept)} roundtrip-consistent")
    rest, _ = split_articles(read_squad(squad11), HELD_OUT_FRACTION, SPLIT_SEED)
    rng = random.Random(args.seed)
    items = [(c, qa) for c in rest for qa in c.qas if qa.get("answers")]
    labelled = as_contexts([{"id": qa["id"], "context": c.text, "question": qa["question"],
                             "answer_text": qa["answers"][0]["text"], "answer_start": qa["answers"][0]["answer_start"]}
                            for c, qa in rng.sample(items, args.labelled)])
    ev = read_squad(args.data / "squad2_dev_subset" / "dev-v2.0.explorer_rest.json.gz")
    qs = sorted((i, j) for i, c in enumerate(ev) for j in range(len(c.qas)))
    chosen = set(random.Random(args.seed + 1).sample(qs, min(args.eval_questions, len(qs))))
    for i, c in enumerate(ev):
        c.qas = [qa for j, qa in enumerate(c.qas) if (i, j) in chosen]
    ev = [c for c in ev if c.qas]
    results = [condition("none", args.out, [], labelled, ev, args)]
    for n in (int(x) for x in args.sizes.split(",")):
        n = min(n, len(kept))
        results.append(condition(f"filtered_{n}", args.out, pick(kept, n, args.seed), labelled, ev, args))
        results.append(condition(f"unfiltered_{n}", args.out, pick(with_q, n, args.seed), labelled, ev, args))
    atomic_json(args.out / "fig1.json", {"generated_rows": len(rows), "triples": len(with_q), "consistent": len(kept),
                                         "results": results})
    print("| condition | synthetic | EM (all) | F1 (all) | EM (answerable) | F1 (answerable) | EM (answerable, best span) | F1 (answerable, best span) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in results:
        s = r["scores"]
        print(f"| {r['condition']} | {r['synthetic']} | {s['all']['em']} | {s['all']['f1']} | "
              f"{s['has_ans']['em']} | {s['has_ans']['f1']} | {s['forced']['em']} | {s['forced']['f1']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
