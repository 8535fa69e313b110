"""Issue 27, items 8-11: the commands under hostile-but-fair input give one clear error line (or a
correct result) before any model loads: bounded threads and beams, finite floats, diverse groups
that divide the beam, no two outputs on one file, no huge value echoed back."""
from __future__ import annotations

import json
import os

import pytest

from pysynth import _validate as V


@pytest.fixture
def rows(tmp_path):
    p = tmp_path / "in.jsonl"
    p.write_text(json.dumps({"question": "how are you", "keywords": "capital france"}) + "\n")
    return str(p)


# ------------------------------------------------------------------ item 8: threads and beams

@pytest.mark.parametrize("argv", [
    ("mqr", "rewrite", "--threads", "99999"),
    ("qagen", "generate", "--threads", "99999"),
    ("dup", "pairs", "--threads", str(V.max_threads() + 1)),
])
def test_threads_over_four_per_core_is_refused(fails, rows, tmp_path, argv):
    line = fails(2, *argv, "--in", rows, "--out", tmp_path / "o.jsonl")
    assert "--threads" in line and f"1..{V.max_threads()}" in line


def test_serve_threads_is_validated(fails):
    line = fails(2, "serve", "--threads", "99999")
    assert "--threads" in line and "4 x the cores" in line


@pytest.mark.parametrize("argv", [
    ("mqr", "rewrite"), ("paraphrase", "generate"), ("dup", "pairs", "--method", "both"),
    ("qagen", "generate", "--decode", "beam"), ("k2q", "generate"),
])
def test_beam_is_bounded(fails, rows, tmp_path, argv):
    line = fails(2, *argv, "--beam", "100000", "--in", rows, "--out", tmp_path / "o.jsonl")
    assert f"--beam: must be an integer in 1..{V.MAX_BEAM}" in line


def test_beam_times_batch_is_bounded(fails, rows, tmp_path):
    line = fails(2, "paraphrase", "generate", "--beam", "256", "--batch-size", "128", "--in", rows,
                 "--out", tmp_path / "o.jsonl")
    assert "32,768 hypotheses" in line and "--batch-size <= 64" in line


def test_validate_threads_and_budget_for_services():
    """The server's config calls the same checks (``_validate.threads``)."""
    assert V.threads(0) == 0 and V.threads(-1) == (os.cpu_count() or 1) and V.threads(1) == 1
    for bad in (99999, -2, V.max_threads() + 1):
        with pytest.raises(ValueError, match="threads"):
            V.threads(bad)
    with pytest.raises(TypeError, match="threads"):
        V.threads(2.5)
    V.search_budget(16, 16, 4)
    with pytest.raises(ValueError, match="beam"):
        V.search_budget(100_000)
    with pytest.raises(ValueError, match="groups must divide beam"):
        V.search_budget(6, None, 7)


# ------------------------------------------------------------------ items 10-11: floats, groups, outputs

@pytest.mark.parametrize("flag, value", [("--unknown-penalty", "nan"), ("--length-penalty", "inf"),
                                         ("--length-penalty", "-inf"), ("--unknown-penalty", "NaN")])
def test_paraphrase_penalties_must_be_finite(fails, rows, tmp_path, flag, value):
    line = fails(2, "paraphrase", "generate", f"{flag}={value}", "--in", rows, "--out", tmp_path / "o.jsonl")
    assert f"{flag}: must be a finite number" in line


def test_paraphrase_config_refuses_nan_penalties():
    from pysynth.paraphrase.pipeline import ParaphraseConfig

    with pytest.raises(ValueError, match="unknown_penalty must be a finite number"):
        ParaphraseConfig(unknown_penalty=float("nan"))
    with pytest.raises(ValueError, match="length_penalty"):
        ParaphraseConfig(length_penalty=float("inf"))


def test_every_float_flag_is_finite(fails, rows, tmp_path):
    line = fails(2, "k2q", "generate", "--alpha", "nan", "--in", rows, "--out", tmp_path / "o.jsonl")
    assert "--alpha: must be a finite number" in line


