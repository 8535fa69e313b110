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
  ``GET /metrics`` (Prometheus text).

Errors are JSON ``{"error": message}``: 400 malformed JSON, 404 a task with no model loaded, 413
a body over ``max_body_bytes``, 422 a request that does not fit the schema or the model (the
message names the field), 503 a full queue (``Retry-After``), 504 a request past its timeout,
500 a model failure (``{"error", "id"}``; the id is in the server log) — the server keeps serving.
"""

import asyncio
import logging
import math
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Literal, Optional, Union

from pysynth.mqr.rewrite import DEFAULT_DECODING as _REWRITE
from pysynth.serve.batching import QueueFull
from pysynth.serve.models import (
    TASKS,
    ClassifierModel,
    DecodeKey,
    GeneratorModel,
    ParaphraseModel,
    QAGenModel,
    SearchCollection,
)
from pysynth.serve.prom import Counter, Gauge, Histogram, render

__all__ = ["ServeConfig", "create_app"]

log = logging.getLogger("pysynth.serve")
PAGE = Path(__file__).resolve().parent / "page.html"


@dataclass
class ServeConfig:
    """Everything ``pysynth serve`` sets.

    models : ``{task: model name or directory}`` (None: the task's shipped model); tasks are
        ``k2q`` (a seq2seq generator) and ``wellformed`` (the question-quality classifier)
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
    warmup: bool = True


class _ApiError(Exception):
    def __init__(self, status: int, message: str, headers: Optional[dict] = None):
        super().__init__(message)
        self.status, self.message, self.headers = status, message, headers


class _Metrics:
    def __init__(self):
        self.requests = Counter("pysynth_requests_total", "HTTP requests by endpoint and status code")
        self.latency = Histogram("pysynth_request_seconds", "request latency (seconds) by endpoint",
                                      [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10])
        self.batch = Histogram("pysynth_batch_size", "inputs per model call", [1, 2, 4, 8, 16, 32, 64, 128, 256])
        self.queue = Gauge("pysynth_queue_depth", "inputs waiting for a model")
        self.dropped = Gauge("pysynth_dropped_requests", "requests dropped before the model (timeout, cancel)")
        self.inflight = 0

    def all(self):
        return [self.requests, self.latency, self.batch, self.queue, self.dropped]


class _Limits:
    """Pure-ASGI middleware: request size limit and request metrics (cheaper than Starlette's
    ``BaseHTTPMiddleware``, which costs a task per request)."""

    def __init__(self, app, max_body: int, metrics: _Metrics, routes: set):
        self.app, self.max_body, self.metrics, self.routes = app, max_body, metrics, routes

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            return await self.app(scope, receive, send)
        t0 = time.perf_counter()
        path = scope["path"] if scope["path"] in self.routes else "other"
        status = [500]

        async def send_(msg):
            if msg["type"] == "http.response.start":
                status[0] = msg["status"]
            await send(msg)

        try:
            headers = dict(scope["headers"])
            if scope["method"] == "POST" and not headers.get(b"content-type", b"").startswith(b"application/json"):
                # every endpoint takes JSON: read it as JSON whatever the client declared (curl -d sends
                # application/x-www-form-urlencoded), rather than answer a puzzling schema error
                scope = dict(scope, headers=[(k, v) for k, v in scope["headers"] if k != b"content-type"]
                             + [(b"content-type", b"application/json")])
            length = headers.get(b"content-length")
            if length is not None and (not length.isdigit() or int(length) > self.max_body):
                return await self._reject(send_, length)
            if length is None and scope["method"] in ("POST", "PUT", "PATCH"):
                # no Content-Length (a chunked upload): read the body here, counting, and hand it on
                # (FastAPI would turn an error raised while it reads into a 400)
                held, size = [], 0
                while True:
                    msg = await receive()
                    held.append(msg)
                    if msg["type"] != "http.request":
                        break
                    size += len(msg.get("body", b""))
                    if size > self.max_body:
                        return await self._reject(send_, None)
                    if not msg.get("more_body", False):
                        break

                async def replay():
                    return held.pop(0) if held else await receive()

                return await self.app(scope, replay, send_)
            await self.app(scope, receive, send_)
        finally:
            self.metrics.requests.inc(endpoint=path, code=str(status[0]))
            self.metrics.latency.observe(time.perf_counter() - t0, endpoint=path)

    async def _reject(self, send, length):
        import json

        msg = (f"request body of {length.decode(errors='replace')} bytes" if length else "request body") + \
            f" is over the limit of {self.max_body} bytes"
        if length is not None and not length.isdigit():
            msg = "bad Content-Length header"
        body = json.dumps({"error": msg}).encode()
        await send({"type": "http.response.start", "status": 413 if length is None or length.isdigit() else 400,
                    "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode()),
                                (b"connection", b"close")]})
        await send({"type": "http.response.body", "body": body})


