"""Fitting a :class:`~pysynth.data.synthetic.Profile` to a real question set (the laws and
the calibration are described in :mod:`pysynth.data.synthetic`)."""
from __future__ import annotations

import math
from typing import Dict, List, Sequence, Tuple

import numpy as np

from pysynth.data.synthetic.generate import _Model
from pysynth.data.synthetic.profile import FUNCTION_WORDS, Profile


def _split_question(toks: Sequence[str], two: set, one: set) -> int:
    """Opening length of a tokenized question: 2 if its first pair is a kept opening, 1 if its
    first token is, else 0."""
    if len(toks) >= 2 and (toks[0] + " " + toks[1]) in two:
        return 2
    if toks and toks[0] in one:
        return 1
    return 0


def _fit_zipf_mandelbrot(freqs: np.ndarray, min_count: int = 5) -> Tuple[float, float, float]:
    """Zipf-Mandelbrot ``f(r) ~ (r + q) ** -s`` (Mandelbrot 1953) by least squares in log-log.

    Fitted on the ranks with at least ``min_count`` occurrences (the hapax-dominated tail is
    a step function), sampled evenly in log rank so each decade weighs the same; ``q`` by a
    grid search, ``s`` and the scale ``C`` in closed form for each ``q``.  Returns
    ``(s, q, C)`` with ``f(r) ~ C * (r + q) ** -s``.
    """
    f = np.sort(np.asarray(freqs, dtype=np.float64))[::-1]
    head = int(np.sum(f >= min_count))
    if head < 10:
        head = min(len(f), 10)
    if head < 3:
        raise ValueError(f"too few distinct content words to fit Zipf's law ({len(f)})")
    r = np.unique(np.round(np.logspace(0, np.log10(head), 100)).astype(np.int64))
    y = np.log(f[r - 1])
    best = None
    for q in np.concatenate([np.arange(0.0, 5.0, 0.05), np.arange(5.0, 100.0, 0.5)]):
        x = np.log(r + q)
        slope, icpt = np.polyfit(x, y, 1)
        sse = float(np.sum((y - (icpt + slope * x)) ** 2))
        if best is None or sse < best[0]:
            best = (sse, -float(slope), float(q), float(math.exp(icpt)))
    return best[1], best[2], best[3]


