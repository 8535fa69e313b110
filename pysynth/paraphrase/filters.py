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
from typing import Callable, Dict, Iterable, List, Optional, Sequence, Set

__all__ = ["ILLEGAL", "UNK", "MODES", "Analysis", "analyze", "pivot_rejections", "PIVOT_RULES", "score",
           "select", "Scored", "strip_question", "restore_question"]

#: candidates encoded per call of the ``min_similarity`` scorer (the next ones in the choice's order)
SIMILARITY_BATCH = 16
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
    #: cosine with the original (``min_similarity``; None: not scored, it could not be chosen)
    similarity: Optional[float] = None

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
           case_sensitive: bool = True, return_scores: bool = False, min_similarity: Optional[float] = None,
           similarity: Optional[Callable[[List[str]], Sequence[float]]] = None):
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
    min_similarity : float, optional
        The meaning filter (issue 26): a candidate whose ``similarity`` with the original is
        below it is never chosen; the next best at or above it is. Only the candidates the choice
        reaches are encoded (in batches of :data:`SIMILARITY_BATCH`, in the choice's order, never
        one scoring 0 or less); their :attr:`Scored.similarity` is set, the others' stays None.
    similarity : callable, optional
        ``texts -> cosines with original`` (one call per question; needed with
        ``min_similarity``), e.g. ``lambda ts: pysynth.models.embed.similarity([original] * len(ts), ts)``.

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
    gate = _SimilarityGate(uniq, scored, min_similarity, similarity)
    picked: List[int] = []
    if mode == "augmented":
        ranked = sorted((i for i, s in enumerate(scored) if s.score > 0), key=lambda i: (-scored[i].score, i))
        for k, i in enumerate(ranked):
            if len(picked) == top:
                break
            if gate.passes(i, ranked[k:]):
                picked.append(i)
    else:
        seen: Set[str] = set()
        left = list(range(len(uniq)))
        while len(picked) < top and left:
            rescored = {i: score(uniq[i], original, seen=seen, **kw) for i in left}
            order = sorted(left, key=lambda i: (-rescored[i].score, i))
            best = order[0]
            for i in left:
                rescored[i].similarity = scored[i].similarity
                scored[i] = rescored[i]
            if rescored[best].score <= 0:
                break
            left.remove(best)
            if not gate.passes(best, order):  # under min_similarity: never chosen, the next best is tried
                continue
            picked.append(best)
            seen |= _fold(analyze(uniq[best]).words, case_sensitive)
    picked.sort()
    for i in picked:
        scored[i].chosen = True
    chosen = [uniq[i] for i in picked]
    return (chosen, scored) if return_scores else chosen


class _SimilarityGate:
    """``min_similarity`` in the choice: a candidate's cosine is asked for when the choice reaches
    it, :data:`SIMILARITY_BATCH` at a time in the choice's order (the candidates never reached are
    not encoded; their :attr:`Scored.similarity` stays None)."""

    def __init__(self, uniq: List[str], scored: List[Scored], min_similarity: Optional[float], similarity):
        if min_similarity is not None:
            if isinstance(min_similarity, bool) or not isinstance(min_similarity, (int, float)) \
                    or not -1.0 <= min_similarity <= 1.0:
                raise ValueError(f"min_similarity: must be a cosine in [-1, 1] (e.g. 0.6), got {min_similarity!r}")
            if not callable(similarity):
                raise TypeError("similarity: min_similarity needs a function texts -> cosines with the original")
        self.uniq, self.scored, self.min, self.similarity = uniq, scored, min_similarity, similarity

    def passes(self, i: int, order: Sequence[int]) -> bool:
        """Whether candidate ``i`` (the best left; ``order``: the rest of the choice's order) may be chosen."""
        if self.min is None:
            return True
        sc = self.scored
        if sc[i].similarity is None:
            # a candidate at or under 0 is never chosen (in diverse mode a score only falls): never encoded
            batch = [i] + [j for j in order if j != i and sc[j].similarity is None and sc[j].score > 0]
            batch = batch[:SIMILARITY_BATCH]
            sims = [float(x) for x in self.similarity([self.uniq[j] for j in batch])]
            if len(sims) != len(batch):
                raise ValueError(f"similarity: returned {len(sims)} values for {len(batch)} texts")
            for j, x in zip(batch, sims):
                sc[j].similarity = round(x, 4)  # compared rounded: the recorded value decides
        return sc[i].similarity >= self.min


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
