"""The form of an ill-formed question, and the rule floor that only adds a template where it fits.

MQR's ill-formed titles (Chu et al. 2020) are mostly fragments: a verb phrase ("install ubuntu on
usb stick", "Blocking venting from rodents"), a noun phrase ("capital of australia"), or a clause
or name that no question template fits ("Time Magazine aiding Al Capone?", "Air conditioner trips
circuit breaker"). The rule floor of the first version prefixed "How to" to every fragment and so
wrote "How to capital of australia?" (issue 26). Without an offline part-of-speech tagger,
:func:`form_of` reads the form from closed word classes (question words, auxiliaries, pronouns,
prepositions) and a list of common verbs, and errs towards "other": an input it cannot place gets
only its casing and question mark fixed, never a template.

* ``question``: starts with a question word or an auxiliary ("what is x", "can't set aperture"),
  or has one later ("Geary - How to print emails"): casing and "?" only.
* ``verb``: a known verb in its base or -ing form first (after an optional -ly adverb), not followed
  by "of" or a finite verb: "How can I <verb> ...?" ("Blocking venting" -> "How can I block venting?").
* ``noun``: no verb, auxiliary, pronoun subject, -ing/-ed word or separator, at most 8 words, no
  word ending in "s" before a non-preposition (a third-person verb: "trips circuit breaker"), and a
  sure sign of a noun phrase ("X of ...", "X between ...", a superlative or "difference"/"purpose"
  first, an article first; "grep for tags" may be a verb phrase): "What is/are [the] <NP>?" ("the"
  before a superlative or "X of"/"X between").
* ``other``: casing and "?" only.
"""
from __future__ import annotations

import re
from typing import List, Tuple

__all__ = ["FORMS", "VERBS", "form_of", "rule_floor", "verb_lemma", "template_misfit"]

FORMS = ("question", "verb", "noun", "other")
#: the template before a verb phrase: MQR's references put "How can I" before a fragment that starts with a
#: verb ~9x as often as "How to" (dev: 92 vs 10 of 271 -ing fragments); +2.4 BLEU-4 for the rule floor on dev
VERB_TEMPLATE = "How can I"

_QWORDS = frozenset("how why when what which who whom whose where whats what's how's where's who's why's "
                    "whats".split())
_AUX = frozenset("""is are was were am be do does did can could should would will shall may might must has have had
need isn't aren't wasn't weren't don't doesn't didn't can't cannot couldn't shouldn't wouldn't won't hasn't
haven't hadn't""".split())
_SUBJECTS = frozenset("i you he she it we they i'm i've you're it's there's that's".split())
_PREPS = frozenset("""of in on for to with without from by at about into onto over under between among through
via per after before during against across behind beyond inside outside near than vs versus like within""".split())
_DETS = frozenset("a an the my your our their his her its this that these those some any no each every".split())
_CONJ = frozenset("and or but nor so yet".split())
#: words that take "the" in "What is the ...?" ("the best way", "the difference between")
_THE = frozenset("""best worst most least fastest easiest simplest cheapest quickest safest smallest largest
biggest highest lowest longest shortest latest oldest newest right correct proper ideal optimal recommended
preferred usual standard default maximum minimum average difference purpose meaning point reason origin role
function advantage advantages benefit benefits cause effect effects name use""".split())
#: -ing / -ed nouns and adjectives (not verb forms)
_NOT_VERB_FORMS = frozenset("""thing things string strings nothing something anything everything ceiling morning
evening building buildings wedding meeting spring king ring ping swing sibling pudding icing clothing earring
awning bed red need speed seed feed shed bleed embed hundred""".split())
_FINITE_HINTS = frozenset("""not fails failed works worked stops stopped crashes crashed breaks broke freezes hangs
doesnt dont isnt cant wont""".split())