def _fit_tail(freqs: np.ndarray, k: int, zipf: Tuple[float, float, float]) -> Tuple[float, float]:
    """Power law ``f(r) = scale * (r / k) ** -s`` for the ranks after the head ``1..k``.

    Least squares in log-log on log-spaced ranks from ``k / 3`` to the last rank seen at
    least 3 times (rarer words are integer-count noise); ``scale`` is the fitted count at
    rank ``k``, so the tail joins the head smoothly.  With too few such ranks, the local
    slope and value of the Zipf-Mandelbrot fit at ``k``.
    """
    f = np.sort(np.asarray(freqs, dtype=np.float64))[::-1]
    s, q, c = zipf
    lo, hi = max(k // 3, 1), int(np.sum(f >= 3))
    r = np.unique(np.round(np.logspace(np.log10(lo), np.log10(max(hi, lo)), 40)).astype(np.int64))
    if hi > lo and r.shape[0] >= 5:
        slope, icpt = np.polyfit(np.log(r), np.log(f[r - 1]), 1)
        tail_s = float(np.clip(-slope, 0.5, 3.0))
        scale = float(math.exp(icpt + slope * math.log(k)))
    else:
        tail_s = float(np.clip(s * k / (k + q), 0.5, 3.0))
        scale = float(c * (k + q) ** -s)
    return tail_s, max(scale, 1e-9)


def _fit_heaps(token_ids: np.ndarray, decades: float = 1.5) -> Tuple[float, float, List[List[int]]]:
    """Heaps' law ``V(T) = K * T ** beta`` (Heaps 1978), least squares of log V on log T.

    ``token_ids`` is the stream of content tokens in (shuffled) corpus order; ``V(T)`` is the
    number of distinct ids among the first ``T``, read at 40 log-spaced ``T`` over the last
    ``decades`` of the stream.  The local exponent at the end of the data is the one to
    extrapolate with: real curves bend down (a mix of sources with small and large
    vocabularies), and a fit over the whole range overshoots at the end.  ``K`` puts the
    line through the last point, ``(T, V(T))``.  Also returns the measured curve at 25
    log-spaced ``T``, for reference.
    """
    T = len(token_ids)
    if T < 20:
        raise ValueError(f"too few content tokens to fit Heaps' law ({T})")
    _, first = np.unique(token_ids, return_index=True)
    new = np.zeros(T, dtype=np.int64)
    new[first] = 1
    v = np.cumsum(new)
    lo = max(T / 10 ** decades, 10.0)
    t = np.unique(np.round(np.logspace(np.log10(lo), np.log10(T), 40)).astype(np.int64))
    beta = float(np.clip(np.polyfit(np.log(t), np.log(v[t - 1]), 1)[0], 1e-6, 1.0))
    # anchored at the end of the data: the curve is concave in log-log, so the least-squares
    # line overshoots there (by 6% on the default data)
    pts = np.unique(np.round(np.logspace(0, np.log10(T), 25)).astype(np.int64))
    return float(v[-1] / T ** beta), beta, [[int(x), int(v[x - 1])] for x in pts]


def _cluster_overlap(ids: np.ndarray, offsets: np.ndarray, cluster: np.ndarray,
                     max_pair_members: int = 10) -> Tuple[float, float]:
    """Content-word overlap of paraphrases: ``(overlap, jaccard)``.

    ``overlap``: mean, over questions in clusters of >= 2 with >= 1 content word, of the
    fraction of their distinct content words that occur in another member of the cluster.
    ``jaccard``: mean over member pairs (not both empty) of ``|A & B| / |A | B|``; pairs
    among the first ``max_pair_members`` members of a cluster (bounds the cost for big
    clusters).
    """
    members: Dict[int, List[int]] = {}
    for i, c in enumerate(np.asarray(cluster).tolist()):
        if c >= 0:
            members.setdefault(c, []).append(i)
    ov, jac = [], []
    for mem in members.values():
        if len(mem) < 2:
            continue
        sets = [set(ids[offsets[i]:offsets[i + 1]].tolist()) for i in mem]
        in_members: Dict[int, int] = {}  # word -> number of members that have it
        for x in sets:
            for w in x:
                in_members[w] = in_members.get(w, 0) + 1
        for x in sets:
            if x:
                ov.append(sum(in_members[w] >= 2 for w in x) / len(x))
        head = sets[:max_pair_members]
        for a in range(len(head)):
            for b in range(a + 1, len(head)):
                u = len(head[a] | head[b])
                if u:
                    jac.append(len(head[a] & head[b]) / u)
    nan = float("nan")
    return (float(np.mean(ov)) if ov else nan, float(np.mean(jac)) if jac else nan)


def _pair_gap(c: np.ndarray, cluster: np.ndarray) -> float:
    """Mean ``|c_a - c_b|`` over pairs of members of the same cluster."""
    members: Dict[int, List[int]] = {}
    for i, k in enumerate(np.asarray(cluster).tolist()):
        if k >= 0:
            members.setdefault(k, []).append(i)
    tot = cnt = 0
    for mem in members.values():
        if len(mem) >= 2:
            x = np.asarray(c)[mem]
            tot += float(np.abs(x[:, None] - x[None, :]).sum()) / 2
            cnt += len(mem) * (len(mem) - 1) // 2
    return tot / cnt if cnt else float("nan")


def _pair_same_rate(pi: float, s2: float, sizes: np.ndarray) -> float:
    """Expected fraction of member pairs with the same opening when members copy the first
    member's opening with probability ``pi`` (else draw one; ``s2`` = sum of squared opening
    probabilities), averaged over clusters of the given sizes."""
    m = sizes[sizes >= 2].astype(np.float64)
    lead = np.sum(m - 1) * (pi + (1 - pi) * s2)
    both = np.sum((m - 1) * (m - 2) / 2) * (pi * pi + (1 - pi * pi) * s2)
    return float((lead + both) / np.sum(m * (m - 1) / 2))


def fit_profile(
    questions: Sequence[str],
    clusters: Sequence[int],
    *,
    top_words: int = 4000,
    min_opening_count: int = 3,
    seed: int = 0,
    workers: int = 1,
    description: str = "",
    sim_questions: int = 20000,
) -> Profile:
    """Fit a :class:`Profile` to a real question set.

    Parameters
    ----------
    questions : list of str
        The questions (tokenized with the rouge tokenizer of :func:`pysynth.text.tokenize`).
    clusters : list of int
        A paraphrase-cluster id per question; ``-1`` (or any negative) = no cluster.
    top_words : int
        How many of the most frequent real content words (with their counts) the profile
        keeps as the head of the rank law (>= 1); generation uses the fitted tail and
        pseudo-words for later ranks.  About 15 bytes each in the JSON.
    min_opening_count : int
        Openings (first token pairs, then first tokens) seen fewer times are not kept.
    seed : int
        Seeds the corpus shuffle of the Heaps fit and the calibration simulation.
    workers : int
        Tokenizer threads (-1 = all cores).
    description : str
        Free text stored in ``fitted_from``.
    sim_questions : int
        Clustered questions simulated per step of the paraphrase calibration.

    Returns
    -------
    Profile

    Notes
    -----
    Rank law of the body content words: the head's real counts, then a power law
    ``f(r) ~ r ** -s_tail`` (Zipf 1949) fitted by least squares in log-log to log-spaced
    ranks from ``top_words / 3`` to the last rank seen >= 3 times (:func:`_fit_tail`); the
    Zipf-Mandelbrot summary ``f(r) ~ (r + q) ** -s`` (Mandelbrot 1953) uses the ranks
    seen >= 5 times (:func:`_fit_zipf_mandelbrot`).  Heaps' law ``V = K * T ** beta``
    (Heaps 1978): the content-token stream of the shuffled corpus, the slope over its last
    1.5 decades, anchored at its end (:func:`_fit_heaps`).  ``opening_copy_prob`` solves
    :func:`_pair_same_rate` for the real ``same_opening``; ``cluster_tilt``,
    ``shape_copy_prob``, then ``copy_prob`` and ``core_weight`` are found by bisection on
    simulated clusters with common random numbers (``sim_questions`` clustered questions
    with the fitted sizes and shapes).

    Examples
    --------
    >>> qs = ["what is the capital of france", "what is france s capital city",
    ...       "how many people live in paris", "who wrote the little prince"] * 10
    >>> p = fit_profile(qs, [0, 0, -1, -1] * 10, sim_questions=500)
    >>> round(p.clustered_fraction, 2), p.openings["clustered"][0]
    (0.5, ['what is', 20])
    """
    toks, cl = _tokenized(questions, clusters, top_words, min_opening_count, sim_questions, workers)
    n = len(toks)
    in_cl = cl >= 0
    openings, shapes, olen, oname = _openings_and_shapes(toks, in_cl, min_opening_count)
    filler, cw, body_content = _body_words(toks, olen)
    if len(cw) < 3:
        raise ValueError(f"questions have only {len(cw)} distinct content words; a profile needs more")
    ranked = sorted(cw.items(), key=lambda x: (-x[1], x[0]))
    rank_of = {w: r for r, (w, _) in enumerate(ranked)}
    freqs = np.array([k for _, k in ranked], dtype=np.int64)
    zipf = _fit_zipf_mandelbrot(freqs)
    k_head = min(top_words, len(ranked))
    tail_s, tail_scale = _fit_tail(freqs, k_head, zipf)

    lens = np.array([len(b) for b in body_content], dtype=np.int64)
    off = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(lens, out=off[1:])
    flat = np.array([rank_of[w] for b in body_content for w in b], dtype=np.int64)
    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    stream = np.concatenate([flat[off[i]:off[i + 1]] for i in order]) if flat.size else flat
    heaps_k, heaps_beta, heaps_curve = _fit_heaps(stream)

    # clusters
    ids_cl = cl[in_cl]
    if ids_cl.size:
        _, sizes = np.unique(ids_cl, return_counts=True)
    else:
        sizes = np.array([1])
    size_counts = np.bincount(sizes)[1:].tolist()

    overlap, jaccard = _cluster_overlap(flat, off, cl)
    gap = _pair_gap(lens, cl)  # content words per paraphrase: closer than at random
    same_opening, pi = _opening_copy(cl, in_cl, oname, sizes, openings["clustered"])

    profile = Profile(
        clustered_fraction=float(in_cl.mean()),
        cluster_sizes=size_counts,
        openings=openings,
        shapes=shapes,
        filler=sorted(([w, k] for w, k in filler.items()), key=lambda x: (-x[1], x[0])),
        content={
            "zipf_s": round(zipf[0], 6), "zipf_q": round(zipf[1], 6),
            "tail_s": round(tail_s, 6), "tail_scale": round(tail_scale, 6),
            "heaps_k": round(heaps_k, 6), "heaps_beta": round(heaps_beta, 6), "heaps_curve": heaps_curve,
            "cluster_tilt": 0.0,
            "types": len(ranked), "tokens": int(freqs.sum()),
            "words": [w for w, _ in ranked[:k_head]],
            "counts": [int(k) for _, k in ranked[:k_head]],
        },
        paraphrase={"overlap": _r6(overlap), "jaccard": _r6(jaccard), "copy_prob": 1.0, "core_weight": 1.0,
                    "same_opening": _r6(same_opening), "opening_copy_prob": round(pi, 6),
                    "content_gap": _r6(gap), "shape_copy_prob": 0.0},
        fitted_from={"questions": n, "clustered_questions": int(in_cl.sum()),
                     "clusters": int(len(sizes)) if ids_cl.size else 0, "seed": int(seed),
                     "description": description},
    )
    if in_cl.any() and (~in_cl).any():
        # clustered questions use rarer words than the others (ComQA vs VQA in the default data)
        logr = np.log1p(flat.astype(np.float64))
        tok_cl = np.repeat(in_cl, lens)
        shift = float(logr[tok_cl].mean() - logr.mean()) if tok_cl.any() and (~tok_cl).any() else 0.0
        profile.content["cluster_tilt"] = round(_calibrate_tilt(profile, shift, n), 6)
    if not math.isnan(gap):
        profile.paraphrase["shape_copy_prob"] = round(_calibrate_shape_copy(profile, gap, seed, sim_questions), 6)
    if not (math.isnan(overlap) or math.isnan(jaccard)):
        rho, theta = _calibrate_paraphrase(profile, overlap, jaccard, n, seed, sim_questions)
        profile.paraphrase.update(copy_prob=round(rho, 6), core_weight=round(theta, 6))
    profile.validate("fitted profile")
    return profile


def _tokenized(questions, clusters, top_words, min_opening_count, sim_questions,
               workers) -> Tuple[List[List[str]], np.ndarray]:
    """The checked inputs of :func:`fit_profile`: rouge tokens of the questions that have any,
    and their cluster ids (negative ids -> ``-1``)."""
    from pysynth import text
    from pysynth._validate import strings

    questions = strings(questions, "questions")
    try:
        cl = np.asarray(list(clusters), dtype=np.int64)
    except (TypeError, ValueError):
        raise ValueError("clusters must be a sequence of int (-1 = no cluster)") from None
    if cl.shape != (len(questions),):
        raise ValueError(f"clusters must have one id per question ({len(questions)}), got shape {cl.shape}")
    if len(questions) == 0:
        raise ValueError("questions is empty: fit_profile needs a question set")
    for nm, v, lo in (("top_words", top_words, 1), ("min_opening_count", min_opening_count, 1),
                      ("sim_questions", sim_questions, 100)):
        if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < lo:
            raise ValueError(f"{nm} must be an integer >= {lo}, got {v!r}")
    cl = np.where(cl < 0, -1, cl)
    toks = [t for t in text.tokenize(questions, "rouge", workers)]
    keep = np.array([len(t) > 0 for t in toks])
    if not keep.all():  # questions without a single [a-z0-9] token carry no statistics
        toks = [t for t, k in zip(toks, keep) if k]
        cl = cl[keep]
    if len(toks) == 0:
        raise ValueError("questions has no tokens ([a-z0-9] runs) at all")
    return toks, cl


def _openings_and_shapes(toks: List[List[str]], in_cl: np.ndarray, min_opening_count: int):
    """Openings (frequent first pairs, then frequent first tokens) and shapes per group, and
    the opening length and opening of every question."""
    n = len(toks)
    openings: Dict[str, List[list]] = {}
    shapes: Dict[str, List[list]] = {}
    olen = np.zeros(n, dtype=np.int64)
    oname: List[str] = [""] * n
    for g, mask in (("clustered", in_cl), ("unclustered", ~in_cl)):
        idx = np.flatnonzero(mask)
        pairs: Dict[str, int] = {}
        for i in idx:
            t = toks[i]
            if len(t) >= 2:
                k = t[0] + " " + t[1]
                pairs[k] = pairs.get(k, 0) + 1
        two = {k for k, v in pairs.items() if v >= min_opening_count}
        firsts: Dict[str, int] = {}
        for i in idx:
            t = toks[i]
            if not (len(t) >= 2 and t[0] + " " + t[1] in two):
                firsts[t[0]] = firsts.get(t[0], 0) + 1
        one = {k for k, v in firsts.items() if v >= min_opening_count}
        counts: Dict[str, int] = {}
        shape_counts: Dict[Tuple[int, int, int], int] = {}
        for i in idx:
            t = toks[i]
            ol = _split_question(t, two, one)
            olen[i] = ol
            oname[i] = " ".join(t[:ol])
            counts[oname[i]] = counts.get(oname[i], 0) + 1
            c = sum(1 for w in t[ol:] if w not in FUNCTION_WORDS)
            key = (ol, len(t), c)
            shape_counts[key] = shape_counts.get(key, 0) + 1
        if not idx.size:  # a group without questions: a neutral placeholder (never drawn)
            counts, shape_counts = {"": 1}, {(0, 1, 1): 1}
        openings[g] = sorted(([k, v] for k, v in counts.items()), key=lambda x: (-x[1], x[0]))
        shapes[g] = [[a, b, c, k] for (a, b, c), k in sorted(shape_counts.items())]
    return openings, shapes, olen, oname


def _body_words(toks: List[List[str]], olen: np.ndarray):
    """Body tokens (after the opening): function-word counts, content-word counts and the
    content words of each question."""
    filler: Dict[str, int] = {}
    cw: Dict[str, int] = {}
    body_content: List[List[str]] = []
    for i, t in enumerate(toks):
        words = []
        for w in t[olen[i]:]:
            if w in FUNCTION_WORDS:
                filler[w] = filler.get(w, 0) + 1
            else:
                cw[w] = cw.get(w, 0) + 1
                words.append(w)
        body_content.append(words)
    if not filler:
        filler = {"the": 1}
    return filler, cw, body_content


def _opening_copy(cl: np.ndarray, in_cl: np.ndarray, oname: List[str], sizes: np.ndarray,
                  clustered_openings: List[list]) -> Tuple[float, float]:
    """``(same_opening, opening_copy_prob)``: the same-opening rate over member pairs, then the
    copy probability that reproduces it (bisection on :func:`_pair_same_rate`)."""
    same: Dict[Tuple[int, str], int] = {}
    for i in np.flatnonzero(in_cl):
        key = (int(cl[i]), oname[i])
        same[key] = same.get(key, 0) + 1
    pair_same = sum(k * (k - 1) // 2 for k in same.values())
    pair_all = int(sum(int(m) * (int(m) - 1) // 2 for m in sizes)) if in_cl.any() else 0
    same_opening = pair_same / pair_all if pair_all else float("nan")
    po = np.array([k for _, k in clustered_openings], dtype=np.float64)
    s2 = float(np.sum((po / po.sum()) ** 2))
    pi = 0.0
    if pair_all and same_opening > _pair_same_rate(0.0, s2, sizes):
        lo_, hi_ = 0.0, 1.0
        for _ in range(50):
            mid = (lo_ + hi_) / 2
            lo_, hi_ = (mid, hi_) if _pair_same_rate(mid, s2, sizes) < same_opening else (lo_, mid)
        pi = (lo_ + hi_) / 2
    return same_opening, pi


def _r6(x: float) -> float:
    return 0.0 if math.isnan(x) else round(x, 6)


def _calibrate_tilt(profile: Profile, shift: float, n_real: int) -> float:
    """Tilt ``g`` of the rank law of clustered questions (weights times ``r ** g``) so that
    ``(1 - f) * (E_g[log r] - E_0[log r])`` equals the real ``shift``: the mean log rank of
    clustered content words minus that of all content words (``f`` = clustered fraction)."""
    model = _Model(profile)
    v = model.support(n_real)
    logr = np.log(np.arange(1, v + 1, dtype=np.float64))
    f = profile.clustered_fraction

    def gain(g: float) -> float:
        w0, wg = model._tilted(v, 0.0), model._tilted(v, g)
        return (1 - f) * (float(wg @ logr / wg.sum()) - float(w0 @ logr / w0.sum()))

    lo, hi = -1.0, 1.0
    if shift <= gain(lo):
        return lo
    if shift >= gain(hi):
        return hi
    for _ in range(40):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if gain(mid) < shift else (lo, mid)
    return (lo + hi) / 2


def _calibrate_shape_copy(profile: Profile, gap: float, seed: int, n_sim: int) -> float:
    """``shape_copy_prob`` whose simulated clusters have the real mean ``|c_a - c_b|`` of
    paraphrase pairs (bisection; common random numbers; 0 or 1 when out of reach)."""
    model = _Model(profile)

    def stat(x: float) -> float:
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(6,)))
        plan = model.plan_clusters(n_sim, rng, None, shape_copy=x)
        return _pair_gap(plan["c"], plan["cluster"])

    if stat(0.0) <= gap:
        return 0.0
    if stat(1.0) >= gap:
        return 1.0
    lo, hi = 0.0, 1.0
    for _ in range(12):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if stat(mid) > gap else (lo, mid)
    return (lo + hi) / 2


def _calibrate_paraphrase(profile: Profile, overlap: float, jaccard: float, n_real: int, seed: int,
                          n_sim: int) -> Tuple[float, float]:
    """``(copy_prob, core_weight)`` whose simulated clusters have the real overlap and Jaccard.

    The simulation draws ``n_sim`` clustered questions with the profile's cluster sizes and
    shapes and the Zipf support of a corpus of ``n_real`` questions, with the same random
    numbers for every candidate (common random numbers), so both statistics move
    monotonically with the parameters.  Outer bisection: ``core_weight`` (log scale) on the
    Jaccard; inner: ``copy_prob`` on the overlap.  Targets out of reach give the boundary.
    """
    model = _Model(profile)
    cdf = model.zipf_cdf(model.support(n_real), model.tilt)
    plan = model.plan_clusters(n_sim, np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(7,))), cdf)
    rows = np.arange(n_sim)

    def stats(rho: float, theta: float) -> Tuple[float, float]:
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(8,)))
        words, off = model.cluster_content(plan, rows, rho, theta, cdf, rng)
        return _cluster_overlap(words, off, plan["cluster"])

    def solve_rho(theta: float) -> Tuple[float, float]:
        ov, jac = stats(1.0, theta)
        if ov <= overlap:  # out of reach: copy everything
            return 1.0, jac
        lo, hi = 0.0, 1.0
        for _ in range(12):  # 2**-12: below the simulation noise
            mid = (lo + hi) / 2
            ov, jac = stats(mid, theta)
            lo, hi = (mid, hi) if ov < overlap else (lo, mid)
        rho = (lo + hi) / 2
        return rho, stats(rho, theta)[1]

    rho, jac = solve_rho(1.0)
    if jac >= jaccard:  # uniform subsets already share enough
        return rho, 1.0
    rho_0, jac_0 = solve_rho(1e-4)
    if jac_0 <= jaccard:  # even a shared core is not enough
        return rho_0, 1e-4
    lo, hi = math.log(1e-4), 0.0  # log core_weight; Jaccard falls as it grows
    for _ in range(10):
        mid = (lo + hi) / 2
        rho, jac = solve_rho(math.exp(mid))
        lo, hi = (mid, hi) if jac > jaccard else (lo, mid)
    theta = math.exp((lo + hi) / 2)
    return solve_rho(theta)[0], theta
