"""Duplicate question generation (Rücklé et al. 2019, Sect. 3.2) with the warm-started MiniLM
encoder-decoder: body -> title, started from a question-generation checkpoint of
``experiments/qg_warmstart.py`` (its decoder already writes questions), fine-tuned on the (body
paragraph, title) pairs of the source sites and evaluated on a held-out target site beside the
body's first 12 words (lead-12) and the shipped CopyNet, with the metrics of
:func:`pysynth.dup.dqg.evaluate` (BLEU: sacrebleu lower-cased corpus; ROUGE F, 0-100).

The whole body paragraph is the "answer" of the QG input (token type 1 on every wordpiece of the
window), so the QG checkpoint's input format is kept.

Usage::

    python experiments/dqg_warmstart.py train --init /work/runs/qg-warm/checkpoint.pt --out RUN \\
        --target D/ai --steps 600 --threads 1          # D = ../shared/data/stackexchange_dumps
    python experiments/dqg_warmstart.py eval --out RUN --target D/ai [--beam 4]
"""
from __future__ import annotations

import argparse
import json
import random
import signal
import sys
import time
from pathlib import Path

D = Path(__file__).resolve().parents[2] / "shared" / "data" / "stackexchange_dumps"
SITES = ("ai", "beer", "bicycles.meta", "coffee", "french.meta")


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("step", choices=("train", "eval"))
    p.add_argument("--init", help="train: a qg_warmstart.py checkpoint.pt to start from")
    p.add_argument("--out", required=True, help="run directory")
    p.add_argument("--target", default=str(D / "ai"), help="the held-out site (every other site trains)")
    p.add_argument("--steps", type=int, default=600)
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--warmup", type=int, default=50)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--max-target-len", type=int, default=32)
    p.add_argument("--save-every", type=int, default=100)
    p.add_argument("--beam", type=int, default=1)
    p.add_argument("--limit", type=int, default=0, help="eval: first N questions only")
    p.add_argument("--resume", action="store_true")
    return p.parse_args(argv)


def feats(tok, body, title, c, max_target_len):
    from pysynth.models.warmstart import qg_features

    return qg_features(tok, body, 0, len(body), c.max_source_len, title, max_target_len)


def train(a):
    import torch

    from pysynth.dup.dqg import split_dev, training_rows
    from pysynth.models.warmstart import collate, load_checkpoint, save_checkpoint, seq2seq_loss

    sys.path.insert(0, str(Path(__file__).parent))
    from qg_warmstart import tokenizer_of_minilm

    torch.set_num_threads(a.threads)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    target = Path(a.target)
    sources = [D / s for s in SITES if s != target.name]
    rows, counts = training_rows(sources)
    train_rows, dev_rows = split_dev(rows, 0.05, a.seed)
    tok = tokenizer_of_minilm()
    ckpt = out / "checkpoint.pt"
    model, _ = load_checkpoint(ckpt if a.resume and ckpt.exists() else a.init, restore_rng=False)
    random.seed(a.seed)
    torch.manual_seed(a.seed)
    opt = torch.optim.AdamW(model.parameters(), lr=a.lr, weight_decay=0.01)
    sched = torch.optim.lr_scheduler.LambdaLR(
        opt, lambda s: (s + 1) / a.warmup if s < a.warmup else max(0.1, 1 - 0.9 * (s - a.warmup) / max(1, a.steps)))
    step = 0
    if a.resume and ckpt.exists():
        _, st = load_checkpoint(ckpt, model, opt, sched, restore_rng=False)
        step = st["step"]
    c = model.config
    print(json.dumps({"event": "start", "step": step, "train": len(train_rows), "dev": len(dev_rows),
                      "sources": [s.name for s in sources], "target": target.name}), flush=True)
    stop = {"flag": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(flag=True))
    model.train()
    t0, acc, cnt = time.perf_counter(), 0.0, 0
    while step < a.steps and not stop["flag"]:
        epoch, k = divmod(step, len(train_rows) // a.batch_size)
        order = list(range(len(train_rows)))
        random.Random(a.seed * 1_000_003 + epoch).shuffle(order)
        idx = order[k * a.batch_size:(k + 1) * a.batch_size]
        b = collate([feats(tok, train_rows[i]["body"], train_rows[i]["title"], c, a.max_target_len) for i in idx],
                    c.pad_id, c.bos_id)
        loss = seq2seq_loss(model(b["src"], b["src_mask"], b["src_types"], b["tgt_in"]), b["labels"], c.pad_id, 0.1)
        opt.zero_grad(set_to_none=True)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        sched.step()
        step += 1
        acc, cnt = acc + loss.item(), cnt + 1
        if step % 25 == 0:
            print(json.dumps({"step": step, "loss": round(acc / cnt, 4),
                              "steps_per_s": round(cnt / (time.perf_counter() - t0), 3),
                              "time": time.strftime("%H:%M:%S")}), flush=True)
            t0, acc, cnt = time.perf_counter(), 0.0, 0
        if step % a.save_every == 0:
            save_checkpoint(ckpt, model, opt, sched, step, {"args": vars(a)})
    save_checkpoint(ckpt, model, opt, sched, step, {"args": vars(a)})
    print(json.dumps({"event": "saved", "step": step}), flush=True)


def evaluate(a):
    import torch

    from pysynth import metrics
    from pysynth.dup.dqg import TitleGenerator
    from pysynth.dup.prep import questions
    from pysynth.models.warmstart import WarmStartGenerator, load_checkpoint

    sys.path.insert(0, str(Path(__file__).parent))
    from qg_warmstart import repeated_trigram, tokenizer_of_minilm

    torch.set_num_threads(a.threads)
    rows = questions(Path(a.target)).rows
    if a.limit:
        rows = rows[:a.limit]
    bodies, refs = [r["body"] for r in rows], [r["title"] for r in rows]
    model, _ = load_checkpoint(Path(a.out) / "checkpoint.pt", restore_rng=False)
    gen = WarmStartGenerator(model, tokenizer_of_minilm(), beam=a.beam, max_len=a.max_target_len)
    t = time.perf_counter()
    warm = gen.generate(bodies, [{"start": 0, "end": len(b)} for b in bodies])
    secs = time.perf_counter() - t
    systems = {"warm-start (QG init, fine-tuned)": warm,
               "lead-12 of the body": [" ".join(b.split()[:12]) for b in bodies],
               "shipped dup-dqg-copynet": [x for x, _ in TitleGenerator(None, threads=a.threads).generate(bodies)]}
    res = {}
    for name, hyps in systems.items():
        s = metrics.score_corpus(hyps, [refs], ["bleu", "rouge1", "rouge2", "rougeL"], lowercase=True)
        res[name] = {k: round(float(s[k]), 2) for k in ("bleu", "rouge1", "rouge2", "rougeL")}
        res[name]["repeated_trigram_pct"] = round(100 * sum(map(repeated_trigram, hyps)) / len(hyps), 1)
        print(name, json.dumps(res[name]), flush=True)
    res["questions"], res["site"], res["seconds_warm"] = len(rows), Path(a.target).name, round(secs, 1)
    rng = random.Random(26)
    res["examples"] = [{"body": bodies[i][:200], "title": refs[i], **{n: h[i] for n, h in systems.items()}}
                       for i in sorted(rng.sample(range(len(rows)), min(15, len(rows))))]
    (Path(a.out) / f"eval_{Path(a.target).name}_beam{a.beam}.json").write_text(json.dumps(res, indent=1))


if __name__ == "__main__":
    args = parse_args()
    train(args) if args.step == "train" else evaluate(args)
