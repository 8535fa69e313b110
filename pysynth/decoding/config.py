"""One set of search settings for every generator: :class:`SearchConfig`, validated once, and
:func:`run_search`, which runs the search it names over any decoding backend.

Method configurations (``pysynth.paraphrase.ParaphraseConfig``, qagen's question decoding, the MQR
rewriter, dup's question generator) build a :class:`SearchConfig` from their own settings
instead of checking copies of these rules.
"""
from __future__ import annotations

import dataclasses
import math
import numbers
import re
from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence

from pysynth._validate import MAX_BEAM, MAX_NO_REPEAT_NGRAM, clip

__all__ = ["SearchConfig", "DECODES", "run_search", "renamed", "MAX_NO_REPEAT_NGRAM", "guard_changes"]

#: the searches: greedy, beam search, diverse beam search (Vijayakumar et al. 2016), sampling
DECODES = ("greedy", "beam", "dbs", "sample")
_ALIASES = {"diverse": "dbs"}  # Generator.generate's spelling


def _int(v, name: str, lo: int, hint: str = "") -> None:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral) or v < lo:
        what = "a positive integer" if lo == 1 else f"an integer >= {lo}"
        raise ValueError(f"{name}: must be {what}{hint}, got {v!r}")


def _num(v, name: str, ok, rule: str) -> None:
    if isinstance(v, bool) or not isinstance(v, numbers.Real) or not math.isfinite(v) or not ok(v):
        raise ValueError(f"{name}: must be {rule}, got {v!r}")


@dataclass(frozen=True)
class SearchConfig:
    """How to decode: which search and its settings (validated on construction).

    Parameters
    ----------
    decode : {"greedy", "beam", "dbs", "sample"}
        Greedy search, beam search, diverse beam search (Hamming diversity) or top-k / top-p
        sampling (``"diverse"`` is accepted for ``"dbs"``).
    beam : int
        Beam width (the whole budget B for ``dbs``); for ``sample``, the default of ``n``.
    groups : int
        ``dbs``: G groups of ``beam / groups`` (``beam`` must be a multiple); ignored otherwise.
    diversity : float
        ``dbs``: lambda, the Hamming penalty (>= 0).
    n : int, optional
        Outputs per input (default ``beam``).
    top_k, top_p, temperature
        ``sample``: the top-k cut (0: none), the nucleus cut (1: none) and the temperature.
    max_len : int, optional
        Output length limit in tokens (None: the model's own).
    length_penalty, alpha
        Ranking score (:func:`pysynth.decoding.search.normalize_score`).
    ban_unk : bool
        Never generate ``<unk>``.
    seed : int
        ``sample``: input ``i`` draws from ``[seed, i]`` unless the caller gives one seed per input.
    no_repeat_ngram : int
        Every search: no output repeats an n-gram of this many tokens (3, the default, blocks
        repeated trigrams; 0: off; at most :data:`MAX_NO_REPEAT_NGRAM`). See
        :func:`pysynth.decoding.search.ngram_bans`.
    no_stutter : bool
        Every search: no output says a token twice in a row (True, the default). The two guards
        are on by default since issue 26: on the held-out sets of every shipped CopyNet they cut
        the outputs that loop (e.g. question generation 21 % -> 0.7 %) at equal or better BLEU /
        ROUGE (``bench/RESULTS_generators.md``, "Degenerate-output guards";
        ``no_repeat_ngram=0, no_stutter=False`` is the plain search of the papers).
    distinct : bool
        ``dbs``: no group extends a prefix to a sequence an earlier group holds at that step, so
        the outputs are distinct (False, the default: Vijayakumar et al.'s search, where groups
        can end in the same hypothesis). See :func:`pysynth.decoding.search.diverse_beam_search`.

    Raises
    ------
    ValueError
        naming the field and the fix for an impossible setting.

    Examples
    --------
    >>> SearchConfig(decode="dbs", beam=8, groups=4).outputs
    8
    """

    decode: str = "beam"
    beam: int = 5
    groups: int = 1
    diversity: float = 0.5
    n: Optional[int] = None
    top_k: int = 0
    top_p: float = 1.0
    temperature: float = 1.0
    max_len: Optional[int] = None
    length_penalty: str = "none"
    alpha: float = 0.6
    ban_unk: bool = True
    seed: int = 0
    no_repeat_ngram: int = 3
    distinct: bool = False
    no_stutter: bool = True

    def __post_init__(self):
        from pysynth.decoding.search import LENGTH_PENALTIES

        decode = _ALIASES.get(self.decode, self.decode)
        if decode not in DECODES:
            raise ValueError(f"decode: must be one of {DECODES}, got {self.decode!r}")
        object.__setattr__(self, "decode", decode)
        _int(self.beam, "beam", 1)
        _int(self.groups, "groups", 1)
        if self.beam > MAX_BEAM:  # memory, not quality, grows past it (issue 27: beam 100000 asked for 18-67 GiB)
            raise ValueError(f"beam: must be at most {MAX_BEAM}, got {self.beam}")
        if decode == "dbs" and self.beam % self.groups:
            raise ValueError(f"groups: the beam budget beam={self.beam} must be a multiple of groups={self.groups} "
                             f"for diverse beam search (beam % groups = {self.beam % self.groups}); "
                             f"e.g. beam={self.groups * max(1, self.beam // self.groups)}")
        _num(self.diversity, "diversity", lambda v: v >= 0, "a finite number >= 0")
        if self.n is not None:
            _int(self.n, "n", 1, " (outputs per input)")
        _int(self.top_k, "top_k", 0, " (0: no top-k cut)")
        _num(self.top_p, "top_p", lambda v: 0 < v <= 1, "in (0, 1] (1: no nucleus cut)")
        _num(self.temperature, "temperature", lambda v: v > 0, "a finite number > 0")
        if self.max_len is not None:
            _int(self.max_len, "max_len", 1)
        if self.length_penalty not in LENGTH_PENALTIES:
            raise ValueError(f"length_penalty: must be one of {LENGTH_PENALTIES}, got {self.length_penalty!r}")
        _num(self.alpha, "alpha", lambda v: True, "finite")
        _int(self.seed, "seed", 0)
        _int(self.no_repeat_ngram, "no_repeat_ngram", 0, " (0: off)")
        if self.no_repeat_ngram > MAX_NO_REPEAT_NGRAM:
            raise ValueError(f"no_repeat_ngram: must be at most {MAX_NO_REPEAT_NGRAM} (0: off), "
                             f"got {clip(self.no_repeat_ngram)}")
        if not isinstance(self.distinct, bool):
            raise TypeError(f"distinct: must be True or False, got {self.distinct!r}")
        if not isinstance(self.no_stutter, bool):
            raise TypeError(f"no_stutter: must be True or False, got {self.no_stutter!r}")

    @property
    def outputs(self) -> int:
        """Outputs per input: ``n``, else ``beam``."""
        return self.n if self.n is not None else self.beam

    @property
    def method(self) -> str:
        """The search's name in :meth:`pysynth.models.generate.Generator.generate` (``"diverse"`` for dbs)."""
        return "diverse" if self.decode == "dbs" else self.decode

    def as_dict(self) -> Dict[str, Any]:
        """The settings as a plain dict (JSON-ready)."""
        return dataclasses.asdict(self)

    def replace(self, **changes) -> "SearchConfig":
        """A copy with ``changes`` (validated again)."""
        return dataclasses.replace(self, **changes)


