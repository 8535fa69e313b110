"""One model loader: :func:`load` reads what a model folder is and returns the object that runs it.

What a folder is comes from the folder alone: its store format (``meta.json``), the ``arch`` of a
pysynth model store (:func:`pysynth.models.registry.architecture`), or a Hugging Face
``config.json`` (its ``architectures``). A shipped model's name resolves to its folder
(:func:`pysynth.models.registry.resolve`; the models declare themselves in a ``model.json``
beside their files).

* ``text2text``: a :class:`pysynth.models.text2text.Text2Text` (n-best text generation) for a
  pysynth seq2seq store, an ONNX export or a Hugging Face seq2seq folder;
* ``spans``: a :class:`pysynth.models.span_model.SpanModel` (answer extraction, extractive QA)
  for a ``pysynth.spans.onnx`` store, a span-encoder store or a Hugging Face QA folder;
* ``encoder``: a text encoder, ``OnnxEncoder`` (``pysynth.encoder.onnx`` and
  ``pysynth.dup.encoder`` stores), :class:`pysynth.models.hf.HFEmbedder` (other Hugging Face
  folders), or the torch ``(BiEncoder, tokenizer)`` pair of a bi-encoder store;
* ``classifier``: a :class:`pysynth.models.classifier.OnnxClassifier` (``pysynth.classifier.onnx``)
  or the torch ``(SequenceClassifier, tokenizer)`` pair;
* ``llm``: a :class:`pysynth.llm.LLM` for an LLM spec (``openai:http://HOST:PORT/v1?model=NAME``,
  ``hf-causal:DIR``) or a local causal LM folder (:func:`pysynth.llm.open_llm`).

Other packages add their own store formats with :func:`register_loader`.
"""
from __future__ import annotations

import importlib
import json
import os
from pathlib import Path
from typing import Any, Callable, Dict, Optional, Tuple, Union

__all__ = ["load", "task_of", "register_loader", "TASKS"]

PathLike = Union[str, "os.PathLike[str]"]
TASKS = ("text2text", "spans", "encoder", "classifier", "llm")
_ALIASES = {"seq2seq": "text2text", "qa": "spans", "embed": "encoder"}
#: architecture family of a pysynth model store -> task
_FAMILIES = {"gru-seq2seq": "text2text", "transformer-seq2seq": "text2text", "span-encoder": "spans",
             "bi-encoder": "encoder", "sequence-classifier": "classifier"}
#: store format -> (task, "module:callable"); the callable takes (path, backend=, device=, threads=)
_FORMATS: Dict[str, Tuple[str, Any]] = {
    "pysynth.model.onnx": ("text2text", "pysynth.models.loader:_text2text"),
    "pysynth.spans.onnx": ("spans", "pysynth.models.loader:_spans"),
    "pysynth.classifier.onnx": ("classifier", "pysynth.models.loader:_classifier"),
    "pysynth.encoder.onnx": ("encoder", "pysynth.models.loader:_onnx_encoder"),
    "pysynth.dup.encoder": ("encoder", "pysynth.models.loader:_onnx_encoder"),
    # issue 26: warm-started encoder-decoder (question generation), pysynth.export.warmstart
    "pysynth.warmstart.onnx": ("text2text", "pysynth.models.warmstart_qg:load_store"),
}


def register_loader(format: str, task: str, factory: Union[str, Callable[..., Any]]) -> None:
    """Teach :func:`load` a store format: ``factory(path, backend=, device=, threads=)`` (a callable
    or a ``"module:callable"`` string, imported on use) returns the object for ``task``."""
    _FORMATS[format] = (_task(task), factory)


def _task(task: Optional[str]) -> Optional[str]:
    if task is None:
        return None
    t = _ALIASES.get(task, task)
    if t not in TASKS:
        raise ValueError(f"task: must be one of {TASKS}, got {task!r}")
    return t


