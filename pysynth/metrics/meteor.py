"""METEOR 1.5 (Denkowski & Lavie 2014) as nlg-eval and pycocoevalcap compute it.

``flavor="jar"`` runs the reference implementation: the ``meteor-1.5.jar`` that the
``pycocoevalcap`` package ships (or ``$PYSYNTH_METEOR_JAR``), with nlg-eval's settings
``-l en -norm`` (exact, stem, synonym and paraphrase matching; lower-cased, tokenized,
punctuation-normalised input), through its ``-stdio`` protocol: one ``SCORE ||| ref ... ||| hyp``
line per segment answered by its sufficient statistics, then one ``EVAL ||| stats ...`` line
answered by every segment's score and the corpus score. The corpus score is what nlg-eval
reports (the MQR paper's METEOR column, Chu et al. 2020, Table 6), not the mean of the segments.

Unlike pycocoevalcap's wrapper, which writes and reads one line at a time and hangs when a
segment holds a newline (the protocol loses its step) or the JVM dies, this one folds newlines
and ``|||`` out of every text, feeds the JVM from a thread while reading its answers, and fails
with a clear error on a missing ``java``, a missing jar, a crash or a timeout.

``flavor="exact"`` (the default) is the Java-free reimplementation with the jar's scores: the
compiled core (``pysynth._core.metrics.meteor_stats``, C++) or its pure-Python twin
(:mod:`pysynth.metrics._meteor_ref`, ``PYSYNTH_IMPL=python``). It reads the function words and
WordNet files from the jar (a zip file, once; then from an uncompressed copy) and the paraphrase table
from ``paraphrase-en.gz``, parsed once into a memory-mapped cache (:mod:`pysynth.metrics._meteor_data`);
no JVM runs. The ``-norm`` normalizer of ASCII texts is compiled too (``meteor_normalize``).
Its segment and corpus scores equal the jar's (tests/golden/meteor_*.json).
"""
from __future__ import annotations

import os
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Sequence, Union

__all__ = ["MeteorScore", "meteor", "meteor_jar", "find_files", "FLAVORS"]

FLAVORS = ("exact", "jar")


@dataclass(frozen=True)
class MeteorScore:
    """``score``: the corpus METEOR (0-1, what nlg-eval prints); ``segments``: each segment's."""

    score: float
    segments: List[float] = field(default_factory=list)
    signature: dict = field(default_factory=dict)


def meteor_jar() -> Path:
    """The Meteor 1.5 jar: ``$PYSYNTH_METEOR_JAR`` or the one in the ``pycocoevalcap`` package
    (``pip install pycocoevalcap``; it brings ``data/paraphrase-en.gz`` beside the jar)."""
    env = os.environ.get("PYSYNTH_METEOR_JAR")
    if env:
        p = Path(env)
        if not p.is_file():
            raise ValueError(f"PYSYNTH_METEOR_JAR: {p} does not exist")
        return p
    from pysynth.metrics._meteor_data import pycoco_meteor_dir

    base = pycoco_meteor_dir()
    if base is None:
        raise ImportError("METEOR flavor 'jar' needs the Meteor 1.5 jar: pip install pycocoevalcap "
                          "(or set PYSYNTH_METEOR_JAR) and Java")
    p = base / "meteor-1.5.jar"
    if not p.is_file():
        raise ImportError(f"pycocoevalcap is installed but {p} is missing")
    return p


def _clean(text: str) -> str:
    # = pysynth.metrics._meteor_ref.clean (kept here: the jar flavor needs no twin import)
    return " ".join(text.replace("|||", " ").split())


_RESOURCES: dict = {}
_LOCK = threading.Lock()


def find_files():
    """METEOR's resources: ``(jar, paraphrase table)`` from ``$PYSYNTH_METEOR_JAR`` /
    ``$PYSYNTH_METEOR_DATA`` or pycocoevalcap's (a server checks them at start-up).

    Raises
    ------
    ImportError
        neither is available; the message names the fix.
    """
    from pysynth.metrics._meteor_data import find_files as _find

    return _find()


