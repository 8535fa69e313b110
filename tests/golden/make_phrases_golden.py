#!/usr/bin/env python
"""Golden values for pysynth.text phrase detection, computed by gensim 4.4.0 itself.

Run with the reference venv that holds gensim (never the main environment):

    /tmp/refenv/bin/pip install gensim==4.4.0
    /tmp/refenv/bin/python tests/golden/make_phrases_golden.py      # from the repo root; ~30 s
    # options: --data /work/shared/data  --out tests/golden

Output: ``tests/golden/phrases_gensim.json.gz`` (deterministic: fixed inputs, sorted keys,
gzip mtime 0; two runs give identical bytes). Schema in tests/golden/README.md.

Texts (they keep their licence): the training corpus is the ComQA/WikiAnswers train questions
(Abujabal et al. 2019, WikiAnswers-derived, lower-cased) followed by the query
well-formedness train queries (Faruqui & Das 2018, Paralex/WikiAnswers, CC BY-SA 4.0); the
held-out sentences are the ComQA dev questions. The "toy" corpus was written for this
project after the example of Ding & Balog 2018, Sect. 3.1.4 ("honda crf 230").
Tokenization is pysynth's "rouge" tokenizer: ``re.findall("[a-z0-9]+", text.lower())``.
"""
import argparse
import gzip
import hashlib
import io
import json
import logging
import re
import sys
from pathlib import Path

import gensim
from gensim.models.phrases import ENGLISH_CONNECTOR_WORDS, Phrases

EXPECTED_GENSIM = "4.4.0"
N_TRAIN_COMQA = 7609  # all of comqa train
N_TRAIN_QW = 8000  # first rows of query_wellformedness train
N_SAMPLE = 300  # transformed training sentences stored per setting
TOKEN = re.compile(r"[a-z0-9]+")

# name -> gensim Phrases arguments. "connectors" means ENGLISH_CONNECTOR_WORDS.
SETTINGS = {
    "gensim_defaults": dict(min_count=5, threshold=10.0),
    "low": dict(min_count=2, threshold=1.0),
    "high_min_count": dict(min_count=10, threshold=5.0),
    "npmi": dict(min_count=3, threshold=0.5, scoring="npmi"),
    "npmi_negative": dict(min_count=8, threshold=-0.1, scoring="npmi"),
    "connectors": dict(min_count=3, threshold=2.0, connector_words="connectors"),
    "npmi_connectors": dict(min_count=2, threshold=0.3, scoring="npmi", connector_words="connectors"),
    "pruned": dict(min_count=2, threshold=1.0, max_vocab_size=20000),
    "delimiter": dict(min_count=3, threshold=3.0, delimiter=" "),
}
# two-pass runs: pass 2 learns on the pass-1 output (frozen or not), same arguments
TWO_PASS = {
    "two_pass": "connectors",
    "two_pass_defaults": "low",
}

TOY = [
    "how fast is a 2004 honda crf 230",
    "is the honda crf 230 a good bike",
    "what oil does a honda crf 230 take",
    "honda crf 230 top speed",
    "how much does a honda crf 230 weigh",
    "where is the honda crf 230 made",
    "what is the price of a honda crf 230",
    "honda crf 230 or yamaha ttr 230",
    "how tall is a honda crf 230",
    "who makes the yamaha ttr 230",
    "what is the bank of america routing number",
    "who owns bank of america",
    "bank of america online banking",
    "is bank of america open on sunday",
    "how old is the statue of liberty",
    "who built the statue of liberty",
    "where is the statue of liberty",
    "how fast is a honda civic",
    "what year is my honda civic",
    "new york city weather",
    "new york times crossword",
    "how big is new york city",
]


def jsonl(path):
    with gzip.open(path, "rt", encoding="utf-8") as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def tokens(text):
    return TOKEN.findall(text.lower())


def connector_set(params):
    return ENGLISH_CONNECTOR_WORDS if params.get("connector_words") == "connectors" else frozenset()


def gensim_args(params):
    args = dict(params)
    args["connector_words"] = connector_set(params)
    return args


