"""The onnxruntime step backend of the searches: exported ONNX graphs, no torch.

Importing this module and decoding with :class:`OrtBackend` never imports torch (a test checks
``sys.modules``): serving needs only ``numpy`` and ``onnxruntime``. The graphs are written by
:func:`pysynth.export.onnx.export_onnx` into a versioned store (:mod:`pysynth.store`, format
:data:`ONNX_FORMAT`): ``encoder.onnx``, ``step.onnx``, ``step_parts.onnx`` and the model's
``config.json`` / ``vocab.json``; ``meta.json`` holds the graphs' input and output names, the
special token ids and the CopyNet log floor.

Execution providers: :class:`OrtBackend` asks onnxruntime which providers exist and reports
what the session really uses (``providers``). The ``[onnx]`` extra installs the CPU package
``onnxruntime``; ``onnxruntime-gpu`` provides CUDA but cannot be installed beside
``onnxruntime`` (both own the ``onnxruntime`` module): uninstall one before installing the other.
"""
from __future__ import annotations

import logging
import threading
from pathlib import Path
from typing import List, Optional

import numpy as np

from pysynth.decoding.protocol import SpecialIds

__all__ = ["OrtBackend", "choose_providers", "onnxruntime", "session", "session_options", "load_onnx_dir", "ONNX_FORMAT", "ONNX_FORMAT_VERSION",
           "ENCODER_FILE", "STEP_FILE", "STEP_PARTS_FILE"]

#: store format of an exported model (:mod:`pysynth.store`)
ONNX_FORMAT = "pysynth.model.onnx"
ONNX_FORMAT_VERSION = 1
ENCODER_FILE, STEP_FILE, STEP_PARTS_FILE = "encoder.onnx", "step.onnx", "step_parts.onnx"
_IOBIND_MIN = 1 << 20  # elements of ls from which step_parts binds its own output buffer


def _session(ort, st, name: str, so, providers):
    """A session of graph ``name`` of store ``st`` (:func:`session` with prepared options)."""
    data = st.read(name)  # checked against meta.json
    if st.meta.get("external_data"):
        # a model package's graphs share one weights file (models/_build.py), which onnxruntime
        # finds beside the graph's path, not beside bytes
        return _open(ort, str(st.path / name), so, providers, st.path / name)
    return _open(ort, data, so, providers, st.path / name)


def _open(ort, data, so, providers, where):
    try:
        return ort.InferenceSession(data, so, providers=providers)
    except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
        raise ValueError(f"{where} is not a valid ONNX graph ({type(exc).__name__}: "
                         f"{str(exc)[:300]}); re-export it with `pysynth export onnx`") from None


def session_options(threads: int = 0, spin: bool = False, inter_op_threads: int = 0):
    """onnxruntime ``SessionOptions`` as pysynth sets them: ``threads`` intra-op threads (0: its
    default), no spin-waiting unless ``spin`` (on a shared machine spinning threads made 2-thread
    decoding 2-5x slower), ``inter_op_threads`` (0: its default), warnings silenced."""
    if isinstance(threads, bool) or not isinstance(threads, int) or threads < 0:
        raise ValueError(f"threads: must be an integer >= 0 (0: onnxruntime's default), got {threads!r}")
    so = onnxruntime().SessionOptions()
    if threads:
        so.intra_op_num_threads = int(threads)
    if inter_op_threads:
        so.inter_op_num_threads = int(inter_op_threads)
    so.add_session_config_entry("session.intra_op.allow_spinning", "1" if spin else "0")
    so.log_severity_level = 3
    return so


