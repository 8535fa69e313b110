"""Pure-Python Porter stemmer, bit-compatible with NLTK's default mode.

This is the fallback twin of ``pysynth._core.metrics.porter_stem`` (C++,
``csrc/src/porter.cpp``).  Both must return exactly what
``nltk.stem.porter.PorterStemmer()`` (mode ``NLTK_EXTENSIONS``, nltk 3.10.4)
returns for every lowercase ``[a-z0-9]+`` token; the golden file
``tests/golden/porter_nltk.tsv.gz`` pins that behaviour.
"""
from __future__ import annotations

from typing import Dict, List, Tuple

__all__ = ["porter_stem"]

# Irregular forms that bypass the algorithm entirely (NLTK_EXTENSIONS).
_POOL: Dict[str, str] = {
    "sky": "sky",
    "skies": "sky",
    "dying": "die",
    "lying": "lie",
    "tying": "tie",
    "news": "news",
    "innings": "inning",
    "inning": "inning",
    "outings": "outing",
    "outing": "outing",
    "cannings": "canning",
    "canning": "canning",
    "howe": "howe",
    "proceed": "proceed",
    "exceed": "exceed",
    "succeed": "succeed",
}


class _CVTable(dict):
    """``str.translate`` table: vowel -> 'v', 'y' -> 'y', anything else -> 'c'."""

    def __missing__(self, key: int) -> int:
        return 99  # ord("c")


# ASCII is listed in full so that ``__missing__`` only runs for other characters.
_CV_TABLE = _CVTable({code: ord("c") for code in range(128)})
_CV_TABLE.update({ord(ch): ord("v") for ch in "aeiou"})
_CV_TABLE[ord("y")] = ord("y")


def _cv(word: str) -> str:
    """Consonant/vowel pattern of ``word`` as a string of 'c' and 'v'.

    A 'y' is a consonant at the start of the word or after a vowel, and a
    vowel after a consonant.  Because the class of a letter depends only on
    the letters before it, the pattern of a prefix is the prefix of the
    pattern, which lets each step compute it once.
    """
    pattern = word.translate(_CV_TABLE)
    if "y" not in pattern:
        return pattern
    chars = []
    prev_consonant = False
    for ch in pattern:
        if ch == "y":
            ch = "v" if prev_consonant else "c"
        chars.append(ch)
        prev_consonant = ch == "c"
    return "".join(chars)


def _m(pattern: str) -> int:
    """Porter's measure m of a word whose c/v pattern is ``pattern``."""
    return pattern.count("vc")


def _cvc(pattern: str, word: str) -> bool:
    """Condition *o: ends consonant-vowel-consonant, last not w/x/y.

    NLTK also accepts a two-letter word that is vowel-consonant (with no
    restriction on the final letter).
    """
    n = len(pattern)
    if n >= 3:
        return pattern.endswith("cvc") and word[-1] not in "wxy"
    return n == 2 and pattern == "vc"


def _step1a(word: str) -> str:
    if word.endswith("s"):
        if word.endswith("ies"):
            return word[:-1] if len(word) == 4 else word[:-2]
        if word.endswith("sses"):
            return word[:-2]
        if word.endswith("ss"):
            return word
        return word[:-1]
    return word


def _step1b(word: str) -> str:
    if word.endswith("ied"):
        return word[:-1] if len(word) == 4 else word[:-2]
    if word.endswith("eed"):
        # (m>0) EED -> EE; otherwise the word is left alone (no ED rule).
        return word[:-1] if _m(_cv(word[:-3])) > 0 else word
    if word.endswith("ed"):
        stem = word[:-2]
    elif word.endswith("ing"):
        stem = word[:-3]
    else:
        return word
    pattern = _cv(stem)
    if "v" not in pattern:
        return word
    # Tidy-up after a successful ED / ING removal.
    if stem.endswith(("at", "bl", "iz")):
        return stem + "e"
    last = stem[-1]
    if len(stem) >= 2 and stem[-2] == last and pattern[-1] == "c":
        return stem if last in "lsz" else stem[:-1]
    if _m(pattern) == 1 and _cvc(pattern, stem):
        return stem + "e"
    return stem


def _step1c(word: str) -> str:
    # (*c and not c) Y -> I: the letter before the final y is a consonant
    # and is not the first letter.
    if word.endswith("y") and len(word) > 2 and _cv(word[:-1])[-1] == "c":
        return word[:-1] + "i"
    return word


# Suffix rules as (suffix, replacement, extra): the condition is evaluated on
# the stem word[:-len(suffix)] extended by `extra` letters of the suffix.
_Rule = Tuple[str, str, int]

_STEP2: List[_Rule] = [
    ("ational", "ate", 0),
    ("tional", "tion", 0),
    ("enci", "ence", 0),
    ("anci", "ance", 0),
    ("izer", "ize", 0),
    ("bli", "ble", 0),
    ("alli", "al", 0),
    ("entli", "ent", 0),
    ("eli", "e", 0),
    ("ousli", "ous", 0),
    ("ization", "ize", 0),
    ("ation", "ate", 0),
    ("ator", "ate", 0),
    ("alism", "al", 0),
    ("iveness", "ive", 0),
    ("fulness", "ful", 0),
    ("ousness", "ous", 0),
    ("aliti", "al", 0),
    ("iviti", "ive", 0),
    ("biliti", "ble", 0),
    ("fulli", "ful", 0),
    ("logi", "log", 1),  # the 'l' stays with the stem for the measure
]

