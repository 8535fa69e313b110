"""Batched numpy searches == the readable one-sentence torch reference (hypotheses and scores)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from pysynth.decoding import _reference as R  # noqa: E402
from pysynth.decoding import search as S  # noqa: E402
from pysynth.decoding.backends import TorchBackend  # noqa: E402
from pysynth.models.batching import make_source_batch  # noqa: E402

from ._util import assert_same_hypotheses, random_sources, small_model, small_vocab  # noqa: E402

ARCHS = ("ednet", "attnet", "copynet")


def _compare(batched, ref):
    assert_same_hypotheses({"reference": [ref], "batched": [batched]})


def _run(arch, seed, eos_bias, search, ref, copy_boost=3.0, oov_rate=0.25, topk=True, **kw):
    m = small_model(arch, seed=seed, eos_bias=eos_bias, copy_boost=copy_boost)
    vocab = small_vocab()
    srcs = random_sources(seed, n=7, oov_rate=oov_rate)
    batch = make_source_batch(vocab, srcs, copy=m.has_copy)
    # topk="parts": candidates from step_parts + topk_from_parts (either backend of the kernel)
    be = TorchBackend(m, topk=topk is not False, parts=topk == "parts")
    out = search(be, batch, **kw)
    n_fin = n_ext = 0
    for i in range(len(srcs)):
        L = int(batch.src_len[i])
        r = ref(m, batch.src[i, :L].tolist(), batch.src_ext[i, :L].tolist(), len(batch.oovs[i]), **kw)
        _compare(out[i], r)
        n_fin += sum(h.finished for h in r)
        n_ext += sum(t >= m.vocab_size for h in r for t in h.tokens)
    return n_fin, n_ext


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("eos_bias", [0.0, 4.0])
@pytest.mark.parametrize("topk", [True, False, "parts"])
def test_greedy_parity(arch, eos_bias, topk):
    _run(arch, 1, eos_bias, S.greedy_search, R.greedy_reference, topk=topk, max_len=9)


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("length_penalty", ["none", "average", "gnmt"])
@pytest.mark.parametrize("topk", [True, False, "parts"])
def test_beam_parity(arch, length_penalty, topk):
    fin, ext = _run(arch, 2, 3.0, S.beam_search, R.beam_reference, topk=topk, beam=4, max_len=8,
                    length_penalty=length_penalty, alpha=0.7)
    assert fin > 0  # the eos bias makes some hypotheses end with </s>


@pytest.mark.parametrize("arch", ARCHS)
@pytest.mark.parametrize("beam,groups,diversity", [(6, 3, 0.5), (4, 4, 2.0), (4, 2, 0.0)])
@pytest.mark.parametrize("topk", [True, False, "parts"])
def test_diverse_beam_parity(arch, beam, groups, diversity, topk):
    _run(arch, 3, 3.0, S.diverse_beam_search, R.diverse_beam_reference, topk=topk, beam=beam, groups=groups,
         diversity=diversity, max_len=7, length_penalty="average")


def test_copynet_copies_oov_words():
    fin, ext = _run("copynet", 4, 2.0, S.beam_search, R.beam_reference, copy_boost=30.0, oov_rate=0.6,
                    beam=3, max_len=8)
    assert ext > 0, "no extended (copied OOV) token in any hypothesis"


def test_beam_with_one_beam_is_greedy():
    m = small_model("attnet", seed=5, eos_bias=3.0)
    batch = make_source_batch(small_vocab(), random_sources(5), copy=False)
    be = TorchBackend(m)
    g = S.greedy_search(be, batch, max_len=8)
    b = S.beam_search(be, batch, beam=1, max_len=8)
    assert [x[0].tokens for x in g] == [x[0].tokens for x in b]


def test_diverse_groups_differ_from_each_other():
    m = small_model("copynet", seed=6, eos_bias=1.0)
    batch = make_source_batch(small_vocab(), random_sources(6), copy=True)
    out = S.diverse_beam_search(TorchBackend(m), batch, beam=4, groups=4, diversity=50.0, max_len=6)
    for hyps in out:
        firsts = [h.tokens[0] for h in hyps if h.tokens]
        assert len(set(firsts)) == len(firsts)  # a huge lambda forbids repeating a first token


@pytest.mark.parametrize("seed", range(5))
def test_topk_ordered_exact_on_ties(seed):
    rng = np.random.default_rng(seed)
    x = rng.integers(0, 5, size=(6, 300)).astype(np.float64)
    x[0] = -np.inf
    x[1, :10] = 7.0
    for k in (1, 3, 10, 17):
        idx, val = S.topk_ordered(x, k)
        want = np.argsort(-x, axis=1, kind="stable")[:, :k]
        np.testing.assert_array_equal(idx, want)
        np.testing.assert_array_equal(val, np.take_along_axis(x, want, 1))


def test_length_normalisation():
    assert S.normalize_score(-6.0, 3, "none") == -6.0
    assert S.normalize_score(-6.0, 3, "average") == -2.0
    assert S.normalize_score(-6.0, 3, "gnmt", 1.0) == pytest.approx(-6.0 / (8 / 6))


class _TopkBackend(TorchBackend):  # numpy stable sort instead of torch.topk
    """Hands the search only k candidates per row (the onnxruntime path), exact on ties."""

    def step_topk(self, state, tokens, h, k):
        logp, h = self.step(state, tokens, h)
        idx = np.argsort(-logp, axis=1, kind="stable")[:, :k]
        return np.take_along_axis(logp, idx, 1), idx, h


@pytest.mark.parametrize("arch", ARCHS)
def test_topk_candidate_path_matches_reference(arch):
    m = small_model(arch, seed=8, eos_bias=2.5, copy_boost=3.0)
    batch = make_source_batch(small_vocab(), random_sources(8, n=6, oov_rate=0.4), copy=m.has_copy)
    full, topk = TorchBackend(m, topk=False), _TopkBackend(m)
    for fn, kw in ((S.greedy_search, dict(max_len=8)), (S.beam_search, dict(beam=3, max_len=8)),
                   (S.diverse_beam_search, dict(beam=6, groups=3, diversity=1.5, max_len=8))):
        a, b = fn(full, batch, **kw), fn(topk, batch, **kw)
        for x, y in zip(a, b):
            _compare(x, y)


@pytest.mark.parametrize("arch", ARCHS)
def test_step_parts_rebuild_the_step_exactly(arch):
    """Seq2Seq.step_parts + the float32 epilogue == step_tensors bit for bit, and the parts
    candidates (both kernel backends) == torch.topk's with its stable tie fix-up."""
    from pysynth import _dispatch

    m = small_model(arch, seed=9, eos_bias=1.0, copy_boost=3.0)
    with torch.no_grad():
        m.out.bias[10] = -1e4  # probability exactly 0: clamped at log(1e-12) in the copy rows
    batch = make_source_batch(small_vocab(), random_sources(9, n=6, oov_rate=0.5), copy=m.has_copy)
    full = TorchBackend(m, parts=False)
    st, h = full.encode(batch)
    rng = np.random.default_rng(9)
    vx = m.vocab_size + (batch.n_ext if m.has_copy else 0)
    for _ in range(3):
        tokens = rng.integers(2, vx, len(batch)).astype(np.int64)
        logp, h_new = full.step(st, tokens, h)
        for impl in sorted(_dispatch.available("decoding")):
            with _dispatch.force(impl, "decoding"):
                parts = TorchBackend(m, parts=True)
                assert parts.parts
                for k in (1, 9, vx):
                    va, ia, hp = parts.step_topk(st, tokens, h, k)
                    vb, ib, _ = full.step_topk(st, tokens, h, k)
                    # the order inside a row is free (torch.topk's is not stable); the set is not
                    o = np.lexsort((ib, -vb), axis=-1)
                    vb, ib = np.take_along_axis(vb, o, 1), np.take_along_axis(ib, o, 1)
                    np.testing.assert_array_equal(ia, ib)
                    np.testing.assert_array_equal(va, vb)
                    np.testing.assert_array_equal(va, np.take_along_axis(logp, ia, 1))
                    assert torch.equal(hp, h_new)
        h = h_new
