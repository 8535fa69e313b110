"""The end-to-end K2Q synthetic-data pipeline: KQGM -> KQF -> TDF (Ding & Balog 2018, Sect. 3 and 6.2).

For every question ``q`` of the question set Q:

1. **KQGM** (Sect. 3.1, Eq. 1-6): sample ``m = 20`` candidate keyword queries
   (:class:`pysynth.k2q.keywords.KeywordGenerator`; paraphrase model, phrases as single terms).
2. **KQF** (Sect. 3.2.1, Eq. 7): rank Q with SDM for every candidate and keep the candidate whose
   top ``N = 100`` ranks ``q`` highest (:meth:`pysynth.retrieval.Index.rank_of` +
   :func:`pysynth.filtering.kqf_from_ranks`; ties to the first candidate).  Without KQF one
   candidate is sampled, which is distributed as the paper's "random one of the 20".
3. **TDF** (Sect. 3.2.2, Eq. 8): retrieval precision ``P(k, q) = |C_q ∩ RR(k)| / |RR(k)|`` of the
   chosen query's top ``N`` against the paraphrase cluster ``C_q`` (``q`` alone when it has none);
   pairs are ranked by it (precision descending, then input order) and the top ``L`` form
   ``T_L``.  Without TDF, ``T_L`` is a seeded random sample, as in the paper's Fig. 7.

The output (JSON Lines, or Parquet when the name ends in ``.parquet``) has one row per question
with a non-empty keyword query, **in input order**::

    {"id", "question", "keywords", "rr", "precision", "cluster_id", "tdf_rank"}

``tdf_rank`` is the pair's 0-based position in the TDF ranking (or the random order without
TDF), so ``T_L`` is the rows with ``tdf_rank < L`` (``keep=L`` writes only those).  The run's
signature -- configuration, seed, input fingerprint, versions, row counts and the vocabulary
coverage of ``T_L`` (Fig. 8) -- is stored in the Parquet schema metadata (key ``pysynth``) or,
for JSON Lines, in ``OUT.meta.json``.

Long runs: the pipeline is a stage of :mod:`pysynth.pipelines` -- ``prepare`` (statistics,
phrases, clusters, SDM index, written to ``OUT.parts/context``), pure chunks of KQGM -> KQF ->
TDF over ranges of questions, ``finish`` (TDF ranking, coverage, rows).  Each finished chunk is
written atomically to ``OUT.parts/`` and a rerun with the same inputs and configuration resumes
after it.  Chunks run in-process (``executor="local"``) or on Ray actors (``executor="ray"``).
The output does not depend on the executor, the chunk size, the number of workers, or on
whether (and where) the run was interrupted: every random draw is keyed by the question's
global index (:mod:`pysynth.sampling`'s counter-based generator).

Examples
--------
>>> from pysynth.k2q.synthesize import synthesize, PRESETS
>>> sorted(PRESETS)
['baseline', 'par', 'par-ph', 'par-ph-kqf', 'par-ph-kqf-tdf']
"""
from __future__ import annotations

import dataclasses
import itertools
import json
import os
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Hashable, List, Mapping, Optional, Tuple, Union

import numpy as np

from pysynth import io, pipelines, store
from pysynth import signature as _signature
from pysynth._validate import MAX_CANDIDATES as MAX_M
from pysynth._validate import MAX_DEPTH as MAX_N_RESULTS
from pysynth._validate import clip as _clip
from pysynth.sampling.keywords import take_rows as _gather

__all__ = ["SynthesisConfig", "PRESETS", "SynthesisResult", "synthesize", "read_questions"]

FORMAT = "pysynth.k2q.synthetic"
FORMAT_VERSION = 1
_CONTEXT_FORMAT = "pysynth.k2q.synthesize.context"


