"""Silent wrong results found by a hostile-user pass (issue 17), now errors."""
import math
import subprocess
import sys

import pytest

from pysynth import metrics, text
from pysynth.metrics import TokenIds


@pytest.mark.parametrize("method, value", [("add-k", math.nan), ("floor", math.inf), ("floor", -1.0),
                                           ("add-k", "1")])
def test_bleu_smoothing_value_must_be_finite(method, value):
    with pytest.raises(ValueError, match="smooth_value"):
        metrics.corpus_bleu(["a b c"], ["a b d"], smooth_method=method, smooth_value=value)
    with pytest.raises(ValueError, match="smooth_value"):
        metrics.sentence_bleu("a b c", ["a b d"], smooth_method=method, smooth_value=value)


def test_token_ids_row_bounds():
    t = TokenIds.from_lists([[1, 2], [3]])
    assert t.row(-1) == [3] and t.row(0) == [1, 2]
    for i in (2, -3):
        with pytest.raises(IndexError, match="out of range"):
            t.row(i)


def test_corpus_decode_refuses_ids_outside_the_vocabulary():
    c = text.build_corpus(["a b c", "b c d"])
    assert c.decode([0]) == [c.vocab[0]]
    for bad in (-1, len(c.vocab)):
        with pytest.raises(IndexError, match="not a term id"):
            c.decode([bad])


def test_frozen_phrases_refuse_nan_scores():
    with pytest.raises(ValueError, match="nan"):
        text.FrozenPhrases({"a_b": math.nan})


def test_index_build_refuses_a_huge_unused_vocabulary():
    import numpy as np

    from pysynth.retrieval import Index

    ids, off = np.array([0], np.int32), np.array([0, 1])
    with pytest.raises(ValueError, match="vocab_size = 300,000,000"):
        Index.build(ids, off, vocab_size=3 * 10**8)
    assert Index.build(ids, off, vocab_size=1000).vocab_size == 1000


def test_deeply_nested_store_metadata_is_a_value_error(tmp_path):
    import numpy as np

    from pysynth.retrieval import Index

    d = tmp_path / "ix"
    Index.build(np.array([0, 1], np.int32), np.array([0, 2])).save(d)
    (d / "meta.json").write_text("[" * 200_000 + "]" * 200_000)
    with pytest.raises(ValueError, match="meta.json"):
        Index.load(d)


def test_cuda_asked_without_cuda_is_one_clean_line(tmp_path):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    inp = tmp_path / "k.jsonl"
    inp.write_text('{"keywords": "honda speed"}\n')
    r = subprocess.run([sys.executable, "-m", "pysynth", "k2q", "generate", "--in", str(inp), "--out",
                        str(tmp_path / "o.jsonl"), "--device", "cuda"], capture_output=True, text=True)
    assert r.returncode == 1 and "sees no CUDA device" in r.stderr and "internal error" not in r.stderr
    from pysynth.models.io import torch_device

    with pytest.raises(ValueError, match="not a torch device"):
        torch_device("gpu0")


def test_unwritable_output_names_the_output(tmp_path):
    import os

    from pysynth import io

    if not os.path.isdir("/proc"):
        pytest.skip("no /proc")
    with pytest.raises(OSError) as e:
        io.write_jsonl("/proc/x.jsonl", [{"a": 1}])
    assert e.value.filename == "/proc/x.jsonl" and "choose a writable output path" in e.value.strerror


# ------------------------------------------------------------------ long jobs (pysynth.pipelines)
def _toy(out, **kw):
    import numpy as np
    from pipelines._toy_stage import ToyStage

    from pysynth import pipelines

    return pipelines.run(ToyStage(np.arange(30) * 7 % 11, out, **kw), out, chunk_size=4, progress=False)


def test_a_second_run_on_the_same_output_is_refused(tmp_path):
    """Held by another process (here: another open file description of the lock), the run stops
    before touching the run directory; once the holder is gone, the output is written."""
    from pysynth.pipelines import parts_dir, runner

    out = tmp_path / "out.jsonl"
    with runner._exclusive(parts_dir(out)):
        with pytest.raises(RuntimeError, match=r"out.jsonl is being written by another run \(pid \d+\)"):
            _toy(out)
        assert not out.exists() and not parts_dir(out).exists()
    _toy(out)
    assert out.exists()


