"""Paraphrasing by pivoting through two seq2seq models (Granstedt 2017, Sect. 3, Fig. 3.3).

question --forward (diverse beam search, B pivots)--> intermediate filter --(optionally strip "?"),
decode each distinct pivot once--> backward (B candidates per pivot) --> diversity score --> the chosen
paraphrases, each row keeping every other field of its source (the thesis: the VQA answers).

Pivots: ``"fr"`` (the shipped English->French and French->English models), ``"keywords"`` (keyword
queries from Ding & Balog 2018's generator, back to questions with the K2Q CopyNet: it stays in
the question domain), or ``"FWD,BWD"``, any two pysynth models (names, directories, training
runs) or local Hugging Face translation model directories.
"""
from __future__ import annotations

import dataclasses
import re
import time
import zlib
from dataclasses import dataclass
from typing import Any, Dict, List, Optional, Sequence, Tuple

import numpy as np

import pysynth.paraphrase.filters as S
from pysynth.decoding.config import SearchConfig, guard_changes, renamed
from pysynth.models.postprocess import match_case
from pysynth.models.text2text import HFTranslator, ModelTranslator, Text2Text, text2text

__all__ = ["ParaphraseConfig", "Paraphraser", "Translator", "ModelTranslator", "HFTranslator", "load_translator",
           "PIVOTS", "DECODES", "paraphrase_rows", "round_trip"]

#: the shipped pivots: name -> (forward model, backward model); "keywords" has a generator forward
PIVOTS = {"fr": ("en-fr-copynet-small", "fr-en-copynet-small"), "keywords": (None, "k2q-copynet-small")}
DECODES = ("dbs", "beam", "sample")
_TERM = re.compile(r"[\s.?!]*$")


