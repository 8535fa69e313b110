"""Synthetic question corpora fitted to real question sets, for K2Q pipeline runs at scale.

The keyword-to-question pipeline of Ding & Balog (2018) -- keyword generation (Sect. 3.1),
the SDM keyword query filter (Sect. 3.2) and the training data filter (Sect. 6.2) -- runs on
WikiAnswers, millions of questions in paraphrase clusters (Sect. 5).  The shared data hold
tens of thousands of real questions, so scale measurements need generated corpora whose
statistics match the real ones.  This module fits a small :class:`Profile` to a real question
set and generates corpora of any size from it.

What the profile holds (all fitted by :func:`fit_profile`; tokens are those of
:func:`pysynth.text.tokenize` with ``tokenizer="rouge"``, the tokenizer of
:func:`pysynth.text.build_corpus`), separately for questions in and out of clusters where
it matters:

* the *opening* of a question: its first two tokens when that pair is frequent ("what is",
  "how many"), else its first token when that is frequent, else nothing;
* the joint distribution of question length ``L`` and the number of content words ``c`` in
  the *body* (the tokens after the opening), given the opening's length;
* the unigram distribution of function words (:data:`FUNCTION_WORDS`) in the body;
* content words by frequency rank ``r``: the real counts of the ``top_words`` most frequent
  words (the head), then a power-law tail ``f(r) ~ r ** -s_tail`` fitted to the ranks
  around and after the head (Zipf 1949); a Zipf-Mandelbrot law ``f(r) ~ (r + q) ** -s``
  (Mandelbrot 1953) fitted to all frequent words is kept as a summary.  Heaps' law
  ``V = K * T ** beta`` (Heaps 1978), fitted on the last 1.5 decades of the real
  vocabulary-growth curve, gives the number ``V`` of distinct content words among ``T``
  content tokens.  Generation extrapolates: for a corpus larger than the data, the tail is
  cut at the rank where the expected number of distinct words equals Heaps' ``V`` at that
  corpus' ``T`` (so 3.17M questions get the vocabulary Heaps' law predicts, not the real
  one).  Ranks after the real words get deterministic pronounceable pseudo-words
  ("kelumo");
* paraphrase clusters: the fraction of questions in a cluster, the cluster-size
  distribution, and four probabilities calibrated so that generated clusters reproduce
  the real ones: paraphrases share their opening (``opening_copy_prob``, solved in closed
  form), have similar content-word counts (``shape_copy_prob``), and share content words
  (``copy_prob`` and ``core_weight``, matched by simulation to the fraction of a
  paraphrase's words found in its cluster-mates and to the pairwise Jaccard overlap).
  Clustered questions draw from the rank law tilted by ``r ** cluster_tilt``
  (``cluster_tilt``: their words are rarer than the others', fitted to the mean log rank).

Generation: every cluster gets a *topic*, a list of content words drawn from the rank law,
as long as its longest member needs.  A member keeps ``c`` topic words in topic order,
chosen with weights ``core_weight ** position`` (a small weight: a core that all
paraphrases share), and replaces each by a fresh draw with probability ``1 - copy_prob``;
questions outside clusters draw all content words fresh.  Function words fill the other
body positions at random.  Questions are shuffled, so clusters interleave.  The text is
word salad with realistic statistics: nothing here models syntax beyond openings.

The default profile (``synthetic_profile.json`` beside this module) is fitted by
:func:`pysynth.k2q.data.fit_default_profile` from the shared data (:func:`pysynth.k2q.data.load_question_set`
without the T0 clusters): ComQA/WikiAnswers clusters, query-wellformedness, MQR, SQuAD 2.0
and VQA questions.  Its cluster sizes are ComQA's (mean about 1.6 questions per cluster);
the paper's WikiAnswers has 26 per cluster.  Fit a profile to other data for other shapes.

Examples
--------
>>> from pysynth.data.synthetic import generate_corpus
>>> questions, clusters = generate_corpus(5, seed=1)
>>> len(questions), len(clusters)
(5, 5)
>>> generate_corpus(5, seed=1) == (questions, clusters)
True
"""
from __future__ import annotations

