"""CPU decoding speed of the seq2seq models: pysynth (torch eager, onnxruntime) vs competitors.

pytest-benchmark (one group per operation, one test per engine; same run)::

    BENCH_THREADS=1 python -m pytest bench/bench_models.py --benchmark-only \
        --benchmark-json=bench/results/models.json

Script (engines interleaved round by round, so that a change of machine load hits all of them
alike; medians)::

    python bench/bench_models.py [--model DIR] [--threads 1] [--batch 32] [--beam 5] [--rounds 5]
                                 [--json OUT] [--competitors]

* Throughput: beam search (``--beam``, batch ``--batch``) over the T0 keyword queries (800),
  end to end (tokenize, batch, search, detokenize). ``tokens/s`` counts the tokens of the best
  hypothesis of each query, ``</s>`` included (what CTranslate2 reports); ``rows x steps/s``
  counts every hypothesis row the search advanced per step.
* Engines: ``onnx`` (onnxruntime, candidates from ``step_parts.onnx`` and the compiled
  ``topk_from_parts``), ``onnx_topk`` (onnxruntime, the TopK graph ``step.onnx``: the path before
  ``step_parts``), ``torch`` (eager, candidates from ``Seq2Seq.step_parts`` and the kernel),
  ``torch_topk`` (eager step + ``torch.topk``).
* Per-step latency: one decoder step (attention + copy, full rows) at batch 1 and 64, median.
* Competitors: Hugging Face ``transformers`` ``generate`` (beam 5) and CTranslate2 on a
  randomly initialised tiny Marian transformer of similar size (1+1 layers, d_model 128, vocab
  8000) with a fixed output length, if those packages are installed; skipped otherwise.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

ENGINES = ("onnx", "onnx_topk", "torch", "torch_topk")
OUT_LEN = 12  # competitors' fixed output length


class CountingBackend:
    """Wraps a backend and counts rows x steps (through ``step`` or ``step_topk``)."""

    def __init__(self, inner):
        self.inner, self.rows = inner, 0
        self.vocab_size, self.specials = inner.vocab_size, inner.specials
        if getattr(inner, "step_topk", None) is None:
            self.step_topk = None

    def encode(self, b):
        return self.inner.encode(b)

    def take(self, s, r):
        return self.inner.take(s, r)

    def take_h(self, h, r):
        return self.inner.take_h(h, r)

    def step(self, s, t, h):
        self.rows += len(t)
        return self.inner.step(s, t, h)

    def step_topk(self, s, t, h, k):  # noqa: F811 - hidden above when the inner backend lacks it
        self.rows += len(t)
        return self.inner.step_topk(s, t, h, k)


def queries():
    try:
        from pysynth.k2q.data import load_seed_pairs

        return [p.keywords for p in load_seed_pairs()]
    except FileNotFoundError:
        rng = np.random.default_rng(0)
        words = "capital france population river bible verse education car engine price music band".split()
        return [" ".join(rng.choice(words, int(rng.integers(3, 7)))) for _ in range(800)]


def make_generator(engine: str, threads: int, model=None):
    """A Generator for one engine of :data:`ENGINES` (ValueError when it cannot run here)."""
    from pysynth.k2q.neural import DEFAULT_MODEL
    from pysynth.models.generate import Generator

    if engine.startswith("torch"):
        import torch

        torch.set_num_threads(threads)
        g = Generator.load(model, backend="torch", default=DEFAULT_MODEL)
        from pysynth.decoding.backends import TorchBackend

        g.backend = TorchBackend(g.backend.model, parts="auto" if engine == "torch" else False)
        return g
    from pysynth.decoding.ort import OrtBackend

    g = Generator.load(model, backend="onnx", default=DEFAULT_MODEL)
    g.backend = OrtBackend(g.backend.path, device="cpu", threads=threads, parts="auto" if engine == "onnx" else False)
    return g


def t0_keywords(gen):
    from pysynth.models.vocab import tokenize

    return [k for k in queries() if any(w in gen.vocab.stoi for w in tokenize(k))]


def decode(gen, kws, beam, batch):
    """One timed unit: decode all ``kws``; returns (seconds, best-hypothesis tokens, rows x steps)."""
    from pysynth.models.vocab import tokenize

    cb = CountingBackend(gen.backend)
    inner, gen.backend = gen.backend, cb
    try:
        t0 = time.perf_counter()
        res = gen.generate(kws, beam=beam, n=1, batch_size=batch, dedupe=False)
        dt = time.perf_counter() - t0
    finally:
        gen.backend = inner
    ntok = sum(len(tokenize(r.texts[0])) + 1 for r in res if r.texts)  # tokens + </s>
    return dt, ntok, cb.rows


def step_latency(backend, vocab, n, runs=200):
    from pysynth.models.batching import make_source_batch

    src = ["what", "capital", "france", "population", "river", "city"]
    batch = make_source_batch(vocab, [src] * n, copy=True)
    st, h = backend.encode(batch)
    tok = np.full(n, vocab.bos_id, dtype=np.int64)
    for _ in range(10):
        backend.step(st, tok, h)
    ts = []
    for _ in range(runs):
        t0 = time.perf_counter()
        backend.step(st, tok, h)
        ts.append(time.perf_counter() - t0)
    return round(1000 * statistics.median(ts), 3)


def tiny_marian():
    """The competitors' model: a randomly initialised tiny Marian (torch) and a source batch maker."""
    import torch
    from transformers import MarianConfig, MarianMTModel

    cfg = MarianConfig(vocab_size=8000, d_model=128, encoder_layers=1, decoder_layers=1,
                       encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=256,
                       decoder_ffn_dim=256, max_position_embeddings=64, pad_token_id=0, eos_token_id=3,
                       decoder_start_token_id=2, forced_eos_token_id=None)
    torch.manual_seed(0)
    return MarianMTModel(cfg).eval()


