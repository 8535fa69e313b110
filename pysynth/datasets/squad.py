"""SQuAD JSON (Rajpurkar et al. 2016, v1.1; 2018, v2.0): ``{"data": [article, ...]}``, each
article ``{"title", "paragraphs": [{"context", "qas": [{"id", "question", "answers", ...}]}]}``.

:func:`load` reads a file (``.gz`` allowed), :func:`paragraphs` walks its paragraphs with the
structure and every answer offset checked, :func:`questions` lists its questions.

Examples
--------
>>> doc = {"data": [{"title": "T", "paragraphs": [{"context": "Paris is in France.",
...        "qas": [{"id": "q1", "question": "Where is Paris?",
...                 "answers": [{"text": "France", "answer_start": 12}]}]}]}]}
>>> [(p.article, p.index, p.title) for p in paragraphs(doc)]
[(0, 0, 'T')]
>>> questions(doc)
['Where is Paris?']
"""
from __future__ import annotations

import gzip
import json
import os
from pathlib import Path
from typing import Any, Dict, Iterator, List, NamedTuple, Union

__all__ = ["Paragraph", "load", "paragraphs", "questions", "read_text"]

PathLike = Union[str, "os.PathLike[str]"]


class Paragraph(NamedTuple):
    """One paragraph: its article's index and title, its index in the article, its context and
    its questions (``qas``, the file's own dicts)."""

    article: int
    index: int
    title: str
    context: str
    qas: List[Dict[str, Any]]


def read_text(path: PathLike) -> str:
    """The text of a UTF-8 file, gunzipped when it starts with the gzip magic bytes.

    Raises
    ------
    ValueError
        A broken gzip stream or bytes that are not UTF-8 (naming the file and the fix).
    """
    path = Path(path)
    raw = path.read_bytes()
    if raw[:2] == b"\x1f\x8b":
        try:
            raw = gzip.decompress(raw)
        except (OSError, EOFError) as e:
            raise ValueError(f"{path}: not a readable gzip file ({e})") from None
    from pysynth.io import decode_text

    try:
        return decode_text(raw)  # a leading byte-order mark dropped, as by every reader
    except UnicodeDecodeError as e:
        raise ValueError(f"{path}: not UTF-8 text (byte {e.start}); re-encode the file as UTF-8") from None


def load(path: PathLike) -> dict:
    """The JSON document of a SQuAD file (``.gz`` allowed).

    Raises
    ------
    ValueError
        Unreadable gzip, non-UTF-8 bytes or malformed JSON (with its line and column).
    """
    path = Path(path)
    try:
        return json.loads(read_text(path))
    except json.JSONDecodeError as e:
        raise ValueError(f"{path}: malformed JSON at line {e.lineno} column {e.colno}: {e.msg}") from None


def paragraphs(doc: Any, path: PathLike = "squad") -> Iterator[Paragraph]:
    """Every paragraph of a SQuAD document, in file order, checked on the way.

    Parameters
    ----------
    doc : dict
        The parsed JSON (:func:`load`).
    path : str or path
        Names the input in error messages.

    Raises
    ------
    ValueError
        Not SQuAD JSON, an article without a ``paragraphs`` list, a paragraph without a
        ``context`` string or with ``qas`` not a list, or an answer whose text is not at its
        ``answer_start`` in the context.
    """
    if not isinstance(doc, dict) or not isinstance(doc.get("data"), list):
        raise ValueError(f"{path}: not SQuAD JSON (expected an object with a 'data' list of articles)")
    for a_i, art in enumerate(doc["data"]):
        if not isinstance(art, dict) or not isinstance(art.get("paragraphs"), list):
            raise ValueError(f"{path}: data[{a_i}]: expected an article with a 'paragraphs' list")
        title = art.get("title", "")
        for p_i, par in enumerate(art["paragraphs"]):
            ctx = par.get("context") if isinstance(par, dict) else None
            where = f"{path}: data[{a_i}].paragraphs[{p_i}]"
            if not isinstance(ctx, str):
                raise ValueError(f"{where}: no 'context' string")
            qas = par.get("qas", [])
            if not isinstance(qas, list):
                raise ValueError(f"{where}: 'qas' must be a list")
            for q in qas:
                for ans in (q.get("answers") or []) if isinstance(q, dict) else []:
                    s, t = ans.get("answer_start"), ans.get("text")
                    if not isinstance(s, int) or not isinstance(t, str) or ctx[s:s + len(t)] != t:
                        raise ValueError(f"{where}: question {q.get('id')!r}: answer {t!r} is not at "
                                         f"answer_start={s!r} of its context (fix the offset or the text)")
            yield Paragraph(a_i, p_i, str(title), ctx, qas)


def questions(doc: dict) -> List[str]:
    """The ``question`` string of every question of a SQuAD document, in file order (as written:
    no whitespace folding, no filter)."""
    return [qa["question"] for art in doc["data"] for par in art["paragraphs"] for qa in par["qas"]]
