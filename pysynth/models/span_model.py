"""Span models: answer extraction and extractive QA over one span scorer (Alberti et al. 2019).

:class:`SpanModel` -- answer extraction ``C -> A`` (:meth:`SpanModel.extract`, Sect. 3.1, joint or
independent span scores) and extractive QA ``(C, Q) -> A'`` (:meth:`SpanModel.answer`, with the
SQuAD 2.0 no-answer score). Backends: a ``pysynth.spans.onnx`` store on onnxruntime (the shipped
``qagen-span-minilm``; no torch), a pysynth span-encoder folder (torch), or a local Hugging Face
extractive-QA folder (``AutoModelForQuestionAnswering``; independent scores only).

Lived in ``pysynth.qagen.models`` before issue 25 (still importable from there).
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Union

import numpy as np

from pysynth.models.spans import WINDOW_TOKENS, check_k_len
from pysynth.store import format_of

__all__ = ["SpanModel", "SPAN_FORMAT", "SPAN_FORMAT_VERSION", "DEFAULT_SPAN_MODEL"]

PathLike = Union[str, "os.PathLike[str]"]
#: store format of an exported span model (:mod:`pysynth.store`)
SPAN_FORMAT, SPAN_FORMAT_VERSION = "pysynth.spans.onnx", 1
DEFAULT_SPAN_MODEL = "qagen-span-minilm"


class _OrtSpans:
    """``span_scores`` of an ONNX span encoder (``pysynth.spans.onnx`` store) on onnxruntime."""

    def __init__(self, path: Path, threads: int = 0, device: str = "cpu", activations: str = "float"):
        from pysynth import store
        from pysynth.decoding.ort import int8_activations, session

        st = store.load(path, SPAN_FORMAT, (SPAN_FORMAT_VERSION,))
        self.config = json.loads(st.read("config.json"))
        graph = st.read("model.onnx")
        self.sess = session(int8_activations(graph) if activations == "int8" else graph, threads=threads,
                            device=device, name=str(path / "model.onnx"))
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
    batch_size : contexts per tokenizer call.
    threads, device : onnxruntime / torch settings.
    max_tokens : tokens per scorer call (windows x padded length, at least one window): bounds
        peak memory whatever the contexts' length (:func:`pysynth.models.spans.predict_spans`).
    activations : ``"float"`` (default) or ``"int8"``: for a ``pysynth.spans.onnx`` store, int8
        activations too (:func:`pysynth.decoding.ort.int8_activations`; faster, but scores move
        with the batch and some spans change: ``bench/RESULTS_qagen.md``). Opt-in.
    """

    def __init__(self, model: Optional[PathLike] = None, max_length: int = 256, stride: int = 96,
                 batch_size: int = 16, threads: int = 0, device: str = "cpu", max_tokens: int = WINDOW_TOKENS,
                 activations: str = "float"):
        for k, v in (("max_length", max_length), ("stride", stride), ("batch_size", batch_size),
                     ("max_tokens", max_tokens)):
            if isinstance(v, bool) or not isinstance(v, int) or v < (0 if k == "stride" else 1):
                raise ValueError(f"{k}: must be a positive integer, got {v!r}")
        if stride >= max_length - 64:
            raise ValueError(f"stride: must be below max_length - 64 = {max_length - 64} (room for a question), "
                             f"got {stride}")
        if activations not in ("float", "int8"):
            raise ValueError(f"activations: must be 'float' or 'int8', got {activations!r}")
        from pysynth.models.hf import is_hf_dir
        from pysynth.models.registry import resolve

        r = resolve(model, default=DEFAULT_SPAN_MODEL, what="span model")
        self.name, self.path = r.name or str(r.path), Path(r.path)
        kind = format_of(self.path)
        self.joint = False
        if kind == SPAN_FORMAT:
            self.backend = "onnx"
            self.scorer = _OrtSpans(self.path, threads, device, activations)
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
        if activations != "float" and self.backend != "onnx":
            raise ValueError(f"activations: 'int8' needs a pysynth.spans.onnx store, got a {self.backend} model")
        if threads and self.backend != "onnx":
            import torch

            torch.set_num_threads(int(threads))
        self.max_length, self.stride, self.batch_size, self.max_tokens = max_length, stride, batch_size, max_tokens

    def extract(self, contexts: Sequence[str], k: int = 10, max_answer_len: int = 32,
                joint: Optional[bool] = None) -> List[List[Dict[str, Any]]]:
        """The top ``k`` distinct answer spans of each context (``p(a | c)``, Sect. 3.1).

        ``joint`` (default: the model's joint head when it has one) ranks spans by
        ``f_J(s, e) = MLP([h_s; h_e])``, else by independent ``start + end`` scores; spans of at
        most ``max_answer_len`` wordpieces (``L_A = 32``). Returns per context dicts ``{"text",
        "start", "end", "score"}`` best first (``score`` is the span's logit).
        """
        check_k_len(k, max_answer_len)
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
                            self.max_length, self.stride, joint, self.batch_size, self.max_tokens)
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
