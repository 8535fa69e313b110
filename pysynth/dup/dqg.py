"""Duplicate question generation, DQG (Rücklé et al. 2019, Sect. 3.2 and Appendix A.2): a
question generator trained to restore a question's title from its body, ``P(title(q) | body(q))``;
the title it generates for a body is then a duplicate of the question's real title
(:func:`pysynth.dup.pairs.make_pairs` with ``method="dqg"``).

The paper's generator is MQAN (LSTMs with a pointer-generator copy mechanism); pysynth trains the
registry's CopyNet (GRU encoder-decoder with attention and copying, :mod:`pysynth.models`), and
the AttNet (the same without copying) as the no-copy comparison of the paper's Tables 8 and 9
(there, the Transformer: no copy mechanism, it "falls back to outputting unrelated (but
grammatical) domain-specific text" on other sites).

Data: each question's (selected body paragraph, title) after Appendix A.1's filtering
(:func:`pysynth.dup.prep.questions`); the questions with a PostLinks duplicate are the
evaluation items of the dumps' duplicate sets and are held out by default. Early stopping on dev
BLEU as in the paper (Sect. 4.1), the dev set being a seeded fraction of the questions.

Command line (training needs torch; generation runs on onnxruntime)::

    pysynth dup train-dqg --in DUMP [--in DUMP ...] --out RUN [--arch copynet|attnet]
    pysynth dup export-dqg --model RUN --out ASSET_DIR        # int8 ONNX, no torch needed
    pysynth dup evaluate-dqg --model M --in DUMP [--backend torch]   # BLEU/ROUGE vs real titles
"""
from __future__ import annotations

import math
import random
import re
from pathlib import Path
from typing import Dict, List, Optional, Sequence, Tuple

__all__ = ["DEFAULT_MODEL", "EXTRACT", "training_rows", "split_dev", "train", "export", "extract_title", "rule_title",
           "TitleGenerator", "evaluate"]

#: the shipped generator (``pysynth/models/assets/dup-dqg-copynet``)
DEFAULT_MODEL = "dup-dqg-copynet"
#: the model spec of the extractive title writer (:func:`extract_title`; no weights)
EXTRACT = "extract"

_SENTENCE_END = re.compile(r"(?<=[.?!])\s+")
# A leading connective or a "my question is"-style preamble is not part of what a title asks.
_CONNECTIVE = re.compile(r"^(so|but|and|also|now|then|thus|hence|therefore|however|basically|well|ok|okay)\b,?\s+",
                         re.I)
_PREAMBLE = re.compile(r"^(my question is|the question is|my questions? (?:is|are)|i (?:was|am) wondering|i wonder|"
                       r"i would like to know|i'd like to know|i want to know|i'm wondering|question)\s*"
                       r"(?:[:,]|if|whether)?\s*", re.I)


def _trim(sentence: str) -> str:
    t = _PREAMBLE.sub("", _CONNECTIVE.sub("", sentence))
    return t[0].upper() + t[1:] if t else sentence


def rule_title(body: str, max_words: int = 19, fallback_words: int = 11) -> str:
    """A title cut from the body by a rule (the ``extract`` writer of session 9; one of the candidates
    :func:`extract_title` chooses from): its first question sentence (ending in ``?``) without a leading
    connective or preamble ("So,", "My question is"), at most ``max_words`` words; a body without
    one gives the first ``fallback_words`` words of its first sentence, trimmed the same way.

    The defaults were chosen by corpus BLEU + ROUGE-L on four Stack Exchange dumps and scored on the
    fifth (each site in turn, ``experiments/dqg_extract.py``; ``bench/RESULTS_generators.md``,
    "Extractive titles"). Whitespace-split words; ``""`` for a body without a word."""
    if not isinstance(body, str):
        raise TypeError(f"body: expected str, got {type(body).__name__}")
    for name, v in (("max_words", max_words), ("fallback_words", fallback_words)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name}: expected an int >= 1, got {v!r}")
    sentences = [x.strip() for x in _SENTENCE_END.split(body.strip()) if x.strip()]
    if not sentences:
        return ""
    asked = [x for x in sentences if x.endswith("?")]
    words = _trim(asked[0] if asked else sentences[0]).split()
    return " ".join(words[: max_words if asked else fallback_words])


