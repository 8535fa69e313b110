"""Text in, n-best out: one facade over every seq2seq model pysynth can run.

:func:`text2text` opens a pysynth model (a shipped name, a model folder or a training run), an
ONNX export folder (``pysynth export onnx``) or a local Hugging Face encoder-decoder folder, and
returns a :class:`Text2Text`: ``generate(texts, search)`` gives one
:class:`~pysynth.models.generate.Generation` (texts, scores, groups) per input for any
:class:`~pysynth.decoding.SearchConfig`. The backend follows one rule
(:func:`pysynth.models.registry.seq2seq_backend`): ``auto`` is onnx when onnxruntime is installed
and the model has an export, else torch; Hugging Face folders run on torch through
:class:`pysynth.decoding.hf.HFBackend`.

:func:`round_trip` translates through two models and back (the "NMT fr" baseline of Chu et al.
2020, Table 6; the pivots of Granstedt 2017).
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import List, Optional, Sequence, Tuple, Union

from pysynth.decoding.config import SearchConfig
from pysynth.models.generate import Generation
from pysynth.models.registry import is_onnx_export

__all__ = ["Text2Text", "generation", "ModelText2Text", "HFText2Text", "text2text", "round_trip", "is_onnx_export",
           "HFTranslator", "ModelTranslator"]

PathLike = Union[str, "os.PathLike[str]"]


def _search_of(cfg) -> Tuple[SearchConfig, int]:
    """``(SearchConfig, batch size)`` of a SearchConfig or of a method configuration that holds
    one (``.search``; ``.batch_size``)."""
    if isinstance(cfg, SearchConfig):
        return cfg, 32
    return cfg.search, int(getattr(cfg, "batch_size", 32))


class Text2Text:
    """A seq2seq model behind one interface.

    Attributes
    ----------
    name : str
        What was opened (a shipped name or a path).
    runtime : {"onnx", "torch", "hf"}
        What runs it.
    lowercases : bool
        Outputs come lower-cased (pysynth's tokenizer): see :mod:`pysynth.models.postprocess`.
    """

    name = ""
    runtime = ""
    lowercases = False

    def valid(self, text: str) -> Optional[str]:
        """None, or why the model cannot take ``text``."""
        return None

    def generate(self, texts: Sequence[str], search: Optional[SearchConfig] = None,
                 seeds: Optional[Sequence[int]] = None, batch_size: int = 32,
                 dedupe: bool = False) -> List[Generation]:
        """One n-best list per input.

        Parameters
        ----------
        texts : the inputs.
        search : the search (default ``SearchConfig()``: beam search of width 5).
        seeds : ``sample``: one seed per input (default: from ``search.seed`` and the position).
        batch_size : inputs per search call.
        dedupe : drop repeated texts of an n-best list.
        """
        raise NotImplementedError

    def translate(self, texts: Sequence[str], cfg, seeds: Sequence[int]) -> List[List[Tuple[str, float, int]]]:
        """Per input, ``(text, score, group)`` in the search's order (``cfg``: a SearchConfig, or
        a configuration with ``.search`` and ``.batch_size``; the paraphrase pivots' interface)."""
        if not len(texts):
            return []
        search, bs = _search_of(cfg)
        res = self.generate(list(texts), search, seeds=seeds, batch_size=bs)
        return [list(zip(g.texts, g.scores, g.groups or [0] * len(g.texts))) for g in res]


class ModelText2Text(Text2Text):
    """A pysynth seq2seq model (:class:`pysynth.models.generate.Generator`, onnxruntime or torch).

    Parameters
    ----------
    model : a shipped name, a model folder or a training run.
    backend : {"auto", "onnx", "torch"}
    threads, device : runtime settings.
    """

    lowercases = True

    def __init__(self, model, backend: str = "auto", threads: int = 0, device: Optional[str] = None):
        from pysynth.models.generate import Generator

        self.gen = Generator.load(model, backend=backend, threads=threads, device=device)
        self.name = str(model)
        self.runtime = getattr(self.gen.backend, "name", backend)

    @classmethod
    def wrap(cls, generator, name: str = "") -> "ModelText2Text":
        """The facade over an already loaded :class:`~pysynth.models.generate.Generator`."""
        self = cls.__new__(cls)
        self.gen, self.name = generator, name
        self.runtime = getattr(generator.backend, "name", "")
        return self

    @property
    def providers(self) -> List[str]:
        """onnxruntime's providers in use ([] on torch)."""
        return list(getattr(self.gen.backend, "providers", []))

    def valid(self, text: str) -> Optional[str]:
        from pysynth.models.generate import prepare_sources

        try:
            prepare_sources([text], self.gen.vocab, self.gen.max_src_len, argname="question")
        except (TypeError, ValueError) as e:
            return str(e).split(": ", 1)[-1]
        return None

    def generate(self, texts, search=None, seeds=None, batch_size=32, dedupe=False):
        search = search or SearchConfig()
        return self.gen.generate(list(texts), search=search, batch_size=batch_size, dedupe=dedupe,
                                 seeds=list(seeds) if seeds is not None and search.decode == "sample" else None)


class HFText2Text(Text2Text):
    """A local Hugging Face encoder-decoder directory (e.g. a Marian en->X model) with its own
    tokenizer, decoded by pysynth's searches (:class:`pysynth.decoding.hf.HFBackend`)."""

    runtime = "hf"

    def __init__(self, path, device: Optional[str] = None):
        from pysynth.decoding.hf import HFBackend, hf_specials
        from pysynth.models.hf import load_seq2seq

        model, self.tok = load_seq2seq(path, device=device)
        unk = getattr(self.tok, "unk_token_id", None)
        self.backend = HFBackend(model, specials=hf_specials(model.config, unk))
        self.name = str(path)
        gc = getattr(model, "generation_config", None)
        pos = getattr(model.config, "max_position_embeddings", None) or 512
        # outputs within the generation config's length and the decoder's positions
        self.max_len = min(int(getattr(gc, "max_length", None) or 64), 128, pos - 1)
        self.max_src = min(512, pos)

    def valid(self, text: str) -> Optional[str]:
        return None if text.strip() else "empty input"

    def generate(self, texts, search=None, seeds=None, batch_size=32, dedupe=False):
        import numpy as np

        from pysynth.decoding.config import run_search
        from pysynth.decoding.protocol import SourceBatch

        search = search or SearchConfig()
        texts = list(texts)
        if seeds is None and search.decode == "sample":
            seeds = [int(np.random.SeedSequence([search.seed, i]).generate_state(1)[0]) for i in range(len(texts))]
        out: List[Generation] = []
        for b0 in range(0, len(texts), batch_size):
            chunk = texts[b0 : b0 + batch_size]
            ids = self.tok(chunk, truncation=True, max_length=self.max_src)["input_ids"]
            batch = SourceBatch.from_ids(ids, self.backend.specials.pad)
            res = run_search(self.backend, batch, search, self.max_len,
                             list(seeds[b0 : b0 + len(chunk)]) if search.decode == "sample" else None)
            out.extend(generation(src, hyps, search, self.tok, dedupe) for src, hyps in zip(chunk, res))
        return out


def generation(source: str, hyps, search: SearchConfig, tokenizer, dedupe: bool = False) -> Generation:
    """A :class:`~pysynth.models.generate.Generation` of ``source`` from a search's n-best
    ``hyps`` (the first ``search.n``), decoded by a wordpiece / Hugging Face ``tokenizer``;
    ``dedupe`` skips a text already in the list."""
    g = Generation(source, [], [], [])
    for h in hyps[: search.n] if search.n is not None else hyps:
        t = tokenizer.decode(h.tokens, skip_special_tokens=True).strip()
        if dedupe and t in g.texts:
            continue
        g.texts.append(t)
        g.scores.append(h.score)
        g.groups.append(h.group)
    return g


#: the names these classes had in ``pysynth.paraphrase.pipeline``
HFTranslator = HFText2Text
ModelTranslator = ModelText2Text


def text2text(model: Optional[PathLike] = None, backend: str = "auto", *, device: Optional[str] = None,
              threads: int = 0, default: Optional[str] = None, what: str = "model") -> Text2Text:
    """Open a seq2seq model as a :class:`Text2Text`.

    Parameters
    ----------
    model : a shipped name, a pysynth model folder or training run, an ONNX export folder (runs on
        onnxruntime whatever ``backend``) or a local Hugging Face seq2seq folder; None: ``default``.
    backend : {"auto", "onnx", "torch"}
        pysynth models only (:func:`pysynth.models.registry.seq2seq_backend`).
    device : ``None``/``"cpu"``, ``"cuda"`` or ``"auto"``.
    threads : onnxruntime intra-op threads (0: its default).
    default : the shipped name used when ``model`` is None.
    what : the argument's name in error messages.

    Raises
    ------
    ValueError
        not a seq2seq model (the message names what it is).

    Examples
    --------
    >>> m = text2text("k2q-copynet-small")  # doctest: +SKIP
    >>> m.generate(["paris capital"], SearchConfig(beam=4))[0].texts  # doctest: +SKIP
    """
    from pysynth.models.generate import Generator
    from pysynth.models.registry import MODEL_FORMAT, resolve
    from pysynth.store import format_of

    if backend not in ("auto", "onnx", "torch"):
        raise ValueError(f"backend: must be 'auto', 'onnx' or 'torch', got {backend!r}")
    if isinstance(model, (str, os.PathLike)) and Path(model).is_dir() and is_onnx_export(model):
        return ModelText2Text.wrap(Generator.from_onnx(model, device=device, threads=threads), str(model))
    r = resolve(model, default=default, what=what)
    name = r.name or str(r.path)
    if r.kind == "hf":
        return HFText2Text(r.path, device=None if device == "cpu" else device)
    fmt = format_of(r.path)
    if fmt is not None and fmt != MODEL_FORMAT and not is_onnx_export(r.path):
        raise ValueError(f"{what}: {name} is a {fmt} store, not a seq2seq model")
    gen = Generator.load(r.path, backend=backend, device=None if device == "cpu" else device, threads=threads)
    return ModelText2Text.wrap(gen, name)


def round_trip(texts: Sequence[str], forward, backward, beam: int = 4, backend: str = "auto",
               threads: int = 0, batch_size: int = 16, *, no_repeat_ngram: int = 3,
               no_stutter: bool = True) -> List[str]:
    """Round-trip translation: each text through ``forward`` then ``backward`` (models or
    :class:`Text2Text`), the best beam-search output of each (the "NMT fr" baseline of Chu et al.
    2020, Table 6). A text the forward model cannot read, or whose round trip has no word, comes
    back unchanged; a lower-casing model's output gets the text's casing back
    (:func:`pysynth.models.postprocess.match_case`). ``no_repeat_ngram``, ``no_stutter``: both searches'
    degenerate-output guards (:class:`~pysynth.decoding.SearchConfig`)."""
    from pysynth.models.postprocess import match_case

    fwd = forward if isinstance(forward, Text2Text) else text2text(forward, backend, threads=threads)
    bwd = backward if isinstance(backward, Text2Text) else text2text(backward, backend, threads=threads)
    search = SearchConfig(decode="beam", beam=beam, no_repeat_ngram=no_repeat_ngram, no_stutter=no_stutter)

    def best(model: Text2Text, xs: List[str]) -> List[str]:
        return [g.texts[0] if g.texts else "" for g in model.generate(xs, search, batch_size=batch_size)] if xs else []

    ok = [i for i, t in enumerate(texts) if not fwd.valid(t)]
    mid = best(fwd, [texts[i] for i in ok])
    ok2 = [j for j, m in enumerate(mid) if m and not bwd.valid(m)]
    back = best(bwd, [mid[j] for j in ok2])
    out = list(texts)
    for j, b in zip(ok2, back):
        if any(c.isalnum() for c in b):  # "." alone is no translation: keep the input
            i = ok[j]
            out[i] = match_case(b, texts[i]) if bwd.lowercases else b
    return out
