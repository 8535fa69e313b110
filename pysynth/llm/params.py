"""What an LLM generator is: its spec (where it runs), its sampling parameters and its runtime options.

Specs (one string, the value of ``--question-model``, ``--pivot``, ``--model``):

* ``openai:http://HOST:PORT/v1?model=NAME[&api=chat|completions]``: an OpenAI-compatible server
  (vLLM, llama.cpp, TGI, ...); ``api`` defaults to ``chat``;
* ``hf-causal:DIR``: a local Hugging Face causal LM folder; any local folder whose ``config.json``
  names a causal LM (``...ForCausalLM``) is one too.

The API key never appears here: the OpenAI client reads ``PYSYNTH_LLM_API_KEY`` (or
``OPENAI_API_KEY``) from the environment when it sends a request.
"""
from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Optional, Tuple
from urllib.parse import parse_qs, urlsplit, urlunsplit

__all__ = ["LLMParams", "LLMOptions", "Spec", "parse_spec", "is_llm_spec", "APIS"]

APIS = ("chat", "completions")
_PREFIXES = ("openai:", "hf-causal:")


@dataclass(frozen=True)
class LLMParams:
    """Sampling parameters of every request (recorded in the run signature and the cache key).

    Parameters
    ----------
    max_new_tokens : int
        Tokens generated per reply at most.
    temperature : float
        0: greedy (or beam search with ``beams`` > 1 on a local model); above 0: sampling.
    top_p : float
        Nucleus mass in (0, 1].
    n : int
        Samples per prompt (``--samples``); a server that returns fewer is asked again with seed + i.
    seed : int
        The seed of every prompt is derived from it and the prompt's text (so it does not depend on
        the batching or chunking).
    stop : tuple of str
        Stop strings, sent to the server and applied again on the reply (client side).
    beams : int
        Local models only: beam search of this width when ``temperature`` is 0.
    """

    max_new_tokens: int = 64
    temperature: float = 0.0
    top_p: float = 1.0
    n: int = 1
    seed: int = 0
    stop: Tuple[str, ...] = ()
    beams: int = 1

    def __post_init__(self):
        def bad(name, what, v):
            raise ValueError(f"{name}: must be {what}, got {v!r}")

        for name in ("max_new_tokens", "n", "beams"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                bad(name, "an integer >= 1", v)
        if isinstance(self.seed, bool) or not isinstance(self.seed, int):
            bad("seed", "an integer", self.seed)
        try:
            t, p = float(self.temperature), float(self.top_p)
        except (TypeError, ValueError):
            bad("temperature", "a number", self.temperature)
        if not 0.0 <= t <= 5.0:
            bad("temperature", "a number in [0, 5]", self.temperature)
        if not 0.0 < p <= 1.0:
            bad("top_p", "a probability in (0, 1]", self.top_p)
        stop = (self.stop,) if isinstance(self.stop, str) else tuple(self.stop)
        if any(not isinstance(s, str) or not s for s in stop):
            bad("stop", "non-empty strings", self.stop)
        object.__setattr__(self, "stop", stop)
        object.__setattr__(self, "temperature", t)
        object.__setattr__(self, "top_p", p)

    def as_dict(self) -> Dict[str, Any]:
        d = dataclasses.asdict(self)
        d["stop"] = list(self.stop)
        return d

    def replace(self, **changes) -> "LLMParams":
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class LLMOptions:
    """Everything about an LLM run but its spec: the parameters, the prompt template and the client.

    Parameters
    ----------
    params : LLMParams
    prompt : path, optional
        A prompt template file replacing the role's default (``--prompt``).
    cache : path, optional
        The response cache (JSON Lines, append-only; ``--llm-cache``). None: no cache.
    concurrency : int
        Requests in flight at most (threads; local models: prompts per batch).
    timeout : float
        Seconds per request before it is retried.
    retries : int
        Retries of a request after a 429, a 5xx, a timeout or a dropped connection.
    """

    params: LLMParams = LLMParams()
    prompt: Optional[str] = None
    cache: Optional[str] = None
    concurrency: int = 4
    timeout: float = 60.0
    retries: int = 4

    def __post_init__(self):
        if not isinstance(self.params, LLMParams):
            raise TypeError(f"params: must be an LLMParams, got {type(self.params).__name__}")
        if isinstance(self.concurrency, bool) or not isinstance(self.concurrency, int) or self.concurrency < 1:
            raise ValueError(f"concurrency: must be an integer >= 1, got {self.concurrency!r}")
        if isinstance(self.retries, bool) or not isinstance(self.retries, int) or self.retries < 0:
            raise ValueError(f"retries: must be an integer >= 0, got {self.retries!r}")
        if not float(self.timeout) > 0:
            raise ValueError(f"timeout: must be a number of seconds > 0, got {self.timeout!r}")
        for name in ("prompt", "cache"):
            v = getattr(self, name)
            if v is not None:
                object.__setattr__(self, name, os.fspath(v))

    def replace(self, **changes) -> "LLMOptions":
        return dataclasses.replace(self, **changes)


@dataclass(frozen=True)
class Spec:
    """A parsed spec: ``backend`` (``openai`` or ``hf-causal``), ``model`` (the served model's
    name, or the folder), ``base_url`` (OpenAI: ``http://host:port/v1``; local: the folder) and
    ``api`` (``chat`` or ``completions``)."""

    backend: str
    model: str
    base_url: str
    api: str = "chat"

    @property
    def endpoint(self) -> str:
        """What the cache key and messages name (never a key)."""
        return f"{self.base_url}/{'chat/completions' if self.api == 'chat' else 'completions'}" \
            if self.backend == "openai" else f"hf-causal:{self.base_url}"


def _causal_folder(path: str) -> bool:
    try:
        doc = json.loads((Path(path) / "config.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(doc, dict) or doc.get("is_encoder_decoder"):
        return False
    return any(str(a).endswith("ForCausalLM") for a in doc.get("architectures") or [])


def is_llm_spec(spec: Any) -> bool:
    """True for ``openai:...`` and ``hf-causal:...`` strings and for a local causal LM folder."""
    if isinstance(spec, os.PathLike):
        spec = os.fspath(spec)
    if not isinstance(spec, str) or not spec:
        return False
    if spec.startswith(_PREFIXES):
        return True
    return os.path.isdir(spec) and _causal_folder(spec)


def parse_spec(spec: Any, what: str = "model") -> Spec:
    """The :class:`Spec` of ``spec``; ValueError naming ``what`` and the syntax otherwise."""
    syntax = ("'openai:http://HOST:PORT/v1?model=NAME[&api=chat|completions]', 'hf-causal:DIR' or a local "
              "causal LM folder")
    if isinstance(spec, os.PathLike):
        spec = os.fspath(spec)
    if not isinstance(spec, str) or not is_llm_spec(spec):
        raise ValueError(f"{what}: {spec!r} is not an LLM spec; use {syntax}")
    if spec.startswith("openai:"):
        url = urlsplit(spec[len("openai:"):])
        if url.scheme not in ("http", "https") or not url.netloc:
            raise ValueError(f"{what}: {spec!r} has no http(s)://HOST:PORT base URL; use {syntax}")
        q = parse_qs(url.query, keep_blank_values=True)
        unknown = sorted(set(q) - {"model", "api"})
        if unknown:
            raise ValueError(f"{what}: unknown spec parameter {unknown[0]!r} (known: model, api); the API key "
                             "comes from $PYSYNTH_LLM_API_KEY or $OPENAI_API_KEY, never from the spec")
        model = (q.get("model") or [""])[-1]
        if not model:
            raise ValueError(f"{what}: {spec!r} names no model; add ?model=NAME (the server's model name)")
        api = (q.get("api") or ["chat"])[-1]
        if api not in APIS:
            raise ValueError(f"{what}: api must be 'chat' or 'completions', got {api!r}")
        base = urlunsplit((url.scheme, url.netloc, url.path.rstrip("/"), "", ""))
        return Spec("openai", model, base, api)
    path = spec[len("hf-causal:"):] if spec.startswith("hf-causal:") else spec
    if not os.path.isdir(path):
        raise ValueError(f"{what}: {path!r} is not a directory (hf-causal:DIR needs a local causal LM folder; "
                         "nothing is downloaded)")
    return Spec("hf-causal", os.path.abspath(path), os.path.abspath(path), "chat")
