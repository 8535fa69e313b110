"""Speed of ``pysynth paraphrase`` (Granstedt 2017's pipeline): source questions/s at B = 16, G = 4
through both stages, onnxruntime and torch, the cost split, peak memory; and Hugging Face
``generate`` beam search of the same size on a Marian model of similar size, same number of
returned hypotheses and the same output lengths.

    python bench/paraphrase_speed.py --n 200 --threads 2

Prints JSON (and writes ``bench/results/paraphrase_speed.json``). Run it alone on the machine.
"""
from __future__ import annotations

import argparse
import gzip
import json
import platform
import random
import resource
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

from pysynth.data import shared_dir  # noqa: E402
from pysynth.paraphrase.pipeline import ParaphraseConfig, Paraphraser  # noqa: E402


def questions(data, n):
    with gzip.open(data / "vqa_v2_subset" / "valid.jsonl.gz", "rt", encoding="utf-8") as f:
        rows = [json.loads(x)["question"] for x in f]
    return random.Random(1).sample(rows, n)


def pysynth_rate(qs, backend, threads, pivot="fr", batch_size=16):
    cfg = ParaphraseConfig(pivot=pivot, backend=backend, threads=threads, batch_size=batch_size)
    p = Paraphraser(cfg)
    if backend == "torch":
        import torch

        torch.set_num_threads(threads)
    p.run(qs[:4])  # warm-up
    p.timings.clear()
    t = time.perf_counter()
    res = p.run(qs)
    dt = time.perf_counter() - t
    pivots = sum(r["counts"].get("pivots_decoded", 0) for r in res)
    cands = sum(r["counts"].get("candidates", 0) for r in res)
    lens = [len(c["text"].split()) for r in res for c in r["candidates"]]
    return {"backend": backend, "questions_per_s": round(len(qs) / dt, 2), "seconds": round(dt, 2),
            "split_s": {k: round(v, 2) for k, v in p.timings.items()}, "pivots_decoded": pivots,
            "candidates": cands, "mean_candidate_words": round(sum(lens) / max(1, len(lens)), 2)}, res


def hf_rate(qs, res, threads, d_model=256, vocab=20000):
    """HF ``generate`` beam search (num_beams=16, 16 returned) on a random-weight Marian model, each
    stage forced to the lengths pysynth's run produced (min = max new tokens), so both do the
    same number of decoder steps per hypothesis."""
    import torch
    import transformers

    torch.manual_seed(0)
    torch.set_num_threads(threads)
    cfg = transformers.MarianConfig(vocab_size=vocab, d_model=d_model, encoder_layers=1, decoder_layers=1,
                                    encoder_attention_heads=4, decoder_attention_heads=4, encoder_ffn_dim=4 * d_model,
                                    decoder_ffn_dim=4 * d_model, max_position_embeddings=128, pad_token_id=0,
                                    eos_token_id=1, decoder_start_token_id=0)
    m = transformers.MarianMTModel(cfg).eval()
    n_params = sum(p.numel() for p in m.parameters())
    rng = random.Random(0)
    # the same work as pysynth: per question B forward hypotheses, then B per decoded pivot
    fwd_len = max(2, round(sum(len(p["pivot"].split()) for r in res for p in r["pivots"])
                           / max(1, sum(len(r["pivots"]) for r in res))) + 1)
    bwd_len = max(2, round(sum(len(c["text"].split()) for r in res for c in r["candidates"])
                           / max(1, sum(len(r["candidates"]) for r in res))) + 1)
    src = [[rng.randrange(2, vocab) for _ in range(len(q.split()) + 1)] + [1] for q in qs]
    n_piv = [r["counts"].get("pivots_decoded", 0) for r in res]
    t = time.perf_counter()
    with torch.inference_mode():
        for i in range(0, len(src), 16):
            batch = src[i : i + 16]
            L = max(map(len, batch))
            ids = torch.tensor([b + [0] * (L - len(b)) for b in batch])
            m.generate(input_ids=ids, attention_mask=(ids != 0).long(), num_beams=16, num_return_sequences=16,
                       min_new_tokens=fwd_len, max_new_tokens=fwd_len, do_sample=False)
        pivots = [[rng.randrange(2, vocab) for _ in range(fwd_len)] + [1] for _ in range(sum(n_piv))]
        for i in range(0, len(pivots), 16):
            ids = torch.tensor(pivots[i : i + 16])
            m.generate(input_ids=ids, attention_mask=torch.ones_like(ids), num_beams=16, num_return_sequences=16,
                       min_new_tokens=bwd_len, max_new_tokens=bwd_len, do_sample=False)
    dt = time.perf_counter() - t
    return {"model": f"MarianMTModel d_model={d_model}, 1+1 layers, vocab {vocab} ({n_params / 1e6:.1f}M params)",
            "transformers": transformers.__version__, "questions_per_s": round(len(qs) / dt, 2),
            "seconds": round(dt, 2), "forward_tokens": fwd_len, "backward_tokens": bwd_len}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", default=None)
    ap.add_argument("--n", type=int, default=200)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--no-hf", action="store_true")
    a = ap.parse_args(argv)
    qs = questions(shared_dir(a.data), a.n)
    out = {"n": a.n, "threads": a.threads, "B": 16, "G": 4, "lambda": 0.5,
           "machine": f"{platform.machine()}, {a.threads} threads", "date": time.strftime("%Y-%m-%d")}
    out["onnx"], res = pysynth_rate(qs, "onnx", a.threads)
    out["peak_rss_mb_after_onnx"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    out["torch"], _ = pysynth_rate(qs, "torch", a.threads)
    if not a.no_hf:
        out["hf_generate"] = hf_rate(qs, res, a.threads)
        out["onnx_vs_hf"] = round(out["onnx"]["questions_per_s"] / out["hf_generate"]["questions_per_s"], 2)
    out["peak_rss_mb"] = round(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, 1)
    (HERE / "results").mkdir(exist_ok=True)
    (HERE / "results" / "paraphrase_speed.json").write_text(json.dumps(out, indent=1))
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
