"""Regenerate ``tests/golden/porter_nltk.tsv.gz`` from NLTK's Porter stemmer.

Run from the repository root with an interpreter that has nltk 3.10.4::

    /tmp/refenv/bin/python tests/golden/make_porter_golden.py

Each line is ``word<TAB>stem`` where ``stem`` is
``nltk.stem.porter.PorterStemmer().stem(word)`` (default NLTK_EXTENSIONS
mode).  The words are every distinct ``[a-z0-9]+`` token (rouge-score's
tokenization: lowercase, split on everything else) of the text fields of the
shared data sets, plus deterministic synthetic stress words.  Words of every
length are kept, including those of 3 characters or fewer that rouge-score
never stems.  Output is sorted and byte-for-byte reproducible.
"""
from __future__ import annotations

import gzip
import itertools
import json
import random
import re
import sys
from pathlib import Path

import nltk
from nltk.stem.porter import PorterStemmer

DATA = Path("/work/shared/data")
OUT = Path(__file__).resolve().parent / "porter_nltk.tsv.gz"
EXPECTED_NLTK = "3.10.4"
SEED = 19800701  # Porter (1980)

_TOKEN = re.compile(r"[a-z0-9]+")


def tokens(text: str):
    """rouge-score tokenization (without the length filter)."""
    return _TOKEN.findall(text.lower())


def read_jsonl(path: Path):
    with gzip.open(path, "rt", encoding="utf-8") as fh:
        for line in fh:
            if line.strip():
                yield json.loads(line)


def corpus_words() -> set:
    words: set = set()

    def add(text):
        if isinstance(text, str):
            words.update(tokens(text))

    for name in ("dev", "test"):
        for row in read_jsonl(DATA / "mqr" / f"{name}.jsonl.gz"):
            add(row["ill_formed"])
            add(row["well_formed"])
    for row in read_jsonl(DATA / "mqr" / "test_system_rewrites.jsonl.gz"):
        for key, value in row.items():
            if key != "row_idx":
                add(value)
    for path in sorted((DATA / "query_wellformedness").glob("*.jsonl.gz")):
        for row in read_jsonl(path):
            add(row["query"])
    for path in sorted((DATA / "comqa_wikianswers_clusters").glob("*.jsonl.gz")):
        for row in read_jsonl(path):
            for question in row["questions"]:
                add(question)
    for path in sorted((DATA / "vqa_v2_subset").glob("*.jsonl.gz")):
        for row in read_jsonl(path):
            add(row["question"])
    with gzip.open(DATA / "squad2_dev_subset" / "dev-v2.0.subset.json.gz", "rt", encoding="utf-8") as fh:
        squad = json.load(fh)
    for article in squad["data"]:
        for paragraph in article["paragraphs"]:
            add(paragraph["context"])
            for qa in paragraph["qas"]:
                add(qa["question"])
    return words


