"""Report every byte sequence of at least ``--min`` bytes (default 1 MB = 10**6) stored twice in a
set of model files: folders, files, or wheels (``.whl``/``.zip``: their members, uncompressed, as
pip installs them).

    python tools/check_model_bytes.py pysynth/models/assets          # the checkout's model files
    python tools/check_model_bytes.py dist/pysynth_model_*.whl       # the built model wheels

Exit status 1 when a repeat is found, 0 when none.

How (and why nothing is missed): the rsync idea, exact. Every file is cut into aligned blocks of
``B = ceil(min / 2)`` bytes (offsets 0, B, 2B, ...), each indexed by a 64-bit polynomial hash;
then a rolling hash of the same polynomial is computed at *every* byte offset of every file
(NumPy, wrapping uint64 arithmetic), looked up in that index, and each hit is confirmed by
comparing the bytes and extended both ways to the whole repeat. A sequence of ``2B - 1 >= min``
bytes or more, wherever it lies, holds one whole aligned block of its first copy, and the scan
meets that block's bytes at the second copy: so every repeat of ``min`` bytes is found (no false
negative), and byte comparison rules out false positives. Shorter repeats that happen to cover an
aligned block are found too and listed apart (``--min`` is the line of the verdict).

Cost: NumPy passes over every byte (about 20 s for the nine wheels, 40 s for the checkout's 250 MB
on the 2-core VM) plus one comparison per repeat. Content with a short period over more than ``B``
bytes (a long run of zeros, which the model files do not hold) hits at every offset and is slow.
"""
from __future__ import annotations

import argparse
import sys
import zipfile
from pathlib import Path
from typing import Dict, List, Tuple

import numpy as np

_R = np.uint64(0x9E3779B97F4A7C15)  # odd: invertible modulo 2**64
_R_INV = np.uint64(pow(int(_R), -1, 1 << 64))
_SEG = 1 << 22  # start offsets per NumPy step (memory: ~10 arrays of _SEG + B uint64)


def _members(paths) -> List[Tuple[str, np.ndarray]]:
    """``(label, bytes as uint8)`` of every file under ``paths`` (wheels: their members)."""
    out = []
    for p in map(Path, paths):
        files = sorted(f for f in p.rglob("*") if f.is_file()) if p.is_dir() else [p]
        for f in files:
            if f.suffix in (".whl", ".zip"):
                with zipfile.ZipFile(f) as z:
                    for info in z.infolist():
                        if not info.is_dir():
                            out.append((f"{f}!{info.filename}", np.frombuffer(z.read(info), dtype=np.uint8)))
            elif f.stat().st_size:
                out.append((str(f), np.fromfile(f, dtype=np.uint8)))
    return out


def _powers(n: int, base: np.uint64) -> np.ndarray:
    a = np.full(n, base, dtype=np.uint64)
    a[0] = 1
    with np.errstate(over="ignore"):
        return np.cumprod(a, dtype=np.uint64)  # wraps modulo 2**64


class _Hasher:
    """``H(x[i:i+B]) = sum_j (x[i+j] + 1) * R**j mod 2**64`` at one offset or at all."""

    def __init__(self, block: int):
        self.block = block
        n = _SEG + block
        self.pw, self.inv = _powers(n, _R), _powers(n, _R_INV)

    def one(self, x: np.ndarray) -> int:
        with np.errstate(over="ignore"):
            return int(np.sum((x.astype(np.uint64) + np.uint64(1)) * self.pw[: len(x)], dtype=np.uint64))

    def rolling(self, x: np.ndarray, start: int, stop: int) -> np.ndarray:
        """Hashes at offsets ``start .. stop-1`` (``stop - start <= _SEG``)."""
        b = self.block
        w = x[start: stop + b - 1].astype(np.uint64) + np.uint64(1)
        with np.errstate(over="ignore"):
            pre = np.concatenate([[np.uint64(0)], np.cumsum(w * self.pw[: len(w)], dtype=np.uint64)])
            return (pre[b: b + stop - start] - pre[: stop - start]) * self.inv[: stop - start]


