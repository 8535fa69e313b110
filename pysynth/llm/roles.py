"""The generation roles an LLM plays, each a prompt template and a reply parser.

========== ================================ ===================================== ==================
role       used by                          template variables                    reply
========== ================================ ===================================== ==================
qagen      ``qagen generate|questions``      ``{context}`` ``{answer}``            one question
answers    ``qagen generate`` (answer model) ``{context}`` ``{n}``                 a list of answers
paraphrase ``paraphrase generate`` (direct)  ``{question}`` ``{n}``                a list of questions
translate  ``paraphrase generate`` (pivots)  ``{text}`` ``{source}`` ``{target}``  one translation
mqr        ``mqr rewrite``                   ``{question}``                        one question
dqg        ``dup pairs --method dqg``        ``{body}``                            one title
k2q        ``k2q generate``                  ``{keywords}`` ``{n}``                a list of questions
========== ================================ ===================================== ==================

The default templates are the files ``pysynth/llm/prompts/<role>.txt``; ``--prompt FILE`` replaces
one. A template is Python ``str.format`` text: ``{name}`` is a variable, ``{{`` and ``}}`` are
literal braces (a JSON example in a prompt doubles its braces). It must use the role's required
variables and no other name (a clear ValueError says which). Its SHA-256 goes in the run signature.

Replies are parsed leniently (:func:`parse_reply`): a JSON list or object, a numbered or bulleted
list, a code fence, quotes and labels such as ``Question:`` are all read. A reply with no usable
text gives the row reason ``llm_empty`` (nothing came back) or ``llm_unparsable``; a prompt the
server refuses (HTTP 400) ``llm_refused``.
"""
from __future__ import annotations

import hashlib
import json
import re
import string
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from pysynth.llm.client import LLM

__all__ = ["ROLES", "Role", "RoleSpec", "Outcome", "Failed", "parse_reply", "load_template", "REASONS", "locate"]

#: why an LLM gave no output for a row
REASONS = ("llm_empty", "llm_unparsable", "llm_refused")


@dataclass(frozen=True)
class RoleSpec:
    """A role: its required variables, optional ones, and whether a reply is a list."""

    name: str
    required: Tuple[str, ...]
    optional: Tuple[str, ...] = ()
    many: bool = False


ROLES: Dict[str, RoleSpec] = {r.name: r for r in (
    RoleSpec("qagen", ("context", "answer")),
    RoleSpec("answers", ("context",), ("n",), many=True),
    RoleSpec("paraphrase", ("question",), ("n",), many=True),
    RoleSpec("translate", ("text",), ("source", "target")),
    RoleSpec("mqr", ("question",)),
    RoleSpec("dqg", ("body",)),
    RoleSpec("k2q", ("keywords",), ("n",), many=True),
)}


class Failed(str):
    """The empty text of a row the LLM gave nothing usable for, with the reason (``llm_*``).

    It is a ``str`` (``""``) so code that expects a text keeps working; ``getattr(x, "reason",
    None)`` tells why."""

    reason: str

    def __new__(cls, reason: str):
        self = super().__new__(cls, "")
        self.reason = reason
        return self


@dataclass
class Outcome:
    """One prompt's result: the parsed texts (samples in order, repeats removed) or the reason there are none."""

    texts: List[str]
    reason: Optional[str] = None

    def first(self) -> str:
        """The first text, or a :class:`Failed` with the reason."""
        return self.texts[0] if self.texts else Failed(self.reason or "llm_empty")


def _fields(template: str, where: str) -> List[str]:
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        raise ValueError(f"prompt: {where} is not a valid template ({exc}); write literal braces as {{{{ and }}}}") \
            from None
    out = []
    for _, name, spec, conv in parsed:
        if name is None:
            continue
        if not name.isidentifier() or spec or conv:
            raise ValueError(f"prompt: {where} has {{{name}{'!' + conv if conv else ''}{':' + spec if spec else ''}}}"
                             f"; a variable is a plain {{name}} (literal braces: {{{{ and }}}})")
        out.append(name)
    return out


def load_template(role: str, path: Optional[str] = None) -> Tuple[str, str]:
    """``(template, sha256)`` of ``role``: the file ``path`` or the default; checked strictly."""
    if role not in ROLES:
        raise ValueError(f"role: must be one of {sorted(ROLES)}, got {role!r}")
    spec = ROLES[role]
    if path is None:
        text = resources.files("pysynth.llm").joinpath("prompts", f"{role}.txt").read_text(encoding="utf-8")
        where = f"the default {role} template"
    else:
        try:
            text = Path(path).read_text(encoding="utf-8")
        except OSError as exc:
            raise ValueError(f"prompt: cannot read {path!r} ({exc.strerror or exc})") from None
        where = repr(str(path))
    names = _fields(text, where)
    known = set(spec.required) | set(spec.optional)
    allowed = ", ".join("{" + v + "}" for v in spec.required + spec.optional)
    unknown = sorted(set(names) - known)
    if unknown:
        raise ValueError(f"prompt: {where} uses {{{unknown[0]}}}, which the {role} role does not have; its variables "
                         f"are {allowed}")
    missing = [v for v in spec.required if v not in names]
    if missing:
        raise ValueError(f"prompt: {where} does not use {{{missing[0]}}}; the {role} role needs "
                         + ", ".join("{" + v + "}" for v in spec.required))
    return text, hashlib.sha256(text.encode("utf-8")).hexdigest()


