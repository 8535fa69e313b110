"""What the server runs: models on onnxruntime behind a :class:`~pysynth.serve.batching.Batcher`.

Never imports torch: generators decode with :class:`pysynth.decoding.ort.OrtBackend` (the
``onnx/`` export beside a model directory), search collections are
:class:`pysynth.retrieval.collection.Collection` stores.
"""
from __future__ import annotations

import logging
import warnings
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, Hashable, List, NamedTuple, Optional, Sequence

from pysynth.serve.batching import Batcher

__all__ = ["DecodeKey", "GeneratorModel", "ClassifierModel", "ParaphraseModel", "QAGenModel", "SearchCollection", "TASKS",
           "parse_model_spec"]

log = logging.getLogger("pysynth.serve")

#: endpoint (task) -> the shipped model it serves when ``--model`` names none for it
TASKS: Dict[str, Optional[str]] = {"k2q": "k2q-copynet-small", "rewrite": "mqr-copynet-small",
                                   "wellformed": "wellformed-minilm", "paraphrase": "fr",
                                   "qagen": "qagen-span-minilm,qagen-qg-copynet"}


def parse_model_spec(spec: str) -> tuple:
    """``[TASK=]NAME|DIR`` -> ``(task, model)``; without ``TASK=``, the task whose shipped model
    ``NAME`` is, else ``k2q``. ValueError for an unknown task."""
    task, sep, model = spec.partition("=")
    if not sep:
        task, model = next((t for t, m in TASKS.items() if m == spec), "k2q"), spec
    if task not in TASKS:
        raise ValueError(f"--model {spec!r}: unknown task {task!r}; tasks with models: {', '.join(sorted(TASKS))}")
    if not model:
        raise ValueError(f"--model {spec!r}: no model after {task}=")
    return task, model


def _cuda_or_cpu(device: str, task: str) -> str:
    """``device``, or ``"cpu"`` with a warning when ``"cuda"`` is asked for and onnxruntime has no
    CUDA provider (onnxruntime-gpu not installed)."""
    from pysynth.decoding.ort import choose_providers

    if device == "cuda":
        try:
            choose_providers("cuda")
        except ValueError as exc:
            warnings.warn(f"{exc}; serving {task} on the CPU", RuntimeWarning, stacklevel=3)
            return "cpu"
    return device


class DecodeKey(NamedTuple):
    """The decoding settings requests must share to be decoded in one search."""

    method: str
    n: int
    beam: int
    groups: int
    diversity: float
    max_len: Optional[int]


def _onnx_generator(task: str, model: str, device: str, threads: int):
    """``(Generator on onnxruntime, display name)`` for ``model`` (a name or directory) of ``task``;
    CUDA falls back to the CPU with a warning when onnxruntime has no CUDA provider."""
    from pysynth.models.generate import Generator
    from pysynth.models.registry import resolve

    r = resolve(model, what=f"--model {task}")
    if r.kind != "pysynth":
        raise ValueError(f"--model {task}: {r.path} is a Hugging Face directory; the server runs pysynth "
                         "models with an ONNX export (pysynth export onnx)")
    device = _cuda_or_cpu(device, task)
    gen = Generator.load(str(r.path), backend="onnx", device=device, threads=threads)
    used = gen.backend.providers[0]
    if device == "cuda" and used != "CUDAExecutionProvider":
        warnings.warn(f"{task}: onnxruntime runs on {used}, not CUDA", RuntimeWarning, stacklevel=3)
    return gen, r.name or str(r.path)


@dataclass
class GeneratorModel:
    """A seq2seq model on onnxruntime (:class:`pysynth.models.generate.Generator`) and its batcher."""

    task: str
    name: str
    generator: Any
    batcher: Batcher
    providers: List[str]

    @classmethod
    def load(cls, task: str, model: Optional[str], *, device: str = "cpu", threads: int = 0, max_batch: int = 32,
             max_wait_ms: float = 2.0, max_queue: int = 1024) -> "GeneratorModel":
        """Load ``model`` (a name or directory; None: the task's shipped default) on onnxruntime.

        ``device="cuda"`` without onnxruntime's CUDA provider falls back to the CPU with a
        warning; the providers the session really uses are kept in :attr:`providers`.
        """
        gen, name = _onnx_generator(task, model or TASKS[task], device, threads)
        self = cls(task, name, gen, None, list(gen.backend.providers))  # type: ignore[arg-type]
        self.batcher = Batcher(task, self._run, max_batch=max_batch, max_wait_ms=max_wait_ms, max_queue=max_queue)
        return self

    def check(self, texts: Sequence[str], argname: str) -> None:
        """ValueError naming ``argname[i]`` for an input the model cannot take (checked per
        request, before batching, so one bad input never reaches a shared batch)."""
        from pysynth.models.generate import prepare_sources

        prepare_sources(list(texts), self.generator.vocab, self.generator.max_src_len, argname)

    def _run(self, key: Hashable, texts: List[str]) -> List[Any]:
        k: DecodeKey = key  # type: ignore[assignment]
        return self.generator.generate(texts, method=k.method, n=k.n, beam=k.beam, groups=k.groups,
                                       diversity=k.diversity, max_len=k.max_len,
                                       batch_size=max(1, len(texts)))

    def warmup(self) -> None:
        """One decode, so that the first request does not pay onnxruntime's first-run costs."""
        word = next(w for w in self.generator.vocab.itos if w.isalpha())
        self.generator.generate([word], method="greedy", beam=1, n=1)
        self.generator.generate([word], method="diverse", beam=4, groups=4, n=4)


