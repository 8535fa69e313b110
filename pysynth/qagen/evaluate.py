"""Evaluation of roundtrip QA generation on SQuAD articles never used in training.

:func:`evaluate` measures, on a SQuAD JSON file (the shipped models never saw the SQuAD 2.0 dev
articles of ``../shared/data/squad2_dev_subset/dev-v2.0.explorer_rest.json.gz``):

* **kept vs discarded correctness** (Alberti et al. 2019, Sect. 4: 39 % of roundtrip-consistent
  triples correct vs 16 % of inconsistent ones, by hand). Automatic proxy, the same for both
  groups: ``answer_ok`` = A has token F1 >= 0.5 with a gold answer of its paragraph;
  ``triple_ok`` = ``answer_ok`` and Q has ROUGE-L F1 >= 0.3 with a gold question whose
  answer A matches. Plus a blind, shuffled sheet (``sheet.csv``: kept and discarded mixed,
  nothing says which; ``sheet_key.csv`` holds the key) for a person to label.
* **answer extraction recall@10**, joint vs independent span scoring: the share of a
  paragraph's distinct gold answers found among its top 10 spans (exact match after SQuAD
  normalisation, and F1 >= 0.5).
* **keep rate** (the paper's filter kept 2.4M of 3M... its own numbers: 30 % / 40 % in the issue).
* **question generation from gold answers**: BLEU-4 (sacrebleu, lower-cased) and ROUGE-L F1 of
  the generated question against the gold question, the usual QG measure (Du et al. 2017); it
  compares question generators with the rest of the pipeline held fixed.
* **QA EM / F1** of the QA model on answerable and unanswerable questions (official SQuAD 2.0
  scoring: a no-answer prediction scores 1 on an unanswerable question, 0 otherwise).
"""
from __future__ import annotations

import csv
import json
import random
import time
from collections import Counter
from pathlib import Path
from typing import Any, Dict, List, Optional

from pysynth.qagen.data import Context, exact_match, f1_score, normalize_answer, read_squad

__all__ = ["evaluate", "answer_recall", "qa_scores", "qg_scores", "correctness"]

ANSWER_F1, QUESTION_ROUGE = 0.5, 0.3


def _golds(ctx: Context) -> List[Dict[str, str]]:
    """Distinct (normalised) gold answers of a paragraph with one of their questions."""
    out, seen = [], set()
    for qa in ctx.qas:
        if qa.get("is_impossible"):
            continue
        for a in qa.get("answers") or []:
            n = normalize_answer(a["text"])
            if n and n not in seen:
                seen.add(n)
                out.append({"text": a["text"], "question": qa["question"]})
    return out


def answer_recall(span_model, contexts: List[Context], k: int = 10, joint: bool = True) -> Dict[str, float]:
    """Recall@k of the paragraphs' distinct gold answers among the top ``k`` extracted spans."""
    golds = [_golds(c) for c in contexts]
    spans = span_model.extract([c.text for c in contexts], k=k, joint=joint)
    n = em = f1 = 0
    for g, s in zip(golds, spans):
        for a in g:
            n += 1
            em += any(exact_match(x["text"], a["text"]) for x in s)
            f1 += any(f1_score(x["text"], a["text"]) >= ANSWER_F1 for x in s)
    return {"gold_answers": n, "recall_em": round(em / max(n, 1), 4), "recall_f1_0.5": round(f1 / max(n, 1), 4)}


def qa_scores(qa_model, contexts: List[Context]) -> Dict[str, Any]:
    """SQuAD 2.0 EM / F1 (max over gold answers) on answerable and unanswerable questions; a
    prediction is "no answer" when its score is below the no-answer score."""
    items = [(c, qa) for c in contexts for qa in c.qas]
    preds = qa_model.answer([c.text for c, _ in items], [qa["question"] for _, qa in items])
    acc = {"has_ans": [0, 0.0, 0.0], "no_ans": [0, 0.0, 0.0]}
    for (c, qa), p in zip(items, preds):
        text = "" if p["text"] is None or p["score"] < p["null_score"] else p["text"]
        golds = [a["text"] for a in qa.get("answers") or []] if not qa.get("is_impossible") else [""]
        key = "no_ans" if golds == [""] else "has_ans"
        acc[key][0] += 1
        acc[key][1] += max(float(exact_match(text, g)) for g in golds)
        acc[key][2] += max(f1_score(text, g) for g in golds)
    out: Dict[str, Any] = {}
    tot = [0, 0.0, 0.0]
    for k, (n, em, f1) in acc.items():
        out[k] = {"n": n, "em": round(100 * em / max(n, 1), 2), "f1": round(100 * f1 / max(n, 1), 2)}
        tot = [tot[0] + n, tot[1] + em, tot[2] + f1]
    out["all"] = {"n": tot[0], "em": round(100 * tot[1] / max(tot[0], 1), 2),
                  "f1": round(100 * tot[2] / max(tot[0], 1), 2)}
    return out


