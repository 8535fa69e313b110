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

Baselines (Table 6's rows): the ill-formed input itself and :func:`rule_floor` (a question template
only where the input's form fits it, :mod:`pysynth.mqr.forms`). Models decode lower-cased tokens
(:mod:`pysynth.models.vocab`); :func:`truecase` restores the case of words copied from the input
and capitalises the first letter.

Output never worse than the input (issue 26): with ``select="safe"`` (``pysynth mqr rewrite``'s
default) :func:`select` chooses among the input, the rule floor and the model's rewrite by
well-formedness (:mod:`pysynth.quality`), the share of the input's content words kept and their
overlap, and gives the input back (reason ``kept_input``) rather than a worse text; :func:`hard_rule`
is never broken.
"""
from __future__ import annotations

import gzip
import json
import random
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Tuple, Union

from pysynth.models.postprocess import WORD as _WORD
from pysynth.models.postprocess import respace, truecase  # noqa: F401 - re-exported (public API)
from pysynth.mqr.forms import rule_floor, template_misfit
from pysynth.mqr.mining import QUESTION_WORDS

__all__ = ["DEFAULT_DECODING", "SELECTIONS", "SAFE", "check_decoding", "choose", "select", "content_words",
           "dropped_share", "overlap", "hard_rule", "rule_floor", "noise", "respace", "truecase", "paralex_pairs", "drop_rates", "training_pairs", "Rewriter", "DEFAULT_MODEL"]

DEFAULT_MODEL = "mqr-copynet-small"
#: the decoding of ``pysynth mqr rewrite``, chosen on the held-out MQR dev pairs (:meth:`Rewriter.rewrite`)
DEFAULT_DECODING = {"beam": 6, "coverage": 2.0, "wellformed": 0.5, "backoff": 0.7, "select": "safe"}
#: how :meth:`Rewriter.rewrite` picks its output: ``safe`` chooses among the input, the rule floor and the
#: model's rewrite (:func:`select`); ``model`` is the model's rewrite, the rule floor when it keeps too few words
SELECTIONS = ("safe", "model")
_AUX = {"is", "are", "was", "were", "do", "does", "did", "can", "could", "should", "would", "will", "has", "have",
        "had", "may", "must", "might"}
_ARTICLES = {"a", "an", "the"}


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


def check_decoding(coverage: float, wellformed: float, backoff: float, select: str = "model") -> None:
    """Refuse a rerank setting of :meth:`Rewriter.rewrite` that is not a number >= 0, and an unknown
    ``select`` (:data:`SELECTIONS`)."""
    for name, v in (("coverage", coverage), ("wellformed", wellformed), ("backoff", backoff)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not v >= 0:
            raise ValueError(f"{name}: must be a number >= 0, got {v!r}")
    if select not in SELECTIONS:
        raise ValueError(f"select: must be one of {', '.join(SELECTIONS)}, got {select!r}")


def _kept(text: str, cand: str) -> float:
    """The share of the words of ``text`` that ``cand`` keeps (the back-off's measure; all words)."""
    src = [w.lower() for w in _WORD.findall(text) if w[0].isalnum()]
    words = {w.lower() for w in _WORD.findall(cand)}
    return sum(w in words for w in src) / max(1, len(src))


def _rank(text: str, cands: Sequence[str], scores: Sequence[float], logwf: Optional[Sequence[float]],
          coverage: float, wellformed: float) -> List[int]:
    """The candidates' order under the rerank (best first; ties: beam order)."""
    if not ((coverage or wellformed) and len(cands) > 1):
        return list(range(len(cands)))
    lw = logwf if logwf is not None else [0.0] * len(cands)
    score = [sc / max(1, len(_WORD.findall(c))) + coverage * _kept(text, c) + wellformed * w
             for c, sc, w in zip(cands, scores, lw)]
    return sorted(range(len(cands)), key=lambda j: -score[j])


def _choose(text: str, cands: Sequence[str], scores: Sequence[float], logwf: Optional[Sequence[float]],
            coverage: float, wellformed: float, backoff: float) -> Tuple[str, str]:
    best = _rank(text, cands, scores, logwf, coverage, wellformed)[0]
    return (cands[best], "model") if _kept(text, cands[best]) >= backoff else (rule_floor(text), "rule")


def choose(text: str, cands: Sequence[str], scores: Sequence[float], logwf: Optional[Sequence[float]] = None,
           coverage: float = 0.0, wellformed: float = 0.0, backoff: float = 0.0) -> str:
    """The rewrite of ``text`` among its beam's (truecased) candidates ``cands`` with their
    log-probabilities ``scores``: the rerank and back-off of :meth:`Rewriter.rewrite` (its
    parameters), one place for the library and ``POST /v1/rewrite``. ``logwf``: each candidate's
    log well-formedness probability (used when ``wellformed`` > 0)."""
    return _choose(text, cands, scores, logwf, coverage, wellformed, backoff)[0]


#: words that carry no content of their own: question words, auxiliaries, pronouns, articles,
#: prepositions, conjunctions (what a rewrite adds or drops freely: "install x" -> "How do I install x?")
_FUNCTION = frozenset("""
how why when what which who whom whose where whats is are was were am be been being do does did done can could
should would will shall may might must has have had need i me my mine you your yours he him his she her it its we
us our they them their this that these those there here a an the of to in on for at by with from about as into
onto over under than then so if or and but nor not no any some all also just very too s t m ll ve re d
""".split())

#: the safe selection's settings (:func:`select`), chosen on the 300 held-out MQR dev pairs among 64
#: (summed BLEU/ROUGE/METEOR): the drop and overlap penalties changed nothing there, the beam fallback and a
#: margin that lets the input win on well-formedness alone cost points, so the input comes back only when
#: no candidate passes the guards (the hard rule, the template check, the back-off)
SAFE = {"max_drop": 0.3, "drop_weight": 0.0, "overlap_weight": 0.0, "model_bonus": 0.1, "margin": -1.0,
        "fallback": False}


def content_words(text: str) -> List[str]:
    """The distinct lower-cased content words of ``text`` in order (words with a letter or digit
    that are not function words): what :func:`hard_rule` counts."""
    return list(dict.fromkeys(w.lower() for w in _WORD.findall(text)
                              if any(ch.isalnum() for ch in w) and w.lower() not in _FUNCTION))


def dropped_share(source: str, output: str) -> float:
    """The share of the content words of ``source`` (:func:`content_words`) missing from ``output``
    (0 when the source has none). A word counts as kept only in the same form: "mixing" is dropped
    by "How to mix ...", which makes the hard rule stricter, never looser."""
    src = content_words(source)
    out = {w.lower() for w in _WORD.findall(output)}
    return sum(w not in out for w in src) / len(src) if src else 0.0


def overlap(source: str, output: str) -> float:
    """Token-overlap similarity of two texts: the Dice coefficient of their content-word sets
    (1 when neither has one): a rewrite loses it by dropping words and by adding new ones."""
    a, b = set(content_words(source)), set(content_words(output))
    return 2 * len(a & b) / (len(a) + len(b)) if a or b else 1.0


def hard_rule(source: str, output: str, wf_source: float, wf_output: float, max_drop: float = 0.3) -> bool:
    """True when ``output`` may replace ``source``: it is not both less well-formed (by the
    classifier's probabilities ``wf_*``) and missing ``max_drop`` or more of the source's content
    words (:func:`dropped_share`). Issue 26's "never worse than the input"; :func:`select` never
    returns an output that fails it."""
    return not (wf_output < wf_source and dropped_share(source, output) >= max_drop)


def select(text: str, models: Union[None, str, Sequence[str]], wellformed: Sequence[float], backoff: float = 0.0,
           settings: Optional[dict] = None) -> Tuple[str, str]:
    """The safe choice among the input ``text``, its :func:`rule_floor` and the model's rewrites.

    Parameters
    ----------
    text : the ill-formed question.
    models : the model's rewrites in the rerank's order (best first; one string: one rewrite), or None.
    wellformed : the well-formedness probabilities (:mod:`pysynth.quality`) of the input, of the rule
        floor's output, then of each of ``models``.
    backoff : a model rewrite is a candidate only when it keeps at least this share of the input's
        words (as :func:`choose`'s back-off).
    settings : :data:`SAFE` by default.

    Returns
    -------
    (output, reason) : reason ``model``, ``rule`` or ``kept_input`` (output == ``text``).

    Notes
    -----
    The model's candidate is its first rewrite (in the rerank's order; only the first unless
    ``fallback``) that keeps ``backoff`` of the words, puts no template before a form that does not fit it (:func:`pysynth.mqr.forms.template_misfit`)
    and passes :func:`hard_rule`; the rule floor is a candidate when it passes :func:`hard_rule` too.
    Each candidate scores ``wf - drop_weight x dropped share - overlap_weight x (1 - overlap)``
    (:func:`dropped_share`, :func:`overlap`), the model's plus ``model_bonus``; the input scores its
    own ``wf`` plus ``margin``. The best wins; the input's ties keep the input.
    """
    cfg = {**SAFE, **(settings or {})}
    models = [] if models is None else [models] if isinstance(models, str) else list(models)
    wf_in, wf_rule = float(wellformed[0]), float(wellformed[1])
    cands = [(rule_floor(text), wf_rule, "rule", 0.0)]
    for m, wf in zip(models if cfg["fallback"] else models[:1], wellformed[2:]):
        if m != text and _kept(text, m) >= backoff and not template_misfit(m, text) and \
                hard_rule(text, m, wf_in, float(wf), cfg["max_drop"]):
            cands.append((m, float(wf), "model", cfg["model_bonus"]))
            break
    best, best_score = (text, "kept_input"), wf_in + cfg["margin"]
    for out, wf, reason, bonus in cands:
        if out == text or not hard_rule(text, out, wf_in, wf, cfg["max_drop"]):
            continue
        score = wf - cfg["drop_weight"] * dropped_share(text, out) - cfg["overlap_weight"] * (1 - overlap(text, out))
        if score + bonus > best_score:
            best, best_score = (out, reason), score + bonus
    return best


class Rewriter:
    """A rewriting model (a pysynth seq2seq model: the shipped ``mqr-copynet-small``, a folder or a
    training run) on onnxruntime or torch, with :func:`truecase` on its outputs; or an LLM (an
    OpenAI-compatible server or a local causal LM: the ``mqr`` prompt role, its ``--samples``
    replies as the candidates the selection ranks)."""

    def __init__(self, model: Optional[str] = None, backend: str = "auto", threads: int = 0, llm=None):
        """``backend``: ``onnx``, ``torch``, or ``auto`` (onnx when onnxruntime is installed and
        the model has an ONNX export, else torch: training runs, and the Transformer, which has no
        ONNX graphs; :func:`pysynth.models.text2text.text2text`). ``model`` may be an LLM spec
        (:mod:`pysynth.llm`; ``llm``: its :class:`pysynth.llm.LLMOptions`)."""
        from pysynth.llm import is_llm_spec
        from pysynth.models.text2text import text2text

        if is_llm_spec(model):
            from pysynth.llm.text2text import open_text_role

            self.model = self.generator = open_text_role(model, "mqr", "question", llm)
            return
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

    def rewrite(self, texts: Sequence[str], beam: int = 6, batch_size: int = 64, coverage: float = 2.0,
                wellformed: float = 0.5, backoff: float = 0.7, scorer=None, select: str = "safe",
                **decode) -> List[str]:
        """One rewrite per text. A text the model cannot read (no word in its vocabulary) is
        returned unchanged.  The defaults are ``pysynth mqr rewrite``'s (:data:`DEFAULT_DECODING`);
        ``beam=4, coverage=0, wellformed=0, backoff=0, select="model"`` is the plain beam's best
        (this method's defaults before issue 28).

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
            :func:`rule_floor` of the question (``select="model"``) or is no candidate
            (``select="safe"``): losing that many words is a copy failure (a rare word replaced by a
            frequent one, "wiimote" -> "need") more often than a rewrite (chosen on held-out MQR dev
            pairs: 0.7; 0 never backs off).
        scorer : callable ``scorer(texts) -> probabilities``, optional
            The well-formedness model of ``wellformed`` and ``select="safe"`` (default
            :func:`pysynth.quality.wellformedness`).
        select : ``"model"``: the model's rewrite (the rule floor on back-off), the first version's
            behaviour; ``"safe"`` (the default, as in ``pysynth mqr rewrite``): the
            best of the input, the rule floor and the model's rewrite, the input when neither is
            better (:func:`select`).
        decode : more options of :meth:`pysynth.models.generate.Generator.generate`
            (``length_penalty``, ``alpha``).
        """
        texts = list(texts)
        outs = self.rewrite_each(texts, beam, batch_size, coverage, wellformed, backoff, scorer, select, **decode)
        return [t if o is None else o for t, o in zip(texts, outs)]

    def rewrite_each(self, texts: Sequence[str], beam: int = 4, batch_size: int = 64, coverage: float = 0.0,
                     wellformed: float = 0.0, backoff: float = 0.0, scorer=None, select: str = "model",
                     **decode) -> List[Optional[str]]:
        """:meth:`rewrite` (same parameters), with None for each text the model cannot read (no word in
        its vocabulary) or gives no candidate for: ``POST /v1/rewrite`` answers those ``rewritten: false``."""
        return [None if c is None else c[0] for c in
                self.choices(texts, beam, batch_size, coverage, wellformed, backoff, scorer, select, **decode)]

    def choices(self, texts: Sequence[str], beam: int = 4, batch_size: int = 64, coverage: float = 0.0,
                wellformed: float = 0.0, backoff: float = 0.0, scorer=None, select: str = "model",
                **decode) -> List[Optional[Tuple[str, str]]]:
        """:meth:`rewrite_each` (same parameters) with the reason of each choice: ``(rewrite, reason)``,
        reason ``model``, ``rule`` or ``kept_input`` (:func:`select`), None where the model cannot read
        the text (it stays as it is with either ``select``). An LLM that gave no usable reply gives
        the text back with its reason (``llm_empty``, ``llm_unparsable``, ``llm_refused``)."""
        from pysynth.models.generate import prepare_sources

        check_decoding(coverage, wellformed, backoff, select)
        texts = list(texts)
        ok, out = [], [None] * len(texts)
        llm = getattr(self.generator, "runtime", "") == "llm"
        for i, t in enumerate(texts):
            try:
                if llm:
                    if self.generator.valid(t):
                        raise ValueError(t)
                else:
                    prepare_sources([t], self.generator.vocab, self.generator.max_src_len, "texts")
                ok.append(i)
            except ValueError:
                pass
        rerank = bool(coverage or wellformed)
        res = self.generator.generate([texts[i] for i in ok], beam=beam, n=beam if rerank else 1,
                                      batch_size=batch_size, **decode) if ok else []
        failed = {}
        if llm:  # the LLM's samples are the candidates; a failed reply gives the input back with its reason
            failed = {i: (texts[i], g.reason) for i, g in zip(ok, res) if g.reason}
            keep = [j for j, g in enumerate(res) if not g.reason]
            ok, res = [ok[j] for j in keep], [res[j] for j in keep]
        cands = [[truecase(t, texts[i]) for t in g.texts] for i, g in zip(ok, res)]
        if (wellformed and rerank) or select == "safe":
            if scorer is None:
                from pysynth.quality import wellformedness as scorer
        logwf: List[List[float]] = [[0.0] * len(c) for c in cands]
        wfp: List[List[float]] = [[] for _ in cands]  # the probabilities themselves (the safe selection's)
        if wellformed and rerank:
            import numpy as np

            raw = np.asarray(scorer([c for cs in cands for c in cs]), dtype=np.float64)
            probs = np.log(raw + 1e-6).tolist()
            k = 0
            for j, cs in enumerate(cands):
                logwf[j], wfp[j], k = probs[k:k + len(cs)], raw[k:k + len(cs)].tolist(), k + len(cs)
        for j, (i, g) in enumerate(zip(ok, res)):
            if not cands[j]:
                continue
            if select == "safe":
                order = _rank(texts[i], cands[j], g.scores, logwf[j], coverage, wellformed)
                out[i] = ([cands[j][k] for k in order], [wfp[j][k] for k in order] if wfp[j] else None)
            else:
                out[i] = _choose(texts[i], cands[j], g.scores, logwf[j], coverage, wellformed, backoff)
        out = self._safe(texts, out, backoff, scorer) if select == "safe" else out
        for i, v in failed.items():
            out[i] = v
        return out

    @staticmethod
    def _safe(texts: List[str], ranked: list, backoff: float, scorer) -> List[Optional[Tuple[str, str]]]:
        """:func:`select` for each text the model read (``ranked[i]``: its candidates in the rerank's
        order and their well-formedness, None when not scored yet), one classifier call for the rest."""
        todo = [i for i, r in enumerate(ranked) if r is not None]  # an unreadable text stays as it is
        flat: List[str] = []
        for i in todo:
            models, wf = ranked[i]
            flat += [texts[i], rule_floor(texts[i])] + (models if wf is None else [])
        probs = [float(p) for p in scorer(flat)] if flat else []
        out: List[Optional[Tuple[str, str]]] = [None] * len(texts)
        k = 0
        for i in todo:
            models, wf = ranked[i]
            n = 2 + (len(models) if wf is None else 0)
            out[i] = select(texts[i], models, probs[k:k + n] + (wf or []), backoff)
            k += n
        return out


def rows_of(path: Union[str, Path]) -> Iterable[dict]:
    return _jsonl(Path(path))
