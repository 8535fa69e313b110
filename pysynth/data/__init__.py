"""Small bundled data sets (see README.md in this folder for sources and licenses)."""
from __future__ import annotations

import gzip
import json
import os
from importlib import resources
from pathlib import Path
from typing import Dict, List, Optional

MQR_SYSTEMS = (
    "GEC",
    "lstm",
    "nmt_de",
    "nmt_fr",
    "paralex_quora_stackexchange",
    "paralex_stackexchange",
    "quora_stackexchange",
    "quora_stackexchange_gec",
    "transformer",
)


def shared_dir(path: Optional[os.PathLike] = None) -> Path:
    """The shared data folder (real public data beside the repository, for reproductions):
    ``path``, ``$PYSYNTH_DATA``, or ``../shared/data`` of the repository. FileNotFoundError when
    it is not there."""
    if path is not None:
        p = Path(path)
    elif os.environ.get("PYSYNTH_DATA"):
        p = Path(os.environ["PYSYNTH_DATA"])
    else:
        p = Path(__file__).resolve().parents[3] / "shared" / "data"
    if not p.is_dir():
        raise FileNotFoundError(f"shared data folder not found at {p}; pass its path or set PYSYNTH_DATA")
    return p


def mqr_sample() -> List[Dict]:
    """400 MQR test rows with the paper's nine system rewrites (CC BY-SA 4.0, Chu et al. 2020).

    Returns
    -------
    list of dict
        Keys ``row_idx``, ``post_id``, ``category``, ``ill_formed``, ``well_formed`` and
        ``systems`` (system name -> rewrite).
    """
    path = resources.files(__name__).joinpath("mqr_sample.jsonl.gz")
    with path.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def k2q_demo() -> List[Dict]:
    """22k CC BY-SA questions with MQR paraphrase clusters: the bundled input of
    ``pysynth k2q synthesize`` (see README.md).

    Returns
    -------
    list of dict
        Keys ``id`` (int), ``question``, ``cluster_id`` (``"mqr:<split>:<row>"`` or None) and
        ``source`` (``wellformed``, ``squad``, ``mqr`` or ``mqr-ill-formed``).
    """
    path = resources.files(__name__).joinpath("k2q_demo.jsonl.gz")
    with path.open("rb") as raw, gzip.open(raw, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def k2q_demo_path():
    """Path of ``k2q_demo.jsonl.gz`` (a context-free traversable of the installed package)."""
    return resources.files(__name__).joinpath("k2q_demo.jsonl.gz")


def questions_sample() -> List[str]:
    """18k CC BY-SA questions (query-wellformedness >= 0.8, MQR, SQuAD 2.0): the rows of
    :func:`k2q_demo` except the ill-formed MQR originals; see README.md."""
    return [r["question"] for r in k2q_demo() if r["source"] != "mqr-ill-formed"]


def qagen_sample_path() -> Path:
    """The bundled SQuAD 2.0 sample (16 paragraphs of two dev articles; CC BY-SA 4.0), the input of
    ``pysynth qagen generate --in sample``."""
    return Path(str(resources.files("pysynth.data") / "qagen_sample.json.gz"))
