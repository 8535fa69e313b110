"""``pysynth k2q keywords`` and ``pysynth k2q table1``."""
from __future__ import annotations

import json
import sys
import time


def _read_rows(path: str, what: str) -> list:
    from pysynth.k2q.data import read_jsonl

    try:
        rows = list(read_jsonl(path))
    except OSError as exc:
        raise SystemExit(f"pysynth: cannot read {what} {path!r}: {exc.strerror}") from None
    except ValueError as exc:
        raise SystemExit(f"pysynth: {exc}") from None
    for i, r in enumerate(rows):
        if not isinstance(r, dict) or not isinstance(r.get("question"), str):
            raise SystemExit(f"pysynth: {what} {path!r} row {i + 1}: needs a string field 'question'")
    return rows


def _write_atomic(path: str, rows) -> None:
    """JSON lines written atomically: a killed run leaves no half file."""
    from pysynth.io import atomic_write

    atomic_write(path, lambda f: f.writelines((json.dumps(r, ensure_ascii=False) + "\n").encode() for r in rows))


def _cmd_keywords(args) -> int:
    from pysynth import sampling
    from pysynth.data import questions_sample
    from pysynth.k2q.keywords import DEFAULT_CONFIG, KeywordGenerator

    t0 = time.perf_counter()
    rows = _read_rows(args.inp, "--in")
    if not rows:
        raise SystemExit(f"pysynth: --in {args.inp!r} has no rows")
    if args.corpus:
        crows = _read_rows(args.corpus, "--corpus")
        corpus = [r["question"] for r in crows]
        cgroups = [r.get("cluster_id") for r in crows]
    else:
        corpus, cgroups = questions_sample(), None
    questions = [r["question"] for r in rows]
    groups = [r.get("cluster_id") for r in rows]
    phrases = DEFAULT_CONFIG["phrases"] if args.phrases is None else args.phrases
    print(f"[1/3] statistics over {len(corpus) + len(questions):,} questions"
          f"{' with phrase detection' if phrases else ''} ...", file=sys.stderr, flush=True)
    try:
        gen = KeywordGenerator(corpus, questions, cgroups, groups, phrases=phrases, workers=args.workers)
        model = sampling.KeywordModel(
            model=args.model, strategy=args.strategy,
            lam=DEFAULT_CONFIG["lam"] if args.lam is None else args.lam,
            alpha=DEFAULT_CONFIG["alpha"] if args.alpha is None else args.alpha,
            beta=DEFAULT_CONFIG["beta"] if args.beta is None else args.beta,
        )
        t1 = time.perf_counter()
        print(f"[2/3] sampling {args.m} candidates x {len(questions):,} questions ({model!r}) ...",
              file=sys.stderr, flush=True)
        kws = gen.generate(model, m=args.m, seed=args.seed, workers=args.workers)
    except (ValueError, TypeError) as exc:
        raise SystemExit(f"pysynth: {exc}") from None
    t2 = time.perf_counter()
    _write_atomic(args.out, (dict(r, keywords=k) for r, k in zip(rows, kws)))
    n = len(questions) * args.m
    print(f"[3/3] wrote {args.out}: {n:,} candidates in {t2 - t1:.2f} s ({n / max(t2 - t1, 1e-9):,.0f}/s); "
          f"total {time.perf_counter() - t0:.1f} s", file=sys.stderr)
    return 0


def _cmd_table1(args) -> int:
    from pysynth.k2q.table1 import run_table1

    try:
        run_table1(repeats=args.repeats, folds=args.folds, seed=args.seed, workers=args.workers,
                   data=args.data, out_dir=args.out)
    except FileNotFoundError as exc:
        raise SystemExit(f"pysynth: {exc}") from None
    print(f"wrote {args.out}/table1.md, table1.json, fig6_grid.csv, fig6.png", file=sys.stderr)
    return 0


def _cmd_synthesize(args) -> int:
    from pysynth.k2q.synthesize import PRESETS, SynthesisConfig, synthesize

    if args.inp is None:
        from pysynth.data import k2q_demo_path

        args.inp = str(k2q_demo_path())
        print(f"pysynth: no --in given: the bundled demo questions ({args.inp})", file=sys.stderr)
    base = PRESETS[args.preset] if args.preset else SynthesisConfig()
    changes = {k: v for k, v in (
        ("model", args.model), ("strategy", args.strategy), ("phrases", args.phrases),
        ("lam", args.lam), ("alpha", args.alpha), ("beta", args.beta), ("m", args.m),
        ("kqf", args.kqf), ("tdf", args.tdf), ("n_results", args.n_results), ("keep", args.keep),
        ("retrieval", args.retrieval), ("mu", args.mu), ("seed", args.seed)) if v is not None}
    try:
        if args.weights is not None:
            try:
                changes["weights"] = tuple(float(x) for x in args.weights.split(","))
            except ValueError:
                raise ValueError(f"--weights must be three comma-separated numbers, got {args.weights!r}") from None
        cfg = base.replace(**changes)
        from pysynth.pipelines import executor_from_args

        synthesize(args.inp, args.out, clusters=args.clusters, corpus=args.corpus, config=cfg,
                   workers=args.workers, chunk_size=args.chunk_size, resume=not args.restart,
                   keep_parts=args.keep_parts, progress=not args.quiet, executor=executor_from_args(args))
    except (ValueError, TypeError, ImportError) as exc:
        raise SystemExit(f"pysynth: {exc}") from None
    return 0


