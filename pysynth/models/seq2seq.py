"""EDNet, AttNet and CopyNet (Ding & Balog 2018, Sect. 4) in PyTorch.

One module, three registered architectures (``Seq2SeqConfig.arch``; their attention / copy
flags come from :mod:`pysynth.models.registry`):

* **EDNet** (Eq. 9-12): a bidirectional GRU encoder; the context ``c`` is the last encoder
  state (forward state at the last token + backward state at the first token); the GRU decoder
  reads ``[emb(y_{i-1}); c]`` and a softmax classifier ``g(s_i, y_{i-1}, c)`` predicts ``y_i``.
* **AttNet** (Eq. 13): ``c_i = sum_j alpha_ij h_j`` with additive attention
  ``sigma(s_{i-1}, h_j) = v^T tanh(W s_{i-1} + U h_j)`` (Bahdanau et al. 2015).
* **CopyNet** (Eq. 14-16, Gu et al. 2016): ``P(y) = P_g(y) + P_c(y)`` with one normaliser over
  the generate scores ``W_o r_i`` and the copy scores ``phi_c(x_j) = tanh(h_j^T W_c) s_i``;
  copy probability mass of source position ``j`` goes to the source word's id, and source
  words outside the vocabulary get extended ids ``V + k`` (one extended vocabulary per batch,
  ``k`` = index of the word among the row's distinct OOV words). Gu et al.'s "selective read"
  state update is not modelled (the previous word enters through its embedding; a copied
  OOV word enters as ``<unk>``).

Padding never changes results: the backward encoder direction runs over each row reversed
within its own length (a gather, not ``pack_padded_sequence``), which also keeps the graph
exportable to ONNX with a dynamic source length.

Log-probabilities of CopyNet are ``log(max(p, 1e-12))`` (clamps, never ``log(p + eps)``: ONNX
graph optimisers fold ``p + 1e-12`` into ``p`` and turn zero probabilities into ``-inf``),
computed in log space: ``max(log P_g, log 1e-12)`` for columns no source word maps to, and
``log(max(P_g + P_c, 1e-12))`` for the source words' columns.
"""
from __future__ import annotations

import math
from typing import NamedTuple, Optional, Tuple

import torch
import torch.nn as nn
import torch.nn.functional as F

from pysynth.models.config import Seq2SeqConfig
from pysynth.models.vocab import Vocab

__all__ = ["Seq2Seq", "Encoded", "LOG_EPS", "LOG_FLOOR", "MASK_NEG"]

LOG_EPS = 1e-12  # CopyNet log-probabilities are log(max(p, LOG_EPS))
LOG_FLOOR = math.log(LOG_EPS)
MASK_NEG = -1e9  # masked attention / copy scores (finite, so all-masked rows cannot NaN)


class Encoded(NamedTuple):
    """Encoder outputs for ``N`` rows (sources or hypotheses); unused fields are empty tensors.

    memory : [N, S, 2*enc_hidden] encoder states ``h_j`` (zero at padding)
    context : [N, 2*enc_hidden] EDNet context (last states of both directions)
    keys : [N, S, attn] ``U h_j`` of the attention scorer (AttNet, CopyNet)
    copy_feats : [N, S, dec_hidden] ``tanh(h_j^T W_c)`` of Eq. 16 (CopyNet)
    mask : [N, S] bool, True at real tokens
    h0 : [N, dec_hidden] initial decoder state
    """

    memory: torch.Tensor
    context: torch.Tensor
    keys: torch.Tensor
    copy_feats: torch.Tensor
    mask: torch.Tensor
    h0: torch.Tensor

    def take(self, rows: torch.Tensor) -> "Encoded":
        return Encoded(*(t.index_select(0, rows) if t.dim() > 0 and t.shape[0] else t for t in self))


