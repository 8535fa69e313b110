"""``pysynth mqr mine``: question-rewriting pairs from Stack Exchange dumps (Chu et al. 2020)."""
from __future__ import annotations

import json
import sys

from pysynth.cli import _common as C


def _dump(s: str) -> str:
    import argparse
    import os

    if not os.path.exists(s):
        raise argparse.ArgumentTypeError(f"no such dump directory or archive {s!r}")
    return s


def _count(s: str) -> int:
    import argparse

    try:
        v = int(s)
    except ValueError:
        v = -1
    if v < 0:
        raise argparse.ArgumentTypeError(f"must be an integer >= 0, got {s!r}")
    return v


def _cmd_mine(args) -> int:
    from pysynth import signature
    from pysynth.datasets.stackexchange import Dump
    from pysynth.io import write_json, write_rows
    from pysynth.mqr import mine

    C.check_output(args.out)
    dumps = [Dump(d) for d in args.inp]
    res = mine(dumps, mode=args.mode, splits=args.splits, min_valid=args.min_valid)
    meta = {
        "signature": signature.signature(
            "pysynth.mqr.mine", 1, {"mode": args.mode, "splits": args.splits, "min_valid": args.min_valid},
            {"dumps": [{"site": d.site, "path": str(d.path)} for d in dumps], "rows": len(res.rows),
             "sha256": signature.fingerprint(res.rows)}),
        "counts": res.counts,
        "stats": res.stats,
    }
    # the metadata is renamed into place before the data: a kill between the two never leaves new
    # data beside old metadata (old data beside new metadata shows: its sha256 does not match)
    write_rows(args.out, res.rows,
               before_replace=None if args.out == "-" else lambda: write_json(args.out + ".meta.json", meta))
    _summary(res, sys.stderr)
    return 0


def _cmd_rewrite(args) -> int:
    from pysynth.mqr.jobs import rewrite_file
    from pysynth.pipelines import executor_from_args

    C.check_output(args.out)
    model = C.llm_spec(args.model, "--model") or str(C.resolve_model(args.model, default="mqr-copynet-small").path)
    summary = rewrite_file(args.inp, args.out, model=model, backend=args.backend, threads=args.threads,
                           beam=args.beam, coverage=args.coverage, wellformed=args.rerank_wellformed,
                           backoff=args.backoff, select=args.select, min_wellformed=args.min_wellformed,
                           min_similarity=args.min_similarity, llm_options=C.llm_options(args, args.out),
                           **C.guards(args),
                           executor=executor_from_args(args), chunk_size=args.chunk_size, resume=not args.restart,
                           # to stdout: a bar on a terminal only (no lines mixed into a pipe's logs); -q: none
                           progress=not args.quiet and (args.out != "-" or sys.stderr.isatty()))
    if args.out != "-":  # stdout may be the output: the summary goes there only when it is not
        print(json.dumps(summary))
    return 0


