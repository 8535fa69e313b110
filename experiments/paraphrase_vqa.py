"""Granstedt 2017's reproduction on the shared VQA questions: Table 3.9's counts, DBS vs beam search,
the Fig. 3.5/3.6 coverage/volume sweep, and a question-only answer classifier as the stand-in for
Table 3.9's accuracy rows (no images here).

    python experiments/paraphrase_vqa.py --n 4000 --n-beam 1000 --write-results

Writes ``bench/results/paraphrase_vqa/`` (outputs, candidates, summary.json) and, with
``--write-results``, ``bench/RESULTS_paraphrase.md``. Needs the shared data (``../shared/data``) and
scikit-learn (``pip install '.[bench]'``) for the classifier.
"""
from __future__ import annotations

import argparse
import gzip
import json
import platform
import random
import re
import sys
import time
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
BENCH = HERE.parent / "bench"  # results stay beside the other RESULTS files
sys.path.insert(0, str(HERE.parent))

from pysynth.data import shared_dir  # noqa: E402
from pysynth.paraphrase import filters as S  # noqa: E402
from pysynth.paraphrase.jobs import run  # noqa: E402
from pysynth.paraphrase.pipeline import ParaphraseConfig  # noqa: E402

_W = re.compile(r"[a-z0-9]+(?:'[a-z]+)?")


def words(q):
    return _W.findall(q.lower())


def load(data, split):
    with gzip.open(data / "vqa_v2_subset" / f"{split}.jsonl.gz", "rt", encoding="utf-8") as f:
        return [json.loads(x) for x in f]


def paraphrase(rows, out_dir, name, cfg):
    inp = out_dir / f"{name}.in.jsonl"
    inp.write_text("".join(json.dumps({"id": r["question_id"], "question": r["question"],
                                       "answer": r["multiple_choice_answer"]}) + "\n" for r in rows))
    t = time.perf_counter()
    summ = run(inp, out_dir / f"{name}.jsonl", cfg, candidates_out=out_dir / f"{name}.candidates.jsonl",
               chunk_size=250, progress=True)
    summ["seconds"] = round(time.perf_counter() - t, 1)
    outs = [json.loads(x) for x in open(out_dir / f"{name}.jsonl", encoding="utf-8")]
    return outs, summ


def reselect(rows_out, cand_path, mode):
    """Select again from the saved candidates (no decoding): the other mode of the same run."""
    by = defaultdict(list)
    with open(cand_path, encoding="utf-8") as f:
        for x in f:
            c = json.loads(x)
            if "text" in c and not c.get("repeat"):
                by[c["id"]].append(c["text"])
    from pysynth.paraphrase.pipeline import _finish_text

    return {r["id"]: [_finish_text(c, r["question"]) for c in S.select(r["question"], by[r["id"]], mode=mode)]
            for r in rows_out}


def stats(originals, paras):
    """Table 3.9-style counts plus diversity of the paraphrases."""
    qs = list(originals)
    ps = [p for v in paras.values() for p in v]
    vo = {w for q in qs for w in words(q)}
    va = vo | {w for p in ps for w in words(p)}
    uni, bi, n_uni, n_bi = set(), set(), 0, 0
    for p in ps:
        w = words(p)
        uni.update(w)
        bi.update(zip(w, w[1:]))
        n_uni += len(w)
        n_bi += max(0, len(w) - 1)
    return {"questions": len(qs) + len(ps), "paraphrases": len(ps), "vocab": len(va), "vocab_original": len(vo),
            "vocab_growth": len(va) - len(vo),
            "per_question": round(len(ps) / max(1, len(paras)), 3),
            "with_none": sum(not v for v in paras.values()),
            "distinct_1": round(len(uni) / max(1, n_uni), 4), "distinct_2": round(len(bi) / max(1, n_bi), 4)}


def coverage_volume(data, vqa_questions, step=1000):
    """Fig. 3.5/3.6: coverage (share of VQA word types) and volume (share of VQA word tokens) of
    the first N words of the pivot training data's English vocabulary, by frequency."""
    cnt = Counter()
    with gzip.open(data / "tatoeba_eng_fra" / "pairs.jsonl.gz", "rt", encoding="utf-8") as f:
        for x in f:
            cnt.update(words(json.loads(x)["en"]))
    ranked = [w for w, _ in cnt.most_common()]
    vq = Counter(w for q in vqa_questions for w in words(q))
    total, types = sum(vq.values()), len(vq)
    rows, cov, vol = [], 0, 0
    for i, w in enumerate(ranked, 1):
        if w in vq:
            cov += 1
            vol += vq[w]
        if i % step == 0 or i == len(ranked):
            rows.append({"tokens": i, "coverage": round(100 * cov / types, 2), "volume": round(100 * vol / total, 2)})
    return rows