def guard_changes(no_repeat_ngram: int = SearchConfig.no_repeat_ngram,
                  no_stutter: bool = SearchConfig.no_stutter) -> Dict[str, Any]:
    """The degenerate-output guards that differ from :class:`SearchConfig`'s defaults, validated
    (ValueError / TypeError naming the argument): what a run signature records, so that a run
    at the defaults keeps the signature it had before the guards could be set.

    >>> guard_changes(), guard_changes(0, False)
    ({}, {'no_repeat_ngram': 0, 'no_stutter': False})
    """
    SearchConfig(no_repeat_ngram=no_repeat_ngram, no_stutter=no_stutter)
    return {k: v for k, v in (("no_repeat_ngram", no_repeat_ngram), ("no_stutter", no_stutter))
            if v != getattr(SearchConfig, k)}


def renamed(exc: ValueError, names: Mapping[str, str]) -> ValueError:
    """``exc`` with its leading field name spelt as the caller's option (``beam:`` -> ``beams:``),
    for a method configuration that validates through :class:`SearchConfig`."""
    field, sep, rest = str(exc).partition(":")
    if not sep:
        return exc
    for old, new in names.items():  # "beam=6" in the text too
        rest = re.sub(rf"\b{re.escape(old)}=", f"{new}=", rest)
    return ValueError(f"{names.get(field, field)}{sep}{rest}")


def run_search(backend, batch, config: SearchConfig, max_len: int, seeds: Optional[Sequence[int]] = None,
               ) -> List[list]:
    """Run the search ``config`` names over ``batch`` on ``backend``.

    Parameters
    ----------
    backend : a :class:`~pysynth.decoding.protocol.DecodingBackend`
    batch : :class:`~pysynth.decoding.protocol.SourceBatch`
    config : SearchConfig
    max_len : int
        The model's length limit, used when ``config.max_len`` is None.
    seeds : sequence of int, optional
        ``sample``: one seed per source (default: ``config.seed`` for all, drawn as ``[seed, s]``).

    Returns
    -------
    list of list of :class:`~pysynth.decoding.search.Hypothesis`, one n-best list per source.
    """
    import pysynth.decoding.search as S

    c = config
    max_len = c.max_len or max_len
    nr, ns = c.no_repeat_ngram, c.no_stutter
    if c.decode == "greedy":
        return S.greedy_search(backend, batch, max_len=max_len, ban_unk=c.ban_unk, no_repeat_ngram=nr,
                               no_stutter=ns)
    if c.decode == "sample":
        return S.sample_search(backend, batch, n=c.outputs, top_k=c.top_k, top_p=c.top_p,
                               temperature=c.temperature, seed=list(seeds) if seeds is not None else c.seed,
                               max_len=max_len, length_penalty=c.length_penalty, alpha=c.alpha, ban_unk=c.ban_unk,
                               no_repeat_ngram=nr, no_stutter=ns)
    if c.decode == "beam":
        return S.beam_search(backend, batch, beam=c.beam, max_len=max_len, length_penalty=c.length_penalty,
                             alpha=c.alpha, ban_unk=c.ban_unk, no_repeat_ngram=nr, no_stutter=ns)
    return S.diverse_beam_search(backend, batch, beam=c.beam, groups=c.groups, diversity=c.diversity,
                                 max_len=max_len, length_penalty=c.length_penalty, alpha=c.alpha, ban_unk=c.ban_unk,
                                 no_repeat_ngram=nr, distinct=c.distinct, no_stutter=ns)