@dataclass
class ParaphraseConfig:
    """Settings of :class:`Paraphraser` (defaults: the thesis's B = 16, G = 4, lambda = 0.5, top 3).

    Parameters
    ----------
    pivot : str
        ``"fr"``, ``"keywords"`` or ``"FWD,BWD"`` (model names or directories).
    decode : {"dbs", "beam", "sample"}
        Both stages: diverse beam search (Vijayakumar et al. 2016, Hamming diversity), standard
        beam search (the thesis's Table 3.8), or top-k / top-p sampling of ``beams`` outputs.
    beams, groups, diversity : int, int, float
        B, G and lambda; ``beams`` outputs per input in every mode.
    distinct : bool
        ``dbs``: groups never hold the same sequence (:attr:`pysynth.decoding.SearchConfig.distinct`),
        so each stage returns ``beams`` distinct outputs; False (default): the thesis's search,
        whose groups often merge (fewer distinct candidates than beam search).
    mode, top : str, int
        :func:`pysynth.paraphrase.filters.select`'s mode and count.
    unknown_penalty, length_penalty, violation_penalty, case_sensitive
        The score's settings (:func:`pysynth.paraphrase.filters.score`).
    ban_unk : bool
        Never generate ``<unk>`` (pysynth's models copy unknown source words instead); False
        gives the thesis's setting, where unknowns are filtered and penalised.
    strip_question : bool
        Remove a pivot's trailing "?" before the backward model (Sect. 3.2: the thesis's fre2eng
        model turned the word before a final "?" into <unk>). Off by default: pysynth's
        fr-en model, trained on punctuated sentences, does not stop without it (on 4 VQA
        questions: mean candidate 22 words and 31 % cut at 40 tokens, vs 5 words and none).
    top_k, top_p, temperature : sampling settings (``decode="sample"``).
        The search settings are checked, and handed to the models, as one
        :class:`pysynth.decoding.SearchConfig` (:attr:`search`).
    keywords : int
        ``pivot="keywords"``: keyword queries per question (default: ``beams``).
    backend : {"onnx", "torch", "auto"}
        How pysynth models run (onnx needs no torch; auto: onnx when onnxruntime is installed and
        the model has an export).
    threads : int
        onnxruntime / torch threads (0: their default).
    batch_size : int
        Inputs per decoding batch.
    seed : int
        Sampling and keyword-generation seed; a row's draws depend on the seed and its position
        in the input only.
    min_similarity : float, optional
        The meaning filter (issue 26): a candidate whose cosine with its question under the
        shipped encoder (:func:`pysynth.models.embed.similarity`, ``dup-minilm-wstb``) is below
        it is never chosen; the next best at or above it is (None: off, the thesis's selection).
    no_repeat_ngram, no_stutter : int, bool
        Both stages' degenerate-output guards (:class:`pysynth.decoding.SearchConfig`; on by
        default; ``0, False``: the thesis's plain search).
    """

    pivot: str = "fr"
    decode: str = "dbs"
    beams: int = 16
    groups: int = 4
    diversity: float = 0.5
    distinct: bool = False
    mode: str = "augmented"
    top: int = 3
    unknown_penalty: Optional[float] = None
    length_penalty: float = 10.0
    violation_penalty: float = 10.0
    case_sensitive: bool = True
    ban_unk: bool = True
    strip_question: bool = False
    top_k: int = 0
    top_p: float = 1.0
    temperature: float = 1.0
    keywords: int = 0
    backend: str = "onnx"
    threads: int = 0
    batch_size: int = 16
    seed: int = 0
    min_similarity: Optional[float] = None
    no_repeat_ngram: int = SearchConfig.no_repeat_ngram
    no_stutter: bool = SearchConfig.no_stutter

    def __post_init__(self):
        from pysynth.llm import is_llm_spec

        if not isinstance(self.pivot, str) or not self.pivot.strip():
            raise ValueError(f"pivot: must be 'fr', 'keywords' or 'FWD,BWD', got {self.pivot!r}")
        if self.pivot not in PIVOTS and len(self.pivot.split(",")) != 2 and not (
                "," not in self.pivot and is_llm_spec(self.pivot)):
            raise ValueError(f"pivot: must be 'fr', 'keywords', two models 'FWD,BWD' or an LLM spec (direct "
                             f"paraphrasing; docs/llm.md), got {self.pivot!r}")
        if self.decode not in DECODES:
            raise ValueError(f"decode: must be one of {DECODES}, got {self.decode!r}")
        if self.mode not in S.MODES:
            raise ValueError(f"mode: must be one of {S.MODES}, got {self.mode!r}")
        for name in ("top", "batch_size"):
            v = getattr(self, name)
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise ValueError(f"{name}: must be a positive integer, got {v!r}")
        from pysynth import _validate

        for name in ("unknown_penalty", "length_penalty", "violation_penalty"):  # NaN rejected every candidate
            if getattr(self, name) is not None:
                _validate.finite(getattr(self, name), name)
        m = self.min_similarity
        if m is not None and (isinstance(m, bool) or not isinstance(m, (int, float)) or not -1.0 <= m <= 1.0):
            raise ValueError(f"min_similarity: must be a cosine in [-1, 1] (e.g. 0.6) or None, got {m!r}")
        if self.backend not in ("onnx", "torch", "auto"):
            raise ValueError(f"backend: must be 'onnx', 'torch' or 'auto', got {self.backend!r}")
        self.search  # noqa: B018 - validates the search settings

    @property
    def search(self) -> SearchConfig:
        """Both stages' search: ``beams`` outputs per input (``groups`` of them for dbs)."""
        try:
            return SearchConfig(decode=self.decode, beam=self.beams, groups=self.groups, diversity=self.diversity,
                                n=self.beams, top_k=self.top_k, top_p=self.top_p, temperature=self.temperature,
                                ban_unk=self.ban_unk, seed=self.seed, distinct=self.distinct,
                                no_repeat_ngram=self.no_repeat_ngram, no_stutter=self.no_stutter)
        except ValueError as exc:
            raise renamed(exc, {"beam": "beams"}) from None

    @property
    def direct(self) -> bool:
        """One LLM spec: the LLM paraphrases the question itself (no pivot language)."""
        from pysynth.llm import is_llm_spec

        return self.pivot not in PIVOTS and "," not in self.pivot and is_llm_spec(self.pivot)

    @property
    def models(self) -> Tuple[Optional[str], str]:
        if self.pivot in PIVOTS:
            return PIVOTS[self.pivot]
        if self.direct:
            return None, self.pivot
        fwd, bwd = (p.strip() for p in self.pivot.split(","))
        return fwd, bwd

    def as_dict(self) -> Dict[str, Any]:
        d = dataclasses.asdict(self)
        if d["min_similarity"] is None:  # off: the settings (and run signatures) of before the filter
            del d["min_similarity"]
        changed = guard_changes(self.no_repeat_ngram, self.no_stutter)
        for k in ("no_repeat_ngram", "no_stutter"):  # the guards at their defaults: the signatures of before
            if k not in changed:
                del d[k]
        return d

    def replace(self, **changes) -> "ParaphraseConfig":
        """A copy with ``changes`` (validated again)."""
        return dataclasses.replace(self, **changes)


