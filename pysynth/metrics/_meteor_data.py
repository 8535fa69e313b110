"""Meteor 1.5's English resources, read without Java (Denkowski & Lavie 2014).

The jar that ``pycocoevalcap`` ships holds the function-word list (``function/english.words``),
WordNet's morphological exceptions and synsets (``synonym/english.exceptions``,
``synonym/english.synsets``) and the nonbreaking-prefix list of its normalizer
(``nonbreaking/english.prefixes``); ``data/paraphrase-en.gz`` beside it holds the paraphrase
table (5.3 M phrase pairs, 62 MB). The jar is a zip file: Python reads it directly, once; the four
lists are then kept uncompressed beside the paraphrase cache (``words-en.<key>.bin``).

The paraphrase table is parsed once into a compact binary cache (``paraphrase-en.<key>.<version>.bin`` in
``$PYSYNTH_METEOR_CACHE``, else ``$XDG_CACHE_HOME/pysynth/meteor``, else
``~/.cache/pysynth/meteor``), written atomically (:func:`pysynth.io.atomic_open`) with a CRC-32 of
its payload; later calls memory-map it as memoryviews (numpy is imported only to build it). Layout (all little-endian, 64-byte aligned arrays):

* ``vocab_blob`` / ``vocab_off``: the table's words (UTF-8), id = order of first appearance;
* ``phr_tok`` / ``phr_off``: every distinct phrase as word ids;
* ``grp_ptr`` / ``grp_par``: for phrase ``p`` read as the table's first side, the phrases it
  paraphrases to, in file order (Meteor's transducer emits them in that order);
* ``htab_key`` / ``htab_val``: an open-addressing table (linear probing) from the FNV-1a hash
  of a phrase's word ids to its phrase id, for phrases that have a paraphrase;
* ``pfx_key`` / ``pfx_val``: the same kind of table holding the hashes of those phrases' proper
  prefixes (``pfx_val`` 0, -1 for an empty slot): lookups stop where the transducer's trie does;
* ``grp_hash``: the hash of each ``grp_par`` entry's phrase, so that the compiled matcher scans a
  phrase's paraphrases sequentially against the hashes of a sentence's word spans.
"""
from __future__ import annotations

import hashlib
import json
import os
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Dict, Iterable, List, Optional, Tuple

if TYPE_CHECKING:  # numpy is imported by the functions that build the cache, not by loading it
    import numpy as np

__all__ = ["MeteorFiles", "find_files", "load_text_resources", "paraphrase_cache", "load_paraphrase",
           "build_paraphrase_cache", "paraphrase_arrays", "fnv_ids"]

FNV_OFFSET = 0xCBF29CE484222325
FNV_PRIME = 0x100000001B3
_MASK = (1 << 64) - 1
_MAGIC = b"PSMTRPARA3\n"
_ARRAYS = ("vocab_blob", "vocab_off", "phr_tok", "phr_off", "grp_ptr", "grp_par", "htab_key", "htab_val",
           "pfx_key", "pfx_val", "grp_hash")
_FIX = ("pip install pycocoevalcap (it ships meteor-1.5.jar and data/paraphrase-en.gz; no Java needed "
        "for the compiled flavor), or set PYSYNTH_METEOR_JAR to meteor-1.5.jar and PYSYNTH_METEOR_DATA to "
        "the folder holding paraphrase-en.gz")


@dataclass(frozen=True)
class MeteorFiles:
    jar: Path
    paraphrase: Path


def pycoco_meteor_dir() -> Optional[Path]:
    """The folder of pycocoevalcap's ``meteor/meteor.py`` (the jar lies beside it), or None.

    Found without importing pycocoevalcap (its module starts nothing, but importing it cost a
    one-shot run its ``subprocess`` import): the first folder of the (namespace) package that has it.
    """
    from importlib.util import find_spec

    try:
        spec = find_spec("pycocoevalcap")
    except (ImportError, ValueError):
        return None
    for base in (spec.submodule_search_locations or []) if spec is not None else []:
        mod = Path(base) / "meteor" / "meteor.py"
        if mod.is_file():
            return mod.resolve().parent
    return None


