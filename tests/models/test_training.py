"""Trainer: resume determinism, atomic checkpoints, early stopping, weights-only loading."""
from __future__ import annotations

import json

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from pysynth.models.config import Seq2SeqConfig, TrainConfig  # noqa: E402
from pysynth.models.io import load_model, save_model, upgrade_model_dir  # noqa: E402
from pysynth.models.train import Trainer, bucket_batches  # noqa: E402
from pysynth.models.vocab import Vocab  # noqa: E402

from _stores import write_meta  # noqa: E402


def _pairs(n=40, seed=0):
    rng = np.random.default_rng(seed)
    words = [f"t{i}" for i in range(30)]
    out = []
    for _ in range(n):
        kw = list(rng.choice(words, size=int(rng.integers(2, 5)), replace=False))
        out.append((" ".join(kw), "what is " + " ".join(kw) + " ?"))
    return out


def _cfgs(arch="copynet", **tc):
    mc = Seq2SeqConfig(arch=arch, vocab_size=50, emb_dim=8, enc_hidden=6, dec_hidden=12, dropout=0.3)
    base = dict(lr=1e-2, batch_size=4, bucket_batches=2, eval_every=0, ckpt_every=0, log_every=0,
                seed=3, device="cpu", dev_fraction=0.0)
    base.update(tc)
    return mc, TrainConfig(**base)


def _state(tr):
    return {k: v.clone() for k, v in tr.model.state_dict().items()}


@pytest.mark.parametrize("arch", ["copynet", "ednet"])
def test_resume_equals_straight_run(tmp_path, arch):
    pairs = _pairs()
    mc, tc = _cfgs(arch, max_steps=4)
    straight = Trainer(pairs, tmp_path / "a", mc, tc, log=lambda s: None)
    straight.fit()
    mc, tc2 = _cfgs(arch, max_steps=2)
    first = Trainer(pairs, tmp_path / "b", mc, tc2, log=lambda s: None)
    first.fit()
    assert (tmp_path / "b" / "checkpoint.pt").exists()
    mc, tc4 = _cfgs(arch, max_steps=4)
    second = Trainer(pairs, tmp_path / "b", mc, tc4, log=lambda s: None)
    assert second.resume() and second.step == 2
    second.fit()
    a, b = _state(straight), _state(second)
    assert a.keys() == b.keys()
    for k in a:
        assert torch.equal(a[k], b[k]), k
    # the saved model folder holds the final weights and loads weights-only
    m, v = load_model(tmp_path / "b")
    for k, t in m.state_dict().items():
        assert torch.equal(t, b[k]), k


def test_checkpoint_writes_are_atomic(tmp_path):
    mc, tc = _cfgs(max_steps=1)
    tr = Trainer(_pairs(), tmp_path, mc, tc, log=lambda s: None)
    tr.fit()
    leftovers = [p.name for p in tmp_path.iterdir() if p.name.endswith(".tmp")]
    assert leftovers == []
    st = torch.load(tmp_path / "checkpoint.pt", weights_only=True)
    assert st["progress"]["step"] == 1


def test_early_stopping_on_dev_bleu(tmp_path):
    pairs = _pairs()
    dev = [("t1 t2", "zzz yyy xxx www vvv")] * 3  # unreachable targets: BLEU stays 0
    mc, tc = _cfgs(max_steps=50, eval_every=1, patience=2)
    tr = Trainer(pairs, tmp_path, mc, tc, dev_pairs=dev, log=lambda s: None)
    summary = tr.fit()
    assert summary["stopped"] == "early_stopping" and summary["steps"] == 3
    lines = (tmp_path / "train_log.jsonl").read_text().splitlines()
    assert sum('"dev_bleu"' in x for x in lines) == 3


def test_progress_lines(tmp_path):
    seen = []
    mc, tc = _cfgs(max_steps=2, log_every=1)
    Trainer(_pairs(), tmp_path, mc, tc, log=seen.append).fit()
    assert any("loss" in s and "tokens/s" in s for s in seen)


def _tiny():
    from pysynth.models.seq2seq import Seq2Seq

    vocab = Vocab(["<pad>", "<unk>", "<s>", "</s>", "a", "b"])
    return Seq2Seq(Seq2SeqConfig(arch="attnet", vocab_size=10, emb_dim=4, enc_hidden=3, dec_hidden=5), len(vocab)), vocab


def test_model_dir_is_a_versioned_store(tmp_path):
    from pysynth import store
    from pysynth.models.registry import MODEL_FORMAT

    m, vocab = _tiny()
    d = save_model(m, vocab, tmp_path / "m", files={"README.md": b"hi"})
    st = store.load(d, MODEL_FORMAT, (1,))
    assert st.meta["arch"] == "attnet" and st.meta["config"] == m.config.to_dict()
    assert set(st.files) == {"config.json", "vocab.json", "model.safetensors", "README.md"}
    m2, v2 = load_model(d)
    assert v2.itos == vocab.itos
    for k, t in m.state_dict().items():
        assert torch.equal(t, m2.state_dict()[k])
    # another version: refused with the fix
    doc = json.loads((d / "meta.json").read_text())
    doc["format_version"] = 99
    write_meta(d, doc)
    with pytest.raises(ValueError, match="version"):
        load_model(d)


def test_legacy_dir_is_refused_and_upgraded(tmp_path):
    """A pre-store folder (config.json + vocab.json + model.pt): ValueError naming the fix; the
    fix reads model.pt weights-only."""
    m, vocab = _tiny()
    old = tmp_path / "old"
    old.mkdir()
    (old / "config.json").write_bytes(m.config.to_json())
    (old / "vocab.json").write_bytes(vocab.to_json())
    torch.save(m.state_dict(), old / "model.pt")
    with pytest.raises(ValueError, match="upgrade_model_dir"):
        load_model(old)
    new = upgrade_model_dir(old, tmp_path / "new")
    m2, _ = load_model(new)
    for k, t in m.state_dict().items():
        assert torch.equal(t, m2.state_dict()[k])


class _Evil:
    def __reduce__(self):
        return (print, ("pwned",))


def test_pickled_code_is_refused(tmp_path):
    import pickle

    m, vocab = _tiny()
    (tmp_path / "config.json").write_bytes(m.config.to_json())
    (tmp_path / "vocab.json").write_bytes(vocab.to_json())
    torch.save({"w": torch.zeros(2), "x": _Evil()}, tmp_path / "model.pt")
    with pytest.raises(pickle.UnpicklingError):
        upgrade_model_dir(tmp_path, tmp_path.parent / "up")


def test_bucket_batches_deterministic_and_complete():
    lengths = list(np.random.default_rng(0).integers(1, 30, 203))
    a = bucket_batches(lengths, 8, 3, seed=1)
    assert a == bucket_batches(lengths, 8, 3, seed=1)
    assert sorted(i for b in a for i in b) == list(range(203))
    assert a != bucket_batches(lengths, 8, 3, seed=2)
