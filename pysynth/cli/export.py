"""``pysynth export onnx``: a model (name or folder) to ONNX (encoder + one decoder step)."""
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


def add_commands(sub) -> None:
    e = sub.add_parser("export", help="export models")
    es = e.add_subparsers(dest="export_command", required=True, metavar="FORMAT")
    o = es.add_parser("onnx", help="export a model to ONNX (encoder + one decoder step)")
    o.add_argument("--model", required=True, help="a model name (e.g. k2q-copynet-small) or folder")
    o.add_argument("--out", required=True, help="output folder")
    o.add_argument("--torchscript", action="store_true", help="use the TorchScript exporter instead of dynamo")
    o.set_defaults(func=_cmd_export_onnx)
