"""pysynth.models.train.EncoderTrainer: the one fine-tuning loop of the encoders (quality, qagen, dup)."""
from __future__ import annotations

import random

import pytest

torch = pytest.importorskip("torch")

from pysynth.models.train import EncoderTrainer, seed_torch, warmup_linear  # noqa: E402

X = torch.linspace(-1, 1, 48).reshape(24, 2)
Y = (X[:, 0] - 0.5 * X[:, 1] > 0).float()


def _setup(seed=0, dropout=0.2):
    seed_torch(seed)
    model = torch.nn.Sequential(torch.nn.Linear(2, 8), torch.nn.Dropout(dropout), torch.nn.Linear(8, 1))
    opt, sched = warmup_linear(model.parameters(), 0.05, 30)

    def batches(ep):  # a pure function of the epoch
        order = list(range(len(X)))
        random.Random(seed + ep).shuffle(order)
        return [order[i:i + 5] for i in range(0, len(order), 5)]

    def loss(idx):
        return torch.nn.functional.binary_cross_entropy_with_logits(model(X[idx]).squeeze(-1), Y[idx])

    return model, opt, sched, batches, loss


def _weights(model):
    return [p.detach().clone() for p in model.state_dict().values()]


def test_resumed_run_ends_with_the_uninterrupted_weights(tmp_path):
    model, opt, sched, batches, loss = _setup()
    full = EncoderTrainer(model, opt, sched, batches=batches, loss=loss, clip_norm=1.0, log=lambda s: None).fit(4)
    want = _weights(model)

    ck = tmp_path / "ck.pt"
    model, opt, sched, batches, loss = _setup()
    calls = []

    def killed_at_8(idx):  # the process dies inside step 8, mid-epoch 2
        calls.append(idx)
        if len(calls) == 8:
            raise KeyboardInterrupt
        return loss(idx)

    part = EncoderTrainer(model, opt, sched, batches=batches, loss=killed_at_8, clip_norm=1.0, checkpoint=ck,
                          ckpt_every=1, log=lambda s: None)
    with pytest.raises(KeyboardInterrupt):
        part.fit(4)
    assert part.step == 7 and ck.exists()
    model, opt, sched, batches, loss = _setup(seed=0)
    seed_torch(123)  # the checkpoint restores the RNG state of the interrupted run
    lines = []
    again = EncoderTrainer(model, opt, sched, batches=batches, loss=loss, clip_norm=1.0, checkpoint=ck,
                           log=lines.append)
    out = again.fit(4)
    assert lines[0].startswith("resumed from step 7")
    assert out["steps"] == full["steps"] == 20 and out["epochs"] == 4
    assert all(torch.equal(a, b) for a, b in zip(want, _weights(model)))
    assert [h["loss"] for h in out["history"]] == pytest.approx([h["loss"] for h in full["history"]])
    assert not model.training


def test_skipped_batches_best_epoch_and_max_steps():
    model, opt, sched, batches, loss = _setup(dropout=0.0)
    seen = []

    def skip_first(idx):
        seen.append(idx)
        return None if len(seen) == 1 else loss(idx)

    scores = iter([0.5, 0.9, 0.7])
    kept = {}

    def end_epoch(ep, stats):
        kept[ep] = _weights(model)
        return dict(stats, score=next(scores))

    out = EncoderTrainer(model, opt, sched, batches=batches, loss=skip_first, end_epoch=end_epoch,
                         select=lambda h: h["score"], log=lambda s: None).fit(3)
    assert out["steps"] == 14  # 3 epochs of 5 batches, the first one skipped
    assert out["chosen_epoch"] == 2 and [h["score"] for h in out["history"]] == [0.5, 0.9, 0.7]
    assert all(torch.equal(a, b) for a, b in zip(kept[1], _weights(model)))

    model, opt, sched, batches, loss = _setup()
    out = EncoderTrainer(model, opt, sched, batches=batches, loss=loss, max_steps=7, log=lambda s: None).fit(5)
    assert out["steps"] == 7 and out["epochs"] == 2 and len(out["history"]) == 2
