"""Duplicate question detection without labelled data (Rücklé et al. 2019): title–body weak
supervision (:mod:`pysynth.dup.pairs`, WS-TB), evaluation (:mod:`pysynth.dup.evaluate`) and eval sets
(:mod:`pysynth.dup.data`); dense retrieval is :mod:`pysynth.retrieval.dense`.

Work in progress (issue 15): duplicate question generation (DQG), trained detectors and the
``pysynth dup train|index|search`` commands are not built yet.
"""
from pysynth.dup.evaluate import check_rows, evaluate, score_candidates

__all__ = ["evaluate", "score_candidates", "check_rows"]
