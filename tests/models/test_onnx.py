"""ONNX export + onnxruntime backend: same tokens as torch; zero probabilities stay finite."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnx")
ort = pytest.importorskip("onnxruntime")

from pysynth.decoding import search as S  # noqa: E402
from pysynth.decoding.backends import TorchBackend  # noqa: E402
from pysynth.decoding.ort import OrtBackend, choose_providers  # noqa: E402
from pysynth.export.onnx import export_onnx  # noqa: E402
from pysynth.models.batching import make_source_batch  # noqa: E402
from pysynth.models.seq2seq import LOG_EPS, LOG_FLOOR  # noqa: E402

from ._util import assert_same_hypotheses, random_sources, small_model, small_vocab  # noqa: E402

ZERO_TOKEN = 10  # its generate score is pushed so low that its probability is exactly 0.0


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """ednet/attnet via the TorchScript exporter (fast); copynet via dynamo (the default path)."""
    out = {}
    for arch in ("ednet", "attnet", "copynet"):
        m = small_model(arch, seed=11, eos_bias=2.0)
        if arch == "copynet":
            with torch.no_grad():
                m.out.bias[ZERO_TOKEN] = -1e4
        d = tmp_path_factory.mktemp(arch)
        dynamo = arch == "copynet"
        if dynamo:
            pytest.importorskip("onnxscript")
        export_onnx((m, small_vocab()), d, dynamo=dynamo)
        out[arch] = (m, OrtBackend(d, device="cpu", parts=True))
    return out


def _topk_graph(ob):
    """The same folder through the TopK of step.onnx (the path before step_parts.onnx)."""
    return OrtBackend(ob.path, device="cpu", parts=False)


@pytest.mark.parametrize("arch", ["ednet", "attnet", "copynet"])
@pytest.mark.parametrize("method", ["greedy", "beam", "diverse"])
@pytest.mark.parametrize("path", ["parts", "topk"])
def test_onnxruntime_matches_torch(exported, arch, method, path):
    m, ob = exported[arch]
    if path == "topk":
        ob = _topk_graph(ob)
    assert ob.step_path == path
    tb = TorchBackend(m)
    batch = make_source_batch(small_vocab(), random_sources(21, n=9, oov_rate=0.4), copy=m.has_copy)
    if method == "greedy":
        run = lambda be: S.greedy_search(be, batch, max_len=9)  # noqa: E731
    elif method == "beam":
        run = lambda be: S.beam_search(be, batch, beam=4, max_len=9, length_penalty="gnmt")  # noqa: E731
    else:
        run = lambda be: S.diverse_beam_search(be, batch, beam=6, groups=3, diversity=0.5, max_len=9)  # noqa: E731
    assert_same_hypotheses({"torch": run(tb), "onnxruntime": run(ob)}, tol=1e-4)


def test_zero_probabilities_stay_finite(exported):
    """The epsilon-folding trap: log(p + 1e-12) -> log(p) would give -inf in ONNX."""
    m, ob = exported["copynet"]
    # row 0 has no OOV word but the batch has 3 extended columns: those get probability 0.0
    srcs = [["w1", "w2"], ["oova", "w3", "oovb", "oovc"], ["w5"]]
    batch = make_source_batch(small_vocab(), srcs, copy=True)
    assert batch.n_ext == 3
    st_o, h_o = ob.encode(batch)
    st_t, h_t = TorchBackend(m).encode(batch)
    tokens = np.array([2, 2, 2], dtype=np.int64)
    lo, _ = ob.step(st_o, tokens, h_o)
    lt, _ = TorchBackend(m).step(st_t, tokens, h_t)
    assert np.isfinite(lo).all(), "onnxruntime produced -inf/nan for zero probabilities"
    np.testing.assert_allclose(lo, lt, rtol=1e-5, atol=1e-5)
    floor = np.float32(np.log(np.float32(LOG_EPS)))
    assert lo[0, m.vocab_size:].max() == pytest.approx(floor, abs=1e-4)  # padded extended columns
    assert lo[:, ZERO_TOKEN].max() == pytest.approx(floor, abs=1e-4)  # exp(-1e4) == 0.0


def test_dynamic_axes(exported):
    m, ob = exported["copynet"]
    for n, L in ((1, 1), (5, 12)):
        srcs = [["w1"] * L for _ in range(n)]
        batch = make_source_batch(small_vocab(), srcs, copy=True)
        st, h = ob.encode(batch)
        lp, h2 = ob.step(st, np.full(n, 2, dtype=np.int64), h)
        assert lp.shape == (n, m.vocab_size) and h2.shape == h.shape


@pytest.mark.parametrize("arch", ["ednet", "attnet", "copynet"])
def test_step_parts_give_the_step_rows_bit_for_bit(exported, arch):
    """step_parts.onnx + the float32 epilogue == step.onnx's logp exactly (zero probabilities,
    padded extended columns and repeated source words included), and the candidates of the
    parts path == the TopK of step.onnx (values and ids)."""
    m, ob = exported[arch]
    srcs = [["w1", "w2", "w1"], ["oova", "w3", "oovb", "oovc", "oova"], ["w5"], ["w7", "oovb"]]
    batch = make_source_batch(small_vocab(), srcs, copy=m.has_copy)
    st, h = ob.encode(batch)
    rng = np.random.default_rng(0)
    V = m.vocab_size
    vx = V + (batch.n_ext if m.has_copy else 0)
    tb = _topk_graph(ob)
    for step in range(4):
        tokens = rng.integers(2, vx, len(srcs)).astype(np.int64)
        logp, h_full = ob.step(st, tokens, h)
        p = ob.step_parts(st, tokens, h)
        np.testing.assert_array_equal(p["h_new"], h_full)
        if m.has_copy:
            floor = np.float32(LOG_FLOOR)
            rows = np.maximum(p["ls"] + p["shift"], floor)
            rows = np.concatenate([rows, np.full((len(srcs), batch.n_ext), floor, np.float32)], 1)
            for j in range(st["src_ext"].shape[1]):
                rows[np.arange(len(srcs)), st["src_ext"][:, j]] = p["touched"][:, j]
        else:
            rows = p["ls"]
        np.testing.assert_array_equal(rows, logp)
        for k in (1, 7, vx):
            va, ia, _ = ob.step_topk(st, tokens, h, k)
            vb, ib, _ = tb.step_topk(st, tokens, h, k)
            np.testing.assert_array_equal(ia, ib)
            np.testing.assert_array_equal(va, vb)
        h = h_full


def test_checker_and_providers(exported):
    import onnx

    m, ob = exported["copynet"]
    for name in ("encoder.onnx", "step.onnx", "step_parts.onnx"):
        onnx.checker.check_model(onnx.load(str(ob.path / name)), full_check=True)
    assert set(ob.providers) <= set(ort.get_available_providers())
    assert "CPUExecutionProvider" in choose_providers("cpu")
    with pytest.raises(ValueError, match="device"):
        choose_providers("tpu")
    if "CUDAExecutionProvider" not in ort.get_available_providers():
        with pytest.raises(ValueError, match="device"):
            choose_providers("cuda")


def test_step_parts_with_io_binding(exported, monkeypatch):
    """Large steps bind their own ls buffer: same arrays as a plain run (and the buffer grows)."""
    import pysynth.decoding.ort as O

    m, ob = exported["copynet"]
    st, h = ob.encode(make_source_batch(small_vocab(), [["w1", "oova", "w2"], ["w3"]] * 3, copy=True))
    tokens = np.array([2, 5, 44, 7, 9, 2], dtype=np.int64)
    plain = ob.step_parts(st, tokens, h)
    monkeypatch.setattr(O, "_IOBIND_MIN", 0)
    for rows in (2, 6, 6):  # a small binding first, then one that needs a larger buffer
        sel = np.arange(rows)
        bound = ob.step_parts(ob.take(st, sel), tokens[:rows], ob.take_h(h, sel))
        assert set(bound) == set(plain)
        for name in plain:
            np.testing.assert_array_equal(bound[name], plain[name][:rows])


def test_export_is_a_versioned_store(exported, tmp_path):
    """The export is a pysynth.model.onnx store (special ids and log floor in its meta);
    an unversioned folder from an older pysynth is refused with the command that fixes it."""
    import shutil

    from pysynth import store
    from pysynth.decoding.ort import ONNX_FORMAT

    m, ob = exported["copynet"]
    st = store.load(ob.path, ONNX_FORMAT, (1,))
    assert st.meta["specials"] == list(small_vocab().specials) and st.meta["log_floor"] == LOG_FLOOR
    assert {"encoder.onnx", "step.onnx", "step_parts.onnx", "config.json", "vocab.json"} == set(st.files)
    old = tmp_path / "old"
    old.mkdir()
    for name in ("encoder.onnx", "step.onnx"):
        shutil.copy(ob.path / name, old / name)
    with pytest.raises(ValueError, match="pysynth export onnx"):
        OrtBackend(old)
    with pytest.raises(FileNotFoundError, match="onnx_dir"):
        OrtBackend(tmp_path / "missing")
    bad = tmp_path / "bad"
    shutil.copytree(ob.path, bad)
    data = bytearray((bad / "step.onnx").read_bytes())
    data[len(data) // 2] ^= 0xFF
    (bad / "step.onnx").write_bytes(bytes(data))
    with pytest.raises(ValueError, match="corrupt"):
        OrtBackend(bad)
