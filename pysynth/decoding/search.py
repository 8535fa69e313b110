"""Batched greedy, beam, diverse beam search and sampling over any step backend (numpy; no torch here).

The search runs on numpy arrays; a *backend* (:class:`pysynth.decoding.protocol.DecodingBackend`:
:class:`pysynth.decoding.backends.TorchBackend`, :class:`pysynth.decoding.ort.OrtBackend`,
:class:`pysynth.decoding.hf.HFBackend`) runs the model and names its special ids
(``backend.specials``). ``pysynth.decoding._reference``
defines the results with a readable one-sentence torch decoder; these functions must return the
same hypotheses and scores (tests compare them).

Rules shared by every search (and the reference):

* Ties: candidates are ranked by score (descending), then by flat index ``beam * V_ext + token``
  (ascending). Greedy takes the lowest token id among equal maxima.
* Sampling (:func:`sample_search`): top-k / top-p (nucleus, Holtzman et al. 2020) sampling from
  the temperature-scaled distribution; source ``s`` draws from ``numpy.random.default_rng([seed,
  s])`` (or from its own seed), so the same seeds give the same samples whatever the thread
  count, the backend and the rows that leave the batch.
* ``<pad>`` and ``<s>`` are never generated (``<unk>`` neither with ``ban_unk``), nor extended
  ids beyond a source's own OOV words; the ids are the backend's (``backend.specials``,
  :meth:`SpecialIds.never <pysynth.decoding.protocol.SpecialIds.never>`).
* Scores accumulate in float64 from the model's float32 log-probabilities.
* Beam search (per source, beam ``K``): take the best ``2K`` candidates; a ``</s>`` candidate of
  rank < K finishes a hypothesis, the best ``K`` others stay alive. A source is done once it has
  ``K`` finished hypotheses (``early_stopping=True`` in Hugging Face terms); at ``max_len`` the
  alive ones are added unfinished. The n-best list is ordered by the length-normalised score.
* Diverse beam search (Vijayakumar et al. 2016): the beam budget ``B`` is split into ``G``
  groups of ``B/G``; at each time step groups pick in order, and group ``g`` ranks candidate
  tokens by ``cumulative score + log p - lambda * (times the token was picked by groups < g at
  this step)`` (Hamming diversity). The penalised score accumulates in the search score (as in
  the paper's objective and Hugging Face); the returned ``logprob`` / ``score`` are the model's
  own log-probability without penalties. Each group is done at ``B/G`` finished hypotheses.
* No repeated n-gram (``no_repeat_ngram=n`` > 0, every search; 0, these functions' default, is
  off): a token that would complete an n-gram the hypothesis already holds gets ``-inf`` before
  the ranking (:func:`ngram_bans`; Paulus et al. 2018 block repeated trigrams at test time, Hugging
  Face's ``no_repeat_ngram_size``). ``<s>`` is not part of the hypothesis.
* No stutter (``no_stutter=True``, every search): the token just generated is banned at the next
  step, so no output says a token twice in a row ("what is the nhl nhl ..."): a trigram ban lets
  that one-step loop through. :class:`pysynth.decoding.SearchConfig` turns both guards on by
  default (``bench/RESULTS_generators.md``, "Degenerate-output guards").

Speed: a step only needs the best ``2K`` (+ banned + diversity-penalised) columns of each row;
backends with ``step_topk`` hand over ``[rows, k]`` arrays instead of ``[rows, V + n_ext]``. On
the CPU both backends build them with :func:`topk_from_parts` (compiled, ``pysynth._core.decoding``)
from the step's parts (``Seq2Seq.step_parts``: the log-softmax of the generate scores, one shift
per row, the source columns' values), which skips the vocabulary-wide Add / Clip / Concat /
Scatter / TopK passes of a full step and gives the same values bit for bit; otherwise
onnxruntime's step graph ends in TopK and torch uses ``torch.topk`` with a stable fix-up on ties
(see ``bench/RESULTS_models.md``). At the first step the ``K`` rows of a source are identical
(``<s>``, same state), so one row per source is run and its candidates repeated. Sources that
are done leave the batch. Hypotheses are never reordered on the host beyond
``take``/``take_h`` gathers of the decoder state.

Device-side group selection: a backend with a ``step_diverse`` method (``TorchBackend`` on its
Triton kernel path, ``kernels="triton"``) picks each group's ``B/G`` best non-``</s>``
continuations with the Hamming penalty on the device (``pysynth.kernels.diverse_beam``) and
returns only the picks and every beam's ``</s>`` log-probability; the search then merges the
``</s>`` candidates in and applies the same rules, in float64, as with numpy selection (same
hypotheses, unless two candidates tie within float32 rounding of the device's ranking). Used
for diverse beam search (``groups > 1``) with a vocabulary of at least ``B/G + 4`` ids, so that
every group has ``B/G`` finite non-``</s>`` candidates; otherwise, and for beam search, the
selection is numpy's.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass
from typing import List, Optional, Sequence, Union

import numpy as np

from pysynth.decoding.cancel import checkpoint
from pysynth.decoding.protocol import SpecialIds, check_backend

__all__ = ["Hypothesis", "normalize_score", "check_search_args", "apply_bans", "ngram_bans", "topk_ordered", "topk_from_parts",
           "step_candidates", "greedy_search", "beam_search", "diverse_beam_search", "sample_search",
           "check_sampling_args", "LENGTH_PENALTIES"]

LENGTH_PENALTIES = ("none", "average", "gnmt")


@dataclass
class Hypothesis:
    """One output sequence.

    tokens : generated ids (extended ids for copied OOV words), without ``<s>`` / ``</s>``
    logprob : sum of the model's log-probabilities (``</s>`` included when finished)
    score : ``logprob`` after length normalisation (the ranking score)
    finished : ended with ``</s>`` (False: cut at ``max_len``)
    group : diverse-beam-search group (0 otherwise)
    """

    tokens: List[int]
    logprob: float
    score: float
    finished: bool = True
    group: int = 0


def normalize_score(logprob: float, length: int, length_penalty: str = "none", alpha: float = 0.6) -> float:
    """Length-normalised score of a hypothesis of ``length`` generated tokens (``</s>`` counted).

    ``none``: the log-probability; ``average``: divided by the length; ``gnmt``: divided by
    ``((5 + length) / 6) ** alpha`` (Wu et al. 2016, Eq. 14).
    """
    if length_penalty == "none":
        return float(logprob)
    L = max(int(length), 1)
    if length_penalty == "average":
        return float(logprob) / L
    if length_penalty == "gnmt":
        return float(logprob) / (((5.0 + L) / 6.0) ** alpha)
    raise ValueError(f"length_penalty: must be one of {LENGTH_PENALTIES}, got {length_penalty!r}")


def check_search_args(beam: int = 1, groups: int = 1, diversity: float = 0.0, max_len: int = 1,
                      length_penalty: str = "none", alpha: float = 0.6) -> None:
    """ValueError naming the argument for impossible search settings."""
    if not isinstance(beam, (int, np.integer)) or beam < 1:
        raise ValueError(f"beam: must be a positive integer, got {beam!r}")
    if not isinstance(groups, (int, np.integer)) or groups < 1:
        raise ValueError(f"groups: must be a positive integer, got {groups!r}")
    if beam % groups != 0:
        raise ValueError(f"groups: the beam budget beam={beam} must be divisible by groups={groups} "
                         f"(beam % groups = {beam % groups}); e.g. beam={groups * max(1, beam // groups)}")
    if not np.isfinite(diversity) or diversity < 0:
        raise ValueError(f"diversity: must be a finite number >= 0, got {diversity!r}")
    if not isinstance(max_len, (int, np.integer)) or max_len < 1:
        raise ValueError(f"max_len: must be a positive integer, got {max_len!r}")
    if length_penalty not in LENGTH_PENALTIES:
        raise ValueError(f"length_penalty: must be one of {LENGTH_PENALTIES}, got {length_penalty!r}")
    if length_penalty == "gnmt" and not np.isfinite(alpha):
        raise ValueError(f"alpha: must be finite, got {alpha!r}")


def ngram_bans(prefix: Sequence[int], n: int) -> List[int]:
    """Tokens that would repeat an n-gram of ``prefix`` if appended to it (the no-repeat-n-gram
    guard; ``n <= 0``: none). ``n = 1`` bans every token of ``prefix``.

    Examples
    --------
    >>> ngram_bans([5, 6, 7, 5, 6], 3)
    [7]
    >>> ngram_bans([5, 6, 7], 3)
    []
    """
    n = int(n)
    if n <= 0 or len(prefix) < n - 1:
        return []
    p = [int(t) for t in prefix]
    tail = tuple(p[len(p) - n + 1:]) if n > 1 else ()
    return [p[i + n - 1] for i in range(len(p) - n + 1) if tuple(p[i:i + n - 1]) == tail]


def _check_ngram(no_repeat_ngram) -> int:
    if isinstance(no_repeat_ngram, bool) or not isinstance(no_repeat_ngram, (int, np.integer)) or no_repeat_ngram < 0:
        raise ValueError(f"no_repeat_ngram: must be an integer >= 0 (0: off), got {no_repeat_ngram!r}")
    return int(no_repeat_ngram)


def _check_flag(no_stutter) -> bool:
    if not isinstance(no_stutter, (bool, np.bool_)):
        raise TypeError(f"no_stutter: must be True or False, got {no_stutter!r}")
    return bool(no_stutter)


def _row_bans(histories, n: int, no_stutter: bool = False):
    """Per row, the ids :func:`ngram_bans` forbids, and the row's last token with ``no_stutter``
    (None when the guards are off or nothing is banned)."""
    if n <= 0 and not no_stutter:
        return None
    bans = [ngram_bans(h, n) + ([int(h[-1])] if no_stutter and len(h) else []) for h in histories]
    return bans if any(bans) else None


def apply_bans(logp: np.ndarray, ext_limit: np.ndarray, ban_unk: bool, specials: SpecialIds) -> np.ndarray:
    """Set never-generated columns to -inf in place: ``specials.never(ban_unk)`` and extended
    ids >= ``ext_limit``."""
    logp[:, list(specials.never(ban_unk))] = -np.inf
    Vx = logp.shape[1]
    if ext_limit.size and int(ext_limit.min()) < Vx:
        cols = np.arange(Vx)
        logp[cols[None, :] >= ext_limit[:, None]] = -np.inf
    return logp


def topk_ordered(x: np.ndarray, k: int):
    """Top ``k`` of each row of ``x`` [R, C] ordered by value desc, then column asc (exact on ties).

    Returns ``(idx, val)``, both [R, k].
    """
    R, C = x.shape
    k = min(k, C)
    if k >= C or C <= 64:
        idx = np.argsort(-x, axis=1, kind="stable")[:, :k]
    else:
        idx = np.argpartition(-x, k - 1, axis=1)[:, :k]
        val = np.take_along_axis(x, idx, 1)
        thr = val.min(1)
        # argpartition picks arbitrarily among values equal to the k-th: fix those rows exactly
        bad = np.nonzero((x == thr[:, None]).sum(1) != (val == thr[:, None]).sum(1))[0]
        for r in bad:
            idx[r] = np.argsort(-x[r], kind="stable")[:k]
    val = np.take_along_axis(x, idx, 1)
    order = np.lexsort((idx, -val), axis=-1)
    idx = np.take_along_axis(idx, order, 1)
    return idx, np.take_along_axis(val, order, 1)


def topk_from_parts(ls: np.ndarray, shift: np.ndarray, touched: np.ndarray, src_ext: np.ndarray, n_ext: int,
                    k: int, floor: float, workers: int = 1):
    """The ``k`` best candidates of each row of a decoder step, from the step's parts.

    ``logp[r, c] = max(ls[r, c] + shift[r], floor)`` for ``c < V``, ``floor`` for the
    ``n_ext`` extended columns, then ``logp[r, src_ext[r, j]] = touched[r, j]`` (float32;
    :meth:`pysynth.models.seq2seq.Seq2Seq.step_parts`): returns ``(vals [rows, k] float32,
    idx [rows, k] int64)``, per row by value descending, then column ascending. The compiled
    backend (``pysynth._core.decoding``) scans ``ls`` once and never builds the
    [rows, V + n_ext] rows; the numpy twin (:func:`pysynth.decoding._reference.topk_from_parts`,
    ``PYSYNTH_IMPL=python``) does. Both return identical arrays. ``shift`` may be [rows] or
    [rows, 1]. Raises ``ValueError`` (sizes in the message) for inconsistent shapes, ``k``
    outside ``[1, V + n_ext]``, ids outside ``[0, V + n_ext)`` and NaN values.
    """
    from pysynth import _dispatch

    ls = np.asarray(ls)
    if ls.ndim != 2:
        raise ValueError(f"ls: expected [rows, vocab], got shape {ls.shape}")
    n, V = ls.shape
    shift = np.asarray(shift)
    if shift.size != n or shift.ndim not in (1, 2):
        raise ValueError(f"shift: expected [rows] or [rows, 1] with rows={n}, got shape {shift.shape}")
    touched, src_ext = np.asarray(touched), np.asarray(src_ext)
    if touched.ndim != 2 or touched.shape[0] != n or src_ext.shape != touched.shape:
        raise ValueError(f"touched, src_ext: expected both [rows={n}, src_len], got {touched.shape} and "
                         f"{src_ext.shape}")
    if not isinstance(n_ext, (int, np.integer)) or n_ext < 0:
        raise ValueError(f"n_ext: must be an integer >= 0, got {n_ext!r}")
    if not isinstance(k, (int, np.integer)) or not 1 <= k <= V + n_ext:
        raise ValueError(f"k: must be an integer in [1, vocab + n_ext] = [1, {V + n_ext}], got {k!r}")
    if not isinstance(workers, (int, np.integer)) or (workers < 1 and workers != -1):
        raise ValueError(f"workers: must be >= 1 or -1 (all cores), got {workers!r}")
    return _dispatch.backend("decoding").topk_from_parts(
        ls, shift.reshape(n).astype(np.float32, copy=False), touched, src_ext, int(n_ext), int(k),
        np.float32(floor), int(workers))


def _finish(tokens: Sequence[int], logprob: float, finished: bool, length_penalty: str, alpha: float,
            group: int = 0) -> Hypothesis:
    toks = np.asarray(tokens, dtype=np.int64).tolist()
    return Hypothesis(toks, float(logprob), normalize_score(logprob, len(toks) + int(finished), length_penalty, alpha),
                      finished, group)


def _rank(hyps: List[Hypothesis]) -> List[Hypothesis]:
    # stable sort: equal scores keep the order in which they were found
    return sorted(hyps, key=lambda h: -h.score)


def _ban_matrix(banned: Sequence[Sequence[int]], n: int, width: int) -> np.ndarray:
    """int64 [n, width]: row ``r`` holds ``banned[r]`` then -1 (no token id)."""
    lens = np.fromiter((len(b) for b in banned), dtype=np.int64, count=n)
    out = np.full((n, width), -1, dtype=np.int64)
    out[np.arange(width) < lens[:, None]] = np.fromiter(itertools.chain.from_iterable(banned), dtype=np.int64,
                                                         count=int(lens.sum()))
    return out


def step_candidates(backend, enc, tokens, h, need: int, vx: int, limits: np.ndarray, ban_unk: bool,
                    banned: Optional[Sequence[Sequence[int]]] = None):
    """The best allowed candidates of each row after one step.

    Returns ``(vals, idx, h)``: ``vals`` [N, k] float64 log-probabilities (banned ids at -inf),
    ``idx`` [N, k] token ids, with ``k = min(vx, need + 3 + n_ext)``: enough that the ``need``
    best *allowed* tokens of every row are among them (at most ``<pad>``, ``<s>``, ``<unk>`` and
    the ``n_ext`` extended columns can be banned). The order inside a row is unspecified; the
    searches order candidates by (score desc, flat index asc) themselves. Backends with a
    ``step_topk`` method (onnxruntime) return only these columns; others return full rows.
    ``banned``: per row, more ids to set to -inf (the no-repeat-n-gram guard); ``k`` grows by
    the longest list.
    """
    sp = backend.specials
    never = sp.never(ban_unk)
    extra = max((len(b) for b in banned), default=0) if banned is not None else 0
    k = min(vx, need + len(never) + (vx - backend.vocab_size) + extra)
    step_topk = getattr(backend, "step_topk", None)
    if step_topk is not None:
        vals, idx, h = step_topk(enc, tokens, h, k)
        vals = vals.astype(np.float64)
        idx = idx.astype(np.int64, copy=False)
        bad = np.isin(idx, never) | (idx >= limits[:, None])
        if extra:
            # each row's few banned ids against its k candidates at once (per-row np.isin calls were
            # a quarter of a paraphrase run's time, 2 x 256 rows per step)
            bad |= (idx[:, :, None] == _ban_matrix(banned, len(idx), extra)[:, None, :]).any(axis=2)
        vals[bad] = -np.inf
        return vals, idx, h
    logp, h = backend.step(enc, tokens, h)
    if logp.shape[1] != vx:
        raise ValueError(f"backend: step returned {logp.shape[1]} columns, expected {vx} (vocab + n_ext)")
    apply_bans(logp, limits, ban_unk, sp)
    if extra:
        ban = _ban_matrix(banned, len(logp), extra)
        logp[np.nonzero(ban >= 0)[0], ban[ban >= 0]] = -np.inf
    idx, vals = topk_ordered(logp, k)
    return vals.astype(np.float64), idx, h


def _one_path_per_row(backend, enc, h, limits: np.ndarray, sp, max_len: int, ban_unk: bool, need: int, vx: int,
                      pick, length_penalty: str = "none", alpha: float = 0.6,
                      no_repeat_ngram: int = 0, no_stutter: bool = False) -> List[Hypothesis]:
    """The decode loop of greedy search and sampling: every row follows one path, one token per
    step; ``pick(t, active, vals, idx)`` chooses each active row's column among its candidates;
    a row leaves the batch at ``</s>``. Returns one hypothesis per row."""
    R = limits.shape[0]
    active = np.arange(R)
    tokens = np.full(R, sp.bos, dtype=np.int64)
    lp = np.zeros(R, dtype=np.float64)
    out: List[List[int]] = [[] for _ in range(R)]
    hyps: List[Optional[Hypothesis]] = [None] * R
    for t in range(max_len):
        checkpoint()  # a caller that gave up stops the search here (pysynth.decoding.cancel)
        banned = _row_bans([out[j] for j in active], no_repeat_ngram, no_stutter)
        vals, idx, h = step_candidates(backend, enc, tokens, h, need, vx, limits[active], ban_unk, banned)
        vals, idx, col = pick(t, active, vals, idx)
        rows = np.arange(len(active))
        tok = idx[rows, col]
        lp[active] += vals[rows, col]
        eos = tok == sp.eos
        for i in np.nonzero(eos)[0]:
            j = active[i]
            hyps[j] = _finish(out[j], lp[j], True, length_penalty, alpha)
        for i in np.nonzero(~eos)[0]:
            out[active[i]].append(int(tok[i]))
        if eos.any():
            keep = np.nonzero(~eos)[0]
            active, tok = active[keep], tok[keep]
            if not len(active):
                break
            enc, h = backend.take(enc, keep), backend.take_h(h, keep)
        tokens = tok.astype(np.int64)
    for j in active:
        hyps[j] = _finish(out[j], lp[j], False, length_penalty, alpha)
    return hyps  # type: ignore[return-value]


def greedy_search(backend, batch, max_len: int = 40, ban_unk: bool = True,
                  no_repeat_ngram: int = 0, no_stutter: bool = False) -> List[List[Hypothesis]]:
    """Greedy decoding of a :class:`~pysynth.models.batching.SourceBatch`: one hypothesis per source
    (``no_repeat_ngram``, ``no_stutter``: see the module docstring)."""
    check_search_args(max_len=max_len)
    nr = _check_ngram(no_repeat_ngram)
    sp = check_backend(backend)
    vx = backend.vocab_size + int(batch.n_ext)
    enc, h = backend.encode(batch)

    def best(t, active, vals, idx):  # highest value, lowest id among equals
        return vals, idx, np.lexsort((idx, -vals), axis=-1)[:, 0]

    hyps = _one_path_per_row(backend, enc, h, batch.ext_limit(backend.vocab_size), sp, max_len, ban_unk, 1, vx,
                             best, no_repeat_ngram=nr, no_stutter=_check_flag(no_stutter))
    return [[hyp] for hyp in hyps]


def beam_search(backend, batch, beam: int = 5, max_len: int = 40, length_penalty: str = "none",
                alpha: float = 0.6, n_best: Optional[int] = None, ban_unk: bool = True,
                no_repeat_ngram: int = 0, no_stutter: bool = False) -> List[List[Hypothesis]]:
    """Batched beam search; per source the ``n_best`` (default ``beam``) best hypotheses."""
    return diverse_beam_search(backend, batch, beam=beam, groups=1, diversity=0.0, max_len=max_len,
                               length_penalty=length_penalty, alpha=alpha, n_best=n_best, ban_unk=ban_unk,
                               no_repeat_ngram=no_repeat_ngram, no_stutter=no_stutter)


def diverse_beam_search(backend, batch, beam: int = 6, groups: int = 3, diversity: float = 0.5,
                        max_len: int = 40, length_penalty: str = "none", alpha: float = 0.6,
                        n_best: Optional[int] = None, ban_unk: bool = True, no_repeat_ngram: int = 0,
                        distinct: bool = False, no_stutter: bool = False) -> List[List[Hypothesis]]:
    """Batched diverse beam search (Vijayakumar et al. 2016) with Hamming diversity.

    Parameters
    ----------
    beam : int
        Beam budget ``B`` (all groups together).
    groups : int
        ``G``; must divide ``beam``. ``groups=1`` is plain beam search.
    diversity : float
        ``lambda``, the penalty per earlier-group use of a token at the same time step.
    n_best : int, optional
        Hypotheses kept per group (default ``beam // groups``); the list per source is ordered
        by normalised score.
    no_repeat_ngram, no_stutter
        The guards: no hypothesis repeats an n-gram (0: off) or a token twice in a row (module docstring).
    distinct : bool
        No group extends a prefix to a sequence an earlier group holds (alive or just finished)
        at that step, so the hypotheses are distinct (Hamming diversity alone lets groups merge a
        step later; ``bench/RESULTS_generators.md``). False: the paper's search.
    """
    check_search_args(beam, groups, diversity, max_len, length_penalty, alpha)
    nr, ns = _check_ngram(no_repeat_ngram), _check_flag(no_stutter)
    sp = check_backend(backend)
    G, Kg = groups, beam // groups
    nb = Kg if n_best is None else int(n_best)
    if nb < 1:
        raise ValueError(f"n_best: must be a positive integer, got {n_best!r}")
    B, K = len(batch), beam
    vx = backend.vocab_size + int(batch.n_ext)
    # a group needs its 2*Kg best candidates; earlier groups can push down (G-1)*Kg tokens
    need = 2 * Kg + (G - 1) * Kg if diversity else 2 * Kg
    distinct = bool(distinct) and G > 1
    need += 2 * (G - 1) * Kg if distinct else 0  # up to 2 Kg sequences of each earlier group to skip
    enc1, h1 = backend.encode(batch)
    rep = np.repeat(np.arange(B), K)
    enc, h = backend.take(enc1, rep), backend.take_h(h1, rep)
    limit_all = batch.ext_limit(backend.vocab_size)
    active = np.arange(B)
    search = np.full((B, G, Kg), -np.inf)  # penalised cumulative scores
    search[:, :, 0] = 0.0
    model = np.zeros((B, G, Kg))  # model log-probabilities
    hist = np.zeros((B * K, 0), dtype=np.int64)
    tokens = np.full(B * K, sp.bos, dtype=np.int64)
    finished: List[List[List[Hypothesis]]] = [[[] for _ in range(G)] for _ in range(B)]
    gdone = np.zeros((B, G), dtype=bool)
    beam_off = (np.arange(Kg) * vx)[None, :, None]
    # (the device selection knows no n-gram bans: with the guard on, numpy selects)
    on_device = (G > 1 and not nr and not ns and not distinct and getattr(backend, "step_diverse", None) is not None
                 and backend.vocab_size >= Kg + 4)
    eos_flat = (np.arange(Kg) * vx + sp.eos)[None, :]
    t = -1
    for t in range(max_len):
        checkpoint()
        nA = len(active)
        srch, mdl = search[active], model[active]
        if on_device:
            # each group's Kg best non-</s> picks (penalty from earlier live groups) + log p(</s>)
            pk_b, pk_t, pk_lp, eos_lp, h = backend.step_diverse(
                enc, tokens, h, srch.reshape(nA, K), ~gdone[active], G, diversity,
                np.repeat(limit_all[active], K), ban_unk)
        else:
            if t == 0:
                # the K rows of a source are identical at the first step (<s>, h0): run one
                # row per source and repeat its candidates (same results, K - 1 of K rows saved)
                vals, idx, h = step_candidates(backend, enc1, tokens[::K], h1, need, vx, limit_all, ban_unk)
                vals, idx, h = np.repeat(vals, K, 0), np.repeat(idx, K, 0), backend.take_h(h, rep)
            else:
                banned = _row_bans(hist.tolist(), nr, ns) if (nr or ns) and hist.shape[1] else None
                vals, idx, h = step_candidates(backend, enc, tokens, h, need, vx, np.repeat(limit_all[active], K),
                                               ban_unk, banned)
            kc = vals.shape[1]
            vals = vals.reshape(nA, G, Kg, kc)
            idx = idx.reshape(nA, G, Kg, kc)
        ar = np.arange(nA)[:, None]
        parent = np.tile(np.arange(K), (nA, 1))  # row within source, per new slot
        new_tok = np.full((nA, K), sp.pad, dtype=np.int64)
        used = np.zeros((nA, vx)) if (G > 1 and diversity) else None
        seen: List[set] = [set() for _ in range(nA)] if distinct else []
        for g in range(G):
            if on_device:
                val, bm, tk, mval = _device_group(g, Kg, vx, (pk_b, pk_t, pk_lp, eos_lp), srch, mdl,
                                                  used, diversity, eos_flat)
            else:
                v, ix = vals[:, g], idx[:, g]
                cand = srch[:, g, :, None] + v
                if used is not None and g > 0:
                    cand = cand - diversity * used[ar[:, :, None], ix]
                cand = cand.reshape(nA, Kg * kc)
                flat = (beam_off + ix).reshape(nA, Kg * kc)
                order = np.lexsort((flat, -cand), axis=-1)[:, : 2 * Kg + (2 * g * Kg if distinct else 0)]
                val = np.take_along_axis(cand, order, 1)
                fl = np.take_along_axis(flat, order, 1)
                mval = mdl[ar, g, fl // vx] + np.take_along_axis(v.reshape(nA, Kg * kc), order, 1)
                if distinct and g:
                    val, fl, mval = _skip_seen(val, fl, mval, seen, hist, g * Kg, K, vx, 2 * Kg)
                bm, tk = fl // vx, fl % vx
            eos = tk == sp.eos
            was_done = gdone[active, g]
            for i, r in zip(*np.nonzero(eos[:, :Kg])):
                s = active[i]
                if was_done[i] or not np.isfinite(val[i, r]):
                    continue
                finished[s][g].append(_finish(hist[i * K + g * Kg + bm[i, r]], mval[i, r], True,
                                              length_penalty, alpha, g))
                if distinct:
                    seen[i].add((*hist[i * K + g * Kg + bm[i, r]].tolist(), int(sp.eos)))
            keep = ~eos & (np.cumsum(~eos, 1) <= Kg)
            sel_b = bm[keep].reshape(nA, Kg)
            sel_t = tk[keep].reshape(nA, Kg)
            _hold(seen, hist, g * Kg, K, sel_b, sel_t)
            srch[:, g] = val[keep].reshape(nA, Kg)
            mdl[:, g] = mval[keep].reshape(nA, Kg)
            parent[:, g * Kg:(g + 1) * Kg] = g * Kg + sel_b
            new_tok[:, g * Kg:(g + 1) * Kg] = sel_t
            if used is not None:
                live = np.nonzero(~was_done)[0]
                np.add.at(used, (np.repeat(live, Kg), sel_t[live].ravel()), 1.0)
            for i in np.nonzero(~was_done)[0]:
                s = active[i]
                if len(finished[s][g]) >= Kg:
                    gdone[s, g] = True
        search[active], model[active] = srch, mdl
        rows = (np.arange(nA)[:, None] * K + parent).ravel()
        hist = np.concatenate([hist[rows], new_tok.reshape(-1, 1)], 1)
        tokens = new_tok.ravel()
        h = backend.take_h(h, rows)
        done = gdone[active].all(1)
        if t == max_len - 1:
            break
        if done.any():
            keep_src = np.nonzero(~done)[0]
            active = active[keep_src]
            if not len(active):
                break
            krows = (keep_src[:, None] * K + np.arange(K)).ravel()
            enc, h = backend.take(enc, krows), backend.take_h(h, krows)
            hist, tokens = hist[krows], tokens[krows]
    if t == max_len - 1:  # sources still running at max_len: add their alive hypotheses unfinished
        _add_alive(finished, active, gdone, search, model, hist, Kg, length_penalty, alpha)
    results = []
    for s in range(B):
        hyps: List[Hypothesis] = []
        for g in range(G):
            hyps.extend(_rank(finished[s][g])[:nb])
        results.append(_rank(hyps))
    return results


def _hold(seen, hist, off: int, K: int, sel_b, sel_t) -> None:
    """Add the sequences a group selected (parent prefix + token) to ``seen`` (per row; none when
    ``seen`` is empty, i.e. ``distinct`` is off)."""
    for i, held in enumerate(seen):
        for b, tok in zip(sel_b[i].tolist(), sel_t[i].tolist()):
            held.add((*hist[i * K + off + b].tolist(), tok))


def _skip_seen(val, fl, mval, seen, hist, off: int, K: int, vx: int, keep: int):
    """Group candidates ``(val, flat id, model logprob)`` (ranked) without those whose sequence an
    earlier group holds (``seen[row]``): they move last with score ``-inf`` (ranked by flat id
    among themselves, as every ``-inf`` candidate), then the first ``keep`` ranks are returned."""
    val = val.copy()
    for i in range(val.shape[0]):
        if not seen[i]:
            continue
        for r in range(val.shape[1]):
            b, tok = divmod(int(fl[i, r]), vx)
            if (*hist[i * K + off + b].tolist(), tok) in seen[i]:
                val[i, r] = -np.inf
    order = np.lexsort((fl, -val), axis=-1)[:, :keep]
    return (np.take_along_axis(val, order, 1), np.take_along_axis(fl, order, 1),
            np.take_along_axis(mval, order, 1))


def _device_group(g: int, Kg: int, vx: int, picks, srch, mdl, used, diversity: float, eos_flat):
    """Group ``g``'s ranked candidates ``(val, beam, token, model logprob)`` from the device picks
    of ``backend.step_diverse`` (``picks``: beams, tokens, log-probabilities, ``</s>`` log-probabilities).

    Ranked together, the Kg picks and the Kg ``</s>`` candidates give every ``</s>`` candidate of
    rank < Kg the rank it has among all candidates, and hold the Kg best non-``</s>`` ones: all
    that the search's rules read."""
    pk_b, pk_t, pk_lp, eos_lp = picks
    nA = srch.shape[0]
    ar = np.arange(nA)[:, None]
    gs = slice(g * Kg, (g + 1) * Kg)
    pb, pt = pk_b[:, gs] - g * Kg, pk_t[:, gs]
    plp, elp = pk_lp[:, gs].astype(np.float64), eos_lp[:, gs].astype(np.float64)
    pen = diversity * used[ar, pt] if (used is not None and g > 0) else 0.0
    cand = np.concatenate([srch[ar, g, pb] + plp - pen, srch[:, g, :] + elp], 1)
    flat = np.concatenate([pb * vx + pt, np.repeat(eos_flat, nA, 0)], 1)
    mv = np.concatenate([mdl[ar, g, pb] + plp, mdl[:, g, :] + elp], 1)
    order = np.lexsort((flat, -cand), axis=-1)
    val = np.take_along_axis(cand, order, 1)
    fl = np.take_along_axis(flat, order, 1)
    mval = np.take_along_axis(mv, order, 1)
    return val, fl // vx, fl % vx, mval


def _add_alive(finished, active, gdone, search, model, hist, Kg: int, length_penalty: str, alpha: float) -> None:
    """Add the alive hypotheses of the groups not done as unfinished ones (diverse beam search at
    ``max_len``)."""
    G = search.shape[1]
    K = G * Kg
    for i, s in enumerate(active):
        for g in range(G):
            if gdone[s, g]:
                continue
            for j in range(Kg):
                if np.isfinite(search[s, g, j]):
                    finished[s][g].append(_finish(hist[i * K + g * Kg + j], model[s, g, j], False,
                                                  length_penalty, alpha, g))


def check_sampling_args(n: int = 1, top_k: int = 0, top_p: float = 1.0, temperature: float = 1.0,
                        max_len: int = 1) -> None:
    """ValueError naming the argument for impossible sampling settings."""
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"n: must be a positive integer (samples per source), got {n!r}")
    if not isinstance(top_k, (int, np.integer)) or top_k < 0:
        raise ValueError(f"top_k: must be an integer >= 0 (0: no top-k cut), got {top_k!r}")
    if not (isinstance(top_p, (int, float, np.floating)) and 0.0 < top_p <= 1.0):
        raise ValueError(f"top_p: must be in (0, 1] (1: no nucleus cut), got {top_p!r}")
    if not (isinstance(temperature, (int, float, np.floating)) and np.isfinite(temperature) and temperature > 0):
        raise ValueError(f"temperature: must be a finite number > 0, got {temperature!r}")
    check_search_args(max_len=max_len)


