"""Train the warm-started MiniLM2MiniLM + copy question generator (pysynth.models.warmstart).

One command, resumable::

    nice -n 19 .venv/bin/python experiments/qg_warmstart.py --out /work/runs/qg-warm --threads 1
    # later, in any session: the same command with --resume continues from RUN_DIR/checkpoint.pt

Data: SQuAD 1.1 train (``../shared/data/squad11_train``); the last ``--held-out-articles`` (40)
article titles in file order are held out (never trained on) and written to
``RUN_DIR/held_out_titles.json``; their first questions give a dev loss. The run's order of
examples is a permutation per epoch drawn from ``(seed, epoch)``, so a resumed run sees exactly
the examples the uninterrupted one would. ``RUN_DIR/checkpoint.pt`` (model + AdamW + schedule +
step + RNG) is replaced atomically every ``--save-every`` steps and on SIGTERM / Ctrl-C;
``RUN_DIR/log.jsonl`` has one line per ``--log-every`` steps.

``--eval N`` instead of training: BLEU-4 / ROUGE-L (the protocol of
``pysynth.qagen.evaluate.qg_scores``: N answerable questions drawn with seed 0) of the
checkpoint's questions from gold answers on ``--eval-squad``, written to RUN_DIR/eval_*.json;
``--backend torch`` decodes with the shared searches (``pysynth.decoding``) on torch, ``--backend
onnx --onnx-dir DIR`` on an export of ``pysynth.export.warmstart`` (default ``own``: the model's
``generate()``).
"""
from __future__ import annotations

import argparse
import json
import random
import re
import signal
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
DATA = ROOT.parent / "shared" / "data"
DEFAULT_SQUAD = DATA / "squad11_train" / "train-v1.1.reconstructed.json.gz"
DEFAULT_EVAL = DATA / "squad2_dev_subset" / "dev-v2.0.explorer_rest.json.gz"


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=str(DEFAULT_SQUAD), help="SQuAD JSON (v1.1/v2.0) to train on")
    p.add_argument("--out", required=True, help="run directory (checkpoint.pt, log.jsonl, ...)")
    p.add_argument("--steps", type=int, default=20000, help="total optimizer steps (the schedule's length)")
    p.add_argument("--batch-size", type=int, default=8)
    p.add_argument("--threads", type=int, default=1)
    p.add_argument("--resume", action="store_true", help="continue from RUN_DIR/checkpoint.pt")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lr", type=float, default=1e-4)
    p.add_argument("--warmup", type=int, default=200)
    p.add_argument("--weight-decay", type=float, default=0.01)
    p.add_argument("--label-smoothing", type=float, default=0.1)
    p.add_argument("--max-source-len", type=int, default=256)
    p.add_argument("--max-target-len", type=int, default=40)
    p.add_argument("--decoder-layers", type=int, default=6)
    p.add_argument("--no-copy", action="store_true", help="no pointer/copy head")
    p.add_argument("--held-out-articles", type=int, default=40)
    p.add_argument("--save-every", type=int, default=100)
    p.add_argument("--log-every", type=int, default=50)
    p.add_argument("--dev-every", type=int, default=500, help="dev loss on 64 held-out questions (0: never)")
    p.add_argument("--tiny", action="store_true", help="a random 2-layer 64-wide model (smoke tests)")
    p.add_argument("--eval", type=int, default=0, metavar="N", help="evaluate the checkpoint on N questions")
    p.add_argument("--eval-squad", default=str(DEFAULT_EVAL))
    p.add_argument("--beam", type=int, default=1)
    p.add_argument("--backend", choices=("own", "torch", "onnx"), default="own",
                   help="--eval: the model's generate(), the shared searches on torch, or on --onnx-dir")
    p.add_argument("--onnx-dir", help="--backend onnx: an export of pysynth.export.warmstart")
    p.add_argument("--encoder", help="a local BERT directory to start from (default: the offline MiniLM)")
    p.add_argument("--device", default="cpu", help="torch device to train on (cpu, cuda)")
    p.add_argument("--bf16", action="store_true", help="bfloat16 autocast (on a GPU)")
    p.add_argument("--time-budget", type=float, default=0.0, metavar="S",
                   help="train for about S seconds: after 150 steps --steps becomes what fits (recorded in the log)")
    p.add_argument("--workers", type=int, default=1, help="processes that build the features before training")
    p.add_argument("--no-baseline", action="store_true", help="--eval: skip the shipped qagen-qg-copynet")
    return p.parse_args(argv)


