"""The model registry: architecture name -> configuration class, builder and ONNX spec, and
named shipped models -> their directories.  Imports no torch and no method package: builders
and configuration classes are named as ``"module:attribute"`` strings, loaded on use.

This is the one place an architecture is decided: a model directory stores its ``arch`` name
(``meta.json``); :func:`pysynth.models.io.load_model` builds the module with
``architecture(arch).build(config, vocab_size)``, the module reads its capabilities
(``Architecture.options``: attention, copying) from here, and the ONNX exporter takes the graphs'
input and output names from ``Architecture.onnx``.

Every place that takes a model (Python ``model=`` arguments, the CLI's ``--model``) resolves it
with :func:`resolve`: a registered model name (``k2q-copynet-small``), a pysynth model
directory, or a local Hugging Face model directory (``config.json`` with a ``model_type``).
Nothing is ever downloaded.

The shipped models are packaged apart from pysynth (``models/<name>/`` in the checkout builds the
distribution ``pysynth-model-<name>``). A name is found, first match wins, in: the folders of
``PYSYNTH_MODELS`` (``pysynth --models-dir DIR``), the installed model distributions (entry point
group :data:`ENTRY_POINTS`), then the checkout's ``pysynth/models/assets`` (a source tree or an
editable install). A path (a ``PathLike`` or a string with a ``/``) is always taken as a path.

A model folder comes in one of two layouts, both read by :func:`layout` (the one place that knows
them): the checkout's (a store at the top, for a seq2seq model a ``pysynth.model`` store with its
export in ``onnx/``; a training run's ``model/`` + ``onnx/``) and an installed package's uniform one
(``models/_build.py``): the card ``README.md``, ``model.json``, a ``meta.json`` manifest of format
:data:`PACKAGE_FORMAT` naming the stores, ``onnx/`` and, in a trainable package, ``torch/``.
"""
from __future__ import annotations

import importlib
import json
import logging
import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

__all__ = ["cached", "Architecture", "ShippedModel", "register_architecture", "register_model", "architecture",
           "architectures", "models", "resolve", "Resolved", "MODEL_FORMAT", "MODEL_FORMAT_VERSION",
           "ASSETS", "RUN_MODEL", "model_fingerprint", "register_models_in", "shipped", "DECLARATION", "is_onnx_export", "onnx_export_of",
           "seq2seq_backend", "Layout", "layout", "PACKAGE_FORMAT", "PACKAGE_FORMAT_VERSION",
           "CATALOG", "ENTRY_POINTS", "ENV", "ModelNotInstalled", "install_hint", "refresh"]

#: store format of a pysynth model directory (:mod:`pysynth.store`)
MODEL_FORMAT = "pysynth.model"
MODEL_FORMAT_VERSION = 1
#: the checkout's model files (absent from an installed wheel: the models are packaged apart)
ASSETS = Path(__file__).resolve().parent / "assets"
#: every model pysynth ships (``models/<name>/`` in the checkout); a missing one gets :func:`install_hint`
CATALOG = ("dup-dqg-copynet", "dup-minilm-wstb", "en-fr-copynet-small", "fr-en-copynet-small", "k2q-copynet-small",
           "mqr-copynet-small", "qagen-qg-copynet", "qagen-span-minilm", "wellformed-minilm")
#: entry point group of the model distributions: ``name = "module:PATH"``, PATH the model's folder
ENTRY_POINTS = "pysynth.models"
#: environment variable: folders (``os.pathsep``-separated) of model folders ``<name>/model.json``
ENV = "PYSYNTH_MODELS"
#: the model store inside a training run folder
RUN_MODEL = "model"
#: format of an installed model package's top ``meta.json`` (written by ``models/_build.py``): the
#: manifest of the uniform layout; ``meta``: ``{"name", "layout": {"onnx": "onnx"[, "torch": "torch"]},
#: "source_fingerprint", ...}``, ``files``: the card, the declaration and each store's ``meta.json``
PACKAGE_FORMAT = "pysynth.model.package"
PACKAGE_FORMAT_VERSION = 1
_STORE_KINDS = ("onnx", "torch")

