"""Evaluation sets for duplicate detection built from the shared data (Rücklé et al. 2019 evaluate on
AskUbuntu, SuperUser, Apple and Android, whose texts are not obtainable here):

* ``mqr``: query = a question's first (ill-formed) title, positive = its edited well-formed title
  (Chu et al. 2020's MQR pairs), negatives = well-formed titles of other questions of the same
  site;
* ``comqa``: a forum made of ComQA's WikiAnswers paraphrase clusters: query = a question of a
  cluster with at least two, positives = the rest of its cluster, negatives = questions of other
  clusters;
* ``postlinks``: the Stack Exchange duplicates of the shared dumps (``stackexchange_dumps/*``,
  PostLinks ``LinkTypeId`` 3, the labels Rücklé et al.'s four sets come from): query = the question
  marked as a duplicate, positive = the question it duplicates, negatives = other questions of the
  same site (never one of the query's known duplicates); a question's text is its title and the
  first 100 words of its body (HTML to text as :func:`pysynth.dup.prep.html_to_text`), since the
  paper evaluates on titles and bodies. Rows carry ``site``, ``query_post_id`` and
  ``positive_post_id``: leave those questions out of training pairs
  (:func:`exclude_ids`; ``pysynth dup pairs --exclude-ids``). Links to posts missing from the
  dump (deleted, or not a question) are counted in ``counts``.

Training pairs: :func:`read_pairs` groups ``pysynth dup pairs`` rows by question for
:mod:`pysynth.dup.train` (torch-free, so bad files fail before torch loads).

Negatives: ``"bm25"`` (default) the pool's questions that BM25 ranks highest for the query (hard
negatives, like the 20 BM25 candidates of AskUbuntu-Lei; a pool question identical to a positive is
skipped), or ``"random"``, drawn without replacement with a seeded generator (easy: every scorer gets
P@1 near 100). Rows are ``{"query", "positives", "negatives", "source", "id"}``.
"""
from __future__ import annotations

import gzip
import html
import json
import random
from pathlib import Path
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

__all__ = ["eval_rows", "exclude_ids", "read_pairs", "SOURCES"]

SOURCES = ("mqr", "comqa", "postlinks")
BODY_WORDS = 100


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


def _site_questions(dump) -> Tuple[str, Dict[str, str], List[Tuple[str, str]], Dict[str, int]]:
    """``(site, {post id: title + body text}, duplicate links, counts)`` of one dump."""
    from pysynth.datasets.stackexchange import duplicate_links, open_dump
    from pysynth.dup.prep import html_to_text

    d = open_dump(dump)
    texts: Dict[str, str] = {}
    for r in d.rows("Posts"):
        if r.get("PostTypeId") != "1":
            continue
        title = " ".join(html.unescape(r.get("Title", "")).split())
        body = " ".join(html_to_text(r.get("Body", "")).split()[:BODY_WORDS])
        if title:
            texts[r.get("Id", "")] = f"{title} {body}".strip()
    links, counts = [], {"links": 0, "missing_post": 0, "self_link": 0}
    seen = set()
    for a, b in duplicate_links(d):
        counts["links"] += 1
        if a == b:
            counts["self_link"] += 1
        elif a not in texts or b not in texts:
            counts["missing_post"] += 1
        elif (a, b) not in seen:
            seen.add((a, b))
            links.append((a, b))
    return d.site, texts, links, counts


def _postlinks(data_dir: Path, negatives: int, negatives_from: str, rng: random.Random,
               counts: Optional[dict]) -> List[dict]:
    root = data_dir / "stackexchange_dumps"
    if not root.is_dir():
        raise ValueError(f"data: {root} not found; pass the shared data folder (../shared/data)")
    out = []
    for dump in sorted(p for p in root.iterdir() if p.is_dir()):
        site, texts, links, c = _site_questions(dump)
        if counts is not None:
            counts[site] = c
        if not links:
            continue
        dups: Dict[str, set] = {}
        for a, b in links:
            dups.setdefault(a, set()).add(b)
            dups.setdefault(b, set()).add(a)
        ids = list(texts)
        pool = [texts[i] for i in ids]
        banned = [{texts[x] for x in dups[a] | {a}} for a, _ in links]
        if negatives_from == "bm25":
            picked = _bm25_pick([texts[a] for a, _ in links], pool, banned, negatives)
        else:
            picked = [rng.sample([t for t in pool if t not in ex], min(negatives, len(pool) - len(ex)))
                      for ex in banned]
        for (a, b), neg in zip(links, picked):
            out.append({"id": f"postlinks-{site}-{a}-{b}", "source": f"postlinks/{site}", "site": site,
                        "query_post_id": a, "positive_post_id": b, "query": texts[a], "positives": [texts[b]],
                        "negatives": neg})
    return out


def exclude_ids(rows: List[dict]) -> Dict[str, List[str]]:
    """Per site, the post ids of ``postlinks`` rows (queries and positives), sorted: the
    evaluation questions to leave out of training pairs."""
    out: Dict[str, set] = {}
    for r in rows:
        if "site" in r:
            out.setdefault(r["site"], set()).update((r["query_post_id"], r["positive_post_id"]))
    return {k: sorted(v, key=lambda x: (len(x), x)) for k, v in sorted(out.items())}


