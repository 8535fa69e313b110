"""ONNX export of the seq2seq models (the onnxruntime backend is :mod:`pysynth.decoding.ort`).

Three graphs per model, written with the model's ``config.json`` and ``vocab.json`` into a
versioned store (:mod:`pysynth.store`, format :data:`pysynth.decoding.ort.ONNX_FORMAT`); the
graphs' input and output names are the architecture's ``onnx`` spec in
:mod:`pysynth.models.registry`:

* ``encoder.onnx``: ``src`` [batch, src_len] int64, ``src_len`` [batch] int64 ->
  the encoder outputs the decoder step needs (``memory``, ``context``, ``keys``, ``copy_feats``,
  ``mask``, ``h0``; only those the architecture uses).
* ``step.onnx``: ONE decoder step (attention + copy): ``tokens`` [rows], ``h`` [rows, dec],
  the encoder outputs gathered per row, ``src_ext`` [rows, src_len] and ``ext_zeros``
  [rows, n_ext] (its second axis is the extended-vocabulary size) -> ``logp``
  [rows, V + n_ext] and ``h_new`` (and ``top_vals`` / ``top_idx``, the ONNX TopK of ``logp``).
* ``step_parts.onnx``: the same step without its vocabulary-wide epilogue
  (:meth:`Seq2Seq.step_parts`): ``ls`` [rows, V] (log-softmax of the generate scores),
  ``shift`` [rows, 1] and ``touched`` [rows, src_len] (CopyNet only), ``h_new``. The
  searches' candidates come from these parts through the compiled
  :func:`pysynth.decoding.search.topk_from_parts`, which never builds [rows, V + n_ext] rows:
  the Add / Clip / Concat / ScatterElements / TopK passes over full rows were half of a beam
  step's time. The values are bit for bit those of ``step.onnx`` (same ops up to ``ls``, then the
  same float32 add and max), so both paths give identical hypotheses.

Batch, source length and extended-vocabulary axes are dynamic. The CopyNet log uses a clamp
(``p.clamp_min(1e-12).log()``), which survives the exporter's graph optimiser; an epsilon
added inside the log (``log(p + 1e-12)``) would be folded away and zero probabilities would
become ``-inf`` in ONNX but not in torch (tests feed zero probabilities to check this).
"""
from __future__ import annotations

import tempfile
import warnings
from pathlib import Path
from typing import Dict

from pysynth.decoding.ort import ENCODER_FILE, ONNX_FORMAT, ONNX_FORMAT_VERSION, STEP_FILE, STEP_PARTS_FILE

__all__ = ["export_onnx", "quantize_weights", "quantize_export", "OPSET"]

OPSET = 18


