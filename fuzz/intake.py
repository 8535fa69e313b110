"""Fuzz targets of the intake family (issue 27): what reads user input before any kernel runs.

These have no compiled twin, so each target checks a property instead: the code under test agrees
with a small reference written here (the JSON Lines / text readers), or it only ever returns a
well-formed result or raises the documented exception with a one-line message (row readers, the
server's JSON parser and ``Host`` parsing, every ``pysynth._validate`` check, the CLI parser and its
cross-flag checks, qagen's cost model, ``score_corpus`` behind the ``/v1/score`` budget, ``.7z``
member names), or two implementations agree (the WordPiece tokenizer: plain Python vs the
``tokenizers`` library). ``pysynth._core.build_info`` (the one binding without a stage) is here too.

A target returns ``"ok"`` or ``"rejected"`` (the documented error) and raises
:class:`targets.Mismatch` when the property fails; any other exception is a crash of the target's
contract and is reported as a mismatch too.
"""
from __future__ import annotations

import codecs
import contextlib
import gzip
import io as pyio
import json
import math
import os
import re
import tempfile
import unicodedata
from typing import Any, Callable, Dict, List

#: name -> property target (registered into targets.TARGETS by targets.py)
PROPERTIES: Dict[str, Callable[[Any], str]] = {}

_TMP = None


def _tmp() -> str:
    global _TMP
    if _TMP is None:
        _TMP = tempfile.mkdtemp(prefix="pysynth-fuzz-intake-")
    return _TMP


def prop(name: str):
    def deco(fn):
        PROPERTIES[name] = fn
        return fn
    return deco


class _Fail(AssertionError):
    pass


def _one_line(exc: BaseException, limit: int = 2000) -> None:
    msg = str(exc)
    if "\n" in msg.strip() or len(msg) > limit:
        raise _Fail(f"{type(exc).__name__} message is not one short line ({len(msg)} chars): {msg[:300]!r}")


def _expect(fn, allowed=(ValueError, TypeError)):
    """``("ok", result)`` or ``("rejected", exc)`` for an allowed exception with a one-line message."""
    try:
        return "ok", fn()
    except allowed as exc:
        _one_line(exc)
        return "rejected", exc


# ------------------------------------------------------------------------------ building hostile files

_SAMPLE_ROWS = [{"question": "how do i fix a flat tire", "id": 1}, {"question": "why é 世\u2028x", "cluster_id": "c"},
                {"context": "Paris is the capital of France.", "id": "p"}, {"keywords": ["a", "b"], "n": 1.5e300},
                {}, {"question": ""}, {"question": None}, {"q": "\\ud800 escaped"}, [1, 2], "str", 7, None]


def _jsonl_text(s) -> str:
    lines = []
    for _ in range(s.int(0, 6)):
        c = s.int(0, 9)
        if c <= 5:
            lines.append(json.dumps(s.pick(_SAMPLE_ROWS), ensure_ascii=s.bool()))
        elif c == 6:
            lines.append(s.pick(["", "   ", "\t"]))
        elif c == 7:
            lines.append(s.pick(["{", "{\"a\": }", "nan", "[" * 50 + "]" * 50, "{\"a\": NaN}", "\ufeff{}", "1e999"]))
        else:
            lines.append(s.text())
    eol = s.pick(["\n", "\n", "\r\n", "\r"])
    text = eol.join(lines) + (eol if s.bool() else "")
    if s.chance(3):
        text = "\ufeff" + text
    return text


def _to_bytes(s, text: str) -> bytes:
    raw = text.encode("utf-8", "surrogatepass")
    c = s.int(0, 15)
    if c == 0:
        raw = codecs.BOM_UTF8[: s.int(1, 2)]  # a cut BOM alone
    elif c == 1 and raw:
        raw = raw[: s.int(0, len(raw) - 1)]  # cut anywhere (maybe inside a UTF-8 sequence)
    elif c == 2:
        raw = raw + bytes(s.byte() for _ in range(s.int(1, 6)))  # trailing garbage
    return raw


def _write(s, name: str, raw: bytes, gz: bool) -> str:
    path = os.path.join(_tmp(), name + (".jsonl.gz" if gz else ".jsonl"))
    if gz:
        data = gzip.compress(raw, mtime=0)
        c = s.int(0, 7)
        if c == 0:
            data = data[: s.int(0, len(data) - 1)]  # a cut gzip
        elif c == 1:
            data = raw  # plain text under a .gz name
        elif c == 2:
            data = data + data  # two members: still valid
        raw = data
    with open(path, "wb") as f:
        f.write(raw)
    return path


