"""``pysynth index build`` and ``pysynth search``: SDM / BM25 retrieval from the command line.

Usage
-----
Index a JSON Lines collection, rows ``{"id": ..., "text": ...}`` (``id`` a string or an int,
unique; extra fields are ignored; blank lines are skipped; gzip-compressed input is recognized
by its magic bytes; ``-`` reads standard input, here and for ``--queries``)::

    pysynth index build --in DOCS.jsonl --out DIR [--tokenizer rouge|whitespace] [--workers N]

Rank it for JSON Lines queries, rows ``{"qid": ..., "text": ...}`` (``qid`` a string or an
int, echoed; not checked for uniqueness)::

    pysynth search --index DIR --queries Q.jsonl --out RUNS.jsonl [--model sdm|bm25] [--k 100] \\
        [--mu 2500] [--weights 0.85,0.10,0.05] [--k1 1.5 --b 0.75] [--workers N] [--batch-size 2000]

Each output row is ``{"qid": ..., "hits": [[doc_id, score], ...]}``, in input order: at most
``k`` hits, score descending then document number ascending (the order of
:meth:`pysynth.retrieval.Index.search`); ``doc_id`` is the document's ``id`` as given in
DOCS.jsonl, ``qid`` is echoed as given; ``score`` is the float64 score, written with Python's
shortest round-trip ``repr`` so that reading it back gives the same float64.  A query without
any token, or whose tokens occur in no document, gets ``"hits": []``.  Only documents that share
a term with the query are retrieved (see :mod:`pysynth.retrieval`).  ``--out -`` writes to
standard output; an ``--out`` ending in ``.gz`` is gzip-compressed.

Both commands exit with status 2 and a one-line ``pysynth: ...`` message (the argument named)
on bad input: invalid JSON, a row without a string ``text``, a missing / duplicate / non
string-or-int id, an empty corpus, bad ``--k`` / ``--weights`` / ``--mu`` / ``--k1`` / ``--b``
/ ``--workers``, a missing, incomplete, corrupt or other-version index directory.  Files are
written atomically: the index to a temporary directory beside DIR that is then renamed to DIR
(an existing index at DIR is replaced; any other non-empty DIR is refused), the run file to a
temporary file that is renamed at the end, so an interrupted or failed run leaves no partial
output; ``--out`` may also name a device or FIFO (``/dev/null``), which is written to directly.

Queries are streamed in batches of ``--batch-size`` (default 2,000): while one batch is searched
(compiled, ``--workers`` threads, GIL released), the previous one is formatted and written and
the next one read and tokenized, so memory stays bounded (about three batches) for any number
of queries.  A progress line (queries/s, ETA) goes to standard error at most once a second, and
a summary at the end.  The output never depends on ``--workers`` or ``--batch-size``.

The index directory (``CLI_FORMAT`` ``pysynth.retrieval.cli``, ``CLI_FORMAT_VERSION`` 1)
-----------------------------------------------------------------------------------------
``meta.json`` and ``*.npy``
    The :class:`~pysynth.retrieval.Index` arrays, :meth:`Index.save` format, unchanged.
``vocab.txt``
    UTF-8, one term per line (``\\n``-terminated): line ``i`` is term id ``i``, as
    :func:`pysynth.text.build_corpus` numbered them (descending collection frequency).
``doc_ids.jsonl``
    UTF-8, line ``d`` is the compact JSON encoding of the ``id`` of document number ``d``
    (the order of DOCS.jsonl); search copies it into the output as is.
``cli.json``
    ``{"format", "version", "pysynth_version", "tokenizer", "n_docs", "n_terms", "oov_id",
    "index_format_version", "files": {name: {"bytes", "crc32"}}}``; :func:`load` checks the
    format and version, the sizes and CRC-32 of both side files, and that they agree with the
    index (``n_docs``, ``vocab_size = n_terms + 1``, and the OOV id occurs nowhere).

Out-of-vocabulary query terms
-----------------------------
The index has ``n_terms + 1`` term ids: id ``oov_id = n_terms`` is reserved and occurs in no
document (``cf = df = 0``), and every query term missing from ``vocab.txt`` maps to it.  Scores
are then exactly those of the query with its unknown terms kept as distinct never-seen terms:
in SDM an unseen unigram adds ``f(0, 0) = log(mu * 0.5 / |C| / (|D| + mu))`` (Galago's
half-occurrence background) to the unigram mean and counts in ``n``, and a window with an
unseen term matches nothing (``cf_od = cf_uw = 0``, per-document count 0 -- also for two OOV
terms in a row, which share the id but never occur); in BM25 an unseen term adds 0.  Dropping
the unknown terms instead would change ``n`` and the windows, hence the scores.  A query whose
terms are all unknown retrieves nothing.  (``tests/retrieval/test_cli.py`` checks this against
:mod:`pysynth.retrieval._reference` with one distinct unused id per unknown word.)

Tokenization is :func:`pysynth.text.tokenize` with the tokenizer recorded in ``cli.json``
(default ``"rouge"``: lower-case, runs of ``[a-z0-9]``), the same that
:func:`pysynth.text.build_corpus` applied to the documents.  Phrases are not detected.
"""

