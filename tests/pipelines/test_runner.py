"""pysynth.pipelines' runner with a toy stage: chunk-size independence, resume, refusal of a
different run, restart, atomic and checked parts, stale temporary files, SIGKILL + rerun."""
from __future__ import annotations

import argparse
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from _toy_stage import ToyStage

from pysynth import pipelines, store
from pysynth.pipelines import runner

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
VALUES = np.arange(50) * 7 % 11


def _run(out, chunk_size=7, values=VALUES, executor=None, **kw):
    stage = ToyStage(values, out, **{k: kw.pop(k) for k in ("seed", "fail_at", "calls") if k in kw})
    info = pipelines.run(stage, out, chunk_size=chunk_size, executor=executor, progress=False, **kw)
    return stage, info


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("ref") / "out.jsonl"
    _run(out, chunk_size=1000)
    return out.read_bytes(), out.with_name("out.jsonl.meta.json").read_bytes()


def test_output_independent_of_chunk_size_and_workers(tmp_path, reference):
    for cs in (1, 3, 7, 50, 51):
        for w in (1, 2):
            out = tmp_path / f"o{cs}_{w}.jsonl"
            _run(out, chunk_size=cs, executor=pipelines.LocalExecutor(w))
            assert (out.read_bytes(), out.with_name(out.name + ".meta.json").read_bytes()) == reference
            assert not pipelines.parts_dir(out).exists()
    assert len(reference[0].splitlines()) == VALUES.size


def test_crash_then_resume_computes_only_the_missing_chunks(tmp_path, reference):
    out = tmp_path / "out.jsonl"
    calls = []
    with pytest.raises(RuntimeError, match="toy failure"):
        _run(out, fail_at=21, calls=calls)
    run_dir = pipelines.parts_dir(out)
    assert sorted(p.name for p in run_dir.glob("part-*")) == ["part-000000", "part-000001",
                                                                  "part-000002"]
    assert not out.exists()
    calls.clear()
    stage, info = _run(out, calls=calls, keep_parts=True)
    assert calls == [(21, 28), (28, 35), (35, 42), (42, 49), (49, 50)]
    assert stage.prepared == 0 and info.context_reused  # the prepared context is reused
    assert (info.chunks_resumed, info.chunks_computed) == (3, 5)
    assert out.read_bytes() == reference[0]
    assert (run_dir / pipelines.CONTEXT).is_dir()


def test_parts_of_a_different_run_are_refused_unless_restart(tmp_path):
    out = tmp_path / "out.jsonl"
    with pytest.raises(RuntimeError):
        _run(out, fail_at=14)
    with pytest.raises(ValueError, match="different run"):
        _run(out, seed=1)
    with pytest.raises(ValueError, match="different run"):
        _run(out, chunk_size=5)
    with pytest.raises(ValueError, match="different run"):
        _run(out, values=VALUES[:-1])
    assert len(list(pipelines.parts_dir(out).glob("part-*"))) == 2  # refusing deletes nothing
    stage, info = _run(out, seed=1, resume=False)
    assert stage.prepared == 1 and info.chunks_resumed == 0
    ref = tmp_path / "ref.jsonl"
    _run(ref, seed=1)
    assert out.read_bytes() == ref.read_bytes()


def test_damaged_or_foreign_parts_are_recomputed(tmp_path, reference):
    out = tmp_path / "out.jsonl"
    with pytest.raises(RuntimeError):
        _run(out, fail_at=28)
    run_dir = pipelines.parts_dir(out)
    p0, p1, p2 = (run_dir / f"part-{c:06d}" for c in range(3))
    a0 = next(p0.glob("*.npy"))
    a0.write_bytes(a0.read_bytes()[:-8])                        # truncated
    a1 = next(p1.glob("*.npy"))
    data = bytearray(a1.read_bytes())
    data[-1] ^= 0xFF                                            # corrupt (the store's CRC-32)
    a1.write_bytes(bytes(data))
    store.save(p2, runner.PART_FORMAT, 1, arrays={"x": np.zeros(1), "off": np.zeros(8, np.int64)},
               meta={"start": 0, "stop": 7})                    # another range
    calls = []
    _stage, info = _run(out, calls=calls)
    assert (info.chunks_resumed, info.chunks_computed, info.parts_redone) == (1, 7, 3)
    assert (0, 7) in calls and (7, 14) in calls and (14, 21) in calls and (21, 28) not in calls
    assert out.read_bytes() == reference[0]