@pytest.mark.parametrize("beam, groups", [("6", "7"), ("8", "3")])
def test_diverse_groups_must_divide_the_beam(fails, rows, tmp_path, beam, groups):
    line = fails(2, "k2q", "generate", "--diverse", "--groups", groups, "--beam", beam, "--in", rows,
                 "--out", tmp_path / "o.jsonl")
    assert "--groups must divide --beam" in line and f"--beam {beam}, --groups {groups}" in line
    line = fails(2, "paraphrase", "generate", "--decode", "dbs", "--groups", groups, "--beam", beam, "--in", rows,
                 "--out", tmp_path / "o.jsonl")
    assert "--groups must divide --beam" in line


def test_groups_are_not_checked_when_the_search_is_not_diverse(cli, rows, tmp_path):
    from pysynth.cli import build_parser
    from pysynth.cli._common import check_args

    args = build_parser().parse_args(["paraphrase", "generate", "--decode", "beam", "--beam", "2", "--in", rows,
                                      "--out", str(tmp_path / "o.jsonl")])
    check_args(args)  # groups 4 > beam 2, but beam search has no groups


@pytest.mark.parametrize("argv", [
    ("qagen", "generate", "--squad-out", "{out}"),
    ("qagen", "generate", "--squad-out", "{dir}/../{base}/o.jsonl"),
    ("paraphrase", "generate", "--candidates-out", "{out}"),
])
def test_two_outputs_on_one_file_are_refused(fails, rows, tmp_path, argv):
    out = str(tmp_path / "o.jsonl")
    argv = [a.format(out=out, dir=tmp_path, base=tmp_path.name) for a in argv]
    line = fails(2, *argv, "--in", rows, "--out", out)
    assert "are the same file" in line and "--out" in line
    assert not os.path.exists(out)


def test_two_outputs_on_stdout_are_refused(fails, rows):
    line = fails(2, "paraphrase", "generate", "--candidates-out", "-", "--in", rows, "--out", "-")
    assert "same file (stdout)" in line


def test_symlinked_outputs_are_one_file(fails, rows, tmp_path):
    out = tmp_path / "o.jsonl"
    out.write_text("")
    (tmp_path / "link.jsonl").symlink_to(out)
    line = fails(2, "paraphrase", "generate", "--candidates-out", tmp_path / "link.jsonl", "--in", rows,
                 "--out", out)
    assert "are the same file" in line


@pytest.mark.parametrize("argv", [
    ("score", "--hyp", "{rows}", "--ref", "{rows}", "--workers", "9" * 20),
    ("score", "--hyp", "{rows}", "--ref", "{rows}", "--workers", "9" * 10_000),
    ("mqr", "rewrite", "--in", "{rows}", "--out", "-", "--beam", "7" * 10_000),
    ("k2q", "generate", "--in", "{rows}", "--out", "-", "--alpha", "1" * 10_000 + "x"),
    ("dup", "pairs", "--in", "{rows}", "--out", "-", "--seed", "x" * 10_000),
])
def test_a_huge_value_is_not_echoed_whole(fails, rows, argv):
    line = fails(2, *[a.format(rows=rows) for a in argv])
    assert len(line) < 300, line


# ------------------------------------------------------------------ item 10: mqr mine writes its metadata first

def _dump(d):
    from xml.sax.saxutils import quoteattr

    def xml(root, rows):
        body = "".join("<row " + " ".join(f"{k}={quoteattr(str(v))}" for k, v in r.items()) + " />\n" for r in rows)
        return f'<?xml version="1.0" encoding="utf-8"?>\n<{root}>\n{body}</{root}>\n'

    def hist(hid, typ, pid, text):
        return {"Id": hid, "PostHistoryTypeId": typ, "PostId": pid, "CreationDate": "2019-01-01T00:00:00.000",
                "Text": text}

    d.mkdir()
    (d / "Posts.xml").write_text(xml("posts", [{"Id": 1, "PostTypeId": 1, "Title": "How do I fix a flat tire?"},
                                               {"Id": 2, "PostTypeId": 1, "Title": "Why is my chain squeaking?"}]))
    (d / "PostHistory.xml").write_text(xml("posthistory", [
        hist(1, 1, 1, "flat tire fix"), hist(2, 4, 1, "How do I fix a flat tire?"),
        hist(3, 1, 2, "chain squeak"), hist(4, 4, 2, "Why is my chain squeaking?")]))
    return d