def hf_runner(beam, batch, threads, n_batches=10):
    """``run()`` -> tokens generated by HF ``generate`` for ``n_batches`` batches (fixed length)."""
    import torch

    torch.set_num_threads(threads)
    model = tiny_marian()
    src = torch.randint(4, 8000, (batch, 6), generator=torch.Generator().manual_seed(0))
    kw = dict(num_beams=beam, max_new_tokens=OUT_LEN, min_new_tokens=OUT_LEN, do_sample=False, early_stopping=True)

    def run():
        with torch.inference_mode():
            for _ in range(n_batches):
                model.generate(src, **kw)
        return n_batches * batch * OUT_LEN

    return run, sum(p.numel() for p in model.parameters())


def ct2_runner(beam, batch, threads, workdir, n_batches=10, compute_type="default"):
    """``run()`` -> tokens generated by CTranslate2 (the same tiny Marian, converted, float32 weights;
    ``compute_type="int8"``: CTranslate2's int8 quantization at load)."""
    import ctranslate2
    import ctranslate2.converters
    import torch
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from transformers import PreTrainedTokenizerFast

    model = tiny_marian()
    model.save_pretrained(workdir + "/hf")
    # the converter reads the vocabulary from a tokenizer: a word-level one over tok0..tok7999
    names = ["<pad>", "<unk>", "<s>", "</s>"] + [f"tok{i}" for i in range(4, 7999)]  # Marian conversion drops the pad row
    tk = Tokenizer(WordLevel({w: i for i, w in enumerate(names)}, unk_token="<unk>"))
    PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", pad_token="<pad>",
                            eos_token="</s>", bos_token="<s>").save_pretrained(workdir + "/hf")
    conv = ctranslate2.converters.TransformersConverter(workdir + "/hf", load_as_float16=False)
    conv.convert(workdir + "/ct2", force=True)
    tr = ctranslate2.Translator(workdir + "/ct2", device="cpu", intra_threads=threads, compute_type=compute_type)
    src = torch.randint(4, 8000, (batch, 6), generator=torch.Generator().manual_seed(0))
    toks = [[f"tok{i}" for i in row] for row in src.tolist()]

    def run():
        for _ in range(n_batches):
            tr.translate_batch(toks, beam_size=beam, max_decoding_length=OUT_LEN, min_decoding_length=OUT_LEN)
        return n_batches * batch * OUT_LEN

    return run


def _tokens_per_s(run, rounds):
    """Tokens per second of ``run()`` (which returns its token count): median of ``rounds``
    timed calls after a warm-up call."""
    run()
    ts, n = [], 0
    for _ in range(rounds):
        t0 = time.perf_counter()
        n = run()
        ts.append(time.perf_counter() - t0)
    return round(n / statistics.median(ts))