#: verbs common in Stack Exchange question titles, base form (a closed list: an unknown verb is not guessed)
VERBS = frozenset("""
access activate adapt add adjust allow alter analyse analyze animate append apply archive arrange assign attach
authenticate automate avoid back backup bake balance ban batch become begin bind blend block boil boot bootstrap
break brew bring build burn buy cache calculate calibrate call cancel capture care carry cast catch center centre
change charge check choose clean clear click clone close code collapse collect color colour combine comment compare
compile complete compress compute concatenate configure connect convert cook copy correct count create crop cut
deal debug decide decode decrypt define delete deploy describe design detect determine develop disable disconnect
display distinguish do download drag draw drink drive drop dry dump edit eliminate embed emulate enable encode
encrypt end enter erase estimate evaluate exclude execute exit expand explain export extend extract feed fetch
fill filter find finish fit fix flash flip force format forward free freeze generate get give go grow handle hang
hide highlight hold host identify ignore implement import improve include increase indent index initialise
initialize insert install integrate interpret invert join keep kill label launch learn leave limit link list load
locate lock log login make manage map mark match measure merge migrate minimize mirror mix modify monitor mount
move multiply name navigate obtain open optimise optimize order organise organize output override overwrite pack
paint parse partition pass paste patch pause pay pick pin place plant play plot plug point populate position post
prepare prevent print process program protect prove publish pull purge push put query quit raise read rebuild
receive record recover redirect reduce refer refresh register reinstall reload remap remember remove rename render
reorder repair repeat replace report represent request reset resize resolve restart restore retrieve return reuse
revert rewrite rotate round run save scale scan schedule scroll search secure select sell send separate serve set
setup share shift show shrink shut sign simulate skip sort speed split spot stack start stop store stream strip
style submit subtract swap switch sync synchronize take teach tell test throw toggle track train transfer
transform translate transport treat trigger trim troubleshoot try turn type uncheck undo uninstall unlock unmount
unzip update upgrade upload use validate verify view visualize wait warm wash watch wire work wrap write zip zoom
""".split())

#: verbs that are rarely nouns: "How to <verb>" fits before any object ("install ubuntu"); every other verb
#: of :data:`VERBS` ("log", "update", "backup") only before an article, pronoun, particle or preposition
_VERB_ONLY = frozenset("""
activate add adjust allow analyse analyze append apply authenticate automate avoid become begin bring calculate
choose clean clear compare compile configure connect convert create debug decode decrypt define delete deploy
describe detect determine disable disconnect distinguish do download eliminate emulate enable encode encrypt
estimate evaluate exclude execute expand explain extend extract fetch find generate get give hide identify ignore
implement improve include increase initialise initialize insert install integrate interpret keep kill learn locate
make manage merge migrate minimize modify move navigate obtain optimise optimize organise organize overwrite parse
populate prepare prevent prove publish put raise read rebuild receive recover redirect reduce refresh reinstall
reload remap remember remove rename render reorder repair replace represent resize resolve restart restore retrieve
reuse revert rewrite rotate select send separate simulate subtract synchronize take teach tell throw toggle
translate troubleshoot try uncheck uninstall unlock unmount unzip upload validate verify visualize write
""".split())
_OBJECT_START = frozenset("""a an the my your our their his her its this that these those some any all every each
it them me him us up out off down in on into onto to for with from by at over back away around through
about across without under""".split())
_SUBORDINATORS = frozenset("if when whether that while because after before until so where unless".split())

_WORD = re.compile(r"\w+(?:['’]\w+)*|[^\w\s]")


def _words(text: str) -> List[str]:
    return [w.lower().replace("’", "'") for w in _WORD.findall(text)]


def verb_lemma(word: str) -> str:
    """The base form of ``word`` when it is a known verb (:data:`VERBS`) in its base or -ing form,
    else ``""`` ("blocking" -> "block", "using" -> "use", "setting" -> "set", "bonding" -> "")."""
    w = word.lower()
    if w in VERBS:
        return w
    if len(w) > 4 and w.endswith("ing") and w not in _NOT_VERB_FORMS:
        stem = w[:-3]
        for cand in (stem, stem + "e", stem[:-1] if len(stem) > 2 and stem[-1] == stem[-2] else ""):
            if cand in VERBS:
                return cand
    return ""