def _hf_task(path: Path) -> str:
    """The task of a Hugging Face folder from its ``config.json``."""
    try:
        doc = json.loads((path / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        doc = {}
    archs = [str(a) for a in doc.get("architectures") or []]
    if doc.get("is_encoder_decoder") or any(a.endswith(("ForConditionalGeneration", "ForSeq2SeqLM")) for a in archs):
        return "text2text"
    if any(a.endswith("ForQuestionAnswering") for a in archs):
        return "spans"
    return "encoder"


def task_of(name_or_dir: PathLike) -> Tuple[str, str, Path]:
    """``(task, kind, path)`` of a model: its task (:data:`TASKS`), ``kind`` (``"hf"``, the store
    format, or ``"pysynth.model"`` with the architecture family after a colon) and folder.

    Raises
    ------
    ValueError
        not a model folder, or a format no loader knows (the message names it).
    """
    from pysynth.models.registry import MODEL_FORMAT, architecture, resolve
    from pysynth.store import format_of

    r = resolve(name_or_dir)
    p = Path(r.path)
    if r.kind == "hf":
        return _hf_task(p), "hf", p
    fmt = format_of(p)
    if fmt is None or fmt == MODEL_FORMAT:
        # a legacy folder (no meta.json) is a seq2seq model: its loader says how to upgrade it
        arch = _store_arch(p)
        if arch is None:
            return "text2text", MODEL_FORMAT, p
        family = architecture(arch).family
        return _FAMILIES.get(family, "text2text"), f"{MODEL_FORMAT}:{family}", p
    if fmt not in _FORMATS:
        raise ValueError(f"model: {p} is a {fmt!r} store, which pysynth.models.load does not open; known formats: "
                         f"{', '.join(sorted(_FORMATS) + [MODEL_FORMAT])}")
    return _FORMATS[fmt][0], fmt, p


def _store_arch(p: Path) -> Optional[str]:
    try:
        doc = json.loads((p / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    arch = (doc.get("meta") or {}).get("arch") if isinstance(doc, dict) else None
    return str(arch) if arch else None


def load(name_or_dir: PathLike, task: Optional[str] = None, *, backend: str = "auto", device: Optional[str] = None,
         threads: int = 0) -> Any:
    """Load any pysynth model, an ONNX export or a local Hugging Face folder (nothing is downloaded).

    Parameters
    ----------
    name_or_dir : a shipped name (``pysynth.models.models()``), a model folder, a training run, an
        ONNX export folder or a local Hugging Face folder.
    task : {"text2text", "spans", "encoder", "classifier"}, optional
        What the caller wants (``seq2seq``, ``qa``, ``embed`` are accepted too); None: what the
        folder is. A model of another task is a ValueError.
    backend : {"auto", "onnx", "torch"}
        Seq2seq models (:func:`pysynth.models.registry.seq2seq_backend`).
    device, threads : runtime settings (onnxruntime intra-op threads; 0: its default).

    Returns
    -------
    The object of the table in :mod:`pysynth.models.loader`.

    Examples
    --------
    >>> from pysynth import models
    >>> models.load("k2q-copynet-small").generate(["paris capital"])[0].texts  # doctest: +SKIP
    >>> models.load("wellformed-minilm")(["what is it?"])  # doctest: +SKIP
    """
    want = _task(task)
    from pysynth.llm import is_llm_spec

    if want == "llm" or (want is None and is_llm_spec(name_or_dir)):  # a spec is no folder task_of reads
        from pysynth.llm import open_llm

        return open_llm(name_or_dir, device=None if device == "cpu" else device)
    got, kind, path = task_of(name_or_dir)
    if want is not None and want != got:
        raise ValueError(f"model: {name_or_dir} is a {got} model ({kind}), not a {want} model")
    from pysynth.models.registry import shipped

    opts = dict(backend=backend, device=device, threads=threads)
    if isinstance(name_or_dir, str) and shipped(name_or_dir) is not None:
        path = name_or_dir  # the factories resolve it again and keep the name for display
    if kind == "hf":
        return _hf(path, got, **opts)
    if kind.partition(":")[0] == "pysynth.model" and got != "text2text":
        return _spans(path, **opts) if got == "spans" else _torch_encoder(path, **opts)
    factory = _FORMATS[kind][1] if kind in _FORMATS else _text2text
    if isinstance(factory, str):
        mod, _, attr = factory.partition(":")
        factory = getattr(importlib.import_module(mod), attr)
    return factory(path, **opts)


# ------------------------------------------------------------------------------ factories

def _text2text(path, backend="auto", device=None, threads=0):
    from pysynth.models.text2text import text2text

    return text2text(path, backend, device=device, threads=threads)


def _spans(path, backend="auto", device=None, threads=0):
    from pysynth.models.span_model import SpanModel

    return SpanModel(path, threads=threads, device=device or "cpu")


def _classifier(path, backend="auto", device=None, threads=0):
    from pysynth.models.classifier import OnnxClassifier

    return OnnxClassifier(path, threads=threads, device=device or "cpu")


def _onnx_encoder(path, backend="auto", device=None, threads=0):
    from pysynth.models.registry import resolve
    from pysynth.store import format_of

    path = resolve(path).path
    # the text encoder's home since issue 25 (pysynth.models.embed), imported by name
    cls = getattr(importlib.import_module("pysynth.models.embed"), "OnnxEncoder")
    return cls(path, threads=threads, device=device or "cpu", store_format=(format_of(path), 1))


def _torch_encoder(path, backend="auto", device=None, threads=0):
    """A pysynth bi-encoder or classifier store on torch: ``(module, tokenizer)``."""
    from pysynth.models import encoders
    from pysynth.models.registry import resolve

    return encoders.load(resolve(path).path, None if device == "cpu" else device)


def _hf(path, task, backend="auto", device=None, threads=0):
    if task == "text2text":
        from pysynth.models.text2text import HFText2Text

        return HFText2Text(path, device=None if device == "cpu" else device)
    if task == "spans":
        return _spans(path, device=device, threads=threads)
    from pysynth.models.hf import HFEmbedder

    return HFEmbedder(path, device=None if device == "cpu" else device)