@dataclass(frozen=True)
class SynthesisConfig:
    """Configuration of :func:`synthesize` (defaults: the paper's m, N and our best KQGM).

    Parameters
    ----------
    model : {"paraphrase", "baseline"}
        KQGM (Sect. 3.1.3 / 3.1.1).
    strategy : {"discriminative", "popular", "combination"}
        Term selection strategy (Sect. 3.1.1); default: the best of our Table 1 reproduction.
    phrases : bool
        Detect phrases and keep them as single terms (Sect. 3.1.4).
    lam, alpha, beta : float
        Eq. 1 collection weight and Eq. 6 question/paraphrase weights.
    m : int
        Candidate keyword queries per question (the paper's m = 20); only used with ``kqf``.
    kqf : bool
        Apply the keyword query filter (Eq. 7).
    tdf : bool
        Rank pairs by the training data filter (Eq. 8); otherwise by a seeded random order.
    n_results : int
        N, the depth of the SDM result lists for KQF and TDF (the paper's N = 100).
    keep : int or None
        L: write only the ``keep`` best pairs (``None``: all, each with its ``tdf_rank``).
    retrieval : {"sdm", "bm25"}
        Retrieval model of the filters (the paper: SDM).
    mu : float
        SDM Dirichlet prior.
    weights : tuple of 3 floats
        SDM weights (unigram, #od:1, #uw:8).
    seed : int
        Seed of the keyword sampler and of the random order without TDF.
    term_order : {"question", "sampled"}
        Order of a keyword query's terms: as they occur in the question (paraphrase-only terms
        last, in sampled order) or as sampled.  The paper does not say; T0's hand-written
        queries mostly keep the question's order.
    """

    model: str = "paraphrase"
    strategy: str = "discriminative"
    phrases: bool = True
    lam: float = 0.1
    alpha: float = 0.9
    beta: float = 0.1
    m: int = 20
    kqf: bool = True
    tdf: bool = True
    n_results: int = 100
    keep: Optional[int] = None
    retrieval: str = "sdm"
    mu: float = 2500.0
    weights: Tuple[float, float, float] = (0.85, 0.10, 0.05)
    seed: int = 0
    term_order: str = "question"

    def __post_init__(self):
        for name, hi in (("m", MAX_M), ("n_results", MAX_N_RESULTS)):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or not 1 <= v <= hi:
                raise ValueError(f"{name} must be an integer in 1..{hi:,}, got {_clip(v)}")
        if self.keep is not None and (isinstance(self.keep, bool) or not isinstance(self.keep, (int, np.integer))
                                      or self.keep < 0):
            raise ValueError(f"keep must be None or an integer >= 0, got {_clip(self.keep)}")
        if self.model not in ("paraphrase", "baseline"):
            raise ValueError(f"model must be 'paraphrase' or 'baseline', got {self.model!r}")
        if self.strategy not in ("popular", "discriminative", "combination"):
            raise ValueError(f"strategy must be 'popular', 'discriminative' or 'combination', got {self.strategy!r}")
        if self.term_order not in ("question", "sampled"):
            raise ValueError(f"term_order must be 'question' or 'sampled', got {self.term_order!r}")
        if self.retrieval not in ("sdm", "bm25"):
            raise ValueError(f"retrieval must be 'sdm' or 'bm25', got {self.retrieval!r}")
        w = tuple(float(x) for x in self.weights)
        if len(w) != 3:
            raise ValueError(f"weights must be 3 numbers (unigram, #od:1, #uw:8), got {self.weights!r}")
        object.__setattr__(self, "weights", w)
        if isinstance(self.seed, bool) or not isinstance(self.seed, (int, np.integer)) or not 0 <= self.seed < 2**63:
            raise ValueError(f"seed must be an integer in [0, 2**63), got {_clip(self.seed)}")

    def replace(self, **changes) -> "SynthesisConfig":
        return dataclasses.replace(self, **changes)

    def as_dict(self) -> Dict[str, Any]:
        d = dataclasses.asdict(self)
        d["weights"] = list(d["weights"])
        return d


#: The configurations of the paper's Fig. 7 ablation (KQGM with the *combination* strategy, as
#: in Sect. 7.1.2); pass ``config=PRESETS[name].replace(keep=L)`` for a given L.
PRESETS: Dict[str, SynthesisConfig] = {
    "baseline": SynthesisConfig(model="baseline", strategy="combination", phrases=False, kqf=False, tdf=False),
    "par": SynthesisConfig(model="paraphrase", strategy="combination", phrases=False, kqf=False, tdf=False),
    "par-ph": SynthesisConfig(model="paraphrase", strategy="combination", phrases=True, kqf=False, tdf=False),
    "par-ph-kqf": SynthesisConfig(model="paraphrase", strategy="combination", phrases=True, kqf=True, tdf=False),
    "par-ph-kqf-tdf": SynthesisConfig(model="paraphrase", strategy="combination", phrases=True, kqf=True, tdf=True),
}


@dataclass
class SynthesisResult:
    """What :func:`synthesize` wrote: the output path and its signature/metadata."""

    path: Path
    meta: Dict[str, Any]
    timings: Dict[str, float] = field(default_factory=dict)

    @property
    def n_rows(self) -> int:
        return int(self.meta["rows"]["written"])


# ---------------------------------------------------------------------------------------- input

@dataclass
class _Questions:
    ids: List[Any]
    texts: List[str]
    groups: List[Optional[Hashable]]


def _is_id(x) -> bool:
    return isinstance(x, str) or (isinstance(x, (int, np.integer)) and not isinstance(x, bool))


