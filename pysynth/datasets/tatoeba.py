"""The English-French Tatoeba sentence pairs of the shared data (``tatoeba_eng_fra/pairs.jsonl.gz``:
one ``{"en", "fr", ...}`` row per translation pair, CC BY 2.0 FR)."""
from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import List, Union

__all__ = ["PAIRS_FILE", "pairs_path", "read_pairs"]

#: the pairs file, relative to the shared data folder
PAIRS_FILE = Path("tatoeba_eng_fra") / "pairs.jsonl.gz"

PathLike = Union[str, "os.PathLike[str]"]


def pairs_path(data_dir: PathLike) -> Path:
    """The pairs file of the shared data folder ``data_dir``; ``ValueError`` when it is missing."""
    path = Path(data_dir) / PAIRS_FILE
    if not path.is_file():
        raise ValueError(f"data_dir: {path} not found; pass the shared data folder (../shared/data)")
    return path


def read_pairs(data_dir: PathLike) -> List[dict]:
    """Every row of the pairs file, in file order.

    Parameters
    ----------
    data_dir : str or path
        The shared data folder.

    Returns
    -------
    list of dict
        At least ``en`` and ``fr`` per row.
    """
    with gzip.open(pairs_path(data_dir), "rt", encoding="utf-8") as f:
        return [json.loads(x) for x in f]
