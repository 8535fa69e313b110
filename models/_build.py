"""The one build of every model distribution ``pysynth-model-<name>`` (``models/<name>/setup.py``
calls :func:`setup_model`; ``tools/package_models.py`` writes those folders).

The model's files are not copied into the checkout a second time: the build reads them from
``pysynth/models/assets/<name>/`` (never changing them) and writes the wheel's copy as
``pysynth_model_<name>/<name>/``, beside an ``__init__.py`` whose ``PATH`` is the folder the entry
point (group ``pysynth.models``) names. pip builds a local directory in place, so
``pip install ./models/<name>`` from the checkout finds them; an sdist alone cannot (it would not
hold the files), hence the clear error below.

Every weight is stored once in the wheel (issue 28; ``tools/check_model_bytes.py`` checks it):

* a seq2seq ONNX store (:data:`EXTERNAL_FORMATS`: ``encoder.onnx``, ``step.onnx``,
  ``step_parts.onnx``) gets one external-data file, :data:`DATA`: each initializer of 1 KiB or more moves there, and
  identical bytes (the tied embedding table in the encoder and both step graphs, the decoder in
  ``step`` and ``step_parts``) point at one offset. The graphs are otherwise unchanged, so the
  sessions compute with the same bytes. The store's ``meta.json`` names the file under
  ``"external_data"`` (the session then opens the graph by its path: onnxruntime finds the data
  beside it) and lists the new sizes and CRC-32s;
* the torch weights (``model.safetensors``) stay out: they repeat the ONNX weights byte for byte,
  and only ``--backend torch``, a warm start (``pysynth mqr train --init``) and a re-export read
  them, all from the checkout (``pysynth --models-dir pysynth/models/assets ...``). ``PYSYNTH_MODEL_TRAINABLE=1``
  at build time keeps them (a "trainable" wheel: the weights are then stored twice).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import zlib
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py

ASSETS = Path(__file__).resolve().parent.parent / "pysynth" / "models" / "assets"
#: the external-data file of a multi-graph ONNX store in a built package
DATA = "weights.data"
TORCH_WEIGHTS = ("model.safetensors", "model.pt")
TRAINABLE_ENV = "PYSYNTH_MODEL_TRAINABLE"
#: store formats whose reader opens a graph by its path when ``meta["external_data"]`` is set
#: (``pysynth.decoding.ort``); the single-graph stores (MiniLM) have nothing to share and stay as they are
EXTERNAL_FORMATS = ("pysynth.model.onnx",)
_MIN_EXTERNAL = 1024  # bytes: smaller initializers stay in their graph
_ALIGN = 64

INIT = '''"""The pysynth model {name!r} (its files in the folder :data:`PATH`; see ``pysynth models list``)."""
import os

PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), {name!r})
'''


def package_name(name: str) -> str:
    """The import name of model ``name``'s distribution: ``pysynth_model_<name>`` with ``_``."""
    return "pysynth_model_" + name.replace("-", "_")


def _crc(data: bytes) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


def _meta_crc(doc: dict) -> int:
    """``pysynth.store.meta_checksum`` (the build runs without pysynth importable)."""
    body = {k: v for k, v in doc.items() if k != "meta_crc32"}
    return _crc(json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=True).encode("ascii"))


def externalize(folder: Path, graphs) -> int:
    """Move the initializers of ``graphs`` (files in ``folder``) into ``folder/DATA``, each distinct
    byte string once; returns the data file's size."""
    try:
        import onnx
        from onnx.external_data_helper import _get_all_tensors
    except ImportError:
        raise SystemExit(f"the build of {folder.name}'s package needs onnx (pyproject.toml's build requirements; "
                         "with --no-build-isolation: pip install onnx first)") from None

    offsets: dict = {}
    with open(folder / DATA, "wb") as out:
        for g in graphs:
            model = onnx.load(str(folder / g), load_external_data=False)
            for t in _get_all_tensors(model):
                if t.data_location == onnx.TensorProto.EXTERNAL or len(t.raw_data) < _MIN_EXTERNAL:
                    continue
                raw = t.raw_data
                key = hashlib.sha256(raw).digest()
                if key not in offsets:
                    out.write(b"\0" * (-out.tell() % _ALIGN))
                    offsets[key] = out.tell()
                    out.write(raw)
                t.ClearField("raw_data")
                t.data_location = onnx.TensorProto.EXTERNAL
                for k, v in (("location", DATA), ("offset", str(offsets[key])), ("length", str(len(raw)))):
                    e = t.external_data.add()
                    e.key, e.value = k, v
            (folder / g).write_bytes(model.SerializeToString())
        return out.tell()


def _restore(folder: Path, trainable: bool) -> None:
    """The package's copy of one store folder: torch weights out (unless ``trainable``), the graphs
    of a multi-graph ONNX store on one shared data file, ``meta.json`` matching what is there."""
    meta = folder / "meta.json"
    if not meta.is_file():
        return
    doc = json.loads(meta.read_text(encoding="utf-8"))
    files = dict(doc.get("files") or {})
    changed = set()
    if not trainable:
        for w in TORCH_WEIGHTS:
            if w in files:
                (folder / w).unlink(missing_ok=True)  # copytree left it out
                del files[w]
                changed.add(w)
    graphs = sorted(f for f in files if f.endswith(".onnx"))
    if doc.get("format") in EXTERNAL_FORMATS and len(graphs) >= 2 and DATA not in files:
        externalize(folder, graphs)
        doc["meta"] = {**doc.get("meta", {}), "external_data": DATA}
        changed.update(graphs + [DATA])
        files[DATA] = None
    if not changed:
        return
    for f in files:
        if files[f] is None or f in changed:
            data = (folder / f).read_bytes()
            files[f] = {"bytes": len(data), "crc32": _crc(data)}
    doc["files"] = dict(sorted(files.items()))
    doc["meta_crc32"] = _meta_crc(doc)
    meta.write_text(json.dumps(doc, indent=1, sort_keys=True), encoding="utf-8")


def build_model_folder(src: Path, dst: Path, trainable: bool = False) -> None:
    """Write the package's copy of model folder ``src`` to ``dst`` (see the module doc)."""
    shutil.rmtree(dst, ignore_errors=True)
    skip = ["__pycache__", "*.lock", ".*"] + ([] if trainable else list(TORCH_WEIGHTS))
    shutil.copytree(src, dst, ignore=shutil.ignore_patterns(*skip))
    for m in sorted(dst.rglob("meta.json")):
        _restore(m.parent, trainable)


def setup_model(project: Path) -> None:
    """``setup()`` for the model folder ``project`` (``models/<name>``)."""
    name = Path(project).name
    src = ASSETS / name
    if not (src / "model.json").is_file():
        raise SystemExit(f"pysynth-model-{name} builds from a pysynth checkout: {src} is missing; run "
                         f"`pip install ./models/{name}` from the checkout's root (an sdist does not hold the files)")
    pkg = package_name(name)
    stage = Path(project) / "build" / "src" / pkg  # the package's only source file, written here
    stage.mkdir(parents=True, exist_ok=True)
    (stage / "__init__.py").write_text(INIT.format(name=name), encoding="utf-8")
    trainable = os.environ.get(TRAINABLE_ENV, "") not in ("", "0")

    class BuildModel(build_py):
        def run(self):
            super().run()
            build_model_folder(src, Path(self.build_lib) / pkg / name, trainable)

    setup(packages=[pkg], package_dir={pkg: str(stage.relative_to(project))}, cmdclass={"build_py": BuildModel},
          zip_safe=False)
