"""Readable one-sentence torch decoders: the specification of ``pysynth.decoding.search``.

Each function decodes ONE source with :meth:`Seq2Seq.encode` / :meth:`Seq2Seq.step` calls on
single hypotheses, following the rules in the docstring of :mod:`pysynth.decoding.search`
literally. The batched searches must return the same hypotheses, with scores within 1e-5.

Also the pure-Python (numpy) twin of the compiled ``pysynth._core.decoding`` stage:
:func:`topk_from_parts` (see ``pysynth._dispatch``). torch is imported by the decoders only,
so this module (the stage's twin) imports without it.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, List, Sequence

import numpy as np

from pysynth.decoding.protocol import SpecialIds
from pysynth.decoding.search import Hypothesis, check_search_args, ngram_bans, normalize_score

if TYPE_CHECKING:  # annotations only: the decoders import torch when they run
    import torch

__all__ = ["greedy_reference", "beam_reference", "diverse_beam_reference", "topk_from_parts"]


def topk_from_parts(ls, shift, touched, src_ext, n_ext, k, floor, workers):
    """The ``k`` best columns of each row of a decoder step, from the step's parts.

    The rows are those of :meth:`pysynth.models.seq2seq.Seq2Seq.step_tensors`, rebuilt from
    :meth:`~pysynth.models.seq2seq.Seq2Seq.step_parts` in float32::

        logp[r, c] = max(ls[r, c] + shift[r], floor)     c < V
        logp[r, c] = floor                               V <= c < V + n_ext
        logp[r, src_ext[r, j]] = touched[r, j]           j = 0, 1, ... (a later j wins)

    (``floor = -inf`` with ``n_ext = 0`` and no source columns: plain rows ``ls + shift``.)
    The compiled twin never builds these [rows, V + n_ext] rows: it scans ``ls`` once with a
    threshold, about 20x faster than the TopK of onnxruntime on the full rows (bench/RESULTS_models.md).

    Parameters
    ----------
    ls : [rows, V] float32
    shift : [rows] float32
    touched : [rows, S] float32
    src_ext : [rows, S] int64, ids in ``[0, V + n_ext)``
    n_ext : int >= 0
    k : int in ``[1, V + n_ext]``
    floor : float32
    workers : threads over rows (-1: all cores); results never depend on it

    Returns
    -------
    vals : [rows, k] float32
    idx : [rows, k] int64
        Per row the ``k`` best columns by value descending, then column ascending (the tie
        rule of ONNX TopK and of the searches).

    Raises ``ValueError`` for ``k`` outside ``[1, V + n_ext]``, an id outside
    ``[0, V + n_ext)`` and NaN values.

    Examples
    --------
    >>> import numpy as np
    >>> ls = np.log(np.array([[0.5, 0.25, 0.25]], dtype=np.float32))
    >>> vals, idx = topk_from_parts(ls, np.zeros(1, np.float32), np.array([[-0.1]], np.float32),
    ...                             np.array([[3]]), 1, 2, np.float32(-27.631021), 1)
    >>> idx.tolist(), vals.round(3).tolist()
    ([[3, 0]], [[-0.1, -0.693]])
    """
    ls = np.ascontiguousarray(ls, dtype=np.float32)
    shift = np.ascontiguousarray(shift, dtype=np.float32)
    touched = np.ascontiguousarray(touched, dtype=np.float32)
    src_ext = np.ascontiguousarray(src_ext, dtype=np.int64)
    floor = np.float32(floor)
    if ls.ndim != 2:
        raise ValueError(f"ls must be 2-D [rows, vocab], got shape {ls.shape}")
    n, V = ls.shape
    if shift.shape != (n,):
        raise ValueError(f"shift must have shape ({n},), got {shift.shape}")
    if touched.ndim != 2 or touched.shape[0] != n or src_ext.shape != touched.shape:
        raise ValueError(f"touched and src_ext must both have shape ({n}, src_len), got {touched.shape} "
                         f"and {src_ext.shape}")
    if n_ext < 0:
        raise ValueError(f"n_ext must be >= 0, got {n_ext}")
    if workers != -1 and workers < 1:
        raise ValueError(f"workers must be >= 1 or -1 (all cores), got {workers}")
    width = V + int(n_ext)
    if not 1 <= k <= width:
        raise ValueError(f"topk_from_parts: k must be in [1, vocab + n_ext] = [1, {width}], got {k}")
    if np.isnan(floor):
        raise ValueError("topk_from_parts: floor is NaN")
    if src_ext.size and (src_ext.min() < 0 or src_ext.max() >= width):
        raise ValueError(f"topk_from_parts: src_ext has ids outside [0, vocab + n_ext) = [0, {width})")
    rows = ls + shift[:, None]
    rows = np.where(rows < floor, floor, rows)  # as the C++ `v < floor ? floor : v`: 0.0 stays 0.0 at floor -0.0
    if np.isnan(rows).any() or np.isnan(touched).any():
        raise ValueError("topk_from_parts: NaN log-probability (ls, shift or touched)")
    rows = np.concatenate([rows, np.full((n, int(n_ext)), floor, dtype=np.float32)], 1)
    ar = np.arange(n)
    for j in range(src_ext.shape[1]):  # in order: a later position wins
        rows[ar, src_ext[:, j]] = touched[:, j]
    idx = np.argsort(-rows, axis=1, kind="stable")[:, :k]
    return np.take_along_axis(rows, idx, 1), idx.astype(np.int64)


class _Source:
    """One encoded source: the model, its encoder outputs and the copy inputs."""

    def __init__(self, model, src_ids: Sequence[int], src_ext: Sequence[int], n_oov: int, ban_unk: bool):
        import torch

        self.model = model.eval()
        self.sp = SpecialIds.check(model.specials, "model.specials")
        self.src = torch.tensor([list(src_ids)], dtype=torch.long)
        self.src_ext = torch.tensor([list(src_ext)], dtype=torch.long)
        self.n_ext = n_oov if getattr(model, "has_copy", False) else 0
        self.ban_unk = ban_unk
        with torch.no_grad():
            self.enc = model.encode(self.src, torch.tensor([len(src_ids)]))

    def step(self, token: int, h: torch.Tensor, prefix: Sequence[int] = (), no_repeat_ngram: int = 0,
             no_stutter: bool = False):
        """``(log-probabilities [V_ext] float64 with banned ids at -inf, new state)``; with
        ``no_repeat_ngram``, the ids that would repeat an n-gram of ``prefix`` are banned too, and
        with ``no_stutter`` the last id of ``prefix``."""
        import torch

        with torch.no_grad():
            logp, h = self.model.step(torch.tensor([token]), h, self.enc, self.src_ext, self.n_ext)
        logp = logp[0].double()
        logp[list(self.sp.never(self.ban_unk))] = float("-inf")
        logp[self.model.vocab_size + self.n_ext:] = float("-inf")
        banned = ngram_bans(prefix, no_repeat_ngram) + ([int(prefix[-1])] if no_stutter and len(prefix) else [])
        if banned:
            logp[banned] = float("-inf")
        return logp, h


def _hyp(tokens, logprob, finished, length_penalty, alpha, group=0) -> Hypothesis:
    tokens = [int(t) for t in tokens]
    lp = float(logprob)
    return Hypothesis(tokens, lp, normalize_score(lp, len(tokens) + int(finished), length_penalty, alpha),
                      finished, group)


def greedy_reference(model, src_ids, src_ext, n_oov: int = 0, max_len: int = 40,
                     ban_unk: bool = True, no_repeat_ngram: int = 0, no_stutter: bool = False) -> List[Hypothesis]:
    """Greedy decoding of one source (lowest id among equal maxima)."""
    import torch

    check_search_args(max_len=max_len)
    s = _Source(model, src_ids, src_ext, n_oov, ban_unk)
    h, token, tokens, total = s.enc.h0, s.sp.bos, [], 0.0
    for _ in range(max_len):
        logp, h = s.step(token, h, tokens, no_repeat_ngram, no_stutter)
        token = int(torch.argmax(logp))  # first index of the maximum
        total += float(logp[token])
        if token == s.sp.eos:
            return [_hyp(tokens, total, True, "none", 0.0)]
        tokens.append(token)
    return [_hyp(tokens, total, False, "none", 0.0)]


def beam_reference(model, src_ids, src_ext, n_oov: int = 0, beam: int = 5, max_len: int = 40,
                   length_penalty: str = "none", alpha: float = 0.6, n_best=None,
                   ban_unk: bool = True, no_repeat_ngram: int = 0, no_stutter: bool = False) -> List[Hypothesis]:
    """Beam search for one source (``diverse_beam_reference`` with one group)."""
    return diverse_beam_reference(model, src_ids, src_ext, n_oov, beam, 1, 0.0, max_len,
                                  length_penalty, alpha, n_best, ban_unk, no_repeat_ngram, no_stutter=no_stutter)


def diverse_beam_reference(model, src_ids, src_ext, n_oov: int = 0, beam: int = 6, groups: int = 3,
                           diversity: float = 0.5, max_len: int = 40, length_penalty: str = "none",
                           alpha: float = 0.6, n_best=None, ban_unk: bool = True,
                           no_repeat_ngram: int = 0, distinct: bool = False,
                           no_stutter: bool = False) -> List[Hypothesis]:
    """Diverse beam search (Vijayakumar et al. 2016, Hamming diversity) for one source;
    ``distinct``: a group's candidate whose sequence an earlier group holds at this step (alive
    or just finished) scores ``-inf``."""
    import torch

    check_search_args(beam, groups, diversity, max_len, length_penalty, alpha)
    Kg = beam // groups
    nb = Kg if n_best is None else int(n_best)
    s = _Source(model, src_ids, src_ext, n_oov, ban_unk)
    # a hypothesis: (tokens, penalised search score, model log-prob, decoder state)
    alive = [[([], 0.0, 0.0, s.enc.h0)] for _ in range(groups)]
    finished: List[List[Hypothesis]] = [[] for _ in range(groups)]
    done = [False] * groups
    for t in range(max_len):
        used = torch.zeros(0, dtype=torch.float64)  # tokens picked at this step by earlier groups
        seen = set()  # sequences held by earlier groups at this step (distinct)
        for g in range(groups):
            was_done = done[g]
            rows, cand_search, cand_model = [], [], []
            for tokens, search, logprob, h in alive[g]:
                logp, h_new = s.step(tokens[-1] if tokens else s.sp.bos, h, tokens, no_repeat_ngram, no_stutter)
                if used.numel() == 0:
                    used = torch.zeros(logp.numel(), dtype=torch.float64)
                penal = logp - diversity * used if (g > 0 and diversity) else logp
                rows.append(h_new)
                cand_search.append(search + penal)
                cand_model.append(logprob + logp)
            flat = torch.cat(cand_search)
            V = cand_search[0].numel()
            if distinct and groups > 1:
                for b, (tokens, *_rest) in enumerate(alive[g]):
                    for seq in seen:
                        if len(seq) == len(tokens) + 1 and list(seq[:-1]) == tokens:
                            flat[b * V + seq[-1]] = float("-inf")
            order = torch.sort(flat, descending=True, stable=True).indices[: 2 * Kg]
            new_alive = []
            for rank, j in enumerate(order.tolist()):
                b, tok = divmod(j, V)
                tokens = alive[g][b][0]
                if tok == s.sp.eos:
                    if rank < Kg and not was_done and torch.isfinite(flat[j]):
                        finished[g].append(_hyp(tokens, cand_model[b][tok], True, length_penalty, alpha, g))
                        seen.add((*tokens, tok))
                elif len(new_alive) < Kg:
                    new_alive.append((tokens + [tok], float(flat[j]), float(cand_model[b][tok]), rows[b]))
            alive[g] = new_alive
            seen.update(tuple(hyp[0]) for hyp in new_alive)
            if not was_done:
                for hyp in new_alive:
                    used[hyp[0][-1]] += 1.0
                if len(finished[g]) >= Kg:
                    done[g] = True
        if all(done):
            break
    else:
        for g in range(groups):
            if not done[g]:
                for tokens, search, logprob, _ in alive[g]:
                    if search != float("-inf"):
                        finished[g].append(_hyp(tokens, logprob, False, length_penalty, alpha, g))
    out: List[Hypothesis] = []
    for g in range(groups):
        out.extend(sorted(finished[g], key=lambda x: -x.score)[:nb])
    return sorted(out, key=lambda x: -x.score)
