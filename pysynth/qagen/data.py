"""Contexts in, SQuAD out: the readers and the answer matching of roundtrip QA generation.

* :func:`read_contexts` -- the passages to generate from: SQuAD JSON (v1.1 / v2.0; its questions
  are ignored), JSONL rows ``{id?, title?, context}`` or plain text (blank-line separated).
* :func:`read_squad` -- SQuAD JSON with its questions (training and evaluation); the format is
  read by :mod:`pysynth.datasets.squad`.
* :func:`split_articles` -- a seeded split by article, never by question.
* :func:`normalize_answer`, :func:`exact_match`, :func:`f1_score` -- the official SQuAD
  evaluation script's answer normalisation (lower case, punctuation and the articles a/an/the
  removed, whitespace collapsed) and its EM / token F1.
* :func:`qg_source` -- the question generator's input: the sentence(s) holding the answer with
  the answer marked (Alberti et al. 2019, Sect. 3.2 mark it with a token type; a word-level
  seq2seq model gets marker tokens instead).
"""
from __future__ import annotations

import json
import os
import random
import re
import string
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterable, List, Sequence, Tuple, Union

from pysynth.datasets import squad

__all__ = ["Context", "read_contexts", "read_squad", "split_articles", "normalize_answer",
           "exact_match", "f1_score", "qg_source", "iter_answers", "ANSWER_OPEN", "ANSWER_CLOSE",
           "HELD_OUT_FRACTION", "SPLIT_SEED"]

PathLike = Union[str, "os.PathLike[str]"]

#: share of SQuAD 1.1 train articles the shipped models never saw (their dev set), split by article
HELD_OUT_FRACTION, SPLIT_SEED = 0.05, 0
#: answer markers of :func:`qg_source` (single punctuation tokens for pysynth's word tokenizer)
ANSWER_OPEN, ANSWER_CLOSE = "«", "»"


@dataclass
class Context:
    """One passage to generate from: ``id`` (from the input or ``"<row>"``), ``title``, ``text``,
    and for SQuAD input its questions (``qas``, official format) for evaluation."""

    id: str
    title: str
    text: str
    qas: List[Dict[str, Any]] = field(default_factory=list)


def _squad_contexts(path: Path, doc: Any) -> List[Context]:
    return [Context(f"{p.article}-{p.index}", p.title, p.context, p.qas) for p in squad.paragraphs(doc, path)]


