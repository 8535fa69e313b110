"""Served adapters: how a method offers itself to ``pysynth serve``, with no web framework.

An :class:`Adapter` is one HTTP endpoint of one method (``POST /v1/k2q`` of K2Q, ...), written
beside the method (``pysynth/<method>/served.py``) and mounted by :mod:`pysynth.serve`. It holds

* its request and response bodies as keyword-only dataclasses whose fields carry their JSON
  schema constraints (:func:`param`); the server turns them into validated models (pydantic);
* :meth:`Adapter.load`: the method's library objects for a model name or directory;
* :meth:`Adapter.call`: one batch of inputs sharing a batch key through the method's library
  function (run on the batcher's thread: concurrent requests with one key share a model call);
* :meth:`Adapter.handle`: one request, from the validated body to the JSON answer, through a
  :class:`Context` that the server gives (input limits, the loaded models, batched calls).

Errors a client can fix are :class:`RequestError` (its HTTP status and message); the server
answers them as ``{"error": message}``.
"""
from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any, Callable, Dict, Hashable, List, Optional, Sequence, Tuple

from pysynth._validate import MAX_NO_REPEAT_NGRAM

__all__ = ["Adapter", "Context", "Guards", "Loaded", "RequestError", "param", "check_texts", "check_unicode"]


class RequestError(Exception):
    """A request the client must change: answered with ``status`` and ``{"error": message}``."""

    def __init__(self, status: int, message: str, headers: Optional[Dict[str, str]] = None):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers


def param(default: Any = dataclasses.MISSING, *, description: Optional[str] = None, ge: Optional[float] = None,
          le: Optional[float] = None, pattern: Optional[str] = None, examples: Optional[list] = None) -> Any:
    """A field of a request or response dataclass with its JSON schema constraints.

    Parameters
    ----------
    default : the value when the client leaves the field out (none: the field is required).
    description, examples : shown in the schema (``/openapi.json``, ``/docs``).
    ge, le : inclusive bounds of a number.
    pattern : a regular expression a string must match.

    Returns
    -------
    dataclasses.Field
        with the constraints in its ``metadata``.
    """
    meta = {k: v for k, v in (("description", description), ("ge", ge), ("le", le), ("pattern", pattern),
                              ("examples", examples)) if v is not None}
    if isinstance(default, list):
        return dataclasses.field(default_factory=lambda: list(default), metadata=meta)
    return dataclasses.field(default=default, metadata=meta)


@dataclass(kw_only=True)
class Guards:
    """The degenerate-output guards of every search (:class:`pysynth.decoding.SearchConfig`, issue
    26) as request fields, the one definition of every endpoint that decodes: its request
    dataclass derives from this one. The defaults are the library's, so a request without them
    decodes as before; ``no_repeat_ngram`` 1 (it would ban every repeated word, "the ... the") is
    refused with 422, as ``--no-repeat-ngram 1`` is on the command line."""

    # SearchConfig's defaults (the platform layer does not import pysynth.decoding; a test keeps them equal)
    no_repeat_ngram: int = param(3, ge=0, le=MAX_NO_REPEAT_NGRAM,
                                 description="no output repeats a token n-gram of this size; 0: off (1 is refused)")
    no_stutter: bool = param(True, description="no output says a token twice in a row")

    def __post_init__(self):
        if self.no_repeat_ngram == 1:
            raise RequestError(422, f"no_repeat_ngram: must be 0 (off) or an n-gram size in "
                                    f"2..{MAX_NO_REPEAT_NGRAM}, got 1")

    @property
    def guards(self) -> Dict[str, Any]:
        """``{"no_repeat_ngram", "no_stutter"}``: the keywords of every generating API."""
        return {"no_repeat_ngram": self.no_repeat_ngram, "no_stutter": self.no_stutter}


@dataclass
class Loaded:
    """What :meth:`Adapter.load` returns: the library object, its display name, the onnxruntime
    providers it runs on (empty when it runs no model)."""

    model: Any
    name: str
    providers: List[str] = dataclasses.field(default_factory=list)


