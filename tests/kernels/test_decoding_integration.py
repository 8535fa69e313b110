"""Decoding through the fused kernels (``TorchBackend(kernels="triton")``) == the eager torch path.

A tiny random CopyNet (48 ids, hidden sizes 6-10) decodes a batch of 2 sources with greedy,
beam (3) and diverse beam search (4 beams, 2 groups) twice: with ``kernels="torch"`` (the
model's eager step, numpy selection) and with ``kernels="triton"`` (the fused CopyNet step,
and for diverse beam search the device-side group selection), here on CPU tensors under the
Triton interpreter (``TRITON_INTERPRET=1``, set by this folder's conftest before triton is
imported; ``TRITON_INTERPRET=0`` on a CUDA machine runs them on the GPU). Hypotheses (tokens, finished flag, group) must be identical; scores and
log-probabilities agree within ``TOL`` = 2e-5: both paths are float32 but sum in different
orders (largest difference seen: 2e-6, over at most 12 steps), and the kernel's log p is exact
where the eager model clamps at log(1e-12), which the tiny model never reaches among its
candidates.

Interpreter cost: the copy step launches 2 x rows + 1 programs per step (rows = sources x
beams, vocabulary below one 128-column tile), the diverse step rows + sources: 30 programs
for the greedy test, 65 for beam, 81 for diverse beam (about 4 s each on a loaded 2-core
machine). The selection logic of the device path (group order, the merge of
``</s>`` candidates) is checked on more cases with the kernels' torch references
(``_ops="torch"``), which need no interpreter.
"""
from __future__ import annotations

import importlib.util
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install '.[gpu]')")

from pysynth.decoding import search as S  # noqa: E402
from pysynth.decoding.backends import TorchBackend, resolve_kernels  # noqa: E402
from pysynth.models.batching import make_source_batch  # noqa: E402

TOL = 2e-5  # absolute, on summed float32 log-probabilities (see the module docstring)
WORDS = [f"w{i}" for i in range(44)]


@pytest.fixture(scope="module", autouse=True)
def checkout_kernels(kernels_pkg):
    """``pysynth.decoding`` imports ``pysynth.kernels``: make that name this checkout's package.

    An editable install of another checkout can map ``pysynth.kernels`` elsewhere (the
    conftest's ``kernels_pkg`` is then the source tree's top-level ``kernels``).
    """
    if kernels_pkg.__name__ == "pysynth.kernels":
        yield
        return
    saved = {k: v for k, v in sys.modules.items()
             if k == "pysynth.kernels" or k.startswith("pysynth.kernels.")}
    for k in saved:
        del sys.modules[k]
    sys.modules["pysynth.kernels"] = kernels_pkg
    yield
    for k in [k for k in sys.modules if k == "pysynth.kernels" or k.startswith("pysynth.kernels.")]:
        del sys.modules[k]
    sys.modules.update(saved)


@pytest.fixture
def torch_ops(monkeypatch):
    """For decodes through the kernel path with the kernels' torch references (``_ops="torch"``,
    no Triton code runs): ``kernels="triton"`` on CPU is accepted only with the interpreter
    variable set, so set it (also on a GPU run with TRITON_INTERPRET=0)."""
    if importlib.util.find_spec("triton") is None:
        pytest.skip("triton is not installed (pip install '.[gpu]')")
    monkeypatch.setenv("TRITON_INTERPRET", "1")


def vocab():
    from pysynth.models.vocab import SPECIALS, Vocab

    return Vocab(list(SPECIALS) + WORDS)


def copynet(seed=0, eos_bias=2.0, copy_boost=3.0, tie=False):
    """A random CopyNet over ``vocab()``; ``eos_bias`` ends hypotheses earlier, ``copy_boost``
    weakens the generate scores so that copying (and extended ids) wins more often."""
    from pysynth.models.config import Seq2SeqConfig
    from pysynth.models.seq2seq import Seq2Seq

    torch.manual_seed(seed)
    cfg = Seq2SeqConfig(arch="copynet", vocab_size=100, emb_dim=8, enc_hidden=6, dec_hidden=10,
                        dropout=0.0, tie_embeddings=tie)
    m = Seq2Seq(cfg, len(WORDS) + 4).eval()
    with torch.no_grad():
        for p in m.parameters():
            p.mul_(3.0)
        W_o, b_o = m.output_layer()
        b_o[m.specials.eos] += eos_bias
        if not tie:
            W_o.div_(copy_boost)
            b_o.div_(copy_boost)
    return m


def sources(seed, n=2, max_len=6, oov_rate=0.4):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        L = int(rng.integers(2, max_len + 1))
        toks = [f"w{j}" if rng.random() > oov_rate else f"oov{j % 3}" for j in rng.integers(0, 44, L)]
        toks[0] = "w1" if all(t.startswith("oov") for t in toks) else toks[0]
        out.append(toks)
    return out


def decode(model, batch, kernels, search, ops="triton", **kw):
    be = TorchBackend(model, kernels=kernels)
    be._ops = ops
    calls = []
    if be.step_diverse is not None:  # count the device-side selections
        inner = be.step_diverse

        def spy(*a, **k):
            calls.append(np.array(a[4]))  # live groups [n, G]
            return inner(*a, **k)

        be.step_diverse = spy
    return search(be, batch, **kw), calls


def compare(got, ref, tol=TOL):
    assert len(got) == len(ref)
    for g_hyps, r_hyps in zip(got, ref):
        assert [(h.tokens, h.finished, h.group) for h in g_hyps] == \
            [(h.tokens, h.finished, h.group) for h in r_hyps]
        for a, b in zip(g_hyps, r_hyps):
            assert abs(a.score - b.score) <= tol and abs(a.logprob - b.logprob) <= tol, (a, b)


