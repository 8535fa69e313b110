"""
Ranking metrics (P@k, reciprocal rank, average precision, AUC(max_fpr)); twin: pysynth.ranking._reference
"""
from __future__ import annotations
import numpy
import numpy.typing
import typing
__all__: list[str] = ['auc_at', 'ranking_stats']
def auc_at(scores: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], labels: typing.Annotated[numpy.typing.ArrayLike, numpy.int8], max_fpr: typing.SupportsFloat | typing.SupportsIndex, interpolate: bool = True) -> float:
    """
    Area under the pooled ROC curve up to max_fpr, divided by max_fpr.
    """
def ranking_stats(scores: typing.Annotated[numpy.typing.ArrayLike, numpy.float64], labels: typing.Annotated[numpy.typing.ArrayLike, numpy.int8], offsets: typing.Annotated[numpy.typing.ArrayLike, numpy.int64], k: typing.SupportsInt | typing.SupportsIndex) -> numpy.typing.NDArray[numpy.float64]:
    """
    Per-query [P@k, reciprocal rank, average precision, n_relevant], shape (Q, 4).
    """