class Context:
    """What the server gives :meth:`Adapter.handle` (the interface; :mod:`pysynth.serve` implements it).

    Attributes
    ----------
    max_inputs, max_chars, max_segments : the request limits of the server.
    """

    max_inputs: int = 64
    max_chars: int = 1000
    max_segments: int = 10000

    def texts(self, value: Any, name: str, max_chars: Optional[int] = None) -> List[str]:
        """``value`` (one string or a list) checked against the limits (:func:`check_texts`)."""
        return check_texts(value, name, self.max_inputs, max_chars or self.max_chars)

    def has(self, task: str) -> bool:
        """Whether the server loaded ``task``."""
        raise NotImplementedError

    def model(self, task: str, what: str = "") -> Loaded:
        """The loaded ``task``; :class:`RequestError` 404 (prefixed with ``what``) when there is none."""
        raise NotImplementedError

    async def submit(self, task: str, key: Hashable, inputs: Sequence[Any]) -> List[Any]:
        """``inputs`` through ``task``'s :meth:`Adapter.call` with batch key ``key``, batched with
        the concurrent requests of the same key; one output per input."""
        raise NotImplementedError

    async def run(self, fn: Callable[[], Any]) -> Any:
        """``fn()`` on a worker thread (CPU work that must not block the event loop)."""
        raise NotImplementedError


class Adapter:
    """One served endpoint of a method (subclass it in ``pysynth/<method>/served.py``).

    Attributes
    ----------
    name : the task: the key of ``--model TASK=...``, ``/ready`` and the metrics' ``model`` label.
    route, summary : the endpoint (``POST``) and its one-line description.
    request, response : dataclasses of the JSON bodies (:func:`param`); ``response`` may be None.
    errors : the status codes the schema lists beside 200.
    default_model : the shipped model served when ``--model`` names none; None: not a model task.
    missing : the 404 message when the server has not loaded it (default: names ``--model``).
    batch_scale : inputs per model call, as a multiple of the server's ``max_batch`` (cheap models
        take more).
    batched : calls go through a batcher (False: :meth:`handle` does its own work, e.g. on
        :meth:`Context.run`).
    """

    name: str = ""
    route: str = ""
    summary: str = ""
    request: type = object
    response: Optional[type] = None
    errors: Tuple[int, ...] = (404, 422, 503)
    default_model: Optional[str] = None
    missing: str = ""
    batch_scale: int = 1
    batched: bool = True

    def not_loaded(self) -> str:
        """The 404 message of a server without this endpoint's model."""
        return self.missing or f"no {self.name} model loaded (start the server with --model {self.name}=NAME|DIR)"

    def load(self, spec: Any, *, device: str = "cpu", threads: int = 0) -> Loaded:
        """The library objects for ``spec`` (a model name or directory, None: :attr:`default_model`).

        Raises ValueError / FileNotFoundError naming the fix for a model that cannot be served."""
        raise NotImplementedError

    def call(self, model: Any, key: Hashable, inputs: List[Any]) -> List[Any]:
        """One output per input, for inputs that share the batch ``key`` (a worker thread)."""
        raise NotImplementedError

    def warmup(self, model: Any) -> None:
        """One small call, so that the first request does not pay first-run costs."""

    async def handle(self, req: Any, ctx: Context) -> Any:
        """The JSON answer (plain dicts and lists) to the validated request dataclass ``req``."""
        raise NotImplementedError


def check_unicode(items: Sequence[str], name: str) -> None:
    """:class:`RequestError` 422 for a string holding a lone surrogate (JSON's ``\\ud800``-``\\udfff``
    escapes decode to them; they are not Unicode text)."""
    for i, t in enumerate(items):
        if not t.isascii():
            try:
                t.encode("utf-8")
            except UnicodeEncodeError:
                raise RequestError(422, f"{name}[{i}]: holds an unpaired surrogate escape (not valid Unicode)") \
                    from None


def check_texts(value: Any, name: str, max_inputs: int, max_chars: int) -> List[str]:
    """The texts of one request field (one string or a list of them) within the limits:
    :class:`RequestError` 422 for an empty list, an empty string or a lone surrogate, 413 for more
    than ``max_inputs`` texts or a text over ``max_chars`` characters."""
    items = [value] if isinstance(value, str) else list(value)
    if not items:
        raise RequestError(422, f"{name}: empty list; give at least one")
    if len(items) > max_inputs:
        raise RequestError(413, f"{name}: {len(items)} items, over the limit of {max_inputs} per request")
    for i, t in enumerate(items):
        if len(t) > max_chars:
            raise RequestError(413, f"{name}[{i}]: {len(t)} characters, over the limit of {max_chars}")
        if not t.strip():
            raise RequestError(422, f"{name}[{i}]: empty string")
    check_unicode(items, name)
    return items

