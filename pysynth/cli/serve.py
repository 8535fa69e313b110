"""``pysynth serve``: the models over HTTP (onnxruntime, dynamic batching; :mod:`pysynth.serve`)."""
from __future__ import annotations

import argparse

from pysynth.cli import _common as C


def _model_spec(s: str):
    from pysynth.serve.models import parse_model_spec

    try:
        return parse_model_spec(s)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix(f"--model {s!r}: ")) from None


_LOOPBACK = ("127.0.0.1", "localhost", "::1")


def _origin_safety(args) -> tuple:
    """``(allowed hosts, API key)``: the key from --api-key or PYSYNTH_API_KEY; a non-loopback
    --host needs one (or --insecure); a specific --host is an allowed Host name."""
    import ipaddress
    import os

    key = args.api_key if args.api_key is not None else os.environ.get("PYSYNTH_API_KEY") or None
    if key is not None and (len(key) < 8 or not key.isprintable() or " " in key):
        raise C.UsageError("argument --api-key: use at least 8 printable characters without spaces")
    hosts = list(args.allow_host or ())
    try:
        loopback = ipaddress.ip_address(args.host).is_loopback
    except ValueError:
        loopback = args.host in _LOOPBACK
    if not loopback:
        if key is None and not args.insecure:
            raise C.UsageError(f"argument --host: {args.host} listens beyond this machine; give --api-key KEY "
                               "(or PYSYNTH_API_KEY) so that only clients with the key are served, or --insecure "
                               "to serve anyone who can reach it")
        if args.host not in ("0.0.0.0", "::"):
            hosts.append(args.host)
    return tuple(hosts), key


