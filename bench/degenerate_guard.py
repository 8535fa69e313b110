"""The no-repeat-n-gram guard on every shipped CopyNet generator, on held-out data (issue 26).

For each shipped generator, its command's own search run twice over data it never trained on:
with the guards off (``no_repeat_ngram=0, no_stutter=False``: the papers' searches), with the trigram
ban only, and with :class:`pysynth.decoding.SearchConfig`'s defaults (no repeated trigram, no token
twice in a row). Reported: outputs that loop (a repeated word trigram or a word twice in a row,
:func:`pysynth.qagen.pipeline.has_repeated_ngram`), and the quality metrics the docs quote.

    python bench/degenerate_guard.py [--only k2q,mqr,dqg,qg,paraphrase] [--out bench/results/degenerate_guard.json]

Held-out sets (all in ``../shared/data``): K2Q the 800 T0 seed pairs (the model trained on the
pipeline's pairs without the T0 clusters); MQR the 1,690 test pairs; DQG the dev split of the five
dumps that ``pysynth.dup.dqg.train`` held out; QG 300 answerable questions of the 19 SQuAD 2.0 dev
articles (``bench/RESULTS_qagen.md`` protocol); paraphrase 300 ComQA questions
(``bench/meaning_filters.py`` test split).
"""
from __future__ import annotations

import argparse
import gzip
import json
import time
from pathlib import Path

DATA = Path(__file__).resolve().parents[2] / "shared" / "data"


def repeated_trigram(text: str) -> bool:
    from pysynth.qagen.pipeline import has_repeated_ngram

    return bool(text) and has_repeated_ngram(text, 3)


def _force(n: int, no_stutter: bool) -> None:
    """Make every CopyNet search run with these guards (the commands' own settings otherwise)."""
    import pysynth.decoding.config as C
    import pysynth.models.generate as G

    orig = getattr(C, "_orig_run_search", C.run_search)
    C._orig_run_search = orig

    def run(backend, batch, cfg, max_len, seeds=None):
        return orig(backend, batch, cfg.replace(no_repeat_ngram=n, no_stutter=no_stutter), max_len, seeds)

    G.run_search = C.run_search = run


def _share(texts) -> float:
    texts = [t for t in texts if t]
    return round(100 * sum(map(repeated_trigram, texts)) / max(len(texts), 1), 2)


def k2q() -> dict:
    from pysynth.k2q.neural import evaluate_t0

    r = evaluate_t0(beam=5)
    return {"n": r["n"], "rougeL": round(r["rougeL"], 4), "bleu": round(r["bleu"], 4),
            "repeated_trigram_pct": _share(r["hyps"]), "hyps": r["hyps"]}


def mqr() -> dict:
    from pysynth.mqr.rewrite import Rewriter
    from pysynth.mqr.table6 import score_system

    rows = [json.loads(x) for x in gzip.open(DATA / "mqr" / "test.jsonl.gz", "rt")]
    src, ref = [r["ill_formed"] for r in rows], [r["well_formed"] for r in rows]
    hyp = Rewriter("mqr-copynet-small", threads=2).rewrite(src)  # the CLI's defaults
    s = score_system(hyp, ref, meteor=True)
    return {"n": len(src), **{k: round(v, 2) for k, v in s.items() if v},
            "repeated_trigram_pct": _share(hyp), "input_repeated_trigram_pct": _share(src), "hyps": hyp}


def dqg() -> dict:
    from pysynth.dup.dqg import evaluate

    dumps = [str(DATA / "stackexchange_dumps" / s) for s in ("ai", "beer", "bicycles.meta", "coffee", "french.meta")]
    # the examples hold 5 titles only: re-generate the dev split's titles to count repeats
    from pysynth.dup.dqg import TitleGenerator, split_dev, training_rows

    r = evaluate(None, dumps, subset="dev", threads=2)
    rows = split_dev(training_rows(dumps)[0], 0.05, 0)[1]
    hyps = [t for t, _ in TitleGenerator(None, threads=2).generate([x["body"] for x in rows])]
    r.pop("examples", None)
    return {**r, "repeated_trigram_pct": _share(hyps), "hyps": hyps}


def qg() -> dict:
    from pysynth.qagen.data import read_squad
    from pysynth.qagen.evaluate import qg_scores
    from pysynth.qagen.models import QuestionGenerator

    ctx = read_squad(DATA / "squad2_dev_subset" / "dev-v2.0.explorer_rest.json.gz")
    qgm = QuestionGenerator()
    seen = []
    orig = qgm.generate

    def gen(*a, **k):
        out = orig(*a, **k)
        seen.extend(out)
        return out

    qgm.generate = gen
    r = qg_scores(qgm, ctx, limit=300, seed=0)
    r.pop("examples", None)
    return {**r, "repeated_trigram_pct": _share(seen), "hyps": seen}


def paraphrase() -> dict:
    import sys

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    from meaning_filters import questions

    from pysynth.paraphrase.pipeline import ParaphraseConfig, Paraphraser

    qs = [q["question"] for q in questions("test")]
    res = Paraphraser(ParaphraseConfig(threads=2, min_similarity=0.7)).run(qs)
    chosen = [c for r in res for c in r["paraphrases"]]
    return {"n": len(qs), "paraphrases_per_question": round(len(chosen) / len(qs), 3),
            "repeated_trigram_pct": _share(chosen), "hyps": chosen}


MODES = {"off": (0, False), "trigram": (3, False), "default": (3, True)}  # default: SearchConfig's
TASKS = {"k2q": k2q, "mqr": mqr, "dqg": dqg, "qg": qg, "paraphrase": paraphrase}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--only", default=",".join(TASKS))
    ap.add_argument("--out", type=Path, default=Path(__file__).resolve().parent / "results" / "degenerate_guard.json")
    a = ap.parse_args()
    res = json.loads(a.out.read_text()) if a.out.is_file() else {}
    for name in a.only.split(","):
        for mode, (n, stutter) in MODES.items():
            _force(n, stutter)
            t = time.perf_counter()
            r = TASKS[name]()
            r["seconds"] = round(time.perf_counter() - t, 1)
            res.setdefault(name, {})[mode] = r
            print(name, mode, json.dumps({k: v for k, v in r.items() if k != "hyps"}), flush=True)
            a.out.parent.mkdir(parents=True, exist_ok=True)
            a.out.write_text(json.dumps(res, indent=1, ensure_ascii=False) + "\n")


if __name__ == "__main__":
    main()
