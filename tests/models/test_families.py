"""Transformer encoder-decoder with a pointer-generator copy head (pysynth.models.transformer):
the GRU Seq2Seq decoding interface, TorchBackend searches, training, directories, ONNX, registry."""
from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("safetensors")

from pysynth.models.batching import make_source_batch, make_target_arrays  # noqa: E402
from pysynth.models.vocab import SPECIALS, Vocab  # noqa: E402

WORDS = [f"w{i}" for i in range(12)]


def _vocab():
    return Vocab(list(SPECIALS) + WORDS)


def _config(copy=True, **kw):
    from pysynth.models.transformer import TransformerSeq2SeqConfig

    base = dict(vocab_size=64, d_model=32, heads=2, enc_layers=1, dec_layers=2, ff_dim=64, dropout=0.0, copy=copy)
    base.update(kw)
    return TransformerSeq2SeqConfig(**base)


def _model(copy=True, seed=0, **kw):
    from pysynth.models.transformer import TransformerSeq2Seq

    torch.manual_seed(seed)
    return TransformerSeq2Seq(_config(copy, **kw), len(_vocab())).eval()


def _sources(rng, n, oov_rate=0.25):
    out = []
    for _ in range(n):
        L = int(rng.integers(2, 6))
        out.append([WORDS[j] if rng.random() > oov_rate else f"oov{j}" for j in rng.integers(0, len(WORDS), L)])
    return out


def _tensors(batch, targets=None, vocab=None):
    t = torch.from_numpy
    out = [t(batch.src), t(batch.src_len), t(batch.src_ext), int(batch.n_ext)]
    if targets is not None:
        tin, tout = make_target_arrays(vocab, targets, batch.oovs, 10)
        out += [t(tin), t(tout)]
    return out


# ------------------------------------------------------------------------------ config

def test_config_round_trip_and_validation():
    from pysynth.models.transformer import TransformerSeq2SeqConfig

    c = _config()
    assert TransformerSeq2SeqConfig.from_dict(c.to_dict()) == c
    with pytest.raises(ValueError, match="heads"):
        TransformerSeq2SeqConfig(d_model=30, heads=4)
    with pytest.raises(ValueError, match="dropout"):
        TransformerSeq2SeqConfig(dropout=1.0)
    with pytest.raises(ValueError, match="enc_layers"):
        TransformerSeq2SeqConfig(enc_layers=0)
    with pytest.raises(ValueError, match="unknown field"):
        TransformerSeq2SeqConfig.from_dict({"d_model": 32, "bogus": 1})
    with pytest.raises(TypeError, match="copy"):
        TransformerSeq2SeqConfig(copy="yes")
    from pysynth.models.transformer import TransformerSeq2Seq

    with pytest.raises(ValueError, match="vocab_size"):
        TransformerSeq2Seq(_config(vocab_size=10), 16)


# ------------------------------------------------------------------------------ step == teacher forcing

@pytest.mark.parametrize("copy", [True, False])
def test_steps_equal_teacher_forced_logprobs(copy):
    """Incremental decoding with the cache gives the parallel (causal-mask) forward's rows."""
    m = _model(copy, seed=1)
    vocab = _vocab()
    rng = np.random.default_rng(1)
    src = _sources(rng, 4)
    b = make_source_batch(vocab, src, copy)
    s, sl, se, n_ext, tin, tout = _tensors(b, [x[::-1] for x in src], vocab)
    with torch.no_grad():
        full = m.logprobs(s, sl, se, n_ext, tin)
        enc = m.encode(s, sl)
        h = enc.h0
        for t in range(tin.shape[1]):
            logp, h = m.step(tin[:, t], h, enc, se, n_ext)
            assert logp.shape == (len(src), len(vocab) + (n_ext if copy else 0))
            torch.testing.assert_close(logp, full[:, t], atol=1e-5, rtol=1e-5)
        assert h.shape[3] == tin.shape[1]
        # the probabilities of a copy row sum to 1 (pointer-generator mixture over V + n_ext)
        mass = logp.exp().sum(1)
        torch.testing.assert_close(mass, torch.ones_like(mass), atol=1e-4, rtol=0)
        # the step parts give the full rows' values (TorchBackend's CPU top-k path)
        nll, ntok = m(s, sl, se, n_ext, tin, tout)
        picked = full.gather(2, tout.unsqueeze(-1)).squeeze(-1)
        assert torch.isclose(nll, -(picked * (tout != 0)).sum())
        assert ntok == (tout != 0).sum()


