"""Generating corpora from a :class:`~pysynth.data.synthetic.Profile` (the model is described
in :mod:`pysynth.data.synthetic`)."""
from __future__ import annotations

import math
from typing import Any, Dict, Iterator, List, Optional, Tuple

import numpy as np

from pysynth.data.synthetic.profile import FUNCTION_WORDS, GROUPS, Profile, _as_profile

# Clitic tokens are printed attached with an apostrophe ("what's", "don't", "you'll") when
# the previous token allows it; the rouge tokenizer splits them back, so tokens are unchanged.
_NEG_STEMS = frozenset("don doesn didn isn aren wasn weren couldn wouldn shouldn won hasn haven hadn can".split())
_PRONOUNS = frozenset("i you he she it we they who what that there".split())
_S_AFTER_FUNCTION = frozenset("what who where when how why that there it he she here".split())

# questions per generation chunk: bounds memory; each chunk has its own random stream, so
# changing it changes the corpora of a seed
_CHUNK = 1 << 16
_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]  # 70 CV syllables
_PSEUDO_MIN_SYLLABLES = 3  # 6+ letters: no clash with short real words or clitics
_V_CAP = 1 << 24  # largest Zipf support (ranks); memory ~ 16 bytes per rank


def _pseudo_words(count: int, avoid: set) -> Tuple[np.ndarray, np.ndarray]:
    """``count`` distinct pseudo-words as (bytes buffer, lengths): syllable strings in a
    bijective numbering (3 syllables, then 4, ...), skipping any string in ``avoid``."""
    syl = np.frombuffer("".join(_SYLLABLES).encode(), dtype=np.uint8).reshape(-1, 2)
    base = len(_SYLLABLES)
    bufs, lens_out, got = [], [], 0
    k, start = _PSEUDO_MIN_SYLLABLES, 0
    while got < count:
        cap = base ** k
        need = min(cap - start, count - got + 64 + (count - got) // 100)
        i = np.arange(start, start + need, dtype=np.int64)
        digits = np.empty((need, k), dtype=np.int64)
        for j in range(k):
            digits[:, j] = i % base
            i //= base
        words = syl[digits].reshape(need, 2 * k)  # (need, 2k) letters
        strings = words.view(f"S{2 * k}").ravel()
        ok = ~np.isin(strings, np.array(sorted(avoid), dtype=f"S{2 * k}")) if avoid else np.ones(need, bool)
        words = words[ok][: count - got]
        bufs.append(words.ravel())
        lens_out.append(np.full(words.shape[0], 2 * k, dtype=np.int64))
        got += words.shape[0]
        start += need
        if start >= cap:
            k, start = k + 1, 0
    return np.concatenate(bufs), np.concatenate(lens_out)


class _Model:
    """A profile turned into sampling tables."""

    def __init__(self, profile: Profile):
        self.p = profile
        c = profile.content
        self.head = np.asarray(c["counts"], dtype=np.float64)
        self.tail_s, self.tail_scale = float(c["tail_s"]), float(c["tail_scale"])
        self.tilt = float(c["cluster_tilt"])
        self.fit_tokens = float(c["tokens"])
        self.heaps_k, self.heaps_beta = float(c["heaps_k"]), float(c["heaps_beta"])
        self.real_words: List[str] = list(c["words"])
        # fixed vocabulary: function words and opening tokens
        fixed: Dict[str, int] = {}
        for w, _ in profile.filler:
            fixed.setdefault(w, len(fixed))
        self.open_tok: Dict[str, np.ndarray] = {}
        self.open_len: Dict[str, np.ndarray] = {}
        self.open_cdf: Dict[str, np.ndarray] = {}
        self.shape_cdf: Dict[Tuple[str, int], np.ndarray] = {}
        self.shape_lc: Dict[Tuple[str, int], np.ndarray] = {}
        for g in GROUPS:
            ops = profile.openings[g]
            tok = np.full((len(ops), 2), -1, dtype=np.int64)
            ln = np.zeros(len(ops), dtype=np.int64)
            for j, (o, _) in enumerate(ops):
                for k, w in enumerate(o.split()):
                    tok[j, k] = fixed.setdefault(w, len(fixed))
                ln[j] = len(o.split())
            self.open_tok[g], self.open_len[g] = tok, ln
            self.open_cdf[g] = np.cumsum(np.array([k for _, k in ops], dtype=np.float64))
            for ol in (0, 1, 2):
                rows = [r for r in profile.shapes[g] if r[0] == ol and r[3] > 0]
                if rows:
                    self.shape_cdf[(g, ol)] = np.cumsum(np.array([r[3] for r in rows], dtype=np.float64))
                    self.shape_lc[(g, ol)] = np.array([[r[1], r[2]] for r in rows], dtype=np.int64)
        self.fixed_words = list(fixed)
        self.n_fixed = len(fixed)
        self.filler_ids = np.array([fixed[w] for w, _ in profile.filler], dtype=np.int64)
        self.filler_cdf = np.cumsum(np.array([k for _, k in profile.filler], dtype=np.float64))
        sizes = np.asarray(profile.cluster_sizes, dtype=np.float64)
        self.size_cdf = np.cumsum(sizes)
        self.mean_size = float(np.sum(sizes * np.arange(1, len(sizes) + 1)) / sizes.sum())
        # expected content words per question, per group (for Heaps' T)
        self.mean_c = {}
        for g in GROUPS:
            rows = np.array([[r[2], r[3]] for r in profile.shapes[g]], dtype=np.float64)
            self.mean_c[g] = float(np.sum(rows[:, 0] * rows[:, 1]) / max(rows[:, 1].sum(), 1.0))
        self._w: Optional[np.ndarray] = None

    # ---- Zipf support from Heaps' law
    def _weights(self, v: int) -> np.ndarray:
        """Unnormalized probabilities of ranks ``1..v``: the real counts of the head, then the
        fitted power-law tail (new words: the part Heaps' law says grows with the corpus)."""
        if self._w is None or self._w.shape[0] < v:
            k = self.head.shape[0]
            r = np.arange(k + 1, max(v, k) + 1, dtype=np.float64)
            self._w = np.concatenate([self.head, self.tail_scale * (r / k) ** -self.tail_s])
        return self._w[:v]

    def _tilted(self, v: int, tilt: float) -> np.ndarray:
        w = self._weights(v)
        return w * np.arange(1, v + 1, dtype=np.float64) ** tilt if tilt else w

    def expected_distinct(self, v: int, draws: float, draws_cl: float = 0.0) -> float:
        """E[number of distinct ranks] among ``draws`` i.i.d. draws from the law on ``v``
        ranks and ``draws_cl`` from its cluster-tilted version."""
        w = self._weights(v)
        lam = draws * w / w.sum()
        if draws_cl:
            wt = self._tilted(v, self.tilt)
            lam = lam + draws_cl * wt / wt.sum()
        return float(np.sum(-np.expm1(-lam)))

    def support(self, n: int) -> int:
        """Zipf support for a corpus of ``n`` questions.

        Beyond the size of the fitted data, the support whose expected number of distinct
        content words, over the corpus' independent draws, is Heaps' ``K * T ** beta``; for
        corpora up to that size, the support fitted at that size (the fitted law, sampled:
        a smaller corpus is like a subsample of the data).
        """
        f = self.p.clustered_fraction
        per_q = f * self.mean_c["clustered"] + (1 - f) * self.mean_c["unclustered"]
        if per_q <= 0:
            return self.head.shape[0]
        n = max(n, int(math.ceil(self.fit_tokens / per_q)))
        t = n * per_q
        target = max(1.0, min(self.heaps_k * t ** self.heaps_beta, t))
        rho = self.p.paraphrase["copy_prob"]
        # independent draws: fresh words, plus the topic words of clusters (about one topic
        # of the longest member's length per cluster; the mean length is a slight underestimate)
        draws = max(n * (1 - f) * self.mean_c["unclustered"], 1.0)
        draws_cl = n * f * self.mean_c["clustered"] * ((1 - rho) + rho / self.mean_size)
        lo = max(int(math.ceil(target)), 1)
        if self.expected_distinct(lo, draws, draws_cl) >= target:
            return lo
        # a profile whose Heaps line asks for more distinct words than its law can give with
        # these draws: the support stops growing at 64 x the target
        cap = min(_V_CAP, max(self.head.shape[0], int(64 * target) + 1))
        hi = lo
        while self.expected_distinct(hi, draws, draws_cl) < target:
            if hi >= cap:
                return cap
            lo, hi = hi, min(hi * 2, cap)
        while hi - lo > max(1, lo // 1000):  # 0.1%: well inside the Heaps fit's error
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if self.expected_distinct(mid, draws, draws_cl) < target else (lo, mid)
        return hi

    def zipf_cdf(self, v: int, tilt: float = 0.0) -> np.ndarray:
        """Cumulative weights of ranks ``1..v``, times ``r ** tilt`` (clustered questions)."""
        return np.cumsum(self._tilted(v, tilt))

    @staticmethod
    def draw(cdf: np.ndarray, size: int, rng: np.random.Generator) -> np.ndarray:
        u = rng.random(size) * cdf[-1]
        return np.minimum(np.searchsorted(cdf, u, side="right"), cdf.shape[0] - 1)

    # ---- plan: who is in which cluster, openings, lengths, topics
    def _openings_and_shapes(self, g: str, n: int, rng, copy_from: Optional[np.ndarray] = None,
                             shape_copy: Optional[float] = None):
        """Opening, length and content count of ``n`` questions of group ``g``.  With
        ``copy_from`` (index of the cluster's first member, -1 for the first member itself),
        members copy the first member's opening (``opening_copy_prob``) and, independently,
        its content count and filler count (``shape_copy_prob``): paraphrases have similar
        lengths."""
        op = self.draw(self.open_cdf[g], n, rng)
        if copy_from is not None:  # paraphrases share the first member's opening sometimes
            pi = self.p.paraphrase["opening_copy_prob"]
            cp = (copy_from >= 0) & (rng.random(n) < pi)
            op[cp] = op[copy_from[cp]]
        ol = self.open_len[g][op]
        length = np.empty(n, dtype=np.int64)
        c = np.empty(n, dtype=np.int64)
        for k in (0, 1, 2):
            m = np.flatnonzero(ol == k)
            if m.size:
                j = self.draw(self.shape_cdf[(g, k)], m.size, rng)
                length[m], c[m] = self.shape_lc[(g, k)][j].T
        if copy_from is not None:
            ps = self.p.paraphrase["shape_copy_prob"] if shape_copy is None else shape_copy
            cp = (copy_from >= 0) & (rng.random(n) < ps)
            lead = copy_from[cp]
            c[cp] = c[lead]
            length[cp] = np.maximum(ol[cp] + length[lead] - ol[lead], 1)  # never empty
        return op, length, c

    def plan_clusters(self, n_cl: int, rng: np.random.Generator, cdf: Optional[np.ndarray],
                      shape_copy: Optional[float] = None) -> dict:
        """Clustered questions in cluster order: sizes, openings, shapes, topics."""
        if n_cl == 0:
            z = np.zeros(0, dtype=np.int64)
            return {"cluster": z, "op": z, "L": z, "c": z, "topic_off": np.zeros(1, np.int64),
                    "topics": z, "sizes": z}
        parts, total = [], 0
        while total < n_cl:
            k = int((n_cl - total) / self.mean_size * 1.1) + 16
            sz = self.draw(self.size_cdf, k, rng) + 1
            parts.append(sz)
            total += int(sz.sum())
        sizes = np.concatenate(parts)
        cum = np.cumsum(sizes)
        k = int(np.searchsorted(cum, n_cl)) + 1
        sizes = sizes[:k].copy()
        sizes[-1] -= int(cum[k - 1] - n_cl)
        cluster = np.repeat(np.arange(k, dtype=np.int64), sizes)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        leader = np.full(n_cl, -1, dtype=np.int64)
        not_first = np.ones(n_cl, dtype=bool)
        not_first[starts] = False
        leader[not_first] = starts[cluster[not_first]]
        op, length, c = self._openings_and_shapes("clustered", n_cl, rng, leader, shape_copy)
        t = np.maximum.reduceat(c, starts)  # a topic as long as the longest member needs
        topic_off = np.zeros(k + 1, dtype=np.int64)
        np.cumsum(t, out=topic_off[1:])
        topics = self.draw(cdf, int(topic_off[-1]), rng) if cdf is not None else np.zeros(0, np.int64)
        return {"cluster": cluster, "op": op, "L": length, "c": c, "topic_off": topic_off,
                "topics": topics, "sizes": sizes}

    def cluster_content(self, plan: dict, rows: np.ndarray, rho: float, theta: float, cdf: np.ndarray,
                        rng: np.random.Generator) -> Tuple[np.ndarray, np.ndarray]:
        """Content ranks of clustered questions ``rows`` (indices into the plan), in order.

        Each question keeps ``c`` of its cluster's topic words, in topic order, chosen by
        weighted sampling without replacement with weight ``theta ** j`` for topic position
        ``j`` (exponential races, Efraimidis & Spirakis 2006: ``theta = 1`` a uniform subset,
        ``theta -> 0`` the first ``c`` words: a core all paraphrases share), then replaces
        each kept word by a fresh Zipf draw with probability ``1 - rho``.
        """
        c = plan["c"][rows]
        cl = plan["cluster"][rows]
        t_start = plan["topic_off"][cl]
        t = plan["topic_off"][cl + 1] - t_start
        m = rows.shape[0]
        off = np.zeros(m + 1, dtype=np.int64)
        np.cumsum(c, out=off[1:])
        # (question, topic position) pairs; keep the c with the smallest race times
        qi = np.repeat(np.arange(m, dtype=np.int64), t)
        pos = np.arange(qi.shape[0], dtype=np.int64) - np.repeat(np.cumsum(t) - t, t)
        race = rng.standard_exponential(qi.shape[0]) * np.power(max(theta, 1e-6), -pos.astype(np.float64))
        order = np.lexsort((race, qi))
        rank = np.empty(qi.shape[0], dtype=np.int64)
        rank[order] = np.arange(qi.shape[0]) - np.repeat(np.cumsum(t) - t, t)
        keep = rank < c[qi]
        words = plan["topics"][t_start[qi[keep]] + pos[keep]]  # topic order kept
        fresh = self.draw(cdf, words.shape[0], rng)
        swap = rng.random(words.shape[0]) >= rho
        words[swap] = fresh[swap]
        return words, off


def _rank_within(group: np.ndarray, keys: np.ndarray, n_groups: int) -> np.ndarray:
    """Rank (0-based) of each key among the keys of its group; ``group`` is sorted."""
    if group.size == 0:
        return np.zeros(0, dtype=np.int64)
    order = np.argsort(group + keys * 0.999, kind="stable")  # keys in [0, 1): stays in its group
    starts = np.searchsorted(group, np.arange(n_groups))
    rank = np.empty(group.shape[0], dtype=np.int64)
    rank[order] = np.arange(group.shape[0], dtype=np.int64) - starts[group[order]]
    return rank


def _check_n(n: Any) -> int:
    if isinstance(n, bool) or not isinstance(n, (int, np.integer)):
        raise ValueError(f"n must be a positive integer (number of questions), got {n!r}")
    if n < 1:
        raise ValueError(f"n must be a positive integer (number of questions), got {n}")
    return int(n)


def _check_seed(seed: Any) -> int:
    if isinstance(seed, bool) or not isinstance(seed, (int, np.integer)) or seed < 0:
        raise ValueError(f"seed must be a non-negative integer, got {seed!r}")
    return int(seed)


class _Corpus:
    """The global plan of one corpus and its word table; chunks are generated from it."""

    def __init__(self, n: int, seed: int, profile: Profile):
        self.m = m = _Model(profile)
        self.n, self.seed = n, seed
        self.v = m.support(n)
        self.cdf = m.zipf_cdf(self.v)
        self.cdf_cl = m.zipf_cdf(self.v, m.tilt)
        rng = np.random.default_rng(np.random.SeedSequence(seed, spawn_key=(0,)))
        n_cl = int(round(n * profile.clustered_fraction))
        plan = m.plan_clusters(n_cl, rng, self.cdf_cl)
        op_u, len_u, c_u = m._openings_and_shapes("unclustered", n - n_cl, rng)
        perm = rng.permutation(n)  # output position -> question (clustered first, then the rest)
        self.plan = plan
        self.is_cl = perm < n_cl
        self.row = np.where(self.is_cl, perm, perm - n_cl)  # index within its group
        self.L = np.concatenate([plan["L"], len_u])[perm]
        self.c = np.concatenate([plan["c"], c_u])[perm]
        # openings as token ids (-1 padded) and lengths, per output position
        otok = np.concatenate([m.open_tok["clustered"][plan["op"]], m.open_tok["unclustered"][op_u]])
        olen = np.concatenate([m.open_len["clustered"][plan["op"]], m.open_len["unclustered"][op_u]])
        self.otok, self.olen = otok[perm], olen[perm]
        # cluster ids renumbered by first appearance in the output
        cid = np.full(n, -1, dtype=np.int64)
        if n_cl:
            raw = plan["cluster"][perm[self.is_cl]]
            uniq, first = np.unique(raw, return_index=True)
            new = np.empty(uniq.shape[0], dtype=np.int64)
            new[np.argsort(first, kind="stable")] = np.arange(uniq.shape[0])
            cid[self.is_cl] = new[np.searchsorted(uniq, raw)]
        self.cluster_ids = cid
        self._table()

    def _table(self) -> None:
        """Byte table of every token id: fixed words, real content words, pseudo-words."""
        m = self.m
        n_real = min(len(m.real_words), self.v)
        known = m.fixed_words + m.real_words[:n_real]
        avoid = {w.encode() for w in set(m.fixed_words) | set(m.real_words)}
        pbuf, plen = _pseudo_words(self.v - n_real, avoid) if self.v > n_real else (
            np.zeros(0, np.uint8), np.zeros(0, np.int64))
        kbuf = np.frombuffer("".join(known).encode("ascii"), dtype=np.uint8)
        klen = np.array([len(w) for w in known], dtype=np.int64)
        self.tab = np.concatenate([kbuf, pbuf])
        self.tab_len = np.concatenate([klen, plen])
        self.tab_off = np.zeros(self.tab_len.shape[0], dtype=np.int64)
        np.cumsum(self.tab_len[:-1], out=self.tab_off[1:])
        nf = m.n_fixed
        total = self.tab_len.shape[0]
        # clitic attachment rules, per token id (content ids: never clitics)
        fw = m.fixed_words
        self.clitic = np.zeros(total, dtype=np.int8)
        self.neg = np.zeros(total, dtype=bool)
        self.pron = np.zeros(total, dtype=bool)
        self.s_ok = np.ones(total, dtype=bool)  # "'s" after content words and a few others
        for i, w in enumerate(fw):
            self.clitic[i] = {"s": 1, "t": 2, "ll": 3, "re": 3, "ve": 3, "m": 3, "d": 3}.get(w, 0)
            self.neg[i] = w in _NEG_STEMS
            self.pron[i] = w in _PRONOUNS
            self.s_ok[i] = (w in _S_AFTER_FUNCTION) or (w not in FUNCTION_WORDS)
        self.content_base = nf

    def chunk(self, j: int) -> Tuple[List[str], np.ndarray]:
        a, b = j * _CHUNK, min((j + 1) * _CHUNK, self.n)
        m = self.m
        rng = np.random.default_rng(np.random.SeedSequence(self.seed, spawn_key=(1, j)))
        nq = b - a
        is_cl, row = self.is_cl[a:b], self.row[a:b]
        L, c = self.L[a:b], self.c[a:b]
        g_tok, ol = self.otok[a:b], self.olen[a:b]
        # content words, question by question (clustered from topics, others fresh)
        c_off = np.zeros(nq + 1, dtype=np.int64)
        np.cumsum(c, out=c_off[1:])
        content = np.empty(int(c_off[-1]), dtype=np.int64)
        slot_cl = is_cl[np.repeat(np.arange(nq), c)]
        content[~slot_cl] = m.draw(self.cdf, int(np.count_nonzero(~slot_cl)), rng)
        cl_idx = np.flatnonzero(is_cl)
        if cl_idx.size:
            content[slot_cl], _ = m.cluster_content(self.plan, row[cl_idx], m.p.paraphrase["copy_prob"],
                                                    m.p.paraphrase["core_weight"], self.cdf_cl, rng)
        # body: c content slots at random positions among L - ol, function words elsewhere
        body = L - ol
        bq = np.repeat(np.arange(nq, dtype=np.int64), body)
        is_content = _rank_within(bq, rng.random(bq.shape[0]), nq) < c[bq]
        body_ids = m.filler_ids[m.draw(m.filler_cdf, bq.shape[0], rng)]
        body_ids[is_content] = content + self.content_base
        # tokens: opening then body
        q_off = np.zeros(nq + 1, dtype=np.int64)
        np.cumsum(L, out=q_off[1:])
        toks = np.empty(int(q_off[-1]), dtype=np.int64)
        body_start = q_off[:-1] + ol
        toks[np.arange(bq.shape[0]) + np.repeat(body_start - (np.cumsum(body) - body), body)] = body_ids
        for k in (0, 1):
            h = np.flatnonzero(ol > k)
            toks[q_off[h] + k] = g_tok[h, k]
        return self._render(toks, q_off), self.cluster_ids[a:b]

    def _render(self, toks: np.ndarray, q_off: np.ndarray) -> List[str]:
        """Token ids -> strings (questions are never empty): one ragged byte gather per chunk."""
        starts, sizes = q_off[:-1], np.diff(q_off)
        first = np.zeros(toks.shape[0], dtype=bool)
        first[starts] = True
        prev = np.roll(toks, 1)
        cl = self.clitic[toks]
        attach = ~first & (((cl == 1) & self.s_ok[prev]) | ((cl == 2) & self.neg[prev])
                           | ((cl == 3) & self.pron[prev]))
        wl = self.tab_len[toks]
        tl = wl + ~first  # a separator before every token but the first
        qlen = np.add.reduceat(tl, starts) + 2  # "?\n"
        qstart = np.cumsum(qlen) - qlen
        out = np.empty(int(qlen.sum()), dtype=np.uint8)
        # output offset of each token (its separator included): the question's start plus
        # the bytes of the question's earlier tokens
        excl = np.cumsum(tl) - tl
        tstart = excl + np.repeat(qstart - excl[starts], sizes)
        word = np.ones(out.shape[0], dtype=bool)  # bytes that come from the word table
        seps = tstart[~first]
        out[seps] = np.where(attach[~first], ord("'"), ord(" "))
        word[seps] = False
        end = qstart + qlen
        word[end - 2] = False
        word[end - 1] = False
        # word bytes appear in the output in token order: one ragged gather from the table
        wl_excl = np.cumsum(wl) - wl
        out[word] = self.tab[np.arange(int(wl.sum()), dtype=np.int64) + np.repeat(self.tab_off[toks] - wl_excl, wl)]
        out[end - 2] = ord("?")
        out[end - 1] = ord("\n")
        f = out[qstart]
        lower = (f >= ord("a")) & (f <= ord("z"))
        out[qstart[lower]] = f[lower] - 32  # capitalize the first letter
        return out.tobytes().decode("ascii").split("\n")[:-1]


def iter_corpus(n: int, seed: int = 0, profile: Any = None) -> Iterator[Tuple[List[str], np.ndarray]]:
    """Chunks ``(questions, cluster_ids)`` of the corpus :func:`generate_corpus` returns.

    Memory stays bounded by the chunk (65,536 questions) plus ~60 bytes per question of plan.
    """
    n = _check_n(n)
    seed = _check_seed(seed)
    corpus = _Corpus(n, seed, _as_profile(profile))
    for j in range((n + _CHUNK - 1) // _CHUNK):
        yield corpus.chunk(j)


def generate_corpus(n: int, seed: int = 0, profile: Any = None) -> Tuple[List[str], List[int]]:
    """Generate ``n`` synthetic questions with paraphrase clusters.

    Parameters
    ----------
    n : int
        Number of questions (>= 1).
    seed : int
        Seed (>= 0) of the numpy ``Generator`` streams; the output is a function of
        ``(n, seed, profile)`` only.
    profile : Profile, dict, path or None
        The fitted statistics (default: the shipped :func:`default_profile`).

    Returns
    -------
    questions : list of str
        Capitalized, ``?``-terminated; their rouge tokens follow the profile.
    cluster_ids : list of int
        Paraphrase cluster of each question, ``-1`` for none (in the profile's proportion);
        ids are numbered by first appearance.

    Raises
    ------
    ValueError
        ``n`` is not a positive integer, ``seed`` is negative, or the profile is malformed.
    TypeError
        ``profile`` is of another type.

    Notes
    -----
    Content words follow the profile's Zipf-Mandelbrot law with a support that grows with
    ``n`` by Heaps' law (see the module docstring).  3.17M questions take well under a
    minute on one core (``bench/RESULTS_synthetic.md``).

    Examples
    --------
    >>> qs, cl = generate_corpus(1000, seed=0)
    >>> len(qs), all(q.endswith("?") for q in qs), min(cl) == -1
    (1000, True, True)
    """
    questions: List[str] = []
    clusters: List[np.ndarray] = []
    for qs, cl in iter_corpus(n, seed, profile):
        questions.extend(qs)
        clusters.append(cl)
    return questions, np.concatenate(clusters).tolist()