SPLITS = {"mqr": ("test", "dev"), "comqa": ("dev", "train"), "postlinks": (None,)}


def eval_rows(data_dir, source: str = "mqr", split: Optional[str] = None, negatives: int = 20, seed: int = 0,
              negatives_from: str = "bm25", counts: Optional[dict] = None) -> List[dict]:
    """Eval rows for :func:`pysynth.dup.evaluate.evaluate` (see the module doc).

    ``split``: ``test`` (default) or ``dev`` (MQR), ``dev`` (default) or ``train`` (ComQA), ignored for
    ``postlinks`` (every duplicate link of every dump). ``negatives``: per query (fewer when the
    pool is smaller); ``negatives_from``: ``"bm25"`` or ``"random"``. ``counts``: a dict that
    receives ``postlinks``' per-site link counts (links whose posts are missing, dropped).
    """
    if source not in SOURCES:
        raise ValueError(f"source: must be one of {SOURCES}, got {source!r}")
    if source != "postlinks":
        split = SPLITS[source][0] if split is None else split
        if split not in SPLITS[source]:
            raise ValueError(f"split: {source} has the splits {', '.join(SPLITS[source])}, got {split!r}")
    if negatives_from not in ("bm25", "random"):
        raise ValueError(f"negatives_from: must be 'bm25' or 'random', got {negatives_from!r}")
    if isinstance(negatives, bool) or not isinstance(negatives, int) or negatives < 1:
        raise ValueError(f"negatives: must be a positive integer, got {negatives!r}")
    d = Path(data_dir)
    rng = random.Random(seed)
    out = []
    if source == "postlinks":
        return _postlinks(d, negatives, negatives_from, rng, counts)
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


def read_pairs(rows: Iterable[Mapping[str, Any]], what: str = "pairs", fraction: float = 1.0,
               seed: int = 0) -> Tuple[List[dict], Dict[str, int]]:
    """Group pair rows ``{"title", "body", "label", "site"?, "post_id"?, "method"?}`` by question.

    Returns ``(groups, counts)``: groups ``{"title", "pos": [bodies], "neg": [bodies]}`` (one per
    ``(site, post_id, method)``, or per title and method when a row has no ``post_id``; ``method``
    is ``ws-tb`` or ``dqg`` in ``pysynth dup pairs --method both`` files), in file order; a group
    without a positive row is counted (``no_positive``) and left out. ``fraction`` in (0, 1]
    keeps a seeded share of the questions (the paper's "more weak pairs" curve, Fig. 3).
    Raises ValueError naming the row for a bad field.
    """
    if not isinstance(fraction, (int, float)) or isinstance(fraction, bool) or not 0.0 < fraction <= 1.0:
        raise ValueError(f"fraction: must be in (0, 1], got {fraction!r}")
    groups: Dict[Any, dict] = {}
    counts = {"rows": 0, "positives": 0, "negatives": 0}
    for i, r in enumerate(rows):
        counts["rows"] += 1
        if not isinstance(r, Mapping):
            raise ValueError(f"{what} row {i + 1}: expected an object, got {type(r).__name__}")
        for key in ("title", "body"):
            v = r.get(key)
            if not isinstance(v, str) or not v.strip():
                raise ValueError(f"{what} row {i + 1}: {key!r} must be a non-empty string "
                                 "(rows of `pysynth dup pairs`: title, body, label)")
        label = r.get("label")
        if isinstance(label, bool) or label not in (0, 1):
            raise ValueError(f"{what} row {i + 1}: 'label' must be 1 (same question) or 0 (a negative), got {label!r}")
        # one group per question and method: a DQG positive (a short generated title) is paired
        # with DQG negatives, never with WS-TB bodies (a length shortcut otherwise)
        key = ((r.get("site"), r.get("post_id"), r.get("method")) if r.get("post_id") is not None
               else ("", r["title"], r.get("method")))
        g = groups.setdefault(key, {"title": r["title"], "pos": [], "neg": []})
        (g["pos"] if label == 1 else g["neg"]).append(r["body"])
        counts["positives" if label == 1 else "negatives"] += 1
    if counts["rows"] == 0:
        raise ValueError(f"{what}: no rows; build them with `pysynth dup pairs --in DUMP --out FILE`")
    out = [g for g in groups.values() if g["pos"]]
    counts["questions"] = len(groups)
    counts["no_positive"] = len(groups) - len(out)
    if not out:
        raise ValueError(f"{what}: no row with label 1 (a question's own body or generated title); nothing to learn")
    if fraction < 1.0:
        keep = sorted(random.Random(seed).sample(range(len(out)), max(1, round(fraction * len(out)))))
        counts["left_out_by_fraction"] = len(out) - len(keep)
        out = [out[j] for j in keep]
    counts["used"] = len(out)
    return out, counts
