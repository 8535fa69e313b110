"""Model directories: a versioned :mod:`pysynth.store` store, loaded without pickle.

A model directory is a store of format ``pysynth.model`` (version 1,
:data:`pysynth.models.registry.MODEL_FORMAT`)::

    meta.json          {"format": "pysynth.model", "format_version": 1, ...,
                        "meta": {"arch", "family", "config", "vocab_size"}}
    config.json        the architecture's configuration (also in meta.json)
    vocab.json         {"itos": [...]}
    model.safetensors  the weights (safetensors: tensors only, no code)
    onnx/              optional: the ONNX export (a ``pysynth.model.onnx`` store)

The architecture is looked up in :mod:`pysynth.models.registry` by ``meta["arch"]``, which
names the configuration class and the builder. Folders from before the store format
(``config.json`` + ``vocab.json`` + ``model.pt``, no ``meta.json``) are refused with a
ValueError naming :func:`upgrade_model_dir`, which converts one (its ``model.pt`` is read with
``torch.load(weights_only=True)``).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Tuple

from pysynth import store
from pysynth.io import atomic_write
from pysynth.models import registry

__all__ = ["atomic_save", "save_model", "load_model", "torch_device", "load_state_dict", "read_model_dir", "upgrade_model_dir",
           "no_torch_weights", "CONFIG", "VOCAB", "WEIGHTS"]

CONFIG, VOCAB, WEIGHTS, LEGACY_WEIGHTS = "config.json", "vocab.json", "model.safetensors", "model.pt"


def _safetensors():
    """``safetensors.torch``, or ModuleNotFoundError with the install command."""
    try:
        import safetensors.torch as st
    except ModuleNotFoundError:
        raise ModuleNotFoundError("model weights are safetensors files: pip install '.[torch]' "
                                  "(torch and safetensors)") from None
    return st


def atomic_save(obj: Any, path: os.PathLike) -> None:
    """``torch.save`` through a temporary file + rename (checkpoints survive a crash mid-write)."""
    import torch

    atomic_write(path, lambda f: torch.save(obj, f))


def _legacy_error(d: Path) -> ValueError:
    return ValueError(f"{d} is a model folder from an older pysynth (no meta.json; weights in "
                      f"{LEGACY_WEIGHTS} or {WEIGHTS}): convert it once with "
                      f"pysynth.models.io.upgrade_model_dir({str(d)!r}, NEW_DIR) and use NEW_DIR")


def read_model_dir(folder: os.PathLike) -> "store.Stored":
    """The checked store of a model directory (no torch needed).

    Raises
    ------
    FileNotFoundError
        ``folder`` does not exist.
    ValueError
        a legacy folder (with the fix), not a ``pysynth.model`` store, or another version.
    """
    d = Path(folder)
    if d.is_dir() and not (d / store.META).exists() and (d / VOCAB).exists():
        raise _legacy_error(d)
    if d.is_dir():
        lay = registry.layout(d)
        if lay is not None and lay.package is not None and lay.torch is None:
            raise no_torch_weights(d)
    return store.load(d, registry.MODEL_FORMAT, (registry.MODEL_FORMAT_VERSION,))


def read_config_vocab(folder: os.PathLike):
    """``(architecture, config, vocab, stored)`` of a model directory, without torch."""
    from pysynth.models.vocab import Vocab

    st = read_model_dir(folder)
    arch = registry.architecture(st.meta.get("arch"))
    name = CONFIG
    try:  # consistent checksums but wrong content (a hand-edited or swapped member)
        cfg = arch.config_class().from_dict(st.read_json(CONFIG))
        name = VOCAB
        vocab = Vocab.from_json(st.read(VOCAB))
    except (TypeError, KeyError, IndexError, AttributeError, RecursionError) as exc:
        raise ValueError(f"{st.path / name} is not a valid {name}: {exc}") from None
    except ValueError as exc:
        raise ValueError(exc if str(st.path) in str(exc) else f"{st.path / name}: {exc}") from None
    return arch, cfg, vocab, st


def save_model(model, vocab, folder: os.PathLike, files: Optional[Mapping[str, bytes]] = None) -> Path:
    """Write ``model`` (its ``config`` names a registered ``arch``) and ``vocab`` as a model store.

    ``files``: extra members (a README, the training configuration). The directory is replaced
    atomically, an ``onnx/`` export in it included (it would be stale).
    """
    save = _safetensors().save
    cfg = model.config
    arch = registry.architecture(cfg.arch)
    state = {k: v.detach().cpu().contiguous() for k, v in model.state_dict().items()}
    members = {CONFIG: cfg.to_json(), VOCAB: vocab.to_json(), WEIGHTS: save(state)}
    for name, data in (files or {}).items():
        if name in members:
            raise ValueError(f"files: {name!r} is written by save_model itself")
        members[name] = data
    meta = {"arch": arch.name, "family": arch.family, "config": cfg.to_dict(), "vocab_size": len(vocab)}
    return store.save(folder, registry.MODEL_FORMAT, registry.MODEL_FORMAT_VERSION, files=members, meta=meta)


def load_state_dict(folder: os.PathLike) -> Dict[str, Any]:
    """The weights of a model directory (safetensors: no code runs)."""
    return _safetensors().load(_weights(read_model_dir(folder)))


def no_torch_weights(path: os.PathLike) -> ValueError:
    """The error of a model without torch weights asked for them (an installed model package holds
    its ONNX export only unless built trainable: models/_build.py), naming the fixes."""
    return ValueError(f"{path} has no torch weights ({WEIGHTS}): the installed model package holds its ONNX export "
                      "only; use the onnx backend, or the checkout's model files, which have them: "
                      "pysynth --models-dir <checkout>/pysynth/models/assets ... (or PYSYNTH_MODELS=that folder)")


def _weights(st) -> bytes:
    """The torch weights of a model store; a ValueError naming the fix when it has none."""
    if WEIGHTS not in st.files:
        raise no_torch_weights(st.path)
    return st.read(WEIGHTS)


def torch_device(name: Optional[str]):
    """``torch.device`` of ``name`` (``auto``: CUDA when torch sees one); ValueError naming the fix
    when CUDA is asked for and this torch has none (a CPU build, or no GPU)."""
    import torch

    if name in (None, "auto"):
        return torch.device("cuda" if torch.cuda.is_available() else "cpu")
    try:
        dev = torch.device(name)
    except (RuntimeError, TypeError) as exc:
        raise ValueError(f"device: {name!r} is not a torch device ({exc}); use cpu, cuda or auto") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise ValueError(f"device: {name!r} asked for, but torch {torch.__version__} sees no CUDA device; "
                         "use --device cpu (or auto)")
    return dev


def load_model(folder: os.PathLike, device: Optional[str] = None) -> Tuple[Any, Any]:
    """``(model, vocab)`` from a model directory or a registered name; the model is in eval mode."""
    load = _safetensors().load
    r = registry.resolve(folder, what="model")
    if r.kind != "pysynth":
        raise ValueError(f"model: {r.path} is a Hugging Face model; use pysynth.decoding.hf.HFBackend")
    arch, cfg, vocab, st = read_config_vocab(r.path)
    model = arch.build(cfg, len(vocab))
    data = _weights(st)
    try:
        model.load_state_dict(load(data))
    except Exception as exc:  # noqa: BLE001 - safetensors and torch raise their own types
        raise ValueError(f"{st.path / WEIGHTS} does not hold this model's weights ({type(exc).__name__}: "
                         f"{str(exc)[:300]})") from None
    if device:
        model.to(torch_device(device))
    return model.eval(), vocab


def upgrade_model_dir(src: os.PathLike, dst: os.PathLike) -> Path:
    """Convert a pre-store model folder (``config.json``, ``vocab.json``, ``model.pt`` or
    ``model.safetensors``) into a model store at ``dst``; ``model.pt`` is read with
    ``torch.load(weights_only=True)`` (tensors only, no code)."""
    import torch

    from pysynth.models.vocab import Vocab

    s = Path(src)
    if (s / store.META).exists():
        raise ValueError(f"src: {s} is already a model store")
    with open(s / CONFIG, encoding="utf-8") as f:
        doc = json.load(f)
    arch = registry.architecture(doc.get("arch"))
    cfg = arch.config_class().from_dict(doc)
    vocab = Vocab.from_json((s / VOCAB).read_bytes())
    if (s / WEIGHTS).exists():
        state = _safetensors().load_file(str(s / WEIGHTS))
    elif (s / LEGACY_WEIGHTS).exists():
        state = torch.load(s / LEGACY_WEIGHTS, map_location="cpu", weights_only=True)
    else:
        raise FileNotFoundError(f"src: no {WEIGHTS} or {LEGACY_WEIGHTS} in {s}")
    model = arch.build(cfg, len(vocab))
    model.load_state_dict(state)
    return save_model(model, vocab, dst)