def test_padding_does_not_change_rows():
    m = _model(True, seed=2)
    vocab = _vocab()
    src = [["w1", "oov3", "w2"], ["w4", "w5", "w6", "w7", "w8"]]
    both = make_source_batch(vocab, src, True)
    alone = make_source_batch(vocab, src[:1], True)
    with torch.no_grad():
        out = []
        for b in (both, alone):
            s, sl, se, n_ext = _tensors(b)
            enc = m.encode(s, sl)
            lp, _ = m.step(torch.full((len(b),), 2), enc.h0, enc, se, n_ext)
            out.append(lp[0, : len(vocab) + 1])
    torch.testing.assert_close(out[0], out[1], atol=1e-5, rtol=1e-5)


# ------------------------------------------------------------------------------ training + searches

@pytest.fixture(scope="module")
def trained():
    """A copy-head transformer trained for 150 steps to reverse short sequences (with OOV words)."""
    torch.manual_seed(0)
    m = _model(True, seed=0).train()
    vocab = _vocab()
    rng = np.random.default_rng(0)
    opt = torch.optim.Adam(m.parameters(), lr=3e-3)
    for _ in range(150):
        src = _sources(rng, 32)
        b = make_source_batch(vocab, src, True)
        nll, n = m(*_tensors(b, [x[::-1] for x in src], vocab))
        opt.zero_grad()
        (nll / n).backward()
        opt.step()
    return m.eval(), vocab, float(nll.detach() / n)


@pytest.mark.parametrize("parts", [True, False])
def test_trained_model_decodes_through_torch_backend(trained, parts):
    from pysynth.decoding.backends import TorchBackend
    from pysynth.decoding.search import beam_search, diverse_beam_search, greedy_search

    m, vocab, loss = trained
    assert loss < 0.1
    src = _sources(np.random.default_rng(123), 12)
    b = make_source_batch(vocab, src, True)
    be = TorchBackend(m, parts=parts, kernels="torch")
    want = [s[::-1] for s in src]
    greedy = [vocab.decode(h[0].tokens, b.oovs[i]) for i, h in enumerate(greedy_search(be, b, max_len=10))]
    beam = beam_search(be, b, beam=3, max_len=10)
    best = [vocab.decode(h[0].tokens, b.oovs[i]) for i, h in enumerate(beam)]
    assert sum(g == w for g, w in zip(greedy, want)) >= 11
    assert sum(g == w for g, w in zip(best, want)) >= 11
    assert all(len(h) == 3 for h in beam)
    # OOV words come out through the copy head (extended ids)
    assert any(t >= len(vocab) for h in beam for t in h[0].tokens)
    div = diverse_beam_search(be, b, beam=4, groups=2, diversity=1.0, max_len=10)
    assert all(len(h) == 4 for h in div)


@pytest.mark.parametrize("copy", [True, False])
def test_backend_paths_agree(trained, copy):
    """parts / full-row / top-k paths of TorchBackend give the same beams (trained copy model;
    random model without the copy head)."""
    from pysynth.decoding.backends import TorchBackend
    from pysynth.decoding.search import beam_search

    m, vocab = (trained[0], trained[1]) if copy else (_model(False, seed=8), _vocab())
    b = make_source_batch(vocab, _sources(np.random.default_rng(7), 6), copy)
    runs = [beam_search(TorchBackend(m, **kw), b, beam=3, max_len=8)
            for kw in ({"parts": True}, {"parts": False}, {"topk": False})]
    for other in runs[1:]:
        for h1, h2 in zip(runs[0], other):
            assert [h.tokens for h in h1] == [h.tokens for h in h2]
            np.testing.assert_allclose([h.score for h in h1], [h.score for h in h2], atol=1e-5)


# ------------------------------------------------------------------------------ directories + registry

def test_save_load_round_trip(tmp_path):
    from pysynth.models import registry
    from pysynth.models.transformer import load, save_pretrained

    m, vocab = _model(True, seed=3), _vocab()
    save_pretrained(m, vocab, tmp_path / "t", onnx=True)
    assert (tmp_path / "t" / "model.safetensors").is_file()
    from pysynth import store

    st = store.load(tmp_path / "t", "pysynth.model")
    assert st.meta["onnx"] == {"encoder": "encoder.onnx", "step": "step.onnx"} and st.read("step.onnx")
    m2, v2 = load(tmp_path / "t")
    assert v2.itos == vocab.itos and m2.config == m.config
    for (k, a), (_, b) in zip(m.state_dict().items(), m2.state_dict().items()):
        assert torch.equal(a, b), k
    r = registry.resolve(tmp_path / "t")
    assert r.kind == "pysynth"
    with pytest.raises(TypeError, match="model"):
        save_pretrained(object(), vocab, tmp_path / "x")


