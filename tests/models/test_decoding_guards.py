"""The degenerate-output guards of every search (``SearchConfig.no_repeat_ngram`` and ``no_stutter``):
batched search == the readable reference, no output repeats an n-gram or a token twice in a row, both on by
default in ``SearchConfig``, and ``0`` / ``False`` is the plain search."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from pysynth.decoding import SearchConfig, run_search  # noqa: E402
from pysynth.decoding import _reference as R  # noqa: E402
from pysynth.decoding import search as S  # noqa: E402
from pysynth.decoding.backends import TorchBackend  # noqa: E402
from pysynth.models.batching import make_source_batch  # noqa: E402

from ._util import assert_same_hypotheses, random_sources, small_model, small_vocab  # noqa: E402


def _repeats(tokens, n):
    grams = [tuple(tokens[i:i + n]) for i in range(len(tokens) - n + 1)]
    return len(grams) != len(set(grams))


def _setup(arch, seed):
    m = small_model(arch, seed=seed, eos_bias=-2.0)  # long outputs: repeats happen without the guard
    batch = make_source_batch(small_vocab(), random_sources(seed, n=6), copy=m.has_copy)
    return m, batch


@pytest.mark.parametrize("arch", ["attnet", "copynet"])
@pytest.mark.parametrize("topk", [True, False])
@pytest.mark.parametrize("search,ref,kw", [
    (S.greedy_search, R.greedy_reference, {}),
    (S.beam_search, R.beam_reference, {"beam": 3, "length_penalty": "average"}),
    (S.diverse_beam_search, R.diverse_beam_reference, {"beam": 4, "groups": 2, "diversity": 0.5}),
])
def test_no_repeat_ngram_matches_the_reference(arch, topk, search, ref, kw):
    m, batch = _setup(arch, 3)
    be = TorchBackend(m, topk=topk, parts=False)
    out = search(be, batch, max_len=12, no_repeat_ngram=2, **kw)
    for i in range(len(batch)):
        L = int(batch.src_len[i])
        r = ref(m, batch.src[i, :L].tolist(), batch.src_ext[i, :L].tolist(), len(batch.oovs[i]), max_len=12,
                no_repeat_ngram=2, **kw)
        assert_same_hypotheses({"reference": [r], "batched": [out[i]]})
        assert not any(_repeats(h.tokens, 2) for h in out[i])


@pytest.mark.parametrize("decode", ["greedy", "beam", "dbs", "sample"])
def test_every_search_obeys_the_guard_and_zero_is_off(decode):
    m, batch = _setup("copynet", 4)
    be = TorchBackend(m)
    base = SearchConfig(decode=decode, beam=4, groups=2 if decode == "dbs" else 1, top_k=5, max_len=14,
                        no_repeat_ngram=0, no_stutter=False)
    plain = run_search(be, batch, base, 14)
    assert any(_repeats(h.tokens, 2) for hyps in plain for h in hyps)  # the model repeats itself
    assert any(_repeats(h.tokens, 3) or _stutters(h.tokens) for hyps in plain for h in hyps)
    guarded = run_search(be, batch, base.replace(no_repeat_ngram=2), 14)
    assert not any(_repeats(h.tokens, 2) for hyps in guarded for h in hyps)
    default = run_search(be, batch, SearchConfig(decode=decode, beam=4, groups=2 if decode == "dbs" else 1,
                                                 top_k=5, max_len=14), 14)
    assert not any(_repeats(h.tokens, 3) or _stutters(h.tokens) for hyps in default for h in hyps)
    explicit = run_search(be, batch, base.replace(no_repeat_ngram=3, no_stutter=True), 14)
    assert [[h.tokens for h in x] for x in explicit] == [[h.tokens for h in x] for x in default]


@pytest.mark.parametrize("topk", [True, False])
@pytest.mark.parametrize("search,ref,kw", [
    (S.greedy_search, R.greedy_reference, {}),
    (S.beam_search, R.beam_reference, {"beam": 3, "length_penalty": "average"}),
    (S.diverse_beam_search, R.diverse_beam_reference, {"beam": 4, "groups": 2, "diversity": 0.5}),
])
def test_no_stutter_matches_the_reference(topk, search, ref, kw):
    m, batch = _setup("copynet", 5)
    be = TorchBackend(m, topk=topk, parts=False)
    out = search(be, batch, max_len=12, no_repeat_ngram=3, no_stutter=True, **kw)
    for i in range(len(batch)):
        L = int(batch.src_len[i])
        r = ref(m, batch.src[i, :L].tolist(), batch.src_ext[i, :L].tolist(), len(batch.oovs[i]), max_len=12,
                no_repeat_ngram=3, no_stutter=True, **kw)
        assert_same_hypotheses({"reference": [r], "batched": [out[i]]})
        assert not any(_stutters(h.tokens) or _repeats(h.tokens, 3) for h in out[i])


def test_no_stutter_in_sampling_and_bad_values():
    m, batch = _setup("copynet", 6)
    out = S.sample_search(TorchBackend(m), batch, n=3, top_k=5, max_len=14, no_stutter=True)
    assert not any(_stutters(h.tokens) for hyps in out for h in hyps)
    with pytest.raises(TypeError, match="no_stutter"):
        SearchConfig(no_stutter=1)
    with pytest.raises(TypeError, match="no_stutter"):
        S.greedy_search(TorchBackend(m), batch, no_stutter="yes")


def _stutters(tokens):
    return any(a == b for a, b in zip(tokens, tokens[1:]))


def test_ngram_bans_and_bad_settings():
    assert S.ngram_bans([1, 2, 3, 1, 2], 3) == [3]
    assert S.ngram_bans([1, 2, 1], 2) == [2]
    assert S.ngram_bans([4, 5], 1) == [4, 5]
    assert S.ngram_bans([1, 2, 3], 0) == []
    with pytest.raises(ValueError, match="no_repeat_ngram"):
        SearchConfig(no_repeat_ngram=-1)
    m, batch = _setup("attnet", 1)
    with pytest.raises(ValueError, match="no_repeat_ngram"):
        S.greedy_search(TorchBackend(m), batch, no_repeat_ngram=True)
