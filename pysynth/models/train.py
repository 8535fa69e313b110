"""Training: length-bucketed batches, resumable atomic checkpoints, early stopping on dev BLEU.

Two trainers share the helpers here (:func:`bucket_batches`, :func:`warmup_linear`,
:func:`seed_torch`): :class:`Trainer` for the seq2seq models (below), and
:class:`EncoderTrainer`, the one loop of every encoder fine-tuning (the well-formedness
classifier of :mod:`pysynth.quality.train`, the span model of :mod:`pysynth.qagen.train`, the
encoder-only question generator, the duplicate detectors of :mod:`pysynth.dup.train`): the task
gives its batches per epoch and a loss per batch, the loop does the optimiser and schedule
steps, clipping, logging, per-epoch evaluation and best-epoch selection, and resumable
checkpoints.

A run folder holds ``model/``, a model store (:mod:`pysynth.models.io`): the best model on dev
BLEU (the last one when no dev evaluation ran); ``train_config.json``, ``checkpoint.pt`` (model
+ optimizer + progress + RNG state + vocabulary; written via temp file + rename, loaded with
``torch.load(weights_only=True)``: tensors and plain containers only, no code) and
``train_log.jsonl``. The run folder itself resolves as its model (``--model RUN``,
:func:`pysynth.models.registry.resolve`).

Determinism: with the same seed on CPU, a run interrupted and resumed from its checkpoint
ends with the same weights as an uninterrupted run (batch order per epoch comes from
``seed + epoch``; the torch RNG state for dropout is saved in the checkpoint).
"""
from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

import torch

from pysynth.io import atomic_write_text
from pysynth.models import registry
from pysynth.models.batching import make_source_batch, make_target_arrays
from pysynth.models.config import Seq2SeqConfig, TrainConfig
from pysynth.models.io import atomic_save, save_model
from pysynth.models.vocab import Vocab, detokenize, tokenize

__all__ = ["Trainer", "train", "EncoderTrainer", "bucket_batches", "warmup_linear", "seed_torch"]

CHECKPOINT = "checkpoint.pt"


def bucket_batches(lengths: Sequence[int], batch_size: int, bucket_batches: int, seed: int) -> List[List[int]]:
    """Batches of similar length: shuffle, cut into buckets of ``bucket_batches`` batches, sort each
    bucket by length, cut into batches, shuffle the batches. Deterministic for a seed."""
    rng = random.Random(seed)
    idx = list(range(len(lengths)))
    rng.shuffle(idx)
    size = batch_size * max(1, bucket_batches)
    batches = []
    for b0 in range(0, len(idx), size):
        chunk = sorted(idx[b0 : b0 + size], key=lambda i: lengths[i])
        batches.extend(chunk[i : i + batch_size] for i in range(0, len(chunk), batch_size))
    rng.shuffle(batches)
    return batches


def warmup_linear(params, lr: float, steps: int, warmup: float = 0.06, weight_decay: float = 0.01):
    """``(AdamW, LambdaLR)``: the BERT fine-tuning schedule, linear warm-up over ``warmup`` of the
    ``steps`` then linear decay to 0 (the encoders' fine-tuning: MiniLM classifier, span model,
    encoder-only question generator)."""
    opt = torch.optim.AdamW(params, lr=lr, weight_decay=weight_decay)
    warm = max(1, int(warmup * steps))
    return opt, torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / warm) * max(0.0, (steps - s) / steps))


def seed_torch(seed: int, threads: int = 0) -> None:
    """Seed torch's generator (weight init, dropout) and, when ``threads`` > 0, set torch's CPU
    thread count: runs are reproducible for a seed on one thread count (torch's CPU kernels)."""
    if threads:
        torch.set_num_threads(int(threads))
    torch.manual_seed(seed)


def _device(name: str) -> torch.device:
    from pysynth.models.io import torch_device

    return torch_device(name)