def _resources(impl: str):
    """(resources, nonbreaking prefixes) for ``impl``, loaded once per process.

    The compiled path imports neither numpy nor the twin: the cache's arrays are memoryviews of its
    memory map (a one-shot ``pysynth score --metrics meteor`` spent ~70 ms importing numpy for them)."""
    import pysynth.metrics._meteor_data as data

    files = data.find_files()
    key = (impl, str(files.jar), str(files.paraphrase))
    with _LOCK:
        got = _RESOURCES.get(key)
        if got is None:
            txt = data.load_text_resources(files.jar)
            arrays, meta = data.load_paraphrase(data.ensure_paraphrase(files.paraphrase))
            if impl == "cpp":
                from pysynth._dispatch import backend

                make = backend("metrics").meteor_resources
            else:
                from pysynth.metrics._meteor_ref import meteor_resources as make
            res = make(txt["function"], txt["exceptions"], txt["synsets"], arrays, int(meta["max_len"]))
            got = _RESOURCES[key] = (res, data._nbp_table(txt["prefixes"]))
    return got


def _exact(hyps: List[str], streams: List[List[str]], workers: int) -> MeteorScore:
    from pysynth._dispatch import backend, implementation

    impl = implementation("metrics")
    if impl == "cpp" and not hasattr(backend("metrics"), "meteor_scores"):
        impl = "python"
    res, nbp = _resources(impl)
    if impl == "cpp":
        mod = backend("metrics")
    else:
        import pysynth.metrics._meteor_ref as mod
    n, k = len(hyps), len(streams)
    # the text the jar flavor sends (no '|||', whitespace folded), trimmed and normalized as the jar
    # does; the compiled core takes ASCII texts, the twin the others
    texts = hyps + [s[i] for i in range(n) for s in streams]
    norm = mod.meteor_normalize(texts, nbp)
    if None in norm:
        from pysynth.metrics._meteor_norm import prepare

        norm = [prepare(texts[j], nbp) if t is None else t for j, t in enumerate(norm)]
    h = norm[:n]
    r = [norm[n + i * k:n + (i + 1) * k] for i in range(n)]
    # segment scores and the corpus EVAL in one call (the jar's computeMetrics, as the jar computes it)
    seg, total = mod.meteor_scores(res, h, r, workers)
    sig = {"flavor": "exact", "impl": impl, "version": "1.5", "language": "en", "norm": True,
           "nrefs": len(streams)}
    return MeteorScore(float(total), [float(x) for x in seg], sig)


