"""The PyTorch step backend of the batched searches (``pysynth.decoding.search``).

:class:`TorchBackend` drives any torch module with the decoding interface of
:class:`pysynth.models.seq2seq.Seq2Seq`: ``encode(src, src_len)`` (an object with ``h0`` and
``take(rows)``), ``step(tokens, h, enc, src_ext, n_ext)``, ``vocab_size`` and ``specials``
(:class:`~pysynth.decoding.protocol.SpecialIds`). Capability flags select the faster paths:
``has_copy`` (copy columns), ``fused_copy_step`` (the fused CopyNet kernel computes the
model's copy mixture) and a ``step_parts`` method with a
``log_floor`` attribute (candidates without full rows). Nothing here branches on an
architecture name.

Two ways to run a step, picked once per backend by ``kernels="auto"|"triton"|"torch"``:

* ``torch``: the model's own eager ops (:meth:`Seq2Seq.step`), as exported to ONNX; the
  searches then select candidates in numpy (:mod:`pysynth.decoding.search`). On the CPU the
  candidates come from :meth:`Seq2Seq.step_parts` and the compiled
  :func:`~pysynth.decoding.search.topk_from_parts` (``parts``), which skips the
  vocabulary-wide epilogue of the step and ``torch.topk`` and gives the same values.
* ``triton``: the fused kernels of ``pysynth.kernels``. For a CopyNet, everything after the
  readout layer (generate scores over the vocabulary, copy scores, scatter of the copy mass to
  the extended vocabulary, the mixture with one normaliser, the log and the top-k) is one
  ``copy_attention_step`` call that never materialises [rows, V] logits. Diverse beam search
  (more than one group) then also selects on the device: ``diverse_beam_step`` picks each
  group's beams with the Hamming penalty (:meth:`TorchBackend.step_diverse`), and only
  [rows] arrays go back to the host.

``auto`` is ``triton`` when the model is on a CUDA device and triton is importable (the
``gpu`` extra), else ``torch``; ``PYSYNTH_KERNELS_BACKEND=torch|triton`` overrides ``auto`` (the
rule of ``pysynth.kernels``). ``triton`` on CPU tensors runs the kernels in the Triton
interpreter, which needs ``TRITON_INTERPRET=1`` in the environment before triton is first
imported (the tests do this; it is slow and meant for testing).

What the kernel path computes differently (both are checked against each other in
``tests/kernels/test_decoding_integration.py``):

* Log-probabilities are exact ``log p`` (a log-sum-exp mixture) where the eager model clamps
  at ``log(1e-12)`` (see :mod:`pysynth.models.seq2seq`). Tokens of probability above 1e-12
  get the same values up to float32 rounding (~1e-6); a search only sees a difference when it
  ranks candidates below 1e-12.
* Extended ids of OOV slots a row's source does not have get ``-inf`` instead of
  ``log(1e-12)``; the searches ban those ids anyway.
* The model's additive attention, GRU update and readout layer stay eager torch: they are
  [rows, hidden] work; the kernel takes the vocabulary-sized part.
"""
from __future__ import annotations

import importlib.util
import os
from typing import Optional

import numpy as np
import torch

from pysynth.decoding.protocol import SpecialIds

__all__ = ["TorchBackend", "KERNELS", "resolve_kernels"]

KERNELS = ("auto", "triton", "torch")
_MAX_TRITON_K = 256  # the Triton copy step takes k <= 256 and sources of <= 256 positions
_MAX_TRITON_S = 256
_MAX_TRITON_BEAMS = 256  # the Triton diverse-beam step takes <= 256 beams per source


def resolve_kernels(kernels: str, device: torch.device) -> str:
    """``"triton"`` or ``"torch"`` for ``kernels`` in :data:`KERNELS` on ``device``.

    Raises ``ValueError`` for an unknown value and for ``"triton"`` where it cannot run
    (triton missing, CPU without ``TRITON_INTERPRET=1``, a device other than CUDA or CPU).
    """
    if kernels not in KERNELS:
        raise ValueError(f"kernels: must be one of {KERNELS}, got {kernels!r}")
    if kernels == "auto":
        kernels = os.environ.get("PYSYNTH_KERNELS_BACKEND", "auto")
        if kernels not in KERNELS:
            raise ValueError(f"PYSYNTH_KERNELS_BACKEND: must be one of {KERNELS}, got {kernels!r}")
    has_triton = importlib.util.find_spec("triton") is not None
    if kernels == "auto":
        return "triton" if device.type == "cuda" and has_triton else "torch"
    if kernels == "triton":
        if not has_triton:
            raise ValueError("kernels='triton': triton is not installed (pip install '.[gpu]'); "
                             "use kernels='torch'")
        if device.type == "cpu" and os.environ.get("TRITON_INTERPRET") != "1":
            raise ValueError("kernels='triton' with the model on the CPU runs the Triton interpreter, "
                             "which needs TRITON_INTERPRET=1 set before triton is imported; use a CUDA "
                             "device, or kernels='torch'")
        if device.type not in ("cuda", "cpu"):
            raise ValueError(f"kernels='triton': the kernels run on CUDA (or the CPU interpreter), "
                             f"not on {device.type}; use kernels='torch'")
    return kernels


