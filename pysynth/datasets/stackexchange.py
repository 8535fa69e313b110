"""Streaming reader for Stack Exchange data dumps (``Posts.xml``, ``PostHistory.xml``, ``PostLinks.xml``).

The official dumps (https://archive.org/details/stackexchange) hold one ``.7z`` archive per site
with one XML file per table; each table is ``<posts>`` (etc.) around one ``<row Attr="..."/>``
per record. :func:`iter_rows` parses a table with expat in fixed-size chunks, so memory stays
constant whatever the site size; it reads ``.xml``, ``.xml.gz`` and tables inside ``.7z`` archives
(streamed from the ``7z``/``7za``/``7zz`` command when one is on ``PATH``, else extracted to a
temporary file with ``py7zr``). Used by the question-rewriting miner (:mod:`pysynth.mqr`, Chu et
al. 2020) and by duplicate-question training data (:mod:`pysynth.dup`, Rücklé et al. 2019);
:func:`duplicate_links` reads the duplicate links both use.

Every problem is a ``ValueError`` naming the file: broken or truncated XML (with the line), a
corrupt or truncated gzip or 7z archive, a missing table, a file holding another table.
"""
from __future__ import annotations

import gzip
import os
import shutil
import subprocess
import tempfile
import zlib
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Dict, Iterator, List, Optional, Tuple, Union

__all__ = ["TABLES", "Dump", "iter_rows", "open_dump", "safe_member", "duplicate_links", "question_titles", "title_events",
           "DUPLICATE_LINK", "TITLE_EVENTS", "MOVE_EVENTS"]

#: table name -> root element of its XML file
TABLES = {"Posts": "posts", "PostHistory": "posthistory", "PostLinks": "postlinks", "Tags": "tags",
          "Users": "users", "Votes": "votes", "Comments": "comments", "Badges": "badges"}
_CHUNK = 1 << 20
#: ``PostLinks.LinkTypeId`` of a duplicate link (1: linked, 3: duplicate)
DUPLICATE_LINK = "3"
#: ``PostHistory.PostHistoryTypeId`` of the title events: the initial title, a title edit, a rollback
TITLE_EVENTS = {"1": "initial", "4": "edit", "7": "rollback"}
#: ``PostHistoryTypeId`` of a post migrated to / from another site (17, 18, 35-38) or merged
MOVE_EVENTS = frozenset({"17", "18", "35", "36", "37", "38"})

PathLike = Union[str, "os.PathLike[str]"]


@dataclass(frozen=True)
class _Source:
    """Where a table is: a plain or gzip'd file, or a member of a 7z archive."""

    name: str  # for messages: the file, or archive:member
    path: Path
    member: Optional[str] = None


class Dump:
    """One site's dump: a directory of ``<Table>.xml[.gz]`` files, a directory holding one
    ``.7z`` archive, or a ``.7z`` archive itself.

    Parameters
    ----------
    path : the directory or archive.
    site : the site's name in output rows (default: the directory or archive name without
        ``.stackexchange.com``, ``.7z`` etc.: ``ai``, ``askubuntu``, ``bicycles.meta``).
    """

    def __init__(self, path: PathLike, site: Optional[str] = None):
        p = Path(path)
        if not p.exists():
            raise ValueError(f"dump {str(p)!r}: no such directory or archive")
        self.path = p
        self.archive: Optional[Path] = None
        if p.is_file():
            if not p.name.endswith(".7z"):
                raise ValueError(f"dump {str(p)!r}: expected a directory of dump tables or a .7z archive")
            self.archive = p
        else:
            sevens = sorted(p.glob("*.7z"))
            has_xml = any(p.glob("*.xml")) or any(p.glob("*.xml.gz"))
            if len(sevens) == 1 and not has_xml:
                self.archive = sevens[0]
        self.site = site or _site_name(self.archive if self.archive is not None and p.is_file() else p)
        self._members: Optional[List[str]] = None

    def __repr__(self) -> str:
        return f"Dump({str(self.path)!r}, site={self.site!r})"

    def tables(self) -> List[str]:
        """The tables this dump has (of :data:`TABLES`)."""
        return [t for t in TABLES if self._find(t) is not None]

    def has(self, table: str) -> bool:
        return self._find(table) is not None

    def _find(self, table: str) -> Optional[_Source]:
        if table not in TABLES:
            raise ValueError(f"table: unknown Stack Exchange table {table!r}; known: {', '.join(TABLES)}")
        if self.archive is not None:
            members = self._archive_members()
            for m in members:
                if Path(m).name.lower() == f"{table.lower()}.xml":
                    return _Source(f"{self.archive}:{m}", self.archive, m)
            return None
        for name in (f"{table}.xml", f"{table}.xml.gz"):
            f = self.path / name
            if f.is_file():
                return _Source(str(f), f)
        return None

    def source(self, table: str) -> _Source:
        src = self._find(table)
        if src is None:
            where = self.archive or self.path
            raise ValueError(f"dump {str(where)!r}: no {table} table ({table}.xml, {table}.xml.gz or inside a .7z); "
                             f"it has: {', '.join(self.tables()) or 'none'}")
        return src

    def rows(self, table: str) -> Iterator[Dict[str, str]]:
        """Rows of ``table`` as attribute dicts (all values are strings), in file order."""
        return iter_rows(self.source(table), TABLES[table])

    def _archive_members(self) -> List[str]:
        if self._members is None:
            self._members = _7z_list(self.archive)
        return self._members


