"""pysynth.store: round trips, atomic replacement, and every kind of damage refused."""
from __future__ import annotations

import json
import subprocess
import sys
import zlib

import numpy as np
import pytest

import pysynth
from pysynth import io, store

from _stores import write_meta

FMT = "pysynth.test.Thing"
ARRAYS = {
    "ids": np.arange(10, dtype=np.int32),
    "weights": np.linspace(-1, 1, 7),
    "grid": np.arange(12, dtype=np.uint8).reshape(3, 4),
    "empty": np.zeros(0, np.int64),
}
FILES = {"vocab.txt": store.lines_to_bytes(["a", "b c", "ü"]), "conf.json": b'{"k": [1, 2]}'}
META = {"n": 10, "name": "thing", "history": [{"k": 1}]}


def _save(d, **kw):
    return store.save(d, FMT, 3, arrays=kw.get("arrays", ARRAYS), files=kw.get("files", FILES),
                      meta=kw.get("meta", META))


@pytest.mark.parametrize("mmap", [True, False])
def test_round_trip(tmp_path, mmap):
    d = _save(tmp_path / "s")
    assert sorted(p.name for p in d.iterdir()) == sorted(
        ["meta.json", "conf.json", "vocab.txt"] + [f"{n}.npy" for n in ARRAYS])
    st = store.load(d, FMT, (2, 3), mmap=mmap)
    assert (st.format, st.format_version, st.meta) == (FMT, 3, META)
    for name, a in ARRAYS.items():
        b = st.arrays[name]
        assert b.dtype == a.dtype and b.shape == a.shape and np.array_equal(a, b), name
        assert not b.flags.writeable or not mmap
    if mmap:
        assert isinstance(st.arrays["ids"], np.memmap)
    assert st.read_lines("vocab.txt") == ["a", "b c", "ü"]
    assert st.read_json("conf.json") == {"k": [1, 2]}
    doc = json.loads((d / "meta.json").read_text())
    assert doc["format"] == FMT and doc["format_version"] == 3 and doc["pysynth_version"] == pysynth.__version__
    assert doc["arrays"]["grid"] == {"dtype": "|u1", "shape": [3, 4], "crc32": zlib.crc32(ARRAYS["grid"].tobytes())}
    assert doc["files"]["conf.json"] == {"bytes": 13, "crc32": zlib.crc32(FILES["conf.json"])}
    assert store.is_store(d) and store.read_meta(d, FMT, (3,))["meta"] == META


def test_crc32_matches_zlib_for_arrays_and_views():
    a = np.arange(1000, dtype=np.int64)
    assert store.crc32(a) == zlib.crc32(a.tobytes())
    assert store.crc32(a[::3]) == zlib.crc32(np.ascontiguousarray(a[::3]).tobytes())  # C order copy
    assert store.crc32(b"") == 0 and store.crc32(b"abc") == zlib.crc32(b"abc")


def test_replace_is_atomic_and_a_killed_writer_leaves_the_old_store(tmp_path):
    d = _save(tmp_path / "s")
    before = {p.name: p.read_bytes() for p in d.iterdir()}
    # the writer dies half-way: after some arrays, before meta.json
    calls = []

    def dying_save(f, a):
        calls.append(1)
        if len(calls) == 2:
            raise KeyboardInterrupt("killed")
        return orig(f, a)

    orig = store._save_npy
    store._save_npy = dying_save
    try:
        with pytest.raises(KeyboardInterrupt):
            _save(d, meta={"n": 99})
    finally:
        store._save_npy = orig
    assert {p.name: p.read_bytes() for p in d.iterdir()} == before
    assert [p.name for p in tmp_path.iterdir()] == ["s"]  # the temporary directory is gone
    # a writer killed without cleaning up (SIGKILL): its leftover is removed by the next save
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    (tmp_path / f".s.{dead}.abc.tmp").mkdir()
    (tmp_path / f".s.{dead}.abc.tmp" / "ids.npy").write_bytes(b"partial")
    assert store.load(d, FMT, (3,)).meta == META
    _save(d, meta={"n": 1})
    assert store.load(d, FMT, (3,)).meta == {"n": 1}
    assert [p.name for p in tmp_path.iterdir()] == ["s"]