def read_questions(source, what: str = "questions") -> _Questions:
    """Rows ``{"question": str, "id": optional str|int, "cluster_id": optional}`` from JSON Lines
    (``.gz`` ok), Parquet, or any iterable of dicts (e.g. a Hugging Face ``datasets.Dataset``).
    Missing ids become the row number."""
    ids: List[Any] = []
    texts: List[str] = []
    groups: List[Optional[Hashable]] = []
    rows = iter(io.read_rows(source, what))
    with io.gc_paused():
        _read_columns(rows, what, ids, texts, groups)
    try:  # JSON may spell a lone surrogate (\\ud800); no tokenizer or writer can take it
        "".join(texts).encode("utf-8")  # one check for all (str never pairs surrogates)
    except UnicodeEncodeError:
        for i, q in enumerate(texts):
            try:
                q.encode("utf-8")
            except UnicodeEncodeError:
                raise ValueError(f"{what} row {i + 1}: 'question' is not valid Unicode (a lone surrogate); "
                                 "clean the text first") from None
    if len(set(ids)) != len(ids):
        seen: set = set()
        dup = next(x for x in ids if x in seen or seen.add(x))
        raise ValueError(f"{what}: duplicate id {dup!r}; ids must be unique")
    return _Questions(ids, texts, groups)


def _read_columns(rows, what: str, ids: list, texts: list, groups: list) -> None:
    """Append the rows' columns, 65,536 rows at a time (see _plain_rows)."""
    start = 0
    while True:
        batch: list = []
        try:
            batch.extend(itertools.islice(rows, 65_536))
        except Exception:  # a bad line: a bad row before it is reported first, as row by row
            _checked_rows(batch, start, ids, texts, groups, what)
            raise
        if not batch:
            break
        if not _plain_rows(batch, start, ids, texts, groups):
            _checked_rows(batch, start, ids, texts, groups, what)
        start += len(batch)


def _plain_rows(batch: list, start: int, ids: list, texts: list, groups: list) -> bool:
    """Append the columns of ``batch`` (rows ``start``, ...) when every row is a dict of plain
    values (what JSON Lines gives): a C-level pass per column instead of Python per row (the
    per-row checks were half of reading 3.17M questions); False (nothing appended) otherwise."""
    if set(map(type, batch)) != {dict}:
        return False
    get = dict.get
    q = list(map(get, batch, itertools.repeat("question")))
    rid = list(map(get, batch, itertools.repeat("id"), range(start, start + len(batch))))
    g = list(map(get, batch, itertools.repeat("cluster_id")))
    if set(map(type, q)) != {str} or not set(map(type, rid)) <= {str, int} \
            or not set(map(type, g)) <= {str, int, type(None)}:
        return False
    ids += rid
    texts += q
    groups += g
    return True


def _checked_rows(batch: list, start: int, ids: list, texts: list, groups: list, what: str) -> None:
    """Append ``batch`` row by row, raising for the first bad row (any row type, NumPy ids)."""
    plain = (str, int)  # the usual id types, checked by type() first: isinstance on ABCs is slow per row
    for i, r in enumerate(batch, start):
        if type(r) is not dict and not isinstance(r, Mapping):
            raise TypeError(f"{what} row {i + 1}: expected a dict with a 'question' field, got {type(r).__name__}")
        q = r.get("question")
        if type(q) is not str and not isinstance(q, str):
            raise ValueError(f"{what} row {i + 1}: needs a string field 'question'")
        rid = r.get("id", i)
        if type(rid) not in plain and not _is_id(rid):
            raise ValueError(f"{what} row {i + 1}: 'id' must be a string or an integer, got {rid!r}")
        g = r.get("cluster_id")
        if g is not None and type(g) not in plain and not _is_id(g):
            raise ValueError(f"{what} row {i + 1}: 'cluster_id' must be a string, an integer or null, got {g!r}")
        ids.append(rid.item() if isinstance(rid, np.integer) else rid)
        texts.append(q)
        groups.append(g.item() if isinstance(g, np.integer) else g)


def _apply_clusters(qs: _Questions, clusters, what: str = "clusters") -> None:
    """Merge a cluster table (``{cluster_id: [question ids]}`` or JSONL rows ``{"cluster_id", "ids"}``)."""
    if isinstance(clusters, Mapping):
        items = list(clusters.items())
    else:
        items = []
        for i, r in enumerate(io.read_rows(clusters, what)):
            if not isinstance(r, Mapping) or "cluster_id" not in r or not isinstance(r.get("ids"), list):
                raise ValueError(f"{what} row {i + 1}: needs 'cluster_id' and a list 'ids'")
            items.append((r["cluster_id"], r["ids"]))
    pos = {x: i for i, x in enumerate(qs.ids)}
    assigned: Dict[int, Hashable] = {}
    for cid, members in items:
        if not _is_id(cid):
            raise ValueError(f"{what}: cluster id {cid!r} must be a string or an integer")
        for qid in members:
            j = pos.get(qid)
            if j is None:
                raise ValueError(f"{what}: cluster {cid!r} names unknown question id {qid!r} "
                                 f"(not among the {len(qs.ids)} question ids)")
            if j in assigned and assigned[j] != cid:
                raise ValueError(f"{what}: question id {qid!r} is in two clusters ({assigned[j]!r} and {cid!r})")
            if qs.groups[j] is not None and qs.groups[j] != cid:
                raise ValueError(f"{what}: question id {qid!r} has cluster_id {qs.groups[j]!r} in the "
                                 f"questions but {cid!r} in {what}")
            assigned[j] = cid
    for j, cid in assigned.items():
        qs.groups[j] = cid


