"""The pivot pipeline (Granstedt 2017, Fig. 3.3): rows in and out, every question accounted for,
the same bytes for any chunking or worker count, keyword and Hugging Face pivots, the CLI."""
from __future__ import annotations

import json
import subprocess
import sys

import pytest

from pysynth.paraphrase import pipeline as P
from pysynth.paraphrase.jobs import run

QS = ["What color is the keyboard?", "How many animals can be seen?", "Is this a grocery store?",
      "What shape is the bench seat?", "Are these items for sale?", "What is the man holding?"]


def _rows(n=len(QS)):
    return [{"id": f"q{i}", "question": QS[i % len(QS)], "answers": ["x", i], "image_id": 100 + i} for i in range(n)]


@pytest.fixture(scope="module")
def kw_cfg():
    return P.ParaphraseConfig(pivot="keywords", beams=8, groups=4)


def test_keywords_pivot_rows_carry_fields(kw_cfg):
    out = P.paraphrase_rows(_rows(), kw_cfg)
    assert [o["id"] for o in out] == [f"q{i}" for i in range(len(QS))]
    for o, r in zip(out, _rows()):
        assert o["answers"] == r["answers"] and o["image_id"] == r["image_id"] and o["question"] == r["question"]
        assert 1 <= len(o["paraphrases"]) <= 3 and all(p.endswith("?") for p in o["paraphrases"])
        assert len(set(o["paraphrases"])) == len(o["paraphrases"])


def test_every_candidate_has_its_components(kw_cfg):
    p = P.Paraphraser(kw_cfg, keywords=P._keyword_generator(QS[:2]))
    res = p.run(QS[:2])
    for x in res:
        assert x["counts"]["pivots"] <= 8 and x["counts"]["candidates"] == len(x["candidates"])
        chosen = [c for c in x["candidates"] if c["chosen"]]
        assert {c["text"] for c in chosen} == {P.S.strip_question(t) for t in x["paraphrases"]} or chosen
        for c in x["candidates"]:
            assert c["score"] == c["words"] - c["overlap"] - c["length_penalty"] - c["unknown_penalty"] \
                - c["illegal_penalty"]
            assert {"pivot", "pivot_rank", "rank", "group", "logprob"} <= set(c)


def _run(tmp_path, name, rows, cfg, **kw):
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps(r) + "\n" for r in rows))
    out = tmp_path / f"{name}.jsonl"
    s = run(inp, out, cfg, progress=False, **kw)
    return out.read_bytes(), s


def test_same_bytes_for_any_chunking_and_workers(tmp_path, kw_cfg):
    rows = _rows(14)
    a, s = _run(tmp_path, "a", rows, kw_cfg, chunk_size=64)
    b, _ = _run(tmp_path, "b", rows, kw_cfg, chunk_size=3, workers=2)
    assert a == b and s["questions"] == 14 and s["with_paraphrases"] + s["without_paraphrases"] == 14
    samp = P.ParaphraseConfig(pivot="keywords", decode="sample", beams=4, top_k=10, seed=7)
    c, _ = _run(tmp_path, "c", rows, samp, chunk_size=5)
    d, _ = _run(tmp_path, "d", rows, samp, chunk_size=14)
    assert c == d and c != a


def test_killed_run_resumes_to_the_same_bytes(tmp_path, kw_cfg):
    rows = _rows(9)
    ref, _ = _run(tmp_path, "ref", rows, kw_cfg, chunk_size=2)
    inp = tmp_path / "in.jsonl"
    out = tmp_path / "killed.jsonl"
    code = ("import sys; from pysynth.paraphrase import ParaphraseConfig, run; "
            f"run({str(inp)!r}, {str(out)!r}, ParaphraseConfig(pivot='keywords', beams=8, groups=4), chunk_size=2, "
            "progress=False, _stop_after_chunks=2)")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 75 and not out.exists(), r.stderr  # died like kill -9 after two chunks
    s = run(inp, out, kw_cfg, chunk_size=2, progress=False)
    assert s["chunks_resumed"] == 2 and out.read_bytes() == ref


def test_flat_and_candidates_out(tmp_path, kw_cfg):
    rows = _rows(3)
    flat, s = _run(tmp_path, "flat", rows, kw_cfg, flat=True, candidates_out=tmp_path / "cands.jsonl")
    lines = [json.loads(x) for x in flat.decode().splitlines()]
    assert len(lines) == 3 + s["paraphrases"]
    origs = [x for x in lines if x["paraphrase_of"] is None]
    assert [x["id"] for x in origs] == ["q0", "q1", "q2"]
    para = [x for x in lines if x["paraphrase_of"] == "q0"]
    assert para and all(x["answers"] == ["x", 0] and x["id"].startswith("q0#p") for x in para)
    cands = [json.loads(x) for x in (tmp_path / "cands.jsonl").read_text().splitlines()]
    assert len(cands) == s["candidates"] and sum(c["chosen"] for c in cands) == s["paraphrases"]


def test_min_wellformed_drops_and_counts(tmp_path, kw_cfg):
    rows = _rows(4)
    plain, s0 = _run(tmp_path, "plain", rows, kw_cfg)
    out, s = _run(tmp_path, "wf", rows, kw_cfg, min_wellformed=0.5)
    got = [json.loads(x) for x in out.decode().splitlines()]
    assert s["dropped_wellformed"] == sum(g["dropped"] for g in got) > 0
    assert s["paraphrases"] + s["dropped_wellformed"] == s0["paraphrases"]
    assert all(len(g["wellformed"]) == len(g["paraphrases"]) and min(g["wellformed"], default=1) >= 0.5 for g in got)
    with pytest.raises(ValueError, match="min_wellformed"):
        _run(tmp_path, "bad", rows, kw_cfg, min_wellformed=2)