def classifier(train_sets, valid):
    """Question-only answer classifier (bag of uni+bigrams, logistic regression) per training set;
    accuracy on the valid questions: exact match with the majority answer and the VQA accuracy
    min(#annotators who gave the answer / 3, 1)."""
    from sklearn.feature_extraction.text import CountVectorizer
    from sklearn.linear_model import LogisticRegression

    top = [a for a, _ in Counter(a for q, a in train_sets["original"]).most_common(1000)]
    keep = set(top)
    out = {}
    for name, pairs in train_sets.items():
        pairs = [(q, a) for q, a in pairs if a in keep]
        vec = CountVectorizer(ngram_range=(1, 2), min_df=2, lowercase=True)
        X = vec.fit_transform([q for q, _ in pairs])
        t = time.perf_counter()
        clf = LogisticRegression(max_iter=300, C=1.0)
        clf.fit(X, [a for _, a in pairs])
        pred = clf.predict(vec.transform([r["question"] for r in valid]))
        em = sum(p == r["multiple_choice_answer"] for p, r in zip(pred, valid)) / len(valid)
        vqa = sum(min(r["answers"].count(p) / 3, 1.0) for p, r in zip(pred, valid)) / len(valid)
        out[name] = {"train_questions": len(pairs), "accuracy": round(100 * em, 2), "vqa_accuracy": round(100 * vqa, 2),
                     "fit_s": round(time.perf_counter() - t, 1)}
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=None)
    ap.add_argument("--n", type=int, default=4000, help="VQA training questions to paraphrase (seeded sample)")
    ap.add_argument("--n-beam", type=int, default=1000, help="of those, paraphrased again with beam search")
    ap.add_argument("--pivot", default="fr")
    ap.add_argument("--workers", type=int, default=2)
    ap.add_argument("--out", default=str(BENCH / "results" / "paraphrase_vqa"))
    ap.add_argument("--write-results", action="store_true")
    a = ap.parse_args(argv)
    data = shared_dir(a.data)
    out = Path(a.out)
    out.mkdir(parents=True, exist_ok=True)
    train, valid = load(data, "train"), load(data, "valid")
    sub = random.Random(0).sample(train, a.n)
    res = {"n": a.n, "n_beam": a.n_beam, "pivot": a.pivot}

    dbs_rows, res["dbs_run"] = paraphrase(sub, out, f"dbs-{a.pivot}", ParaphraseConfig(pivot=a.pivot, threads=a.workers))
    aug = {r["id"]: r["paraphrases"] for r in dbs_rows}
    assert reselect(dbs_rows, out / f"dbs-{a.pivot}.candidates.jsonl", "augmented") == aug
    div = reselect(dbs_rows, out / f"dbs-{a.pivot}.candidates.jsonl", "diverse")
    qs = [r["question"] for r in dbs_rows]
    res["table_3_9"] = {"baseline": stats(qs, {}), "augmented": stats(qs, aug), "diverse": stats(qs, div)}

    bsub = sub[: a.n_beam]
    beam_rows, res["beam_run"] = paraphrase(bsub, out, f"beam-{a.pivot}",
                                            ParaphraseConfig(pivot=a.pivot, decode="beam", threads=a.workers))
    ids = {r["question_id"] for r in bsub}
    bq = [r["question"] for r in beam_rows]
    res["dbs_vs_beam"] = {"dbs": stats(bq, {k: v for k, v in aug.items() if k in ids}),
                          "beam": stats(bq, {r["id"]: r["paraphrases"] for r in beam_rows})}
    # distinct candidates per question before selection (the search's own diversity)
    for name in (f"dbs-{a.pivot}", f"beam-{a.pivot}"):
        per = defaultdict(set)
        with open(out / f"{name}.candidates.jsonl", encoding="utf-8") as f:
            for x in f:
                c = json.loads(x)
                if "text" in c and c["id"] in ids:
                    per[c["id"]].add(c["text"])
        res["dbs_vs_beam"]["dbs" if name.startswith("dbs") else "beam"]["distinct_candidates_per_question"] = \
            round(sum(len(v) for v in per.values()) / max(1, len(ids)), 2)

    res["coverage_volume"] = coverage_volume(data, [r["question"] for r in train])
    answer = {r["question_id"]: r["multiple_choice_answer"] for r in sub}
    orig = [(r["question"], answer[r["question_id"]]) for r in sub]
    sets = {"original": orig,
            "augmented": orig + [(p, answer[i]) for i, v in aug.items() for p in v],
            "diverse": orig + [(p, answer[i]) for i, v in div.items() for p in v]}
    try:
        res["classifier"] = classifier(sets, valid)
    except ImportError as exc:
        res["classifier"] = {"skipped": str(exc)}
    res["machine"] = f"{platform.machine()}, {platform.processor() or 'cpu'}, 2 cores"
    res["date"] = time.strftime("%Y-%m-%d")
    (out / "summary.json").write_text(json.dumps(res, indent=1))
    print(json.dumps(res, indent=1))
    if a.write_results:
        (BENCH / "RESULTS_paraphrase_vqa.json").write_text(json.dumps(res, indent=1))
    return res


if __name__ == "__main__":
    main()
