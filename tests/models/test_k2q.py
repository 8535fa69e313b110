"""K2Q on the shipped model: generate_questions, torch/onnxruntime token parity on held-out T0."""
from __future__ import annotations

import random

import pytest

from pysynth.k2q.neural import default_model_dir, keywords_of, make_synthetic_pairs

SHIPPED = default_model_dir()
needs_model = pytest.mark.skipif(not (SHIPPED / "config.json").exists(), reason="shipped model missing")


def test_keywords_stand_in():
    rng = random.Random(0)
    kw = keywords_of("What is the capital city of the state of New York?", rng)
    assert kw and all(w not in ("what", "is", "the", "of", "?") for w in kw)
    pairs = make_synthetic_pairs(["How do I bond two wireless networks?", "Who wrote the bible?"], seed=1)
    assert pairs == make_synthetic_pairs(["How do I bond two wireless networks?", "Who wrote the bible?"], seed=1)
    for k, q in pairs:
        assert 1 <= len(k.split()) <= 7
        q_words = q.lower().replace("?", " ").split()
        assert [w for w in q_words if w in k.split()][: len(k.split())] == k.split()  # question order


@needs_model
def test_generate_questions_fig1():
    pytest.importorskip("torch")
    from pysynth.k2q.neural import generate_questions

    out = generate_questions("bible verse education", n=5)
    assert 2 <= len(out) <= 5
    qs = [q for q, _ in out]
    assert len(set(qs)) == len(qs)
    assert all(isinstance(s, float) for _, s in out)
    # the first one is plain beam search's best
    best = generate_questions("bible verse education", n=1, diverse=False)
    assert best[0][0] == qs[0]
    many = generate_questions(["capital france", "cale yarborough championships"], n=3)
    assert len(many) == 2 and all(1 <= len(x) <= 3 for x in many)


@needs_model
@pytest.mark.parametrize("method", ["greedy", "beam", "diverse"])
def test_shipped_onnx_matches_torch_on_t0(method, shared_data):
    pytest.importorskip("torch")
    pytest.importorskip("onnxruntime")
    from pysynth.k2q.data import load_seed_pairs
    from pysynth.k2q.neural import get_generator

    tg, og = get_generator(None, "torch"), get_generator(None, "onnx")
    kws = [p.keywords for p in load_seed_pairs(shared_data)][::16]  # 50 held-out queries
    kws = [k for k in kws if any(w in tg.vocab.stoi for w in k.lower().split())]
    kw = dict(greedy=dict(beam=1), beam=dict(beam=5), diverse=dict(beam=6, groups=3, diversity=0.5))[method]
    a = tg.generate(kws, **kw)
    b = og.generate(kws, **kw)
    assert [x.texts for x in a] == [x.texts for x in b]


class _FullRows:
    """An OrtBackend without ``step_topk``: the searches rank full [rows, V + n_ext] rows."""

    def __init__(self, inner):
        self.inner, self.vocab_size, self.specials = inner, inner.vocab_size, inner.specials

    def encode(self, batch):
        return self.inner.encode(batch)

    def take(self, state, rows):
        return self.inner.take(state, rows)

    def take_h(self, h, rows):
        return self.inner.take_h(h, rows)

    def step(self, state, tokens, h):
        return self.inner.step(state, tokens, h)


@needs_model
@pytest.mark.parametrize("method", ["greedy", "beam", "diverse"])
def test_shipped_parts_path_matches_full_rows_on_t0(method, shared_data):
    """The fused candidate path (step_parts.onnx + topk_from_parts) == the TopK graph == full
    rows ranked in numpy: same hypotheses, same scores (exactly: the values are bit-identical),
    on 200 held-out T0 queries."""
    pytest.importorskip("onnxruntime")
    from pysynth import _dispatch
    from pysynth.decoding.ort import OrtBackend
    from pysynth.k2q.data import load_seed_pairs
    from pysynth.models.generate import Generator

    g = Generator.load("k2q-copynet-small", backend="onnx")
    kws = [p.keywords for p in load_seed_pairs(shared_data)][::4]
    kws = [k for k in kws if any(w in g.vocab.stoi for w in k.lower().split())]
    d = SHIPPED / "onnx"
    backends = {"topk": OrtBackend(d, device="cpu", threads=1, parts=False),
                "full": _FullRows(OrtBackend(d, device="cpu", threads=1, parts=False))}
    for impl in sorted(_dispatch.available("decoding")):  # the compiled kernel and its numpy twin
        backends[f"parts-{impl}"] = OrtBackend(d, device="cpu", threads=1, parts=True)
    assert all(b.step_path == "parts" for n, b in backends.items() if n.startswith("parts"))
    kw = dict(greedy=dict(beam=1), beam=dict(beam=5), diverse=dict(beam=6, groups=3, diversity=0.5))[method]
    out = {}
    for name, be in backends.items():
        g.backend = be
        with _dispatch.force(name.split("-")[1] if name.startswith("parts") else "auto", "decoding"):
            res = g.generate(kws, dedupe=False, **kw)
        out[name] = [(r.texts, r.scores, r.groups) for r in res]
    for name in backends:
        assert out[name] == out["full"], f"{name} differs from the full-row path"


# Outputs of the shipped model recorded before its conversion from model.pt to a model store
# (2026-11-23): the converted weights and the unchanged ONNX graphs must reproduce them.
GOLDEN_GREEDY = {
    "bible verse education": "what is the bible of the verse education?",
    "capital france": "what is the capital of france?",
    "how to bond wireless networks zzzqx": "how to bond wireless networks is zzzqx?",
}
GOLDEN_BEAM3 = {
    "bible verse education": ["what is the bible of the verse education?", "what is the bible of verse education?",
                              "what is the bible in the verse education?"],
    "capital france": ["what is the capital of france?", "who was the capital of france?",
                       "who is the capital of france?"],
}


@needs_model
@pytest.mark.parametrize("backend", ["torch", "onnx"])
def test_shipped_model_outputs_are_unchanged(backend):
    pytest.importorskip("torch" if backend == "torch" else "onnxruntime")
    from pysynth.k2q.neural import get_generator

    g = get_generator(None, backend)
    assert [r.texts[0] for r in g.generate(list(GOLDEN_GREEDY), beam=1)] == list(GOLDEN_GREEDY.values())
    assert [r.texts for r in g.generate(list(GOLDEN_BEAM3), beam=5, n=3)] == list(GOLDEN_BEAM3.values())
