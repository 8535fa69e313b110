"""Duplicate-question detectors trained on weak pairs (Rücklé et al. 2019, Sect. 3.2 and 4.1).

A detector is a siamese encoder: a question's embedding is compared with another's by cosine, as in
the BiLSTM setup of Shah et al. (2018) that Rücklé et al. replicate for Android, Apple, AskUbuntu
and SuperUser. Training pairs come from :mod:`pysynth.dup.pairs` (WS-TB: title, body of the same
question = positive; title, another question's body = negative; DQG rows have the same shape).

Architectures (``arch``):

* ``bilstm`` / ``bigru``: word-piece embeddings -> one bidirectional LSTM / GRU layer (hidden size
  100 per direction, Shah et al.'s ``--d 100 --bidir``) -> pooling over real tokens (``mean``, the
  released ``qra_code``'s pooling; ``max`` optional) -> L2 norm. Embeddings: ``minilm`` (the
  offline MiniLM's word-piece table, frozen like Shah et al.'s frozen pre-trained word vectors)
  or ``random`` (trained). The backward direction runs over each sequence reversed within its
  own length, so an embedding never depends on the padding of its batch (and the graph exports
  to ONNX without packed sequences).
* ``minilm``: the offline all-MiniLM-L6-v2 (:class:`pysynth.models.encoders.BiEncoder`: mean
  pooling, L2 norm) fine-tuned. It was pretrained on Stack Exchange and WikiAnswers pairs among
  a billion others, so it is **not** an unsupervised reference.

Loss (``loss="margin"``, default): Shah et al.'s max-margin (hinge) loss on cosine scores,
``max(0, margin - cos(t, b+) + cos(t, b-))`` averaged over each positive's negatives from the
pairs file, margin 0.25 (``qra_code``'s ``criterion cosine``); a pairs file's negatives are never
the question itself, a known duplicate or an evaluation item. ``loss="in-batch"``: the other
positives of the batch are the negatives (:func:`pysynth.models.encoders.in_batch_loss`; it can
not exclude known duplicates). Optimiser: Adam 5e-4, batch 100 for the RNNs (``qra_code``);
AdamW 2e-5, batch 32, linear warm-up and decay (:func:`pysynth.models.train.warmup_linear`) for
MiniLM.

Model selection without labels: a seeded 5 % of the questions (at most 200) is held out and
each epoch ranks their bodies for their titles; the epoch with the best mean reciprocal rank is
kept (no labelled duplicate is used).

A trained detector is a store (:mod:`pysynth.store`, format ``pysynth.dup.encoder``):
``config.json`` (arch, sizes, ``max_length``, training settings and history), ``vocab.txt``,
``model.onnx`` (int8 weight-only with ``quantize``: :func:`pysynth.export.onnx.quantize_weights`)
and, unless ``torch_weights=False``, ``model.safetensors``. :class:`pysynth.dup.search.Encoder`
runs it on onnxruntime with the pure-Python WordPiece tokenizer (no torch); :func:`load_torch`
gives the torch module back.
"""
from __future__ import annotations

import json
import math
import os
import random
from pathlib import Path
from typing import Any, Callable, Dict, Iterable, Mapping, Optional, Sequence, Tuple, Union

import numpy as np
import torch
import torch.nn as nn

from pysynth.dup.data import read_pairs

__all__ = ["ARCHS", "LOSSES", "read_pairs", "RNNEncoder", "build_model", "train", "save", "load_torch",
           "export_onnx", "margin_loss"]

PathLike = Union[str, "os.PathLike[str]"]
ARCHS = ("bilstm", "bigru", "minilm")
LOSSES = ("margin", "in-batch")
# Shah et al. (2018) / qra_code: --d 100 --bidir, Adam lr 0.0005, batch 100, hinge margin 0.25
RNN_DEFAULTS = {"hidden": 100, "lr": 5e-4, "batch_size": 100, "epochs": 10}
MINILM_DEFAULTS = {"lr": 2e-5, "batch_size": 32, "epochs": 1}
MARGIN = 0.25


# ------------------------------------------------------------------------------ pairs

# ------------------------------------------------------------------------------ models

