"""Tokenization and vocabulary for the seq2seq models (no torch here).

Tokenization is lower-cased word tokens: runs of word characters (apostrophes inside a word
are kept: ``what's``) and single punctuation marks, so ``"What's a GPU?"`` becomes
``["what's", "a", "gpu", "?"]``. :func:`detokenize` glues punctuation back.
"""
from __future__ import annotations

import json
import re
from collections import Counter
from typing import Dict, Iterable, List, Sequence, Tuple

from pysynth.decoding.protocol import SpecialIds

__all__ = ["PAD", "UNK", "BOS", "EOS", "SPECIALS", "tokenize", "detokenize", "Vocab"]

PAD, UNK, BOS, EOS = "<pad>", "<unk>", "<s>", "</s>"
SPECIALS = (PAD, UNK, BOS, EOS)

_TOKEN = re.compile(r"\w+(?:'\w+)*|[^\w\s]")
_GLUE = re.compile(r" ([?!.,;:%)])")


def tokenize(text: str) -> List[str]:
    """Lower-cased word tokens (``\\w+`` runs, inner apostrophes kept) and punctuation marks."""
    return _TOKEN.findall(text.lower())


def detokenize(tokens: Sequence[str]) -> str:
    """Join tokens with spaces and attach closing punctuation (``"what is it ?"`` -> ``"what is it?"``)."""
    return _GLUE.sub(r"\1", " ".join(tokens))


class Vocab:
    """Token <-> id map with the specials ``<pad>=0, <unk>=1, <s>=2, </s>=3`` first.

    Parameters
    ----------
    itos : list of str
        Tokens by id; must start with the four specials.
    """

    # the one definition of the special ids: models and backends read them from here
    pad_id, unk_id, bos_id, eos_id = 0, 1, 2, 3
    specials = SpecialIds(pad_id, unk_id, bos_id, eos_id)

    def __init__(self, itos: Sequence[str]):
        itos = list(itos)
        if tuple(itos[:4]) != SPECIALS:
            raise ValueError(f"itos: must start with {SPECIALS}, got {itos[:4]}")
        if len(set(itos)) != len(itos):
            raise ValueError("itos: duplicate tokens")
        self.itos: List[str] = itos
        self.stoi: Dict[str, int] = {t: i for i, t in enumerate(itos)}

    def __len__(self) -> int:
        return len(self.itos)

    def __contains__(self, token: str) -> bool:
        return token in self.stoi

    @classmethod
    def build(cls, texts: Iterable[str], max_size: int = 44000, min_freq: int = 1) -> "Vocab":
        """The ``max_size`` most frequent tokens of ``texts`` (specials included in the count).

        Ties in frequency are broken by the token string, so the vocabulary is deterministic.
        """
        if max_size < len(SPECIALS) + 1:
            raise ValueError(f"max_size: must be at least {len(SPECIALS) + 1}, got {max_size}")
        counts = Counter()
        for t in texts:
            counts.update(tokenize(t))
        for s in SPECIALS:
            counts.pop(s, None)
        ranked = sorted((c for c in counts.items() if c[1] >= min_freq), key=lambda kv: (-kv[1], kv[0]))
        return cls(list(SPECIALS) + [t for t, _ in ranked[: max_size - len(SPECIALS)]])

    def encode(self, tokens: Sequence[str]) -> List[int]:
        """Ids of ``tokens`` (unknown -> ``<unk>``)."""
        get = self.stoi.get
        return [get(t, self.unk_id) for t in tokens]

    def encode_extended(self, tokens: Sequence[str]) -> Tuple[List[int], List[int], List[str]]:
        """Source ids, extended ids and the out-of-vocabulary words (CopyNet, Gu et al. 2016).

        Every distinct OOV word of the source gets the extended id ``len(vocab) + k`` in order of
        first occurrence; ``oovs[k]`` is the word.
        """
        ids, ext, oovs = [], [], []
        pos: Dict[str, int] = {}
        V = len(self.itos)
        for t in tokens:
            i = self.stoi.get(t)
            if i is None:
                if t not in pos:
                    pos[t] = len(oovs)
                    oovs.append(t)
                ids.append(self.unk_id)
                ext.append(V + pos[t])
            else:
                ids.append(i)
                ext.append(i)
        return ids, ext, oovs

    def decode(self, ids: Iterable[int], oovs: Sequence[str] = ()) -> List[str]:
        """Tokens of ``ids``; extended ids map into ``oovs``; stops at ``</s>``, skips specials."""
        out = []
        V = len(self.itos)
        for i in ids:
            i = int(i)
            if i == self.eos_id:
                break
            if i >= V:
                k = i - V
                out.append(oovs[k] if k < len(oovs) else UNK)
            elif i > self.eos_id or i == self.unk_id:
                out.append(self.itos[i])
        return out

    def coverage(self, texts: Iterable[str]) -> Dict[str, float]:
        """Vocabulary coverage and volume over ``texts`` (Granstedt 2017, Fig. 3.5-3.6).

        ``coverage``: share of the distinct tokens of ``texts`` that are in the vocabulary;
        ``volume``: share of all token occurrences that are.
        """
        counts = Counter()
        for t in texts:
            counts.update(tokenize(t))
        total = sum(counts.values())
        inv = sum(c for t, c in counts.items() if t in self.stoi)
        types_in = sum(1 for t in counts if t in self.stoi)
        return {
            "coverage": types_in / len(counts) if counts else 0.0,
            "volume": inv / total if total else 0.0,
            "types": len(counts),
            "tokens": total,
        }

    def to_json(self) -> bytes:
        return json.dumps({"itos": self.itos}, ensure_ascii=False).encode("utf-8")

    @classmethod
    def from_json(cls, data: bytes) -> "Vocab":
        doc = json.loads(data)
        if not isinstance(doc, dict) or not isinstance(doc.get("itos"), list):
            raise ValueError("vocab.json: expected an object with a list 'itos'")
        return cls(doc["itos"])
