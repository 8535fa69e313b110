"""Benchmarks of the decode-step kernels: fused Triton vs torch eager vs torch.compile (CUDA only).

Workloads (Ding & Balog Sect. 6.3: 44K vocabulary, decoder GRU of 400, bi-GRU encoder 2 x 200):

- ``copy_attention``: one CopyNet step, rows = batch x beam in {64 x 16, 1 x 5}, V = 44,000,
  H = 400, source lengths drawn from 10..30 (padded to 30), 10 OOV slots, k = 2 x beam,
  fp16 and fp32 inputs; with and without the full [rows, V + n_oov] log-distribution.
- ``diverse_beam``: one diverse-beam step on [batch, beam, 44,000] log-probs,
  64 x 16 with G = 4 and 1 x 5 with G = 5, lambda = 0.5.

Implementations: ``triton`` (the fused kernels), ``eager`` (``naive.py`` on CUDA) and
``compile`` (``torch.compile(naive)``, default mode; its first call, the compilation, is a
warm-up round). Every timed call ends with ``torch.cuda.synchronize()``. Results are checked
against eager before timing (same top-k ids up to near-ties, log-probs within 1e-3).

End to end (``decode``): a whole batched search (``pysynth.decoding.search``) with a random
CopyNet of the paper's sizes (``Seq2SeqConfig()`` defaults: V = 44,000, embeddings 100, bi-GRU
2 x 200, decoder 400; fp32), sources of 10-30 tokens with 2 OOV words each, ``</s>`` made
impossible so that every decode runs exactly ``E2E_STEPS`` steps:

- ``beam``: ``beam_search`` with beam = 16 (64 sources) and beam = 5 (1 source);
- ``diverse``: ``diverse_beam_search``, 64 x 16 with G = 4 and 1 x 5 with G = 5, lambda = 0.5.

Implementations: ``triton`` (``TorchBackend(kernels="triton")``: fused CopyNet step; diverse
beam search also selects groups on the device), ``triton_copy`` (diverse only: the fused
step, numpy group selection), ``eager`` (``kernels="torch"``: the model's eager step, numpy
selection) and ``compile`` (as eager, with ``torch.compile`` of ``Seq2Seq.step_tensors``).
Timed: wall clock of one whole decode (host bookkeeping and transfers included), median of
``E2E_ROUNDS`` after a warm-up decode. Checked first: the share of sources whose best
hypothesis has the same tokens as eager's (float32 rounding can flip near-ties; below 0.5
fails).

Run (a CUDA GPU and ``pip install '.[gpu]' pytest-benchmark``)::

    python -m pytest bench/bench_kernels.py --benchmark-only --benchmark-json=/tmp/kernels.json
    python bench/bench_kernels.py            # the same grid, CUDA-event timing, markdown table

Without CUDA (or without torch / triton) everything here is skipped.
Throughput = rows (batch x beam) per second for one step, in ``extra_info`` and the table;
for ``decode``, rows x steps per second.
"""
from __future__ import annotations

import copy
import importlib
import importlib.util
import math
import sys
import time
from pathlib import Path

import pytest


def _unavailable():
    for mod in ("torch", "triton", "pytest_benchmark"):
        if importlib.util.find_spec(mod) is None:
            return f"{mod} is not installed"
    import torch

    if not torch.cuda.is_available():
        return "no CUDA device: the kernel benchmarks need a GPU"
    return None


_REASON = _unavailable()
if _REASON:
    if __name__ == "__main__":
        print(f"bench_kernels: skipped ({_REASON})")
        sys.exit(0)
    pytest.skip(_REASON, allow_module_level=True)

import torch  # noqa: E402

V = 44_000
H = 400
S_MIN, S_MAX = 10, 30
N_OOV = 10
LAMBDA = 0.5
SHAPES = {"64x16": (64, 16), "1x5": (1, 5)}
GROUPS = {"64x16": 4, "1x5": 5}
IMPLS = ("triton", "eager", "compile")


def _kernels():
    """The kernels package of this checkout (an editable install of another checkout may map
    ``pysynth.kernels`` elsewhere): ``pysynth.kernels`` or the top-level ``kernels/``."""
    root = Path(__file__).resolve().parents[1] / "kernels"
    found = []
    for name in ("pysynth.kernels", "kernels"):
        try:
            found.append(importlib.import_module(name))
        except ModuleNotFoundError:
            continue
    for mod in found:
        if getattr(mod, "__file__", None) and Path(mod.__file__).resolve().parent == root:
            return mod
    if found:
        return found[0]
    raise ImportError("neither pysynth.kernels nor the source tree's kernels/ is importable")


