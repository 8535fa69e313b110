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