def _reference_rows(raw: bytes, gz: bool) -> List[Any]:
    """The JSON Lines reference: gunzip, UTF-8, a leading BOM (or a cut BOM alone) dropped, lines
    split at \\r\\n, \\r or \\n (Python's universal newlines), blank lines skipped, each line JSON."""
    if gz:
        raw = gzip.decompress(raw)  # OSError/EOFError on a bad file: the caller maps them
    if raw and len(raw) < 3 and codecs.BOM_UTF8.startswith(raw):
        return []
    text = raw.decode("utf-8")
    if text.startswith("\ufeff"):
        text = text[1:]
    rows = []
    for line in re.split(r"\r\n|\r|\n", text):
        if line.strip():
            rows.append(json.loads(line))
    return rows


@prop("intake.read_rows")
def _read_rows(s) -> str:
    """``pysynth.io.read_rows`` on JSONL / ``.gz`` files (BOM, CRLF, cut gzip, garbage) against
    :func:`_reference_rows`: the same rows, or both refuse (ours with a ValueError naming the file)."""
    from pysynth import io

    gz = s.chance(3)
    raw = _to_bytes(s, _jsonl_text(s))
    path = _write(s, "rows", raw, gz)
    with open(path, "rb") as f:
        on_disk = f.read()
    try:
        want = ("ok", _reference_rows(on_disk, gz))
    except (ValueError, OSError, EOFError, RecursionError):
        want = ("rejected", None)
    got = _expect(lambda: list(io.read_rows(path)), (ValueError,))
    if got[0] != want[0] or (got[0] == "ok" and got[1] != want[1]):
        raise _Fail(f"read_rows {got[0]} vs reference {want[0]}: {str(got[1])[:200]!r} / {str(want[1])[:200]!r}")
    if got[0] == "rejected" and gz and "not a readable gzip file" in str(got[1]) and path not in str(got[1]):
        raise _Fail(f"the gzip error does not name the file: {got[1]}")
    return got[0]


@prop("intake.read_text")
def _read_text(s) -> str:
    """The text readers (``cli._common.read_lines``, ``mqr.jobs.read_questions``,
    ``datasets.squad.read_text``, ``io.decode_text``) against one reference: UTF-8, a leading BOM
    (or a cut BOM alone) dropped, universal newlines."""
    from pysynth.cli._common import read_lines
    from pysynth.datasets.squad import read_text
    from pysynth.io import decode_text
    from pysynth.mqr.jobs import read_questions

    raw = _to_bytes(s, _jsonl_text(s) if s.bool() else s.text())
    path = os.path.join(_tmp(), "q.txt")
    with open(path, "wb") as f:
        f.write(raw)
    try:
        text = "" if raw and len(raw) < 3 and codecs.BOM_UTF8.startswith(raw) else raw.decode("utf-8")
        text = text[1:] if text.startswith("\ufeff") else text
        want_lines = re.split(r"\r\n|\r|\n", text)
        if want_lines and want_lines[-1] == "":
            want_lines.pop()
        want = "ok"
    except UnicodeDecodeError:
        want, text, want_lines = "rejected", None, None
    outs = [_expect(lambda: read_lines(path, "--in"), (ValueError,)),
            _expect(lambda: read_questions(path)[0], (ValueError,)),
            _expect(lambda: read_text(__import__("pathlib").Path(path)), (ValueError,)),
            _expect(lambda: decode_text(raw), (ValueError,))]
    for i, (st, val) in enumerate(outs):
        if st != want:
            raise _Fail(f"text reader {i}: {st} vs reference {want} ({str(val)[:200]!r})")
        if st == "ok" and i < 2 and val != want_lines:
            raise _Fail(f"text reader {i}: lines {val[:5]!r} vs {want_lines[:5]!r}")
        if st == "ok" and i >= 2 and val.replace("\r\n", "\n").replace("\r", "\n") != text.replace(
                "\r\n", "\n").replace("\r", "\n"):
            raise _Fail(f"text reader {i}: text differs")
    return want


