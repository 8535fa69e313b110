"""Small random models and sources for the model tests."""
from __future__ import annotations

import numpy as np

WORDS = [f"w{i}" for i in range(40)]


def small_vocab():
    from pysynth.models.vocab import SPECIALS, Vocab

    return Vocab(list(SPECIALS) + WORDS)


def small_model(arch: str, seed: int = 0, eos_bias: float = 0.0, scale: float = 3.0, copy_boost: float = 0.0):
    """A random Seq2Seq over ``small_vocab()``; ``eos_bias`` makes hypotheses end earlier."""
    import torch

    from pysynth.models.config import Seq2SeqConfig
    from pysynth.models.seq2seq import Seq2Seq

    torch.manual_seed(seed)
    cfg = Seq2SeqConfig(arch=arch, vocab_size=100, emb_dim=8, enc_hidden=6, dec_hidden=10, dropout=0.1)
    m = Seq2Seq(cfg, len(WORDS) + 4).eval()
    with torch.no_grad():
        for p in m.parameters():
            p.mul_(scale)
        m.out.bias[m.specials.eos] += eos_bias
        if copy_boost and m.has_copy:  # weaker generate scores: copying wins more often
            m.out.weight.div_(copy_boost)
            m.out.bias.div_(copy_boost)
    return m


def random_sources(seed: int, n: int = 8, max_len: int = 7, oov_rate: float = 0.25):
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        L = int(rng.integers(1, max_len + 1))
        toks = [f"w{j}" if rng.random() > oov_rate else f"oov{j % 4}" for j in rng.integers(0, 40, L)]
        if all(t.startswith("oov") for t in toks):
            toks[0] = "w1"
        out.append(toks)
    return out


# ------------------------------------------------------------------ one parity helper for every backend

def reference_results(method: str, model, batch, **kw):
    """The readable one-sentence torch decoders (``pysynth.decoding._reference``) per source."""
    from pysynth.decoding import _reference as R

    ref = {"greedy": R.greedy_reference, "beam": R.beam_reference, "diverse": R.diverse_beam_reference}[method]
    out = []
    for i in range(len(batch)):
        L = int(batch.src_len[i])
        out.append(ref(model, batch.src[i, :L].tolist(), batch.src_ext[i, :L].tolist(), len(batch.oovs[i]), **kw))
    return out


def search_results(method: str, backend, batch, **kw):
    from pysynth.decoding import search as S

    fn = {"greedy": S.greedy_search, "beam": S.beam_search, "diverse": S.diverse_beam_search,
          "sample": S.sample_search}[method]
    return fn(backend, batch, **kw)


def assert_same_hypotheses(results, tol: float = 1e-5):
    """``results``: name -> per-source hypothesis lists. Every entry must have the same tokens,
    finished flags and groups as the first, and scores / log-probabilities within ``tol``."""
    names = list(results)
    base = results[names[0]]
    for name in names[1:]:
        got = results[name]
        assert len(got) == len(base), f"{name}: {len(got)} sources, {names[0]}: {len(base)}"
        for s, (a, b) in enumerate(zip(got, base)):
            assert [(h.tokens, h.finished, h.group) for h in a] == [(h.tokens, h.finished, h.group) for h in b], \
                f"{name} differs from {names[0]} on source {s}"
            for x, y in zip(a, b):
                assert abs(x.score - y.score) <= tol and abs(x.logprob - y.logprob) <= tol, (name, s, x, y)


def decode_parity(backends, method: str, batch, model=None, tol: float = 1e-5, **kw):
    """Decode ``batch`` with every backend (name -> backend) and, given the torch ``model``, the
    reference decoder; assert the same hypotheses (:func:`assert_same_hypotheses`). Returns them."""
    results = {}
    if model is not None and method != "sample":
        results["reference"] = reference_results(method, model, batch, **kw)
    for name, be in backends.items():
        results[name] = search_results(method, be, batch, **kw)
    assert_same_hypotheses(results, tol)
    return results
