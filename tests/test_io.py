"""pysynth.io: atomic files and directories, streamed row reading and writing."""
from __future__ import annotations

import gzip
import io as pyio
import json
import os
import stat
import subprocess
import sys
from pathlib import Path

import pytest

from pysynth import io

ROWS = [{"id": i, "text": f"question {i} ünï", "score": i / 3} for i in range(25)]
ROOT = Path(__file__).resolve().parent.parent


# ------------------------------------------------------------------------- atomic files


def test_atomic_write_replaces_and_survives_a_failed_writer(tmp_path):
    p = tmp_path / "sub" / "out.bin"
    io.atomic_write(p, lambda f: f.write(b"first"))
    assert p.read_bytes() == b"first"
    assert stat.S_IMODE(p.stat().st_mode) == 0o644

    def dies(f):
        f.write(b"half of the new")
        raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        io.atomic_write(p, dies)
    assert p.read_bytes() == b"first"
    assert [x.name for x in p.parent.iterdir()] == ["out.bin"]  # no temporary left
    io.atomic_write_text(p, "zweite ✓")
    assert p.read_text(encoding="utf-8") == "zweite ✓"


def test_write_json(tmp_path):
    io.write_json(tmp_path / "a.json", {"b": 1, "a": ["ü"]})
    assert (tmp_path / "a.json").read_text(encoding="utf-8") == '{\n "a": [\n  "ü"\n ],\n "b": 1\n}\n'


def test_atomic_dir(tmp_path):
    d = tmp_path / "d"
    with io.atomic_dir(d) as tmp:
        assert tmp.parent == tmp_path and tmp.name.startswith(".d.") and not d.exists()
        (tmp / "x").write_text("1")
    assert (d / "x").read_text() == "1"
    with io.atomic_dir(d) as tmp:
        (tmp / "y").write_text("2")
        assert (d / "x").exists()  # the old directory is there until the swap
    assert sorted(p.name for p in d.iterdir()) == ["y"]
    with pytest.raises(RuntimeError):
        with io.atomic_dir(d) as tmp:
            (tmp / "z").write_text("3")
            raise RuntimeError("killed")
    assert sorted(p.name for p in d.iterdir()) == ["y"]
    assert [p.name for p in tmp_path.iterdir()] == ["d"]
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True,
                          text=True, check=True).stdout.strip()
    (tmp_path / f".d.{dead}.x1.tmp").mkdir()  # what a SIGKILLed writer leaves
    live = tmp_path / f".d.{os.getppid()}.x2.tmp"  # a concurrent writer, still running
    other = tmp_path / f".d.b.{dead}.x3.tmp"  # a killed writer of "d.b", not of "d"
    live.mkdir()
    other.mkdir()
    with io.atomic_dir(d) as tmp:
        pass
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["d", live.name, other.name])
    assert not any(d.iterdir())


# ------------------------------------------------------------------------------ reading


def test_read_rows_sources(tmp_path):
    assert io.read_rows(ROWS) is ROWS  # iterables pass through
    gen = (r for r in ROWS)
    assert io.read_rows(gen) is gen
    p = tmp_path / "rows.jsonl"
    p.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in ROWS) + "\n\n  \n", encoding="utf-8")
    assert list(io.read_rows(p)) == ROWS and list(io.read_rows(str(p))) == ROWS
    with gzip.open(tmp_path / "rows.jsonl.gz", "wt", encoding="utf-8") as f:
        f.write(p.read_text(encoding="utf-8"))
    assert list(io.read_rows(tmp_path / "rows.jsonl.gz")) == ROWS


def test_read_rows_errors(tmp_path):
    p = tmp_path / "bad.jsonl"
    p.write_text('{"a": 1}\n\n{"a": \n')
    with pytest.raises(ValueError, match=r"bad.jsonl:3: not valid JSON"):
        list(io.read_rows(p))
    with pytest.raises(ValueError, match=r"input: no such file"):
        io.read_rows(tmp_path / "missing.jsonl")
    with pytest.raises(ValueError, match="is a directory"):
        io.read_rows(tmp_path, "--in")
    with pytest.raises(TypeError, match="--in must be a path or an iterable of row dicts, got a mapping"):
        io.read_rows({"a": 1}, "--in")
    for bad in (b"x", 3, None):
        with pytest.raises(TypeError, match="must be a path or an iterable"):
            io.read_rows(bad)


