"""Text in, n-best text out: tokenization, validation, batching and a search over a backend."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, List, Optional, Sequence

import numpy as np

from pysynth.decoding.config import SearchConfig, run_search
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
    backend : a :class:`~pysynth.decoding.protocol.DecodingBackend` (TorchBackend, OrtBackend)
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
    def load(cls, model=None, backend: str = "auto", device: Optional[str] = None,
             kernels: str = "auto", default: Optional[str] = None, threads: int = 0) -> "Generator":
        """Load a model (a registered name such as ``k2q-copynet-small``, a model directory or a
        training run folder; :func:`pysynth.models.registry.resolve`) on ``torch``, ``onnx`` or
        ``auto`` (the default, as on the command line; :func:`pysynth.models.registry.seq2seq_backend`:
        onnx when onnxruntime is installed and the model has an export, else torch).

        ``default``: the registered name used when ``model`` is None. ``kernels`` (torch
        backend): ``auto`` runs the fused Triton decode-step kernels when the model is on CUDA
        and triton is installed, ``triton`` always, ``torch`` never (see
        :class:`pysynth.decoding.backends.TorchBackend`). The onnx backend runs the exported
        graphs of the directory's ``onnx/`` store (no torch): ``kernels="triton"`` is a
        ``ValueError`` there. ``threads``: onnxruntime intra-op threads (0: its default).
        """
        if kernels not in ("auto", "triton", "torch"):
            raise ValueError(f"kernels: must be 'auto', 'triton' or 'torch', got {kernels!r}")
        if backend not in ("torch", "onnx", "auto"):
            raise ValueError(f"backend: must be 'auto', 'torch' or 'onnx', got {backend!r}")
        if backend == "onnx" and kernels == "triton":
            raise ValueError("kernels='triton' needs backend='torch' (the onnx backend runs the "
                             "exported graph)")
        from pysynth.models.io import read_config_vocab
        from pysynth.models.registry import onnx_export_of, resolve, seq2seq_backend

        r = resolve(model, default=default, what="model")
        if r.kind != "pysynth":
            raise ValueError(f"model: {r.path} is a Hugging Face model directory; decode it with "
                             "pysynth.models.text2text.text2text (its own tokenizer)")
        from pysynth.decoding.ort import ONNX_FORMAT
        from pysynth.store import format_of

        if backend == "auto":
            backend = seq2seq_backend(r.path) if kernels != "triton" else "torch"
        if format_of(r.path) == ONNX_FORMAT:
            if backend != "onnx":  # a model shipped as its ONNX export alone (int8 weights)
                from pysynth.models.io import no_torch_weights
                from pysynth.models.registry import layout

                if layout(r.path).package is not None:
                    raise no_torch_weights(r.path)
                raise ValueError(f"model: {r.name or r.path} ships as an ONNX export only; use backend='onnx'")
            return cls.from_onnx(r.path, device=device, threads=threads)
        d = r.path
        if device == "auto":  # CUDA when torch sees one, else CPU
            import torch

            device = "cuda" if torch.cuda.is_available() else "cpu"
        _, cfg, vocab, _ = read_config_vocab(d)
        if backend == "torch":
            from pysynth.decoding.backends import TorchBackend
            from pysynth.models.io import load_model

            m, vocab = load_model(d, device=device)
            be = TorchBackend(m, kernels=kernels)
        else:
            from pysynth.decoding.ort import OrtBackend

            # the export beside the model store, or beside it in a training run folder
            found = onnx_export_of(d)
            if found is None:
                raise FileNotFoundError(f"model: {d} has no onnx/ export; run: pysynth export onnx --model {d} "
                                        f"--out {d / 'onnx'}")
            be = OrtBackend(found, device=device, threads=threads)
        return cls(be, vocab, be.copy, cfg.max_src_len, cfg.max_tgt_len)

    @classmethod
    def from_onnx(cls, onnx_dir, device: Optional[str] = None, threads: int = 0) -> "Generator":
        """A generator over an ONNX export folder alone (``pysynth export onnx``'s output: the
        graphs, ``config.json`` and ``vocab.json``), without the model directory or torch."""
        import json
        from pathlib import Path

        from pysynth.decoding.ort import OrtBackend, load_onnx_dir

        st = load_onnx_dir(onnx_dir)
        try:
            cfg = json.loads(st.read("config.json"))
            vocab = Vocab.from_json(st.read("vocab.json"))
        except (KeyError, ValueError) as exc:
            raise ValueError(f"onnx_dir: {Path(onnx_dir)} lacks a readable config.json / vocab.json ({exc}); "
                             "re-export it with pysynth export onnx") from None
        be = OrtBackend(onnx_dir, device=device, threads=threads)
        return cls(be, vocab, be.copy, int(cfg.get("max_src_len", 32)), int(cfg.get("max_tgt_len", 40)))

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
        top_k: int = 0,
        top_p: float = 1.0,
        temperature: float = 1.0,
        seed: int = 0,
        seeds: Optional[Sequence[int]] = None,
        no_repeat_ngram: int = 3,
        no_stutter: bool = True,
        search: Optional[SearchConfig] = None,
        on_batch: Optional[Callable[[int], None]] = None,
    ) -> List[Generation]:
        """Generate n-best lists for ``texts``.

        Parameters
        ----------
        method : {"greedy", "beam", "diverse", "sample"}, optional
            Default: ``greedy`` when ``beam == 1``, ``diverse`` when ``groups > 1``, else ``beam``.
            ``sample``: ``n`` (default ``beam``) samples per input with ``top_k`` / ``top_p`` /
            ``temperature``; input ``i`` draws from seed ``[seed, i]`` whatever the batching
            (:func:`pysynth.decoding.search.sample_search`).
        seeds : list of int, optional
            ``sample``: one seed per input instead of ``[seed, i]`` (a caller that splits a job
            into chunks keys them by the global row, so the chunking does not matter).
        n : int, optional
            Outputs per input (default ``beam``); duplicates after detokenization are dropped
            when ``dedupe``.
        no_repeat_ngram, no_stutter
            The degenerate-output guards (:class:`~pysynth.decoding.SearchConfig`; on by default:
            no repeated trigram, no token twice in a row; ``0`` / ``False``: the plain search).
        search : pysynth.decoding.SearchConfig, optional
            All the search settings at once (then ``method``, ``beam``, ``n``, ``groups``,
            ``diversity``, ``max_len``, ``length_penalty``, ``alpha``, ``ban_unk``, ``top_k``,
            ``top_p``, ``temperature``, ``seed`` and the guards are not read).
        on_batch : callable, optional
            Called with the number of inputs of each finished batch (a progress bar's update).
        """
        if search is None:
            if method is None:
                method = "greedy" if beam == 1 and groups == 1 else ("diverse" if groups > 1 else "beam")
            if method not in ("greedy", "beam", "diverse", "sample"):
                raise ValueError(f"method: must be 'greedy', 'beam', 'diverse' or 'sample', got {method!r}")
            search = SearchConfig(decode=method, beam=beam, groups=groups if method == "diverse" else 1,
                                  diversity=diversity, n=n, top_k=top_k, top_p=top_p, temperature=temperature,
                                  max_len=max_len or None, length_penalty=length_penalty, alpha=alpha,
                                  ban_unk=ban_unk, seed=seed, no_repeat_ngram=no_repeat_ngram,
                                  no_stutter=no_stutter)
        if not isinstance(batch_size, int) or batch_size < 1:
            raise ValueError(f"batch_size: must be a positive integer, got {batch_size!r}")
        if seeds is not None and search.decode == "sample" and len(seeds) != len(texts):
            raise ValueError(f"seeds: one per input, got {len(seeds)} for {len(texts)} inputs")
        return self._generate(texts, search, seeds, batch_size, dedupe, on_batch)

    def _generate(self, texts, search: SearchConfig, seeds, batch_size: int, dedupe: bool,
                  on_batch=None) -> List[Generation]:
        n = search.n
        toks, trunc = prepare_sources(texts, self.vocab, self.max_src_len)
        # sort by length so batches carry little padding; results go back in input order
        order = sorted(range(len(toks)), key=lambda i: len(toks[i]))
        out: List[Optional[Generation]] = [None] * len(toks)
        for b0 in range(0, len(order), batch_size):
            idx = order[b0 : b0 + batch_size]
            batch = make_source_batch(self.vocab, [toks[i] for i in idx], self.copy)
            # one seed per input position: the samples do not depend on batch_size or order
            row_seeds = None if search.decode != "sample" else [
                int(seeds[i]) if seeds is not None
                else int(np.random.SeedSequence([search.seed, i]).generate_state(1)[0]) for i in idx]
            res = run_search(self.backend, batch, search, self.max_tgt_len, row_seeds)
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
            if on_batch is not None:
                on_batch(len(idx))
        return out  # type: ignore[return-value]