#: one direction of the pivot: ``translate(texts, cfg, seeds)`` -> per input, a list of
#: ``(text, logprob, group)`` in the search's order; ``valid(text)`` -> None or why the model
#: cannot take it; ``lowercases``: outputs come lower-cased (pysynth's tokenizer)
Translator = Text2Text


#: the languages an LLM pivot translates between (the ``translate`` role's {source} and {target})
LLM_PIVOT_LANGUAGES = ("English", "French")


def load_translator(model, backend: str = "onnx", threads: int = 0, llm=None, backward: bool = False) -> Translator:
    """A :class:`Translator` for a pysynth model name/directory, an ONNX export folder (runs on
    onnxruntime whatever ``backend``), a local Hugging Face directory
    (:func:`pysynth.models.text2text.text2text`) or an LLM spec (the ``translate`` role between
    :data:`LLM_PIVOT_LANGUAGES`, reversed when ``backward``; ``llm``: a :class:`pysynth.llm.LLMOptions`)."""
    from pysynth.llm import is_llm_spec

    if is_llm_spec(model):
        from pysynth.llm.text2text import open_text_role

        src, tgt = LLM_PIVOT_LANGUAGES[::-1] if backward else LLM_PIVOT_LANGUAGES
        return open_text_role(model, "translate", "text", llm, {"source": src, "target": tgt}, what="pivot model")
    return text2text(model, backend, threads=threads, what="pivot model")


def _finish_text(text: str, source: str) -> str:
    """A chosen paraphrase as output: its trailing punctuation replaced by the source's (Sect. 3.2:
    the "?" restored)."""
    core = text[: len(text) - len(_TERM.search(text).group(0))]
    tail = _TERM.search(source).group(0).strip()
    return core + (tail[-1:] if tail else "")


