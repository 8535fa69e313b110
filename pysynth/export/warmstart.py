"""ONNX export of the warm-started encoder-decoders (:mod:`pysynth.models.warmstart`).

Two graphs (their inputs and outputs in :mod:`pysynth.decoding.ort_warmstart`), the wordpiece
``vocab.txt`` and the model's ``config.json`` in a store of format
:data:`~pysynth.decoding.ort_warmstart.WARMSTART_ONNX_FORMAT`, which
:func:`pysynth.models.load` opens as a :class:`pysynth.models.warmstart_qg.WarmStartQG` on
onnxruntime. ``quantize=True`` stores the large weights in int8
(:func:`pysynth.export.onnx.quantize_weights`: weight-only, float32 arithmetic).

The graphs are traced with the TorchScript exporter (batch, source length and prefix length are
dynamic axes). The step graph re-decodes the whole prefix (no self-attention cache), as
:func:`pysynth.models.warmstart.generate` does.
"""
from __future__ import annotations

import json
import tempfile
import warnings
from pathlib import Path
from typing import Optional

from pysynth.decoding.ort_warmstart import (
    ENCODER_FILE,
    STEP_FILE,
    VOCAB_FILE,
    WARMSTART_ONNX_FORMAT,
    WARMSTART_ONNX_VERSION,
)

__all__ = ["export_warmstart_onnx", "OPSET"]

OPSET = 17


def _modules(model):
    import torch

    L, copy = len(model.layers), model.config.copy

    class _Encoder(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, src, src_mask, src_types):
            memory = self.m.encode(src, src_mask, src_types)
            kv = self.m.memory_kv(memory)
            out = (memory, torch.stack([k for k, _ in kv]), torch.stack([v for _, v in kv]))
            return out + ((self.m.copy_k(memory),) if copy else ())

    class _Step(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, prefix, memory, mem_k, mem_v, *rest):
            ck, src, src_mask = rest if copy else (None,) + tuple(rest)
            kv = [(mem_k[i], mem_v[i]) for i in range(L)]
            return self.m.decode(prefix, memory, src, src_mask, kv, last_only=True, copy_keys=ck)

    return _Encoder(model), _Step(model)


def export_warmstart_onnx(model, out_dir, vocab_file, quantize: bool = False, opset: int = OPSET,
                          check: bool = True, min_len: int = 2, no_stutter: bool = True, max_len: int = 32,
                          extra_meta: Optional[dict] = None) -> Path:
    """Export a warm-started encoder-decoder to the store ``out_dir``.

    Parameters
    ----------
    model : a :class:`~pysynth.models.warmstart.WarmStartSeq2Seq` or a checkpoint file of
        :func:`~pysynth.models.warmstart.save_checkpoint` (read only).
    vocab_file : the wordpiece ``vocab.txt`` of its encoder (copied into the store).
    quantize : int8 weights (:func:`pysynth.export.onnx.quantize_weights`).
    check : run ``onnx.checker.check_model`` on both graphs.
    min_len, no_stutter : the decoding guards the backend applies by default
        (:func:`pysynth.decoding.ort_warmstart.prefix_guards`).
    max_len : default question length limit (tokens).
    extra_meta : more fields for the store's meta (e.g. the training step).

    Returns
    -------
    Path of the store.
    """
    import onnx
    import torch

    from pysynth import store
    from pysynth.export.onnx import quantize_weights
    from pysynth.models.warmstart import WarmStartSeq2Seq, load_checkpoint

    if not isinstance(model, WarmStartSeq2Seq):
        model, _ = load_checkpoint(model, restore_rng=False)
    vocab = Path(vocab_file).read_bytes()
    n_vocab = len(vocab.decode("utf-8").split("\n")) - 1
    c = model.config
    if n_vocab != c.vocab_size:
        raise ValueError(f"vocab_file: {n_vocab} tokens, the model has vocab_size={c.vocab_size}")
    model = model.eval().cpu()
    enc_mod, step_mod = _modules(model)
    B, S, T = 2, 7, 3
    g = torch.Generator().manual_seed(0)
    src = torch.randint(c.eos_id + 1 if c.eos_id + 1 < c.vocab_size else 0, c.vocab_size, (B, S), generator=g)
    src[:, 0], src[1, -2:] = c.bos_id, c.pad_id
    mask = (src != c.pad_id).long()
    types = torch.zeros_like(src)
    types[:, 2:4] = 1
    enc_out = ["memory", "mem_k", "mem_v"] + (["copy_k"] if c.copy else [])
    step_in = ["prefix"] + enc_out + ["src", "src_mask"]
    with torch.no_grad():
        enc = enc_mod(src, mask, types)
    prefix = torch.full((B, T), c.bos_id, dtype=torch.long)
    prefix[:, 1:] = src[:, 1:T]
    axes = {"src": {0: "rows", 1: "src_len"}, "src_mask": {0: "rows", 1: "src_len"},
            "src_types": {0: "rows", 1: "src_len"}, "memory": {0: "rows", 1: "src_len"},
            "mem_k": {1: "rows", 3: "src_len"}, "mem_v": {1: "rows", 3: "src_len"},
            "copy_k": {0: "rows", 1: "src_len"}, "prefix": {0: "rows", 1: "t"}, "logp": {0: "rows"}}
    with tempfile.TemporaryDirectory(prefix="pysynth-wsonnx-") as tmp:
        ep, sp = Path(tmp) / ENCODER_FILE, Path(tmp) / STEP_FILE
        with warnings.catch_warnings(), torch.no_grad():
            warnings.simplefilter("ignore")
            torch.onnx.export(enc_mod, (src, mask, types), str(ep), input_names=["src", "src_mask", "src_types"],
                              output_names=enc_out, dynamic_axes={k: axes[k] for k in ["src", "src_mask", "src_types"]
                                                                  + enc_out}, opset_version=opset, dynamo=False)
            torch.onnx.export(step_mod, (prefix, *enc, src, mask), str(sp), input_names=step_in, output_names=["logp"],
                              dynamic_axes={k: axes[k] for k in step_in + ["logp"]}, opset_version=opset,
                              dynamo=False)
        graphs = {p.name: p.read_bytes() for p in (ep, sp)}
    if check:
        for data in graphs.values():
            onnx.checker.check_model(onnx.load_from_string(data))
    if quantize:
        graphs = {k: quantize_weights(v) for k, v in graphs.items()}
    files = dict(graphs)
    files[VOCAB_FILE] = vocab
    files["config.json"] = json.dumps(c.to_dict(), indent=1).encode("utf-8")
    meta = {"arch": "warmstart-seq2seq", "vocab_size": c.vocab_size, "max_source_len": c.max_source_len,
            "max_len": int(max_len), "specials": [c.pad_id, c.unk_id, c.bos_id, c.eos_id],
            "encoder_outputs": enc_out, "step_inputs": step_in, "opset": opset, "quantized": bool(quantize),
            "guards": {"min_len": int(min_len), "no_stutter": bool(no_stutter)}, "exporter": "torchscript",
            "torch": torch.__version__, "onnx": onnx.__version__, **(extra_meta or {})}
    return store.save(Path(out_dir), WARMSTART_ONNX_FORMAT, WARMSTART_ONNX_VERSION, files=files, meta=meta)
