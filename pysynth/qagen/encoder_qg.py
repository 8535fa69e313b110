"""The paper's encoder-only question generator (Alberti et al. 2019, Sect. 3.2: "fine-tuning only").

A pretrained BERT encoder (here the offline MiniLM) is used as a left-to-right language model of
the question, with no new parameters but one token-type row::

    f_Q(q_1..q_i, a, c) = BERT(q_1..q_{i-1}, a, c)[i-1] . W_BERT^T

where ``W_BERT`` is the (fine-tuned) wordpiece embedding matrix. Token types: question 0,
context 1, answer span 2 (a new row, initialised from the context row). The attention mask
keeps the context from seeing the question and each question token from seeing later ones.
Decoding is greedy (the paper).

One layout change, documented: the context comes first (``[CLS] c [SEP] q_1 .. q_n [SEP]``)
so its positions do not depend on the question's length; with the paper's mask this is the same
model up to where the position embeddings fall.
"""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import Any, Dict, List, Sequence, Tuple, Union

from pysynth.pipelines.progress import say

__all__ = ["EncoderQG", "FORMAT", "train_encoder_qg"]

PathLike = Union[str, "os.PathLike[str]"]
FORMAT, FORMAT_VERSION = "pysynth.qagen.encoder_qg", 1


def _torch():
    import torch

    return torch


