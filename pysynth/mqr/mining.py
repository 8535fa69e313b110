"""Mining question-rewriting pairs from Stack Exchange title edits (Chu et al. 2020, Sect. "Dataset").

A question whose title was edited gives a pair: ill-formed = its first title (``PostHistory``
type 1), well-formed = its current title (``Posts.Title``). The paper's filters, checked against
the released MQR dev/test (every released pair passes them; ``tests/mqr``):

* the well-formed title starts with one of :data:`QUESTION_WORDS` — a *prefix* test on the
  lower-cased title, which is what the released data shows ("What's", "Does", "Isn't");
* at least 80 % of the characters of both sides are in :data:`VALID_CHARS` (footnote 5);
* the well-formed title ends with "?" (the released data: all of them do);
* the two sides differ other than by case, white space or a status tag such as "[closed]".

Dev/test candidates (``--splits``): sentence BLEU of the ill-formed title against the well-formed
one below 0.3 — BLEU-4 without smoothing on white-space tokens with punctuation-only tokens
dropped (:func:`split_bleu`; the released dev/test all score below 0.3 this way, max 0.287, while
sacrebleu's tokenization would not agree). The paper's second rule (Jaccard of the verb and noun
lists > 0.8) needs a part-of-speech tagger, which is not available offline here: not applied.

Skipped and counted, never silently: questions deleted since (not in ``Posts``), migrated or
merged posts (history types 17, 18, 35-38), and the dumps' fabricated rows (post ids
1000000001-1000000010).
"""
from __future__ import annotations

import math
import re
import string
from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from pysynth.datasets.stackexchange import Dump, open_dump, question_titles, title_events

__all__ = ["QUESTION_WORDS", "VALID_CHARS", "MODES", "FILTERS", "MineResult", "mine", "title_pairs",
           "check_pair", "valid_char_fraction", "same_title", "split_bleu", "statistics"]

#: the paper's list (the well-formed side must start with one of them, lower-cased)
QUESTION_WORDS = ("how", "why", "when", "what", "which", "who", "whose", "do", "where", "does", "is", "are",
                  "must", "may", "need", "did", "was", "were", "can", "has", "have")
#: footnote 5: the valid characters after lower-casing, space included
VALID_CHARS = frozenset("0123456789abcdefghijklmnopqrstuvwxyz.,/?:;'[]_+-=!@#$%&*()|{}<>\" ")
MODES = ("initial", "last-edit", "all-edits")
#: the filters, in the order they are applied (a pair is counted under the first it fails)
FILTERS = ("unchanged", "question_word", "question_mark", "valid_chars")
_FABRICATED = range(1000000001, 1000000011)
_STATUS_TAG = re.compile(r"\s*\[(?:closed|duplicate|on hold|migrated|solved|resolved|answered|deleted)\]\s*",
                         re.IGNORECASE)
_PUNCT = frozenset(string.punctuation)


def valid_char_fraction(text: str) -> float:
    """Share of the characters of ``text`` (lower-cased) that are in :data:`VALID_CHARS`."""
    low = text.lower()
    return sum(c in VALID_CHARS for c in low) / len(low) if low else 0.0


def same_title(a: str, b: str) -> bool:
    """The titles differ only by case, white space or status tags ("[closed]", "[duplicate]", ...)."""
    def norm(t):
        return " ".join(_STATUS_TAG.sub(" ", t).lower().split())

    return norm(a) == norm(b)


def check_pair(ill: str, well: str, min_valid: float = 0.8) -> Optional[str]:
    """The first of :data:`FILTERS` the pair fails, or None when it is kept."""
    if same_title(ill, well):
        return "unchanged"
    if not well.lower().lstrip().startswith(QUESTION_WORDS):
        return "question_word"
    if not well.rstrip().endswith("?"):
        return "question_mark"
    if valid_char_fraction(well) < min_valid or valid_char_fraction(ill) < min_valid:
        return "valid_chars"
    return None


def _content_tokens(text: str) -> str:
    return " ".join(t for t in text.split() if not all(c in _PUNCT for c in t))


def split_bleu(ill: Sequence[str], well: Sequence[str]) -> np.ndarray:
    """Sentence BLEU-4 of each ill-formed title (hypothesis) against its well-formed title
    (reference), without smoothing, on white-space tokens with punctuation-only tokens dropped:
    the dev/test rule of the paper (candidates score below 0.3). Uses
    :func:`pysynth.metrics.sentence_bleu` (``flavor="nltk"``, ``smooth_method=0``)."""
    from pysynth.metrics import sentence_bleu

    if len(ill) != len(well):
        raise ValueError(f"ill, well: {len(ill)} and {len(well)} titles; they must align")
    if not len(ill):
        return np.zeros(0)
    return np.asarray(sentence_bleu([_content_tokens(t) for t in ill], [_content_tokens(t) for t in well],
                                    flavor="nltk", tokenize="none", smooth_method=0), dtype=np.float64)


@dataclass
class _Post:
    titles: List[str] = field(default_factory=list)  # chronological: initial, then edits / rollbacks
    moved: bool = False