K = _kernels()
ca = importlib.import_module(K.__name__ + ".copy_attention")
ca_triton = importlib.import_module(K.__name__ + ".copy_attention.triton_copy_attention")
db = importlib.import_module(K.__name__ + ".diverse_beam")
db_triton = importlib.import_module(K.__name__ + ".diverse_beam.triton_diverse_beam")


def copy_inputs(batch, beam, dtype, seed=2018):
    g = torch.Generator().manual_seed(seed)
    rows = batch * beam
    lengths = torch.randint(S_MIN, S_MAX + 1, (batch,), generator=g)
    h_src = torch.randn(batch, S_MAX, H, generator=g)
    ids_src = torch.randint(0, V, (batch, S_MAX), generator=g)
    ids_src[:, -3:] = V + torch.arange(3)  # a few OOV words per source
    mask_src = torch.arange(S_MAX)[None, :] < lengths[:, None]
    dev = "cuda"
    # beams of one source share h as an expanded view; with batch 1 the [rows, S, H] reshape
    # stays a view (row stride 0, which the kernel reads as is), otherwise it copies
    return dict(
        s=torch.randn(rows, H, generator=g).to(dev, dtype),
        h=h_src.to(dev, dtype)[:, None].expand(batch, beam, S_MAX, H).reshape(rows, S_MAX, H),
        src_ids=ids_src.repeat_interleave(beam, 0).to(dev),
        src_mask=mask_src.repeat_interleave(beam, 0).to(dev),
        W_o=(torch.randn(V, H, generator=g) / math.sqrt(H)).to(dev, dtype),
        b_o=torch.randn(V, generator=g).to(dev, dtype),
        W_c=(torch.randn(H, H, generator=g) / math.sqrt(H)).to(dev, dtype),
        n_oov=N_OOV,
        k=2 * beam,
    )


def beam_inputs(batch, beam, dtype, seed=2016):
    g = torch.Generator().manual_seed(seed)
    lp = torch.log_softmax(2 * torch.randn(batch, beam, V, generator=g), -1)
    scores = torch.randn(batch, beam, generator=g)
    return lp.to("cuda", dtype), scores.to("cuda")


_COMPILED = {}


def copy_fn(impl, full):
    if impl == "triton":
        return lambda **a: ca_triton.copy_attention_step_triton(**a, return_logprobs=full,
                                                                 check_ids=False)
    if impl == "eager":
        return lambda **a: ca.copy_attention_step_naive(**a, return_logprobs=full,
                                                        check_ids=False)
    if "copy" not in _COMPILED:
        # dynamic=False: torch 2.11 inductor fails on the dynamic-shape cumsum (SplitScan) that
        # the second shape would trigger; one static graph per shape is also what a user gets.
        _COMPILED["copy"] = torch.compile(ca.copy_attention_step_naive, dynamic=False)
    return lambda **a: _COMPILED["copy"](**a, return_logprobs=full, check_ids=False)


def beam_fn(impl):
    if impl == "triton":
        return db_triton.diverse_beam_step_triton
    if impl == "eager":
        return db.diverse_beam_step_naive
    if "beam" not in _COMPILED:
        _COMPILED["beam"] = torch.compile(db.diverse_beam_step_naive, dynamic=False)
    return _COMPILED["beam"]


def synced(fn, *args, **kwargs):
    def run():
        out = fn(*args, **kwargs)
        torch.cuda.synchronize()
        return out

    return run


def check_copy(got, ref):
    torch.testing.assert_close(got.topk_values, ref.topk_values, atol=1e-3, rtol=1e-3)
    if got.logprobs is not None:
        fin = torch.isfinite(ref.logprobs)
        torch.testing.assert_close(got.logprobs[fin], ref.logprobs[fin], atol=1e-3, rtol=1e-3)


def check_beam(got, ref):
    torch.testing.assert_close(got.selection_scores, ref.selection_scores, atol=1e-5, rtol=0)


@pytest.mark.parametrize("full", [True, False], ids=["logprobs", "topk_only"])
@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=["fp16", "fp32"])
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("impl", IMPLS)
def test_copy_attention(benchmark, impl, shape, dtype, full):
    batch, beam = SHAPES[shape]
    args = copy_inputs(batch, beam, dtype)
    fn = copy_fn(impl, full)
    ref = copy_fn("eager", True)(**args)
    check_copy(fn(**args), ref)  # also the warm-up / compilation
    benchmark.group = f"copy_attention {shape} {str(dtype)[6:]} {'logprobs' if full else 'topk'}"
    benchmark.extra_info.update(rows=batch * beam, vocab=V, hidden=H, impl=impl)
    benchmark.pedantic(synced(fn, **args), rounds=30, warmup_rounds=3)
    benchmark.extra_info["rows_per_s"] = batch * beam / benchmark.stats.stats.median


