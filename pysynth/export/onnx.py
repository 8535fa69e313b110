"""ONNX export of the seq2seq models and an onnxruntime step backend.

Two graphs per model, written to one folder with ``config.json``, ``vocab.json`` and
``onnx_meta.json``:

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

Execution providers: :class:`OrtBackend` asks onnxruntime which providers exist and reports
what the session really uses (``providers``). The ``[onnx]`` extra installs the CPU package
``onnxruntime``; ``onnxruntime-gpu`` provides CUDA but cannot be installed beside
``onnxruntime`` (both own the ``onnxruntime`` module): uninstall one before installing the other.
"""
from __future__ import annotations

import json
import math
import threading
import warnings
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np

__all__ = ["export_onnx", "OrtBackend", "ENCODER_FILE", "STEP_FILE", "STEP_PARTS_FILE", "LOG_FLOOR",
           "choose_providers"]

ENCODER_FILE, STEP_FILE, STEP_PARTS_FILE, META_FILE = "encoder.onnx", "step.onnx", "step_parts.onnx", "onnx_meta.json"
OPSET = 18
LOG_FLOOR = math.log(1e-12)  # = pysynth.models.seq2seq.LOG_FLOOR (a test checks), kept torch-free here
_IOBIND_MIN = 1 << 20  # elements of ls from which step_parts binds its own output buffer


def _io_names(arch: str):
    enc_out = ["memory", "context", "h0", "mask"]
    if arch in ("attnet", "copynet"):
        enc_out.append("keys")
    if arch == "copynet":
        enc_out.append("copy_feats")
    step_in = ["tokens", "h"] + {
        "ednet": ["context"],
        "attnet": ["memory", "keys", "mask"],
        "copynet": ["memory", "keys", "copy_feats", "mask", "src_ext", "ext_zeros"],
    }[arch]
    return enc_out, step_in


def _parts_names(arch: str):
    """Inputs and outputs of ``step_parts.onnx``."""
    _, step_in = _io_names(arch)
    outs = ["ls", "shift", "touched", "h_new"] if arch == "copynet" else ["ls", "h_new"]
    return [n for n in step_in if n != "ext_zeros"], outs