@prop("intake.method_rows")
def _method_rows(s) -> str:
    """The row readers of every method on hostile rows: ``k2q.synthesize.read_questions``,
    ``mqr.jobs.read_questions`` (rows), ``qagen.data.read_contexts``, ``qagen.questions.check_answer_row``,
    ``dup.data.read_pairs``: a result or a ValueError/TypeError with one line, nothing else."""
    from pysynth.dup.data import read_pairs
    from pysynth.k2q.synthesize import read_questions as k2q_rows
    from pysynth.mqr.jobs import read_questions as mqr_rows
    from pysynth.qagen.data import read_contexts
    from pysynth.qagen.questions import check_answer_row

    gz = s.chance(6)
    raw = _to_bytes(s, _jsonl_text(s))
    path = _write(s, "method", raw, gz)
    rows = [s.pick(_SAMPLE_ROWS) for _ in range(s.int(0, 4))] + [
        {"question": s.text(), "id": s.pick([1, "x", None, 2.5, [1]]), "cluster_id": s.pick([None, "c", 3, {}])},
        {"context": s.text(), "answer_text": s.text(), "answer_start": s.pick([0, -1, 10**30, "0", None, 2.5])},
        {"title": s.text(), "body": s.text(), "label": s.pick([0, 1, True, "1", None, 2.5, math.nan]),
         "post_id": s.pick([None, 1, "x", [1]])}]
    outcome = "rejected"
    for call in (lambda: k2q_rows(path), lambda: mqr_rows(path), lambda: read_contexts(path),
                 lambda: k2q_rows(rows), lambda: read_pairs(rows),
                 lambda: [check_answer_row(r) for r in rows]):
        st, _ = _expect(call)
        outcome = "ok" if st == "ok" else outcome
    return outcome


# ------------------------------------------------------------------------------ the server's parsing

@prop("intake.http_json")
def _http_json(s) -> str:
    """``serve.guard.parse_strict`` on hostile bodies: the value ``json.loads`` gives (for finite,
    shallow JSON), or BodyError 400/422 with a one-line message; NaN/Infinity/1e999 never pass."""
    from pysynth.serve.guard import MAX_DEPTH, BodyError, parse_strict

    c = s.int(0, 9)
    if c <= 3:
        body = json.dumps(s.pick(_SAMPLE_ROWS + [{"margin": s.float(), "contexts": s.texts(2)}]),
                          ensure_ascii=s.bool()).encode()
    elif c == 4:
        d = s.pick([MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 5000, 100_000])
        body = (b"[" * d + b"]" * d) if s.bool() else (b'{"a":' * d + b"1" + b"}" * d)
    elif c == 5:
        body = s.pick([b"NaN", b"[Infinity]", b"-Infinity", b"1e999", b'{"x": -1e400}', b"9" * 5000,
                       b"\xef\xbb\xbf{}", b"\xff\xfe", b"{\"a\": \"\\ud800\"}", b"", b"   "])
    else:
        body = _to_bytes(s, s.text() if c == 6 else json.dumps({"k": s.text(), "n": s.float()}))
    try:
        got = parse_strict(body)
    except BodyError as exc:
        _one_line(exc)
        if exc.status not in (400, 422):
            raise _Fail(f"status {exc.status}")
        return "rejected"
    ref = json.loads(body.decode("utf-8"))
    if got != ref and not (isinstance(ref, float) and math.isnan(ref)):
        raise _Fail(f"parse_strict {got!r:.100} != json.loads {ref!r:.100}")
    text = json.dumps(got)
    if "NaN" in text or "Infinity" in text:
        raise _Fail("a non-finite number passed")
    return "ok"


@prop("intake.host")
def _host(s) -> str:
    """``serve.guard.host_of``: lower case, no port, no brackets, no trailing dot, never raises;
    a foreign host that merely starts like a local one is never taken for it."""
    from pysynth.serve.guard import host_of

    base = s.pick(["localhost", "127.0.0.1", "[::1]", "::1", "LOCALHOST.", "example.com", "127.0.0.1.evil.example",
                   "localhost.evil", "[::1", "", " ", "évil", "a:b:c", "[fe80::1%eth0]"])
    v = base + s.pick(["", ":8000", ":", ":99999999", ":x", ".", "..", "\x00", " "]) + (s.text() if s.chance(8) else "")
    h = host_of(v)
    bracketed = v.strip().startswith("[")  # an IPv6 literal: kept as written between the brackets
    if not isinstance(h, str) or h != h.lower() or (h.endswith(".") and not bracketed and h.strip(".")):
        raise _Fail(f"host_of({v!r}) = {h!r}")
    if h in ("localhost", "127.0.0.1", "::1") and not v.strip().lower().lstrip("[").startswith(h):
        raise _Fail(f"host_of({v!r}) = {h!r}: a foreign host taken for a local one")
    return "ok"


