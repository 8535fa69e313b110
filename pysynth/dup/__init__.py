"""Duplicate question detection without labelled data (Rücklé et al. 2019): title–body weak
supervision (:mod:`pysynth.dup.pairs`, WS-TB), duplicate question generation (:mod:`pysynth.dup.dqg`,
DQG; both through ``pysynth dup pairs --method ws-tb|dqg|both``), evaluation (:mod:`pysynth.dup.evaluate`) and eval sets
(:mod:`pysynth.dup.data`); dense retrieval is :mod:`pysynth.retrieval.dense`.

Trained detectors: :mod:`pysynth.dup.train` (BiLSTM / BiGRU / MiniLM, ``pysynth dup train``);
``pysynth.dup.encoder(model).encode(texts)`` embeds with one on onnxruntime (no torch);
:mod:`pysynth.dup.search` indexes a forum (``pysynth dup index|search``).
"""
from pysynth.dup.evaluate import check_rows, evaluate, score_candidates
from pysynth.dup.search import Encoder, encoder

__all__ = ["evaluate", "score_candidates", "check_rows", "encoder", "Encoder"]
