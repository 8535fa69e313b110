"""The three roles of roundtrip QA generation (Alberti et al. 2019) behind one small interface.

* :class:`SpanModel` -- answer extraction ``C -> A`` and extractive QA ``(C, Q) -> A'``
  (:class:`pysynth.models.span_model.SpanModel`, re-exported here).
* :class:`QuestionGenerator` -- question generation ``(C, A) -> Q`` (Sect. 3.2-3.3): a pysynth
  seq2seq model (the shipped ``qagen-qg-copynet``: CopyNet from the answer sentence with the answer
  marked, :func:`pysynth.qagen.data.qg_source`; ONNX or torch), the paper's encoder-only generator
  (:mod:`pysynth.qagen.encoder_qg`, Sect. 3.2), a warm-started MiniLM encoder-decoder export
  (:mod:`pysynth.models.warmstart_qg`, store ``pysynth.warmstart.onnx``: the context window
  around the answer, onnxruntime only), a local Hugging Face seq2seq folder (input
  ``"answer: A context: C"``), or an LLM (:mod:`pysynth.llm`: an OpenAI-compatible server or a
  local causal LM, the ``qagen`` prompt role; a reply with no usable question is a
  :class:`pysynth.llm.Failed` empty text carrying its reason).
* :class:`LLMAnswers` -- answer proposal ``C -> A`` by an LLM (the ``answers`` role): the answers
  found in the context become candidate spans, the others are counted and dropped.

Every backend reads texts and returns texts / character spans, so the pipeline does not care
which one runs.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

from pysynth.decoding.ort_warmstart import WARMSTART_ONNX_FORMAT
from pysynth.models.span_model import DEFAULT_SPAN_MODEL, SPAN_FORMAT, SPAN_FORMAT_VERSION, SpanModel
from pysynth.store import format_of

__all__ = ["SpanModel", "QuestionGenerator", "LLMAnswers", "question_search", "SPAN_FORMAT", "SPAN_FORMAT_VERSION", "DEFAULT_SPAN_MODEL",
           "DEFAULT_QG_MODEL"]

PathLike = Union[str, "os.PathLike[str]"]
DEFAULT_QG_MODEL = "qagen-qg-copynet"


class QuestionGenerator:
    """Question generation ``(C, A) -> Q`` (Alberti et al. 2019, Sect. 3.2-3.3).

    Parameters
    ----------
    model : a registry name (default ``qagen-qg-copynet``), a pysynth seq2seq folder or training
        run (input: :func:`pysynth.qagen.data.qg_source`), an ONNX export folder of one, a
        warm-start export (:func:`pysynth.export.warmstart.export_warmstart_onnx`), or a local
        Hugging Face seq2seq folder (input ``"answer: A context: C"``, the usual T5 QG prompt), or an
        LLM spec (:func:`pysynth.llm.is_llm_spec`; prompt role ``qagen``).
    backend : ``onnx`` (the model's ``onnx/`` export on onnxruntime), ``torch``, or ``auto`` (onnx
        when an export exists).
    threads, device : runtime settings.
    llm : pysynth.llm.LLMOptions, optional
        An LLM's parameters, prompt template and client settings.
    """

    def __init__(self, model: Optional[PathLike] = None, backend: str = "auto", threads: int = 0,
                 device: str = "cpu", llm=None):
        from pysynth.llm import is_llm_spec
        from pysynth.models.registry import resolve
        from pysynth.models.text2text import is_onnx_export, text2text

        if backend not in ("auto", "onnx", "torch"):
            raise ValueError(f"backend: must be 'auto', 'onnx' or 'torch', got {backend!r}")
        if is_llm_spec(model):
            from pysynth.llm import open_role

            self.role = open_role(model, "qagen", llm, what="question model")
            self.name, self.kind, self.impl = str(model), "llm", self.role
            return
        export = isinstance(model, (str, os.PathLike)) and Path(model).is_dir() and is_onnx_export(model)
        if not export:
            r = resolve(model, default=DEFAULT_QG_MODEL, what="question model")
            if format_of(r.path) == "pysynth.qagen.encoder_qg":
                from pysynth.qagen.encoder_qg import EncoderQG

                self.name = r.name or str(r.path)
                self.kind, self.impl = "encoder", EncoderQG.load(r.path)
                if threads:
                    import torch

                    torch.set_num_threads(int(threads))
                return
            if format_of(r.path) == WARMSTART_ONNX_FORMAT:
                from pysynth.models.warmstart_qg import load_store

                self.name = r.name or str(r.path)
                self.kind, self.impl = "warmstart", load_store(r.path, backend if backend != "torch" else "onnx",
                                                              device=device, threads=threads)
                return
        #: the seq2seq model (:class:`pysynth.models.text2text.Text2Text`)
        self.model = text2text(model, backend, device=None if device == "cpu" else device, threads=threads,
                               default=DEFAULT_QG_MODEL, what="question model")
        self.name = self.model.name
        self.kind = "hf" if self.model.runtime == "hf" else "seq2seq"
        self.impl = getattr(self.model, "gen", self.model)

    def generate(self, contexts: Sequence[str], answers: Sequence[Dict[str, Any]], method: str = "greedy",
                 beam_size: int = 4, top_k: int = 10, seeds: Optional[Sequence[int]] = None,
                 batch_size: int = 32, no_repeat_ngram: int = 3, no_stutter: bool = True,
                 scores: bool = False) -> List[Any]:
        """One question per ``(context, answer)`` (answer = ``{"start", "end"}`` character offsets).

        ``method``: ``greedy`` (the paper's default), ``beam`` / ``dbs`` (diverse beam, 2 groups) of
        width ``beam_size`` (the best hypothesis is kept), or ``sample`` (top-``top_k``, one seed
        per input in ``seeds``); ``no_repeat_ngram``, ``no_stutter``: the search's degenerate-output
        guards (:func:`question_search`). An empty string means the model produced nothing.
        ``scores``: ``(question, log-probability)`` pairs instead (the search's score of a pysynth
        seq2seq or Hugging Face model; None for the other kinds).
        """
        if scores:
            return self._scored(contexts, answers, method, beam_size, top_k, seeds, batch_size, no_repeat_ngram,
                                no_stutter)
        from pysynth.qagen.data import qg_source

        if len(answers) != len(contexts):
            raise ValueError("answers: must hold one answer per context")
        if not contexts:
            return []
        if self.kind == "encoder":
            return self.impl.generate(list(contexts), list(answers), method=method, batch_size=batch_size)
        if self.kind == "llm":  # the LLM's own parameters (pysynth.llm.LLMParams) decide the decoding
            return [o.first() for o in self._ask(contexts, answers)]
        search = question_search(method, beam_size, top_k, no_repeat_ngram, no_stutter)
        if self.kind == "warmstart":  # the default guards: the decoding it was evaluated with
            gens = self.impl.questions(contexts, answers, search, seeds, batch_size)
            return self._cased([g.texts[0] if g.texts else "" for g in gens], contexts)
        if self.kind == "hf":
            srcs = [f"answer: {c[a['start']:a['end']]} context: {c}" for c, a in zip(contexts, answers)]
            if method == "greedy":  # a beam of one on Hugging Face models
                search = search.replace(decode="beam", beam=1)
            seeds = list(seeds) if seeds is not None else [0] * len(srcs)
        else:
            srcs = [qg_source(c, a["start"], a["end"]) for c, a in zip(contexts, answers)]
        res = self.model.generate(srcs, search, seeds=seeds, batch_size=batch_size)
        return self._cased([g.texts[0] if g.texts else "" for g in res], contexts)

    def _scored(self, contexts, answers, method, beam_size, top_k, seeds, batch_size, no_repeat_ngram, no_stutter):
        if self.kind not in ("seq2seq", "hf") or not len(contexts):
            return [(q, None) for q in self.generate(contexts, answers, method, beam_size, top_k, seeds, batch_size,
                                                     no_repeat_ngram, no_stutter)]
        srcs, search, seeds = self._sources(contexts, answers, question_search(method, beam_size, top_k,
                                                                                no_repeat_ngram, no_stutter), seeds)
        res = self.model.generate(srcs, search, seeds=seeds, batch_size=batch_size)
        return [(q, float(g.scores[0]) if g.texts else None)
                for q, g in zip(self._cased([g.texts[0] if g.texts else "" for g in res], contexts), res)]

    def _cased(self, questions: List[str], contexts: Sequence[str]) -> List[str]:
        """A lower-casing model's questions (the pysynth seq2seq and warm-start kinds) with the case and
        spacing their words have in the context (:func:`pysynth.models.postprocess.context_case`:
        "how many students are in the university of chicago ' s college?" -> "How many students are in
        the University of Chicago's College?"); other kinds write their own case."""
        if self.kind not in ("seq2seq", "warmstart"):
            return questions
        from pysynth.models.postprocess import context_case

        return [context_case(q, c) if q else q for q, c in zip(questions, contexts)]

    def _sources(self, contexts, answers, search, seeds):
        """The inputs, search and seeds of a pysynth seq2seq or Hugging Face model (as :meth:`generate`)."""
        from pysynth.qagen.data import qg_source

        if len(answers) != len(contexts):
            raise ValueError("answers: must hold one answer per context")
        if self.kind == "hf":
            srcs = [f"answer: {c[a['start']:a['end']]} context: {c}" for c, a in zip(contexts, answers)]
            if search.decode == "greedy":  # a beam of one on Hugging Face models
                search = search.replace(decode="beam", beam=1)
            return srcs, search, list(seeds) if seeds is not None else [0] * len(srcs)
        return [qg_source(c, a["start"], a["end"]) for c, a in zip(contexts, answers)], search, seeds

    def nbest(self, contexts: Sequence[str], answers: Sequence[Dict[str, Any]], beam_size: int = 4,
              batch_size: int = 32, scores: bool = False) -> List[List[Any]]:
        """Every hypothesis of a beam search of width ``beam_size`` per ``(context, answer)``, best
        first (the encoder-only generator decodes greedily: its one question). ``scores``:
        ``(question, log-probability)`` pairs instead (None where the kind has no scores)."""
        from pysynth.qagen.data import qg_source

        if scores and self.kind in ("seq2seq", "hf") and len(contexts):
            srcs, search, _ = self._sources(contexts, answers, question_search("beam", beam_size).replace(
                n=beam_size), None)
            return [list(zip(self._cased(list(g.texts), [c] * len(g.texts)), (float(x) for x in g.scores)))
                    for g, c in zip(self.model.generate(srcs, search, batch_size=batch_size), contexts)]
        if scores:
            return [[(q, None) for q in hyps] for hyps in self.nbest(contexts, answers, beam_size, batch_size)]

        if len(answers) != len(contexts):
            raise ValueError("answers: must hold one answer per context")
        if not contexts:
            return []
        if self.kind == "encoder":
            return [[q] for q in self.impl.generate(list(contexts), list(answers), batch_size=batch_size)]
        if self.kind == "llm":  # every sample's question (--samples)
            return [list(o.texts) for o in self._ask(contexts, answers)]
        search = question_search("beam", beam_size).replace(n=beam_size)
        if self.kind == "warmstart":
            gens = self.impl.questions(contexts, answers, search.replace(no_repeat_ngram=3), batch_size=batch_size)
            return [self._cased(list(g.texts), [c] * len(g.texts)) for g, c in zip(gens, contexts)]
        if self.kind == "hf":
            srcs = [f"answer: {c[a['start']:a['end']]} context: {c}" for c, a in zip(contexts, answers)]
        else:
            srcs = [qg_source(c, a["start"], a["end"]) for c, a in zip(contexts, answers)]
        return [self._cased(list(g.texts), [c] * len(g.texts))
                for g, c in zip(self.model.generate(srcs, search, batch_size=batch_size), contexts)]


    def _ask(self, contexts, answers):
        return self.role.ask([{"context": c, "answer": c[a["start"]:a["end"]]} for c, a in zip(contexts, answers)])


class LLMAnswers:
    """Answer proposal by an LLM (prompt role ``answers``), in the place of the span model's
    :meth:`~pysynth.models.span_model.SpanModel.extract`: each proposed answer found in its context
    (:func:`pysynth.llm.roles.locate`) is a candidate span, best first in the reply's order (score
    ``-rank``); one not in the context is dropped and counted in :attr:`counts` as
    ``rejected_llm_answer_not_in_context`` (a reply with none: ``rejected_llm_<reason>``).

    Parameters
    ----------
    model : an LLM spec.
    llm : pysynth.llm.LLMOptions, optional
    """

    def __init__(self, model, llm=None):
        from collections import Counter

        from pysynth.llm import open_role

        # --prompt is the question role's template: answer proposal keeps its default one
        self.role = open_role(model, "answers", llm.replace(prompt=None) if llm is not None else None,
                              what="answer model")
        self.name = str(model)
        self.counts: Counter = Counter()

    def extract(self, contexts: Sequence[str], k: int = 10, max_answer_len: int = 32, joint: bool = False
                ) -> List[List[Dict[str, Any]]]:
        from pysynth.llm.roles import locate

        out = []
        for c, o in zip(contexts, self.role.ask([{"context": c, "n": k} for c in contexts])):
            if o.reason:
                self.counts[f"rejected_{o.reason}"] += 1
            spans, seen = [], set()
            for a in o.texts:
                i = locate(c, a)
                if i is None:
                    self.counts["rejected_llm_answer_not_in_context"] += 1
                    continue
                text = c[i:i + len(a.strip())]
                if (i, text) in seen:
                    continue
                seen.add((i, text))
                spans.append({"text": text, "start": i, "end": i + len(text), "score": -float(len(spans))})
            out.append(spans[:k])
        return out

    def answer(self, *a, **kw):
        raise ValueError("qa model: an LLM proposes answers but does not answer for the roundtrip check; pass a "
                         "span model as --qa-model (default: the shipped qagen-span-minilm)")


def question_search(method: str = "greedy", beam_size: int = 4, top_k: int = 10, no_repeat_ngram: int = 3,
                    no_stutter: bool = True):
    """The :class:`pysynth.decoding.SearchConfig` of question decoding ``method``: ``greedy``,
    ``beam`` / ``dbs`` (diverse beam, 2 groups) of width ``beam_size``, or ``sample`` (top-``top_k``);
    one question (the best hypothesis) per input; the degenerate-output guards ``no_repeat_ngram``,
    ``no_stutter`` (on by default). ValueError naming ``method`` / ``beam_size`` / ``top_k``."""
    from pysynth.decoding.config import SearchConfig, renamed

    try:
        return SearchConfig(decode=method, beam=beam_size, groups=2 if method == "dbs" else 1, n=1, top_k=top_k,
                            no_repeat_ngram=no_repeat_ngram, no_stutter=no_stutter)
    except ValueError as exc:
        raise renamed(exc, {"decode": "method", "beam": "beam_size"}) from None