def load_examples(path, held_out_articles):
    """(train, held_out) lists of (context, start, end, question); held out = the last titles."""
    from pysynth.qagen.data import read_squad

    contexts = read_squad(path)
    titles = list(dict.fromkeys(c.title for c in contexts))
    held = set(titles[len(titles) - held_out_articles:]) if held_out_articles else set()
    train, dev = [], []
    for c in contexts:
        for qa in c.qas:
            if qa.get("is_impossible") or not qa.get("answers"):
                continue
            a = qa["answers"][0]
            row = (c.text, a["answer_start"], a["answer_start"] + len(a["text"]), qa["question"])
            (dev if c.title in held else train).append(row)
    return train, dev, sorted(held)


def build_model(args, tokenizer):
    from pysynth.models.warmstart import WarmStartConfig, WarmStartSeq2Seq

    fields = dict(decoder_layers=args.decoder_layers, copy=not args.no_copy, max_source_len=args.max_source_len,
                  max_target_len=args.max_target_len, pad_id=tokenizer.pad_token_id, bos_id=tokenizer.cls_token_id,
                  eos_id=tokenizer.sep_token_id, unk_id=tokenizer.unk_token_id)
    if args.tiny:
        return WarmStartSeq2Seq(WarmStartConfig(vocab_size=len(tokenizer), hidden_size=64, num_layers=2, num_heads=4,
                                                intermediate_size=128, **fields))
    # .float(): an encoder stored in half precision is trained in float32 (autocast does the rest)
    return WarmStartSeq2Seq.from_bert(encoder_dir(args.encoder), **fields).float()


def encoder_dir(path=None):
    from pysynth.models.encoders import require_minilm

    return Path(path) if path else require_minilm()


def tokenizer_of_minilm(path=None):
    from pysynth.models.spans import wordpiece_tokenizer

    return wordpiece_tokenizer(encoder_dir(path) / "vocab.txt")


_FEATS = {}


def _feature_chunk(rows):
    from pysynth.models.warmstart import qg_features

    tok, src_len, tgt_len = _FEATS["tok"], _FEATS["src_len"], _FEATS["tgt_len"]
    return [qg_features(tok, t, s, e, src_len, q, tgt_len) for t, s, e, q in rows]


def features(rows, tok, src_len, tgt_len, workers=1):
    """:func:`qg_features` of every row, in order (``workers`` forked processes)."""
    _FEATS.update(tok=tok, src_len=src_len, tgt_len=tgt_len)
    chunks = [rows[i:i + 2000] for i in range(0, len(rows), 2000)]
    if workers <= 1:
        return [f for c in chunks for f in _feature_chunk(c)]
    import multiprocessing as mp

    with mp.get_context("fork").Pool(workers) as pool:
        return [f for part in pool.map(_feature_chunk, chunks) for f in part]


def batches(n, batch_size, seed, start_step):
    """Index batches from ``start_step`` on: one permutation per epoch from ``(seed, epoch)``."""
    step = start_step
    per_epoch = n // batch_size
    while True:
        epoch, k = divmod(step, per_epoch)
        order = list(range(n))
        random.Random(seed * 1_000_003 + epoch).shuffle(order)
        yield step, order[k * batch_size:(k + 1) * batch_size]
        step += 1


def dev_loss(model, rows, tokenizer, args):
    import torch

    from pysynth.models.warmstart import collate, qg_features, seq2seq_loss

    c = model.config
    model.eval()
    tot, n = 0.0, 0
    dev = next(model.parameters()).device
    with torch.no_grad():
        for i in range(0, len(rows), 16):
            feats = [qg_features(tokenizer, t, s, e, c.max_source_len, q, c.max_target_len)
                     for t, s, e, q in rows[i:i + 16]]
            b = {k: v.to(dev) for k, v in collate(feats, c.pad_id, c.bos_id).items()}
            logp = model(b["src"], b["src_mask"], b["src_types"], b["tgt_in"])
            k = int((b["labels"] != c.pad_id).sum())
            tot += float(seq2seq_loss(logp.float(), b["labels"], c.pad_id)) * k
            n += k
    model.train()
    return tot / max(n, 1)


