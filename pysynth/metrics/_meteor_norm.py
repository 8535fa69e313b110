"""The jar's ``-norm`` normalizer of English (``edu.cmu.meteor.util.Normalizer``), in pure Python.

The specification of the compiled ``meteor_normalize`` (ASCII texts) and what prepares the other
texts on every backend. Its own module, free of numpy and of the rest of the twin
(:mod:`pysynth.metrics._meteor_ref`, which re-exports it): a one-shot METEOR run with a few non-ASCII
segments imports only this.
"""
from __future__ import annotations

import re
from typing import Dict

_ALPHA = ("A-Za-z\u0160\u017d\u0161\u017e\u0178\xc0-\xd6\xd8-\xf6\xf8-\u017e\u0400-\u04ff\u0500-\u0527"
          "\ua640-\ua66e\ua67e-\ua697\u1d00-\u1d7f")
_ALNUM = "0-9" + _ALPHA
_JS = " \t\n\x0b\x0c\r"  # Java regex \s
_TOK = re.compile("[ \t\n\r\x0c]+")  # java.util.StringTokenizer's delimiters
_R_SEP = re.compile("([^" + _ALNUM + _JS + ".'`,\\-\u2018\u2019])")
_R_MDOT = re.compile(r"\.([\.]+)")
_R_MDOT2 = re.compile(r"DOTMULTI\.([^\.])")
_R_COMMA = re.compile("([^0-9])[,]([^0-9])")
_R_COMMA2 = re.compile("([0-9])[,]([^0-9])")
_R_COMMA3 = re.compile("([^0-9])[,]([0-9])")
_R_Q1 = re.compile("([`\u2018\u2019])")
_R_Q2 = re.compile("([\u201c\u201d]|'')")
_R_DASH = re.compile("([" + _ALNUM + "\\.])[\\-]([" + _ALNUM + "])")
_R_C1 = re.compile("([^" + _ALPHA + "])[']([^" + _ALPHA + "])")
_R_C2 = re.compile("([^" + _ALPHA + "0-9])[']([" + _ALPHA + "])")
_R_C3 = re.compile("([" + _ALPHA + "])[']([^" + _ALPHA + "])")
_R_C4 = re.compile("([" + _ALPHA + "])[']([" + _ALPHA + "])")
_R_C5 = re.compile("([0-9])[']([s])")
_R_ALPHA = re.compile("[" + _ALPHA + "]")
_R_WHITE = re.compile("[ \u2000-\u200a\u202f\u205f\u3000\xa0]+")
_JTRIM = "".join(chr(c) for c in range(0x21))


class _SepTable(dict):
    """str.translate table for _R_SEP: " c " for a character the jar separates, c otherwise."""

    def __missing__(self, code: int) -> str:
        c = chr(code)
        v = self[code] = " " + c + " " if _R_SEP.match(c) else c
        return v


_SEP = _SepTable()


def normalize(line: str, nbp: Dict[str, int]) -> str:
    """The jar's ``-norm`` for English (punctuation kept), then ``toLowerCase``."""
    # Each step is skipped when the character it needs is absent (then it is a no-op anyway).
    s = (" " + line + " ").translate(_SEP)  # = _R_SEP.sub(r" \1 ", s), one character at a time
    if ".." in s:
        s = _R_MDOT.sub(r" DOTMULTI\1", s)
    while "DOTMULTI." in s:
        s = _R_MDOT2.sub(r"DOTDOTMULTI \1", s)
        s = s.replace("DOTMULTI.", "DOTDOTMULTI")
    if "," in s:
        s = _R_COMMA.sub(r"\1 , \2", s)
        s = _R_COMMA2.sub(r"\1 , \2", s)
        s = _R_COMMA3.sub(r"\1 , \2", s)
    if not s.isascii() or "`" in s:
        s = _R_Q1.sub("'", s)
        s = _R_Q2.sub(' " ', s)
    elif "''" in s:
        s = _R_Q2.sub(' " ', s)
    if "-" in s or not s.isascii():
        s = s.replace("\u2013", "-").replace("--", "-")
        s = _R_DASH.sub(r"\1 \2", s)
    if "'" in s:
        s = _R_C1.sub(r"\1 ' \2", s)
        s = _R_C2.sub(r"\1 ' \2", s)
        s = _R_C3.sub(r"\1 ' \2", s)
        s = _R_C4.sub(r"\1 '\2", s)
        s = _R_C5.sub(r"\1 '\2", s)
    if s.isascii() and not ("\x0b" in s or "\x1c" in s or "\x1d" in s or "\x1e" in s or "\x1f" in s):
        words = s.split()  # = StringTokenizer's split here
    else:
        words = [w for w in _TOK.split(s) if w]
    if "." in s:  # rebuild the line, breaking dots unless a nonbreaking prefix
        last = len(words) - 1
        for i, w in enumerate(words):
            if len(w) > 1 and w[-1] == ".":
                pre = w[:-1]
                typ = nbp.get(pre)
                nxt = words[i + 1][0] if i < last else ""
                if "." in pre and _R_ALPHA.search(pre):
                    words[i] = w.replace(".", "")
                elif typ == 1 or "a" <= nxt <= "z":
                    pass
                elif typ == 2 and "0" <= nxt <= "9":
                    pass
                else:
                    words[i] = pre + " ."
    s = " ".join(words)
    if "DOTMULTI" in s:
        while "DOTDOTMULTI" in s:
            s = s.replace("DOTDOTMULTI", "DOTMULTI.")
        s = s.replace("DOTMULTI", ".")
    if not s.isascii() or "  " in s:
        s = _R_WHITE.sub(" ", s)
    return s.strip(_JTRIM).lower()


def clean(text: str) -> str:
    """What the jar flavor sends of a text: ``|||`` taken out, whitespace folded to single spaces."""
    return " ".join(text.replace("|||", " ").split())


def prepare(text: str, nbp: Dict[str, int]) -> str:
    """A raw segment as the jar scores it: :func:`clean`, trimmed as Java's ``trim``, :func:`normalize`."""
    return normalize(clean(text).strip(_JTRIM), nbp)