def vocab_digest(vocab):
    items = sorted(vocab.items())
    blob = json.dumps(items, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    return hashlib.sha256(blob).hexdigest()


def describe(model, sentences, sample, heldout):
    """Everything the tests compare, for one learned gensim Phrases model."""
    frozen = model.freeze()
    min_reduce = Phrases._learn_vocab(
        sentences, model.max_vocab_size, model.delimiter, model.connector_words, 10**12
    )[0]
    table = model.export_phrases()
    return {
        "corpus_word_count": model.corpus_word_count,
        "len_vocab": len(model.vocab),
        "vocab_sha256": vocab_digest(model.vocab),
        "min_reduce": min_reduce,
        "phrasegrams": sorted([k, v] for k, v in table.items()),
        "frozen_phrasegrams_equal_export": frozen.phrasegrams == table,
        "sample": [model[sentences[i]] for i in sample],
        "sample_frozen": [frozen[sentences[i]] for i in sample],
        "heldout": [model[s] for s in heldout],
        "heldout_frozen": [frozen[s] for s in heldout],
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default="/work/shared/data")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent))
    ap.add_argument("--allow-other-versions", action="store_true")
    args = ap.parse_args()
    if gensim.__version__ != EXPECTED_GENSIM and not args.allow_other_versions:
        sys.exit(f"gensim {gensim.__version__} found; this golden set is for gensim {EXPECTED_GENSIM}")
    logging.disable(logging.CRITICAL)
    data = Path(args.data)

    comqa = [q for r in jsonl(data / "comqa_wikianswers_clusters" / "train.jsonl.gz") for q in r["questions"]]
    qw = [r["query"] for r in jsonl(data / "query_wellformedness" / "train.jsonl.gz")]
    texts = comqa[:N_TRAIN_COMQA] + qw[:N_TRAIN_QW]
    heldout_texts = [q for r in jsonl(data / "comqa_wikianswers_clusters" / "dev.jsonl.gz") for q in r["questions"]][:200]
    sentences = [tokens(t) for t in texts]
    heldout = [tokens(t) for t in heldout_texts]
    step = max(1, len(sentences) // N_SAMPLE)
    sample = list(range(0, len(sentences), step))[:N_SAMPLE]

    out = {
        "gensim": gensim.__version__,
        "python": sys.version.split()[0],
        "tokenizer": "rouge: re.findall('[a-z0-9]+', text.lower())",
        "english_connector_words": sorted(ENGLISH_CONNECTOR_WORDS),
        "texts": texts,
        "heldout_texts": heldout_texts,
        "sample": sample,
        "toy_texts": TOY,
        "settings": {},
        "two_pass": {},
    }
    for name, params in SETTINGS.items():
        model = Phrases(sentences, **gensim_args(params))
        entry = describe(model, sentences, sample, heldout)
        entry["params"] = params
        out["settings"][name] = entry
        print(f"{name}: {len(entry['phrasegrams'])} phrases, {entry['len_vocab']} keys", file=sys.stderr)

    corpora = {"train": sentences, "toy": [tokens(t) for t in TOY]}
    runs = [(name, base, "train") for name, base in TWO_PASS.items()]
    runs.append(("toy_two_pass", "toy", "toy"))
    for name, base, corpus_name in runs:
        params = dict(min_count=2, threshold=0.5, connector_words="connectors") if base == "toy" else SETTINGS[base]
        sents = corpora[corpus_name]
        idx = sample if corpus_name == "train" else list(range(len(sents)))
        entry = {"params": params, "corpus": corpus_name}
        bigram = Phrases(sents, **gensim_args(params))
        bigram_frozen = bigram.freeze()
        for mode, first in (("unfrozen", bigram), ("frozen", bigram_frozen)):
            pass1 = [first[s] for s in sents]
            trigram = Phrases(pass1, **gensim_args(params))
            desc = describe(trigram, pass1, idx, [first[s] for s in heldout])
            # what users run: trigram[bigram[s]] with both unfrozen or both frozen
            second = trigram if mode == "unfrozen" else trigram.freeze()
            desc["pass1_sample"] = [pass1[i] for i in idx]
            desc["final_sample"] = [second[pass1[i]] for i in idx]
            entry[mode] = desc
        out["two_pass"][name] = entry
        print(f"{name}: pass 2 {len(entry['frozen']['phrasegrams'])} phrases (frozen pass 1)", file=sys.stderr)

    payload = json.dumps(out, ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode("utf-8")
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(payload)
    path = Path(args.out) / "phrases_gensim.json.gz"
    path.write_bytes(buf.getvalue())
    print(f"wrote {path} ({len(buf.getvalue()) / 1e6:.2f} MB, {len(payload) / 1e6:.2f} MB raw)", file=sys.stderr)


if __name__ == "__main__":
    main()