_WORD = re.compile(r"\w+")
# English function words that open a question (the titles of the dumps mostly ask one)
_WH = frozenset("what which who whom whose when where why how".split())
_AUX = frozenset("is are was were am do does did can could should would will shall may might must has have had "
                 "isn't aren't don't doesn't didn't can't cannot shouldn't won't wouldn't".split())
_FIRST_PERSON = frozenset("i my we our i'm i've i'd me".split())
_CUTS = (6, 8, 11, 14, 19)  # word cuts of a candidate sentence
_MAX_SENTENCES = 12  # titles come from a paragraph's first sentences; this bounds the work on a long one
#: the candidate features, in the order of :func:`_title_candidates`' rows and of ``_TITLE_WEIGHTS``
TITLE_FEATURES = (
    "rule", "from_question", "ends_question", "first_question", "first_sentence", "second_sentence",
    "last_sentence", "position", "sentences", "wh_start", "aux_start", "first_person", "words", "log_words",
    "len_le8", "len_9_14", "len_15_20", "len_gt20", "cut", "kept_share", "trimmed", "tail", "head", "rest_overlap",
    "centrality", "coverage", "digit_share", "symbol_share", "short_last_word", "comma", "question_cut",
    "question_log_words")


def _log(x: float) -> float:
    return math.log(x) if x > 0 else 0.0


def _content(text: str) -> List[str]:
    """Lower-cased words of 4+ letters (a language-independent stand-in for content words)."""
    return [w for w in _WORD.findall(text.lower()) if len(w) >= 4 and not w.isdigit()]


def _comma_tail(text: str) -> str:
    """The clause after a sentence's last comma when it asks the question ("If X, how do I Y?" -> "How
    do I Y?"), else ``""``."""
    if not text.endswith("?") or ", " not in text:
        return ""
    tail = text.rsplit(", ", 1)[1]
    first = tail.split()[0].lower() if tail.split() else ""
    if (first in _WH or first in _AUX) and len(tail.split()) >= 3:
        return tail[0].upper() + tail[1:]
    return ""


# where a sentence's first clause ends: a comma, a parenthesis, a dash, or and/or/but opening a second question
_CLAUSE = re.compile(r",\s|\s\(|\s[-\u2013\u2014]\s|\s(?:and|or|but)\s(?=(?:%s)\b)" % "|".join(sorted(_WH | _AUX)),
                     re.I)


def _head_clause(text: str) -> str:
    """The first clause (4+ words) of a question that opens with a wh-word or an auxiliary, closed by
    ``?`` ("What is X, and how does it work?" -> "What is X?"), else ``""``."""
    words = text.split()
    if not text.endswith("?") or not words or not (words[0].lower() in _WH or words[0].lower() in _AUX):
        return ""
    m = _CLAUSE.search(text)
    head = text[: m.start()].rstrip(" ,;:") if m else ""
    return head + "?" if len(head.split()) >= 4 else ""


def _snap(words: Sequence[str], cut: int) -> int:
    """``cut`` moved back past closing lower-case words of 1-3 letters ("the", "of", "(or") and "I": a cut
    title should not end on a function word."""
    while cut > 3:
        w = words[cut - 1].lstrip("(\"'\u201c")
        if w and not (w.isalpha() and (w.islower() or len(w) == 1) and len(w) <= 3):  # "I" too
            break
        cut -= 1
    return cut