def test_a_second_process_is_refused_while_the_first_runs(tmp_path):
    import time

    out = tmp_path / "out.jsonl"
    toy = str(__import__("pathlib").Path(__file__).parent / "pipelines" / "_toy_stage.py")
    p = subprocess.Popen([sys.executable, toy, str(out), "30", "2", "0.3"])
    try:
        lock = tmp_path / ".out.jsonl.parts.lock"
        deadline = time.monotonic() + 60
        while not (lock.exists() and lock.read_text().strip()) and time.monotonic() < deadline:
            time.sleep(0.02)
        q = subprocess.run([sys.executable, toy, str(out), "30", "2", "0"], capture_output=True, text=True, timeout=60)
        assert q.returncode != 0 and "being written by another run" in q.stderr, q.stderr[-500:]
        assert p.poll() is None  # the first run goes on
    finally:
        p.kill()
        p.wait()


def test_a_full_disk_is_one_clear_error_and_the_run_resumes(tmp_path, monkeypatch):
    """ENOSPC while a part is saved: an OSError saying what to do; the parts already saved are
    kept, and the same run afterwards resumes and writes the same bytes."""
    import errno

    from pysynth.pipelines import runner

    ref = tmp_path / "ref.jsonl"
    _toy(ref)
    out = tmp_path / "out.jsonl"
    save, calls = runner._save_part, []

    def full_after_two(path, start, stop, arrays):
        calls.append(start)
        if len(calls) > 2:
            raise OSError(errno.ENOSPC, "No space left on device", str(path))
        save(path, start, stop, arrays)

    monkeypatch.setattr(runner, "_save_part", full_after_two)
    with pytest.raises(OSError) as e:
        _toy(out)
    assert e.value.errno == errno.ENOSPC and "run the same command again" in str(e.value)
    assert not out.exists()
    monkeypatch.setattr(runner, "_save_part", save)
    info = _toy(out)
    assert info.chunks_resumed == 2 and out.read_bytes() == ref.read_bytes()


def test_an_edited_pair_table_with_matching_checksums_is_refused(tmp_path):
    import numpy as np

    from pysynth.retrieval import Index

    from _stores import restamp_array

    docs = [[0, 1, 2], [0, 1], [1, 0, 3], [0, 2, 1]]
    d = tmp_path / "ix"
    ix = Index.build(docs)
    assert ix.arrays["pair_terms"].size >= 2
    ix.save(d)
    for name in ("pair_cf_od", "pair_max_uw"):
        e = tmp_path / name
        __import__("shutil").copytree(d, e)
        a = np.array(ix.arrays[name])
        a[np.argmax(a)] -= 1  # still in range: only a recount finds it
        restamp_array(e, name, a)
        with pytest.raises(ValueError, match="does not match the documents"):
            Index.load(e)


# ------------------------------------------------------------------ issue 27: qagen generate's context budget

class _CountingSpans:
    """Answer extraction proposing every capitalised word; records the texts it was given."""

    name, joint = "words", True

    def __init__(self):
        self.seen = []

    def extract(self, contexts, k=10, max_answer_len=32, joint=None):
        import re

        self.seen += list(contexts)
        return [[{"text": m.group(), "start": m.start(), "end": m.end(), "score": 1.0}
                 for m in re.finditer(r"[A-Z][a-z]+", c)][:k] for c in contexts]


class _Ask:
    name = "ask"

    def generate(self, contexts, answers, **kw):
        return [f"what is {c[a['start']:a['end']]}?" for c, a in zip(contexts, answers)]


class _Echo:
    name = "echo"

    def answer(self, contexts, questions, max_answer_len=30):
        out = []
        for c, q in zip(contexts, questions):
            w = q[len("what is "):].rstrip("?")
            i = c.find(w)
            out.append({"text": w, "start": i, "end": i + len(w), "score": 3.0, "null_score": 0.0})
        return out