def export_onnx(model_dir, out_dir, dynamo: bool = True, opset: int = OPSET, check: bool = True) -> Path:
    """Export a model folder to ``out_dir`` (``encoder.onnx`` + ``step.onnx`` + config/vocab).

    Parameters
    ----------
    model_dir : path of a model folder (``config.json``, ``vocab.json``, weights) or a
        ``(model, vocab)`` pair.
    dynamo : bool
        Use the ``torch.export``-based exporter (needs ``onnxscript``); ``False`` uses the
        TorchScript exporter (faster to run, deprecated upstream).
    check : bool
        Run ``onnx.checker.check_model`` on both graphs.
    """
    import onnx
    import torch

    from pysynth.models.io import atomic_write_text, load_model

    if isinstance(model_dir, tuple):
        model, vocab = model_dir
    else:
        model, vocab = load_model(model_dir)
    model = model.eval().cpu()
    arch = model.config.arch
    enc_out, step_in = _io_names(arch)
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)

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

    parts_in, parts_out = _parts_names(arch)

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
    enc_path, step_path, parts_path = out / ENCODER_FILE, out / STEP_FILE, out / STEP_PARTS_FILE
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
                _Encoder(model), (src, src_len), None, input_names=["src", "src_len"], output_names=enc_out,
                dynamic_shapes=({0: dims["batch"], 1: dims["src_len"]}, {0: dims["batch"]}),
                dynamo=True, opset_version=opset, verbose=False)
            enc_prog.save(str(enc_path))
            step_shapes = tuple({i: dims[a] for i, a in axes_step[k].items()} for k in step_in + ["k_zeros"])
            step_prog = torch.onnx.export(
                _Step(model), step_args, None, input_names=step_in + ["k_zeros"],
                output_names=["logp", "h_new", "top_vals", "top_idx"],
                dynamic_shapes=(step_shapes,), dynamo=True, opset_version=opset, verbose=False)
            step_prog.save(str(step_path))
            parts_prog = torch.onnx.export(
                _Parts(model), parts_args, None, input_names=parts_in, output_names=parts_out,
                dynamic_shapes=(tuple(step_shapes[step_in.index(k)] for k in parts_in),),
                dynamo=True, opset_version=opset, verbose=False)
            parts_prog.save(str(parts_path))
        else:
            torch.onnx.export(_Encoder(model), (src, src_len), str(enc_path), input_names=["src", "src_len"],
                              output_names=enc_out, dynamic_axes=axes_enc, opset_version=opset, dynamo=False)
            torch.onnx.export(_Step(model), step_args, str(step_path), input_names=step_in + ["k_zeros"],
                              output_names=["logp", "h_new", "top_vals", "top_idx"],
                              dynamic_axes={**axes_step, "logp": {0: "rows", 1: "vocab_ext"}, "h_new": {0: "rows"},
                                            "top_vals": {0: "rows", 1: "k"}, "top_idx": {0: "rows", 1: "k"}},
                              opset_version=opset, dynamo=False)
            parts_axes = {k: axes_step[k] for k in parts_in}
            parts_axes.update({"ls": {0: "rows"}, "h_new": {0: "rows"}})
            if arch == "copynet":
                parts_axes.update({"shift": {0: "rows"}, "touched": {0: "rows", 1: "src_len"}})
            torch.onnx.export(_Parts(model), parts_args, str(parts_path), input_names=parts_in,
                              output_names=parts_out, dynamic_axes=parts_axes, opset_version=opset, dynamo=False)
    if check:
        for p in (enc_path, step_path, parts_path):
            onnx.checker.check_model(onnx.load(str(p)), full_check=True)
    model.config.save(out / "config.json")
    vocab.save(out / "vocab.json")
    meta = {"arch": arch, "vocab_size": V, "dec_hidden": model.config.dec_hidden,
            "encoder_outputs": enc_out, "step_inputs": step_in, "opset": opset,
            "step_parts": STEP_PARTS_FILE, "step_parts_inputs": parts_in, "step_parts_outputs": parts_out,
            "log_floor": LOG_FLOOR,
            "exporter": "dynamo" if dynamo else "torchscript", "torch": torch.__version__,
            "onnx": onnx.__version__}
    atomic_write_text(out / META_FILE, json.dumps(meta, indent=1))
    return out


def choose_providers(device: Optional[str] = None) -> List[str]:
    """Execution providers to request, from those onnxruntime reports as available.

    ``device=None``/``"auto"``: CUDA first when the installed onnxruntime has it, then CPU;
    ``"cpu"``: CPU only; ``"cuda"``: CUDA (ValueError when this onnxruntime has none).
    """
    import onnxruntime as ort

    avail = ort.get_available_providers()
    if device in (None, "auto"):
        return [p for p in ("CUDAExecutionProvider", "CPUExecutionProvider") if p in avail] or avail
    if device == "cpu":
        return ["CPUExecutionProvider"]
    if device == "cuda":
        if "CUDAExecutionProvider" not in avail:
            raise ValueError(f"device: 'cuda' requested but onnxruntime offers only {avail} "
                             "(install onnxruntime-gpu instead of onnxruntime)")
        return ["CUDAExecutionProvider", "CPUExecutionProvider"]
    raise ValueError(f"device: must be 'auto', 'cpu' or 'cuda', got {device!r}")