class Trainer:
    """Train a :class:`Seq2Seq` on ``(source, target)`` text pairs.

    Parameters
    ----------
    pairs : list of (source, target) strings
    out_dir : run folder (created)
    model_config, train_config : configurations (paper defaults)
    dev_pairs : dev set for early stopping (default: ``train_config.dev_fraction`` of ``pairs``)
    vocab : optional prebuilt vocabulary (default: built from the training pairs)
    log : where progress lines go (default: stderr)
    """

    def __init__(self, pairs: Sequence[Tuple[str, str]], out_dir, model_config: Optional[Seq2SeqConfig] = None,
                 train_config: Optional[TrainConfig] = None, dev_pairs: Optional[Sequence[Tuple[str, str]]] = None,
                 vocab: Optional[Vocab] = None, log: Optional[Callable[[str], None]] = None):
        self.mc = model_config or Seq2SeqConfig()
        self.tc = train_config or TrainConfig()
        self.out = Path(out_dir)
        self.out.mkdir(parents=True, exist_ok=True)
        self.log = log or (lambda s: print(s, file=sys.stderr, flush=True))
        if not pairs:
            raise ValueError("pairs: no training pairs")
        pairs = list(pairs)
        if dev_pairs is None and self.tc.dev_fraction > 0 and self.tc.eval_every > 0:
            rng = random.Random(self.tc.seed)
            order = list(range(len(pairs)))
            rng.shuffle(order)
            n_dev = max(1, int(len(pairs) * self.tc.dev_fraction))
            dev_pairs = [pairs[i] for i in order[:n_dev]]
            pairs = [pairs[i] for i in order[n_dev:]]
        self.dev_pairs = list(dev_pairs or [])
        if self.tc.threads:
            torch.set_num_threads(self.tc.threads)
        self.device = _device(self.tc.device)
        self.vocab = vocab or Vocab.build((t for p in pairs for t in p), max_size=self.mc.vocab_size)
        # extended source ids for every copying model (CopyNet; the Transformer's pointer head)
        self.copy = self.mc.arch == "copynet" or bool(getattr(self.mc, "copy", False))
        self.src_tok = [tokenize(s)[: self.mc.max_src_len] for s, _ in pairs]
        self.tgt_tok = [tokenize(t)[: self.mc.max_tgt_len] for _, t in pairs]
        keep = [i for i in range(len(pairs)) if self.src_tok[i] and self.tgt_tok[i]]
        self.src_tok = [self.src_tok[i] for i in keep]
        self.tgt_tok = [self.tgt_tok[i] for i in keep]
        if not keep:
            raise ValueError("pairs: every pair has an empty source or target")
        self.lengths = [len(s) + len(t) for s, t in zip(self.src_tok, self.tgt_tok)]
        torch.manual_seed(self.tc.seed)
        self.model = registry.architecture(self.mc.arch).build(self.mc, len(self.vocab)).to(self.device)
        self.opt = torch.optim.Adam(self.model.parameters(), lr=self.tc.lr)
        self.step = 0
        self.epoch = 0
        self.pos = 0  # batches of the current epoch already done
        self.best_bleu = -1.0
        self.bad_evals = 0
        self.stopped = ""

    # -- state -----------------------------------------------------------------------------
    def state(self) -> dict:
        return {
            "model": self.model.state_dict(),
            "optimizer": self.opt.state_dict(),
            "progress": {"step": self.step, "epoch": self.epoch, "pos": self.pos,
                         "best_bleu": self.best_bleu, "bad_evals": self.bad_evals},
            "torch_rng": torch.get_rng_state(),
            "vocab": list(self.vocab.itos),
            "config": self.mc.to_dict(),
        }

    def save_checkpoint(self) -> Path:
        atomic_write_text(self.out / "train_config.json", json.dumps(self.tc.to_dict(), indent=1))
        path = self.out / CHECKPOINT
        atomic_save(self.state(), path)
        return path

    def resume(self, path=None) -> bool:
        """Load ``checkpoint.pt`` of the run folder (or ``path``); False when there is none."""
        path = Path(path) if path else self.out / CHECKPOINT
        if not path.exists():
            return False
        st = torch.load(path, map_location=self.device, weights_only=True)
        if st.get("vocab") != self.vocab.itos:
            raise ValueError(f"resume: the vocabulary in {path} differs from the one built from these pairs; "
                             "train into a new --out folder or pass --no-resume")
        self.model.load_state_dict(st["model"])
        self.opt.load_state_dict(st["optimizer"])
        p = st["progress"]
        self.step, self.epoch, self.pos = int(p["step"]), int(p["epoch"]), int(p["pos"])
        self.best_bleu, self.bad_evals = float(p["best_bleu"]), int(p["bad_evals"])
        torch.set_rng_state(st["torch_rng"].cpu())
        return True

    # -- training --------------------------------------------------------------------------
    def _tensors(self, idx: Sequence[int]):
        src = [self.src_tok[i] for i in idx]
        sb = make_source_batch(self.vocab, src, self.copy)
        tin, tout = make_target_arrays(self.vocab, [self.tgt_tok[i] for i in idx], sb.oovs, self.mc.max_tgt_len)
        t = lambda a: torch.from_numpy(a).to(self.device)  # noqa: E731
        return t(sb.src), t(sb.src_len), t(sb.src_ext), sb.n_ext, t(tin), t(tout)

    def train_step(self, idx: Sequence[int]) -> Tuple[float, int]:
        self.model.train()
        src, slen, sext, n_ext, tin, tout = self._tensors(idx)
        nll, ntok = self.model(src, slen, sext, n_ext, tin, tout)
        loss = nll / ntok
        self.opt.zero_grad(set_to_none=True)
        loss.backward()
        if self.tc.clip_norm > 0:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.tc.clip_norm)
        self.opt.step()
        return float(loss.detach()), int(ntok) + int(slen.sum())

    def evaluate(self) -> float:
        """Corpus BLEU (sacrebleu flavor, ``pysynth.metrics``) of greedy outputs on the dev set."""
        from pysynth import metrics
        from pysynth.decoding.backends import TorchBackend
        from pysynth.models.generate import Generator

        dev = self.dev_pairs[: self.tc.eval_max_pairs]
        srcs, refs = [], []
        for s, t in dev:
            if any(w in self.vocab.stoi for w in tokenize(s)):
                srcs.append(s)
                refs.append(detokenize(tokenize(t)))
        if not srcs:
            return 0.0
        self.model.eval()
        gen = Generator(TorchBackend(self.model), self.vocab, self.copy, self.mc.max_src_len, self.mc.max_tgt_len)
        hyps = [g.texts[0] if g.texts else "" for g in gen.generate(srcs, beam=1, batch_size=64)]
        return float(metrics.corpus_bleu(hyps, [refs]).score)

    def fit(self) -> dict:
        """Train until ``max_steps`` / ``max_epochs`` / ``max_minutes`` / early stopping."""
        tc = self.tc
        t0 = time.time()
        last_t, last_tok, loss_sum, loss_n = time.time(), 0, 0.0, 0
        logf = open(self.out / "train_log.jsonl", "a", encoding="utf-8")
        try:
            while not self.stopped:
                if tc.max_epochs and self.epoch >= tc.max_epochs:
                    self.stopped = "max_epochs"
                    break
                batches = bucket_batches(self.lengths, tc.batch_size, tc.bucket_batches, tc.seed + self.epoch)
                while self.pos < len(batches):
                    loss, ntok = self.train_step(batches[self.pos])
                    self.pos += 1
                    self.step += 1
                    loss_sum, loss_n, last_tok = loss_sum + loss, loss_n + 1, last_tok + ntok
                    if tc.log_every and self.step % tc.log_every == 0:
                        dt = max(time.time() - last_t, 1e-9)
                        line = {"step": self.step, "epoch": self.epoch, "loss": round(loss_sum / loss_n, 4),
                                "tok_per_s": round(last_tok / dt), "elapsed_s": round(time.time() - t0, 1)}
                        self.log(f"step {self.step} epoch {self.epoch} loss {line['loss']:.4f} "
                                 f"tokens/s {line['tok_per_s']} elapsed {line['elapsed_s']}s")
                        logf.write(json.dumps(line) + "\n")
                        logf.flush()
                        last_t, last_tok, loss_sum, loss_n = time.time(), 0, 0.0, 0
                    if tc.eval_every and self.dev_pairs and self.step % tc.eval_every == 0:
                        self._eval_and_keep(logf)
                    if tc.ckpt_every and self.step % tc.ckpt_every == 0:
                        self.save_checkpoint()
                    if self.stopped:
                        break
                    if tc.max_steps and self.step >= tc.max_steps:
                        self.stopped = "max_steps"
                        break
                    if tc.max_minutes and time.time() - t0 >= 60 * tc.max_minutes:
                        self.stopped = "max_minutes"
                        break
                if self.pos >= len(batches):
                    self.epoch += 1
                    self.pos = 0
            if tc.eval_every and self.dev_pairs:
                if self.stopped != "early_stopping":
                    self._eval_and_keep(logf)
            else:  # no dev evaluation: the model folder holds the last weights
                save_model(self.model, self.vocab, self.out / registry.RUN_MODEL)
            self.save_checkpoint()
        finally:
            logf.close()
        summary = {"steps": self.step, "epochs": self.epoch, "stopped": self.stopped,
                   "best_dev_bleu": self.best_bleu, "minutes": round((time.time() - t0) / 60, 2)}
        self.log(f"done: {summary}")
        return summary

    def _eval_and_keep(self, logf) -> None:
        bleu = self.evaluate()
        better = bleu > self.best_bleu
        if better:
            self.best_bleu, self.bad_evals = bleu, 0
            save_model(self.model, self.vocab, self.out / registry.RUN_MODEL)
        else:
            self.bad_evals += 1
        self.log(f"eval step {self.step}: dev BLEU {bleu:.2f} (best {self.best_bleu:.2f})")
        logf.write(json.dumps({"step": self.step, "dev_bleu": bleu, "best": self.best_bleu}) + "\n")
        logf.flush()
        if self.tc.patience and self.bad_evals >= self.tc.patience:
            self.stopped = "early_stopping"