def test_mqr_mine_killed_between_meta_and_data_never_pairs_new_data_with_old_meta(cli, tmp_path, monkeypatch):
    from pysynth import io as pio

    dump = _dump(tmp_path / "bikes")
    out = tmp_path / "pairs.jsonl"
    meta = tmp_path / "pairs.jsonl.meta.json"
    assert cli("mqr", "mine", "--in", dump, "--out", out).code == 0
    old_data, old_meta = out.read_bytes(), json.loads(meta.read_text())
    real = pio.os.replace

    def killed_at_the_data_rename(src, dst):
        if str(dst) == str(out):
            raise KeyboardInterrupt
        return real(src, dst)

    monkeypatch.setattr(pio.os, "replace", killed_at_the_data_rename)
    assert cli("mqr", "mine", "--in", dump, "--out", out, "--splits").code == 130
    new_meta = json.loads(meta.read_text())
    assert out.read_bytes() == old_data  # the old data ...
    assert new_meta["signature"]["config"] != old_meta["signature"]["config"]  # ... beside the new metadata
    monkeypatch.setattr(pio.os, "replace", real)
    assert cli("mqr", "mine", "--in", dump, "--out", out, "--splits").code == 0
    assert json.loads(meta.read_text()) == new_meta and out.read_bytes() != old_data


# ------------------------------------------------------------------ item 9: crafted .7z member names

@pytest.mark.parametrize("name", ["/etc/Posts.xml", "../../Posts.xml", "a/../../Posts.xml", "\\\\srv\\Posts.xml",
                                  "C:Posts.xml", "x\\..\\..\\Posts.xml"])
def test_7z_members_outside_the_archive_are_refused(tmp_path, monkeypatch, name):
    from pysynth.datasets import stackexchange as se

    arc = tmp_path / "bikes.stackexchange.com.7z"
    arc.write_bytes(b"7z")
    with pytest.raises(ValueError, match="absolute path or contains '..'"):
        se.safe_member(name, arc)
    monkeypatch.setattr(se, "_7z_exe", lambda: None)

    class Fake:
        def __init__(self, *a, **k):
            pass

        def __enter__(self):
            return self

        def __exit__(self, *a):
            return False

        def getnames(self):
            return ["Tags.xml", name]

    class FakePy7zr:
        SevenZipFile = Fake

    monkeypatch.setattr(se, "_py7zr", lambda: FakePy7zr)
    with pytest.raises(ValueError, match="crafted or damaged"):
        se.Dump(arc).rows("Posts").__next__()
    assert se.safe_member("dir/Posts.xml", arc) == "dir/Posts.xml"


def test_7z_command_gets_names_after_double_dash(tmp_path, monkeypatch):
    import subprocess as sp

    from pysynth.datasets import stackexchange as se

    arc = tmp_path / "-bikes.stackexchange.com.7z"
    arc.write_bytes(b"7z")
    calls = []
    monkeypatch.setattr(se, "_7z_exe", lambda: "/usr/bin/7z")

    def run(argv, **kw):
        calls.append(argv)
        return sp.CompletedProcess(argv, 0, "Path = /etc/Posts.xml\n", "")

    monkeypatch.setattr(se.subprocess, "run", run)
    with pytest.raises(ValueError, match="crafted or damaged"):
        se.Dump(arc).tables()
    assert calls[0][:4] == ["/usr/bin/7z", "l", "-slt", "-ba"] and calls[0][4:] == ["--", str(arc)]

    class Proc:
        stdout = __import__("io").BytesIO(b"<posts></posts>")
        stderr = __import__("io").BytesIO(b"")

        def wait(self):
            return 0

    popen = []
    monkeypatch.setattr(se.subprocess, "Popen", lambda argv, **kw: popen.append(argv) or Proc())
    with se._open(se._Source("x", arc, "-Posts.xml")) as f:
        f.read()
    assert popen[0][1:] == ["x", "-so", "--", str(arc), "-Posts.xml"]


# ------------------------------------------------------------------ item 11 leftovers

