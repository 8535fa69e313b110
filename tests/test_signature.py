"""pysynth.signature: fingerprints independent of chunking, signatures, versions."""
from __future__ import annotations

import hashlib
import json

import numpy as np
from hypothesis import given
from hypothesis import strategies as st

import pysynth
from pysynth import signature as sig

records = st.lists(st.one_of(st.integers(), st.text(max_size=5), st.none(), st.booleans(),
                             st.dictionaries(st.text(max_size=3), st.integers(), max_size=2),
                             st.lists(st.integers(), max_size=3)), max_size=30)


@given(records, st.lists(st.integers(1, 7), min_size=1, max_size=10))
def test_record_stream_digest_does_not_depend_on_chunking(recs, sizes):
    whole = sig.Fingerprint()
    for r in recs:
        whole.record(r)
    chunked, i, k = sig.Fingerprint(), 0, 0
    while i < len(recs):  # the same records, fed in chunks of varying sizes
        for r in recs[i: i + sizes[k % len(sizes)]]:
            chunked.record(r)
        i += sizes[k % len(sizes)]
        k += 1
    assert chunked.hexdigest() == whole.hexdigest()


def test_records_are_kept_apart():
    def d(*recs):
        fp = sig.Fingerprint()
        for r in recs:
            fp.record(r)
        return fp.hexdigest()

    assert d(1, 2) != d(12) and d("a", "b") != d("ab") and d([1], [2]) != d([1, 2]) and d() != d(None)


def test_parts():
    assert sig.fingerprint(["a", "b"]) == sig.fingerprint(("a", "b"))
    assert sig.fingerprint(["a"], ["b"]) != sig.fingerprint(["a", "b"])  # part boundaries count
    assert sig.fingerprint([]) != sig.fingerprint()
    assert sig.fingerprint(["ü"]) == hashlib.sha256(b"[1]" + '["ü"]'.encode()).hexdigest()  # documented encoding
    # list records as they are: the K2Q signature's encoding (its digests must never change)
    assert sig.fingerprint([[1, "q", None]]) == hashlib.sha256(b'[1][1, "q", null]').hexdigest()
    assert len(sig.fingerprint([{"k": 1}])) == 64


def test_signature_and_versions():
    v = sig.versions("json", "no_such_module_xyz")
    assert v["pysynth"] == pysynth.__version__ and v["numpy"] == np.__version__
    assert v["no_such_module_xyz"] == "absent" and v["json"] == json.__version__
    s = sig.signature("pysynth.x", 2, {"k": 5}, {"path": "q.jsonl", "sha256": "00"}, run="r1")
    assert list(s) == ["format", "format_version", "config", "input", "versions", "run"]
    assert s["format_version"] == 2 and s["config"] == {"k": 5}


def _per_record(*parts):
    """The documented encoding, one json.dumps per record (what the fast paths must equal)."""
    h = hashlib.sha256()
    for p in parts:
        h.update(json.dumps([len(p)]).encode())
        for r in p:
            h.update(json.dumps(r if isinstance(r, (list, tuple, dict)) else [r], ensure_ascii=False).encode())
    return h.hexdigest()


values = st.recursive(st.one_of(st.integers(), st.text(max_size=4), st.none(), st.booleans(), st.floats()),
                      lambda c: st.one_of(st.lists(c, max_size=3), st.dictionaries(st.text(max_size=2), c, max_size=2)),
                      max_leaves=4)


@given(st.one_of(st.lists(st.text(max_size=6), max_size=20), st.lists(values, max_size=20),
                 st.integers(0, 3).flatmap(lambda k: st.lists(st.lists(values, min_size=k, max_size=k), max_size=8)),
                 st.lists(st.text(max_size=3), max_size=3, unique=True).flatmap(
                     lambda ks: st.lists(st.fixed_dictionaries({k: values for k in ks}), max_size=8))))
def test_whole_chunk_encodings_equal_the_per_record_one(recs):
    assert sig.fingerprint(recs) == _per_record(recs)
    assert sig.fingerprint(recs, recs[:2]) == _per_record(recs, recs[:2])


def test_columns_and_chunks(monkeypatch):
    rows = [(i, f'q{i} "ü\\\x00', None if i % 3 else [i]) for i in range(50)]
    want = _per_record(rows)
    assert sig.Fingerprint().columns(*map(list, zip(*rows))).hexdigest() == want
    monkeypatch.setattr(sig, "_CHUNK", 7)  # buffers of 7 records: the same stream
    assert sig.fingerprint(rows) == want
    assert sig.Fingerprint().columns(*map(list, zip(*rows))).hexdigest() == want
    assert sig.fingerprint([r[1] for r in rows]) == _per_record([r[1] for r in rows])
