"""Command-line functions for the seq2seq models, wired into ``pysynth/cli.py``.

``add_k2q_model_commands(subparsers)`` adds::

    pysynth k2q train --pairs PAIRS.jsonl --model copynet|attnet|ednet --out MODEL_DIR [...]
    pysynth k2q generate [--model MODEL_DIR] --in KEYWORDS.jsonl --out OUT.jsonl [--beam 5]
                         [--diverse --groups G --diversity L] [--n 5] [--backend torch|onnx]
                         [--device cpu|cuda] [--kernels auto|triton|torch]
    pysynth export onnx --model MODEL_DIR --out ONNX_DIR

Every handler returns an exit code; errors in user input exit with ``pysynth: <message>``.
Torch is imported only when a command runs.
"""
from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import List, Optional, Sequence

__all__ = ["add_k2q_model_commands", "main"]


def _read_jsonl(path: str, what: str) -> List[dict]:
    from pysynth.k2q.data import read_jsonl

    try:
        return list(read_jsonl(path))
    except OSError as exc:
        raise SystemExit(f"pysynth: cannot read {what} {path!r}: {exc.strerror}") from None
    except ValueError as exc:
        raise SystemExit(f"pysynth: {what}: {exc}") from None


def _cmd_train(args) -> int:
    from pysynth.models.config import Seq2SeqConfig, TrainConfig
    from pysynth.models.train import train

    if args.pairs == "synthetic":
        from pysynth.k2q.neural import make_synthetic_pairs

        pairs = make_synthetic_pairs(samples_per_question=args.samples_per_question, seed=args.seed)
    else:
        rows = _read_jsonl(args.pairs, "--pairs")
        pairs = []
        for i, r in enumerate(rows, 1):
            src, tgt = r.get(args.source_field), r.get(args.target_field)
            if not isinstance(src, str) or not isinstance(tgt, str):
                raise SystemExit(f"pysynth: --pairs row {i}: needs string fields {args.source_field!r} "
                                 f"and {args.target_field!r}")
            pairs.append((src, tgt))
    dev = None
    if args.dev:
        dev = [(r[args.source_field], r[args.target_field]) for r in _read_jsonl(args.dev, "--dev")]
    try:
        mc = Seq2SeqConfig(arch=args.model, vocab_size=args.vocab_size, emb_dim=args.emb_dim,
                           enc_hidden=args.enc_hidden, dec_hidden=args.dec_hidden,
                           tie_embeddings=args.tie_embeddings, dropout=args.dropout,
                           max_src_len=args.max_src_len, max_tgt_len=args.max_tgt_len)
        tc = TrainConfig(lr=args.lr, clip_norm=args.clip_norm, batch_size=args.batch_size,
                         max_steps=args.max_steps, max_epochs=args.max_epochs, max_minutes=args.max_minutes,
                         eval_every=args.eval_every, patience=args.patience, dev_fraction=args.dev_fraction,
                         eval_max_pairs=args.eval_max_pairs, ckpt_every=args.ckpt_every,
                         log_every=args.log_every, seed=args.seed, device=args.device, threads=args.threads)
        summary = train(pairs, args.out, mc, tc, dev_pairs=dev, resume=not args.no_resume)
    except ValueError as exc:
        raise SystemExit(f"pysynth: {exc}") from None
    print(json.dumps(summary))
    return 0


def _cmd_generate(args) -> int:
    from pysynth.models.generate import Generator

    rows = _read_jsonl(args.input, "--in")
    kws = []
    for i, r in enumerate(rows, 1):
        k = r.get("keywords") if isinstance(r, dict) else None
        if not isinstance(k, str):
            raise SystemExit(f"pysynth: --in row {i}: needs a string field 'keywords'")
        kws.append(k)
    try:
        from pysynth.k2q.neural import DEFAULT_MODEL

        gen = Generator.load(args.model, backend=args.backend, device=args.device, kernels=args.kernels,
                             default=DEFAULT_MODEL)
        groups = args.groups if args.diverse else 1
        beam = args.beam
        if args.diverse and args.groups and beam < args.groups:
            beam = args.groups
        res = gen.generate(kws, beam=beam, n=args.n, groups=groups, diversity=args.diversity,
                           method=("diverse" if args.diverse else None), batch_size=args.batch_size,
                           length_penalty=args.length_penalty, alpha=args.alpha, max_len=args.max_len)
    except (ValueError, FileNotFoundError, ModuleNotFoundError) as exc:
        raise SystemExit(f"pysynth: {exc}") from None
    out = sys.stdout if args.out == "-" else open(args.out, "w", encoding="utf-8")
    try:
        for r in res:
            out.write(json.dumps({"keywords": r.source, "questions": r.texts,
                                  "scores": [round(s, 6) for s in r.scores]}, ensure_ascii=False) + "\n")
    finally:
        if out is not sys.stdout:
            out.close()
    return 0


def _cmd_export_onnx(args) -> int:
    from pysynth.export.onnx import export_onnx

    try:
        out = export_onnx(args.model, args.out, dynamo=not args.torchscript)
    except (ValueError, FileNotFoundError, ModuleNotFoundError) as exc:
        raise SystemExit(f"pysynth: {exc}") from None
    print(json.dumps({"onnx_dir": str(out), "files": sorted(p.name for p in Path(out).iterdir())}))
    return 0