# ---------------------------------------------------------------------------------------- parsing

_FENCE = re.compile(r"```[^\n`]*\n?(.*?)(?:```|$)", re.S)
_BULLET = re.compile(r"^\s*(?:[-*\u2022+]\s+|\(?\d{1,3}[.):]\s*|\(?[a-z][.)]\s+)")
_LABEL = re.compile(r"^\s*(?:\*\*)?(?:question|q|title|paraphrase|rewrite|rewritten question|answer|a|translation|"
                    r"output|keywords?)\s*\d*\s*(?:\*\*)?\s*[:\-\u2013]\s*(?:\*\*)?\s*", re.I)
_QUOTES = ("\"\"", "''", "\u201c\u201d", "\u2018\u2019", "``", "**")
_JSON_KEYS = ("questions", "question", "paraphrases", "paraphrase", "answers", "answer", "titles", "title",
              "rewrite", "rewrites", "translation", "text", "output", "outputs")


def _unquote(s: str) -> str:
    s = s.strip()
    changed = True
    while changed and len(s) >= 2:
        changed = False
        for q in _QUOTES:
            a, b = q[: len(q) // 2], q[len(q) // 2:]
            if s.startswith(a) and s.endswith(b) and len(s) > len(a) + len(b):
                s, changed = s[len(a):-len(b)].strip(), True
    return s


def _from_json(doc: Any) -> List[str]:
    if isinstance(doc, str):
        return [doc]
    if isinstance(doc, list):
        return [t for x in doc for t in _from_json(x)]
    if isinstance(doc, dict):
        for k in _JSON_KEYS:
            for kk in (k, k.capitalize()):
                if kk in doc:
                    return _from_json(doc[kk])
        return [t for v in doc.values() for t in (_from_json(v) if isinstance(v, (str, list)) else [])]
    return []


def parse_reply(text: str, many: bool = True) -> List[str]:
    """The texts of a reply: JSON (a list, or an object under ``questions``/``question``/... keys),
    a code fence, a numbered or bulleted list, one text per line; labels (``Question:``), list
    markers and surrounding quotes are removed, lines with no letter or digit and preface lines
    ending in ``:`` are skipped. ``many=False``: only the first text. Empty list: nothing usable."""
    t = (text or "").strip()
    if not t:
        return []
    m = _FENCE.search(t)
    if m and t.startswith("```"):
        t = m.group(1).strip()
    out: List[str] = []
    if t[:1] in "[{\"":
        try:
            out = [s for s in _from_json(json.loads(t))]
        except ValueError:
            out = []
    if not out:
        for line in t.splitlines():
            s = _LABEL.sub("", _BULLET.sub("", line, count=1), count=1)
            s = _unquote(_LABEL.sub("", _unquote(s), count=1))
            if not s or s.endswith(":") or not any(c.isalnum() for c in s):
                continue
            out.append(s)
    out = [" ".join(_unquote(s).split()) for s in out if isinstance(s, str)]
    out = [s for s in out if any(c.isalnum() for c in s)]
    return out if many else out[:1]


def locate(context: str, answer: str) -> Optional[int]:
    """The character offset of ``answer`` in ``context`` (exact, then case-insensitive), or None."""
    a = answer.strip()
    if not a:
        return None
    i = context.find(a)
    if i < 0:
        i = context.lower().find(a.lower())
    return i if i >= 0 else None


# ------------------------------------------------------------------------------------------ roles

class Role:
    """An LLM in one role: ``ask(variables)`` renders the template per item, asks, parses.

    Parameters
    ----------
    name : str
        A key of :data:`ROLES`.
    llm : LLM
    prompt : path, optional
        A template file replacing the default.
    """

    def __init__(self, name: str, llm: LLM, prompt: Optional[str] = None):
        self.name, self.llm = name, llm
        self.spec = ROLES[name]
        self.template, self.sha256 = load_template(name, prompt)

    def render(self, variables: Mapping[str, Any]) -> str:
        missing = [v for v in self.spec.required if v not in variables]
        if missing:
            raise ValueError(f"variables: the {self.name} role needs {missing[0]!r}")
        vals = {k: "" if variables.get(k) is None else str(variables.get(k, ""))
                for k in self.spec.required + self.spec.optional}
        vals.setdefault("n", str(self.llm.params.n))
        if not vals.get("n"):
            vals["n"] = str(self.llm.params.n)
        return self.template.format_map(vals)

    def ask(self, items: Sequence[Mapping[str, Any]]) -> List[Outcome]:
        """One :class:`Outcome` per item (its variables); failures counted as ``drop_<reason>``."""
        prompts = [self.render(v) for v in items]
        out = []
        for r in self.llm.complete(prompts) if prompts else []:
            if r.get("refused"):
                out.append(Outcome([], "llm_refused"))
                continue
            texts: List[str] = []
            for t in r.get("texts") or []:
                for s in parse_reply(t, self.spec.many):
                    if s not in texts:
                        texts.append(s)
            if texts:
                out.append(Outcome(texts))
            else:
                raw = [t for t in r.get("texts") or [] if t and t.strip()]
                out.append(Outcome([], "llm_unparsable" if raw else "llm_empty"))
        for o in out:
            if o.reason:
                self.llm._count(f"drop_{o.reason}", 1)
        return out