def _title_candidates(body: str) -> Tuple[List[str], List[List[float]]]:
    """``(texts, features)``: the titles a body offers (each of its first sentences, trimmed as in
    :func:`rule_title`, also as its asking clause after a comma and as its first clause, whole and
    cut to each of a few word counts, a cut moved back off closing function words; the rule's question
    title is one of them when it is a whole sentence) and a row of
    :data:`TITLE_FEATURES` for each: cheap features of position, form, length and word overlap with
    the rest of the body."""
    sentences = [x.strip() for x in _SENTENCE_END.split(body.strip()) if x.strip()]
    if not sentences:
        return [], []
    rule = rule_title(body).rstrip(".,;:")
    n = len(sentences)
    first_q = next((i for i, x in enumerate(sentences) if x.endswith("?")), -1)
    content = [_content(x) for x in sentences]
    para = set(w for c in content for w in c)
    texts: List[str] = []
    rows: List[List[float]] = []
    seen = set()
    for i, sent in enumerate(sentences[:_MAX_SENTENCES]):
        trimmed = _trim(sent)
        rest: Dict[str, int] = {}
        for j, c in enumerate(content):
            if j != i:
                for w in c:
                    rest[w] = rest.get(w, 0) + 1
        variants = [(trimmed, 0.0, 0.0)]
        tail = _comma_tail(trimmed)
        # a sentence that asks in its last clause opens with a subordinate one ("When I X, how do I Y?")
        for k, v in enumerate((tail, "" if tail else _head_clause(trimmed))):
            if v:
                variants.append((v, float(k == 0), float(k == 1)))
        for text, is_tail, is_head in variants:
            words = text.split()
            full = len(words)
            # a text that stops without closing punctuation was cut already (a paragraph ending in "... the")
            whole = full if text.endswith((".", "?", "!")) else _snap(words, full)
            for cut in (whole,) + tuple(_snap(words, c) for c in _CUTS if c < full):
                t = " ".join(words[:cut]).rstrip(".,;:")  # a title has no closing full stop
                if not t or t in seen:
                    continue
                seen.add(t)
                ws = words[:cut]
                first = ws[0].lower().strip("\"'(")
                c = _content(t)
                cs = set(c)
                texts.append(t)
                rows.append([
                    float(t == rule), float(sent.endswith("?")), float(t.endswith("?")), float(i == first_q),
                    float(i == 0), float(i == 1), float(i == n - 1), i / n, float(n), float(first in _WH),
                    float(first in _AUX), float(first in _FIRST_PERSON), float(cut), float(_log(cut)),
                    float(cut <= 8), float(9 <= cut <= 14), float(15 <= cut <= 20), float(cut > 20),
                    float(cut < full), cut / full, float(trimmed.lower() != sent.lower()), is_tail, is_head,
                    sum(w in rest for w in c) / len(c) if c else 0.0,
                    sum(_log(1 + rest.get(w, 0)) for w in c) / len(c) if c else 0.0,
                    len(cs) / len(para) if para else 0.0,
                    sum(any(ch.isdigit() for ch in w) for w in ws) / cut,
                    sum(any(not (ch.isalnum() or ch in "'?,.!-") for ch in w) for w in ws) / cut,
                    float(cut < full and len(ws[-1]) <= 3), float("," in t),
                    float(sent.endswith("?") and cut < full), _log(cut) if sent.endswith("?") else 0.0])
    return texts, rows


