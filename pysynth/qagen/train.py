"""Training pysynth's roundtrip-QA models on SQuAD (needs torch + transformers: the ``[hf]`` extra).

Two models, each trained once and shipped (see the assets' READMEs):

* ``span`` -- one MiniLM :class:`pysynth.models.encoders.SpanEncoder` for both span roles of
  Alberti et al. (2019), Sect. 3.1: **answer extraction** ``p(a | c)`` (the context alone; the
  joint head ``f_J = MLP([h_s; h_e])`` over spans of at most ``L_A = 32`` wordpieces, plus the
  independent start / end heads, so both scorings can be compared) and **extractive QA**
  ``p(a | c, q)`` (question + context; independent start / end scores and the SQuAD 2.0 no-answer
  score of the ``[CLS]`` position). One encoder for both roles halves what is trained and shipped;
  the input tells the roles apart (a question segment or none).
  Data: SQuAD 1.1 train (answerable) and the SQuAD 2.0 dev subset's 13 articles (for
  no-answer questions), split by article.
* ``qg`` -- a CopyNet question generator (:mod:`pysynth.models.train`) from the sentence(s)
  holding the answer, the answer marked (:func:`pysynth.qagen.data.qg_source`), to the question.

``pysynth qagen train-span --squad11 F --squad2 F --out DIR`` and
``pysynth qagen train-qg --squad11 F --out DIR``.
"""
from __future__ import annotations

import json
import os
import random
import time
from pathlib import Path
from typing import Dict, List, Sequence, Tuple, Union

from pysynth.pipelines.progress import say
from pysynth.qagen.data import (
    HELD_OUT_FRACTION,
    SPLIT_SEED,
    Context,
    iter_answers,
    qg_source,
    read_squad,
    split_articles,
)

__all__ = ["span_examples", "span_batch_loss", "train_span", "export_span", "qg_pairs", "train_qg"]

PathLike = Union[str, "os.PathLike[str]"]


def _log(msg: str) -> None:
    say(msg)


def span_examples(contexts: Sequence[Context], tok, role: str, max_length: int = 192, stride: int = 64,
                  limit: int = 0, seed: int = 0) -> List[Tuple[List[int], List[int], int, int]]:
    """Training windows ``(input_ids, token_type_ids, start, end)`` of one role.

    ``role="qa"``: ``[CLS] question [SEP] context [SEP]`` windows; the answer's wordpieces, or
    ``(0, 0)`` (``[CLS]``: no answer) for unanswerable questions and windows without the answer.
    ``role="ae"``: ``[CLS] context [SEP]`` windows that contain the answer. ``limit`` questions
    at most, drawn with ``seed`` (0: all).
    """
    items = [(c, qa) for c in contexts for qa in c.qas]
    if role == "ae":
        items = [(c, qa) for c, qa, _ in iter_answers(contexts)]
    rng = random.Random(seed)
    if limit and limit < len(items):
        items = rng.sample(items, limit)
    out = []
    for c, qa in items:
        ans = None if qa.get("is_impossible") or not qa.get("answers") else qa["answers"][0]
        if role == "qa":
            enc = tok(qa["question"].strip(), c.text, truncation="only_second", max_length=max_length, stride=stride,
                      return_overflowing_tokens=True, return_offsets_mapping=True)
            ctx_seq = 1
        else:
            enc = tok(c.text, truncation=True, max_length=max_length, stride=stride, return_overflowing_tokens=True,
                      return_offsets_mapping=True)
            ctx_seq = 0
        for w in range(len(enc["input_ids"])):
            seq = enc.sequence_ids(w)
            offs = enc["offset_mapping"][w]
            s = e = 0
            if ans is not None:
                a0, a1 = ans["answer_start"], ans["answer_start"] + len(ans["text"])
                toks = [i for i, sid in enumerate(seq) if sid == ctx_seq]
                if toks and offs[toks[0]][0] <= a0 and offs[toks[-1]][1] >= a1:
                    s = next(i for i in toks if offs[i][1] > a0)
                    e = max(i for i in toks if offs[i][0] < a1)
            if role == "ae" and s == 0:
                continue
            out.append((enc["input_ids"][w], enc["token_type_ids"][w], s, e))
    return out


def span_batch_loss(model, examples, batch):
    """:func:`pysynth.models.encoders.span_loss` of ``model`` on the :func:`span_examples` rows
    ``examples[i]`` for ``i`` in ``batch`` (padded to the batch's longest)."""
    import torch

    from pysynth.models.encoders import span_loss

    T = max(len(examples[i][0]) for i in batch)
    ids = torch.zeros(len(batch), T, dtype=torch.long)
    tt, am = torch.zeros_like(ids), torch.zeros_like(ids)
    for r, i in enumerate(batch):
        n = len(examples[i][0])
        ids[r, :n] = torch.tensor(examples[i][0])
        tt[r, :n] = torch.tensor(examples[i][1])
        am[r, :n] = 1
    return span_loss(model(ids, am, tt), torch.tensor([examples[i][2] for i in batch]),
                     torch.tensor([examples[i][3] for i in batch]))


