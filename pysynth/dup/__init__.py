"""Duplicate question detection without labelled data (Rücklé et al. 2019): evaluation
(:mod:`pysynth.dup.evaluate`); dense retrieval is :mod:`pysynth.retrieval.dense`.

Work in progress (issue 15): the weak-supervision pairs (WS-TB, DQG), trained detectors and the
``pysynth dup pairs|train|index|search`` commands are not built yet.
"""
from pysynth.dup.evaluate import check_rows, evaluate, score_candidates

__all__ = ["evaluate", "score_candidates", "check_rows"]