def find_files() -> MeteorFiles:
    """The jar and the paraphrase table: ``$PYSYNTH_METEOR_JAR`` / ``$PYSYNTH_METEOR_DATA`` or pycocoevalcap's.

    Raises
    ------
    ImportError
        neither is available; the message names the fix.
    """
    jar_env = os.environ.get("PYSYNTH_METEOR_JAR")
    data_env = os.environ.get("PYSYNTH_METEOR_DATA")
    jar = Path(jar_env) if jar_env else None
    data = Path(data_env) if data_env else None
    if jar is None or data is None:
        base = pycoco_meteor_dir()
        if jar is None and base is not None:
            jar = base / "meteor-1.5.jar"
        if data is None:
            data = (jar.parent / "data") if jar is not None else None
    if jar is None or not jar.is_file():
        raise ImportError(f"METEOR: meteor-1.5.jar not found ({jar or 'no pycocoevalcap'}); {_FIX}")
    para = data / "paraphrase-en.gz" if data is not None and data.is_dir() else data
    if para is None or not para.is_file():
        raise ImportError(f"METEOR: paraphrase-en.gz not found ({para}); {_FIX}")
    return MeteorFiles(jar, para)


def _nbp_table(prefixes: bytes) -> Dict[str, int]:
    """The normalizer's nonbreaking prefixes (``nonbreaking/english.prefixes``): ``{prefix: 1}``, or
    2 for a prefix marked ``#NUMERIC_ONLY#`` (nonbreaking before a number only)."""
    import re

    out: Dict[str, int] = {}
    for line in prefixes.decode("utf-8", "replace").splitlines():
        tok = re.split("[ \t\n\r\x0c]+", line.strip(" \t\n\r\x0c"))  # java.util.StringTokenizer's
        tok = [t for t in tok if t]
        if not tok or tok[0].startswith("#"):
            continue
        out[tok[0]] = 2 if len(tok) > 1 and tok[1] == "#NUMERIC_ONLY#" else 1
    return out


_TEXT_NAMES = {"function": "function/english.words", "exceptions": "synonym/english.exceptions",
               "synsets": "synonym/english.synsets", "prefixes": "nonbreaking/english.prefixes"}
_TEXT_MAGIC = b"PSMTRWORDS1\n"


def _text_cache(jar: Path) -> Path:
    st = jar.stat()
    key = hashlib.sha1(f"{jar.resolve()}|{st.st_size}|{int(st.st_mtime)}".encode()).hexdigest()[:16]
    return _cache_dir() / f"words-en.{key}.bin"


def load_text_resources(jar: Path, cache: bool = True) -> Dict[str, bytes]:
    """The small resources inside the jar, as raw bytes.

    With ``cache``, they are kept uncompressed beside the paraphrase cache (``words-en.<key>.bin``,
    keyed by the jar's path, size and mtime): one plain read instead of inflating the 3.7 MB synset
    file from the zip (about 30 ms of a one-shot run).
    """
    path = _text_cache(jar) if cache else None
    if path is not None:
        try:
            raw = path.read_bytes()
        except OSError:
            raw = b""
        got = _parse_text_cache(raw)
        if got is not None:
            return got
    import zipfile  # only when the cache of the word lists is missing

    try:
        with zipfile.ZipFile(jar) as z:
            out = {k: z.read(v) for k, v in _TEXT_NAMES.items()}
    except (zipfile.BadZipFile, KeyError, OSError) as e:
        raise ValueError(f"METEOR: {jar} is not the Meteor 1.5 jar ({e}); {_FIX}") from None
    if path is not None:
        from pysynth.io import atomic_open

        try:
            with atomic_open(path) as f:
                f.write(_TEXT_MAGIC + b"".join(len(out[k]).to_bytes(8, "little") for k in _TEXT_NAMES))
                f.write(b"".join(out[k] for k in _TEXT_NAMES))
        except OSError:
            pass  # a read-only cache folder: read the zip each time
    return out


def _parse_text_cache(raw: bytes) -> Optional[Dict[str, bytes]]:
    """The cached word lists, or None when ``raw`` is not a complete cache file (then it is rewritten)."""
    head = len(_TEXT_MAGIC) + 8 * len(_TEXT_NAMES)
    if len(raw) < head or not raw.startswith(_TEXT_MAGIC):
        return None
    lens = [int.from_bytes(raw[len(_TEXT_MAGIC) + 8 * i:len(_TEXT_MAGIC) + 8 * i + 8], "little")
            for i in range(len(_TEXT_NAMES))]
    if head + sum(lens) != len(raw):
        return None
    out, pos = {}, head
    for k, n in zip(_TEXT_NAMES, lens):
        out[k] = raw[pos:pos + n]
        pos += n
    return out


def fnv_ids(ids) -> int:
    """FNV-1a (64 bit) over a sequence of word ids: the cache's phrase hash."""
    h = FNV_OFFSET
    for t in ids:
        h = ((h ^ (t & 0xFFFFFFFF)) * FNV_PRIME) & _MASK
    return h


def _cache_dir() -> Path:
    env = os.environ.get("PYSYNTH_METEOR_CACHE")
    if env:
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME")
    return (Path(xdg) if xdg else Path.home() / ".cache") / "pysynth" / "meteor"