def qg_scores(question_model, contexts: List[Context], limit: int = 1000, seed: int = 0,
              **generate_kw) -> Dict[str, Any]:
    """BLEU-4 / ROUGE-L of questions generated from gold answers against the gold questions
    (``limit`` answerable questions drawn with ``seed``; ``generate_kw``: more keywords of the
    question model's ``generate``, e.g. the search's guards)."""
    from pysynth.metrics import corpus_bleu, rouge
    from pysynth.qagen.data import iter_answers

    items = list(iter_answers(contexts))
    if limit and len(items) > limit:
        items = random.Random(seed).sample(items, limit)
    t = time.perf_counter()
    hyps = question_model.generate([c.text for c, _, _ in items],
                                   [{"start": a["answer_start"], "end": a["answer_start"] + len(a["text"])}
                                    for _, _, a in items], **generate_kw)
    dt = time.perf_counter() - t
    refs = [qa["question"].strip() for _, qa, _ in items]
    bleu = corpus_bleu([h.lower() for h in hyps], [[r.lower() for r in refs]])
    rl = rouge(hyps, [refs], types=("rougeL",))["rougeL"].mean()[2]
    return {"n": len(items), "bleu4": round(float(bleu.score), 2), "rougeL_f": round(100 * rl, 2),
            "questions_per_s": round(len(items) / dt, 1),
            "examples": [{"gold": r, "generated": h} for r, h in zip(refs[:5], hyps[:5])]}


def correctness(row: Dict[str, Any], ctx: Context) -> Dict[str, bool]:
    """The automatic proxy of a triple's correctness (see the module doc)."""
    from pysynth.metrics import rouge

    qs = [qa["question"] for qa in ctx.qas if not qa.get("is_impossible")
          and any(f1_score(row["answer_text"], g["text"]) >= ANSWER_F1 for g in qa.get("answers") or [])]
    triple_ok = bool(qs and row.get("question")) and \
        float(rouge([row["question"]], [[q] for q in qs], types=("rougeL",))["rougeL"].fmeasure[0]) >= QUESTION_ROUGE
    return {"answer_ok": bool(qs), "triple_ok": triple_ok}


def _rate(rows, key) -> Optional[float]:
    return round(sum(r[key] for r in rows) / len(rows), 4) if rows else None


