"""``pysynth dup train`` (Rücklé et al. 2019 detectors): pair reading, a tiny BiLSTM trained for a
few steps, the detector store round trip, ONNX (onnxruntime, no torch) against torch, the
detector in eval / index / search, and one-line CLI errors. Tiny data: a few seconds."""
from __future__ import annotations

import json
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("onnxruntime")
pytest.importorskip("onnx")

from pysynth.dup.search import Encoder, encoder, is_detector  # noqa: E402
from pysynth.dup.train import RNNEncoder, load_torch, margin_loss, read_pairs, save, train  # noqa: E402

QUESTIONS = [
    ("how do i install python on ubuntu", "i want python three on my ubuntu laptop but apt fails"),
    ("what is the capital of france", "i need the name of the french capital city for a quiz"),
    ("how to bake bread at home", "my bread never rises in the oven what flour and yeast should i use"),
    ("which beer goes with fish", "we serve salmon tonight and wonder which ale or lager fits"),
    ("why is my bike chain slipping", "the chain on my bicycle skips gears when i pedal hard uphill"),
    ("how to brew espresso without a machine", "no espresso machine at home can a moka pot make strong coffee"),
]


@pytest.fixture(autouse=True, scope="module")
def _one_thread():
    # tiny tensors: two OpenMP threads only wait on each other (badly on a loaded machine)
    n = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(n)


def _rows(negatives: int = 2):
    rows = []
    for i, (t, b) in enumerate(QUESTIONS):
        rows.append({"site": "s", "post_id": str(i), "title": t, "body": b, "label": 1})
        for k in range(1, negatives + 1):
            rows.append({"site": "s", "post_id": str(i), "title": t, "body": QUESTIONS[(i + k) % len(QUESTIONS)][1],
                         "label": 0})
    return rows


@pytest.fixture(scope="module")
def vocab(tmp_path_factory):
    words = sorted({w for q in QUESTIONS for s in q for w in s.split()})
    p = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    p.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", *words]) + "\n")
    return p


@pytest.fixture(scope="module")
def detector(vocab, tmp_path_factory):
    model, vf, info = train(_rows(), arch="bilstm", embeddings="random", hidden=8, epochs=2, batch_size=3,
                            max_steps=3, dev_share=0.0, vocab=vocab, seed=1, log=lambda s: None)
    out = tmp_path_factory.mktemp("det") / "bilstm"
    save(model, vf, out, info, quantize=False)
    return model, out, info


def test_read_pairs_groups_and_counts():
    rows = _rows(2) + [{"site": "s", "post_id": "99", "title": "orphan", "body": "only a negative", "label": 0}]
    groups, counts = read_pairs(rows)
    assert len(groups) == 6 and counts["no_positive"] == 1 and counts["negatives"] == 13
    assert groups[0] == {"title": QUESTIONS[0][0], "pos": [QUESTIONS[0][1]],
                         "neg": [QUESTIONS[1][1], QUESTIONS[2][1]]}
    half, c = read_pairs(rows, fraction=0.5, seed=3)
    assert len(half) == 3 and c["left_out_by_fraction"] == 3 and half == read_pairs(rows, fraction=0.5, seed=3)[0]


def test_read_pairs_keeps_methods_apart():
    # a --method both file: the DQG positive (a generated title) gets DQG negatives only
    rows = [{"site": "s", "post_id": "1", "method": m, "title": "t", "body": f"{m} {k}", "label": k}
            for m in ("ws-tb", "dqg") for k in (1, 0)]
    groups, _ = read_pairs(rows)
    assert [(g["pos"], g["neg"]) for g in groups] == [(["ws-tb 1"], ["ws-tb 0"]), (["dqg 1"], ["dqg 0"])]


@pytest.mark.parametrize("rows, match", [
    ([], "no rows"), ([{"title": "a", "label": 1}], "'body'"), ([{"title": "a", "body": "b", "label": 2}], "'label'"),
    ([{"title": "a", "body": "b", "label": 0}], "no row with label 1"), (["x"], "expected an object"),
])
def test_read_pairs_errors(rows, match):
    with pytest.raises(ValueError, match=match):
        read_pairs(rows)