def test_stale_temporary_files_of_a_killed_run_are_removed(tmp_path, reference):
    out = tmp_path / "out.jsonl"
    with pytest.raises(RuntimeError):
        _run(out, fail_at=7)
    run_dir = pipelines.parts_dir(out)
    stale = [run_dir / ".part-000003.x1.tmp", tmp_path / ".out.jsonl.x2.tmp",
             tmp_path / ".out.jsonl.meta.json.x3.tmp"]
    for p in stale:
        p.write_bytes(b"half")
    (run_dir / ".context.x4.tmp").mkdir()
    other = tmp_path / ".other.jsonl.x5.tmp"  # not ours: kept
    other.write_bytes(b"x")
    _run(out)
    assert not any(p.exists() for p in stale) and not (run_dir / ".context.x4.tmp").exists()
    assert other.exists() and out.read_bytes() == reference[0]


def test_bad_arguments(tmp_path):
    stage = ToyStage(VALUES, tmp_path / "o.jsonl")
    with pytest.raises(ValueError, match="chunk_size must be"):
        pipelines.run(stage, tmp_path / "o.jsonl", chunk_size=0)
    with pytest.raises(TypeError, match="stage must be"):
        pipelines.run(object(), tmp_path / "o.jsonl")
    with pytest.raises(ValueError, match="executor must be 'local' or 'ray'"):
        pipelines.make_executor("dask")
    with pytest.raises(ValueError, match="ray_address"):
        pipelines.make_executor("local", ray_address="auto")
    with pytest.raises(ValueError, match="workers must be"):
        pipelines.LocalExecutor(0)
    with pytest.raises(ValueError, match="actors must be"):
        pipelines.RayExecutor(actors=0)


def test_executor_arguments(monkeypatch):
    from pysynth.pipelines import executors

    # the address is checked before any work (an unreachable head fails in seconds): no head here
    monkeypatch.setattr(executors, "check_reachable", lambda address, timeout=0: None)
    p = argparse.ArgumentParser()
    p.add_argument("--workers", type=int, default=1)
    pipelines.add_executor_arguments(p)
    ex = pipelines.executor_from_args(p.parse_args(["--workers", "2"]))
    assert isinstance(ex, pipelines.LocalExecutor) and ex.workers == 2
    ex = pipelines.executor_from_args(p.parse_args(["--executor", "ray", "--ray-address", "ray://h:10001"]))
    assert isinstance(ex, pipelines.RayExecutor) and ex.address == "ray://h:10001" and ex.num_cpus == 0.5
    with pytest.raises(ValueError, match="--ray-address needs --executor ray"):
        pipelines.executor_from_args(p.parse_args(["--ray-address", "auto"]))
    with pytest.raises(SystemExit):
        p.parse_args(["--executor", "dask"])


def test_progress_lines_and_bar(capsys, monkeypatch):
    from pysynth.pipelines.progress import Progress

    bar = Progress(10, True, "toy", initial=2, every=3600, unit="questions")
    bar.update(3)   # the first chunk is printed
    bar.update(1)   # throttled
    bar.update(4)   # the last one is always printed
    bar.close()
    err = capsys.readouterr().err.splitlines()
    assert len(err) == 2 and err[0].startswith("[toy] 5/10 questions (50.0%)")
    assert err[1].startswith("[toy] 10/10 questions (100.0%)") and "q/s" in err[1] and "ETA 00:00:00" in err[1]
    pytest.importorskip("tqdm")
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True, raising=False)
    bar = Progress(10, True, "toy")
    assert bar.bar is not None
    bar.update(10)
    bar.close()
    assert "100%" in capsys.readouterr().err


