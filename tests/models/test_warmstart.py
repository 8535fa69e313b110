"""The warm-started encoder-decoder with a copy head (pysynth.models.warmstart), tiny and random."""
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

from pysynth.models import warmstart as ws  # noqa: E402

WORDS = ["the", "a", "of", "what", "who", "is", "was", "in", "city", "river", "king", "built", "paris", "france",
         "capital", "year", "?", ".", ",", "when", "##s", "1900", "bridge", "named"]


@pytest.fixture(scope="module")
def tok(tmp_path_factory):
    from pysynth.models.spans import wordpiece_tokenizer

    p = tmp_path_factory.mktemp("vocab") / "vocab.txt"
    p.write_text("\n".join(["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"] + WORDS) + "\n", encoding="utf-8")
    return wordpiece_tokenizer(p)


def tiny(tok, copy=True, **kw):
    torch.manual_seed(0)
    c = ws.WarmStartConfig(vocab_size=len(tok), hidden_size=16, num_layers=2, num_heads=2, intermediate_size=32,
                           decoder_layers=2, copy=copy, max_positions=64, max_source_len=24, max_target_len=8,
                           pad_id=tok.pad_token_id, bos_id=tok.cls_token_id, eos_id=tok.sep_token_id,
                           unk_id=tok.unk_token_id, **kw)
    return ws.WarmStartSeq2Seq(c)


CTX = "paris is the capital of france . the bridge was built in 1900 . the king named the river ."
ROWS = [(CTX, CTX.index("1900"), CTX.index("1900") + 4, "when was the bridge built ?"),
        (CTX, 0, 5, "what is the capital of france ?")]


def batch(tok, m):
    c = m.config
    return ws.collate([ws.qg_features(tok, t, s, e, c.max_source_len, q, c.max_target_len) for t, s, e, q in ROWS],
                      c.pad_id, c.bos_id)


def test_features_mark_the_answer_in_a_centred_window(tok):
    f = ws.qg_features(tok, CTX, CTX.index("1900"), CTX.index("1900") + 4, max_len=8, question="when ?")
    assert len(f["src"]) == 8 and f["src"][0] == tok.cls_token_id and f["src"][-1] == tok.sep_token_id
    marked = [i for i, t in zip(f["src"], f["types"]) if t == 1]
    assert tok.convert_ids_to_tokens(marked) == ["1900"]
    assert f["tgt"][-1] == tok.sep_token_id
    with pytest.raises(ValueError, match="answer span"):
        ws.qg_features(tok, CTX, 5, 5)


@pytest.mark.parametrize("copy", [True, False])
def test_forward_shapes_and_a_proper_distribution(tok, copy):
    m = tiny(tok, copy=copy).eval()
    b = batch(tok, m)
    logp = m(b["src"], b["src_mask"], b["src_types"], b["tgt_in"])
    assert logp.shape == (2, b["tgt_in"].shape[1], len(tok))
    assert torch.allclose(logp.exp().sum(-1), torch.ones(logp.shape[:2]), atol=1e-5)
    loss = ws.seq2seq_loss(logp, b["labels"], m.config.pad_id, smoothing=0.1)
    assert torch.isfinite(loss)


def test_decoder_is_warm_started_from_the_encoder(tok):
    m = tiny(tok)
    enc = m.bert.encoder.layer
    assert torch.equal(m.layers[0].self_attn.query.weight, enc[0].attention.self.query.weight)
    assert torch.equal(m.layers[1].output.weight, enc[1].output.dense.weight)
    assert not torch.equal(m.layers[0].cross_attn.query.weight, enc[0].attention.self.query.weight)


def test_copy_scatters_onto_source_ids(tok):
    m = tiny(tok).eval()
    with torch.no_grad():  # the vocabulary gate shut: all mass on source tokens, none on specials
        m.gate.bias.fill_(-50.0)
        b = batch(tok, m)
        p = m(b["src"], b["src_mask"], b["src_types"], b["tgt_in"]).exp()
    for r in range(2):
        src = set(b["src"][r].tolist()) - {m.config.pad_id, m.config.bos_id, m.config.eos_id}
        assert p[r][:, sorted(src)].sum(-1).min() > 0.999


@pytest.mark.parametrize("beam", [1, 3])
def test_decode_runs_without_repeated_trigrams(tok, beam):
    m = tiny(tok)
    out = ws.generate(m, batch(tok, m), beam=beam, max_len=12, no_repeat_ngram=3)
    assert len(out) == 2 and all(1 <= len(q) <= 12 for q in out)
    for q in out:
        grams = [tuple(q[i:i + 3]) for i in range(len(q) - 2)]
        assert len(grams) == len(set(grams))
        assert all(a != b for a, b in zip(q, q[1:]))  # no token directly after itself
        assert m.config.bos_id not in q and m.config.eos_id not in q
    gen = ws.WarmStartGenerator(m, tok, beam=beam, max_len=6)
    texts = gen.generate([r[0] for r in ROWS], [{"start": r[1], "end": r[2]} for r in ROWS])
    assert len(texts) == 2 and all(isinstance(t, str) for t in texts)


def _train_steps(m, opt, b, n):
    m.train()
    for _ in range(n):
        loss = ws.seq2seq_loss(m(b["src"], b["src_mask"], b["src_types"], b["tgt_in"]), b["labels"], 0, 0.1)
        opt.zero_grad()
        loss.backward()
        opt.step()


