"""One LLM over any backend: seeds per prompt, the response cache and the usage counters.

:func:`open_llm` turns a spec and :class:`~pysynth.llm.params.LLMOptions` into an :class:`LLM`;
``LLM.complete(prompts)`` answers a list of prompts (each distinct prompt asked once, cached
answers reused) and :meth:`LLM.take_usage` hands the counters to the caller (the row stages put
them in each chunk's counts, the summary's ``llm`` block sums them).
"""
from __future__ import annotations

import hashlib
import threading
from collections import Counter
from typing import Any, Dict, List, Optional, Protocol, Sequence

from pysynth.llm.cache import ResponseCache, cache_key
from pysynth.llm.openai import Reply
from pysynth.llm.params import LLMOptions, LLMParams, Spec, parse_spec

__all__ = ["LLM", "LLMBackend", "open_llm", "prompt_seed", "USAGE_KEYS"]

#: the counters of :meth:`LLM.take_usage` (plus ``drop_<reason>`` from the roles)
USAGE_KEYS = ("requests", "prompts", "prompt_tokens", "completion_tokens", "cache_hits", "retries")


class LLMBackend(Protocol):
    """What :class:`LLM` needs of a backend (:class:`~pysynth.llm.openai.OpenAIBackend`,
    :class:`~pysynth.llm.local.HFCausalBackend`)."""

    name: str
    spec: Spec

    def complete_many(self, prompts: Sequence[str], params: LLMParams, seeds: Sequence[int], on_reply) -> None:
        """Answer every prompt, calling ``on_reply(i, Reply)`` as each lands (any order)."""


def prompt_seed(seed: int, prompt: str) -> int:
    """The seed of one prompt: from the run's seed and the prompt's text (not its position)."""
    h = hashlib.sha256(f"{int(seed)}\x00{prompt}".encode("utf-8")).digest()
    return int.from_bytes(h[:4], "little") & 0x7FFFFFFF


class LLM:
    """A backend with its parameters, cache and counters.

    Parameters
    ----------
    backend : LLMBackend
    options : LLMOptions
    """

    def __init__(self, backend: LLMBackend, options: LLMOptions):
        self.backend, self.options, self.params = backend, options, options.params
        self.cache = ResponseCache(options.cache) if options.cache else None
        self._usage: Counter = Counter()
        self._lock = threading.Lock()
        backend.count = self._count

    @property
    def spec(self) -> Spec:
        return self.backend.spec

    def _count(self, name: str, k: int = 1) -> None:
        with self._lock:
            self._usage[name] += k

    def take_usage(self) -> Counter:
        """The counters since the last call (and resets them)."""
        with self._lock:
            out, self._usage = self._usage, Counter()
        return out

    def key(self, prompt: str, params: Optional[LLMParams] = None) -> str:
        p = params or self.params
        s = self.spec
        return cache_key(s.endpoint, s.model, s.api, prompt, p.as_dict(), prompt_seed(p.seed, prompt))

    def complete(self, prompts: Sequence[str], params: Optional[LLMParams] = None) -> List[Reply]:
        """One :class:`~pysynth.llm.openai.Reply` per prompt (``texts``: ``n`` samples; ``refused``)."""
        params = params or self.params
        uniq: Dict[str, int] = {}
        for p in prompts:
            uniq.setdefault(p, len(uniq))
        todo = list(uniq)
        got: Dict[str, Reply] = {}
        keys = {p: self.key(p, params) for p in todo}
        if self.cache is not None:
            for p in todo:
                hit = self.cache.get(keys[p])
                if hit is not None:
                    got[p] = Reply(texts=list(hit.get("texts") or []), refused=bool(hit.get("refused")),
                                   prompt_tokens=int(hit.get("prompt_tokens") or 0),
                                   completion_tokens=int(hit.get("completion_tokens") or 0))
            self._count("cache_hits", len(got))
        miss = [p for p in todo if p not in got]
        self._count("prompts", len(prompts))

        def landed(i: int, r: Reply) -> None:
            p = miss[i]
            self._count("prompt_tokens", int(r.get("prompt_tokens") or 0))
            self._count("completion_tokens", int(r.get("completion_tokens") or 0))
            if self.cache is not None:
                self.cache.put(keys[p], dict(r))
            with self._lock:
                got[p] = r

        if miss:
            self.backend.complete_many(miss, params, [prompt_seed(params.seed, p) for p in miss], landed)
        return [got[p] for p in prompts]


def open_llm(spec: Any, options: Optional[LLMOptions] = None, *, device: Optional[str] = None,
             what: str = "model") -> LLM:
    """Open an LLM: ``openai:http://HOST:PORT/v1?model=NAME[&api=chat|completions]``, ``hf-causal:DIR``
    or a local causal LM folder (:func:`pysynth.llm.params.parse_spec`).

    Examples
    --------
    >>> llm = open_llm("openai:http://127.0.0.1:8080/v1?model=m")  # doctest: +SKIP
    >>> llm.complete(["Write a question about Paris."])[0]["texts"]  # doctest: +SKIP
    """
    options = options or LLMOptions()
    s = parse_spec(spec, what)
    if s.backend == "openai":
        from pysynth.llm.openai import OpenAIBackend

        backend: Any = OpenAIBackend(s, options.concurrency, options.timeout, options.retries)
    else:
        from pysynth.llm.local import HFCausalBackend

        backend = HFCausalBackend(s, options.concurrency, device=device)
    return LLM(backend, options)