def add_commands(sub) -> None:
    """Register ``k2q keywords`` and ``k2q table1`` under the ``k2q`` subparser group."""
    kw = sub.add_parser("keywords", help="generate keyword queries for questions (Ding & Balog 2018, Sect. 3.1)")
    kw.add_argument("--in", dest="inp", required=True, help='JSONL rows {"question": ..., "cluster_id": optional}')
    kw.add_argument("--out", required=True, help='JSONL output: input rows plus "keywords": [m strings]')
    kw.add_argument("--corpus", help="JSONL question corpus for the statistics (default: the bundled 18k questions)")
    kw.add_argument("--model", default="paraphrase", choices=["baseline", "paraphrase"])
    kw.add_argument("--strategy", default="discriminative", choices=["popular", "discriminative", "combination"],
                    help="default: the best of our Table 1 run (bench/RESULTS_k2q.md)")
    g = kw.add_mutually_exclusive_group()
    g.add_argument("--phrases", dest="phrases", action="store_true", default=None, help="detect phrases (default)")
    g.add_argument("--no-phrases", dest="phrases", action="store_false")
    kw.add_argument("--lambda", dest="lam", type=float, default=None, help="Eq. 1 collection weight")
    kw.add_argument("--alpha", type=float, default=None, help="Eq. 6 question weight")
    kw.add_argument("--beta", type=float, default=None, help="Eq. 6 paraphrase weight")
    kw.add_argument("--m", type=int, default=20, help="candidates per question")
    kw.add_argument("--seed", type=int, default=0)
    kw.add_argument("--workers", type=int, default=1)
    kw.set_defaults(func=_cmd_keywords)

    sy = sub.add_parser(
        "synthesize", help="the K2Q synthetic-data pipeline: KQGM -> KQF -> TDF (Ding & Balog 2018, Sect. 3)",
        description="Pair every question with its best keyword query (m candidates, SDM keyword query "
                    "filter) and rank the pairs by the training data filter. Resumes an interrupted run.")
    sy.add_argument("--in", dest="inp", default=None,
                    help='questions: JSONL (.gz) or Parquet rows {"question", "id"?, "cluster_id"?} '
                         "(default: the bundled 22k CC BY-SA demo questions)")
    sy.add_argument("--out", required=True, help="output .jsonl (+ .meta.json) or .parquet")
    sy.add_argument("--clusters", help='paraphrase clusters: JSONL rows {"cluster_id", "ids": [question ids]}')
    sy.add_argument("--corpus", help="extra questions for the statistics and the retrieval corpus only")
    sy.add_argument("--preset", choices=["baseline", "par", "par-ph", "par-ph-kqf", "par-ph-kqf-tdf"],
                    help="a Fig. 7 ablation configuration (other options override it)")
    sy.add_argument("--model", choices=["baseline", "paraphrase"], default=None)
    sy.add_argument("--strategy", choices=["popular", "discriminative", "combination"], default=None)
    g = sy.add_mutually_exclusive_group()
    g.add_argument("--phrases", dest="phrases", action="store_true", default=None)
    g.add_argument("--no-phrases", dest="phrases", action="store_false")
    sy.add_argument("--lambda", dest="lam", type=float, default=None)
    sy.add_argument("--alpha", type=float, default=None)
    sy.add_argument("--beta", type=float, default=None)
    sy.add_argument("--m", type=int, default=None, help="candidates per question (default 20)")
    g = sy.add_mutually_exclusive_group()
    g.add_argument("--kqf", dest="kqf", action="store_true", default=None, help="keyword query filter (default)")
    g.add_argument("--no-kqf", dest="kqf", action="store_false")
    g = sy.add_mutually_exclusive_group()
    g.add_argument("--tdf", dest="tdf", action="store_true", default=None, help="training data filter (default)")
    g.add_argument("--no-tdf", dest="tdf", action="store_false")
    sy.add_argument("--n-results", dest="n_results", type=int, default=None, help="N, SDM depth (default 100)")
    sy.add_argument("--keep", type=int, default=None, help="L: write only the L best pairs (default all)")
    sy.add_argument("--retrieval", choices=["sdm", "bm25"], default=None)
    sy.add_argument("--mu", type=float, default=None)
    sy.add_argument("--weights", default=None, help="SDM weights, e.g. 0.85,0.10,0.05")
    sy.add_argument("--seed", type=int, default=None)
    sy.add_argument("--workers", type=int, default=1, help="threads (-1 = all cores); output does not depend on it")
    sy.add_argument("--chunk-size", dest="chunk_size", type=int, default=20_000)
    sy.add_argument("--restart", action="store_true", help="discard finished chunks of an earlier run")
    sy.add_argument("--keep-parts", dest="keep_parts", action="store_true")
    sy.add_argument("--quiet", action="store_true")
    from pysynth.pipelines import add_executor_arguments

    add_executor_arguments(sy)
    sy.set_defaults(func=_cmd_synthesize)

    from pysynth.k2q.table2 import add_command as add_table2

    add_table2(sub)

    from pysynth.data.synthetic import add_command as add_make_corpus

    add_make_corpus(sub)

    t1 = sub.add_parser("table1", help="reproduce Table 1 and Fig. 6 of Ding & Balog 2018 on the shared data")
    t1.add_argument("--repeats", type=int, default=10, help="R repetitions (the paper: 100)")
    t1.add_argument("--folds", type=int, default=5)
    t1.add_argument("--seed", type=int, default=0)
    t1.add_argument("--workers", type=int, default=1)
    t1.add_argument("--data", default=None, help="shared data folder (default: ../shared/data or $PYSYNTH_DATA)")
    t1.add_argument("--out", default="results/k2q_table1")
    t1.set_defaults(func=_cmd_table1)