class Seq2Seq(nn.Module):
    """EDNet / AttNet / CopyNet with a shared source/target vocabulary of ``vocab_size`` ids.

    Parameters
    ----------
    config : Seq2SeqConfig
    vocab_size : int
        Size of the built vocabulary (at most ``config.vocab_size``).

    Attributes
    ----------
    specials : the special ids of :class:`~pysynth.models.vocab.Vocab` (for the decoding backends)
    has_attention, has_copy : the architecture's capabilities (registry ``options``)
    log_floor : ``log(1e-12)``, the floor of CopyNet log-probabilities
    """

    specials = Vocab.specials
    log_floor = LOG_FLOOR

    def __init__(self, config: Seq2SeqConfig, vocab_size: int):
        super().__init__()
        if vocab_size > config.vocab_size:
            raise ValueError(f"vocab_size: {vocab_size} exceeds config.vocab_size={config.vocab_size}")
        if vocab_size <= Vocab.eos_id:
            raise ValueError(f"vocab_size: must be larger than the 4 specials, got {vocab_size}")
        c = config
        self.config = c
        self.vocab_size = vocab_size
        E, H, D = c.emb_dim, c.enc_hidden, c.dec_hidden
        M = 2 * H
        self.embedding = nn.Embedding(vocab_size, E, padding_idx=Vocab.pad_id)
        self.enc_fw = nn.GRU(E, H, batch_first=True)
        self.enc_bw = nn.GRU(E, H, batch_first=True)
        self.init_state = nn.Linear(M, D)
        self.dec_cell = nn.GRUCell(E + M, D)
        self.has_attention = bool(c.options.get("attention"))
        self.has_copy = bool(c.options.get("copy"))
        # the Triton copy_attention_step computes exactly this CopyNet mixture (Eq. 14-16)
        self.fused_copy_step = self.has_copy
        if self.has_attention:
            A = c.attn_size
            self.attn_key = nn.Linear(M, A, bias=False)
            self.attn_query = nn.Linear(D, A)
            self.attn_v = nn.Linear(A, 1, bias=False)
        if self.has_copy:
            self.copy_proj = nn.Linear(M, D)  # W_c of Eq. 16
        self.readout = nn.Linear(D + E + M, c.readout_size)
        if c.tie_embeddings:
            self.out = None
            self.out_bias = nn.Parameter(torch.zeros(vocab_size))
        else:
            self.out = nn.Linear(c.readout_size, vocab_size)
        self.drop = nn.Dropout(c.dropout)
        with torch.no_grad():
            self.embedding.weight.uniform_(-c.emb_init, c.emb_init)
            self.embedding.weight[Vocab.pad_id].zero_()

    # -- encoder ---------------------------------------------------------------------------
    def encode(self, src: torch.Tensor, src_len: torch.Tensor) -> Encoded:
        """Encode ``src`` [B, S] (int64, padded with ``<pad>``) of lengths ``src_len`` [B] (>= 1)."""
        B, S = src.shape
        e = self.drop(self.embedding(src))
        pos = torch.arange(S, device=src.device).unsqueeze(0)
        L = src_len.unsqueeze(1)
        valid = pos < L
        # position j of a row read backwards within its length; padding stays in place
        rev = torch.where(valid, L - 1 - pos, pos)
        fw, _ = self.enc_fw(e)
        e_rev = torch.gather(e, 1, rev.unsqueeze(-1).expand(B, S, e.shape[-1]))
        bw_rev, _ = self.enc_bw(e_rev)
        bw = torch.gather(bw_rev, 1, rev.unsqueeze(-1).expand(B, S, bw_rev.shape[-1]))
        memory = torch.cat([fw, bw], -1) * valid.unsqueeze(-1).to(fw.dtype)
        last = (L - 1).unsqueeze(-1).expand(B, 1, fw.shape[-1])
        context = torch.cat([torch.gather(fw, 1, last).squeeze(1), bw[:, 0]], -1)
        h0 = torch.tanh(self.init_state(context))
        empty = memory.new_zeros(0)
        keys = self.attn_key(memory) if self.has_attention else empty
        copy_feats = torch.tanh(self.copy_proj(memory)) if self.has_copy else empty
        return Encoded(memory, context, keys, copy_feats, valid, h0)

    # -- one decoder step ------------------------------------------------------------------
    def step(
        self,
        tokens: torch.Tensor,
        h: torch.Tensor,
        enc: Encoded,
        src_ext: Optional[torch.Tensor] = None,
        n_ext: int = 0,
    ) -> Tuple[torch.Tensor, torch.Tensor]:
        """Log-probabilities of the next token and the new decoder state.

        Parameters
        ----------
        tokens : [N] int64 previous tokens (extended ids >= V are read as ``<unk>``)
        h : [N, dec_hidden] previous decoder state ``s_{i-1}``
        enc : Encoded for the same N rows
        src_ext : [N, S] int64 extended source ids (CopyNet)
        n_ext : int
            Extended-vocabulary columns (CopyNet; the batch's largest OOV count).

        Returns
        -------
        logp : [N, V + n_ext] (CopyNet) or [N, V]
        h : [N, dec_hidden]
        """
        ext_zeros = h.new_zeros(h.shape[0], n_ext) if self.has_copy else None
        return self.step_tensors(tokens, h, enc.memory, enc.context, enc.keys, enc.copy_feats,
                                 enc.mask, src_ext, ext_zeros)

    def step_tensors(self, tokens, h, memory, context, keys, copy_feats, mask, src_ext, ext_zeros):
        """:meth:`step` on plain tensors; ``ext_zeros`` [N, n_ext] carries the extended size.

        This is the function exported to ONNX (one decoder step): :meth:`step_parts` and the
        vocabulary-wide epilogue that turns its parts into full log-probability rows.
        """
        ls, shift, touched, h_new = self.step_parts(tokens, h, memory, context, keys, copy_feats, mask, src_ext)
        if not self.has_copy:
            return ls, h_new
        # log(max(P, 1e-12)) everywhere: untouched columns are P_g alone (extended ones: 0)
        base = torch.cat([(ls + shift).clamp_min(LOG_FLOOR), ext_zeros + LOG_FLOOR], -1)
        return base.scatter(1, src_ext, touched), h_new

    def step_parts(self, tokens, h, memory, context, keys, copy_feats, mask, src_ext):
        """One step up to the vocabulary-wide epilogue: ``(ls, shift, touched, h_new)``.

        ``ls`` [N, V] is the log-softmax of the generate scores. For EDNet / AttNet it is the
        step's log-probabilities (``shift`` and ``touched`` are None). For CopyNet
        (Eq. 14-16), with ``shift`` [N, 1] = log sum_v exp(generate score v) - log Z and
        ``touched`` [N, S] = log max(P(src_ext[:, j]), 1e-12), the log-probabilities of
        :meth:`step_tensors` are, elementwise in float32::

            logp[:, c] = max(ls[:, c] + shift, log 1e-12)     c < V
            logp[:, c] = log 1e-12                            V <= c < V + n_ext
            logp[:, src_ext[:, j]] = touched[:, j]            (every j; equal words, equal values)

        Only ``ls`` is vocabulary-wide, so a backend can rank the candidates of a row from
        these parts without building the [N, V + n_ext] rows
        (:func:`pysynth.decoding.search.topk_from_parts`; the ONNX graph ``step_parts.onnx``).
        """
        V = self.vocab_size
        r, h_new = self.decoder_readout(tokens, h, memory, context, keys, mask)
        W_o, b_o = self.output_layer()
        logits = F.linear(r, W_o, b_o)
        ls = torch.log_softmax(logits, -1)
        if not self.has_copy:
            return ls, None, None, h_new
        # Eq. 16: phi_c(x_j) = tanh(h_j^T W_c) s_i
        copy_scores = torch.bmm(copy_feats, h_new.unsqueeze(-1)).squeeze(-1).masked_fill(~mask, MASK_NEG)
        # Eq. 14-15 with one normaliser Z over generate and copy scores, in log space so that the
        # only full-width ops are a log-softmax, an add and a max: an elementwise log over all V
        # columns took 37 % of an onnxruntime step and ReduceLogSumExp 57 %, while LogSoftmax
        # is vectorised. Logs of sums happen on [N, S] only.
        lse_gen = logits[:, :1] - ls[:, :1]  # log sum_v exp(logit_v)
        log_z = torch.logaddexp(lse_gen, torch.logsumexp(copy_scores, -1, keepdim=True))
        shift = lse_gen - log_z  # log P_g(v) = ls_v + shift
        copy_p = torch.exp(copy_scores - log_z)  # P_c mass of each source position (0 at padding)
        # per source position: P_g(its word) + the copy mass of every position holding that word
        same = (src_ext.unsqueeze(2) == src_ext.unsqueeze(1)).to(copy_p.dtype)
        copy_sum = torch.bmm(same, copy_p.unsqueeze(-1)).squeeze(-1)
        in_vocab = src_ext < V
        # gather, then add: the same float32 values as gathering from ls + shift
        g_at = (torch.gather(ls, 1, torch.where(in_vocab, src_ext, torch.zeros_like(src_ext))) + shift).exp()
        touched = (torch.where(in_vocab, g_at, torch.zeros_like(g_at)) + copy_sum).clamp_min(LOG_EPS).log()
        return ls, shift, touched, h_new

    def decoder_readout(self, tokens, h, memory, context, keys, mask) -> Tuple[torch.Tensor, torch.Tensor]:
        """The step up to the output layer: ``(r_i [N, readout], s_i [N, dec_hidden])``.

        Attention (Eq. 13, on the previous state ``h``), the GRU update and the readout layer
        ``r_i = tanh(W_r [s_i; y_{i-1}; c_i])``; the generate scores are ``W_o r_i + b_o``
        (:meth:`output_layer`) and the copy scores ``copy_feats . s_i``. The fused CopyNet
        kernel of ``pysynth.decoding.backends`` starts from here.
        """
        V = self.vocab_size
        inp = torch.where(tokens < V, tokens, torch.full_like(tokens, Vocab.unk_id))
        y = self.drop(self.embedding(inp))
        if self.has_attention:
            q = self.attn_query(h).unsqueeze(1)
            scores = self.attn_v(torch.tanh(keys + q)).squeeze(-1).masked_fill(~mask, MASK_NEG)
            alpha = torch.softmax(scores, -1)  # Eq. 13
            c = torch.bmm(alpha.unsqueeze(1), memory).squeeze(1)
        else:
            c = context  # Eq. 10-11: fixed context
        h_new = self.dec_cell(torch.cat([y, c], -1), h)
        r = self.drop(torch.tanh(self.readout(torch.cat([h_new, y, c], -1))))
        return r, h_new

    def output_layer(self) -> Tuple[torch.Tensor, torch.Tensor]:
        """``(W_o [V, readout], b_o [V])`` of the generate scores (the embedding matrix when tied)."""
        if self.out is None:
            return self.embedding.weight, self.out_bias
        return self.out.weight, self.out.bias

    # -- training --------------------------------------------------------------------------
    def forward(self, src, src_len, src_ext, n_ext: int, tgt_in, tgt_out):
        """Teacher-forced negative log-likelihood: ``(sum over target tokens, token count)``.

        ``tgt_in`` [B, T] starts with ``<s>``; ``tgt_out`` [B, T] ends with ``</s>``, padded with
        ``<pad>`` (ignored); for CopyNet it holds extended ids for copyable OOV words.
        """
        enc = self.encode(src, src_len)
        h = enc.h0
        ext_zeros = h.new_zeros(h.shape[0], n_ext) if self.has_copy else None
        picked = []
        for t in range(tgt_in.shape[1]):
            logp, h = self.step_tensors(tgt_in[:, t], h, enc.memory, enc.context, enc.keys,
                                        enc.copy_feats, enc.mask, src_ext, ext_zeros)
            picked.append(logp.gather(1, tgt_out[:, t : t + 1]))
        lp = torch.cat(picked, 1)
        keep = (tgt_out != Vocab.pad_id).to(lp.dtype)
        return -(lp * keep).sum(), keep.sum()