def open_dump(path: Union[PathLike, Dump], site: Optional[str] = None) -> Dump:
    """``path`` as a :class:`Dump` (a Dump is returned as it is)."""
    return path if isinstance(path, Dump) else Dump(path, site)


def duplicate_links(dump: Union[PathLike, Dump]) -> Iterator[Tuple[str, str]]:
    """``(PostId, RelatedPostId)`` of every duplicate link (``LinkTypeId`` 3) of ``PostLinks``,
    in file order, repeats and self-links included; nothing when the dump has no PostLinks table.

    Parameters
    ----------
    dump : path or Dump

    Returns
    -------
    iterator of (str, str)
    """
    d = open_dump(dump)
    if not d.has("PostLinks"):
        return
    for r in d.rows("PostLinks"):
        if r.get("LinkTypeId") == DUPLICATE_LINK:
            yield r.get("PostId", ""), r.get("RelatedPostId", "")


def title_events(dump: Union[PathLike, Dump]) -> Iterator[Tuple[int, str, Optional[str]]]:
    """``(post id, kind, text)`` of every title event of ``PostHistory``, in file order.

    ``kind`` is ``"initial"``, ``"edit"`` or ``"rollback"`` (:data:`TITLE_EVENTS`) with the title
    text (None when the row has none), or ``"moved"`` (:data:`MOVE_EVENTS`) with None.

    Parameters
    ----------
    dump : path or Dump

    Returns
    -------
    iterator of (int, str, str or None)
    """
    for r in open_dump(dump).rows("PostHistory"):
        t = r.get("PostHistoryTypeId")
        if t in TITLE_EVENTS:
            yield int(r["PostId"]), TITLE_EVENTS[t], r.get("Text")
        elif t in MOVE_EVENTS:
            yield int(r["PostId"]), "moved", None


def question_titles(dump: Union[PathLike, Dump]) -> Iterator[Tuple[int, str]]:
    """``(post id, title)`` of every question (``PostTypeId`` 1 with a ``Title``) of ``Posts``,
    in file order.

    Parameters
    ----------
    dump : path or Dump

    Returns
    -------
    iterator of (int, str)
    """
    for r in open_dump(dump).rows("Posts"):
        pid = int(r["Id"])  # every row: a malformed id fails whatever the row holds
        if r.get("PostTypeId") == "1" and r.get("Title") is not None:
            yield pid, r["Title"]


def _site_name(p: Path) -> str:
    """``ai.stackexchange.com.7z`` -> ``ai``, ``meta.ai.stackexchange.com.7z`` -> ``ai.meta``,
    ``askubuntu.com.7z`` -> ``askubuntu``; a directory keeps its name."""
    name = p.name.removesuffix(".7z")
    meta = name.startswith("meta.")
    name = name.removeprefix("meta.")
    for suffix in (".stackexchange.com", ".com", ".net"):
        name = name.removesuffix(suffix)
    return (name or p.name) + (".meta" if meta else "")