class RNNEncoder(nn.Module):
    """Bidirectional LSTM / GRU question encoder (Shah et al. 2018's BiLSTM): embeddings, one
    bidirectional layer, mean or max pooling over real tokens, L2 norm.

    ``forward(input_ids, attention_mask, token_type_ids=None)`` -> [B, 2 * hidden] unit vectors
    (the :class:`pysynth.models.encoders.BiEncoder` signature, so both export alike).
    """

    def __init__(self, vocab_size: int, emb_dim: int = 384, hidden: int = 100, cell: str = "lstm",
                 pooling: str = "mean", dropout: float = 0.0, freeze_embeddings: bool = False, pad_id: int = 0):
        super().__init__()
        if cell not in ("lstm", "gru"):
            raise ValueError(f"cell: must be 'lstm' or 'gru', got {cell!r}")
        if pooling not in ("mean", "max"):
            raise ValueError(f"pooling: must be 'mean' or 'max', got {pooling!r}")
        for name, v in (("vocab_size", vocab_size), ("emb_dim", emb_dim), ("hidden", hidden)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name}: must be a positive integer, got {v!r}")
        self.settings = {"vocab_size": vocab_size, "emb_dim": emb_dim, "hidden": hidden, "cell": cell,
                         "pooling": pooling, "dropout": float(dropout), "freeze_embeddings": bool(freeze_embeddings),
                         "pad_id": int(pad_id)}
        self.emb = nn.Embedding(vocab_size, emb_dim, padding_idx=pad_id)
        self.emb.weight.requires_grad_(not freeze_embeddings)
        rnn = nn.LSTM if cell == "lstm" else nn.GRU
        # two one-way layers instead of bidirectional=True: the backward one reads each sequence
        # reversed within its length (see the module doc)
        self.fwd = rnn(emb_dim, hidden, batch_first=True)
        self.bwd = rnn(emb_dim, hidden, batch_first=True)
        self.drop = nn.Dropout(dropout)
        self.pooling = pooling

    #: output names of the ONNX graph (:func:`pysynth.models.encoders.onnx_spec`)
    onnx_outputs = ("embeddings",)

    @property
    def dim(self) -> int:
        return 2 * self.settings["hidden"]

    @property
    def vocab_size(self) -> int:
        return int(self.settings["vocab_size"])

    def forward(self, input_ids, attention_mask, token_type_ids=None) -> torch.Tensor:
        m = attention_mask.to(torch.int64)
        x = self.drop(self.emb(input_ids))
        T = input_ids.shape[1]
        lengths = m.sum(1, keepdim=True)  # [B, 1]
        t = torch.arange(T, device=input_ids.device).unsqueeze(0)
        rev = torch.where(t < lengths, lengths - 1 - t, t)  # position t <- position len-1-t
        hf, _ = self.fwd(x)
        xr = torch.gather(x, 1, rev.unsqueeze(-1).expand(-1, -1, x.shape[-1]))
        hb, _ = self.bwd(xr)
        hb = torch.gather(hb, 1, rev.unsqueeze(-1).expand(-1, -1, hb.shape[-1]))
        h = self.drop(torch.cat([hf, hb], -1))
        mf = m.unsqueeze(-1).to(h.dtype)
        if self.pooling == "max":
            x = (h * mf + (1.0 - mf) * -1e4).max(1).values
        else:
            x = (h * mf).sum(1) / mf.sum(1).clamp_min(1.0)
        return x / x.norm(dim=-1, keepdim=True).clamp_min(1e-12)


def _vocab_file(vocab: Optional[PathLike]) -> Path:
    from pysynth.models.encoders import require_minilm

    p = Path(vocab) if vocab is not None else require_minilm() / "vocab.txt"
    if not p.is_file():
        raise ValueError(f"vocab: {str(p)!r} is not a file (a BERT vocab.txt, one word piece a line)")
    return p


def build_model(arch: str, vocab: Optional[PathLike] = None, embeddings: str = "minilm", hidden: int = 100,
                pooling: str = "mean", dropout: float = 0.0) -> Tuple[nn.Module, Path]:
    """``(module, vocab.txt path)`` of an untrained detector (see the module doc for ``arch``).
    ``embeddings``: ``minilm`` (the MiniLM word-piece table, frozen) or ``random`` (trained); the
    RNNs with ``random`` may take any BERT ``vocab``."""
    if arch not in ARCHS:
        raise ValueError(f"arch: must be one of {', '.join(ARCHS)}, got {arch!r}")
    if arch == "minilm":
        from pysynth.models.encoders import BiEncoder, require_minilm

        d = require_minilm()
        return BiEncoder.from_bert(d, proj_dim=0, normalize=True), d / "vocab.txt"
    if embeddings not in ("minilm", "random"):
        raise ValueError(f"embeddings: must be 'minilm' or 'random', got {embeddings!r}")
    from pysynth.models.wordpiece import WordPiece

    if embeddings == "minilm":
        from pysynth.models.encoders import require_minilm

        d = require_minilm()
        if vocab is not None and Path(vocab).resolve() != (d / "vocab.txt").resolve():
            raise ValueError("vocab: the MiniLM embeddings need MiniLM's own vocab.txt; pass embeddings='random'")
        vocab = d / "vocab.txt"
    vf = _vocab_file(vocab)
    wp = WordPiece(vf)
    n = max(wp.vocab.values()) + 1
    if embeddings == "minilm":
        from safetensors.torch import load_file

        w = load_file(str(d / "model.safetensors"))
        table = next(v for k, v in w.items() if k.endswith("embeddings.word_embeddings.weight"))
        model = RNNEncoder(n, table.shape[1], hidden, "lstm" if arch == "bilstm" else "gru", pooling, dropout,
                           freeze_embeddings=True, pad_id=wp.pad_id)
        with torch.no_grad():
            model.emb.weight.copy_(table[:n].float())
    else:
        model = RNNEncoder(n, 300, hidden, "lstm" if arch == "bilstm" else "gru", pooling, dropout,
                           freeze_embeddings=False, pad_id=wp.pad_id)
    return model, vf