def meteor(hyps: Sequence[str], refs: Sequence[Union[str, Sequence[str]]], flavor: str = "exact",
           language: str = "en", timeout: float = 600.0, java: Optional[str] = None,
           workers: int = 1) -> MeteorScore:
    """Corpus METEOR of ``hyps`` against ``refs``.

    Parameters
    ----------
    hyps : one hypothesis per segment.
    refs : references in sacrebleu's layout: a list of str (one reference per segment) or a list
        of reference streams (each a list of str aligned with ``hyps``).
    flavor : ``"exact"`` (default): the Java-free implementation with the jar's scores;
        ``"jar"``: the reference implementation itself (needs Java 8+).
    language : only ``"en"`` (the resources pycocoevalcap ships).
    timeout : seconds for the whole run (``"jar"``).
    workers : threads of the compiled flavor (-1: all cores); results do not depend on it.

    Raises
    ------
    ValueError
        misaligned or non-string inputs, an unknown flavor or language.
    ImportError
        flavor ``"exact"`` without the jar's resources (``pip install pycocoevalcap``).
    RuntimeError
        the JVM failed or timed out (its message is included).
    """
    if flavor not in FLAVORS:
        raise ValueError(f"flavor: must be one of {', '.join(FLAVORS)}, got {flavor!r}")
    if language != "en":
        raise ValueError(f"language: only 'en' is supported (Meteor 1.5's English resources), got {language!r}")
    if isinstance(workers, bool) or not isinstance(workers, int) or not (workers == -1 or workers >= 1):
        raise ValueError(f"workers: must be an int >= 1 or -1 (all cores), got {workers!r}")
    if isinstance(hyps, str):
        raise TypeError("hyps: expected a list of strings, got one str")
    n = len(hyps)
    sig = {"flavor": "jar", "version": "1.5", "language": language, "norm": True}
    if n == 0 and not refs:
        return MeteorScore(0.0, [], sig)
    if refs and isinstance(refs[0], str):
        streams = [list(refs)]
    else:
        streams = [list(s) for s in refs]
    if not streams:
        raise ValueError("refs: empty; give one reference per hypothesis")
    for k, s in enumerate(streams):
        if len(s) != n:
            raise ValueError(f"refs[{k}]: {len(s)} segments but hyps has {n}; they must align")
    from pysynth._validate import strings

    for name, seq in [("hyps", hyps)] + [(f"refs[{k}]", s) for k, s in enumerate(streams)]:
        # the compiled intake refuses a lone surrogate; refuse it here so every backend does
        strings(seq, name)
    sig["nrefs"] = len(streams)
    if n == 0:
        return MeteorScore(0.0, [], sig if flavor == "jar" else {**sig, "flavor": "exact"})
    if flavor == "exact":
        return _exact(list(hyps), streams, workers)
    import shutil
    import subprocess  # the jar flavor only (a one-shot exact run does not pay these imports)

    exe = java or shutil.which("java")
    if not exe:
        raise RuntimeError("METEOR flavor 'jar' needs Java on PATH (e.g. Debian's default-jre-headless)")
    jar = meteor_jar()
    cmd = [exe, "-Xmx2G", "-jar", str(jar), "-", "-", "-stdio", "-l", language, "-norm"]
    proc = subprocess.Popen(cmd, cwd=str(jar.parent), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, encoding="utf-8", bufsize=1)
    lines = [" ||| ".join(["SCORE", *(_clean(s[i]) for s in streams), _clean(hyps[i])]) + "\n" for i in range(n)]
    stats: List[str] = []
    err: List[str] = []
    done = threading.Event()

    def feed():
        try:
            for line in lines:
                proc.stdin.write(line)
            proc.stdin.flush()
        except (BrokenPipeError, ValueError):
            pass

    def drain_stderr():
        err.append(proc.stderr.read())

    threading.Thread(target=drain_stderr, daemon=True).start()
    writer = threading.Thread(target=feed, daemon=True)
    timer = threading.Timer(timeout, lambda: (done.is_set() or proc.kill()))
    timer.start()
    try:
        writer.start()
        for _ in range(n):
            line = proc.stdout.readline()
            if not line:
                break
            stats.append(line.strip())
        writer.join()
        if len(stats) == n:
            proc.stdin.write("EVAL ||| " + " ||| ".join(stats) + "\n")
            proc.stdin.flush()
            seg = [proc.stdout.readline() for _ in range(n)]
            total = proc.stdout.readline()
        proc.stdin.close()
        proc.wait(30)
    except (BrokenPipeError, OSError, subprocess.TimeoutExpired):
        proc.kill()
    finally:
        done.set()
        timer.cancel()
    if len(stats) != n or proc.returncode not in (0, None):
        msg = " ".join("".join(err).split())[-400:] if err else ""
        raise RuntimeError(f"METEOR jar failed after {len(stats)} of {n} segments (exit {proc.returncode}): "
                           f"{msg or 'no message; timed out?'}")
    try:
        return MeteorScore(float(total), [float(x) for x in seg], sig)
    except ValueError:
        raise RuntimeError(f"METEOR jar: unexpected output {total!r}") from None