def _verbish(word: str) -> bool:
    """An -ing or -ed form, or a finite-verb hint: the sign of a clause, not a bare noun phrase."""
    if word in _FINITE_HINTS:
        return True
    if word in _NOT_VERB_FORMS:
        return False
    return len(word) > 4 and (word.endswith("ing") or (word.endswith("ed") and not word.endswith("eed")))


def _no_clause(words: List[str]) -> bool:
    """No auxiliary or finite-verb hint before a subordinator: "using perfume is haram" is a clause,
    "check if it is installed" a verb phrase."""
    for x in words:
        if x in _SUBORDINATORS:
            return True
        if x in _AUX or x in _FINITE_HINTS:
            return False
    return True


def _plural(word: str) -> bool:
    return len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is", "ics"))


def form_of(text: str) -> Tuple[str, int]:
    """``(form, i)``: the form of ``text`` (:data:`FORMS`; see the module doc) and, for ``verb``,
    the index of the verb among its words (1 after a -ly adverb, else 0).

    Examples
    --------
    >>> form_of("capital of australia")
    ('noun', 0)
    >>> form_of("Safely increase size of door bolt")
    ('verb', 1)
    """
    w = _words(text)
    while w and w[-1] in ("?", ".", "!"):
        w.pop()
    if not w:
        return "other", 0
    if w[0] in _QWORDS or w[0] in _AUX or any(x in _QWORDS for x in w[1:]):
        return "question", 0
    i = 1 if len(w) > 1 and w[0].endswith("ly") and len(w[0]) > 3 and verb_lemma(w[1]) else 0
    nxt = w[i + 1] if i + 1 < len(w) else ""
    lemma = verb_lemma(w[i])
    if lemma and nxt not in ("of", "vs", "versus") and nxt not in _AUX and nxt not in _FINITE_HINTS and \
            (lemma in _VERB_ONLY or lemma != w[i] or not nxt or nxt in _OBJECT_START) and _no_clause(w[i + 1:]):
        return "verb", i
    closed = _PREPS | _CONJ | _SUBJECTS | _DETS
    if w[0] not in closed and w[0].isalpha() and not _verbish(w[0]) and nxt in _DETS - {"no"} and \
            _no_clause(w[1:]):
        return "verb", 0  # "downsample a texture": a word before an article is a verb (not in VERBS)
    if len(w) > 8 or w[0] in closed - _DETS or w[0] in _AUX:
        return "other", 0
    for j, x in enumerate(w):
        if not x[0].isalnum() and x not in ("-", "/", "&", "+", "#", "."):
            return "other", 0  # a separator or bracket: a title with parts, not one phrase
        if x in _AUX or x in _SUBJECTS or x in _QWORDS or _verbish(x) and not (j and w[j - 1] in _PREPS):
            return "other", 0
        if j and x in VERBS and w[j - 1] not in _DETS and w[j - 1] not in _PREPS:
            return "other", 0  # "my laptop make noise": a verb after a noun
        if _plural(x) and j + 1 < len(w) and w[j + 1] not in _PREPS and w[j + 1] not in _CONJ:
            return "other", 0  # "trips circuit breaker": a third-person verb, not a plural noun
    if not (w[0] in _THE or w[0] in _DETS or (len(w) > 1 and w[1] in ("of", "between"))):
        return "other", 0  # "grep for tags", "pool heat pump": no sure sign of a noun phrase to ask about
    return "noun", 0


def _sentence_case(text: str, first: str) -> str:
    """``text`` starting with ``first`` lower-cased when it is capitalised only to start the
    sentence ("Capital of Australia" -> "capital ...", "Time Magazine" kept, "iPhone" kept)."""
    rest = _WORD.findall(text[len(first):])
    name = bool(rest) and rest[0][:1].isupper()
    if first[:1].isupper() and first[1:].islower() and not name:
        return first.lower() + text[len(first):]
    return text


def _finish(text: str) -> str:
    t = text.rstrip(".!?;:, ")
    m = _WORD.match(t)
    if m and m.group().replace("'", "").isalpha() and m.group().islower():
        t = t[:1].upper() + t[1:]  # "iPhone", "eBay", "/etc" keep their first letter
    return t + "?"


