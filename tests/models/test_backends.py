"""Every decoding backend against the reference decoder (one parity helper), the backend
protocol, and seeded, reproducible top-k / top-p sampling."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from pysynth.decoding import search as S  # noqa: E402
from pysynth.decoding.backends import TorchBackend  # noqa: E402
from pysynth.decoding.protocol import DecodingBackend, SpecialIds  # noqa: E402
from pysynth.models.batching import make_source_batch  # noqa: E402

from ._util import assert_same_hypotheses, decode_parity, random_sources, small_model, small_vocab  # noqa: E402

ARCHS = ("ednet", "attnet", "copynet")
SETTINGS = {"greedy": dict(max_len=8), "beam": dict(beam=4, max_len=8, length_penalty="gnmt"),
            "diverse": dict(beam=6, groups=3, diversity=0.7, max_len=8)}


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    """A small model per architecture and its ONNX export (TorchScript exporter where it can: fast)."""
    pytest.importorskip("onnxruntime")
    pytest.importorskip("onnx")
    from pysynth.export.onnx import export_onnx

    out = {}
    for arch in ARCHS:
        m = small_model(arch, seed=31, eos_bias=2.5, copy_boost=3.0)
        if arch == "copynet":  # the TorchScript exporter has no logaddexp
            pytest.importorskip("onnxscript")
        d = export_onnx((m, small_vocab()), tmp_path_factory.mktemp(arch) / "onnx", dynamo=arch == "copynet")
        out[arch] = (m, d)
    return out


def _ort(d, **kw):
    from pysynth.decoding.ort import OrtBackend

    return OrtBackend(d, device="cpu", **kw)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("method", ["greedy", "beam", "diverse"])
def test_torch_onnxruntime_and_reference_agree(exported, arch, method):
    m, d = exported[arch]
    batch = make_source_batch(small_vocab(), random_sources(32, n=6, oov_rate=0.4), copy=m.has_copy)
    backends = {"torch": TorchBackend(m), "torch-full-rows": TorchBackend(m, topk=False),
                "onnxruntime-parts": _ort(d, parts=True), "onnxruntime-topk": _ort(d, parts=False)}
    decode_parity(backends, method, batch, model=m, tol=1e-4, **SETTINGS[method])


def test_backends_satisfy_the_protocol(exported):
    from pysynth.decoding.protocol import check_backend

    m, d = exported["copynet"]
    for be in (TorchBackend(m), _ort(d)):
        assert isinstance(be, DecodingBackend)
        assert check_backend(be) == SpecialIds(0, 1, 2, 3) == small_vocab().specials
        assert be.copy
    with pytest.raises(TypeError, match="not a decoding backend"):
        S.greedy_search(object(), make_source_batch(small_vocab(), [["w1"]], copy=False))


def test_special_ids_come_from_the_backend():
    """A model whose vocabulary puts </s> elsewhere: the searches follow backend.specials."""
    m = small_model("attnet", seed=33, eos_bias=0.0)
    batch = make_source_batch(small_vocab(), random_sources(33, n=4), copy=False)
    with torch.no_grad():
        m.out.bias[20] += 6.0  # id 20 is likely: as </s> it ends hypotheses at once
    moved = SpecialIds(pad=0, unk=1, bos=2, eos=20)
    out = S.greedy_search(TorchBackend(m, specials=moved), batch, max_len=6)
    assert all(h[0].finished and 20 not in h[0].tokens for h in out)
    plain = S.greedy_search(TorchBackend(m), batch, max_len=6)
    assert any(20 in h[0].tokens for h in plain)
    with pytest.raises(ValueError, match="specials.eos"):
        TorchBackend(m, specials=SpecialIds(0, 1, 2, -1))


# ------------------------------------------------------------------------------------- sampling

def _samples(res):
    return [[(h.tokens, h.finished) for h in hyps] for hyps in res]


@pytest.mark.parametrize("arch", ["attnet", "copynet"])
def test_sampling_is_seeded_and_reproducible(arch):
    m = small_model(arch, seed=34, eos_bias=1.5, scale=1.0)
    batch = make_source_batch(small_vocab(), random_sources(34, n=5, oov_rate=0.3), copy=m.has_copy)
    be = TorchBackend(m)
    kw = dict(n=4, top_k=8, top_p=0.9, temperature=1.2, max_len=8)
    a = S.sample_search(be, batch, seed=7, **kw)
    assert _samples(a) == _samples(S.sample_search(be, batch, seed=7, **kw))
    assert _samples(a) != _samples(S.sample_search(be, batch, seed=8, **kw))
    assert all(len(h) == 4 for h in a)
    # per-source seeds: a source's samples do not depend on the rest of the batch
    seeds = [11, 12, 13, 14, 15]
    full = S.sample_search(be, batch, seed=seeds, **kw)
    part = S.sample_search(be, batch.take(np.array([3, 1])), seed=[14, 12], **kw)
    assert _samples(part) == [_samples(full)[3], _samples(full)[1]]
    # the thread count does not change the samples
    old = torch.get_num_threads()
    try:
        torch.set_num_threads(2)
        assert _samples(S.sample_search(be, batch, seed=7, **kw)) == _samples(a)
    finally:
        torch.set_num_threads(old)


def test_sampling_limits_are_greedy():
    """top_k=1 and a tiny top_p leave one candidate: the greedy hypothesis."""
    m = small_model("copynet", seed=35, eos_bias=2.0)
    batch = make_source_batch(small_vocab(), random_sources(35, n=5), copy=True)
    be = TorchBackend(m)
    greedy = [[(h[0].tokens, h[0].finished)] for h in S.greedy_search(be, batch, max_len=7)]
    for kw in (dict(top_k=1), dict(top_p=1e-9), dict(temperature=1e-4)):
        got = S.sample_search(be, batch, n=1, seed=3, max_len=7, **kw)
        assert _samples(got) == greedy, kw


def test_sampling_draws_from_the_distribution():
    """Over many seeds, the first sampled token's frequencies follow the model's probabilities."""
    m = small_model("attnet", seed=36, scale=0.5)
    batch = make_source_batch(small_vocab(), [["w1", "w2"]], copy=False)
    be = TorchBackend(m)
    st, h = be.encode(batch)
    logp, _ = be.step(st, np.array([2]), h)
    p = np.exp(logp[0].astype(np.float64))
    p[[0, 1, 2]] = 0.0  # pad, unk, bos are never generated
    p /= p.sum()
    res = S.sample_search(be, batch, n=4000, seed=0, max_len=1)
    first = np.bincount([hyp.tokens[0] if hyp.tokens else 3 for hyp in res[0]], minlength=len(p))
    assert np.abs(first / 4000 - p).max() < 0.03


def test_onnxruntime_samples_like_torch_at_any_thread_count(exported):
    m, d = exported["copynet"]
    batch = make_source_batch(small_vocab(), random_sources(37, n=5, oov_rate=0.4), copy=True)
    kw = dict(n=3, top_k=6, top_p=0.95, seed=5, max_len=8)
    results = {"torch": S.sample_search(TorchBackend(m), batch, **kw)}
    for threads in (1, 2):
        results[f"onnxruntime-{threads}"] = S.sample_search(_ort(d, threads=threads), batch, **kw)
    assert_same_hypotheses(results, tol=1e-4)


def test_generator_sampling_ignores_batching():
    from pysynth.models.generate import Generator

    m = small_model("copynet", seed=38, eos_bias=1.0, scale=1.0)
    g = Generator(TorchBackend(m), small_vocab(), True)
    texts = [" ".join(s) for s in random_sources(38, n=6)]
    a = g.generate(texts, method="sample", n=3, top_k=10, seed=4, batch_size=6, dedupe=False)
    b = g.generate(texts, method="sample", n=3, top_k=10, seed=4, batch_size=1, dedupe=False)
    assert [x.texts for x in a] == [x.texts for x in b]
    with pytest.raises(ValueError, match="^top_p:"):
        g.generate(texts, method="sample", top_p=0.0)
    with pytest.raises(ValueError, match="^seed:"):
        S.sample_search(TorchBackend(m), make_source_batch(small_vocab(), [["w1"]], True), seed=[1, 2])
