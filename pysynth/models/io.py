"""Model folders: ``config.json`` + ``vocab.json`` + weights, written atomically.

Weights never go through pickle-with-code: ``model.safetensors`` when the ``safetensors``
package is installed, else ``model.pt`` written by ``torch.save(state_dict)`` and read with
``torch.load(weights_only=True)``. Loading accepts either file.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, Optional, Tuple

from pysynth.io import atomic_write as _atomic

__all__ = ["atomic_write_text", "atomic_write_bytes", "atomic_save", "save_model", "load_model",
           "load_state_dict", "has_safetensors"]

CONFIG, VOCAB, SAFETENSORS, TORCH_WEIGHTS = "config.json", "vocab.json", "model.safetensors", "model.pt"


def atomic_write_text(path: os.PathLike, text: str) -> None:
    _atomic(path, lambda f: f.write(text.encode("utf-8")))


def atomic_write_bytes(path: os.PathLike, data: bytes) -> None:
    _atomic(path, lambda f: f.write(data))


def atomic_save(obj: Any, path: os.PathLike) -> None:
    """``torch.save`` through a temporary file + rename (checkpoints survive a crash mid-write)."""
    import torch

    _atomic(path, lambda f: torch.save(obj, f))


def has_safetensors() -> bool:
    try:
        import safetensors.torch  # noqa: F401
    except ModuleNotFoundError:
        return False
    return True


def save_state_dict(state: Dict[str, Any], folder: os.PathLike, fmt: str = "auto") -> Path:
    """Write weights as ``model.safetensors`` (``fmt='auto'`` when installed) or ``model.pt``."""
    folder = Path(folder)
    state = {k: v.detach().cpu().contiguous() for k, v in state.items()}
    if fmt == "auto":
        fmt = "safetensors" if has_safetensors() else "torch"
    if fmt == "safetensors":
        from safetensors.torch import save

        atomic_write_bytes(folder / SAFETENSORS, save(state))
        stale = folder / TORCH_WEIGHTS
        out = folder / SAFETENSORS
    elif fmt == "torch":
        atomic_save(state, folder / TORCH_WEIGHTS)
        stale = folder / SAFETENSORS
        out = folder / TORCH_WEIGHTS
    else:
        raise ValueError(f"fmt: must be 'auto', 'safetensors' or 'torch', got {fmt!r}")
    if stale.exists():
        stale.unlink()
    return out


def load_state_dict(folder: os.PathLike) -> Dict[str, Any]:
    """Weights of a model folder, without executing pickled code."""
    import torch

    folder = Path(folder)
    if (folder / SAFETENSORS).exists() and (has_safetensors() or not (folder / TORCH_WEIGHTS).exists()):
        if not has_safetensors():
            raise ModuleNotFoundError(
                f"{folder / SAFETENSORS} needs the safetensors package: pip install safetensors"
            )
        from safetensors.torch import load_file

        return load_file(str(folder / SAFETENSORS))
    if (folder / TORCH_WEIGHTS).exists():
        return torch.load(folder / TORCH_WEIGHTS, map_location="cpu", weights_only=True)
    raise FileNotFoundError(f"no {SAFETENSORS} or {TORCH_WEIGHTS} in {folder}")


def save_model(model, vocab, folder: os.PathLike, fmt: str = "auto") -> Path:
    """Write ``config.json``, ``vocab.json`` and the weights of ``model`` into ``folder``."""
    folder = Path(folder)
    folder.mkdir(parents=True, exist_ok=True)
    model.config.save(folder / CONFIG)
    vocab.save(folder / VOCAB)
    save_state_dict(model.state_dict(), folder, fmt)
    return folder


def load_model(folder: os.PathLike, device: Optional[str] = None) -> Tuple[Any, Any]:
    """``(model, vocab)`` from a model folder; the model is in eval mode."""
    from pysynth.models.config import Seq2SeqConfig
    from pysynth.models.seq2seq import Seq2Seq
    from pysynth.models.vocab import Vocab

    folder = Path(folder)
    if not (folder / CONFIG).exists():
        raise FileNotFoundError(f"{folder} is not a model folder (no {CONFIG})")
    cfg = Seq2SeqConfig.load(folder / CONFIG)
    vocab = Vocab.load(folder / VOCAB)
    model = Seq2Seq(cfg, len(vocab))
    model.load_state_dict(load_state_dict(folder))
    if device:
        model.to(device)
    return model.eval(), vocab