PathLike = Union[str, "os.PathLike[str]"]


log = logging.getLogger(__name__)
_loaded: Dict[Any, Any] = {}
_loaded_lock = threading.Lock()


def cached(factory, model=None, threads: int = 0):
    """One ``factory(model, threads)`` per (factory, model, thread setting) for the process: the
    model loaders that callers reach by name (:func:`pysynth.quality.load`, :func:`pysynth.dup.encoder`)."""
    key = (factory, str(model), int(threads))
    with _loaded_lock:
        m = _loaded.get(key)
        if m is None:
            m = _loaded[key] = factory(model, threads)
    return m


def _load_attr(spec: str):
    mod, _, attr = spec.partition(":")
    return getattr(importlib.import_module(mod), attr)


@dataclass(frozen=True)
class Architecture:
    """One registered architecture.

    Parameters
    ----------
    name : the ``arch`` value stored in a model directory.
    family : ``"gru-seq2seq"``, ``"transformer-seq2seq"``, ``"span-encoder"``, ``"bi-encoder"`` ...
    config : ``"module:Class"`` of its configuration dataclass (``to_dict``/``from_dict``).
    builder : ``"module:callable"``; ``builder(config, vocab_size)`` returns the torch module.
    onnx : the ONNX graphs it exports: graph name -> ``{"inputs": [...], "outputs": [...]}``.
    options : the family's capability flags for this architecture (``{"attention": True,
        "copy": True}`` for CopyNet), read by the builder.
    """

    name: str
    family: str
    config: str
    builder: str
    onnx: Dict[str, Dict[str, List[str]]] = field(default_factory=dict)
    options: Dict[str, Any] = field(default_factory=dict)

    def __hash__(self):  # dict fields: hash by name (a registered name is unique)
        return hash(self.name)

    def config_class(self):
        return _load_attr(self.config)

    def build(self, config, vocab_size: int):
        return _load_attr(self.builder)(config, vocab_size)


@dataclass(frozen=True)
class ShippedModel:
    """A named model that ships with pysynth (its directory under ``pysynth/models/assets``), or
    one declared in another folder (:func:`register_models_in`). ``task``: what
    :func:`pysynth.models.load` makes of it (``text2text``, ``spans``, ``encoder``, ``classifier``)."""

    name: str
    arch: str
    directory: Path
    description: str = ""
    task: str = ""
    #: where it was found: ``PYSYNTH_MODELS``, ``entry point <dist>``, ``checkout``, or a folder
    source: str = field(default="", compare=False)


class ModelNotInstalled(ValueError):
    """A shipped model (:data:`CATALOG`) that is not installed; the message says how to install it."""

    def __init__(self, name: str, what: str = "model"):
        self.name = name
        super().__init__(f"{what}: {install_hint(name)}")


def install_hint(name: str) -> str:
    """One line: ``name`` is not installed, and the commands that install it."""
    return (f"model {name!r} is not installed; install it with `pysynth models install {name}` "
            f"(or from the pysynth checkout: pip install ./models/{name})")


_ARCHS: Dict[str, Architecture] = {}
_MODELS: Dict[str, ShippedModel] = {}
#: the declaration file of a shipped model, beside its files: {"name", "arch", "task", "description"}
DECLARATION = "model.json"
_found: set = set()  # names in _MODELS found by the scan (the rest were registered by a caller)
_scanned: List[Any] = []  # the PYSYNTH_MODELS value of the last scan
_scan_lock = threading.RLock()


def _register(table: Dict[str, Any], name: str, entry, what: str):
    old = table.get(name)
    if old is not None and old != entry:
        raise ValueError(f"{what} {name!r} is already registered")
    table[name] = entry
    return entry


