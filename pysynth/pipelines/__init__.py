"""One runner, two executors: resumable, chunked, atomic, signed pipelines (platform issue #11).

A method is a :class:`Stage` (``prepare`` once -> pure ``run_chunk`` per range -> ``finish``);
:func:`run` owns fingerprint checks, resume-or-refuse, atomic part files, progress, the merge;
an executor (:class:`LocalExecutor`, :class:`RayExecutor`) decides where chunks run.  Output
bytes do not depend on the executor, the chunk size, the worker count or interruptions.
K2Q (:func:`pysynth.k2q.synthesize.synthesize`, Ding & Balog 2018) is the first stage.

``import pysynth.pipelines`` imports neither Ray nor tqdm (both load when used).
"""
from pysynth.pipelines.executors import (LocalExecutor, RayExecutor, add_executor_arguments,
                                         executor_from_args, make_executor)
from pysynth.pipelines.runner import CONTEXT, STATE, Kernel, RunInfo, Stage, parts_dir, run

__all__ = ["Stage", "Kernel", "RunInfo", "run", "parts_dir", "LocalExecutor", "RayExecutor",
           "make_executor", "add_executor_arguments", "executor_from_args", "STATE", "CONTEXT"]
