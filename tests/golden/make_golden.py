#!/usr/bin/env python
"""Generate golden reference values for pysynth's text metrics from the real reference tools.

Tools (exact versions; the script refuses to run with others unless ``--allow-other-versions``):
    rouge_score   0.1.2   (Google rouge-score; its stemmer is nltk's PorterStemmer)
    rouge         0.3.2   (pltrdy/rouge; note: ``rouge.__version__`` still says "0.3.1")
    sacrebleu     2.6.0
    nltk          3.10.4  (nltk.translate.bleu_score)
    pycocoevalcap 1.2     (pycocoevalcap.bleu.bleu.Bleu, pure Python; same scorer nlg-eval uses)

Regenerate (from the repository root, with a venv holding exactly those versions):
    /tmp/refenv/bin/python tests/golden/make_golden.py
    # optional: --data /work/shared/data  --out tests/golden
Outputs (deterministic; the .gz has mtime 0):
    tests/golden/metrics_golden.json.gz
    tests/golden/mqr_paper_check.json
    tests/golden/mqr_paper_check.md

Texts and licences. Apart from the hand-written "edge" corpus (written for this project), the texts are copied
from CC BY-SA data and keep that licence and attribution:
    * MQR (Chu et al., AAAI 2020), CC BY-SA 4.0, github.com/ZeweiChu/MQR (built from Stack Exchange, CC BY-SA):
      corpus "mqr_dev" and the paper check (test split + the paper's system outputs).
    * SQuAD 2.0 dev (Rajpurkar et al. 2018), CC BY-SA 4.0: corpora "long" and "long_nl".
    * ComQA / WikiAnswers questions (Abujabal et al. 2019; WikiAnswers-derived content) with keyword queries made
      for this project (k2q seed pairs): corpus "k2q".

The file layout is documented in tests/golden/README.md.
"""
import argparse
import gzip
import importlib.metadata as md
import io
import json
import logging
import os
import random
import sys
import warnings

EXPECTED_VERSIONS = {
    "rouge_score": "0.1.2",
    "rouge": "0.3.2",
    "sacrebleu": "2.6.0",
    "nltk": "3.10.4",
    "pycocoevalcap": "1.2",
}

warnings.filterwarnings("ignore")
logging.disable(logging.CRITICAL)  # absl (rouge_score) and sacrebleu loggers

from nltk.translate.bleu_score import SmoothingFunction, corpus_bleu, sentence_bleu  # noqa: E402
from pycocoevalcap.bleu.bleu import Bleu  # noqa: E402
from rouge import Rouge  # noqa: E402
from rouge_score import rouge_scorer  # noqa: E402
from rouge_score import tokenizers as rs_tokenizers  # noqa: E402
from sacrebleu.metrics import BLEU  # noqa: E402
from sacrebleu.tokenizers.tokenizer_13a import Tokenizer13a  # noqa: E402
from sacrebleu.tokenizers.tokenizer_intl import TokenizerV14International  # noqa: E402

SYSTEMS = ["GEC", "lstm", "nmt_de", "nmt_fr", "paralex_quora_stackexchange", "paralex_stackexchange",
           "quora_stackexchange", "quora_stackexchange_gec", "transformer"]

# ---------------------------------------------------------------------------------------------------------------
# Hand-written adversarial segments: (hyp, ref stream 1, ref stream 2)
# ---------------------------------------------------------------------------------------------------------------
_MANY_SENTS = " ".join("Sentence number %d has %s words." % (i, "some" if i % 2 else "several") for i in range(1, 41))
_MANY_SENTS_REF = " ".join("Sentence %d has %s words." % (i, "some" if i % 3 else "many") for i in range(1, 36))
_MANY_LINES = "\n".join("Line %d says the %s ran." % (i, ["cat", "dog", "fox"][i % 3]) for i in range(1, 31))
_MANY_LINES_REF = "\n".join("Line %d says a %s ran." % (i, ["cat", "dog", "owl"][i % 3]) for i in range(1, 26))
_MANY_LINES_REF2 = "\n\n".join("Line %d: the %s ran" % (i, ["dog", "fox", "cat"][i % 3]) for i in range(1, 31))