class Paraphraser:
    """The pivot pipeline over a list of questions (Granstedt 2017, Fig. 3.3).

    Parameters
    ----------
    config : ParaphraseConfig
    forward, backward : Translator, optional
        Default: the pivot's models (:data:`PIVOTS`, or ``config.pivot``'s two models).
    keywords : pysynth.sampling.keywords.KeywordGenerator, optional
        ``pivot="keywords"``: the generator whose questions are the inputs (see :meth:`run`).
    llm : pysynth.llm.LLMOptions, optional
        LLM pivots (``config.pivot`` an LLM spec, or two): parameters, prompt and client settings.
        One spec paraphrases directly (the ``paraphrase`` role reads the question, asked for
        ``config.top`` paraphrases); two translate there and back (the ``translate`` role).
    """

    def __init__(self, config: Optional[ParaphraseConfig] = None, forward: Optional[Translator] = None,
                 backward: Optional[Translator] = None, keywords=None, llm=None):
        self.cfg = cfg = config or ParaphraseConfig()
        fwd, bwd = cfg.models
        if cfg.pivot == "keywords":
            self.forward = None
            self.keywords = keywords
        elif cfg.direct:
            from pysynth.llm.text2text import Identity, open_text_role

            self.forward = forward or Identity()
            backward = backward or open_text_role(bwd, "paraphrase", "question", llm, {"n": cfg.top},
                                                  what="pivot")
        else:
            self.forward = forward or load_translator(fwd, cfg.backend, cfg.threads, llm)
        self.backward = backward or load_translator(bwd, cfg.backend, cfg.threads, llm, backward=True)
        #: seconds spent per stage over every :meth:`run` call (the cost split)
        self.timings: Dict[str, float] = {}
        self._samplable = None  # keywords pivot: the questions that have a samplable term

    def _similarity(self, question: str, cfg: ParaphraseConfig):
        """``texts -> cosines with question`` (the meaning filter's scorer, one call per question:
        the same batches, so the same scores, whatever the chunking)."""
        from pysynth.models.embed import similarity

        return lambda texts: similarity([question] * len(texts), texts, threads=cfg.threads)

    def _keyword_pivots(self, rows: Sequence[int], index: Sequence[int],
                        cfg: ParaphraseConfig) -> List[List[Tuple[str, float, int]]]:
        from pysynth.sampling.keywords import DEFAULT_CONFIG, make_model

        gen = self.keywords
        if gen is None:
            raise ValueError("pivot='keywords' needs a KeywordGenerator over the questions (paraphrase_rows builds it)")
        m = cfg.keywords or cfg.beams
        model = make_model(**DEFAULT_CONFIG)
        rows = np.asarray(rows, dtype=np.int64)
        if self._samplable is None:  # once per generator, not once per chunk
            self._samplable = gen.samplable(model)
        ok = self._samplable[rows]
        out: List[List[Tuple[str, float, int]]] = [[] for _ in rows]
        # draws keyed by the row's global position: the same queries whatever the chunking
        for j in np.flatnonzero(ok):
            c = gen.generate_ids(model, m=m, seed=cfg.seed, subset=rows[j : j + 1], first_index=int(index[j]))
            c = gen.order_like_questions(c, rows[j : j + 1], m)
            out[j] = [(q, 0.0, 0) for q in gen.decode(c)]
        return out

    def run(self, questions: Sequence[str], first_index: int = 0, rows: Optional[Sequence[int]] = None,
            config: Optional[ParaphraseConfig] = None) -> List[Dict[str, Any]]:
        """Paraphrase ``questions``; returns one dict per question: ``paraphrases``, ``candidates``
        (every candidate with its pivot, search scores and score components), ``pivots`` (every
        pivot with the filter rules it broke), ``counts`` and ``reason`` (why nothing was chosen).

        ``first_index``: the global position of ``questions[0]`` (keys sampling seeds and keyword
        draws); ``rows``: the questions' rows in the keyword generator (``pivot="keywords"``);
        ``config``: other search and selection settings for this call (same models).
        """
        cfg = config or self.cfg
        n = len(questions)
        seeds = [int(np.random.SeedSequence([cfg.seed, first_index + i]).generate_state(1)[0]) for i in range(n)]
        out: List[Dict[str, Any]] = [{"paraphrases": [], "candidates": [], "pivots": [], "reason": None,
                                      "counts": {}} for _ in range(n)]
        if cfg.min_similarity is not None:
            for o in out:
                o["similarity"] = []
        first_stage = self.backward if cfg.pivot == "keywords" else self.forward
        valid = []
        for i, q in enumerate(questions):
            why = first_stage.valid(q)
            if why:
                out[i]["reason"] = f"invalid question: {why}"
            else:
                valid.append(i)
        # 1. forward: B pivots per question
        t0 = time.perf_counter()
        if cfg.pivot == "keywords":
            kw_rows = list(rows) if rows is not None else list(range(first_index, first_index + n))
            piv = dict(zip(valid, self._keyword_pivots([kw_rows[i] for i in valid],
                                                       [first_index + i for i in valid], cfg)))
        else:
            piv = dict(zip(valid, self.forward.translate([questions[i] for i in valid], cfg,
                                                         [seeds[i] for i in valid])))
        t1 = time.perf_counter()
        # 2. intermediate filter, "?" stripped (strip_question), each distinct pivot decoded once
        todo: Dict[str, int] = {}
        kept: Dict[int, List[Tuple[int, str]]] = {}
        for i in valid:
            lst = []
            for r, (p, lp, g) in enumerate(piv[i]):
                broke = [] if cfg.pivot == "keywords" else S.pivot_rejections(p, questions[i])
                out[i]["pivots"].append({"pivot": p, "rank": r, "group": g, "logprob": round(float(lp), 6),
                                         "rejected": broke})
                if broke:
                    continue
                key = S.strip_question(p) if cfg.strip_question else p
                if not key.strip():
                    continue
                todo.setdefault(key, len(todo))
                lst.append((r, key, g, lp))
            kept[i] = lst
        keys = list(todo)
        # a pivot's sampling seed comes from its text: decoded once, the same whatever the chunking
        pivot_seed = {key: int(np.random.SeedSequence([cfg.seed, 0xBAC, zlib.crc32(key.encode("utf-8")), len(key)])
                               .generate_state(1)[0]) for key in keys}
        good = [key for key in keys if not self.backward.valid(key)]
        t2 = time.perf_counter()
        back = dict(zip(good, self.backward.translate(good, cfg, [pivot_seed[key] for key in good])))
        t3 = time.perf_counter()
        # 3. candidates in generation order, scored and chosen
        sel_kw = dict(mode=cfg.mode, top=cfg.top, unknown_penalty=cfg.unknown_penalty,
                      length_penalty=cfg.length_penalty, violation_penalty=cfg.violation_penalty,
                      case_sensitive=cfg.case_sensitive, min_similarity=cfg.min_similarity)
        for i in valid:
            q = questions[i]
            cands, meta, decoded = [], [], set()
            for r, key, pg, plp in kept[i]:
                if key in decoded:  # the same pivot twice for one question: its candidates once
                    continue
                decoded.add(key)
                for br, (text, lp, g) in enumerate(back.get(key, [])):
                    t = match_case(text, q) if self.backward.lowercases else text
                    cands.append(t)
                    meta.append({"pivot": key, "pivot_rank": r, "pivot_group": pg, "pivot_logprob": round(float(plp), 6),
                                 "rank": br, "group": g, "logprob": round(float(lp), 6)})
            sim = self._similarity(q, cfg) if cfg.min_similarity is not None else None
            chosen, scored = S.select(q, cands, return_scores=True, similarity=sim, **sel_kw) if cands else ([], [])
            by_text = {s.text: s for s in scored}
            rec, seen_text = [], set()
            for c, m in zip(cands, meta):
                d = {**m, **by_text[c].as_dict()}
                if sim is not None:
                    d["similarity"] = by_text[c].similarity
                if c in seen_text:  # a repeat is scored with its first occurrence, which is the one chosen
                    d["chosen"], d["repeat"] = False, True
                seen_text.add(c)
                rec.append(d)
            o = out[i]
            o["paraphrases"] = [_finish_text(c, q) for c in chosen]
            o["candidates"] = rec
            below = 0
            if sim is not None:
                o["similarity"] = [by_text[c].similarity for c in chosen]
                below = sum(s.similarity is not None and s.similarity < cfg.min_similarity for s in scored)
            rejected = sum(bool(p["rejected"]) for p in o["pivots"])
            o["counts"] = {"pivots": len(o["pivots"]), "pivots_rejected": rejected,
                           "pivots_decoded": len(decoded), "candidates": len(cands),
                           "distinct_candidates": len(by_text), "chosen": len(chosen)}
            if sim is not None:
                o["counts"]["below_similarity"] = below
            for rule in S.PIVOT_RULES:
                o["counts"]["rule_" + rule] = sum(rule in p["rejected"] for p in o["pivots"])
            # an LLM stage that gave nothing usable names why (llm_empty, llm_unparsable, llm_refused)
            if not o["pivots"]:
                o["reason"] = getattr(self.forward, "last_reasons", {}).get(questions[i]) or (
                    "no pivot (no keyword query)" if cfg.pivot == "keywords" else "no pivot")
            elif not kept[i]:
                o["reason"] = "every pivot rejected by the intermediate filter"
            elif not cands:
                why = getattr(self.backward, "last_reasons", {})
                o["reason"] = next((why[k] for _, k, _, _ in kept[i] if k in why), None) or \
                    "the backward model gave no candidate (no pivot it can read)"
            elif not chosen and below:
                o["reason"] = "every candidate scoring above 0 is under min_similarity"
            elif not chosen:
                o["reason"] = "no candidate scored above 0"
        t4 = time.perf_counter()
        for k, v in (("forward_s", t1 - t0), ("filter_s", t2 - t1), ("backward_s", t3 - t2), ("select_s", t4 - t3)):
            self.timings[k] = self.timings.get(k, 0.0) + v
        return out