# ------------------------------------------------------------------------------ _validate and the CLI

def _hostile_value(s):
    return s.pick([0, 1, -1, 2, 255, 256, 257, 2**31, 2**63, -2**63, 10**3000, True, False, None, 1.5, math.nan,
                   math.inf, -math.inf, -0.0, 5e-324, 1e308, "3", "", b"1", [1], 3 + 0j, float(s.int(0, 10)),
                   s.int(-10, 10), s.int(-2**40, 2**40)])


@prop("intake.validate")
def _validate(s) -> str:
    """Every ``pysynth._validate`` check on hostile values: its documented result (in range, of
    the right type) or TypeError/ValueError with one short line (values clipped)."""
    import numpy as np

    from pysynth import _validate as V

    v = _hostile_value(s)
    w = _hostile_value(s)
    checks = [
        ("int_range", lambda: V.int_range(v, "x", -5, 5), lambda r: isinstance(r, int) and -5 <= r <= 5),
        ("positive_int", lambda: V.positive_int(v, "x"), lambda r: 1 <= r < 2**31),
        ("workers", lambda: V.workers(v), lambda r: r == -1 or r >= 1),
        ("threads", lambda: V.threads(v), lambda r: 0 <= r <= V.max_threads()),
        ("finite", lambda: V.finite(v, "x", 0, 10), lambda r: math.isfinite(r) and 0 <= r <= 10),
        ("beam", lambda: V.beam(v), lambda r: 1 <= r <= V.MAX_BEAM),
        ("search_budget", lambda: V.search_budget(v, w if s.bool() else None, s.pick([None, 1, 2, 3, v])),
         lambda r: r is None),
        ("choice", lambda: V.choice(v, "x", ("a", "3")), lambda r: r in ("a", "3")),
        ("sequence", lambda: V.sequence(s.pick([v, [v, w], "ab", (1,)]), "x", "ints"), lambda r: isinstance(r, list)),
        ("strings", lambda: V.strings(s.pick([[s.text(), "\ud800"], [s.text()], v, [v]]), "x"),
         lambda r: all(isinstance(t, str) for t in r)),
        ("offsets", lambda: V.offsets(s.pick([[0, 1, 2], [0, 2, 1], [1], [], [[0]], [0, v], np.array([0.0, 2.0])]),
                                      2), lambda r: r.dtype == np.int64 and r[0] == 0 and r[-1] == 2),
        ("ragged", lambda: V.ragged(s.pick([[[1, 2], [v]], [[1], []], np.array([1, 2]), [[1.5]], v]),
                                    s.pick([None, [0, 2]]), "ids"),
         lambda r: r[0].dtype == np.int32 and r[1][-1] == r[0].size),
        ("distinct_outputs", lambda: V.distinct_outputs([("--out", s.pick(["a", "-", None, "./a"])),
                                                         ("--other", s.pick(["a", "-", "b", None]))]),
         lambda r: r is None),
        ("clip", lambda: V.clip(v), lambda r: len(r) < 80),
        ("clip_message", lambda: V.clip_message(f"got {v!r} " * s.int(1, 3)), lambda r: len(r) < 2000),
    ]
    name, fn, ok = s.pick(checks)
    st, r = _expect(fn)
    if st == "rejected" and len(str(r)) > 400:
        raise _Fail(f"{name}: message of {len(str(r))} characters (not clipped)")
    if st == "ok" and not ok(r):
        raise _Fail(f"{name}({v!r:.60}) returned {r!r:.100}")
    return st


_VERBS = [["score"], ["k2q", "keywords"], ["k2q", "synthesize"], ["k2q", "generate"], ["k2q", "make-corpus"],
          ["mqr", "rewrite"], ["mqr", "mine"], ["quality", "wellformed"], ["paraphrase", "generate"],
          ["qagen", "generate"], ["qagen", "questions"], ["dup", "pairs"], ["index", "build"], ["index", "search"],
          ["report"], ["serve"], ["export", "onnx"]]