def session(model, threads: int = 0, device: Optional[str] = None, providers: Optional[List[str]] = None,
            spin: bool = False, inter_op_threads: int = 0, name: Optional[str] = None):
    """The one onnxruntime session factory of pysynth.

    Parameters
    ----------
    model : bytes, str or path
        The graph (bytes already checked against a store's CRC-32, or a file path).
    threads : int
        Intra-op threads (0: onnxruntime's default, one per physical core).
    device : {"auto", "cpu", "cuda"}, optional
        Picks the providers (:func:`choose_providers`) when ``providers`` is None.
    providers : list of str, optional
        Execution providers to request as they are.
    spin, inter_op_threads
        See :func:`session_options`.
    name : str, optional
        The graph's file, for error messages (default: ``model`` when it is a path).

    Returns
    -------
    onnxruntime.InferenceSession

    Raises
    ------
    ImportError
        onnxruntime is not installed (the message names the extra).
    ValueError
        onnxruntime refuses the graph (the message names the file).
    """
    ort = onnxruntime()
    so = session_options(threads, spin, inter_op_threads)
    req = list(providers) if providers is not None else choose_providers(device)
    if isinstance(model, (bytes, bytearray)):
        return _open(ort, bytes(model), so, req, name or "the model graph")
    return _open(ort, str(model), so, req, name or str(model))


def load_onnx_dir(onnx_dir):
    """The checked store of an exported model (:class:`pysynth.store.Stored`).

    Raises
    ------
    FileNotFoundError
        ``onnx_dir`` does not exist.
    ValueError
        not an export of this pysynth (an unversioned folder from before the store format, another
        format or version, missing or truncated graphs); the message says how to re-export.
    """
    from pysynth import store

    d = Path(onnx_dir)
    if d.is_dir() and not (d / store.META).exists() and (d / STEP_FILE).exists():
        raise ValueError(f"{d} is an unversioned ONNX export from an older pysynth (no meta.json); "
                         f"re-export it: pysynth export onnx --model MODEL_DIR --out {d}")
    try:
        return store.load(d, ONNX_FORMAT, (ONNX_FORMAT_VERSION,))
    except ValueError as exc:
        raise ValueError(f"{exc} (re-export with: pysynth export onnx --model MODEL_DIR --out {d})") from None


def onnxruntime():
    """The ``onnxruntime`` module, imported on first use (ImportError naming the extra to install)."""
    try:
        import onnxruntime
    except ImportError:
        raise ImportError("onnxruntime is not installed; pip install '.[onnx]' (or '.[serve]') to run "
                          "the shipped models") from None
    return onnxruntime



