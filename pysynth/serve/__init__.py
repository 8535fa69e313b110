"""``pysynth serve``: the models on onnxruntime over HTTP, with dynamic batching.

:func:`create_app` builds the ASGI application (FastAPI) from a :class:`ServeConfig`;
``pysynth serve`` runs it on uvicorn. Each endpoint is a method's served adapter
(``pysynth/<method>/served.py``, :class:`pysynth.pipelines.served.Adapter`), listed in
:data:`.models.ADAPTERS`; :mod:`.schemas` turns its dataclasses into validated models,
:mod:`.batching` groups concurrent requests into one model call, :mod:`.models` loads the
adapters (ONNX exports, never torch), :mod:`.prom` writes the Prometheus metrics. Needs the
``[serve]`` extra (``pip install '.[serve]'``).
"""
from pysynth.serve.app import ServeConfig, create_app

__all__ = ["ServeConfig", "create_app"]