def _fingerprint(*parts: _Questions) -> str:
    """SHA-256 of each part's length, then its ``[id, question, cluster_id]`` records."""
    fp = _signature.Fingerprint()
    for qs in parts:
        fp.columns(qs.ids, qs.texts, qs.groups)  # the bytes of part(list(zip(...))), without the rows
    return fp.hexdigest()


# ------------------------------------------------------------------------------------ pipeline

def synthesize(
    questions,
    out: Union[str, os.PathLike],
    *,
    clusters=None,
    corpus=None,
    config: Optional[SynthesisConfig] = None,
    preset: Optional[str] = None,
    workers: int = 1,
    chunk_size: int = 20_000,
    resume: bool = True,
    keep_parts: bool = False,
    progress: bool = True,
    executor: Union[str, "pipelines.LocalExecutor", "pipelines.RayExecutor"] = "local",
    ray_address: Optional[str] = None,
    _stop_after_chunks: Optional[int] = None,
) -> SynthesisResult:
    """Generate filtered synthetic keyword-question pairs (Ding & Balog 2018, Sect. 3, 6.2).

    Parameters
    ----------
    questions : path (JSON Lines, ``.gz``, ``.parquet``) or iterable of dicts
        The questions ``q`` to pair with keyword queries: rows ``{"question", "id"?, "cluster_id"?}``.
        They are also the retrieval corpus Q of the filters and of the term statistics.
    out : path
        Output file; ``.parquet`` writes Parquet (needs pyarrow), anything else JSON Lines.
    clusters : path or dict, optional
        Paraphrase clusters as ``{cluster_id: [question ids]}`` or JSONL rows
        ``{"cluster_id", "ids"}``, merged with the questions' own ``cluster_id`` fields.
    corpus : path or iterable of dicts, optional
        Extra questions (same row format) added to Q for the statistics and retrieval only.
    config : SynthesisConfig, optional
        The pipeline's settings (default ``SynthesisConfig()``); or ``preset``: a name of
        :data:`PRESETS` (Fig. 7's ablation rows).
    workers : int
        Threads of the compiled stages (-1 = all cores); the output does not depend on it.
    chunk_size : int
        Questions per resumable chunk; the output does not depend on it.
    resume : bool
        Continue from the finished chunks in ``OUT.parts/`` when they were made by the same
        inputs and configuration (otherwise raise); ``False`` starts over.
    keep_parts : bool
        Keep ``OUT.parts/`` after the output is written.
    progress : bool
        Stage lines and a progress bar (terminal) or lines with rate and ETA on stderr.
    executor : {"local", "ray"} or an executor of :mod:`pysynth.pipelines`
        Where the chunks run; the output does not depend on it.
    ray_address : str, optional
        With ``executor="ray"``: the cluster to join (default: a local Ray).

    Returns
    -------
    SynthesisResult

    Raises
    ------
    ValueError
        empty question set, duplicate ids, unknown question ids in ``clusters``, bad settings,
        or leftover parts of a different run.
    """
    t_start = time.perf_counter()
    if config is not None and preset is not None:
        raise ValueError("pass config or preset, not both")
    if preset is not None:
        if preset not in PRESETS:
            raise ValueError(f"preset must be one of {sorted(PRESETS)}, got {preset!r}")
        config = PRESETS[preset]
    cfg = config or SynthesisConfig()
    if not isinstance(cfg, SynthesisConfig):
        raise TypeError(f"config must be a SynthesisConfig, got {type(cfg).__name__}")
    if isinstance(chunk_size, bool) or not isinstance(chunk_size, (int, np.integer)) or chunk_size < 1:
        raise ValueError(f"chunk_size must be an integer >= 1, got {chunk_size!r}")
    if isinstance(executor, str):
        executor = pipelines.make_executor(executor, workers=workers, ray_address=ray_address)
    elif ray_address is not None:
        raise ValueError("ray_address goes with executor='ray'; an executor object carries its own address")
    out = Path(out)
    if io.is_parquet(out):
        io.pyarrow_parquet("out")

    qs = read_questions(questions, "questions")
    if not qs.texts:
        raise ValueError("questions is empty: pass at least one question")
    if clusters is not None:
        _apply_clusters(qs, clusters)
    cq = read_questions(corpus, "corpus") if corpus is not None else _Questions([], [], [])
    stage = _K2QStage(cfg, qs, cq, out)
    res = pipelines.run(stage, out, executor=executor, chunk_size=int(chunk_size), resume=resume,
                        keep_parts=keep_parts, progress=progress, _stop_after_chunks=_stop_after_chunks)
    res.timings["total_s"] = time.perf_counter() - t_start
    stage.log(f"      done: {res.n_rows:,} pairs, mean RR {res.meta['rows']['mean_rr']:.3f}"
              + (f", mean precision {res.meta['rows']['mean_precision']:.3f}" if cfg.tdf else "")
              + f"; {res.timings['total_s']:.1f} s")
    return res