_STEP3: List[_Rule] = [
    ("icate", "ic", 0),
    ("ative", "", 0),
    ("alize", "al", 0),
    ("iciti", "ic", 0),
    ("ical", "ic", 0),
    ("ful", "", 0),
    ("ness", "", 0),
]

_STEP4: List[str] = [
    "al", "ance", "ence", "er", "ic", "able", "ible", "ant", "ement", "ment",
    "ent", "ion", "ou", "ism", "ate", "iti", "ous", "ive", "ize",
]


def _by_last_letter(suffixes):
    """Group rules by the last letter of their suffix, keeping their order.

    Only rules whose suffix ends in the word's last letter can match, and the
    first match decides, so scanning the group is equivalent to scanning
    the whole ordered list.
    """
    table: Dict[str, list] = {}
    for rule in suffixes:
        suffix = rule if isinstance(rule, str) else rule[0]
        table.setdefault(suffix[-1], []).append(rule)
    return table


_STEP2_BY_LAST = _by_last_letter(_STEP2)
_STEP3_BY_LAST = _by_last_letter(_STEP3)
_STEP4_BY_LAST = _by_last_letter(_STEP4)


def _apply_m_gt_0(word: str, rules) -> str:
    """First rule whose suffix matches decides; (m>0) on its stem."""
    for suffix, replacement, extra in rules:
        if word.endswith(suffix):
            cut = len(word) - len(suffix)
            if _m(_cv(word[: cut + extra])) > 0:
                return word[:cut] + replacement
            return word
    return word


def _step2(word: str) -> str:
    # NLTK applies ALLI -> AL first and re-runs the step on the result.
    if word.endswith("alli") and _m(_cv(word[:-4])) > 0:
        return _step2(word[:-2])
    rules = _STEP2_BY_LAST.get(word[-1:])
    return _apply_m_gt_0(word, rules) if rules else word


def _step3(word: str) -> str:
    rules = _STEP3_BY_LAST.get(word[-1:])
    return _apply_m_gt_0(word, rules) if rules else word


def _step4(word: str) -> str:
    for suffix in _STEP4_BY_LAST.get(word[-1:], ()):
        if word.endswith(suffix):
            stem = word[: len(word) - len(suffix)]
            if _m(_cv(stem)) > 1 and (suffix != "ion" or stem[-1] in "st"):
                return stem
            return word
    return word


def _step5(word: str) -> str:
    # 5a: (m>1) E -> ; (m=1 and not *o) E ->
    if word.endswith("e"):
        stem = word[:-1]
        pattern = _cv(stem)
        m = _m(pattern)
        if m > 1 or (m == 1 and not _cvc(pattern, stem)):
            word = stem
    # 5b: (m>1 and *d and *L) -> single letter
    if word.endswith("ll") and _m(_cv(word[:-1])) > 1:
        return word[:-1]
    return word


def porter_stem(word: str) -> str:
    """Stem one token with the Porter algorithm, NLTK_EXTENSIONS variant.

    Implements the suffix-stripping algorithm of Porter (1980) with the
    modifications of NLTK's default ``PorterStemmer`` mode
    (``NLTK_EXTENSIONS``): a pool of irregular forms, words of one or two
    characters returned unchanged, ``-ies``/``-ied`` special cases for
    four-letter words, the ``(*c and not c) Y -> I`` rule, ``alli``/``fulli``/
    ``logi`` rules in step 2, and a two-letter ``*o`` condition.  The output
    equals ``nltk.stem.porter.PorterStemmer().stem(word)`` (nltk 3.10.4) for
    every lowercase ``[a-z0-9]+`` token; it is what Google's ``rouge-score``
    applies to tokens longer than three characters.

    Parameters
    ----------
    word : str
        A lowercase token.  No case folding is done here: the caller (the
        ROUGE tokenizer) has already lowercased it.  Characters other than
        ``a e i o u y`` count as consonants, digits included.

    Returns
    -------
    str
        The stem.  The empty string is returned unchanged.

    See Also
    --------
    pysynth._core.metrics.porter_stem : The compiled version (list in, list
        out), which returns identical stems.

    References
    ----------
    .. [1] M. F. Porter, "An algorithm for suffix stripping", *Program*
       14(3), 130-137, 1980.
    .. [2] NLTK, ``nltk/stem/porter.py``, mode ``NLTK_EXTENSIONS``.

    Examples
    --------
    >>> porter_stem("generalizations")
    'gener'
    >>> porter_stem("skies"), porter_stem("dying"), porter_stem("ties")
    ('sky', 'die', 'tie')
    >>> porter_stem("happy"), porter_stem("enjoy")
    ('happi', 'enjoy')
    """
    pooled = _POOL.get(word)
    if pooled is not None:
        return pooled
    if len(word) <= 2:
        return word
    word = _step1a(word)
    word = _step1b(word)
    word = _step1c(word)
    word = _step2(word)
    word = _step3(word)
    word = _step4(word)
    return _step5(word)
