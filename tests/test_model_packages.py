"""The models are packaged apart (issue 28): the main wheel holds no model file; each model is its
own distribution ``pysynth-model-<name>`` (``models/<name>``, built by ``models/_build.py``) found
through its entry point; ``PYSYNTH_MODELS`` / ``--models-dir`` come first; a missing model is one
line naming the command that installs it. Every package has one layout (card, ``meta.json``,
``onnx/``, optional ``torch/``), stores each file once, decodes as the checkout's folder does and
gives a run the same model fingerprint."""
from __future__ import annotations

import importlib.util
import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import numpy as np
import pytest

from pysynth.cli import main
from pysynth.models import registry

ROOT = Path(__file__).resolve().parents[1]
MAX_MAIN_WHEEL = 50 * 2**20
#: the model built in these tests (the README's generator)
SMALL = "k2q-copynet-small"
#: the MiniLM model built in these tests (a single-graph store, at the top of its checkout folder)
MINILM = "wellformed-minilm"
MODEL_SUFFIXES = (".onnx", ".safetensors")


@pytest.fixture
def rescan():
    """Find the models again after the test changed where they are (name it first: torn down last,
    after monkeypatch restored the environment)."""
    yield
    registry.refresh()


@pytest.fixture(scope="module")
def tree(tmp_path_factory):
    """A copy of the sources the builds read (the model files linked, never copied): the builds
    write build/ and *.egg-info beside their sources, so not into the checkout."""
    t = tmp_path_factory.mktemp("tree")
    skip = shutil.ignore_patterns("__pycache__", "*.so", "*.egg-info", "build", "assets")
    for f in ("setup.py", "pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / f, t / f)
    shutil.copytree(ROOT / "pysynth", t / "pysynth", ignore=skip)
    shutil.copytree(ROOT / "kernels", t / "kernels", ignore=skip)
    (t / "pysynth" / "models" / "assets").symlink_to(registry.ASSETS, target_is_directory=True)
    (t / "models").mkdir()
    shutil.copy2(ROOT / "models" / "_build.py", t / "models" / "_build.py")
    shutil.copytree(ROOT / "models" / SMALL, t / "models" / SMALL, ignore=skip)
    return t


def _wheel(src: Path, dest: Path, **env) -> Path:
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(dest),
                    str(src)], check=True, env={**os.environ, **env}, timeout=300)
    (whl,) = dest.glob("*.whl")
    return whl


def test_every_shipped_model_has_its_package():
    assert sorted(d.parent.name for d in registry.ASSETS.glob(f"*/{registry.DECLARATION}")) == list(registry.CATALOG)
    done = subprocess.run([sys.executable, "tools/package_models.py", "--check"], cwd=ROOT, capture_output=True,
                          text=True, check=False)
    assert done.returncode == 0, done.stderr


@pytest.mark.slow
def test_the_main_wheel_holds_no_model(tree, tmp_path):
    whl = _wheel(tree, tmp_path, PYSYNTH_NO_EXT="1")
    names = zipfile.ZipFile(whl).namelist()
    models = [n for n in names if "models/assets/" in n or n.endswith(MODEL_SUFFIXES)]
    assert not models, f"model files in the main wheel: {models[:5]}"
    assert "pysynth/data/k2q_demo.jsonl.gz" in names  # the README main job's input ships
    assert whl.stat().st_size <= MAX_MAIN_WHEEL, f"{whl.name}: {whl.stat().st_size / 2**20:.1f} MB"