class _K2QKernel(pipelines.Kernel):
    """KQGM -> KQF -> TDF for the active questions ``[start, stop)`` (picklable: the config only)."""

    # the next chunk runs beside the current one: ~40 % of a chunk is NumPy/Python between the
    # compiled calls (which release the GIL), time in which the other core would idle
    chunks_ahead = 1

    def __init__(self, cfg: SynthesisConfig):
        self.cfg = cfg

    def open(self, context: Path):
        from pysynth import filtering, sampling
        from pysynth.k2q.keywords import KeywordGenerator
        from pysynth.retrieval import Index

        cfg = self.cfg
        st = store.load(context / "k2q", _CONTEXT_FORMAT, (1,), mmap=True)
        model = sampling.KeywordModel(model=cfg.model, strategy=cfg.strategy, lam=cfg.lam, alpha=cfg.alpha,
                                      beta=cfg.beta)
        return dict(gen=KeywordGenerator.load(context / "generator", mmap=True),
                    index=Index.load(context / "index", mmap=True), model=model, filtering=filtering,
                    n_corpus=int(st.meta["n_corpus"]), **st.arrays)

    def run_chunk(self, ctx, start: int, stop: int, workers: int = 1) -> Dict[str, np.ndarray]:
        cfg = self.cfg
        search_kw = dict(model=cfg.retrieval, mu=cfg.mu, weights=cfg.weights, workers=workers)
        return _run_chunk(ctx["gen"], ctx["index"], ctx["model"], ctx["filtering"], cfg,
                          cfg.m if cfg.kqf else 1, ctx["active"], start, stop, ctx["n_corpus"],
                          ctx["doc_clusters"], search_kw, workers, ctx["cluster_order"])

    def check(self, d, n: int) -> bool:
        if set(d) != {"kw_ids", "kw_off", "rr", "precision", "chosen"}:
            return False
        return (d["rr"].shape == (n,) and d["kw_off"].shape == (n + 1,)
                and int(d["kw_off"][-1]) == d["kw_ids"].shape[0])