_FLAGS = ["--beam", "--batch-size", "--groups", "--threads", "--workers", "--seed", "--m", "--n-results", "--keep",
          "--mu", "--weights", "--top-k", "--top-p", "--diversity", "--spans", "--margin", "--neg-fraction",
          "--min-wellformed", "--min-similarity", "--chunk-size", "--max-context-chars", "--answers-per-context",
          "--length-penalty", "--unknown-penalty", "--alpha", "--port", "--timeout", "--max-body-bytes", "--n",
          "--out", "--squad-out", "--candidates-out", "--ray-address", "--executor"]
_VALUES = ["0", "-1", "1", "2", "3", "7", "256", "257", "1e20", "nan", "inf", "-inf", "", "x", "9" * 3000, "0.5",
           "1,2,3", "0,0,0", "-", "/dev/null", ".", "ray", "local", "127.0.0.1:1", "off", "\ud800", "١٢"]


@prop("intake.cli")
def _cli(s) -> str:
    """``pysynth.cli``'s parser and its cross-flag checks (``check_args``) on hostile argv: a
    namespace, or UsageError / argparse's exit with one line that never echoes a value whole.
    Nothing runs (the command's function is not called)."""
    from pysynth.cli import build_parser
    from pysynth.cli._common import UsageError, check_args, error_line

    argv = list(s.pick(_VERBS))
    for _ in range(s.int(0, 5)):
        argv += [s.pick(_FLAGS), s.pick(_VALUES) if not s.chance(8) else s.text()]
    if s.bool():
        argv += ["--in", os.devnull]
    if s.bool():
        argv += ["--out", os.path.join(_tmp(), "cli.jsonl")]
    err = pyio.StringIO()
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(pyio.StringIO()):
            args = build_parser().parse_args(argv)
            check_args(args)
    except UsageError as exc:
        line = error_line(exc)  # what the CLI prints
        if "\n" in line or len(line) > 600:
            raise _Fail(f"the error line is not one short line: {line[:300]!r}") from None
        return "rejected"
    except SystemExit as exc:
        if exc.code not in (0, 2):
            raise _Fail(f"exit {exc.code}")
        msg = err.getvalue()
        if len(msg) > 5000:
            raise _Fail("a usage error echoed a huge value")
        return "rejected"
    return "ok"


# ------------------------------------------------------------------------------ qagen, /v1/score, .7z, build_info

_VOCAB = None


def _wordpieces():
    global _VOCAB
    if _VOCAB is None:
        from pysynth.models.registry import resolve
        from pysynth.models.wordpiece import WordPiece

        folder = resolve(None, default="dup-minilm-wstb").path
        vocab = sorted(folder.rglob("vocab.txt"))[0]
        py = WordPiece(vocab, impl="python")
        try:
            fast = WordPiece(vocab, impl="tokenizers")
        except (ImportError, ValueError):
            fast = None
        _VOCAB = (py, fast)
    return _VOCAB


@prop("intake.wordpiece")
def _wordpiece(s) -> str:
    """The WordPiece tokenizer: the plain-Python specification and the ``tokenizers`` pipeline give
    the same tokens on hostile text (accents, CJK, controls, U+FFFD, long words, surrogates)."""
    py, fast = _wordpieces()
    texts = [s.text() + s.pick(["", "\u0301", "世界", "\x00", "\ufffd", "a" * 120, "\u00a0", "İ", "ß", "\ud800"])
             for _ in range(s.int(1, 3))]
    st, a = _expect(lambda: [py.encode(t, max_length=512) for t in texts])
    if fast is None:
        return st
    if any(unicodedata.category(c) == "Cn" for t in texts for c in t):
        return st  # unassigned in Python's Unicode tables, maybe not in the tokenizers': a version skew
    st2, b = _expect(lambda: [fast.encode(t, max_length=512) for t in texts])
    if st != st2 or (st == "ok" and a != b):
        raise _Fail(f"wordpiece python {st} vs tokenizers {st2}: {str(a)[:200]} / {str(b)[:200]}")
    return st


