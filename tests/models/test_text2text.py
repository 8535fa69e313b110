"""The text2text facade: one opener for pysynth models, ONNX exports and Hugging Face folders, one
"auto" backend rule, n-best lists for any SearchConfig; round_trip and the case restorers."""
from __future__ import annotations

import importlib.util
import json
import shutil

import pytest

from pysynth.decoding import SearchConfig
from pysynth.models import registry
from pysynth.models.postprocess import match_case, respace, truecase
from pysynth.models.text2text import ModelText2Text, Text2Text, is_onnx_export, round_trip, text2text

pytest.importorskip("onnxruntime")
K2Q = registry.resolve("k2q-copynet-small").path
QS = ["capital france", "bible verse education", "honda crf 230 weight"]


def test_shipped_model_opens_on_onnxruntime_by_default():
    from pysynth.models.generate import Generator

    m = text2text("k2q-copynet-small")
    assert isinstance(m, Text2Text) and m.runtime == "onnx" and m.name == "k2q-copynet-small"
    assert m.lowercases and m.providers
    search = SearchConfig(decode="dbs", beam=4, groups=2)
    want = Generator.load("k2q-copynet-small", backend="onnx").generate(QS, method="diverse", beam=4, groups=2,
                                                                         dedupe=False)
    got = m.generate(QS, search)
    assert [g.texts for g in got] == [g.texts for g in want] and [g.scores for g in got] == [g.scores for g in want]
    trans = m.translate(QS, search, [0] * len(QS))
    assert [[t for t, _, _ in h] for h in trans] == [g.texts for g in want]
    assert all(isinstance(s, float) and g in (0, 1) for h in trans for _, s, g in h)


def test_search_kwargs_and_search_config_agree():
    m = text2text("k2q-copynet-small")
    for kw, search in ((dict(method="greedy", beam=1), SearchConfig(decode="greedy", beam=1)),
                       (dict(method="beam", beam=3, n=2), SearchConfig(beam=3, n=2)),
                       (dict(method="sample", n=3, top_k=5, seed=4), SearchConfig(decode="sample", beam=3, top_k=5,
                                                                                 seed=4))):
        a = m.gen.generate(QS, dedupe=False, **kw)
        b = m.generate(QS, search)
        assert [g.texts for g in a] == [g.texts for g in b], kw


def test_export_folder_and_the_auto_rule(tmp_path, monkeypatch):
    export = registry.onnx_export_of(K2Q)
    assert export is not None and is_onnx_export(export) and not is_onnx_export(K2Q)
    m = text2text(str(export))
    assert m.runtime == "onnx" and isinstance(m, ModelText2Text)
    assert registry.seq2seq_backend(K2Q) == "onnx" and registry.seq2seq_backend(export) == "onnx"
    assert registry.seq2seq_backend(K2Q, "torch") == "torch"
    # a copy without its export runs on torch; so does any model when onnxruntime is missing
    bare = tmp_path / "bare"
    shutil.copytree(K2Q, bare, ignore=shutil.ignore_patterns("onnx"))
    assert registry.seq2seq_backend(bare) == "torch"
    real = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec", lambda n, *a: None if n == "onnxruntime" else real(n, *a))
    assert registry.seq2seq_backend(K2Q) == "torch"
    assert registry.seq2seq_backend(export) == "onnx"  # an export alone has no torch weights
    with pytest.raises(ValueError, match="^backend:"):
        registry.seq2seq_backend(K2Q, "tf")


def test_torch_backend_matches_onnxruntime():
    pytest.importorskip("torch")
    search = SearchConfig(beam=4)
    a = text2text("k2q-copynet-small", "torch").generate(QS[:2], search)
    b = text2text("k2q-copynet-small", "onnx").generate(QS[:2], search)
    assert [g.texts for g in a] == [g.texts for g in b]


def test_refuses_what_is_not_a_seq2seq_model(tmp_path):
    with pytest.raises(ValueError, match="not a seq2seq model"):
        text2text("wellformed-minilm")
    with pytest.raises(ValueError, match="^backend:"):
        text2text("k2q-copynet-small", "tf")
    with pytest.raises(ValueError, match="^pivot model: .*not a model directory"):
        text2text(tmp_path, what="pivot model")


def test_round_trip_matches_the_paraphrase_spelling():
    from pysynth.paraphrase import round_trip as paraphrase_round_trip

    texts = ["Capital France", "zzqx qqzv"]
    got = round_trip(texts, "k2q-copynet-small", "k2q-copynet-small", beam=2)
    assert got == paraphrase_round_trip(texts, pivot="k2q-copynet-small,k2q-copynet-small", beam=2)
    assert got[1] == "zzqx qqzv"  # unreadable: unchanged
    assert got[0] != texts[0] and got[0][0].isupper()


def test_hf_folder_is_decoded_with_its_tokenizer(tmp_path):
    torch = pytest.importorskip("torch")
    transformers = pytest.importorskip("transformers")
    from tokenizers import Tokenizer, models, pre_tokenizers

    words = ["<pad>", "</s>", "<unk>"] + [f"w{i}" for i in range(29)]
    tk = Tokenizer(models.WordLevel({w: i for i, w in enumerate(words)}, unk_token="<unk>"))
    tk.pre_tokenizer = pre_tokenizers.Whitespace()
    fast = transformers.PreTrainedTokenizerFast(tokenizer_object=tk, pad_token="<pad>", eos_token="</s>",
                                                unk_token="<unk>")
    torch.manual_seed(0)
    cfg = transformers.T5Config(vocab_size=len(words), d_model=16, d_kv=4, d_ff=32, num_layers=1,
                                num_decoder_layers=1, num_heads=2, pad_token_id=0, eos_token_id=1,
                                decoder_start_token_id=0)
    transformers.T5ForConditionalGeneration(cfg).save_pretrained(tmp_path)
    fast.save_pretrained(tmp_path)
    m = text2text(tmp_path)
    assert m.runtime == "hf" and not m.lowercases
    res = m.generate(["w3 w4 w5", "w6"], SearchConfig(decode="dbs", beam=4, groups=2))
    assert len(res) == 2 and all(len(g.texts) == 4 for g in res)
    assert m.valid("") == "empty input"
    assert json.loads((tmp_path / "config.json").read_text())["model_type"] == "t5"


def test_case_restorers_keep_their_two_rules():
    from pysynth.mqr.rewrite import truecase as mqr_truecase

    assert mqr_truecase is truecase
    assert truecase("how do i install ubuntu on an usb stick?", "install Ubuntu on USB stick") == \
        "How do I install Ubuntu on an USB stick?"
    assert respace("what is a - b?", "a-b") == "what is a-b?"
    # the paraphrase rule: whitespace words, the source's first word lower-cased unless "I"
    assert match_case("is this paris ?", "Is this Paris?") == "Is this paris ?"
    assert match_case("where is paris", "Where is Paris") == "Where is Paris"
    assert match_case("i think so", "I think so") == "I think so"
