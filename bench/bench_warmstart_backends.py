"""Warm-start QG (pysynth.models.warmstart) on every backend: speed, agreement and quality.

Decodes the same held-out answers (the ``--eval`` draw of experiments/qg_warmstart.py: answerable
questions of the SQuAD 2.0 dev subset, seed 0) with

* ``own``: the model's own ``generate()`` (torch fp32, greedy / beam with its guards);
* ``torch``: the shared searches (``pysynth.decoding.run_search``) on ``WarmStartBackend``;
* ``onnx-fp32`` / ``onnx-int8``: the same searches on ``WarmStartOrtBackend`` over the export
  (``pysynth.export.warmstart``; int8 = weight-only int8);

greedy and beam 4 (no repeated trigram, no end before 2 tokens, no token after itself; beams
ranked by the average log-probability), and writes questions/s, BLEU-4 / ROUGE-L and the share of
questions identical to the ``torch`` ones to ``--out``/results.json::

    .venv/bin/python bench/bench_warmstart_backends.py --checkpoint CKPT --out DIR --n 100 --threads 2

The checkpoint is only read (export and decoding work on a copy in memory).
"""
from __future__ import annotations

import argparse
import json
import random
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "experiments"))


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--checkpoint", required=True)
    p.add_argument("--out", required=True)
    p.add_argument("--n", type=int, default=100)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--systems", default="own,torch,onnx-fp32,onnx-int8")
    p.add_argument("--searches", default="greedy,beam4")
    p.add_argument("--reuse", action="store_true", help="decode the exports already in --out (no new export)")
    args = p.parse_args(argv)

    import qg_warmstart as X
    import torch

    from pysynth.decoding import SearchConfig
    from pysynth.export.warmstart import export_warmstart_onnx
    from pysynth.models.encoders import require_minilm
    from pysynth.models.warmstart import WarmStartBackend, WarmStartGenerator, load_checkpoint
    from pysynth.models.warmstart_qg import WarmStartQG
    from pysynth.qagen.data import iter_answers, read_squad

    torch.set_num_threads(args.threads)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    model, state = load_checkpoint(args.checkpoint, restore_rng=False)
    tok = X.tokenizer_of_minilm()
    items = list(iter_answers(read_squad(X.DEFAULT_EVAL)))
    if len(items) > args.n:
        items = random.Random(0).sample(items, args.n)
    texts = [c.text for c, _, _ in items]
    spans = [{"start": a["answer_start"], "end": a["answer_start"] + len(a["text"])} for _, _, a in items]
    refs = [qa["question"].strip() for _, qa, _ in items]
    systems = args.systems.split(",")
    res = {"step": state["step"], "n": len(items), "threads": args.threads, "export_s": {}, "sizes_mb": {},
           "runs": {}}
    qgs = {}
    if "torch" in systems:
        qgs["torch"] = WarmStartQG(WarmStartBackend(model), tok, model.config.max_source_len, 32, "torch")
    for kind in ("fp32", "int8"):
        if f"onnx-{kind}" in systems:
            d = out / f"onnx-{kind}"
            t = time.perf_counter()
            if not (args.reuse and (d / "meta.json").is_file()):
                export_warmstart_onnx(model, d, require_minilm() / "vocab.txt", quantize=kind == "int8",
                                      extra_meta={"step": state["step"]})
                res["export_s"][kind] = round(time.perf_counter() - t, 1)
            res["sizes_mb"][kind] = round(sum(f.stat().st_size for f in d.iterdir()) / 2**20, 1)
            qgs[f"onnx-{kind}"] = WarmStartQG.from_onnx(d, threads=args.threads)
    searches = {"greedy": SearchConfig(decode="greedy", beam=1, no_repeat_ngram=3),
                "beam4": SearchConfig(decode="beam", beam=4, n=1, length_penalty="average", no_repeat_ngram=3)}
    outputs = {}
    for sname in args.searches.split(","):
        for name in systems:
            t = time.perf_counter()
            if name == "own":
                hyps = WarmStartGenerator(model, tok, beam=1 if sname == "greedy" else 4).generate(texts, spans)
            else:
                hyps = [g.texts[0] if g.texts else "" for g in qgs[name].questions(texts, spans, searches[sname])]
            dt = time.perf_counter() - t
            key = f"{name} {sname}"
            outputs[key] = hyps
            res["runs"][key] = dict(X.score(hyps, refs), questions_per_s=round(len(hyps) / dt, 2),
                                    seconds=round(dt, 1))
            print(key, json.dumps(res["runs"][key]), flush=True)
    for key, hyps in outputs.items():
        base = outputs.get(f"torch {key.split()[-1]}")
        if base is not None:
            res["runs"][key]["same_as_torch_pct"] = round(100 * sum(a == b for a, b in zip(hyps, base)) / len(hyps), 1)
        ref32 = outputs.get(f"onnx-fp32 {key.split()[-1]}")
        if ref32 is not None:
            res["runs"][key]["same_as_onnx_fp32_pct"] = round(100 * sum(a == b for a, b in zip(hyps, ref32))
                                                              / len(hyps), 1)
    res["items"] = [dict({"answer": a["text"], "gold": r}, **{k: v[i] for k, v in outputs.items()})
                    for i, ((_, _, a), r) in enumerate(zip(items, refs))]
    (out / f"results_{args.systems.replace(',', '+')}_{args.searches.replace(',', '+')}_n{len(items)}"
           f"_t{args.threads}.json").write_text(json.dumps(res, indent=1, ensure_ascii=False) + "\n")
    print(json.dumps({k: v for k, v in res.items() if k != "items"}, indent=1), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
