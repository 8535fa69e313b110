"""What the server runs: each method's served adapter (:mod:`pysynth.pipelines.served`), its loaded
library objects and, when it batches, a :class:`~pysynth.serve.batching.Batcher` over its
:meth:`~pysynth.pipelines.served.Adapter.call`.

Never imports torch: the adapters load pysynth models on onnxruntime (ONNX exports) and search
collections (:class:`pysynth.retrieval.collection.Collection` stores, onnxruntime detectors).
"""
from __future__ import annotations

import hashlib
import logging
import os
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Hashable, List, Optional

from pysynth.dup.served import ADAPTER as _DUPLICATES
from pysynth.k2q.served import ADAPTER as _K2Q
from pysynth.metrics.served import ADAPTER as _SCORE
from pysynth.mqr.served import ADAPTER as _REWRITE
from pysynth.paraphrase.served import ADAPTER as _PARAPHRASE
from pysynth.pipelines.served import Adapter
from pysynth.qagen.served import ADAPTER as _QAGEN
from pysynth.quality.served import ADAPTER as _WELLFORMED
from pysynth.serve.batching import Batcher

__all__ = ["ADAPTERS", "ServedModel", "SearchCollection", "TASKS", "parse_model_spec", "public_name"]

log = logging.getLogger("pysynth.serve")

#: every endpoint the server can mount, by task name (a new method adds its adapter here)
ADAPTERS: Dict[str, Adapter] = {a.name: a for a in (_K2Q, _REWRITE, _WELLFORMED, _PARAPHRASE, _QAGEN, _SCORE,
                                                     _DUPLICATES)}
#: the ServeConfig option that loads an adapter which is not a model task (``--model TASK=...``)
OPTIONS = {"score": "meteor", "duplicates": "collection"}
#: endpoint (task) -> the shipped model it serves when ``--model`` names none for it
TASKS: Dict[str, Optional[str]] = {n: a.default_model for n, a in ADAPTERS.items() if a.default_model is not None}


def parse_model_spec(spec: str) -> tuple:
    """``[TASK=]NAME|DIR`` -> ``(task, model)``; without ``TASK=``, the task whose shipped model
    ``NAME`` is, else ``k2q``. ValueError for an unknown task."""
    task, sep, model = spec.partition("=")
    if not sep:
        task, model = next((t for t, m in TASKS.items() if m == spec), "k2q"), spec
    if task not in TASKS:
        raise ValueError(f"--model {spec!r}: unknown task {task!r}; tasks with models: {', '.join(sorted(TASKS))}")
    if not model:
        raise ValueError(f"--model {spec!r}: no model after {task}=")
    return task, model


def _fingerprint(path: Path) -> str:
    """12 hex digits of SHA-256 over a folder's ``meta.json`` (a pysynth store lists every file's
    size and CRC there) or else its file names and sizes."""
    h = hashlib.sha256()
    meta = path / "meta.json"
    if meta.is_file():
        h.update(meta.read_bytes())
    elif path.is_dir():
        for f in sorted(path.rglob("*"))[:10000]:
            if f.is_file():
                h.update(f"{f.relative_to(path)}:{f.stat().st_size}\n".encode())
    else:
        h.update(str(path).encode())
    return h.hexdigest()[:12]


def public_name(name: str) -> str:
    """What responses call a model or collection: a shipped model's name as it is; a folder (or
    any name with a path separator) as its last component and a fingerprint (``mymodel@3f9a0c12d4e5``),
    never its filesystem path. ``A,B`` pairs are named part by part."""
    parts = []
    for part in str(name).split(","):
        if os.sep in part or "/" in part or (os.altsep and os.altsep in part):
            p = Path(part)
            parts.append(f"{p.name or 'model'}@{_fingerprint(p)}")
        else:
            parts.append(part)
    return ",".join(parts)


def _cuda_or_cpu(device: str, task: str) -> str:
    """``device``, or ``"cpu"`` with a warning when ``"cuda"`` is asked for and onnxruntime has no
    CUDA provider (onnxruntime-gpu not installed)."""
    from pysynth.decoding.ort import choose_providers

    if device == "cuda":
        try:
            choose_providers("cuda")
        except ValueError as exc:
            warnings.warn(f"{exc}; serving {task} on the CPU", RuntimeWarning, stacklevel=4)
            return "cpu"
    return device


@dataclass
class ServedModel:
    """One loaded adapter: its library object (:attr:`model`), display name, onnxruntime
    providers and batcher (None for an adapter that does not batch)."""

    adapter: Adapter
    name: str
    model: Any
    providers: List[str] = field(default_factory=list)
    batcher: Optional[Batcher] = None

    @classmethod
    def load(cls, adapter: Adapter, spec: Any = None, *, device: str = "cpu", threads: int = 0, max_batch: int = 32,
             max_wait_ms: float = 2.0, max_queue: int = 1024) -> "ServedModel":
        """Load ``adapter`` for ``spec`` (a model name or directory; None: its shipped model).

        ``device="cuda"`` without onnxruntime's CUDA provider falls back to the CPU with a
        warning; the providers the sessions really use are kept in :attr:`providers`.
        """
        if adapter.default_model is not None:
            device = _cuda_or_cpu(device, adapter.name)
        got = adapter.load(spec, device=device, threads=threads)
        if device == "cuda" and got.providers and got.providers[0] != "CUDAExecutionProvider":
            warnings.warn(f"{adapter.name}: onnxruntime runs on {got.providers[0]}, not CUDA", RuntimeWarning,
                          stacklevel=3)
        self = cls(adapter, public_name(got.name), got.model, list(got.providers))
        if adapter.batched:
            k = adapter.batch_scale
            self.batcher = Batcher(adapter.name, self._run, max_batch=max_batch * k, max_wait_ms=max_wait_ms,
                                   max_queue=max_queue * k)
        return self

    @property
    def generator(self) -> Any:
        """:attr:`model` (its name when every served model was a generator)."""
        return self.model

    @property
    def path(self) -> str:
        """:attr:`name` (a collection's folder name and fingerprint; never its path)."""
        return self.name

    def _run(self, key: Hashable, inputs: List[Any]) -> List[Any]:
        return self.adapter.call(self.model, key, inputs)

    def warmup(self) -> None:
        """One small call, so that the first request does not pay first-run costs."""
        self.adapter.warmup(self.model)


class SearchCollection(ServedModel):
    """The served ``--collection`` of ``POST /v1/duplicates`` (:mod:`pysynth.dup.served`)."""

    @classmethod
    def load(cls, path: Any = None, **kw) -> "SearchCollection":  # type: ignore[override]
        """The collection or duplicate index at ``path`` behind its batcher."""
        return super().load(ADAPTERS["duplicates"], path, **kw)  # type: ignore[return-value]

    @property
    def models(self) -> tuple:
        return self.model.models
