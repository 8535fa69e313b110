"""The one build of every model distribution ``pysynth-model-<name>`` (``models/<name>/setup.py``
calls :func:`setup_model`; ``tools/package_models.py`` writes those folders).

The model's files are not copied into the checkout a second time: the build reads them from
``pysynth/models/assets/<name>/`` (never changing them) and writes the wheel's copy as
``pysynth_model_<name>/<name>/``, beside the ``__init__.py`` (``models/<name>/pysynth_model_<name>/``)
whose ``PATH`` is the folder the entry point (group ``pysynth.models``) names. The build's
scratch folder (``build/``) is a temporary directory, removed when the build ends, so a build
leaves no model bytes in the checkout.

The sdist (a release's source distribution) carries the package's copy, built as for the wheel,
at the same place (``pysynth_model_<name>/<name>/``) and this file beside ``setup.py``; a wheel
built from it copies that folder (checking every size and CRC-32) instead of reading the
checkout, so ``pip install pysynth-model-<name>-<version>.tar.gz`` works anywhere, needs no
``onnx`` (the sdist's build requirements drop it) and gives a wheel whose files are byte for byte
the checkout-built wheel's.

Every package has one layout (issue 28), whatever the checkout's folder looks like (a
``pysynth.model`` store with its export in ``onnx/``, or an ONNX store at the top)::

    README.md          the model card
    model.json         the declaration (name, arch, task)
    meta.json          the manifest (store format ``pysynth.model.package``): ``meta.layout`` names
                       the stores, ``meta.source_fingerprint`` is the checkout folder's fingerprint
                       (SHA-256 of its ``meta.json``: ``pysynth.models.registry.model_fingerprint``,
                       so a run signs the model the same way installed or not); ``files``: the
                       card, the declaration, the training records and each store's ``meta.json``
    train_config.json, train_log.jsonl, ...   the training records, as in the checkout
    onnx/              the ONNX store (its own ``meta.json`` lists its files' sizes and CRC-32s)
    torch/             only with ``PYSYNTH_MODEL_TRAINABLE=1``: the ``pysynth.model`` store

``pysynth.models.registry.layout`` reads both layouts. A store keeps only what its loader reads
(``config.json``, the vocabulary, the graphs or weights), so each file is in the package once:
the checkout's copies of ``config.json``/``vocab.json`` beside ``onnx/`` are the torch store's and
stay out with it.

Every weight is stored once in the wheel (``tools/check_model_bytes.py`` checks it):

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
  at build time adds ``torch/`` (a "trainable" wheel: the weights, ``config.json`` and the
  vocabulary are then stored twice, in ``torch/`` and ``onnx/``).
"""
from __future__ import annotations

import atexit
import hashlib
import json
import os
import shutil
import tempfile
import zlib
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist

ASSETS = Path(__file__).resolve().parent.parent / "pysynth" / "models" / "assets"
#: the external-data file of a multi-graph ONNX store in a built package
DATA = "weights.data"
TRAINABLE_ENV = "PYSYNTH_MODEL_TRAINABLE"
META, CARD, DECLARATION = "meta.json", "README.md", "model.json"
#: the package's manifest (``pysynth.models.registry.PACKAGE_FORMAT``; the build runs without pysynth)
PACKAGE_FORMAT, PACKAGE_FORMAT_VERSION = "pysynth.model.package", 1
#: a store with torch weights (``pysynth.models.registry.MODEL_FORMAT``)
TORCH_FORMAT = "pysynth.model"
#: files that a checkout store may list but no loader reads: in a package they sit in its root
DOCS = (CARD, "train_config.json", "train_log.jsonl")
#: store formats whose reader opens a graph by its path when ``meta["external_data"]`` is set
#: (``pysynth.decoding.ort``); the single-graph stores (MiniLM) have nothing to share and stay as they are
EXTERNAL_FORMATS = ("pysynth.model.onnx",)
#: the build requirement an sdist drops (its wheel copies the built folder)
ONNX_REQUIREMENT = ', "onnx>=1.14"'
_MIN_EXTERNAL = 1024  # bytes: smaller initializers stay in their graph
_ALIGN = 64

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


def _doc(folder: Path) -> dict:
    return json.loads((folder / META).read_text(encoding="utf-8"))


