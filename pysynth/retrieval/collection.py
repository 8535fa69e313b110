"""A searchable text collection: documents with ids, tokenized, indexed and saved as one store.

:class:`~pysynth.retrieval.Index` ranks documents given as term ids.  :class:`Collection` adds
what text search needs around it -- the tokenizer, the vocabulary and the documents' own ids --
so texts go in and ``(id, score)`` lists come out::

    >>> from pysynth.retrieval.collection import Collection
    >>> c = Collection.build(["how fast is a honda crf", "honda civic oil change"], ids=["a", "b"])
    >>> c.search(["honda oil"], k=2).ids
    [['b', 'a']]

Out-of-vocabulary query terms
-----------------------------
The index has ``n_terms + 1`` term ids: ``oov_id = n_terms`` occurs in no document
(``cf = df = 0``) and every unknown query term maps to it.  Scores are then exactly those of the
query with its unknown terms kept as distinct never-seen terms: in SDM an unseen unigram adds
``f(0, 0) = log(mu * 0.5 / |C| / (|D| + mu))`` to the unigram mean and counts in ``n``, and a
window with an unseen term matches nothing (also two OOV terms in a row: they share the id but
never occur); in BM25 an unseen term adds 0.  Dropping unknown terms instead would change ``n``
and the windows, hence the scores.  A query whose terms are all unknown retrieves nothing.

On disk (:mod:`pysynth.store` format ``pysynth.retrieval.Collection``, version 1)
---------------------------------------------------------------------------------
``meta.json``
    The store's checked manifest; ``meta`` holds ``tokenizer``, ``n_docs``, ``n_terms``,
    ``oov_id`` and ``index`` (the index's sub-directory).
``vocab.txt``
    UTF-8, line ``i`` is term id ``i`` (:func:`pysynth.text.build_corpus` order).
``doc_ids.jsonl``
    UTF-8, line ``d`` is the compact JSON encoding of document ``d``'s id (a string or an int).
``index/``
    The :class:`~pysynth.retrieval.Index`, saved by :meth:`Index.save`.

The directory is written to a temporary directory beside the target and renamed into place,
so readers see the old collection or the whole new one.
"""
from __future__ import annotations

import json
import os
import shutil
from collections.abc import Iterable, Mapping, Sequence
from json.encoder import encode_basestring as _encode_str  # the C encoder, ensure_ascii=False
from pathlib import Path
from typing import Any, NamedTuple, Union

import numpy as np

__all__ = ["FORMAT", "FORMAT_VERSION", "Collection", "Results"]

FORMAT = "pysynth.retrieval.Collection"
FORMAT_VERSION = 1
VOCAB_FILE = "vocab.txt"
DOC_IDS_FILE = "doc_ids.jsonl"
INDEX_DIR = "index"

PathLike = Union[str, "os.PathLike[str]"]


class Results(NamedTuple):
    """Search results of Q queries: per query, document ids and float64 scores, best first
    (score descending, then document order)."""

    ids: list[list]
    scores: list[list[float]]


def encode_id(v: Any, what: str = "id") -> str:
    """Compact JSON of a document id: a str or an int (not a bool); TypeError otherwise."""
    if type(v) is int:
        return int.__repr__(v)
    if type(v) is not str:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (str, int, np.integer)):
            raise TypeError(f"{what} must be a string or an integer, got {json.dumps(v, default=repr)[:40]}")
        return encode_id(str(v) if isinstance(v, str) else int(v), what)  # subclasses, numpy ints
    s = _encode_str(v)
    if not s.isascii():
        try:
            s.encode("utf-8")
        except UnicodeEncodeError:  # an unpaired surrogate: keep it as a \\u escape
            s = json.dumps(v)
    return s


def check_text(t: Any, what: str = "text") -> str:
    """``t`` if it is a str of valid Unicode; TypeError / ValueError naming ``what`` otherwise."""
    if type(t) is str and t.isascii():
        return t
    if not isinstance(t, str):
        raise TypeError(f"{what} must be a string, got {json.dumps(t, default=repr)[:40]}")
    try:
        t.encode("utf-8")
    except UnicodeEncodeError:
        raise ValueError(f"{what} holds an unpaired surrogate escape (not valid Unicode)") from None
    return t


