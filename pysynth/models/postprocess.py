"""Post-processing of a lower-casing model's outputs: the source's case and spacing back.

pysynth's seq2seq models read and write lower-cased tokens (:mod:`pysynth.models.vocab`), so an
output loses the case of the words it copies ("paris" for "Paris") and the gluing of the source's
tokens ("/ etc / fstab" for "/etc/fstab"). Two rules, kept apart because their callers' tests and
published numbers depend on them:

* :func:`truecase` (question rewriting, duplicate-question titles, ``POST /v1/rewrite``): the
  spacing (:func:`respace`) and the case of every word (tokens split on non-word characters) that
  occurs in the source, the pronoun "I", and a capital first letter; the source's first word is
  taken as capitalised for starting the sentence unless the next one is capitalised too.
* :func:`match_case` (paraphrase candidates, round-trip translation): whitespace-separated words
  only, each spelt as in the source, and a capital first letter; no respacing (the paraphrase
  score compares whitespace tokens).

A third, :func:`context_case`, is for outputs written from a paragraph (question generation), where a
sentence-initial "The" or "In" must not capitalise every "the" of the output.
"""
from __future__ import annotations

import re

__all__ = ["WORD", "respace", "truecase", "match_case", "context_case"]

#: a word (with inner apostrophes: "it's") or one punctuation character
WORD = re.compile(r"\w+(?:'\w+)*|[^\w\s]")


def respace(output: str, source: str, token: "re.Pattern[str]" = WORD) -> str:
    """Glue the tokens of ``output`` that are glued in ``source``: the model reads and writes
    tokens, so "/etc/default" and "console-setup" come out "/ etc / default", "console - setup"
    (ROUGE's tokenizer then sees other words; on the MQR test 1.5 ROUGE-1 points). ``token``: what
    a token is (default :data:`WORD`, a word keeping its inner apostrophes).

    Examples
    --------
    >>> respace("how does / etc / fstab work?", "how does /etc/fstab work")
    'how does /etc/fstab work?'
    """
    found = list(token.finditer(source))
    glued = {(a.group().lower(), b.group().lower()) for a, b in zip(found, found[1:]) if a.end() == b.start()}
    if not glued:
        return output
    pieces, pos, prev = [], 0, None
    for m in token.finditer(output):
        gap = output[pos:m.start()]
        if prev is not None and gap.isspace() and (prev, m.group().lower()) in glued:
            gap = ""
        pieces.append(gap + m.group())
        pos, prev = m.end(), m.group().lower()
    return "".join(pieces) + output[pos:]


def truecase(output: str, source: str) -> str:
    """Restore the spacing (:func:`respace`) and the case of the words of ``output`` (lower-cased by
    the model) that occur in ``source`` (the pronoun "I" too), and capitalise the first letter.
    The source's first word, when only its first letter is upper case, is taken as capitalised for
    starting the sentence, unless the next word is capitalised too ("Sony Alpha 77", "Time Magazine").

    Examples
    --------
    >>> truecase("how do i install ubuntu on an usb stick?", "install Ubuntu on USB stick")
    'How do I install Ubuntu on an USB stick?'
    """
    output = respace(output, source)
    cased = {}
    words = WORD.findall(source)
    for i, w in enumerate(words):
        if i == 0 and w[:1].isupper() and w[1:].islower() and not (len(words) > 1 and words[1][:1].isupper()):
            continue  # capitalised only because it starts the sentence
        cased.setdefault(w.lower(), w)
    cased["i"] = "I"  # the pronoun, lower-cased by the model (and often by the asker)
    parts = re.split(r"(\W+)", output)
    out = "".join(cased.get(w.lower(), w) if w and w[0].isalnum() else w for w in parts)
    return out[:1].upper() + out[1:]


def match_case(text: str, source: str) -> str:
    """Give a lower-cased model output the source's casing: its first letter upper-case, and each
    whitespace-separated word that is in the source (case-insensitively) spelt as there ("paris"
    -> "Paris"); so a case-sensitive comparison with the source compares like with like.

    Examples
    --------
    >>> match_case("is paris in france ?", "Is Paris in France?")
    'Is Paris in france ?'
    """
    forms = {}
    for j, w in enumerate(source.split()):
        # the first word is capitalised for the sentence, not for itself ("Is this ...")
        forms.setdefault(w.lower(), w if j or w == "I" else w.lower())
    words = [forms.get(w.lower(), "I" if w == "i" else w) for w in text.split()]
    if words and words[0][:1].islower():
        words[0] = words[0][:1].upper() + words[0][1:]
    return " ".join(words)


_PIECE = re.compile(r"\w+|[^\w\s]")  # a BERT-style token: a word or one punctuation character
_SENTENCE_END = frozenset(".!?")


def context_case(output: str, context: str) -> str:
    """Case and spacing of a lower-cased output written from a paragraph ``context`` (question
    generation): two tokens (words or single punctuation characters) glued in the context are glued
    in the output ("chicago ' s" -> "chicago's", "co - ed" -> "co-ed"); a word takes the case it
    has inside the context's sentences (the commonest such form; a word seen only at a sentence's
    start stays lower-case, so "The ..." does not capitalise every "the"); the first letter is
    capitalised.

    Examples
    --------
    >>> context_case("what is jacksonville ' s co - ed fraternity?",
    ...              "The fraternity of Jacksonville's co-ed college is Alpha Phi Omega.")
    "What is Jacksonville's co-ed fraternity?"
    """
    pieces = list(_PIECE.finditer(context))
    forms = {}
    for i, m in enumerate(pieces):
        w = m.group()
        # after ". " a sentence starts; after a glued "." ("U.S.") none does
        starts = i == 0 or (pieces[i - 1].group() in _SENTENCE_END and pieces[i - 1].end() != m.start())
        if w[0].isalnum() and not starts:
            count = forms.setdefault(w.lower(), {})
            count[w] = count.get(w, 0) + 1
    best = {k: max(v.items(), key=lambda kv: (kv[1], kv[0] == k))[0] for k, v in forms.items()}
    text = re.sub(r"\w+", lambda m: best.get(m.group().lower(), m.group()), respace(output, context, _PIECE))
    return text[:1].upper() + text[1:]