# The weights of TITLE_FEATURES (divided by their standard deviations; the per-word length bias is in "words"):
# a listwise logistic model fitted on the five Stack Exchange dumps by
# `python experiments/dqg_learned.py --final` (target: the candidates' sentence BLEU + ROUGE-L against the real
# titles; settings chosen leave-one-site-out; bench/RESULTS_generators.md, "Learned extractive titles").
_TITLE_WEIGHTS = tuple({
    "rule": 0.0681288, "from_question": -0.497244, "ends_question": 0.374293, "first_question": 0.405956,
    "first_sentence": 0.329151, "second_sentence": 0.035003, "last_sentence": -0.0476989, "position": 0.103712,
    "sentences": -1.37471e-15, "wh_start": 0.460102, "aux_start": 0.267476, "first_person": -0.0312051,
    "words": -0.040178, "log_words": 0.420308, "len_le8": 0.0603009, "len_9_14": 0.0241622, "len_15_20": -0.0732824,
    "len_gt20": -0.195284, "cut": -0.0557663, "kept_share": 0.0628852, "trimmed": 0.134564, "tail": -0.00655681,
    "head": -0.000930796, "rest_overlap": 0.195077, "centrality": 0.703434, "coverage": 0.350056,
    "digit_share": 0.386416, "symbol_share": 0.241201, "short_last_word": 0.0691677, "comma": -0.144144,
    "question_cut": 0.246762, "question_log_words": 0.0284789}[f] for f in TITLE_FEATURES)


def extract_title(body: str) -> str:
    """A title chosen from the body's own sentences, no model: of the candidates a body offers (each of
    its first sentences without a leading connective or "My question is"-style preamble, its asking
    clause after a comma, its first clause, each whole and cut to 6-19 words), the one a linear scorer of cheap features (position, question form, length,
    word overlap with the rest of the body) rates best; the first on ties.

    The extractive reference for DQG (Rücklé et al. 2019 generate titles from bodies; a body often
    states its question in one sentence). Scorer fitted on five Stack Exchange dumps; chosen and
    scored leave-one-site-out (``experiments/dqg_learned.py``; ``bench/RESULTS_generators.md``,
    "Learned extractive titles"). ``""`` for a body without a word."""
    if not isinstance(body, str):
        raise TypeError(f"body: expected str, got {type(body).__name__}")
    texts, rows = _title_candidates(body)
    if not texts:
        return ""
    scores = [sum(w * x for w, x in zip(_TITLE_WEIGHTS, r)) for r in rows]
    return texts[scores.index(max(scores))]


def training_rows(dumps: Sequence, min_words: int = 10, select: str = "tfidf", min_score: Optional[int] = None,
                  holdout_linked: bool = True) -> Tuple[List[dict], Dict[str, dict]]:
    """``(rows, counts)``: the (body, title) rows ``{"site", "post_id", "title", "body"}`` of the
    dumps (:func:`pysynth.dup.prep.questions`; ``holdout_linked``: leave out questions with a
    PostLinks duplicate, the evaluation items) and the counts per site."""
    from pysynth.dup.prep import questions

    rows, counts = [], {}
    for d in dumps:
        qs = questions(d, min_words, select, min_score, holdout_linked=holdout_linked)
        rows += qs.rows
        counts[qs.site] = qs.counts
    return rows, counts


def split_dev(rows: Sequence[dict], fraction: float, seed: int) -> Tuple[List[dict], List[dict]]:
    """``(train, dev)``: a seeded ``fraction`` of the rows (at least one when ``fraction > 0``) is dev."""
    if not 0 <= fraction < 1:
        raise ValueError(f"dev_fraction: must be in [0, 1), got {fraction!r}")
    order = list(range(len(rows)))
    random.Random(seed).shuffle(order)
    n_dev = max(1, int(len(rows) * fraction)) if fraction > 0 else 0
    dev = set(order[:n_dev])
    return [r for i, r in enumerate(rows) if i not in dev], [r for i, r in enumerate(rows) if i in dev]