@pytest.mark.parametrize("dtype", [torch.float16, torch.float32], ids=["fp16", "fp32"])
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("impl", IMPLS)
def test_diverse_beam(benchmark, impl, shape, dtype):
    batch, beam = SHAPES[shape]
    lp, scores = beam_inputs(batch, beam, dtype)
    fn = beam_fn(impl)
    ref = db.diverse_beam_step_naive(lp, scores, GROUPS[shape], LAMBDA)
    check_beam(fn(lp, scores, GROUPS[shape], LAMBDA), ref)
    benchmark.group = f"diverse_beam {shape} {str(dtype)[6:]}"
    benchmark.extra_info.update(rows=batch * beam, vocab=V, groups=GROUPS[shape], impl=impl)
    benchmark.pedantic(synced(fn, lp, scores, GROUPS[shape], LAMBDA), rounds=30, warmup_rounds=3)
    benchmark.extra_info["rows_per_s"] = batch * beam / benchmark.stats.stats.median


# ---------------------------------------------------------------- end-to-end decoding

E2E_STEPS = 20
E2E_ROUNDS = 5
E2E_OOV = 2
E2E_METHODS = {"beam": None, "diverse": GROUPS}  # groups per shape (None: beam search)
E2E_IMPLS = ("triton", "triton_copy", "eager", "compile")


def e2e_model():
    """A random CopyNet of the paper's sizes on CUDA (fp32); </s> can never win."""
    from pysynth.models.config import Seq2SeqConfig
    from pysynth.models.seq2seq import Seq2Seq

    torch.manual_seed(2018)
    cfg = Seq2SeqConfig()  # copynet, V = 44,000, emb 100, enc 2 x 200, dec 400
    m = Seq2Seq(cfg, cfg.vocab_size).eval()
    with torch.no_grad():
        m.out.bias[m.specials.eos] = -1e4  # </s>: every decode runs E2E_STEPS steps
    return m.cuda()


def e2e_batch(n, seed=2016):
    """``n`` sources of 10-30 tokens, each with E2E_OOV out-of-vocabulary words."""
    import numpy as np

    from pysynth.models.batching import SourceBatch

    rng = np.random.default_rng(seed)
    lens = rng.integers(S_MIN, S_MAX + 1, n)
    S = int(lens.max())
    src = np.zeros((n, S), dtype=np.int64)
    for i, L in enumerate(lens):
        src[i, :L] = rng.integers(4, V, L)
    ext = src.copy()
    for i, L in enumerate(lens):
        for k, j in enumerate(rng.choice(L, E2E_OOV, replace=False)):
            src[i, j], ext[i, j] = 1, V + k  # <unk> in the source, extended id V + k for copying
    return SourceBatch(src, lens.astype(np.int64), ext, [[f"oov{k}" for k in range(E2E_OOV)]] * n,
                       E2E_OOV)


def e2e_backend(impl, model):
    from pysynth.decoding.backends import TorchBackend

    if impl in ("triton", "triton_copy"):
        be = TorchBackend(model, kernels="triton")
        if impl == "triton_copy":
            be.step_diverse = None  # numpy group selection
        return be
    if impl == "compile":
        model = copy.deepcopy(model)
        model.step_tensors = torch.compile(model.step_tensors, dynamic=False)  # on the warm-up decode
    return TorchBackend(model, kernels="torch")


def e2e_search(method, shape):
    from pysynth.decoding import search as S

    beam = SHAPES[shape][1]
    if method == "beam":
        return lambda be, b: S.beam_search(be, b, beam=beam, max_len=E2E_STEPS)
    return lambda be, b: S.diverse_beam_search(be, b, beam=beam, groups=GROUPS[shape],
                                               diversity=LAMBDA, max_len=E2E_STEPS)


def e2e_agreement(got, ref):
    same = [g[0].tokens == r[0].tokens for g, r in zip(got, ref)]
    return sum(same) / len(same)


def _e2e_cases():
    for method in E2E_METHODS:
        for shape in SHAPES:
            for impl in E2E_IMPLS:
                if impl == "triton_copy" and method == "beam":
                    continue  # beam search always selects in numpy
                yield method, shape, impl


_E2E = {}


def _e2e_setup(method, shape):
    """Model, batch and the eager decode of one workload (cached)."""
    key = (method, shape)
    if key not in _E2E:
        model = _E2E.get("model") or e2e_model()
        _E2E["model"] = model
        batch = e2e_batch(SHAPES[shape][0])
        run = e2e_search(method, shape)
        _E2E[key] = (model, batch, run, run(e2e_backend("eager", model), batch))
    return _E2E[key]