def train(args):
    import torch

    from pysynth.models.warmstart import (
        collate,
        count_parameters,
        load_checkpoint,
        save_checkpoint,
        seq2seq_loss,
    )

    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    ckpt = out / "checkpoint.pt"
    if ckpt.exists() and not args.resume:
        sys.exit(f"{ckpt} exists: pass --resume to continue it, or another --out")
    tok = tokenizer_of_minilm(args.encoder)
    train_rows, dev_rows, held = load_examples(args.data, args.held_out_articles)
    (out / "held_out_titles.json").write_text(json.dumps(held, indent=1, ensure_ascii=False) + "\n")
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    t = time.perf_counter()  # before the model: forking after torch's thread pools start can hang
    train_feats = features(train_rows, tok, args.max_source_len, args.max_target_len, args.workers)
    print(json.dumps({"event": "features", "rows": len(train_feats), "seconds": round(time.perf_counter() - t, 1)}),
          flush=True)
    model = build_model(args, tok).to(args.device)
    no_decay = ("bias", "norm", "LayerNorm")
    groups = [{"params": [p for n, p in model.named_parameters() if not any(k in n for k in no_decay)],
               "weight_decay": args.weight_decay},
              {"params": [p for n, p in model.named_parameters() if any(k in n for k in no_decay)],
               "weight_decay": 0.0}]
    opt = torch.optim.AdamW(groups, lr=args.lr)

    def lr_at(step):  # linear warmup, then linear decay to 10 % at --steps
        if step < args.warmup:
            return (step + 1) / args.warmup
        return max(0.1, 1.0 - 0.9 * (step - args.warmup) / max(1, args.steps - args.warmup))

    def batch_of(feats):
        return {k: v.to(args.device, non_blocking=True) for k, v in collate(feats, c.pad_id, c.bos_id).items()}

    sched = torch.optim.lr_scheduler.LambdaLR(opt, lr_at)
    step = 0
    if args.resume and ckpt.exists():
        model, state = load_checkpoint(ckpt, model, opt, sched)
        step = state["step"]
    print(json.dumps({"event": "start", "step": step, "params": count_parameters(model), "train": len(train_rows),
                      "held_out_questions": len(dev_rows), "held_out_articles": len(held),
                      "args": vars(args)}), flush=True)
    stop = {"flag": False}
    signal.signal(signal.SIGTERM, lambda *_: stop.update(flag=True))
    c = model.config
    model.train()
    t0, acc, cnt = time.perf_counter(), 0.0, 0
    t_start, start_step = time.perf_counter(), step
    autocast = torch.autocast(device_type=torch.device(args.device).type, dtype=torch.bfloat16, enabled=args.bf16)
    log = open(out / "log.jsonl", "a")
    try:
        for step, idx in batches(len(train_rows), args.batch_size, args.seed, step):
            if args.time_budget and step == start_step + 50:
                t_probe = time.perf_counter()
            if args.time_budget and step == start_step + 150:  # the schedule's length: what fits the budget
                rate = 100 / (time.perf_counter() - t_probe)  # steps 50-150: the first ones warm the GPU up
                args.steps = min(args.steps, int(step + rate * (args.time_budget - (time.perf_counter() - t_start))))
                print(json.dumps({"event": "budget", "steps_per_s": round(rate, 2), "steps": args.steps}), flush=True)
            if step >= args.steps or stop["flag"]:
                break
            b = batch_of([train_feats[i] for i in idx])
            with autocast:
                logp = model(b["src"], b["src_mask"], b["src_types"], b["tgt_in"])
            loss = seq2seq_loss(logp.float(), b["labels"], c.pad_id, args.label_smoothing)
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
            opt.step()
            sched.step()
            acc, cnt = acc + loss.item(), cnt + 1
            done = step + 1
            if done % args.log_every == 0:
                rec = {"step": done, "loss": round(acc / cnt, 4), "lr": sched.get_last_lr()[0],
                       "steps_per_s": round(cnt / (time.perf_counter() - t0), 4), "time": time.strftime("%H:%M:%S")}
                if args.dev_every and done % args.dev_every == 0:
                    with autocast:
                        rec["dev_loss"] = round(dev_loss(model, dev_rows[:64], tok, args), 4)
                print(json.dumps(rec), flush=True)
                log.write(json.dumps(rec) + "\n")
                log.flush()
                t0, acc, cnt = time.perf_counter(), 0.0, 0
            if done % args.save_every == 0:
                save_checkpoint(ckpt, model, opt, sched, done, {"args": vars(args)})
    except KeyboardInterrupt:
        pass
    finally:
        log.close()
    step = sched.last_epoch
    save_checkpoint(ckpt, model, opt, sched, step, {"args": vars(args)})
    print(json.dumps({"event": "saved", "step": step, "path": str(ckpt),
                      "train_seconds": round(time.perf_counter() - t_start, 1)}), flush=True)


_TOKEN = re.compile(r"\w+|[^\w\s]")


def _tokens(text):
    return _TOKEN.findall(text.lower())


def repeated_trigram(text):
    """True when a word trigram occurs twice in ``text`` (lower-cased word/punctuation tokens)."""
    t = _tokens(text)
    grams = [tuple(t[i:i + 3]) for i in range(len(t) - 2)]
    return len(grams) != len(set(grams))