def export_onnx(model_dir, out_dir, dynamo: bool = True, opset: int = OPSET, check: bool = True) -> Path:
    """Export a model to the store ``out_dir`` (``encoder.onnx``, ``step.onnx``, ``step_parts.onnx``,
    ``config.json``, ``vocab.json``; see the module docstring).

    Parameters
    ----------
    model_dir : a model directory, a registered model name, a training run folder, or a
        ``(model, vocab)`` pair.
    dynamo : bool
        Use the ``torch.export``-based exporter (needs ``onnxscript``); ``False`` uses the
        TorchScript exporter (faster to run, deprecated upstream).
    check : bool
        Run ``onnx.checker.check_model`` on both graphs.
    """
    import onnx
    import torch

    from pysynth import store
    from pysynth.models.io import load_model
    from pysynth.models.registry import architecture

    if isinstance(model_dir, tuple):
        model, vocab = model_dir
    else:
        model, vocab = load_model(model_dir)
    model = model.eval().cpu()
    arch = model.config.arch
    spec = architecture(arch).onnx
    if not {"encoder", "step", "step_parts"} <= set(spec):
        raise ValueError(f"model: architecture {arch!r} registers no encoder/step/step_parts ONNX graphs; "
                         "export_onnx exports encoder-decoder models with the Seq2Seq step interface")
    enc_out = spec["encoder"]["outputs"]
    step_in = [n for n in spec["step"]["inputs"] if n != "k_zeros"]
    parts_in, parts_out = spec["step_parts"]["inputs"], spec["step_parts"]["outputs"]
    out = Path(out_dir)
    tmp_dir = tempfile.TemporaryDirectory(prefix="pysynth-onnx-")
    tmp = Path(tmp_dir.name)

    N, S, X = 3, 5, 2
    V = model.vocab_size
    src = torch.randint(4, V, (N, S))
    src_len = torch.tensor([S, S - 1, 2])
    with torch.no_grad():
        enc = model.encode(src, src_len)._asdict()
    ex = {"tokens": torch.tensor([2, 5, V + 1]), "h": enc["h0"], "memory": enc["memory"],
          "context": enc["context"], "keys": enc["keys"], "copy_feats": enc["copy_feats"],
          "mask": enc["mask"], "src_ext": torch.where(src_len[:, None] > torch.arange(S), src, 0),
          "ext_zeros": torch.zeros(N, X)}
    ex["src_ext"][0, 1] = V + 1
    ex["k_zeros"] = torch.zeros(4)
    step_args = tuple(ex[k] for k in step_in + ["k_zeros"])
    parts_args = tuple(ex[k] for k in parts_in)
    axes_enc = {"src": {0: "batch", 1: "src_len"}, "src_len": {0: "batch"}}
    axes_step: Dict[str, Dict[int, str]] = {}
    for k in step_in:
        axes_step[k] = {0: "rows"}
        if k in ("memory", "keys", "copy_feats", "mask", "src_ext"):
            axes_step[k][1] = "src_len"
        if k == "ext_zeros":
            axes_step[k][1] = "n_ext"
    axes_step["k_zeros"] = {0: "k"}
    enc_path, step_path, parts_path = tmp / ENCODER_FILE, tmp / STEP_FILE, tmp / STEP_PARTS_FILE
    enc_mod, step_mod, parts_mod = _graph_modules(model, enc_out, step_in, parts_in)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if dynamo:
            import torch.export as te

            dims = {"batch": te.Dim("batch"), "src_len": te.Dim("src_len"),
                    "rows": te.Dim("rows"), "n_ext": te.Dim("n_ext"), "k": te.Dim("k")}

            def shapes(axes, names):
                return {n: {i: dims[a] for i, a in axes[n].items()} for n in names}

            # Dim objects need the forward signature names: wrap with named args
            enc_prog = torch.onnx.export(
                enc_mod, (src, src_len), None, input_names=["src", "src_len"], output_names=enc_out,
                dynamic_shapes=({0: dims["batch"], 1: dims["src_len"]}, {0: dims["batch"]}),
                dynamo=True, opset_version=opset, verbose=False)
            enc_prog.save(str(enc_path))
            step_shapes = tuple({i: dims[a] for i, a in axes_step[k].items()} for k in step_in + ["k_zeros"])
            step_prog = torch.onnx.export(
                step_mod, step_args, None, input_names=step_in + ["k_zeros"],
                output_names=["logp", "h_new", "top_vals", "top_idx"],
                dynamic_shapes=(step_shapes,), dynamo=True, opset_version=opset, verbose=False)
            step_prog.save(str(step_path))
            parts_prog = torch.onnx.export(
                parts_mod, parts_args, None, input_names=parts_in, output_names=parts_out,
                dynamic_shapes=(tuple(step_shapes[step_in.index(k)] for k in parts_in),),
                dynamo=True, opset_version=opset, verbose=False)
            parts_prog.save(str(parts_path))
        else:
            torch.onnx.export(enc_mod, (src, src_len), str(enc_path), input_names=["src", "src_len"],
                              output_names=enc_out, dynamic_axes=axes_enc, opset_version=opset, dynamo=False)
            torch.onnx.export(step_mod, step_args, str(step_path), input_names=step_in + ["k_zeros"],
                              output_names=["logp", "h_new", "top_vals", "top_idx"],
                              dynamic_axes={**axes_step, "logp": {0: "rows", 1: "vocab_ext"}, "h_new": {0: "rows"},
                                            "top_vals": {0: "rows", 1: "k"}, "top_idx": {0: "rows", 1: "k"}},
                              opset_version=opset, dynamo=False)
            parts_axes = {k: axes_step[k] for k in parts_in}
            parts_axes.update({"ls": {0: "rows"}, "h_new": {0: "rows"}})
            if "shift" in parts_out:
                parts_axes.update({"shift": {0: "rows"}, "touched": {0: "rows", 1: "src_len"}})
            torch.onnx.export(parts_mod, parts_args, str(parts_path), input_names=parts_in,
                              output_names=parts_out, dynamic_axes=parts_axes, opset_version=opset, dynamo=False)
    if check:
        for p in (enc_path, step_path, parts_path):
            onnx.checker.check_model(onnx.load(str(p)), full_check=True)
    files = {p.name: p.read_bytes() for p in (enc_path, step_path, parts_path)}
    tmp_dir.cleanup()
    files.update({"config.json": model.config.to_json(), "vocab.json": vocab.to_json()})
    meta = {"arch": arch, "vocab_size": V, "dec_hidden": model.config.dec_hidden,
            "encoder_outputs": enc_out, "step_inputs": step_in, "opset": opset,
            "step_parts": STEP_PARTS_FILE, "step_parts_inputs": parts_in, "step_parts_outputs": parts_out,
            "log_floor": float(model.log_floor), "specials": list(vocab.specials),
            "exporter": "dynamo" if dynamo else "torchscript", "torch": torch.__version__,
            "onnx": onnx.__version__}
    return store.save(out, ONNX_FORMAT, ONNX_FORMAT_VERSION, files=files, meta=meta)


