"""Question generation with a warm-started encoder-decoder (:mod:`pysynth.models.warmstart`), torch or ONNX.

:class:`WarmStartQG` asks one n-best list of questions per (context, answer span) with any
:class:`~pysynth.decoding.SearchConfig` (greedy, beam, diverse beam, sampling) on
:class:`pysynth.decoding.ort_warmstart.WarmStartOrtBackend` (an ONNX export; no torch) or
:class:`pysynth.models.warmstart.WarmStartBackend` (a training checkpoint:
:func:`pysynth.models.warmstart.load_qg`). It is the object
:func:`pysynth.models.load` returns for a ``pysynth.warmstart.onnx`` store, and a
:class:`~pysynth.models.text2text.Text2Text`: ``generate(texts)`` takes contexts with the answer
between two ``<hl>`` marks (the highlight format of lmqg, Ushio et al. 2022).

:func:`qg_features` is the model's input (the training script's too). Nothing here imports torch.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

from pysynth.decoding.config import SearchConfig, run_search
from pysynth.models.generate import Generation
from pysynth.models.text2text import Text2Text, generation

__all__ = ["qg_features", "WarmStartQG", "split_highlight", "load_store", "HL", "DEFAULT_SEARCH"]

PathLike = Union[str, "os.PathLike[str]"]
HL = "<hl>"
#: greedy search with no repeated trigram: the decoding of the first warm-start evaluation
DEFAULT_SEARCH = SearchConfig(decode="greedy", beam=1, no_repeat_ngram=3)


def qg_features(tokenizer, context: str, start: int, end: int, max_len: int = 256,
                question: Optional[str] = None, max_target_len: int = 40) -> Dict[str, List[int]]:
    """The QG input of one answer: ``[CLS] window [SEP]`` (``window`` = up to ``max_len - 2``
    wordpieces of ``context`` centred on the answer ``context[start:end]``), token type 1 on the
    answer's wordpieces; with ``question``, the target ``question [SEP]`` (at most
    ``max_target_len`` ids)."""
    if not 0 <= start < end <= len(context):
        raise ValueError(f"answer span: need 0 <= start < end <= len(context)={len(context)}, got ({start}, {end})")
    if max_len < 3:
        raise ValueError(f"max_len: must be >= 3 ([CLS] + one token + [SEP]), got {max_len}")
    enc = tokenizer(context, add_special_tokens=False, return_offsets_mapping=True)
    ids, offs = enc["input_ids"], enc["offset_mapping"]
    inside = [i for i, (a, b) in enumerate(offs) if a < end and b > start]
    a0, a1 = (inside[0], inside[-1] + 1) if inside else (0, 0)
    n = max_len - 2
    if len(ids) <= n:
        w0 = 0
    else:  # centre the answer; an answer longer than the window keeps its start
        w0 = max(0, min(a0 - max(0, (n - (a1 - a0)) // 2), len(ids) - n))
    win = ids[w0:w0 + n]
    types = [1 if a0 <= w0 + i < a1 else 0 for i in range(len(win))]
    cls_id, sep_id = tokenizer.cls_token_id, tokenizer.sep_token_id
    out = {"src": [cls_id] + win + [sep_id], "types": [0] + types + [0]}
    if question is not None:
        q = tokenizer(question.strip(), add_special_tokens=False)["input_ids"][:max_target_len - 1]
        out["tgt"] = q + [sep_id]
    return out



def split_highlight(text: str) -> Optional[tuple]:
    """``(context, start, end)`` of a text with its answer between two :data:`HL` marks
    (``"... over <hl> 1,000 <hl> people ..."``), or None when it has not exactly two marks or
    the answer is empty."""
    parts = text.split(HL)
    if len(parts) != 3:
        return None
    before, ans, after = parts
    lead = len(ans) - len(ans.lstrip())
    ans = ans.strip()
    if not ans:
        return None
    # one space stands where a mark and its spaces were
    if before and not before.endswith(" ") and lead:
        before += " "
    if after and not after.startswith(" ") and parts[1] != parts[1].rstrip():
        after = " " + after
    return before + ans + after, len(before), len(before) + len(ans)


class WarmStartQG(Text2Text):
    """Questions from (context, answer span) pairs with a warm-started encoder-decoder.

    Parameters
    ----------
    backend : a decoding backend of the model (``WarmStartOrtBackend`` or ``WarmStartBackend``).
    tokenizer : the model's wordpiece tokenizer (:func:`pysynth.models.spans.wordpiece_tokenizer`).
    max_source_len : source window in wordpieces (``[CLS]`` and ``[SEP]`` included).
    max_len : default output length limit in tokens (a search's ``max_len`` overrides it).
    name : what was opened.
    """

    lowercases = True  # an uncased wordpiece vocabulary

    def __init__(self, backend, tokenizer, max_source_len: int = 192, max_len: int = 32, name: str = ""):
        self.backend, self.tokenizer = backend, tokenizer
        self.max_source_len, self.max_len = int(max_source_len), int(max_len)
        self.name, self.runtime = name, getattr(backend, "name", "")

    @classmethod
    def from_onnx(cls, path: PathLike, device: Optional[str] = None, threads: int = 0) -> "WarmStartQG":
        """An export of :func:`pysynth.export.warmstart.export_warmstart_onnx` on onnxruntime."""
        from pysynth.decoding.ort_warmstart import VOCAB_FILE, WarmStartOrtBackend, load_warmstart_onnx
        from pysynth.models.spans import wordpiece_tokenizer

        be = WarmStartOrtBackend(path, device=device, threads=threads)
        st = load_warmstart_onnx(path)
        st.read(VOCAB_FILE)  # checked against its CRC-32 before the tokenizer reads it
        tok = wordpiece_tokenizer(Path(path) / VOCAB_FILE)
        return cls(be, tok, be.meta["max_source_len"], be.meta.get("max_len", 32), str(path))

    def source_batch(self, contexts: Sequence[str], answers: Sequence[Dict[str, Any]]):
        """The :class:`~pysynth.decoding.protocol.SourceBatch` (ids and answer types) of the pairs."""
        from pysynth.decoding.protocol import SourceBatch

        if isinstance(contexts, str):
            raise TypeError("contexts: expected a list of strings, got a single str (wrap it in a list)")
        if len(answers) != len(contexts):
            raise ValueError(f"answers: must hold one answer per context ({len(contexts)}), got {len(answers)}")
        feats = []
        for i, (c, a) in enumerate(zip(contexts, answers)):
            try:
                feats.append(qg_features(self.tokenizer, c, int(a["start"]), int(a["end"]), self.max_source_len))
            except (KeyError, TypeError, ValueError) as exc:
                raise ValueError(f"answers[{i}]: need {{'start', 'end'}} character offsets inside the context "
                                 f"({exc})") from None
        return SourceBatch.from_ids([f["src"] for f in feats], self.backend.specials.pad, [f["types"] for f in feats])

    def questions(self, contexts: Sequence[str], answers: Sequence[Dict[str, Any]],
                  search: Optional[SearchConfig] = None, seeds: Optional[Sequence[int]] = None,
                  batch_size: int = 16, dedupe: bool = False) -> List[Generation]:
        """One n-best list of questions per ``(context, answer)`` (answer: ``{"start", "end"}``
        character offsets); ``search`` defaults to :data:`DEFAULT_SEARCH`."""
        import numpy as np

        search = search or DEFAULT_SEARCH
        if seeds is None and search.decode == "sample":
            seeds = [int(np.random.SeedSequence([search.seed, i]).generate_state(1)[0]) for i in range(len(contexts))]
        out: List[Generation] = []
        for b0 in range(0, len(contexts), batch_size):
            cs, ans = list(contexts[b0:b0 + batch_size]), list(answers[b0:b0 + batch_size])
            batch = self.source_batch(cs, ans)
            res = run_search(self.backend, batch, search, self.max_len,
                             list(seeds[b0:b0 + len(cs)]) if search.decode == "sample" else None)
            out.extend(generation(c[int(a["start"]):int(a["end"])], hyps, search, self.tokenizer, dedupe)
                       for c, a, hyps in zip(cs, ans, res))
        return out

    def valid(self, text: str) -> Optional[str]:
        return None if split_highlight(text) else f"no answer marked: put it between two {HL} marks"

    def generate(self, texts, search=None, seeds=None, batch_size=16, dedupe=False):
        """Questions for contexts with the answer between two :data:`HL` marks (ValueError naming
        the text otherwise)."""
        spans = []
        for i, t in enumerate(texts):
            s = split_highlight(t) if isinstance(t, str) else None
            if s is None:
                raise ValueError(f"texts[{i}]: mark the answer with two {HL} marks (e.g. 'founded in {HL} 1903 "
                                 f"{HL} by ...'), got {str(t)[:80]!r}")
            spans.append(s)
        gens = self.questions([s[0] for s in spans], [{"start": s[1], "end": s[2]} for s in spans], search, seeds,
                              batch_size, dedupe)
        for g, t in zip(gens, texts):
            g.source = t
        return gens


def load_store(path, backend: str = "auto", device: Optional[str] = None, threads: int = 0) -> WarmStartQG:
    """The :func:`pysynth.models.load` factory of a ``pysynth.warmstart.onnx`` store (always onnxruntime)."""
    if backend not in ("auto", "onnx"):
        raise ValueError(f"backend: a warm-start ONNX export runs on onnxruntime ('auto' or 'onnx'), got {backend!r}")
    from pysynth.models.registry import resolve

    return WarmStartQG.from_onnx(resolve(path).path, device=None if device in (None, "auto") else device,
                                 threads=threads)
