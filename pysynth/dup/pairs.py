"""Weak supervision from unlabelled questions (Rücklé et al. 2019, Sect. 3 and Appendix A): the
title–body preprocessing and the WS-TB training pairs.

Preprocessing (Appendix A): a body's HTML becomes text — code blocks (``<pre>``) and images
dropped, inline ``<code>`` kept as its text, each paragraph and list item one line, a link
becomes its text (a bare URL becomes ``URL``), entities decoded; paragraphs under ``min_words``
words are dropped, and the paragraph kept as the body is the one closest to the title (TF-IDF
cosine over the site's bodies), or the whole body (``select="all"``).

WS-TB: each question's (title, body) is a positive pair; its ``negatives`` random bodies come from
other questions of the same site and are never the question itself, one of its known duplicates
(PostLinks, LinkTypeId 3) or an excluded (evaluation) id — the released code allows the first.
Every question left out is counted by reason.
"""
from __future__ import annotations

import html
import math
import random
import re
from collections import Counter
from html.parser import HTMLParser
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

__all__ = ["html_to_text", "paragraphs", "select_paragraph", "ws_tb_pairs"]

_BLOCK = {"p", "li", "div", "br", "h1", "h2", "h3", "h4", "h5", "h6", "blockquote", "tr", "hr", "ul", "ol", "table"}
_URL = re.compile(r"https?://\S+")
_WORD = re.compile(r"\w+")


class _Text(HTMLParser):
    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.parts: List[str] = []
        self.skip = 0  # inside <pre> (code blocks): dropped
        self.href: List[Optional[str]] = []

    def handle_starttag(self, tag, attrs):
        if tag == "pre":
            self.skip += 1
        elif tag in _BLOCK:
            self.parts.append("\n")
        elif tag == "a":
            self.href.append(dict(attrs).get("href"))

    def handle_endtag(self, tag):
        if tag == "pre":
            self.skip = max(0, self.skip - 1)
            self.parts.append("\n")
        elif tag in _BLOCK:
            self.parts.append("\n")
        elif tag == "a" and self.href:
            self.href.pop()

    def handle_data(self, data):
        if not self.skip:
            self.parts.append(data)


def html_to_text(body: str) -> str:
    """A post body's HTML as text: one line per paragraph or list item (see the module doc).
    Broken HTML never raises: what the parser can read is kept."""
    if not isinstance(body, str):
        raise TypeError(f"body: expected str, got {type(body).__name__}")
    p = _Text()
    try:
        p.feed(body)
        p.close()
    except Exception:  # html.parser is lenient; anything else is kept as plain text
        return _clean(html.unescape(re.sub(r"<[^>]*>", " ", body)))
    return _clean("".join(p.parts))


def _clean(text: str) -> str:
    lines = (" ".join(_URL.sub("URL", line).split()) for line in text.split("\n"))
    return "\n".join(line for line in lines if line)


def paragraphs(text: str, min_words: int = 10) -> List[str]:
    """The lines of :func:`html_to_text`'s output with at least ``min_words`` words."""
    return [p for p in text.split("\n") if len(_WORD.findall(p)) >= min_words]


def _tf(text: str) -> Counter:
    return Counter(w.lower() for w in _WORD.findall(text))


def select_paragraph(title: str, paras: Sequence[str], df: Dict[str, int], n_docs: int) -> int:
    """Index of the paragraph with the highest TF-IDF cosine to ``title`` (``df``: document
    frequencies over ``n_docs`` bodies); ties go to the earlier paragraph."""
    def vec(c: Counter) -> Dict[str, float]:
        return {w: tf * math.log((1 + n_docs) / (1 + df.get(w, 0))) for w, tf in c.items()}

    t = vec(_tf(title))
    tn = math.sqrt(sum(v * v for v in t.values())) or 1.0
    best, best_s = 0, -1.0
    for i, p in enumerate(paras):
        v = vec(_tf(p))
        n = math.sqrt(sum(x * x for x in v.values())) or 1.0
        s = sum(t[w] * v[w] for w in t.keys() & v.keys()) / (tn * n)
        if s > best_s:
            best, best_s = i, s
    return best


def ws_tb_pairs(dump, negatives: int = 1, min_words: int = 10, select: str = "tfidf", min_score: Optional[int] = None,
                exclude: Iterable[str] = (), seed: int = 0) -> Tuple[List[dict], Dict[str, int]]:
    """WS-TB pairs of one Stack Exchange dump (a folder or archive; :class:`pysynth.stackexchange.Dump`).

    Returns ``(rows, counts)``: rows ``{"site", "post_id", "title", "body", "label"}`` — label 1 for
    the question's own body, 0 for each of ``negatives`` other bodies (``neg_post_id`` says whose);
    counts of questions kept and left out per reason. ``min_score``: leave out questions scored
    below it (the paper's option for negative-score questions). ``select``: ``"tfidf"`` or ``"all"``.
    Deterministic for a seed.
    """
    from pysynth.stackexchange import open_dump

    if select not in ("tfidf", "all"):
        raise ValueError(f"select: must be 'tfidf' or 'all', got {select!r}")
    if isinstance(negatives, bool) or not isinstance(negatives, int) or negatives < 0:
        raise ValueError(f"negatives: must be an integer >= 0, got {negatives!r}")
    d = open_dump(dump)
    excluded: Set[str] = {str(x) for x in exclude}
    counts = Counter()
    qs: List[Tuple[str, str, List[str]]] = []
    for r in d.rows("Posts"):
        if r.get("PostTypeId") != "1":
            continue
        counts["questions"] += 1
        pid = r.get("Id", "")
        if pid in excluded:
            counts["excluded"] += 1
            continue
        if min_score is not None and int(r.get("Score", "0") or 0) < min_score:
            counts["low_score"] += 1
            continue
        title = " ".join(html.unescape(r.get("Title", "")).split())
        if not title:
            counts["no_title"] += 1
            continue
        paras = paragraphs(html_to_text(r.get("Body", "")), min_words)
        if not paras:
            counts["short_body"] += 1
            continue
        qs.append((pid, title, paras))
    dups: Dict[str, Set[str]] = {}
    if d.has("PostLinks"):
        for r in d.rows("PostLinks"):
            if r.get("LinkTypeId") == "3":
                a, b = r.get("PostId", ""), r.get("RelatedPostId", "")
                dups.setdefault(a, set()).add(b)
                dups.setdefault(b, set()).add(a)
    df: Counter = Counter()
    for _, _, paras in qs:
        df.update(set(w.lower() for p in paras for w in _WORD.findall(p)))
    bodies = []
    for pid, title, paras in qs:
        body = paras[select_paragraph(title, paras, df, len(qs))] if select == "tfidf" else " ".join(paras)
        bodies.append(body)
    rng = random.Random(seed)
    rows = []
    site = d.site
    for i, (pid, title, _) in enumerate(qs):
        rows.append({"site": site, "post_id": pid, "title": title, "body": bodies[i], "label": 1})
        banned = {pid} | dups.get(pid, set())
        pool_ok = [j for j in range(len(qs)) if qs[j][0] not in banned]
        for j in rng.sample(pool_ok, min(negatives, len(pool_ok))):
            rows.append({"site": site, "post_id": pid, "title": title, "body": bodies[j], "label": 0,
                         "neg_post_id": qs[j][0]})
        if len(pool_ok) < negatives:
            counts["fewer_negatives"] += 1
    counts["kept"] = len(qs)
    counts["pairs"] = len(rows)
    return rows, dict(counts)