class OrtBackend:
    """onnxruntime step backend for ``pysynth.decoding.search`` (no torch needed).

    Parameters
    ----------
    onnx_dir : folder written by :func:`export_onnx`
    device : ``auto`` / ``cpu`` / ``cuda`` (see :func:`choose_providers`)
    threads : intra-op threads (0: onnxruntime's default, one per physical core)
    parts : ``"auto"``, True or False
        True: candidates (``step_topk``) from ``step_parts.onnx`` and
        :func:`~pysynth.decoding.search.topk_from_parts` (when the folder has that graph and
        the step runs on the CPU). False: the TopK at the end of ``step.onnx`` (the previous
        path; same hypotheses, about 2x slower on CPU). ``"auto"`` (default): True when the
        compiled ``topk_from_parts`` is there (its numpy twin would be slower than the TopK
        graph). Full rows (``step``) always come from ``step.onnx``.
    spin : bool
        Let onnxruntime's intra-op threads spin-wait between ops (onnxruntime's default).
        Off by default: on a machine whose cores other processes also use, spinning threads
        made 2-thread decoding 2-5x slower than 1 thread (bench/RESULTS_models.md); without
        spinning, 2 threads beat 1.
    workers : threads of the candidate kernel (default 1: 0.1-0.3 ms per step, less than a
        thread start-up is worth)

    Attributes
    ----------
    providers : the providers the sessions really use (``InferenceSession.get_providers()``)
    step_path : ``"parts"`` or ``"topk"``, the graph ``step_topk`` runs

    One backend may serve several threads (each gets its own output buffer and IO binding).
    """

    name = "onnx"

    def __init__(self, onnx_dir, device: Optional[str] = None, threads: int = 0, parts="auto",
                 spin: bool = False, workers: int = 1):
        import onnxruntime as ort

        d = Path(onnx_dir)
        self.path = d
        if not (d / STEP_FILE).exists():
            raise FileNotFoundError(f"{d} holds no {STEP_FILE}; run `pysynth export onnx` first")
        with open(d / META_FILE, encoding="utf-8") as f:
            self.meta = json.load(f)
        so = ort.SessionOptions()
        if threads:
            so.intra_op_num_threads = int(threads)
        so.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
        so.log_severity_level = 3
        req = choose_providers(device)
        self.encoder = ort.InferenceSession(str(d / ENCODER_FILE), so, providers=req)
        self.stepper = ort.InferenceSession(str(d / STEP_FILE), so, providers=req)
        self.providers = self.stepper.get_providers()
        self.vocab_size = int(self.meta["vocab_size"])
        self.enc_outputs = [o.name for o in self.encoder.get_outputs()]
        self.step_inputs = [i.name for i in self.stepper.get_inputs()]
        self.workers = int(workers)
        self.log_floor = np.float32(self.meta.get("log_floor", LOG_FLOOR))
        if parts not in ("auto", True, False):
            raise ValueError(f"parts: must be 'auto', True or False, got {parts!r}")
        if parts == "auto":
            from pysynth import _dispatch

            parts = _dispatch.implementation("decoding") == "cpp"
        self.parts = None
        # on CUDA the TopK graph hands back [rows, k] instead of [rows, V] over the bus
        if parts and (d / STEP_PARTS_FILE).exists() and self.providers[0] == "CPUExecutionProvider":
            self.parts = ort.InferenceSession(str(d / STEP_PARTS_FILE), so, providers=req)
            self.parts_inputs = [i.name for i in self.parts.get_inputs()]
            self.parts_outputs = [o.name for o in self.parts.get_outputs()]
            self._local = threading.local()
        self.step_path = "parts" if self.parts is not None else "topk"

    def encode(self, batch):
        outs = self.encoder.run(None, {"src": batch.src, "src_len": batch.src_len})
        st = dict(zip(self.enc_outputs, outs))
        st["src_ext"] = batch.src_ext
        st["n_ext"] = int(batch.n_ext)
        return st, st["h0"]

    def take(self, state, rows):
        rows = np.asarray(rows, dtype=np.int64)
        return {k: (v if k == "n_ext" else v[rows]) for k, v in state.items()}

    def take_h(self, h, rows):
        return h[np.asarray(rows, dtype=np.int64)]

    def _feed(self, state, tokens, h, k):
        feed = {}
        for name in self.step_inputs:
            if name == "tokens":
                feed[name] = np.ascontiguousarray(tokens, dtype=np.int64)
            elif name == "h":
                feed[name] = h
            elif name == "ext_zeros":
                feed[name] = np.zeros((len(tokens), state["n_ext"]), dtype=np.float32)
            elif name == "k_zeros":
                feed[name] = np.zeros(k, dtype=np.float32)
            else:
                feed[name] = state[name]
        return feed

    def step(self, state, tokens, h):
        """Full log-probabilities [rows, V + n_ext] and the new decoder state."""
        logp, h_new = self.stepper.run(["logp", "h_new"], self._feed(state, tokens, h, 1))
        return logp, h_new

    def step_parts(self, state, tokens, h):
        """``step_parts.onnx``: ``{"ls", "h_new"[, "shift", "touched"]}`` as numpy arrays.

        From 4 MB of ``ls`` up (128 rows of 8,000 columns), onnxruntime writes ``ls`` straight
        into a buffer this backend reuses (IO binding; the buffer stays valid until this
        thread's next step): about 2 % faster beam search at 160 rows, but 90 us slower per
        step than a plain ``run`` at one row, where binding costs more than the copy.
        """
        if len(tokens) * self.vocab_size >= _IOBIND_MIN:
            return self._step_parts_io(state, tokens, h)
        tokens = np.ascontiguousarray(tokens, dtype=np.int64)
        feed = {name: tokens if name == "tokens" else (h if name == "h" else state[name]) for name in self.parts_inputs}
        return dict(zip(self.parts_outputs, self.parts.run(None, feed)))

    def _step_parts_io(self, state, tokens, h):
        """:meth:`step_parts` with ``ls`` written into this thread's reused buffer."""
        n = len(tokens)
        V = self.vocab_size
        tl = self._local
        if getattr(tl, "io", None) is None:
            tl.io, tl.buf = self.parts.io_binding(), np.empty((0, V), dtype=np.float32)
        if tl.buf.shape[0] < n:
            tl.buf = np.empty((max(n, 2 * tl.buf.shape[0]), V), dtype=np.float32)
        ls = tl.buf[:n]
        io = tl.io
        io.clear_binding_inputs()
        io.clear_binding_outputs()
        tokens = np.ascontiguousarray(tokens, dtype=np.int64)
        for name in self.parts_inputs:
            arr = tokens if name == "tokens" else (h if name == "h" else state[name])
            io.bind_cpu_input(name, np.ascontiguousarray(arr))
        small = [o for o in self.parts_outputs if o != "ls"]
        io.bind_output("ls", "cpu", 0, np.float32, [n, V], ls.ctypes.data)
        for name in small:
            io.bind_output(name, "cpu")
        self.parts.run_with_iobinding(io)
        outs = io.get_outputs()
        res = {name: outs[i + 1].numpy() for i, name in enumerate(small)}
        res["ls"] = ls
        return res

    def step_topk(self, state, tokens, h, k: int):
        """The ``k`` best log-probabilities per row (value desc, lower id first on ties), their
        ids and the new decoder state; only [rows, k] arrays reach the search.

        On the ``parts`` path the values are those of :meth:`step` bit for bit (the same
        float32 ops); on the ``topk`` path they come from the TopK node of ``step.onnx``.
        """
        if self.parts is None:
            vals, idx, h_new = self.stepper.run(["top_vals", "top_idx", "h_new"], self._feed(state, tokens, h, k))
            return vals, idx, h_new
        from pysynth.decoding.search import topk_from_parts

        p = self.step_parts(state, tokens, h)
        n = len(tokens)
        if "touched" in p:
            vals, idx = topk_from_parts(p["ls"], p["shift"], p["touched"], state["src_ext"], state["n_ext"], k,
                                        self.log_floor, self.workers)
        else:  # EDNet / AttNet: the rows are ls itself
            empty = np.zeros((n, 0), dtype=np.float32)
            vals, idx = topk_from_parts(p["ls"], np.zeros(n, dtype=np.float32), empty, empty.astype(np.int64), 0, k,
                                        -np.inf, self.workers)
        return vals, idx, p["h_new"]