def paraphrase_cache(para: Path) -> Path:
    """Where the cache of ``para`` lives: keyed by the table's path, size and mtime."""
    st = para.stat()
    key = hashlib.sha1(f"{para.resolve()}|{st.st_size}|{int(st.st_mtime)}".encode()).hexdigest()[:16]
    return _cache_dir() / f"paraphrase-en.{key}.{_MAGIC[-2:-1].decode()}.bin"


def _parse_table(lines: Iterable[bytes]):
    """Read the table's lines (probability, phrase, paraphrase; repeated) into phrase ids."""
    import numpy as np

    vocab: Dict[bytes, int] = {}
    phrases: Dict[bytes, int] = {}
    phr_list: List[bytes] = []
    refs: List[int] = []
    pars: List[int] = []
    it = iter(lines)
    for _prob in it:
        a = next(it, None)
        b = next(it, None)
        if a is None or b is None:
            break
        for s, out in ((a, refs), (b, pars)):
            s = b" ".join(s.split())
            p = phrases.get(s)
            if p is None:
                p = phrases[s] = len(phr_list)
                phr_list.append(s)
            out.append(p)
    tok: List[int] = []
    off = [0]
    for s in phr_list:
        for w in s.split():
            i = vocab.get(w)
            if i is None:
                i = vocab[w] = len(vocab)
            tok.append(i)
        off.append(len(tok))
    return vocab, np.asarray(tok, np.int32), np.asarray(off, np.int64), np.asarray(refs, np.int32), \
        np.asarray(pars, np.int32)


def _hash_phrases(tok: np.ndarray, off: np.ndarray, ids: np.ndarray,
                  prefixes: bool = True) -> Tuple[np.ndarray, np.ndarray]:
    """Hashes of the phrases ``ids`` and (unique) of their proper prefixes."""
    import numpy as np

    lens = off[ids + 1] - off[ids]
    h = np.full(len(ids), FNV_OFFSET, np.uint64)
    pre = []
    for k in range(int(lens.max(initial=0))):
        act = lens > k
        t = tok[off[ids[act]] + k].astype(np.uint64)
        h[act] = (h[act] ^ t) * np.uint64(FNV_PRIME)
        if prefixes:
            pre.append(h[lens > k + 1])
    return h, np.unique(np.concatenate(pre)) if pre else np.zeros(0, np.uint64)


def _build_htab(keys: np.ndarray, vals: np.ndarray) -> Tuple[np.ndarray, np.ndarray]:
    import numpy as np

    size = 1
    while size < 2 * max(len(keys), 1):
        size *= 2
    tk = np.zeros(size, np.uint64)
    tv = np.full(size, -1, np.int32)
    slot = (keys & np.uint64(size - 1)).astype(np.int64)
    todo = np.arange(len(keys))
    while todo.size:
        s = slot[todo]
        free = tv[s] == -1
        cand, cs = todo[free], s[free]
        _, first = np.unique(cs, return_index=True)
        win = cand[first]
        tk[slot[win]] = keys[win]
        tv[slot[win]] = vals[win]
        placed = np.zeros(len(keys), bool)
        placed[win] = True
        todo = todo[~placed[todo]]
        slot[todo] = (slot[todo] + 1) & (size - 1)
    return tk, tv


def build_paraphrase_cache(para: Path, out: Path) -> Path:
    """Parse ``para`` once and write the binary cache ``out`` atomically; returns ``out``."""
    import gzip

    with gzip.open(para, "rb") as f:
        arrays, meta = paraphrase_arrays(f)
    return _write(out, arrays, {**meta, "source": str(para)})


def paraphrase_arrays(lines: Iterable[bytes]) -> Tuple[Dict[str, np.ndarray], dict]:
    """The cache's arrays (see the module doc) and ``{"max_len", "entries"}`` of a table given as
    its lines (probability, phrase, paraphrase; repeated), e.g. an open ``paraphrase-en.gz``."""
    import numpy as np

    vocab, tok, off, refs, pars = _parse_table(lines)
    order = np.argsort(refs, kind="stable")
    nphr = len(off) - 1
    counts = np.bincount(refs, minlength=nphr)
    grp_ptr = np.zeros(nphr + 1, np.int64)
    np.cumsum(counts, out=grp_ptr[1:])
    grp_par = pars[order].astype(np.int32)
    ids = np.nonzero(counts)[0].astype(np.int64)
    full, pfx = _hash_phrases(tok, off, ids)
    every, _ = _hash_phrases(tok, off, np.arange(nphr, dtype=np.int64), prefixes=False)
    grp_hash = every[grp_par]
    tk, tv = _build_htab(full, ids.astype(np.int32))
    pk, pv = _build_htab(pfx, np.zeros(len(pfx), np.int32))
    words = list(vocab)
    blob = np.frombuffer(b"".join(words), np.uint8)
    voff = np.zeros(len(words) + 1, np.int64)
    np.cumsum([len(w) for w in words], out=voff[1:])
    arrays = {"vocab_blob": blob, "vocab_off": voff, "phr_tok": tok, "phr_off": off, "grp_ptr": grp_ptr,
              "grp_par": grp_par, "htab_key": tk, "htab_val": tv, "pfx_key": pk, "pfx_val": pv,
              "grp_hash": grp_hash}
    maxlen = int((off[1:] - off[:-1]).max(initial=0))
    return arrays, {"max_len": maxlen, "entries": int(len(refs))}