EDGE = [
    # empty / whitespace
    ("", "", ""),
    ("", "the cat sat", "a cat sat"),
    ("the cat sat", "", "the cat"),
    ("the cat", "the cat", ""),
    (" ", "the cat", "   "),
    ("cat", "   ", "cat"),
    ("\t\n ", "cat", "dog"),
    ("\n", "\n", "\n\n"),
    # single tokens / identical
    ("cat", "cat", "cat"),
    ("cat", "dog", "cat"),
    ("Cat", "cat", "CAT"),
    ("the cat sat on the mat", "the cat sat on the mat", "a cat on a mat"),
    ("the cat sat on the mat .", "the cat sat on the mat .", "the cat sat on the mat."),
    # repeated words
    ("the the the the the the the", "the cat is on the mat", "there is a cat on the mat"),
    ("the the the", "the", "the the"),
    ("a b a b a b", "a b a b", "b a b a"),
    ("a a a a a a a a a a", "a a a a a", "a a a a a a a a a a a a"),
    ("It is a guide to action which ensures that the military always obeys the commands of the party",
     "It is a guide to action that ensures that the military will forever heed Party commands",
     "It is the guiding principle which guarantees the military forces always being under the command of the Party"),
    ("he read the book because he was interested in world history",
     "he was interested in world history because he read the book",
     "he read the book because he liked world history"),
    # lengths / order
    ("one two three four five six seven eight nine ten", "one two", "three four five"),
    ("one", "one two three four five six seven eight", "one two three"),
    ("c b a", "a b c", "a b c"),
    ("x y", "x y z", "x"),
    # punctuation heavy
    ("Hello, world!!! What?? (yes) [no] {maybe} ... -- ;: @#$%^&*",
     "Hello world! What? yes no maybe", "hello, world... what? (yes)"),
    ("!!! ??? ...", "!!!", "?"),
    ("?", "?", "!"),
    (".", "the end.", "end"),
    ("...", "the end.", "..."),
    (". . .", ". .", "."),
    ("end.", "...", "end ."),
    ("a.b.c", "a b c", "a.b"),
    # numbers
    ("Pi is 3.14, not 3,14 or 3 . 14.", "pi is 3.14", "Pi equals 3.14159."),
    ("It costs 1,000 dollars, i.e. $1,000.00 (approx. 1k).", "The cost is 1,000 dollars.", "It costs $1000."),
    ("pages 1-2 and a-b and 10-20-30", "pages 1 - 2 and a - b", "see pp. 1-2"),
    ("In 2019. In 1999.", "in 2019 . in 1999 .", "In 2019, in 1999"),
    ("version 1.5.2 and 2.0. done", "version 2.0", "v1.5.2"),
    ("e.g. this, i.e. that, etc.", "e.g., this; i.e., that; etc.", "for example this"),
    ("U.S.A. and U.K. and the E.U.", "the USA and the UK", "U.S. and U.K."),
    ("x^2 + y^2 = z^2 and 5% > 3 <= 4", "x^2+y^2=z^2", "5 % > 3"),
    ("$5.00 €10 £3 ¥100 ₹7", "$5 €10", "5 dollars"),
    # markup / escapes (13a unescapes these)
    ("&amp;lt; and &quot;quoted&quot; and &amp; &lt;tag&gt; &apos;",
     "< and \"quoted\" and & <tag>", "&lt; &gt; &amp;"),
    ("<skipped> text <skipped>", "text", "<skipped>"),
    ("<tag> </tag> <br/>", "tag tag br", "<tag>"),
    ("visit https://example.com/a?b=c&d=e or mail a.b@c.org", "visit example.com", "mail a.b@c.org"),
    # hyphen-newline, newlines, tabs, CR
    ("foo-\nbar baz-\n", "foobar baz", "foo-bar baz"),
    ("foo-\n", "foo", "foo-"),
    ("line one\nline two\nline three", "line one\nline 2\nline three", "line one line two"),
    ("tab\tseparated\twords", "tab separated words", "tab\tseparated"),
    ("windows\r\nline endings\r\n", "windows line endings", "windows\rline"),
    ("trailing spaces   ", "trailing spaces", "  leading spaces"),
    ("a  b   c", "a b c", "a\tb\nc"),
    ("state-of-the-art well-known", "state of the art well known", "state-of-the-art"),
    ("don't can't won't it's", "do n't ca n't wo n't it 's", "dont cant wont its"),
    # case
    ("Mixed CASE Words HeRe", "mixed case words here", "MIXED CASE WORDS HERE"),
    ("THE CAT SAT", "the cat sat", "The Cat Sat"),
    # Unicode
    ("İstanbul is in TÜRKİYE", "istanbul is in türkiye", "Istanbul is in Turkey"),
    ("5 \u212Aelvin is cold", "5 kelvin is cold", "5 K is cold"),
    ("naïve café résumé", "naive cafe resume", "naïve café résumé"),
    ("cafe\u0301 nai\u0308ve", "café naïve", "cafe naive"),
    ("non\u00a0breaking\u00a0space", "non breaking space", "non\u00a0breaking space"),
    ("line\u2028separator here", "line separator here", "line\u2029paragraph"),
    ("file\x1cseparator\x1dgroup\x1erecord\x1funit", "file separator group", "file\x1cseparator"),
    ("next\x85line", "next line", "next\x85line"),
    ("ideographic\u3000space\u3000here", "ideographic space here", "ideographic\u3000space"),
    ("zero\u200bwidth joiner\u200d", "zero width joiner", "zerowidth"),
    ("non\u2011breaking hyphen", "non-breaking hyphen", "non breaking hyphen"),
    ("我爱北京天安门。", "我爱北京。", "東京は日本の首都です"),
    ("日本語のテキストと English mixed text", "English mixed text", "日本語 テキスト"),
    ("한국어 문장입니다", "한국어 문장", "문장입니다"),
    ("I love 🍕 and 🎉🎉!", "I love pizza 🍕", "🎉 party 🎉"),
    ("👩\u200d👩\u200d👧 family 👍🏽", "family 👍", "👩 family"),
    ("“Hello,” she said — ‘it’s fine’…", "\"Hello,\" she said - 'it's fine'...", "Hello she said it's fine"),
    ("2010–2020 — a decade – or so", "2010-2020 - a decade", "2010 to 2020, a decade"),
    ("שלום עולם", "שלום", "مرحبا بالعالم"),
    ("ΟΔΟΣ Σίσυφος", "οδος σίσυφος", "ΟΔΟΣ"),
    ("Straße STRASSE", "strasse straße", "Strasse"),
    ("\ufb01ne \ufb02ow", "fine flow", "\ufb01ne"),
    ("٣ ٤ 五 ² ½", "3 4 5 2", "٣ ٤"),
    ("Ångström Ǆemal ǅ", "angstrom", "ångström"),
    # very long words
    ("a" + "x" * 200 + " end", "a" + "x" * 200, "end"),
    ("supercalifragilisticexpialidocious" * 5, "supercalifragilisticexpialidocious", "pneumonoultramicroscopicsilicovolcanoconiosis"),
    ("antidisestablishmentarianism internationalization", "antidisestablishmentarianism", "internationalizations"),
    # many sentences
    ("First sentence. Second one. Third one here. And a fourth.", "First sentence. The second. Third one here.",
     "First sentence.\nSecond one.\nThird one here."),
    ("The cat sat.\nThe dog ran.\nBirds fly.", "The dog ran.\nThe cat sat.", "The cat sat. The dog ran."),
    (_MANY_SENTS, _MANY_SENTS_REF, _MANY_SENTS.replace(". ", ".\n")),
    (_MANY_LINES, _MANY_LINES_REF, _MANY_LINES_REF2),
    ("A.\nB.\n\nC.\n", "A. B. C.", "a\nb\nc"),
    ("one. two. one. two.", "one. two.", "two. one."),
    # stemmer food (rouge_score stems tokens longer than 3 chars with nltk's PorterStemmer)
    ("running runner runs ran flies flying flied happily happiness generalizations generalization generalize "
     "agreed agreeing agreement", "run runs flies fly happy generalize agree", "runners running happily agreed"),
    ("caresses ponies ties caress cats feed agreed plastered bled motoring sing conflated troubled sized hopping "
     "tanned falling hissing fizzed failing filing happy sky", "caress pony tie cat feeding agree plaster bleed "
     "motor singing conflate trouble size hop tan fall hiss fizz fail file happiness skies",
     "CARESSES Ponies Ties"),
    ("relational conditional rational valenci hesitanci digitizer conformabli radicalli differentli vileli "
     "analogousli vietnamization predication operator feudalism decisiveness hopefulness callousness formaliti "
     "sensitiviti sensibiliti", "relate condition ration valence hesitance digitize conformable radical "
     "different vile analogous vietnamize predicate operate feudal decisive hopeful callous formal sensitive "
     "sensible", "relations conditions rationally"),
    ("triplicate formative formalize electriciti electrical hopeful goodness revival allowance inference airliner "
     "gyroscopic adjustable defensible irritant replacement adjustment dependent adoption homologou communism "
     "activate angulariti homologous effective bowdlerize probate rate cease controll roll",
     "triplicated formation formalization electricity electric hope good revive allow infer airline gyroscope "
     "adjust defend irritate replace adjusting depend adopt homology communist active angular effect bowdler",
     "probates rates ceased controlling rolling"),
    ("generously universities universal university organization organizations organize organizing organizer",
     "generous universe universal organ organs organic", "universities organizations"),
    ("abilities ability ably able enable enabled enabling disable disabling", "able ability enabled", "abilities"),
    ("dying lying tying eyeing skiing news bus gas yes this his is was", "die lie tie eye ski new buses gases",
     "dies lies ties eyes skis"),
    ("agreement agreements measurement measurements statement statements", "agree measure state",
     "agreed measured stated"),
    ("conditionally traditionally exceptionally emotionally", "condition tradition exception emotion",
     "conditional traditional exceptional emotional"),
    ("MEETING Meetings meets met meet", "meeting meetings", "meet"),
    ("he's she'd we've they're I'm you'll", "he is she had we have they are I am you will", "hes shed weve"),
    # mixed misc
    ("How do I install Ubuntu 20.04 on a USB-C drive?", "How to install Ubuntu 20.04 on USB-C drive",
     "Installing ubuntu 20.04 on a usb-c drive"),
    ("what is the capital of france", "What is the capital of France?", "which city is the capital of france?"),
]