# Pieces that make the rules fire: every suffix the algorithm knows, the
# irregular pool, and stems with interesting consonant/vowel/y/digit shapes.
SUFFIXES = [
    "", "s", "ss", "sses", "ies", "ied", "eed", "ed", "ing", "y", "yy", "e",
    "ll", "l", "at", "bl", "iz", "ational", "tional", "enci", "anci", "izer",
    "bli", "abli", "alli", "entli", "eli", "ousli", "ization", "ation", "ator",
    "alism", "iveness", "fulness", "ousness", "aliti", "iviti", "biliti",
    "fulli", "logi", "icate", "ative", "alize", "iciti", "ical", "ful", "ness",
    "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment",
    "ent", "ion", "sion", "tion", "ou", "ism", "ate", "iti", "ous", "ive", "ize",
    "li", "ly", "ies", "ying", "yed", "ating", "ated", "izing", "bling", "lling",
    "ssing", "zzed", "tted", "ful", "nesses", "ations", "izations", "alities",
    "logies", "ously", "fully", "ally", "ably", "ibly", "ements", "ements",
]
STEMS = [
    "", "a", "e", "i", "o", "u", "y", "b", "c", "w", "x", "z", "1", "9",
    "ab", "ay", "oy", "ow", "ox", "by", "sy", "yy", "ya", "yo", "xy", "ty",
    "bat", "hop", "fil", "fail", "tann", "fizz", "hiss", "fall", "troub",
    "conflat", "siz", "gener", "rel", "cond", "val", "hesit", "digit",
    "conform", "radic", "differ", "vil", "analog", "vietnam", "predic",
    "oper", "feud", "decis", "hope", "call", "form", "sensit", "sensib",
    "trip", "electr", "good", "reviv", "allow", "infer", "airlin", "gyroscop",
    "adjust", "defens", "irrit", "replac", "depend", "adopt", "homolog",
    "commun", "activ", "angular", "effect", "bowdler", "prob", "rat", "ceas",
    "contr", "ro", "geo", "theo", "archaeo", "philo", "sp", "fl", "tr", "d",
    "l", "t", "happ", "enjo", "toy", "syzyg", "sky", "sk", "di", "li", "ti",
    "new", "proc", "exc", "succ", "inn", "out", "cann", "how", "yyy",
    "byy", "ayy", "12", "a1", "1a", "b2b", "x9", "ab1", "4ever", "mp3",
]
EXPLICIT = [
    "generalizations", "generalization", "sky", "skies", "skys", "dying",
    "lying", "tying", "dyings", "news", "newses", "proceed", "proceeds",
    "proceeded", "exceed", "exceeded", "succeed", "succeeded", "succeeds",
    "inning", "innings", "outing", "outings", "canning", "cannings", "howe",
    "howes", "ied", "ies", "eed", "ing", "ed", "aaa", "y", "yy", "yyy",
    "yyyy", "yyyyy", "yyyyyy", "1234", "a1b2", "0", "00", "000", "0000",
    "dies", "died", "ties", "tied", "lies", "lied", "pies", "spied", "spies",
    "flies", "cries", "happy", "enjoy", "sky", "spy", "fly", "try", "by",
    "caresses", "ponies", "caress", "cats", "feed", "agreed", "plastered",
    "bled", "motoring", "sing", "conflated", "troubled", "sized", "hopping",
    "tanned", "falling", "hissing", "fizzed", "failing", "filing",
    "relational", "conditional", "rational", "valenci", "hesitanci",
    "digitizer", "conformabli", "radicalli", "differentli", "vileli",
    "analogousli", "vietnamization", "predication", "operator", "feudalism",
    "decisiveness", "hopefulness", "callousness", "formaliti", "sensitiviti",
    "sensibiliti", "triplicate", "formative", "formalize", "electriciti",
    "electrical", "hopeful", "goodness", "revival", "allowance", "inference",
    "airliner", "gyroscopic", "adjustable", "defensible", "irritant",
    "replacement", "adjustment", "dependent", "adoption", "homologou",
    "communism", "activate", "angulariti", "homologous", "effective",
    "bowdlerize", "probate", "rate", "cease", "controll", "roll",
    "generously", "traditionalli", "emotionalli", "additionally", "geology",
    "theologies", "archaeology", "oed", "ated", "ate", "ele", "eel", "ll",
    "ell", "alll", "ssses", "sss", "yies", "yied", "ayied", "ayies", "yying",
    "aying", "oyed", "eyed", "ayed", "yeed", "aeed", "a1eed", "1ing", "1ed",
    "9ies", "s", "ss", "sses", "oping", "owed", "axed", "ayed", "ow", "ox",
]


def stress_words() -> set:
    words = set(EXPLICIT)
    for stem, suffix in itertools.product(STEMS, SUFFIXES):
        words.add(stem + suffix)
    for s1, s2 in itertools.product(SUFFIXES, SUFFIXES):
        words.add("gener" + s1 + s2)
        words.add("b" + s1 + s2)
    # Every string of length <= 3 (and a slice of length 4) over an alphabet
    # chosen to hit the vowel/y/double-consonant/suffix logic.
    alphabet = "aeiyosdlntz1"
    for n in range(1, 4):
        words.update("".join(p) for p in itertools.product(alphabet, repeat=n))
    words.update("".join(p) for p in itertools.product("aeiysdl1", repeat=4))
    # Random [a-z0-9] strings, lengths 1-12: half uniform, half biased to
    # vowels, y, s, l, e and d so that suffixes occur often.
    rng = random.Random(SEED)
    uniform = "abcdefghijklmnopqrstuvwxyz0123456789"
    biased = "aeiouyyyssslllleeeddngtzbcmr1"
    for i in range(20000):
        pool = uniform if i % 2 == 0 else biased
        n = rng.randint(1, 12)
        words.add("".join(rng.choice(pool) for _ in range(n)))
    return words


def main() -> int:
    if nltk.__version__ != EXPECTED_NLTK:
        print(f"warning: nltk {nltk.__version__}, golden is pinned to {EXPECTED_NLTK}", file=sys.stderr)
    words = corpus_words()
    n_corpus = len(words)
    words |= stress_words()
    words = sorted(w for w in words if w and _TOKEN.fullmatch(w))
    stemmer = PorterStemmer()
    lines = [f"{w}\t{stemmer.stem(w)}\n" for w in words]
    # mtime=0 keeps the gzip bytes reproducible.
    with open(OUT, "wb") as raw, gzip.GzipFile(filename="", mode="wb", fileobj=raw, mtime=0, compresslevel=9) as fh:
        fh.write("".join(lines).encode("ascii"))
    print(f"{len(words)} words ({n_corpus} from the corpora) -> {OUT} ({OUT.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
