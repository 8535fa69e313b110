"""The VQA v2 question subset of the shared data (``vqa_v2_subset/<split>.jsonl.gz``: one row per
question with its ``question`` and ``answers``; Goyal et al. 2017, CC BY 4.0)."""
from __future__ import annotations

import os
from pathlib import Path
from typing import Iterator, Union

from pysynth.io import read_jsonl

__all__ = ["SPLITS", "split_path", "read_split"]

#: the splits of the shared subset
SPLITS = ("train", "valid")

PathLike = Union[str, "os.PathLike[str]"]


def split_path(data_dir: PathLike, split: str) -> Path:
    """The file of ``split`` (one of :data:`SPLITS`) in the shared data folder ``data_dir``."""
    if split not in SPLITS:
        raise ValueError(f"split: must be one of {SPLITS}, got {split!r}")
    return Path(data_dir) / "vqa_v2_subset" / f"{split}.jsonl.gz"


def read_split(data_dir: PathLike, split: str) -> Iterator[dict]:
    """The rows of one split, streamed in file order.

    Parameters
    ----------
    data_dir : str or path
        The shared data folder.
    split : {"train", "valid"}

    Returns
    -------
    iterator of dict
        At least ``question`` per row (``answers``: the annotators' answers).
    """
    return read_jsonl(split_path(data_dir, split))
