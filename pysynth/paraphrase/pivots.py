"""Pivot models: the English<->French pair of Granstedt 2017 (Sect. 3.1), trained on Tatoeba.

The thesis trains two 3-layer 1024-unit LSTM translation models on WMT'15 (93 GPU-hours each).
pysynth trains two small CopyNet models (:mod:`pysynth.models`) on the shared Tatoeba
English-French pairs, which a 2-core machine affords, and ships them (``fr-en-copynet-small``,
``en-fr-copynet-small``).
"""
from __future__ import annotations

import json
import random
import re
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

__all__ = ["tatoeba_split", "train_pivot", "DIRECTIONS"]

#: direction -> (source field, target field) of the Tatoeba rows
DIRECTIONS = {"en-fr": ("en", "fr"), "fr-en": ("fr", "en")}
_WS = re.compile(r"\s+")


def tatoeba_split(data_dir, test_fraction: float = 0.02, dev_pairs: int = 300,
                  seed: int = 20261124) -> Dict[str, List[dict]]:
    """Split the shared Tatoeba rows into ``train``/``dev``/``test`` by English sentence.

    An English sentence (whitespace collapsed, case-folded) goes with all its French
    translations to one split, so no test sentence is seen in training; the shared file's own 5 %
    held-out slice is not distributed, hence this second split. ``dev`` (early stopping) holds
    about ``dev_pairs`` pairs, ``test`` (reported BLEU) about ``test_fraction`` of the pairs.
    """
    from pysynth.datasets import tatoeba

    rows = tatoeba.read_pairs(data_dir)
    groups: Dict[str, List[dict]] = {}
    for r in rows:
        groups.setdefault(_WS.sub(" ", r["en"].strip()).casefold(), []).append(r)
    keys = sorted(groups)
    random.Random(seed).shuffle(keys)
    out = {"test": [], "dev": [], "train": []}
    n_test = int(len(rows) * test_fraction)
    for k in keys:
        if len(out["test"]) < n_test:
            out["test"].extend(groups[k])
        elif len(out["dev"]) < dev_pairs:
            out["dev"].extend(groups[k])
        else:
            out["train"].extend(groups[k])
    return out


def _pairs(rows: Sequence[dict], direction: str) -> List[Tuple[str, str]]:
    s, t = DIRECTIONS[direction]
    return [(r[s], r[t]) for r in rows]


def train_pivot(data_dir, out_dir, direction: str, steps: int = 5000, minutes: float = 0.0, vocab_size: int = 20000,
                emb_dim: int = 128, enc_hidden: int = 128, dec_hidden: int = 256, lr: float = 2e-3,
                batch_size: int = 64, threads: int = 2, seed: int = 0) -> dict:
    """Train one pivot direction (``"en-fr"`` or ``"fr-en"``) into the run folder ``out_dir``.

    A fixed step budget gives the same model on any machine (``minutes`` adds a wall-clock cap).
    The vocabulary is shared by both languages (copying works across them: names, numbers).
    Returns the training summary plus ``test_bleu`` on the held-out English sentences.
    """
    if direction not in DIRECTIONS:
        raise ValueError(f"direction: must be one of {sorted(DIRECTIONS)}, got {direction!r}")
    from pysynth.models.config import Seq2SeqConfig, TrainConfig
    from pysynth.models.train import train

    split = tatoeba_split(data_dir)
    mc = Seq2SeqConfig(arch="copynet", vocab_size=vocab_size, emb_dim=emb_dim, enc_hidden=enc_hidden,
                       dec_hidden=dec_hidden, tie_embeddings=True, dropout=0.2, max_src_len=40, max_tgt_len=40)
    tc = TrainConfig(lr=lr, clip_norm=1.0, batch_size=batch_size, max_steps=steps, max_minutes=minutes,
                     max_epochs=50, eval_every=1000, eval_max_pairs=len(split["dev"]), patience=4,
                     ckpt_every=500, log_every=100, seed=seed, device="cpu", threads=threads)
    summary = train(_pairs(split["train"], direction), out_dir, mc, tc, dev_pairs=_pairs(split["dev"], direction))
    summary["test_bleu"] = test_bleu(out_dir, split["test"], direction)
    (Path(out_dir) / "test_bleu.json").write_text(json.dumps(summary, indent=1), encoding="utf-8")
    return summary


def test_bleu(model, rows: Sequence[dict], direction: str, beam: int = 1, backend: str = "torch") -> float:
    """Corpus BLEU (sacrebleu, lower-cased pysynth tokens) of ``model`` on ``rows`` in ``direction``."""
    from pysynth import metrics
    from pysynth.decoding.config import SearchConfig
    from pysynth.models.text2text import text2text
    from pysynth.models.vocab import detokenize, tokenize

    pairs = _pairs(rows, direction)
    refs: Dict[str, List[str]] = {}
    for s, t in pairs:  # every translation of a sentence is a reference
        refs.setdefault(s, []).append(detokenize(tokenize(t)))
    srcs = sorted(refs)
    search = SearchConfig(decode="greedy" if beam == 1 else "beam", beam=beam, n=1)
    hyps = [g.texts[0] if g.texts else "" for g in text2text(model, backend).generate(srcs, search, batch_size=64)]
    n = max(len(v) for v in refs.values())
    # a missing reference repeats the first: a repeated reference changes neither the clipped counts nor
    # the closest length, so the score equals multi-reference BLEU with a varying number of references
    ref_streams = [[refs[s][i] if i < len(refs[s]) else refs[s][0] for s in srcs] for i in range(n)]
    return float(metrics.corpus_bleu(hyps, ref_streams).score)


if __name__ == "__main__":  # deprecated side door: now ``pysynth paraphrase train-pivot``
    from pysynth.cli import deprecated_module

    raise SystemExit(deprecated_module("pysynth.paraphrase.pivots", None, ["paraphrase", "train-pivot"]))
