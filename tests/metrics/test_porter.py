"""Porter stemmer: the Python twin and the compiled stemmer against NLTK.

The golden file ``tests/golden/porter_nltk.tsv.gz`` holds ``word<TAB>stem``
lines produced by ``nltk.stem.porter.PorterStemmer().stem`` (nltk 3.10.4,
NLTK_EXTENSIONS) -- regenerate it with ``tests/golden/make_porter_golden.py``.
NLTK itself is not needed (nor imported) here.
"""
from __future__ import annotations

import gzip
from pathlib import Path

import pytest

from pysynth.metrics._porter import porter_stem

GOLDEN = Path(__file__).resolve().parent.parent / "golden" / "porter_nltk.tsv.gz"

if not GOLDEN.exists():
    pytest.skip(
        f"golden file {GOLDEN.name} missing; run tests/golden/make_porter_golden.py",
        allow_module_level=True,
    )


def _load_golden():
    words, stems = [], []
    with gzip.open(GOLDEN, "rt", encoding="ascii") as fh:
        for line in fh:
            word, stem = line.rstrip("\n").split("\t")
            words.append(word)
            stems.append(stem)
    return words, stems


WORDS, STEMS = _load_golden()


def _compiled_stemmer():
    core = pytest.importorskip("pysynth._core")
    metrics = getattr(core, "metrics", None)
    if metrics is None or not hasattr(metrics, "porter_stem"):
        pytest.skip("pysynth._core is built without metrics.porter_stem")
    return metrics.porter_stem


@pytest.fixture(scope="module")
def compiled():
    return _compiled_stemmer()


def _mismatches(got):
    bad = [(w, s, g) for w, s, g in zip(WORDS, STEMS, got) if s != g]
    return f"{len(bad)} of {len(WORDS)} differ from NLTK, e.g. (word, nltk, ours): {bad[:10]}"


def test_golden_is_substantial():
    assert len(WORDS) > 50_000
    assert WORDS == sorted(set(WORDS))
    lengths = {len(w) for w in WORDS}
    assert {1, 2, 3, 4, 12} <= lengths


def test_python_twin_matches_nltk_golden():
    got = [porter_stem(w) for w in WORDS]
    assert got == STEMS, _mismatches(got)


@pytest.mark.parametrize(
    "word, stem",
    [
        ("generalizations", "gener"),
        ("sky", "sky"),
        ("skies", "sky"),
        ("dying", "die"),
        ("lying", "lie"),
        ("news", "news"),
        ("proceed", "proceed"),
        ("succeeded", "succeed"),
        ("ied", "i"),
        ("ies", "i"),
        ("ties", "tie"),
        ("died", "die"),
        ("happy", "happi"),
        ("enjoy", "enjoy"),
        ("y", "y"),
        ("yy", "yy"),
        ("yyy", "yyy"),
        ("yyyy", "yyyi"),
        ("1234", "1234"),
        ("a1b2", "a1b2"),
        ("hopping", "hop"),
        ("falling", "fall"),
        ("filing", "file"),
        ("controll", "control"),
        ("", ""),
    ],
)
def test_python_twin_examples(word, stem):
    assert porter_stem(word) == stem


def test_python_twin_long_y_run():
    # NLTK resolves runs of 'y' iteratively; so must we (no recursion limit).
    # (the value was checked against nltk 3.10.4)
    word = "y" * 5000 + "ing"
    assert porter_stem(word) == "y" * 4999 + "i"


def test_compiled_matches_nltk_golden(compiled):
    got = compiled(WORDS)
    assert isinstance(got, list)
    assert got == STEMS, _mismatches(got)


def test_compiled_edge_cases(compiled):
    words = ["", "a", "yy", "y" * 5000 + "ing", "x" * 200 + "ational", "caf\u00e9s", "na\u00efvely"]
    assert compiled(words) == [porter_stem(w) for w in words]
    assert compiled([]) == []
    with pytest.raises(TypeError):
        compiled("skies")
    with pytest.raises(TypeError):
        compiled(["ok", 3])


def test_compiled_thread_safety(compiled):
    from concurrent.futures import ThreadPoolExecutor

    chunks = [WORDS[i::8] for i in range(8)]
    with ThreadPoolExecutor(max_workers=8) as pool:
        results = list(pool.map(compiled, chunks))
    for i, got in enumerate(results):
        assert got == STEMS[i::8]


# -------------------------------------------------------------- Hypothesis

try:
    from hypothesis import given, settings
    from hypothesis import strategies as st
except ImportError:  # pragma: no cover - hypothesis is a test dependency
    given = None

_ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789"
# Pieces that trigger the suffix rules, so that random words exercise them.
_PIECES = [
    "a", "e", "i", "o", "u", "y", "b", "l", "s", "t", "z", "d", "1", "ed", "ing",
    "ies", "ied", "eed", "sses", "ss", "at", "bl", "iz", "ational", "tional",
    "enci", "anci", "izer", "bli", "alli", "entli", "eli", "ousli", "ization",
    "ation", "ator", "alism", "iveness", "fulness", "ousness", "aliti", "iviti",
    "biliti", "fulli", "logi", "icate", "ative", "alize", "iciti", "ical", "ful",
    "ness", "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement",
    "ment", "ent", "ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize", "ll",
]

if given is not None:
    random_words = st.text(alphabet=_ALPHABET, min_size=1, max_size=15)
    suffix_words = st.lists(st.sampled_from(_PIECES), min_size=1, max_size=5).map("".join)

    @settings(max_examples=1000, deadline=None)
    @given(words=st.lists(random_words, min_size=1, max_size=20))
    def test_compiled_agrees_with_twin_random(compiled, words):
        assert compiled(words) == [porter_stem(w) for w in words]

    @settings(max_examples=1000, deadline=None)
    @given(words=st.lists(suffix_words, min_size=1, max_size=20))
    def test_compiled_agrees_with_twin_suffixes(compiled, words):
        assert compiled(words) == [porter_stem(w) for w in words]

else:  # pragma: no cover

    def test_compiled_agrees_with_twin_random():
        pytest.skip("hypothesis is not installed")