def n_copied(results, V):
    return sum(t >= V for hyps in results for h in hyps for t in h.tokens)


# ----------------------------------------------------------------------------- selection


def test_kernels_option(monkeypatch):
    m = copynet()
    monkeypatch.delenv("PYSYNTH_KERNELS_BACKEND", raising=False)
    cpu = torch.device("cpu")
    assert resolve_kernels("auto", cpu) == "torch"  # auto: Triton only on CUDA
    assert resolve_kernels("torch", torch.device("cuda")) == "torch"
    be = TorchBackend(m, kernels="torch")
    assert be.kernels == "torch" and be.step_diverse is None  # numpy selection
    assert TorchBackend(m).kernels == "torch"
    with pytest.raises(ValueError, match="kernels: must be one of"):
        TorchBackend(m, kernels="cuda")
    monkeypatch.setenv("PYSYNTH_KERNELS_BACKEND", "bogus")
    with pytest.raises(ValueError, match="PYSYNTH_KERNELS_BACKEND"):
        TorchBackend(m)
    monkeypatch.setenv("PYSYNTH_KERNELS_BACKEND", "torch")
    assert TorchBackend(m).kernels == "torch"


def test_kernels_triton_on_cpu_needs_the_interpreter(monkeypatch, torch_ops):
    m = copynet()
    monkeypatch.setenv("TRITON_INTERPRET", "0")
    with pytest.raises(ValueError, match="TRITON_INTERPRET=1"):
        TorchBackend(m, kernels="triton")
    monkeypatch.setenv("TRITON_INTERPRET", "1")
    be = TorchBackend(m, kernels="triton")
    assert be.kernels == "triton" and be.step_diverse is not None


def test_generator_kernels_argument():
    from pysynth.models.generate import Generator

    with pytest.raises(ValueError, match="kernels"):
        Generator.load(kernels="fast")
    with pytest.raises(ValueError, match="backend='torch'"):
        Generator.load(backend="onnx", kernels="triton")


# ------------------------------------------------------------ Triton kernels
# CPU tensors under the interpreter; with TRITON_INTERPRET=0 on a CUDA machine the same tests
# decode on the GPU with the compiled kernels.


def test_greedy_through_kernels(device):
    m = copynet(seed=1).to(device)
    batch = make_source_batch(vocab(), sources(1), copy=True)
    ref, _ = decode(m, batch, "torch", S.greedy_search, max_len=6)
    got, _ = decode(m, batch, "triton", S.greedy_search, max_len=6)
    compare(got, ref)


def exercised(results, V):
    """Some hypotheses copy an OOV word (extended id) and some end with </s>."""
    assert n_copied(results, V) > 0, "no copied OOV word: the copy path is not exercised"
    assert any(h.finished for hyps in results for h in hyps), "no hypothesis ended with </s>"


def test_beam_through_kernels(device):
    m = copynet(seed=11, eos_bias=4.0, copy_boost=10.0).to(device)
    batch = make_source_batch(vocab(), sources(11), copy=True)
    kw = dict(beam=3, max_len=5, length_penalty="average")
    ref, _ = decode(m, batch, "torch", S.beam_search, **kw)
    got, _ = decode(m, batch, "triton", S.beam_search, **kw)
    compare(got, ref)
    exercised(ref, m.vocab_size)


def test_diverse_beam_through_kernels(device):
    m = copynet(seed=11, eos_bias=4.0, copy_boost=10.0).to(device)
    batch = make_source_batch(vocab(), sources(11), copy=True)
    kw = dict(beam=4, groups=2, diversity=1.0, max_len=3)
    ref, _ = decode(m, batch, "torch", S.diverse_beam_search, **kw)
    got, calls = decode(m, batch, "triton", S.diverse_beam_search, **kw)
    compare(got, ref)
    exercised(ref, m.vocab_size)
    assert calls, "the device-side group selection was not used"


# ------------------------------------- the device path's logic with the kernels' torch references


@pytest.mark.parametrize("beam,groups,diversity", [(4, 2, 1.0), (6, 3, 0.5), (4, 4, 2.0), (4, 2, 0.0)])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_device_selection_matches_numpy(torch_ops, seed, beam, groups, diversity):
    m = copynet(seed=10 + seed, eos_bias=3.0, copy_boost=3.0 + 5 * seed, tie=seed == 2)
    batch = make_source_batch(vocab(), sources(20 + seed, n=5), copy=True)
    kw = dict(beam=beam, groups=groups, diversity=diversity, max_len=7, length_penalty="average")
    ref, _ = decode(m, batch, "torch", S.diverse_beam_search, **kw)
    got, calls = decode(m, batch, "triton", S.diverse_beam_search, ops="torch", **kw)
    compare(got, ref)
    assert calls


def test_device_selection_with_a_finished_group_first(torch_ops):
    """A group that is done must not penalise the live groups after it: the backend puts live
    groups first in the kernel's sequential order. This decode has such steps (group 0 or 1
    done while a later group is live)."""
    m = copynet(seed=0, eos_bias=2.0, copy_boost=1.0)
    batch = make_source_batch(vocab(), sources(0, n=4), copy=True)
    kw = dict(beam=6, groups=3, diversity=2.0, max_len=12)
    ref, _ = decode(m, batch, "torch", S.diverse_beam_search, **kw)
    got, calls = decode(m, batch, "triton", S.diverse_beam_search, ops="torch", **kw)
    compare(got, ref)
    reordered = sum(int((np.sort(~live, axis=1, kind="stable") != ~live).any()) for live in calls)
    assert reordered > 0, "no step with a finished group before a live one"