def _cmd_train(args) -> int:
    import gzip
    import json as _json

    from pysynth.data import shared_dir
    from pysynth.models.config import Seq2SeqConfig, TrainConfig
    from pysynth.models.train import train
    from pysynth.mqr.rewrite import training_pairs

    data = shared_dir(args.data)
    with gzip.open(data / "mqr" / "dev.jsonl.gz", "rt", encoding="utf-8") as f:
        dev = [_json.loads(x) for x in f]
    held = sorted({(r["ill_formed"], r["well_formed"]) for r in dev[-args.dev_pairs:]})
    # the held-out dev questions are used nowhere in training (not even noised or as identity pairs)
    pairs, counts = training_pairs(data, seed=args.seed, noised=args.noised, upsample=args.upsample,
                                   in_domain=args.in_domain, identity=args.identity, paralex=args.paralex,
                                   typo=args.typo, prior=args.prior, exclude=[w for _, w in held])
    C.say(f"training pairs: {len(pairs)} ({counts}); dev: the last {len(held)} MQR dev pairs")
    if args.arch == "transformer-seq2seq":
        from pysynth.models.transformer import TransformerSeq2SeqConfig

        mc = TransformerSeq2SeqConfig(vocab_size=args.vocab_size, d_model=args.d_model, heads=4,
                                      enc_layers=args.layers, dec_layers=args.layers, ff_dim=2 * args.d_model,
                                      dropout=0.1, copy=True, max_src_len=40, max_tgt_len=40)
    else:
        mc = Seq2SeqConfig(arch=args.arch, vocab_size=args.vocab_size, emb_dim=args.emb_dim,
                           enc_hidden=args.enc_hidden, dec_hidden=args.dec_hidden, tie_embeddings=True,
                           dropout=0.2, max_src_len=40, max_tgt_len=40)
    tc = TrainConfig(lr=args.lr, clip_norm=1.0, batch_size=64, max_steps=args.steps, max_minutes=args.minutes,
                     max_epochs=20,
                     eval_every=400, eval_max_pairs=300, patience=6, ckpt_every=400, log_every=100, seed=args.seed,
                     device="cpu", threads=args.threads)
    if args.init is None:
        print(_json.dumps({**train(pairs, args.out, mc, tc, dev_pairs=held), "pairs": counts}))
        return 0
    # warm start: the model's architecture, vocabulary and weights, trained further on these pairs
    from pysynth.models.io import load_model
    from pysynth.models.train import Trainer

    init, vocab = load_model(str(C.resolve_model(args.init).path))
    tr = Trainer(pairs, args.out, init.config, tc, dev_pairs=held, vocab=vocab)
    if not tr.resume():
        tr.model.load_state_dict(init.state_dict())
    print(_json.dumps({**tr.fit(), "init": args.init, "pairs": counts}))
    return 0


def _cmd_table6(args) -> int:
    from pathlib import Path

    from pysynth.data import shared_dir
    from pysynth.io import write_json
    from pysynth.mqr.table6 import markdown, table6

    def named(s: str):  # "[NAME=]SPEC": a "=" after the SPEC's "@" is a decoding option, not a name
        name, sep, spec = s.partition("=")
        return (name, spec) if sep and "@" not in name else (None, s)

    models = {n or f"pysynth {m}": m for n, m in map(named, args.model or [])} or None
    ablations = {n or f"pysynth {m}": m for n, m in map(named, args.ablation or [])} or None
    chains = {}
    for c in args.chain or []:
        name, spec = named(c)
        steps = [x.strip() for x in spec.split(">")]
        if len(steps) < 2 or not all(steps):
            raise C.UsageError(f"--chain: expected [NAME=]A>B (e.g. rule>mqr-copynet-small), got {c!r}")
        chains[name or " -> ".join(steps)] = steps
    data = shared_dir(args.data)  # after the flags: a bad --chain is a usage error with or without the data
    rows = table6(data, models, beam=args.beam, round_trip=None if args.round_trip == "none" else args.round_trip,
                  ablations=ablations, chains=chains or None, **C.guards(args))
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    md = markdown(rows, "pysynth mqr evaluate " + " ".join(sys.argv[3:]))
    (out / "table6.md").write_text(md, encoding="utf-8")
    write_json(out / "table6.json", [{k: v for k, v in r.items() if k != "outputs"} for r in rows])
    with open(out / "rewrites.jsonl", "w", encoding="utf-8") as f:
        import json as _json

        for r in rows:
            if "outputs" in r:
                f.write(_json.dumps({"system": r["system"], "outputs": r["outputs"]}) + "\n")
    print(md)
    return 0


def _summary(res, f) -> None:
    keys = list(next(iter(res.counts.values())).keys()) if res.counts else []
    width = max([len(s) for s in res.counts] + [4])
    print(f"{'site':<{width}} " + " ".join(f"{k:>13}" for k in keys), file=f)
    for site, c in res.counts.items():
        print(f"{site:<{width}} " + " ".join(f"{c[k]:>13}" for k in keys), file=f)
    st = res.stats["all"]
    print(f"pysynth: mined {st['pairs']} pairs from {st['sites']} sites; counts and statistics in OUT.meta.json",
          file=f)