def _extend(a: np.ndarray, i: int, b: np.ndarray, j: int, n: int) -> Tuple[int, int, int]:
    """The whole repeat around ``a[i:i+n] == b[j:j+n]``: ``(i0, j0, length)``."""
    step = 1 << 16
    back = 0
    while i - back > 0 and j - back > 0:
        k = min(step, i - back, j - back)
        x, y = a[i - back - k: i - back], b[j - back - k: j - back]
        diff = np.flatnonzero(x != y)
        if diff.size:
            back += k - 1 - int(diff[-1])
            break
        back += k
    fwd = n
    while i + fwd < len(a) and j + fwd < len(b):
        k = min(step, len(a) - i - fwd, len(b) - j - fwd)
        diff = np.flatnonzero(a[i + fwd: i + fwd + k] != b[j + fwd: j + fwd + k])
        if diff.size:
            fwd += int(diff[0])
            break
        fwd += k
    return i - back, j - back, back + fwd


def repeats(members: List[Tuple[str, np.ndarray]], min_bytes: int = 10**6) -> List[Tuple[int, str, int, str, int]]:
    """Every maximal repeat found: ``(length, file_a, offset_a, file_b, offset_b)``, longest first.

    All repeats of ``min_bytes`` or more are among them (see the module doc)."""
    block = (min_bytes + 1) // 2
    h = _Hasher(block)
    index: Dict[int, List[Tuple[int, int]]] = {}
    for m, (_, x) in enumerate(members):
        for off in range(0, len(x) - block + 1, block):
            index.setdefault(h.one(x[off: off + block]), []).append((m, off))
    keys = np.array(sorted(index), dtype=np.uint64)
    found = {}
    covered: Dict[Tuple[int, int, int], List[Tuple[int, int]]] = {}  # (m, m2, diagonal) -> extents in m
    for m, (_, x) in enumerate(members):
        for s in range(0, max(len(x) - block + 1, 0), _SEG):
            e = min(s + _SEG, len(x) - block + 1)
            hs = h.rolling(x, s, e)
            for k in np.flatnonzero(np.isin(hs, keys)):
                i = s + int(k)
                for m2, off in index[int(hs[k])]:
                    if (m2, off) == (m, i):
                        continue
                    diag = (m, m2, i - off)
                    if any(a <= i < b for a, b in covered.get(diag, ())):
                        continue
                    y = members[m2][1]
                    if not np.array_equal(x[i: i + block], y[off: off + block]):
                        continue  # a hash collision
                    i0, j0, n = _extend(x, i, y, off, block)
                    covered.setdefault(diag, []).append((i0, i0 + n))
                    key = tuple(sorted([(m, i0), (m2, j0)])) + (n,)
                    found[key] = (n, members[key[0][0]][0], key[0][1], members[key[1][0]][0], key[1][1])
    return sorted(found.values(), reverse=True)


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("paths", nargs="+", help="folders, files or wheels")
    p.add_argument("--min", type=int, default=10**6, help="the length that counts (default 10**6 bytes)")
    args = p.parse_args(argv)
    if args.min < 2:
        p.error(f"--min: must be >= 2, got {args.min}")
    members = _members(args.paths)
    total = sum(len(x) for _, x in members)
    found = repeats(members, args.min)
    big = [r for r in found if r[0] >= args.min]
    for n, a, i, b, j in found:
        mark = "REPEAT" if n >= args.min else "short "
        print(f"{mark} {n:>11,} bytes  {a}@{i}  ==  {b}@{j}")
    print(f"{len(members)} files, {total:,} bytes: {len(big)} repeat(s) of >= {args.min:,} bytes "
          f"({sum(r[0] for r in big):,} bytes stored twice)")
    return 1 if big else 0


if __name__ == "__main__":
    sys.exit(main())
