"""Bring your own generator: local causal LMs and OpenAI-compatible servers in every generation role.

A spec names the LLM (:mod:`pysynth.llm.params`): ``openai:http://HOST:PORT/v1?model=NAME[&api=chat|completions]``
(vLLM, llama.cpp, TGI, a hosted API; the key from ``$PYSYNTH_LLM_API_KEY`` or ``$OPENAI_API_KEY``)
or ``hf-causal:DIR`` (any local causal LM folder). Every generating command takes one where it
takes a generator model, and pysynth's filters (roundtrip, KQF/TDF, well-formedness, similarity)
apply unchanged to what it writes. See ``docs/llm.md``.

* :class:`LLMParams`, :class:`LLMOptions`, :func:`parse_spec`, :func:`is_llm_spec` (no heavy import)
* :func:`open_llm` -> :class:`LLM` (``complete(prompts)``; cache, seeds, counters) over an
  :class:`LLMBackend` (:class:`~pysynth.llm.openai.OpenAIBackend`, :class:`~pysynth.llm.local.HFCausalBackend`)
* :class:`Role` (:mod:`pysynth.llm.roles`): a prompt template and a reply parser per role
* :func:`open_role`, :func:`fingerprint`, :func:`usage`, :func:`summary`: what the methods' row
  stages share (open the role in a worker; the signature entry; the per-chunk counters; the
  summary's ``llm`` block)

``import pysynth.llm`` imports the standard library only; transformers loads with a local model.
"""
from __future__ import annotations

import hashlib
import importlib
from collections import Counter
from pathlib import Path
from typing import Any, Dict, Mapping, Optional

from pysynth.llm.params import LLMOptions, LLMParams, Spec, is_llm_spec, parse_spec

__all__ = ["LLMParams", "LLMOptions", "Spec", "is_llm_spec", "parse_spec", "open_llm", "LLM", "LLMBackend", "Role",
           "Failed", "ROLES", "parse_reply", "open_role", "fingerprint", "usage", "summary", "LLMError",
           "RoleText2Text", "open_text_role", "Generated"]

_LAZY = {"open_llm": "client", "LLM": "client", "LLMBackend": "client", "Role": "roles", "Failed": "roles",
         "ROLES": "roles", "parse_reply": "roles", "LLMError": "openai", "RoleText2Text": "text2text",
         "open_text_role": "text2text", "Generated": "text2text"}


def __getattr__(name):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'pysynth.llm' has no attribute {name!r}")
    return getattr(importlib.import_module(f"pysynth.llm.{mod}"), name)


def open_role(spec: Any, role: str, options: Optional[LLMOptions] = None, *, what: str = "model"):
    """A :class:`~pysynth.llm.roles.Role` over :func:`open_llm` of ``spec`` (once per worker)."""
    from pysynth.llm.client import open_llm
    from pysynth.llm.roles import Role

    options = options or LLMOptions()
    return Role(role, open_llm(spec, options, what=what), options.prompt)


def fingerprint(spec: Any, role: str, options: Optional[LLMOptions] = None) -> Dict[str, Any]:
    """What a run signature records of an LLM generator: backend, model name (a local folder: its
    name and a hash of its file names and sizes), API, role, the template's SHA-256 and the
    parameters. Never the key, the URL's host or the cache path (they do not change the output)."""
    from pysynth.llm.roles import load_template

    options = options or LLMOptions()
    s = parse_spec(spec)
    _, sha = load_template(role, options.prompt)
    doc: Dict[str, Any] = {"backend": s.backend, "model": s.model, "api": s.api, "role": role,
                           "prompt_sha256": sha, "params": options.params.as_dict()}
    if s.backend == "hf-causal":
        p = Path(s.base_url)
        h = hashlib.sha256()
        for f in sorted(p.rglob("*")):
            if f.is_file():
                h.update(f"{f.relative_to(p)}:{f.stat().st_size}\n".encode())
        doc.update(model=p.name, sha256=h.hexdigest(), api="local")
    return doc


def usage(role_or_llm) -> Counter:
    """The LLM's counters since the last call, as ``llm_<name>`` keys for a chunk's counts."""
    llm = getattr(role_or_llm, "llm", role_or_llm)
    return Counter({f"llm_{k}": int(v) for k, v in llm.take_usage().items() if v})


def summary(counts: Mapping[str, Any], used: bool = False) -> Dict[str, Any]:
    """The summary's ``llm`` block from summed chunk counts: requests, prompts, tokens, cache hits,
    retries and drops by reason (``{}`` when no LLM ran, unless ``used``)."""
    c = {k[4:]: int(v) for k, v in counts.items() if k.startswith("llm_")}
    if not c and not used:
        return {}
    from pysynth.llm.client import USAGE_KEYS

    block: Dict[str, Any] = {k: c.get(k, 0) for k in USAGE_KEYS}
    block["dropped"] = {k[5:]: v for k, v in sorted(c.items()) if k.startswith("drop_")}
    return {"llm": block}