def add_commands(sub) -> None:
    m = sub.add_parser("mqr", help="question rewriting, MQR (Chu et al. 2020)")
    ms = m.add_subparsers(dest="mqr_command", required=True, metavar="VERB")  # table6: now evaluate
    mi = ms.add_parser("mine", help="ill-formed -> well-formed title pairs from Stack Exchange dumps",
                       description="Mine question-rewriting pairs from Stack Exchange title edits with the filters of "
                                   "Chu et al. 2020; writes rows {site, post_id, ill_formed, well_formed[, bleu, "
                                   "split]} and OUT.meta.json (counts per filter and site, statistics, signature).")
    C.add_in(mi, "--dump", action="append", type=_dump, metavar="DUMP", stdin=False,
             help="a site's dump: a directory of Posts.xml[.gz] + PostHistory.xml[.gz], or a .7z (repeatable)")
    C.add_out(mi, help="output JSONL/Parquet (- for stdout)")
    mi.add_argument("--mode", default="initial", choices=("initial", "last-edit", "all-edits"),
                    help="initial: first title -> current title (the paper); last-edit: the title before the last "
                         "edit; all-edits: every consecutive pair")
    mi.add_argument("--splits", action="store_true",
                    help="add bleu and split (devtest: sentence BLEU < 0.3, the paper's dev/test rule; else train)")
    mi.add_argument("--min-valid", type=C.float_in(0, False, 1, "a fraction in [0, 1]"), default=0.8,
                    help="share of valid characters both sides need (the paper: 0.8)")
    mi.set_defaults(func=_cmd_mine)

    rw = ms.add_parser("rewrite", help="rewrite ill-formed questions into well-formed ones",
                       description="Plain text in (one question per line) gives plain text out, line for line; JSONL/"
                                   "Parquet rows {'question', ...} get a 'rewrite' field.")
    C.add_in(rw, help="questions: a text file (one per line) or JSONL/Parquet rows with 'question'")
    rw.add_argument("--out", required=True, help="output (- for stdout), the same kind as --in")
    C.add_model(rw, "mqr-copynet-small", "the rewriter: a name or folder, or an LLM spec (openai:URL?model=NAME, "
                                         "hf-causal:DIR)")
    # the decoding defaults were chosen on held-out MQR dev pairs (pysynth.mqr.rewrite.DEFAULT_DECODING)
    C.add_decoding(rw, beam=6, seed=False)
    C.add_guards(rw)
    rw.add_argument("--coverage", type=C.float_in(0, False, None, "a number >= 0"), default=2.0,
                    help="rerank the beam: mean log-probability + COVERAGE x the share of the question's words kept")
    rw.add_argument("--rerank-wellformed", type=C.float_in(0, False, None, "a number >= 0"), default=0.5,
                    metavar="W", help="rerank the beam: + W x log P(well-formed) of pysynth.quality's classifier")
    rw.add_argument("--backoff", type=C.float_in(0, False, 1, "a share in [0, 1]"), default=0.7, metavar="F",
                    help="the rule floor instead of a rewrite that keeps less than F of the question's words")
    rw.add_argument("--select", choices=("safe", "model"), default="safe",
                    help="safe: the input, the rule floor or the model's rewrite, whichever is best by well-formedness "
                         "and kept words, never worse than the input; model: the model's rewrite (the first version)")
    C.add_backend(rw)
    C.add_threads(rw, help="onnxruntime threads")
    rw.add_argument("--min-wellformed", type=C.float_in(0, False, 1, "a probability in [0, 1]"), default=None,
                    metavar="P", help="keep a rewrite only when its well-formedness is >= P (else the input)")
    C.add_min_similarity(rw, "question vs rewrite; under S the input comes back, rows get 'similarity'")
    C.add_llm(rw, "--model")
    C.add_job(rw, chunk_size=512, what="questions")
    rw.set_defaults(func=_cmd_rewrite)

    tr = ms.add_parser("train", help="train a rewriter on the offline data (MQR dev, mined, identity, noised SQuAD)")
    C.add_out(tr, help="training run folder")
    C.add_data_dir(tr)
    tr.add_argument("--arch", default="copynet", choices=("copynet", "attnet", "ednet", "transformer-seq2seq"),
                    help="GRU seq2seq (copynet: attention + copying) or a small pre-LN Transformer with a copy head")
    tr.add_argument("--steps", type=C.positive_int, default=2300,
                    help="training steps (a fixed budget: the same model on any machine)")
    tr.add_argument("--minutes", type=float, default=0.0, help="also stop after this many minutes (0: no limit)")
    tr.add_argument("--noised", type=_count, default=40000, help="noised SQuAD questions to add")
    tr.add_argument("--upsample", type=C.positive_int, default=1, help="copies of the real (MQR dev, mined) pairs")
    tr.add_argument("--in-domain", type=_count, default=0, metavar="K",
                    help="noised copies of each in-domain question (MQR dev rewrites, the dumps' titles); 0: none")
    tr.add_argument("--no-identity", dest="identity", action="store_false",
                    help="leave out the (well-formed, well-formed) pairs (Table 7's ablation)")
    tr.add_argument("--paralex", action="store_true",
                    help="add Paralex-style pairs from ComQA clusters (the classifier picks each cluster's target)")
    tr.add_argument("--typo", type=C.float_in(0, False, 1, "a probability in [0, 1]"), default=0.0,
                    help="per-word misspelling probability of the noise")
    tr.add_argument("--prior", action="store_true",
                    help="drop question words with rates matching MQR dev's rewrite openings (not a flat 0.6)")
    tr.add_argument("--init", default=None, metavar="MODEL",
                    help="warm start: continue training this rewriter (name or folder; its architecture and "
                         "vocabulary) on the pairs; the model options are then ignored")
    tr.add_argument("--dev-pairs", type=C.positive_int, default=300, help="MQR dev pairs held out for early stopping")
    tr.add_argument("--vocab-size", type=C.positive_int, default=12000)
    tr.add_argument("--emb-dim", type=C.positive_int, default=128)
    tr.add_argument("--enc-hidden", type=C.positive_int, default=128)
    tr.add_argument("--dec-hidden", type=C.positive_int, default=256)
    tr.add_argument("--d-model", type=C.positive_int, default=256, help="transformer-seq2seq: model width")
    tr.add_argument("--layers", type=C.positive_int, default=2, help="transformer-seq2seq: encoder = decoder layers")
    tr.add_argument("--lr", type=float, default=2e-3)
    C.add_threads(tr, default=2, help="torch threads")
    tr.add_argument("--seed", type=int, default=0)
    tr.set_defaults(func=_cmd_train)

    t6 = ms.add_parser("evaluate", help="Table 6 of Chu et al. 2020 on the MQR test with pysynth's rewriters "
                                        "(`mqr table6`: deprecated)")
    C.add_data_dir(t6)
    t6.add_argument("--model", action="append", metavar="[NAME=]MODEL[@OPTS]",
                    help="rewriters (default: mqr-copynet-small); OPTS: beam=B,coverage=C,wellformed=W,backoff=F,"
                         "select=safe|model")
    C.add_decoding(t6, beam=4, seed=False)
    C.add_guards(t6, note="; every rewriter row and the round trip")
    t6.add_argument("--round-trip", default="fr", metavar="PIVOT",
                    help="the round-trip translation row's pivot: fr (the shipped English<->French models of "
                         "pysynth paraphrase), FWD,BWD (two models) or none")
    t6.add_argument("--ablation", action="append", metavar="[NAME=]MODEL",
                    help="a Table 7 row: a rewriter trained on another data mix (e.g. --no-identity, --paralex)")
    t6.add_argument("--chain", action="append", metavar="[NAME=]A>B",
                    help="a Table 8 row: run B on A's output; A, B: rule (the rule floor) or a rewriter")
    C.add_out(t6, required=False, default="results/mqr_table6", help="output folder (results/mqr_table6)")
    t6.set_defaults(func=_cmd_table6)
