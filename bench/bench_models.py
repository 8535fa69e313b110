"""CPU decoding speed of the seq2seq models: pysynth (torch eager, onnxruntime) vs competitors.

    python bench/bench_models.py [--model DIR] [--threads 2] [--batch 32] [--beam 5] [--json OUT]
                                 [--competitors]

* Throughput: beam search (``--beam``, batch ``--batch``) over the T0 keyword queries (800),
  end to end (tokenize, batch, search, detokenize). ``tokens/s`` counts the tokens of the best
  hypothesis of each query, ``</s>`` included (what CTranslate2 reports); ``beam tokens/s``
  counts every hypothesis row the search advanced per step (``rows x steps``).
* Per-step latency: one decoder step (attention + copy) at batch 1 and 64, median of N runs.
* ``--competitors``: Hugging Face ``transformers`` ``generate`` (beam 5) and CTranslate2 on a
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


class CountingBackend:
    """Wraps a backend and counts rows x steps."""

    def __init__(self, inner):
        self.inner, self.rows = inner, 0
        self.vocab_size = inner.vocab_size

    def encode(self, b):
        return self.inner.encode(b)

    def take(self, s, r):
        return self.inner.take(s, r)

    def take_h(self, h, r):
        return self.inner.take_h(h, r)

    def step(self, s, t, h):
        self.rows += len(t)
        return self.inner.step(s, t, h)


def queries():
    try:
        from pysynth.k2q.data import load_seed_pairs

        return [p.keywords for p in load_seed_pairs()]
    except FileNotFoundError:
        rng = np.random.default_rng(0)
        words = "capital france population river bible verse education car engine price music band".split()
        return [" ".join(rng.choice(words, int(rng.integers(3, 7)))) for _ in range(800)]


def throughput(gen, kws, beam, batch, repeat=2):
    from pysynth.models.vocab import tokenize

    kws = [k for k in kws if any(w in gen.vocab.stoi for w in tokenize(k))]
    gen.generate(kws[:batch], beam=beam, n=1, batch_size=batch)  # warm-up
    cb = CountingBackend(gen.backend)
    inner, gen.backend = gen.backend, cb
    try:
        t0 = time.perf_counter()
        for _ in range(repeat):
            res = gen.generate(kws, beam=beam, n=1, batch_size=batch, dedupe=False)
        dt = (time.perf_counter() - t0) / repeat
    finally:
        gen.backend = inner
    ntok = sum(len(tokenize(r.texts[0])) + 1 for r in res if r.texts)  # tokens + </s>
    return {"queries": len(kws), "seconds": round(dt, 3), "tokens_per_s": round(ntok / dt),
            "beam_tokens_per_s": round(cb.rows / repeat / dt), "queries_per_s": round(len(kws) / dt, 1)}


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


def competitors(beam, batch, out_len=12, n_batches=10):
    res = {}
    try:
        import torch
        from transformers import MarianConfig, MarianMTModel
    except Exception as exc:  # noqa: BLE001
        return {"transformers": f"skipped: {type(exc).__name__}: {exc}"}
    cfg = MarianConfig(vocab_size=8000, d_model=128, encoder_layers=1, decoder_layers=1,
                       encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=256,
                       decoder_ffn_dim=256, max_position_embeddings=64, pad_token_id=0, eos_token_id=3,
                       decoder_start_token_id=2, forced_eos_token_id=None)
    torch.manual_seed(0)
    model = MarianMTModel(cfg).eval()
    src = torch.randint(4, 8000, (batch, 6))
    kw = dict(num_beams=beam, max_new_tokens=out_len, min_new_tokens=out_len, do_sample=False, early_stopping=True)
    with torch.inference_mode():
        model.generate(src, **kw)
        t0 = time.perf_counter()
        for _ in range(n_batches):
            model.generate(src, **kw)
        dt = time.perf_counter() - t0
    res["transformers"] = {"tokens_per_s": round(n_batches * batch * out_len / dt),
                           "params": sum(p.numel() for p in model.parameters()),
                           "note": f"random tiny Marian, fixed length {out_len}"}
    try:
        import tempfile

        import ctranslate2
        import ctranslate2.converters
    except Exception as exc:  # noqa: BLE001
        res["ctranslate2"] = f"skipped: {type(exc).__name__}: {exc}"
        return res
    try:
        with tempfile.TemporaryDirectory() as d:
            model.save_pretrained(d + "/hf")
            # the converter reads the vocabulary from a tokenizer: a word-level one over tok0..tok7999
            from tokenizers import Tokenizer
            from tokenizers.models import WordLevel
            from transformers import PreTrainedTokenizerFast

            names = ["<pad>", "<unk>", "<s>", "</s>"] + [f"tok{i}" for i in range(4, 7999)]  # Marian conversion drops the pad row
            tk = Tokenizer(WordLevel({w: i for i, w in enumerate(names)}, unk_token="<unk>"))
            PreTrainedTokenizerFast(tokenizer_object=tk, unk_token="<unk>", pad_token="<pad>",
                                    eos_token="</s>", bos_token="<s>").save_pretrained(d + "/hf")
            conv = ctranslate2.converters.TransformersConverter(d + "/hf", load_as_float16=False)
            conv.convert(d + "/ct2", force=True)
            tr = ctranslate2.Translator(d + "/ct2", device="cpu", intra_threads=torch.get_num_threads())
            toks = [[f"tok{i}" for i in row] for row in src.tolist()]
            tr.translate_batch(toks, beam_size=beam, max_decoding_length=out_len, min_decoding_length=out_len)
            t0 = time.perf_counter()
            for _ in range(n_batches):
                tr.translate_batch(toks, beam_size=beam, max_decoding_length=out_len, min_decoding_length=out_len)
            dt = time.perf_counter() - t0
        res["ctranslate2"] = {"tokens_per_s": round(n_batches * batch * out_len / dt)}
    except Exception as exc:  # noqa: BLE001
        res["ctranslate2"] = f"skipped: {type(exc).__name__}: {str(exc)[:200]}"
    return res


def coverage_sweep(sizes=(2000, 4000, 8000, 16000, 32000, 44000)):
    """Vocabulary coverage/volume of T0 questions and keywords per vocabulary size (Granstedt 2017,
    Fig. 3.5-3.6), vocabularies built from the stand-in training pairs."""
    from pysynth.k2q.data import load_seed_pairs
    from pysynth.models.k2q import make_synthetic_pairs
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
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--batch", type=int, default=32)
    ap.add_argument("--beam", type=int, default=5)
    ap.add_argument("--json", default=None)
    ap.add_argument("--competitors", action="store_true")
    ap.add_argument("--coverage", action="store_true", help="only the vocabulary coverage/volume sweep")
    args = ap.parse_args(argv)
    if args.coverage:
        rows = coverage_sweep()
        for r in rows:
            print(json.dumps(r))
        return rows
    import torch

    torch.set_num_threads(args.threads)
    from pysynth.models.generate import Generator

    kws = queries()
    out = {"threads": args.threads, "batch": args.batch, "beam": args.beam, "cpu_count": os.cpu_count(),
           "torch": torch.__version__}
    gens = {"torch": Generator.load(args.model, backend="torch")}
    try:
        import onnxruntime

        from pysynth.export.onnx import OrtBackend

        g = Generator.load(args.model, backend="onnx")
        base = Path(args.model) if args.model else None
        from pysynth.models.k2q import default_model_dir

        d = (base or default_model_dir()) / "onnx"
        g.backend = OrtBackend(d, device="cpu", threads=args.threads)
        gens["onnx"] = g
        out["onnxruntime"] = onnxruntime.__version__
    except ModuleNotFoundError as exc:
        out["onnx"] = f"skipped: {exc}"
    for name, g in gens.items():
        out[f"{name}_beam"] = throughput(g, kws, args.beam, args.batch)
        out[f"{name}_greedy"] = throughput(g, kws, 1, args.batch)
        out[f"{name}_step_ms"] = {f"batch{n}": step_latency(g.backend, g.vocab, n) for n in (1, 64)}
        print(name, json.dumps({k: v for k, v in out.items() if k.startswith(name)}), flush=True)
    if args.competitors:
        out["competitors"] = competitors(args.beam, args.batch)
        print("competitors", json.dumps(out["competitors"]), flush=True)
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=1))
    return out


if __name__ == "__main__":
    main()