def test_checkpoint_resume_matches_an_uninterrupted_run(tok, tmp_path):
    m = tiny(tok, dropout=0.2)
    b = batch(tok, m)
    opt = torch.optim.AdamW(m.parameters(), lr=1e-2)
    _train_steps(m, opt, b, 2)
    ws.save_checkpoint(tmp_path / "ck.pt", m, opt, step=2)
    _train_steps(m, opt, b, 2)  # uninterrupted: steps 3-4 (dropout draws from the RNG)
    m2, state = ws.load_checkpoint(tmp_path / "ck.pt")
    opt2 = torch.optim.AdamW(m2.parameters(), lr=1e-2)
    m2, state = ws.load_checkpoint(tmp_path / "ck.pt", m2, opt2)
    assert state["step"] == 2 and m2.config == m.config
    _train_steps(m2, opt2, b, 2)
    for (n, p), (_, q) in zip(m.named_parameters(), m2.named_parameters()):
        assert torch.allclose(p, q, atol=1e-6), n
    assert not list(tmp_path.glob(".ck.pt.tmp*"))


def test_config_checks():
    with pytest.raises(ValueError, match="num_heads"):
        ws.WarmStartConfig(hidden_size=10, num_heads=3)
    with pytest.raises(ValueError, match="max_positions"):
        ws.WarmStartConfig(max_positions=64, max_source_len=128)
    c = ws.WarmStartConfig(vocab_size=100, unk_id=1, bos_id=2, eos_id=3)
    assert ws.WarmStartConfig.from_dict(c.to_dict()) == c


def test_registered_architecture_builds(tok):
    from pysynth.models.registry import architecture

    arch = architecture("warmstart-seq2seq")
    c = tiny(tok).config
    m = arch.build(arch.config_class().from_dict(c.to_dict()), len(tok))
    assert isinstance(m, ws.WarmStartSeq2Seq) and m.config == c


# ------------------------------------------------------------------ the shared searches (issue 26)

def _source_batch(tok, m):
    from pysynth.decoding.protocol import SourceBatch

    c = m.config
    feats = [ws.qg_features(tok, t, s, e, c.max_source_len) for t, s, e, _ in ROWS]
    return SourceBatch.from_ids([f["src"] for f in feats], c.pad_id, [f["types"] for f in feats])


@pytest.mark.parametrize("copy", [True, False])
def test_shared_greedy_search_equals_generate(tok, copy):
    from pysynth.decoding import SearchConfig, run_search

    m = tiny(tok, copy=copy)
    want = ws.generate(m, batch(tok, m), beam=1, max_len=12, no_repeat_ngram=3)
    be = ws.WarmStartBackend(m)
    got = run_search(be, _source_batch(tok, m), SearchConfig(decode="greedy", beam=1, no_repeat_ngram=3), 12)
    assert [h[0].tokens for h in got] == want
    # the answer's token types reach the encoder: other types, other logits
    sb = _source_batch(tok, m)
    st, h = be.encode(sb)
    lp_marked, _ = be.step(st, [m.config.bos_id] * 2, h)
    sb.types = None
    st, h = be.encode(sb)
    lp_plain, _ = be.step(st, [m.config.bos_id] * 2, h)
    assert not (lp_marked == lp_plain).all()


@pytest.mark.parametrize("decode", ["greedy", "beam", "dbs", "sample"])
def test_every_search_runs_on_the_model(tok, decode):
    from pysynth.decoding import SearchConfig, run_search

    m = tiny(tok)
    cfg = SearchConfig(decode=decode, beam=4, groups=2 if decode == "dbs" else 1, top_k=5, no_repeat_ngram=3)
    res = run_search(ws.WarmStartBackend(m), _source_batch(tok, m), cfg, 10)
    assert len(res) == 2
    for hyps in res:
        assert hyps and all(1 <= len(x.tokens) <= 10 for x in hyps)
        for x in hyps:
            q = x.tokens
            assert len({tuple(q[i:i + 3]) for i in range(len(q) - 2)}) == max(len(q) - 2, 0)
            assert all(a != b for a, b in zip(q, q[1:]))
            assert m.config.eos_id not in q and m.config.bos_id not in q


def test_qg_facade_on_torch(tok, tmp_path):
    from pysynth.decoding import SearchConfig
    from pysynth.models.warmstart_qg import WarmStartQG, split_highlight

    m = tiny(tok)
    qg = WarmStartQG(ws.WarmStartBackend(m), tok, m.config.max_source_len, max_len=8, name="tiny")
    spans = [{"start": s, "end": e} for _, s, e, _ in ROWS]
    gens = qg.questions([r[0] for r in ROWS], spans, SearchConfig(decode="beam", beam=3, n=2, no_repeat_ngram=3))
    assert [len(g.texts) for g in gens] == [2, 2] and gens[0].source == "1900"
    gen = ws.WarmStartGenerator(m, tok, beam=1, max_len=8)
    assert [g.texts[0] for g in qg.questions([r[0] for r in ROWS], spans)] == \
        gen.generate([r[0] for r in ROWS], spans)
    text = CTX.replace("1900", "<hl> 1900 <hl>")
    assert split_highlight(text) == (CTX, CTX.index("1900"), CTX.index("1900") + 4)
    assert qg.generate([text])[0].texts == qg.questions([CTX], spans[:1])[0].texts
    assert qg.valid("no marks") and qg.valid(text) is None
    with pytest.raises(ValueError, match="texts\\[0\\]"):
        qg.generate(["no marks"])
    with pytest.raises(ValueError, match="answers\\[0\\]"):
        qg.questions([CTX], [{"start": 3}])
