"""Text classifiers exported to ONNX (format ``pysynth.classifier.onnx``) on onnxruntime, with the
pure-Python WordPiece tokenizer (:mod:`pysynth.models.wordpiece`): no torch, so the server can run
them. The shipped ``wellformed-minilm`` (:mod:`pysynth.quality`) is one.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Optional, Sequence, Union

import numpy as np

from pysynth import _validate

__all__ = ["OnnxClassifier", "FORMAT", "FORMAT_VERSION"]

#: store format of an exported classifier (:mod:`pysynth.store`)
FORMAT = "pysynth.classifier.onnx"
FORMAT_VERSION = 1
PathLike = Union[str, "os.PathLike[str]"]


class OnnxClassifier:
    """An exported text classifier (``pysynth.classifier.onnx``) on onnxruntime: one logit per text.

    Parameters
    ----------
    model : a shipped name (``wellformed-minilm``) or a directory written by
        :func:`pysynth.quality.train.export`; None: ``default``.
    threads : onnxruntime intra-op threads (0: its default).
    device : ``cpu`` or ``cuda`` (onnxruntime-gpu), see :func:`pysynth.decoding.ort.choose_providers`.
    default : str, optional
        The shipped name used when ``model`` is None.
    """

    def __init__(self, model: Optional[PathLike] = None, threads: int = 0, device: str = "cpu",
                 default: Optional[str] = None):
        from pysynth import store
        from pysynth.decoding.ort import session
        from pysynth.models.registry import resolve
        from pysynth.models.wordpiece import WordPiece

        r = resolve(model, default=default, what="model")
        st = store.load(r.path, FORMAT, (FORMAT_VERSION,))
        self.name = r.name or str(r.path)
        self.path = r.path
        self.config = json.loads(st.read("config.json"))
        self.max_length = int(self.config.get("max_length", 64))
        st.read("vocab.txt")  # size and CRC-32 checked
        self.tokenizer = WordPiece(Path(r.path) / "vocab.txt")
        self.session = session(st.read("model.onnx"), threads=threads, device=device,
                               name=str(Path(r.path) / "model.onnx"))
        self.providers = self.session.get_providers()
        self._inputs = [i.name for i in self.session.get_inputs()]

    def logits(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Raw scores [len(texts)] float32 (the sigmoid of which is :meth:`__call__`)."""
        texts = _validate.strings(texts, "texts")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size: must be a positive integer, got {batch_size!r}")
        out = [np.zeros(0, dtype=np.float32)]
        # similar lengths together: less padding (the results do not depend on the order)
        order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
        for b in range(0, len(order), batch_size):
            idx = order[b:b + batch_size]
            feed = self.tokenizer.batch([texts[i] for i in idx], self.max_length)
            out.append(self.session.run(None, {k: feed[k] for k in self._inputs})[0].astype(np.float32))
        res = np.empty(len(texts), dtype=np.float32)
        res[order] = np.concatenate(out)
        return res

    def __call__(self, texts: Sequence[str], batch_size: int = 64) -> np.ndarray:
        """Probabilities [len(texts)] float64 of the positive class (the sigmoid of :meth:`logits`)."""
        z = self.logits(texts, batch_size).astype(np.float64)
        return 1.0 / (1.0 + np.exp(-z))
