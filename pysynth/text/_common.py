"""Shared parts of :mod:`pysynth.text`: the backend, input checks and the store layout."""
from __future__ import annotations

import os
from typing import List, Mapping, Optional, Sequence, Union

from pysynth import _validate as _v
from pysynth import store
from pysynth._dispatch import backend

TOKENIZERS = ("rouge", "whitespace")
#: Version of the :mod:`pysynth.store` formats written by :meth:`Corpus.save`,
#: :meth:`Phrases.save` and :meth:`FrozenPhrases.save` (1: the pre-store layout, refused).
FORMAT_VERSION = 2

PathLike = Union[str, "os.PathLike[str]"]


def _impl():
    return backend("text")


class _PhraseModel:
    """Base of :class:`~pysynth.text.Phrases` and :class:`~pysynth.text.FrozenPhrases`, so that
    :meth:`~pysynth.text.Corpus.apply_phrases` knows them without importing their module."""

    __slots__ = ()


# --------------------------------------------------------------------- validation


def _check_int(value, name: str, minimum: Optional[int] = None) -> int:
    return _v.int_range(value, name, minimum)


def _check_tokenizer(tokenizer) -> str:
    return _v.choice(tokenizer, "tokenizer", TOKENIZERS)


def _texts(texts, name: str = "texts") -> List[str]:
    if texts is None:
        raise TypeError(f"{name} must be a sequence of str, got None")
    if isinstance(texts, (str, bytes)):
        raise TypeError(f"{name} must be a sequence of str, not a single string; wrap it in a list")
    if not isinstance(texts, (list, tuple)):
        try:
            texts = list(texts)
        except TypeError:
            raise TypeError(f"{name} must be a sequence of str, got {type(texts).__name__}") from None
    return texts


# ------------------------------------------------------------------------ storage


def _load(path: PathLike, kind: str, mmap: bool, arrays: Mapping[str, type]) -> store.Stored:
    """The store of a ``pysynth.text.<kind>`` with 1-d ``arrays`` (name -> dtype)."""
    return store.load(path, f"pysynth.text.{kind}", (FORMAT_VERSION,), mmap=mmap,
                      expect={name: (dt, (None,)) for name, dt in arrays.items()})


def _lines(st: store.Stored, name: str, count: int, of: str) -> List[str]:
    """The lines of file ``name``: ``count`` of them, one per entry of array ``of``."""
    items = st.read_lines(name)
    if len(items) != count:
        raise ValueError(f"{st.path / name} has {len(items)} lines; {of} has {count} entries")
    return items


def _meta_params(st: store.Stored, keys: Sequence[str]) -> dict:
    missing = [k for k in keys if k not in st.meta]
    if missing:
        raise ValueError(f"{', '.join(missing)} missing")
    return {k: st.meta[k] for k in keys}
