"""``pysynth.retrieval.collection.Collection``: build, save/load round trips, exact scores with
out-of-vocabulary terms, corrupt directories, bad input (moved from the old CLI tests)."""
from __future__ import annotations

import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from _docs import mixed_docs

from pysynth import store, text
from pysynth.retrieval import Index
from pysynth.retrieval import _reference as ref
from pysynth.retrieval.collection import FORMAT, Collection

from _stores import write_meta

docs = mixed_docs


QUERIES = ["honda top speed", "How fast is a Honda CRF 230?", "zyzzyva honda", "crf quux speed flarp flarp",
           "quux flarp", "", "?!", "the", "speed speed top", "caf\u00e9 230"]
PARAMS = {"sdm": {"mu": 300.0, "weights": (0.8, 0.15, 0.05)}, "bm25": {"k1": 1.2, "b": 0.6}}


@pytest.fixture(scope="module")
def saved(tmp_path_factory):
    d = tmp_path_factory.mktemp("coll") / "c"
    Collection.from_rows(docs()).save(d)
    return d


def _token_ids(c, texts):
    """Independent tokenization: text.tokenize + the vocabulary; unknown -> oov_id."""
    return [[c.terms.get(w, c.oov_id) for w in toks] for toks in text.tokenize(texts)]


@pytest.mark.parametrize("model", ["sdm", "bm25"])
def test_search_equals_index_search(saved, model):
    c = Collection.load(saved)
    rows = docs()
    res = c.search(QUERIES, model=model, k=7, **PARAMS[model])
    d, s, n = Index.load(saved / "index").search(_token_ids(c, QUERIES), model=model, k=7, dtype=np.float64,
                                                 **PARAMS[model])
    for i in range(len(QUERIES)):
        assert res.ids[i] == [rows[x]["id"] for x in d[i, : n[i]].tolist()]
        assert res.scores[i] == s[i, : n[i]].tolist() and all(type(x) is float for x in res.scores[i])
    by = dict(zip(QUERIES, res.ids))
    assert by["quux flarp"] == by[""] == by["?!"] == []
    assert by["zyzzyva honda"] and by["crf quux speed flarp flarp"] and by["caf\u00e9 230"][0] == "caf\u00e9"
    num = {r["id"]: i for i, r in enumerate(rows)}  # score descending, then document order
    for ids, scores in zip(*res):
        keys = [(-sc, num[x]) for x, sc in zip(ids, scores)]
        assert keys == sorted(keys)
    hits = c.search_docs(QUERIES, model=model, k=7, **PARAMS[model])
    assert hits.docs.tolist() == d.tolist()


def test_build_equals_from_rows_and_contents(saved):
    rows = docs()
    c = Collection.load(saved)
    b = Collection.build([r["text"] for r in rows], ids=[r["id"] for r in rows])
    assert b.vocab == c.vocab and b.id_json == c.id_json and c.ids == [r["id"] for r in rows]
    assert c.tokenizer == "rouge" and c.index.n_docs == c.n_docs == len(rows)
    assert c.index.vocab_size == c.oov_id + 1 == len(c.terms) + 1
    assert c.index.cf[c.oov_id] == 0 and c.index.df[c.oov_id] == 0
    a = c.index.arrays  # queries are tokenized exactly as the documents were indexed
    for dnum, r in enumerate(rows):
        toks = a["doc_tokens"][a["doc_offsets"][dnum]: a["doc_offsets"][dnum + 1]].tolist()
        q, qo = c.query_ids([r["text"]])
        assert q.tolist() == toks and qo.tolist() == [0, len(toks)]
    meta = json.loads((saved / "meta.json").read_text())
    assert meta["format"] == FORMAT and meta["format_version"] == 1 and meta["meta"]["oov_id"] == c.oov_id
    assert not [p for p in saved.parent.iterdir() if p.name.startswith(".")]  # no temp dir
    assert Collection.build(["a b", "b c"]).ids == [0, 1]  # default ids: the document numbers


