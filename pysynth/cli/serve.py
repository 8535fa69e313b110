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
        raise C.UsageError(f"pysynth serve needs the [serve] extra: pip install 'pysynth[serve]' ({exc})") from None
    try:
        import uvicorn
    except ImportError:
        raise C.UsageError("pysynth serve needs uvicorn: pip install 'pysynth[serve]'") from None
    cfg = ServeConfig(models=models, collection=args.collection, meteor=args.meteor, device=args.device, threads=args.threads,
                      batching=not args.no_batching, max_batch=args.max_batch, max_wait_ms=args.max_wait_ms,
                      max_queue=args.max_queue, timeout_s=args.timeout, max_inputs=args.max_inputs,
                      max_body_bytes=args.max_body_bytes)
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
    served = ", ".join(f"{t}={m or 'default'}" for t, m in models.items())
    C.say(f"serving {served} on http://{args.host}:{port}/ "
          f"(batching {'off' if args.no_batching else f'max {args.max_batch}, wait {args.max_wait_ms:g} ms'})")
    config = uvicorn.Config(app, log_level=args.log_level, access_log=args.access_log, timeout_keep_alive=5,
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
    s.add_argument("--log-level", default="info", choices=("critical", "error", "warning", "info", "debug"))
    s.add_argument("--access-log", action="store_true", help="log every request (slower)")
    s.set_defaults(func=_cmd_serve)
