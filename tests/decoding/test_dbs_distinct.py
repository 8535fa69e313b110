"""Diverse beam search with ``distinct=True``: batched == the readable reference, every output
of a source distinct, and ``distinct=False`` (the default) unchanged."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from pysynth.decoding import SearchConfig, run_search  # noqa: E402
from pysynth.decoding import _reference as R  # noqa: E402
from pysynth.decoding import search as S  # noqa: E402
from pysynth.decoding.backends import TorchBackend  # noqa: E402
from pysynth.models.batching import make_source_batch  # noqa: E402
from tests.models._util import assert_same_hypotheses, random_sources, small_model, small_vocab  # noqa: E402


def _setup(arch, seed):
    m = small_model(arch, seed=seed)
    return m, make_source_batch(small_vocab(), random_sources(seed, n=6), copy=m.has_copy)


def _dups(hyps):
    seqs = [tuple(h.tokens) for h in hyps]
    return len(seqs) - len(set(seqs))


@pytest.mark.parametrize("arch", ["attnet", "copynet"])
@pytest.mark.parametrize("diversity", [0.0, 0.5])
@pytest.mark.parametrize("nr", [0, 2])
def test_distinct_matches_the_reference(arch, diversity, nr):
    m, batch = _setup(arch, 5)
    be = TorchBackend(m, parts=False)
    kw = dict(beam=6, groups=3, diversity=diversity, max_len=10, no_repeat_ngram=nr, distinct=True)
    out = S.diverse_beam_search(be, batch, **kw)
    for i in range(len(batch)):
        L = int(batch.src_len[i])
        r = R.diverse_beam_reference(m, batch.src[i, :L].tolist(), batch.src_ext[i, :L].tolist(),
                                     len(batch.oovs[i]), **kw)
        assert_same_hypotheses({"reference": [r], "batched": [out[i]]})
        assert _dups(out[i]) == 0


def test_groups_merge_without_it_and_never_with_it():
    m, batch = _setup("copynet", 7)
    be = TorchBackend(m)
    base = SearchConfig(decode="dbs", beam=8, groups=4, diversity=0.0, max_len=10)
    plain = run_search(be, batch, base, 10)
    assert sum(_dups(h) for h in plain) > 0  # without a penalty every group is the same beam search
    assert run_search(be, batch, base.replace(distinct=False), 10)[0][0].tokens == plain[0][0].tokens
    assert all(_dups(h) == 0 for h in run_search(be, batch, base.replace(distinct=True), 10))
    with pytest.raises(TypeError, match="distinct"):
        SearchConfig(distinct="yes")