def test_stdin_and_stdout(monkeypatch, tmp_path):
    monkeypatch.setattr(sys, "stdin", pyio.StringIO("".join(json.dumps(r) + "\n" for r in ROWS[:3])))
    assert list(io.read_rows("-")) == ROWS[:3]

    class Out:
        buffer = pyio.BytesIO()

    monkeypatch.setattr(sys, "stdout", Out)
    assert io.write_rows("-", ROWS[:2]) == 2
    assert [json.loads(x) for x in Out.buffer.getvalue().decode().splitlines()] == ROWS[:2]


def test_stdin_stdout_in_a_real_process():
    code = "from pysynth import io; io.write_rows('-', ({**r, 'n': 1} for r in io.read_rows('-')))"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.run([sys.executable, "-c", code], input='{"a": "ü"}\n{"a": 2}\n'.encode(), env=env,
                       capture_output=True, timeout=120, check=True)
    assert p.stdout.decode("utf-8") == '{"a": "ü", "n": 1}\n{"a": 2, "n": 1}\n'


# ------------------------------------------------------------------------------ writing


def test_write_jsonl_is_streamed_and_atomic(tmp_path):
    p = tmp_path / "o.jsonl"
    assert io.write_rows(p, iter(ROWS)) == len(ROWS)
    assert list(io.read_rows(p)) == ROWS
    assert "ünï" in p.read_text(encoding="utf-8")  # ensure_ascii=False

    def rows_then_crash():
        yield ROWS[0]
        raise RuntimeError("upstream failed")

    with pytest.raises(RuntimeError):
        io.write_rows(p, rows_then_crash())
    assert list(io.read_rows(p)) == ROWS  # the old file is intact
    assert [x.name for x in tmp_path.iterdir()] == ["o.jsonl"]


def test_parquet_streaming(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")
    import pyarrow as pa

    p = tmp_path / "o.parquet"
    assert io.write_rows(p, iter(ROWS), batch_size=10, metadata={"pysynth": "yes"}) == 25
    f = pq.ParquetFile(p)
    assert f.metadata.num_row_groups == 3  # 10 + 10 + 5: written batch by batch
    assert f.schema_arrow.metadata[b"pysynth"] == b"yes"
    rows = io.read_rows(p, batch_size=4)
    assert not isinstance(rows, list) and list(rows) == ROWS  # a generator over record batches
    # an explicit schema; exactly one batch; no rows
    schema = pa.schema([("id", pa.int32()), ("text", pa.string())])
    assert io.write_rows(p, [{"id": 1, "text": "a", "extra": 0}] * 10, schema=schema, batch_size=10) == 10
    assert pq.read_table(p).schema.field("id").type == pa.int32()
    assert list(io.read_rows(p))[0] == {"id": 1, "text": "a"}
    assert io.write_rows(p, [], schema=schema) == 0 and list(io.read_rows(p)) == []


def test_parquet_writer_failure_keeps_old_file(tmp_path):
    pytest.importorskip("pyarrow")
    p = tmp_path / "o.parquet"
    io.write_rows(p, ROWS)

    def crash():
        yield from ROWS[:5]
        raise RuntimeError("upstream failed")

    with pytest.raises(RuntimeError):
        io.write_rows(p, crash(), batch_size=2)
    assert list(io.read_rows(p)) == ROWS and [x.name for x in tmp_path.iterdir()] == ["o.parquet"]


# ------------------------------------------------------------------------- issue 27: .gz outputs, BOM, metadata order


@pytest.mark.parametrize("name", ["rows.jsonl.gz", "rows.gz"])
def test_gz_output_is_gzip_and_reads_back(tmp_path, name):
    p = tmp_path / name
    assert io.write_rows(p, ROWS) == len(ROWS)
    raw = p.read_bytes()
    assert raw[:2] == b"\x1f\x8b"
    assert list(io.read_rows(p)) == ROWS
    io.write_rows(tmp_path / "again.jsonl.gz", ROWS)  # no name or time in the header: same rows, same bytes
    assert (tmp_path / "again.jsonl.gz").read_bytes() == raw
    assert gzip.decompress(raw) == "".join(io._json_text(r) + "\n" for r in ROWS).encode("utf-8")


def test_cli_gz_output_reads_back(tmp_path):
    """A command's ``--out x.jsonl.gz`` is gzip and pysynth reads it back (issue 27 item 10)."""
    from pysynth.cli import main

    inp = tmp_path / "q.jsonl"
    inp.write_text(json.dumps({"question": "how do i fix a flat tire"}) + "\n")
    out = tmp_path / "out.jsonl.gz"
    assert main(["quality", "wellformed", "--in", str(inp), "--out", str(out)]) == 0
    assert out.read_bytes()[:2] == b"\x1f\x8b"
    (row,) = list(io.read_rows(out))
    assert row["question"] == "how do i fix a flat tire" and 0 <= row["wellformed"] <= 1


@pytest.mark.parametrize("gz", [False, True])
def test_every_reader_drops_a_bom(tmp_path, gz):
    body = "\ufeff" + "".join(json.dumps(r) + "\n" for r in ROWS[:3])
    p = tmp_path / ("bom.jsonl.gz" if gz else "bom.jsonl")
    p.write_bytes(gzip.compress(body.encode()) if gz else body.encode())
    assert list(io.read_rows(p)) == ROWS[:3]
    assert io.decode_text(body.encode()) == body[1:] and io.strip_bom(body) == body[1:]


def test_stdin_reader_drops_a_bom():
    body = "\ufeff" + json.dumps(ROWS[0]) + "\n"
    r = subprocess.run([sys.executable, "-c", "import json; from pysynth import io; "
                        "print(json.dumps(list(io.read_rows('-'))))"], input=body.encode(), capture_output=True,
                       cwd=ROOT, timeout=60)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout) == [ROWS[0]]