def _closed_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_unreachable_ray_address_is_one_line_before_any_work(fails, tmp_path):
    inp = tmp_path / "q.jsonl"
    inp.write_text(json.dumps({"question": "what is a flat tire"}) + "\n")
    port = _closed_port()
    line = fails(1, "k2q", "synthesize", "--in", inp, "--out", tmp_path / "o.jsonl", "--executor", "ray",
                 "--ray-address", f"127.0.0.1:{port}")
    assert f"nothing answers at 127.0.0.1:{port}" in line and "--ray-address" in line
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.parametrize("address", ["ray://127.0.0.1:{port}", "127.0.0.1:{port}", "[::1]:{port}"])
def test_ray_init_is_not_reached_for_an_unreachable_head(address):
    from pysynth.pipelines.executors import RayExecutor, check_reachable

    addr = address.format(port=_closed_port())
    with pytest.raises(ConnectionError, match="nothing answers"):
        check_reachable(addr, timeout=2)

    class NoRay:  # ray.init must not be called (it retried for minutes)
        @staticmethod
        def is_initialized():
            return False

        @staticmethod
        def init(**kw):
            raise AssertionError("ray.init called")

    with pytest.raises(ConnectionError):
        RayExecutor(address=addr)._init(NoRay)
    check_reachable("auto")  # left to Ray


def test_k2q_synthesize_names_the_row_with_a_lone_surrogate(fails, tmp_path):
    inp = tmp_path / "q.jsonl"
    inp.write_text('{"question": "what is a"}\n{"question": "why \\ud800 x"}\n')
    line = fails(1, "k2q", "synthesize", "--in", inp, "--out", tmp_path / "o.jsonl", only_line=False)
    assert "row 2" in line and "lone surrogate" in line


def test_corpus_refuses_statistics_that_disagree_with_its_ids():
    from pysynth import text

    c = text.build_corpus(["a b c", "b c d"])
    text.Corpus(c.ids, c.offsets, c.cf, c.df, c.vocab)  # its own counts: accepted
    with pytest.raises(ValueError, match=r"cf disagrees with the ids: cf\[0\]"):
        text.Corpus(c.ids, c.offsets, c.cf + 1, c.df, c.vocab)
    df = c.df.copy()
    df[-1] = 0
    with pytest.raises(ValueError, match="df disagrees with the ids"):
        text.Corpus(c.ids, c.offsets, c.cf, df, c.vocab)


@pytest.mark.parametrize("size, exc", [(-1, ValueError), (2**40, ValueError), (2.5, TypeError), (True, TypeError)])
def test_exclusion_mask_vocab_size_is_checked(size, exc):
    from pysynth import sampling

    with pytest.raises(exc, match="vocab_size"):
        sampling.exclusion_mask(["a", "what"], vocab_size=size)
    assert sampling.exclusion_mask(["a", "what"], vocab_size=3).tolist() == [0, 1, 0]


def test_search_config_bounds_the_beam():
    from pysynth.decoding import SearchConfig

    assert SearchConfig(beam=V.MAX_BEAM).beam == V.MAX_BEAM
    with pytest.raises(ValueError, match=f"beam: must be at most {V.MAX_BEAM}"):
        SearchConfig(beam=100_000)


# ------------------------------------------------------------------ issue 27, the later probe: numbers out of range

@pytest.mark.parametrize("flag, value, expect", [
    ("--n-results", "1e20", "--n-results: must be an integer in 1..100,000"),
    ("--n-results", "1" + "0" * 20, "--n-results: must be an integer in 1..100,000"),
    ("--m", "3000000000", "--m: must be an integer in 1..1,000"),
    ("--m", "9" * 3000, "--m: must be an integer in 1..1,000"),
    ("--seed", "9" * 3000, "--seed: must be an integer in [-2**63, 2**63)"),
    ("--weights", "9" * 3000, "--weights: must be 3 comma-separated numbers"),
    ("--mu", "9" * 3000, "--mu: must be a finite number"),
    ("--keep", "-1", "--keep: must be an integer >= 0"),
])
def test_k2q_synthesize_numbers_are_bounded_and_clipped(fails, rows, tmp_path, flag, value, expect):
    line = fails(2, "k2q", "synthesize", "--in", rows, "--out", tmp_path / "o.jsonl", flag, value)
    assert expect in line and len(line) < 300, line
    assert not (tmp_path / "o.jsonl").exists()


