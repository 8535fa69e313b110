"""``pysynth quality wellformed | train``: the well-formedness probability of questions
(:mod:`pysynth.quality`) and the training of its classifier."""
from __future__ import annotations

from pysynth.cli import _common as C


def _cmd_wellformed(args) -> int:
    from pysynth.io import write_rows
    from pysynth.quality import wellformedness

    C.check_output(args.out)
    rows = list(C.read_rows(args.inp))
    for i, r in enumerate(rows):
        if not isinstance(r.get(args.field), str):
            raise ValueError(f"--in row {i + 1}: no string field {args.field!r} (use --field NAME)")
    probs = wellformedness([r[args.field] for r in rows], args.model, threads=args.threads)
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
    C.add_in(w, help="JSONL/Parquet rows with a text field")
    C.add_out(w, help="output JSONL/Parquet (- for stdout): the rows plus 'wellformed'")
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
