"""The PyTorch step backend of the batched searches (``pysynth.decoding.search``)."""
from __future__ import annotations

from typing import Optional

import numpy as np
import torch

__all__ = ["TorchBackend"]


class TorchBackend:
    """Runs a :class:`~pysynth.models.seq2seq.Seq2Seq` for the numpy searches.

    The encoder outputs and decoder states stay on the model's device (CUDA when the model is
    there); each step hands the search the log-probabilities as a float32 numpy array.
    """

    name = "torch"

    def __init__(self, model, device: Optional[str] = None, topk: bool = True):
        self.model = model.eval()
        if not topk:  # hide step_topk: the searches then read full rows (a second exact path)
            self.step_topk = None
        if device is not None:
            self.model.to(device)
        self.device = next(self.model.parameters()).device
        self.vocab_size = int(model.vocab_size)

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

    def step(self, state, tokens: np.ndarray, h: torch.Tensor):
        enc, src_ext, n_ext = state
        with torch.inference_mode():
            logp, h = self.model.step(self._t(tokens), h, enc, src_ext, n_ext)
        return logp.float().cpu().numpy(), h

    def step_topk(self, state, tokens: np.ndarray, h: torch.Tensor, k: int):
        """The ``k`` best log-probabilities per row and their ids (lower id first among equal
        values at the k-th place, as ONNX TopK), and the new decoder state."""
        enc, src_ext, n_ext = state
        with torch.inference_mode():
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