def test_qagen_context_over_the_budget_is_one_counted_row_not_read():
    from collections import Counter

    from pysynth.qagen.data import Context
    from pysynth.qagen.pipeline import TOO_LONG, QAGenConfig, QAGenerator

    ctxs = [Context("a", "", "Paris is in France."), Context("b", "", "Rome " * 100), Context("c", "", "Oslo is cold.")]
    span = _CountingSpans()
    counts = Counter()
    rows = QAGenerator(QAGenConfig(max_context_chars=100), span, _Ask(), _Echo()).run(ctxs, counts=counts)
    assert [r["context_id"] for r in rows] == ["a", "b", "c"]
    assert rows[1]["reason"] == TOO_LONG and rows[1]["consistent"] is False and rows[1]["question"] is None
    assert rows[0]["consistent"] and rows[2]["consistent"] and counts[TOO_LONG] == 1
    assert span.seen == [ctxs[0].text, ctxs[2].text]  # the long one never reached the span model
    # every context over the budget: no model call at all
    span = _CountingSpans()
    rows = QAGenerator(QAGenConfig(max_context_chars=5), span, _Ask(), _Echo()).run(ctxs)
    assert {r["reason"] for r in rows} == {TOO_LONG} and span.seen == []
    assert "max_context_chars" not in QAGenConfig().as_dict()  # runs without it keep their signature
    with pytest.raises(ValueError, match="max_context_chars"):
        QAGenConfig(max_context_chars=0)


def test_qagen_cli_budget_defaults_to_the_servers():
    from pysynth.cli import build_parser
    from pysynth.serve.budget import Budget

    args = build_parser().parse_args(["qagen", "generate", "--in", "sample", "--out", "o.jsonl"])
    assert args.max_context_chars == Budget().max_context_chars == 100_000