class _K2QStage(pipelines.Stage):
    name = "kqgm+kqf+tdf"
    unit = "questions"

    def __init__(self, cfg: SynthesisConfig, qs: _Questions, cq: _Questions, out: Path):
        self.cfg, self.qs, self.cq, self.out = cfg, qs, cq, out
        self.kernel = _K2QKernel(cfg)
        self.m_gen = cfg.m if cfg.kqf else 1
        self.log = lambda msg: None
        self._sha: Optional[str] = None

    def signature(self) -> Dict[str, Any]:
        qs, cq = self.qs, self.cq
        if self._sha is None:  # asked for by the runner and again by finish: hash the input once
            self._sha = _fingerprint(qs, cq)
        return _signature.signature(FORMAT, FORMAT_VERSION, self.cfg.as_dict(), {
            "questions": len(qs.texts), "corpus": len(cq.texts), "sha256": self._sha})

    def prepare(self, context: Path, workers: int, log) -> int:
        """Statistics, phrases, clusters and the SDM index over corpus + questions (Sect. 3.1)."""
        from pysynth import sampling
        from pysynth.k2q.keywords import KeywordGenerator
        from pysynth.retrieval import Index

        cfg, qs, cq = self.cfg, self.qs, self.cq
        t = time.perf_counter()
        log(f"[1/3] statistics{' + phrases' if cfg.phrases else ''} and SDM index over "
            f"{len(qs.texts) + len(cq.texts):,} questions ...")
        gen = KeywordGenerator(cq.texts, qs.texts, cq.groups, qs.groups, phrases=cfg.phrases, workers=workers)
        index = Index.build(np.asarray(gen.corpus.ids), np.asarray(gen.corpus.offsets), len(gen.vocab),
                            workers=workers)
        doc_clusters = np.asarray(gen.cluster_rows, dtype=np.int64).copy()
        lone = doc_clusters < 0
        doc_clusters[lone] = doc_clusters.max(initial=-1) + 1 + np.arange(int(lone.sum()))
        model = sampling.KeywordModel(model=cfg.model, strategy=cfg.strategy, lam=cfg.lam, alpha=cfg.alpha,
                                      beta=cfg.beta)
        # questions made only of question words ("what is it?") get no keyword query; the others are
        # numbered 0.. in input order and that number keys their random draws
        active = np.flatnonzero(gen.samplable(model))
        gen.save(context / "generator")
        index.save(context / "index")
        store.save(context / "k2q", _CONTEXT_FORMAT, 1, arrays={
            "active": active.astype(np.int64), "doc_clusters": doc_clusters,
            "cluster_order": np.argsort(doc_clusters, kind="stable"),  # once, for every chunk's TDF
        }, meta={"n_corpus": gen.n_corpus})
        log(f"      {len(gen.vocab):,} terms, {index.n_postings:,} postings, {time.perf_counter() - t:.1f} s")
        return int(active.shape[0])

    def describe_chunks(self, n_items: int, n_chunks: int, chunk_size: int) -> str:
        cfg, m_gen = self.cfg, self.m_gen
        return (f"[2/3] {len(self.qs.texts):,} questions x {m_gen} candidate{'s' if m_gen > 1 else ''}, "
                f"KQF {'on' if cfg.kqf else 'off'}, TDF {'on' if cfg.tdf else 'off'}, N = {cfg.n_results}, "
                f"{n_chunks} chunk{'s' if n_chunks > 1 else ''} of {chunk_size:,}")

    def finish(self, context: Path, loaded: List[Dict[str, np.ndarray]], info) -> SynthesisResult:
        """TDF ranking (or the seeded random order), Fig. 8 coverage, rows in input order."""
        from pysynth import filtering, sampling
        from pysynth.k2q.keywords import KeywordGenerator

        self.log = info.log
        cfg, qs, out = self.cfg, self.qs, self.out
        t = time.perf_counter()
        n = len(qs.texts)
        gen = KeywordGenerator.load(context / "generator", mmap=True)
        active = store.load(context / "k2q", _CONTEXT_FORMAT, (1,)).arrays["active"]
        n_corpus = gen.n_corpus
        # back from the active questions to all questions (inactive: no keywords, rr 0)
        kw_ids = np.concatenate([p["kw_ids"] for p in loaded] + [np.zeros(0, np.int32)])
        lens = np.zeros(n, dtype=np.int64)
        rr = np.zeros(n, dtype=np.float64)
        prec = np.zeros(n, dtype=np.float64)
        if loaded:
            lens[active] = np.concatenate([np.diff(p["kw_off"]) for p in loaded])
            rr[active] = np.concatenate([p["rr"] for p in loaded])
            prec[active] = np.concatenate([p["precision"] for p in loaded])
        kw_off = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(lens, out=kw_off[1:])
        loaded.clear()
        valid = np.flatnonzero(lens > 0)  # a question with no eligible term has no keyword query
        if cfg.tdf:
            order = valid[filtering.tdf_order(prec[valid])]
        else:
            order = valid[np.random.default_rng([cfg.seed, 0x7DF]).permutation(valid.shape[0])]
        rank = np.full(n, -1, dtype=np.int64)
        rank[order] = np.arange(order.shape[0])
        L = order.shape[0] if cfg.keep is None else min(cfg.keep, order.shape[0])

        q_off = np.asarray(gen.corpus.offsets)[n_corpus:]
        q_ids = np.asarray(gen.corpus.ids)[q_off[0]:q_off[-1]]
        q_off = q_off - q_off[0]
        both_ids = np.concatenate([q_ids, kw_ids])
        both_off = np.concatenate([q_off, kw_off[1:] + q_off[-1]])
        # Fig. 8: the vocabulary (question + keyword terms) of T_L as a fraction of that of T
        rows2 = np.stack([valid, n + valid], 1).ravel()  # question i's terms, then its keyword terms
        tok, tok_off = _gather(both_ids, both_off, rows2)
        sizes = sorted({int(round(f * order.shape[0])) for f in (0.1, 0.25, 0.5, 0.75, 1.0)} | {L})
        cov = filtering.vocabulary_coverage(tok, np.searchsorted(valid, order), sizes, offsets=tok_off[::2],
                                            vocab_size=len(gen.vocab))
        summary = {
            "questions": n,
            "no_keywords": int(n - valid.shape[0]),
            "written": int(L),
            "rr_positive": int((rr[valid] > 0).sum()),
            "mean_rr": float(rr[valid].mean()) if valid.size else 0.0,
            "mean_precision": float(prec[valid].mean()) if (valid.size and cfg.tdf) else None,
        }
        meta = dict(self.signature(), rows=summary,
                    vocabulary_coverage=[[int(s), float(v)] for s, v in zip(sizes, cov)])
        keywords = gen.decode(sampling.Candidates(kw_ids, kw_off))
        sel = np.flatnonzero((rank >= 0) & (rank < L))
        rr_l, prec_l, rank_l = rr.tolist(), prec.tolist(), rank.tolist()  # Python numbers: no per-row casts
        rows = ({"id": qs.ids[i], "question": qs.texts[i], "keywords": keywords[i], "rr": rr_l[i],
                 "precision": None if not cfg.tdf else prec_l[i], "cluster_id": qs.groups[i],
                 "tdf_rank": rank_l[i]} for i in sel.tolist())
        info.log(f"[3/3] writing {L:,} pairs to {out} ...")
        out.parent.mkdir(parents=True, exist_ok=True)
        if io.is_parquet(out):
            _write_parquet(out, rows, meta, all(isinstance(x, int) for x in qs.ids),
                           all(g is None or isinstance(g, int) for g in qs.groups))
        else:
            # data first, metadata last: a run killed in between leaves the old metadata beside the
            # new rows, which a rerun replaces; never new metadata describing old rows
            io.write_jsonl(out, rows)
            if not io.is_device(out):  # /dev/null.meta.json was written beside the device (issue 27 probe)
                io.write_json(out.with_name(out.name + ".meta.json"), meta)
        info.timings["write_s"] = time.perf_counter() - t
        for i in order[: min(3, L)].tolist():
            info.log(f"      #{rank[i]} {keywords[i]!r} -> {qs.texts[i]!r}"
                     + (f" (precision {prec[i]:.2f})" if cfg.tdf else ""))
        return SynthesisResult(out, meta, dict(info.timings))


