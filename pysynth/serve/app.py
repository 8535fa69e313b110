"""The ASGI application of ``pysynth serve`` (FastAPI on uvicorn; no torch anywhere on this path).

Endpoints (JSON in and out; the schema is at ``/openapi.json``, a browsable one at ``/docs``):

* ``POST /v1/k2q`` — questions for keyword queries (Ding & Balog 2018), greedy / beam / diverse
  beam search on the shipped CopyNet (or ``--model``);
* ``POST /v1/score`` — corpus BLEU / ROUGE (:func:`pysynth.metrics.score_corpus`);
* ``POST /v1/rewrite`` — ill-formed questions rewritten into well-formed ones (MQR, :mod:`pysynth.mqr`);
* ``POST /v1/wellformed`` — the well-formedness probability of each text (:mod:`pysynth.quality`);
* ``POST /v1/paraphrase`` — paraphrases by pivoting through English->French->English with diverse
  beam search (Granstedt 2017, :mod:`pysynth.paraphrase`);
* ``POST /v1/qagen`` — roundtrip-consistent (context, question, answer) triples (Alberti et al. 2019,
  :mod:`pysynth.qagen`): answer extraction, question generation and QA on onnxruntime;
* ``POST /v1/duplicates`` — BM25 / SDM search of the loaded ``--collection`` (dense / hybrid
  too when it is a duplicate index of ``pysynth dup index``);
* ``GET /`` — the keyword→question page (paper 000, Fig. 1); ``GET /health``, ``GET /ready``,
  ``GET /metrics`` (Prometheus text); ``/docs`` only with ``docs=True`` (Swagger UI's assets come
  from a CDN, so it is off by default).

Every request passes :class:`pysynth.serve.guard.Guard` first (Host allow-list, Origin, bearer
token, JSON only, strict JSON body) and every generator request a cost model
(:mod:`pysynth.serve.budget`) before any work starts.

Each ``POST /v1/...`` endpoint is its method's served adapter (``pysynth/<method>/served.py``;
:data:`pysynth.serve.models.ADAPTERS`), mounted by :func:`create_app` as it is.

Errors are JSON ``{"error": message}``, always: 400 malformed JSON or HTTP, 401 no or a wrong
API key, 403 a foreign ``Origin``, 404 an unknown path or a task with no model loaded, 405, 408 a
request not received within the read timeout, 413 a body over ``max_body_bytes`` or a request
over budget, 415 a body that is not ``application/json``, 421 a ``Host`` not allowed, 422 a
request that does not fit the schema or the model (the message names the field; NaN and Infinity
included), 503 a full queue (``Retry-After``), 504 a request past its timeout (its search stops
within one decoding step), 500 a model failure (``{"error", "id"}``; the id is in the server log)
— the server keeps serving. No response shows a filesystem path: models are named by their name,
or a folder's name and a fingerprint.
"""

import asyncio
import dataclasses
import logging
import uuid
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Hashable, List, Optional, Sequence

from pysynth.pipelines.served import Adapter, Context, RequestError
from pysynth.serve.batching import QueueFull
from pysynth.serve.budget import Budget
from pysynth.serve.budget import check as check_budget
from pysynth.serve.guard import Guard
from pysynth.serve.models import ADAPTERS, OPTIONS, TASKS, ServedModel
from pysynth.serve.prom import Counter, Gauge, Histogram, render

__all__ = ["ServeConfig", "create_app"]

log = logging.getLogger("pysynth.serve")
PAGE = Path(__file__).resolve().parent / "page.html"


