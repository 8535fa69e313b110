"""The model registry: names and directories resolve in one place, errors list what exists, the
architecture (capabilities, ONNX names) is decided by its entry. No torch needed except where
a module is built."""
from __future__ import annotations

import json

import pytest

from pysynth.models import registry
from pysynth.models.config import ARCHS, Seq2SeqConfig


def test_shipped_model_resolves_by_name():
    r = registry.resolve("k2q-copynet-small")
    assert r.kind == "pysynth" and r.name == "k2q-copynet-small"
    assert (r.path / "meta.json").is_file() and (r.path / "model.safetensors").is_file()
    assert "k2q-copynet-small" in registry.models()
    assert registry.resolve(None, default="k2q-copynet-small") == r
    assert registry.resolve(str(r.path)).path == r.path


def test_unknown_name_lists_the_known_ones(tmp_path):
    with pytest.raises(ValueError, match="k2q-copynet-small") as e:
        registry.resolve("no-such-model")
    assert "neither a shipped model" in str(e.value)
    with pytest.raises(ValueError, match="^model: no model given.*k2q-copynet-small"):
        registry.resolve(None)
    with pytest.raises(ValueError, match="^--model: .*not a model directory"):
        registry.resolve(tmp_path, what="--model")
    with pytest.raises(TypeError, match="model must be a model name or a directory"):
        registry.resolve(3)
    with pytest.raises(ValueError, match="unknown architecture 'lstm'; known: .*copynet"):
        registry.architecture("lstm")


def test_hf_and_run_folders(tmp_path):
    hf = tmp_path / "hf"
    hf.mkdir()
    (hf / "config.json").write_text(json.dumps({"model_type": "t5"}))
    assert registry.resolve(hf) == registry.Resolved("hf", hf)
    (hf / "vocab.json").write_text("{}")  # a BPE tokenizer's vocabulary: still Hugging Face
    assert registry.resolve(hf).kind == "hf"
    run = tmp_path / "run"
    (run / registry.RUN_MODEL).mkdir(parents=True)
    (run / registry.RUN_MODEL / "meta.json").write_text("{}")
    assert registry.resolve(run).path == run / registry.RUN_MODEL


def test_registration_conflicts():
    a = registry.architecture("copynet")
    assert registry.register_architecture(a) is a  # the same definition again: fine
    clash = registry.Architecture("copynet", "gru-seq2seq", a.config, "x:y")
    with pytest.raises(ValueError, match="already registered"):
        registry.register_architecture(clash)
    m = registry.ShippedModel("k2q-copynet-small", "ednet", registry.ASSETS / "elsewhere")
    with pytest.raises(ValueError, match="already registered"):
        registry.register_model(m)


def test_architecture_is_decided_by_the_registry():
    assert set(ARCHS) == {"ednet", "attnet", "copynet"}
    for name in ARCHS:
        a = registry.architecture(name)
        assert a.family == "gru-seq2seq" and a.config_class() is Seq2SeqConfig
        assert Seq2SeqConfig(arch=name).options == a.options
        assert set(a.onnx) == {"encoder", "step", "step_parts"}
    assert registry.architecture("copynet").options == {"attention": True, "copy": True}
    assert "src_ext" in registry.architecture("copynet").onnx["step"]["inputs"]
    assert "src_ext" not in registry.architecture("attnet").onnx["step"]["inputs"]


def test_builder_reads_the_capabilities():
    pytest.importorskip("torch")
    for name in ARCHS:
        cfg = Seq2SeqConfig(arch=name, vocab_size=20, emb_dim=4, enc_hidden=3, dec_hidden=5)
        m = registry.architecture(name).build(cfg, 10)
        opts = registry.architecture(name).options
        assert (m.has_attention, m.has_copy) == (opts["attention"], opts["copy"])