def _env():
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(HERE), env.get("PYTHONPATH", "")])
    return env


def test_process_death_at_chunk_boundaries_then_resume(tmp_path, reference):
    out = tmp_path / "out.jsonl"
    for stop in (1, 4):
        p = subprocess.run([sys.executable, str(HERE / "_toy_stage.py"), str(out), "50", "7", "0", str(stop)],
                           env=_env(), capture_output=True, text=True, timeout=120)
        assert p.returncode == 75, p.stderr
        assert len(list(pipelines.parts_dir(out).glob("part-*"))) == stop and not out.exists()
    _run(out)
    assert out.read_bytes() == reference[0]


def test_sigkill_mid_run_then_rerun_is_byte_identical(tmp_path, reference):
    """SIGKILL while chunks are being computed (and parts written), then rerun."""
    out = tmp_path / "out.jsonl"
    cmd = [sys.executable, str(HERE / "_toy_stage.py"), str(out), "50", "7", "0.2"]
    p = subprocess.Popen(cmd, env=_env())
    run_dir = pipelines.parts_dir(out)
    deadline = time.monotonic() + 120
    while not (run_dir / "part-000002").exists() and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    p.send_signal(signal.SIGKILL)
    p.wait()
    assert not out.exists()
    subprocess.run(cmd[:-1] + ["0"], env=_env(), check=True, timeout=120)
    assert out.read_bytes() == reference[0]
    assert out.with_name("out.jsonl.meta.json").read_bytes() == reference[1]
    assert not run_dir.exists() and not list(tmp_path.glob(".*.tmp"))


def test_importing_the_pipelines_imports_neither_ray_nor_tqdm():
    code = ("import sys, pysynth, pysynth.pipelines, pysynth.k2q.synthesize, pysynth.cli.k2q; "
            "print(sorted(m for m in ('ray', 'tqdm', 'torch') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], env=_env(), capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == "[]"


def test_chunks_ahead_overlap_keeps_order_and_bytes(tmp_path, reference):
    # a kernel with chunks_ahead runs the next chunk in a thread beside the current one (the
    # threads split between them): the same bytes, parts in order, each chunk once; a failure
    # still stops the run, and what finished before it is kept for the resume
    for w, ahead in ((2, 1), (2, 3), (1, 1), (3, 1)):
        out = tmp_path / f"o{w}_{ahead}.jsonl"
        calls = []
        stage = ToyStage(VALUES, out, calls=calls, sleep=0.002)
        stage.kernel.chunks_ahead = ahead
        seen = []
        orig = stage.kernel.run_chunk
        stage.kernel.run_chunk = lambda v, a, b, workers=1: (seen.append(workers), orig(v, a, b, workers))[1]
        pipelines.run(stage, out, chunk_size=5, executor=pipelines.LocalExecutor(w), progress=False)
        assert (out.read_bytes(), out.with_name(out.name + ".meta.json").read_bytes()) == reference
        assert sorted(calls) == [(a, min(a + 5, 50)) for a in range(0, 50, 5)]
        assert set(seen) == ({1} if w <= 2 else {w // 2 if ahead == 1 else 1})
    out = tmp_path / "fail.jsonl"
    stage = ToyStage(VALUES, out, fail_at=21)
    stage.kernel.chunks_ahead = 1
    with pytest.raises(RuntimeError, match="toy failure"):
        pipelines.run(stage, out, chunk_size=7, executor=pipelines.LocalExecutor(2), progress=False)
    assert {"part-000000", "part-000001", "part-000002"} <= {p.name for p in pipelines.parts_dir(out).glob("part-*")}
