"""A small document collection shared by the collection (library) and index (CLI) tests."""
from __future__ import annotations

import numpy as np

WORDS = ["honda", "crf", "top", "speed", "what", "is", "the", "how", "fast", "a", "civic", "engine", "oil", "change",
         "car", "of", "230", "in"]


def mixed_docs():
    """62 rows ``{"id", "text"}``: Zipfian questions over :data:`WORDS` with mixed id types (returned
    as given), some upper case and punctuation for the tokenizer, a non-ASCII row and one with no
    token (indexed, never retrieved)."""
    rng = np.random.default_rng(3)
    rows = []
    for i in range(60):
        n = int(rng.integers(2, 10))
        words = [WORDS[min(int(x), len(WORDS) - 1)] for x in rng.zipf(1.3, n) - 1]
        rows.append({"id": i * 10 if i % 3 == 0 else f"doc-{i}", "text": " ".join(words).capitalize() + "?"})
    rows.append({"id": "caf\u00e9", "text": "Café crème, 230 CRF-230!"})
    rows.append({"id": "empty", "text": "--"})
    return rows
