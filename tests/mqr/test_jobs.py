"""``pysynth mqr rewrite`` as a row-stage job (:mod:`pysynth.mqr.jobs`): the rewrites of
:meth:`Rewriter.rewrite` over the whole input, for any chunking; inputs read through pysynth.io;
atomic text / JSONL / gzip outputs with ``OUT.meta.json``; ``--min-wellformed`` as the row filter."""
from __future__ import annotations

import gzip
import io
import json

import pytest

pytest.importorskip("onnxruntime")

from pysynth import pipelines  # noqa: E402
from pysynth.mqr.jobs import read_questions, rewrite_file  # noqa: E402
from pysynth.mqr.rewrite import DEFAULT_DECODING, Rewriter  # noqa: E402

QS = ["install ubuntu on usb stick", "Spaghetti carbonara, mixing", "zzqxv qqzzv", "python list sort reverse",
      "what is the capital of france", "how do i fix a flat tire", "best laptop for programming", "git undo commit"]


@pytest.fixture(scope="module")
def reference():
    """Today's rewrites: one Rewriter.rewrite call over every question (the CLI before the job)."""
    return Rewriter(None, backend="onnx").rewrite(QS, **DEFAULT_DECODING)


def test_any_chunking_gives_the_rewrites_of_one_call(tmp_path, reference):
    inp = tmp_path / "q.txt"
    inp.write_text("".join(q + "\n" for q in QS))
    for cs in (3, 100):
        out = tmp_path / f"o{cs}.txt"
        s = rewrite_file(inp, out, backend="onnx", chunk_size=cs, progress=False)
        assert out.read_text().splitlines() == reference
        assert s["questions"] == len(QS) and s["changed"] + s["unchanged"] == len(QS)
    assert (tmp_path / "o3.txt.meta.json").read_bytes() == (tmp_path / "o100.txt.meta.json").read_bytes()
    meta = json.loads((tmp_path / "o3.txt.meta.json").read_text())
    assert meta["config"] == {"input": "text", **DEFAULT_DECODING, "backend": "onnx"}
    assert meta["input"]["rows"] == len(QS) and len(meta["input"]["sha256"]) == 64
    assert not pipelines.parts_dir(tmp_path / "o3.txt").exists()


def test_rows_lists_and_gzip(tmp_path, reference):
    rows = [{"id": i, "question": q, "rewrite": "old"} for i, q in enumerate(QS)]
    out = tmp_path / "r.jsonl"
    rewrite_file(rows, out, backend="onnx", chunk_size=3, progress=False)
    got = [json.loads(x) for x in out.read_text().splitlines()]
    assert all(g.pop("choice") in ("model", "rule", "kept_input", "unreadable") for g in got)  # the safe selection's
    assert got == [{"id": i, "question": q, "rewrite": o} for i, (q, o) in enumerate(zip(QS, reference))]
    gz = tmp_path / "t.txt.gz"
    rewrite_file(QS, gz, backend="onnx", chunk_size=5, progress=False)
    data = gz.read_bytes()
    assert gzip.decompress(data).decode().splitlines() == reference
    rewrite_file(QS, gz, backend="onnx", chunk_size=2, progress=False)
    assert gz.read_bytes() == data  # no file name or time in the gzip header


def test_min_wellformed_gives_the_input_back(tmp_path, reference):
    from pysynth.quality import wellformedness

    out = tmp_path / "w.jsonl"
    s = rewrite_file([{"question": q} for q in QS], out, backend="onnx", min_wellformed=0.6, chunk_size=3,
                     progress=False)
    probs = wellformedness(reference).tolist()
    got = [json.loads(x) for x in out.read_text().splitlines()]
    for g, q, o, p in zip(got, QS, reference, probs):
        assert g.pop("choice") in ("model", "rule", "kept_input", "unreadable")
        assert g == {"question": q, "rewrite": o if p >= 0.6 else q, "wellformed": round(p, 6), "rewritten": p >= 0.6}
    assert s["dropped_wellformed"] == sum(p < 0.6 for p in probs)
    assert json.loads((tmp_path / "w.jsonl.meta.json").read_text())["config"]["min_wellformed"] == 0.6
    with pytest.raises(ValueError, match="min_wellformed: must be a probability"):
        rewrite_file(QS, tmp_path / "x.txt", min_wellformed=1.5, progress=False)


def test_read_questions(tmp_path, monkeypatch):
    t = tmp_path / "a.txt"
    t.write_text("one\r\ntwo\n\nthree")
    assert read_questions(t) == (["one", "two", "", "three"], None)  # line for line; a CRLF's \r is the ending
    j = tmp_path / "a.jsonl"
    j.write_text('{"question": "q1", "x": 1}\n\n{"question": "q2"}\n')
    assert read_questions(j) == (["q1", "q2"], [{"question": "q1", "x": 1}, {"question": "q2"}])
    bad = tmp_path / "b.jsonl"
    bad.write_text('{"text": "x"}\n')
    with pytest.raises(ValueError, match="--in row 1: needs a string field 'question'"):
        read_questions(bad)
    with pytest.raises(ValueError, match="no such file"):
        read_questions(tmp_path / "missing.txt")
    monkeypatch.setattr("sys.stdin", io.StringIO('{"question": "a b"}\n'))
    assert read_questions("-") == (["a b"], [{"question": "a b"}])
    monkeypatch.setattr("sys.stdin", io.StringIO("a b\nc d\n"))
    assert read_questions("-") == (["a b", "c d"], None)
