"""Row and file I/O shared by every method: streaming readers and writers, atomic writes.

* :func:`read_rows` — rows (dicts) from JSON Lines (``.gz`` too), Parquet, ``-`` (stdin), or
  any iterable of dicts (a list, a generator, a Hugging Face ``datasets.Dataset``), streamed.
* :func:`write_rows` — rows streamed to JSON Lines (``.gz``: gzip-compressed) or Parquet
  (``-``: stdout), atomically.
* :func:`decode_text` / :data:`BOM` — one rule for every reader of user text: UTF-8, and a
  leading byte-order mark is dropped (Windows tools write one; it must not turn JSONL into
  "plain text" or break the first row).
* :func:`atomic_write` / :func:`atomic_write_text` / :func:`atomic_dir` — readers see the old
  file (directory) or the whole new one, never a part, even when the writer is killed.

No heavy imports: pyarrow loads only for Parquet.
"""
from __future__ import annotations

import codecs
import contextlib
import gc
import glob
import gzip
import itertools
import json
import math
import operator
import os
import shutil
import stat
import sys
import tempfile
import zlib
from json.encoder import c_make_encoder as _c_make_encoder
from json.encoder import encode_basestring as _encode_basestring
from pathlib import Path
from typing import IO, Any, Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Union

__all__ = ["BOM", "decode_text", "strip_bom", "chomp", "is_device", "atomic_open", "atomic_write", "atomic_write_text", "atomic_dir", "read_rows", "read_jsonl", "write_rows",
           "write_jsonl", "write_json", "is_parquet", "pyarrow_parquet"]

PathLike = Union[str, "os.PathLike[str]"]

#: the UTF-8 byte-order mark as text; every reader drops it at the start of a file
BOM = "\ufeff"


def strip_bom(text: str) -> str:
    """``text`` without a leading byte-order mark (:data:`BOM`)."""
    return text[1:] if text.startswith(BOM) else text


def chomp(line: str) -> str:
    """``line`` without its one line ending: ``\r\n``, ``\r`` or ``\n`` (lines read with
    ``newline=""``; a CRLF file's lines kept their ``\r`` before: found by ``fuzz/intake.py``)."""
    return line[:-2] if line.endswith("\r\n") else line[:-1] if line.endswith(("\r", "\n")) else line


def decode_text(raw: bytes) -> str:
    """UTF-8 ``raw`` as text, a leading byte-order mark dropped (``utf-8-sig``): the one decoding
    of every reader of user files.  Bytes that are only the start of a byte-order mark (a file cut
    inside it) are empty text, as Python's streamed ``utf-8-sig`` reads them.  Raises
    UnicodeDecodeError for bytes that are not UTF-8."""
    if raw and len(raw) < 3 and codecs.BOM_UTF8.startswith(raw):
        return ""
    return raw.decode("utf-8-sig")


# ------------------------------------------------------------------------------- atomic files

@contextlib.contextmanager
def atomic_open(path: PathLike, *, before_replace: Optional[Callable[[], None]] = None) -> Iterator[IO[bytes]]:
    """A binary file that replaces ``path`` when the block ends without error: written to a
    temporary file beside ``path``, fsynced, then ``os.replace``-d into place, so readers see
    the old file or the whole new one, never a part, even if the process is killed.  The
    temporary file is ``.<name>.<random>.tmp`` and is removed on error.

    ``before_replace``: called once the data is on disk, just before the rename (a companion
    file such as ``OUT.meta.json`` written there can never describe older data than ``path``
    holds: a kill between the two leaves the old data with the new metadata, whose fingerprint
    then does not match, never new data beside old metadata).

    A ``path`` that is a FIFO or a device (``/dev/null``, ``/dev/full``, a pipe) is written in
    place: renaming a regular file over it would replace the device node (as root) or fail;
    nothing is renamed then, so ``before_replace`` is not called.  A write error there (ENOSPC)
    is an OSError naming ``path``."""
    path = Path(path)
    if is_device(path):
        try:
            with open(path, "wb") as f:
                yield f
        except OSError as exc:
            if exc.filename is not None or not exc.errno:
                raise
            raise OSError(exc.errno, exc.strerror, str(path)) from None
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=str(path.parent))
    except OSError as exc:  # name the file the user asked for, not our temporary one
        raise OSError(exc.errno, f"cannot create a file in {path.parent} ({exc.strerror}); choose a writable "
                                 "output path", str(path)) from None
    try:
        with os.fdopen(fd, "wb") as f:
            yield f
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would make shared outputs unreadable to others
        if before_replace is not None:
            before_replace()
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def is_device(path: PathLike) -> bool:
    """Whether ``path`` exists (through symlinks) and is not a regular file or a directory: a
    device or a FIFO, written in place, with nothing (metadata, run directories) beside it."""
    try:
        mode = os.stat(path).st_mode
    except (OSError, ValueError):
        return False
    return not (stat.S_ISREG(mode) or stat.S_ISDIR(mode))


