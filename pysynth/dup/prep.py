"""Title–body preprocessing of Stack Exchange questions (Rücklé et al. 2019, Appendix A), shared by
the weak-supervision pairs (:mod:`pysynth.dup.pairs`) and the title generator (:mod:`pysynth.dup.dqg`).

A body's HTML becomes text — code blocks (``<pre>``) and images dropped, inline ``<code>`` kept as
its text, each paragraph and list item one line, a link becomes its text (a bare URL becomes
``URL``), entities decoded; paragraphs under ``min_words`` words are dropped, and the paragraph kept
as the body is the one closest to the title (TF-IDF cosine over the site's bodies), or the whole
body (``select="all"``). Every question left out is counted by reason.
"""
from __future__ import annotations

import html
import math
import re
from collections import Counter
from dataclasses import dataclass
from html.parser import HTMLParser
from typing import Dict, Iterable, List, Optional, Sequence, Set, Tuple

__all__ = ["html_to_text", "paragraphs", "select_paragraph", "questions", "Questions", "linked_duplicates"]

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


@dataclass
class Questions:
    """The questions of one dump after Appendix A's filters: ``rows`` ``{"site", "post_id",
    "title", "body"}`` (``body``: the selected paragraph), ``counts`` per reason, ``duplicates``
    (post id -> ids linked to it as duplicates, PostLinks LinkTypeId 3) and ``matched``: the
    ``exclude`` entries that named a question of this dump."""

    site: str
    rows: List[dict]
    counts: Dict[str, int]
    duplicates: Dict[str, Set[str]]
    matched: Set[str]


def linked_duplicates(dump) -> Dict[str, Set[str]]:
    """post id -> the ids linked to it as duplicates (PostLinks, LinkTypeId 3, both directions);
    empty when the dump has no PostLinks table."""
    from pysynth.datasets.stackexchange import duplicate_links

    dups: Dict[str, Set[str]] = {}
    for a, b in duplicate_links(dump):
        dups.setdefault(a, set()).add(b)
        dups.setdefault(b, set()).add(a)
    return dups


def _check_exclude(exclude: Iterable[str]) -> Set[str]:
    if isinstance(exclude, str):
        raise TypeError("exclude: expected a list of post ids, got a single str (wrap it in a list)")
    out = set()
    for x in exclude:
        x = str(x).strip()
        if not x:
            continue
        site, _, pid = x.rpartition(":")
        if not pid.isdigit():
            raise ValueError(f"exclude: {x!r} is not a post id; write ID or SITE:ID (e.g. 1234 or beer:1234)")
        out.add(x)
    return out


def questions(dump, min_words: int = 10, select: str = "tfidf", min_score: Optional[int] = None,
              exclude: Iterable[str] = (), holdout_linked: bool = False) -> Questions:
    """A dump's questions with Appendix A's preprocessing (Rücklé et al. 2019, A.1).

    Parameters
    ----------
    dump : a dump folder or archive (:class:`pysynth.datasets.stackexchange.Dump`).
    min_words : paragraphs with fewer words are dropped; a question left without one is
        counted as ``short_body``.
    select : ``"tfidf"`` (the paragraph with the highest TF-IDF cosine to the title) or
        ``"all"`` (the paragraphs joined).
    min_score : leave out questions scored below it (``low_score``; the paper drops
        negative-score questions: ``0``).
    exclude : post ids to leave out (``excluded``): ``ID`` (any site) or ``SITE:ID``.
    holdout_linked : leave out every question with a PostLinks duplicate (``eval_holdout``):
        they are the evaluation items of the dumps' duplicate sets.
    """
    from pysynth.datasets.stackexchange import open_dump

    if select not in ("tfidf", "all"):
        raise ValueError(f"select: must be 'tfidf' or 'all', got {select!r}")
    if isinstance(min_words, bool) or not isinstance(min_words, int) or min_words < 1:
        raise ValueError(f"min_words: must be a positive integer, got {min_words!r}")
    excluded = _check_exclude(exclude)
    d = open_dump(dump)
    site = d.site
    dups = linked_duplicates(d)
    counts: Counter = Counter()
    matched: Set[str] = set()
    qs: List[Tuple[str, str, List[str]]] = []
    for r in d.rows("Posts"):
        if r.get("PostTypeId") != "1":
            continue
        counts["questions"] += 1
        pid = r.get("Id", "")
        hit = {x for x in (pid, f"{site}:{pid}") if x in excluded}
        if hit:
            matched |= hit
            counts["excluded"] += 1
            continue
        if holdout_linked and pid in dups:
            counts["eval_holdout"] += 1
            continue
        if min_score is not None and _score(r.get("Score")) < min_score:
            counts["low_score"] += 1
            continue
        title = " ".join(html.unescape(r.get("Title", "")).split())
        if not title:
            counts["no_title"] += 1
            continue
        body = r.get("Body", "")
        if not body.strip():
            counts["empty_body"] += 1
            continue
        paras = paragraphs(html_to_text(body), min_words)
        if not paras:
            counts["short_body"] += 1
            continue
        qs.append((pid, title, paras))
    df: Counter = Counter()
    for _, _, paras in qs:
        df.update(set(w.lower() for p in paras for w in _WORD.findall(p)))
    rows = []
    for pid, title, paras in qs:
        body = paras[select_paragraph(title, paras, df, len(qs))] if select == "tfidf" else " ".join(paras)
        rows.append({"site": site, "post_id": pid, "title": title, "body": body})
    counts["kept"] = len(rows)
    return Questions(site, rows, dict(counts), dups, matched)


def _score(v) -> int:
    """A post's Score (a missing or malformed one counts as 0: the dumps always write integers)."""
    try:
        return int(v or 0)
    except ValueError:
        return 0