@pytest.mark.parametrize("model", ["sdm", "bm25"])
def test_oov_terms_score_as_never_occurring_terms(saved, model):
    """Every unknown word maps to the one reserved id; scores equal those of the Python
    reference with a distinct never-occurring term per unknown word (float64, exactly)."""
    c = Collection.load(saved)
    qs = ["zyzzyva honda", "crf quux speed flarp flarp", "honda quux flarp top speed zyzzyva", "quux", "the xylo"]
    res = c.search(qs, model=model, k=1000, **PARAMS[model])
    V = len(c.terms)
    a = c.index.arrays
    unseen = {"zyzzyva": V, "quux": V + 1, "flarp": V + 2, "xylo": V + 3}
    refix = ref.build_index(np.asarray(a["doc_tokens"]), np.asarray(a["doc_offsets"]), V + 4, 1)
    toks = text.tokenize(qs)
    assert all(any(w in unseen for w in t) for t in toks)
    ids = [[c.terms[w] if w in c.terms else unseen[w] for w in t] for t in toks]
    off = np.cumsum([0] + [len(t) for t in ids])
    p = {"mu": 2500.0, "weights": (0.85, 0.10, 0.05), "k1": 1.5, "b": 0.75} | PARAMS[model]
    flat = np.array([t for row in ids for t in row], np.int32)
    d, s, n = ref.search(refix, flat, off, model, 1000, p["mu"], p["weights"], p["k1"], p["b"], 1, True)
    for i in range(len(qs)):
        assert res.ids[i] == [c.ids[x] for x in d[i, : n[i]].tolist()]
        assert res.scores[i] == s[i, : n[i]].tolist()  # exact float64 equality
    assert res.ids[3] == [] and sum(map(len, res.ids)) > 20
    if model == "sdm":  # the unseen terms do change SDM scores (they are not dropped)
        kept = c.index.search([[c.terms["honda"]]], k=1000, dtype=np.float64, mu=p["mu"], weights=p["weights"])
        assert res.scores[0][0] != kept.scores[0, 0]


def test_workers_do_not_change_results_and_saves_are_identical(saved, tmp_path):
    rows = docs()
    c2 = Collection.from_rows(rows, workers=2)
    c2.save(tmp_path / "c")
    files = sorted(str(p.relative_to(saved)) for p in saved.rglob("*"))
    assert sorted(str(p.relative_to(tmp_path / "c")) for p in (tmp_path / "c").rglob("*")) == files
    for name in files:
        if (saved / name).is_file():
            assert (tmp_path / "c" / name).read_bytes() == (saved / name).read_bytes(), name
    c = Collection.load(saved)
    assert c.search(QUERIES, workers=-1) == c.search(QUERIES, workers=1)
    # saving again over a collection replaces it atomically
    Collection.from_rows([{"id": "x", "text": "only one doc"}]).save(tmp_path / "c")
    assert Collection.load(tmp_path / "c").id_json == ['"x"']
    assert sorted(p.name for p in tmp_path.iterdir()) == ["c"]


def test_save_refuses_other_data(tmp_path):
    (tmp_path / "other").mkdir()
    (tmp_path / "other" / "keep.txt").write_text("mine")
    with pytest.raises(ValueError, match="not a pysynth store"):
        Collection.build(["a b"]).save(tmp_path / "other")
    assert (tmp_path / "other" / "keep.txt").read_text() == "mine"


@pytest.mark.parametrize("rows, exc, match", [
    ([{"id": "a", "text": "x"}, {"id": "b", "text": "y"}, {"id": "a", "text": "z"}], ValueError,
     'row 3: duplicate id "a" (first at rows row 1)'),
    ([{"id": "a"}], ValueError, "row 1: missing field 'text'"),
    ([{"id": "a", "text": None}], TypeError, "row 1: 'text' must be a string, got null"),
    ([{"id": "a", "text": ["x"]}], TypeError, "'text' must be a string"),
    ([{"text": "x"}], ValueError, "row 1: missing field 'id'"),
    ([{"id": 1.5, "text": "x"}], TypeError, "'id' must be a string or an integer, got 1.5"),
    ([{"id": True, "text": "x"}], TypeError, "'id' must be a string or an integer"),
    ([{"id": "a", "text": "\ud800"}], ValueError, "unpaired surrogate"),
    ([], ValueError, "empty collection (no rows)"),
    ([{"id": 1, "text": "?!"}, {"id": 2, "text": ""}], ValueError, "none of the 2 texts has a token"),
    (["not an object"], TypeError, "row 1: expected a JSON object"),
])
def test_bad_rows(rows, exc, match):
    with pytest.raises(exc) as e:
        Collection.from_rows(rows)
    assert match in str(e.value)