def _sync_decode(run, be, batch):
    def go():
        out = run(be, batch)
        torch.cuda.synchronize()
        return out

    return go


@pytest.mark.parametrize("method,shape,impl", list(_e2e_cases()))
def test_decode(benchmark, method, shape, impl):
    model, batch, run, ref = _e2e_setup(method, shape)
    be = e2e_backend(impl, model)
    agree = e2e_agreement(run(be, batch), ref)  # also the warm-up / compilation
    assert agree >= 0.5, f"{impl}: only {agree:.0%} of the best hypotheses match eager"
    rows = SHAPES[shape][0] * SHAPES[shape][1]
    benchmark.group = f"decode {method} {shape}"
    benchmark.extra_info.update(rows=rows, steps=E2E_STEPS, vocab=V, impl=impl, agree=agree)
    benchmark.pedantic(_sync_decode(run, be, batch), rounds=E2E_ROUNDS, warmup_rounds=0)
    benchmark.extra_info["rows_steps_per_s"] = rows * E2E_STEPS / benchmark.stats.stats.median


def _wall_ms(run, reps=E2E_ROUNDS):
    run()
    times = []
    for _ in range(reps):
        t0 = time.perf_counter()
        run()
        times.append((time.perf_counter() - t0) * 1e3)
    times.sort()
    return times[len(times) // 2]


def main_decode() -> None:
    print(f"\nEnd-to-end decoding ({E2E_STEPS} steps, wall clock, median of {E2E_ROUNDS}):\n")
    print("| search | sources x beam | impl | median ms / decode | ms / step | rows x steps / s "
          "| 1-best = eager |")
    print("|---|---|---|---:|---:|---:|---:|")
    for method, shape, impl in _e2e_cases():
        model, batch, run, ref = _e2e_setup(method, shape)
        be = e2e_backend(impl, model)
        agree = e2e_agreement(run(be, batch), ref)
        ms = _wall_ms(_sync_decode(run, be, batch))
        rows = SHAPES[shape][0] * SHAPES[shape][1]
        groups = f", G={GROUPS[shape]}" if method == "diverse" else ""
        print(f"| {method}{groups} | {shape} | {impl} | {ms:.1f} | {ms / E2E_STEPS:.2f} | "
              f"{rows * E2E_STEPS / ms * 1e3:,.0f} | {agree:.2f} |")


def _event_ms(run, reps=50):
    for _ in range(5):
        run()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    times = []
    for _ in range(reps):
        start.record()
        run()
        end.record()
        torch.cuda.synchronize()
        times.append(start.elapsed_time(end))
    times.sort()
    return times[len(times) // 2]


def _event_ms_or_error(run):
    """Median ms, or the exception's name: one failing implementation (a torch.compile
    error, say) must not hide the rest of the table."""
    try:
        return _event_ms(run)
    except Exception as exc:  # noqa: BLE001 - reported in the table
        return f"failed: {type(exc).__name__}"


def _cells(ms, rows):
    if isinstance(ms, str):
        return f"{ms} | - "
    return f"{ms:.3f} | {rows / ms * 1e3:,.0f}"


def main() -> int:
    print(f"device: {torch.cuda.get_device_name()}, torch {torch.__version__}, "
          f"triton {importlib.import_module('triton').__version__}\n")
    print("| op | rows | dtype | variant | impl | median ms / step | rows / s |")
    print("|---|---|---|---|---|---:|---:|")
    for shape, (batch, beam) in SHAPES.items():
        for dtype in (torch.float16, torch.float32):
            args = copy_inputs(batch, beam, dtype)
            for full in (True, False):
                for impl in IMPLS:
                    fn = copy_fn(impl, full)
                    ms = _event_ms_or_error(lambda fn=fn, args=args: fn(**args))
                    print(f"| copy_attention | {shape} | {str(dtype)[6:]} | "
                          f"{'logprobs' if full else 'topk only'} | {impl} | "
                          f"{_cells(ms, batch * beam)} |")
            lp, scores = beam_inputs(batch, beam, dtype)
            for impl in IMPLS:
                fn = beam_fn(impl)
                ms = _event_ms_or_error(lambda fn=fn, lp=lp, sc=scores, g=GROUPS[shape]:
                                        fn(lp, sc, g, LAMBDA))
                print(f"| diverse_beam | {shape} | {str(dtype)[6:]} | G={GROUPS[shape]} | {impl} | "
                      f"{_cells(ms, batch * beam)} |")
    main_decode()
    return 0


if __name__ == "__main__":
    sys.exit(main())