def competitors(beam, batch, threads=1, rounds=3):
    res = {}
    try:
        run, params = hf_runner(beam, batch, threads)
    except Exception as exc:  # noqa: BLE001
        return {"transformers": f"skipped: {type(exc).__name__}: {exc}"}
    res["transformers"] = {"tokens_per_s": _tokens_per_s(run, rounds), "params": params,
                           "note": f"random tiny Marian, fixed length {OUT_LEN}"}
    try:
        import tempfile

        with tempfile.TemporaryDirectory() as d:
            res["ctranslate2"] = {"tokens_per_s": _tokens_per_s(ct2_runner(beam, batch, threads, d), rounds)}
            res["ctranslate2_int8"] = {"tokens_per_s": _tokens_per_s(
                ct2_runner(beam, batch, threads, d, compute_type="int8"), rounds)}
    except Exception as exc:  # noqa: BLE001
        res["ctranslate2"] = f"skipped: {type(exc).__name__}: {str(exc)[:200]}"
    return res


def coverage_sweep(sizes=(2000, 4000, 8000, 16000, 32000, 44000)):
    """Vocabulary coverage/volume of T0 questions and keywords per vocabulary size (Granstedt 2017,
    Fig. 3.5-3.6), vocabularies built from the stand-in training pairs."""
    from pysynth.k2q.data import load_seed_pairs
    from pysynth.k2q.neural import make_synthetic_pairs
    from pysynth.models.vocab import Vocab

    pairs = make_synthetic_pairs(samples_per_question=2, seed=0)
    t0 = load_seed_pairs()
    rows = []
    for n in sizes:
        v = Vocab.build((t for p in pairs for t in p), max_size=n)
        q = v.coverage([p.question for p in t0])
        k = v.coverage([p.keywords for p in t0])
        rows.append({"max_size": n, "size": len(v), "q_coverage": round(q["coverage"], 4),
                     "q_volume": round(q["volume"], 4), "kw_coverage": round(k["coverage"], 4),
                     "kw_volume": round(k["volume"], 4)})
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--model", default=None)
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--engines", default=",".join(ENGINES))
    ap.add_argument("--json", default=None)
    ap.add_argument("--competitors", action="store_true")
    ap.add_argument("--coverage", action="store_true", help="only the vocabulary coverage/volume sweep")
    args = ap.parse_args(argv)
    if args.coverage:
        rows = coverage_sweep()
        for r in rows:
            print(json.dumps(r))
        return rows
    out = {"threads": args.threads, "batch": args.batch, "beam": args.beam, "rounds": args.rounds,
           "cpu_count": os.cpu_count(), "loadavg_start": list(os.getloadavg()),
           "date": time.strftime("%Y-%m-%d %H:%M")}
    gens = {}
    for e in args.engines.split(","):
        try:
            gens[e] = make_generator(e, args.threads, args.model)
        except ModuleNotFoundError as exc:
            out[e] = f"skipped: {exc}"
    kws = t0_keywords(next(iter(gens.values())))
    for g in gens.values():  # warm-up
        g.generate(kws[: args.batch], beam=args.beam, n=1, batch_size=args.batch)
    # rounds interleaved over the engines: a change of machine load hits every engine alike
    for beam, label in ((args.beam, "beam"), (1, "greedy")):
        times = {e: [] for e in gens}
        for _ in range(args.rounds):
            for e, g in gens.items():
                dt, ntok, rows = decode(g, kws, beam, args.batch)
                times[e].append(dt)
        for e in gens:
            dt = statistics.median(times[e])
            out[f"{e}_{label}"] = {"seconds": round(dt, 3), "tokens_per_s": round(ntok / dt),
                                   "rows_steps_per_s": round(rows / dt), "queries": len(kws),
                                   "spread": [round(ntok / max(times[e])), round(ntok / min(times[e]))]}
            print(e, label, json.dumps(out[f"{e}_{label}"]), flush=True)
    for e, g in gens.items():
        out[f"{e}_step_ms"] = {f"batch{n}": step_latency(g.backend, g.vocab, n) for n in (1, 64)}
        print(e, "step_ms", json.dumps(out[f"{e}_step_ms"]), flush=True)
    if args.competitors:
        out["competitors"] = competitors(args.beam, args.batch, args.threads)
        print("competitors", json.dumps(out["competitors"]), flush=True)
    out["loadavg_end"] = list(os.getloadavg())
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return out


# ---- pytest-benchmark ----------------------------------------------------------------------
# The same workloads as the script, one group per operation, one test per engine/competitor.
# BENCH_THREADS (default 1) sets every engine's threads; BENCH_ROUNDS (default 5) the rounds.

def _threads():
    return int(os.environ.get("BENCH_THREADS", "1"))


def _rounds():
    return int(os.environ.get("BENCH_ROUNDS", "5"))


_GENS: dict = {}