def add_k2q_model_commands(subparsers, k2q_subparsers=None) -> None:
    """Add ``k2q train``, ``k2q generate`` and ``export onnx`` to an argparse subparsers object.

    ``k2q_subparsers``: an existing ``k2q`` subcommand group to add to (else one is made).
    """
    if k2q_subparsers is None:
        k2q = subparsers.add_parser("k2q", help="keyword-to-question models (train, generate)")
        ks = k2q.add_subparsers(dest="k2q_command", required=True)
    else:
        ks = k2q_subparsers

    t = ks.add_parser("train", help="train EDNet/AttNet/CopyNet on keyword-question pairs")
    t.add_argument("--pairs", required=True,
                   help="JSONL with 'keywords' and 'question' fields, or 'synthetic' (stand-in pairs from Q minus T0)")
    t.add_argument("--model", choices=("copynet", "attnet", "ednet"), default="copynet")
    t.add_argument("--out", required=True, help="run folder (resumes from its checkpoint.pt)")
    t.add_argument("--dev", help="JSONL dev pairs for early stopping (default: 2%% of --pairs)")
    t.add_argument("--source-field", default="keywords")
    t.add_argument("--target-field", default="question")
    t.add_argument("--samples-per-question", type=int, default=2, help="with --pairs synthetic")
    t.add_argument("--vocab-size", type=int, default=44000)
    t.add_argument("--emb-dim", type=int, default=100)
    t.add_argument("--enc-hidden", type=int, default=200)
    t.add_argument("--dec-hidden", type=int, default=400)
    t.add_argument("--tie-embeddings", action="store_true")
    t.add_argument("--dropout", type=float, default=0.5)
    t.add_argument("--max-src-len", type=int, default=32)
    t.add_argument("--max-tgt-len", type=int, default=40)
    t.add_argument("--lr", type=float, default=1e-4)
    t.add_argument("--clip-norm", type=float, default=0.1)
    t.add_argument("--batch-size", type=int, default=64)
    t.add_argument("--max-steps", type=int, default=0)
    t.add_argument("--max-epochs", type=int, default=10)
    t.add_argument("--max-minutes", type=float, default=0.0)
    t.add_argument("--eval-every", type=int, default=1000)
    t.add_argument("--patience", type=int, default=5)
    t.add_argument("--dev-fraction", type=float, default=0.02, help="dev share of --pairs when no --dev")
    t.add_argument("--eval-max-pairs", type=int, default=500, help="dev pairs decoded per evaluation")
    t.add_argument("--ckpt-every", type=int, default=500)
    t.add_argument("--log-every", type=int, default=100)
    t.add_argument("--seed", type=int, default=0)
    t.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    t.add_argument("--threads", type=int, default=0, help="torch intra-op threads (0: default)")
    t.add_argument("--no-resume", action="store_true", help="ignore an existing checkpoint in --out")
    t.set_defaults(func=_cmd_train)

    g = ks.add_parser("generate", help="questions for keyword queries (JSONL rows {'keywords'})")
    g.add_argument("--model", default=None, help="model folder (default: the shipped k2q-copynet-small)")
    g.add_argument("--in", dest="input", required=True)
    g.add_argument("--out", required=True, help="output JSONL ('-' for stdout)")
    g.add_argument("--beam", type=int, default=5)
    g.add_argument("--diverse", action="store_true", help="diverse beam search")
    g.add_argument("--groups", type=int, default=5)
    g.add_argument("--diversity", type=float, default=0.5)
    g.add_argument("--n", type=int, default=5)
    g.add_argument("--backend", choices=("torch", "onnx"), default="torch")
    g.add_argument("--device", default=None, choices=("auto", "cpu", "cuda"))
    g.add_argument("--kernels", default="auto", choices=("auto", "triton", "torch"),
                   help="torch backend: fused Triton decode-step kernels (auto: on CUDA when "
                        "triton is installed)")
    g.add_argument("--batch-size", type=int, default=32)
    g.add_argument("--length-penalty", choices=("none", "average", "gnmt"), default="none")
    g.add_argument("--alpha", type=float, default=0.6)
    g.add_argument("--max-len", type=int, default=None)
    g.set_defaults(func=_cmd_generate)

    e = subparsers.add_parser("export", help="export models")
    es = e.add_subparsers(dest="export_command", required=True)
    o = es.add_parser("onnx", help="export a model folder to ONNX (encoder + one decoder step)")
    o.add_argument("--model", required=True)
    o.add_argument("--out", required=True)
    o.add_argument("--torchscript", action="store_true", help="use the TorchScript exporter instead of dynamo")
    o.set_defaults(func=_cmd_export_onnx)


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Stand-alone entry point (``python -m pysynth.models.cli ...``) until pysynth/cli.py wires it."""
    p = argparse.ArgumentParser(prog="pysynth")
    add_k2q_model_commands(p.add_subparsers(dest="command", required=True))
    args = p.parse_args(argv)
    return args.func(args)


if __name__ == "__main__":
    sys.exit(main())
