"""One step of diverse beam search with Hamming diversity (Vijayakumar et al. 2016).

``naive.py`` is the readable torch specification; ``triton_diverse_beam.py`` the fused
kernels. :func:`diverse_beam_step` picks one of them.
"""
from __future__ import annotations

import torch

from .._common import pick_backend
from .naive import DiverseBeamOutput, diverse_beam_step_naive

__all__ = ["DiverseBeamOutput", "diverse_beam_step", "diverse_beam_step_naive"]

_MAX_TRITON_BEAMS = 256  # mirrors triton_diverse_beam.MAX_BEAMS without importing triton


def diverse_beam_step(
    logprobs: torch.Tensor,
    beam_scores: torch.Tensor,
    num_groups: int,
    diversity_penalty: float,
    *,
    backend: str = "auto",
) -> DiverseBeamOutput:
    """Select the next B beams of each batch item, G groups in order, Hamming penalty.

    Parameters
    ----------
    logprobs : Tensor [batch, B, V]
        Next-token log-probabilities of the current beams (float32, float16 or bfloat16;
        math in float32). -inf entries are allowed (banned tokens, dead beams).
    beam_scores : Tensor [batch, B]
        Running scores of the current beams (at step 0 usually 0 for beam 0 of each group
        and -inf for the others, so that identical beams are not picked twice).
    num_groups : int
        G; must divide B (``ValueError`` otherwise). Each group keeps B/G beams.
    diversity_penalty : float
        lambda >= 0, finite: group g's scores get ``-lambda * count`` for each token chosen
        ``count`` times by groups 0..g-1 at this step.
    backend : {"auto", "torch", "triton"}
        ``auto``: Triton when the tensors are on CUDA and triton is importable (and
        B <= 256), else torch. ``PYSYNTH_KERNELS_BACKEND`` overrides ``auto``.

    Returns
    -------
    DiverseBeamOutput
        ``(scores, selection_scores, parents, tokens)``, each [batch, B]: new beam
        ``g*B/G + r`` is group g's r-th best pick. ``scores`` = beam_scores[parent] +
        logprobs[parent, token] without the penalty, ``selection_scores`` with it. Ties:
        lower (beam within the group, token) first. See ``kernels/diverse_beam/naive.py``.

    Examples
    --------
    >>> import torch
    >>> from pysynth.kernels.diverse_beam import diverse_beam_step
    >>> lp = torch.log_softmax(torch.tensor([[[2.0, 1.0, 0.0]] * 4]), -1)  # 4 equal beams
    >>> out = diverse_beam_step(lp, torch.tensor([[0.0, -1e9, 0.0, -1e9]]), 2, 5.0)
    >>> out.tokens.tolist(), out.parents.tolist()
    ([[0, 1, 2, 0]], [[0, 0, 2, 2]])
    """
    chosen = pick_backend(backend, (logprobs, beam_scores),
                          triton_supported=logprobs.dim() == 3
                          and logprobs.shape[1] <= _MAX_TRITON_BEAMS)
    if chosen == "triton":
        from .triton_diverse_beam import diverse_beam_step_triton

        return diverse_beam_step_triton(logprobs, beam_scores, num_groups, diversity_penalty)
    return diverse_beam_step_naive(logprobs, beam_scores, num_groups, diversity_penalty)