def _run_chunk(gen, index, model, filtering, cfg: SynthesisConfig, m_gen: int, active: np.ndarray,
               start: int, stop: int, n_corpus: int, doc_clusters: np.ndarray, search_kw: dict,
               workers: int, cluster_order: Optional[np.ndarray] = None) -> Dict[str, np.ndarray]:
    nq = stop - start
    rows = active[start:stop]

    def draw(sel: Optional[np.ndarray], m: int):
        # candidates of the chunk's questions `sel` (all: None), each keyed by its global index
        # (start + position), so they are those of one call over every question
        sub, first = (rows, start) if sel is None else (rows[sel], start + sel)
        c = gen.generate_ids(model, m=m, seed=cfg.seed, workers=workers, subset=sub, first_index=first)
        if cfg.term_order == "question":
            c = gen.order_like_questions(c, sub, m)
        return np.asarray(c.ids), np.asarray(c.offsets)

    docs = rows.astype(np.int64) + n_corpus
    # Candidate 0 of every question first; candidates 1 .. m-1 only for the questions round 0
    # leaves open (6-7 % at 3.17M): the candidates' random streams are independent, so these are
    # the candidates of drawing all m for all, ~8x fewer of them (sampling was ~10 % of a chunk).
    # Candidate j of open question i is row nq + slot[i] * m_gen + j of (c_ids, c_off).
    c_ids, c_off = draw(None, 1)
    slot = np.full(nq, -1, dtype=np.int64)
    # KQF (Eq. 7) = the first candidate with the smallest rank (0 = not retrieved).  Candidates are
    # scored in rounds, candidate j of every question still open in round j: a question whose best
    # rank is 1 is closed, since a later candidate can only tie and ties go to the first.  Same
    # result as ranking all m candidates (kqf_from_ranks), with ~m times fewer SDM queries when
    # most questions retrieve themselves first.
    best = np.zeros(nq, dtype=np.int64)
    chosen = np.zeros(nq, dtype=np.int32)
    open_ = np.arange(nq, dtype=np.int64)
    seen: Dict[int, set] = {}
    for j in range(m_gen):
        if open_.size == 0:
            break
        if j == 1:
            slot[open_] = np.arange(open_.shape[0])
            r_ids, r_off = draw(open_, m_gen)
            c_ids = np.concatenate([c_ids, r_ids])
            c_off = np.concatenate([c_off, r_off[1:] + c_off[-1]])
        at = open_ if j == 0 else nq + slot[open_] * m_gen + j  # the rows of candidate j
        # a candidate equal to an earlier one of its question has the same rank: never better.
        # (Questions still open after round 0 are few, but their candidates repeat often.)
        fresh = np.ones(open_.shape[0], dtype=bool)
        if j > 0:
            for t, (i, k) in enumerate(zip(open_.tolist(), at.tolist())):
                key = c_ids[c_off[k]:c_off[k + 1]].tobytes()
                s_i = seen.setdefault(i, {c_ids[c_off[i]:c_off[i + 1]].tobytes()})
                if key in s_i:
                    fresh[t] = False
                else:
                    s_i.add(key)
        # a candidate only matters if it beats the best rank so far: search no deeper than that
        # (rank_of stops once that many documents outrank the question); depths are bucketed
        # by powers of two to keep the number of calls small
        depth = np.where(best[open_] == 0, cfg.n_results, best[open_] - 1)
        bucket = np.where(best[open_] == 0, 64, np.floor(np.log2(np.maximum(depth, 1))).astype(np.int64))
        r = np.zeros(open_.shape[0], dtype=np.int64)
        for bk in np.unique(bucket[fresh]).tolist():
            sel = np.flatnonzero((bucket == bk) & fresh)
            q, qo = _gather(c_ids, c_off, at[sel])
            r[sel] = index.rank_of(q, qo, targets=docs[open_[sel]], n=int(depth[sel].max()), **search_kw)
        better = (r > 0) & ((best[open_] == 0) | (r < best[open_]))
        best[open_[better]] = r[better]
        chosen[open_[better]] = j
        open_ = open_[best[open_] != 1]
    rr = np.where(best > 0, 1.0 / np.maximum(best, 1), 0.0)
    kw_ids, kw_off = _gather(c_ids, c_off, np.where(chosen == 0, np.arange(nq, dtype=np.int64),
                                                    nq + slot * m_gen + chosen))
    if cfg.tdf:
        prec = _tdf_precision(index, filtering, kw_ids, kw_off, docs, best, doc_clusters, cfg.n_results,
                              search_kw, workers, cluster_order)
    else:
        prec = np.full(nq, np.nan)
    return {"kw_ids": kw_ids.astype(np.int32), "kw_off": kw_off, "rr": rr.astype(np.float64),
            "precision": np.asarray(prec, dtype=np.float64), "chosen": chosen}