def train(dumps: Sequence, out, arch: str = "copynet", minutes: float = 20.0, steps: int = 0, threads: int = 1,
          seed: int = 0, dev_fraction: float = 0.05, vocab_size: int = 8000, emb_dim: int = 128,
          enc_hidden: int = 128, dec_hidden: int = 256, dropout: float = 0.3, lr: float = 2e-3, batch_size: int = 32,
          max_src_len: int = 80, max_tgt_len: int = 24, eval_every: int = 100, patience: int = 8,
          holdout_linked: bool = True, resume: bool = True, log=None) -> dict:
    """Train a body -> title generator on the dumps (see the module doc) into the run folder
    ``out`` (:mod:`pysynth.models.train`: the best model on dev BLEU in ``out/model``,
    resumable). ``arch``: ``copynet`` (copy) or ``attnet`` (no copy). Stops after ``steps``
    (0: no limit), ``minutes`` (0: no limit), 60 epochs or ``patience`` evaluations without a
    better dev BLEU. Writes ``out/dqg_data.json`` (sites, counts, sizes). Returns the summary."""
    from pysynth.io import write_json
    from pysynth.models.config import Seq2SeqConfig, TrainConfig
    from pysynth.models.train import train as fit

    if arch not in ("copynet", "attnet"):
        raise ValueError(f"arch: must be 'copynet' (copy) or 'attnet' (no copy), got {arch!r}")
    rows, counts = training_rows(dumps, holdout_linked=holdout_linked)
    if not rows:
        raise ValueError("dumps: no question survived the filters; nothing to train on")
    tr, dev = split_dev(rows, dev_fraction, seed)
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    write_json(out / "dqg_data.json", {"sites": sorted(counts), "counts": counts, "train": len(tr), "dev": len(dev),
                                       "holdout_linked": holdout_linked, "dev_fraction": dev_fraction, "seed": seed})
    mc = Seq2SeqConfig(arch=arch, vocab_size=vocab_size, emb_dim=emb_dim, enc_hidden=enc_hidden,
                       dec_hidden=dec_hidden, tie_embeddings=True, dropout=dropout, max_src_len=max_src_len,
                       max_tgt_len=max_tgt_len)
    tc = TrainConfig(lr=lr, clip_norm=1.0, batch_size=batch_size, max_steps=steps, max_epochs=60,
                     max_minutes=minutes, eval_every=eval_every, eval_max_pairs=400, patience=patience,
                     ckpt_every=eval_every, log_every=50, seed=seed, device="cpu", threads=threads)
    return fit([(r["body"], r["title"]) for r in tr], out, mc, tc,
               dev_pairs=[(r["body"], r["title"]) for r in dev] or None, resume=resume, log=log)


def export(model, out, quantize: bool = True) -> Path:
    """The ONNX export of a trained generator (a run folder or model directory) into ``out``,
    its weights in int8 with ``quantize`` (:func:`pysynth.export.onnx.quantize_export`); the
    run's ``train_config.json``, ``train_log.jsonl`` and ``dqg_data.json`` are copied beside it."""
    import shutil
    import tempfile

    from pysynth.export.onnx import export_onnx, quantize_export

    out = Path(out)
    if quantize:
        with tempfile.TemporaryDirectory() as tmp:
            export_onnx(model, Path(tmp) / "onnx")
            quantize_export(Path(tmp) / "onnx", out)
    else:
        export_onnx(model, out)
    run = Path(model)
    for name in ("train_config.json", "train_log.jsonl", "dqg_data.json"):
        if (run / name).is_file():
            shutil.copyfile(run / name, out / name)
    return out


