"""The onnxruntime backend of the warm-started encoder-decoders (:mod:`pysynth.models.warmstart`): no torch.

A store of format :data:`WARMSTART_ONNX_FORMAT` (written by
:func:`pysynth.export.warmstart.export_warmstart_onnx`) holds two graphs:

* ``encoder.onnx``: ``src``, ``src_mask``, ``src_types`` [batch, src_len] int64 -> ``memory``
  [batch, src_len, H], ``mem_k`` / ``mem_v`` [layers, batch, heads, src_len, H/heads] (every
  decoder layer's cross-attention keys and values, computed once per source) and, with the copy
  head, ``copy_k`` [batch, src_len, H] (the copy attention's keys);
* ``step.onnx``: ``prefix`` [rows, t] (``<s>`` and the tokens so far), the encoder outputs
  gathered per row, ``src`` and ``src_mask`` -> ``logp`` [rows, V], the log-probabilities of
  the next token (vocabulary and copy mixed).

The decoder state ``h`` is the prefix itself: each step re-runs the decoder over it (no
self-attention cache; questions are short), so ``take_h`` is a row gather. Besides the
searches' own rules (:mod:`pysynth.decoding.search`, e.g. ``no_repeat_ngram``) the backend
applies the model's two decoding guards (:func:`prefix_guards`): no end before ``min_len``
tokens, and no token directly after itself (``no_stutter``).
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import numpy as np

from pysynth.decoding.ort import choose_providers, onnxruntime, session_options
from pysynth.decoding.protocol import SpecialIds

__all__ = ["WarmStartOrtBackend", "prefix_guards", "load_warmstart_onnx", "WARMSTART_ONNX_FORMAT",
           "WARMSTART_ONNX_VERSION", "ENCODER_FILE", "STEP_FILE", "VOCAB_FILE"]

#: store format of an exported warm-started encoder-decoder (:mod:`pysynth.store`)
WARMSTART_ONNX_FORMAT = "pysynth.warmstart.onnx"
WARMSTART_ONNX_VERSION = 1
ENCODER_FILE, STEP_FILE, VOCAB_FILE = "encoder.onnx", "step.onnx", "vocab.txt"
_ROW_AXIS = {"memory": 0, "mem_k": 1, "mem_v": 1, "copy_k": 0, "src": 0, "src_mask": 0}


def prefix_guards(logp: np.ndarray, prefix: np.ndarray, eos: int, min_len: int = 0,
                  no_stutter: bool = False) -> np.ndarray:
    """The model-side decoding guards, in place on ``logp`` [rows, V]: ``eos`` at -inf while a row
    has fewer than ``min_len`` tokens, and each row's last token at -inf (``no_stutter``: "ducks
    ducks", "##ey ##ey", copy loops no n-gram guard catches before they are long).

    ``prefix`` [rows, t] is ``<s>`` followed by the tokens so far (the decoder's input).
    """
    n_tok = prefix.shape[1] - 1
    if n_tok < min_len:
        logp[:, eos] = -np.inf
    if no_stutter and n_tok > 0:
        logp[np.arange(logp.shape[0]), prefix[:, -1]] = -np.inf
    return logp


def load_warmstart_onnx(path):
    """The checked store of an exported warm-started model (:class:`pysynth.store.Stored`);
    ValueError naming the fix for anything else."""
    from pysynth import store

    d = Path(path)
    if not d.exists():
        raise FileNotFoundError(f"onnx_dir: {d} does not exist; export it with "
                                "pysynth.export.warmstart.export_warmstart_onnx")
    try:
        return store.load(d, WARMSTART_ONNX_FORMAT, (WARMSTART_ONNX_VERSION,))
    except ValueError as exc:
        raise ValueError(f"{exc} (re-export with pysynth.export.warmstart.export_warmstart_onnx)") from None


class WarmStartOrtBackend:
    """A :class:`~pysynth.decoding.protocol.DecodingBackend` over an exported warm-started
    encoder-decoder (see the module docstring); imports no torch.

    Parameters
    ----------
    onnx_dir : a :data:`WARMSTART_ONNX_FORMAT` store.
    device : ``auto`` / ``cpu`` / ``cuda`` (:func:`pysynth.decoding.ort.choose_providers`).
    threads : onnxruntime intra-op threads (0: its default).
    min_len, no_stutter : the guards of :func:`prefix_guards` (None: the store's defaults, those
        of :func:`pysynth.models.warmstart.generate`: 2 and True).

    Attributes
    ----------
    vocab_size, specials, meta, providers
    """

    name = "onnx"
    copy = False  # one wordpiece vocabulary: copied tokens have ids, no extended columns

    def __init__(self, onnx_dir, device: Optional[str] = None, threads: int = 0, min_len: Optional[int] = None,
                 no_stutter: Optional[bool] = None):
        ort = onnxruntime()
        st = load_warmstart_onnx(onnx_dir)
        self.path, self.meta = Path(onnx_dir), st.meta
        try:
            self.specials = SpecialIds.check(self.meta["specials"], f"{onnx_dir}/meta.json specials")
            self.vocab_size = int(self.meta["vocab_size"])
            guards = self.meta.get("guards", {})
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{onnx_dir}/meta.json is not a warm-start export description: {exc!r}") from None
        self.min_len = int(guards.get("min_len", 0) if min_len is None else min_len)
        self.no_stutter = bool(guards.get("no_stutter", False) if no_stutter is None else no_stutter)
        if self.min_len < 0:
            raise ValueError(f"min_len: must be >= 0, got {self.min_len}")
        so = session_options(threads)
        req = choose_providers(device)

        def sess(name):
            try:
                return ort.InferenceSession(st.read(name), so, providers=req)
            except Exception as exc:  # noqa: BLE001 - onnxruntime raises its own exception types
                raise ValueError(f"{self.path / name} is not a valid ONNX graph ({type(exc).__name__}: "
                                 f"{str(exc)[:300]}); re-export it") from None

        self.encoder, self.stepper = sess(ENCODER_FILE), sess(STEP_FILE)
        self.providers = self.stepper.get_providers()
        self.enc_outputs = [o.name for o in self.encoder.get_outputs()]
        self.step_inputs = [i.name for i in self.stepper.get_inputs()]

    def encode(self, batch):
        src = np.ascontiguousarray(batch.src, dtype=np.int64)
        mask = (np.arange(src.shape[1])[None, :] < np.asarray(batch.src_len)[:, None]).astype(np.int64)
        types = np.zeros_like(src) if batch.types is None else np.ascontiguousarray(batch.types, dtype=np.int64)
        outs = self.encoder.run(None, {"src": src, "src_mask": mask, "src_types": types})
        state = dict(zip(self.enc_outputs, outs))
        state.update(src=src, src_mask=mask)
        return state, np.zeros((src.shape[0], 0), dtype=np.int64)

    def take(self, state, rows):
        rows = np.asarray(rows, dtype=np.int64)
        return {k: np.take(v, rows, axis=_ROW_AXIS.get(k, 0)) for k, v in state.items()}

    def take_h(self, h, rows):
        return h[np.asarray(rows, dtype=np.int64)]

    def step(self, state, tokens, h):
        """Float32 log-probabilities [rows, V] of the next token after ``h`` + ``tokens``, and
        the new prefix."""
        prefix = np.concatenate([h, np.asarray(tokens, dtype=np.int64)[:, None]], 1)
        feed = {n: (prefix if n == "prefix" else state[n]) for n in self.step_inputs}
        (logp,) = self.stepper.run(["logp"], feed)
        return prefix_guards(logp, prefix, self.specials.eos, self.min_len, self.no_stutter), prefix