def margin_loss(t: torch.Tensor, p: torch.Tensor, n: torch.Tensor, n_mask: torch.Tensor,
                margin: float = MARGIN) -> torch.Tensor:
    """Shah et al. (2018)'s hinge loss on cosines of unit vectors: ``t`` titles [B, d], ``p`` their
    positives [B, d], ``n`` negatives [B, k, d] with ``n_mask`` [B, k] (1 = real); the mean of
    ``max(0, margin - t.p + t.n)`` over the real (positive, negative) pairs."""
    pos = (t * p).sum(-1, keepdim=True)  # [B, 1]
    neg = torch.einsum("bd,bkd->bk", t, n)
    h = (margin - pos + neg).clamp_min(0.0) * n_mask
    return h.sum() / n_mask.sum().clamp_min(1.0)


# ------------------------------------------------------------------------------ training

def _margin_batch(model, tok, batch, t, p, margin: float, max_length: int):
    """:func:`margin_loss` of a batch of ``(title, positive, negatives)`` instances (``t``, ``p``:
    the titles' and positives' embeddings); None when no instance has a negative."""
    k = max(len(x[2]) for x in batch)
    if k == 0:
        return None
    flat = [n for x in batch for n in x[2]]
    ne = _encode(model, tok, flat, max_length)
    n = ne.new_zeros(len(batch), k, ne.shape[-1])
    mask = ne.new_zeros(len(batch), k)
    j = 0
    for i, x in enumerate(batch):
        c = len(x[2])
        n[i, :c] = ne[j:j + c]
        mask[i, :c] = 1.0
        j += c
    return margin_loss(t, p, n, mask, margin)


def _encode(model, tok, texts: Sequence[str], max_length: int) -> torch.Tensor:
    f = tok.batch(list(texts), max_length)
    return model(torch.from_numpy(f["input_ids"]), torch.from_numpy(f["attention_mask"]),
                 torch.from_numpy(f["token_type_ids"]))


@torch.no_grad()
def _embed(model, tok, texts: Sequence[str], max_length: int, batch_size: int = 128) -> np.ndarray:
    was = model.training
    model.eval()
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    out = np.zeros((len(texts), model.dim), dtype=np.float32)
    for b in range(0, len(order), batch_size):
        idx = order[b:b + batch_size]
        out[idx] = _encode(model, tok, [texts[i] for i in idx], max_length).numpy()
    model.train(was)
    return out


def title_body_mrr(model, tok, groups: Sequence[dict], max_length: int) -> float:
    """Mean reciprocal rank of each question's own body among all ``groups``' first positives,
    ranked by cosine to its title (label-free model selection; ties count against the model)."""
    if not groups:
        return float("nan")
    t = _embed(model, tok, [g["title"] for g in groups], max_length)
    b = _embed(model, tok, [g["pos"][0] for g in groups], max_length)
    s = t @ b.T
    own = np.diag(s)[:, None]
    rank = 1 + (s >= own).sum(1) - 1  # others scoring >= own (ties against the model)
    return float(np.mean(1.0 / rank))


