"""The Ray executor gives the bytes of the local one (toy stage and K2Q), also when a run
started locally is finished on Ray.  Local Ray with 2 CPUs; skipped without the [ray] extra."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

ray = pytest.importorskip("ray")

import _toy_rows  # noqa: E402
import _toy_stage  # noqa: E402
from _toy_rows import ToyRowStage, toy_score  # noqa: E402
from _toy_stage import ToyStage  # noqa: E402

from pysynth import pipelines  # noqa: E402
from pysynth.data import k2q_demo  # noqa: E402
from pysynth.k2q.synthesize import SynthesisConfig, synthesize  # noqa: E402

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
SMALL = k2q_demo()[:1200]
CFG = SynthesisConfig(m=8)


@pytest.fixture(scope="module")
def local_ray():
    """One local Ray (2 CPUs, as CI) for the module; the toy stage travels by value."""
    if ray.is_initialized():
        ray.shutdown()
    ray.init(num_cpus=2, include_dashboard=False, logging_level="ERROR", log_to_driver=False)
    ray.cloudpickle.register_pickle_by_value(_toy_stage)
    ray.cloudpickle.register_pickle_by_value(_toy_rows)
    yield
    ray.shutdown()


def test_toy_stage_on_ray_equals_local(tmp_path, local_ray):
    values = np.arange(40) * 5 % 9
    ref, got = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    pipelines.run(ToyStage(values, ref), ref, chunk_size=40, progress=False)
    info = pipelines.run(ToyStage(values, got), got, chunk_size=3, progress=False,
                         executor=pipelines.RayExecutor(actors=2))
    assert info.chunks_computed == 14
    assert got.read_bytes() == ref.read_bytes()
    assert ray.is_initialized()  # a Ray the executor did not start is left running


def test_a_failing_chunk_on_ray_raises_and_keeps_the_finished_parts(tmp_path, local_ray):
    values = np.arange(30) * 5 % 9
    out = tmp_path / "out.jsonl"
    with pytest.raises(RuntimeError, match="toy failure"):
        pipelines.run(ToyStage(values, out, fail_at=12), out, chunk_size=3, progress=False,
                      executor=pipelines.RayExecutor(actors=1, max_in_flight=1))
    assert len(list(pipelines.parts_dir(out).glob("part-*"))) == 4  # chunks 0-3 landed in order
    info = pipelines.run(ToyStage(values, out), out, chunk_size=3, progress=False)
    assert (info.chunks_resumed, info.chunks_computed) == (4, 6)
    ref = tmp_path / "ref.jsonl"
    pipelines.run(ToyStage(values, ref), ref, chunk_size=30, progress=False)
    assert out.read_bytes() == ref.read_bytes()


def test_k2q_ray_is_byte_identical_to_local_and_resumes_a_local_run(tmp_path, local_ray):
    ref = tmp_path / "local.jsonl"
    synthesize(SMALL, ref, config=CFG, chunk_size=1200, progress=False)
    out = tmp_path / "ray.jsonl"
    synthesize(SMALL, out, config=CFG, chunk_size=250, workers=2, progress=False, executor="ray")
    assert out.read_bytes() == ref.read_bytes()
    assert (tmp_path / "ray.jsonl.meta.json").read_bytes() == (tmp_path / "local.jsonl.meta.json").read_bytes()
    # a local run that died after 2 chunks, finished on Ray: the same bytes
    out2 = tmp_path / "mixed.jsonl"
    (tmp_path / "in.json").write_text(json.dumps(SMALL))
    code = ("import json; from pysynth.k2q.synthesize import synthesize, SynthesisConfig; "
            f"synthesize(json.load(open({str(tmp_path / 'in.json')!r})), {str(out2)!r}, config=SynthesisConfig(m=8), "
            "chunk_size=250, progress=False, _stop_after_chunks=2)")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    p = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
    assert p.returncode == 75, p.stderr
    synthesize(SMALL, out2, config=CFG, chunk_size=250, progress=False,
               executor=pipelines.RayExecutor(actors=2, threads=1))
    assert out2.read_bytes() == ref.read_bytes()


def test_cli_executor_ray_starts_and_stops_its_own_ray(tmp_path):
    """``pysynth k2q synthesize --executor ray`` in a fresh process (its own local Ray)."""
    inp = tmp_path / "q.jsonl"
    inp.write_text("".join(json.dumps(r) + "\n" for r in SMALL[:400]))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    outs = {}
    for ex in ("local", "ray"):
        out = tmp_path / f"{ex}.jsonl"
        subprocess.run([sys.executable, "-m", "pysynth", "k2q", "synthesize", "--in", str(inp), "--out", str(out),
                        "--m", "5", "--chunk-size", "100", "--quiet", "--executor", ex],
                       env=env, check=True, timeout=180, capture_output=True)
        outs[ex] = (out.read_bytes(), out.with_name(out.name + ".meta.json").read_bytes())
    assert outs["ray"] == outs["local"]


def test_paraphrase_on_ray_equals_local(tmp_path, local_ray):
    """pysynth paraphrase (Granstedt 2017) on two Ray actors: the bytes of a local run."""
    from pysynth.paraphrase.jobs import run
    from pysynth.paraphrase.pipeline import ParaphraseConfig

    qs = ["what color is the keyboard?", "how many animals can be seen?", "is this a grocery store?",
          "what shape is the bench seat?", "are these items for sale?", "who is holding the umbrella?"]
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps({"question": q, "label": i}) + "\n" for i, q in enumerate(qs * 2)))
    cfg = ParaphraseConfig(pivot="keywords", beams=4, groups=2)
    ref, got = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    run(inp, ref, cfg, chunk_size=12, progress=False)
    s = run(inp, got, cfg, chunk_size=5, progress=False, executor=pipelines.RayExecutor(actors=2))
    assert got.read_bytes() == ref.read_bytes() and s["questions"] == 12


def test_qagen_on_ray_equals_local(tmp_path, local_ray):
    """pysynth qagen generate (Alberti et al. 2019) with the shipped models on two Ray actors."""
    from pysynth.data import qagen_sample_path
    from pysynth.qagen.jobs import run
    from pysynth.qagen.pipeline import QAGenConfig

    ref, got = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    cfg = QAGenConfig(neg_fraction=0.5)
    a = run(qagen_sample_path(), ref, cfg, keep_discarded=True, chunk_size=16, threads=1, progress=False)
    b = run(qagen_sample_path(), got, cfg, keep_discarded=True, chunk_size=5, threads=1, progress=False,
            executor=pipelines.RayExecutor(actors=2))
    assert got.read_bytes() == ref.read_bytes() and a["contexts"] == b["contexts"] == 16


# ------------------------------------------------------------------------------ the row stage (issue 25)

def test_toy_row_stage_with_a_filter_on_ray_equals_local(tmp_path, local_ray):
    rows = [{"id": i, "text": "abcdefghijkl"[: 1 + i % 12]} for i in range(30)]
    f = (pipelines.ScoreFilter("wellformed", 0.5, toy_score),)
    ref, got = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    a = ToyRowStage(rows, ref, field="cands", filters=f).run(chunk_size=30, progress=False)
    b = ToyRowStage(rows, got, field="cands", filters=f).run(chunk_size=4, progress=False,
                                                              executor=pipelines.RayExecutor(actors=2))
    assert got.read_bytes() == ref.read_bytes() and a["dropped"] == b["dropped"] > 0
    assert pipelines.meta_path(got).read_bytes() == pipelines.meta_path(ref).read_bytes()


def test_dup_pairs_on_ray_equals_local(tmp_path, local_ray):
    """pysynth dup pairs (Rücklé et al. 2019) WS-TB + DQG with the shipped generator on two Ray actors."""
    sys.path.insert(0, str(ROOT / "tests" / "dup"))
    from test_pairs import write_dump

    from pysynth.dup.pairs import make_pairs

    d = write_dump(tmp_path)
    ref, got = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    a = make_pairs([d], ref, "both", beam=2, chunk_size=100, progress=False)
    b = make_pairs([d], got, "both", beam=2, chunk_size=2, progress=False, executor=pipelines.RayExecutor(actors=2))
    assert got.read_bytes() == ref.read_bytes() and a["rows"] == b["rows"] > 0


def test_mqr_rewrite_on_ray_equals_local(tmp_path, local_ray):
    """pysynth mqr rewrite (Chu et al. 2020) with --min-wellformed on two Ray actors."""
    pytest.importorskip("onnxruntime")
    from pysynth.mqr.jobs import rewrite_file

    inp = tmp_path / "q.jsonl"
    inp.write_text("".join(json.dumps({"question": q, "n": i}) + "\n" for i, q in enumerate(MQR_QS)))
    ref, got = tmp_path / "local.jsonl", tmp_path / "ray.jsonl"
    a = rewrite_file(inp, ref, min_wellformed=0.5, chunk_size=100, progress=False)
    b = rewrite_file(inp, got, min_wellformed=0.5, chunk_size=2, progress=False, executor="ray")
    assert got.read_bytes() == ref.read_bytes() and a["questions"] == b["questions"] == len(MQR_QS)


MQR_QS = ["install ubuntu on usb stick", "Spaghetti carbonara, mixing", "python list sort reverse",
          "zzqxv qqzzv", "capital of france"]


def test_cli_mqr_rewrite_executor_ray(tmp_path):
    """``pysynth mqr rewrite --executor ray`` in a fresh process (its own local Ray): the local bytes."""
    pytest.importorskip("onnxruntime")
    inp = tmp_path / "q.txt"
    inp.write_text("".join(q + "\n" for q in MQR_QS))
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(ROOT), os.environ.get("PYTHONPATH", "")]))
    outs = {}
    for ex in ("local", "ray"):
        out = tmp_path / f"{ex}.txt"
        subprocess.run([sys.executable, "-m", "pysynth", "mqr", "rewrite", "--in", str(inp), "--out", str(out),
                        "--chunk-size", "2", "--executor", ex], env=env, check=True, timeout=180, capture_output=True)
        outs[ex] = (out.read_bytes(), out.with_name(out.name + ".meta.json").read_bytes())
    assert outs["ray"] == outs["local"]
