"""``pysynth quality wellformed | train``: the well-formedness probability of questions
(:mod:`pysynth.quality`) and the training of its classifier."""
from __future__ import annotations

from pysynth.cli import _common as C

_ROW_SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz", ".parquet", ".gz")


def _read_texts(path: str, field: str):
    """``(texts, rows)``: JSONL/Parquet rows with a string ``field``, or plain text, one question per
    line (rows None; ``-`` is sniffed: JSON objects or text), as ``pysynth mqr rewrite`` reads."""
    import json

    if path == "-" or not path.lower().endswith(_ROW_SUFFIXES):
        lines = C.read_lines(path, "--in")
        if not (path == "-" and lines and lines[0].lstrip().startswith("{")):
            return lines, None
        try:
            rows = [json.loads(x) for x in lines if x.strip()]
        except json.JSONDecodeError as exc:
            raise ValueError(f"--in <stdin>: not JSON Lines ({exc})") from None
    else:
        rows = list(C.read_rows(path))
    for i, r in enumerate(rows):
        if not isinstance(r, dict) or not isinstance(r.get(field), str):
            raise ValueError(f"--in row {i + 1}: no string field {field!r} (use --field NAME)")
    return [r[field] for r in rows], rows


def score_texts(model, texts, batch_size: int = 64, progress: bool = False, chunk: int = 1024):
    """``model(texts)`` with a progress bar: chunks of the length-sorted texts, so every batch is
    the one a single call would run (the probabilities do not depend on the chunking)."""
    import numpy as np

    from pysynth.pipelines.progress import Progress

    order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
    probs = np.empty(len(texts), dtype=np.float64)
    bar = Progress(len(texts), progress, "quality wellformed", unit="questions")
    try:
        step = max(batch_size, chunk // batch_size * batch_size)
        for b in range(0, len(order), step):
            idx = order[b:b + step]
            probs[idx] = model([texts[i] for i in idx], batch_size)
            bar.update(len(idx))
    finally:
        bar.close()
    return probs


def _cmd_wellformed(args) -> int:
    from pysynth.io import write_rows
    from pysynth.quality import load

    C.check_output(args.out)
    texts, rows = _read_texts(args.inp, args.field)
    probs = score_texts(load(args.model, args.threads), texts, progress=not args.quiet and len(texts) > 2048)
    if rows is None:  # plain text in: rows {field, "wellformed"} out
        rows = [{args.field: t} for t in texts]
    write_rows(args.out, ({**r, "wellformed": round(float(p), 6)} for r, p in zip(rows, probs)))
    return 0


def _cmd_train(args) -> int:
    import json
    import os

    from pysynth.quality import WellformednessModel
    from pysynth.quality.train import accuracy, export, load_split, train

    C.check_out_dir(args.out)
    model, tok, hist = train(args.data, args.epochs, args.lr, args.batch_size, args.max_length, args.seed,
                             args.threads)
    out = export(model, tok, args.out, args.max_length, not args.no_quantize,
                 {"train": {k: getattr(args, k) for k in ("epochs", "lr", "batch_size", "seed")}, "history": hist})
    m = WellformednessModel(out)
    te, dv = load_split(args.data, "test"), load_split(args.data, "dev")
    print(json.dumps({"onnx_dev": accuracy(m([r["query"] for r in dv]), dv),
                      "onnx_test": accuracy(m([r["query"] for r in te]), te),
                      "bytes": os.path.getsize(out / "model.onnx")}))
    return 0


def add_commands(sub) -> None:
    q = sub.add_parser("quality", help="question quality scores")
    qs = q.add_subparsers(dest="quality_command", required=True, metavar="VERB")
    w = qs.add_parser("wellformed", help="probability that each question is well-formed (Faruqui & Das 2018)")
    C.add_in(w, help="questions: JSONL/Parquet rows with a text field, or a text file (one question per line)")
    C.add_out(w, help="output JSONL/Parquet (- for stdout): the rows plus 'wellformed' (plain text in: rows "
                      "{FIELD, 'wellformed'})")
    w.add_argument("--field", default="question", help="the text field (default: question)")
    C.add_model(w, "wellformed-minilm", "the classifier: a name or folder")
    C.add_threads(w, help="onnxruntime threads")
    w.set_defaults(func=_cmd_wellformed)

    t = qs.add_parser("train", help="train, evaluate and export the well-formedness classifier (torch + "
                                    "transformers; was python -m pysynth.quality.train)")
    t.add_argument("--data", required=True, type=C.input_dir("data"), metavar="DIR",
                   help="the query_wellformedness folder ({train,dev,test}.jsonl.gz)")
    C.add_out(t, help="output store")
    t.add_argument("--epochs", type=C.positive_int, default=1)
    t.add_argument("--lr", type=C.float_in(0, True, None, "a positive number"), default=4e-5)
    t.add_argument("--batch-size", type=C.positive_int, default=32)
    t.add_argument("--max-length", type=C.positive_int, default=64)
    t.add_argument("--seed", type=int, default=0)
    C.add_threads(t, help="torch threads")
    t.add_argument("--no-quantize", action="store_true", help="keep the ONNX weights float32")
    t.set_defaults(func=_cmd_train)