from __future__ import annotations

import argparse
import gzip
import io
import json
import math
import operator
import os
import shutil
import stat
import sys
import tempfile
import time
import zlib
from array import array
from concurrent.futures import Future, ThreadPoolExecutor
from json.encoder import encode_basestring as _encode_str  # the C encoder, ensure_ascii=False
from pathlib import Path
from typing import IO, Any, Iterator, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

__all__ = ["add_commands", "load", "CliIndex", "CLI_FORMAT", "CLI_FORMAT_VERSION"]

CLI_FORMAT = "pysynth.retrieval.cli"
CLI_FORMAT_VERSION = 1
CLI_META = "cli.json"
VOCAB_FILE = "vocab.txt"
DOC_IDS_FILE = "doc_ids.jsonl"
DEFAULT_BATCH = 2_000
_PROGRESS_EVERY_S = 1.0


class CliError(Exception):
    """A user error: reported as ``pysynth: <message>`` with exit status 2."""


def _fail(msg: str) -> "SystemExit":
    print(f"pysynth: {msg}", file=sys.stderr, flush=True)
    return SystemExit(2)


# --------------------------------------------------------------------------
# argument types (argparse reports their errors with exit status 2)
# --------------------------------------------------------------------------
def _positive_int(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1, got {s!r}") from None
    if not 1 <= v <= 2**31 - 1:
        raise argparse.ArgumentTypeError(f"must be an integer in [1, 2**31 - 1], got {s!r}")
    return v


def _workers(s: str) -> int:
    try:
        v = int(s)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"must be an integer >= 1 or -1 (all cores), got {s!r}"
        ) from None
    if v != -1 and v < 1:
        raise argparse.ArgumentTypeError(f"must be an integer >= 1 or -1 (all cores), got {s!r}")
    return v


def _float_in(lo: float, lo_open: bool, hi: Optional[float], what: str):
    def parse(s: str) -> float:
        try:
            v = float(s)
        except ValueError:
            raise argparse.ArgumentTypeError(f"must be {what}, got {s!r}") from None
        ok = math.isfinite(v) and (v > lo if lo_open else v >= lo) and (hi is None or v <= hi)
        if not ok:
            raise argparse.ArgumentTypeError(f"must be {what}, got {s!r}")
        return v

    return parse


def _weights(s: str) -> Tuple[float, float, float]:
    what = (
        "3 comma-separated numbers >= 0, not all 0 (unigram,ordered,unordered), e.g. 0.85,0.10,0.05"
    )
    parts = s.split(",")
    try:
        w = tuple(float(p) for p in parts)
    except ValueError:
        raise argparse.ArgumentTypeError(f"must be {what}; got {s!r}") from None
    if len(w) != 3 or not all(math.isfinite(x) and x >= 0 for x in w) or sum(w) <= 0:
        raise argparse.ArgumentTypeError(f"must be {what}; got {s!r}")
    return w  # type: ignore[return-value]