def train(rows: Iterable[Mapping[str, Any]], arch: str = "bilstm", epochs: Optional[int] = None,
          batch_size: Optional[int] = None, lr: Optional[float] = None, loss: str = "margin", margin: float = MARGIN,
          max_length: int = 128, hidden: int = 100, pooling: str = "mean", embeddings: str = "minilm",
          dropout: float = 0.0, negatives: Optional[int] = None, fraction: float = 1.0, dev_share: float = 0.05,
          max_steps: int = 0, seed: int = 0, threads: int = 0, vocab: Optional[PathLike] = None,
          log: Callable[[str], None] = print):
    """Train a detector on pair rows (:func:`read_pairs`); returns ``(model, vocab_file, info)``.

    Parameters
    ----------
    rows : pair rows (``pysynth dup pairs``'s output).
    arch : ``bilstm``, ``bigru`` or ``minilm`` (module doc).
    epochs, batch_size, lr : default :data:`RNN_DEFAULTS` / :data:`MINILM_DEFAULTS`.
    loss : ``margin`` (Shah et al.'s hinge, ``margin``) or ``in-batch``.
    negatives : negatives per positive taken from the file (default: all of them).
    fraction : share of the questions used (Fig. 3's data-size curve).
    dev_share : held-out share of questions for label-free epoch selection (0: keep the last).
    max_steps : stop after this many updates (0: no limit; for tests and time budgets).
    seed, threads : reproducible for a seed on one thread count (torch's CPU kernels).

    ``info``: the pair counts, settings, per-epoch history (loss, dev title->body MRR, seconds)
    and the chosen epoch.
    """
    from pysynth.models.wordpiece import WordPiece

    if loss not in LOSSES:
        raise ValueError(f"loss: must be one of {', '.join(LOSSES)}, got {loss!r}")
    if not 0.0 <= float(dev_share) < 0.5:
        raise ValueError(f"dev_share: must be in [0, 0.5), got {dev_share!r}")
    if arch not in ARCHS:
        raise ValueError(f"arch: must be one of {', '.join(ARCHS)}, got {arch!r}")
    d = MINILM_DEFAULTS if arch == "minilm" else RNN_DEFAULTS
    epochs = d["epochs"] if epochs is None else epochs
    batch_size = d["batch_size"] if batch_size is None else batch_size
    lr = d["lr"] if lr is None else lr
    for name, v in (("epochs", epochs), ("batch_size", batch_size), ("max_length", max_length)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name}: must be a positive integer, got {v!r}")
    from pysynth.models.train import EncoderTrainer, seed_torch, warmup_linear

    groups, counts = read_pairs(rows, fraction=fraction, seed=seed)
    seed_torch(seed, threads)
    rng = random.Random(seed)
    n_dev = min(200, int(len(groups) * dev_share)) if len(groups) >= 20 else 0
    dev_idx = set(random.Random(seed + 1).sample(range(len(groups)), n_dev))
    dev = [g for i, g in enumerate(groups) if i in dev_idx]
    tr = [g for i, g in enumerate(groups) if i not in dev_idx]
    inst = [(g["title"], p, g["neg"][:negatives] if negatives is not None else g["neg"]) for g in tr for p in g["pos"]]
    if loss == "margin" and not any(x[2] for x in inst):
        raise ValueError("pairs: no negative rows (label 0) for the margin loss; build pairs with --negatives >= 1 "
                         "or train with loss='in-batch'")
    model, vf = build_model(arch, vocab, embeddings, hidden, pooling, dropout)
    tok = WordPiece(vf)
    model.train()
    params = [p for p in model.parameters() if p.requires_grad]
    steps_per_epoch = math.ceil(len(inst) / batch_size)
    total = epochs * steps_per_epoch if not max_steps else min(max_steps, epochs * steps_per_epoch)
    if arch == "minilm":
        opt, sched = warmup_linear(params, lr, total)
    else:
        opt, sched = torch.optim.Adam(params, lr=lr), None
    base = title_body_mrr(model, tok, dev, max_length) if dev else None
    if dev:
        log(f"dev title->body MRR before training: {base:.4f} ({len(dev)} held-out questions)")
    orders = []
    for _ in range(epochs):  # every epoch's order up front (one generator, as before): resumable
        orders.append(list(range(len(inst))))
        rng.shuffle(orders[-1])

    def loss_of(order):
        batch = [inst[i] for i in order]
        t = _encode(model, tok, [x[0] for x in batch], max_length)
        p = _encode(model, tok, [x[1] for x in batch], max_length)
        if loss != "margin":
            from pysynth.models.encoders import in_batch_loss

            return in_batch_loss(t, p)
        return _margin_batch(model, tok, batch, t, p, margin, max_length)

    def end_epoch(ep, stats):
        h = {"epoch": ep + 1, "loss": round(stats["loss"], 5), "steps": stats["steps"], "seconds": stats["seconds"]}
        if dev:
            h["dev_mrr"] = round(title_body_mrr(model, tok, dev, max_length), 5)
        log(json.dumps(h))
        return h

    run = EncoderTrainer(model, opt, sched, batches=lambda ep: [orders[ep][b:b + batch_size]
                                                                for b in range(0, len(inst), batch_size)],
                         loss=loss_of, end_epoch=end_epoch, select=lambda h: h.get("dev_mrr", h["epoch"] - 1),
                         params=params, max_steps=max_steps, total_steps=total, log=log, log_every=20).fit(epochs)
    history, best_epoch = run["history"], run["chosen_epoch"]
    info = {"arch": arch, "pairs": counts, "train_questions": len(tr), "dev_questions": len(dev),
            "instances": len(inst), "epochs": epochs, "batch_size": batch_size, "lr": lr, "loss": loss,
            "margin": margin if loss == "margin" else None, "max_length": max_length, "seed": seed,
            "fraction": fraction, "negatives": negatives, "threads": torch.get_num_threads(),
            "dev_mrr_untrained": None if base is None else round(base, 5), "history": history,
            "chosen_epoch": best_epoch, "seconds": run["seconds"]}
    if arch != "minilm":
        info.update({"hidden": hidden, "pooling": pooling, "embeddings": embeddings, "dropout": dropout})
    return model.eval(), vf, info


