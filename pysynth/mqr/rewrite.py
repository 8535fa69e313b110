"""Question rewriting (Chu et al. 2020): training pairs, the baselines, a trained rewriter.

The MQR train split (423k pairs) cannot be obtained, so pysynth's rewriter learns from what
exists offline (:func:`training_pairs`):

* the released MQR dev pairs (2,112; the test split is kept for evaluation) and the pairs mined
  from the shared Stack Exchange dumps (:mod:`pysynth.mqr.mining`);
* identity pairs, well-formed -> itself (the paper's Table 7 "+ identity");
* noised questions -> the question (:func:`noise`): SQuAD 1.1 train questions corrupted the
  way MQR's ill-formed titles are (question word and auxiliary dropped, "?" dropped, lower case,
  articles dropped, a fragment moved to the front "X, how to ..."): pysynth's stand-in for the
  missing train split, as the paper's Paralex / Quora rows stand in for in-domain data.

Baselines (Table 6's rows): the ill-formed input itself and :func:`rule_floor` ("How to" when
no question word starts the input, then "?"). Models decode lower-cased tokens
(:mod:`pysynth.models.vocab`); :func:`truecase` restores the case of words copied from the input
and capitalises the first letter.
"""
from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Tuple, Union

from pysynth.models.postprocess import WORD as _WORD
from pysynth.models.postprocess import respace, truecase  # noqa: F401 - re-exported (public API)
from pysynth.mqr.mining import QUESTION_WORDS

__all__ = ["DEFAULT_DECODING", "check_decoding", "choose", "rule_floor", "noise", "respace", "truecase", "paralex_pairs", "drop_rates", "training_pairs", "Rewriter", "DEFAULT_MODEL"]

DEFAULT_MODEL = "mqr-copynet-small"
#: the decoding of ``pysynth mqr rewrite``, chosen on the held-out MQR dev pairs (:meth:`Rewriter.rewrite`)
DEFAULT_DECODING = {"beam": 6, "coverage": 2.0, "wellformed": 0.5, "backoff": 0.7}
_AUX = {"is", "are", "was", "were", "do", "does", "did", "can", "could", "should", "would", "will", "has", "have",
        "had", "may", "must", "might"}
_ARTICLES = {"a", "an", "the"}


def rule_floor(text: str) -> str:
    """The rule baseline: prefix "How to" when the text does not start with a question word
    (:data:`pysynth.mqr.mining.QUESTION_WORDS`), end with "?" (replacing a final "." or "!")."""
    t = " ".join(text.split())
    if not t:
        return t
    if not t.lower().startswith(QUESTION_WORDS):
        t = "How to " + t[0].lower() + t[1:]
    t = t.rstrip(".!? ")
    return t + "?"


def _qclass(question: str) -> str:
    """The question-word class of a well-formed question: its first word, two for "how"
    ("how to", "how can", "how many": MQR's rewrites start "how to"/"how can", SQuAD's "how many")."""
    w = question.lower().split()[:2]
    return " ".join(w) if w and w[0] == "how" else (w[0] if w else "")


def drop_rates(targets: Sequence[str], dev: Sequence[Tuple[str, str]]) -> dict:
    """Per question class (:func:`_qclass`), the probability with which :func:`noise` drops the
    question word of a target, so that the noised pairs whose source lacks a question word have
    MQR's distribution of rewrite openings (estimated on the real ``dev`` pairs): for 59 % of MQR's
    ill-formed titles without a question word the rewrite starts "How", whereas SQuAD's targets
    start "What"/"When" (the first model, noising uniformly, answered "When did ..." to those)."""
    from collections import Counter

    want = Counter(_qclass(w) for i, w in dev if not i.lower().startswith(QUESTION_WORDS))
    have = Counter(_qclass(t) for t in targets)
    total_want = sum(want.values())
    share = sum(1 for i, _ in dev if not i.lower().startswith(QUESTION_WORDS)) / max(1, len(dev))
    ratio = {c: want[c] / total_want / have[c] for c in want if have.get(c)}
    if not ratio:
        return {}
    # the scale: MQR's share of sources without a question word, capped at 1 per class
    scale = share * len(targets) / sum(have[c] * r for c, r in ratio.items())
    return {c: min(1.0, scale * r) for c, r in ratio.items()}