def _checker():
    spec = importlib.util.spec_from_file_location("check_model_bytes", ROOT / "tools" / "check_model_bytes.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


@pytest.fixture(scope="module")
def small_wheel(tree, tmp_path_factory):
    """The k2q model's wheel, built from the checkout's folder (its copy in ``tree``)."""
    return _wheel(tree / "models" / SMALL, tmp_path_factory.mktemp("wheel"))


@pytest.mark.slow
def test_a_model_wheel_is_found_through_its_entry_point(small_wheel, tmp_path):
    pytest.importorskip("onnxruntime")
    whl = small_wheel
    site = tmp_path / "site"
    zipfile.ZipFile(whl).extractall(site)  # a wheel unpacked is what pip installs
    pkg = site / ("pysynth_model_" + SMALL.replace("-", "_")) / SMALL
    src = registry.ASSETS / SMALL
    # issue 28: the uniform layout; every weight once; no torch weights; the other files byte for byte
    _check_layout(pkg, src, ["README.md", "meta.json", "model.json", "onnx", "train_config.json",
                             "train_log.jsonl"])
    assert not list(pkg.rglob("*.safetensors")) and (pkg / "onnx" / "weights.data").is_file()
    assert sum(f.stat().st_size for f in pkg.rglob("*") if f.is_file()) < 0.5 * sum(
        f.stat().st_size for f in src.rglob("*") if f.is_file())
    chk = _checker()
    assert chk.repeats(chk._members([whl]), 10**6) == []
    # installed (found through its entry point), it decodes as the checkout's model does and signs a
    # run with the checkout's fingerprint
    code = ("import json, sys; from pysynth.models import registry as r; from pysynth.models.text2text import text2text; "
            "m = r.shipped(%r); g = text2text(%r, 'onnx', threads=1); "
            "out = [[x.texts, [float(v) for v in x.scores]] for x in g.generate(json.loads(sys.argv[1]))]; "
            "print(json.dumps([str(m.directory), m.source, g.gen.backend.parts is not None, out, "
            "r.model_fingerprint(%r)]))" % (SMALL, SMALL, SMALL))
    env = {**os.environ, "PYTHONPATH": str(site)}
    env.pop(registry.ENV, None)
    texts = ["paris capital", "python list sort error", "cheap flights berlin"]
    out = subprocess.run([sys.executable, "-c", code, json.dumps(texts)], env=env, capture_output=True, text=True,
                         check=True).stdout
    where, source, parts, got, fp = json.loads(out)
    assert [where, source, parts] == [str(pkg), f"entry point pysynth-model-{SMALL}", True]
    assert fp == registry.model_fingerprint(SMALL) == {**registry.model_fingerprint(src), "model": SMALL}
    from pysynth.models.text2text import text2text

    want = [[x.texts, [float(v) for v in x.scores]] for x in text2text(src, "onnx", threads=1).generate(texts)]
    assert got == want
    pytest.importorskip("torch")
    with pytest.raises(ValueError, match="no torch weights.*--models-dir"):
        text2text(pkg, "torch")


def _sdist(project: Path, dest: Path) -> Path:
    """The sdist of ``project`` through setuptools' PEP 517 hook (what ``python -m build --sdist
    --no-isolation`` calls; offline)."""
    pytest.importorskip("setuptools.build_meta")
    hook = "import sys; from setuptools import build_meta; print(build_meta.build_sdist(sys.argv[1]))"
    subprocess.run([sys.executable, "-c", hook, str(dest)], cwd=project, check=True, capture_output=True,
                   timeout=300)
    (sdist,) = dest.glob("*.tar.gz")
    return sdist


@pytest.mark.slow
def test_a_model_sdist_builds_the_same_wheel_anywhere(tree, small_wheel, tmp_path):
    """Issue 28, a published release: the sdist holds the package's files (and its builder), so a
    wheel built from it, away from any checkout and without onnx, has the checkout-built wheel's
    files byte for byte; a damaged sdist stops the build."""
    import tarfile

    project = tree / "models" / SMALL
    sdist = _sdist(project, tmp_path / "sdist")
    assert not (project / "build").exists()  # the build's scratch is a temporary folder
    pkg = "pysynth_model_" + SMALL.replace("-", "_")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
        top = sdist.name[:-len(".tar.gz")]
        pyproject = tar.extractfile(f"{top}/pyproject.toml").read().decode()
        tar.extractall(tmp_path / "unpacked", filter="data")
    assert {"_build.py", f"{pkg}/{SMALL}/meta.json", f"{pkg}/{SMALL}/onnx/weights.data"} <= names
    (requires,) = [line for line in pyproject.splitlines() if line.startswith("requires =")]
    assert requires == 'requires = ["setuptools>=68"]'  # the build needs no onnx
    # built where no checkout is above it: the files can only come from the sdist
    whl = _wheel(sdist, tmp_path / "wheel")
    ours, theirs = zipfile.ZipFile(whl), zipfile.ZipFile(small_wheel)
    assert sorted(ours.namelist()) == sorted(theirs.namelist())
    assert [n for n in ours.namelist() if ours.read(n) != theirs.read(n)] == []
    # one byte changed in the unpacked sdist: its build stops, naming the file
    data = tmp_path / "unpacked" / top / pkg / SMALL / "onnx" / "weights.data"
    raw = bytearray(data.read_bytes())
    raw[1000] ^= 1
    data.write_bytes(bytes(raw))
    done = subprocess.run([sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation", "-w",
                           str(tmp_path / "bad"), str(tmp_path / "unpacked" / top)], capture_output=True, text=True,
                          timeout=300)
    assert done.returncode != 0 and "weights.data: its size/CRC-32 do not match" in done.stdout + done.stderr
    assert "sdist is damaged" in done.stdout + done.stderr


def _builder():
    spec = importlib.util.spec_from_file_location("_build", ROOT / "models" / "_build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _check_layout(pkg: Path, src: Path, top) -> None:
    """``pkg`` is ``src`` packaged in the uniform layout: the root holds ``top`` (the card, the
    manifest, the declaration, ``onnx/``...), the manifest names the stores and the checkout's
    fingerprint, no file is stored twice, and every file but the graphs and the stores' meta.json
    is byte for byte a file of ``src``."""
    import hashlib

    from pysynth import store

    assert sorted(p.name for p in pkg.iterdir()) == top
    man = store.load(pkg, registry.PACKAGE_FORMAT)  # checks the card, the declaration, the stores' meta.json
    assert man.meta["layout"] == {k: k for k in ("onnx", "torch") if (pkg / k).is_dir()}
    assert man.meta["source_fingerprint"] == hashlib.sha256((src / "meta.json").read_bytes()).hexdigest()
    assert sorted(man.files) == sorted([p.name for p in pkg.iterdir() if p.is_file() and p.name != "meta.json"]
                                       + [f"{k}/meta.json" for k in man.meta["layout"]])
    files = [f for f in pkg.rglob("*") if f.is_file()]
    if "torch" not in man.meta["layout"]:  # a trainable package repeats its config and vocabulary
        digests = [hashlib.sha256(f.read_bytes()).digest() for f in files]
        assert len(set(digests)) == len(digests), "a file stored twice in the package"
    theirs = {f.read_bytes() for f in src.rglob("*") if f.is_file()}
    for f in files:
        if f.suffix != ".onnx" and f.name not in ("meta.json", "weights.data"):
            assert f.read_bytes() in theirs, f
    lay = registry.layout(pkg)
    assert lay.package is not None and lay.onnx == pkg / "onnx"
    assert lay.store == (pkg / "torch" if (pkg / "torch").is_dir() else pkg / "onnx")
    assert registry.resolve(pkg).path == lay.store


@pytest.fixture(scope="module")
def packaged(tmp_path_factory):
    """Package folders as the wheels hold them (``models/_build.py`` without the wheel's zip): a
    seq2seq model, the same trainable, and a MiniLM model."""
    pytest.importorskip("onnx")
    build = _builder()
    out = tmp_path_factory.mktemp("packaged")
    for name, trainable in ((SMALL, False), (SMALL, True), (MINILM, False)):
        build.build_model_folder(registry.ASSETS / name, out / ("trainable" if trainable else "plain") / name,
                                 trainable)
    return out


def test_models_path_names_the_model_folder(rescan, packaged, monkeypatch, capsys):
    """``pysynth models path`` prints the folder ``models list`` shows (card, ``model.json``), the
    checkout's or an installed package's alike, never the store inside a package."""
    monkeypatch.delenv(registry.ENV, raising=False)
    assert main(["models", "path", SMALL]) == 0
    assert capsys.readouterr().out.strip() == str(registry.ASSETS / SMALL)
    pkgs = [packaged / "plain" / n for n in (SMALL, MINILM)]
    monkeypatch.setattr(registry, "_entry_points", lambda: [registry._declared(p / registry.DECLARATION, "ep")
                                                            for p in pkgs])
    registry.refresh()
    for pkg in pkgs:
        for arg in (pkg.name, str(pkg), str(pkg / "onnx")):
            assert main(["models", "path", arg]) == 0
            assert capsys.readouterr().out.strip() == str(pkg), arg
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    assert all(f"  {p}" in out for p in pkgs)


def test_a_minilm_package_has_the_same_layout(packaged):
    pytest.importorskip("onnxruntime")
    from pysynth import models

    pkg, src = packaged / "plain" / MINILM, registry.ASSETS / MINILM
    _check_layout(pkg, src, ["README.md", "meta.json", "model.json", "onnx"])  # the checkout's graph was at the top
    assert (pkg / "onnx" / "model.onnx").read_bytes() == (src / "model.onnx").read_bytes()
    texts = ["what is the capital of france?", "capital france what", "how do i"]
    assert np.array_equal(models.load(pkg, threads=1)(texts), models.load(MINILM, threads=1)(texts))
    assert registry.model_fingerprint(pkg) == {**registry.model_fingerprint(MINILM), "model": str(pkg)}


def test_a_trainable_package_keeps_the_torch_store(packaged):
    pytest.importorskip("onnxruntime")
    pkg, src = packaged / "trainable" / SMALL, registry.ASSETS / SMALL
    _check_layout(pkg, src, ["README.md", "meta.json", "model.json", "onnx", "torch", "train_config.json",
                             "train_log.jsonl"])
    assert (pkg / "torch" / "model.safetensors").read_bytes() == (src / "model.safetensors").read_bytes()
    assert registry.onnx_export_of(pkg / "torch") == pkg / "onnx" and registry.seq2seq_backend(pkg) == "onnx"
    assert registry.model_fingerprint(pkg)["sha256"] == registry.model_fingerprint(src)["sha256"]
    pytest.importorskip("torch")
    from pysynth.models.text2text import text2text

    texts = ["paris capital", "honda crf 230 top speed"]
    want = [g.texts for g in text2text(src, "torch").generate(texts)]
    assert [g.texts for g in text2text(pkg, "torch").generate(texts)] == want


def test_the_fingerprint_checks_the_package(packaged, tmp_path):
    pkg = tmp_path / SMALL
    shutil.copytree(packaged / "plain" / SMALL, pkg)
    want = registry.model_fingerprint(SMALL)["sha256"]
    assert registry.model_fingerprint(pkg)["sha256"] == registry.model_fingerprint(pkg / "onnx")["sha256"] == want
    meta = pkg / "onnx" / "meta.json"
    doc = json.loads(meta.read_text())
    doc["meta"]["log_floor"] = -1.0  # another model under the same source fingerprint
    meta.write_text(json.dumps(doc))
    with pytest.raises(ValueError, match="onnx/meta.json is truncated or corrupt"):
        registry.model_fingerprint(pkg)
    from pysynth.store import meta_checksum

    man = json.loads((pkg / "meta.json").read_text())
    man["meta"]["layout"] = {"onnx": "../elsewhere"}
    (pkg / "meta.json").write_text(json.dumps(man))
    with pytest.raises(ValueError, match="meta.json is corrupt: its content does not match"):
        registry.resolve(pkg)
    man["meta_crc32"] = meta_checksum(man)
    (pkg / "meta.json").write_text(json.dumps(man))
    with pytest.raises(ValueError, match="meta.json is corrupt: 'layout' must map"):
        registry.resolve(pkg)


def test_the_byte_checker_finds_every_long_repeat():
    chk = _checker()
    rng = np.random.default_rng(0)
    a, b, c = (rng.integers(0, 256, n, dtype=np.uint8) for n in (5000, 7000, 3000))
    assert chk.repeats([("a", a), ("b", b), ("c", c)], 1000) == []
    seq = rng.integers(0, 256, 1000, dtype=np.uint8)
    a[137:1137] = seq  # at unaligned offsets, and twice in one file
    b[4021:5021] = seq
    c[100:1100], c[1901:2901] = seq, seq
    found = chk.repeats([("a", a), ("b", b), ("c", c)], 1000)
    pairs = {(x[1], x[2], x[3], x[4]) for x in found if x[0] >= 1000}
    assert pairs >= {("a", 137, "b", 4021), ("a", 137, "c", 100), ("a", 137, "c", 1901), ("b", 4021, "c", 100),
                     ("b", 4021, "c", 1901), ("c", 100, "c", 1901)}, found


def _model_folder(base: Path, name: str = SMALL) -> Path:
    """``base/name``: the checkout's model files, linked."""
    base.mkdir(parents=True, exist_ok=True)
    (base / name).symlink_to(registry.ASSETS / name, target_is_directory=True)
    return base / name


def test_resolution_order(rescan, tmp_path, monkeypatch):
    monkeypatch.delenv(registry.ENV, raising=False)
    assert registry.shipped(SMALL).source == "checkout"  # a source tree / editable install
    mine = _model_folder(tmp_path / "mine")
    monkeypatch.setenv(registry.ENV, str(tmp_path / "mine"))
    assert registry.resolve(SMALL).path == mine and registry.shipped(SMALL).source == registry.ENV
    other = _model_folder(tmp_path / "other")
    assert registry.resolve(str(other)).path == other  # an explicit path before any name
    monkeypatch.setattr(registry, "_entry_points", lambda: [registry._declared(other / registry.DECLARATION, "ep")])
    registry.refresh()
    assert registry.resolve(SMALL).path == mine  # PYSYNTH_MODELS before the installed packages
    monkeypatch.delenv(registry.ENV)
    assert registry.resolve(SMALL).path == other  # installed packages before the checkout


def test_models_dir_flag(rescan, tmp_path, monkeypatch, capsys):
    monkeypatch.setenv(registry.ENV, "")  # restored after the flag set it
    mine = _model_folder(tmp_path / "mine")
    assert main(["--models-dir", str(tmp_path / "mine"), "models", "path", SMALL]) == 0
    assert capsys.readouterr().out.strip() == str(mine)
    assert main(["--models-dir", str(tmp_path / "nope"), "models", "list"]) == 2
    assert "--models-dir" in capsys.readouterr().err


def test_a_bad_models_env_is_named(rescan, tmp_path, monkeypatch):
    monkeypatch.setenv(registry.ENV, str(tmp_path / "nope"))
    with pytest.raises(ValueError, match=f"{registry.ENV}: .* is not a directory"):
        registry.resolve(SMALL)


@pytest.fixture
def no_models(rescan, tmp_path, monkeypatch):
    """An install without any model (a plain ``pip install .``)."""
    monkeypatch.delenv(registry.ENV, raising=False)
    monkeypatch.setattr(registry, "ASSETS", tmp_path / "no-assets")
    monkeypatch.setattr(registry, "_entry_points", list)
    registry.refresh()


def test_a_missing_model_says_how_to_install_it(no_models, capsys):
    with pytest.raises(registry.ModelNotInstalled, match=rf"pip install \./models/{SMALL}"):
        registry.resolve(SMALL)
    assert main(["k2q", "generate", "--in", os.devnull, "--out", "-"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and f"pysynth models install {SMALL}" in err[0] and f"./models/{SMALL}" in err[0], err
    assert main(["models", "list"]) == 0
    out = capsys.readouterr().out
    assert all(f"{n}  " in out for n in registry.CATALOG) and "not installed" in out


def test_models_install_runs_pip_on_the_checkout(capsys, tmp_path):
    assert main(["models", "install", SMALL, "--dry-run"]) == 0
    assert capsys.readouterr().out.split()[-4:] == ["-m", "pip", "install", str(ROOT / "models" / SMALL)]
    assert main(["models", "install", "nope"]) == 2
    assert main(["models", "install", SMALL, "--checkout", str(tmp_path)]) == 1  # not a clone: the instruction
    assert f"pip install ./models/{SMALL}" in capsys.readouterr().err


def test_serve_serves_what_is_installed(rescan, tmp_path, monkeypatch):
    pytest.importorskip("fastapi")
    pytest.importorskip("onnxruntime")
    from pysynth.serve import ServeConfig, create_app

    _model_folder(tmp_path / "mine")
    monkeypatch.setattr(registry, "ASSETS", tmp_path / "no-assets")
    monkeypatch.setattr(registry, "_entry_points", list)
    monkeypatch.setenv(registry.ENV, str(tmp_path / "mine"))  # only the K2Q model
    with pytest.warns(RuntimeWarning, match=r"endpoints off.*/v1/rewrite \(mqr-copynet-small\)") as w:
        app = create_app(ServeConfig())
    assert "/v1/k2q" not in str(w[0].message)
    assert list(app.state.pysynth["generators"]) == ["k2q"]
    with pytest.raises(registry.ModelNotInstalled, match="pysynth models install mqr-copynet-small"):
        create_app(ServeConfig(models={"rewrite": "mqr-copynet-small"}))  # named: it must load
