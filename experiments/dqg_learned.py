"""Learned extractive titles for DQG (issue 26, session 10; bench/RESULTS_generators.md, "Learned
extractive titles"): each body offers candidate titles (:func:`pysynth.dup.dqg._title_candidates`:
its sentences trimmed, their asking clause, a few word cuts; the shipped rule's title among them)
with cheap features, and a linear scorer picks one. The scorer is a listwise logistic model (softmax
over a body's candidates; target: a softmax of each candidate's sentence BLEU + ROUGE-L F against the
real title at temperature T; L2 penalty), fitted in NumPy/SciPy, plus a per-word length bias chosen
for corpus BLEU + ROUGE-L.

Leave-one-site-out: for each site in turn, (T, L2, bias) are chosen on the other four sites (inner
leave-one-site-out among them, predictions pooled, criterion corpus BLEU + mean ROUGE-L), the model is
fitted on the four and scored on the fifth beside the rule and lead-12. ``--final`` then chooses the
settings the same way on all five sites, fits on all of them and prints the weights that
``pysynth/dup/dqg.py`` ships (``_TITLE_WEIGHTS``, already divided by the features' standard
deviations). BLEU = sacrebleu lower-cased corpus BLEU, ROUGE-L = rouge-score F, as ``dup evaluate-dqg``.

    python experiments/dqg_learned.py [--data DIR] [--read 20] [--final] [--no-folds]
"""
from __future__ import annotations

import argparse
import itertools
import json
import random

import numpy as np

TEMPS = (10.0, 30.0, 100.0)
L2S = (1.0, 10.0)
BIASES = (-0.2, -0.1, -0.05, -0.02, 0.0, 0.02, 0.05, 0.1)


class Site:
    """One site's candidates: features, word counts, BLEU stats and scores against the real titles."""

    def __init__(self, name, rows):
        from pysynth.dup.dqg import TITLE_FEATURES, _title_candidates
        from pysynth.metrics import rouge, sentence_bleu
        from pysynth.metrics.bleu import _bleu_inputs

        self.name, self.rows = name, rows
        texts, feats, group, refs = [], [], [], []
        for k, r in enumerate(rows):
            t, f = _title_candidates(r["body"])
            texts += t
            feats += f
            group += [k] * len(t)
            refs += [r["title"]] * len(t)
        self.texts, self.group = texts, np.asarray(group)
        self.X = np.asarray(feats, dtype=np.float64)
        self.words = self.X[:, TITLE_FEATURES.index("words")]
        self.stats = _bleu_inputs(texts, [refs], "sacrebleu", None, True, 4, 1)[0].astype(np.int64)
        self.sbleu = sentence_bleu(texts, [refs], lowercase=True)
        self.rl = 100 * rouge(texts, [refs], types=["rougeL"])["rougeL"].fmeasure
        self.starts = np.flatnonzero(np.r_[True, self.group[1:] != self.group[:-1]])
        assert len(self.starts) == len(rows), "every body must offer a candidate"


def corpus(sites, picks):
    """(BLEU, ROUGE-L) of the picked candidates (one index per body, per site), pooled."""
    from pysynth.metrics import _formulas
    from pysynth.metrics.bleu import _smoothing

    st = sum(s.stats[p].sum(axis=0) for s, p in zip(sites, picks))
    sm, sv = _smoothing("sacrebleu", None, None, False)
    bleu = _formulas.sacrebleu_bleu([int(x) for x in st[2:6]], [int(x) for x in st[6:10]], int(st[0]), int(st[1]),
                                    sm, sv, False, 4)[0]
    rl = np.concatenate([s.rl[p] for s, p in zip(sites, picks)]).mean()
    return float(bleu), float(rl)


def group_argmax(site, z):
    """Per body, the index of its first highest-scored candidate."""
    out = np.empty(len(site.starts), dtype=np.int64)
    ends = np.r_[site.starts[1:], len(z)]
    for k, (a, b) in enumerate(zip(site.starts, ends)):
        out[k] = a + int(np.argmax(z[a:b]))
    return out


def fit(sites, temp, l2):
    """``(w, mu, sd)`` of the listwise model on the sites' candidates (standardised features)."""
    from scipy.optimize import minimize

    X = np.concatenate([s.X for s in sites])
    y = np.concatenate([s.sbleu + s.rl for s in sites])
    starts, off = [], 0
    for s in sites:
        starts.append(s.starts + off)
        off += len(s.texts)
    starts = np.concatenate(starts)
    mu, sd = X.mean(axis=0), X.std(axis=0)
    sd[sd == 0] = 1.0
    Xs = (X - mu) / sd
    seg = np.repeat(np.arange(len(starts)), np.diff(np.r_[starts, len(X)]))

    def gsoftmax(z):
        m = np.maximum.reduceat(z, starts)[seg]
        e = np.exp(z - m)
        return e / np.add.reduceat(e, starts)[seg]

    q = gsoftmax(y / temp)

    def loss(w):
        z = Xs @ w
        m = np.maximum.reduceat(z, starts)
        lse = np.log(np.add.reduceat(np.exp(z - m[seg]), starts)) + m
        p = np.exp(z - lse[seg])
        f = -(q * (z - lse[seg])).sum() + 0.5 * l2 * w @ w
        return f, Xs.T @ (p - q) + l2 * w

    w = minimize(loss, np.zeros(X.shape[1]), jac=True, method="L-BFGS-B", options={"maxiter": 500}).x
    return w, mu, sd


