"""Speed of the text stage (corpus statistics + phrase learning) against gensim 4.4 Phrases.

Run from the repository root (gensim lives in the reference venv, never in the main one):

    /tmp/refenv/bin/pip install gensim==4.4.0        # once
    python -m pytest bench/bench_text.py --benchmark-only --benchmark-json=/tmp/text.json

``PYSYNTH_GENSIM_PYTHON`` names the interpreter that has gensim (default: this one if it can
import gensim, else ``/tmp/refenv/bin/python``); without one the gensim rows are skipped.
``BENCH_TEXT_N`` sets the number of questions (default 1,000,000; ``_text_data.py``).

Groups (one operation each, on the same ~1M questions, ~7.8M tokens):

text-tokenize      questions -> tokens. pysynth: ``build_corpus`` (tokenize + vocabulary ids +
                   cf/df); gensim has no tokenizer, so its row is the usual
                   ``re.findall("[a-z0-9]+", q.lower())`` list comprehension (same tokens).
text-learn         phrase counts. pysynth: ``Phrases().learn(corpus)``; gensim:
                   ``Phrases(sentences)`` on the token lists (defaults: min_count=5,
                   threshold=10, no connector words).
text-learn-conn    the same with ``connector_words=ENGLISH_CONNECTOR_WORDS``.
text-pipeline      raw questions -> learned model: tokenize + learn, both tools.
text-apply         apply the frozen model to every question: pysynth ``FrozenPhrases.apply``
                   (a new Corpus); gensim ``list(frozen[sentences])``.

gensim runs in a worker process that loads the questions once (untimed) and then executes
each timed command when asked; the timing includes one pipe round trip (~0.1 ms). Before
timing, the results are compared and must be identical: number of keys, corpus word count and
the phrase table (phrases and float scores), and the transformed sentences.
pysynth runs with workers=1 and workers=2.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import time

import pytest

pytest.importorskip("pytest_benchmark")

from pysynth import text  # noqa: E402

import _text_data  # noqa: E402

N = int(os.environ.get("BENCH_TEXT_N", _text_data.N_QUESTIONS))
ROUNDS_FAST = int(os.environ.get("BENCH_ROUNDS_FAST", 5))
ROUNDS_SLOW = int(os.environ.get("BENCH_ROUNDS_SLOW", 2))

_WORKER = r"""
import hashlib, json, logging, re, sys, time
logging.disable(logging.CRITICAL)
from gensim.models.phrases import Phrases, ENGLISH_CONNECTOR_WORDS
import gensim
texts = open(sys.argv[1], encoding="utf-8").read().split("\n")[:-1]
tok = re.compile("[a-z0-9]+")
sents = [tok.findall(q.lower()) for q in texts]
models = {}
def table_digest(t):
    blob = json.dumps(sorted(t.items()), separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()
print(json.dumps({"ready": True, "gensim": gensim.__version__}), flush=True)
for line in sys.stdin:
    cmd = line.strip()
    out = {}
    cpu0 = time.process_time()
    if cmd == "tokenize":
        s2 = [tok.findall(q.lower()) for q in texts]
    elif cmd in ("learn", "learn-conn"):
        kw = {"connector_words": ENGLISH_CONNECTOR_WORDS} if cmd == "learn-conn" else {}
        models[cmd] = Phrases(sents, **kw)
    elif cmd == "pipeline":
        Phrases([tok.findall(q.lower()) for q in texts])
    elif cmd == "apply":
        res = list(models["frozen"][sents])
    elif cmd.startswith("describe "):
        m = models[cmd.split()[1]]
        f = m.freeze()
        models["frozen"] = f
        out = {"len_vocab": len(m.vocab), "corpus_word_count": m.corpus_word_count,
               "n_phrases": len(f.phrasegrams), "table": table_digest(f.phrasegrams)}
    elif cmd == "apply-digest":
        res = list(models["frozen"][sents])
        out = {"digest": hashlib.sha256(json.dumps(res, separators=(",", ":")).encode()).hexdigest()}
    out["cpu"] = time.process_time() - cpu0
    print(json.dumps(out), flush=True)
"""


def _gensim_python():
    env = os.environ.get("PYSYNTH_GENSIM_PYTHON")
    if env:
        return env
    try:
        import gensim  # noqa: F401

        return sys.executable
    except ImportError:
        pass
    cand = "/tmp/refenv/bin/python"
    return cand if os.path.exists(cand) else None


class GensimWorker:
    def __init__(self, python, path):
        self.proc = subprocess.Popen(
            [python, "-c", _WORKER, str(path)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )
        hello = json.loads(self.proc.stdout.readline() or "{}")
        if not hello.get("ready"):
            raise RuntimeError("gensim worker did not start")
        self.version = hello["gensim"]
        self.cpu = []  # CPU seconds of each command, as the worker measured them

    def __call__(self, cmd):
        self.proc.stdin.write(cmd + "\n")
        self.proc.stdin.flush()
        out = json.loads(self.proc.stdout.readline())
        self.cpu.append(out.get("cpu", float("nan")))
        return out

    def close(self):
        self.proc.stdin.close()
        self.proc.wait(timeout=60)


@pytest.fixture(scope="module")
def questions():
    return _text_data.questions(N)


@pytest.fixture(scope="module")
def corpus(questions):
    return text.build_corpus(questions, workers=2)


@pytest.fixture(scope="module")
def gensim_worker():
    python = _gensim_python()
    if python is None:
        pytest.skip("no interpreter with gensim (set PYSYNTH_GENSIM_PYTHON)")
    try:
        w = GensimWorker(python, _text_data.cache_file(N))
    except Exception as exc:  # noqa: BLE001
        pytest.skip(f"gensim worker failed: {exc}")
    yield w
    w.close()


def _busy_seconds():
    try:
        with open("/proc/stat", encoding="ascii") as f:
            v = [int(x) for x in f.readline().split()[1:]]
    except (OSError, ValueError):
        return None
    idle = v[3] + (v[4] if len(v) > 4 else 0)
    return (sum(v[:8]) - idle) / os.sysconf("SC_CLK_TCK")


def _time(benchmark, fn, *, rounds, tool, workers, warmup=1, worker=None, **info):
    """Time fn; also record CPU seconds per call (the machine may be shared: wall time then
    includes waiting for a core, CPU time does not) and the load of other processes."""
    benchmark.extra_info.update({"tool": tool, "items": N, "unit": "questions", "workers": workers,
                                 "source": _text_data.source(), **info})
    if worker is not None:
        worker.cpu.clear()
    busy0, t0, self0 = _busy_seconds(), time.perf_counter(), os.times()
    out = benchmark.pedantic(fn, rounds=rounds, iterations=1, warmup_rounds=warmup)
    busy1, t1, self1 = _busy_seconds(), time.perf_counter(), os.times()
    mine = (self1.user - self0.user) + (self1.system - self0.system)
    if worker is not None:
        cpu = sorted(worker.cpu)
        mine += sum(cpu)  # the gensim worker is another process: its CPU is not "other load"
    else:
        cpu = [mine / (rounds + warmup)]
    benchmark.extra_info["cpu_seconds_per_call"] = round(cpu[len(cpu) // 2], 4)
    if busy0 is not None and t1 > t0:
        benchmark.extra_info["other_load_cores"] = round(max(0.0, (busy1 - busy0) - mine) / (t1 - t0), 2)
    return out


def _table_digest(table):
    blob = json.dumps(sorted(table.items()), separators=(",", ":")).encode()
    return hashlib.sha256(blob).hexdigest()


_CHECKED = {}


def _check_against_gensim(gensim_worker, corpus, kind):
    """Learn both, compare keys and phrase tables exactly (once per kind)."""
    if kind in _CHECKED:
        return _CHECKED[kind]
    kw = {"connector_words": text.ENGLISH_CONNECTOR_WORDS} if kind == "learn-conn" else {}
    model = text.Phrases(**kw).learn(corpus, workers=2)
    gensim_worker(kind)
    g = gensim_worker(f"describe {kind}")
    g.pop("cpu", None)
    frozen = model.freeze()
    mine = {"len_vocab": model.n_keys, "corpus_word_count": model.corpus_word_count,
            "n_phrases": len(frozen.phrasegrams), "table": _table_digest(frozen.phrasegrams)}
    assert mine == g, f"pysynth {mine} != gensim {g}"
    _CHECKED[kind] = frozen
    return frozen


@pytest.mark.parametrize("tool", ["pysynth-w1", "pysynth-w2", "gensim"])
def test_tokenize(benchmark, tool, questions, gensim_worker):
    benchmark.group = "text-tokenize"
    if tool == "gensim":
        _time(benchmark, lambda: gensim_worker("tokenize"), rounds=ROUNDS_SLOW, tool="gensim", workers=1,
              worker=gensim_worker, warmup=0, what="re.findall list comprehension")
    else:
        w = int(tool[-1])
        _time(benchmark, lambda: text.build_corpus(questions, workers=w), rounds=ROUNDS_FAST, tool="pysynth",
              workers=w, what="build_corpus")


@pytest.mark.parametrize("kind", ["learn", "learn-conn"])
@pytest.mark.parametrize("tool", ["pysynth-w1", "pysynth-w2", "gensim"])
def test_learn(benchmark, tool, kind, corpus, gensim_worker):
    benchmark.group = f"text-{kind}"
    _check_against_gensim(gensim_worker, corpus, kind)
    if tool == "gensim":
        _time(benchmark, lambda: gensim_worker(kind), rounds=ROUNDS_SLOW, tool="gensim", workers=1,
              worker=gensim_worker, warmup=0, agreement="exact (asserted: keys, corpus word count, phrase table)")
    else:
        w = int(tool[-1])
        kw = {"connector_words": text.ENGLISH_CONNECTOR_WORDS} if kind == "learn-conn" else {}
        _time(benchmark, lambda: text.Phrases(**kw).learn(corpus, workers=w), rounds=ROUNDS_FAST,
              tool="pysynth", workers=w, agreement="exact")


@pytest.mark.parametrize("tool", ["pysynth-w1", "pysynth-w2", "gensim"])
def test_pipeline(benchmark, tool, questions, gensim_worker):
    benchmark.group = "text-pipeline"
    if tool == "gensim":
        _time(benchmark, lambda: gensim_worker("pipeline"), rounds=ROUNDS_SLOW, tool="gensim", workers=1,
              worker=gensim_worker, warmup=0)
    else:
        w = int(tool[-1])
        _time(benchmark, lambda: text.Phrases().learn(text.build_corpus(questions, workers=w), workers=w),
              rounds=ROUNDS_FAST, tool="pysynth", workers=w)


@pytest.mark.parametrize("tool", ["pysynth-w1", "pysynth-w2", "gensim"])
def test_apply(benchmark, tool, corpus, gensim_worker):
    benchmark.group = "text-apply"
    frozen = _check_against_gensim(gensim_worker, corpus, "learn")
    if "apply" not in _CHECKED:
        gensim_worker("describe learn")  # gensim's frozen model = the checked one
        out = frozen.apply(corpus, workers=2)
        mine = hashlib.sha256(json.dumps(list(out.sentences()), separators=(",", ":")).encode()).hexdigest()
        assert mine == gensim_worker("apply-digest")["digest"], "transformed sentences differ from gensim"
        _CHECKED["apply"] = True
    if tool == "gensim":
        _time(benchmark, lambda: gensim_worker("apply"), rounds=ROUNDS_SLOW, tool="gensim", workers=1,
              worker=gensim_worker, warmup=0)
    else:
        w = int(tool[-1])
        _time(benchmark, lambda: frozen.apply(corpus, workers=w), rounds=ROUNDS_FAST, tool="pysynth", workers=w)