def _stores(src: Path) -> dict:
    """``{"onnx": folder, "torch": folder}`` of a checkout model folder: a ``pysynth.model`` store
    at the top is the torch store, its export in ``onnx/``; any other store there is the ONNX store."""
    if _doc(src).get("format") != TORCH_FORMAT:
        return {"onnx": src}
    return {"torch": src, **({"onnx": src / "onnx"} if (src / "onnx" / META).is_file() else {})}


def _copy(src: Path, dst: Path, expect=None, fix: str = "restore the checkout's file") -> dict:
    """Copy file ``src`` to ``dst``; its ``{"bytes", "crc32"}``, checked against ``expect`` (the
    ``meta.json`` entry of the checkout or the sdist) so that a damaged file never ships."""
    data = src.read_bytes()
    entry = {"bytes": len(data), "crc32": _crc(data)}
    if expect is not None and {k: expect.get(k) for k in entry} != entry:
        raise SystemExit(f"{src}: its size/CRC-32 do not match its meta.json; {fix}")
    dst.parent.mkdir(parents=True, exist_ok=True)
    dst.write_bytes(data)
    return entry


def _write_meta(folder: Path, doc: dict) -> None:
    doc["meta_crc32"] = _meta_crc(doc)
    (folder / META).write_text(json.dumps(doc, indent=1, sort_keys=True), encoding="utf-8")


def _store(src: Path, dst: Path) -> None:
    """The package's copy of store ``src``: the files its loader reads (not the card or the training
    records, which go to the package's root), the graphs of a multi-graph ONNX store on one
    shared :data:`DATA`, and a ``meta.json`` that lists what is there."""
    doc = _doc(src)
    files = {f: _copy(src / f, dst / f, e) for f, e in sorted(doc["files"].items()) if f not in DOCS}
    graphs = sorted(f for f in files if f.endswith(".onnx"))
    if doc.get("format") in EXTERNAL_FORMATS and len(graphs) >= 2:
        externalize(dst, graphs)
        doc["meta"] = {**doc.get("meta", {}), "external_data": DATA}
        for f in graphs + [DATA]:
            data = (dst / f).read_bytes()
            files[f] = {"bytes": len(data), "crc32": _crc(data)}
    doc["files"] = dict(sorted(files.items()))
    _write_meta(dst, doc)


def build_model_folder(src: Path, dst: Path, trainable: bool = False) -> None:
    """Write the package's copy of model folder ``src`` to ``dst`` in the uniform layout (see the
    module doc); ``trainable`` adds the torch store (``torch/``)."""
    src, dst = Path(src), Path(dst)
    stores = _stores(src)
    if "onnx" not in stores:
        raise SystemExit(f"{src}: a model package needs the model's ONNX store (pysynth export onnx --model {src} "
                         f"--out {src / 'onnx'})")
    if not (src / CARD).is_file():
        raise SystemExit(f"{src}: a model package needs its card, {CARD}")
    keep = {k: v for k, v in stores.items() if k == "onnx" or trainable}
    shutil.rmtree(dst, ignore_errors=True)
    dst.mkdir(parents=True)
    for kind, folder in sorted(keep.items()):
        _store(folder, dst / kind)
    # the root: the card, the declaration and the training records (every file at the checkout
    # folder's top that is no member of a store there, and the DOCS that are)
    top = _doc(src)["files"]
    extra = [d for d in src.iterdir() if d.is_dir() and d not in stores.values() and d.name != "__pycache__"]
    if extra:
        raise SystemExit(f"{src}: unexpected folder(s) {sorted(d.name for d in extra)}; a model folder holds its "
                         "stores only (onnx/)")
    files = {}
    for f in sorted(src.iterdir()):
        if (f.is_file() and f.name != META and not f.name.startswith(".") and not f.name.endswith(".lock")
                and (f.name not in top or f.name in DOCS)):
            files[f.name] = _copy(f, dst / f.name, top.get(f.name))
    for kind in keep:
        data = (dst / kind / META).read_bytes()
        files[f"{kind}/{META}"] = {"bytes": len(data), "crc32": _crc(data)}
    src_doc = _doc(src)
    manifest = {"format": PACKAGE_FORMAT, "format_version": PACKAGE_FORMAT_VERSION,
                "pysynth_version": src_doc.get("pysynth_version", ""), "arrays": {}, "files": dict(sorted(files.items())),
                "meta": {"name": json.loads((src / DECLARATION).read_text(encoding="utf-8"))["name"],
                         "layout": {k: k for k in sorted(keep)},
                         "source_fingerprint": hashlib.sha256((src / META).read_bytes()).hexdigest(),
                         "source_format": src_doc.get("format"), "trainable": "torch" in keep}}
    _write_meta(dst, manifest)