def register_architecture(arch: Architecture) -> Architecture:
    """Add ``arch`` (ValueError if the name is taken by another definition)."""
    return _register(_ARCHS, arch.name, arch, "architecture")


def register_model(model: ShippedModel) -> ShippedModel:
    """Add a shipped model (ValueError if the name is taken by another definition)."""
    _shipped()
    return _register(_MODELS, model.name, model, "model name")


def register_models_in(folder: PathLike) -> List[str]:
    """Register every model of ``folder`` that declares itself: a subfolder with a
    :data:`DECLARATION` file (``{"name", "arch", "task", "description"}``) beside its files. The
    shipped models are found this way in ``pysynth/models/assets``; a data folder of trained
    models can be added the same way. Returns the names registered (ValueError for a malformed
    declaration or a name taken by another model)."""
    _shipped()
    return [_register(_MODELS, m.name, m, "model name").name
            for m in map(_declared, sorted(Path(folder).glob(f"*/{DECLARATION}")))]


def _declared(decl: Path, source: str = "") -> ShippedModel:
    try:
        doc = json.loads(decl.read_text(encoding="utf-8"))
        return ShippedModel(str(doc["name"]), str(doc["arch"]), decl.parent, str(doc.get("description", "")),
                            str(doc.get("task", "")), source or str(decl.parent.parent))
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{decl}: not a model declaration ({exc!r}); expected a JSON object with "
                         "'name' and 'arch'") from None


def _env_folders() -> List[Path]:
    folders = [Path(p) for p in os.environ.get(ENV, "").split(os.pathsep) if p.strip()]
    for f in folders:
        if not f.is_dir():
            raise ValueError(f"{ENV}: {str(f)!r} is not a directory; set it to folders holding model folders "
                             f"(<name>/{DECLARATION}), or unset it")
    return folders


def _entry_points() -> List[ShippedModel]:
    """The models of the installed model distributions (entry point group :data:`ENTRY_POINTS`)."""
    from importlib.metadata import entry_points

    eps = entry_points()
    eps = eps.select(group=ENTRY_POINTS) if hasattr(eps, "select") else eps.get(ENTRY_POINTS, [])
    out = []
    for ep in eps:
        dist = getattr(getattr(ep, "dist", None), "name", None) or ep.value
        try:
            folder = Path(ep.load())
        except Exception as exc:  # a broken third-party package must not break every model lookup
            log.warning("model entry point %s (%s) does not load: %s", ep.name, dist, exc)
            continue
        if not (folder / DECLARATION).is_file():
            log.warning("model entry point %s (%s): %s has no %s", ep.name, dist, folder, DECLARATION)
            continue
        out.append(_declared(folder / DECLARATION, f"entry point {dist}"))
    return out


def _shipped() -> None:
    """Find the models, first match wins: :data:`ENV` folders, entry points, the checkout's
    :data:`ASSETS`. Scanned once, and again when :data:`ENV` changes (or after :func:`refresh`)."""
    key = os.environ.get(ENV, "")
    if _scanned and _scanned[0] == key:
        return
    with _scan_lock:  # two threads' first calls: one scan, and neither sees a half-filled table
        if _scanned and _scanned[0] == key:
            return
        for name in _found:
            _MODELS.pop(name, None)
        _found.clear()
        found: List[ShippedModel] = []
        for f in _env_folders():
            found += [_declared(d, ENV) for d in sorted(f.glob(f"*/{DECLARATION}"))]
        found += _entry_points()
        if ASSETS.is_dir():
            found += [_declared(d, "checkout") for d in sorted(ASSETS.glob(f"*/{DECLARATION}"))]
        for m in found:
            if m.name not in _MODELS:
                _MODELS[m.name] = m
                _found.add(m.name)
        _scanned[:] = [key]


def refresh() -> None:
    """Find the models again (after installing one in this process)."""
    with _scan_lock:
        _scanned.clear()
    _shipped()