class TitleGenerator:
    """A body -> title generator (the shipped ``dup-dqg-copynet``, a model directory, an ONNX
    export or a training run) on onnxruntime (``backend="onnx"``, no torch) or torch; or an LLM
    spec (:mod:`pysynth.llm`, the ``dqg`` prompt role; ``llm``: its :class:`pysynth.llm.LLMOptions`); or
    ``"extract"`` (:data:`EXTRACT`): :func:`extract_title`, no model."""

    def __init__(self, model: Optional[str] = None, backend: str = "onnx", threads: int = 1, llm=None):
        from pysynth.llm import is_llm_spec
        from pysynth.models.text2text import text2text

        if model == EXTRACT:
            self.model = self.generator = EXTRACT
            return
        if is_llm_spec(model):
            from pysynth.llm.text2text import open_text_role

            self.model = self.generator = open_text_role(model, "dqg", "body", llm)
            return
        self.model = text2text(model, backend, threads=threads, default=DEFAULT_MODEL)
        if not hasattr(self.model, "gen"):
            raise ValueError(f"model: {self.model.name} is a Hugging Face folder; titles come from pysynth "
                             "seq2seq models")
        self.generator = self.model.gen

    def generate(self, bodies: Sequence[str], beam: int = 1, batch_size: int = 32, no_repeat_ngram: int = 3,
                 no_stutter: bool = True) -> List[Tuple[str, str]]:
        """``(title, reason)`` per body: the best of a beam of ``beam`` (greedy for 1; the search's
        degenerate-output guards ``no_repeat_ngram``, ``no_stutter``: :class:`pysynth.decoding.SearchConfig`), truecased
        from the body (:func:`pysynth.models.postprocess.truecase`), reason ``""``; or ``("",
        "unreadable")`` for a body without a word the model knows, ``("", "empty")`` when the
        model generates nothing; an LLM: its title as it wrote it, or ``("", "llm_empty" |
        "llm_unparsable" | "llm_refused")``."""
        from pysynth.decoding.config import SearchConfig
        from pysynth.models.generate import prepare_sources
        from pysynth.models.postprocess import truecase

        if isinstance(bodies, str):
            raise TypeError("bodies: expected a list of strings, got a single str (wrap it in a list)")
        bodies = list(bodies)
        for i, b in enumerate(bodies):
            if not isinstance(b, str):
                raise TypeError(f"bodies[{i}]: expected str, got {type(b).__name__}")
        if self.generator == EXTRACT:
            return [(t, "") if t else ("", "empty") for t in map(extract_title, bodies)]
        out: List[Tuple[str, str]] = [("", "unreadable")] * len(bodies)
        ok = []
        for i, b in enumerate(bodies):
            try:
                if getattr(self.generator, "runtime", "") == "llm":
                    if self.generator.valid(b):
                        raise ValueError(b)
                else:
                    prepare_sources([b], self.generator.vocab, self.generator.max_src_len, "bodies")
                ok.append(i)
            except ValueError:
                pass
        if ok and getattr(self.generator, "runtime", "") == "llm":
            for i, g in zip(ok, self.generator.generate([bodies[i] for i in ok])):
                out[i] = (g.texts[0], "") if g.texts else ("", g.reason or "llm_empty")
        elif ok:
            search = SearchConfig(decode="greedy" if beam == 1 else "beam", beam=beam, n=1,
                                  no_repeat_ngram=no_repeat_ngram, no_stutter=no_stutter)
            res = self.model.generate([bodies[i] for i in ok], search, batch_size=batch_size)
            for i, g in zip(ok, res):
                t = g.texts[0].strip() if g.texts else ""
                out[i] = (truecase(t, bodies[i]), "") if t else ("", "empty")
        return out