def copy_package_folder(src: Path, dst: Path) -> None:
    """Copy a built package folder ``src`` (an sdist's) to ``dst``, every file checked against the
    sizes and CRC-32s that the manifest and the stores' ``meta.json`` list (a damaged or incomplete
    sdist stops the build)."""
    src, dst = Path(src), Path(dst)
    shutil.rmtree(dst, ignore_errors=True)
    man = _doc(src)
    if man.get("format") != PACKAGE_FORMAT:
        raise SystemExit(f"{src}: not a built model package (meta.json format {man.get('format')!r})")
    want = dict(man["files"])  # the card, the declaration, the records, each store's meta.json
    for sub in man["meta"]["layout"].values():
        want.update({f"{sub}/{f}": e for f, e in _doc(src / sub)["files"].items()})
    damaged = "the sdist is damaged: fetch or build it again"
    for f, e in sorted(want.items()):
        if not (src / f).is_file():
            raise SystemExit(f"{src / f}: missing; {damaged}")
        _copy(src / f, dst / f, e, damaged)
    got = sorted(str(f.relative_to(src)) for f in src.rglob("*") if f.is_file() and f.name != META)
    extra = sorted(set(got) - set(want))
    if extra:
        raise SystemExit(f"{src}: files its meta.json does not list: {extra[:5]}; {damaged}")
    _copy(src / META, dst / META)
    if _meta_crc(_doc(dst)) != man.get("meta_crc32"):
        raise SystemExit(f"{src / META}: its checksum does not match its content; {damaged}")


def setup_model(project: Path, name: str) -> None:
    """``setup()`` of model ``name``'s distribution; ``project`` is its folder (``models/<name>``,
    or the unpacked sdist)."""
    project = Path(project)
    pkg = package_name(name)
    trainable = os.environ.get(TRAINABLE_ENV, "") not in ("", "0")
    built = project / pkg / name  # an sdist's copy of the package folder
    src = ASSETS / name

    def write_folder(dst: Path) -> None:
        if (built / META).is_file():  # the sdist's folder, as it was built (trainable or not)
            if trainable and not _doc(built)["meta"].get("trainable", False):
                raise SystemExit(f"{built}: this sdist holds no torch weights ({TRAINABLE_ENV}=1 asks for them); "
                                 f"build one with {TRAINABLE_ENV}=1 from the pysynth checkout")
            copy_package_folder(built, dst)
        elif (src / DECLARATION).is_file():
            build_model_folder(src, dst, trainable)
        else:
            raise SystemExit(f"pysynth-model-{name}: neither the checkout's {src} nor an sdist's {built} is here; "
                             f"from a pysynth checkout's root run `pip install ./models/{name}`")

    class BuildModel(build_py):
        def run(self):
            super().run()
            write_folder(Path(self.build_lib) / pkg / name)

    class SdistModel(sdist):
        def make_release_tree(self, base_dir, files):
            super().make_release_tree(base_dir, files)
            base = Path(base_dir)
            write_folder(base / pkg / name)
            if not (base / "_build.py").is_file():  # setup.py imports it from beside itself
                shutil.copyfile(__file__, base / "_build.py")
            # the sdist's wheel copies the built folder: onnx is no longer a build requirement
            pyproject = base / "pyproject.toml"
            text = pyproject.read_text(encoding="utf-8")
            if ONNX_REQUIREMENT in text:
                pyproject.unlink()  # a hard link to the checkout's file: never write through it
                pyproject.write_text(text.replace(ONNX_REQUIREMENT, ""), encoding="utf-8")

    # scratch (build/lib, build/bdist.*: a whole copy of the model) outside the source folder
    scratch = tempfile.mkdtemp(prefix=f"{pkg}-build-")
    atexit.register(shutil.rmtree, scratch, True)
    setup(packages=[pkg], include_package_data=False, cmdclass={"build_py": BuildModel, "sdist": SdistModel},
          options={"build": {"build_base": scratch}}, zip_safe=False)