# --------------------------------------------------------------------------
# JSON Lines input
# --------------------------------------------------------------------------
class _Input:
    """A JSON Lines source (a path or ``-`` = stdin; gzip is recognized by its magic bytes)."""

    def __init__(self, path: str, arg: str):
        self.path, self.arg = path, arg
        self.raw: Optional[IO[bytes]] = None
        self.size = 0
        if path == "-":
            raw: IO[bytes] = sys.stdin.buffer
            self.name = "<stdin>"
        else:
            self.name = path
            try:
                raw = open(path, "rb")
                self.raw = raw
                self.size = os.fstat(raw.fileno()).st_size
            except OSError as exc:
                if self.raw is not None:
                    self.raw.close()
                raise CliError(f"{arg} {path!r}: cannot read: {exc.strerror or exc}") from None
        try:  # peek: works on pipes too
            magic = raw.peek(2)[:2] if hasattr(raw, "peek") else b""
        except OSError as exc:
            raise CliError(f"{arg} {self.name!r}: cannot read: {exc.strerror or exc}") from None
        stream: IO[bytes] = gzip.GzipFile(fileobj=raw, mode="rb") if magic == b"\x1f\x8b" else raw
        self.text = io.TextIOWrapper(stream, encoding="utf-8", newline="\n")

    def fraction(self) -> Optional[float]:
        """Fraction of the (compressed) file read so far; None for stdin."""
        if self.raw is None or self.size <= 0:
            return None
        try:
            return min(1.0, self.raw.tell() / self.size)
        except (OSError, ValueError):
            return None

    def rows(self) -> Iterator[Tuple[int, dict]]:
        """(line number, row) of every non-blank line; a non-object or invalid line is an error."""
        lineno = 0
        try:
            for lineno, line in enumerate(self.text, 1):
                if line.isspace():
                    continue
                try:
                    row = _parse(line)
                except json.JSONDecodeError as exc:
                    raise CliError(
                        f"{self.arg} {self.name!r} line {lineno}: not valid JSON ({exc.msg})"
                    ) from None
                if not isinstance(row, dict):
                    raise CliError(
                        f"{self.arg} {self.name!r} line {lineno}: expected a JSON object, "
                        f"got {type(row).__name__}"
                    )
                yield lineno, row
        except UnicodeDecodeError as exc:
            raise CliError(
                f"{self.arg} {self.name!r}: not UTF-8 text after line {lineno} ({exc.reason})"
            ) from None
        except (OSError, EOFError, zlib.error) as exc:
            raise CliError(
                f"{self.arg} {self.name!r}: cannot read (corrupt gzip?): {exc}"
            ) from None

    def close(self) -> None:
        if self.raw is not None:
            self.text.close()
        else:
            try:
                self.text.detach()  # leave sys.stdin open
            except ValueError:
                pass


_MISSING = object()
_scan_once = (
    json.JSONDecoder().scan_once
)  # the C scanner behind json.loads, without its per-call overhead


def _parse(line: str) -> Any:
    """``json.loads(line)``, 2-3x faster for the usual line (no leading blanks)."""
    try:
        obj, end = _scan_once(line, 0)
    except (StopIteration, json.JSONDecodeError):
        return json.loads(line)  # leading blanks, or the error with json's message
    if end != len(line) and not line[end:].isspace():
        return json.loads(line)  # raises "Extra data"
    return obj


def _id_value(row: dict, key: str, src: "_Input", lineno: int) -> Any:
    v = row.get(key, _MISSING)
    if type(v) is str or type(v) is int:
        return v
    where = f"{src.arg} {src.name!r} line {lineno}"
    if v is _MISSING:
        raise CliError(f"{where}: missing field {key!r}")
    if isinstance(v, bool) or not isinstance(v, (str, int)):
        raise CliError(f"{where}: {key!r} must be a string or an integer, got {json.dumps(v)[:40]}")
    return v


def _text_value(row: dict, src: "_Input", lineno: int) -> str:
    t = row.get("text", _MISSING)
    if type(t) is str and t.isascii():
        return t
    where = f"{src.arg} {src.name!r} line {lineno}"
    if t is _MISSING:
        raise CliError(f"{where}: missing field 'text'")
    if not isinstance(t, str):
        raise CliError(f"{where}: 'text' must be a string, got {json.dumps(t)[:40]}")
    try:
        t.encode("utf-8")
    except UnicodeEncodeError:
        raise CliError(
            f"{where}: 'text' holds an unpaired surrogate escape (not valid Unicode)"
        ) from None
    return t


def _encode(v: Any) -> str:
    """Compact JSON of an id (str or int), written to the output as is: the input's JSON value."""
    if type(v) is int:
        return int.__repr__(v)
    s = _encode_str(v)
    if not s.isascii():
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:  # an unpaired surrogate: keep it as a \\u escape
            s = json.dumps(v)
    return s


