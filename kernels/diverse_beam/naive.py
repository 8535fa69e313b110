"""Readable torch reference of one diverse-beam-search step (the specification of the Triton path).

Vijayakumar et al. (2016), "Diverse Beam Search", Sect. 4 (Alg. 1) with Hamming diversity,
as used by Granstedt (2017) with B = 16, G = 4, lambda = 0.5. ``B`` beams per batch item
are split into ``G`` groups of ``B/G`` consecutive beams (group g = beams g*B/G ..
(g+1)*B/G - 1). Groups are processed in order 0..G-1 within the same step:

    x[b, v]        = beam_scores[b] + logprobs[b, v]             (float32)
    count_g[v]     = number of times token v was chosen at this step by groups 0..g-1
                     (a token chosen twice counts twice; group 0 has no penalty)
    penalized[b,v] = x[b, v] - lambda * count_g[v]

Group g keeps the B/G best (beam, token) pairs among its own beams, ranked by ``penalized``
descending; ties go to the lower flat index ``(b - g*B/G) * V + v`` (lower beam, then lower
token), via ``kernels._common.topk_lowest_index``. Output slot g*B/G + r holds the r-th
pick of group g.

The stored running score is ``x`` without the penalty: as in the paper, the diversity term
only steers the selection of the step; it is not part of the sequence's log-probability
(HF transformers' and fairseq's group beam search add it to the running score instead; the
penalized value is returned as ``selection_scores`` for callers who want that).

``-inf`` entries (finished or duplicate beams, banned tokens) take part like any value, so
a group always returns B/G continuations; it picks -inf ones only when it has fewer than
B/G finite candidates, lowest flat index first. Such picks still count for the penalty.
NaN is not supported.

``lambda`` must be finite and >= 0 (Hamming diversity is a penalty; the fused path also
relies on it: a beam's pick always lies among its B best raw tokens).
"""
from __future__ import annotations

import math
from typing import NamedTuple

import torch

from .._common import check_float, topk_lowest_index


class DiverseBeamOutput(NamedTuple):
    """Result of :func:`diverse_beam_step`; all [batch, B].

    scores            float32  beam_scores[parent] + logprobs[parent, token] (no penalty)
    selection_scores  float32  the penalized value each pick was ranked by
    parents           int64    beam (0..B-1) that each new beam extends (same group)
    tokens            int64    token appended
    """

    scores: torch.Tensor
    selection_scores: torch.Tensor
    parents: torch.Tensor
    tokens: torch.Tensor


def check_inputs(logprobs, beam_scores, num_groups, diversity_penalty) -> None:
    check_float("logprobs", logprobs, 3)
    check_float("beam_scores", beam_scores, 2)
    batch, B, V = logprobs.shape
    if batch < 1 or B < 1 or V < 1:
        raise ValueError(f"logprobs must be [batch, B, V] with all sizes >= 1, got "
                         f"{tuple(logprobs.shape)}")
    if tuple(beam_scores.shape) != (batch, B):
        raise ValueError(f"beam_scores must be [batch, B] = [{batch}, {B}], got "
                         f"{tuple(beam_scores.shape)}")
    if beam_scores.device != logprobs.device:
        raise ValueError(f"logprobs on {logprobs.device} but beam_scores on {beam_scores.device}")
    if not isinstance(num_groups, int) or isinstance(num_groups, bool) or num_groups < 1:
        raise ValueError(f"num_groups must be an int >= 1, got {num_groups!r}")
    if B % num_groups:
        raise ValueError(f"the beam count B={B} must be a multiple of num_groups={num_groups} "
                         f"(each group keeps B/G beams); e.g. num_groups in "
                         f"{[g for g in range(1, B + 1) if B % g == 0]}")
    lam = float(diversity_penalty)
    if not math.isfinite(lam) or lam < 0:
        raise ValueError(f"diversity_penalty must be finite and >= 0, got {diversity_penalty!r}")


def diverse_beam_step_naive(
    logprobs: torch.Tensor,
    beam_scores: torch.Tensor,
    num_groups: int,
    diversity_penalty: float,
) -> DiverseBeamOutput:
    """One diverse-beam-search step in plain torch; see the module docstring."""
    check_inputs(logprobs, beam_scores, num_groups, diversity_penalty)
    batch, B, V = logprobs.shape
    per = B // num_groups
    x = beam_scores.float()[:, :, None] + logprobs.float()  # [batch, B, V]
    lam = float(diversity_penalty)
    counts = torch.zeros(batch, V, dtype=torch.float32, device=logprobs.device)
    scores, sel_scores, parents, tokens = [], [], [], []
    for g in range(num_groups):
        xg = x[:, g * per:(g + 1) * per, :]  # this group's beams
        penalized = xg - lam * counts[:, None, :]
        vals, flat = topk_lowest_index(penalized.reshape(batch, per * V), per)
        beam, tok = flat // V, flat % V
        sel_scores.append(vals)
        scores.append(xg.reshape(batch, per * V).gather(1, flat))
        parents.append(beam + g * per)
        tokens.append(tok)
        counts.scatter_add_(1, tok, torch.ones_like(vals))
    return DiverseBeamOutput(torch.cat(scores, 1), torch.cat(sel_scores, 1),
                             torch.cat(parents, 1), torch.cat(tokens, 1))
