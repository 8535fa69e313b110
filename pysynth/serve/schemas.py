"""The adapters' request and response dataclasses (:func:`pysynth.pipelines.served.param`) as
pydantic models: FastAPI validates the bodies and writes ``/openapi.json`` from them.

Requests are strict (``"3"`` is not the integer 3, ``1`` is not ``true``; a float field takes an
integer) and refuse unknown fields; responses are documentation only (the endpoints answer plain
JSON).
"""
from __future__ import annotations

import dataclasses
from typing import Any, Dict, List, Union, get_args, get_origin, get_type_hints

__all__ = ["model_of"]


def _convert(t: Any, strict: bool, cache: Dict[Any, Any]) -> Any:
    from pydantic import StrictBool, StrictFloat, StrictInt, StrictStr

    if dataclasses.is_dataclass(t):
        return model_of(t, strict, cache)
    if strict and t in (str, int, bool, float):
        return {str: StrictStr, int: StrictInt, bool: StrictBool, float: Union[StrictFloat, StrictInt]}[t]
    origin, args = get_origin(t), get_args(t)
    if origin is Union:
        return Union[tuple(_convert(a, strict, cache) for a in args)]
    if origin is list:
        return List[_convert(args[0], strict, cache)]  # type: ignore[misc]
    if origin is dict:
        return Dict[_convert(args[0], strict, cache), _convert(args[1], strict, cache)]  # type: ignore[misc]
    return t  # Literal, Any, None and the non-strict scalars


def model_of(cls: type, strict: bool, cache: Dict[Any, Any]) -> Any:
    """The pydantic model of the dataclass ``cls`` (named as it is; nested dataclasses become
    nested models, memoised in ``cache``); ``strict``: a request body (strict types, no unknown
    fields)."""
    from pydantic import ConfigDict, Field, create_model

    if (cls, strict) in cache:
        return cache[cls, strict]
    hints = get_type_hints(cls)
    fields = {}
    for f in dataclasses.fields(cls):
        default: Any = ...
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        fields[f.name] = (_convert(hints[f.name], strict, cache), Field(default, **f.metadata) if f.metadata
                          else default)
    model = create_model(cls.__name__, __config__=ConfigDict(extra="forbid") if strict else None,  # type: ignore
                         **fields)
    cache[cls, strict] = model
    return model
