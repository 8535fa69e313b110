"""Readers of the public data formats the methods train and evaluate on (toolkit layer).

Each module reads one format and returns plain rows; what a method makes of them (splits,
filters, its own row shapes) stays in the method.

* :mod:`pysynth.datasets.squad` -- SQuAD v1.1 / v2.0 JSON (articles, paragraphs, questions).
* :mod:`pysynth.datasets.stackexchange` -- Stack Exchange data dumps (``Posts.xml`` etc.,
  plain, gzip'd or in ``.7z`` archives), streamed.
* :mod:`pysynth.datasets.tatoeba` -- the English-French Tatoeba pairs of the shared data.
* :mod:`pysynth.datasets.vqa` -- the VQA v2 question subset of the shared data.

Submodules are imported on use (``from pysynth.datasets import squad``).
"""