def test_synthesis_config_bounds_m_and_n_results():
    from pysynth.k2q.synthesize import SynthesisConfig

    with pytest.raises(ValueError, match=r"n_results must be an integer in 1\.\.100,000, got 1000"):
        SynthesisConfig(n_results=10**20)
    with pytest.raises(ValueError, match=r"m must be an integer in 1\.\.1,000"):
        SynthesisConfig(m=3_000_000_000)
    with pytest.raises(ValueError, match=r"\(3,001 characters\)"):
        SynthesisConfig(seed=10**3000)


def test_every_error_line_clips_a_huge_word():
    assert V.clip_message("seed must be >= 0, got " + "9" * 3000).endswith("... (3,000 characters)")
    msg = "a normal message naming /some/path/of/ordinary/length.jsonl"
    assert V.clip_message(msg) == msg


# ------------------------------------------------------------------ --ray-address: a port that is not Ray

def _peer(behaviour: str) -> int:
    """A loopback listener that answers every connection as ``behaviour`` says; returns its port."""
    import socket
    import threading

    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(16)

    def serve():
        while True:
            try:
                c, _ = srv.accept()
            except OSError:
                return
            if behaviour == "silent":  # holds the connection, says nothing
                threading.Timer(30, c.close).start()
                continue
            c.settimeout(5)
            try:
                c.recv(64)
                c.sendall({"web": b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n", "closing": b"",
                           "bytes": b"+OK redis-like\r\n",
                           "http2": b"\x00\x00\x06\x04\x00\x00\x00\x00\x00\x00\x03\x00\x00\x00\x64"}[behaviour])
            except OSError:
                pass
            if behaviour != "http2":
                c.close()

    threading.Thread(target=serve, daemon=True).start()
    return srv.getsockname()[1]


@pytest.mark.parametrize("behaviour, says", [("web", "answers b'HTTP/1.1 '"), ("closing", "closed the connection"),
                                             ("silent", "sends nothing"), ("bytes", "answers b'+OK redis'")])
def test_a_port_that_is_not_ray_is_one_line_within_the_bound(behaviour, says):
    from pysynth.pipelines.executors import check_reachable

    port = _peer(behaviour)
    for addr in (f"127.0.0.1:{port}", f"ray://127.0.0.1:{port}"):
        with pytest.raises(ConnectionError) as e:
            check_reachable(addr, timeout=1)  # silence: the bound ends it
        msg = str(e.value)
        assert says in msg and "is not a Ray head" in msg and "\n" not in msg


def test_an_http2_peer_passes_the_probe():
    """A server that answers the HTTP/2 preface with SETTINGS (what gRPC, hence Ray's GCS, does)."""
    from pysynth.pipelines.executors import check_reachable

    check_reachable(f"127.0.0.1:{_peer('http2')}", timeout=5)


def test_k2q_synthesize_with_a_web_server_as_ray_address_is_one_line(fails, tmp_path):
    inp = tmp_path / "q.jsonl"
    inp.write_text(json.dumps({"question": "what is a flat tire"}) + "\n")
    port = _peer("web")
    line = fails(1, "k2q", "synthesize", "--in", inp, "--out", tmp_path / "o.jsonl", "--executor", "ray",
                 "--ray-address", f"127.0.0.1:{port}")
    assert "is not a Ray head" in line and "gRPC" in line
    assert not (tmp_path / "o.jsonl").exists()


@pytest.mark.slow
def test_a_real_local_ray_head_passes_the_probe():
    """Starts a local Ray (tens of seconds on a loaded 2-core machine): its GCS passes the probe."""
    ray = pytest.importorskip("ray")
    from pysynth.pipelines.executors import check_reachable

    ray.init(include_dashboard=False, logging_level="ERROR", num_cpus=1)
    try:
        check_reachable(ray.get_runtime_context().gcs_address)
    finally:
        ray.shutdown()
