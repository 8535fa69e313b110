"""Evaluation sets for duplicate detection built from the shared data (Rücklé et al. 2019 evaluate on
AskUbuntu, SuperUser, Apple and Android, whose texts are not obtainable here):

* ``mqr``: query = a question's first (ill-formed) title, positive = its edited well-formed title
  (Chu et al. 2020's MQR pairs), negatives = well-formed titles of other questions of the same
  site;
* ``comqa``: a forum made of ComQA's WikiAnswers paraphrase clusters: query = a question of a
  cluster with at least two, positives = the rest of its cluster, negatives = questions of other
  clusters.

Negatives: ``"bm25"`` (default) the pool's questions that BM25 ranks highest for the query (hard
negatives, like the 20 BM25 candidates of AskUbuntu-Lei; a pool question identical to a positive is
skipped), or ``"random"``, drawn without replacement with a seeded generator (easy: every scorer gets
P@1 near 100). Rows are ``{"query", "positives", "negatives", "source", "id"}``.
"""
from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Dict, List

__all__ = ["eval_rows", "SOURCES"]

SOURCES = ("mqr", "comqa")


def _read(path: Path) -> List[dict]:
    if not path.is_file():
        raise ValueError(f"data: {path} not found; pass the shared data folder (../shared/data)")
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(x) for x in f]


def _bm25_pick(queries: List[str], pool: List[str], exclude: List[set], n: int) -> List[List[str]]:
    """Per query, the ``n`` pool texts BM25 ranks highest, skipping ``exclude[i]``; topped up with
    the pool's first texts when fewer share a term with the query."""
    from pysynth.dup.evaluate import search_pool

    k = min(len(pool), n + max((len(e) for e in exclude), default=0) + 1)
    hits = search_pool(pool, queries, "bm25", k=k)
    if hits is None:  # a pool without any token
        return [[p for p in pool if p not in ex][:n] for ex in exclude]
    out = []
    for j, ex in enumerate(exclude):
        got = [pool[d] for d in hits.docs[j][: hits.counts[j]].tolist() if pool[d] not in ex]
        if len(got) < n:
            have = set(got)
            got += [p for p in pool if p not in ex and p not in have][: n - len(got)]
        out.append(got[:n])
    return out


def eval_rows(data_dir, source: str = "mqr", split: str = "test", negatives: int = 20, seed: int = 0,
              negatives_from: str = "bm25") -> List[dict]:
    """Eval rows for :func:`pysynth.dup.evaluate.evaluate` (see the module doc).

    ``split``: ``dev`` or ``test`` (MQR), ``train`` or ``dev`` (ComQA). ``negatives``: per query
    (fewer when the pool is smaller); ``negatives_from``: ``"bm25"`` or ``"random"``.
    """
    if source not in SOURCES:
        raise ValueError(f"source: must be one of {SOURCES}, got {source!r}")
    if negatives_from not in ("bm25", "random"):
        raise ValueError(f"negatives_from: must be 'bm25' or 'random', got {negatives_from!r}")
    if isinstance(negatives, bool) or not isinstance(negatives, int) or negatives < 1:
        raise ValueError(f"negatives: must be a positive integer, got {negatives!r}")
    d = Path(data_dir)
    rng = random.Random(seed)
    out = []
    if source == "mqr":
        rows = _read(d / "mqr" / f"{split}.jsonl.gz")
        by_site: Dict[str, List[int]] = {}
        for i, r in enumerate(rows):
            by_site.setdefault(r.get("category", ""), []).append(i)
        negs: Dict[int, List[str]] = {}
        for site, members in by_site.items():
            if negatives_from == "bm25":
                pool = list(dict.fromkeys(rows[j]["well_formed"] for j in members))
                picked = _bm25_pick([rows[i]["ill_formed"] for i in members], pool,
                                    [{rows[i]["well_formed"]} for i in members], negatives)
                negs.update(zip(members, picked))
            else:
                for i in members:
                    pool = [j for j in members if j != i and rows[j]["well_formed"] != rows[i]["well_formed"]]
                    negs[i] = [rows[j]["well_formed"] for j in rng.sample(pool, min(negatives, len(pool)))]
        for i, r in enumerate(rows):
            out.append({"id": f"mqr-{split}-{r.get('row_idx', i)}", "source": f"mqr/{r.get('category', '')}",
                        "query": r["ill_formed"], "positives": [r["well_formed"]], "negatives": negs[i]})
        return out
    clusters = _read(d / "comqa_wikianswers_clusters" / f"{split}.jsonl.gz")
    flat = [(c["cluster_id"], q) for c in clusters for q in c["questions"]]
    multi = [(c, list(dict.fromkeys(c["questions"]))) for c in clusters]
    multi = [(c, qs) for c, qs in multi if len(qs) >= 2]
    if negatives_from == "bm25":
        pool = list(dict.fromkeys(q for _, q in flat))
        picked = _bm25_pick([qs[0] for _, qs in multi], pool, [set(qs) for _, qs in multi], negatives)
    else:
        picked = [rng.sample(p, min(negatives, len(p)))
                  for p in ([q for cid, q in flat if cid != c["cluster_id"] and q not in qs] for c, qs in multi)]
    for (c, qs), neg in zip(multi, picked):
        out.append({"id": f"comqa-{split}-{c['cluster_id']}", "source": "comqa", "query": qs[0],
                    "positives": qs[1:], "negatives": neg})
    return out