import gzip
import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, Tuple, Union

import numpy as np

from pysynth.io import atomic_write

__all__ = [
    "Profile",
    "fit_profile",
    "default_profile",
    "generate_corpus",
    "iter_corpus",
    "write_corpus",
    "FUNCTION_WORDS",
    "PROFILE_FORMAT",
    "PROFILE_VERSION",
]

PROFILE_FORMAT = "pysynth.data.synthetic_profile"
PROFILE_VERSION = 2  # 2: the "format" + "format_version" keys of every pysynth format
DEFAULT_PROFILE_PATH = Path(__file__).resolve().with_name("synthetic_profile.json")
GROUPS = ("clustered", "unclustered")

#: Function words, as rouge tokens ("don't" -> "don", "t"): question words, auxiliaries,
#: pronouns, determiners, prepositions, conjunctions, clitics.  Every other token is a
#: content word.
FUNCTION_WORDS = frozenset("""
what who whom whose which where when why how whats whos
is are was were be been being am do does did done doing can could should would will shall
may might must have has had having get gets got
the a an of to in on for at by with from about as into onto over under than then so if or
and but nor not no yes any some many much more most very too also just
i me my mine you your yours he him his she her hers it its they them their theirs we us our
ours this that these those there here such
s t d ll re ve m don doesn didn isn aren wasn weren couldn wouldn shouldn won hasn haven hadn
up out off down after before during between through against without within along around
other another each every all both either neither same own only
""".split())

# Clitic tokens are printed attached with an apostrophe ("what's", "don't", "you'll") when
# the previous token allows it; the rouge tokenizer splits them back, so tokens are unchanged.
_NEG_STEMS = frozenset("don doesn didn isn aren wasn weren couldn wouldn shouldn won hasn haven hadn can".split())
_PRONOUNS = frozenset("i you he she it we they who what that there".split())
_S_AFTER_FUNCTION = frozenset("what who where when how why that there it he she here".split())

_TOKEN_RE = re.compile(r"^[a-z0-9]+$")
# questions per generation chunk: bounds memory; each chunk has its own random stream, so
# changing it changes the corpora of a seed
_CHUNK = 1 << 16
_SYLLABLES = [c + v for c in "bdfgklmnprstvz" for v in "aeiou"]  # 70 CV syllables
_PSEUDO_MIN_SYLLABLES = 3  # 6+ letters: no clash with short real words or clitics
_V_CAP = 1 << 24  # largest Zipf support (ranks); memory ~ 16 bytes per rank

PathLike = Union[str, "os.PathLike[str]"]


