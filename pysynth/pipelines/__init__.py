"""One runner, two executors: resumable, chunked, atomic, signed pipelines (platform issue #11).

A method is a :class:`Stage` (``prepare`` once -> pure ``run_chunk`` per range -> ``finish``);
:func:`run` owns fingerprint checks, resume-or-refuse, atomic part files, progress, the merge;
an executor (:class:`LocalExecutor`, :class:`RayExecutor`) decides where chunks run.  Output
bytes do not depend on the executor, the chunk size, the worker count or interruptions.
K2Q (:func:`pysynth.k2q.synthesize.synthesize`, Ding & Balog 2018) is the first stage; the
methods whose items are rows (qagen, paraphrase, dup pairs, mqr rewrite) share one row stage,
:class:`RowStage` / :class:`RowKernel` (:mod:`pysynth.pipelines.rowstage`), which also applies
their row filters (``--min-wellformed``: :class:`ScoreFilter`) in one place.

``import pysynth.pipelines`` imports neither Ray nor tqdm (both load when used).

A new method in a few lines (the kernel carries the configuration only: it is pickled to Ray
actors, which memory-map the context from the run directory)::

    class Kernel(pipelines.Kernel):
        def open(self, context):                      # once per worker
            return store.load(context / "x", "my.format", (1,), mmap=True).arrays
        def run_chunk(self, ctx, start, stop, workers=1):
            return {"y": ctx["x"][start:stop] * 2}    # pure: config + context + range

    class Stage(pipelines.Stage):
        name, kernel = "double", Kernel()
        def signature(self):                          # identity of the run (resume-or-refuse)
            return signature.signature("my.format", 1, {}, {"sha256": ...})
        def prepare(self, context, workers, log):     # once per run; returns the item count
            store.save(context / "x", "my.format", 1, arrays={"x": self.x})
            return len(self.x)
        def finish(self, context, parts, info):       # parts in chunk order
            io.write_jsonl(self.out, ({"y": float(v)} for p in parts for v in p["y"]))

    pipelines.run(Stage(), out, executor=pipelines.make_executor("ray"), chunk_size=10_000)
"""
from pysynth.pipelines.executors import (
                                         LocalExecutor,
                                         RayExecutor,
                                         add_executor_arguments,
                                         executor_from_args,
                                         make_executor,
)
from pysynth.pipelines.rowstage import Chunk, PairScoreFilter, RowKernel, RowStage, ScoreFilter, meta_path
from pysynth.pipelines.runner import CONTEXT, STATE, Kernel, RunInfo, Stage, parts_dir, run

__all__ = ["Stage", "Kernel", "RunInfo", "run", "parts_dir", "LocalExecutor", "RayExecutor",
           "make_executor", "add_executor_arguments", "executor_from_args", "STATE", "CONTEXT",
           "RowStage", "RowKernel", "Chunk", "ScoreFilter", "PairScoreFilter", "meta_path"]
