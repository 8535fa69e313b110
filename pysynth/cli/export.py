"""``pysynth export onnx``: a model (name or folder) to ONNX (encoder + one decoder step); ``pysynth export
dataset``: a job's output to a Hugging Face ``datasets`` folder with a dataset card."""
from __future__ import annotations

import json
from pathlib import Path

from pysynth.cli import _common as C


def _cmd_export_onnx(args) -> int:
    from pysynth.export.onnx import export_onnx

    model = C.resolve_model(args.model)
    out = export_onnx(str(model.path), args.out, dynamo=not args.torchscript)
    print(json.dumps({"onnx_dir": str(out), "files": sorted(p.name for p in Path(out).iterdir())}))
    return 0


def _cmd_export_dataset(args) -> int:
    from pysynth.datasets.hf import export_dataset

    out = export_dataset(args.inp, args.out, license=args.license, attribution=args.attribution,
                         progress=not getattr(args, "quiet", False))  # -q: the shared verbosity flag
    print(json.dumps(out))
    return 0


def add_commands(sub) -> None:
    e = sub.add_parser("export", help="export models (ONNX) and job outputs (Hugging Face datasets)")
    es = e.add_subparsers(dest="export_command", required=True, metavar="FORMAT")
    o = es.add_parser("onnx", help="export a model to ONNX (encoder + one decoder step)")
    o.add_argument("--model", required=True, help="a model name (e.g. k2q-copynet-small) or folder")
    o.add_argument("--out", required=True, help="output folder")
    o.add_argument("--torchscript", action="store_true", help="use the TorchScript exporter instead of dynamo")
    o.set_defaults(func=_cmd_export_onnx)
    d = es.add_parser("dataset", help="a job's output -> a Hugging Face datasets folder with a dataset card "
                                      "(pip install \".[datasets]\")")
    C.add_in(d, help="the rows a generating command wrote (JSONL/Parquet; its OUT.meta.json beside them)",
             stdin=False)
    C.add_out(d, help="the dataset folder (datasets.load_from_disk opens it; README.md is the card); new, empty "
                      "or an earlier export")
    d.add_argument("--license", help="the inputs' license for the card, a Hub id (default: the bundled input's, "
                                     "else other)")
    d.add_argument("--attribution", help="who to credit for the inputs, for the card")
    d.set_defaults(func=_cmd_export_dataset)
