"""The Hugging Face backend: the same searches over tiny random-weight T5 / BART models saved to
a temporary directory (nothing is downloaded)."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
transformers = pytest.importorskip("transformers")

from pysynth.decoding import search as S  # noqa: E402
from pysynth.decoding.hf import HFBackend  # noqa: E402
from pysynth.decoding.protocol import DecodingBackend, SourceBatch, SpecialIds  # noqa: E402

V = 48
EOS_MIX = 0.55


def _t5(path):
    torch.manual_seed(0)
    cfg = transformers.T5Config(vocab_size=V, d_model=16, d_kv=4, d_ff=32, num_layers=1, num_decoder_layers=1,
                                num_heads=2, pad_token_id=0, eos_token_id=1, decoder_start_token_id=0)
    m = transformers.T5ForConditionalGeneration(cfg).eval()
    with torch.no_grad():  # wider than the default init: sources lead to different outputs
        for p in m.parameters():
            p.normal_(0.0, 1.0)
        w = m.lm_head.weight
        w[1] = EOS_MIX * (w[28] + w[33] + w[22])  # </s> close to frequent tokens: some hypotheses end
    m.save_pretrained(path)
    return m


def _bart(path):
    torch.manual_seed(1)
    cfg = transformers.BartConfig(vocab_size=V, d_model=16, encoder_layers=1, decoder_layers=1,
                                  encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
                                  decoder_ffn_dim=32, max_position_embeddings=64, pad_token_id=1, bos_token_id=0,
                                  eos_token_id=2, decoder_start_token_id=2, forced_eos_token_id=None)
    m = transformers.BartForConditionalGeneration(cfg).eval()
    m.save_pretrained(path)
    return m


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    out = {}
    for name, make in (("t5", _t5), ("bart", _bart)):
        d = tmp_path_factory.mktemp(name)
        out[name] = (make(d), d)
    return out


def _batch(pad, seed=0, n=4):
    rng = np.random.default_rng(seed)
    return SourceBatch.from_ids([rng.integers(3, V, int(rng.integers(2, 7))).tolist() for _ in range(n)], pad)


def test_loads_a_local_directory_and_reads_specials(models):
    be = HFBackend(models["t5"][1])
    assert isinstance(be, DecodingBackend)
    assert be.specials == SpecialIds(pad=0, unk=None, bos=0, eos=1) and be.vocab_size == V
    bart = HFBackend(models["bart"][1])
    assert bart.specials == SpecialIds(pad=1, unk=None, bos=2, eos=2)
    assert bart.specials.never(True) == (1,)  # </s> starts BART's decoder and may still end it


def test_greedy_matches_transformers_generate(models):
    m, d = models["t5"]
    be = HFBackend(d)
    batch = _batch(0, seed=3, n=5)
    ours = S.greedy_search(be, batch, max_len=6)
    mask = torch.from_numpy(np.arange(batch.src.shape[1])[None, :] < batch.src_len[:, None]).long()
    ref = m.generate(input_ids=torch.from_numpy(batch.src), attention_mask=mask, do_sample=False, num_beams=1,
                     max_new_tokens=6, min_length=0, suppress_tokens=[0])
    for hyp, row in zip(ours, ref.tolist()):
        row = row[1:]  # decoder start
        want = row[: row.index(1)] if 1 in row else row
        assert hyp[0].tokens == want
        assert hyp[0].finished == (1 in row)
    assert len({tuple(h[0].tokens) for h in ours}) > 2  # not a degenerate model
    assert {h[0].finished for h in ours} == {True, False}


@pytest.mark.parametrize("name", ["t5", "bart"])
def test_every_search_runs_over_it(models, name):
    m, d = models[name]
    be = HFBackend(m)  # an already-built model works too
    batch = _batch(be.specials.pad, seed=4)
    greedy = S.greedy_search(be, batch, max_len=5)
    one = S.beam_search(be, batch, beam=1, max_len=5)
    assert [g[0].tokens for g in greedy] == [b[0].tokens for b in one]
    beam = S.beam_search(be, batch, beam=3, max_len=5)
    assert all(1 <= len(h) <= 3 and [x.score for x in h] == sorted((x.score for x in h), reverse=True)
               for h in beam)
    div = S.diverse_beam_search(be, batch, beam=4, groups=2, diversity=1.0, max_len=5)
    assert all({x.group for x in h} <= {0, 1} for h in div)
    never = set(be.specials.never(True))
    assert not any(set(x.tokens) & never for res in (greedy, beam, div) for h in res for x in h)
    kw = dict(n=3, top_k=5, top_p=0.9, seed=2, max_len=5)
    a, b = S.sample_search(be, batch, **kw), S.sample_search(be, batch, **kw)
    assert [[x.tokens for x in h] for h in a] == [[x.tokens for x in h] for h in b]


def test_hf_directory_resolves_and_bad_input(models, tmp_path):
    from pysynth.models.registry import resolve

    assert resolve(models["t5"][1]).kind == "hf"
    with pytest.raises(ValueError, match="not a local Hugging Face model directory"):
        HFBackend(tmp_path)
    with pytest.raises(TypeError, match="encoder-decoder"):
        HFBackend(object())
    with pytest.raises(ValueError, match="sequences\\[1\\]"):
        SourceBatch.from_ids([[5], []], 0)
