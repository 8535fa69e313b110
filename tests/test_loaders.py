"""Every saved format, damaged every way a disk or a careless user damages it (issue 17):
truncated, emptied and bit-flipped members, a broken or other-version ``meta.json``, another
format's store, members swapped between stores, and members replaced with a consistent checksum
but the wrong dtype, shape or content. Each load must raise a ``ValueError`` naming the store or
the file, never another exception, and never load silently. Nothing is unpickled: the last test
greps the package."""
from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest

from pysynth import store, text
from pysynth.retrieval import Index
from pysynth.retrieval.collection import Collection

from _stores import restamp_array, restamp_file

QUESTIONS = ["how fast is a honda crf 230", "new york pizza near me", "new york city population",
             "what is the capital of france", "honda civic top speed", "capital of new york state"]


def _corpus(d):
    text.build_corpus(QUESTIONS).save(d)
    return lambda p: text.Corpus.load(p)


def _phrases(d):
    text.Phrases(min_count=1, threshold=0.1).learn(text.build_corpus(QUESTIONS)).save(d)
    return lambda p: text.Phrases.load(p)


def _frozen(d):
    text.Phrases(min_count=1, threshold=0.1).learn(text.build_corpus(QUESTIONS)).freeze().save(d)
    return lambda p: text.FrozenPhrases.load(p)


def _index(d):
    c = text.build_corpus(QUESTIONS)
    Index.build(c.ids, c.offsets, vocab_size=len(c.vocab)).save(d)
    return lambda p: Index.load(p)


def _collection(d):
    Collection.from_rows([{"id": f"q{i}", "text": q} for i, q in enumerate(QUESTIONS)]).save(d)
    return lambda p: Collection.load(p)


def _keywords(d):
    from pysynth.k2q.keywords import KeywordGenerator

    KeywordGenerator(QUESTIONS, QUESTIONS[:3], groups=["a", "b", "a"], phrases=False).save(d)

    def load(p):
        g = KeywordGenerator.load(p)
        g.generate(m=2, seed=1)  # every array is used
        return g
    return load


def _model(d):
    pytest.importorskip("torch")
    pytest.importorskip("safetensors")
    from models._util import small_model, small_vocab

    from pysynth.models.io import load_model, save_model

    save_model(small_model("attnet"), small_vocab(), d)
    return lambda p: load_model(p)


def _onnx(d):
    pytest.importorskip("torch")
    pytest.importorskip("onnx")
    pytest.importorskip("onnxruntime")
    from models._util import small_model, small_vocab

    from pysynth.decoding.ort import OrtBackend
    from pysynth.export.onnx import export_onnx

    export_onnx((small_model("attnet"), small_vocab()), d, dynamo=False)
    return lambda p: OrtBackend(p, device="cpu")


FORMATS = {"corpus": _corpus, "phrases": _phrases, "frozen_phrases": _frozen, "index": _index,
           "collection": _collection, "keyword_generator": _keywords, "model_dir": _model, "onnx_dir": _onnx}
_SAVED: dict = {}


def saved(name, tmp_path):
    """A fresh copy of a store of format ``name`` (built once per session) and its loader."""
    if name not in _SAVED:
        src = Path(tmp_path).parent / f"_saved_{name}"
        if src.exists():
            shutil.rmtree(src)
        loader = FORMATS[name](src)
        loader(src)  # the undamaged store loads
        _SAVED[name] = (src, loader)
    src, loader = _SAVED[name]
    d = tmp_path / name
    shutil.copytree(src, d)
    return d, loader


def members(d: Path):
    return sorted(p for p in d.rglob("*") if p.is_file())


def expect_value_error(loader, d: Path, what: str):
    try:
        loader(d)
    except ValueError as exc:
        assert str(d) in str(exc), f"{what}: the message does not name the store or file: {exc}"
        return
    except Exception as exc:  # noqa: BLE001 - the point of the test
        pytest.fail(f"{what}: {type(exc).__name__} instead of ValueError: {exc}")
    pytest.fail(f"{what}: loaded without an error")


