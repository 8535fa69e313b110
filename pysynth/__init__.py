"""pysynth: fast, exact toolkit for synthetic question data.

Generating, filtering, rewriting and evaluating question data at scale. Hot paths are
compiled (C++17 via pybind11); every compiled function has a pure-Python twin that is
its specification (``PYSYNTH_IMPL=auto|cpp|python``, see :func:`show_config`).

``import pysynth`` stays light: numpy only; torch/triton load when a model or kernel is used.
"""
from pysynth._dispatch import show_config

__version__ = "0.1.0"
__all__ = ["show_config", "metrics", "ranking", "text", "sampling", "__version__"]


#: subpackages reachable as attributes (``pysynth.quality.wellformedness(...)``), each imported on
#: first use so that ``import pysynth`` stays cheap
_LAZY = ("metrics", "ranking", "text", "sampling", "retrieval", "filtering", "io", "store", "signature",
         "pipelines", "errors", "models", "decoding", "export", "quality", "datasets", "data",
         "k2q", "qagen", "paraphrase", "mqr", "dup", "serve", "cli")


def __getattr__(name):
    if name in _LAZY:
        import importlib

        return importlib.import_module(f"pysynth.{name}")
    raise AttributeError(f"module 'pysynth' has no attribute {name!r}")


def __dir__():
    return sorted(set(globals()) | set(_LAZY))
