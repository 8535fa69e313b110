"""Bad inputs raise ValueError naming the argument; over-long input is truncated."""
from __future__ import annotations

import json

import pytest

torch = pytest.importorskip("torch")

from pysynth.decoding import search as S  # noqa: E402
from pysynth.decoding.backends import TorchBackend  # noqa: E402
from pysynth.models.config import Seq2SeqConfig  # noqa: E402
from pysynth.models.generate import Generator  # noqa: E402
from pysynth.models.vocab import Vocab, detokenize, tokenize  # noqa: E402

from ._util import small_model, small_vocab  # noqa: E402


@pytest.fixture(scope="module")
def gen():
    m = small_model("copynet", seed=2, eos_bias=3.0)
    return Generator(TorchBackend(m), small_vocab(), copy=True, max_src_len=6, max_tgt_len=8)


@pytest.mark.parametrize("text", ["", "   ", "?!"])
def test_empty_keywords(gen, text):
    with pytest.raises(ValueError, match=r"keywords\[0\]: empty"):
        gen.generate([text])


def test_unknown_tokens_only(gen):
    with pytest.raises(ValueError, match=r"keywords\[1\].*outside the model vocabulary"):
        gen.generate(["w1 w2", "zork blorp"])


def test_single_string_is_rejected(gen):
    with pytest.raises(TypeError, match="keywords"):
        gen.generate("w1 w2")


def test_overlong_input_is_truncated(gen):
    long = " ".join(f"w{i}" for i in range(20))
    res = gen.generate([long, "w1 w2"], beam=3)
    assert res[0].truncated and not res[1].truncated
    same = gen.generate([" ".join(f"w{i}" for i in range(6))], beam=3)
    assert same[0].texts == res[0].texts  # only the first max_src_len tokens are read


@pytest.mark.parametrize("kw,arg", [
    (dict(beam=6, groups=4, method="diverse"), "groups"),
    (dict(beam=0), "beam"),
    (dict(beam=4, groups=0, method="diverse"), "groups"),
    (dict(beam=4, groups=2, diversity=-1.0, method="diverse"), "diversity"),
    (dict(length_penalty="cubic"), "length_penalty"),
    (dict(method="nucleus"), "method"),
    (dict(method="sample", top_p=1.5), "top_p"),
    (dict(method="sample", top_k=-1), "top_k"),
    (dict(method="sample", temperature=0.0), "temperature"),
    (dict(method="sample", seed=-1), "seed"),
    (dict(n=0), "n"),
    (dict(max_len=-3), "max_len"),
])
def test_bad_search_settings(gen, kw, arg):
    with pytest.raises(ValueError, match=rf"^{arg}:"):
        gen.generate(["w1 w2"], **kw)


def test_search_functions_validate_too():
    with pytest.raises(ValueError, match="^groups:"):
        S.check_search_args(beam=5, groups=2)


def test_generate_outputs(gen):
    res = gen.generate(["w1 w2 oovx", "w3"], beam=4, n=3)
    for r in res:
        assert 1 <= len(r.texts) <= 3 and len(r.texts) == len(r.scores)
        assert r.scores == sorted(r.scores, reverse=True)
        assert len(set(r.texts)) == len(r.texts)


def test_config_validation_and_json(tmp_path):
    with pytest.raises(ValueError, match="^arch:"):
        Seq2SeqConfig(arch="transformer")
    with pytest.raises(ValueError, match="^dropout:"):
        Seq2SeqConfig(dropout=1.5)
    c = Seq2SeqConfig(arch="attnet", emb_dim=7)
    assert Seq2SeqConfig.from_dict(json.loads(c.to_json())) == c
    with pytest.raises(ValueError, match="unknown field"):
        Seq2SeqConfig.from_dict({"arch": "ednet", "layers": 2})


def test_paper_defaults():
    c = Seq2SeqConfig()
    assert (c.vocab_size, c.emb_dim, c.enc_hidden, c.dec_hidden, c.dropout, c.emb_init) == (44000, 100, 200, 400, 0.5, 0.1)
    from pysynth.models.config import TrainConfig

    t = TrainConfig()
    assert (t.lr, t.clip_norm) == (1e-4, 0.1)


def test_tokenize_vocab():
    assert tokenize("What's a GPU?") == ["what's", "a", "gpu", "?"]
    assert detokenize(["what", "is", "it", "?"]) == "what is it?"
    v = Vocab.build(["b a a", "c a b"], max_size=6)
    assert v.itos == ["<pad>", "<unk>", "<s>", "</s>", "a", "b"]
    ids, ext, oovs = v.encode_extended(["a", "z", "c", "z"])
    assert ids == [4, 1, 1, 1] and ext == [4, 6, 7, 6] and oovs == ["z", "c"]
    assert v.decode([4, 6, 7, 3, 5], oovs) == ["a", "z", "c"]
    cov = v.coverage(["a b z"])
    assert cov["coverage"] == pytest.approx(2 / 3) and cov["volume"] == pytest.approx(2 / 3)
    with pytest.raises(ValueError, match="itos"):
        Vocab(["a", "b"])