def _flip(p: Path):
    b = bytearray(p.read_bytes())
    b[len(b) // 2] ^= 0x10
    p.write_bytes(bytes(b))


DAMAGE = {
    "truncated": lambda p: p.write_bytes(p.read_bytes()[: p.stat().st_size // 2]),
    "empty": lambda p: p.write_bytes(b""),
    "bit-flipped": _flip,
    "garbage": lambda p: p.write_bytes(b"\x00\xff garbage \x80" * 7),
}


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("damage", list(DAMAGE))
def test_damaged_member(fmt, damage, tmp_path):
    base, _ = saved(fmt, tmp_path / "probe")
    for i, rel in enumerate(p.relative_to(base) for p in members(base)):
        d, loader = saved(fmt, tmp_path / str(i))
        DAMAGE[damage](d / rel)
        expect_value_error(loader, d, f"{fmt}: {damage} {rel}")


def _metas(d: Path):
    return sorted(d.rglob(store.META))


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("change", ["version", "format", "nested", "not-an-object", "arrays-entry", "missing"])
def test_bad_meta(fmt, change, tmp_path):
    base, _ = saved(fmt, tmp_path / "probe")
    for i, rel in enumerate(m.relative_to(base) for m in _metas(base)):
        d, loader = saved(fmt, tmp_path / str(i))
        m = d / rel
        doc = json.loads(m.read_text())
        if change == "version":
            doc["format_version"] = 99
        elif change == "format":
            doc["format"] = "pysynth.something.Else"
        elif change == "arrays-entry":
            doc["arrays"] = {k: {"dtype": "<i4"} for k in doc["arrays"]} or {"x": {"dtype": "zz"}}
        if change == "nested":
            m.write_text("[" * 100_000 + "]" * 100_000)
        elif change == "not-an-object":
            m.write_text("[]")
        elif change == "missing":
            m.unlink()
        else:
            m.write_text(json.dumps(doc))
        expect_value_error(loader, d, f"{fmt}: meta {change} in {rel}")


@pytest.mark.parametrize("fmt", list(FORMATS))
def test_another_formats_store(fmt, tmp_path):
    other = "index" if fmt != "index" else "corpus"
    d, _ = saved(other, tmp_path / "a")
    _, loader = saved(fmt, tmp_path / "b")
    expect_value_error(loader, d, f"{fmt} loader on a {other} store")


def _arrays_of(d: Path):
    """(store dir, array name, array) of every array of every (nested) store under ``d``."""
    for m in _metas(d):
        doc = json.loads(m.read_text())
        for name in doc["arrays"]:
            yield m.parent, name, np.load(m.parent / f"{name}.npy")


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("change", ["dtype", "shorter", "2-d", "swapped"])
def test_wrong_array_with_a_matching_checksum(fmt, change, tmp_path):
    """The store's checksums pass (recomputed): the owner's own checks must catch it."""
    base, _ = saved(fmt, tmp_path / "probe")
    arrays = [(sd.relative_to(base), n, a) for sd, n, a in _arrays_of(base)]
    if not arrays:
        pytest.skip(f"{fmt} has no arrays")
    for i, (sub, name, a) in enumerate(arrays):
        d, loader = saved(fmt, tmp_path / str(i))
        if change == "dtype":
            b = a.astype(np.float32 if a.dtype.kind in "iu" else np.int64)
        elif change == "shorter":
            b = a[:-1] if a.size else np.zeros(3, a.dtype)
        elif change == "2-d":
            b = a.reshape(1, -1)
        else:  # another array of the same store, under this name
            others = [o for s2, n2, o in arrays if s2 == sub and n2 != name and
                      (o.dtype != a.dtype or o.shape != a.shape or not np.array_equal(o, a))]
            if not others:
                continue
            b = others[0]
        restamp_array(d / sub, name, b)
        expect_value_error(loader, d, f"{fmt}: {sub}/{name} {change} ({a.dtype}{a.shape} -> {b.dtype}{b.shape})")


def _files_of(d: Path):
    for m in _metas(d):
        for name in json.loads(m.read_text())["files"]:
            yield m.parent, name


CONTENT = {"json-list": b"[]", "json-number": b"7", "empty": b"", "text": b"just some words\n",
           "binary": bytes(range(256)), "deep-json": b"[" * 100_000 + b"]" * 100_000}


@pytest.mark.parametrize("fmt", list(FORMATS))
@pytest.mark.parametrize("content", list(CONTENT))
def test_wrong_file_with_a_matching_checksum(fmt, content, tmp_path):
    base, _ = saved(fmt, tmp_path / "probe")
    files = [(sd.relative_to(base), n) for sd, n in _files_of(base)]
    if not files:
        pytest.skip(f"{fmt} has no file members")
    for i, (sub, name) in enumerate(files):
        if name.lower().startswith("readme") or name.endswith((".md", ".jsonl")):
            continue  # documentation, not read
        d, loader = saved(fmt, tmp_path / str(i))
        restamp_file(d / sub, name, CONTENT[content])
        expect_value_error(loader, d, f"{fmt}: {sub}/{name} = {content}")


# Pipeline parts (pysynth.pipelines.runner) are not loaded by users: a damaged or foreign part is
# computed again and the output stays byte-identical (tests/pipelines/test_runner.py,
# test_damaged_or_foreign_parts_are_recomputed and the kill -9 tests).


def test_nothing_unpickles():
    """No pickle, no torch.load without weights_only=True, no np.load(allow_pickle=True)."""
    root = Path(__file__).resolve().parent.parent / "pysynth"
    bad = []
    for p in root.rglob("*.py"):
        for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1):
            code = line.split("#")[0]
            if re.search(r"\bimport pickle\b|\bpickle\.loads?\(|cloudpickle|joblib\.load|dill\.load", code) or \
                    "allow_pickle=True" in code or \
                    ("torch.load(" in code and "weights_only=True" not in code):
                bad.append(f"{p.relative_to(root.parent)}:{i}: {line.strip()}")
    assert not bad, "\n".join(bad)
