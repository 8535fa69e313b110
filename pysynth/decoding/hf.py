"""A Hugging Face step backend: a local ``AutoModelForSeq2SeqLM`` under the same searches.

:class:`HFBackend` runs the encoder once and the decoder one step at a time, so greedy, beam,
diverse beam search (Vijayakumar et al. 2016) and top-k / top-p sampling of
:mod:`pysynth.decoding.search` run over T5, BART and other encoder-decoder models exactly as
over the pysynth models. Nothing is downloaded: the model is a local directory
(``save_pretrained``) or an already-built model. Tokenization is the caller's (the model's own
tokenizer); sources are id sequences (:meth:`SourceBatch.from_ids
<pysynth.decoding.protocol.SourceBatch.from_ids>`).

The decoder state is the prefix of generated ids: each step re-runs the decoder over it
(no key/value cache), which keeps ``take_h`` a row gather and the results independent of the
cache layout of the installed transformers version, at O(length^2) decoder cost.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Optional, Union

import numpy as np

from pysynth.decoding.protocol import SourceBatch, SpecialIds

__all__ = ["HFBackend", "hf_specials"]


def hf_specials(config, unk: Optional[int] = None) -> SpecialIds:
    """Special ids from a Hugging Face configuration: ``pad_token_id``, ``eos_token_id`` (the
    first when a list), ``decoder_start_token_id`` (else ``bos_token_id``) as ``bos``; ``unk``
    comes from the tokenizer (configurations do not hold it), None by default."""
    eos = config.eos_token_id
    if isinstance(eos, (list, tuple)):
        eos = eos[0]
    bos = getattr(config, "decoder_start_token_id", None)
    if bos is None:
        bos = config.bos_token_id
    pad = config.pad_token_id
    for name, v in (("pad_token_id", pad), ("eos_token_id", eos), ("decoder_start_token_id", bos)):
        if v is None:
            raise ValueError(f"model: its configuration has no {name}; pass specials=SpecialIds(pad, unk, bos, eos)")
    return SpecialIds(int(pad), unk, int(bos), int(eos))


class HFBackend:
    """A local Hugging Face encoder-decoder model as a :class:`~pysynth.decoding.protocol.DecodingBackend`.

    Parameters
    ----------
    model : path or ``PreTrainedModel``
        A local directory written by ``save_pretrained`` (loaded with
        ``AutoModelForSeq2SeqLM.from_pretrained(..., local_files_only=True)``), or a model.
    device : str, optional
        Move the model there (default: where it is).
    specials : SpecialIds, optional
        Default: :func:`hf_specials` of the model's configuration.

    Examples
    --------
    >>> be = HFBackend("path/to/t5-small")                                  # doctest: +SKIP
    >>> batch = SourceBatch.from_ids(tokenizer(texts).input_ids, be.specials.pad)  # doctest: +SKIP
    >>> hyps = beam_search(be, batch, beam=4)                               # doctest: +SKIP
    """

    name = "hf"
    copy = False  # no extended ids: the vocabulary is the tokenizer's

    def __init__(self, model: Union[str, "os.PathLike[str]", object], device: Optional[str] = None,
                 specials: Optional[SpecialIds] = None):
        import torch

        if isinstance(model, (str, os.PathLike)):
            from transformers import AutoModelForSeq2SeqLM

            p = Path(model)
            if not (p / "config.json").is_file():
                raise ValueError(f"model: {str(p)!r} is not a local Hugging Face model directory (no config.json); "
                                 "save one with model.save_pretrained(DIR) (nothing is downloaded)")
            model = AutoModelForSeq2SeqLM.from_pretrained(str(p), local_files_only=True)
        if not hasattr(model, "get_encoder") or not hasattr(model, "config"):
            raise TypeError(f"model: expected a Hugging Face encoder-decoder model or its directory, got "
                            f"{type(model).__name__}")
        self.model = model.eval()
        if device is not None:
            self.model.to(device)
        self.device = next(self.model.parameters()).device
        self.specials = SpecialIds.check(specials if specials is not None else hf_specials(model.config))
        out = model.get_output_embeddings()
        self.vocab_size = int(out.weight.shape[0]) if out is not None else int(model.config.vocab_size)
        self._torch = torch

    def _t(self, a) -> "object":
        return self._torch.from_numpy(np.ascontiguousarray(a)).to(self.device)

    def encode(self, batch: SourceBatch):
        torch = self._torch
        src = self._t(batch.src)
        mask = (torch.arange(src.shape[1], device=self.device)[None, :] < self._t(batch.src_len)[:, None]).long()
        with torch.inference_mode():
            enc = self.model.get_encoder()(input_ids=src, attention_mask=mask).last_hidden_state
        return (enc, mask), src.new_zeros((src.shape[0], 0))

    def take(self, state, rows):
        r = self._t(np.asarray(rows, dtype=np.int64))
        return tuple(t.index_select(0, r) for t in state)

    def take_h(self, h, rows):
        return h.index_select(0, self._t(np.asarray(rows, dtype=np.int64)))

    def step(self, state, tokens, h):
        """Log-probabilities [rows, V] (float32) after the prefix ``h`` + ``tokens``, and the new prefix."""
        from transformers.modeling_outputs import BaseModelOutput

        torch = self._torch
        enc, mask = state
        prefix = torch.cat([h, self._t(np.asarray(tokens, dtype=np.int64))[:, None]], 1)
        with torch.inference_mode():
            out = self.model(encoder_outputs=BaseModelOutput(last_hidden_state=enc), attention_mask=mask,
                             decoder_input_ids=prefix, use_cache=False)
            logp = torch.log_softmax(out.logits[:, -1].float(), -1)
        return logp.cpu().numpy(), prefix