@dataclass
class ServeConfig:
    """Everything ``pysynth serve`` sets.

    models : ``{task: model name or directory}`` (None: the task's shipped model); tasks are
        ``k2q``, ``rewrite``, ``wellformed``, ``paraphrase`` and ``qagen``
        (:data:`pysynth.serve.models.TASKS`)
    collection : a :class:`~pysynth.retrieval.collection.Collection` directory for ``/v1/duplicates``
        (or a duplicate index of ``pysynth dup index``: dense and hybrid search too)
    meteor : serve ``meteor`` in ``/v1/score`` (the Java-free Meteor 1.5 of
        :mod:`pysynth.metrics.meteor`; its resources are loaded once, at start-up)
    device : ``cpu``, ``cuda`` (falls back to the CPU with a warning) or ``auto``
    threads : onnxruntime intra-op threads per model (0: onnxruntime's default)
    batching : group concurrent requests into one model call; ``max_batch`` inputs at most,
        the first waiting ``max_wait_ms`` for company when the model is idle
    max_queue : inputs waiting per model before requests get 503
    timeout_s : per request, queueing included (504 past it)
    max_body_bytes, max_inputs, max_chars, max_segments : request limits
    budget : the per-request cost limits (:class:`pysynth.serve.budget.Budget`)
    warmup : one call per model before ``/ready`` says ready
    allow_hosts : ``Host`` names served beside localhost, 127.0.0.1 and ::1 (``*``: any)
    cors_origins : origins sent CORS headers (none: no CORS)
    api_key : the bearer token every request but ``/health`` and ``/`` needs (None: no auth)
    docs : serve Swagger UI at ``/docs`` (its assets come from a CDN; off by default)
    """

    models: Dict[str, Optional[str]] = field(default_factory=lambda: {t: None for t in TASKS})
    collection: Optional[str] = None
    meteor: bool = False
    device: str = "cpu"
    threads: int = 0
    batching: bool = True
    max_batch: int = 32
    max_wait_ms: float = 2.0
    max_queue: int = 1024
    timeout_s: float = 30.0
    max_body_bytes: int = 1 << 20
    max_inputs: int = 64
    max_chars: int = 1000
    max_segments: int = 10000
    budget: Budget = field(default_factory=Budget)
    warmup: bool = True
    allow_hosts: Sequence[str] = ()
    cors_origins: Sequence[str] = ()
    api_key: Optional[str] = field(default=None, repr=False)
    docs: bool = False

    def __post_init__(self):
        from pysynth import _validate

        _validate.threads(self.threads, "threads")  # the CLI's bound for the Python API too


class _Metrics:
    def __init__(self):
        self.requests = Counter("pysynth_requests_total", "HTTP requests by endpoint and status code")
        self.latency = Histogram("pysynth_request_seconds", "request latency (seconds) by endpoint",
                                      [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10])
        self.batch = Histogram("pysynth_batch_size", "inputs per model call", [1, 2, 4, 8, 16, 32, 64, 128, 256])
        self.queue = Gauge("pysynth_queue_depth", "inputs waiting for a model")
        self.dropped = Counter("pysynth_dropped_requests_total",
                               "requests dropped before the model or stopped in it (timeout, cancel)")
        self.inflight = 0

    def all(self):
        return [self.requests, self.latency, self.batch, self.queue, self.dropped]


class _Context(Context):
    """The server side of :class:`pysynth.pipelines.served.Context`: the loaded adapters, their
    batchers (503 on a full queue, 504 past the timeout) and the request limits."""

    def __init__(self, cfg: ServeConfig, served: Dict[str, ServedModel], metrics: _Metrics):
        self.max_inputs, self.max_chars, self.max_segments = cfg.max_inputs, cfg.max_chars, cfg.max_segments
        self.timeout, self.served, self.metrics, self.budget = cfg.timeout_s, served, metrics, cfg.budget

    def has(self, task: str) -> bool:
        return task in self.served

    def model(self, task: str, what: str = "") -> ServedModel:  # type: ignore[override]
        m = self.served.get(task)
        if m is None:
            raise RequestError(404, what + ADAPTERS[task].not_loaded())
        return m

    async def submit(self, task: str, key: Hashable, inputs: Sequence[Any]) -> List[Any]:
        batcher = self.model(task).batcher
        try:
            return await batcher.submit(key, inputs, timeout=self.timeout)
        except QueueFull:
            raise RequestError(503, f"server busy: the {batcher.name} queue is full; retry shortly",
                               {"Retry-After": "1"}) from None
        except asyncio.TimeoutError:
            raise RequestError(504, f"request timed out after {self.timeout:g} s") from None
        except (ValueError, TypeError) as exc:
            # the library's way to refuse an input (the batcher ran this request alone to find it):
            # the client's to fix, not a server failure
            log.warning("%s refused an input: %s", task, exc)
            raise RequestError(422, f"input refused by the {task} model: {str(exc)[:500]}") from None
        finally:
            if batcher.stats.sizes:
                sizes, batcher.stats.sizes = batcher.stats.sizes, []
                for s in sizes:
                    self.metrics.batch.observe(s, model=batcher.name)

    async def run(self, fn):
        try:  # bounded before it starts by the budget (the work itself cannot be stopped)
            return await asyncio.wait_for(asyncio.get_running_loop().run_in_executor(None, fn), self.timeout)
        except asyncio.TimeoutError:
            raise RequestError(504, f"request timed out after {self.timeout:g} s") from None


