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