#: clusters with more paraphrases than this get a full top-N search instead of one rank_of each
_RANK_MEMBERS_MAX = 8


def _tdf_precision(index, filtering, kw_ids, kw_off, docs, best, doc_clusters, N, search_kw, workers,
                   cluster_order=None):
    """Eq. 8, ``|C_q ∩ RR(k)| / |RR(k)|``, equal to :func:`pysynth.filtering.tdf_precision` over
    ``Index.search(k=N)`` lists but mostly without materializing them.

    ``|RR(k)|`` is ``min(N, #documents holding a query term)`` (only those are retrieved): ``N``
    when one term alone is in ``N`` documents, else the size of the union of the postings.
    ``q`` itself is in ``RR(k)`` iff its KQF rank is > 0; every other paraphrase ``d`` is iff
    ``Index.rank_of(k, d, n=N) > 0`` -- the position ``search`` would give it.  Questions in
    clusters larger than ``_RANK_MEMBERS_MAX + 1`` take the top-N search instead.
    """
    nq = docs.shape[0]
    a = index.arrays
    indptr, postings = a["indptr"], a["doc_ids"]
    df = np.diff(indptr)
    qlen = np.diff(kw_off)
    seg = np.repeat(np.arange(nq), qlen)
    max_df = np.zeros(nq, dtype=np.int64)
    np.maximum.at(max_df, seg, df[kw_ids])
    size = np.full(nq, N, dtype=np.int64)
    for i in np.flatnonzero(max_df < N).tolist():
        terms = kw_ids[kw_off[i]:kw_off[i + 1]]
        size[i] = min(N, np.unique(np.concatenate([postings[indptr[t]:indptr[t + 1]] for t in terms])).size
                      if terms.size else 0)
    # paraphrases of each question (same cluster id), other than the question itself
    order = np.argsort(doc_clusters, kind="stable") if cluster_order is None else cluster_order
    cl_sorted = doc_clusters[order]
    c = doc_clusters[docs]
    lo = np.searchsorted(cl_sorted, c, "left")
    hi = np.searchsorted(cl_sorted, c, "right")
    n_other = hi - lo - 1
    hits = (best > 0).astype(np.int64)
    small = np.flatnonzero((n_other > 0) & (n_other <= _RANK_MEMBERS_MAX))
    if small.size:
        cnt = n_other[small] + 1
        pair_q = np.repeat(small, cnt)
        first = np.zeros(small.size + 1, dtype=np.int64)
        np.cumsum(cnt, out=first[1:])
        member = order[np.repeat(lo[small], cnt) + np.arange(first[-1]) - np.repeat(first[:-1], cnt)]
        keep = member != docs[pair_q]
        pair_q, member = pair_q[keep], member[keep]
        q, qo = _gather(kw_ids, kw_off, pair_q)
        r = index.rank_of(q, qo, targets=member, n=N, **search_kw)
        np.add.at(hits, pair_q, (r > 0).astype(np.int64))
    prec = np.where(size > 0, hits / np.maximum(size, 1), 0.0)
    big = np.flatnonzero(n_other > _RANK_MEMBERS_MAX)
    if big.size:
        q, qo = _gather(kw_ids, kw_off, big)
        res = index.search(q, qo, k=N, **search_kw)
        prec[big] = filtering.tdf_precision(res.docs, questions=docs[big], clusters=doc_clusters, workers=workers)
    return prec


def _write_parquet(path: Path, rows, meta, int_ids: bool, int_clusters: bool) -> None:
    """Stream rows into Parquet (row groups of 100k: memory stays bounded); ids and cluster ids
    are strings unless all are integers."""
    import pyarrow as pa

    schema = pa.schema([
        ("id", pa.int64() if int_ids else pa.string()), ("question", pa.string()),
        ("keywords", pa.string()), ("rr", pa.float64()), ("precision", pa.float64()),
        ("cluster_id", pa.int64() if int_clusters else pa.string()), ("tdf_rank", pa.int64()),
    ])

    def cast(r):
        if not int_ids:
            r["id"] = str(r["id"])
        if not int_clusters and r["cluster_id"] is not None:
            r["cluster_id"] = str(r["cluster_id"])
        return r

    io.write_rows(path, (cast(r) for r in rows), schema=schema,
                  metadata={"pysynth": json.dumps(meta, sort_keys=True, ensure_ascii=False)})