def _graph_modules(model, enc_out, step_in, parts_in):
    """The three exported graphs of ``model`` as torch modules: encoder, step, step parts."""
    import torch

    class _Encoder(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, src, src_len):
            e = self.m.encode(src, src_len)._asdict()
            return tuple(e[k] for k in enc_out)

    class _Step(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, *args):
            kw = dict(zip(step_in + ["k_zeros"], args))
            logp, h_new = self.m.step_tensors(kw["tokens"], kw["h"], kw.get("memory"), kw.get("context"),
                                              kw.get("keys"), kw.get("copy_feats"), kw.get("mask"),
                                              kw.get("src_ext"), kw.get("ext_zeros"))
            # the best k candidates per row (ONNX TopK: ties go to the lower index); k = len(k_zeros)
            top_vals, top_idx = torch.topk(logp, kw["k_zeros"].shape[0], dim=-1)
            return logp, h_new, top_vals, top_idx

    class _Parts(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, *args):
            kw = dict(zip(parts_in, args))
            ls, shift, touched, h_new = self.m.step_parts(kw["tokens"], kw["h"], kw.get("memory"), kw.get("context"),
                                                          kw.get("keys"), kw.get("copy_feats"), kw.get("mask"),
                                                          kw.get("src_ext"))
            return (ls, shift, touched, h_new) if shift is not None else (ls, h_new)

    return _Encoder(model), _Step(model), _Parts(model)


def quantize_weights(graph: bytes, min_elements: int = 4096) -> bytes:
    """Store the large float32 weights of an ONNX graph as int8 (symmetric, one scale per output
    channel of a MatMul / Gemm weight, per row of an embedding table), each behind a
    ``DequantizeLinear``.

    Weight-only: the arithmetic stays float32, so a text's score does not depend on the other
    texts of its batch — onnxruntime's dynamic quantization (int8 activations with one scale per
    batch) moved single-text probabilities by up to 0.12 with the batch here. The file shrinks
    about 4x (90 MB -> 23 MB for MiniLM).
    """
    import numpy as np
    import onnx
    from onnx import helper, numpy_helper

    m = onnx.load_from_string(graph)
    g = m.graph
    users: Dict[str, list] = {}
    for node in g.node:
        for i, name in enumerate(node.input):
            users.setdefault(name, []).append((node, i))
    keep, new_nodes = [], []
    for init in g.initializer:
        w = numpy_helper.to_array(init)
        uses = users.get(init.name, [])
        # the axis of one scale per output channel, as each consumer reads the weight: rows of an
        # embedding table or of a Gemm's transposed B [out, in]; columns of a MatMul's [in, out]
        axes = set()
        for n, i in uses:
            if (n.op_type, i) == ("Gather", 0):
                axes.add(0)
            elif (n.op_type, i) == ("MatMul", 1):
                axes.add(1)
            elif (n.op_type, i) == ("Gemm", 1):
                axes.add(0 if any(a.name == "transB" and a.i == 1 for a in n.attribute) else 1)
            else:
                axes.add(None)
        if w.dtype != np.float32 or w.ndim != 2 or w.size < min_elements or len(axes) != 1 or None in axes:
            keep.append(init)
            continue
        axis = axes.pop()
        amax = np.abs(w).max(axis=1 - axis)
        scale = np.where(amax > 0, amax / 127.0, 1.0).astype(np.float32)
        q = np.clip(np.rint(w / (scale[:, None] if axis == 0 else scale[None, :])), -127, 127).astype(np.int8)
        keep += [numpy_helper.from_array(q, init.name + "_q"), numpy_helper.from_array(scale, init.name + "_scale")]
        new_nodes.append(helper.make_node("DequantizeLinear", [init.name + "_q", init.name + "_scale"], [init.name],
                                          axis=axis, name=init.name + "_dequant"))
    del g.initializer[:]
    g.initializer.extend(keep)
    nodes = list(g.node)
    del g.node[:]
    g.node.extend(new_nodes + nodes)
    return m.SerializeToString()


def quantize_export(src, dst) -> Path:
    """Copy an ONNX export folder (:func:`export_onnx`'s store) to ``dst`` with every graph's
    large weights in int8 (:func:`quantize_weights`; float32 arithmetic, about 4x smaller); the
    store's meta gains ``"quantized": true``. Decoding with it is not bit-identical to torch:
    measure the model's quality on the int8 graphs before shipping them."""
    from pysynth import store
    from pysynth.decoding.ort import load_onnx_dir

    st = load_onnx_dir(src)
    files = {name: (quantize_weights(st.read(name)) if name.endswith(".onnx") else st.read(name))
             for name in st.files}
    store.save(dst, ONNX_FORMAT, ONNX_FORMAT_VERSION, files=files, meta={**st.meta, "quantized": True})
    return Path(dst)