def _typo(word: str, rng: random.Random) -> str:
    i = rng.randrange(1, len(word) - 1)
    k = rng.random()
    if k < 0.4:  # swap two letters
        return word[:i] + word[i + 1] + word[i] + word[i + 2:]
    if k < 0.7:  # drop one
        return word[:i] + word[i + 1:]
    return word[:i] + word[i] + word[i:]  # double one


def noise(question: str, rng: random.Random, drop_q: float = 0.6, typo: float = 0.0) -> str:
    """An ill-formed version of a well-formed question, in the ways MQR's ill-formed titles
    differ from their rewrites, each applied with its own probability (seeded by ``rng``): "?"
    dropped (MQR dev: 46 % of the ill-formed titles lack it), the question word and its auxiliary
    dropped with probability ``drop_q`` ("how do i fix x" -> "fix x", sometimes "x, how to"),
    articles dropped, lower case (the first letter or all), misspelt words (``typo`` per word)."""
    found = list(_WORD.finditer(question))
    if not found:
        return question
    # (token, a space before it): "off-site" and "/etc/fstab" come back glued
    toks = [(m.group(), m.start() > 0 and question[m.start() - 1].isspace()) for m in found]
    if toks[-1][0] == "?" and rng.random() < 0.6:
        toks = toks[:-1]
    low = [t.lower() for t, _ in toks]
    if low and low[0] in QUESTION_WORDS and rng.random() < drop_q:
        cut = 1
        while cut < len(low) and (low[cut] in _AUX or low[cut] in ("i", "you", "to")) and cut < 3:
            cut += 1
        if cut < len(toks) - 1:
            head, toks = toks[:cut], toks[cut:]
            if rng.random() < 0.15:  # the fragment first, the question word after: "x, how to"
                toks = toks + [(",", False), (head[0][0], True)] + head[1:]
    if rng.random() < 0.3:
        toks = [t for t in toks if t[0].lower() not in _ARTICLES] or toks
    if typo:
        toks = [(_typo(t, rng), g) if len(t) > 3 and t.isalpha() and rng.random() < typo else (t, g)
                for t, g in toks]
    k = rng.random()
    if k < 0.2:
        toks = [(t.lower(), g) for t, g in toks]
    elif k < 0.4:
        toks[0] = (toks[0][0][:1].lower() + toks[0][0][1:], toks[0][1])
    return "".join((" " if g and i else "") + t for i, (t, g) in enumerate(toks))