def _gen(engine):
    import pytest

    if engine not in _GENS:
        try:
            _GENS[engine] = make_generator(engine, _threads())
        except ModuleNotFoundError as exc:
            pytest.skip(f"{engine}: {exc}")
    return _GENS[engine]


def _throughput(benchmark, engine, beam):
    g = _gen(engine)
    kws = t0_keywords(g)
    g.generate(kws[:32], beam=beam, n=1, batch_size=32)  # warm-up
    got = {}

    def unit():
        got["dt"], got["tokens"], got["rows"] = decode(g, kws, beam, 32)

    benchmark.pedantic(unit, rounds=_rounds(), iterations=1, warmup_rounds=0)
    med = benchmark.stats.stats.median
    benchmark.extra_info.update({
        "tokens_per_s": round(got["tokens"] / med), "rows_steps_per_s": round(got["rows"] / med),
        "queries": len(kws), "beam": beam, "batch": 32, "threads": _threads(), "loadavg": list(os.getloadavg()),
        "step_path": getattr(g.backend, "step_path", "parts" if getattr(g.backend, "parts", False) else "topk")})


def _param(engines):
    import pytest

    return pytest.mark.parametrize("engine", engines)


try:
    import pytest as _pytest
except ImportError:  # the script runs without pytest
    _pytest = None

if _pytest is not None:
    @_pytest.mark.benchmark(group="beam5_t0_batch32")
    @_param(ENGINES)
    def test_beam5(benchmark, engine):
        _throughput(benchmark, engine, 5)

    @_pytest.mark.benchmark(group="greedy_t0_batch32")
    @_param(ENGINES)
    def test_greedy(benchmark, engine):
        _throughput(benchmark, engine, 1)

    @_pytest.mark.benchmark(group="step_full_rows")
    @_pytest.mark.parametrize("rows", [1, 64])
    @_param(["onnx", "torch"])
    def test_step_latency(benchmark, engine, rows):
        from pysynth.models.batching import make_source_batch

        g = _gen(engine)
        src = ["what", "capital", "france", "population", "river", "city"]
        batch = make_source_batch(g.vocab, [src] * rows, copy=True)
        st, h = g.backend.encode(batch)
        tok = np.full(rows, g.vocab.bos_id, dtype=np.int64)
        benchmark.pedantic(g.backend.step, args=(st, tok, h), rounds=200, iterations=1, warmup_rounds=10)
        benchmark.extra_info.update({"rows": rows, "threads": _threads()})

    @_pytest.mark.benchmark(group="step_candidates_k16")
    @_pytest.mark.parametrize("rows", [1, 64, 160])
    @_param(ENGINES)
    def test_step_candidates(benchmark, engine, rows):
        """One step as the beam search runs it: the 16 best candidates per row (3 OOV columns)."""
        from pysynth.models.batching import make_source_batch

        g = _gen(engine)
        src = ["what", "capital", "france", "population", "zzoov1", "river", "zzoov2", "city", "zzoov3"]
        batch = make_source_batch(g.vocab, [src] * rows, copy=True)
        st, h = g.backend.encode(batch)
        tok = np.full(rows, g.vocab.bos_id, dtype=np.int64)
        benchmark.pedantic(g.backend.step_topk, args=(st, tok, h, 16), rounds=100, iterations=1, warmup_rounds=10)
        benchmark.extra_info.update({"rows": rows, "threads": _threads(), "n_ext": int(batch.n_ext)})

    @_pytest.mark.benchmark(group="beam5_t0_batch32")
    @_pytest.mark.parametrize("competitor", ["transformers", "ctranslate2"])
    def test_beam5_competitor(benchmark, competitor, tmp_path):
        _pytest.importorskip("transformers")
        if competitor == "ctranslate2":
            _pytest.importorskip("ctranslate2")
            run = ct2_runner(5, 32, _threads(), str(tmp_path))
        else:
            run, _ = hf_runner(5, 32, _threads())
        run()  # warm-up
        got = {}

        def unit():
            got["tokens"] = run()

        benchmark.pedantic(unit, rounds=_rounds(), iterations=1, warmup_rounds=0)
        benchmark.extra_info.update({
            "tokens_per_s": round(got["tokens"] / benchmark.stats.stats.median), "beam": 5, "batch": 32,
            "threads": _threads(), "loadavg": list(os.getloadavg()),
            "note": f"random tiny Marian (1+1 layers, d_model 128, vocab 8000), fixed length {OUT_LEN}, 10 batches"})


if __name__ == "__main__":
    main()