def test_margin_loss():
    t = torch.tensor([[1.0, 0.0]])
    p = torch.tensor([[1.0, 0.0]])
    n = torch.tensor([[[0.0, 1.0], [1.0, 0.0]]])
    # negatives at cos 0 (loss 0) and cos 1 (loss 0.25); the padded third one does not count
    assert margin_loss(t, p, n, torch.tensor([[1.0, 1.0]])).item() == pytest.approx(0.125)
    assert margin_loss(t, p, n, torch.tensor([[1.0, 0.0]])).item() == pytest.approx(0.0)


def test_train_is_seeded_and_learns_something(vocab):
    kw = dict(arch="bilstm", embeddings="random", hidden=8, epochs=3, batch_size=3, dev_share=0.0, vocab=vocab,
              seed=2, log=lambda s: None)
    a, _, info = train(_rows(), **kw)
    b, _, _ = train(_rows(), **kw)
    assert all(torch.equal(x, y) for x, y in zip(a.state_dict().values(), b.state_dict().values()))
    assert info["history"][0]["steps"] == 2 and info["pairs"]["used"] == 6
    assert info["history"][-1]["loss"] < info["history"][0]["loss"]


def test_rnn_vectors_do_not_depend_on_padding():
    torch.manual_seed(0)
    for cell in ("lstm", "gru"):
        for pooling in ("mean", "max"):
            m = RNNEncoder(20, 6, 5, cell, pooling).eval()
            ids = torch.tensor([[2, 5, 6, 3, 0, 0, 0], [2, 7, 8, 9, 10, 11, 3]])
            am = (ids != 0).long()
            both = m(ids, am)
            alone = m(ids[:1, :4], am[:1, :4])
            torch.testing.assert_close(both[:1], alone, atol=1e-6, rtol=1e-5)
            assert torch.allclose(both.norm(dim=-1), torch.ones(2))


def test_save_load_round_trip(detector):
    model, out, info = detector
    m2, tok, cfg = load_torch(out)
    assert all(torch.equal(x, y) for x, y in zip(model.state_dict().values(), m2.state_dict().values()))
    assert cfg["arch"] == "bilstm" and cfg["dim"] == 16 and cfg["train"]["history"] == info["history"]
    assert is_detector(out) and not is_detector(out / "nope")


def test_onnx_matches_torch(detector):
    model, out, _ = detector
    texts = [q for pair in QUESTIONS for q in pair] + ["an unseen word zzz", ""]
    ref = model(*(torch.from_numpy(v) for v in Encoder(out).tokenizer.batch(texts, 128).values())).detach().numpy()
    got = encoder(out).encode(texts, batch_size=3)  # length-sorted batches of 3: other padding than ref
    assert got.dtype == np.float32 and got.shape == (len(texts), 16)
    np.testing.assert_allclose(got, ref, atol=1e-5)
    assert encoder(out) is encoder(out)  # cached


def test_int8_export_keeps_the_vectors(detector, tmp_path):
    model, out, info = detector
    q = save(model, out / "vocab.txt", tmp_path / "q", info, quantize=True, torch_weights=False)
    texts = [t for t, _ in QUESTIONS]
    a, b = Encoder(out).encode(texts), Encoder(q).encode(texts)
    assert (a * b).sum(1).min() > 0.99
    with pytest.raises(ValueError, match="ONNX graph"):
        load_torch(q)