def architecture(name: str) -> Architecture:
    """The architecture called ``name``; ValueError listing the known ones otherwise."""
    try:
        return _ARCHS[name]
    except KeyError:
        raise ValueError(f"unknown architecture {name!r}; known: {', '.join(sorted(_ARCHS))}") from None


def architectures() -> List[str]:
    return sorted(_ARCHS)


def models() -> List[str]:
    """Names of the installed models (shipped ones and those registered)."""
    _shipped()
    return sorted(_MODELS)


def shipped(name: str) -> Optional[ShippedModel]:
    """The registered model called ``name``, or None."""
    _shipped()
    return _MODELS.get(name)


@dataclass(frozen=True)
class Layout:
    """Where a model folder's stores are (:func:`layout`).

    Attributes
    ----------
    root : the model's folder (an installed package's, or the store folder itself).
    store : the store the loaders open: the torch store when there is one, else the ONNX store;
        a store of a package or run named by its own path stays that store.
    onnx : the ONNX store (a seq2seq export or a single-graph encoder), or None.
    torch : the ``pysynth.model`` store with torch weights, or None.
    package : an installed package's manifest fields (``meta`` of its ``meta.json``); None in the
        checkout's layout.
    """

    root: Path
    store: Path
    onnx: Optional[Path] = None
    torch: Optional[Path] = None
    package: Optional[Dict[str, Any]] = None


def _format(folder: Path) -> Optional[str]:
    from pysynth.store import format_of

    return format_of(folder)


def _package(root: Path, chosen: Optional[Path] = None) -> Optional[Layout]:
    from pysynth import store

    doc = store.read_meta(root, PACKAGE_FORMAT, (PACKAGE_FORMAT_VERSION,))
    names = doc["meta"].get("layout")
    if not isinstance(names, dict) or not names or set(names) - set(_STORE_KINDS) or not all(
            isinstance(v, str) and v and Path(v).name == v and v not in (".", "..") for v in names.values()):
        raise ValueError(f"{root / store.META} is corrupt: 'layout' must map {' and/or '.join(_STORE_KINDS)} to a "
                         f"folder name in the package, got {names!r}")
    onnx, torch = (root / names[k] if k in names else None for k in _STORE_KINDS)
    if chosen is not None and chosen not in (onnx, torch):
        return None
    return Layout(root, chosen or torch or onnx, onnx, torch, dict(doc["meta"]))


def layout(folder: PathLike) -> Optional[Layout]:
    """The stores of model folder ``folder``, read from either layout; None when it holds none.

    * an installed package (``meta.json`` of format :data:`PACKAGE_FORMAT`): the stores its
      manifest names (``onnx/``, and ``torch/`` in a trainable package); a store inside a package,
      named by its path, belongs to it too;
    * the checkout's layout: a ``pysynth.model`` store (torch weights) with its export in
      ``onnx/`` (beside it in a training run folder, ``RUN/model`` + ``RUN/onnx``); any other store
      is the model's ONNX store.

    Raises
    ------
    ValueError
        a package manifest that is corrupt or names no store.
    """
    d = Path(folder)
    fmt = _format(d)
    if fmt == PACKAGE_FORMAT:
        return _package(d)
    if d.parent != d and _format(d.parent) == PACKAGE_FORMAT:
        lay = _package(d.parent, d)
        if lay is not None:
            return lay
    if not (d / "meta.json").is_file():
        run = d / RUN_MODEL
        if not (run / "meta.json").is_file():
            return None
        return Layout(d, run, d / "onnx" if (d / "onnx").is_dir() else None, run if _format(run) == MODEL_FORMAT
                      else None)
    if fmt not in (None, MODEL_FORMAT):
        return Layout(d, d, d)
    onnx = d / "onnx"
    if not onnx.is_dir() and d.name == RUN_MODEL:
        onnx = d.parent / "onnx"
    return Layout(d, d, onnx if onnx.is_dir() else None, d if fmt == MODEL_FORMAT else None)