def atomic_write(path: PathLike, write: Callable[[IO[bytes]], None], *,
                 before_replace: Optional[Callable[[], None]] = None) -> None:
    """Call ``write(f)`` on :func:`atomic_open`'s file (``before_replace``: see there)."""
    with atomic_open(path, before_replace=before_replace) as f:
        write(f)


def is_gzip(path: PathLike) -> bool:
    """Whether an output ``path`` is written gzip-compressed (its name ends in ``.gz``)."""
    return str(path).endswith(".gz")


def _gzipped(write: Callable[[IO[bytes]], None]) -> Callable[[IO[bytes]], None]:
    # no file name and no time in the header: the same rows give the same bytes
    def write_gz(raw: IO[bytes]) -> None:
        with gzip.GzipFile(filename="", fileobj=raw, mode="wb", compresslevel=6, mtime=0) as gz:
            write(gz)  # type: ignore[arg-type]

    return write_gz


def atomic_write_text(path: PathLike, text: str) -> None:
    """:func:`atomic_write` of a UTF-8 string."""
    atomic_write(path, lambda f: f.write(text.encode("utf-8")))


def write_json(path: PathLike, obj: Any) -> None:
    """``obj`` as indented, key-sorted JSON (one trailing newline), written atomically."""
    atomic_write_text(path, json.dumps(obj, indent=1, sort_keys=True, ensure_ascii=False) + "\n")


@contextlib.contextmanager
def atomic_dir(path: PathLike) -> Iterator[Path]:
    """Build a directory atomically: yields an empty temporary directory beside ``path``; when
    the block ends without error it replaces ``path`` (an old one is moved aside, then removed).

    A killed writer leaves ``path`` as it was (plus a ``.<name>.<pid>.*.tmp`` folder that the
    next write removes once process ``pid`` is gone; a live concurrent writer's folder is left
    alone).  Between the two renames ``path`` is briefly absent, never half-written.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    _remove_stale(path)
    tmp = _tmp_dir(path)
    try:
        yield tmp
        _fsync_dir(tmp)
        os.chmod(tmp, 0o755)
        old = None
        if path.exists() or path.is_symlink():
            old = _tmp_dir(path)
            os.replace(path, old / "old")
        os.replace(tmp, path)
        _fsync_dir(path.parent)
        if old is not None:
            shutil.rmtree(old, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _tmp_dir(path: Path) -> Path:
    return Path(tempfile.mkdtemp(prefix=f".{path.name}.{os.getpid()}.", suffix=".tmp", dir=str(path.parent)))


def _remove_stale(path: Path) -> None:
    """Remove the temporary folders of writers of ``path`` that were killed (their process is
    gone).  ``.<name>.<pid>.<random>.tmp`` only: never another path's (``a.b`` for ``a``)."""
    prefix = f".{path.name}."
    for stale in path.parent.glob(f"{glob.escape(prefix)}*.tmp"):
        parts = stale.name[len(prefix): -len(".tmp")].split(".")
        if len(parts) == 2 and parts[0].isdigit() and not _alive(int(parts[0])):
            shutil.rmtree(stale, ignore_errors=True)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:  # EPERM: it exists, owned by someone else
        return True
    return True


