"""Weak supervision from unlabelled questions (Rücklé et al. 2019, Sect. 3 and Appendix A): the
WS-TB and DQG training pairs.

Preprocessing (Appendix A, :mod:`pysynth.dup.prep`): a body's HTML becomes text — code blocks (``<pre>``) and images
dropped, inline ``<code>`` kept as its text, each paragraph and list item one line, a link
becomes its text (a bare URL becomes ``URL``), entities decoded; paragraphs under ``min_words``
words are dropped, and the paragraph kept as the body is the one closest to the title (TF-IDF
cosine over the site's bodies), or the whole body (``select="all"``).

WS-TB: each question's (title, body) is a positive pair; its ``negatives`` random bodies come from
other questions of the same site and are never the question itself, one of its known duplicates
(PostLinks, LinkTypeId 3) or an excluded (evaluation) id — the released code allows the first.
DQG: (title, the title a generator writes from the body, :mod:`pysynth.dup.dqg`), negatives the
same way. Every question left out is counted by reason.

:func:`make_pairs` (``pysynth dup pairs``) runs either or both as a resumable job on the
pipelines runner: the questions are prepared once, the titles are generated in chunks (the
expensive part), and the rows are assembled at the end; a question's negatives come from a
generator seeded by (seed, method, site, post id), so the bytes do not depend on chunking,
executor or interruptions.
"""
from __future__ import annotations

import hashlib
import random
from collections import Counter
from pathlib import Path
from typing import Any, Dict, Iterable, Iterator, List, Optional, Sequence, Set, Tuple

import numpy as np

from pysynth import io, llm, pipelines
from pysynth import signature as _signature
from pysynth.decoding.config import SearchConfig, guard_changes
from pysynth.dup.prep import Questions, _check_exclude, questions
from pysynth.pipelines.rows import iter_rows, pack_rows

__all__ = ["draw_negatives", "ws_tb_pairs", "make_pairs", "METHODS"]


def draw_negatives(key: str, n: int, k: int, banned: Set[int]) -> List[int]:
    """``k`` distinct indices in ``range(n)`` outside ``banned`` (all of them, shuffled, when
    fewer exist), from a generator seeded by ``key`` alone: a question's negatives do not depend
    on the order or chunking of the others."""
    rng = random.Random(key)  # str seeds are hashed with SHA-512: the same on every run
    allowed = n - len(banned)
    if allowed <= k:
        out = [j for j in range(n) if j not in banned]
        rng.shuffle(out)
        return out
    out, seen = [], set(banned)
    while len(out) < k:
        j = rng.randrange(n)
        if j not in seen:
            seen.add(j)
            out.append(j)
    return out


def _pairs_of(qs: Questions, sides: List[Optional[str]], method: str, negatives: int, seed: int,
              counts: Counter) -> Iterator[dict]:
    """Rows of one method: question i's positive (its title, ``sides[i]``) and ``negatives``
    pairs (its title, ``sides[j]``) with j never i, a known duplicate of i, or a question
    without a side (``None``: dropped, e.g. no generated title)."""
    ok = [i for i, s in enumerate(sides) if s is not None]
    pos_of = {qs.rows[i]["post_id"]: p for p, i in enumerate(ok)}
    for p, i in enumerate(ok):
        q = qs.rows[i]
        pid = q["post_id"]
        yield {"site": qs.site, "post_id": pid, "method": method, "title": q["title"], "body": sides[i], "label": 1}
        banned = {p} | {pos_of[x] for x in qs.duplicates.get(pid, ()) if x in pos_of}
        got = draw_negatives(f"{seed}/{method}/{qs.site}/{pid}", len(ok), negatives, banned) if negatives else []
        for j in got:
            n = qs.rows[ok[j]]
            yield {"site": qs.site, "post_id": pid, "method": method, "title": q["title"], "body": sides[ok[j]],
                   "label": 0, "neg_post_id": n["post_id"]}
        if len(got) < negatives:
            counts[f"{method}_fewer_negatives"] += 1
        counts[f"{method}_pairs"] += 1 + len(got)


def ws_tb_pairs(dump, negatives: int = 1, min_words: int = 10, select: str = "tfidf", min_score: Optional[int] = None,
                exclude: Iterable[str] = (), seed: int = 0, holdout_linked: bool = False
                ) -> Tuple[List[dict], Dict[str, int]]:
    """WS-TB pairs of one Stack Exchange dump (a folder or archive; :class:`pysynth.datasets.stackexchange.Dump`).

    Returns ``(rows, counts)``: rows ``{"site", "post_id", "method": "ws-tb", "title", "body",
    "label"}`` — label 1 for the question's own body, 0 for each of ``negatives`` other bodies
    (``neg_post_id`` says whose); counts of questions kept and left out per reason
    (:func:`questions`, whose arguments these are). Deterministic for a seed.
    """
    _check_negatives(negatives)
    qs = questions(dump, min_words, select, min_score, exclude, holdout_linked)
    counts = Counter(qs.counts)
    rows = list(_pairs_of(qs, [q["body"] for q in qs.rows], "ws-tb", negatives, seed, counts))
    counts["pairs"] = len(rows)
    return rows, dict(counts)


