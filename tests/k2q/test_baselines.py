"""K2Q baselines of Table 2 (SDM retrieval, template-based TBM) and the Table 2 harness."""
from __future__ import annotations

import gzip
import json

import pytest

from pysynth import text
from pysynth.k2q.baselines import SdmBaseline, TemplateBaseline, keyword_terms, tbm_tokenize
from pysynth.retrieval import Index

QUESTIONS = [
    "What is the capital of France?",
    "What is the capital of Germany?",
    "Who wrote Winnie the Pooh?",
    "How fast is a Honda CRF 230?",
    "What is the top speed of a Honda CRF 230?",
    "When did Abraham Lincoln die?",
    "Who was Jocasta's first husband?",
    "What is the population of France?",
]

COUNTRIES = ["france", "germany", "spain", "italy", "poland", "norway", "sweden", "greece",
             "portugal", "austria", "belgium", "ireland"]
PEOPLE = ["lincoln", "washington", "jefferson", "kennedy", "nixon", "reagan", "madison", "adams"]


def _toy_pairs():
    """An obvious template language: capitals, populations, deaths, books."""
    pairs = []
    for c in COUNTRIES:
        pairs.append((f"capital {c}", f"What is the capital of {c.title()}?"))
        pairs.append((f"{c} population", f"What is the population of {c.title()}?"))
        pairs.append((f"largest city {c}", f"What is the largest city in {c.title()}?"))
    for p in PEOPLE:
        pairs.append((f"{p} die", f"When did {p.title()} die?"))
        pairs.append((f"{p} born", f"Where was {p.title()} born?"))
        pairs.append((f"{p} wife", f"Who was {p.title()}'s wife?"))
    return pairs


@pytest.fixture(scope="module")
def tbm():
    pytest.importorskip("gensim")
    return TemplateBaseline(min_count=1, epochs=5).fit(_toy_pairs() * 2, seed=0)


# ------------------------------------------------------------------------------------- SDM
def test_sdm_is_the_top_sdm_document(impl):
    sdm = SdmBaseline().fit([("k", q) for q in QUESTIONS])
    corpus = text.build_corpus(QUESTIONS)
    ix = Index.build(corpus.ids, corpus.offsets, vocab_size=corpus.n_terms + 1)
    queries = ["capital france", "honda crf 230 top speed", "pooh author", "lincoln death",
               "france population capital"]
    ids = [[corpus.get_id(t) for t in toks] for toks in text.tokenize(queries)]
    ids = [[i if i >= 0 else corpus.n_terms for i in row] for row in ids]
    top = ix.search(ids, k=1).docs[:, 0]
    assert sdm.generate(queries) == [QUESTIONS[d] for d in top]
    assert sdm.generate(queries)[:2] == ["What is the capital of France?", "What is the top speed of a Honda CRF 230?"]
    # workers never change the result; duplicates are indexed once; bare questions and dicts work
    assert sdm.generate(queries, workers=2) == sdm.generate(queries)
    sdm2 = SdmBaseline().fit(QUESTIONS + [{"question": q} for q in QUESTIONS])
    assert sdm2.questions == QUESTIONS and sdm2.generate(queries) == sdm.generate(queries)


def test_sdm_unknown_terms_and_empty_queries():
    sdm = SdmBaseline().fit(QUESTIONS)
    # an out-of-corpus term keeps its place in the query (cf = 0), it is not dropped
    assert sdm.query_ids(["zebra capital"])[0] == [sdm.corpus.n_terms, sdm.corpus.get_id("capital")]
    assert sdm.generate(["", "?!", "zebra quagga"]) == ["", "", ""]
    hits = sdm.retrieve(["capital"], k=3)
    assert hits.counts.tolist() == [2] and sorted(hits.docs[0, :2].tolist()) == [0, 1]


def test_sdm_bad_input():
    with pytest.raises(ValueError, match="pairs is empty"):
        SdmBaseline().fit([])
    with pytest.raises(TypeError, match="pairs"):
        SdmBaseline().fit(None)
    with pytest.raises(TypeError, match=r"pairs\[1\]"):
        SdmBaseline().fit(["who?", 3])
    with pytest.raises(ValueError, match="no question has a token"):
        SdmBaseline().fit(["?", "!!"])
    with pytest.raises(RuntimeError, match="not fitted"):
        SdmBaseline().generate(["x"])
    sdm = SdmBaseline().fit(QUESTIONS)
    with pytest.raises(TypeError, match="single string"):
        sdm.generate("capital france")