def read_contexts(path: PathLike) -> List[Context]:
    """The passages of ``path`` (``.gz`` allowed): SQuAD JSON, JSONL or plain text.

    SQuAD JSON (an object with ``data``): every paragraph's ``context``; ids ``"<article>-<paragraph>"``.
    JSONL: one object per line with a ``context`` string (``id`` and ``title`` optional; id
    defaults to the line number). Plain text: passages separated by blank lines. Empty or
    whitespace-only contexts, malformed rows and non-UTF-8 bytes raise ``ValueError`` naming
    the file and row.
    """
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"contexts: {str(p)!r} does not exist")
    text = squad.read_text(p)
    head = text.lstrip()[:1]
    out: List[Context]
    if head == "{" and not _looks_jsonl(text):
        try:
            doc = json.loads(text)
        except json.JSONDecodeError as e:
            raise ValueError(f"{p}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None
        out = _squad_contexts(p, doc)
    elif head == "{":
        out = []
        for i, line in enumerate(text.splitlines(), 1):
            if not line.strip():
                continue
            try:
                row = json.loads(line)
            except json.JSONDecodeError as e:
                raise ValueError(f"{p}: line {i}: malformed JSON ({e.msg})") from None
            if not isinstance(row, dict) or not isinstance(row.get("context"), str):
                raise ValueError(f"{p}: line {i}: expected an object with a 'context' string")
            out.append(Context(str(row.get("id", i - 1)), str(row.get("title", "")), row["context"]))
    else:
        out = [Context(str(i), "", blk.strip()) for i, blk in enumerate(re.split(r"\n\s*\n", text)) if blk.strip()]
    for c in out:
        if not c.text.strip():
            raise ValueError(f"{p}: context {c.id!r} is empty; remove it or give it text")
    if not out:
        raise ValueError(f"{p}: no contexts found")
    return out


def _looks_jsonl(text: str) -> bool:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if len(lines) < 2:
        return False
    try:
        return all(isinstance(json.loads(ln), dict) for ln in lines[:2])
    except json.JSONDecodeError:
        return False


def read_squad(path: PathLike) -> List[Context]:
    """SQuAD JSON (v1.1 or v2.0) with its questions: one :class:`Context` per paragraph, ``title``
    = the article; answers are checked against their offsets."""
    p = Path(path)
    if not p.is_file():
        raise ValueError(f"path: {str(p)!r} does not exist")
    return _squad_contexts(p, squad.load(p))


def split_articles(contexts: Sequence[Context], fraction: float, seed: int = 0) -> Tuple[List[Context], List[Context]]:
    """``(rest, held_out)``: whole articles (by ``title``) drawn with ``random.Random(seed)``
    until ``fraction`` of the articles are held out; no paragraph of a held-out article stays."""
    if not 0.0 <= fraction < 1.0:
        raise ValueError(f"fraction: must be in [0, 1), got {fraction!r}")
    titles = sorted({c.title for c in contexts})
    random.Random(seed).shuffle(titles)
    held = set(titles[:int(round(fraction * len(titles)))])
    return [c for c in contexts if c.title not in held], [c for c in contexts if c.title in held]


# ------------------------------------------------------------------------------ SQuAD matching

_PUNCT = set(string.punctuation)
_ARTICLES = re.compile(r"\b(a|an|the)\b", re.UNICODE)


def normalize_answer(s: str) -> str:
    """The official SQuAD v1.1/v2.0 normalisation: lower case, punctuation removed, articles
    (a, an, the) removed, whitespace collapsed."""
    s = "".join(ch for ch in s.lower() if ch not in _PUNCT)
    return " ".join(_ARTICLES.sub(" ", s).split())


def exact_match(prediction: str, gold: str) -> bool:
    """SQuAD exact match of normalised answers."""
    return normalize_answer(prediction) == normalize_answer(gold)


def f1_score(prediction: str, gold: str) -> float:
    """SQuAD token F1 of normalised answers (v2.0 script: two empty answers give 1.0)."""
    p, g = normalize_answer(prediction).split(), normalize_answer(gold).split()
    if not p or not g:
        return float(p == g)
    common = Counter(p) & Counter(g)
    same = sum(common.values())
    if same == 0:
        return 0.0
    prec, rec = same / len(p), same / len(g)
    return 2 * prec * rec / (prec + rec)


# ------------------------------------------------------------------------------ QG input

_SENT_END = re.compile(r"(?<=[.!?])[\"')\]]*\s+(?=[\"'(\[]?[A-Z0-9])")


def _sentence_bounds(text: str) -> List[Tuple[int, int]]:
    bounds, a = [], 0
    for m in _SENT_END.finditer(text):
        bounds.append((a, m.start()))
        a = m.end()
    bounds.append((a, len(text)))
    return bounds


def qg_source(context: str, start: int, end: int, max_words: int = 60) -> str:
    """The input of a word-level question generator for the answer ``context[start:end]``.

    The sentence(s) overlapping the answer, the answer wrapped in :data:`ANSWER_OPEN` /
    :data:`ANSWER_CLOSE`; longer than ``max_words`` words, a window of ``max_words`` words
    around the answer is kept so the answer is never cut away.
    """
    if not 0 <= start < end <= len(context):
        raise ValueError(f"start, end: must satisfy 0 <= start < end <= len(context), got {start}, {end}")
    a, z = start, end
    for s0, s1 in _sentence_bounds(context):
        if s0 <= start < s1 or (s0 < end <= s1):
            a, z = min(a, s0), max(z, s1)
    left = context[a:start].split()
    ans = context[start:end].split()
    right = context[end:z].split()
    room = max(0, max_words - len(ans) - 2)
    if len(left) + len(right) > room:
        keep_l = min(len(left), max(room // 2, room - len(right)))
        keep_r = min(len(right), room - keep_l)
        left, right = left[len(left) - keep_l:], right[:keep_r]
    return " ".join(left + [ANSWER_OPEN] + ans + [ANSWER_CLOSE] + right)


def iter_answers(contexts: Iterable[Context]):
    """``(context, qa, answer)`` for every answerable question (first gold answer)."""
    for c in contexts:
        for qa in c.qas:
            if qa.get("is_impossible") or not qa.get("answers"):
                continue
            yield c, qa, qa["answers"][0]