# --------------------------------------------------------------------------
# the index directory
# --------------------------------------------------------------------------
class CliIndex(NamedTuple):
    """An index directory written by ``pysynth index build`` (see the module docstring)."""

    index: Any
    """The :class:`pysynth.retrieval.Index`."""
    terms: dict
    """term -> id."""
    doc_ids: List[str]
    """JSON encoding of the id of every document number."""
    oov_id: int
    """The reserved id of unknown query terms (cf = df = 0)."""
    tokenizer: str

    def query_ids(self, texts: Sequence[str], workers: int = 1) -> Tuple[np.ndarray, np.ndarray]:
        """Flat int32 term ids + int64 offsets of ``texts``; unknown terms -> ``oov_id``."""
        from pysynth import text

        toks = text.tokenize(list(texts), self.tokenizer, workers)
        lens = np.fromiter((len(t) for t in toks), dtype=np.int64, count=len(toks))
        off = np.zeros(len(toks) + 1, np.int64)
        np.cumsum(lens, out=off[1:])
        get, oov = self.terms.get, self.oov_id
        ids = np.fromiter(
            (get(w, oov) for t in toks for w in t), dtype=np.int32, count=int(off[-1])
        )
        return ids, off


def _crc32(data: bytes) -> int:
    return zlib.crc32(data) & 0xFFFFFFFF


def _check_out_dir(out: Path) -> None:
    """``out`` may be new, an empty directory or an index (replaced); never other data."""
    if out.exists() and not out.is_dir():
        raise CliError(f"--out {str(out)!r} exists and is not a directory")
    if out.is_dir() and any(out.iterdir()) and not (out / CLI_META).is_file():
        raise CliError(
            f"--out {str(out)!r} is a non-empty directory that holds no pysynth index; "
            "choose a new path (an existing index would be replaced)"
        )


def _write_index_dir(
    out: Path, ix, vocab: Sequence[str], enc_ids: Sequence[str], tokenizer: str
) -> None:
    """Save into a temporary directory beside ``out``, then rename it to ``out``."""
    import pysynth
    from pysynth.retrieval import FORMAT_VERSION

    _check_out_dir(out)
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.tmp"))
    except OSError as exc:
        raise CliError(f"--out {str(out)!r}: cannot write: {exc.strerror or exc}") from None
    try:
        ix.save(tmp)
        for i, t in enumerate(vocab):
            if "\n" in t:  # cannot happen with the library tokenizers; checked for the file format
                raise CliError(f"--in: term {i} {t!r} contains a newline")
        files = {
            VOCAB_FILE: "".join(t + "\n" for t in vocab).encode("utf-8"),
            DOC_IDS_FILE: "".join(s + "\n" for s in enc_ids).encode("utf-8"),
        }
        entries = {}
        for name, data in files.items():
            (tmp / name).write_bytes(data)
            entries[name] = {"bytes": len(data), "crc32": _crc32(data)}
        meta = {
            "format": CLI_FORMAT,
            "version": CLI_FORMAT_VERSION,
            "pysynth_version": pysynth.__version__,
            "tokenizer": tokenizer,
            "n_docs": len(enc_ids),
            "n_terms": len(vocab),
            "oov_id": len(vocab),
            "index_format_version": FORMAT_VERSION,
            "files": entries,
        }
        (tmp / CLI_META).write_text(json.dumps(meta, indent=1) + "\n", encoding="utf-8")
        mask = _umask()
        for f in tmp.iterdir():  # mkstemp / mkdtemp create 0600 / 0700: give the usual modes
            os.chmod(f, 0o666 & ~mask)
        os.chmod(tmp, 0o777 & ~mask)
        old = None
        if out.exists():  # an index (checked above) or an empty directory: swap it out
            old = Path(tempfile.mkdtemp(dir=out.parent, prefix=f".{out.name}.old"))
            os.replace(out, old / "index")
        os.replace(tmp, out)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        raise CliError(f"--out {str(out)!r}: cannot write: {exc.strerror or exc}") from None
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _umask() -> int:
    m = os.umask(0)
    os.umask(m)
    return m


