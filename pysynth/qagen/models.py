"""The three roles of roundtrip QA generation (Alberti et al. 2019) behind one small interface.

* :class:`SpanModel` -- answer extraction ``C -> A`` (:meth:`SpanModel.extract`, Sect. 3.1, joint or
  independent span scores) and extractive QA ``(C, Q) -> A'`` (:meth:`SpanModel.answer`, with the
  SQuAD 2.0 no-answer score). Backends: a ``pysynth.spans.onnx`` store on onnxruntime (the shipped
  ``qagen-span-minilm``; no torch), a pysynth span-encoder folder (torch), or a local Hugging Face
  extractive-QA folder (``AutoModelForQuestionAnswering``; independent scores only).
* :class:`QuestionGenerator` -- question generation ``(C, A) -> Q`` (Sect. 3.2-3.3): a pysynth
  seq2seq model (the shipped ``qagen-qg-copynet``: CopyNet from the answer sentence with the answer
  marked, :func:`pysynth.qagen.data.qg_source`; ONNX or torch), the paper's encoder-only generator
  (:mod:`pysynth.qagen.encoder_qg`, Sect. 3.2), or a local Hugging Face seq2seq folder (input
  ``"answer: A context: C"``).

Every backend reads texts and returns texts / character spans, so the pipeline does not care
which one runs.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from pysynth.models.spans import _check_k_len
from pysynth.store import format_of

__all__ = ["SpanModel", "QuestionGenerator", "SPAN_FORMAT", "SPAN_FORMAT_VERSION", "DEFAULT_SPAN_MODEL",
           "DEFAULT_QG_MODEL"]

PathLike = Union[str, "os.PathLike[str]"]
SPAN_FORMAT, SPAN_FORMAT_VERSION = "pysynth.spans.onnx", 1
DEFAULT_SPAN_MODEL = "qagen-span-minilm"
DEFAULT_QG_MODEL = "qagen-qg-copynet"


class _OrtSpans:
    """``span_scores`` of an ONNX span encoder (``pysynth.spans.onnx`` store) on onnxruntime."""

    def __init__(self, path: Path, threads: int = 0, device: str = "cpu"):
        from pysynth import store
        from pysynth.decoding.ort import session

        st = store.load(path, SPAN_FORMAT, (SPAN_FORMAT_VERSION,))
        self.config = json.loads(st.read("config.json"))
        self.sess = session(st.read("model.onnx"), threads=threads, device=device, name=str(path / "model.onnx"))
        self.outputs = [o.name for o in self.sess.get_outputs()]
        st.read("vocab.txt")

    def span_scores(self, input_ids, attention_mask, token_type_ids=None, outputs=None) -> Dict[str, np.ndarray]:
        ids = np.asarray(input_ids, dtype=np.int64)
        feed = {"input_ids": ids, "attention_mask": np.asarray(attention_mask, dtype=np.int64),
                "token_type_ids": np.zeros_like(ids) if token_type_ids is None
                else np.asarray(token_type_ids, dtype=np.int64)}
        names = list(outputs) if outputs else self.outputs
        return dict(zip(names, self.sess.run(names, feed)))


def _tokenizer(vocab_file: Path, lower: bool = True):
    from pysynth.models.spans import wordpiece_tokenizer

    return wordpiece_tokenizer(vocab_file, lower)


class SpanModel:
    """Answer extraction and extractive QA with one span scorer.

    Parameters
    ----------
    model : a registry name (default ``qagen-span-minilm``), a ``pysynth.spans.onnx`` store, a
        pysynth span-encoder folder (:func:`pysynth.models.encoders.save_pretrained`) or a local
        Hugging Face extractive-QA folder.
    max_length, stride : window size and overlap in wordpieces; longer contexts are read in
        overlapping windows, never truncated.
    batch_size : contexts per scorer call.
    threads, device : onnxruntime / torch settings.
    """

    def __init__(self, model: Optional[PathLike] = None, max_length: int = 256, stride: int = 96,
                 batch_size: int = 16, threads: int = 0, device: str = "cpu"):
        for k, v in (("max_length", max_length), ("stride", stride), ("batch_size", batch_size)):
            if isinstance(v, bool) or not isinstance(v, int) or v < (0 if k == "stride" else 1):
                raise ValueError(f"{k}: must be a positive integer, got {v!r}")
        if stride >= max_length - 64:
            raise ValueError(f"stride: must be below max_length - 64 = {max_length - 64} (room for a question), "
                             f"got {stride}")
        from pysynth.models.hf import is_hf_dir
        from pysynth.models.registry import resolve

        r = resolve(model, default=DEFAULT_SPAN_MODEL, what="span model")
        self.name, self.path = r.name or str(r.path), Path(r.path)
        kind = format_of(self.path)
        self.joint = False
        if kind == SPAN_FORMAT:
            self.backend = "onnx"
            self.scorer = _OrtSpans(self.path, threads, device)
            self.joint = bool(self.scorer.config.get("joint", False))
            self.tokenizer = _tokenizer(self.path / "vocab.txt", bool(self.scorer.config.get("do_lower_case", True)))
        elif kind == "pysynth.model":
            from pysynth.models import encoders

            self.backend = "torch"
            self.scorer, self.tokenizer = encoders.load(self.path, None if device == "cpu" else device)
            if type(self.scorer).__name__ != "SpanEncoder":
                raise ValueError(f"model: {str(self.path)!r} is a {type(self.scorer).__name__}, not a span encoder")
            self.joint = bool(self.scorer.config.joint)
        elif is_hf_dir(self.path):
            from pysynth.models.hf import HFSpanModel

            self.backend = "hf"
            self.scorer = HFSpanModel(self.path, device=None if device == "cpu" else device)
            self.tokenizer = self.scorer.tokenizer
        else:
            raise ValueError(f"model: {str(self.path)!r} is not a span model (a pysynth.spans.onnx store, a pysynth "
                             "span-encoder folder or a Hugging Face extractive-QA folder)")
        if threads and self.backend != "onnx":
            import torch

            torch.set_num_threads(int(threads))
        self.max_length, self.stride, self.batch_size = max_length, stride, batch_size

    def extract(self, contexts: Sequence[str], k: int = 10, max_answer_len: int = 32,
                joint: Optional[bool] = None) -> List[List[Dict[str, Any]]]:
        """The top ``k`` distinct answer spans of each context (``p(a | c)``, Sect. 3.1).

        ``joint`` (default: the model's joint head when it has one) ranks spans by
        ``f_J(s, e) = MLP([h_s; h_e])``, else by independent ``start + end`` scores; spans of at
        most ``max_answer_len`` wordpieces (``L_A = 32``). Returns per context dicts ``{"text",
        "start", "end", "score"}`` best first (``score`` is the span's logit).
        """
        _check_k_len(k, max_answer_len)
        if joint is None:
            joint = self.joint
        if joint and not self.joint:
            raise ValueError(f"joint: the model {self.name!r} has no joint span head; use joint=False")
        out = self._spans(list(contexts), None, k, max_answer_len, bool(joint))
        for spans in out:
            for s in spans:
                s.pop("null_score", None)
        return out

    def answer(self, contexts: Sequence[str], questions: Sequence[str], max_answer_len: int = 30
               ) -> List[Dict[str, Any]]:
        """The best answer of each ``(context, question)`` (``p(a | c, q)``, independent start/end
        scores) with the no-answer score: ``{"text", "start", "end", "score", "null_score"}``;
        ``score - null_score`` is the SQuAD 2.0 answerability margin (no span at all: text None)."""
        if isinstance(questions, str) or len(questions) != len(contexts):
            raise ValueError("questions: must be a sequence with one question per context")
        res = self._spans(list(contexts), list(questions), 1, max_answer_len, False)
        return [r[0] if r else {"text": None, "start": -1, "end": -1, "score": float("-inf"),
                                "null_score": float("inf")} for r in res]


    def _spans(self, contexts: List[str], questions: Optional[List[str]], k: int, max_answer_len: int,
               joint: bool) -> List[List[Dict[str, Any]]]:
        """:func:`predict_spans` over inputs sorted by length (batches of similar length carry
        little padding: 1.6 s -> 1.3 s for 64 SQuAD paragraphs' QA here), results in input order;
        onnxruntime computes the joint head's [T, 32] span table only when ``joint``."""
        from pysynth.models.spans import predict_spans

        order = sorted(range(len(contexts)), key=lambda i: len(contexts[i]) + (len(questions[i]) if questions else 0))
        scorer = self.scorer if joint or self.backend != "onnx" else _Fetch(self.scorer, _NO_JOINT)
        res = predict_spans(scorer, self.tokenizer, [contexts[i] for i in order],
                            [questions[i] for i in order] if questions is not None else None, k, max_answer_len,
                            self.max_length, self.stride, joint, self.batch_size)
        out: List[List[Dict[str, Any]]] = [[] for _ in contexts]
        for i, r in zip(order, res):
            out[i] = r
        return out


_NO_JOINT = ("start_logits", "end_logits", "null_score")


class _Fetch:
    """An ONNX span scorer asked for some outputs only (onnxruntime runs just the nodes they need)."""

    def __init__(self, scorer: "_OrtSpans", names):
        self.scorer, self.names = scorer, list(names)

    def span_scores(self, input_ids, attention_mask, token_type_ids=None) -> Dict[str, np.ndarray]:
        return self.scorer.span_scores(input_ids, attention_mask, token_type_ids, self.names)


class QuestionGenerator:
    """Question generation ``(C, A) -> Q`` (Alberti et al. 2019, Sect. 3.2-3.3).

    Parameters
    ----------
    model : a registry name (default ``qagen-qg-copynet``), a pysynth seq2seq folder or training
        run (input: :func:`pysynth.qagen.data.qg_source`), an ONNX export folder of one, or a local
        Hugging Face seq2seq folder (input ``"answer: A context: C"``, the usual T5 QG prompt).
    backend : ``onnx`` (the model's ``onnx/`` export on onnxruntime), ``torch``, or ``auto`` (onnx
        when an export exists).
    threads, device : runtime settings.
    """

    def __init__(self, model: Optional[PathLike] = None, backend: str = "auto", threads: int = 0,
                 device: str = "cpu"):
        from pysynth.models.generate import Generator
        from pysynth.models.registry import resolve
        from pysynth.paraphrase.pipeline import HFTranslator, _is_onnx_export

        if backend not in ("auto", "onnx", "torch"):
            raise ValueError(f"backend: must be 'auto', 'onnx' or 'torch', got {backend!r}")
        if model is not None and isinstance(model, (str, os.PathLike)) and Path(model).is_dir() \
                and _is_onnx_export(model):
            self.name, self.kind = str(model), "seq2seq"
            self.impl = Generator.from_onnx(model, device=device, threads=threads)
            return
        r = resolve(model, default=DEFAULT_QG_MODEL, what="question model")
        self.name = r.name or str(r.path)
        if r.kind == "hf":
            self.kind = "hf"
            self.impl = HFTranslator(r.path, device=None if device == "cpu" else device)
            return
        if format_of(r.path) == "pysynth.qagen.encoder_qg":
            from pysynth.qagen.encoder_qg import EncoderQG

            self.kind, self.impl = "encoder", EncoderQG.load(r.path)
            if threads:
                import torch

                torch.set_num_threads(int(threads))
            return
        self.kind = "seq2seq"
        if backend == "auto":
            d = Path(r.path)
            backend = "onnx" if (d / "onnx").is_dir() or (d.name == "model" and (d.parent / "onnx").is_dir()) \
                or _is_onnx_export(d) else "torch"
        self.impl = Generator.load(r.path, backend=backend, device=None if device == "cpu" else device,
                                   threads=threads)

    def generate(self, contexts: Sequence[str], answers: Sequence[Dict[str, Any]], method: str = "greedy",
                 beam_size: int = 4, top_k: int = 10, seeds: Optional[Sequence[int]] = None,
                 batch_size: int = 32) -> List[str]:
        """One question per ``(context, answer)`` (answer = ``{"start", "end"}`` character offsets).

        ``method``: ``greedy`` (the paper's default), ``beam`` / ``dbs`` (diverse beam, 2 groups) of
        width ``beam_size`` (the best hypothesis is kept), or ``sample`` (top-``top_k``, one seed
        per input in ``seeds``). An empty string means the model produced nothing.
        """
        from pysynth.qagen.data import qg_source

        if len(answers) != len(contexts):
            raise ValueError("answers: must hold one answer per context")
        if not contexts:
            return []
        if self.kind == "encoder":
            return self.impl.generate(list(contexts), list(answers), method=method, batch_size=batch_size)
        if self.kind == "hf":
            from pysynth.paraphrase.pipeline import ParaphraseConfig

            srcs = [f"answer: {c[a['start']:a['end']]} context: {c}" for c, a in zip(contexts, answers)]
            decode = {"greedy": "beam", "beam": "beam", "dbs": "dbs", "sample": "sample"}[method]
            beams = 1 if method in ("greedy", "sample") else beam_size
            cfg = ParaphraseConfig(decode=decode, beams=beams, groups=2 if method == "dbs" else 1, top_k=top_k,
                                   batch_size=batch_size)
            res = self.impl.translate(srcs, cfg, list(seeds) if seeds is not None else [0] * len(srcs))
            return [h[0][0] if h else "" for h in res]
        srcs = [qg_source(c, a["start"], a["end"]) for c, a in zip(contexts, answers)]
        kw: Dict[str, Any] = {"method": {"dbs": "diverse"}.get(method, method), "n": 1, "batch_size": batch_size}
        if method in ("beam", "dbs"):
            kw["beam"] = beam_size
            if method == "dbs":
                kw["groups"] = 2
        elif method == "sample":
            kw.update(beam=1, top_k=top_k, seeds=list(seeds) if seeds is not None else None)
        else:
            kw["beam"] = 1
        return [g.texts[0] if g.texts else "" for g in self.impl.generate(srcs, **kw)]

