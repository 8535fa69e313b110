"""Golden METEOR 1.5 values (the jar that pycocoevalcap ships, nlg-eval's ``-l en -norm``) for the
Java-free implementation to match and for CI without Java.

    python tests/golden/make_meteor_golden.py [--data ../shared/data]   # ~2 min (one JVM per system)

Writes ``tests/golden/meteor_mqr.json``: 200 MQR test segments (ill-formed input, reference and
the paper's LSTM / Transformer rewrites; CC BY-SA 4.0, Chu et al. 2020) with each segment's
METEOR and the corpus METEOR of those 200, and the corpus METEOR of every system on the whole
shared test subset (1,690 rows) beside the paper's Table 6 column.
"""
from __future__ import annotations

import argparse
import gzip
import json
import random
import subprocess
from pathlib import Path

from pysynth.metrics.meteor import meteor, meteor_jar

PAPER = {"ill_formed": 33.4, "lstm": 32.7, "transformer": 36.4, "GEC": 34.4, "nmt_de": 28.4, "nmt_fr": 27.5}


# Harder cases: two reference streams, punctuation, numbers, Unicode, empty strings, repeated
# words, matches only through stems, synonyms or paraphrases, abbreviations and contractions.
_CASES = [
    ("the cat sat on the mat", "a cat was sitting on the mat", "the cat sat on a mat"),
    ("How do I install Python 3.8 on Ubuntu 20.04?", "How can I install Python 3.8 in Ubuntu 20.04?",
     "Installing python on ubuntu"),
    ("", "what is the capital of france?", "capital of France"),
    ("what is the capital of france?", "", "what is the capital of France ?"),
    ("", "", "nothing"),
    ("the the the the", "the cat", "the the"),
    ("running runners ran quickly", "run runner runs quick", "he runs"),
    ("a big car", "a large automobile", "an enormous vehicle"),
    ("he passed away yesterday", "he died yesterday", "yesterday he died"),
    ("U.S.-based companies, e.g. Apple Inc., don't pay $1,000.50 taxes...", "US based companies like Apple "
     "do not pay 1,000.50 dollars of taxes", "companies don't pay"),
    ("Café naïve résumé – “quoted” ‘single’", "cafe naive resume - \"quoted\" 'single'", "Café résumé"),
    ("Как установить Python?", "как установить python ?", "Python"),
    ("what's the difference between it's and its", "what is the difference between its and it's",
     "difference between its and it's"),
    ("Mr. Smith went to Washington at 5 p.m. on Jan. 3", "mr smith went to washington at 5 pm on january 3",
     "Smith went to Washington"),
    ("why is my code not working", "why does my code not work?", "why doesn't my code work?"),
    ("C++ vs C# -- which is better?", "Which is better: C++ or C#?", "C# or C++"),
    ("1990's music and the 80's", "music from the 1990s and the 1980s", "1990's music"),
    ("tabs\tand  multiple   spaces", "tabs and multiple spaces", "spaces and tabs"),
    ("in order to get a good job", "to get a good job", "for getting a good job"),
    ("is it possible to make a program that makes programs", "can one write a program that writes programs",
     "is it possible to write programs writing programs"),
    ("a a a b b b a a a", "a b a b a b", "b a b a"),
    ("connect connected connecting connection", "connection connecting connected connect", "connections"),
    ("What is the best way to learn machine learning online for free", "How can I learn machine learning for free "
     "online?", "best free online machine learning course"),
    ("!!! ??? ...", "...", "?"),
]
_NORM_EXTRA = ["Mr. smith", "No. 5", "No. five", "a.b. c", "U.S. Army", "e.g. this", "end.", "x..", "...", ". .",
               "a. B", "Inc. is", "it's 5'o clock", "he said ''hi''", "\u201cx\u201d \u2018y\u2019", "a\u2013b", "a--b",
               "1,000", "a,b", "1,a", "a,1", "\x01abc", "abc \x02", "\xc0\xc9. \xdc", "\u03a3\u0391\u03a3", "U.S.A.",
               "p.m.", "etc.", "Jan. 3", "vs. them", "St. louis", "A. B. C.", "a\x0bb", "x\x1cy", "a\u3000b\xa0c"]


def normalizer_cases(n: int = 400):
    """Strings and what the jar's own Normalizer (English, punctuation kept) makes of them."""
    rng = random.Random(0)
    chars = list("abcAB .,'-\u2013\u2014\u2026`\u2018\u2019\u201c\u201d\"?!()0123456789\u03a3\xe9\x0b\u3000\xa0")
    texts = _NORM_EXTRA + ["".join(rng.choice(chars) for _ in range(rng.randint(0, 25))) for _ in range(n)]
    out = subprocess.run(["java", "-cp", str(meteor_jar()), "edu.cmu.meteor.util.Normalizer", "en", "true"],
                         input=("\n".join(texts) + "\n").encode("utf-8"), capture_output=True, check=True)
    return texts, out.stdout.decode("utf-8").split("\n")[:len(texts)]


CASES_HYPS = [c[0] for c in _CASES]
CASES_REFS = [[c[1] for c in _CASES], [c[2] for c in _CASES]]


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--data", default=str(Path(__file__).resolve().parents[3] / "shared" / "data"))
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "meteor_mqr.json"))
    a = ap.parse_args()
    d = Path(a.data) / "mqr"
    test = [json.loads(x) for x in gzip.open(d / "test.jsonl.gz")]
    rel = {r["row_idx"]: r for r in map(json.loads, gzip.open(d / "test_system_rewrites.jsonl.gz"))}
    refs = [r["well_formed"].strip() for r in test]
    outs = {"ill_formed": [r["ill_formed"].strip() for r in test]}
    outs.update({s: [rel[r["row_idx"]][s].strip() for r in test] for s in ("lstm", "transformer", "GEC", "nmt_de",
                                                                           "nmt_fr")})
    full = {s: meteor(h, refs, flavor="jar").score for s, h in outs.items()}
    small = {}
    for s in ("ill_formed", "lstm", "transformer"):
        m = meteor(outs[s][:200], refs[:200], flavor="jar")
        small[s] = {"corpus": m.score, "segments": m.segments, "hyps": outs[s][:200]}
    hard = meteor(CASES_HYPS, CASES_REFS, flavor="jar")
    cases = {"hyps": CASES_HYPS, "refs": CASES_REFS, "corpus": hard.score, "segments": hard.segments}
    norm_in, norm_out = normalizer_cases()
    doc = {"tool": "meteor-1.5.jar (pycocoevalcap 1.2) -l en -norm, corpus score = the EVAL line's last value",
           "refs": refs[:200], "systems": small, "cases": cases,
           "normalizer": {"in": norm_in, "out": norm_out},
           "full_test": {"n": len(test), "corpus": full, "paper": PAPER}}
    Path(a.out).write_text(json.dumps(doc, indent=0, ensure_ascii=False) + "\n", encoding="utf-8")
    for s, v in full.items():
        print(f"{s:<12} {100 * v:6.2f}  paper {PAPER[s]}")


if __name__ == "__main__":
    main()