def load(path: str, workers: int = 1, arg: str = "--index") -> CliIndex:
    """Open an index directory of ``pysynth index build``; :class:`CliError` if it is unusable."""
    from pysynth.retrieval import Index

    d = Path(path)
    where = f"{arg} {path!r}"
    if not d.is_dir():
        raise CliError(f"{where}: no such index directory (build one with `pysynth index build`)")
    meta_path = d / CLI_META
    if not meta_path.is_file():
        raise CliError(
            f"{where}: {CLI_META} is missing: not an index built by `pysynth index build`"
        )
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CliError(f"{where}: {CLI_META} is corrupt ({exc})") from None
    if not isinstance(meta, dict) or meta.get("format") != CLI_FORMAT:
        raise CliError(f"{where}: {CLI_META} does not describe a {CLI_FORMAT} index")
    if meta.get("version") != CLI_FORMAT_VERSION:
        raise CliError(
            f"{where}: built by pysynth {meta.get('pysynth_version', '?')} with index directory "
            "format "
            f"version {meta.get('version')!r}; this pysynth reads version {CLI_FORMAT_VERSION}: "
            "rebuild it with `pysynth index build`"
        )
    try:
        n_docs, n_terms, oov = (int(meta[k]) for k in ("n_docs", "n_terms", "oov_id"))
        tokenizer = meta["tokenizer"]
        files = {
            name: (int(meta["files"][name]["bytes"]), int(meta["files"][name]["crc32"]))
            for name in (VOCAB_FILE, DOC_IDS_FILE)
        }
    except (KeyError, TypeError, ValueError) as exc:
        raise CliError(f"{where}: {CLI_META} is corrupt or incomplete ({exc!r})") from None
    from pysynth.text import TOKENIZERS

    if tokenizer not in TOKENIZERS or oov != n_terms or n_docs < 1:
        raise CliError(
            f"{where}: {CLI_META} is corrupt (tokenizer {tokenizer!r}, n_docs {n_docs}, "
            f"n_terms {n_terms}, oov_id {oov})"
        )
    lines = {}
    for name, (size, crc) in files.items():
        try:
            data = (d / name).read_bytes()
        except OSError as exc:
            raise CliError(f"{where}: cannot read {name}: {exc.strerror}") from None
        if len(data) != size or _crc32(data) != crc:
            raise CliError(
                f"{where}: {name} is truncated or corrupt (size or CRC-32 differs from {CLI_META})"
            )
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise CliError(f"{where}: {name} is not UTF-8 ({exc.reason})") from None
        lines[name] = text[:-1].split("\n") if text else []
    vocab, doc_ids = lines[VOCAB_FILE], lines[DOC_IDS_FILE]
    if len(vocab) != n_terms or len(doc_ids) != n_docs:
        raise CliError(
            f"{where}: {VOCAB_FILE} / {DOC_IDS_FILE} have {len(vocab)} / {len(doc_ids)} lines, "
            f"{CLI_META} says {n_terms} / {n_docs}"
        )
    try:
        ix = Index.load(d, mmap=True, workers=workers)
    except ValueError as exc:
        raise CliError(f"{where}: {exc} (rebuild it with `pysynth index build`)") from None
    if ix.n_docs != n_docs or ix.vocab_size != n_terms + 1 or ix.cf[oov] != 0 or ix.df[oov] != 0:
        raise CliError(
            f"{where}: the index ({ix.n_docs} documents, {ix.vocab_size} term ids) does not match "
            f"{CLI_META} ({n_docs} documents, {n_terms} terms + 1 unused OOV id)"
        )
    terms = {t: i for i, t in enumerate(vocab)}
    if len(terms) != n_terms:
        raise CliError(f"{where}: {VOCAB_FILE} repeats a term")
    return CliIndex(ix, terms, doc_ids, oov, tokenizer)