# --------------------------------------------------------------------------- profile
@dataclass(frozen=True)
class Profile:
    """Fitted statistics of a question set; see the module docstring for the model.

    Counts are kept as counts (not probabilities) so that a profile records how much data
    each part rests on.  Build one with :func:`fit_profile`, read one with
    :meth:`load` / :meth:`from_dict` / :func:`default_profile`.

    Attributes
    ----------
    clustered_fraction : fraction of questions that belong to a paraphrase cluster.
    cluster_sizes : ``cluster_sizes[m - 1]`` = number of clusters with ``m`` questions.
    openings : per group (``"clustered"``, ``"unclustered"``): ``[[opening, count], ...]``;
        an opening is 0, 1 or 2 space-separated tokens.
    shapes : per group: ``[[opening_len, L, c, count], ...]``, question length ``L`` (tokens)
        and content words ``c`` after the opening.
    filler : ``[[function_word, count], ...]`` of the body tokens.
    content : ``words`` and ``counts`` (the head: the most frequent real content words and
        their counts, rank order), ``tail_s`` and ``tail_scale`` (the power-law tail after
        the head, ``f(r) = tail_scale * (r / len(words)) ** -tail_s``), ``heaps_k`` and
        ``heaps_beta`` (Heaps' law), ``heaps_curve`` (the measured ``[T, V]`` points, for
        reference), ``cluster_tilt``, ``zipf_s`` and ``zipf_q`` (Zipf-Mandelbrot summary),
        ``types`` and ``tokens`` (real distinct content words and content tokens).
    paraphrase : the real statistics ``overlap`` (mean fraction of a paraphrase's distinct
        content words found in its cluster-mates), ``jaccard`` (mean pairwise Jaccard of
        content words), ``same_opening`` (fraction of pairs with the same opening),
        ``content_gap`` (mean ``|c_a - c_b|`` of pairs), and the probabilities calibrated to
        them: ``copy_prob``, ``core_weight``, ``opening_copy_prob``, ``shape_copy_prob``.
    fitted_from : description of the data (sizes, source).
    """

    clustered_fraction: float
    cluster_sizes: List[int]
    openings: Dict[str, List[list]]
    shapes: Dict[str, List[list]]
    filler: List[list]
    content: Dict[str, Any]
    paraphrase: Dict[str, float]
    fitted_from: Dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict:
        """A JSON-serializable dict (``format`` and ``format_version`` included)."""
        return {
            "format": PROFILE_FORMAT,
            "format_version": PROFILE_VERSION,
            "fitted_from": self.fitted_from,
            "clustered_fraction": self.clustered_fraction,
            "cluster_sizes": list(self.cluster_sizes),
            "paraphrase": dict(self.paraphrase),
            "content": dict(self.content),
            "openings": {g: [list(x) for x in self.openings[g]] for g in GROUPS},
            "shapes": {g: [list(x) for x in self.shapes[g]] for g in GROUPS},
            "filler": [list(x) for x in self.filler],
        }

    @classmethod
    def from_dict(cls, d: Any, name: str = "profile") -> "Profile":
        """Validate and build a profile; ``ValueError`` naming ``name`` and the bad field."""
        if not isinstance(d, dict):
            raise ValueError(f"{name} must be a JSON object (dict), got {type(d).__name__}")
        if d.get("format") != PROFILE_FORMAT or d.get("format_version") != PROFILE_VERSION:
            raise ValueError(
                f"{name} is not a synthetic-corpus profile version {PROFILE_VERSION} "
                f"(format={d.get('format')!r}, format_version={d.get('format_version')!r}); "
                "fit one with fit_profile()"
            )
        try:
            p = cls(
                clustered_fraction=float(d["clustered_fraction"]),
                cluster_sizes=[int(x) for x in d["cluster_sizes"]],
                openings={g: [[str(o), int(k)] for o, k in d["openings"][g]] for g in GROUPS},
                shapes={g: [[int(a), int(b), int(c), int(k)] for a, b, c, k in d["shapes"][g]] for g in GROUPS},
                filler=[[str(w), int(k)] for w, k in d["filler"]],
                content=dict(d["content"]),
                paraphrase={k: float(v) for k, v in d["paraphrase"].items()},
                fitted_from=dict(d.get("fitted_from", {})),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{name} is malformed ({type(exc).__name__}: {exc})") from None
        p.validate(name)
        return p

    def validate(self, name: str = "profile") -> None:
        """Check ranges and consistency; ``ValueError`` naming ``name`` and the field."""

        def bad(msg: str) -> ValueError:
            return ValueError(f"{name}: {msg}")

        if not 0.0 <= self.clustered_fraction <= 1.0:
            raise bad(f"clustered_fraction must be in [0, 1], got {self.clustered_fraction}")
        if not self.cluster_sizes or min(self.cluster_sizes) < 0 or sum(self.cluster_sizes) == 0:
            raise bad("cluster_sizes must be non-negative counts with a positive sum")
        for g in GROUPS:
            ops, shapes = self.openings[g], self.shapes[g]
            if not ops or any(k < 0 for _, k in ops) or sum(k for _, k in ops) == 0:
                raise bad(f"openings[{g!r}] must be non-negative counts with a positive sum")
            lens = set()
            for o, _ in ops:
                toks = o.split()
                if len(toks) > 2 or any(not _TOKEN_RE.match(t) for t in toks):
                    raise bad(f"openings[{g!r}] has {o!r}: 0-2 tokens of [a-z0-9]")
                lens.add(len(toks))
            for ol, length, c, k in shapes:
                if not (0 <= ol <= 2 and length >= max(ol, 1) and 0 <= c <= length - ol and k >= 0):
                    raise bad(f"shapes[{g!r}] has [{ol}, {length}, {c}, {k}]: need 0 <= c <= L - opening_len")
            have = {ol for ol, _, _, k in shapes if k > 0}
            if not lens <= have:
                raise bad(f"shapes[{g!r}] has no lengths for opening lengths {sorted(lens - have)}")
        if not self.filler or any(k < 0 or not _TOKEN_RE.match(w) for w, k in self.filler) \
                or sum(k for _, k in self.filler) == 0:
            raise bad("filler must be [[token, count], ...] with a positive total")
        c = self.content
        for key, lo, hi in (("zipf_s", 0.0, math.inf), ("zipf_q", -1.0, math.inf), ("tail_s", 0.0, 5.0),
                            ("tail_scale", 0.0, math.inf), ("heaps_k", 0.0, math.inf), ("heaps_beta", 0.0, 1.0),
                            ("cluster_tilt", -3.0, 3.0)):
            v = c.get(key)
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not lo < v <= hi:
                raise bad(f"content[{key!r}] must be a number in ({lo:g}, {hi:g}], got {v!r}")
        words = c.get("words")
        if not isinstance(words, list) or any(not isinstance(w, str) or not _TOKEN_RE.match(w) for w in words):
            raise bad("content['words'] must be a list of [a-z0-9] tokens")
        if set(words) & FUNCTION_WORDS:
            raise bad(f"content['words'] holds function words {sorted(set(words) & FUNCTION_WORDS)[:5]}")
        if len(set(words)) != len(words):
            raise bad("content['words'] has duplicates")
        curve = c.get("heaps_curve")
        try:
            cv = np.asarray(curve, dtype=np.float64)
            ok = cv.ndim == 2 and cv.shape[1] == 2 and cv.shape[0] >= 2 and bool(np.all(cv >= 1)) \
                and bool(np.all(np.diff(cv[:, 0]) > 0)) and bool(np.all(cv[:, 1] <= cv[:, 0]))
        except (TypeError, ValueError):
            ok = False
        if not ok:
            raise bad("content['heaps_curve'] must be >= 2 points [T, V] with T increasing and 1 <= V <= T")
        if isinstance(c.get("tokens"), bool) or not isinstance(c.get("tokens"), (int, float)) \
                or not c["tokens"] > 0:
            raise bad(f"content['tokens'] must be a positive number, got {c.get('tokens')!r}")
        counts = c.get("counts")
        if not words or not isinstance(counts, list) or len(counts) != len(words) \
                or any(isinstance(k, bool) or not isinstance(k, (int, float)) or not k > 0 for k in counts):
            raise bad("content['counts'] must be positive numbers, one per word of content['words'] (>= 1 word)")
        for key in ("copy_prob", "core_weight", "opening_copy_prob", "shape_copy_prob"):
            v = self.paraphrase.get(key)
            if v is None or not 0.0 <= v <= 1.0:
                raise bad(f"paraphrase[{key!r}] must be in [0, 1], got {v!r}")

    def save(self, path: PathLike) -> Path:
        """Write the profile as JSON (atomically: temporary file, then rename)."""
        import json

        out = Path(path)
        text = json.dumps(self.to_dict(), separators=(",", ":"), ensure_ascii=True)
        _atomic_write(out, lambda f: f.write(text.encode("ascii") + b"\n"), gz=False)
        return out

    @classmethod
    def load(cls, path: PathLike, name: str = "profile") -> "Profile":
        """Read a profile written by :meth:`save`."""
        import json

        try:
            with open(path, encoding="utf-8") as f:
                d = json.load(f)
        except OSError as exc:
            raise ValueError(f"{name}: cannot read {str(path)!r} ({exc.strerror})") from None
        except json.JSONDecodeError as exc:
            raise ValueError(f"{name}: {str(path)!r} is not valid JSON ({exc.msg})") from None
        return cls.from_dict(d, name)


_DEFAULT: Optional[Profile] = None


def default_profile() -> Profile:
    """The profile shipped with the package (fitted by :func:`pysynth.k2q.data.fit_default_profile`)."""
    global _DEFAULT
    if _DEFAULT is None:
        import json
        from importlib import resources

        text = resources.files(__package__).joinpath("synthetic_profile.json").read_text("utf-8")
        _DEFAULT = Profile.from_dict(json.loads(text), "default profile")
    return _DEFAULT


def _as_profile(profile: Any) -> Profile:
    if profile is None:
        return default_profile()
    if isinstance(profile, Profile):
        profile.validate("profile")
        return profile
    if isinstance(profile, dict):
        return Profile.from_dict(profile, "profile")
    if isinstance(profile, (str, os.PathLike)):
        return Profile.load(profile, "profile")
    raise TypeError(f"profile must be a Profile, a dict, a JSON path or None, got {type(profile).__name__}")


# --------------------------------------------------------------------------- fitting
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
    n = len(toks)
    if n == 0:
        raise ValueError("questions has no tokens ([a-z0-9] runs) at all")
    in_cl = cl >= 0

    # openings: frequent first pairs, then frequent first tokens, per group
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

    # body tokens: function-word counts; content-word ranks
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
    # same-opening rate over member pairs, then the copy probability that reproduces it
    same: Dict[Tuple[int, str], int] = {}
    for i in np.flatnonzero(in_cl):
        key = (int(cl[i]), oname[i])
        same[key] = same.get(key, 0) + 1
    pair_same = sum(k * (k - 1) // 2 for k in same.values())
    pair_all = int(sum(int(m) * (int(m) - 1) // 2 for m in sizes)) if ids_cl.size else 0
    same_opening = pair_same / pair_all if pair_all else float("nan")
    po = np.array([k for _, k in openings["clustered"]], dtype=np.float64)
    s2 = float(np.sum((po / po.sum()) ** 2))
    pi = 0.0
    if pair_all and same_opening > _pair_same_rate(0.0, s2, sizes):
        lo_, hi_ = 0.0, 1.0
        for _ in range(50):
            mid = (lo_ + hi_) / 2
            lo_, hi_ = (mid, hi_) if _pair_same_rate(mid, s2, sizes) < same_opening else (lo_, mid)
        pi = (lo_ + hi_) / 2

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


# ------------------------------------------------------------------------ generation
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


def _atomic_write(out: Path, write, gz: bool) -> None:
    def body(raw):
        if not gz:
            return write(raw)
        # mtime=0 and no file name: the same corpus gives the same bytes.  Level 1:
        # 3x faster than 6 on these rows (1.0 s vs 2.9 s per 1M), files 16% larger
        with gzip.GzipFile(filename="", mode="wb", fileobj=raw, compresslevel=1, mtime=0) as f:
            write(f)

    atomic_write(out, body)


def write_corpus(path: PathLike, n: int, seed: int = 0, profile: Any = None) -> Path:
    """Stream a corpus to JSON Lines, ``{"id", "question", "cluster_id"}`` per row.

    Parameters
    ----------
    path : str or path
        Output file; ``.gz`` is gzip-compressed (deterministic bytes).  Written to a
        temporary file beside it and renamed, so a killed run leaves no partial file.
    n, seed, profile
        As :func:`generate_corpus`; the rows are its questions in order, ``id`` = 0..n-1,
        ``cluster_id`` = null for questions outside clusters.

    Returns
    -------
    Path
    """
    n = _check_n(n)
    seed = _check_seed(seed)
    prof = _as_profile(profile)
    out = Path(path)

    def write(f) -> None:
        i = 0
        for qs, cl in iter_corpus(n, seed, prof):
            # questions hold only [A-Za-z0-9 '?]: no JSON escaping needed
            lines = [
                f'{{"id": {i + k}, "question": "{q}", "cluster_id": {c if c >= 0 else "null"}}}\n'
                for k, (q, c) in enumerate(zip(qs, cl.tolist()))
            ]
            f.write("".join(lines).encode("ascii"))
            i += len(qs)

    _atomic_write(out, write, gz=out.suffix == ".gz")
    return out