def _mount(app, adapter: Adapter, ctx: _Context, cache: dict) -> None:
    """``POST adapter.route``: the body validated against the adapter's request dataclass, then
    :meth:`~pysynth.pipelines.served.Adapter.handle`."""
    from fastapi.responses import JSONResponse

    from pysynth.serve.schemas import model_of

    body = model_of(adapter.request, True, cache)
    names = [f.name for f in dataclasses.fields(adapter.request)]

    async def endpoint(req: body):  # type: ignore[valid-type]
        r = adapter.request(**{n: getattr(req, n) for n in names})
        check_budget(adapter.name, r, ctx.budget)  # 413 before any work starts
        out = await adapter.handle(r, ctx)
        return JSONResponse(out)

    app.post(adapter.route, name=adapter.name, summary=adapter.summary, responses={c: {} for c in adapter.errors},
             response_model=model_of(adapter.response, False, cache) if adapter.response else None)(endpoint)


def _error_handlers(app) -> None:
    """Every error is JSON ``{"error": message}`` (see the module doc)."""
    from fastapi import Request
    from fastapi.exceptions import RequestValidationError
    from fastapi.responses import JSONResponse
    from starlette.exceptions import HTTPException

    @app.exception_handler(HTTPException)
    async def _http_error(request: Request, exc: HTTPException):
        msg = {404: f"no such endpoint: {request.url.path[:200]}",
               405: f"method {request.method} is not allowed on {request.url.path[:200]}"}.get(exc.status_code,
                                                                                             str(exc.detail))
        return JSONResponse({"error": msg}, status_code=exc.status_code, headers=exc.headers)

    @app.exception_handler(RequestError)
    async def _request_error(request: Request, exc: RequestError):
        return JSONResponse({"error": exc.message}, status_code=exc.status, headers=exc.headers)

    @app.exception_handler(RequestValidationError)
    async def _invalid(request: Request, exc: RequestValidationError):
        errs = exc.errors()
        if any(e.get("type") == "json_invalid" for e in errs):
            e = next(e for e in errs if e.get("type") == "json_invalid")
            return JSONResponse({"error": f"malformed JSON: {e.get('ctx', {}).get('error', e.get('msg'))}"},
                                status_code=400)
        parts = []
        for e in errs[:5]:
            loc = ".".join(str(x) for x in e.get("loc", ()) if x != "body") or "body"
            parts.append(f"{loc}: {e.get('msg')}")
        return JSONResponse({"error": "invalid request: " + "; ".join(parts)}, status_code=422)

    @app.exception_handler(Exception)
    async def _crash(request: Request, exc: Exception):
        eid = uuid.uuid4().hex[:12]
        log.error("error id %s on %s %s", eid, request.method, request.url.path, exc_info=exc)
        return JSONResponse({"error": "internal error (see the server log)", "id": eid}, status_code=500)


def _load(cfg: ServeConfig) -> Dict[str, ServedModel]:
    """The adapters ``cfg`` asks for, loaded: the model tasks of ``cfg.models`` (in its order),
    then the endpoints of other options (``score`` always, ``duplicates`` with a collection)."""
    kw = dict(device=cfg.device, threads=cfg.threads, max_batch=cfg.max_batch if cfg.batching else 1,
              max_wait_ms=cfg.max_wait_ms if cfg.batching else 0.0, max_queue=cfg.max_queue)
    from pysynth.models.registry import ModelNotInstalled

    served, off = {}, []
    for task, model in cfg.models.items():
        if task not in TASKS:
            raise ValueError(f"models: unknown task {task!r}; tasks with models: {', '.join(TASKS)}")
        try:
            served[task] = ServedModel.load(ADAPTERS[task], model, **kw)
        except ModelNotInstalled as exc:
            if model is not None:  # a model named explicitly must load
                raise
            off.append(f"{ADAPTERS[task].route} ({exc.name})")  # models are packaged apart: serve what is installed
    if off:
        warnings.warn(f"endpoints off, their shipped model not installed: {', '.join(off)}; install one with "
                      "`pysynth models install NAME` (or pip install ./models/NAME from the checkout)", RuntimeWarning,
                      stacklevel=3)
    for name, option in OPTIONS.items():
        spec = getattr(cfg, option)
        if spec is not None:
            served[name] = ServedModel.load(ADAPTERS[name], spec, **kw)
    return served