def test_exception_inside_atomic_dir_keeps_the_old_directory(tmp_path):
    d = _save(tmp_path / "s")
    with pytest.raises(RuntimeError):
        with io.atomic_dir(d) as tmp:
            (tmp / "meta.json").write_text("{}")
            raise RuntimeError("writer failed")
    assert store.load(d, FMT, (3,)).meta == META
    assert [p.name for p in tmp_path.iterdir()] == ["s"]


def test_refuses_to_replace_what_is_not_a_store(tmp_path):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "thesis.tex").write_text("years of work")
    with pytest.raises(ValueError, match="mine exists and is not a pysynth store: refusing to replace it"):
        _save(mine)
    assert (mine / "thesis.tex").read_text() == "years of work"
    (tmp_path / "file").write_text("x")
    with pytest.raises(ValueError, match="not a pysynth store"):
        _save(tmp_path / "file")
    (tmp_path / "empty").mkdir()
    _save(tmp_path / "empty")  # an empty directory is fine
    assert store.is_store(tmp_path / "empty")


def test_bad_members_are_refused_when_saving(tmp_path):
    with pytest.raises(ValueError, match="clash"):
        store.save(tmp_path / "a", FMT, 1, arrays={"x": np.zeros(1)}, files={"x.npy": b""})
    with pytest.raises(ValueError, match="clash"):
        store.save(tmp_path / "a", FMT, 1, files={"meta.json": b"{}"})
    with pytest.raises(TypeError, match="dtype object"):
        store.save(tmp_path / "a", FMT, 1, arrays={"x": np.array([{}], dtype=object)})
    assert not (tmp_path / "a").exists()


def _flip(path, at=-3):
    data = bytearray(path.read_bytes())
    data[at] ^= 0x5A
    path.write_bytes(bytes(data))


def _doc_edit(key, value):
    def edit(d):
        doc = json.loads((d / "meta.json").read_text())
        doc[key] = value
        write_meta(d, doc)
    return edit


DAMAGE = {
    "no-meta": (lambda d: (d / "meta.json").unlink(), r"is not a saved pysynth.test.Thing: meta.json is missing"),
    "meta-garbage": (lambda d: (d / "meta.json").write_text("{oops"), r"meta.json is corrupt"),
    "meta-not-object": (lambda d: (d / "meta.json").write_text("[1]"), r"does not describe a pysynth.test.Thing"),
    "other-format": (_doc_edit("format", "other"), r"does not describe a pysynth.test.Thing \(format='other'\)"),
    "old-version": (_doc_edit("format_version", 1), r"format version 1; this pysynth reads version\(s\) 2, 3: rebuild"),
    "arrays-missing": (_doc_edit("arrays", None), r"meta.json is corrupt or incomplete: 'arrays' must be an object"),
    "entry-broken": (_doc_edit("arrays", {"ids": {"dtype": "<i4"}}), r"meta.json is corrupt or incomplete"),
    "array-missing": (lambda d: (d / "ids.npy").unlink(), r"is incomplete: ids.npy is missing"),
    "array-truncated": (lambda d: (d / "weights.npy").write_bytes((d / "weights.npy").read_bytes()[:-8]),
                        r"weights.npy is truncated or corrupt"),
    "array-header-only": (lambda d: (d / "ids.npy").write_bytes((d / "ids.npy").read_bytes()[:30]),
                          r"ids.npy is truncated or corrupt"),
    "array-flipped": (lambda d: _flip(d / "ids.npy"), r"ids.npy is corrupt: its CRC-32 does not match meta.json"),
    "array-replaced": (lambda d: np.save(d / "ids.npy", np.arange(11, dtype=np.int32)),
                       r"ids.npy holds int32\[11\], expected int32\[10\]"),
    "array-other-dtype": (lambda d: np.save(d / "ids.npy", np.arange(10, dtype=np.int64)),
                          r"ids.npy holds int64\[10\], expected int32\[10\]"),
    "array-pickle": (lambda d: np.save(d / "ids.npy", np.array([{}], dtype=object)), r"ids.npy is truncated or corrupt"),
    "file-missing": (lambda d: (d / "vocab.txt").unlink(), r"is incomplete: vocab.txt is missing"),
    "file-truncated": (lambda d: (d / "vocab.txt").write_bytes(b"a\n"),
                       r"vocab.txt is truncated or corrupt: 2 bytes, meta.json says 9"),
}