def choose_providers(device: Optional[str] = None) -> List[str]:
    """Execution providers to request, from those onnxruntime reports as available.

    ``device=None``/``"auto"``: CUDA first when the installed onnxruntime has it, then CPU;
    ``"cpu"``: CPU only; ``"cuda"``: CUDA (ValueError when this onnxruntime has none).
    """
    ort = onnxruntime()

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
    onnx_dir : store written by :func:`pysynth.export.onnx.export_onnx`
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
    specials : the model's special ids (from the store's meta)
    providers : the providers the sessions really use (``InferenceSession.get_providers()``)
    step_path : ``"parts"`` or ``"topk"``, the graph ``step_topk`` runs

    One backend may serve several threads (each gets its own output buffer and IO binding).
    """

    name = "onnx"

    def __init__(self, onnx_dir, device: Optional[str] = None, threads: int = 0, parts="auto",
                 spin: bool = False, workers: int = 1):
        ort = onnxruntime()

        d = Path(onnx_dir)
        self.path = d
        if not d.exists():
            raise FileNotFoundError(f"onnx_dir: {d} does not exist; run `pysynth export onnx` first")
        st = load_onnx_dir(d)
        self.meta = st.meta
        try:  # a meta.json edited by hand (its checksum recomputed) must not escape as a KeyError
            self.specials = SpecialIds.check(self.meta["specials"], f"{d}/meta.json specials")
            self.vocab_size = int(self.meta["vocab_size"])
            self.log_floor = np.float32(self.meta["log_floor"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{d}/meta.json is not a valid ONNX export description: {exc!r}") from None
        if "config.json" in st.files and not isinstance(st.read_json("config.json"), dict):
            raise ValueError(f"{d}/config.json is not a model configuration (a JSON object)")
        if "vocab.json" in st.files:  # not used here, but a damaged one means a damaged export
            # the layout of pysynth.models.vocab.Vocab.to_json, read without importing the models layer
            doc = st.read_json("vocab.json")
            if not isinstance(doc, dict) or not isinstance(doc.get("itos"), list) \
                    or not all(isinstance(t, str) for t in doc["itos"]):
                raise ValueError(f"{d}/vocab.json is not a vocabulary: expected an object with a list 'itos' of str")
            n_vocab = len(doc["itos"])
            if n_vocab != self.vocab_size:
                raise ValueError(f"{d}/vocab.json has {n_vocab} entries, meta.json says vocab_size {self.vocab_size}")
        so = session_options(threads, spin)
        req = choose_providers(device)
        # graphs from bytes checked against the store's sizes and CRC-32s (a corrupt file fails here)
        self.encoder = _session(ort, st, ENCODER_FILE, so, req)
        self.stepper = _session(ort, st, STEP_FILE, so, req)
        self.providers = self.stepper.get_providers()
        self.enc_outputs = [o.name for o in self.encoder.get_outputs()]
        self.step_inputs = [i.name for i in self.stepper.get_inputs()]
        self.copy = "src_ext" in self.step_inputs  # a copying model (CopyNet): extended ids
        self.workers = int(workers)
        if parts not in ("auto", True, False):
            raise ValueError(f"parts: must be 'auto', True or False, got {parts!r}")
        if parts == "auto":
            from pysynth import _dispatch

            parts = _dispatch.implementation("decoding") == "cpp"
        self.parts = None
        # on CUDA the TopK graph hands back [rows, k] instead of [rows, V] over the bus
        if parts and STEP_PARTS_FILE in st.files and self.providers[0] == "CPUExecutionProvider":
            self.parts = _session(ort, st, STEP_PARTS_FILE, so, req)
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


def int8_activations(graph: bytes) -> bytes:
    """An encoder graph with int8 weights and int8 activations (onnxruntime's dynamic quantization
    of every ``MatMul``; weights per output channel).

    Weight-only int8 graphs (``DequantizeLinear`` over constant int8 weights, as
    :func:`pysynth.export.onnx.quantize_weights` writes) are first folded back to their float32
    weights (exactly the values the graph computes), so their int8 weights are kept. The activation
    scale is one per tensor, computed at run time: a row's embedding depends on the other rows of
    its batch (why this is opt-in, :class:`OnnxEncoder` ``activations="int8"``).
    """
    import tempfile

    try:
        import onnx
        from onnx import numpy_helper
        from onnxruntime.quantization import QuantType, quantize_dynamic
    except ImportError as exc:  # onnx is not a serving dependency
        raise ImportError(f"activations='int8' needs the onnx package ({exc}); pip install onnx") from None
    m = onnx.load_from_string(graph)
    g = m.graph
    inits = {i.name: i for i in g.initializer}
    nodes, folded = [], []
    for n in g.node:
        ins = [x for x in n.input if x]
        if n.op_type != "DequantizeLinear" or not all(x in inits for x in ins):
            nodes.append(n)
            continue
        q = numpy_helper.to_array(inits[ins[0]]).astype(np.float32)
        scale = numpy_helper.to_array(inits[ins[1]]).astype(np.float32)
        zero = numpy_helper.to_array(inits[ins[2]]).astype(np.float32) if len(ins) > 2 else np.float32(0)
        if scale.ndim == 1 and scale.size > 1:  # per channel along ``axis`` (default 1)
            axis = next((a.i for a in n.attribute if a.name == "axis"), 1) % q.ndim
            shape = [1] * q.ndim
            shape[axis] = scale.size
            scale, zero = scale.reshape(shape), np.reshape(zero, shape if np.ndim(zero) else ())
        folded.append(numpy_helper.from_array((q - zero) * scale, n.output[0]))
    used = {x for n in nodes for x in n.input} | {o.name for o in g.output}
    keep = [i for i in g.initializer if i.name in used]
    del g.node[:]
    g.node.extend(nodes)
    del g.initializer[:]
    g.initializer.extend(keep + folded)
    with tempfile.TemporaryDirectory(prefix="pysynth-int8-") as tmp:
        src, dst = Path(tmp) / "float.onnx", Path(tmp) / "int8.onnx"
        src.write_bytes(m.SerializeToString())
        was = logging.root.manager.disable
        logging.disable(logging.WARNING)  # the quantizer's advice to pre-process, on the root logger
        try:
            quantize_dynamic(str(src), str(dst), per_channel=True, weight_type=QuantType.QInt8,
                             op_types_to_quantize=["MatMul"])
        finally:
            logging.disable(was)
        return dst.read_bytes()