class EncoderQG:
    """Encoder-only question generation (Sect. 3.2) over a BERT encoder and its WordPiece tokenizer.

    Parameters
    ----------
    bert : ``transformers.BertModel`` with ``type_vocab_size >= 3``.
    tokenizer : its fast tokenizer.
    max_context, max_question : wordpieces of context (a window around the answer) and question.
    """

    def __init__(self, bert, tokenizer, max_context: int = 160, max_question: int = 32):
        self.bert, self.tok = bert, tokenizer
        self.max_context, self.max_question = max_context, max_question
        self.cls, self.sep, self.pad = tokenizer.cls_token_id, tokenizer.sep_token_id, tokenizer.pad_token_id

    # -- inputs --------------------------------------------------------------------------------
    def context_ids(self, context: str, start: int, end: int) -> Tuple[List[int], List[int]]:
        """``([CLS] window [SEP]`` ids, types)``: a window of at most ``max_context`` wordpieces
        around the answer ``context[start:end]`` (type 2), the rest type 1."""
        enc = self.tok(context, add_special_tokens=False, return_offsets_mapping=True)
        ids, offs = enc["input_ids"], enc["offset_mapping"]
        types = [2 if (a < end and b > start) else 1 for a, b in offs]
        inside = [i for i, t in enumerate(types) if t == 2] or [0]
        n = self.max_context - 2
        lo = max(0, min(inside[0] - (n - (inside[-1] - inside[0] + 1)) // 2, len(ids) - n))
        ids, types = ids[lo:lo + n], types[lo:lo + n]
        return [self.cls] + ids + [self.sep], [1] + types + [1]

    def _batch(self, ctx: List[Tuple[List[int], List[int]]], qs: List[List[int]]):
        """Padded ``ids, types, attention [B, T, T], positions`` for contexts + question prefixes."""
        torch = _torch()
        B = len(ctx)
        T = max(len(c[0]) + len(q) for c, q in zip(ctx, qs))
        ids = torch.full((B, T), self.pad, dtype=torch.long)
        types = torch.zeros((B, T), dtype=torch.long)
        mask = torch.zeros((B, T, T), dtype=torch.bool)
        for b, ((ci, ct), q) in enumerate(zip(ctx, qs)):
            n, m = len(ci), len(q)
            ids[b, :n] = torch.tensor(ci)
            types[b, :n] = torch.tensor(ct)
            if m:
                ids[b, n:n + m] = torch.tensor(q)
            mask[b, :n + m, :n] = True  # everyone sees the context; the context sees only itself
            if m:
                mask[b, n:n + m, n:n + m] = torch.tril(torch.ones(m, m, dtype=torch.bool))
            if n + m < T:
                mask[b, n + m:, 0] = True  # padding rows attend somewhere (ignored)
        return ids, types, mask

    def hidden(self, ids, types, mask):
        torch = _torch()
        pos = torch.arange(ids.shape[1]).unsqueeze(0)
        x = self.bert.embeddings(input_ids=ids, token_type_ids=types, position_ids=pos)
        bias = (~mask).unsqueeze(1).to(x.dtype) * -1e9
        return self.bert.encoder(x, attention_mask=bias).last_hidden_state

    def logits(self, h):
        return h @ self.bert.embeddings.word_embeddings.weight.T

    def loss(self, ctx, qs):
        """Teacher-forced cross-entropy of the question tokens (and the final [SEP])."""
        torch = _torch()
        # the context's closing [SEP] (position n - 1) predicts q_1, q_j predicts q_{j+1}, the last
        # question token predicts [SEP]
        ids, types, mask = self._batch(ctx, [q[:-1] for q in qs])
        h = self.hidden(ids, types, mask)
        rows, cols, tgt = [], [], []
        for b, ((ci, _), q) in enumerate(zip(ctx, qs)):
            n = len(ci)
            for j, t in enumerate(q):
                rows.append(b)
                cols.append(n - 1 + j)
                tgt.append(t)
        sel = h[torch.tensor(rows), torch.tensor(cols)]
        return torch.nn.functional.cross_entropy(self.logits(sel), torch.tensor(tgt))

    # -- generation ----------------------------------------------------------------------------
    def generate(self, contexts: Sequence[str], answers: Sequence[Dict[str, Any]], method: str = "greedy",
                 batch_size: int = 16, **_ignored) -> List[str]:
        """Greedy questions for ``(context, {"start", "end"})`` pairs (Sect. 3.2)."""
        torch = _torch()
        if method != "greedy":
            raise ValueError(f"method: the encoder-only generator decodes greedily (the paper); got {method!r}")
        self.bert.eval()
        out: List[str] = []
        with torch.no_grad():
            for b0 in range(0, len(contexts), batch_size):
                ctx = [self.context_ids(c, a["start"], a["end"])
                       for c, a in zip(contexts[b0:b0 + batch_size], answers[b0:b0 + batch_size])]
                qs: List[List[int]] = [[] for _ in ctx]
                done = [False] * len(ctx)
                for _ in range(self.max_question):
                    ids, types, mask = self._batch(ctx, qs)
                    h = self.hidden(ids, types, mask)
                    last = torch.tensor([len(c[0]) + len(q) - 1 for c, q in zip(ctx, qs)])
                    lg = self.logits(h[torch.arange(len(ctx)), last])
                    lg[:, [self.pad, self.cls, self.tok.unk_token_id, self.tok.mask_token_id]] = -1e9
                    nxt = lg.argmax(-1).tolist()
                    for i, t in enumerate(nxt):
                        if done[i]:
                            continue
                        if t == self.sep:
                            done[i] = True
                        else:
                            qs[i].append(t)
                    if all(done):
                        break
                out += [self.tok.decode(q, skip_special_tokens=True).strip() for q in qs]
        return out

    # -- folders -------------------------------------------------------------------------------
    def save(self, directory: PathLike) -> Path:
        """A ``pysynth.qagen.encoder_qg`` store: ``config.json`` (BERT's), ``vocab.txt``, ``model.safetensors``."""
        from safetensors.torch import save

        from pysynth import store

        vocab = self.tok.get_vocab()
        itos = [t for t, _ in sorted(vocab.items(), key=lambda kv: kv[1])]
        state = {k: v.detach().cpu().contiguous() for k, v in self.bert.state_dict().items()}
        store.save(directory, FORMAT, FORMAT_VERSION, files={
            "config.json": self.bert.config.to_json_string().encode(),
            "vocab.txt": store.lines_to_bytes(itos, "token"), "model.safetensors": save(state)},
            meta={"max_context": self.max_context, "max_question": self.max_question})
        return Path(directory)

    @classmethod
    def load(cls, directory: PathLike) -> "EncoderQG":
        from safetensors.torch import load as load_bytes
        from transformers import BertConfig, BertModel

        from pysynth import store
        from pysynth.models.encoders import quiet_transformers, wordpiece_tokenizer

        st = store.load(directory, FORMAT, (FORMAT_VERSION,))
        bc = BertConfig.from_dict(json.loads(st.read("config.json")))
        bc._attn_implementation = "eager"
        st.read("vocab.txt")
        with quiet_transformers():
            bert = BertModel(bc, add_pooling_layer=False)
        bert.load_state_dict(load_bytes(st.read("model.safetensors")))
        tok = wordpiece_tokenizer(Path(directory) / "vocab.txt")
        return cls(bert.eval(), tok, int(st.meta.get("max_context", 160)), int(st.meta.get("max_question", 32)))

    @classmethod
    def from_minilm(cls, **kw) -> "EncoderQG":
        """MiniLM with a third token-type row (answer), initialised from the context row."""
        torch = _torch()
        from transformers import BertModel

        from pysynth.models.encoders import quiet_transformers, require_minilm, wordpiece_tokenizer

        d = require_minilm()
        with quiet_transformers():
            bert = BertModel.from_pretrained(str(d), local_files_only=True, add_pooling_layer=False,
                                             attn_implementation="eager")
        old = bert.embeddings.token_type_embeddings.weight.data
        new = torch.nn.Embedding(3, old.shape[1])
        new.weight.data[:2] = old
        new.weight.data[2] = old[1]
        bert.embeddings.token_type_embeddings = new
        bert.config.type_vocab_size = 3
        return cls(bert, wordpiece_tokenizer(d / "vocab.txt"), **kw)


def train_encoder_qg(squad11: PathLike, out: PathLike, n: int = 8000, lr: float = 5e-5, batch_size: int = 16,
                     seed: int = 0, threads: int = 0, log=None) -> Dict[str, Any]:
    """Fine-tune MiniLM as the encoder-only generator on ``n`` SQuAD 1.1 train questions
    (held-out articles excluded, as for the other models); one pass, AdamW with warm-up/decay."""
    import random

    from pysynth.models.train import EncoderTrainer, bucket_batches, seed_torch, warmup_linear
    from pysynth.qagen.data import HELD_OUT_FRACTION, SPLIT_SEED, iter_answers, read_squad, split_articles

    log = log or say
    seed_torch(seed, threads)
    rest, _ = split_articles(read_squad(squad11), HELD_OUT_FRACTION, SPLIT_SEED)
    items = list(iter_answers(rest))
    items = random.Random(seed).sample(items, min(n, len(items)))
    m = EncoderQG.from_minilm()
    ex = []
    for c, qa, a in items:
        ctx = m.context_ids(c.text, a["answer_start"], a["answer_start"] + len(a["text"]))
        q = m.tok(qa["question"].strip(), add_special_tokens=False)["input_ids"][:m.max_question - 1] + [m.sep]
        ex.append((ctx, q))
    batches = bucket_batches([len(c[0]) + len(q) for c, q in ex], batch_size, 50, seed)
    opt, sched = warmup_linear(m.bert.parameters(), lr, len(batches))
    run = EncoderTrainer(m.bert, opt, sched, batches=lambda ep: batches,
                         loss=lambda b: m.loss([ex[i][0] for i in b], [ex[i][1] for i in b]), clip_norm=1.0,
                         total_steps=len(batches), log=log, log_every=50).fit(1)
    m.save(out)
    info = {"examples": len(ex), "steps": len(batches), "train_s": run["seconds"]}
    (Path(out) / "train_info.json").write_text(json.dumps(info) + "\n")
    return info


if __name__ == "__main__":  # deprecated: python -m pysynth.qagen.encoder_qg SQUAD11 OUT [N] [THREADS]
    from pysynth.cli import deprecated_module

    a = sys.argv[1:]
    opts = [f for f, v in zip(("--n", "--threads"), a[2:4]) for f in (f, v)]
    raise SystemExit(deprecated_module("pysynth.qagen.encoder_qg", ["--squad11", *a[:1], "--out", *a[1:2], *opts],
                                       ["qagen", "train-encoder-qg"]))