def _write(out: Path, arrays: Dict[str, np.ndarray], meta: dict) -> Path:
    import numpy as np

    from pysynth.io import atomic_open

    layout, pos, crc = {}, 0, 0
    for k in _ARRAYS:
        a = np.ascontiguousarray(arrays[k])
        pos = (pos + 63) // 64 * 64
        layout[k] = [pos, a.dtype.str, int(a.size)]
        pos += a.nbytes
    head = json.dumps({"arrays": layout, **meta}).encode()
    with atomic_open(out) as f:
        f.write(b"\0" * (len(_MAGIC) + 16 + len(head)))
        base = f.tell()
        for k in _ARRAYS:
            a = np.ascontiguousarray(arrays[k])
            f.seek(base + layout[k][0])
            f.write(a.tobytes())
            crc = zlib.crc32(a.tobytes(), crc)
        f.seek(0)
        f.write(_MAGIC + len(head).to_bytes(8, "little") + crc.to_bytes(8, "little") + head)
    return out


#: the cache's dtypes as memoryview formats (the cache is little-endian, as every host pysynth builds on)
_FORMATS = {"|u1": "B", "<i4": "i", "<i8": "q", "<u8": "Q"}
_ITEMSIZE = {"B": 1, "i": 4, "q": 8, "Q": 8}


def load_paraphrase(path: Path, verify: bool = False) -> Tuple[Dict[str, memoryview], dict]:
    """Memory-map a cache written by :func:`build_paraphrase_cache`: each array a read-only 1-d
    memoryview of the map (``numpy.asarray`` views it without a copy).

    Raises
    ------
    ValueError
        not a cache file, truncated, or (``verify=True``) its CRC-32 does not match.
    """
    import mmap

    with open(path, "rb") as f:
        pre = f.read(len(_MAGIC) + 16)
        if len(pre) < len(_MAGIC) + 16 or not pre.startswith(_MAGIC):
            raise ValueError(f"METEOR: {path} is not a pysynth paraphrase cache; delete it to rebuild")
        hl = int.from_bytes(pre[len(_MAGIC):len(_MAGIC) + 8], "little")
        crc = int.from_bytes(pre[len(_MAGIC) + 8:], "little")
        meta = json.loads(f.read(hl))
        size = os.fstat(f.fileno()).st_size
        mm = memoryview(mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)) if size else memoryview(b"")
    base = len(_MAGIC) + 16 + hl
    out, got = {}, 0
    for k in _ARRAYS:
        o, dt, n = meta["arrays"][k]
        fmt = _FORMATS.get(dt)
        if fmt is None:
            raise ValueError(f"METEOR: {path} holds an array of dtype {dt}; delete it to rebuild")
        end = base + o + n * _ITEMSIZE[fmt]
        if end > size:
            raise ValueError(f"METEOR: {path} is truncated; delete it to rebuild")
        out[k] = mm[base + o:end].cast(fmt)
        if verify:
            got = zlib.crc32(out[k], got)
    if verify and got != crc:
        raise ValueError(f"METEOR: {path} fails its checksum; delete it to rebuild")
    return out, meta


def ensure_paraphrase(para: Path) -> Path:
    """The cache for ``para``, built first when absent (tens of seconds, once)."""
    p = paraphrase_cache(para)
    if p.is_file():
        try:
            load_paraphrase(p)
            return p
        except (ValueError, KeyError, OSError):
            pass  # truncated or foreign: rebuild
    import time

    from pysynth.pipelines.progress import say

    # tens of seconds with no output looked like a hang: say what happens, once
    say(f"METEOR: building the paraphrase cache {p} from {para} (once; about 10-20 s) ...")
    t0 = time.perf_counter()
    build_paraphrase_cache(para, p)
    load_paraphrase(p, verify=True)
    say(f"METEOR: paraphrase cache built in {time.perf_counter() - t0:.1f} s")
    return p


def cached_paths() -> Optional[Path]:  # pragma: no cover - helper for the bench
    try:
        return paraphrase_cache(find_files().paraphrase)
    except ImportError:
        return None
