"""ONNX export of the warm-started encoder-decoder: fp32 graphs == torch, int8 runs, models.load opens it."""
import subprocess
import sys

import numpy as np
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")
pytest.importorskip("onnx")
pytest.importorskip("onnxruntime")

from pysynth.models import warmstart as ws  # noqa: E402

from .test_warmstart import ROWS, _source_batch, tiny  # noqa: E402
from .test_warmstart import tok as tok  # noqa: E402,F401  (the fixture)


@pytest.fixture(scope="module")
def exported(tok, tmp_path_factory):
    from pysynth.export.warmstart import export_warmstart_onnx

    m = tiny(tok)
    d = tmp_path_factory.mktemp("wsonnx")
    vocab = d / "vocab.txt"
    vocab.write_text("\n".join(tok.convert_ids_to_tokens(list(range(len(tok))))) + "\n", encoding="utf-8")
    fp32 = export_warmstart_onnx(m, d / "fp32", vocab, max_len=10)
    int8 = export_warmstart_onnx(m, d / "int8", vocab, quantize=True, max_len=10)
    return m, fp32, int8


def test_onnx_step_logits_equal_torch(tok, exported):
    from pysynth.decoding.ort_warmstart import WarmStartOrtBackend

    m, fp32, _ = exported
    tb, ob = ws.WarmStartBackend(m, min_len=0, no_stutter=False), WarmStartOrtBackend(fp32, min_len=0,
                                                                                         no_stutter=False)
    sb = _source_batch(tok, m)
    (ts, th), (os_, oh) = tb.encode(sb), ob.encode(sb)
    rows = np.array([1, 0, 1])  # a gather of rows, as beam search does
    ts, th, os_, oh = tb.take(ts, rows), tb.take_h(th, rows), ob.take(os_, rows), ob.take_h(oh, rows)
    tokens = np.full(3, m.config.bos_id)
    for t in range(4):
        lt, th = tb.step(ts, tokens, th)
        lo, oh = ob.step(os_, tokens, oh)
        np.testing.assert_allclose(lo, lt, atol=1e-4, rtol=0)
        assert (th == oh).all()
        tokens = np.array([5 + t, 7, 9 + t])


def test_onnx_searches_and_models_load(tok, exported):
    from pysynth.decoding import SearchConfig, run_search
    from pysynth.decoding.ort_warmstart import WarmStartOrtBackend
    from pysynth.models import load
    from pysynth.models.warmstart_qg import WarmStartQG

    m, fp32, int8 = exported
    sb = _source_batch(tok, m)
    for decode in ("greedy", "beam", "dbs", "sample"):
        cfg = SearchConfig(decode=decode, beam=4, groups=2 if decode == "dbs" else 1, top_k=5, no_repeat_ngram=3)
        want = run_search(ws.WarmStartBackend(m), sb, cfg, 10)
        got = run_search(WarmStartOrtBackend(fp32), sb, cfg, 10)
        assert [[h.tokens for h in x] for x in got] == [[h.tokens for h in x] for x in want]
    q = run_search(WarmStartOrtBackend(int8), sb, SearchConfig(decode="greedy", beam=1, no_repeat_ngram=3), 10)
    assert len(q) == 2 and all(len(x[0].tokens) >= 2 for x in q)
    qg = load(fp32)
    assert isinstance(qg, WarmStartQG) and qg.runtime == "onnx"
    spans = [{"start": s, "end": e} for _, s, e, _ in ROWS]
    assert [g.texts[0] for g in qg.questions([r[0] for r in ROWS], spans)] == \
        ws.WarmStartGenerator(m, tok, max_len=10).generate([r[0] for r in ROWS], spans)
    with pytest.raises(ValueError, match="backend"):
        load(fp32, backend="torch")


def test_onnx_path_imports_no_torch(exported):
    code = ("import sys; from pysynth.models import load; from pysynth.decoding import SearchConfig; "
            f"qg = load({str(exported[1])!r}); "
            f"g = qg.questions([{ROWS[0][0]!r}], [{{'start': {ROWS[0][1]}, 'end': {ROWS[0][2]}}}], "
            "SearchConfig(decode='beam', beam=2, no_repeat_ngram=3)); "
            "assert g[0].texts; assert 'torch' not in sys.modules, 'torch imported'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_qagen_question_generator_opens_warmstart_export(exported):
    from pysynth.models import load
    from pysynth.qagen.models import QuestionGenerator

    fp32 = exported[1]
    qg = QuestionGenerator(str(fp32))
    assert qg.kind == "warmstart"
    contexts = [r[0] for r in ROWS]
    spans = [{"start": s, "end": e} for _, s, e, _ in ROWS]
    from pysynth.decoding import SearchConfig
    from pysynth.models.postprocess import context_case

    raw = load(fp32).questions(contexts, spans, SearchConfig(decode="greedy", beam=1, no_repeat_ngram=3))
    want = [context_case(g.texts[0], c) for g, c in zip(raw, contexts)]  # the context's case and spacing
    assert qg.generate(contexts, spans) == want
    nb = qg.nbest(contexts, spans, beam_size=3)
    assert len(nb) == len(contexts) and all(1 <= len(x) <= 3 for x in nb)
    with pytest.raises(ValueError, match="one answer per context"):
        qg.generate(contexts, spans[:1])
