"""The response cache: what the model answered, so a killed run never pays twice and a rerun is free.

One JSON Lines file, append-only: each line ``{"key", "texts", "refused", "prompt_tokens",
"completion_tokens"}``. The key is the SHA-256 of (endpoint, model, api, prompt, parameters, seed)
(:func:`cache_key`): the API key is never part of it. Each answer is appended with one ``write``
of a whole line as soon as it arrives, so a killed run leaves at most a torn last line, which
:class:`ResponseCache` ignores when it reads the file (and the next append starts on a new line).
"""
from __future__ import annotations

import hashlib
import json
import os
import threading
from typing import Any, Dict, Optional

__all__ = ["ResponseCache", "cache_key"]


def cache_key(endpoint: str, model: str, api: str, prompt: str, params: Dict[str, Any], seed: int) -> str:
    """The SHA-256 (hex) of one request's identity."""
    doc = json.dumps([endpoint, model, api, prompt, params, int(seed)], ensure_ascii=False, sort_keys=True,
                     separators=(",", ":"))
    return hashlib.sha256(doc.encode("utf-8")).hexdigest()


class ResponseCache:
    """An append-only JSON Lines cache of replies (thread-safe).

    Parameters
    ----------
    path : str
        The file (created on the first answer).
    """

    def __init__(self, path):
        self.path = os.fspath(path)
        self._lock = threading.Lock()
        self._entries: Dict[str, Dict[str, Any]] = {}
        self._torn = False
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except FileNotFoundError:
            return
        for line in data.split(b"\n"):
            if not line.strip():
                continue
            try:
                doc = json.loads(line)
                self._entries[str(doc["key"])] = doc
            except (ValueError, KeyError, TypeError):
                continue  # a torn line (killed mid-write): asked again
        self._torn = bool(data) and not data.endswith(b"\n")

    def __len__(self) -> int:
        return len(self._entries)

    def get(self, key: str) -> Optional[Dict[str, Any]]:
        return self._entries.get(key)

    def put(self, key: str, entry: Dict[str, Any]) -> None:
        doc = {"key": key, **entry}
        line = json.dumps(doc, ensure_ascii=False, sort_keys=True, separators=(",", ":")) + "\n"
        with self._lock:
            if key in self._entries:
                return
            self._entries[key] = doc
            d = os.path.dirname(self.path)
            if d:
                os.makedirs(d, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o644)
            try:
                # one write per line: a kill leaves whole lines and at most one torn last line
                os.write(fd, (b"\n" if self._torn else b"") + line.encode("utf-8"))
                self._torn = False
            finally:
                os.close(fd)
