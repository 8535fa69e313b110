"""The :class:`Profile` of a question set: its validation, JSON form and the shipped default."""
from __future__ import annotations

import math
import os
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Union

import numpy as np

from pysynth.io import atomic_write

PROFILE_FORMAT = "pysynth.data.synthetic_profile"
PROFILE_VERSION = 2  # 2: the "format" + "format_version" keys of every pysynth format
#: the shipped profile, a bundled file of :mod:`pysynth.data`
DEFAULT_PROFILE_PATH = Path(__file__).resolve().parents[1] / "synthetic_profile.json"
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

_TOKEN_RE = re.compile(r"^[a-z0-9]+$")

PathLike = Union[str, "os.PathLike[str]"]


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
        atomic_write(out, lambda f: f.write(text.encode("ascii") + b"\n"))
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

        text = resources.files("pysynth.data").joinpath("synthetic_profile.json").read_text("utf-8")
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