def test_qagen_generate_writes_and_counts_a_context_over_the_budget(tmp_path):
    pytest.importorskip("onnxruntime")
    pytest.importorskip("transformers")
    import json

    inp = tmp_path / "c.jsonl"
    ctxs = [{"id": "short", "context": "Oxygen was discovered by Carl Scheele in Uppsala in 1773."},
            {"id": "long", "context": "The Rhine flows to the North Sea. " * 20}]
    inp.write_text("".join(json.dumps(c) + "\n" for c in ctxs))
    out = tmp_path / "o.jsonl"
    r = subprocess.run([sys.executable, "-m", "pysynth", "qagen", "generate", "--in", str(inp), "--out", str(out),
                        "--max-context-chars", "200", "--keep-discarded", "--threads", "1", "-q"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    summary = json.loads(r.stdout)
    assert summary["contexts"] == 2 and summary["discarded_by_reason"].get("context_too_long") == 1
    rows = [json.loads(x) for x in out.read_text().splitlines()]
    (long_row,) = [x for x in rows if x["context_id"] == "long"]
    assert long_row["reason"] == "context_too_long" and long_row["consistent"] is False


# ------------------------------------------------------------------ issue 27: found by fuzz/intake.py

def test_text_lines_lose_their_crlf_ending(tmp_path):
    from pysynth.cli._common import read_lines
    from pysynth.io import chomp
    from pysynth.mqr.jobs import read_questions

    p = tmp_path / "q.txt"
    p.write_bytes(b"one\r\ntwo\rthree\n\nfour")
    assert read_lines(str(p), "--in") == ["one", "two", "three", "", "four"]
    assert read_questions(p)[0] == ["one", "two", "three", "", "four"]
    assert [chomp(x) for x in ("a\r\n", "a\r", "a\n", "a", "a\n\r")] == ["a", "a", "a", "a", "a\n"]


def test_a_file_drops_one_bom_as_every_reader_does(tmp_path):
    from pysynth import io

    p = tmp_path / "rows.jsonl"
    p.write_bytes("\ufeff\ufeff{}\n".encode())
    with pytest.raises(ValueError, match="rows.jsonl:1: not valid JSON"):  # the text readers keep the 2nd too
        list(io.read_rows(p))
    p.write_bytes("\ufeff{}\n".encode())
    assert list(io.read_rows(p)) == [{}]


@pytest.mark.parametrize("call", [
    lambda V: V.choice(10**3000, "x", ("a",)), lambda V: V.int_range(10**3000, "x", 0, 5),
    lambda V: V.workers(-10**3000), lambda V: V.finite(10**3000, "x"),
    lambda V: V.offsets(__import__("numpy").array([0, 10**3000], dtype=object), 2),
])
def test_validate_messages_clip_huge_values(call):
    from pysynth import _validate as V

    with pytest.raises(ValueError) as e:  # finite(10**3000) was an OverflowError
        call(V)
    assert len(str(e.value)) < 200, str(e.value)


def test_a_usage_error_is_one_line_even_with_newlines_in_argv(capsys):
    from pysynth.cli import main

    assert main(["score", "--hyp", "x", "--bogus", "a\nb\nc"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("pysynth: error: ")


def test_wordpiece_backends_agree_on_surrogates_and_unassigned_code_points():
    pytest.importorskip("tokenizers")
    from pysynth.models.registry import resolve
    from pysynth.models.wordpiece import WordPiece

    vocab = sorted(resolve(None, default="dup-minilm-wstb").path.rglob("vocab.txt"))[0]
    py, fast = WordPiece(vocab, impl="python"), WordPiece(vocab, impl="tokenizers")
    texts = ["\x04\ufffdnx\ufffd\u0530\ufffd@e", "x\ud800y why", "ok"]
    assert [py.encode(t) for t in texts] == [fast.encode(t) for t in texts]  # tokenizers raised on \ud800
    assert (py.batch(texts)["input_ids"] == fast.batch(texts)["input_ids"]).all()


def test_k2q_synthesize_writes_no_metadata_beside_a_device(tmp_path):
    """The probe found /dev/null.meta.json after ``k2q synthesize --out /dev/null``."""
    import json
    import os

    from pysynth.cli import main

    inp = tmp_path / "q.jsonl"
    inp.write_text(json.dumps({"question": "how do i fix a flat tire"}) + "\n")
    meta = os.devnull + ".meta.json"
    existed = os.path.exists(meta)
    try:
        assert main(["k2q", "synthesize", "--in", str(inp), "--out", os.devnull, "--restart", "--quiet"]) == 0
        assert existed or not os.path.exists(meta)
    finally:
        if not existed and os.path.exists(meta):
            os.unlink(meta)


@pytest.mark.skipif(not __import__("os").path.exists("/dev/full"), reason="no /dev/full")
def test_a_job_on_a_device_leaves_no_run_directory_beside_it(tmp_path):
    """``k2q synthesize --out /dev/full`` left /dev/full.parts and /dev/.full.parts.lock behind."""
    import json
    import os

    from pysynth.cli import main

    inp = tmp_path / "q.jsonl"
    inp.write_text(json.dumps({"question": "how do i fix a flat tire"}) + "\n")
    before = set(os.listdir("/dev"))
    assert main(["k2q", "synthesize", "--in", str(inp), "--out", "/dev/full", "--restart", "--quiet"]) == 1
    assert main(["k2q", "synthesize", "--in", str(inp), "--out", os.devnull, "--restart", "--quiet"]) == 0
    new = set(os.listdir("/dev")) - before
    for n in new:  # leave /dev as it was even when the test fails
        p = os.path.join("/dev", n)
        __import__("shutil").rmtree(p, ignore_errors=True) if os.path.isdir(p) else os.unlink(p)
    assert not new


def test_search_budget_message_clips_a_huge_batch():
    """Found by the scheduled fuzz run (intake.validate): a 3,000-digit batch size came back whole."""
    from pysynth import _validate as V

    with pytest.raises(ValueError) as e:
        V.search_budget(256, 10**3000)
    assert len(str(e.value)) < 300
    with pytest.raises(ValueError, match="32,768 hypotheses"):
        V.search_budget(256, 128)
