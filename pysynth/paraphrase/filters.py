"""The two filters of Granstedt 2017 (Sect. 3.2.1): the intermediate pivot filter and the final
diversity score that chooses the paraphrases.

Words are whitespace tokens of the text with its trailing terminal punctuation removed, case kept
(the thesis's tables are only consistent with case-sensitive words: Table 3.7 picks "Is it an
Grocery Store?" for "Is this a grocery store ?"). ``<unk>`` is an unknown, not a word; ``<s>``,
``</s>`` (and the thesis's ``<\\s>``) and ``<pad>`` are illegal tokens.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Dict, Iterable, List, Optional, Sequence, Set

__all__ = ["ILLEGAL", "UNK", "MODES", "Analysis", "analyze", "pivot_rejections", "PIVOT_RULES", "score",
           "select", "Scored", "strip_question", "restore_question"]

ILLEGAL = frozenset({"<s>", "</s>", "<\\s>", "<pad>"})
UNK = "<unk>"
MODES = ("augmented", "diverse")
#: the intermediate filter's rules, in the order they are reported
PIVOT_RULES = ("illegal_tokens", "multiple_punctuation", "too_short", "unknown_density")
_TRAIL = re.compile(r"[\s.?!]*$")


@dataclass(frozen=True)
class Analysis:
    """A text as the filters see it: ``words`` (in order), unknown and illegal token counts, and
    whether it ends in more than one terminal punctuation mark (``"are <unk>!!"``)."""

    words: tuple
    unknowns: int
    illegal: int
    multi_punct: bool


def analyze(text: str) -> Analysis:
    """Split ``text`` into words, unknowns and illegal tokens (see the module doc)."""
    if not isinstance(text, str):
        raise TypeError(f"text: expected str, got {type(text).__name__}")
    tail = _TRAIL.search(text).group(0)
    multi = sum(c in ".?!" for c in tail) > 1
    toks = text[: len(text) - len(tail)].split()
    # "<unk>!" or "store<unk>" (the thesis's output glues them): count every <unk> inside a token
    words, unknowns, illegal = [], 0, 0
    for t in toks:
        if t in ILLEGAL:
            illegal += 1
            continue
        k = t.count(UNK)
        if k:
            unknowns += k
            t = t.replace(UNK, "")
            if not t:
                continue
        words.append(t)
    return Analysis(tuple(words), unknowns, illegal, multi)


def pivot_rejections(pivot: str, source: str) -> List[str]:
    """The intermediate filter (Sect. 3.2.1) on one pivot of ``source``: the rules it breaks,
    in :data:`PIVOT_RULES` order (empty: keep it).

    illegal_tokens: a reserved token; multiple_punctuation: more than one terminal mark;
    too_short: more than two words shorter than the source; unknown_density: more than one
    unknown per five words.
    """
    p, s = analyze(pivot), analyze(source)
    n = len(p.words) + p.unknowns
    out = []
    if p.illegal:
        out.append("illegal_tokens")
    if p.multi_punct:
        out.append("multiple_punctuation")
    if n < len(s.words) - 2:
        out.append("too_short")
    if p.unknowns * 5 > n:
        out.append("unknown_density")
    return out


@dataclass
class Scored:
    """One candidate's score and its components (Sect. 3.2.1): ``score = words - overlap -
    length - unknown - illegal``."""

    text: str
    score: float
    words: int
    overlap: int
    length: float
    unknown: float
    illegal: float
    chosen: bool = False

    def as_dict(self) -> Dict[str, object]:
        return {"text": self.text, "score": self.score, "words": self.words, "overlap": self.overlap,
                "length_penalty": self.length, "unknown_penalty": self.unknown, "illegal_penalty": self.illegal,
                "chosen": self.chosen}


def _fold(words: Iterable[str], case_sensitive: bool) -> Set[str]:
    return set(words) if case_sensitive else {w.lower() for w in words}


def score(candidate: str, original: str, *, seen: Optional[Set[str]] = None, unknown_penalty: float = 1.0,
          length_penalty: float = 10.0, violation_penalty: float = 10.0, case_sensitive: bool = True) -> Scored:
    """The diversity score of ``candidate`` as a paraphrase of ``original`` (Granstedt 2017, Sect. 3.2.1).

    ``|W(c)| - |W(c) & (W(o) | seen)| - length_penalty * [c is more than two words shorter than o]
    - unknown_penalty * unknowns(c) - violation_penalty * (illegal tokens(c) + [multiple terminal
    punctuation in c])``, with W the set of words. ``seen``: the words of paraphrases already
    chosen (the "diverse" mode). The thesis sets the violation coefficient to 10 and does not
    give the length coefficient; 10 (the same as a violation) is pysynth's default.
    """
    c, o = analyze(candidate), analyze(original)
    wc = _fold(c.words, case_sensitive)
    against = _fold(o.words, case_sensitive) | (seen or set())
    overlap = len(wc & against)
    lp = length_penalty if len(c.words) + c.unknowns < len(o.words) - 2 else 0.0
    up = unknown_penalty * c.unknowns
    ip = violation_penalty * (c.illegal + int(c.multi_punct))
    return Scored(candidate, len(wc) - overlap - lp - up - ip, len(wc), overlap, lp, up, ip)


def select(original: str, candidates: Sequence[str], mode: str = "augmented", top: int = 3, *,
           unknown_penalty: Optional[float] = None, length_penalty: float = 10.0, violation_penalty: float = 10.0,
           case_sensitive: bool = True, return_scores: bool = False):
    """Choose the paraphrases of ``original`` among ``candidates`` (Granstedt 2017, Sect. 3.2.1).

    Parameters
    ----------
    original : str
        The source question.
    candidates : sequence of str
        Back-translations, in generation order (which breaks ties: the earlier wins). Repeats
        are scored once.
    mode : {"augmented", "diverse"}
        ``augmented``: the ``top`` highest scores above 0, unknown penalty 1 per unknown.
        ``diverse``: unknown penalty 10 (as an illegal token) and a greedy choice where the words
        of the paraphrases already chosen count as overlap too.
    top : int
        Paraphrases to choose at most.
    unknown_penalty : float, optional
        Default 1 (augmented) or 10 (diverse), the thesis's settings.
    return_scores : bool
        Also return every distinct candidate's :class:`Scored` (final components; ``chosen`` set).

    Returns
    -------
    list of str
        The chosen candidates in their generation order (fewer than ``top`` when fewer score
        above 0), or ``(chosen, scored)`` with ``return_scores``.

    Examples
    --------
    >>> select("How many animals can be seen ?", ["How many animals can be viewed",
    ...        "How many animals can they be viewed", "How many animals can be seen"])
    ['How many animals can be viewed', 'How many animals can they be viewed']
    """
    if mode not in MODES:
        raise ValueError(f"mode: must be one of {MODES}, got {mode!r}")
    if not isinstance(original, str):
        raise TypeError(f"original: expected str, got {type(original).__name__}")
    if isinstance(candidates, str):
        raise TypeError("candidates: expected a list of strings, got a single str (wrap it in a list)")
    if isinstance(top, bool) or not isinstance(top, int) or top < 1:
        raise ValueError(f"top: must be a positive integer, got {top!r}")
    uniq: List[str] = []
    have = set()
    for i, c in enumerate(candidates):
        if not isinstance(c, str):
            raise TypeError(f"candidates[{i}]: expected str, got {type(c).__name__}")
        if c not in have:
            have.add(c)
            uniq.append(c)
    if unknown_penalty is None:
        unknown_penalty = 1.0 if mode == "augmented" else violation_penalty
    kw = dict(unknown_penalty=unknown_penalty, length_penalty=length_penalty, violation_penalty=violation_penalty,
              case_sensitive=case_sensitive)
    scored = [score(c, original, **kw) for c in uniq]
    picked: List[int] = []
    if mode == "augmented":
        ranked = sorted((i for i, s in enumerate(scored) if s.score > 0), key=lambda i: (-scored[i].score, i))
        picked = ranked[:top]
    else:
        seen: Set[str] = set()
        left = list(range(len(uniq)))
        while len(picked) < top and left:
            rescored = {i: score(uniq[i], original, seen=seen, **kw) for i in left}
            best = min(left, key=lambda i: (-rescored[i].score, i))
            for i in left:
                scored[i] = rescored[i]
            if rescored[best].score <= 0:
                break
            picked.append(best)
            left.remove(best)
            seen |= _fold(analyze(uniq[best]).words, case_sensitive)
    picked.sort()
    for i in picked:
        scored[i].chosen = True
    chosen = [uniq[i] for i in picked]
    return (chosen, scored) if return_scores else chosen


_QEND = re.compile(r"\s*\?+\s*$")


def strip_question(text: str) -> str:
    """``text`` without its trailing question mark(s) (Sect. 3.2: the fre2eng model turns a word
    before a final "?" into an unknown, so the thesis removes it before the backward model)."""
    return _QEND.sub("", text)


def restore_question(paraphrase: str, original: str) -> str:
    """Put the question mark back when ``original`` ends with one (and ``paraphrase`` does not)."""
    if _QEND.search(original) and not paraphrase.rstrip().endswith("?"):
        return strip_question(paraphrase).rstrip() + "?"
    return paraphrase