@dataclass(frozen=True)
class Resolved:
    """What a ``model`` argument names: ``kind`` is ``"pysynth"`` (a pysynth model directory)
    or ``"hf"`` (a local Hugging Face directory); ``name`` the registry name, if any. ``path`` is
    the store to open (:attr:`Layout.store`: of an installed package, its ``torch/`` or ``onnx/``)."""

    kind: str
    path: Path
    name: Optional[str] = None


def resolve(model: Optional[PathLike], default: Optional[str] = None, what: str = "model") -> Resolved:
    """Resolve a registry name or a directory.

    Parameters
    ----------
    model : a shipped model's name, a pysynth model directory, a training run folder (its
        ``model/`` store, see :mod:`pysynth.models.train`), or a local Hugging Face model
        directory; ``None`` takes ``default``.
    default : the registry name used when ``model`` is None.
    what : the argument's name in error messages.

    Raises
    ------
    ValueError
        neither a known name nor a model directory (the message lists the shipped names).
    """
    if model is None:
        if default is None:
            raise ValueError(f"{what}: no model given; pass a name ({', '.join(models())}) or a directory")
        model = default
    if not isinstance(model, (str, os.PathLike)):
        raise TypeError(f"{what} must be a model name or a directory path, got {type(model).__name__}")
    _shipped()
    is_path = not isinstance(model, str) or any(s in model for s in ("/", os.sep, os.altsep or "/"))
    if not is_path and model in _MODELS:  # an explicit path wins over a name
        m = _MODELS[model]
        lay = layout(m.directory)
        return Resolved("pysynth", lay.store if lay is not None else m.directory, m.name)
    p = Path(model)
    if not is_path and model in CATALOG and not p.is_dir():
        raise ModelNotInstalled(model, what)
    if p.is_dir():
        lay = layout(p)
        if lay is not None:
            return Resolved("pysynth", lay.store)
        cfg = p / "config.json"
        if cfg.is_file():
            try:
                doc = json.loads(cfg.read_text(encoding="utf-8"))
            except (OSError, ValueError):
                doc = {}
            if isinstance(doc, dict) and "model_type" in doc:  # before vocab.json: BPE tokenizers have one
                return Resolved("hf", p)
        if (p / "vocab.json").is_file():
            return Resolved("pysynth", p)  # a legacy pysynth folder: refused on load, with the fix
        raise ValueError(f"{what}: {str(p)!r} is not a model directory (no pysynth meta.json, no Hugging Face "
                         "config.json with a model_type)")
    raise ValueError(f"{what}: {str(model)!r} is neither a shipped model ({', '.join(models()) or 'none'}) "
                     "nor an existing directory")


def is_onnx_export(path: PathLike) -> bool:
    """True when ``path`` is an ONNX export folder of a seq2seq model (``pysynth export onnx``'s
    store, format ``pysynth.model.onnx``)."""
    from pysynth import store
    from pysynth.decoding.ort import ONNX_FORMAT

    try:
        store.read_meta(path, ONNX_FORMAT)
    except (ValueError, OSError):
        return False
    return True


def onnx_export_of(model_dir: PathLike) -> Optional[Path]:
    """The ONNX export of a pysynth seq2seq model store: the folder itself when it is one, else
    its :attr:`Layout.onnx` (the ``onnx/`` in it, beside it in a training run folder or in a
    package); None when it has none."""
    d = Path(model_dir)
    if is_onnx_export(d):
        return d
    lay = layout(d)
    if lay is None:  # a legacy folder: its onnx/, if any
        return d / "onnx" if (d / "onnx").is_dir() else None
    return lay.onnx if lay.onnx is not None and lay.onnx != d else None