def _cmd_serve(args) -> int:
    import logging
    import socket
    import warnings

    from pysynth.serve.models import TASKS

    tasks = args.tasks or list(TASKS)
    unknown = [t for t in tasks if t not in TASKS]
    if unknown:
        raise C.UsageError(f"argument --tasks: unknown {', '.join(unknown)}; choose from {', '.join(TASKS)}")
    models = {t: None for t in tasks}
    for task, m in args.model or ():
        if task not in models:
            raise C.UsageError(f"argument --model: task {task!r} is not among --tasks {','.join(tasks)}")
        models[task] = m
    for task, m in models.items():
        if m is not None:
            C.resolve_model(m, flag=f"--model {task}")  # an unknown name or folder is a usage error
    try:
        from pysynth.serve import ServeConfig, create_app
    except ImportError as exc:
        raise C.UsageError(f"pysynth serve needs the [serve] extra: pip install '.[serve]' ({exc})") from None
    try:
        import uvicorn
    except ImportError:
        raise C.UsageError("pysynth serve needs uvicorn: pip install '.[serve]'") from None
    from pysynth.serve.budget import Budget
    from pysynth.serve.conn import protocol_class

    hosts, key = _origin_safety(args)
    budget = Budget(max_hypotheses=args.max_hypotheses, max_segment_tokens=args.max_segment_tokens,
                    max_lcs_cells=args.max_lcs_cells, max_meteor_tokens=args.max_meteor_tokens,
                    max_meteor_work=args.max_meteor_work,
                    max_context_chars=args.max_context_chars)
    cfg = ServeConfig(models=models, collection=args.collection, meteor=args.meteor, device=args.device, threads=args.threads,
                      batching=not args.no_batching, max_batch=args.max_batch, max_wait_ms=args.max_wait_ms,
                      max_queue=args.max_queue, timeout_s=args.timeout, max_inputs=args.max_inputs,
                      max_body_bytes=args.max_body_bytes, budget=budget, allow_hosts=hosts,
                      cors_origins=tuple(args.cors_origin or ()), api_key=key, docs=args.docs)
    logging.basicConfig(level=getattr(logging, args.log_level.upper()), format="pysynth serve: %(message)s")
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        app = create_app(cfg)
    for w in caught:
        C.say(f"warning: {w.message}")
    # bind here, so that a port in use is one clean error line before anything starts
    sock = socket.socket(socket.AF_INET6 if ":" in args.host else socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    try:
        sock.bind((args.host, args.port))
    except OSError as exc:
        sock.close()
        raise OSError(f"cannot listen on {args.host}:{args.port}: {exc.strerror}") from None
    port = sock.getsockname()[1]
    loaded = app.state.pysynth["generators"]  # a shipped model not installed: its endpoint is off (warned above)
    served = ", ".join(f"{t}={m or 'default'}" for t, m in models.items() if t in loaded) or "no model endpoints"
    shown = f"[{args.host}]" if ":" in args.host else args.host
    C.say(f"serving {served} on http://{shown}:{port}/ "
          f"(batching {'off' if args.no_batching else f'max {args.max_batch}, wait {args.max_wait_ms:g} ms'}"
          f"{'; API key required' if key else ''})")
    if key is None and args.insecure:
        C.say(f"warning: --insecure: anyone who can reach {args.host}:{port} can use this server")
    # idle and slow clients are dropped (pysynth.serve.conn): --max-connections protects, never locks out
    config = uvicorn.Config(app, log_level=args.log_level, access_log=args.access_log,
                            timeout_keep_alive=max(1, round(args.idle_timeout)),
                            http=protocol_class(args.read_timeout, args.idle_timeout),
                            limit_concurrency=args.max_connections, timeout_graceful_shutdown=5)
    try:
        uvicorn.Server(config).run(sockets=[sock])
    except KeyboardInterrupt:  # Ctrl-C is how a server is stopped: a clean exit, not an error
        pass
    C.say("server stopped")
    return 0


def add_commands(sub) -> None:
    from pysynth.serve.models import ADAPTERS, TASKS

    endpoints = ", ".join(f"/v1/{n}" for n in ADAPTERS)
    s = sub.add_parser("serve", help="serve the models over HTTP (onnxruntime, dynamic batching, a web page)",
                       description=f"Serve pysynth's models on onnxruntime: POST {endpoints}; GET / (the "
                                   "keyword->question page), /health, /ready, /metrics, /openapi.json.")
    s.add_argument("--model", action="append", type=_model_spec, metavar="[TASK=]NAME|DIR",
                   help="a model for a task (repeatable; a directory needs its onnx/ export); defaults: "
                        + "; ".join(f"{t}={m}" for t, m in TASKS.items()))
    s.add_argument("--tasks", type=lambda v: [t.strip() for t in v.split(",") if t.strip()], default=None,
                   metavar="LIST", help=f"the model endpoints to serve (default: all: {','.join(TASKS)})")
    s.add_argument("--collection", default=None, metavar="DIR", type=C.input_dir("collection"),
                   help="a search collection (pysynth index build: bm25/sdm) or a duplicate index (pysynth dup index: also dense/hybrid) for POST /v1/duplicates")
    s.add_argument("--meteor", action="store_true",
                   help="serve METEOR in POST /v1/score (Java-free Meteor 1.5; needs pycocoevalcap's resource files; "
                        "loaded at start-up)")
    s.add_argument("--host", default="127.0.0.1")
    s.add_argument("--port", type=int, default=8000, help="0: any free port")
    C.add_threads(s, help="onnxruntime intra-op threads per model")
    s.add_argument("--device", default="cpu", choices=("cpu", "cuda", "auto"),
                   help="cuda needs onnxruntime-gpu; without it the server falls back to the CPU with a warning")
    s.add_argument("--max-batch", type=C.positive_int, default=32, help="most inputs in one model call")
    s.add_argument("--max-wait-ms", type=C.float_in(0, False, 1000, "a number of ms in [0, 1000]"), default=2.0,
                   help="how long an idle model waits for more requests to batch")
    s.add_argument("--no-batching", action="store_true", help="one request per model call")
    s.add_argument("--max-queue", type=C.positive_int, default=1024, help="inputs queued per model before 503")
    s.add_argument("--timeout", type=C.float_in(0, True, None, "a number of seconds > 0"), default=30.0,
                   help="per-request timeout in seconds (504 past it)")
    s.add_argument("--max-inputs", type=C.positive_int, default=64, help="most inputs in one request")
    s.add_argument("--max-body-bytes", type=C.positive_int, default=1 << 20, help="largest request body")
    s.add_argument("--max-connections", type=C.positive_int, default=2048,
                   help="open connections before uvicorn answers 503")
    s.add_argument("--read-timeout", type=C.float_in(0, True, 3600, "a number of seconds in (0, 3600]"), default=10.0,
                   metavar="S", help="a request's headers and body must arrive within S seconds of its first byte "
                                     "(408 past it)")
    s.add_argument("--idle-timeout", type=C.float_in(0, True, 3600, "a number of seconds in (0, 3600]"), default=5.0,
                   metavar="S", help="close a connection silent for S seconds (new or kept alive)")
    g = s.add_argument_group("origin safety (see docs/serving.md)")
    g.add_argument("--allow-host", action="append", metavar="NAME",
                   help="a Host name served beside localhost, 127.0.0.1 and [::1] (repeatable; '*': any)")
    g.add_argument("--api-key", default=None, metavar="KEY",
                   help="require 'Authorization: Bearer KEY' on every request but /health and / (default: the "
                        "PYSYNTH_API_KEY environment variable; none: no auth)")
    g.add_argument("--insecure", action="store_true",
                   help="allow a non-loopback --host without an API key")
    g.add_argument("--cors-origin", action="append", metavar="ORIGIN",
                   help="send CORS headers to this origin, e.g. https://app.example (repeatable; default: no CORS)")
    g.add_argument("--docs", action="store_true", help="serve Swagger UI at /docs (loads its assets from a CDN)")
    b = s.add_argument_group("per-request budgets (413 before any work; see pysynth.serve.budget)")
    b.add_argument("--max-hypotheses", type=C.positive_int, default=8192, metavar="N",
                   help="sequences one generator request decodes at once (inputs x beams; paraphrase: both stages)")
    b.add_argument("--max-segment-tokens", type=C.positive_int, default=2000, metavar="N",
                   help="whitespace tokens of any /v1/score segment")
    b.add_argument("--max-lcs-cells", type=C.positive_int, default=200_000_000, metavar="N",
                   help="ROUGE-L/Lsum table cells (sum of hypothesis x reference tokens) per /v1/score request")
    b.add_argument("--max-meteor-tokens", type=C.positive_int, default=256, metavar="N",
                   help="whitespace tokens of a segment scored by METEOR")
    b.add_argument("--max-meteor-work", type=C.positive_int, default=250_000_000, metavar="N",
                   help="METEOR's worst-case alignment work (sum of n x m x max(n, m)) per /v1/score request")
    b.add_argument("--max-context-chars", type=C.positive_int, default=C.V.MAX_CONTEXT_CHARS, metavar="N",
                   help="characters of all contexts of one /v1/qagen request")
    s.add_argument("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"))
    s.add_argument("--access-log", action="store_true", help="log every request (slower)")
    s.set_defaults(func=_cmd_serve)
