"""Real vs synthetic question corpora: the numbers of bench/RESULTS_synthetic.md.

    PYTHONPATH=. python3 bench/report_synthetic.py [--timing] [--json out.json]

Real = ``load_question_set()`` without the T0 clusters (the set the shipped profile is fitted
to); synthetic = ``generate_corpus(n_real, seed=0)`` with the shipped profile.  Prints
Markdown tables: lengths, rank-frequency slopes, vocabulary growth (Heaps), openings,
clusters, within-cluster overlap, SDM retrieval of cluster-mates, and (``--timing``)
generation times for 1M and 3.17M questions.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections import Counter, defaultdict

import numpy as np

from pysynth import text
from pysynth.data.synthetic import (
    FUNCTION_WORDS,
    default_profile,
    generate_corpus,
    iter_corpus,
    write_corpus,
)
from pysynth.data.synthetic.fit import _cluster_overlap, _fit_zipf_mandelbrot
from pysynth.data.synthetic.generate import _Model
from pysynth.k2q.data import load_question_set, load_seed_pairs, seed_clusters
from pysynth.retrieval import Index


def real_set():
    qs = load_question_set(exclude_clusters=set(seed_clusters(load_seed_pairs())))
    return qs.questions, qs.cluster


def slope(freqs, lo=10, hi=1000):
    """Least-squares slope of log f on log r over ranks lo..hi (log-spaced points)."""
    f = np.sort(np.asarray(freqs, dtype=np.float64))[::-1]
    hi = min(hi, len(f))
    r = np.unique(np.round(np.logspace(np.log10(lo), np.log10(hi), 50)).astype(int))
    return float(np.polyfit(np.log(r), np.log(f[r - 1]), 1)[0])


def tv(a: Counter, b: Counter) -> float:
    na, nb = sum(a.values()), sum(b.values())
    return 0.5 * sum(abs(a.get(k, 0) / na - b.get(k, 0) / nb) for k in set(a) | set(b))


def stats(questions, clusters, workers=2):
    toks = text.tokenize(questions, "rouge", workers)
    cl = np.asarray(clusters)
    L = np.array([len(t) for t in toks])
    allc = Counter(w for t in toks for w in t)
    content = Counter(w for t in toks for w in t if w not in FUNCTION_WORDS)
    prof = default_profile()
    # body content words (after the opening, as the profile defines it) for the Z-M refit
    ops = prof.openings["clustered"] + prof.openings["unclustered"]
    two = {o for o, _ in ops if len(o.split()) == 2}
    one = {o for o, _ in ops if len(o.split()) == 1}
    body = Counter()
    for t in toks:
        ol = 2 if len(t) >= 2 and f"{t[0]} {t[1]}" in two else (1 if t and t[0] in one else 0)
        body.update(w for w in t[ol:] if w not in FUNCTION_WORDS)
    zs, zq, _ = _fit_zipf_mandelbrot(np.array(list(body.values())))
    # clusters
    sizes = Counter(Counter(cl[cl >= 0].tolist()).values())
    # content-word overlap: all content words of the question (any position)
    vocab = {w: i for i, w in enumerate(content)}
    ids = [[vocab[w] for w in t if w not in FUNCTION_WORDS] for t in toks]
    off = np.zeros(len(ids) + 1, dtype=np.int64)
    np.cumsum([len(x) for x in ids], out=off[1:])
    flat = np.array([i for x in ids for i in x], dtype=np.int64)
    overlap, _ = _cluster_overlap(flat, off, cl)
    members = defaultdict(list)
    for i, c in enumerate(cl.tolist()):
        if c >= 0:
            members[c].append(i)
    jac, same_open, pairs = [], 0, 0
    for mem in members.values():
        for a in range(len(mem)):
            for b in range(a + 1, len(mem)):
                sa, sb = set(ids[mem[a]]), set(ids[mem[b]])
                if sa | sb:
                    jac.append(len(sa & sb) / len(sa | sb))
                pairs += 1
                same_open += toks[mem[a]][:2] == toks[mem[b]][:2]
    openings = Counter(" ".join(t[:2]) for t in toks)
    return {
        "n": len(questions),
        "len_hist": Counter(L.tolist()),
        "len_mean": float(L.mean()), "len_std": float(L.std()),
        "len_pct": np.percentile(L, [5, 25, 50, 75, 95]).tolist(),
        "types_all": len(allc), "tokens_all": int(sum(allc.values())),
        "types_content": len(content), "tokens_content": int(sum(content.values())),
        "slope_all": slope(list(allc.values())), "slope_content": slope(list(content.values())),
        "top10_share_all": sum(v for _, v in allc.most_common(10)) / sum(allc.values()),
        "zm_body": (zs, zq), "body_types": len(body), "body_tokens": int(sum(body.values())),
        "clustered_fraction": float((cl >= 0).mean()),
        "clusters": len(members), "sizes": sizes,
        "overlap_content": overlap, "jaccard": float(np.mean(jac)) if jac else float("nan"),
        "same_opening_pairs": same_open / pairs if pairs else float("nan"),
        "openings": openings, "toks": toks,
    }


def retrieval(questions, clusters, toks, seed=0, k=100, workers=2):
    """Fraction of clustered questions (cluster >= 2, >= 3 distinct content words) whose
    cluster-mates appear in the SDM top-k of a query of 3 of their content words."""
    corpus = text.build_corpus(questions, workers=workers)
    ix = Index.build(corpus.ids, corpus.offsets, vocab_size=len(corpus.vocab), workers=workers)
    tid = {w: i for i, w in enumerate(corpus.vocab)}
    cl = np.asarray(clusters)
    members = defaultdict(list)
    for i, c in enumerate(cl.tolist()):
        if c >= 0:
            members[c].append(i)
    rng = np.random.default_rng(seed)
    qids, queries = [], []
    for i, c in enumerate(cl.tolist()):
        if c < 0 or len(members[c]) < 2:
            continue
        words = list(dict.fromkeys(w for w in toks[i] if w not in FUNCTION_WORDS))
        if len(words) < 3:
            continue
        pick = sorted(rng.choice(len(words), 3, replace=False))  # question order, like a keyword query
        qids.append(i)
        queries.append([tid[words[j]] for j in pick])
    t0 = time.perf_counter()
    hits = ix.search(queries, k=k, model="sdm", workers=workers)
    dt = time.perf_counter() - t0
    any_mate, recall, self_hit = [], [], []
    for q, docs in zip(qids, hits.docs):
        mates = set(members[cl[q]]) - {q}
        got = set(docs.tolist())
        any_mate.append(bool(mates & got))
        recall.append(len(mates & got) / len(mates))
        self_hit.append(q in got)
    eligible = sum(1 for c in cl.tolist() if c >= 0 and len(members[c]) >= 2)
    return {"queries": len(qids), "eligible": eligible, "any_mate": float(np.mean(any_mate)),
            "mate_recall": float(np.mean(recall)), "self_in_top": float(np.mean(self_hit)), "search_s": dt}


def heaps_curve(real_q, ns, workers=2, seed=0):
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(real_q))
    out = []
    for n in ns:
        rq = [real_q[i] for i in order[:n]]
        sq, _ = generate_corpus(n, seed=seed)
        row = {"n": n}
        for name, qs in (("real", rq), ("synth", sq)):
            toks = text.tokenize(qs, "rouge", workers)
            row[name + "_all"] = len({w for t in toks for w in t})
            row[name + "_content"] = len({w for t in toks for w in t if w not in FUNCTION_WORDS})
        out.append(row)
    return out


def big_vocab(ns, workers=2):
    """Distinct content words of big synthetic corpora vs the Heaps prediction."""
    prof = default_profile()
    c = prof.content
    rows = []
    for n in ns:
        seen = set()
        tokens = 0
        for qs, _ in iter_corpus(n, seed=0):
            toks = text.tokenize(qs, "rouge", workers)
            ws = [w for t in toks for w in t if w not in FUNCTION_WORDS]
            tokens += len(ws)
            seen.update(ws)
        m = _Model(prof)
        rows.append({"n": n, "support": m.support(n), "content_types": len(seen), "content_tokens": tokens,
                     "heaps_pred": c["heaps_k"] * (tokens ** c["heaps_beta"])})
    return rows


def timing(ns, tmpdir="/tmp"):
    rows = []
    for n in ns:
        t, cpu = time.perf_counter(), time.process_time()
        qs, cl = generate_corpus(n, seed=0)
        rows.append({"n": n, "what": "generate_corpus", "wall_s": time.perf_counter() - t,
                     "cpu_s": time.process_time() - cpu})
        del qs, cl
        path = f"{tmpdir}/synthetic_{n}.jsonl.gz"
        t, cpu = time.perf_counter(), time.process_time()
        write_corpus(path, n, seed=0)
        rows.append({"n": n, "what": "write_corpus (.jsonl.gz)", "wall_s": time.perf_counter() - t,
                     "cpu_s": time.process_time() - cpu})
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--timing", action="store_true")
    ap.add_argument("--big-vocab", action="store_true")
    ap.add_argument("--json")
    args = ap.parse_args(argv)
    real_q, real_c = real_set()
    n = len(real_q)
    t0 = time.perf_counter()
    syn_q, syn_c = generate_corpus(n, seed=0)
    gen_s = time.perf_counter() - t0
    R, S = stats(real_q, real_c), stats(syn_q, syn_c)
    res = {"n": n, "gen_s": gen_s}
    p = print
    p(f"## Real vs synthetic at n = {n:,} (synthetic: generate_corpus({n}, seed=0), {gen_s:.2f} s)\n")
    p("| statistic | real | synthetic |")
    p("|---|---|---|")
    rows = [
        ("length (tokens) mean / std", f"{R['len_mean']:.2f} / {R['len_std']:.2f}", f"{S['len_mean']:.2f} / {S['len_std']:.2f}"),
        ("length percentiles 5/25/50/75/95", "/".join(f"{x:g}" for x in R["len_pct"]), "/".join(f"{x:g}" for x in S["len_pct"])),
        ("length histogram: total variation distance", "-", f"{tv(R['len_hist'], S['len_hist']):.3f}"),
        ("tokens (all)", f"{R['tokens_all']:,}", f"{S['tokens_all']:,}"),
        ("vocabulary (all tokens)", f"{R['types_all']:,}", f"{S['types_all']:,}"),
        ("content tokens / vocabulary", f"{R['tokens_content']:,} / {R['types_content']:,}", f"{S['tokens_content']:,} / {S['types_content']:,}"),
        ("rank-frequency slope, all tokens, ranks 10-1000", f"{R['slope_all']:.3f}", f"{S['slope_all']:.3f}"),
        ("rank-frequency slope, content words, ranks 10-1000", f"{R['slope_content']:.3f}", f"{S['slope_content']:.3f}"),
        ("top-10 tokens' share of all tokens", f"{R['top10_share_all']:.3f}", f"{S['top10_share_all']:.3f}"),
        ("Zipf-Mandelbrot refit (s, q), body content words", f"{R['zm_body'][0]:.3f}, {R['zm_body'][1]:.1f}", f"{S['zm_body'][0]:.3f}, {S['zm_body'][1]:.1f}"),
        ("openings (first 2 tokens): distinct", f"{len(R['openings']):,}", f"{len(S['openings']):,}"),
        ("openings: top-10 share", f"{sum(v for _, v in R['openings'].most_common(10)) / n:.3f}", f"{sum(v for _, v in S['openings'].most_common(10)) / n:.3f}"),
        ("openings: total variation distance", "-", f"{tv(R['openings'], S['openings']):.3f}"),
        ("fraction in a cluster", f"{R['clustered_fraction']:.4f}", f"{S['clustered_fraction']:.4f}"),
        ("clusters", f"{R['clusters']:,}", f"{S['clusters']:,}"),
        ("cluster sizes 1/2/3/4/5/6+", "/".join(str(R['sizes'].get(k, 0)) for k in range(1, 6)) + f"/{sum(v for k, v in R['sizes'].items() if k >= 6)}",
         "/".join(str(S['sizes'].get(k, 0)) for k in range(1, 6)) + f"/{sum(v for k, v in S['sizes'].items() if k >= 6)}"),
        ("cluster sizes: total variation distance", "-", f"{tv(R['sizes'], S['sizes']):.3f}"),
        ("paraphrase content words shared with cluster-mates (mean fraction)", f"{R['overlap_content']:.3f}", f"{S['overlap_content']:.3f}"),
        ("paraphrase pairs: content-word Jaccard", f"{R['jaccard']:.3f}", f"{S['jaccard']:.3f}"),
        ("paraphrase pairs: same first 2 tokens", f"{R['same_opening_pairs']:.3f}", f"{S['same_opening_pairs']:.3f}"),
    ]
    for r in rows:
        p(f"| {r[0]} | {r[1]} | {r[2]} |")
    p()
    p("Top openings: real " + ", ".join(f"{o} {v / n:.3f}" for o, v in R["openings"].most_common(6))
      + "; synthetic " + ", ".join(f"{o} {v / n:.3f}" for o, v in S["openings"].most_common(6)))
    p()
    res["table"] = rows
    t0 = time.perf_counter()
    rr = retrieval(real_q, real_c, R["toks"])
    rs = retrieval(syn_q, syn_c, S["toks"])
    p("## SDM retrieval of cluster-mates (query: 3 of a question's content words, top 100)\n")
    p("| corpus | eligible questions (cluster >= 2) | queries (>= 3 content words) | >= 1 mate in top 100 | mean fraction of mates in top 100 | own question in top 100 | search (s) |")
    p("|---|---|---|---|---|---|---|")
    for name, r in (("real", rr), ("synthetic", rs)):
        p(f"| {name} | {r['eligible']:,} | {r['queries']:,} | {r['any_mate']:.3f} | {r['mate_recall']:.3f} | {r['self_in_top']:.3f} | {r['search_s']:.2f} |")
    p()
    res["retrieval"] = {"real": rr, "synthetic": rs}
    hc = heaps_curve(real_q, [1000, 4000, 16000, n])
    p("## Vocabulary vs n (Heaps)\n")
    p("| n | real: all tokens | synthetic: all tokens | real: content words | synthetic: content words |")
    p("|---|---|---|---|---|")
    for r in hc:
        p(f"| {r['n']:,} | {r['real_all']:,} | {r['synth_all']:,} | {r['real_content']:,} | {r['synth_content']:,} |")
    p()
    res["heaps"] = hc
    if args.big_vocab:
        bv = big_vocab([1_000_000, 3_170_000])
        p("| n | Zipf support (ranks) | content tokens | distinct content words | Heaps K*T^beta |")
        p("|---|---|---|---|---|")
        for r in bv:
            p(f"| {r['n']:,} | {r['support']:,} | {r['content_tokens']:,} | {r['content_types']:,} | {r['heaps_pred']:,.0f} |")
        p()
        res["big_vocab"] = bv
    if args.timing:
        tm = timing([1_000_000, 3_170_000])
        p("## Generation time\n")
        p("| n | what | wall (s) | CPU (s) |")
        p("|---|---|---|---|")
        for r in tm:
            p(f"| {r['n']:,} | {r['what']} | {r['wall_s']:.1f} | {r['cpu_s']:.1f} |")
        res["timing"] = tm
    if args.json:
        with open(args.json, "w") as f:
            json.dump(res, f, indent=1, default=str)


if __name__ == "__main__":
    sys.exit(main())