def _jsonl(path: Path) -> List[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def paralex_pairs(data_dir: Union[str, Path], min_prob: float = 0.5, threads: int = 0,
                  limit: Optional[int] = None) -> Tuple[List[Tuple[str, str]], dict]:
    """Paralex-style pairs (Chu et al. 2020, "Additional Training Data"): in each ComQA/WikiAnswers
    paraphrase cluster of ``comqa_wikianswers_clusters/train.jsonl.gz`` with two questions or more,
    :func:`pysynth.quality.wellformedness` picks the most well-formed question as the target (kept
    when its probability is >= ``min_prob``, the paper's rating >= 0.8) and every less well-formed
    one becomes a source; ``limit``: the first clusters only. ``(pairs, counts)``."""
    from pysynth.quality import wellformedness

    clusters = [c["questions"] for c in _jsonl(Path(data_dir) / "comqa_wikianswers_clusters" / "train.jsonl.gz")]
    multi = [list(dict.fromkeys(" ".join(q.split()) for q in qs)) for qs in clusters][:limit]
    multi = [qs for qs in multi if len(qs) > 1]
    flat = [q for qs in multi for q in qs]
    probs = wellformedness(flat, threads=threads)
    pairs, k, weak = [], 0, 0
    for qs in multi:
        p = probs[k:k + len(qs)]
        k += len(qs)
        best = max(range(len(qs)), key=lambda j: p[j])
        if p[best] < min_prob:
            weak += 1
            continue
        pairs += [(q, qs[best]) for j, q in enumerate(qs) if j != best]
    return pairs, {"clusters": len(multi), "no_wellformed_target": weak, "pairs": len(pairs)}


def training_pairs(data_dir: Union[str, Path], seed: int = 0, noised: int = 40000, upsample: int = 1,
                   in_domain: int = 0, identity: bool = True, paralex: bool = False, typo: float = 0.0,
                   prior: bool = False, exclude: Sequence[str] = (),
                   dumps: Optional[Sequence[Union[str, Path]]] = None) -> Tuple[List[Tuple[str, str]], dict]:
    """``(pairs, counts)``: (ill-formed, well-formed) training pairs from the shared data (see the
    module doc); the MQR test split is never used.

    Parameters
    ----------
    noised : SQuAD 1.1 train questions to noise (:func:`noise`).
    upsample : copies of the real pairs (MQR dev, mined).
    in_domain : noised copies of each in-domain well-formed question (the MQR dev rewrites and the
        dumps' question titles); 0: none.
    identity : add (well-formed, well-formed) pairs (the paper's Table 7): the MQR dev rewrites,
        and the dumps' titles with ``in_domain``.
    paralex : add :func:`paralex_pairs` (ComQA clusters, the classifier choosing targets).
    typo : per-word misspelling probability of the noise.
    prior : question-word drop rates from :func:`drop_rates` (MQR's rewrite openings) instead of
        a flat 0.6.
    exclude : well-formed questions (the held-out dev pairs for early stopping) used nowhere.
    """
    d = Path(data_dir)
    rng = random.Random(seed)
    excl = set(exclude)
    pairs: List[Tuple[str, str]] = []
    counts = {}
    dev = [(r["ill_formed"], r["well_formed"]) for r in _jsonl(d / "mqr" / "dev.jsonl.gz")
           if r["well_formed"] not in excl]
    pairs += dev * upsample
    counts["mqr_dev"] = len(dev) * upsample
    if dumps is None:
        se = d / "stackexchange_dumps"
        dumps = [p for p in sorted(se.iterdir()) if (p / "PostHistory.xml.gz").exists()] if se.is_dir() else []
    test_rows = _jsonl(d / "mqr" / "test.jsonl.gz")
    if dumps:
        from pysynth.mqr.mining import mine

        test_ids = {(r["category"], int(r["post_id"])) for r in test_rows}
        mined = [r for r in mine(dumps).rows if (r["site"], r["post_id"]) not in test_ids]
        pairs += [(r["ill_formed"], r["well_formed"]) for r in mined] * upsample
        counts["mined"] = len(mined) * upsample
    titles: List[str] = []
    if dumps and in_domain:
        from pysynth.datasets.stackexchange import Dump

        test_titles = {r["well_formed"] for r in test_rows} | excl
        for dump in dumps:
            for r in Dump(dump).rows("Posts"):
                t = " ".join((r.get("Title") or "").split())
                if t.endswith("?") and t.lower().startswith(QUESTION_WORDS) and t not in test_titles:
                    titles.append(t)
    if identity:
        ident = [(w, w) for _, w in dev] + [(t, t) for t in titles]
        pairs += ident
        counts["identity"] = len(ident)
    targets = [w for _, w in dev] * in_domain + titles * in_domain
    squad_qs: List[str] = []
    if noised:
        from pysynth.datasets import squad

        doc = squad.load(d / "squad11_train" / "train-v1.1.reconstructed.json.gz")
        qs = [" ".join(q.split()) for q in squad.questions(doc)]
        qs = [q for q in qs if q.endswith("?") and 3 <= len(q.split()) <= 20]
        rng.shuffle(qs)
        squad_qs = qs[:noised]
    rates = drop_rates(targets + squad_qs, dev) if prior else {}
    for name, qs in (("noised_in_domain", targets), ("noised_squad", squad_qs)):
        made = [(noise(q, rng, rates.get(_qclass(q), 0.05) if prior else 0.6, typo), q) for q in qs]
        made = [(a, b) for a, b in made if a != b]  # noise that changed nothing
        pairs += made
        counts[name] = len(made)
    if paralex:
        px, pc = paralex_pairs(d)
        pairs += px
        counts["paralex"] = len(px)
        counts["paralex_clusters"] = pc["clusters"]
    # the released dev and test splits share a pair: nothing of the test split is trained on
    test = {(r["ill_formed"], r["well_formed"]) for r in test_rows}
    n = len(pairs)
    pairs = [p for p in pairs if p not in test]
    counts["dropped_test_overlap"] = n - len(pairs)
    rng.shuffle(pairs)
    return pairs, counts


def check_decoding(coverage: float, wellformed: float, backoff: float) -> None:
    """Refuse a rerank setting of :meth:`Rewriter.rewrite` that is not a number >= 0."""
    for name, v in (("coverage", coverage), ("wellformed", wellformed), ("backoff", backoff)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0:
            raise ValueError(f"{name}: must be a number >= 0, got {v!r}")


def choose(text: str, cands: Sequence[str], scores: Sequence[float], logwf: Optional[Sequence[float]] = None,
           coverage: float = 0.0, wellformed: float = 0.0, backoff: float = 0.0) -> str:
    """The rewrite of ``text`` among its beam's (truecased) candidates ``cands`` with their
    log-probabilities ``scores``: the rerank and back-off of :meth:`Rewriter.rewrite` (its
    parameters), one place for the library and ``POST /v1/rewrite``. ``logwf``: each candidate's
    log well-formedness probability (used when ``wellformed`` > 0)."""
    src = [w.lower() for w in _WORD.findall(text) if w[0].isalnum()]

    def kept(c: str) -> float:
        words = {w.lower() for w in _WORD.findall(c)}
        return sum(w in words for w in src) / max(1, len(src))

    best = 0
    if (coverage or wellformed) and len(cands) > 1:
        lw = logwf if logwf is not None else [0.0] * len(cands)
        score = [sc / max(1, len(_WORD.findall(c))) + coverage * kept(c) + wellformed * w
                 for c, sc, w in zip(cands, scores, lw)]
        best = max(range(len(score)), key=score.__getitem__)
    return cands[best] if kept(cands[best]) >= backoff else rule_floor(text)


class Rewriter:
    """A rewriting model (a pysynth seq2seq model: the shipped ``mqr-copynet-small``, a folder or a
    training run) on onnxruntime or torch, with :func:`truecase` on its outputs."""

    def __init__(self, model: Optional[str] = None, backend: str = "auto", threads: int = 0):
        """``backend``: ``onnx``, ``torch``, or ``auto`` (onnx when onnxruntime is installed and
        the model has an ONNX export, else torch: training runs, and the Transformer, which has no
        ONNX graphs; :func:`pysynth.models.text2text.text2text`)."""
        from pysynth.models.text2text import text2text

        self.model = text2text(model, backend, threads=threads, default=DEFAULT_MODEL)
        if not hasattr(self.model, "gen"):
            raise ValueError(f"model: {self.model.name} is a Hugging Face folder; the rewriter runs pysynth "
                             "seq2seq models")
        self.generator = self.model.gen

    @classmethod
    def from_generator(cls, generator) -> "Rewriter":
        """A rewriter over a loaded :class:`~pysynth.models.generate.Generator` (``pysynth serve``'s)."""
        self = cls.__new__(cls)
        self.generator = generator
        return self

    def rewrite(self, texts: Sequence[str], beam: int = 4, batch_size: int = 64, coverage: float = 0.0,
                wellformed: float = 0.0, backoff: float = 0.0, scorer=None, **decode) -> List[str]:
        """One rewrite per text. A text the model cannot read (no word in its vocabulary) is
        returned unchanged.

        Parameters
        ----------
        beam : the beam size (greedy for 1).
        coverage : 0: the beam's best. Above 0: the ``beam`` hypotheses are reranked by their mean
            token log-probability plus ``coverage`` x the share of the source's words they keep,
            a lexical form of the coverage penalty of Wu et al. (2016, Sect. 7): MQR rewrites keep
            most of the question's words (78 % on the test split), while beam search favours short
            generic openings ("When did ...") and drops or replaces source words.
        wellformed : above 0: add ``wellformed`` x the log-probability that the hypothesis is a
            well-formed question (:func:`pysynth.quality.wellformedness`) to the rerank score: the
            classifier as a second model scoring the beam (chosen on held-out MQR dev pairs: 0.5).
        backoff : a rewrite that keeps less than this share of the question's words is replaced by
            :func:`rule_floor` of the question: losing that many words is a copy failure (a rare
            word replaced by a frequent one, "wiimote" -> "need") more often than a rewrite
            (chosen on held-out MQR dev pairs: 0.7; 0 never backs off).
        scorer : callable ``scorer(texts) -> probabilities``, optional
            The well-formedness model of ``wellformed`` (default :func:`pysynth.quality.wellformedness`).
        decode : more options of :meth:`pysynth.models.generate.Generator.generate`
            (``length_penalty``, ``alpha``).
        """
        texts = list(texts)
        outs = self.rewrite_each(texts, beam, batch_size, coverage, wellformed, backoff, scorer, **decode)
        return [t if o is None else o for t, o in zip(texts, outs)]

    def rewrite_each(self, texts: Sequence[str], beam: int = 4, batch_size: int = 64, coverage: float = 0.0,
                     wellformed: float = 0.0, backoff: float = 0.0, scorer=None, **decode) -> List[Optional[str]]:
        """:meth:`rewrite` (same parameters), with None for each text the model cannot read (no word in
        its vocabulary) or gives no candidate for: ``POST /v1/rewrite`` answers those ``rewritten: false``."""
        from pysynth.models.generate import prepare_sources

        check_decoding(coverage, wellformed, backoff)
        texts = list(texts)
        ok, out = [], [None] * len(texts)
        for i, t in enumerate(texts):
            try:
                prepare_sources([t], self.generator.vocab, self.generator.max_src_len, "texts")
                ok.append(i)
            except ValueError:
                pass
        if not ok:
            return out
        rerank = bool(coverage or wellformed)
        res = self.generator.generate([texts[i] for i in ok], beam=beam, n=beam if rerank else 1,
                                      batch_size=batch_size, **decode)
        cands = [[truecase(t, texts[i]) for t in g.texts] for i, g in zip(ok, res)]
        logwf: List[List[float]] = [[0.0] * len(c) for c in cands]
        if wellformed and rerank:
            import numpy as np

            if scorer is None:
                from pysynth.quality import wellformedness as scorer
            probs = np.log(scorer([c for cs in cands for c in cs]) + 1e-6).tolist()
            k = 0
            for j, cs in enumerate(cands):
                logwf[j], k = probs[k:k + len(cs)], k + len(cs)
        for j, (i, g) in enumerate(zip(ok, res)):
            if cands[j]:
                out[i] = choose(texts[i], cands[j], g.scores, logwf[j], coverage, wellformed, backoff)
        return out


def rows_of(path: Union[str, Path]) -> Iterable[dict]:
    return _jsonl(Path(path))
