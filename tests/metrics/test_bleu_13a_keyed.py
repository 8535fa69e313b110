"""The compiled 13a path that tokenizes ASCII text straight into keys (``key_13a`` in
csrc/src/ngram.cpp: class masks instead of the four regex passes) against the twin.

The rules only matter around '.', ',', '-', digits and the punctuation class, so the texts are
drawn from those bytes (runs of dots, digit-dot-digit, whitespace of every kind, texts past 64
bytes where the masks span words), plus the bytes that send a text to the general tokenizer
('<', '&', newline, non-ASCII), mixed within one call.
"""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pysynth._dispatch import available

BACKENDS = available("metrics")
pytestmark = pytest.mark.skipif("cpp" not in BACKENDS, reason="compiled module not built")

HARD = "ab1.,-' ?(\t5.,-,.9x\r\x0b\x1f!/:~`[A"
FALLBACK = "<&\né"
text = st.one_of(
    st.text(alphabet=HARD, max_size=40),
    st.text(alphabet=HARD, min_size=60, max_size=200),
    st.text(alphabet="ab 1.-2,c'(", max_size=150),
    st.text(alphabet=HARD + FALLBACK, max_size=60),
)


@settings(deadline=None, max_examples=300)
@given(st.lists(st.tuples(text, text), min_size=1, max_size=20))
def test_13a_stats_match_the_twin(pairs):
    hyps = [h for h, _ in pairs]
    refs = [r for _, r in pairs]
    off = np.arange(len(hyps) + 1, dtype=np.int64)
    want = BACKENDS["python"].bleu_stats(hyps, refs, off, "13a", 4, 1)
    got = BACKENDS["cpp"].bleu_stats(hyps, refs, off, "13a", 4, 2)
    np.testing.assert_array_equal(got, want)
    # the same texts as references of themselves: lengths are the token counts
    same = BACKENDS["cpp"].bleu_stats(hyps, hyps, off, "13a", 4, 1)
    toks = BACKENDS["python"].tokenize(hyps, "13a", 1)
    assert same[:, 0].tolist() == [len(t) for t in toks]


def test_13a_known_cases():
    cases = {"x..5": ["x", ".", ".5"], "3.5 a.b 1,000.": ["3.5", "a", ".", "b", "1,000", "."],
             "5-6 e-mail 5,.a": ["5", "-", "6", "e-mail", "5", ",", ".", "a"], "(a)?\t'b'": ["(", "a", ")", "?", "'b'"]}
    for s, want in cases.items():
        assert BACKENDS["python"].tokenize([s], "13a", 1) == [want]
        off = np.arange(2, dtype=np.int64)
        assert BACKENDS["cpp"].bleu_stats([s], [s], off, "13a", 4, 1)[0, 0] == len(want)