def seq2seq_backend(model_dir: PathLike, backend: str = "auto") -> str:
    """The one ``auto`` rule of the seq2seq models: ``"onnx"`` when onnxruntime is installed and
    the model has an ONNX export (:func:`onnx_export_of`), else ``"torch"``; an export alone
    (no torch weights) is always ``"onnx"``. An explicit ``"onnx"`` / ``"torch"`` is returned as is.

    Raises
    ------
    ValueError
        ``backend`` is not ``auto``, ``onnx`` or ``torch``.
    """
    if backend not in ("auto", "onnx", "torch"):
        raise ValueError(f"backend: must be 'auto', 'onnx' or 'torch', got {backend!r}")
    if backend != "auto":
        return backend
    import importlib.util

    d = Path(model_dir)
    if is_onnx_export(d):
        return "onnx"
    has_ort = importlib.util.find_spec("onnxruntime") is not None
    return "onnx" if has_ort and onnx_export_of(d) is not None else "torch"


def model_fingerprint(model: Optional[PathLike], default: Optional[str] = None) -> Dict[str, str]:
    """``{"model", "sha256"}`` of a model (what a pipeline run's signature records): SHA-256 of its
    store's ``meta.json`` (which holds every file's size and CRC) or, for a Hugging Face folder, of
    the names and sizes of its files.

    An installed package (:data:`PACKAGE_FORMAT`) gives the fingerprint of the checkout folder it
    was built from (its manifest's ``source_fingerprint``, recorded by ``models/_build.py``), so a
    run signs the same model the same way from the checkout and from its package. The manifest is
    checked first (its own CRC and the size and CRC-32 of the card, the declaration and each store's
    ``meta.json``, which in turn cover every file of the store when it is loaded): ValueError when
    it does not match.
    """
    import hashlib

    r = resolve(model, default=default, what="model")
    p = Path(r.path)
    lay = layout(p) if r.kind == "pysynth" else None
    if lay is not None and lay.package is not None:
        return {"model": r.name or str(lay.root), "sha256": _package_fingerprint(lay.root)}
    h = hashlib.sha256()
    if (p / "meta.json").is_file():
        h.update((p / "meta.json").read_bytes())
    else:
        for f in sorted(p.rglob("*")):
            if f.is_file():
                h.update(f"{f.relative_to(p)}:{f.stat().st_size}\n".encode())
    return {"model": r.name or str(p), "sha256": h.hexdigest()}


def _package_fingerprint(root: Path) -> str:
    """The ``source_fingerprint`` of package ``root`` after checking its manifest's members (or,
    for a package built without one, SHA-256 of the manifest itself)."""
    import hashlib
    import re

    from pysynth import store

    st = store.load(root, PACKAGE_FORMAT, (PACKAGE_FORMAT_VERSION,))  # every listed member checked
    fp = st.meta.get("source_fingerprint")
    if fp is None:
        return hashlib.sha256((root / store.META).read_bytes()).hexdigest()
    if not isinstance(fp, str) or not re.fullmatch(r"[0-9a-f]{64}", fp):
        raise ValueError(f"{root / store.META} is corrupt: source_fingerprint must be 64 hex digits, got {fp!r}")
    return fp


def generator_fingerprint(model: Any, default: str, role: str, options=None) -> Dict[str, Any]:
    """A run signature's entry for a generator that may be an LLM: :func:`pysynth.llm.fingerprint` for a spec
    (prompt ``role``), else the pysynth model's (:func:`model_fingerprint`,
    ``default`` when ``model`` is None)."""
    from pysynth.llm import fingerprint, is_llm_spec

    return fingerprint(model, role, options) if is_llm_spec(model) else model_fingerprint(model, default)


# ------------------------------------------------------------------------------ built-in entries