@pytest.mark.parametrize("damage,match", list(DAMAGE.values()), ids=list(DAMAGE))
@pytest.mark.parametrize("mmap", [True, False])
def test_damage_is_refused(tmp_path, damage, match, mmap):
    d = _save(tmp_path / "s")
    damage(d)
    with pytest.raises(ValueError, match=match):
        store.load(d, FMT, (2, 3), mmap=mmap)


def test_file_corrupted_in_place_is_refused_on_read(tmp_path):
    d = _save(tmp_path / "s")
    _flip(d / "vocab.txt", 0)
    with pytest.raises(ValueError, match=r"vocab.txt is truncated or corrupt"):  # checked on load
        store.load(d, FMT, (3,))
    st = store.load(d, FMT, (3,), verify=False)  # same size: found when the file is read
    with pytest.raises(ValueError, match=r"vocab.txt is truncated or corrupt: its size/CRC-32 do not match"):
        st.read("vocab.txt")
    with pytest.raises(ValueError, match="no file 'nope.txt'"):
        st.read("nope.txt")
    (d / "vocab.txt").unlink()
    with pytest.raises(ValueError, match="incomplete: vocab.txt is missing"):
        st.read("vocab.txt")


def test_verify_false_skips_only_the_checksums(tmp_path):
    d = _save(tmp_path / "s")
    _flip(d / "ids.npy")
    assert store.load(d, FMT, (3,), verify=False).arrays["ids"].shape == (10,)
    np.save(d / "ids.npy", np.arange(3, dtype=np.int32))
    with pytest.raises(ValueError, match="expected int32"):
        store.load(d, FMT, (3,), verify=False)


def test_expect(tmp_path):
    d = _save(tmp_path / "s")
    store.load(d, FMT, (3,), expect={"ids": (np.int32, (None,)), "grid": ("|u1", (3, 4))})
    with pytest.raises(ValueError, match=r"ids is int32\[10\] in meta.json, expected int64\[None\]"):
        store.load(d, FMT, (3,), expect={"ids": (np.int64, (None,))})
    with pytest.raises(ValueError, match=r"grid is uint8\[3, 4\] in meta.json, expected uint8\[4, 3\]"):
        store.load(d, FMT, (3,), expect={"grid": (np.uint8, (4, 3))})
    with pytest.raises(ValueError, match=r"grid is uint8\[3, 4\] in meta.json, expected uint8\[12\]"):
        store.load(d, FMT, (3,), expect={"grid": (np.uint8, (12,))})
    with pytest.raises(ValueError, match="incomplete: array 'other' is not in meta.json"):
        store.load(d, FMT, (3,), expect={"other": (np.int32, (None,))})


def test_paths(tmp_path):
    with pytest.raises(FileNotFoundError):
        store.load(tmp_path / "nowhere", FMT)
    assert not store.is_store(tmp_path / "nowhere") and not store.is_store(tmp_path)
    (tmp_path / "meta.json").write_text("[]")
    assert not store.is_store(tmp_path)


def test_lines():
    items = ["", "a b", "ünï", "tab\there"]
    assert store.bytes_to_lines(store.lines_to_bytes(items)) == items
    assert store.lines_to_bytes([]) == b"" and store.bytes_to_lines(b"") == []
    with pytest.raises(ValueError, match=r"cannot save term 'a\\nb': it contains a newline"):
        store.lines_to_bytes(["a\nb"], "term")
    with pytest.raises(ValueError, match=r"x.txt is truncated \(no final newline\)"):
        store.bytes_to_lines(b"a\nb", "x.txt")
    with pytest.raises(ValueError, match="x.txt is corrupt"):
        store.bytes_to_lines(b"\xff\n", "x.txt")