def rule_floor(text: str, legacy: bool = False) -> str:
    """The rule baseline: a question template only where the input's form fits it (:func:`form_of`):
    "How can I <verb phrase>?", "What is/are [the] <noun phrase>?", else only the first letter
    capitalised and a final "?" (replacing a final "." or "!").

    Parameters
    ----------
    text : the ill-formed question.
    legacy : the first version's rule, kept for comparison (Table 6's earlier rule row): "How to"
        before anything that does not start with a question word, which breaks grammar ("How to
        capital of australia?").

    Examples
    --------
    >>> rule_floor("capital of australia")
    'What is the capital of australia?'
    >>> rule_floor("Blocking Venting from Rodents")
    'How can I block Venting from Rodents?'
    >>> rule_floor("Time Magazine aiding Al Capone?")
    'Time Magazine aiding Al Capone?'
    """
    t = " ".join(text.split())
    if not t:
        return t
    if legacy:
        from pysynth.mqr.mining import QUESTION_WORDS

        if not t.lower().startswith(QUESTION_WORDS):
            t = "How to " + t[0].lower() + t[1:]
        return t.rstrip(".!? ") + "?"
    form, i = form_of(t)
    words = _WORD.findall(t)
    if form == "verb":
        verb = words[i]
        start = t.index(verb, sum(len(x) for x in words[:i]))  # after the adverb, if any
        adverb = t[:start].strip()
        rest = t[start + len(verb):]
        adverb = (adverb[:1].lower() + adverb[1:] + " ") if adverb else ""
        return _finish(f"{VERB_TEMPLATE} {adverb}{verb_lemma(verb) or verb.lower()}{rest}")
    if form == "noun":
        low = _words(t)
        head = next((x for j, x in enumerate(low) if j + 1 < len(low) and low[j + 1] in _PREPS), low[-1])
        np_ = _sentence_case(t.rstrip(".!? "), words[0])
        the = low[0] not in _DETS and np_[:1].islower() and (low[0] in _THE or (len(low) > 2 and low[1] in
                                                                                 ("of", "between")))
        return _finish(f"What {'are' if _plural(head) else 'is'} {'the ' if the else ''}{np_}")
    return _finish(t)


_TEMPLATES = ("how to", "how can i", "how do i", "how should i", "how can we", "how do you", "how do we",
              "what is", "what are")


def template_misfit(output: str, source: str) -> bool:
    """True when ``output`` puts a question template before a ``source`` that does not fit it: "How
    to/How can I ..." followed by the source's own first word where the source does not start with a
    verb ("How can I capital of australia?", "How to Time Magazine aiding Al Capone?") or by an -ing
    form ("How to blocking ..."); "What is ..." followed by the source's first word where the source
    is no noun phrase. The check the rule floor applies to itself, applied to a model's rewrite."""
    out, src = _words(output), _words(source)
    if not out or not src:
        return False
    for tpl in _TEMPLATES:
        k = len(tpl.split())
        if out[:k] != tpl.split() or len(out) <= k:
            continue
        form = form_of(source)[0]
        if tpl.startswith("how"):
            if verb_lemma(out[k]) not in ("", out[k]):
                return True  # "How to blocking ..."
            if out[k] != src[0] or form == "verb" or verb_lemma(src[0]):
                return False
            # only sure signs that the source's first word is no verb ("grep for tags" may be one)
            raw = source.split()
            name = len(raw) > 1 and raw[0][:1].isupper() and raw[1][:1].isupper()
            closed = src[0] in _PREPS | _CONJ | _SUBJECTS | _DETS or not src[0].isalpha()
            noun = src[0] in _THE or _plural(src[0]) or _verbish(src[0]) or (len(src) > 1 and src[1] == "of")
            return closed or name or noun
        return out[k] == src[0] and (form == "verb" or bool(verb_lemma(src[0])) or _verbish(src[0]) or
                                     not _no_clause(src[1:]))
    return False
