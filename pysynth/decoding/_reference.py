"""Readable one-sentence torch decoders: the specification of ``pysynth.decoding.search``.

Each function decodes ONE source with :meth:`Seq2Seq.encode` / :meth:`Seq2Seq.step` calls on
single hypotheses, following the rules in the docstring of :mod:`pysynth.decoding.search`
literally. The batched searches must return the same hypotheses, with scores within 1e-5.
"""
from __future__ import annotations

from typing import List, Sequence

import torch

from pysynth.decoding.search import (BOS_ID, EOS_ID, PAD_ID, UNK_ID, Hypothesis, check_search_args,
                                     normalize_score)

__all__ = ["greedy_reference", "beam_reference", "diverse_beam_reference"]


class _Source:
    """One encoded source: the model, its encoder outputs and the copy inputs."""

    def __init__(self, model, src_ids: Sequence[int], src_ext: Sequence[int], n_oov: int, ban_unk: bool):
        self.model = model.eval()
        self.src = torch.tensor([list(src_ids)], dtype=torch.long)
        self.src_ext = torch.tensor([list(src_ext)], dtype=torch.long)
        self.n_ext = n_oov if model.has_copy else 0
        self.ban_unk = ban_unk
        with torch.no_grad():
            self.enc = model.encode(self.src, torch.tensor([len(src_ids)]))

    def step(self, token: int, h: torch.Tensor):
        """``(log-probabilities [V_ext] float64 with banned ids at -inf, new state)``."""
        with torch.no_grad():
            logp, h = self.model.step(torch.tensor([token]), h, self.enc, self.src_ext, self.n_ext)
        logp = logp[0].double()
        logp[PAD_ID] = float("-inf")
        logp[BOS_ID] = float("-inf")
        if self.ban_unk:
            logp[UNK_ID] = float("-inf")
        logp[self.model.vocab_size + self.n_ext:] = float("-inf")
        return logp, h


def _hyp(tokens, logprob, finished, length_penalty, alpha, group=0) -> Hypothesis:
    tokens = [int(t) for t in tokens]
    lp = float(logprob)
    return Hypothesis(tokens, lp, normalize_score(lp, len(tokens) + int(finished), length_penalty, alpha),
                      finished, group)


def greedy_reference(model, src_ids, src_ext, n_oov: int = 0, max_len: int = 40,
                     ban_unk: bool = True) -> List[Hypothesis]:
    """Greedy decoding of one source (lowest id among equal maxima)."""
    check_search_args(max_len=max_len)
    s = _Source(model, src_ids, src_ext, n_oov, ban_unk)
    h, token, tokens, total = s.enc.h0, BOS_ID, [], 0.0
    for _ in range(max_len):
        logp, h = s.step(token, h)
        token = int(torch.argmax(logp))  # first index of the maximum
        total += float(logp[token])
        if token == EOS_ID:
            return [_hyp(tokens, total, True, "none", 0.0)]
        tokens.append(token)
    return [_hyp(tokens, total, False, "none", 0.0)]


def beam_reference(model, src_ids, src_ext, n_oov: int = 0, beam: int = 5, max_len: int = 40,
                   length_penalty: str = "none", alpha: float = 0.6, n_best=None,
                   ban_unk: bool = True) -> List[Hypothesis]:
    """Beam search for one source (``diverse_beam_reference`` with one group)."""
    return diverse_beam_reference(model, src_ids, src_ext, n_oov, beam, 1, 0.0, max_len,
                                  length_penalty, alpha, n_best, ban_unk)


def diverse_beam_reference(model, src_ids, src_ext, n_oov: int = 0, beam: int = 6, groups: int = 3,
                           diversity: float = 0.5, max_len: int = 40, length_penalty: str = "none",
                           alpha: float = 0.6, n_best=None, ban_unk: bool = True) -> List[Hypothesis]:
    """Diverse beam search (Vijayakumar et al. 2016, Hamming diversity) for one source."""
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
        for g in range(groups):
            was_done = done[g]
            rows, cand_search, cand_model = [], [], []
            for tokens, search, logprob, h in alive[g]:
                logp, h_new = s.step(tokens[-1] if tokens else BOS_ID, h)
                if used.numel() == 0:
                    used = torch.zeros(logp.numel(), dtype=torch.float64)
                penal = logp - diversity * used if (g > 0 and diversity) else logp
                rows.append(h_new)
                cand_search.append(search + penal)
                cand_model.append(logprob + logp)
            flat = torch.cat(cand_search)
            V = cand_search[0].numel()
            order = torch.sort(flat, descending=True, stable=True).indices[: 2 * Kg]
            new_alive = []
            for rank, j in enumerate(order.tolist()):
                b, tok = divmod(j, V)
                tokens = alive[g][b][0]
                if tok == EOS_ID:
                    if rank < Kg and not was_done and torch.isfinite(flat[j]):
                        finished[g].append(_hyp(tokens, cand_model[b][tok], True, length_penalty, alpha, g))
                elif len(new_alive) < Kg:
                    new_alive.append((tokens + [tok], float(flat[j]), float(cand_model[b][tok]), rows[b]))
            alive[g] = new_alive
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