@prop("intake.qagen_cost")
def _qagen_cost(s) -> str:
    """``qagen.served.estimate_cost`` and the server budget: never raises for strings, counts grow
    with the text, and the budget refuses exactly the requests over ``max_context_chars``."""
    from pysynth.pipelines.served import RequestError
    from pysynth.qagen.served import estimate_cost
    from pysynth.serve.budget import Budget, check

    texts = [s.text() * s.pick([1, 1, 10, 1000]) for _ in range(s.int(0, 4))]
    st, c = _expect(lambda: estimate_cost(texts) if not s.chance(16) else estimate_cost(s.pick(["x", [1], None])))
    if st == "rejected":
        return st
    if not (c["contexts"] == len(texts) and c["context_chars"] == sum(map(len, texts)) and c["windows"] >= len(texts)
            and c["tokens"] >= 0 and c["peak_bytes"] > 0):
        raise _Fail(f"estimate_cost {c}")
    more = estimate_cost([t + " more words here" for t in texts])
    if more["windows"] < c["windows"] or more["tokens"] < c["tokens"]:
        raise _Fail("cost is not monotone in the text")
    budget = Budget(max_context_chars=s.pick([1, 100, 10_000, 100_000]))

    class Req:
        contexts = texts

    try:
        check("qagen", Req, budget)
        refused = False
    except RequestError as exc:
        _one_line(exc)
        refused = True
    if refused != (c["context_chars"] > budget.max_context_chars):
        raise _Fail(f"budget refused={refused} for {c['context_chars']} chars, limit {budget.max_context_chars}")
    return "ok"


@prop("intake.score")
def _score(s) -> str:
    """``/v1/score``'s budget then ``metrics.score_corpus`` on what it admits: a request over the
    budget is a RequestError (413/422) before any work, one inside it scores without error."""
    from pysynth.metrics import score_corpus
    from pysynth.pipelines.served import RequestError
    from pysynth.serve.budget import Budget, check

    n = s.int(1, 3)
    scale = s.pick([1, 1, 5, 50, 400])
    hyps = [s.text() * scale for _ in range(n)]
    refs = [[s.text() * scale for _ in range(n)] for _ in range(s.int(1, 2))]
    metrics = [s.pick(["bleu", "rouge1", "rouge2", "rougeL", "rougeLsum", "meteor", "xx"]) for _ in range(s.int(1, 3))]
    budget = Budget(max_segment_tokens=s.pick([50, 2000]), max_lcs_cells=s.pick([10_000, 200_000_000]),
                    max_meteor_tokens=s.pick([16, 256]), max_meteor_work=s.pick([10_000, 250_000_000]))

    class Req:
        pass

    Req.hyps, Req.refs, Req.metrics = hyps, refs, metrics  # type: ignore[attr-defined]
    try:
        check("score", Req, budget)
    except RequestError as exc:
        _one_line(exc)
        return "rejected"
    if "meteor" in metrics:
        metrics = [m for m in metrics if m != "meteor"]  # its resources load from the shared data: not here
    if not metrics:
        return "ok"
    st, _ = _expect(lambda: score_corpus(hyps, refs, metrics=metrics))
    return st


@prop("intake.archive_member")
def _archive_member(s) -> str:
    """``.7z`` member names: ``safe_member`` refuses exactly the absolute names and those with a
    ``..`` part (any separator), with one line."""
    from pathlib import Path

    from pysynth.datasets.stackexchange import safe_member

    parts = [s.pick(["Posts.xml", "..", ".", "a", "", "C:", "c:x", "...", "..a", "a..", "\x00", "é", s.word()])
             for _ in range(s.int(1, 4))]
    name = s.pick(["/", "\\", ""]) + s.pick(["/", "\\"]).join(parts)
    norm = name.replace("\\", "/")
    bad = name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":") or ".." in norm.split("/")
    st, r = _expect(lambda: safe_member(name, Path("dump.7z")), (ValueError,))
    if (st == "rejected") != bad:
        raise _Fail(f"safe_member({name!r}): {st}, expected {'rejected' if bad else 'ok'}")
    if st == "ok" and r != name:
        raise _Fail("safe_member changed the name")
    return st


@prop("core.build_info")
def _build_info(s) -> str:
    """``pysynth._core.build_info``: a dict of the build without arguments, TypeError with any."""
    from pysynth import _core

    args = [_hostile_value(s) for _ in range(s.pick([0, 0, 0, 1, 2]))]
    try:
        st, r = "ok", _core.build_info(*args)
    except TypeError as exc:  # pybind11's several-line list of signatures
        st, r = "rejected", exc
    if st == "ok" and (args or not isinstance(r, dict) or not {"compiler", "optimized"} <= set(r)):
        raise _Fail(f"build_info({args!r:.60}) = {r!r:.100}")
    if st == "rejected" and not args:
        raise _Fail("build_info() raised")
    return st