@dataclass
class ClassifierModel:
    """The well-formedness classifier (:class:`pysynth.quality.WellformednessModel`) and its batcher."""

    task: str
    name: str
    model: Any
    batcher: Batcher
    providers: List[str]

    @classmethod
    def load(cls, task: str, model: Optional[str], *, device: str = "cpu", threads: int = 0, max_batch: int = 32,
             max_wait_ms: float = 2.0, max_queue: int = 1024) -> "ClassifierModel":
        from pysynth.quality import WellformednessModel

        device = _cuda_or_cpu(device, task)
        m = WellformednessModel(model, threads=threads, device=device)
        self = cls(task, m.name, m, None, list(m.providers))  # type: ignore[arg-type]
        # the batch is one onnxruntime call: 4x the generators' inputs cost about as much
        self.batcher = Batcher(task, self._run, max_batch=max_batch * 4, max_wait_ms=max_wait_ms,
                               max_queue=max_queue * 4)
        return self

    def _run(self, key: Hashable, texts: List[str]) -> List[Any]:
        return self.model(texts, batch_size=max(1, len(texts))).tolist()

    def warmup(self) -> None:
        self.model(["what is a warm-up?"])


@dataclass
class ParaphraseModel:
    """The pivot paraphraser (:class:`pysynth.paraphrase.pipeline.Paraphraser`): two pysynth models
    on onnxruntime (``fr``, the default, or ``FWD,BWD``) and its batcher."""

    task: str
    name: str
    paraphraser: Any
    batcher: Batcher
    providers: List[str]

    @classmethod
    def load(cls, task: str, model: Optional[str], *, device: str = "cpu", threads: int = 0, max_batch: int = 32,
             max_wait_ms: float = 2.0, max_queue: int = 1024) -> "ParaphraseModel":
        from pysynth.paraphrase.pipeline import ModelTranslator, ParaphraseConfig, Paraphraser

        spec = model or TASKS[task]
        if spec == "keywords":
            raise ValueError("--model paraphrase=keywords: the keyword pivot samples from collection statistics "
                             "of a whole input file; use `pysynth paraphrase --pivot keywords`")
        cfg = ParaphraseConfig(pivot=spec, threads=threads)
        (fwd, fname), (bwd, bname) = (_onnx_generator(task, m, device, threads) for m in cfg.models)
        p = Paraphraser(cfg, forward=ModelTranslator.wrap(fwd, fname), backward=ModelTranslator.wrap(bwd, bname))
        self = cls(task, spec, p, None, list(fwd.backend.providers))  # type: ignore[arg-type]
        self.batcher = Batcher(task, self._run, max_batch=max_batch, max_wait_ms=max_wait_ms, max_queue=max_queue)
        return self

    def check(self, texts: Sequence[str], argname: str) -> None:
        for i, t in enumerate(texts):
            why = self.paraphraser.forward.valid(t)
            if why:
                raise ValueError(f"{argname}[{i}]: {why}")

    def _run(self, key: Hashable, texts: List[str]) -> List[Any]:
        return self.paraphraser.run(texts, config=self.paraphraser.cfg.replace(**dict(key)))  # type: ignore[arg-type]

    def warmup(self) -> None:
        self.paraphraser.run(["what is a warm-up?"], config=self.paraphraser.cfg.replace(beams=4, groups=2))