# --------------------------------------------------------------------------
# output
# --------------------------------------------------------------------------
class _Output:
    """Text output to ``path``: a regular file is written to a temporary file beside it and
    renamed on :meth:`commit` (so a failed run leaves no partial file); ``-`` is stdout, and a
    device or FIFO (``/dev/null``, ``/dev/stdout``) is written to directly, never replaced."""

    def __init__(self, path: str):
        self.path = path
        self.tmp: Optional[Path] = None
        self.close_f = False
        if path == "-":
            self.f: IO[str] = sys.stdout
            return
        try:
            st: Optional[os.stat_result] = os.stat(path)
        except OSError:
            st = None
        if st is not None and stat.S_ISDIR(st.st_mode):
            raise CliError(f"--out {path!r} is a directory")
        if st is not None and not stat.S_ISREG(st.st_mode):
            try:
                self.f = open(path, "w", encoding="utf-8", newline="\n")
            except OSError as exc:
                raise CliError(f"--out {path!r}: cannot write: {exc.strerror or exc}") from None
            self.close_f = True
            return
        self.target = Path(
            os.path.realpath(path)
        )  # through a symlink: replace its target, keep the link
        try:
            self.target.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(
                dir=self.target.parent, prefix=f".{self.target.name}.", suffix=".tmp"
            )
        except OSError as exc:
            raise CliError(f"--out {path!r}: cannot write: {exc.strerror or exc}") from None
        self.tmp = Path(tmp)
        self._raw = os.fdopen(fd, "wb")
        gz = self.target.suffix == ".gz"
        stream = (
            gzip.GzipFile(fileobj=self._raw, mode="wb", compresslevel=6, mtime=0)
            if gz
            else self._raw
        )
        self.f = io.TextIOWrapper(stream, encoding="utf-8", newline="\n")

    def write(self, s: str) -> None:
        try:
            self.f.write(s)
        except OSError as exc:
            raise CliError(f"--out {self.path!r}: cannot write: {exc.strerror or exc}") from None

    def commit(self) -> None:
        try:
            if self.tmp is None:
                self.f.close() if self.close_f else self.f.flush()
                return
            self.f.close()
            self._raw.close()
            os.chmod(self.tmp, 0o666 & ~_umask())
            os.replace(self.tmp, self.target)
            self.tmp = None
        except OSError as exc:
            raise CliError(f"--out {self.path!r}: cannot write: {exc.strerror or exc}") from None

    def abort(self) -> None:
        try:
            if self.tmp is not None:
                self.f.close()
                self._raw.close()
            elif self.close_f:
                self.f.close()
        except Exception:  # noqa: BLE001 - best-effort clean-up of a failed run
            pass
        if self.tmp is not None:
            self.tmp.unlink(missing_ok=True)
            self.tmp = None


# --------------------------------------------------------------------------
# commands
# --------------------------------------------------------------------------
def _fmt_s(s: float) -> str:
    if s < 120:
        return f"{s:.1f} s"
    return f"{int(s // 3600)}:{int(s % 3600 // 60):02d}:{int(s % 60):02d}"


def _cmd_build(args) -> int:
    try:
        return _build(args)
    except CliError as exc:
        raise _fail(str(exc)) from None


def _build(args) -> int:
    from pysynth import text
    from pysynth.retrieval import Index

    t0 = time.perf_counter()
    out = Path(os.path.realpath(args.out))  # through a symlink: replace its target, keep the link
    _check_out_dir(out)  # before the work, and again before writing
    src = _Input(args.inp, "--in")
    enc_ids: List[str] = []
    texts: List[str] = []
    linenos = array("q")
    try:
        for lineno, row in src.rows():
            enc_ids.append(_encode(_id_value(row, "id", src, lineno)))
            texts.append(_text_value(row, src, lineno))
            linenos.append(lineno)
    finally:
        src.close()
    if len(set(enc_ids)) != len(enc_ids):  # the JSON encodings: "1" and 1 are different ids
        first: dict = {}
        for i, e in enumerate(enc_ids):
            if e in first:
                raise CliError(
                    f"--in {src.name!r} line {linenos[i]}: duplicate id {e} "
                    f"(first on line {linenos[first[e]]})"
                )
            first[e] = i
    del linenos
    if not texts:
        raise CliError(f"--in {src.name!r}: empty corpus (no rows)")
    t1 = time.perf_counter()
    print(
        f"pysynth index build: read {len(texts):,} documents in {t1 - t0:.1f} s",
        file=sys.stderr,
        flush=True,
    )
    try:
        corpus = text.build_corpus(texts, tokenizer=args.tokenizer, workers=args.workers)
        del texts
        if corpus.n_tokens == 0:
            raise CliError(
                f"--in {src.name!r}: empty corpus (none of the {corpus.n_docs:,} texts has a token "
                f"for the {args.tokenizer!r} tokenizer)"
            )
        t2 = time.perf_counter()
        # one more id than terms: the reserved OOV id, in no document (cf = df = 0)
        ix = Index.build(
            corpus.ids, corpus.offsets, vocab_size=corpus.n_terms + 1, workers=args.workers
        )
    except (ValueError, TypeError) as exc:
        raise CliError(f"--in {src.name!r}: {exc}") from None
    t3 = time.perf_counter()
    _write_index_dir(out, ix, corpus.vocab, enc_ids, args.tokenizer)
    t4 = time.perf_counter()
    print(
        f"pysynth index build: {ix.n_docs:,} documents, {corpus.n_terms:,} terms, "
        f"{ix.n_tokens:,} tokens -> {args.out} in {t4 - t0:.1f} s (read {t1 - t0:.1f} s, "
        f"tokenize {t2 - t1:.1f} s, "
        f"index {t3 - t2:.1f} s, write {t4 - t3:.1f} s)",
        file=sys.stderr,
        flush=True,
    )
    return 0