def test_qagen_contexts_with_a_bom_are_jsonl(tmp_path):
    """``qagen generate`` read a JSONL file starting with a BOM as one plain-text passage."""
    from pysynth.qagen.data import read_contexts

    p = tmp_path / "c.jsonl"
    rows = [{"id": "a", "context": "Paris is the capital of France."}, {"id": "b", "context": "Rome is in Italy."}]
    p.write_text("\ufeff" + "".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    got = read_contexts(p)
    assert [(c.id, c.text) for c in got] == [("a", rows[0]["context"]), ("b", rows[1]["context"])]
    p.write_text("\ufeff" + json.dumps({"data": [{"title": "t", "paragraphs": [{"context": "x y", "qas": []}]}]}),
                 encoding="utf-8")
    assert [c.text for c in read_contexts(p)] == ["x y"]


def test_text_readers_drop_a_bom(tmp_path):
    from pysynth.cli._common import read_lines
    from pysynth.mqr.jobs import read_questions

    p = tmp_path / "q.txt"
    p.write_text("\ufeffhow are you\nwhy\n", encoding="utf-8")
    assert read_lines(str(p), "--in") == ["how are you", "why"]
    assert read_questions(p)[0] == ["how are you", "why"]


def test_metadata_is_in_place_before_the_data(tmp_path):
    """``before_replace`` runs with the data on disk but not yet renamed: a kill there leaves the
    old data beside the new metadata, never new data beside old metadata."""
    out, meta = tmp_path / "rows.jsonl", tmp_path / "rows.jsonl.meta.json"
    io.write_rows(out, ROWS[:1])
    io.write_json(meta, {"rows": 1})
    seen = {}

    def write_meta():
        seen["data at meta time"] = list(io.read_rows(out))
        io.write_json(meta, {"rows": 2})
        raise KeyboardInterrupt  # killed between the two renames

    with pytest.raises(KeyboardInterrupt):
        io.write_rows(out, ROWS[:2], before_replace=write_meta)
    assert seen["data at meta time"] == ROWS[:1]
    assert list(io.read_rows(out)) == ROWS[:1] and json.loads(meta.read_text()) == {"rows": 2}
    assert sorted(x.name for x in tmp_path.iterdir()) == ["rows.jsonl", "rows.jsonl.meta.json"]  # no temp left
    io.write_rows(out, ROWS[:2], before_replace=lambda: io.write_json(meta, {"rows": 2}))
    assert list(io.read_rows(out)) == ROWS[:2]


# ------------------------------------------------------------------------- issue 27: devices, cut gzip, BOM-only files

def _is_char_device(p: str) -> bool:
    try:
        return stat.S_ISCHR(os.stat(p).st_mode)
    except OSError:
        return False


@pytest.mark.skipif(not _is_char_device("/dev/full"), reason="no /dev/full")
def test_a_full_device_is_written_in_place_and_fails_with_enospc():
    """As root, renaming the temporary file over /dev/full replaced the device node."""
    import errno

    with pytest.raises(OSError) as e:
        io.write_rows("/dev/full", ROWS)
    assert e.value.errno == errno.ENOSPC and e.value.filename == "/dev/full"
    assert _is_char_device("/dev/full")  # still the device
    assert not any(n.startswith(".full.") and n.endswith(".tmp") for n in os.listdir("/dev"))  # no temporary


def test_a_device_and_a_fifo_are_written_in_place(tmp_path):
    import threading

    assert io.write_rows(os.devnull, ROWS) == len(ROWS) and _is_char_device(os.devnull)
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    got = {}
    reader = threading.Thread(target=lambda: got.setdefault("data", fifo.read_bytes()), daemon=True)
    reader.start()
    calls = []
    io.write_rows(fifo, ROWS[:2], before_replace=lambda: calls.append(1))  # nothing renamed: not called
    reader.join(30)
    assert stat.S_ISFIFO(os.stat(fifo).st_mode) and calls == []
    assert [json.loads(x) for x in got["data"].splitlines()] == ROWS[:2]
    assert sorted(x.name for x in tmp_path.iterdir()) == ["fifo"]


@pytest.mark.skipif(not _is_char_device("/dev/full"), reason="no /dev/full")
def test_cli_out_dev_full_is_one_line(tmp_path):
    inp = tmp_path / "q.jsonl"
    inp.write_text(json.dumps({"question": "what is it", "keywords": ["a"]}) + "\n")
    r = subprocess.run([sys.executable, "-m", "pysynth", "k2q", "keywords", "--in", str(inp), "--out", "/dev/full",
                        "--m", "2"], capture_output=True, text=True, cwd=ROOT, timeout=300)
    assert r.returncode == 1 and "Traceback" not in r.stderr
    assert r.stderr.splitlines()[-1] == "pysynth: error: /dev/full: No space left on device"
    assert _is_char_device("/dev/full")


@pytest.mark.parametrize("raw", [gzip.compress(b'{"a": 1}\n' * 50)[:25], b'{"a": 1}\n', b"", b"\x1f\x8b"])
def test_a_cut_or_plain_gz_is_a_value_error_naming_the_file(tmp_path, raw):
    p = tmp_path / "rows.jsonl.gz"
    p.write_bytes(raw)
    if raw == b"":
        assert list(io.read_rows(p)) == []  # an empty .gz is an empty file (gzip reads it so)
        return
    with pytest.raises(ValueError, match=r"rows\.jsonl\.gz.*not a readable gzip file"):
        list(io.read_rows(p))


@pytest.mark.parametrize("raw", [b"", b"\xef\xbb\xbf", b"\xef\xbb", b"\xef", b"\xef\xbb\xbf\n\r\n"])
def test_a_bom_only_file_is_empty_to_every_reader(tmp_path, raw):
    """A BOM alone, or a file cut inside its BOM, reads as the empty file does, in every reader."""
    from pysynth.cli._common import read_lines
    from pysynth.datasets.squad import read_text
    from pysynth.mqr.jobs import read_questions
    from pysynth.qagen.data import read_contexts

    p = tmp_path / "f.jsonl"
    p.write_bytes(raw)
    assert list(io.read_rows(p)) == []
    t = tmp_path / "f.txt"
    t.write_bytes(raw)
    assert read_text(t).strip() == "" and io.decode_text(raw).strip() == ""
    assert all(not x.strip() for x in read_lines(str(t), "--in"))
    assert all(not x.strip() for x in read_questions(t)[0])
    with pytest.raises(ValueError, match="no contexts found"):
        read_contexts(t)


@pytest.mark.skipif(not _is_char_device("/dev/full"), reason="no /dev/full")
def test_score_out_dev_full_names_the_device(tmp_path):
    hyp = tmp_path / "h.txt"
    hyp.write_text("a flat tire\n")
    r = subprocess.run([sys.executable, "-m", "pysynth", "score", "--hyp", str(hyp), "--ref", str(hyp), "--out",
                        "/dev/full"], capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert r.returncode == 1 and r.stderr.splitlines() == ["pysynth: error: /dev/full: No space left on device"]


def test_json_text_is_json_dumps():
    # JSONL rows are encoded by json's C encoder directly: the text of json.dumps(ensure_ascii=False)
    odd = [{"id": 1, "q": 'a "b" \\ é “x”\n\t\x00', "rr": 1 / 3, "p": None, "c": "c1", "r": 7},
           {"n": float("nan"), "i": float("inf"), "z": -0.0, "big": 10 ** 30, "b": True, "l": [1, {"x": [None]}]},
           {"e": 1e-300, "u": "\U0001F600", 3: "int key"}, [1, "two"], "plain", 5]
    for row in odd:
        assert io._json_text(row) == json.dumps(row, ensure_ascii=False)
    loop: dict = {}
    loop["self"] = loop
    with pytest.raises(ValueError, match="Circular"):
        io._json_text(loop)
    with pytest.raises(TypeError):
        io._json_text({"x": object()})
    assert io._json_text({"ok": 1}) == '{"ok": 1}'  # nothing left behind by the failures


def test_read_jsonl_object_lines_equal_json_loads(tmp_path):
    # object lines go through json's scanner directly; every line must read as json.loads reads it
    lines = ['{"a": 1, "b": [1, 2.5, null, true], "c": {"d": "\\u00e9\\ud83d\\ude00"}}\n', '{}\n',
             '  {"lead": "space"}\n', '{"trail": "space"}  \n', '{"x": NaN, "y": -Infinity}\n',
             '\n', '{"k": "v"}\t\n', '["not", "an", "object"]\n', '{"a": 1, "a": 2}\n', '{"last": "no newline"}']
    p = tmp_path / "ok.jsonl"
    p.write_text("".join(lines), encoding="utf-8")
    got = list(io.read_jsonl(p))
    want = [json.loads(x) for x in lines if x.strip()]
    assert json.dumps(got) == json.dumps(want) and len(got) == 9
    for bad, line in [('{"a": 1} {"b": 2}\n', 2), ('{"a": 1}}\n', 2), ('{bad}\n', 2), ('{"a": 1,}\n', 2),
                      ('{"a": "\x01"}\n', 2)]:
        q = tmp_path / "bad.jsonl"
        q.write_text('{"ok": 1}\n' + bad + '{"ok": 2}\n', encoding="utf-8")
        with pytest.raises(ValueError, match=f"bad.jsonl:{line}: not valid JSON"):
            list(io.read_jsonl(q))


def test_k2q_read_questions_columns_equal_rows(tmp_path):
    # the column pass (dict rows of plain values) and the row-by-row checks give the same columns
    # and the same first error, also across a bad JSON line later in the stream
    from pysynth.k2q.synthesize import read_questions

    rows = [{"question": f"q {i}", "id": f"x{i}" if i % 3 else i, "cluster_id": [None, 7, "c"][i % 3]}
            for i in range(10)] + [{"question": "no id"}]
    plain = read_questions(rows)
    assert plain.ids == [r.get("id", 10) for r in rows] and plain.texts == [r["question"] for r in rows]
    assert plain.groups == [r.get("cluster_id") for r in rows]
    import numpy as np

    mixed = read_questions([dict(r, id=np.int64(5)) if i == 0 else r for i, r in enumerate(rows)])
    assert mixed.ids[0] == 5 and type(mixed.ids[0]) is int and mixed.ids[1:] == plain.ids[1:]
    p = tmp_path / "q.jsonl"
    p.write_text('{"question": "a", "id": true}\n{"question": "b"\n', encoding="utf-8")
    with pytest.raises(ValueError, match="row 1: 'id' must be a string or an integer"):
        read_questions(p)
    p.write_text('{"question": "a"}\n{"question": "b"\n', encoding="utf-8")
    with pytest.raises(ValueError, match="q.jsonl:2: not valid JSON"):
        read_questions(p)


def test_write_jsonl_columns_equal_json_dumps(tmp_path):
    # rows of one key set are encoded column by column; the bytes must be json.dumps' per row
    import enum

    class E(enum.IntEnum):
        A = 3

    class S(str):
        pass

    vals = [0, -7, 2**70, 1.5, -0.0, 1e300, float("nan"), float("inf"), -float("inf"), None, True, False,
            "é \"q\" \\ \n\t\x00 😀", "", S("sub"), E.A, [1, {"a": None}], {"k": [1.25]}, 5e-324]
    batches = [
        [{"id": i, "q": f"q{i}", "x": vals[i % len(vals)], "f": i / 7} for i in range(50)],
        [{"a": 1.0, "b": 2.5}, {"a": 3.0, "b": float("nan")}],   # float column with a NaN
        [{"r": [0.5, -0.0, 0.0, 1 / 3][i % 4]} for i in range(40)],  # repeated floats, both zeros
        [{"a%s": "%d", "b": 1}, {"a%s": "%%", "b": 2}],          # format characters in keys and values
        [{"a": 1}, {"b": 1}], [{}, {}], [{1: "int key"}], [{"a": 1}, [1, 2], "s", None],
    ]
    for rows in batches:
        p = tmp_path / "o.jsonl"
        io.write_jsonl(p, rows)
        assert p.read_text(encoding="utf-8") == "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    loop = {"a": 1}
    loop["a"] = loop  # the same keys as the row before it: the column path meets the cycle
    for bad, err in [([{"a": 1}, loop], ValueError), ([{"a": 1}, {"a": object()}], TypeError)]:
        with pytest.raises(err):
            io.write_jsonl(tmp_path / "bad.jsonl", bad)