def test_detector_in_eval_and_search(detector, tmp_path):
    from pysynth.dup.evaluate import evaluate

    _, out, _ = detector
    rows = [{"query": t, "positives": [b], "negatives": [QUESTIONS[(i + 1) % 6][1], QUESTIONS[(i + 2) % 6][1]]}
            for i, (t, b) in enumerate(QUESTIONS)]
    r = evaluate(rows, str(out))
    assert r["queries"] == 6 and 0 <= r["MAP"] <= 100
    h = evaluate(rows, str(out), hybrid=True)
    assert h["model"].endswith("(hybrid, alpha 0.5)")
    with pytest.raises(ValueError, match="sparse"):
        evaluate(rows, "bm25", hybrid=True)
    pytest.importorskip("faiss")
    from pysynth.dup.search import build, search

    forum = [{"id": i, "question": b} for i, (_, b) in enumerate(QUESTIONS)]
    assert build(forum, tmp_path / "idx", model=str(out))["dim"] == 16
    res = search(tmp_path / "idx", [QUESTIONS[0][0]], k=2)
    assert len(res[0]["results"]) == 2


def _cli(*args):
    return subprocess.run([sys.executable, "-m", "pysynth", "dup", *args], capture_output=True, text=True)


def test_cli_errors(tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text(json.dumps({"title": "t", "body": "b", "label": "yes"}) + "\n")
    r = _cli("train", "--in", str(bad), "--out", str(tmp_path / "m"))
    assert r.returncode == 1 and len(r.stderr.strip().splitlines()) == 1 and "label" in r.stderr
    assert not (tmp_path / "m").exists()
    r = _cli("train", "--in", str(tmp_path / "missing.jsonl"), "--out", str(tmp_path / "m"))
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    good = tmp_path / "p.jsonl"
    good.write_text("".join(json.dumps(x) + "\n" for x in _rows()))
    r = _cli("train", "--in", str(good), "--out", str(tmp_path / "m"), "--arch", "cnn")
    assert r.returncode == 2 and "--arch" in r.stderr and "Traceback" not in r.stderr
    notjson = tmp_path / "n.jsonl"
    notjson.write_text("{not json\n")
    r = _cli("train", "--in", str(notjson), "--out", str(tmp_path / "m"))
    assert r.returncode != 0 and len(r.stderr.strip().splitlines()) == 1 and "Traceback" not in r.stderr
    assert not (tmp_path / "m").exists()


def test_cli_train_then_eval(tmp_path):
    from pysynth.models.encoders import minilm_dir

    if minilm_dir() is None:
        pytest.skip("the offline MiniLM (its vocab.txt) is not installed")
    good = tmp_path / "p.jsonl"
    good.write_text("".join(json.dumps(x) + "\n" for x in _rows()))
    r = _cli("train", "--in", str(good), "--out", str(tmp_path / "m"), "--embeddings", "random",
             "--max-steps", "2", "--batch-size", "3", "--no-quantize", "--onnx-only")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["arch"] == "bilstm"
    data = tmp_path / "e.jsonl"
    data.write_text(json.dumps({"query": QUESTIONS[0][0], "positives": [QUESTIONS[0][1]],
                                "negatives": [QUESTIONS[1][1]]}) + "\n")
    r = _cli("evaluate", "--in", str(data), "--model", str(tmp_path / "m"))
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["queries"] == 1


def test_bi_encoder_detector_store(vocab, tmp_path):
    pytest.importorskip("transformers")
    from pysynth.models.encoders import BiEncoder, EncoderConfig

    n = len(vocab.read_text().splitlines())
    torch.manual_seed(0)
    cfg = EncoderConfig(vocab_size=n, hidden_size=16, num_layers=1, num_heads=2, intermediate_size=32,
                        max_positions=64, dropout=0.0, joint=False)
    model = BiEncoder(cfg, n).eval()
    save(model, vocab, tmp_path / "bi", {"arch": "minilm"}, quantize=False, max_length=32)
    m2, tok, c = load_torch(tmp_path / "bi")
    assert c["arch"] == "minilm" and c["dim"] == 16 and type(m2) is BiEncoder
    texts = [t for t, _ in QUESTIONS]
    ref = m2(*(torch.from_numpy(v) for v in tok.batch(texts, 32).values())).detach().numpy()
    np.testing.assert_allclose(Encoder(tmp_path / "bi").encode(texts, batch_size=2), ref, atol=1e-5)