def create_app(config: Optional[ServeConfig] = None):
    """The FastAPI application for ``config`` (models are loaded here, so a bad model fails before
    the server binds its port; batchers start with the application).

    Raises
    ------
    ValueError, FileNotFoundError
        an unknown model, a model without an ONNX export, a bad collection directory.
    ImportError
        the ``[serve]`` extra is not installed.
    """
    try:
        from fastapi import FastAPI, Request
        from fastapi.exceptions import RequestValidationError
        from fastapi.responses import HTMLResponse, JSONResponse, PlainTextResponse
        from pydantic import BaseModel, ConfigDict, Field, StrictBool, StrictFloat, StrictInt, StrictStr
    except ImportError as exc:
        raise ImportError(f"pysynth serve needs the [serve] extra: pip install 'pysynth[serve]' ({exc})") from None

    cfg = config or ServeConfig()
    max_batch = cfg.max_batch if cfg.batching else 1
    wait = cfg.max_wait_ms if cfg.batching else 0.0
    generators: Dict[str, Union[GeneratorModel, ClassifierModel, ParaphraseModel, QAGenModel]] = {}
    for task, model in cfg.models.items():
        kind = {"wellformed": ClassifierModel, "paraphrase": ParaphraseModel, "qagen": QAGenModel}.get(task,
                                                                                                      GeneratorModel)
        generators[task] = kind.load(task, model, device=cfg.device, threads=cfg.threads, max_batch=max_batch,
                                     max_wait_ms=wait, max_queue=cfg.max_queue)
    collection = (SearchCollection.load(cfg.collection, max_batch=max_batch, max_wait_ms=wait,
                                        max_queue=cfg.max_queue) if cfg.collection else None)
    if cfg.meteor:
        from pysynth.metrics._meteor_data import find_files

        find_files()  # ImportError naming the fix when pycocoevalcap's resources are missing
    batchers = [g.batcher for g in generators.values()] + ([collection.batcher] if collection else [])
    metrics = _Metrics()
    for b in batchers:
        metrics.queue.track(lambda b=b: b.queue_depth, model=b.name)
        metrics.dropped.track(lambda b=b: b.stats.dropped, model=b.name)
    state = {"ready": False}

    async def lifespan(app):
        for g in generators.values():
            if cfg.warmup:
                await asyncio.get_running_loop().run_in_executor(None, g.warmup)
        if cfg.meteor:  # parse the resources (and build the paraphrase cache on a first run) before ready
            from pysynth.metrics.meteor import meteor

            await asyncio.get_running_loop().run_in_executor(None, lambda: meteor(["a b"], ["a b"]))
        for b in batchers:
            b.start()
        state["ready"] = True
        log.info("pysynth serve ready: %s", ", ".join(f"{t}={g.name} on {g.providers[0]}"
                                                      for t, g in generators.items()) or "no models")
        yield
        state["ready"] = False
        for b in batchers:
            await b.stop()

    app = FastAPI(title="pysynth", version=_version(), lifespan=lifespan,
                  description="Synthetic question data: keyword-to-question generation, metrics, duplicate search. "
                              "Models run on onnxruntime with dynamic batching.")

    # ------------------------------------------------------------------ schemas
    class K2QRequest(BaseModel):
        model_config = ConfigDict(extra="forbid")
        keywords: Union[StrictStr, List[StrictStr]] = Field(
            description="one keyword query or a list of them", examples=["honda crf 230 top speed"])
        n: StrictInt = Field(1, ge=1, le=10, description="questions per keyword query")
        diverse: StrictBool = Field(False, description="diverse beam search (Vijayakumar et al. 2016): "
                                                       "n groups of beam/n")
        beam: Optional[StrictInt] = Field(None, ge=1, le=32, description="beam size (default: 1 when n = 1 and "
                                          "not diverse, i.e. greedy; n for beam search; 2n for diverse)")
        diversity: Union[StrictFloat, StrictInt] = Field(0.5, ge=0, le=100, description="Hamming diversity "
                                                         "strength lambda (diverse only)")
        max_len: Optional[StrictInt] = Field(None, ge=1, le=128, description="most output tokens "
                                             "(default: the model's)")
        min_wellformed: Optional[Union[StrictFloat, StrictInt]] = Field(
            None, ge=0, le=1, description="drop questions whose well-formedness probability is below this "
                                          "(each question then carries its 'wellformed' score)")

    class Question(BaseModel):
        text: str
        score: float = Field(description="log-probability of the question under the model")
        wellformed: Optional[float] = Field(None, description="well-formedness probability (with min_wellformed)")

    class K2QResult(BaseModel):
        keywords: str
        questions: List[Question]
        truncated: bool = Field(description="the input was cut to the model's max_src_len tokens")
        dropped: int = Field(0, description="questions under min_wellformed")

    class RewriteRequest(BaseModel):
        model_config = ConfigDict(extra="forbid")
        questions: Union[StrictStr, List[StrictStr]] = Field(examples=["Spaghetti carbonara, mixing"])
        beam: StrictInt = Field(_REWRITE["beam"], ge=1, le=16, description="beam size (1: greedy)")
        coverage: Union[StrictFloat, StrictInt] = Field(
            _REWRITE["coverage"], ge=0, le=100, description="rerank the beam by the share of the question's words kept "
                                                           "(0: the beam's best); as `pysynth mqr rewrite`")
        rerank_wellformed: Optional[Union[StrictFloat, StrictInt]] = Field(
            None, ge=0, le=100, description="weight of the well-formedness log-probability in the rerank (default: "
                                            f"{_REWRITE['wellformed']} when the wellformed model is served, else 0)")
        backoff: Union[StrictFloat, StrictInt] = Field(
            _REWRITE["backoff"], ge=0, le=1, description="a rewrite keeping less than this share of the question's "
                                                         "words is replaced by the rule floor")
        min_wellformed: Optional[Union[StrictFloat, StrictInt]] = Field(
            None, ge=0, le=1, description="keep a rewrite only when its well-formedness is >= this (else the input)")

    class Rewrite(BaseModel):
        question: str
        rewrite: str
        rewritten: bool = Field(description="false: the input came back (no known word, or under min_wellformed)")
        wellformed: Optional[float] = None

    class RewriteResponse(BaseModel):
        model: str
        results: List[Rewrite]

    class ParaphraseRequest(BaseModel):
        model_config = ConfigDict(extra="forbid")
        questions: Union[StrictStr, List[StrictStr]] = Field(examples=["How many animals can be seen?"])
        decode: Literal["dbs", "beam"] = Field("dbs", description="diverse beam search or beam search (both stages)")
        beams: StrictInt = Field(16, ge=1, le=32, description="B: outputs per input in each stage")
        groups: StrictInt = Field(4, ge=1, le=32, description="G: diverse beam search groups (B a multiple of G)")
        diversity: Union[StrictFloat, StrictInt] = Field(0.5, ge=0, le=100, description="lambda (Hamming)")
        mode: Literal["augmented", "diverse"] = Field("augmented", description="Granstedt 2017's two filters")
        top: StrictInt = Field(3, ge=1, le=16, description="paraphrases per question at most")
        candidates: StrictBool = Field(False, description="also return every candidate with its score components")
        min_wellformed: Optional[Union[StrictFloat, StrictInt]] = Field(
            None, ge=0, le=1, description="drop paraphrases whose well-formedness probability is below this")

    class Paraphrases(BaseModel):
        question: str
        paraphrases: List[str]
        reason: Optional[str] = Field(None, description="why there is none (e.g. no candidate scored above 0)")
        counts: Dict[str, int]
        candidates: Optional[List[Dict[str, Any]]] = None
        wellformed: Optional[List[float]] = Field(None, description="the kept paraphrases' probabilities "
                                                  "(with min_wellformed)")
        dropped: int = Field(0, description="paraphrases under min_wellformed")

    class ParaphraseResponse(BaseModel):
        model: str
        results: List[Paraphrases]

    class QAGenRequest(BaseModel):
        model_config = ConfigDict(extra="forbid")
        contexts: Union[StrictStr, List[StrictStr]] = Field(
            examples=["Oxygen was discovered by Carl Wilhelm Scheele in Uppsala in 1773."])
        top_k: StrictInt = Field(10, ge=1, le=50, description="the answer is drawn from the top K spans")
        joint: StrictBool = Field(True, description="joint start-end span scores (Alberti et al. 2019, Sect. 3.1)")
        decode: Literal["greedy", "beam"] = Field("greedy", description="question decoding")
        match: StrictStr = Field("exact", description="roundtrip test: exact or f1:TAU")
        margin: Optional[Union[StrictFloat, StrictInt]] = Field(None, description="no-answer margin the QA answer "
                                                                                  "must beat")
        seed: StrictInt = Field(0, ge=0, description="seeds the answer draw (per context, not per batch)")

    class QAGenTriple(BaseModel):
        context: str
        question: Optional[str]
        answer_text: Optional[str]
        answer_start: int
        roundtrip_text: Optional[str]
        consistent: bool
        reason: Optional[str] = Field(None, description="why the triple is inconsistent")

    class QAGenResponse(BaseModel):
        model: str
        results: List[QAGenTriple]

    class WellformedRequest(BaseModel):
        model_config = ConfigDict(extra="forbid")
        texts: Union[StrictStr, List[StrictStr]] = Field(examples=[["what is the capital of france?",
                                                                    "capital france"]])

    class WellformedResponse(BaseModel):
        model: str
        scores: List[float] = Field(description="probability that each text is a well-formed question "
                                                "(Faruqui & Das 2018: mean rating >= 0.8)")

    class K2QResponse(BaseModel):
        model: str
        method: str
        results: List[K2QResult]

    class ScoreRequest(BaseModel):
        model_config = ConfigDict(extra="forbid")
        hyps: List[StrictStr] = Field(description="hypotheses, one per segment")
        refs: Union[List[StrictStr], List[List[StrictStr]]] = Field(
            description="one reference per segment, or a list of reference streams aligned with hyps")
        metrics: List[StrictStr] = Field(["bleu", "rouge1", "rouge2", "rougeL"])
        bleu_flavor: StrictStr = Field("sacrebleu", pattern="^(sacrebleu|nltk|coco)$")
        rouge_flavor: StrictStr = Field("rouge-score", pattern="^(rouge-score|pltrdy)$")
        stem: StrictBool = False
        tokenize: Optional[StrictStr] = Field(None, pattern="^(13a|intl|none)$")
        lowercase: StrictBool = False

    class DupRequest(BaseModel):
        model_config = ConfigDict(extra="forbid")
        queries: Union[StrictStr, List[StrictStr]]
        k: StrictInt = Field(10, ge=1, le=1000)
        model: StrictStr = Field("bm25", pattern="^(bm25|sdm|dense|hybrid)$")

    class Hit(BaseModel):
        id: Union[str, int]
        score: float

    class DupResponse(BaseModel):
        model: str
        results: List[List[Hit]]

    # ------------------------------------------------------------------ errors
    @app.exception_handler(_ApiError)
    async def _api_error(request: Request, exc: _ApiError):
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
        return JSONResponse({"error": "invalid request: " + "; ".join(parts),
                             "detail": [{"loc": list(e.get("loc", ())), "msg": e.get("msg"), "type": e.get("type")}
                                        for e in errs[:20]]}, status_code=422)

    @app.exception_handler(Exception)
    async def _crash(request: Request, exc: Exception):
        eid = uuid.uuid4().hex[:12]
        log.error("error id %s on %s %s", eid, request.method, request.url.path, exc_info=exc)
        return JSONResponse({"error": "internal error (see the server log)", "id": eid}, status_code=500)

    async def _submit(batcher, key, inputs):
        try:
            return await batcher.submit(key, inputs, timeout=cfg.timeout_s)
        except QueueFull:
            raise _ApiError(503, f"server busy: the {batcher.name} queue is full; retry shortly",
                            {"Retry-After": "1"}) from None
        except asyncio.TimeoutError:
            raise _ApiError(504, f"request timed out after {cfg.timeout_s:g} s") from None
        finally:
            if batcher.stats.sizes:
                sizes, batcher.stats.sizes = batcher.stats.sizes, []
                for s in sizes:
                    metrics.batch.observe(s, model=batcher.name)

    def _loaded(task, what=""):
        """The model of ``task``; 404 naming the flag that loads it when the server has none."""
        m = generators.get(task)
        if m is None:
            raise _ApiError(404, f"{what}no {task} model loaded (start the server with --model {task}=NAME|DIR)")
        return m

    def _inputs(value, name, max_chars=None):
        max_chars = max_chars or cfg.max_chars
        items = [value] if isinstance(value, str) else list(value)
        if not items:
            raise _ApiError(422, f"{name}: empty list; give at least one")
        if len(items) > cfg.max_inputs:
            raise _ApiError(413, f"{name}: {len(items)} items, over the limit of {cfg.max_inputs} per request")
        for i, t in enumerate(items):
            if len(t) > max_chars:
                raise _ApiError(413, f"{name}[{i}]: {len(t)} characters, over the limit of {max_chars}")
            if not t.strip():
                raise _ApiError(422, f"{name}[{i}]: empty string")
        _unicode(items, name)
        return items

    def _unicode(items, name):
        for i, t in enumerate(items):
            if not t.isascii():
                try:
                    t.encode("utf-8")
                except UnicodeEncodeError:  # JSON's \ud800-\udfff escapes decode to lone surrogates
                    raise _ApiError(422, f"{name}[{i}]: holds an unpaired surrogate escape (not valid Unicode)") \
                        from None

    # ------------------------------------------------------------------ endpoints
    @app.post("/v1/k2q", response_model=K2QResponse, responses={422: {}, 503: {}, 504: {}},
              summary="questions for keyword queries (Ding & Balog 2018)")
    async def k2q(req: K2QRequest):
        g = _loaded("k2q")
        kws = _inputs(req.keywords, "keywords")
        if req.diverse:
            beam = req.beam or 2 * req.n  # two beams per group: n distinct questions survive de-duplication
            if beam % req.n:
                raise _ApiError(422, f"beam: with diverse, beam={beam} must be a multiple of n={req.n} (n groups)")
            key = DecodeKey("diverse", req.n, beam, req.n, float(req.diversity), req.max_len)
        else:
            beam = req.beam or req.n
            if beam < req.n:
                raise _ApiError(422, f"beam: {beam} is smaller than n={req.n}")
            key = DecodeKey("greedy" if beam == 1 else "beam", req.n, beam, 1, 0.0, req.max_len)
        try:
            g.check(kws, "keywords")
        except (ValueError, TypeError) as exc:
            raise _ApiError(422, str(exc)) from None
        wf = None
        if req.min_wellformed is not None:
            wf = _loaded("wellformed", "min_wellformed: ")
        outs = await _submit(g.batcher, key, kws)
        results = [{"keywords": kw, "truncated": bool(o.truncated), "dropped": 0,
                    "questions": [{"text": t, "score": round(s, 4)} for t, s in zip(o.texts, o.scores)]}
                   for kw, o in zip(kws, outs)]
        if wf is not None:
            flat = [q for r in results for q in r["questions"]]
            probs = await _submit(wf.batcher, None, [q["text"] for q in flat]) if flat else []
            for q, p in zip(flat, probs):
                q["wellformed"] = round(p, 4)
            for r in results:
                keep = [q for q in r["questions"] if q["wellformed"] >= req.min_wellformed]
                r["dropped"] = len(r["questions"]) - len(keep)
                r["questions"] = keep
        return JSONResponse({"model": g.name, "method": key.method, "results": results})

    @app.post("/v1/rewrite", response_model=RewriteResponse, responses={404: {}, 422: {}, 503: {}},
              summary="rewrite ill-formed questions into well-formed ones (MQR, Chu et al. 2020)")
    async def rewrite(req: RewriteRequest):
        from pysynth.mqr.rewrite import choose, truecase

        g = _loaded("rewrite")
        qs = _inputs(req.questions, "questions")
        wf = None
        if req.min_wellformed is not None:
            wf = _loaded("wellformed", "min_wellformed: ")
        w_rerank = req.rerank_wellformed
        if w_rerank is None:  # the CLI's default decoding where the classifier is served
            w_rerank = _REWRITE["wellformed"] if "wellformed" in generators else 0.0
        wf_rerank = _loaded("wellformed", "rerank_wellformed: ") if w_rerank else None
        rerank = bool(req.coverage or w_rerank) and req.beam > 1
        ok = []
        for i, q in enumerate(qs):
            try:
                g.check([q], "questions")
                ok.append(i)
            except (ValueError, TypeError):  # no word the model knows: the question comes back as it is
                pass
        key = DecodeKey("greedy" if req.beam == 1 else "beam", req.beam if rerank else 1, req.beam, 1, 0.0, None)
        outs = await _submit(g.batcher, key, [qs[i] for i in ok]) if ok else []
        cands = [[truecase(t, qs[i]) for t in o.texts] for i, o in zip(ok, outs)]
        logwf = [None] * len(cands)
        if rerank and wf_rerank is not None:
            flat = [c for cs in cands for c in cs]
            probs = (await _submit(wf_rerank.batcher, None, flat)) if flat else []
            k = 0
            for j, cs in enumerate(cands):
                logwf[j], k = [math.log(p + 1e-6) for p in probs[k:k + len(cs)]], k + len(cs)
        results = [{"question": q, "rewrite": q, "rewritten": False} for q in qs]
        for j, (i, o) in enumerate(zip(ok, outs)):
            if cands[j]:
                results[i].update(rewrite=choose(qs[i], cands[j], o.scores, logwf[j], req.coverage if rerank else 0,
                                                 w_rerank if rerank else 0, req.backoff), rewritten=True)
        if wf is not None:
            probs = await _submit(wf.batcher, None, [r["rewrite"] for r in results])
            for r, p in zip(results, probs):
                r["wellformed"] = round(p, 4)
                if r["rewritten"] and p < req.min_wellformed:
                    r.update(rewrite=r["question"], rewritten=False)
        return JSONResponse({"model": g.name, "results": results})

    @app.post("/v1/paraphrase", response_model=ParaphraseResponse, responses={404: {}, 422: {}, 503: {}},
              summary="paraphrases by pivoting through two models with diverse beam search (Granstedt 2017)")
    async def paraphrase(req: ParaphraseRequest):
        g = _loaded("paraphrase")
        qs = _inputs(req.questions, "questions")
        if req.decode == "dbs" and req.beams % req.groups:
            raise _ApiError(422, f"beams: {req.beams} must be a multiple of groups={req.groups}")
        try:
            g.check(qs, "questions")
        except (ValueError, TypeError) as exc:
            raise _ApiError(422, str(exc)) from None
        key = (("decode", req.decode), ("beams", req.beams), ("groups", req.groups if req.decode == "dbs" else 1),
               ("diversity", float(req.diversity)), ("mode", req.mode), ("top", req.top))
        wf = _loaded("wellformed", "min_wellformed: ") if req.min_wellformed is not None else None
        outs = await _submit(g.batcher, key, qs)
        results = [{"question": q, "paraphrases": o["paraphrases"], "reason": o["reason"], "counts": o["counts"],
                    "dropped": 0, **({"candidates": o["candidates"]} if req.candidates else {})}
                   for q, o in zip(qs, outs)]
        if wf is not None:
            from pysynth.quality import filter_rows

            flat = [p for r in results for p in r["paraphrases"]]
            probs = await _submit(wf.batcher, None, flat) if flat else []
            filter_rows(results, "paraphrases", req.min_wellformed, probs=probs)
        return JSONResponse({"model": g.name, "results": results})

    @app.post("/v1/qagen", response_model=QAGenResponse, responses={404: {}, 413: {}, 422: {}, 503: {}},
              summary="roundtrip-consistent question-answer pairs for contexts (Alberti et al. 2019)")
    async def qagen(req: QAGenRequest):
        g = _loaded("qagen")
        items = [req.contexts] if isinstance(req.contexts, str) else list(req.contexts)
        # contexts are paragraphs: 20x the per-text limit of the other endpoints
        texts = _inputs(items, "contexts", max_chars=20 * cfg.max_chars)
        from pysynth.qagen.pipeline import parse_match

        try:
            parse_match(req.match)
        except ValueError as exc:
            raise _ApiError(422, str(exc)) from None
        key = (("top_k", req.top_k), ("joint", req.joint), ("decode", req.decode), ("match", req.match),
               ("margin", None if req.margin is None else float(req.margin)), ("seed", req.seed))
        outs = await _submit(g.batcher, key, texts)
        keep = ("context", "question", "answer_text", "answer_start", "roundtrip_text", "roundtrip_start",
                "consistent", "reason", "answer_rank", "answer_score", "qa_score", "null_score", "roundtrip_f1")
        return JSONResponse({"model": g.name, "results": [{**{k: o[k] for k in keep if k in o}, "context": t}
                                                          for t, o in zip(texts, outs)]})

    @app.post("/v1/wellformed", response_model=WellformedResponse, responses={404: {}, 422: {}, 503: {}},
              summary="probability that each text is a well-formed question (Faruqui & Das 2018)")
    async def wellformed(req: WellformedRequest):
        wf = _loaded("wellformed")
        texts = _inputs(req.texts, "texts")
        probs = await _submit(wf.batcher, None, texts)
        return JSONResponse({"model": wf.name, "scores": [round(p, 4) for p in probs]})

    @app.post("/v1/score", responses={422: {}}, summary="corpus BLEU / ROUGE (pysynth.metrics.score_corpus)")
    async def score(req: ScoreRequest):
        from pysynth.metrics import score_corpus

        if not req.hyps:
            raise _ApiError(422, "hyps: empty list; give at least one segment")
        if len(req.hyps) > cfg.max_segments:
            raise _ApiError(413, f"hyps: {len(req.hyps)} segments, over the limit of {cfg.max_segments}")
        refs = [req.refs] if req.refs and isinstance(req.refs[0], str) else req.refs
        for i, r in enumerate(refs):
            if len(r) != len(req.hyps):
                raise _ApiError(422, f"refs[{i}]: {len(r)} segments but hyps has {len(req.hyps)}; they must align")
        if not refs:
            raise _ApiError(422, "refs: empty list; give one reference per hypothesis")
        if "meteor" in req.metrics and not cfg.meteor:
            raise _ApiError(422, "metrics: meteor is not served by this server; start it with --meteor (loads "
                                 "Meteor 1.5's resources once) or use `pysynth score --metrics meteor`")
        _unicode(req.hyps, "hyps")
        for i, r in enumerate(refs):
            _unicode(r, f"refs[{i}]")
        try:
            return await asyncio.get_running_loop().run_in_executor(
                None, lambda: score_corpus(req.hyps, refs, req.metrics, req.bleu_flavor, req.rouge_flavor,
                                           req.stem, req.tokenize, req.lowercase))
        except (ValueError, TypeError) as exc:
            raise _ApiError(422, str(exc)) from None

    @app.post("/v1/duplicates", response_model=DupResponse, responses={404: {}, 422: {}, 503: {}},
              summary="search the loaded collection (BM25 / SDM; dense / hybrid on a duplicate index) for duplicates of each query")
    async def duplicates(req: DupRequest):
        if collection is None:
            raise _ApiError(404, "no collection loaded (start the server with --collection DIR, built by "
                                 "`pysynth index build`)")
        if req.model not in collection.models:
            raise _ApiError(422, f"model: {req.model} needs a duplicate index (`pysynth dup index`); the loaded "
                                 f"collection serves {', '.join(collection.models)}")
        qs = _inputs(req.queries, "queries")
        outs = await _submit(collection.batcher, (req.model, req.k), qs)
        return JSONResponse({"model": req.model, "results": [
            [{"id": i, "score": s} for i, s in zip(ids, scores)] for ids, scores in outs]})

    @app.get("/health", summary="the process is alive")
    async def health():
        return {"status": "ok"}

    @app.get("/ready", summary="models loaded and warmed up", responses={503: {}})
    async def ready():
        body = {"ready": state["ready"],
                "models": {t: {"model": g.name, "providers": g.providers} for t, g in generators.items()},
                "collection": collection.path if collection else None}
        return JSONResponse(body, status_code=200 if state["ready"] else 503)

    @app.get("/metrics", response_class=PlainTextResponse, summary="Prometheus metrics")
    async def prometheus():
        return PlainTextResponse(render(metrics.all()), media_type="text/plain; version=0.0.4")

    page = PAGE.read_text(encoding="utf-8")

    @app.get("/", response_class=HTMLResponse, include_in_schema=False)
    async def index():
        return HTMLResponse(page)

    app.add_middleware(_Limits, max_body=cfg.max_body_bytes, metrics=metrics,
                       routes={r.path for r in app.routes} | {"/openapi.json", "/docs"})
    app.state.pysynth = {"config": cfg, "generators": generators, "collection": collection, "metrics": metrics}
    return app


def _version() -> str:
    import pysynth

    return pysynth.__version__