def test_docstring_examples():
    import doctest

    import pysynth.k2q.baselines as mod

    result = doctest.testmod(mod, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


# ------------------------------------------------------------------------------------- TBM
def test_tokens_and_template_extraction():
    assert tbm_tokenize("Who was Jocasta's first husband?") == ["who", "was", "jocasta", "'s", "first", "husband", "?"]
    assert keyword_terms("Honda CRF-230, top speed?") == ["honda", "crf", "230", "top", "speed"]
    assert keyword_terms("") == [] and keyword_terms("? !") == []
    t, f = TemplateBaseline.extract("france capital zebra", "What is the capital of France?")
    assert t == ("what", "is", "the", None, "of", None, "?") and f == ("capital", "france")
    # a repeated term takes the next occurrence; a missing one is not a slot
    t, f = TemplateBaseline.extract("new new", "Is New York new?")
    assert t == ("is", None, "york", None, "?") and f == ("new", "new")
    assert TemplateBaseline.extract("zebra", "What is it?") == (("what", "is", "it", "?"), ())


def test_tbm_reproduces_obvious_templates(tbm):
    out = tbm.generate(["capital spain", "italy population", "kennedy die", "nixon wife",
                        "largest city greece"])
    assert out == ["what is the capital of spain?", "what is the population of italy?",
                   "when did kennedy die?", "who was nixon's wife?", "what is the largest city in greece?"]
    # unseen entity: the slot takes the new word; the template is still the capital one
    assert tbm.generate(["capital atlantis"]) == ["what is the capital of atlantis?"]
    ranked = tbm.rank("capital spain", n=3)
    assert ranked[0][0] == "what is the capital of spain?"
    assert [s for _, s in ranked] == sorted((s for _, s in ranked), reverse=True)
    assert tbm.similarity("spain", "spain") == 1.0 and 0.0 <= tbm.similarity("spain", "kennedy") <= 1.0


def test_tbm_keeps_query_order_on_ties(tbm):
    # two unknown words: no similarity decides, so the query order fills the slots
    assert tbm.generate(["largest city atlantis"]) == ["what is the largest city in atlantis?"]


def test_tbm_determinism(tbm):
    pytest.importorskip("gensim")
    queries = ["capital spain", "madison born", "poland population", "largest city norway", "adams die"]
    again = TemplateBaseline(min_count=1, epochs=5).fit(_toy_pairs() * 2, seed=0)
    assert again.generate(queries) == tbm.generate(queries)
    assert (again.wv.vectors == tbm.wv.vectors).all()
    assert tbm.generate(queries, workers=2) == tbm.generate(queries)


def test_tbm_empty_and_bad_input(tbm):
    # documented: a query without terms, or without any similar keyword query, gives ""
    assert tbm.generate(["", "?", "zzzz qqqq"]) == ["", "", ""]
    assert tbm.rank("") == []
    with pytest.raises(ValueError, match="pairs is empty"):
        TemplateBaseline().fit([])
    with pytest.raises(TypeError, match="bare question"):
        TemplateBaseline().fit(["What is it?"])
    with pytest.raises(ValueError, match="no pair has a keyword term"):
        TemplateBaseline().fit([("zebra", "What is it?")])
    with pytest.raises(TypeError, match="keywords must be one str"):
        TemplateBaseline().fit([{"keywords": ["a", "b"], "question": "a b?"}])
    with pytest.raises(ValueError, match="neighbors"):
        TemplateBaseline(neighbors=0)
    with pytest.raises(TypeError, match="single string"):
        tbm.generate("capital spain")
    with pytest.raises(RuntimeError, match="not fitted"):
        TemplateBaseline().generate(["x"])


def test_tbm_without_gensim(monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "gensim", None)  # import gensim -> ImportError
    monkeypatch.setitem(sys.modules, "gensim.models", None)
    with pytest.raises(ImportError, match=r"pip install '\.\[bench\]'"):
        TemplateBaseline().fit(_toy_pairs())


# ------------------------------------------------------------------------------ Table 2
def test_table2_harness(tmp_path, shared_data):
    pytest.importorskip("gensim")
    from pysynth.k2q.data import load_seed_pairs
    from pysynth.k2q.table2 import PAPER_TABLE2, run_table2

    t0 = load_seed_pairs(shared_data)[:20]
    # training pairs: the T0 questions themselves, so SDM must find each query's own question
    pairs = tmp_path / "pairs.jsonl.gz"
    with gzip.open(pairs, "wt", encoding="utf-8") as f:
        for p in t0 + load_seed_pairs(shared_data)[20:60]:
            f.write(json.dumps({"keywords": p.keywords, "question": p.question, "extra": 1}) + "\n")
    res = run_table2(pairs, {}, data=shared_data, out_dir=tmp_path / "out", limit=20, progress=False,
                     tbm_params={"min_count": 1, "epochs": 2})
    assert set(res) == {"SDM", "TBM", "_meta"} and res["_meta"]["t0_pairs"] == 20
    sig = res["_meta"]["signature"]
    assert sig["format"] == "pysynth.k2q.table2" and sig["input"]["t0_pairs"] == 20 and len(sig["input"]["sha256"]) == 64
    for name in ("SDM", "TBM"):
        r = res[name]
        assert r["n"] == 20 and 0.0 <= r["bleu"] <= 1.0 and 0.0 <= r["rouge2"] <= r["rouge1"] <= 1.0
        assert r["paper"]["rougeL"] == PAPER_TABLE2[name][0]
    assert res["SDM"]["rougeL"] > 0.6  # mostly retrieves the question the query was written for
    md = (tmp_path / "out" / "table2.md").read_text()
    assert "| SDM |" in md and "0.3650" in md and "| TBM |" in md
    js = json.loads((tmp_path / "out" / "table2.json").read_text())
    assert js["rows"]["SDM"]["rougeL"] == res["SDM"]["rougeL"]
    rows = (tmp_path / "out" / "table2_outputs.jsonl").read_text().splitlines()
    assert len(rows) == 20 and set(json.loads(rows[0])["outputs"]) == {"SDM", "TBM"}
    assert not list((tmp_path / "out").glob(".*tmp*"))


def test_table2_scores_like_evaluate_t0(tmp_path, shared_data):
    """A baseline row is evaluate_t0 on its outputs: recompute ROUGE/BLEU by hand."""
    from pysynth import metrics
    from pysynth.k2q.data import load_seed_pairs
    from pysynth.k2q.table2 import run_table2
    from pysynth.models.vocab import detokenize, tokenize

    t0 = load_seed_pairs(shared_data)[:10]
    pairs = tmp_path / "pairs.jsonl"
    pairs.write_text("".join(json.dumps({"keywords": "x", "question": q}) + "\n"
                             for q in QUESTIONS + [p.question for p in load_seed_pairs(shared_data)[200:260]]))
    res = run_table2(pairs, data=shared_data, limit=10, baselines=["sdm"], progress=False)
    sdm = SdmBaseline().fit(QUESTIONS + [p.question for p in load_seed_pairs(shared_data)[200:260]])
    hyps = [detokenize(tokenize(h)) for h in sdm.generate([p.keywords for p in t0])]
    refs = [detokenize(tokenize(p.question)) for p in t0]
    r = metrics.rouge(hyps, refs, types=("rougeL", "rouge1", "rouge2")).mean()
    assert res["SDM"]["rougeL"] == pytest.approx(r["rougeL"]["f"], abs=1e-12)
    assert res["SDM"]["bleu"] == pytest.approx(metrics.corpus_bleu(hyps, [refs]).score / 100, abs=1e-12)


def test_table2_bad_input(tmp_path, shared_data):
    from pysynth.k2q.table2 import load_pairs, run_table2

    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"question": "what?"}\n')
    with pytest.raises(ValueError, match="row 1 needs str fields"):
        load_pairs(bad)
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n")
    with pytest.raises(ValueError, match="no keyword-question pairs"):
        load_pairs(empty)
    with pytest.raises(FileNotFoundError, match="not a model folder"):
        run_table2(bad, {"copynet": tmp_path}, data=shared_data)
    with pytest.raises(ValueError, match="baselines"):
        run_table2(bad, data=shared_data, baselines=["bm25"])
