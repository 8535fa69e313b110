"""Data for the keyword-to-question (K2Q) method of Ding & Balog (2018), Sect. 5.

* T0 — the hand-labelled seed set: paraphrase clusters, 5 questions each, one keyword query
  per question (``k2q_seed_pairs/pairs.jsonl.gz``, made for this project as Sect. 5 describes).
* Q — the large question set: ComQA/WikiAnswers paraphrase clusters *excluding the T0
  clusters*, plus the other question sets of the shared data (query-wellformedness queries
  rated >= 0.8, MQR well-formed questions, SQuAD 2.0 questions, VQA questions).

The shared data live beside the repository (``../shared/data``) or where ``PYSYNTH_DATA``
points; nothing is downloaded.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Dict, List, Optional, Sequence

from pysynth.datasets import squad, vqa
from pysynth.io import read_jsonl  # noqa: F401  (re-exported: the loaders' JSONL reader)

__all__ = ["SeedPair", "QuestionSet", "data_dir", "load_seed_pairs", "load_question_set", "read_jsonl"]


def data_dir(path: Optional[os.PathLike] = None) -> Path:
    """The shared data folder (:func:`pysynth.data.shared_dir`)."""
    from pysynth.data import shared_dir

    return shared_dir(path)


@dataclass(frozen=True)
class SeedPair:
    cluster_id: str
    question: str
    keywords: str
    annotator: int


def load_seed_pairs(path: Optional[os.PathLike] = None) -> List[SeedPair]:
    """The seed set T0 (800 keyword-question pairs in 160 clusters)."""
    d = data_dir(path)
    return [
        SeedPair(r["cluster_id"], r["question"], r["keywords"], int(r["annotator"]))
        for r in read_jsonl(d / "k2q_seed_pairs" / "pairs.jsonl.gz")
    ]


@dataclass
class QuestionSet:
    """Questions with optional paraphrase-cluster labels (``cluster[i] == -1``: none)."""

    questions: List[str] = field(default_factory=list)
    cluster: List[int] = field(default_factory=list)
    source: List[str] = field(default_factory=list)
    cluster_names: List[str] = field(default_factory=list)

    def add(self, question: str, source: str, cluster: int = -1) -> None:
        self.questions.append(question)
        self.cluster.append(cluster)
        self.source.append(source)

    def __len__(self) -> int:
        return len(self.questions)


def load_question_set(
    path: Optional[os.PathLike] = None,
    exclude_clusters: Sequence[str] = (),
    sources: Sequence[str] = ("comqa", "wellformed", "mqr", "squad", "vqa"),
    wellformed_min: float = 0.8,
) -> QuestionSet:
    """The large question set Q of Sect. 5, from the shared data.

    Parameters
    ----------
    exclude_clusters : ComQA cluster ids to leave out (the T0 clusters, as the paper does).
    sources : which question sets to include.
    wellformed_min : query-wellformedness rating threshold (MQR's paper and ours: 0.8).
    """
    d = data_dir(path)
    qs = QuestionSet()
    excluded = set(exclude_clusters)
    seen = set()

    def add(q: str, source: str, cluster: int = -1) -> None:
        q = " ".join(q.split())
        if q and q.lower() not in seen:
            seen.add(q.lower())
            qs.add(q, source, cluster)

    if "comqa" in sources:
        for split in ("train", "dev"):
            for r in read_jsonl(d / "comqa_wikianswers_clusters" / f"{split}.jsonl.gz"):
                name = f"{split}:{r['cluster_id']}"
                if r["cluster_id"] in excluded and split == "train":
                    continue
                if split == "dev" and r["cluster_id"] in excluded:
                    continue  # cluster ids may repeat across splits: stay on the safe side
                cid = len(qs.cluster_names)
                qs.cluster_names.append(name)
                for q in r["questions"]:
                    add(q, "comqa", cid)
    if "wellformed" in sources:
        for split in ("train", "dev", "test"):
            for r in read_jsonl(d / "query_wellformedness" / f"{split}.jsonl.gz"):
                if r["wellformedness"] >= wellformed_min:
                    add(r["query"].replace(" ?", "?"), "wellformed")
    if "mqr" in sources:
        for split in ("dev", "test"):
            for r in read_jsonl(d / "mqr" / f"{split}.jsonl.gz"):
                add(r["well_formed"], "mqr")
    if "squad" in sources:
        for q in squad.questions(squad.load(d / "squad2_dev_subset" / "dev-v2.0.subset.json.gz")):
            add(q, "squad")
    if "vqa" in sources:
        for split in vqa.SPLITS:
            for r in vqa.read_split(d, split):
                add(r["question"], "vqa")
    return qs


def seed_clusters(pairs: Sequence[SeedPair]) -> Dict[str, List[int]]:
    """Indices of the T0 pairs per cluster, in file order."""
    out: Dict[str, List[int]] = {}
    for i, p in enumerate(pairs):
        out.setdefault(p.cluster_id, []).append(i)
    return out


def fit_default_profile(data: Optional[os.PathLike] = None, out="default", workers: int = 1):
    """Fit the synthetic-corpus profile shipped in :mod:`pysynth.data.synthetic` from the shared
    data and write it to ``out`` (``"default"``: the shipped file; None: don't write).

    The question set is :func:`pysynth.k2q.data.load_question_set` without the T0 clusters
    (as the K2Q protocol uses it): ComQA/WikiAnswers paraphrase clusters, query-wellformedness
    (>= 0.8), MQR, SQuAD 2.0 and VQA questions.
    """
    from pysynth.data.synthetic import DEFAULT_PROFILE_PATH, fit_profile

    if out == "default":
        out = DEFAULT_PROFILE_PATH
    seeds = seed_clusters(load_seed_pairs(data))
    qs = load_question_set(data, exclude_clusters=set(seeds))
    counts: Dict[str, int] = {}
    for s_ in qs.source:
        counts[s_] = counts.get(s_, 0) + 1
    desc = ("pysynth.k2q.data.load_question_set() without the T0 clusters: "
            + ", ".join(f"{k} {v}" for k, v in sorted(counts.items())))
    profile = fit_profile(qs.questions, qs.cluster, workers=workers, description=desc)
    if out is not None:
        profile.save(out)
    return profile
