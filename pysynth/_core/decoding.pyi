"""
Candidate selection for the batched searches; twin: pysynth.decoding._reference
"""
from __future__ import annotations
import numpy
import numpy.typing
import typing
__all__: list[str] = ['topk_from_parts']
def topk_from_parts(ls: typing.Annotated[numpy.typing.ArrayLike, numpy.float32], shift: typing.Annotated[numpy.typing.ArrayLike, numpy.float32], touched: typing.Annotated[numpy.typing.ArrayLike, numpy.float32], src_ext: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], n_ext: typing.SupportsInt | typing.SupportsIndex, k: typing.SupportsInt | typing.SupportsIndex, floor: typing.SupportsFloat | typing.SupportsIndex, workers: typing.SupportsInt | typing.SupportsIndex) -> tuple:
    """
    See pysynth.decoding._reference.topk_from_parts
    """
