"""Text in, n-best text out: tokenization, validation, batching and a search over a backend."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import List, Optional, Sequence

from pysynth.models.batching import make_source_batch
from pysynth.models.vocab import Vocab, detokenize, tokenize

__all__ = ["Generation", "Generator", "prepare_sources"]


@dataclass
class Generation:
    """The n-best list of one input: texts, scores (length-normalised log-probabilities), groups."""

    source: str
    texts: List[str]
    scores: List[float]
    groups: List[int] = field(default_factory=list)
    truncated: bool = False


def prepare_sources(texts: Sequence[str], vocab: Vocab, max_src_len: int, argname: str = "keywords"):
    """Tokenize and validate inputs; returns ``(token lists, truncated flags)``.

    Raises ``ValueError`` naming ``argname`` for a non-string, an empty input (no tokens) and an
    input whose tokens are all outside the vocabulary (the model would see only ``<unk>``).
    Inputs longer than ``max_src_len`` tokens are truncated to their first ``max_src_len`` tokens.
    """
    if isinstance(texts, str):
        raise TypeError(f"{argname}: expected a list of strings, got a single str (wrap it in a list)")
    toks, trunc = [], []
    for i, t in enumerate(texts):
        if not isinstance(t, str):
            raise TypeError(f"{argname}[{i}]: expected str, got {type(t).__name__}")
        tk = tokenize(t)
        if not any(any(c.isalnum() for c in w) for w in tk):
            raise ValueError(f"{argname}[{i}]: empty input {t!r} (no word tokens)")
        if all(w not in vocab.stoi for w in tk):
            raise ValueError(f"{argname}[{i}]: every token of {t!r} is outside the model vocabulary "
                             f"({len(vocab)} words); the model would only see <unk>")
        trunc.append(len(tk) > max_src_len)
        toks.append(tk[:max_src_len])
    return toks, trunc


class Generator:
    """A model (torch or onnxruntime backend) with its vocabulary, for text generation.

    Parameters
    ----------
    backend : TorchBackend or OrtBackend
    vocab : Vocab
    copy : bool
        The model copies source words (CopyNet): OOV source words get extended ids.
    max_src_len, max_tgt_len : int
        Input truncation and default output length limit (from the model config).
    """

    def __init__(self, backend, vocab: Vocab, copy: bool, max_src_len: int = 32, max_tgt_len: int = 40):
        self.backend = backend
        self.vocab = vocab
        self.copy = copy
        self.max_src_len = max_src_len
        self.max_tgt_len = max_tgt_len

    @classmethod
    def load(cls, model_dir=None, backend: str = "torch", device: Optional[str] = None,
             kernels: str = "auto") -> "Generator":
        """Load a model folder (default: the shipped ``k2q-copynet-small``) on ``torch`` or ``onnx``.

        ``kernels`` (torch backend): ``auto`` runs the fused Triton decode-step kernels when
        the model is on CUDA and triton is installed, ``triton`` always, ``torch`` never (see
        :class:`pysynth.decoding.backends.TorchBackend`). The onnx backend runs its exported
        graph: ``kernels="triton"`` is a ``ValueError`` there.
        """
        if kernels not in ("auto", "triton", "torch"):
            raise ValueError(f"kernels: must be 'auto', 'triton' or 'torch', got {kernels!r}")
        if backend == "onnx" and kernels == "triton":
            raise ValueError("kernels='triton' needs backend='torch' (the onnx backend runs the "
                             "exported graph)")
        from pysynth.models.config import Seq2SeqConfig
        from pysynth.models.k2q import default_model_dir

        from pathlib import Path

        d = Path(model_dir) if model_dir is not None else default_model_dir()
        if device == "auto":  # CUDA when torch sees one, else CPU
            import torch

            device = "cuda" if torch.cuda.is_available() else "cpu"
        cfg = Seq2SeqConfig.load(d / "config.json")
        vocab = Vocab.load(d / "vocab.json")
        if backend == "torch":
            from pysynth.decoding.backends import TorchBackend
            from pysynth.models.io import load_model

            model, vocab = load_model(d, device=device)
            be = TorchBackend(model, kernels=kernels)
        elif backend == "onnx":
            from pysynth.export.onnx import OrtBackend

            onnx_dir = d / "onnx" if (d / "onnx").is_dir() else d
            be = OrtBackend(onnx_dir, device=device)
        else:
            raise ValueError(f"backend: must be 'torch' or 'onnx', got {backend!r}")
        return cls(be, vocab, cfg.arch == "copynet", cfg.max_src_len, cfg.max_tgt_len)

    def generate(
        self,
        texts: Sequence[str],
        *,
        beam: int = 5,
        n: Optional[int] = None,
        groups: int = 1,
        diversity: float = 0.5,
        method: Optional[str] = None,
        max_len: Optional[int] = None,
        length_penalty: str = "none",
        alpha: float = 0.6,
        batch_size: int = 32,
        ban_unk: bool = True,
        dedupe: bool = True,
    ) -> List[Generation]:
        """Generate n-best lists for ``texts``.

        Parameters
        ----------
        method : {"greedy", "beam", "diverse"}, optional
            Default: ``greedy`` when ``beam == 1``, ``diverse`` when ``groups > 1``, else ``beam``.
        n : int, optional
            Outputs per input (default ``beam``); duplicates after detokenization are dropped
            when ``dedupe``.
        """
        from pysynth.decoding import search as S

        if method is None:
            method = "greedy" if beam == 1 and groups == 1 else ("diverse" if groups > 1 else "beam")
        if method not in ("greedy", "beam", "diverse"):
            raise ValueError(f"method: must be 'greedy', 'beam' or 'diverse', got {method!r}")
        S.check_search_args(beam, groups if method == "diverse" else 1, diversity,
                            max_len or self.max_tgt_len, length_penalty, alpha)
        if n is not None and (not isinstance(n, int) or n < 1):
            raise ValueError(f"n: must be a positive integer, got {n!r}")
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size: must be a positive integer, got {batch_size!r}")
        max_len = max_len or self.max_tgt_len
        toks, trunc = prepare_sources(texts, self.vocab, self.max_src_len)
        # sort by length so batches carry little padding; results go back in input order
        order = sorted(range(len(toks)), key=lambda i: len(toks[i]))
        out: List[Optional[Generation]] = [None] * len(toks)
        for b0 in range(0, len(order), batch_size):
            idx = order[b0 : b0 + batch_size]
            batch = make_source_batch(self.vocab, [toks[i] for i in idx], self.copy)
            if method == "greedy":
                res = S.greedy_search(self.backend, batch, max_len=max_len, ban_unk=ban_unk)
            elif method == "beam":
                res = S.beam_search(self.backend, batch, beam=beam, max_len=max_len,
                                    length_penalty=length_penalty, alpha=alpha, ban_unk=ban_unk)
            else:
                res = S.diverse_beam_search(self.backend, batch, beam=beam, groups=groups,
                                            diversity=diversity, max_len=max_len,
                                            length_penalty=length_penalty, alpha=alpha, ban_unk=ban_unk)
            for j, i in enumerate(idx):
                texts_i, scores_i, groups_i, seen = [], [], [], set()
                k = n if n is not None else len(res[j])
                for hyp in res[j]:
                    if len(texts_i) >= k:  # the rest would be cut: do not detokenize it
                        break
                    text = detokenize(self.vocab.decode(hyp.tokens, batch.oovs[j]))
                    if dedupe and text in seen:
                        continue
                    seen.add(text)
                    texts_i.append(text)
                    scores_i.append(hyp.score)
                    groups_i.append(hyp.group)
                out[i] = Generation(texts[i], texts_i[:k], scores_i[:k], groups_i[:k], trunc[i])
        return out  # type: ignore[return-value]
