"""The run lock (issue 28): a finished run leaves no ``.OUT.parts.lock`` beside its output; a run
that locked a file a finished run just removed locks the path again."""
from __future__ import annotations

import fcntl
import os

import numpy as np
import pytest
from _toy_stage import ToyStage

from pysynth import pipelines
from pysynth.pipelines import runner

VALUES = np.arange(30) * 7 % 11


def _run(out, **kw):
    stage = ToyStage(VALUES, out, **{k: kw.pop(k) for k in ("fail_at",) if k in kw})
    return pipelines.run(stage, out, chunk_size=7, progress=False, **kw)


def test_no_lock_file_after_a_finished_run(tmp_path):
    out = tmp_path / "out.jsonl"
    lock = tmp_path / ".out.jsonl.parts.lock"
    with pytest.raises(RuntimeError, match="toy failure"):
        _run(out, fail_at=14)
    assert pipelines.parts_dir(out).is_dir()  # resumable parts (and their lock file) stay
    _run(out)
    assert out.exists() and not lock.exists() and sorted(p.name for p in tmp_path.iterdir()) == [
        "out.jsonl", "out.jsonl.meta.json"]
    _run(tmp_path / "kept.jsonl", keep_parts=True)  # parts kept: the lock beside them too
    assert (tmp_path / ".kept.jsonl.parts.lock").exists()


def test_a_lock_on_a_removed_file_is_taken_again(tmp_path):
    run_dir = tmp_path / "x.parts"
    path = tmp_path / ".x.parts.lock"
    opened = []
    real_open = os.open

    def open_then_lose_the_race(p, *a, **kw):
        fd = real_open(p, *a, **kw)
        if str(p) == str(path) and not opened:  # the first file we open is removed by a finishing run
            os.unlink(p)
        opened.append(fd)
        return fd

    with pytest.MonkeyPatch.context() as m:
        m.setattr(runner.os, "open", open_then_lose_the_race)
        with runner._exclusive(run_dir):
            assert len(opened) == 2 and path.exists()
            other = real_open(path, os.O_RDWR)
            try:
                with pytest.raises(BlockingIOError):  # the path's file is the one held
                    fcntl.flock(other, fcntl.LOCK_EX | fcntl.LOCK_NB)
            finally:
                os.close(other)
    assert not path.exists()
