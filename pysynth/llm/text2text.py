"""An LLM role as a text-to-text generator: the seam every seq2seq method already has.

:class:`RoleText2Text` answers the calls the methods make of a seq2seq model
(:class:`pysynth.models.text2text.Text2Text`): ``generate(texts, search, ...)`` -> one n-best list
(:class:`Generated`) per input, ``translate(texts, cfg, seeds)`` (the paraphrase pivots) and
``valid(text)``. It imports nothing from ``pysynth.models``: the methods use it where they used a
model, and their filters run on its outputs as before. An input the LLM gave nothing usable for
gets an empty list and its reason (``Generated.reason``, :attr:`RoleText2Text.last_reasons`).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from pysynth.llm.roles import Outcome, Role

__all__ = ["Generated", "RoleText2Text", "open_text_role", "Identity"]


@dataclass
class Generated:
    """The n-best list of one input (the fields of :class:`pysynth.models.generate.Generation`),
    plus ``reason`` when it is empty because of the LLM (``llm_empty``, ``llm_unparsable``,
    ``llm_refused``)."""

    source: str
    texts: List[str]
    scores: List[float] = field(default_factory=list)
    groups: List[int] = field(default_factory=list)
    reason: Optional[str] = None


class RoleText2Text:
    """One input text -> the role's texts.

    Parameters
    ----------
    role : Role
    source : str
        The template variable the input text fills (``question``, ``body``, ``keywords``, ``text``).
    fixed : mapping, optional
        The other variables (``{"source": "English", "target": "French"}``).
    """

    runtime = "llm"
    lowercases = False

    def __init__(self, role: Role, source: str, fixed: Optional[Mapping[str, Any]] = None):
        self.role, self.source, self.fixed = role, source, dict(fixed or {})
        self.name = f"{role.llm.spec.backend}:{role.llm.spec.model}"
        #: input text -> why it got nothing, for the inputs of the last call
        self.last_reasons: Dict[str, str] = {}

    @property
    def llm(self):
        return self.role.llm

    def valid(self, text: str) -> Optional[str]:
        return None if isinstance(text, str) and text.strip() else "empty input"

    def ask(self, texts: Sequence[str]) -> List[Outcome]:
        out = self.role.ask([{**self.fixed, self.source: t} for t in texts])
        self.last_reasons = {t: o.reason for t, o in zip(texts, out) if o.reason}
        return out

    def generate(self, texts: Sequence[str], search: Any = None, seeds: Any = None, batch_size: int = 32,
                 dedupe: bool = False, on_batch: Any = None, **_: Any) -> List[Generated]:
        """One :class:`Generated` per text (the search and seeds of a seq2seq model do not apply:
        the LLM's :class:`~pysynth.llm.params.LLMParams` do); scores are 0, groups 0."""
        texts = list(texts)
        out = [Generated(t, list(o.texts), [0.0] * len(o.texts), [0] * len(o.texts), o.reason)
               for t, o in zip(texts, self.ask(texts))]
        if on_batch is not None:
            on_batch(len(texts))
        return out

    def translate(self, texts: Sequence[str], cfg: Any = None, seeds: Any = None) -> List[List[Tuple[str, float, int]]]:
        return [[(t, 0.0, 0) for t in g.texts] for g in self.generate(texts)]


def open_text_role(spec: Any, role: str, source: str, options=None, fixed: Optional[Mapping[str, Any]] = None,
                   what: str = "model") -> RoleText2Text:
    """:class:`RoleText2Text` over :func:`pysynth.llm.open_role` of ``spec``."""
    from pysynth.llm import open_role

    return RoleText2Text(open_role(spec, role, options, what=what), source, fixed)


class Identity:
    """The forward stage of direct LLM paraphrasing: each text is its own (one) pivot, so the
    backward stage (the ``paraphrase`` role) reads the question itself."""

    runtime = "identity"
    lowercases = False
    name = "identity"

    def valid(self, text: str) -> Optional[str]:
        return None if isinstance(text, str) and text.strip() else "empty input"

    def translate(self, texts: Sequence[str], cfg: Any = None, seeds: Any = None) -> List[List[Tuple[str, float, int]]]:
        return [[(t, 0.0, 0)] for t in texts]