def create_app(config: Optional[ServeConfig] = None):
    """The FastAPI application for ``config`` (models are loaded here, so a bad model fails before
    the server binds its port; batchers start with the application).

    Every method endpoint is a served adapter (:mod:`pysynth.pipelines.served`) mounted as it
    is: this function holds no method logic.

    A task left to its shipped model (``models[task]`` None) whose model is not installed is
    not served: one ``RuntimeWarning`` names the endpoints that are off.

    Raises
    ------
    ValueError, FileNotFoundError
        an unknown model, a model without an ONNX export, a bad collection directory.
    ImportError
        the ``[serve]`` extra is not installed.
    """
    try:
        from fastapi import FastAPI
        from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse
    except ImportError as exc:
        raise ImportError(f"pysynth serve needs the [serve] extra: pip install '.[serve]' ({exc})") from None

    cfg = config or ServeConfig()
    served = _load(cfg)
    models = {t: s for t, s in served.items() if t in TASKS}
    batchers = [s.batcher for s in served.values() if s.batcher is not None]
    metrics = _Metrics()
    for b in batchers:
        metrics.queue.track(lambda b=b: b.queue_depth, model=b.name)
        metrics.dropped.track(lambda b=b: b.stats.dropped, model=b.name)
    state = {"ready": False}

    async def lifespan(app):
        for s in served.values():  # the models when asked; METEOR's resources always
            if cfg.warmup or not s.adapter.batched:
                await asyncio.get_running_loop().run_in_executor(None, s.warmup)
        for b in batchers:
            b.start()
        state["ready"] = True
        log.info("pysynth serve ready: %s", ", ".join(f"{t}={g.name} on {(g.providers or ['python'])[0]}"
                                                      for t, g in models.items()) or "no models")
        yield
        state["ready"] = False
        for b in batchers:
            await b.stop()

    app = FastAPI(title="pysynth", version=_version(), lifespan=lifespan, redoc_url=None,
                  docs_url="/docs" if cfg.docs else None,
                  description="Synthetic question data: keyword-to-question generation, metrics, duplicate search. "
                              "Models run on onnxruntime with dynamic batching.")
    _error_handlers(app)
    ctx, cache = _Context(cfg, served, metrics), {}
    for adapter in ADAPTERS.values():
        _mount(app, adapter, ctx, cache)

    @app.get("/health", summary="the process is alive")
    async def health():
        return {"status": "ok"}

    @app.get("/ready", summary="models loaded and warmed up", responses={503: {}})
    async def ready():
        col = served.get("duplicates")
        body = {"ready": state["ready"],
                "models": {t: {"model": g.name, "providers": g.providers} for t, g in models.items()},
                "collection": col.name if col else None}
        return JSONResponse(body, status_code=200 if state["ready"] else 503)

    @app.get("/metrics", response_class=PlainTextResponse, summary="Prometheus metrics")
    async def prometheus():
        return PlainTextResponse(render(metrics.all()), media_type="text/plain; version=0.0.4")

    page = PAGE.read_text(encoding="utf-8")

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def index():
        return HTMLResponse(page)

    app.add_middleware(Guard, max_body=cfg.max_body_bytes, metrics=metrics,
                       routes={r.path for r in app.routes} | {"/openapi.json", "/docs"},
                       allow_hosts=tuple(cfg.allow_hosts), cors_origins=tuple(cfg.cors_origins), api_key=cfg.api_key)
    app.state.pysynth = {"config": cfg, "generators": models, "collection": served.get("duplicates"),
                         "metrics": metrics}
    return app


def _version() -> str:
    import pysynth

    return pysynth.__version__
