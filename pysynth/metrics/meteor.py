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

A Java-free compiled implementation with the same scores is issue 14 §3's next step; this
flavor is its golden reference.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import List, Optional, Sequence, Union

__all__ = ["MeteorScore", "meteor", "meteor_jar"]


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
    try:
        import pycocoevalcap.meteor.meteor as m
    except ImportError:
        raise ImportError("METEOR flavor 'jar' needs the Meteor 1.5 jar: pip install pycocoevalcap "
                          "(or set PYSYNTH_METEOR_JAR) and Java") from None
    p = Path(m.__file__).resolve().parent / "meteor-1.5.jar"
    if not p.is_file():
        raise ImportError(f"pycocoevalcap is installed but {p} is missing")
    return p


def _clean(text: str) -> str:
    return " ".join(text.replace("|||", " ").split())


def meteor(hyps: Sequence[str], refs: Sequence[Union[str, Sequence[str]]], flavor: str = "jar",
           language: str = "en", timeout: float = 600.0, java: Optional[str] = None) -> MeteorScore:
    """Corpus METEOR of ``hyps`` against ``refs``.

    Parameters
    ----------
    hyps : one hypothesis per segment.
    refs : references in sacrebleu's layout: a list of str (one reference per segment) or a list
        of reference streams (each a list of str aligned with ``hyps``).
    flavor : ``"jar"``, the reference implementation (needs Java 8+).
    timeout : seconds for the whole run.

    Raises
    ------
    ValueError
        misaligned or non-string inputs, an unknown flavor.
    RuntimeError
        the JVM failed or timed out (its message is included).
    """
    if flavor != "jar":
        raise ValueError(f"flavor: must be 'jar' (the Java-free implementation is not built yet), got {flavor!r}")
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
    for name, seq in [("hyps", hyps)] + [(f"refs[{k}]", s) for k, s in enumerate(streams)]:
        for i, t in enumerate(seq):
            if not isinstance(t, str):
                raise TypeError(f"{name}[{i}]: expected str, got {type(t).__name__}")
    sig["nrefs"] = len(streams)
    if n == 0:
        return MeteorScore(0.0, [], sig)
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