def score(hyps, refs):
    """BLEU-4 as ``pysynth.qagen.evaluate.qg_scores`` (sacrebleu 13a, lower-cased), BLEU-4 as
    pycocoevalcap (BleuScorer on lower-cased word/punctuation tokens, as nlg-eval / Du et al. 2017),
    ROUGE-L F1 (rouge-score, as qg_scores) and the share of outputs with a repeated trigram."""
    from pysynth.metrics import corpus_bleu, rouge

    sacre = corpus_bleu([h.lower() for h in hyps], [[r.lower() for r in refs]])
    coco = corpus_bleu([" ".join(_tokens(h)) for h in hyps], [" ".join(_tokens(r)) for r in refs], flavor="coco")
    rl = rouge(list(hyps), [list(refs)], types=("rougeL",))["rougeL"].mean()[2]
    return {"bleu4_sacrebleu": round(float(sacre.score), 2), "bleu4_coco": round(100 * float(coco.score), 2),
            "rougeL_f": round(100 * float(rl), 2),
            "repeated_trigram_pct": round(100 * sum(map(repeated_trigram, hyps)) / max(len(hyps), 1), 2),
            "mean_words": round(sum(len(_tokens(h)) for h in hyps) / max(len(hyps), 1), 2)}


def evaluate(args):
    """The checkpoint (greedy, and beam ``--beam`` when > 1) beside the shipped
    ``qagen-qg-copynet`` on the same ``--eval`` gold answers (qg_scores' draw: seed 0)."""
    import torch

    from pysynth.models.warmstart import WarmStartGenerator, load_checkpoint
    from pysynth.qagen.data import iter_answers, read_squad
    from pysynth.qagen.models import QuestionGenerator

    torch.set_num_threads(args.threads)
    out = Path(args.out)
    model, state = load_checkpoint(out / "checkpoint.pt", restore_rng=False)
    tok = tokenizer_of_minilm(args.encoder)
    items = list(iter_answers(read_squad(args.eval_squad)))
    if len(items) > args.eval:
        items = random.Random(0).sample(items, args.eval)
    texts = [c.text for c, _, _ in items]
    spans = [{"start": a["answer_start"], "end": a["answer_start"] + len(a["text"])} for _, _, a in items]
    refs = [qa["question"].strip() for _, qa, _ in items]
    systems = {"warmstart greedy": WarmStartGenerator(model, tok, beam=1)}
    if args.beam > 1:
        systems[f"warmstart beam{args.beam}"] = WarmStartGenerator(model, tok, beam=args.beam)
    if args.backend != "own":
        systems = _shared_search_systems(args, model, tok)
    if not args.no_baseline:
        systems["qagen-qg-copynet (shipped)"] = QuestionGenerator(threads=args.threads)
    res = {"step": state["step"], "n": len(items), "squad": args.eval_squad, "threads": args.threads, "systems": {}}
    outputs = {}
    for name, gen in systems.items():
        t = time.perf_counter()
        hyps = gen.generate(texts, spans)
        dt = time.perf_counter() - t
        res["systems"][name] = dict(score(hyps, refs), questions_per_s=round(len(hyps) / dt, 2))
        outputs[name] = hyps
        print(name, json.dumps(res["systems"][name]), flush=True)
    res["items"] = [dict({"answer": a["text"], "gold": r}, **{k: v[i] for k, v in outputs.items()})
                    for i, ((_, _, a), r) in enumerate(zip(items, refs))]
    path = out / f"eval_step{state['step']}_n{len(items)}.json"
    path.write_text(json.dumps(res, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps(res["systems"], indent=1), flush=True)


class _Asker:
    """``generate(contexts, spans)`` over a WarmStartQG and one search (the call of --eval)."""

    def __init__(self, qg, search):
        self.qg, self.search = qg, search

    def generate(self, texts, spans):
        return [g.texts[0] if g.texts else "" for g in self.qg.questions(texts, spans, self.search)]


def _shared_search_systems(args, model, tok):
    """Greedy (and beam ``--beam``) through pysynth.decoding on torch or on ``--onnx-dir``."""
    from pysynth.decoding import SearchConfig
    from pysynth.models.warmstart import WarmStartBackend
    from pysynth.models.warmstart_qg import WarmStartQG

    if args.backend == "onnx":
        if not args.onnx_dir:
            sys.exit("--backend onnx needs --onnx-dir (an export of pysynth.export.warmstart)")
        qg = WarmStartQG.from_onnx(args.onnx_dir, threads=args.threads)
    else:
        qg = WarmStartQG(WarmStartBackend(model), tok, model.config.max_source_len)
    out = {f"warmstart {args.backend} greedy": _Asker(qg, SearchConfig(decode="greedy", beam=1, no_repeat_ngram=3))}
    if args.beam > 1:
        out[f"warmstart {args.backend} beam{args.beam}"] = _Asker(qg, SearchConfig(
            decode="beam", beam=args.beam, n=1, length_penalty="average", no_repeat_ngram=3))
    return out


def main(argv=None):
    args = parse_args(argv)
    if args.eval:
        evaluate(args)
    else:
        train(args)
    return 0


if __name__ == "__main__":
    sys.exit(main())