class Collection:
    """Texts with ids, tokenized and indexed for SDM / BM25 search.

    Create one with :meth:`build` / :meth:`from_rows` or :meth:`load`; :meth:`search` ranks it
    for query texts.  ``workers`` (threads, -1 = all cores) never changes a result.
    """

    def __init__(self, index, vocab: Sequence[str], id_json: Sequence[str], tokenizer: str):
        self.index = index
        """The :class:`~pysynth.retrieval.Index` (term ids ``0..n_terms``; ``n_terms`` is OOV)."""
        self.vocab = list(vocab)
        """Term of every term id."""
        self.id_json = list(id_json)
        """Compact JSON of every document's id, as saved (fast to copy into JSON output)."""
        self.tokenizer = tokenizer
        self.terms = {t: i for i, t in enumerate(self.vocab)}
        """term -> term id."""
        if len(self.terms) != len(self.vocab):
            raise ValueError("vocab repeats a term")
        self._ids: list | None = None

    # ------------------------------------------------------------------ creation
    @classmethod
    def build(cls, texts: Sequence[str], ids: Sequence[Any] | None = None, *, tokenizer: str = "rouge",
              workers: int = 1) -> Collection:
        """Tokenize and index ``texts``; document ``d`` has id ``ids[d]`` (default ``d``).

        Raises
        ------
        TypeError
            a text that is not a str, an id that is neither a str nor an int.
        ValueError
            no documents, no token in any text, ``ids`` of another length or with a duplicate
            (``"1"`` and ``1`` are different ids), an unknown tokenizer.
        """
        if isinstance(texts, str):
            raise TypeError("texts must be a sequence of document strings, got one str; wrap it in a list")
        texts = [check_text(t, f"texts[{i}]") for i, t in enumerate(texts)]
        if ids is None:
            id_json = [str(i) for i in range(len(texts))]
        else:
            id_json = [encode_id(v, f"ids[{i}]") for i, v in enumerate(ids)]
            if len(id_json) != len(texts):
                raise ValueError(f"ids has {len(id_json)} items but texts has {len(texts)}; pass one id per text")
            _check_unique(id_json, lambda i: f"ids[{i}]")
        if not texts:
            raise ValueError("texts is an empty collection (no documents); pass at least one text")
        return cls._index(texts, id_json, tokenizer, workers, "texts")

    @classmethod
    def _index(cls, texts: list[str], id_json: list[str], tokenizer: str, workers: int,
               what: str) -> Collection:
        from pysynth import text
        from pysynth.retrieval import Index

        corpus = text.build_corpus(texts, tokenizer=tokenizer, workers=workers)
        if corpus.n_tokens == 0:
            raise ValueError(f"{what} is an empty collection: none of the {corpus.n_docs:,} texts has a token "
                             f"for the {tokenizer!r} tokenizer")
        # one more id than terms: the reserved OOV id, in no document (cf = df = 0)
        ix = Index.build(corpus.ids, corpus.offsets, vocab_size=corpus.n_terms + 1, workers=workers)
        return cls(ix, corpus.vocab, id_json, tokenizer)

    @classmethod
    def from_rows(cls, rows: Iterable[Mapping], *, id_field: str = "id", text_field: str = "text",
                  tokenizer: str = "rouge", workers: int = 1, what: str = "rows") -> Collection:
        """:meth:`build` from rows ``{id_field: str or int, text_field: str}`` (extra fields are
        ignored): a list of dicts, or what :func:`pysynth.io.read_rows` reads (a JSON Lines or
        Parquet path, ``-``).  Errors name ``what`` and the 1-based row."""
        from pysynth.io import read_rows

        id_json: list[str] = []
        texts: list[str] = []
        for n, row in enumerate(read_rows(rows, what), 1):
            where = f"{what} row {n}"
            if not isinstance(row, Mapping):
                raise TypeError(f"{where}: expected a JSON object, got {type(row).__name__}")
            if id_field not in row:
                raise ValueError(f"{where}: missing field {id_field!r}")
            if text_field not in row:
                raise ValueError(f"{where}: missing field {text_field!r}")
            id_json.append(encode_id(row[id_field], f"{where}: {id_field!r}"))
            texts.append(check_text(row[text_field], f"{where}: {text_field!r}"))
        _check_unique(id_json, lambda i: f"{what} row {i + 1}")
        if not texts:
            raise ValueError(f"{what} is an empty collection (no rows)")
        return cls._index(texts, id_json, tokenizer, workers, what)

    # ------------------------------------------------------------------ storage
    def save(self, path: PathLike) -> Path:
        """Write the collection to directory ``path`` atomically (see the module doc).  An
        existing collection there is replaced; any other non-empty path is refused (ValueError)."""
        from pysynth import store
        from pysynth.io import atomic_dir

        path = Path(path)
        if path.exists() and (not path.is_dir() or (any(path.iterdir()) and not store.is_store(path))):
            raise ValueError(f"{path} exists and is not a pysynth store: refusing to replace it; "
                             "choose a new or empty directory")
        files = {VOCAB_FILE: store.lines_to_bytes(self.vocab, "term"),
                 DOC_IDS_FILE: store.lines_to_bytes(self.id_json, "document id")}
        meta = {"tokenizer": self.tokenizer, "n_docs": self.n_docs, "n_terms": self.n_terms,
                "oov_id": self.oov_id, "index": INDEX_DIR}
        for stale in path.parent.glob(f"..{path.name}.*.tmp"):  # store.save's, inside a killed save
            shutil.rmtree(stale, ignore_errors=True)
        with atomic_dir(path) as tmp:  # the store and the index appear together, or not at all
            store.save(tmp, FORMAT, FORMAT_VERSION, files=files, meta=meta)
            self.index.save(tmp / INDEX_DIR)
        return path

    @classmethod
    def load(cls, path: PathLike, *, mmap: bool = True, workers: int = 1) -> Collection:
        """Open a collection written by :meth:`save`.

        Raises
        ------
        FileNotFoundError
            ``path`` does not exist.
        ValueError
            not a collection, another format version, a missing / truncated / corrupt file, or
            parts that disagree (document and term counts, the OOV id).
        """
        from pysynth import store
        from pysynth.retrieval import Index
        from pysynth.text import TOKENIZERS

        st = store.load(path, FORMAT, (FORMAT_VERSION,), mmap=mmap)
        d = Path(path)
        try:
            m = st.meta
            n_docs, n_terms, oov = int(m["n_docs"]), int(m["n_terms"]), int(m["oov_id"])
            tokenizer, sub = m["tokenizer"], str(m["index"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"{d / store.META} is corrupt or incomplete: {exc!r}") from None
        if tokenizer not in TOKENIZERS or oov != n_terms or n_docs < 1:
            raise ValueError(f"{d / store.META} is corrupt (tokenizer {tokenizer!r}, n_docs {n_docs}, "
                             f"n_terms {n_terms}, oov_id {oov})")
        vocab, id_json = st.read_lines(VOCAB_FILE), st.read_lines(DOC_IDS_FILE)
        if len(vocab) != n_terms or len(id_json) != n_docs:
            raise ValueError(f"{d}: {VOCAB_FILE} / {DOC_IDS_FILE} have {len(vocab)} / {len(id_json)} lines, "
                             f"{store.META} says {n_terms} / {n_docs}")
        ix = Index.load(d / sub, mmap=mmap, workers=workers)
        if ix.n_docs != n_docs or ix.vocab_size != n_terms + 1 or ix.cf[oov] != 0 or ix.df[oov] != 0:
            raise ValueError(f"{d}: the index ({ix.n_docs} documents, {ix.vocab_size} term ids) does not match "
                             f"{store.META} ({n_docs} documents, {n_terms} terms + 1 unused OOV id)")
        return cls(ix, vocab, id_json, tokenizer)

    # ---------------------------------------------------------------- properties
    @property
    def n_docs(self) -> int:
        return len(self.id_json)

    @property
    def n_terms(self) -> int:
        return len(self.vocab)

    @property
    def oov_id(self) -> int:
        """The term id of unknown query terms (occurs in no document)."""
        return len(self.vocab)

    @property
    def ids(self) -> list:
        """The id of every document (decoded from :attr:`id_json` on first use)."""
        if self._ids is None:
            self._ids = [json.loads(s) for s in self.id_json]
        return self._ids

    def __repr__(self) -> str:
        return f"Collection(n_docs={self.n_docs}, n_terms={self.n_terms}, tokenizer={self.tokenizer!r})"

    # ------------------------------------------------------------------- search
    def query_ids(self, texts: Sequence[str], workers: int = 1) -> tuple[np.ndarray, np.ndarray]:
        """Flat int32 term ids + int64 offsets of ``texts``, tokenized as the documents were;
        unknown terms map to :attr:`oov_id`."""
        from pysynth import text

        toks = text.tokenize(list(texts), self.tokenizer, workers)
        lens = np.fromiter((len(t) for t in toks), dtype=np.int64, count=len(toks))
        off = np.zeros(len(toks) + 1, np.int64)
        np.cumsum(lens, out=off[1:])
        get, oov = self.terms.get, self.oov_id
        ids = np.fromiter((get(w, oov) for t in toks for w in t), dtype=np.int32, count=int(off[-1]))
        return ids, off

    def search_docs(self, texts: Sequence[str], *, model: str = "sdm", k: int = 100, mu: float = 2500.0,
                    weights: Sequence[float] = (0.85, 0.10, 0.05), k1: float = 1.5, b: float = 0.75,
                    workers: int = 1):
        """:meth:`Index.search` of the query texts: :class:`~pysynth.retrieval.Hits` of document
        numbers (``ids[d]`` / ``id_json[d]`` give their ids) with float64 scores."""
        q, qo = self.query_ids(texts, workers)
        return self.index.search(q, qo, model=model, k=k, mu=mu, weights=weights, k1=k1, b=b,
                                 workers=workers, dtype=np.float64)

    def search(self, texts: Sequence[str], **params) -> Results:
        """Top ``k`` documents of every query text as ``Results(ids, scores)``; ``params`` as
        :meth:`search_docs` (``model="sdm"|"bm25"``, ``k``, ``mu``, ``weights``, ``k1``, ``b``,
        ``workers``).  A query without a known term gets empty lists."""
        if isinstance(texts, str):
            raise TypeError("texts must be a sequence of query strings, got one str; wrap it in a list")
        hits = self.search_docs(texts, **params)
        ids = self.ids
        out_ids, out_scores = [], []
        for drow, srow, c in zip(hits.docs.tolist(), hits.scores.tolist(), hits.counts.tolist()):
            out_ids.append([ids[d] for d in drow[:c]])
            out_scores.append(srow[:c])
        return Results(out_ids, out_scores)


def _check_unique(id_json: Sequence[str], where) -> None:
    if len(set(id_json)) == len(id_json):
        return
    first: dict = {}
    for i, e in enumerate(id_json):
        if e in first:
            raise ValueError(f"{where(i)}: duplicate id {e} (first at {where(first[e])})")
        first[e] = i