def test_bad_build_arguments(tmp_path):
    with pytest.raises(ValueError, match="ids has 1 items but texts has 2"):
        Collection.build(["a", "b"], ids=["x"])
    with pytest.raises(ValueError, match=r"ids\[1\]: duplicate id 1"):
        Collection.build(["a", "b"], ids=[1, 1])
    with pytest.raises(TypeError, match="one str"):
        Collection.build("a b c")
    with pytest.raises(TypeError, match=r"texts\[0\] must be a string"):
        Collection.build([b"bytes"])
    with pytest.raises(ValueError, match="tokenizer"):
        Collection.build(["a"], tokenizer="nltk")
    with pytest.raises(ValueError, match="no such file"):
        Collection.from_rows(str(tmp_path / "missing.jsonl"))
    c = Collection.build(["a b"])
    with pytest.raises(TypeError, match="one str"):
        c.search("a")
    with pytest.raises(ValueError, match="model must be one of"):
        c.search(["a"], model="tfidf")
    with pytest.raises(ValueError, match="k must be >= 1"):
        c.search(["a"], k=0)


def _edit_meta(path: Path, **kw):
    doc = json.loads(path.read_text())
    meta = doc.get("meta", doc)
    for k, v in kw.items():
        (doc if k in doc else meta)[k] = v
    write_meta(path.parent, doc)


def _bump_version(path: Path):
    """Set the index's format version to 7 (its own meta.json, or a store's)."""
    doc = json.loads(path.read_text())
    doc["format_version" if "format_version" in doc else "version"] = 7
    write_meta(path.parent, doc)


@pytest.mark.parametrize("damage, match", [
    (lambda d: None, None),
    (lambda d: (d / "meta.json").unlink(), "meta.json is missing"),
    (lambda d: (d / "meta.json").write_text("{"), "meta.json is corrupt"),
    (lambda d: (d / "index" / "meta.json").unlink(), "meta.json is missing"),
    (lambda d: (d / "vocab.txt").write_text("x\n"), "vocab.txt is truncated or corrupt"),
    (lambda d: (d / "doc_ids.jsonl").write_bytes((d / "doc_ids.jsonl").read_bytes()[:-3]),
     "doc_ids.jsonl is truncated or corrupt"),
    (lambda d: (d / "index" / "positions.npy").write_bytes((d / "index" / "positions.npy").read_bytes()[:-8]),
     "positions.npy is truncated or corrupt"),
    (lambda d: _edit_meta(d / "meta.json", format_version=2), "format version 2; this pysynth reads version(s) 1"),
    (lambda d: _bump_version(d / "index" / "meta.json"), "format version 7"),
    (lambda d: _edit_meta(d / "meta.json", n_terms=3, oov_id=3), "have"),
    (lambda d: _edit_meta(d / "meta.json", tokenizer="nltk"), "is corrupt (tokenizer 'nltk'"),
    (lambda d: shutil.rmtree(d / "index"), "index"),
])
def test_load_refuses_missing_corrupt_or_other_version(saved, tmp_path, damage, match):
    d = tmp_path / "c"
    shutil.copytree(saved, d)
    damage(d)
    if match is None:  # the undamaged copy works
        assert Collection.load(d).n_docs == len(docs())
        return
    with pytest.raises(ValueError) as e:
        Collection.load(d)
    assert match in str(e.value), str(e.value)


def test_load_of_other_things(tmp_path):
    with pytest.raises(FileNotFoundError):
        Collection.load(tmp_path / "nope")
    Index.build([[0, 1]]).save(tmp_path / "ix")
    with pytest.raises(ValueError, match="pysynth.retrieval.Collection"):
        Collection.load(tmp_path / "ix")
    store.save(tmp_path / "s", "pysynth.other", 1)
    with pytest.raises(ValueError, match="does not describe a pysynth.retrieval.Collection"):
        Collection.load(tmp_path / "s")