def _gru_onnx(attention: bool, copy: bool) -> Dict[str, Dict[str, List[str]]]:
    """Graphs of :func:`pysynth.export.onnx.export_onnx` for a GRU seq2seq (Ding & Balog 2018):
    the encoder, one decoder step (``k_zeros``: its length is the TopK's k; ``ext_zeros``: its
    second axis is the extended-vocabulary size) and the step without its vocabulary-wide epilogue."""
    enc_out = ["memory", "context", "h0", "mask"] + (["keys"] if attention else []) + (["copy_feats"] if copy else [])
    if copy:
        step_in = ["tokens", "h", "memory", "keys", "copy_feats", "mask", "src_ext", "ext_zeros"]
    elif attention:
        step_in = ["tokens", "h", "memory", "keys", "mask"]
    else:
        step_in = ["tokens", "h", "context"]
    return {
        "encoder": {"inputs": ["src", "src_len"], "outputs": enc_out},
        "step": {"inputs": step_in + ["k_zeros"], "outputs": ["logp", "h_new", "top_vals", "top_idx"]},
        "step_parts": {"inputs": [n for n in step_in if n != "ext_zeros"],
                       "outputs": ["ls", "shift", "touched", "h_new"] if copy else ["ls", "h_new"]},
    }


for _name, _attention, _copy in (("ednet", False, False), ("attnet", True, False), ("copynet", True, True)):
    register_architecture(Architecture(_name, "gru-seq2seq", "pysynth.models.config:Seq2SeqConfig",
                                       "pysynth.models.seq2seq:Seq2Seq", _gru_onnx(_attention, _copy),
                                       {"attention": _attention, "copy": _copy}))

# shipped models: each declares itself in a model.json beside its files (:data:`DECLARATION`),
# found by :func:`register_models_in` over ASSETS on first use

# ------------------------------------------------------------------------------ transformer / encoder families
# (appended by the families branch: pysynth.models.transformer, pysynth.models.encoders)
register_architecture(Architecture(
    "transformer-seq2seq", "transformer-seq2seq", "pysynth.models.transformer:TransformerSeq2SeqConfig",
    "pysynth.models.transformer:TransformerSeq2Seq",
    {"encoder": {"inputs": ["src", "src_len"], "outputs": ["memory", "keys", "copy_feats", "mask", "h0"]},
     "step": {"inputs": ["tokens", "h", "memory", "keys", "copy_feats", "mask", "src_ext", "ext_zeros"],
              "outputs": ["logp", "h_new"]}}))
_ENC_IN = ["input_ids", "attention_mask", "token_type_ids"]
register_architecture(Architecture(
    "span-encoder", "span-encoder", "pysynth.models.encoders:EncoderConfig", "pysynth.models.encoders:SpanEncoder",
    {"model": {"inputs": _ENC_IN, "outputs": ["start_logits", "end_logits", "null_score", "joint"]}}))
register_architecture(Architecture(
    "bi-encoder", "bi-encoder", "pysynth.models.encoders:EncoderConfig", "pysynth.models.encoders:BiEncoder",
    {"model": {"inputs": _ENC_IN, "outputs": ["embeddings"]}}))
register_architecture(Architecture(
    "sequence-classifier", "sequence-classifier", "pysynth.models.encoders:EncoderConfig",
    "pysynth.models.encoders:SequenceClassifier", {"model": {"inputs": _ENC_IN, "outputs": ["logits"]}}))
register_architecture(Architecture("warmstart-seq2seq", "warmstart-seq2seq", "pysynth.models.warmstart:WarmStartConfig",
                                   "pysynth.models.warmstart:WarmStartSeq2Seq",
                                   {"encoder": {"inputs": ["src", "src_mask", "src_types"],
                                                "outputs": ["memory", "mem_k", "mem_v", "copy_k"]},
                                    "step": {"inputs": ["prefix", "memory", "mem_k", "mem_v", "copy_k", "src",
                                                        "src_mask"], "outputs": ["logp"]}}))
# issue 26: exported by pysynth.export.warmstart (store pysynth.warmstart.onnx, copy_k only with the copy head)