def scores(site, model, bias):
    w, mu, sd = model
    return ((site.X - mu) / sd) @ w + bias * site.words


def choose(sites):
    """``((temp, l2, bias), (BLEU, ROUGE-L))``: the settings with the best pooled BLEU + ROUGE-L over an inner
    leave-one-site-out on ``sites``, and those scores (the criterion for any other choice, e.g. of candidates)."""
    best, best_val, got = None, -1.0, None
    for temp, l2 in itertools.product(TEMPS, L2S):
        models = [fit([s for s in sites if s is not u], temp, l2) for u in sites]
        for bias in BIASES:
            picks = [group_argmax(u, scores(u, m, bias)) for u, m in zip(sites, models)]
            b, r = corpus(sites, picks)
            if b + r > best_val:
                best, best_val, got = (temp, l2, bias), b + r, (round(b, 2), round(r, 2))
    return best, got


def main() -> None:
    from pysynth.data import shared_dir
    from pysynth.dup.dqg import TITLE_FEATURES, extract_title, rule_title
    from pysynth.dup.prep import questions
    from pysynth.metrics import score_corpus

    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--data", default=None)
    p.add_argument("--read", type=int, default=20, help="held-out titles printed per fold for reading (seeded)")
    p.add_argument("--final", action="store_true", help="also fit on all five sites and print the weights")
    p.add_argument("--no-folds", action="store_true", help="skip the held-out table (with --final: the weights only)")
    a = p.parse_args()
    root = shared_dir(a.data) / "stackexchange_dumps"
    names = sorted(d.name for d in root.iterdir() if d.is_dir())
    sites = [Site(n, questions(root / n).rows) for n in names]

    def sc(hyps, refs):
        m = score_corpus(hyps, [refs], ["bleu", "rougeL"], lowercase=True)
        return round(m["bleu"], 2), round(m["rougeL"], 2)

    for tgt in [] if a.no_folds else sites:
        train = [s for s in sites if s is not tgt]
        (temp, l2, bias), _ = choose(train)
        model = fit(train, temp, l2)
        pick = group_argmax(tgt, scores(tgt, model, bias))
        refs = [r["title"] for r in tgt.rows]
        hyps = [tgt.texts[i] for i in pick]
        rule = [rule_title(r["body"]) for r in tgt.rows]
        lead = [" ".join(r["body"].split()[:12]) for r in tgt.rows]
        oracle = group_argmax(tgt, tgt.sbleu + tgt.rl)
        rec = {"held_out": tgt.name, "questions": len(refs), "temp": temp, "l2": l2, "bias": bias,
               "learned": sc(hyps, refs), "rule": sc(rule, refs), "lead12": sc(lead, refs),
               "oracle": sc([tgt.texts[i] for i in oracle], refs),
               "same_as_rule": round(100 * np.mean([h == r for h, r in zip(hyps, rule)]), 1),
               "mean_words": round(float(np.mean([len(h.split()) for h in hyps])), 1),
               "rule_mean_words": round(float(np.mean([len(h.split()) for h in rule])), 1)}
        print(json.dumps(rec), flush=True)
        for k in random.Random(10).sample(range(len(refs)), min(a.read, len(refs))):
            print(json.dumps({"site": tgt.name, "k": k, "title": refs[k], "rule": rule[k], "learned": hyps[k]}))
    if a.final:
        (temp, l2, bias), pooled = choose(sites)
        w, mu, sd = fit(sites, temp, l2)
        ship = w / sd
        ship[TITLE_FEATURES.index("words")] += bias
        ship = [float(f"{v:.6g}") for v in ship]
        print(json.dumps({"final": {"temp": temp, "l2": l2, "bias": bias, "pooled_loso": pooled}, "weights": dict(zip(TITLE_FEATURES, ship))}))
        # the shipped function must pick what the fitted model picks (up to exact ties of the rounded weights)
        from pysynth.dup.dqg import _TITLE_WEIGHTS

        if list(_TITLE_WEIGHTS) == ship:
            for s in sites:
                picks = group_argmax(s, s.X @ np.asarray(ship))
                got = [extract_title(r["body"]) for r in s.rows]
                print(json.dumps({"site": s.name, "shipped_differs": sum(s.texts[i] != g for i, g in zip(picks, got)),
                                  "in_sample": sc(got, [r["title"] for r in s.rows])}))


if __name__ == "__main__":
    main()