def hit_prefixes(doc_ids: Sequence[str]) -> List[str]:
    """``"[<doc id JSON>,"`` of every document number (one join and one split, fast)."""
    return ("[" + ",\n[".join(doc_ids) + ",").split("\n")


def format_runs(qids: Sequence[str], hits, prefix: Sequence[str]) -> str:
    """The output lines of a batch: ``{"qid":<qid JSON>,"hits":[[<doc id>,<score>],...]}``.

    ``hits`` is the :class:`~pysynth.retrieval.Hits` of :meth:`Index.search` with float64
    scores; a score is written as ``repr(float)``, the shortest string that reads back as the
    same float64.
    """
    lines = []
    add, rep = operator.add, float.__repr__
    for qid, drow, srow, c in zip(
        qids, hits.docs.tolist(), hits.scores.tolist(), hits.counts.tolist()
    ):
        h = (
            "],".join(map(add, [prefix[d] for d in drow[:c]], map(rep, srow[:c]))) + "]"
            if c
            else ""
        )
        lines.append(f'{{"qid":{qid},"hits":[{h}]}}\n')
    return "".join(lines)


def _cmd_search(args) -> int:
    try:
        return _search(args)
    except CliError as exc:
        raise _fail(str(exc)) from None


def _batches(src: _Input, size: int) -> Iterator[Tuple[List[str], List[str]]]:
    qids: List[str] = []
    texts: List[str] = []
    for lineno, row in src.rows():
        qids.append(_encode(_id_value(row, "qid", src, lineno)))
        texts.append(_text_value(row, src, lineno))
        if len(texts) == size:
            yield qids, texts
            qids, texts = [], []
    if texts:
        yield qids, texts


def _search(args) -> int:
    t0 = time.perf_counter()
    if args.model == "sdm" and (args.k1 is not None or args.b is not None):
        print("pysynth: note: --k1 / --b apply to --model bm25 only; ignored", file=sys.stderr)
    if args.model == "bm25" and (args.mu is not None or args.weights is not None):
        print("pysynth: note: --mu / --weights apply to --model sdm only; ignored", file=sys.stderr)
    params = dict(
        model=args.model,
        k=args.k,
        mu=2500.0 if args.mu is None else args.mu,
        weights=(0.85, 0.10, 0.05) if args.weights is None else args.weights,
        k1=1.5 if args.k1 is None else args.k1,
        b=0.75 if args.b is None else args.b,
    )
    cix = load(args.index, workers=args.workers)
    src = _Input(args.queries, "--queries")
    t_load = time.perf_counter() - t0
    prefix = hit_prefixes(cix.doc_ids)
    search_s = [0.0]

    def search(q: np.ndarray, qo: np.ndarray):
        ts = time.perf_counter()
        hits = cix.index.search(q, qo, workers=args.workers, dtype=np.float64, **params)
        search_s[0] += time.perf_counter() - ts
        return hits

    out = None
    n = n_read = n_empty = 0
    last = time.perf_counter()
    pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="pysynth-search")
    pending: Optional[Tuple[List[str], Future]] = None

    def emit(qids: List[str], fut: Future) -> None:
        """Format and write one searched batch (while the next batch is searched: the
        compiled search releases the GIL)."""
        nonlocal n, n_empty, last
        hits = fut.result()
        out.write(format_runs(qids, hits, prefix))
        n += len(qids)
        n_empty += int((hits.counts == 0).sum())
        now = time.perf_counter()
        if now - last >= _PROGRESS_EVERY_S:
            last = now
            rate = n / (now - t0)
            frac = src.fraction()
            pct = f" ({100 * frac:.0f}% of the input read)" if frac is not None else ""
            eta = f", ETA {_fmt_s((n_read / frac - n) / rate)}" if frac else ""
            print(
                f"pysynth search: {n:,} queries, {rate:,.0f} q/s{pct}{eta}",
                file=sys.stderr,
                flush=True,
            )

    try:
        out = _Output(args.out)
        # pipeline: batch i+1 is read and tokenized while batch i is searched, and batch i is
        # formatted and written while batch i+1 is searched
        for qids, texts in _batches(src, args.batch_size):
            q, qo = cix.query_ids(texts, workers=args.workers)
            n_read += len(qids)
            fut = pool.submit(search, q, qo)
            if pending is not None:
                emit(*pending)
            pending = (qids, fut)
        if pending is not None:
            emit(*pending)
        out.commit()
    except BaseException:
        if out is not None:
            out.abort()
        raise
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
        src.close()
    el = time.perf_counter() - t0
    print(
        f"pysynth search: {n:,} queries ({n_empty:,} without hits), {args.model} k={args.k} "
        f"-> {args.out} in {el:.2f} s, {n / max(el, 1e-9):,.0f} q/s (index load {t_load:.2f} s; "
        f"search {search_s[0]:.2f} s, overlapped with reading and writing)",
        file=sys.stderr,
        flush=True,
    )
    return 0