def _check_negatives(negatives) -> None:
    if isinstance(negatives, bool) or not isinstance(negatives, int) or negatives < 0:
        raise ValueError(f"negatives: must be an integer >= 0, got {negatives!r}")


# ------------------------------------------------------------------------------ the resumable job

METHODS = ("ws-tb", "dqg", "both")
FORMAT = "pysynth.dup.pairs"
FORMAT_VERSION = 1


def _file_sha(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for b in iter(lambda: f.read(1 << 20), b""):
            h.update(b)
    return h.hexdigest()


def dump_fingerprint(dump) -> dict:
    """``{"site", "tables": {file name: sha256}}`` of the Posts and PostLinks tables (or the
    archive) a dump's pairs are made from."""
    from pysynth.datasets.stackexchange import open_dump

    d = open_dump(dump)
    files = {}
    for t in ("Posts", "PostLinks"):
        if d.has(t):
            src = d.source(t)
            files[src.path.name] = _file_sha(src.path)
    return {"site": d.site, "tables": files}


class _Kernel(pipelines.RowKernel):
    """Generated titles (DQG) for questions ``[start, stop)`` (picklable: the configuration only)."""

    filter_field = "title"  # --min-wellformed: a generated title

    def __init__(self, dqg: bool, model: Optional[str], beam: int, threads: int, batch_size: int,
                 filters: tuple = (), llm_options=None, guards: Optional[dict] = None):
        self.dqg, self.model, self.beam, self.threads, self.batch_size = dqg, model, beam, threads, batch_size
        self.filters, self.llm, self.guards = filters, llm_options, guards or {}

    def load(self, context: Path, rows):
        if not self.dqg:
            return None
        from pysynth.dup.dqg import TitleGenerator

        return TitleGenerator(self.model, threads=self.threads, llm=self.llm)

    def generate(self, gen, rows: List[dict], start: int, workers: int) -> pipelines.Chunk:
        if gen is None:
            return pipelines.Chunk([{} for _ in rows])
        got = gen.generate([r["body"] for r in rows], beam=self.beam, batch_size=self.batch_size, **self.guards)
        return pipelines.Chunk([{"title": t, "reason": r} for t, r in got],
                               counts=llm.usage(gen.generator) if hasattr(gen.generator, "role") else None)

    def filter_when(self, row: dict) -> bool:
        return bool(row.get("title")) and not row.get("reason")

    def judge(self, row: dict, keep: bool) -> None:
        if not keep:  # counted as dqg_not_wellformed; the question gets no DQG pair
            row.update(title="", reason="not_wellformed")

    def judge_filter(self, f, row: dict, keep: bool) -> None:
        if isinstance(f, pipelines.PairScoreFilter):
            if not keep:  # counted as dqg_not_similar; the question gets no DQG pair
                row.update(title="", reason=f.reason)
        else:
            self.judge(row, keep)


class _Stage(pipelines.RowStage):
    name = "dup pairs"
    unit = "questions"

    def __init__(self, dumps: List, out: Path, method: str, config: dict, exclude: Set[str], model: Optional[str],
                 beam: int, threads: int, batch_size: int, min_wellformed: Optional[float] = None,
                 min_similarity: Optional[float] = None, llm_options=None):
        super().__init__(None, out)
        self.llm = llm_options
        self.dumps, self.method, self.config, self.exclude = dumps, method, config, exclude
        self.model = model
        filters = ()
        if min_wellformed is not None and method != "ws-tb":
            from pysynth.quality import wellformedness

            filters = (pipelines.ScoreFilter("wellformed", min_wellformed, wellformedness),)
        if min_similarity is not None and method != "ws-tb":  # the meaning filter: generated title vs its body
            import functools

            from pysynth.models.embed import similarity

            filters += (pipelines.PairScoreFilter("similarity", min_similarity,
                                                  functools.partial(similarity, threads=threads), source="body"),)
        self.kernel = _Kernel(method != "ws-tb", model, beam, threads, batch_size, filters, llm_options,
                              {k: config[k] for k in ("no_repeat_ngram", "no_stutter") if k in config})
        self._sets: List[dict] = []

    def signature(self) -> Dict[str, Any]:
        models = {}
        if self.method != "ws-tb":
            from pysynth.dup.dqg import DEFAULT_MODEL, EXTRACT
            from pysynth.models.registry import generator_fingerprint

            models = {"dqg": {"name": EXTRACT, "rule": 2} if self.model == EXTRACT else
                      generator_fingerprint(self.model, DEFAULT_MODEL, "dqg", self.llm)}
        return _signature.signature(
            FORMAT, FORMAT_VERSION, {"method": self.method, **self.config,
                                     "exclude": _signature.fingerprint(sorted(self.exclude))},
            {"dumps": [dump_fingerprint(d) for d in self.dumps]},
            extra_versions=("onnxruntime",) if models and self.model != EXTRACT else (), models=models)

    def items(self, workers: int, log) -> List[dict]:
        c = self.config
        self._sets, rows = [], []
        for d in self.dumps:
            qs = questions(d, c["min_words"], c["select"], c["min_score"], self.exclude, c["holdout_linked"])
            self._sets.append({"site": qs.site, "n": len(qs.rows), "counts": qs.counts,
                               "duplicates": {k: sorted(v) for k, v in sorted(qs.duplicates.items())},
                               "matched": sorted(qs.matched)})
            rows += qs.rows
            log(f"{qs.site}: {qs.counts}")
        return rows

    def context_arrays(self) -> Dict[str, np.ndarray]:
        return pack_rows(self._sets, "sets")

    def describe_chunks(self, n_items: int, n_chunks: int, chunk_size: int) -> Optional[str]:
        if self.method == "ws-tb":
            return None
        return (f"{n_items:,} bodies -> titles ({self.model or 'default generator'}, beam {self.kernel.beam}); "
                f"{n_chunks} chunk{'s' if n_chunks > 1 else ''} of {chunk_size:,}")

    def finish(self, context: Path, parts: List[Dict[str, np.ndarray]], info) -> Dict[str, Any]:
        arrays = self.load_rows(context)
        self._questions = (list(iter_rows(arrays)), list(iter_rows(arrays, "sets")))
        return super().finish(context, parts, info)

    def write(self, parts: List[Dict[str, np.ndarray]], info) -> Dict[str, Any]:
        rows, sets = self._questions
        gen = list(self.iter_rows(parts))
        c = self.config
        summary: Dict[str, Any] = {"dumps": {}}
        matched: Set[str] = set()
        per_dump = []
        i0 = 0
        for s in sets:
            n = s["n"]
            qs = Questions(s["site"], rows[i0 : i0 + n], s["counts"], {k: set(v) for k, v in s["duplicates"].items()},
                           set(s["matched"]))
            matched |= qs.matched
            per_dump.append((qs, gen[i0 : i0 + n]))
            i0 += n

        def out_rows():
            for qs, g in per_dump:
                counts = Counter(qs.counts)
                it = []
                if self.method in ("ws-tb", "both"):
                    it.append(_pairs_of(qs, [q["body"] for q in qs.rows], "ws-tb", c["negatives"], c["seed"], counts))
                if self.method in ("dqg", "both"):
                    sides = []
                    for q, x in zip(qs.rows, g):
                        if x.get("reason"):
                            counts[f"dqg_{x['reason']}"] += 1
                        elif x["title"].lower() == q["title"].lower():
                            counts["dqg_same_as_title"] += 1  # kept: a trivial but true duplicate
                        sides.append(x.get("title") or None)
                    counts["dqg_titles"] = sum(s is not None for s in sides)
                    it.append(_pairs_of(qs, sides, "dqg", c["negatives"], c["seed"], counts))
                for gen_rows in it:
                    yield from gen_rows
                counts["pairs"] = sum(v for k, v in counts.items() if k.endswith("_pairs"))
                summary["dumps"][qs.site] = dict(counts)

        n_out = io.write_rows(self.out, out_rows())
        unknown = sorted(self.exclude - matched)
        summary.update({"method": self.method, "rows": n_out, "exclude_ids": len(self.exclude),
                        "exclude_ids_unknown": len(unknown),
                        **llm.summary(self.counts(parts), self.method != "ws-tb" and llm.is_llm_spec(self.model)),
                        "chunks_resumed": info.chunks_resumed})
        if unknown:
            summary["exclude_ids_unknown_first"] = unknown[:5]
            info.log(f"pysynth: {len(unknown)} of {len(self.exclude)} --exclude-ids name no question of these dumps "
                     f"(first: {', '.join(unknown[:5])})")
        return summary


def make_pairs(dumps: Sequence, out, method: str = "ws-tb", *, negatives: int = 1, min_words: int = 10,
               select: str = "tfidf", min_score: Optional[int] = None, exclude: Iterable[str] = (),
               holdout_linked: bool = False, seed: int = 0, model: Optional[str] = None, beam: int = 1,
               threads: int = 1, batch_size: int = 32, min_wellformed: Optional[float] = None,
               min_similarity: Optional[float] = None, no_repeat_ngram: int = SearchConfig.no_repeat_ngram,
               no_stutter: bool = SearchConfig.no_stutter,
               executor=None,
               workers: int = 1, ray_address: Optional[str] = None, chunk_size: int = 256, resume: bool = True,
               progress: bool = True, llm_options=None, _stop_after_chunks: Optional[int] = None) -> Dict[str, Any]:
    """Training pairs for duplicate detection from unlabelled questions (Rücklé et al. 2019,
    Sect. 3.2) into ``out`` (JSONL or Parquet), as a resumable pipeline job (``OUT.parts``).

    ``method``: ``"ws-tb"`` (title, body), ``"dqg"`` (title, title generated from the body by
    ``model``, default the shipped ``dup-dqg-copynet``, on onnxruntime; ``beam`` 1 is greedy
    decoding, which scored higher than a beam of 4 on its dev set; or an LLM spec, the ``dqg``
    prompt role, configured by ``llm_options``, a :class:`pysynth.llm.LLMOptions`) or ``"both"`` (the union,
    the paper's combined setting: each question's WS-TB rows then its DQG rows). Rows are
    ``{"site", "post_id", "method", "title", "body", "label"[, "neg_post_id"]}``: for DQG rows
    ``body`` holds a generated title. Each positive has ``negatives`` negatives drawn from the
    same site, never the question itself, a PostLinks duplicate of it or an excluded question
    (:func:`draw_negatives`, seeded per question). The other arguments are :func:`questions`'.

    ``min_wellformed``: a generated title whose well-formedness (:mod:`pysynth.quality`) is below
    it gives no DQG pair (counted as ``dqg_not_wellformed``). ``min_similarity``: the meaning filter,
    a generated title whose cosine with its body (:func:`pysynth.models.embed.similarity`) is
    below it gives no DQG pair (``dqg_not_similar``). ``no_repeat_ngram``, ``no_stutter``: the title
    search's degenerate-output guards (:class:`pysynth.decoding.SearchConfig`; on by default; in the
    signature only off their defaults). ``executor``: ``"local"``, ``"ray"``
    or an executor object (:func:`pysynth.pipelines.make_executor`; ``workers``, ``ray_address``).

    Returns the summary: per site the counts of questions left out per reason (and, for DQG,
    bodies the generator could not read or gave no title for), pairs, unknown ``exclude`` ids.
    The output bytes do not depend on the executor, the chunking or interruptions.
    """
    if method not in METHODS:
        raise ValueError(f"method: must be one of {', '.join(METHODS)}, got {method!r}")
    _check_negatives(negatives)
    if select not in ("tfidf", "all"):
        raise ValueError(f"select: must be 'tfidf' or 'all', got {select!r}")
    if isinstance(beam, bool) or not isinstance(beam, int) or beam < 1:
        raise ValueError(f"beam: must be a positive integer, got {beam!r}")
    if isinstance(dumps, (str, Path)):
        dumps = [dumps]
    dumps = list(dumps)
    if not dumps:
        raise ValueError("dumps: no dump given")
    sites = [_site_of(d) for d in dumps]
    dup = sorted({s for s in sites if sites.count(s) > 1})
    if dup:
        raise ValueError(f"dumps: site {dup[0]!r} given twice; pass each site's dump once")
    dqg = method != "ws-tb"
    guards = guard_changes(no_repeat_ngram, no_stutter)
    config = {"negatives": negatives, "min_words": min_words, "select": select, "min_score": min_score,
              "holdout_linked": bool(holdout_linked), "seed": seed, **({"beam": beam} if dqg else {}),
              **({"min_wellformed": min_wellformed} if dqg and min_wellformed is not None else {}),
              **({"min_similarity": min_similarity} if dqg and min_similarity is not None else {}),
              **(guards if dqg else {})}
    stage = _Stage(dumps, Path(out), method, config, _check_exclude(exclude), model, beam, threads, batch_size,
                   min_wellformed, min_similarity, llm_options)
    return stage.run(executor=executor if executor is not None else "local", workers=workers,
                     ray_address=ray_address, chunk_size=chunk_size, resume=resume, progress=progress,
                     _stop_after_chunks=_stop_after_chunks)


def _site_of(dump) -> str:
    from pysynth.datasets.stackexchange import open_dump

    return open_dump(dump).site