def test_unusable_questions_are_counted_not_dropped(tmp_path, kw_cfg):
    rows = [{"question": "What?"}, {"question": "zzqx qqzv"}, {"question": "?!"}, {"question": QS[0]}]
    out, s = _run(tmp_path, "bad", rows, kw_cfg)
    got = [json.loads(x) for x in out.decode().splitlines()]
    assert [g["id"] for g in got] == [0, 1, 2, 3]  # the row's position when it has no id
    assert s["questions"] == 4 and s["with_paraphrases"] == 1 and sum(s["reasons"].values()) == 3
    assert all(g["reason"] for g in got[:3]) and "reason" not in got[3]


def test_pysynth_model_pair_runs_the_pivot_filter():
    cfg = P.ParaphraseConfig(pivot="k2q-copynet-small,k2q-copynet-small", beams=4, groups=2)
    res = P.Paraphraser(cfg).run(QS[:2])
    assert all(x["counts"]["pivots"] == 4 for x in res)
    assert all(set(p["rejected"]) <= set(P.S.PIVOT_RULES) for x in res for p in x["pivots"])
    # an ONNX export folder alone is a model too (onnxruntime, no model directory)
    from pysynth.models.registry import resolve

    onnx_dir = resolve("k2q-copynet-small").path / "onnx"
    cfg2 = P.ParaphraseConfig(pivot=f"{onnx_dir},k2q-copynet-small", beams=4, groups=2)
    assert P.Paraphraser(cfg2).run(QS[:2]) == res


@pytest.mark.parametrize("kw, match", [
    (dict(pivot="de"), "pivot"), (dict(decode="greedy"), "decode"), (dict(beams=6, groups=4), "beams"),
    (dict(mode="x"), "mode"), (dict(top=0), "top"), (dict(seed=-1), "seed"), (dict(backend="tf"), "backend"),
])
def test_bad_config(kw, match):
    with pytest.raises(ValueError, match=match):
        P.ParaphraseConfig(**kw)


def test_bad_rows():
    with pytest.raises(ValueError, match=r"rows\[1\]"):
        P.paraphrase_rows([{"question": "a b"}, {"q": 1}], P.ParaphraseConfig(pivot="keywords"))


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "pysynth", "paraphrase", "generate", *args], capture_output=True, text=True)


def test_cli(tmp_path):
    inp = tmp_path / "in.jsonl"
    inp.write_text("".join(json.dumps(r) + "\n" for r in _rows(2)))
    r = _cli("--in", str(inp), "--out", str(tmp_path / "o.jsonl"), "--pivot", "keywords", "--beam", "4",
             "--groups", "2", "--mode", "diverse")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["questions"] == 2
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "no question"}\n')
    r = _cli("--in", str(bad), "--out", str(tmp_path / "o2.jsonl"), "--pivot", "keywords")
    assert r.returncode != 0 and "Traceback" not in r.stderr and "question" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    r = _cli("--in", str(inp), "--out", str(tmp_path / "o3.jsonl"), "--beam", "6")
    assert r.returncode != 0 and "multiple of groups" in r.stderr and "Traceback" not in r.stderr


# ---------------------------------------------------------------- Hugging Face translation pairs
def _marian(path, seed):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    tokenizers = pytest.importorskip("tokenizers")
    words = ["<pad>", "</s>", "<unk>"] + sorted({w for q in QS for w in q.lower().replace("?", " ?").split()}
                                                | {"le", "la", "est", "quel", "combien", "de", "?"})
    tk = tokenizers.Tokenizer(tokenizers.models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tk.normalizer = tokenizers.normalizers.Lowercase()
    tk.pre_tokenizer = tokenizers.pre_tokenizers.Whitespace()
    tk.post_processor = tokenizers.processors.TemplateProcessing(single="$A </s>", special_tokens=[("</s>", 1)])
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="</s>",
                                                unk_token="<unk>")
    torch.manual_seed(seed)
    cfg = transformers.MarianConfig(vocab_size=len(words), d_model=16, encoder_layers=1, decoder_layers=1,
                                    encoder_attention_heads=2, decoder_attention_heads=2, encoder_ffn_dim=32,
                                    decoder_ffn_dim=32, max_position_embeddings=64, pad_token_id=0, eos_token_id=1,
                                    decoder_start_token_id=0)
    m = transformers.MarianMTModel(cfg).eval()
    m.generation_config.max_length = 12
    m.save_pretrained(path)
    fast.save_pretrained(path)
    return path


def test_hugging_face_marian_pair(tmp_path):
    fwd, bwd = _marian(tmp_path / "en-x", 0), _marian(tmp_path / "x-en", 1)
    cfg = P.ParaphraseConfig(pivot=f"{fwd},{bwd}", beams=4, groups=2, mode="diverse", ban_unk=False)
    p = P.Paraphraser(cfg)
    assert isinstance(p.forward, P.HFTranslator) and isinstance(p.backward, P.HFTranslator)
    a = p.run(QS[:3])
    b = P.Paraphraser(cfg).run(QS[:3])
    assert a == b
    assert all(x["counts"]["pivots"] == 4 for x in a)
    assert all(x["reason"] or x["paraphrases"] for x in a)