def add_commands(sub) -> None:
    """Register ``index`` (with ``index build``) and ``search`` under the top-level subparsers."""
    from pysynth.text import TOKENIZERS

    ip = sub.add_parser("index", help="build a retrieval index of a JSONL collection (SDM / BM25)")
    isub = ip.add_subparsers(dest="index_command", required=True)
    b = isub.add_parser(
        "build",
        help='index JSONL rows {"id", "text"} into a directory',
        description="Tokenize and index a JSONL collection for `pysynth search`.",
    )
    b.add_argument(
        "--in",
        dest="inp",
        required=True,
        metavar="DOCS.jsonl",
        help='JSONL (or .jsonl.gz) rows {"id": string or int, unique, "text": string}',
    )
    b.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="index directory (written atomically; an existing index there is replaced)",
    )
    b.add_argument(
        "--tokenizer",
        default="rouge",
        choices=TOKENIZERS,
        help="rouge (default): lower-case [a-z0-9]+ runs; whitespace: str.split()",
    )
    b.add_argument("--workers", type=_workers, default=1, help="threads (-1: all cores)")
    b.set_defaults(func=_cmd_build)

    s = sub.add_parser(
        "search",
        help="rank an index for JSONL queries with SDM or BM25",
        description="Top-k SDM / BM25 results of JSONL queries against a `pysynth index build` "
        "index.",
    )
    s.add_argument(
        "--index", required=True, metavar="DIR", help="directory written by `pysynth index build`"
    )
    s.add_argument(
        "--queries",
        required=True,
        metavar="Q.jsonl",
        help='JSONL (or .jsonl.gz) rows {"qid": string or int, "text": string}; - reads stdin',
    )
    s.add_argument(
        "--out",
        required=True,
        metavar="RUNS.jsonl",
        help='JSONL rows {"qid", "hits": [[doc_id, score], ...]} (.gz: compressed; -: stdout)',
    )
    s.add_argument("--model", default="sdm", choices=["sdm", "bm25"])
    s.add_argument("--k", type=_positive_int, default=100, help="results per query (default 100)")
    s.add_argument(
        "--mu",
        type=_float_in(0.0, True, None, "a finite number > 0"),
        default=None,
        help="SDM Dirichlet prior (default 2500)",
    )
    s.add_argument(
        "--weights",
        type=_weights,
        default=None,
        help="SDM weights of unigrams, #od:1 and #uw:8 windows (default 0.85,0.10,0.05)",
    )
    s.add_argument(
        "--k1",
        type=_float_in(0.0, False, None, "a finite number >= 0"),
        default=None,
        help="BM25 k1 (default 1.5)",
    )
    s.add_argument(
        "--b",
        type=_float_in(0.0, False, 1.0, "a number in [0, 1]"),
        default=None,
        help="BM25 b (default 0.75)",
    )
    s.add_argument(
        "--workers",
        type=_workers,
        default=1,
        help="threads (-1: all cores); output does not depend on it",
    )
    s.add_argument(
        "--batch-size",
        type=_positive_int,
        default=DEFAULT_BATCH,
        help=f"queries read and searched at a time (default {DEFAULT_BATCH:,}); bounds memory",
    )
    s.set_defaults(func=_cmd_search)
