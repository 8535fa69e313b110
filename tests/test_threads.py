"""Public functions that release the GIL, called from 8 Python threads at once, give the results
of serial calls (issue 17: "threads"). Each stage's compiled path: text (corpus, phrases),
retrieval (SDM / BM25 search), sampling (keyword generation), ranking, metrics."""
from __future__ import annotations

import threading

import numpy as np
import pytest

from pysynth import metrics, ranking, sampling, text
from pysynth.data import k2q_demo
from pysynth.retrieval.collection import Collection

N_THREADS = 8
QS = [r["question"] for r in k2q_demo()[:3000]]


def _same(a, b) -> bool:
    if isinstance(a, np.ndarray):
        return isinstance(b, np.ndarray) and a.dtype == b.dtype and np.array_equal(a, b)
    if isinstance(a, (list, tuple)):
        return type(a) is type(b) and len(a) == len(b) and all(_same(x, y) for x, y in zip(a, b))
    if isinstance(a, dict):
        return a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    if hasattr(a, "_asdict"):
        return _same(a._asdict(), b._asdict())
    if hasattr(a, "__dict__") and not isinstance(a, (int, float, str)):
        return _same(vars(a), vars(b))
    return a == b


def _hammer(jobs):
    """Run every job serially, then all of them from 8 threads (each several times, mixed worker
    counts where the job takes them); return the indices whose threaded results differ."""
    want = [job(1) for job in jobs]
    bad, errors = [], []

    def work(t):
        try:
            for r in range(3):
                k = (t + r) % len(jobs)
                if not _same(jobs[k]((1, 2, 1)[(t + r) % 3]), want[k]):
                    bad.append(k)
        except Exception as exc:  # noqa: BLE001 - reported below
            errors.append(repr(exc))

    threads = [threading.Thread(target=work, args=(t,)) for t in range(N_THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    return sorted(set(bad))


@pytest.fixture(scope="module")
def collection():
    return Collection.from_rows([{"id": i, "text": q} for i, q in enumerate(QS)])


def test_text_stage_from_threads():
    toks = [q.lower().split() for q in QS]

    def corpus(w):
        c = text.Corpus.from_tokens(toks)
        return c.cf.copy(), c.df.copy(), [c.doc(i) for i in range(0, len(toks), 97)]

    assert _hammer([corpus]) == []


def test_search_from_threads(collection):
    qs = [QS[i] for i in range(0, len(QS), 7)]

    def sdm(w):
        h = collection.search_docs(qs, model="sdm", k=20, workers=w)
        return h

    def bm25(w):
        return collection.search_docs(qs, model="bm25", k=20, workers=w)

    assert _hammer([sdm, bm25]) == []


def test_keyword_sampling_from_threads():
    c = text.Corpus.from_tokens([q.lower().split() for q in QS[:800]])
    ids = [list(c.doc(i)) for i in range(c.n_docs)]

    def gen(seed):
        return lambda w: sampling.generate(ids, m=10, seed=seed, workers=w, vocab=c.vocab)

    assert _hammer([gen(0), gen(1)]) == []
    with pytest.raises(TypeError, match="must be token ids"):
        sampling.generate(QS[:3], m=2)


def test_metrics_and_ranking_from_threads():
    hyps, refs = QS[:1500], QS[1500:3000]
    rng = np.random.default_rng(0)
    scores = rng.random((200, 20))
    labels = rng.random((200, 20)) < 0.2

    def rouge(w):
        return {k: v.fmeasure for k, v in metrics.rouge(hyps, refs, workers=w).items()}

    def bleu(w):
        return metrics.corpus_bleu(hyps, refs, workers=w).score

    def rank(w):
        return ranking.evaluate_rankings(list(scores), list(labels))

    assert _hammer([rouge, bleu, rank]) == []