@dataclass
class QAGenModel:
    """Roundtrip QA generation (:class:`pysynth.qagen.pipeline.QAGenerator`): a span model
    (``pysynth.spans.onnx``: answer extraction and QA) and a question generator's ONNX export,
    ``SPAN,QG`` (default: the shipped pair), and its batcher (inputs: contexts)."""

    task: str
    name: str
    generator: Any
    batcher: Batcher
    providers: List[str]

    @classmethod
    def load(cls, task: str, model: Optional[str], *, device: str = "cpu", threads: int = 0, max_batch: int = 32,
             max_wait_ms: float = 2.0, max_queue: int = 1024) -> "QAGenModel":
        from pysynth.qagen.models import QuestionGenerator, SpanModel
        from pysynth.qagen.pipeline import QAGenerator

        spec = model or TASKS[task]
        parts = spec.split(",")
        if len(parts) != 2 or not all(parts):
            raise ValueError(f"--model {task}={spec}: expected SPAN,QG (a span model and a question generator)")
        device = _cuda_or_cpu(device, task)
        span = SpanModel(parts[0], threads=threads, device=device)
        if span.backend != "onnx":
            raise ValueError(f"--model {task}: {parts[0]} is not an ONNX span model (pysynth.spans.onnx store); "
                             "the server runs onnxruntime only")
        qg = QuestionGenerator(parts[1], backend="onnx", threads=threads, device=device)
        if qg.kind != "seq2seq":
            raise ValueError(f"--model {task}: {parts[1]} is not a pysynth seq2seq model with an ONNX export")
        self = cls(task, spec, QAGenerator(None, span, qg), None,  # type: ignore[arg-type]
                   list(span.scorer.sess.get_providers()))
        self.batcher = Batcher(task, self._run, max_batch=max_batch, max_wait_ms=max_wait_ms, max_queue=max_queue)
        return self

    def _run(self, key: Hashable, texts: List[Any]) -> List[Any]:
        from pysynth.qagen.data import Context
        from pysynth.qagen.pipeline import QAGenConfig, QAGenerator

        # one config per key (requests with other settings are other batches), over the loaded
        # models; every context is drawn for as index 0, so its answer does not depend on its batch
        g = self.generator
        run = QAGenerator(QAGenConfig(**dict(key), neg_fraction=0.0), g.span, g.qg, g.qa)  # type: ignore[arg-type]
        return run.run([Context(str(i), "", t) for i, t in enumerate(texts)], indices=[0] * len(texts))

    def warmup(self) -> None:
        self._run((), ["Oxygen was discovered by Carl Wilhelm Scheele in 1773."])


@dataclass
class SearchCollection:
    """What ``POST /v1/duplicates`` searches: a :class:`pysynth.retrieval.collection.Collection`
    (``bm25``, ``sdm``) or a duplicate index of ``pysynth dup index``
    (:class:`pysynth.dup.search.DupIndex`: ``dense``, ``hybrid``, and ``bm25``/``sdm`` over its rows)."""

    path: str
    collection: Any
    batcher: Batcher
    dup: Any = None

    @classmethod
    def load(cls, path: str, *, max_batch: int = 32, max_wait_ms: float = 2.0,
             max_queue: int = 1024) -> "SearchCollection":
        from pysynth import store
        from pysynth.dup import search as dup_search
        from pysynth.retrieval.collection import Collection

        if store.format_of(Path(path) / "docs") == dup_search.FORMAT:
            dup = dup_search.DupIndex.load(path)
            if not dup_search.is_detector(dup.model):
                # the serving path never imports torch: only onnxruntime detectors encode here
                raise ValueError(f"collection: {path} was indexed with the encoder {dup.model!r}, which runs "
                                 f"on torch; rebuild it with `pysynth dup index --model "
                                 f"{dup_search.DEFAULT_DETECTOR}` (onnxruntime) to serve it")
            self = cls(str(path), None, None, dup)  # type: ignore[arg-type]
        else:
            self = cls(str(path), Collection.load(path), None)  # type: ignore[arg-type]
        self.batcher = Batcher("duplicates", self._run, max_batch=max_batch, max_wait_ms=max_wait_ms,
                               max_queue=max_queue)
        return self

    @property
    def models(self) -> tuple:
        return ("bm25", "sdm", "dense", "hybrid") if self.dup is not None else ("bm25", "sdm")

    def _run(self, key: Hashable, texts: List[str]) -> List[Any]:
        model, k = key  # type: ignore[misc]
        if self.dup is None:
            res = self.collection.search(texts, model=model, k=k)
            return list(zip(res.ids, res.scores))
        docs = self.dup.docs
        if model in ("dense", "hybrid"):
            ranked = self.dup.ranked(texts, k=k, hybrid=model == "hybrid")
        else:
            res = self.dup.sparse.search_docs(texts, model=model, k=min(k, len(docs)))
            ranked = [list(zip(res.docs[i, :int(res.counts[i])].tolist(), res.scores[i, :int(res.counts[i])].tolist()))
                      for i in range(len(texts))]
        return [([docs[j]["id"] for j, _ in r], [float(s) for _, s in r]) for r in ranked]