# ------------------------------------------------------------------------------ saving

FORMAT, FORMAT_VERSION = "pysynth.dup.encoder", 1


def _settings(model) -> Dict[str, Any]:
    if isinstance(model, RNNEncoder):
        return {"kind": "rnn", **model.settings}
    from pysynth.models.encoders import BiEncoder

    if isinstance(model, BiEncoder):
        return {"kind": "bi-encoder", "config": model.config.to_dict(), "vocab_size": model.vocab_size}
    raise TypeError(f"model: must be an RNNEncoder or a BiEncoder, got {type(model).__name__}")


def export_onnx(model, path: PathLike, opset: int = 18) -> Path:
    """The encoder as one ONNX graph (inputs ``input_ids``, ``attention_mask``,
    ``token_type_ids`` int64 [batch, seq]; output ``embeddings`` [batch, dim], unit length):
    :func:`pysynth.models.encoders.export_onnx`, which exports an :class:`RNNEncoder` by its
    ``onnx_outputs``."""
    from pysynth.models.encoders import export_onnx as encoder_export

    return encoder_export(model, path, opset=opset)


def save(model, vocab_file: PathLike, out: PathLike, info: Optional[Dict[str, Any]] = None, quantize: bool = True,
         torch_weights: bool = True, max_length: int = 128, readme: Optional[str] = None) -> Path:
    """Write a detector store (module doc). ``quantize``: int8 weight-only ONNX (float32
    arithmetic); ``torch_weights``: also ``model.safetensors`` for :func:`load_torch`."""
    from safetensors.torch import save as st_save

    from pysynth.export.encoder import save_encoder_store

    settings = _settings(model)
    vf = Path(vocab_file)
    dim = model.dim
    arch = (info or {}).get("arch") or ("minilm" if settings["kind"] == "bi-encoder" else
                                         "bilstm" if settings["cell"] == "lstm" else "bigru")
    cfg = {"task": "duplicates", "arch": arch, "model": settings, "dim": int(dim), "max_length": int(max_length),
           "quantized": bool(quantize), "train": info or {}}
    files = {}
    if torch_weights:
        files["model.safetensors"] = st_save({k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()})
    if readme is not None:
        files["README.md"] = readme.encode()
    return save_encoder_store(model, out, FORMAT, FORMAT_VERSION, vocab=vf.read_bytes(), config=cfg,
                              meta={"arch": arch, "task": "duplicates", "dim": int(dim), "quantized": bool(quantize)},
                              quantize=quantize, files=files)


def load_torch(directory: PathLike):
    """``(module, WordPiece tokenizer, config)`` of a detector store with torch weights."""
    from safetensors.torch import load as load_bytes

    from pysynth import store
    from pysynth.models.registry import resolve
    from pysynth.models.wordpiece import WordPiece

    r = resolve(directory, what="model")
    st = store.load(r.path, FORMAT, (FORMAT_VERSION,))
    cfg = json.loads(st.read("config.json"))
    if "model.safetensors" not in st.files:
        raise ValueError(f"model: {str(r.path)!r} ships only its ONNX graph (no model.safetensors); "
                         "use pysynth.dup.encoder() to encode with it")
    s = dict(cfg["model"])
    if s.pop("kind") == "rnn":
        model = RNNEncoder(**s)
    else:
        from pysynth.models.encoders import BiEncoder, EncoderConfig

        model = BiEncoder(EncoderConfig.from_dict(s["config"]), int(s["vocab_size"]))
    model.load_state_dict(load_bytes(st.read("model.safetensors")))
    return model.eval(), WordPiece(Path(r.path) / "vocab.txt"), cfg