def _fsync_dir(d: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(str(d), os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


# ------------------------------------------------------------------------------------- reading

def is_parquet(path: PathLike) -> bool:
    return str(path).endswith(".parquet")


def pyarrow_parquet(what: str):
    """``pyarrow.parquet``, or ImportError naming ``what`` and the extra to install."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise ImportError(f"{what}: Parquet needs pyarrow: pip install '.[parquet]'") from None
    return pq


@contextlib.contextmanager
def gc_paused():
    """The cyclic garbage collector off for the block (restored after): rows read from JSON
    (dicts, lists, str) form no cycles, and its passes over millions of new dicts doubled the
    time of reading them (issue 29)."""
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def read_jsonl(path: PathLike, what: str = "input") -> Iterator[dict]:
    """Rows of a JSON Lines file (``.gz`` is decompressed; ``-`` is stdin); blank lines are
    skipped, a leading byte-order mark too; a bad line raises ValueError naming ``file:line``."""
    if str(path) == "-":
        yield from _jsonl_lines(sys.stdin, "<stdin>", bom=True)
        return
    path = Path(path)
    if path.suffix != ".gz":
        with open(path, "rt", encoding="utf-8-sig") as f:
            yield from _jsonl_lines(f, str(path))
        return
    try:
        with gzip.open(path, "rt", encoding="utf-8-sig") as f:
            yield from _jsonl_lines(f, str(path))
    except (EOFError, gzip.BadGzipFile, zlib.error) as exc:  # cut, or not gzip at all
        raise ValueError(f"{what} {str(path)!r}: not a readable gzip file ({exc or type(exc).__name__}); "
                         "compress it again or drop the .gz suffix if it is plain JSON Lines") from None


#: json's own scanner (C when available), called on each row instead of json.loads: loads' Python
#: wrappers and a readline per row were most of reading a 3.17M-row file (issue 29)
_SCAN = json.JSONDecoder().scan_once


def _jsonl_lines(f, where: str, bom: bool = False) -> Iterator[dict]:
    if bom:  # stdin: row by row, so that a pipe's rows are not held back for a batch
        for lineno, line in enumerate(f, 1):
            yield from _jsonl_line(strip_bom(line) if lineno == 1 else line, where, lineno)
        return
    scan, lineno = _SCAN, 0
    for lines in iter(lambda: f.readlines(1 << 20), []):
        # a batch whose every line is one JSON value from its first character, followed by its
        # newline alone, reads as json.loads reads it line by line; any other (blank lines,
        # spaces, a bad line, a last line without its newline) is read line by line
        try:  # (the scanner's StopIteration for "no value here" ends the map early: counted below)
            parsed = list(map(scan, lines, itertools.repeat(0, len(lines))))
        except ValueError:
            parsed = []
        if len(parsed) == len(lines) and lines[-1].endswith("\n") \
                and all(end == n - 1 for (_, end), n in zip(parsed, map(len, lines))):
            lineno += len(lines)
            yield from map(_FIRST, parsed)
            continue
        for line in lines:
            lineno += 1
            yield from _jsonl_line(line, where, lineno)


def _jsonl_line(line: str, where: str, lineno: int) -> Iterator[Any]:
    if line.strip():
        try:
            yield json.loads(line)
        except json.JSONDecodeError as exc:
            raise ValueError(f"{where}:{lineno}: not valid JSON ({exc.msg})") from None


_FIRST = operator.itemgetter(0)


def read_rows(source, what: str = "input", *, batch_size: int = 65_536) -> Iterable[Mapping]:
    """Rows of ``source``, streamed.

    Parameters
    ----------
    source : path, ``"-"`` or iterable of dicts
        JSON Lines (``.jsonl``, ``.json``, ``.gz``), Parquet (``.parquet``, read in record
        batches of ``batch_size``), ``-`` for JSON Lines on stdin, or any iterable of dicts
        (a list, a generator, a ``datasets.Dataset``), returned as it is.
    what : str
        The argument's name in error messages.

    Raises
    ------
    ValueError
        a path that does not exist.
    TypeError
        a mapping or another non-iterable.
    """
    if isinstance(source, (str, os.PathLike)):
        if str(source) == "-":
            return read_jsonl("-")
        path = Path(source)
        if not path.exists():
            raise ValueError(f"{what}: no such file {str(path)!r}")
        if path.is_dir():
            raise ValueError(f"{what}: {str(path)!r} is a directory, not a JSON Lines or Parquet file")
        if is_parquet(path):
            return _parquet_rows(path, what, batch_size)
        return read_jsonl(path, what)
    if isinstance(source, Mapping):
        raise TypeError(f"{what} must be a path or an iterable of row dicts, got a mapping")
    if isinstance(source, (bytes, bytearray)) or not hasattr(source, "__iter__"):
        raise TypeError(f"{what} must be a path or an iterable of row dicts, got {type(source).__name__}")
    return source  # any iterable of dicts: a list, a generator, a datasets.Dataset


def _parquet_rows(path: Path, what: str, batch_size: int) -> Iterator[dict]:
    pq = pyarrow_parquet(what)
    f = pq.ParquetFile(path)
    for batch in f.iter_batches(batch_size=batch_size):
        yield from batch.to_pylist()


# ------------------------------------------------------------------------------------- writing

_JSON_DEFAULT = json.JSONEncoder(ensure_ascii=False).default


def _json_text(row: Any) -> str:
    """``json.dumps(row, ensure_ascii=False)``, the same text: json's C encoder called directly
    (``dumps`` with a non-default argument builds a ``JSONEncoder`` per call, most of its time on
    small rows); a fresh circular-reference memo per row, as ``dumps`` keeps."""
    if _c_make_encoder is None:
        return json.dumps(row, ensure_ascii=False)
    return "".join(_c_make_encoder({}, _JSON_DEFAULT, _encode_basestring, None, ": ", ", ", False, False, True)(row, 0))


def _jsonl_text(batch: List[Any]) -> str:
    """The JSON Lines of ``batch``: the text of :func:`_json_text` per row. Rows that are dicts
    with the same str keys are encoded column by column (C-level passes per column and one
    format per row: 2.5x faster than an encoder call per row on K2Q rows, issue 29)."""
    if set(map(type, batch)) == {dict}:
        keys = set(map(tuple, batch))
        if len(keys) == 1:
            (ks,) = keys
            if ks and set(map(type, ks)) == {str}:
                try:
                    cols = [_json_values([r[k] for r in batch]) for k in ks]
                except (TypeError, ValueError):
                    pass  # a value JSON cannot take: raised row by row below, as it always was
                else:
                    row = "{" + ", ".join(_encode_basestring(k).replace("%", "%%") + ": %s" for k in ks) + "}"
                    return "\n".join(map(row.__mod__, zip(*cols))) + "\n"
    return "\n".join(map(_json_text, batch)) + "\n"


def _json_values(col: List[Any]) -> List[str]:
    """The JSON text of each value, as json's C encoder writes it inside a row."""
    types = set(map(type, col))
    if types == {str}:
        return list(map(_encode_basestring, col))
    if types == {int}:
        return list(map(int.__repr__, col))
    if types == {float} and math.isfinite(sum(col)):  # no NaN / inf among them
        distinct = set(col)
        if len(distinct) * 4 > len(col):
            return list(map(float.__repr__, col))
        # a float's shortest repr is ~1 us here; scores (1 / rank, fractions of N) repeat a few
        # values. 0.0 and -0.0 are one key: zeros are written one by one
        text = {v: float.__repr__(v) for v in distinct}
        return [text[v] if v else float.__repr__(v) for v in col]
    return [_VALUE_TEXT.get(type(v), _json_text)(v) for v in col]


def _float_text(v: float) -> str:
    if v != v:
        return "NaN"
    if v in (math.inf, -math.inf):
        return "Infinity" if v > 0 else "-Infinity"
    return float.__repr__(v)


_VALUE_TEXT: Dict[type, Callable[[Any], str]] = {
    str: _encode_basestring, int: int.__repr__, float: _float_text, type(None): lambda v: "null",
    bool: lambda v: "true" if v else "false"}


def write_jsonl(path: PathLike, rows: Iterable[Mapping], *,
                before_replace: Optional[Callable[[], None]] = None) -> int:
    """Rows as JSON Lines (UTF-8, ``ensure_ascii=False``), streamed and atomic; ``-`` writes
    to stdout; a name ending in ``.gz`` is gzip-compressed (no name or time in the header, so
    equal rows give equal bytes).  ``before_replace``: see :func:`atomic_open`.  Returns the
    number of rows written."""
    n = 0

    def write(f):
        nonlocal n
        batch: List[Any] = []
        for r in rows:
            batch.append(r)
            if len(batch) == 4096:  # one encode and one write per batch, not per row
                f.write(_jsonl_text(batch).encode("utf-8"))
                n += len(batch)
                batch.clear()
        if batch:
            f.write(_jsonl_text(batch).encode("utf-8"))
            n += len(batch)

    if str(path) == "-":
        out = sys.stdout.buffer
        write(out)
        out.flush()
    else:
        atomic_write(path, _gzipped(write) if is_gzip(path) else write, before_replace=before_replace)
    return n


def write_rows(path: PathLike, rows: Iterable[Mapping], *, schema=None,
               metadata: Optional[Dict[str, str]] = None, batch_size: int = 100_000,
               before_replace: Optional[Callable[[], None]] = None) -> int:
    """Rows to ``path``: Parquet when the name ends in ``.parquet`` (streamed in row groups of
    ``batch_size``; ``schema`` a ``pyarrow.Schema`` or None to infer it from the first batch;
    ``metadata`` added to the schema's key-value metadata), else JSON Lines (``.gz``:
    gzip-compressed).  Atomic; ``before_replace`` (see :func:`atomic_open`) runs after the data
    is written and before it is renamed into place.  Returns the number of rows written."""
    if not is_parquet(path):
        return write_jsonl(path, rows, before_replace=before_replace)
    pq = pyarrow_parquet(str(path))
    import pyarrow as pa

    it = iter(rows)
    n = 0

    def write(f):
        nonlocal n, schema
        first = True
        writer = None
        try:
            while True:
                chunk = list(itertools.islice(it, batch_size))
                if not chunk and not first:
                    break
                first = False
                if schema is None:
                    schema = pa.Table.from_pylist(chunk).schema if chunk else pa.schema([])
                if metadata and writer is None:
                    schema = schema.with_metadata({**(schema.metadata or {}),
                                                   **{k.encode(): v.encode() for k, v in metadata.items()}})
                if writer is None:
                    writer = pq.ParquetWriter(f, schema)
                cols = {k: [r.get(k) for r in chunk] for k in schema.names}
                writer.write_table(pa.Table.from_pydict(cols, schema=schema))
                n += len(chunk)
                if len(chunk) < batch_size:
                    break
        finally:
            if writer is not None:
                writer.close()

    atomic_write(path, write, before_replace=before_replace)
    return n
