"""One CopyNet decode step: attention, generation + copy mixture, top-k (Ding & Balog Eq. 13-16).

``naive.py`` is the readable torch specification; ``triton_copy_attention.py`` the fused
kernels. :func:`copy_attention_step` picks one of them.
"""
from __future__ import annotations

from typing import Optional

import torch

from .._common import pick_backend
from .naive import CopyAttentionOutput, copy_attention_step_naive

__all__ = ["CopyAttentionOutput", "copy_attention_step", "copy_attention_step_naive"]

_MAX_TRITON_K = 256  # mirror triton_copy_attention.MAX_K / MAX_S without importing triton
_MAX_TRITON_S = 256


def copy_attention_step(
    s: torch.Tensor,
    h: torch.Tensor,
    src_ids: torch.Tensor,
    src_mask: Optional[torch.Tensor],
    W_o: torch.Tensor,
    b_o: Optional[torch.Tensor],
    W_c: Optional[torch.Tensor],
    n_oov: int,
    k: int,
    *,
    query: Optional[torch.Tensor] = None,
    return_logprobs: bool = True,
    check_ids: bool = True,
    backend: str = "auto",
) -> CopyAttentionOutput:
    """Score one CopyNet decoder step for ``B`` rows (beams) and take each row's top-k.

    Parameters
    ----------
    s : Tensor [B, H]
        Decoder state s_t (float32, float16 or bfloat16; s, h, W_o, W_c, query share the
        dtype). With ``query``, only the generation input (e.g. a readout layer r_t).
    h : Tensor [B, S, H] ([B, S, Hq] with ``query``)
        Encoder states (with ``W_c=None``: the copy features tanh(h_j^T W_c)). Beams of one
        source can share memory: ``h_src.expand(B, S, H)``.
    src_ids : Tensor [B, S], int64 (int32 accepted)
        Source tokens as extended-vocabulary ids: ``< V`` in-vocabulary, ``V + i`` the i-th
        out-of-vocabulary word of that row's source.
    src_mask : Tensor [B, S], bool, or None
        True at real source positions (None: all real). Rows may be all False.
    W_o : Tensor [V, H]
        Generation projection, psi_g = s W_o^T + b_o (CopyNet Eq. 7).
    b_o : Tensor [V] or None
        Generation bias.
    W_c : Tensor [H, H] ([Hq, Hq] with ``query``) or None
        Copy projection, psi_c(j) = tanh(h_j^T W_c) s_t (Eq. 16). None: ``h`` already holds
        tanh(h_j^T W_c), precomputed once per source, and psi_c(j) = h_j . s_t.
    n_oov : int
        Number of extended slots after the vocabulary; output width is ``V + n_oov``.
    k : int
        Top-k size, ``1 <= k <= V + n_oov`` (the Triton path takes ``k <= 256`` and
        ``S <= 256``; ``auto`` falls back to torch beyond that).
    query : Tensor [B, Hq] or None
        The state the attention and copy scores read when it is not ``s`` (a model whose
        generation scores read a readout layer r_t and whose copy scores read s_t, as
        ``pysynth.models.seq2seq``). None: ``s``.
    return_logprobs : bool
        Return the full [B, V + n_oov] log-distribution (the fused path then writes it
        once and normalizes it in place); False skips it (``logprobs`` is None) and the
        fused path writes nothing of size V.
    check_ids : bool
        Raise ``ValueError`` for an id outside ``[0, V + n_oov)`` at a real position (one
        device sync on CUDA). False: such positions are dropped from the copy part.
    backend : {"auto", "torch", "triton"}
        ``auto``: Triton when all tensors are on CUDA and triton is importable, else torch.
        ``PYSYNTH_KERNELS_BACKEND`` overrides ``auto``.

    Returns
    -------
    CopyAttentionOutput
        ``(logprobs [B, V+n_oov] | None, attn [B, S], context [B, H], topk_values [B, k],
        topk_indices [B, k] int64)``, floats in float32. Masking and tie rules: see
        ``kernels/copy_attention/naive.py``.

    Examples
    --------
    >>> import torch
    >>> from pysynth.kernels.copy_attention import copy_attention_step
    >>> B, S, H, V = 2, 3, 8, 10
    >>> g = torch.Generator().manual_seed(0)
    >>> s, h = torch.randn(B, H, generator=g), torch.randn(B, S, H, generator=g)
    >>> ids = torch.tensor([[1, 10, 1], [4, 5, 0]])
    >>> mask = torch.tensor([[True, True, True], [True, True, False]])
    >>> W_o, W_c = torch.randn(V, H, generator=g), torch.randn(H, H, generator=g)
    >>> out = copy_attention_step(s, h, ids, mask, W_o, None, W_c, n_oov=1, k=3)
    >>> out.logprobs.shape, out.topk_indices.shape
    (torch.Size([2, 11]), torch.Size([2, 3]))
    >>> bool(torch.allclose(out.logprobs.exp().sum(1), torch.ones(2)))
    True
    """
    chosen = pick_backend(backend, (s, h, src_ids, src_mask, W_o, b_o, W_c, query),
                          triton_supported=isinstance(k, int) and k <= _MAX_TRITON_K
                          and h.dim() == 3 and h.shape[1] <= _MAX_TRITON_S)
    kwargs = dict(query=query, return_logprobs=return_logprobs, check_ids=check_ids)
    if chosen == "triton":
        from .triton_copy_attention import copy_attention_step_triton

        return copy_attention_step_triton(s, h, src_ids, src_mask, W_o, b_o, W_c, n_oov, k,
                                          **kwargs)
    return copy_attention_step_naive(s, h, src_ids, src_mask, W_o, b_o, W_c, n_oov, k, **kwargs)