def train_span(squad11: PathLike, squad2: PathLike, n_qa: int = 7000, n_ae: int = 4000, n_qa2: int = 0, epochs: int = 1,
               lr: float = 5e-5, batch_size: int = 16, max_length: int = 192, seed: int = 0, threads: int = 0,
               init=None, log=_log):
    """Fine-tune MiniLM as the shared answer-extraction + QA span model; ``(model, tok, info)``.

    ``n_qa`` SQuAD 1.1 questions plus ``n_qa2`` SQuAD 2.0 questions (0: all; their unanswerables
    teach the no-answer score), and ``n_ae`` (context, answer) pairs; SQuAD 1.1 train articles in
    the held-out 5 % (:data:`pysynth.qagen.data.HELD_OUT_FRACTION`) are never used. AdamW, linear warm-up (6 %) and
    decay, length-bucketed batches; seeded. ``init``: continue from a span-encoder folder
    (:func:`pysynth.models.encoders.save_pretrained`) instead of the pretrained MiniLM.
    """

    from pysynth.models.encoders import SpanEncoder, require_minilm, wordpiece_tokenizer
    from pysynth.models.train import EncoderTrainer, bucket_batches, seed_torch, warmup_linear

    d = require_minilm()
    seed_torch(seed, threads)
    tok = wordpiece_tokenizer(d / "vocab.txt")
    train11, _ = split_articles(read_squad(squad11), HELD_OUT_FRACTION, SPLIT_SEED)
    sq2 = read_squad(squad2)
    t0 = time.perf_counter()
    qa = span_examples(train11, tok, "qa", max_length, limit=n_qa, seed=seed)
    qa += span_examples(sq2, tok, "qa", max_length, limit=n_qa2, seed=seed)
    ae = span_examples(train11, tok, "ae", max_length, limit=n_ae, seed=seed + 1)
    ex = qa + ae
    info: Dict = {"qa_windows": len(qa), "qa_no_answer": sum(1 for x in qa if x[2] == 0), "ae_windows": len(ae),
                  "tokenize_s": round(time.perf_counter() - t0, 1)}
    log(json.dumps(info))
    if init:
        from pysynth.models.encoders import load

        model = load(init)[0].train()
    else:
        model = SpanEncoder.from_bert(d, max_answer_len=32, joint=True).train()
    lengths = [len(x[0]) for x in ex]
    per_epoch = [bucket_batches(lengths, batch_size, 50, seed + ep) for ep in range(epochs)]
    total = sum(len(b) for b in per_epoch)
    opt, sched = warmup_linear(model.parameters(), lr, total)

    run = EncoderTrainer(model, opt, sched, batches=per_epoch.__getitem__, loss=lambda b: span_batch_loss(model, ex, b),
                         clip_norm=1.0,
                         total_steps=total, log=log, log_every=50).fit(epochs)
    info["train_s"] = run["seconds"]
    info["steps"] = run["steps"]
    return model, tok, info


def export_span(model, tok, out: PathLike, quantize: bool = True, info: Dict = None) -> Path:
    """Write the span model as a ``pysynth.spans.onnx`` store (:class:`pysynth.qagen.models.SpanModel`
    loads it with onnxruntime alone): ``model.onnx`` (int8 weights with ``quantize``: float32
    arithmetic, 4x smaller), ``vocab.txt``, ``config.json``."""
    from pysynth.export.encoder import save_encoder_store, vocab_tokens
    from pysynth.qagen.models import SPAN_FORMAT, SPAN_FORMAT_VERSION

    cfg = {"max_answer_len": model.config.max_answer_len, "joint": model.config.joint, "do_lower_case": True,
           "quantized": bool(quantize), **(info or {})}
    return save_encoder_store(model, out, SPAN_FORMAT, SPAN_FORMAT_VERSION, vocab=vocab_tokens(tok), config=cfg,
                              meta={"arch": "span-encoder"}, quantize=quantize)


def qg_pairs(contexts: Sequence[Context], max_words: int = 60) -> List[Tuple[str, str]]:
    """``(qg_source(context, answer), question)`` for every answerable question."""
    return [(qg_source(c.text, a["answer_start"], a["answer_start"] + len(a["text"]), max_words), qa["question"].strip())
            for c, qa, a in iter_answers(contexts)]


def train_qg(squad11: PathLike, out: PathLike, minutes: float = 45.0, threads: int = 0, seed: int = 0,
             vocab_size: int = 20000):
    """Train the CopyNet question generator on SQuAD 1.1 train (held-out articles excluded);
    the run folder ``out`` resolves as the model (:mod:`pysynth.models.train`)."""
    from pysynth.models.config import Seq2SeqConfig, TrainConfig
    from pysynth.models.train import train

    rest, held = split_articles(read_squad(squad11), HELD_OUT_FRACTION, SPLIT_SEED)
    pairs = qg_pairs(rest)
    dev = qg_pairs(held)
    mc = Seq2SeqConfig(arch="copynet", vocab_size=vocab_size, emb_dim=128, enc_hidden=128, dec_hidden=256,
                       max_src_len=64, max_tgt_len=32)
    tc = TrainConfig(lr=0.002, clip_norm=1.0, batch_size=64, max_epochs=20, max_minutes=minutes, eval_every=500,
                     eval_max_pairs=400, patience=6, ckpt_every=500, seed=seed, device="cpu", threads=threads)
    return train(pairs, out, mc, tc, dev_pairs=dev)


if __name__ == "__main__":  # deprecated side door: now ``pysynth qagen train-span|train-qg``
    from pysynth.cli import deprecated_module

    raise SystemExit(deprecated_module("pysynth.qagen.train", None, ["qagen"], {"span": "train-span", "qg": "train-qg"}))