def train(pairs, out_dir, model_config=None, train_config=None, dev_pairs=None, resume: bool = True,
          log=None) -> dict:
    """Train (resuming from ``out_dir/checkpoint.pt`` when present and ``resume``); returns a summary."""
    tr = Trainer(pairs, out_dir, model_config, train_config, dev_pairs, log=log)
    if resume and tr.resume():
        tr.log(f"resumed from step {tr.step} (epoch {tr.epoch})")
    return tr.fit()


class EncoderTrainer:
    """The fine-tuning loop of pysynth's encoders; the task supplies batches, a loss and an evaluation.

    Parameters
    ----------
    model : torch.nn.Module
        Trained in place (``train()`` mode during :meth:`fit`, ``eval()`` after).
    opt : torch.optim.Optimizer
    sched : torch.optim.lr_scheduler.LRScheduler, optional
        Stepped after every update (e.g. :func:`warmup_linear`'s).
    batches : callable ``epoch -> sequence of batches``
        The batches of epoch ``epoch`` (0-based), in order. Must be a pure function of the
        epoch (derive the order from ``seed + epoch``, or precompute every epoch's order), so a
        resumed run sees the batches an uninterrupted one would.
    loss : callable ``batch -> torch.Tensor or None``
        The scalar loss of a batch; None skips the batch (no update, not counted as a step).
    end_epoch : callable ``(epoch, stats) -> dict``, optional
        Called after each epoch with ``stats = {"epoch": epoch + 1, "loss": mean loss, "steps":
        steps so far, "seconds": since the start}``; returns the epoch's history entry (default
        ``stats``), kept in :attr:`history`.
    select : callable ``entry -> float``, optional
        Score of a history entry; the weights of the best-scoring epoch (the first on ties) are
        restored at the end. None keeps the last weights.
    params : iterable of tensors, optional
        What ``clip_norm`` clips (default the model's parameters).
    clip_norm : float
        Gradient-norm clipping (0: none).
    max_steps : int
        Stop after this many updates (0: no limit); the epoch ends there (its history entry
        and checkpoint are written).
    total_steps : int
        The number of updates planned, for the progress lines (0: unknown).
    log, log_every
        Where progress goes (default: stderr) and every how many steps (0: per epoch only).
        A line: ``epoch E step S/T loss L (epoch mean) N s``.
    checkpoint : str or os.PathLike, optional
        File of a resumable checkpoint (``torch.save`` through a temp file + rename; loaded with
        ``weights_only=True``): model, optimiser, schedule, progress, torch RNG state, history
        and best weights. Written every ``ckpt_every`` steps and at each epoch's end; :meth:`fit`
        resumes from it when it exists. With the same seed on CPU a resumed run ends with the
        weights of an uninterrupted one.
    """

    def __init__(self, model, opt, sched=None, *, batches: Callable[[int], Sequence[Any]],
                 loss: Callable[[Any], Optional[torch.Tensor]],
                 end_epoch: Optional[Callable[[int, Dict[str, Any]], Optional[Dict[str, Any]]]] = None,
                 select: Optional[Callable[[Dict[str, Any]], float]] = None, params=None, clip_norm: float = 0.0,
                 max_steps: int = 0, total_steps: int = 0, log: Optional[Callable[[str], None]] = None,
                 log_every: int = 50, checkpoint=None, ckpt_every: int = 0):
        self.model, self.opt, self.sched = model, opt, sched
        self.batches, self.loss, self.end_epoch, self.select = batches, loss, end_epoch, select
        self.params = list(params) if params is not None else None
        self.clip_norm, self.max_steps, self.total_steps = float(clip_norm), int(max_steps), int(total_steps)
        self.log = log or (lambda s: print(s, file=sys.stderr, flush=True))
        self.log_every, self.ckpt_every = int(log_every), int(ckpt_every)
        self.checkpoint = Path(checkpoint) if checkpoint is not None else None
        self.step = self.epoch = self.pos = 0
        self.loss_sum, self.loss_n = 0.0, 0
        self.history: List[Dict[str, Any]] = []
        self.best: Optional[float] = None
        self.best_epoch = 0
        self.best_state: Optional[Dict[str, torch.Tensor]] = None

    # -- checkpoints -----------------------------------------------------------------------
    def state(self) -> dict:
        """Everything a resumed run needs (tensors and plain containers only)."""
        return {"model": self.model.state_dict(), "optimizer": self.opt.state_dict(),
                "scheduler": self.sched.state_dict() if self.sched is not None else None,
                "progress": {"step": self.step, "epoch": self.epoch, "pos": self.pos, "loss_sum": self.loss_sum,
                             "loss_n": self.loss_n, "best": self.best, "best_epoch": self.best_epoch},
                "history": self.history, "best_state": self.best_state, "torch_rng": torch.get_rng_state()}

    def save_checkpoint(self) -> Optional[Path]:
        if self.checkpoint is None:
            return None
        atomic_save(self.state(), self.checkpoint)
        return self.checkpoint

    def resume(self) -> bool:
        """Load :attr:`checkpoint` when it exists; False when there is none."""
        if self.checkpoint is None or not self.checkpoint.exists():
            return False
        st = torch.load(self.checkpoint, map_location="cpu", weights_only=True)
        self.model.load_state_dict(st["model"])
        self.opt.load_state_dict(st["optimizer"])
        if self.sched is not None and st["scheduler"] is not None:
            self.sched.load_state_dict(st["scheduler"])
        p = st["progress"]
        self.step, self.epoch, self.pos = int(p["step"]), int(p["epoch"]), int(p["pos"])
        self.loss_sum, self.loss_n = float(p["loss_sum"]), int(p["loss_n"])
        self.best, self.best_epoch = p["best"], int(p["best_epoch"])
        self.history, self.best_state = list(st["history"]), st["best_state"]
        torch.set_rng_state(st["torch_rng"].cpu())
        return True

    # -- training --------------------------------------------------------------------------
    def _update(self, lv: torch.Tensor) -> None:
        self.opt.zero_grad()
        lv.backward()
        if self.clip_norm > 0:
            torch.nn.utils.clip_grad_norm_(self.params if self.params is not None else self.model.parameters(),
                                           self.clip_norm)
        self.opt.step()
        if self.sched is not None:
            self.sched.step()

    def _done(self) -> bool:
        return bool(self.max_steps) and self.step >= self.max_steps

    def _run_epoch(self, t0: float) -> None:
        batches = self.batches(self.epoch)
        while self.pos < len(batches) and not self._done():
            lv = self.loss(batches[self.pos])
            self.pos += 1
            if lv is None:
                continue
            self._update(lv)
            self.loss_sum, self.loss_n, self.step = self.loss_sum + lv.item(), self.loss_n + 1, self.step + 1
            if self.log_every and (self.step % self.log_every == 0 or self.step == self.total_steps):
                self.log(f"epoch {self.epoch + 1} step {self.step}/{self.total_steps or '?'} loss "
                         f"{self.loss_sum / self.loss_n:.4f} {time.perf_counter() - t0:.0f} s")
            if self.ckpt_every and self.step % self.ckpt_every == 0:
                self.save_checkpoint()

    def _end_epoch(self, t0: float) -> None:
        stats = {"epoch": self.epoch + 1, "loss": self.loss_sum / max(self.loss_n, 1), "steps": self.step,
                 "seconds": round(time.perf_counter() - t0, 1)}
        entry = self.end_epoch(self.epoch, stats) if self.end_epoch is not None else stats
        entry = stats if entry is None else entry
        self.history.append(entry)
        if self.select is not None:
            score = float(self.select(entry))
            if self.best is None or score > self.best:
                self.best, self.best_epoch = score, self.epoch + 1
                self.best_state = {k: v.detach().clone() for k, v in self.model.state_dict().items()}
        self.epoch, self.pos, self.loss_sum, self.loss_n = self.epoch + 1, 0, 0.0, 0
        self.save_checkpoint()

    def fit(self, epochs: int, resume: bool = True) -> Dict[str, Any]:
        """Train ``epochs`` epochs (or up to ``max_steps``), resuming from :attr:`checkpoint`
        when ``resume``; returns ``{"steps", "epochs", "chosen_epoch", "seconds", "history"}``
        (``seconds`` of this call). The model ends in eval mode, with the selected weights."""
        if resume and self.resume():
            self.log(f"resumed from step {self.step} (epoch {self.epoch + 1})")
        t0 = time.perf_counter()
        self.model.train()
        while self.epoch < epochs and not (self._done() and self.pos == 0):
            self._run_epoch(t0)
            self._end_epoch(t0)
        if self.best_state is not None:
            self.model.load_state_dict(self.best_state)
        self.model.eval()
        return {"steps": self.step, "epochs": self.epoch, "chosen_epoch": self.best_epoch or self.epoch,
                "seconds": round(time.perf_counter() - t0, 1), "history": self.history}