def iter_rows(source: Union[PathLike, _Source], root: Optional[str] = None) -> Iterator[Dict[str, str]]:
    """Stream the ``<row>`` elements of one dump table as dicts of their attributes.

    Parameters
    ----------
    source : a ``.xml`` / ``.xml.gz`` file (or a table of :class:`Dump`).
    root : the expected root element (``posts``, ``posthistory``, ...); None accepts any.

    Raises
    ------
    ValueError
        the file is not there, is broken or truncated XML, a corrupt gzip, or another table.
    """
    import xml.parsers.expat as expat

    if not isinstance(source, _Source):
        p = Path(source)
        if not p.is_file():
            raise ValueError(f"{str(p)!r}: no such dump table file")
        source = _Source(str(p), p)
    rows: List[Dict[str, str]] = []
    seen_root: List[str] = []

    def start(tag, attrs):
        if not seen_root:
            seen_root.append(tag)
            if root is not None and tag != root:
                raise ValueError(f"{source.name}: holds <{tag}> rows, not the <{root}> table")
        elif tag == "row":
            rows.append(attrs)

    parser = expat.ParserCreate()
    parser.buffer_text = True
    parser.StartElementHandler = start
    with _open(source) as f:
        final = False
        try:
            while not final:
                try:
                    chunk = f.read(_CHUNK)
                except (EOFError, zlib.error, gzip.BadGzipFile, OSError) as exc:
                    raise ValueError(f"{source.name}: cannot read (truncated or corrupt archive?): {exc}") from None
                final = not chunk
                parser.Parse(chunk, final)
                if rows:
                    yield from rows
                    rows.clear()
        except expat.ExpatError as exc:
            # an error at the end of the input: the file stops inside the table (a cut download)
            what = "truncated XML (the file ends inside the table)" if final else "broken XML"
            raise ValueError(f"{source.name}: {what} at line {exc.lineno}, column {exc.offset}: "
                             f"{expat.ErrorString(exc.code)}") from None
    if not seen_root:
        raise ValueError(f"{source.name}: empty file (no XML root element)")


@contextmanager
def _open(source: _Source) -> Iterator[IO[bytes]]:
    if source.member is None:
        with open(source.path, "rb") as raw:
            magic = raw.read(2)
            raw.seek(0)
            if magic == b"\x1f\x8b":
                with gzip.GzipFile(fileobj=raw) as gz:
                    yield gz
            else:
                yield raw
        return
    exe = _7z_exe()
    if exe is not None:  # streamed: constant memory
        # "--": an archive or member name starting with "-" is a name, never a switch
        proc = subprocess.Popen([exe, "x", "-so", "--", str(source.path), source.member], stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
        try:
            yield proc.stdout
        finally:
            proc.stdout.close()
            err = proc.stderr.read().decode("utf-8", "replace")
            code = proc.wait()
        if code != 0:
            raise ValueError(f"{source.name}: 7z could not extract it (exit {code}): {' '.join(err.split())[:300]}")
        return
    py7zr = _py7zr()
    with tempfile.TemporaryDirectory(prefix="pysynth-7z-") as tmp:
        try:
            with py7zr.SevenZipFile(source.path, "r") as z:
                z.extract(path=tmp, targets=[source.member])
        except Exception as exc:  # py7zr raises its own types for corrupt and truncated archives
            raise ValueError(f"{source.name}: cannot extract (corrupt or truncated .7z?): {exc}") from None
        target = (Path(tmp) / safe_member(source.member, source.path)).resolve()
        if not target.is_relative_to(Path(tmp).resolve()):  # _7z_list refused such names; never read outside tmp
            raise ValueError(f"{source.name}: member resolves outside the extraction folder; refusing it")
        with open(target, "rb") as f:
            yield f


def _7z_exe() -> Optional[str]:
    for name in ("7z", "7za", "7zz"):
        exe = shutil.which(name)
        if exe:
            return exe
    return None


def _py7zr():
    try:
        import py7zr
    except ImportError:
        raise ValueError("reading .7z dumps needs the 7z command (Debian: p7zip-full) or py7zr "
                         "(pip install '.[stackexchange]'); or extract the archive first") from None
    return py7zr


def safe_member(name: str, archive: Path) -> str:
    """``name``, a member of ``archive``, when it is a relative path inside the archive; ValueError
    for an absolute name (``/etc/x``, ``\\x``, ``C:x``) or one with a ``..`` part: extracted, it
    would be read from (or written to) a path outside the extraction folder (issue 27)."""
    parts = name.replace("\\", "/").split("/")
    if name.startswith(("/", "\\")) or (len(name) > 1 and name[1] == ":") or ".." in parts:
        raise ValueError(f"{archive}: member {name[:200]!r} is an absolute path or contains '..'; a dump archive "
                         "holds relative names only, so this one was crafted or damaged: refusing it")
    return name


def _7z_list(archive: Path) -> List[str]:
    exe = _7z_exe()
    if exe is not None:
        out = subprocess.run([exe, "l", "-slt", "-ba", "--", str(archive)], capture_output=True, text=True,
                             stdin=subprocess.DEVNULL)
        if out.returncode != 0:
            raise ValueError(f"{archive}: not a readable .7z archive: {' '.join(out.stderr.split())[:300]}")
        names = [line[7:] for line in out.stdout.splitlines() if line.startswith("Path = ")]
    else:
        py7zr = _py7zr()
        try:
            with py7zr.SevenZipFile(archive, "r") as z:
                names = list(z.getnames())
        except Exception as exc:
            raise ValueError(f"{archive}: not a readable .7z archive: {exc}") from None
    return [safe_member(n, archive) for n in names]
