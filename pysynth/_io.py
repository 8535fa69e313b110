"""Atomic file writes shared by every stage that writes results (no heavy imports)."""
from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Callable, IO


def atomic_write(path: "os.PathLike[str] | str", write: Callable[[IO[bytes]], None]) -> None:
    """Call ``write(f)`` on a temporary file beside ``path``, fsync it, then ``os.replace`` it
    into place: readers see the old file or the whole new one, never a part, even if the
    process is killed.  The temporary file is ``.<name>.<random>.tmp`` and is removed on error."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=str(path.parent))
    try:
        with os.fdopen(fd, "wb") as f:
            write(f)
            f.flush()
            os.fsync(f.fileno())
        os.chmod(tmp, 0o644)  # mkstemp's 0600 would make shared outputs unreadable to others
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


def atomic_write_text(path: "os.PathLike[str] | str", text: str) -> None:
    atomic_write(path, lambda f: f.write(text.encode("utf-8")))