def evaluate(squad, out, answer_model: Optional[str] = None, question_model: Optional[str] = None,
             qa_model: Optional[str] = None, limit: int = 0, draws: int = 2, seed: int = 0, threads: int = 0,
             sheet_size: int = 100, config=None, roundtrip_only: bool = False) -> Dict[str, Any]:
    """Run every measurement of the module doc on ``squad``; writes ``results.json``,
    ``triples.jsonl`` (every generated triple with its proxy labels), ``sheet.csv`` and
    ``sheet_key.csv`` into ``out``; returns the results.

    ``config``: the generation settings (:class:`~pysynth.qagen.pipeline.QAGenConfig`; default
    ``QAGenConfig()``: one answer per context, span rejection, the question guard and the learned
    roundtrip filter on; the paper's pipeline is ``QAGenConfig(one_sentence=False,
    max_answer_words=None, no_repeat_ngram=0, match="exact")``), run ``draws`` times with seeds ``seed, seed + 1, ...``. ``roundtrip_only``: only the kept-vs-discarded measurement
    (no recall@10, QG-from-gold or QA scores)."""
    import dataclasses

    from pysynth.decoding.config import guard_changes
    from pysynth.io import atomic_write_text, write_jsonl
    from pysynth.qagen.models import QuestionGenerator, SpanModel
    from pysynth.qagen.pipeline import QAGenConfig, QAGenerator

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    contexts = read_squad(squad)
    if limit:
        contexts = contexts[:limit]
    span = SpanModel(answer_model, threads=threads)
    qa = span if qa_model is None or qa_model == answer_model else SpanModel(qa_model, threads=threads)
    qg = QuestionGenerator(question_model, threads=threads)
    res: Dict[str, Any] = {"squad": str(squad), "paragraphs": len(contexts),
                           "articles": len({c.title for c in contexts}),
                           "models": {"answer": span.name, "question": qg.name, "qa": qa.name}}
    cfg = config or QAGenConfig()
    if not roundtrip_only:
        t = time.perf_counter()
        res["answer_recall@10"] = {"joint": answer_recall(span, contexts, 10, True) if span.joint else None,
                                   "independent": answer_recall(span, contexts, 10, False)}
        res["answer_recall_s"] = round(time.perf_counter() - t, 1)
        res["qg_from_gold_answers"] = qg_scores(qg, contexts, seed=seed,
                                                **guard_changes(cfg.no_repeat_ngram, cfg.no_stutter))
        t = time.perf_counter()
        res["qa"] = qa_scores(qa, contexts)
        res["qa_s"] = round(time.perf_counter() - t, 1)
    res["config"] = {**cfg.as_dict(), "draws": draws}
    rows: List[Dict[str, Any]] = []
    by_id = {c.id: c for c in contexts}
    counts: Counter = Counter()
    no_answer: Counter = Counter()
    t = time.perf_counter()
    for d in range(draws):
        gen = QAGenerator(dataclasses.replace(cfg, seed=seed + d, neg_fraction=0.0), span, qg, qa, threads=threads)
        res["config"]["roundtrip_filter"] = gen.match
        for r in gen.run(contexts, counts=counts):
            if r.get("answer_text") is None:
                no_answer[r["reason"]] += 1
                continue
            rows.append({**{k: v for k, v in r.items() if k != "context"}, "draw": d,
                         **correctness(r, by_id[r["context_id"]])})
    res["generate_s"] = round(time.perf_counter() - t, 1)
    kept = [r for r in rows if r["consistent"]]
    disc = [r for r in rows if not r["consistent"]]
    reasons: Dict[str, int] = {}
    for r in disc:
        reasons[r["reason"]] = reasons.get(r["reason"], 0) + 1
    res["triples"] = {"generated": len(rows), "kept": len(kept), "discarded": len(disc),
                      "keep_rate": _rate(rows, "consistent"), "discarded_by_reason": reasons,
                      "kept_answer_ok": _rate(kept, "answer_ok"), "discarded_answer_ok": _rate(disc, "answer_ok"),
                      "kept_triple_ok": _rate(kept, "triple_ok"), "discarded_triple_ok": _rate(disc, "triple_ok"),
                      "ratio": round(_rate(kept, "triple_ok") / _rate(disc, "triple_ok"), 2)
                      if kept and disc and _rate(disc, "triple_ok") else None,
                      "contexts_kept_per_draw": round(len({(r["draw"], r["context_id"]) for r in kept}) / draws, 1),
                      "contexts_without_answer": dict(no_answer), "counts": dict(sorted(counts.items())),
                      "proxy": f"answer_ok: token F1 >= {ANSWER_F1} with a gold answer of the paragraph; triple_ok: "
                               f"answer_ok and ROUGE-L F1 >= {QUESTION_ROUGE} with a gold question of that answer",
                      "paper": "39 % of consistent vs 16 % of inconsistent triples correct (manual, 46 + 52 triples)"}
    write_jsonl(out / "triples.jsonl", rows)
    _sheet(out, kept, disc, contexts, sheet_size, seed)
    atomic_write_text(out / "results.json", json.dumps(res, indent=1) + "\n")
    return res


def _sheet(out: Path, kept, disc, contexts, n: int, seed: int) -> None:
    """A blind labelling sheet: ``n`` kept + ``n`` discarded triples, shuffled; the key apart."""
    rng = random.Random(seed)
    text = {c.id: c.text for c in contexts}
    pick = rng.sample(kept, min(n, len(kept))) + rng.sample(disc, min(n, len(disc)))
    rng.shuffle(pick)
    with open(out / "sheet.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["item", "context", "question", "answer", "correct (y/n)"])
        for i, r in enumerate(pick):
            w.writerow([i, text[r["context_id"]], r["question"], r["answer_text"], ""])
    with open(out / "sheet_key.csv", "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f)
        w.writerow(["item", "id", "draw", "consistent", "answer_ok", "triple_ok"])
        for i, r in enumerate(pick):
            w.writerow([i, r["id"], r["draw"], r["consistent"], r["answer_ok"], r["triple_ok"]])