class TorchBackend:
    """Runs a torch seq2seq module (:class:`~pysynth.models.seq2seq.Seq2Seq` or any module with its
    decoding interface, see the module docstring) for the numpy searches.

    The encoder outputs and decoder states stay on the model's device (CUDA when the model is
    there); each step hands the search the best candidates (``step_topk``), full float32
    log-probability rows (``step``) or, on the kernel path, each group's picks
    (``step_diverse``) as numpy arrays.

    Parameters
    ----------
    model : torch module with the decoding interface (see the module docstring)
    specials : SpecialIds, optional
        Default: ``model.specials``.
    device : str, optional
        Move the model there first.
    topk : bool
        False hides ``step_topk``: the searches then read full rows (a second exact path).
    parts : ``"auto"``, True or False
        ``step_topk`` from :meth:`Seq2Seq.step_parts` and the compiled
        :func:`~pysynth.decoding.search.topk_from_parts` (no [rows, V + n_ext] rows, no
        ``torch.topk``; the same values bit for bit). ``"auto"``: on the CPU with the eager
        step when the compiled kernel is built. False: the eager step and ``torch.topk``.
    kernels : {"auto", "triton", "torch"}
        Fused Triton kernels or the model's eager ops; see the module docstring. The chosen
        path is in ``self.kernels``.

    Examples
    --------
    On CUDA, ``kernels="auto"`` picks the fused kernels (``model`` a CopyNet, ``batch`` a
    :class:`~pysynth.models.batching.SourceBatch`):

    >>> from pysynth.decoding import beam_search                         # doctest: +SKIP
    >>> be = TorchBackend(model.to("cuda"))                              # doctest: +SKIP
    >>> be.kernels                                                       # doctest: +SKIP
    'triton'
    >>> hyps = beam_search(be, batch, beam=5)                            # doctest: +SKIP
    """

    name = "torch"

    def __init__(self, model, device: Optional[str] = None, topk: bool = True, kernels: str = "auto",
                 parts="auto", specials: Optional[SpecialIds] = None):
        for m in ("encode", "step", "vocab_size"):
            if not hasattr(model, m):
                raise TypeError(f"model: {type(model).__name__} has no {m!r}; TorchBackend drives modules "
                                "with the decoding interface of pysynth.models.seq2seq.Seq2Seq")
        if specials is None and not hasattr(model, "specials"):
            raise TypeError(f"specials: {type(model).__name__} has no 'specials'; pass specials=SpecialIds(...)")
        self.specials = SpecialIds.check(specials if specials is not None else model.specials)
        self.copy = bool(getattr(model, "has_copy", False))
        # a model whose copy mixture is the fused kernel's (CopyNet) says so; others stay eager
        self.fused_copy = self.copy and bool(getattr(model, "fused_copy_step", False))
        self.model = model.eval()
        if not topk:  # hide step_topk: the searches then read full rows (a second exact path)
            self.step_topk = None
        if device is not None:
            self.model.to(device)
        self.device = next(self.model.parameters()).device
        self.vocab_size = int(model.vocab_size)
        self.kernels = resolve_kernels(kernels, self.device)
        # The backend argument handed to the pysynth.kernels ops: "triton" on this path. The
        # integration tests also set "torch" to run the ops' torch references through the same
        # code (a fast check of everything but the kernels themselves).
        self._ops = "triton"
        if self.kernels != "triton":
            self.step_diverse = None  # the searches then select in numpy
        if parts not in ("auto", True, False):
            raise ValueError(f"parts: must be 'auto', True or False, got {parts!r}")
        if parts == "auto":
            from pysynth import _dispatch

            parts = _dispatch.implementation("decoding") == "cpp"
        # float32 only: the kernel repeats the float32 epilogue of Seq2Seq.step_tensors
        self.parts = (bool(parts) and self.device.type == "cpu" and self.kernels == "torch"
                      and hasattr(model, "step_parts") and hasattr(model, "log_floor")
                      and next(self.model.parameters()).dtype == torch.float32)

    # -- plumbing --------------------------------------------------------------------------
    def _t(self, a: np.ndarray) -> torch.Tensor:
        return torch.from_numpy(np.ascontiguousarray(a)).to(self.device)

    def encode(self, batch):
        with torch.inference_mode():
            enc = self.model.encode(self._t(batch.src), self._t(batch.src_len))
        return (enc, self._t(batch.src_ext), int(batch.n_ext)), enc.h0

    def take(self, state, rows: np.ndarray):
        enc, src_ext, n_ext = state
        r = self._t(np.asarray(rows, dtype=np.int64))
        return (enc.take(r), src_ext.index_select(0, r), n_ext)

    def take_h(self, h: torch.Tensor, rows: np.ndarray) -> torch.Tensor:
        return h.index_select(0, self._t(np.asarray(rows, dtype=np.int64)))

    def _copy_kernel(self, state, k: int) -> bool:
        """Whether this step runs the fused copy step (CopyNet, kernel path, within its limits)."""
        return (self.kernels == "triton" and self.fused_copy and k <= _MAX_TRITON_K
                and state[1].shape[1] <= _MAX_TRITON_S)

    def _fused_step(self, state, tokens: torch.Tensor, h: torch.Tensor, k: int, full: bool):
        """The CopyNet step with the output layer fused: ``(CopyAttentionOutput, new state)``.

        Mapping onto ``copy_attention_step`` (Ding & Balog Eq. 14-16): ``s`` = the readout
        r_i (generate scores W_o r_i + b_o), ``query`` = the new decoder state s_i, ``h`` = the
        encoder's copy features tanh(h_j^T W_c) (so ``W_c=None``), ``src_ids`` = the extended
        source ids. The kernel's own attention output (a dot attention over the copy features)
        is not used: the model's attention ran before the GRU update.
        """
        from pysynth.kernels.copy_attention import copy_attention_step

        enc, src_ext, n_ext = state
        m = self.model
        r, h_new = m.decoder_readout(tokens, h, enc.memory, enc.context, enc.keys, enc.mask)
        W_o, b_o = m.output_layer()
        out = copy_attention_step(r, enc.copy_feats, src_ext, enc.mask, W_o, b_o, None, int(n_ext), k,
                                  query=h_new, return_logprobs=full, check_ids=False,
                                  backend=self._ops)
        return out, h_new

    def _logprobs(self, state, tokens: np.ndarray, h: torch.Tensor):
        """Full [rows, V + n_ext] float32 log-probabilities on the device, and the new state."""
        enc, src_ext, n_ext = state
        tok = self._t(tokens)
        if self._copy_kernel(state, 1):
            out, h = self._fused_step(state, tok, h, 1, True)
            return out.logprobs, h
        logp, h = self.model.step(tok, h, enc, src_ext, n_ext)
        return logp.float(), h

    # -- the step API of the searches ------------------------------------------------------
    def step(self, state, tokens: np.ndarray, h: torch.Tensor):
        with torch.inference_mode():
            logp, h = self._logprobs(state, tokens, h)
        return logp.cpu().numpy(), h

    def step_topk(self, state, tokens: np.ndarray, h: torch.Tensor, k: int):
        """The ``k`` best log-probabilities per row and their ids (lower id first among equal
        values at the k-th place, as ONNX TopK), and the new decoder state."""
        enc, src_ext, n_ext = state
        if self.parts:
            return self._step_topk_parts(state, tokens, h, k)
        with torch.inference_mode():
            if self._copy_kernel(state, k):  # fused: no [rows, V] tensor at all
                out, h = self._fused_step(state, self._t(tokens), h, k, False)
                return out.topk_values.cpu().numpy(), out.topk_indices.cpu().numpy(), h
            logp, h = self.model.step(self._t(tokens), h, enc, src_ext, n_ext)
            logp = logp.float()
            vals, idx = torch.topk(logp, k, dim=1)
            thr = vals[:, -1:]
            # torch.topk picks arbitrarily among values equal to the k-th: redo such rows stably
            bad = torch.nonzero((logp == thr).sum(1) != (vals == thr).sum(1)).flatten().tolist()
            for r in bad:
                order = torch.sort(logp[r], descending=True, stable=True).indices[:k]
                idx[r] = order
                vals[r] = logp[r, order]
        return vals.cpu().numpy(), idx.cpu().numpy(), h

    def _step_topk_parts(self, state, tokens: np.ndarray, h: torch.Tensor, k: int):
        from pysynth.decoding.search import topk_from_parts

        enc, src_ext, n_ext = state
        with torch.inference_mode():
            ls, shift, touched, h = self.model.step_parts(self._t(tokens), h, enc.memory, enc.context, enc.keys,
                                                          enc.copy_feats, enc.mask, src_ext)
        n = len(tokens)
        if shift is None:  # EDNet / AttNet: the rows are ls itself
            empty = np.zeros((n, 0), dtype=np.float32)
            vals, idx = topk_from_parts(ls.float().numpy(), np.zeros(n, dtype=np.float32), empty,
                                        empty.astype(np.int64), 0, k, -np.inf)
        else:
            vals, idx = topk_from_parts(ls.float().numpy(), shift.float().numpy(), touched.float().numpy(),
                                        src_ext.numpy(), int(n_ext), k, np.float32(self.model.log_floor))
        return vals, idx, h

    def step_diverse(self, state, tokens: np.ndarray, h: torch.Tensor, scores: np.ndarray,
                     live: np.ndarray, groups: int, diversity: float, limits: np.ndarray,
                     ban_unk: bool):
        """One step of diverse beam search with the group selection on the device.

        Used by :func:`pysynth.decoding.search.diverse_beam_search` on the kernel path (only
        there: elsewhere this attribute is None and the search selects in numpy).

        Parameters
        ----------
        scores : [n, K] float
            Penalised cumulative search scores of the current beams, K = beams per source,
            group g = beams g*K/G .. (g+1)*K/G - 1 (-inf: an empty slot).
        live : [n, G] bool
            Groups still collecting hypotheses. Picks of a finished group must not penalise
            the others, so live groups go first (in order) in the kernel's sequential loop.
        limits : [n*K] int
            First banned extended id of each row.

        Returns
        -------
        parents, tokens : [n, K] int64
            Group g's ``K/G`` best non-``</s>`` continuations (slots g*K/G ..), ranked by
            ``score + log p - diversity * (uses of the token by earlier live groups)`` (ties:
            lower (beam, token)); ``parents`` are beams within the source.
        logprobs : [n, K] float32
            The model's log-probability of each pick.
        eos : [n, K] float32
            log p(``</s>``) of every current beam (finishing is decided by the search).
        h : the new decoder states of all current rows.
        """
        from pysynth.kernels.diverse_beam import diverse_beam_step

        n, K = scores.shape
        G = int(groups)
        Kg = K // G
        if K > _MAX_TRITON_BEAMS:
            raise ValueError(f"beam: the device-side diverse beam step takes at most "
                             f"{_MAX_TRITON_BEAMS} beams, got {K}")
        with torch.inference_mode():
            logp, h = self._logprobs(state, tokens, h)
            vx = logp.shape[1]
            # the bans of search.apply_bans, then </s> out of the selection (the search decides
            # which </s> candidates finish; they never take a beam slot)
            logp[:, list(self.specials.never(ban_unk))] = float("-inf")
            V = self.vocab_size
            if vx > V:  # extended ids >= the row's limit (only the n_ext extended columns)
                cols = torch.arange(V, vx, device=logp.device)
                lim = self._t(np.asarray(limits, dtype=np.int64))
                logp[:, V:].masked_fill_(cols[None, :] >= lim[:, None], float("-inf"))
            eos_id = self.specials.eos
            eos = logp[:, eos_id].clone()
            logp[:, eos_id] = float("-inf")
            order = np.argsort(~np.asarray(live, dtype=bool), axis=1, kind="stable")  # [n, G]
            permuted = bool((order != np.arange(G)).any())
            rows = (np.arange(n)[:, None, None] * K + order[:, :, None] * Kg
                    + np.arange(Kg)).reshape(n, K)
            sc = np.asarray(scores, dtype=np.float64).reshape(-1)[rows]
            lp = logp.index_select(0, self._t(rows.reshape(-1))) if permuted else logp
            lp = lp.view(n, K, vx)
            out = diverse_beam_step(lp, self._t(sc.astype(np.float32)), G, float(diversity),
                                    backend=self._ops)
            par, tok = out.parents, out.tokens
            pick_lp = lp.view(n * K, vx)[torch.arange(n, device=lp.device)[:, None] * K + par, tok]
            par, tok = par.cpu().numpy(), tok.cpu().numpy()
            pick_lp, eos = pick_lp.cpu().numpy(), eos.cpu().numpy().reshape(n, K)
        if permuted:  # kernel slot p*Kg + r is group order[i, p]'s r-th pick
            pos = np.argsort(order, axis=1)  # kernel position of each group
            slot = (pos[:, :, None] * Kg + np.arange(Kg)).reshape(n, K)
            par = np.take_along_axis(par, slot, 1)
            tok = np.take_along_axis(tok, slot, 1)
            pick_lp = np.take_along_axis(pick_lp, slot, 1)
            par = np.take_along_axis(order, par // Kg, 1) * Kg + par % Kg
        return par, tok, pick_lp, eos, h