def test_registry_builds_the_families():
    from pysynth.models import registry
    from pysynth.models.transformer import ONNX_GRAPHS

    a = registry.architecture("transformer-seq2seq")
    cfg = a.config_class().from_dict(_config().to_dict())
    m = a.build(cfg, len(_vocab()))
    assert m.copy and m.vocab_size == len(_vocab())
    assert a.onnx == ONNX_GRAPHS  # the registry's spec is what export_onnx writes
    from pysynth.models import encoders

    for name in ("span-encoder", "bi-encoder"):
        arch = registry.architecture(name)
        assert arch.family == name and arch.onnx == encoders.ONNX_GRAPHS[name]


# ------------------------------------------------------------------------------ ONNX

@pytest.mark.parametrize("copy", [True, False])
def test_onnx_encoder_and_step_match_torch(tmp_path, copy):
    ort = pytest.importorskip("onnxruntime")
    pytest.importorskip("onnxscript")
    from pysynth.models.transformer import export_onnx, onnx_graphs

    m, vocab = _model(copy, seed=4, dropout=0.1), _vocab()
    paths = export_onnx(m, tmp_path)
    assert not any(x.training for x in m.modules())  # the export leaves the model in eval mode
    enc_s = ort.InferenceSession(str(paths["encoder"]), providers=["CPUExecutionProvider"])
    step_s = ort.InferenceSession(str(paths["step"]), providers=["CPUExecutionProvider"])
    b = make_source_batch(vocab, _sources(np.random.default_rng(5), 3, 0.4), copy)  # other sizes than traced
    s, sl, se, n_ext = _tensors(b)
    graphs = onnx_graphs(copy)
    enc_out = dict(zip(graphs["encoder"]["outputs"], enc_s.run(None, {"src": b.src, "src_len": b.src_len})))
    with torch.no_grad():
        enc = m.encode(s, sl)
        np.testing.assert_allclose(enc_out["memory"], enc.memory.numpy(), atol=1e-4)
        h, h_ort = enc.h0, enc_out["h0"]
        toks = np.full(len(b), 2, dtype=np.int64)
        for _ in range(3):
            lp, h = m.step(torch.from_numpy(toks), h, enc, se, n_ext)
            feed = dict(enc_out, tokens=toks, h=h_ort, src_ext=b.src_ext,
                        ext_zeros=np.zeros((len(b), n_ext), np.float32))
            lp_ort, h_ort = step_s.run(None, {k: feed[k] for k in graphs["step"]["inputs"]})
            np.testing.assert_allclose(lp_ort, lp.numpy(), atol=1e-4)
            np.testing.assert_allclose(h_ort, h.numpy(), atol=1e-4)
            toks = lp.numpy().argmax(1)


def test_registry_and_hf_module_import_no_torch():
    """The registrations are strings and pysynth.models.hf imports transformers on use only."""
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[2]
    code = ("import sys, pysynth.models.registry as r, pysynth.models.hf\n"
            "assert {'transformer-seq2seq', 'span-encoder', 'bi-encoder'} <= set(r.architectures())\n"
            "print(','.join(m for m in ('torch', 'transformers', 'onnx') if m in sys.modules))")
    p = subprocess.run([sys.executable, "-c", code], cwd=str(root), capture_output=True, text=True, timeout=120,
                       env={**__import__("os").environ, "PYTHONPATH": str(root)})
    assert p.returncode == 0, p.stderr
    assert p.stdout.strip() == ""


def test_generator_runs_the_transformer_text_to_text(trained):
    """pysynth.models.generate.Generator drives it as it drives the GRU models (copy flag explicit)."""
    from pysynth.decoding.backends import TorchBackend
    from pysynth.models.generate import Generator

    m, vocab, _ = trained
    gen = Generator(TorchBackend(m, kernels="torch"), vocab, m.copy, m.config.max_src_len, m.config.max_tgt_len)
    out = gen.generate(["w1 w2 zebra w3", "w5 w6"], beam=3, max_len=10)
    assert [g.texts[0] for g in out] == ["w3 zebra w2 w1", "w6 w5"]  # the OOV "zebra" is copied