def round_trip(texts: Sequence[str], pivot: str = "fr", beam: int = 4, backend: str = "onnx",
               threads: int = 0) -> List[str]:
    """Round-trip translation through the pivot's two models
    (:func:`pysynth.models.text2text.round_trip`, where it lives)."""
    from pysynth.models.text2text import round_trip as _round_trip

    cfg = ParaphraseConfig(pivot=pivot, decode="beam", beams=beam, groups=1, backend=backend, threads=threads)
    if cfg.pivot == "keywords":
        raise ValueError("pivot: round_trip needs two translation models ('fr' or 'FWD,BWD'), not 'keywords'")
    fwd, bwd = cfg.models
    return _round_trip(texts, load_translator(fwd, backend, threads), load_translator(bwd, backend, threads), beam=beam,
                       batch_size=cfg.batch_size)


def paraphrase_rows(rows: Sequence[Dict[str, Any]], config: Optional[ParaphraseConfig] = None,
                    paraphraser: Optional[Paraphraser] = None) -> List[Dict[str, Any]]:
    """Paraphrase ``rows`` (``{"id"?, "question", ...}``) in memory; returns the output rows
    ``{"id", "question", "paraphrases", ..., "reason"?}`` with every other field carried over.
    For files, resumable and on Ray, use :func:`pysynth.paraphrase.run` (``pysynth paraphrase``)."""
    qs = _questions(rows)
    cfg = config or (paraphraser.cfg if paraphraser else ParaphraseConfig())
    p = paraphraser
    if p is None:
        kw = _keyword_generator(qs) if cfg.pivot == "keywords" else None
        p = Paraphraser(cfg, keywords=kw)
    res = p.run(qs)
    return [_out_row(r, i, x) for i, (r, x) in enumerate(zip(rows, res))]


def _questions(rows: Sequence[Dict[str, Any]]) -> List[str]:
    qs = []
    for i, r in enumerate(rows):
        if not isinstance(r, dict):
            raise TypeError(f"rows[{i}]: expected an object with a 'question' field, got {type(r).__name__}")
        q = r.get("question")
        if not isinstance(q, str):
            raise ValueError(f"rows[{i}]: 'question' must be a string, got {type(q).__name__}")
        qs.append(q)
    return qs


def _keyword_generator(questions: Sequence[str], workers: int = 1):
    from pysynth.sampling.keywords import KeywordGenerator

    return KeywordGenerator([], list(questions), workers=workers)


def _out_row(row: Dict[str, Any], index: int, res: Dict[str, Any]) -> Dict[str, Any]:
    out = {"id": row.get("id", index), "question": row["question"], "paraphrases": res["paraphrases"]}
    if "similarity" in res:  # min_similarity: the chosen paraphrases' cosines, in their order
        out["similarity"] = res["similarity"]
    out.update({k: v for k, v in row.items() if k not in out})
    if res["reason"]:
        out["reason"] = res["reason"]
    return out