def sample_search(backend, batch, n: int = 1, top_k: int = 0, top_p: float = 1.0, temperature: float = 1.0,
                  seed: Union[int, Sequence[int]] = 0, max_len: int = 40, length_penalty: str = "none",
                  alpha: float = 0.6, ban_unk: bool = True, no_repeat_ngram: int = 0,
                  no_stutter: bool = False) -> List[List[Hypothesis]]:
    """Top-k / top-p (nucleus) sampling: ``n`` sampled hypotheses per source, seeded.

    At each step the allowed candidates of a row are ranked (value desc, id asc), the
    distribution ``softmax(log p / temperature)`` is cut to the ``top_k`` best (0: all) and
    then to the smallest prefix whose probability reaches ``top_p`` (Holtzman et al. 2020; at
    least one token), renormalised, and one token is drawn by inverse CDF with a uniform draw.

    Parameters
    ----------
    seed : int or sequence of int
        One seed for all sources, or one per source. Source ``s`` draws from
        ``numpy.random.default_rng([seed, s])`` (or ``[seed[s]]``), one uniform number per
        sample and step, so results do not depend on the batch's other sources, on rows
        leaving the batch or on thread counts.

    Returns
    -------
    Per source its ``n`` samples ranked by length-normalised score; ``logprob`` is the model's
    own (untempered) log-probability.
    """
    check_sampling_args(n, top_k, top_p, temperature, max_len)
    if length_penalty not in LENGTH_PENALTIES:
        raise ValueError(f"length_penalty: must be one of {LENGTH_PENALTIES}, got {length_penalty!r}")
    nr = _check_ngram(no_repeat_ngram)
    sp = check_backend(backend)
    B = len(batch)
    if isinstance(seed, (int, np.integer)):
        draws = [np.random.default_rng([int(seed), s]).random((n, max_len)) for s in range(B)]
    else:
        seeds = list(seed)
        if len(seeds) != B or not all(isinstance(x, (int, np.integer)) and x >= 0 for x in seeds):
            raise ValueError(f"seed: expected an int or {B} ints >= 0 (one per source), got {seed!r}")
        draws = [np.random.default_rng([int(x)]).random((n, max_len)) for x in seeds]
    u = np.stack(draws).reshape(B * n, max_len) if B else np.zeros((0, max_len))
    V = backend.vocab_size
    vx = V + int(batch.n_ext)
    need = int(top_k) if top_k else vx
    enc, h = backend.encode(batch)
    rep = np.repeat(np.arange(B), n)
    enc, h = backend.take(enc, rep), backend.take_h(h, rep)

    def draw(t, active, vals, idx):
        order = np.lexsort((idx, -vals), axis=-1)
        vals, idx = np.take_along_axis(vals, order, 1), np.take_along_axis(idx, order, 1)
        if top_k:
            vals, idx = vals[:, :top_k], idx[:, :top_k]
        z = vals / float(temperature)
        p = np.exp(z - z[:, :1])  # row maxima first: no overflow; -inf -> 0
        p /= p.sum(1, keepdims=True)
        if top_p < 1.0:
            before = np.cumsum(p, 1) - p  # mass of the better tokens
            p = np.where(before < top_p, p, 0.0)
            p /= p.sum(1, keepdims=True)
        cdf = np.cumsum(p, 1)
        r = u[active, t] * cdf[:, -1]
        pick = np.minimum((cdf <= r[:, None]).sum(1), (p > 0).sum(1) - 1)  # never a zero-mass column
        return vals, idx, pick

    hyps = _one_path_per_row(backend, enc, h, np.repeat(batch.ext_limit(V), n), sp, max_len, ban_unk, need, vx,
                             draw, length_penalty, alpha, nr, _check_flag(no_stutter))
    return [_rank(hyps[s * n:(s + 1) * n]) for s in range(B)]  # type: ignore[arg-type]