def evaluate(model: Optional[str], dumps: Sequence, backend: str = "onnx", beam: int = 1, limit: int = 0,
             subset: str = "all", threads: int = 1, dev_fraction: float = 0.05, seed: int = 0, *,
             no_repeat_ngram: int = 3, no_stutter: bool = True) -> dict:
    """BLEU (sacrebleu, lower-cased) and ROUGE-1/2/L F (rouge-score) of the titles ``model``
    generates for the dumps' questions against their real titles (0-100), the share of
    generated-title words found in the body (copying), how well a generated title finds its
    question's real title among all titles of the site with BM25 (``title_p_at_1``,
    ``title_mrr``: the generated title as a duplicate query) and a few examples. ``limit``: the first
    questions of each dump only (0: all). ``subset``: ``"all"`` questions, ``"linked"`` (those
    with a PostLinks duplicate: :func:`train` holds them out) or ``"dev"`` (:func:`train`'s dev
    split for these dumps, ``dev_fraction`` and ``seed``). ``no_repeat_ngram``, ``no_stutter``: the title
    search's degenerate-output guards (:meth:`TitleGenerator.generate`); the results name them when
    they are off their defaults."""
    from pysynth import metrics
    from pysynth.decoding.config import guard_changes
    from pysynth.dup.prep import questions

    guards = guard_changes(no_repeat_ngram, no_stutter)  # before the dumps are read

    if subset not in ("all", "linked", "dev"):
        raise ValueError(f"subset: must be 'all', 'linked' or 'dev', got {subset!r}")
    rows = []
    if subset == "dev":
        rows = split_dev(training_rows(dumps)[0], dev_fraction, seed)[1]
    for d in dumps if subset != "dev" else ():
        qs = questions(d)
        rows += [r for r in qs.rows if subset == "all" or r["post_id"] in qs.duplicates]
    if not rows:
        raise ValueError("dumps: no question to evaluate on")
    if limit:
        by: Dict[str, List[dict]] = {}
        for r in rows:
            by.setdefault(r["site"], []).append(r)
        rows = [r for v in by.values() for r in v[:limit]]
    gen = TitleGenerator(model, backend=backend, threads=threads)
    got = gen.generate([r["body"] for r in rows], beam=beam, no_repeat_ngram=no_repeat_ngram, no_stutter=no_stutter)
    hyps = [t for t, _ in got]
    refs = [r["title"] for r in rows]
    s = metrics.score_corpus(hyps, [refs], ["bleu", "rouge1", "rouge2", "rougeL"], lowercase=True)
    from pysynth.models.vocab import tokenize

    p1, rr = _title_retrieval(hyps, rows)
    copied = total = 0
    for h, r in zip(hyps, rows):
        body = set(tokenize(r["body"]))
        toks = [w for w in tokenize(h) if any(c.isalnum() for c in w)]
        copied += sum(w in body for w in toks)
        total += len(toks)
    return {"questions": len(rows), "sites": sorted({r["site"] for r in rows}),
            "bleu": round(s["bleu"], 2), **{k: round(s[k], 2) for k in ("rouge1", "rouge2", "rougeL")},
            "unreadable": sum(r == "unreadable" for _, r in got), "empty": sum(r == "empty" for _, r in got),
            "body_word_share": round(100 * copied / max(total, 1), 1),
            "title_p_at_1": round(100 * p1, 2), "title_mrr": round(100 * rr, 2),
            "examples": [{"title": r["title"], "generated": h} for r, h in list(zip(rows, hyps))[:5]], **guards}


def _title_retrieval(hyps: Sequence[str], rows: Sequence[dict]) -> Tuple[float, float]:
    """P@1 and MRR of BM25 (:func:`pysynth.dup.evaluate.search_pool`) ranking each site's real
    titles for the generated title (the question's own title is the one positive; a title not
    retrieved counts 0; equal scores keep the retrieval's order: by score, then title index)."""
    from pysynth.dup.evaluate import search_pool

    by: Dict[str, List[int]] = {}
    for i, r in enumerate(rows):
        by.setdefault(r["site"], []).append(i)
    p1 = rr = 0.0
    for idx in by.values():
        qs = [(k, hyps[i]) for k, i in enumerate(idx) if hyps[i].strip()]
        if not qs:
            continue
        hits = search_pool([rows[i]["title"] for i in idx], [q for _, q in qs], "bm25", k=0)
        if hits is None:
            continue
        for j, (k, _) in enumerate(qs):
            docs = hits.docs[j][: hits.counts[j]].tolist()
            if k in docs:
                rank = docs.index(k) + 1
                rr += 1.0 / rank
                p1 += rank == 1
    n = max(len(rows), 1)
    return p1 / n, rr / n


if __name__ == "__main__":  # deprecated side door: now ``pysynth dup train-dqg|export-dqg|evaluate-dqg``
    from pysynth.cli import deprecated_module

    raise SystemExit(deprecated_module("pysynth.dup.dqg", None, ["dup"],
                                       {"train": "train-dqg", "export": "export-dqg", "eval": "evaluate-dqg"}))