def title_pairs(dump: Union[str, Dump], mode: str = "initial", counts: Optional[Counter] = None
                ) -> Iterator[Tuple[int, str, str]]:
    """``(post_id, ill_formed, well_formed)`` for every question of ``dump`` whose title was
    edited, in post id order, before the filters.

    mode : ``initial`` (the paper: first title -> current title), ``last-edit`` (the title before
        the last edit -> current title) or ``all-edits`` (every consecutive pair of titles).
    counts : if given, receives ``edited``, ``missing`` (deleted since), ``moved``, ``fabricated``.

    Memory: the first titles of all questions (the history is ordered by time, not by post, and
    a first title is only known to matter once its edit comes), streamed from the dump.
    """
    if mode not in MODES:
        raise ValueError(f"mode: must be one of {MODES}, got {mode!r}")
    d = open_dump(dump)
    c = counts if counts is not None else Counter()
    posts: Dict[int, _Post] = {}
    for pid, kind, text in title_events(d):
        if kind == "moved":
            posts.setdefault(pid, _Post()).moved = True
            continue
        p = posts.get(pid)
        if p is None:
            p = posts[pid] = _Post()
        if text is not None and (not p.titles or kind != "initial"):
            p.titles.append(text)
    edited = {pid: p for pid, p in posts.items() if len(p.titles) > 1}
    del posts
    current = {pid: title for pid, title in question_titles(d) if pid in edited}
    for pid in sorted(edited):
        p = edited[pid]
        c["edited"] += 1
        if pid in _FABRICATED:
            c["fabricated"] += 1
            continue
        if p.moved:
            c["moved"] += 1
            continue
        now = current.get(pid)
        if now is None:
            c["missing"] += 1
            continue
        if mode == "initial":
            yield pid, p.titles[0], now
        elif mode == "last-edit":
            # the title before the last edit; the current title when a later rollback restored it
            yield pid, p.titles[-2], now
        else:
            seq = p.titles[:-1] + [now]
            for a, b in zip(seq, seq[1:]):
                yield pid, a, b


@dataclass
class MineResult:
    """Mined pairs, what each filter removed, and the statistics (per site and overall)."""

    rows: List[dict]
    counts: Dict[str, Dict[str, int]]
    stats: dict


def mine(dumps: Iterable[Union[str, Dump]], mode: str = "initial", splits: bool = False,
         min_valid: float = 0.8, bleu_max: float = 0.3) -> MineResult:
    """Question-rewriting pairs of Stack Exchange dumps, filtered as in Chu et al. 2020.

    Parameters
    ----------
    dumps : dump directories or archives (or :class:`pysynth.datasets.stackexchange.Dump`), one per site.
    mode : see :func:`title_pairs`.
    splits : add ``bleu`` (:func:`split_bleu`) and ``split``: ``devtest`` for pairs with BLEU
        below ``bleu_max`` (the paper's dev/test candidates), ``train`` otherwise.
    min_valid : the valid-character share both sides need (footnote 5: 80 %).

    Returns
    -------
    MineResult
        ``rows``: ``{"site", "post_id", "ill_formed", "well_formed"[, "bleu", "split"]}`` in dump
        then post-id order; ``counts[site]``: pairs found, per filter, kept; ``stats``: see
        :func:`statistics`.
    """
    rows: List[dict] = []
    counts: Dict[str, Dict[str, int]] = {}
    seen_sites = set()
    for dump in dumps:
        d = open_dump(dump)
        if d.site in seen_sites:
            raise ValueError(f"dumps: site {d.site!r} given twice ({d.path})")
        seen_sites.add(d.site)
        c: Counter = Counter()
        site_rows = []
        for pid, ill, well in title_pairs(d, mode, c):
            c["pairs"] += 1
            why = check_pair(ill, well, min_valid)
            if why is not None:
                c[why] += 1
                continue
            site_rows.append({"site": d.site, "post_id": pid, "ill_formed": ill, "well_formed": well})
        c["kept"] = len(site_rows)
        if splits and site_rows:
            bleu = split_bleu([r["ill_formed"] for r in site_rows], [r["well_formed"] for r in site_rows])
            for r, b in zip(site_rows, bleu.tolist()):
                r["bleu"] = round(b, 6)
                r["split"] = "devtest" if b < bleu_max else "train"
            c["devtest"] = sum(r["split"] == "devtest" for r in site_rows)
            c["train"] = len(site_rows) - c["devtest"]
        order = ["edited", "fabricated", "moved", "missing", "pairs", *FILTERS, "kept"] + (["devtest", "train"]
                                                                                           if splits else [])
        counts[d.site] = {k: int(c.get(k, 0)) for k in order}
        rows.extend(site_rows)
    return MineResult(rows, counts, statistics(rows))


def statistics(rows: Sequence[dict]) -> dict:
    """Dataset statistics in the manner of the paper's tables: pairs and sites; instances per
    site (mean, std, min, max: Table 5); mean title length in white-space tokens of each side;
    the first word of the well-formed titles (the explicit-question share, Table 2's "Explicit"
    is a human judgement and is not reproduced); per split when the rows have one."""
    def block(rs):
        per_site = Counter(r["site"] for r in rs)
        n = np.asarray(list(per_site.values()), dtype=np.float64)
        first = Counter(r["well_formed"].split()[0].lower().rstrip("?,") if r["well_formed"].split() else ""
                        for r in rs)
        out = {"pairs": len(rs), "sites": len(per_site)}
        if len(rs):
            out.update({
                "per_site": {"mean": float(n.mean()), "std": float(n.std()), "min": int(n.min()), "max": int(n.max())},
                "ill_tokens_mean": float(np.mean([len(r["ill_formed"].split()) for r in rs])),
                "well_tokens_mean": float(np.mean([len(r["well_formed"].split()) for r in rs])),
                "top_first_words": dict(first.most_common(10)),
                "top_sites": dict(per_site.most_common(10)),
            })
        return out

    out = {"all": block(rows)}
    if rows and "split" in rows[0]:
        for s in ("train", "devtest"):
            out[s] = block([r for r in rows if r["split"] == s])
    return _finite(out)


def _finite(x):
    if isinstance(x, dict):
        return {k: _finite(v) for k, v in x.items()}
    if isinstance(x, float) and not math.isfinite(x):
        return None
    return x