# ---------------------------------------------------------------------------------------------------------------
def read_jsonl(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def make_corpus(triples):
    return {"hyps": [t[0] for t in triples], "refs": [[t[1] for t in triples], [t[2] for t in triples]]}


def build_corpora(data):
    corpora = {"edge": make_corpus(EDGE)}

    # mqr_dev: 400 rows sampled with seed 0 (indices sorted); 2nd stream = well_formed of a different random row
    dev = sorted(read_jsonl(os.path.join(data, "mqr", "dev.jsonl.gz")), key=lambda r: r["row_idx"])
    rng = random.Random(0)
    idx = sorted(rng.sample(range(len(dev)), 400))
    other = []
    for i in idx:
        j = rng.randrange(len(dev))
        while j == i or dev[j]["well_formed"] == dev[i]["well_formed"]:
            j = rng.randrange(len(dev))
        other.append(j)
    corpora["mqr_dev"] = {"hyps": [dev[i]["ill_formed"] for i in idx],
                          "refs": [[dev[i]["well_formed"] for i in idx], [dev[j]["well_formed"] for j in other]]}

    # k2q: 300 pairs sampled with seed 0; 2nd stream = another question of the same cluster
    pairs = read_jsonl(os.path.join(data, "k2q_seed_pairs", "pairs.jsonl.gz"))
    pairs.sort(key=lambda r: (r["cluster_id"], r["annotator"], r["question"], r["keywords"]))
    by_cluster = {}
    for k, r in enumerate(pairs):
        by_cluster.setdefault(r["cluster_id"], []).append(k)
    rng = random.Random(0)
    idx = sorted(rng.sample(range(len(pairs)), 300))
    hyps, r1, r2 = [], [], []
    for i in idx:
        p = pairs[i]
        cands = [k for k in by_cluster[p["cluster_id"]] if k != i and pairs[k]["question"] != p["question"]]
        if not cands:
            cands = [k for k in by_cluster[p["cluster_id"]] if k != i]
        j = cands[rng.randrange(len(cands))]
        hyps.append(p["keywords"])
        r1.append(p["question"])
        r2.append(pairs[j]["question"])
    corpora["k2q"] = {"hyps": hyps, "refs": [r1, r2]}

    # long: SQuAD 2.0 contexts with 100..300 whitespace tokens vs two other contexts of the same article
    with gzip.open(os.path.join(data, "squad2_dev_subset", "dev-v2.0.subset.json.gz"), "rt", encoding="utf-8") as f:
        squad = json.load(f)
    ctx = []  # (article index, context)
    for a, art in enumerate(squad["data"]):
        for par in art["paragraphs"]:
            if 100 <= len(par["context"].split()) <= 300:
                ctx.append((a, par["context"]))
    by_art = {}
    for k, (a, _) in enumerate(ctx):
        by_art.setdefault(a, []).append(k)
    eligible = [k for k, (a, _) in enumerate(ctx) if len(by_art[a]) >= 3]
    rng = random.Random(0)
    idx = sorted(rng.sample(eligible, 60))
    hyps, r1, r2 = [], [], []
    for i in idx:
        cands = [k for k in by_art[ctx[i][0]] if k != i]
        j1, j2 = rng.sample(cands, 2)
        hyps.append(ctx[i][1])
        r1.append(ctx[j1][1])
        r2.append(ctx[j2][1])
    corpora["long"] = {"hyps": hyps, "refs": [r1, r2]}

    # long_nl: the same texts with a newline after every ". " (exercises rougeLsum sentence splitting)
    def nl(s):
        return s.replace(". ", ".\n")
    corpora["long_nl"] = {"hyps": [nl(s) for s in hyps], "refs": [[nl(s) for s in r1], [nl(s) for s in r2]]}
    return corpora


def err(e):
    return "%s: %s" % (type(e).__name__, e)


def num(x):
    """Plain Python int/float (numpy scalars and Fractions converted); ints stay ints."""
    if isinstance(x, bool):
        return x
    if isinstance(x, int):
        return int(x)
    return float(x)


def distinct_texts(corpora, extra=()):
    seen, out = set(), []
    for name in corpora:
        c = corpora[name]
        for t in list(c["hyps"]) + [t for s in c["refs"] for t in s]:
            if t not in seen:
                seen.add(t)
                out.append(t)
    for t in extra:
        if t not in seen:
            seen.add(t)
            out.append(t)
    return out


# ---------------------------------------------------------------------------------------------------------------
ROUGE_TYPES = ["rouge1", "rouge2", "rouge3", "rougeL", "rougeLsum"]


def do_rouge_score(corpora, texts):
    toks = []
    for stem in (False, True):
        tk = rs_tokenizers.DefaultTokenizer(use_stemmer=stem)
        for t in texts:
            toks.append({"text": t, "stem": stem, "tokens": tk.tokenize(t)})
    entries = []
    for name, c in corpora.items():
        for stem in (False, True):
            sc = rouge_scorer.RougeScorer(ROUGE_TYPES, use_stemmer=stem)
            for multi in (False, True):
                scores = {t: [] for t in ROUGE_TYPES}
                for i, h in enumerate(c["hyps"]):
                    if multi:
                        res = sc.score_multi(targets=[s[i] for s in c["refs"]], prediction=h)
                    else:
                        res = sc.score(target=c["refs"][0][i], prediction=h)
                    for t in ROUGE_TYPES:
                        s = res[t]
                        scores[t].append([float(s.precision), float(s.recall), float(s.fmeasure)])
                entries.append({"corpus": name, "stem": stem, "multi": multi, "types": list(ROUGE_TYPES),
                                "scores": scores})
    return toks, entries


PLTRDY_METRICS = ["rouge-1", "rouge-2", "rouge-l"]


def _prf(d):
    return [float(d["p"]), float(d["r"]), float(d["f"])]


def _avg(d):
    return {m: {"p": float(d[m]["p"]), "r": float(d[m]["r"]), "f": float(d[m]["f"])} for m in PLTRDY_METRICS}


def do_pltrdy(corpora):
    out = []
    r = Rouge()
    for name, c in corpora.items():
        hyps, refs = list(c["hyps"]), list(c["refs"][0])
        # individual segments
        indiv = {m: [] for m in PLTRDY_METRICS}
        seg_err = []
        seg_err_msg = {}
        for i, (h, ref) in enumerate(zip(hyps, refs)):
            try:
                s = r.get_scores([h], [ref])[0]
                for m in PLTRDY_METRICS:
                    indiv[m].append(_prf(s[m]))
            except Exception as e:  # noqa: BLE001
                seg_err.append(i)
                seg_err_msg[str(i)] = err(e)
                for m in PLTRDY_METRICS:
                    indiv[m].append(None)
        ok = [i for i in range(len(hyps)) if i not in set(seg_err)]
        for ignore_empty in (False, True):
            e = {"corpus": name, "ignore_empty": ignore_empty, "per_segment": None, "avg": None, "error": None}
            try:
                res = r.get_scores(hyps, refs, ignore_empty=ignore_empty)
                e["per_segment"] = {m: [_prf(s[m]) for s in res] for m in PLTRDY_METRICS}
                if ignore_empty:
                    e["per_segment_kept"] = [i for i, h in enumerate(hyps) if len(h) > 0]
            except Exception as ex:  # noqa: BLE001
                e["error"] = err(ex)
            try:
                e["avg"] = _avg(r.get_scores(hyps, refs, avg=True, ignore_empty=ignore_empty))
            except Exception as ex:  # noqa: BLE001
                e["avg_error"] = err(ex)
                if e["error"] is None:
                    e["error"] = err(ex)
            e["segment_errors"] = seg_err
            if not ignore_empty:
                e["segment_error_messages"] = seg_err_msg
                e["per_segment_individual"] = indiv
                e["avg_excluding_errors"] = (
                    _avg(r.get_scores([hyps[i] for i in ok], [refs[i] for i in ok], avg=True)) if ok else None)
            out.append(e)
    return out


# ---------------------------------------------------------------------------------------------------------------
SMOOTHS = [("none", None), ("floor", None), ("floor", 0.05), ("add-k", None), ("add-k", 2.0), ("exp", None)]
TOKENIZERS = ["13a", "none", "intl"]


def bleu_obj(tok, sm, sv, lc, eo):
    return BLEU(tokenize=tok, smooth_method=sm, smooth_value=sv, lowercase=lc, effective_order=eo)


def do_sacrebleu(corpora, texts):
    t13, tintl = Tokenizer13a(), TokenizerV14International()
    toks = {"13a": {t: t13(t) for t in texts}, "intl": {t: tintl(t) for t in texts},
            # what BLEU really tokenizes is text.rstrip() (lowercased first when lowercase=True); only listed
            # where that differs from tokenizing the raw text
            "13a_rstrip": {t: t13(t.rstrip()) for t in texts if t13(t.rstrip()) != t13(t)},
            "intl_rstrip": {t: tintl(t.rstrip()) for t in texts if tintl(t.rstrip()) != tintl(t)}}
    corp, sent = [], []
    full = ("edge", "mqr_dev")
    for name, c in corpora.items():
        hyps, refs = c["hyps"], c["refs"]
        for tok in TOKENIZERS:
            for sm, sv in SMOOTHS:
                for lc in (False, True):
                    for eo in (False, True):
                        for n_refs in (1, 2):
                            b = bleu_obj(tok, sm, sv, lc, eo)
                            e = {"corpus": name, "tokenize": tok, "smooth_method": sm, "smooth_value": sv,
                                 "lowercase": lc, "effective_order": eo, "n_refs": n_refs}
                            s = b.corpus_score(list(hyps), [list(r) for r in refs[:n_refs]])
                            e.update({"score": float(s.score), "counts": [num(x) for x in s.counts],
                                      "totals": [num(x) for x in s.totals],
                                      "precisions": [float(x) for x in s.precisions], "bp": float(s.bp),
                                      "sys_len": int(s.sys_len), "ref_len": int(s.ref_len)})
                            corp.append(e)
                            # sentence level: full grid for edge/mqr_dev, a subset elsewhere
                            if name not in full:
                                if lc or not ((eo and sm in ("exp", "floor", "add-k") and sv is None)
                                              or (tok == "13a" and sm == "none" and not eo)):
                                    continue
                            b = bleu_obj(tok, sm, sv, lc, eo)
                            scores = [float(b.sentence_score(h, [r[i] for r in refs[:n_refs]]).score)
                                      for i, h in enumerate(hyps)]
                            sent.append({"corpus": name, "tokenize": tok, "smooth_method": sm, "smooth_value": sv,
                                         "lowercase": lc, "effective_order": eo, "n_refs": n_refs,
                                         "scores": scores})
    return toks, corp, sent


def do_nltk(corpora):
    sf = SmoothingFunction()
    corp, sent = [], []
    for name, c in corpora.items():
        hyps = [h.split() for h in c["hyps"]]
        for n_refs in (1, 2):
            refs = [[s[i].split() for s in c["refs"][:n_refs]] for i in range(len(hyps))]
            for method in range(8):
                fn = getattr(sf, "method%d" % method)
                e = {"corpus": name, "method": method, "n_refs": n_refs, "score": None, "error": None}
                try:
                    e["score"] = float(corpus_bleu(list_of_references=refs, hypotheses=hyps, smoothing_function=fn))
                except Exception as ex:  # noqa: BLE001
                    e["error"] = err(ex)
                corp.append(e)
                scores, errors = [], {}
                for i, (h, rs) in enumerate(zip(hyps, refs)):
                    try:
                        scores.append(float(sentence_bleu(references=rs, hypothesis=h, smoothing_function=fn)))
                    except Exception as ex:  # noqa: BLE001
                        scores.append(None)
                        errors[str(i)] = err(ex)
                sent.append({"corpus": name, "method": method, "n_refs": n_refs, "scores": scores,
                             "errors": errors})
    return corp, sent


def coco_bleu(hyps, refs_per_seg):
    gts, res = {}, {}
    for i, (h, rs) in enumerate(zip(hyps, refs_per_seg)):
        gts[i] = list(rs)
        res[i] = [h]
    score, scores = Bleu(4).compute_score(gts, res, verbose=0)
    return [float(x) for x in score], [[float(scores[k][i]) for k in range(4)] for i in range(len(hyps))]


def do_coco(corpora):
    out = []
    for name, c in corpora.items():
        for n_refs in (1, 2):
            rps = [[s[i] for s in c["refs"][:n_refs]] for i in range(len(c["hyps"]))]
            cs, ss = coco_bleu(c["hyps"], rps)
            out.append({"corpus": name, "n_refs": n_refs, "corpus_scores": cs, "sentence_scores": ss})
    return out


# ---------------------------------------------------------------------------------------------------------------
# Paper check: MQR Table 6 (paper 003). Paper rows are on the paper's full TEST (2,113 rows); ours is the 80% part.
PAPER = {
    "ill_formed": ("Table 6: Ill-formed", [5.9, 50.9, 19.4, 45.5, 33.4]),
    "lstm": ("Table 6: LSTM seq-to-seq with attention", [19.2, 55.8, 28.3, 52.8, 32.7]),
    "transformer": ("Table 6: Transformer (MQR TRAIN)", [22.1, 59.8, 32.2, 56.6, 36.4]),
    "GEC": ("Table 6: Grammatical error correction", [13.1, 52.4, 24.4, 47.5, 34.4]),
    "nmt_de": ("Table 6: Round trip NMT (Pivot: De)", [9.9, 41.6, 16.8, 38.2, 28.4]),
    "nmt_fr": ("Table 6: Round trip NMT (Pivot: Fr)", [9.3, 40.4, 15.7, 36.9, 27.5]),
    # not in Table 6; most likely matches (inferred from the system names):
    "quora_stackexchange": ("Table 7: MQR TRAIN + Quora (inferred)", [23.6, 60.5, 33.4, 57.5, 36.8]),
    "paralex_stackexchange": ("Table 7: MQR TRAIN + Paralex (inferred)", [21.7, 58.3, 31.3, 55.3, 35.7]),
    "quora_stackexchange_gec": ("Table 8: Transformer (MQR + Quora) -> GEC (inferred)",
                                [26.3, 61.0, 35.4, 58.1, 37.3]),
}


def do_paper_check(data, tools):
    test = read_jsonl(os.path.join(data, "mqr", "test.jsonl.gz"))
    rw = {r["row_idx"]: r for r in read_jsonl(os.path.join(data, "mqr", "test_system_rewrites.jsonl.gz"))}
    test.sort(key=lambda r: r["row_idx"])
    refs = [r["well_formed"] for r in test]
    rows = []
    r = Rouge()
    for system in ["ill_formed"] + SYSTEMS:
        hyps = [t["ill_formed"] if system == "ill_formed" else rw[t["row_idx"]][system] for t in test]
        cs, _ = coco_bleu([h.strip() for h in hyps], [[x.strip()] for x in refs])
        row = {"system": system, "n": len(hyps), "coco_bleu": cs, "pltrdy": None, "pltrdy_error": None}
        try:
            row["pltrdy"] = _avg(r.get_scores(hyps, refs, avg=True))
        except Exception as ex:  # noqa: BLE001
            row["pltrdy_error"] = err(ex)
        n_empty = sum(1 for h in hyps if not h.strip())
        row["n_empty_hyps"] = n_empty
        if system in PAPER:
            row["paper"] = {"source": PAPER[system][0], "bleu4": PAPER[system][1][0],
                            "rouge1": PAPER[system][1][1], "rouge2": PAPER[system][1][2],
                            "rougeL": PAPER[system][1][3], "meteor": PAPER[system][1][4]}
        rows.append(row)
    result = {"rows": rows, "tools": tools,
              "notes": ("reference = well_formed (1 ref). BLEU: pycocoevalcap Bleu(4).compute_score with stripped "
                        "texts (nlg-eval style). ROUGE: pltrdy rouge Rouge().get_scores(hyps, refs, avg=True) on raw "
                        "texts. Data: 1,690 rows = 80% of the official 2,113-row MQR test, so paper numbers "
                        "(on the full test) are not expected to match exactly.")}
    lines = [
        "# MQR paper check (Chu et al. 2020, Table 6)",
        "",
        "Ours: MQR test subset in /work/shared/data (1,690 of the 2,113 official test rows, aligned system outputs "
        "from github.com/ZeweiChu/MQR). One reference (well_formed). BLEU-4 = pycocoevalcap "
        "`Bleu(4)` on stripped texts (nlg-eval style); ROUGE = pltrdy `rouge` 0.3.2 "
        "`Rouge().get_scores(hyps, refs, avg=True)` F-scores. All x100, 2 decimals. "
        "Paper = the numbers printed in the paper (full test; METEOR not recomputed).",
        "",
        "| system | n | BLEU-4 | ROUGE-1 F | ROUGE-2 F | ROUGE-L F | paper BLEU-4 | paper R-1 | paper R-2 | paper R-L "
        "| paper row |",
        "|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        b4 = "%.2f" % (100 * row["coco_bleu"][3])
        if row["pltrdy"] is not None:
            rr = ["%.2f" % (100 * row["pltrdy"][m]["f"]) for m in PLTRDY_METRICS]
        else:
            rr = ["error: " + row["pltrdy_error"]] * 3
        if "paper" in row:
            p = row["paper"]
            pp = ["%.1f" % p[k] for k in ("bleu4", "rouge1", "rouge2", "rougeL")] + [p["source"]]
        else:
            pp = ["-"] * 4 + ["(no matching row in the paper)"]
        lines.append("| %s | %d | %s | %s | %s |" % (row["system"], row["n"], b4, " | ".join(rr), " | ".join(pp)))
    lines += [
        "",
        "Notes: Table 6 rows are `Ill-formed`, `LSTM seq-to-seq with attention` (= lstm), `Transformer` (= transformer), "
        "`Grammatical error correction` (= GEC), `Round trip NMT (Pivot: De/Fr)` (= nmt_de/nmt_fr) and `Paraphrase "
        "generator trained on ParaNMT` (no output file shipped). The rows for quora_stackexchange, paralex_stackexchange "
        "and quora_stackexchange_gec come from Tables 7/8 and are matched by name only (inferred); "
        "paralex_quora_stackexchange has no row in the paper.",
        "",
    ]
    return result, "\n".join(lines)


# ---------------------------------------------------------------------------------------------------------------
def tool_versions():
    return {k: md.version(k) for k in EXPECTED_VERSIONS}


def write_gz_json(path, obj):
    raw = json.dumps(obj, ensure_ascii=True, separators=(",", ":")).encode("utf-8")
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as g:
        g.write(raw)
    with open(path, "wb") as f:
        f.write(buf.getvalue())
    return len(raw), len(buf.getvalue())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="/work/shared/data")
    ap.add_argument("--out", default=os.path.join("tests", "golden"))
    ap.add_argument("--allow-other-versions", action="store_true")
    args = ap.parse_args()

    tools = tool_versions()
    if tools != EXPECTED_VERSIONS and not args.allow_other_versions:
        sys.exit("tool versions differ from the expected ones: %r != %r" % (tools, EXPECTED_VERSIONS))

    corpora = build_corpora(args.data)
    for name, c in corpora.items():
        assert all(len(s) == len(c["hyps"]) for s in c["refs"]), name
    texts = distinct_texts(corpora)

    print("rouge_score ...", flush=True)
    rtoks, rscores = do_rouge_score(corpora, texts)
    print("pltrdy ...", flush=True)
    pl = do_pltrdy(corpora)
    print("sacrebleu ...", flush=True)
    stoks, scorp, ssent = do_sacrebleu(corpora, texts)
    print("nltk ...", flush=True)
    ncorp, nsent = do_nltk(corpora)
    print("coco ...", flush=True)
    coco = do_coco(corpora)

    golden = {
        "tools": tools,
        "corpora": corpora,
        "rouge_tokens": rtoks,
        "rouge_score": rscores,
        "pltrdy": pl,
        "sacrebleu_tokens": stoks,
        "sacrebleu_corpus": scorp,
        "sacrebleu_sentence": ssent,
        "nltk_corpus": ncorp,
        "nltk_sentence": nsent,
        "coco": coco,
    }
    os.makedirs(args.out, exist_ok=True)
    raw, packed = write_gz_json(os.path.join(args.out, "metrics_golden.json.gz"), golden)
    print("metrics_golden.json.gz: %d bytes raw, %d gzipped" % (raw, packed))

    print("paper check ...", flush=True)
    pc, md_text = do_paper_check(args.data, tools)
    with open(os.path.join(args.out, "mqr_paper_check.json"), "w", encoding="utf-8") as f:
        json.dump(pc, f, indent=1)
        f.write("\n")
    with open(os.path.join(args.out, "mqr_paper_check.md"), "w", encoding="utf-8") as f:
        f.write(md_text)
    print(md_text)


if __name__ == "__main__":
    main()
