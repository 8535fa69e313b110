"""diverse_beam: semantics of the torch reference, and Triton (interpreted on CPU) vs reference.

Both paths do the same fp32 arithmetic in the same order (x = score + logprob; x - lambda *
count), so the comparison is exact: same picks, same bits.
"""
from __future__ import annotations

import sys

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install '.[gpu]')")

NEG = float("-inf")


@pytest.fixture(scope="module")
def db(load):
    return load("diverse_beam")


@pytest.fixture(scope="module")
def db_triton(load, device):
    return load("diverse_beam.triton_diverse_beam")


def make_case(batch, B, V, *, seed=0, dtype=torch.float32, identical=False, quantize=False,
              first_step=False, G=1, flat=False):
    g = torch.Generator().manual_seed(seed)
    lp = torch.log_softmax(2 * torch.randn(batch, B, V, generator=g), dim=-1)
    if flat:  # uniform: every token of a beam ties, more ties per tile than buffer slots
        lp = torch.full((batch, B, V), -float(torch.tensor(V).log()))
    if identical:  # all beams alike: every group wants the same tokens
        lp = lp[:, :1].expand(batch, B, V).clone()
    if quantize:  # many exact ties
        lp = torch.round(lp * 2) / 2
    scores = torch.randn(batch, B, generator=g)
    if quantize:
        scores = torch.round(scores)
    if first_step:  # one live beam per group, the copies dead
        scores = torch.full((batch, B), NEG)
        scores[:, :: B // G] = 0.0
    return lp.to(dtype), scores


def brute_force(lp, scores, G, lam):
    """Vijayakumar et al. Alg. 1 with Hamming diversity, as Python loops over candidates."""
    batch, B, V = lp.shape
    per = B // G
    out = []
    for bt in range(batch):
        picks, chosen = [], []
        for g in range(G):
            cands = []
            for r in range(per):
                b = g * per + r
                for v in range(V):
                    x = float(scores[bt, b]) + float(lp[bt, b, v])
                    cands.append((-(x - lam * chosen.count(v)), r * V + v, b, v, x))
            cands.sort(key=lambda c: (c[0], c[1]))  # penalized desc, then lower flat index
            for c in cands[:per]:
                picks.append((c[2], c[3], c[4], -c[0]))
            chosen += [c[3] for c in cands[:per]]
        out.append(picks)
    return out


def as_lists(out):
    return [list(zip(out.parents[i].tolist(), out.tokens[i].tolist(),
                     out.scores[i].tolist(), out.selection_scores[i].tolist()))
            for i in range(out.tokens.shape[0])]


# ---------------------------------------------------------------- reference semantics (torch)


@pytest.mark.parametrize("G,lam", [(1, 0.0), (2, 0.5), (4, 0.5), (4, 3.0)])
def test_reference_matches_algorithm(db, G, lam):
    lp, scores = make_case(2, 4, 6, seed=G, identical=True)
    got = as_lists(db.diverse_beam_step_naive(lp, scores, G, lam))
    want = brute_force(lp, scores, G, lam)
    for g_row, w_row in zip(got, want):
        assert [p[:2] for p in g_row] == [p[:2] for p in w_row]
        for a, b in zip(g_row, w_row):
            assert a[2] == pytest.approx(b[2], abs=1e-5) and a[3] == pytest.approx(b[3], abs=1e-5)


def test_reference_lambda_zero_is_beam_search_per_group(db):
    lp, scores = make_case(3, 6, 10, seed=1)
    out = db.diverse_beam_step_naive(lp, scores, 3, 0.0)
    for g in range(3):
        x = (scores[:, 2 * g:2 * g + 2, None] + lp[:, 2 * g:2 * g + 2]).reshape(3, -1)
        torch.testing.assert_close(out.scores[:, 2 * g:2 * g + 2], x.topk(2).values)
    assert torch.equal(out.scores, out.selection_scores)


def test_reference_penalty_counts_repeats_and_is_not_stored(db):
    # 3 groups of one beam each, identical beams, logits (3, 2, 0): token 0 leads token 1
    # by 1.0 and token 2 by 3.0.
    lp = torch.log_softmax(torch.tensor([[[3.0, 2.0, 0.0]] * 3]), -1)
    zero = torch.zeros(1, 3)
    # lambda 0.3: penalties 0.3 then 0.6 never beat the 1.0 lead
    assert db.diverse_beam_step_naive(lp, zero, 3, 0.3).tokens.tolist() == [[0, 0, 0]]
    # lambda 0.6: group 1 (count 1, 0.6) keeps token 0; group 2 (count 2, 1.2) moves to 1
    out = db.diverse_beam_step_naive(lp, zero, 3, 0.6)
    assert out.tokens.tolist() == [[0, 0, 1]]
    # lambda 1.5: group 1 moves to token 1; group 2 sees 0 and 1 once each, back to 0
    assert db.diverse_beam_step_naive(lp, zero, 3, 1.5).tokens.tolist() == [[0, 1, 0]]
    # the running score is the log-probability, the penalty only in selection_scores
    torch.testing.assert_close(out.scores[0], lp[0, 0][out.tokens[0]])
    torch.testing.assert_close(out.selection_scores[0],
                               lp[0, 0][out.tokens[0]] - torch.tensor([0.0, 0.6, 0.0]))


def test_reference_ties_lower_flat_index_first(db):
    lp = torch.zeros(1, 4, 3)  # everything ties
    out = db.diverse_beam_step_naive(lp, torch.zeros(1, 4), 2, 0.0)
    assert out.parents.tolist() == [[0, 0, 2, 2]] and out.tokens.tolist() == [[0, 1, 0, 1]]
    out = db.diverse_beam_step_naive(lp, torch.zeros(1, 4), 2, 1.0)  # group 1 avoids 0, 1
    assert out.parents.tolist() == [[0, 0, 2, 3]] and out.tokens.tolist() == [[0, 1, 2, 2]]


def test_reference_dead_beams_and_banned_tokens(db):
    lp = torch.full((1, 4, 3), NEG)
    lp[0, 0, 1] = -1.0  # one finite continuation in group 0 (beams 0, 1)
    scores = torch.tensor([[0.0, NEG, 0.0, 0.0]])
    lp[0, 2:] = torch.log_softmax(torch.tensor([1.0, 0.0, -1.0]), 0)
    out = db.diverse_beam_step_naive(lp, scores, 2, 0.5)
    assert out.tokens[0, :2].tolist() == [1, 0] and out.parents[0, :2].tolist() == [0, 0]
    assert out.scores[0, 0] == -1.0 and torch.isneginf(out.scores[0, 1])


def test_reference_input_errors(db):
    lp, scores = make_case(1, 6, 5)
    f = db.diverse_beam_step_naive
    with pytest.raises(ValueError, match="multiple of num_groups"):
        f(lp, scores, 4, 0.5)
    with pytest.raises(ValueError, match="diversity_penalty"):
        f(lp, scores, 2, -0.1)
    with pytest.raises(ValueError, match="diversity_penalty"):
        f(lp, scores, 2, float("inf"))
    with pytest.raises(ValueError, match="num_groups"):
        f(lp, scores, 0, 0.5)
    with pytest.raises(ValueError, match="beam_scores"):
        f(lp, scores[:, :5], 2, 0.5)
    with pytest.raises(ValueError, match="logprobs must be"):
        f(lp[0], scores, 2, 0.5)


def test_public_function_on_cpu_uses_torch_path(db, monkeypatch):
    lp, scores = make_case(2, 8, 30, seed=3)
    ref = db.diverse_beam_step_naive(lp, scores, 4, 0.5)
    monkeypatch.setitem(sys.modules, db.__name__ + ".triton_diverse_beam", None)
    for backend in ("auto", "torch"):
        got = db.diverse_beam_step(lp, scores, 4, 0.5, backend=backend)
        for name, a, b in zip(ref._fields, ref, got):
            assert torch.equal(a, b), name
    with pytest.raises(ValueError, match="multiple of num_groups"):
        db.diverse_beam_step(lp, scores, 3, 0.5)


# ---------------------------------------------------------------- Triton vs reference
# stage 1: batch*B x chunks programs; stage 2: batch programs.

CASES = {
    # batch 1, 5 beams in 5 groups of one, vocabulary not a multiple of block_v
    "batch1_B5_G5": dict(shape=(1, 5, 37), G=5, lam=0.5, kw=dict(block_v=16, num_v_chunks=2)),
    # identical beams: every later group is penalized; 3 vocabulary chunks
    "identical_G4": dict(shape=(2, 8, 100), G=4, lam=0.5, identical=True,
                         kw=dict(block_v=16, num_v_chunks=3)),
    # exact ties everywhere (quantized scores), one group
    "ties_G1": dict(shape=(2, 4, 40), G=1, lam=0.0, quantize=True, kw=dict(block_v=16)),
    # ties + penalty + first step (dead copies at -inf)
    "first_step_ties": dict(shape=(1, 6, 25), G=3, lam=1.0, quantize=True, first_step=True,
                            identical=True, kw=dict(block_v=16, num_v_chunks=2)),
    # uniform distributions: whole tiles of exact ties, only the index rule decides
    "all_tied": dict(shape=(1, 4, 40), G=2, lam=0.5, flat=True, kw=dict(block_v=16)),
    # fewer tokens than beams: V < B
    "V_lt_B": dict(shape=(2, 8, 3), G=2, lam=0.5, identical=True, kw=dict(block_v=16)),
}


@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("name", list(CASES))
def test_triton_matches_reference_exactly(db, db_triton, device, name, dtype):
    c = CASES[name]
    lp, scores = make_case(*c["shape"], seed=list(CASES).index(name), dtype=dtype,
                           identical=c.get("identical", False), quantize=c.get("quantize", False),
                           first_step=c.get("first_step", False), G=c["G"],
                           flat=c.get("flat", False))
    ref = db.diverse_beam_step_naive(lp, scores, c["G"], c["lam"])
    got = db_triton.diverse_beam_step_triton(lp.to(device), scores.to(device), c["G"], c["lam"],
                                             **c["kw"])
    for name_, a, b in zip(ref._fields, ref, got):
        assert not torch.isnan(b).any() if b.is_floating_point() else True, name_
        assert torch.equal(a, b.cpu()), f"{name_}:\n{a}\n{b}"


def test_triton_rejects_bad_groups(db_triton, device):
    lp, scores = make_case(1, 6, 5)
    with pytest.raises(ValueError, match="multiple of num_groups"):
        db_triton.diverse_beam_step_triton(lp.to(device), scores.to(device), 4, 0.5)


def test_public_function_backend_triton(db, device):
    lp, scores = make_case(1, 4, 20, seed=11)
    ref = db.diverse_beam_step_naive(lp, scores, 2, 0.5)
    got = db.diverse_beam_step(lp.to(device), scores.to(device), 2, 0.5, backend="triton")
    for name, a, b in zip(ref._fields, ref, got):
        assert torch.equal(a, b.cpu()), name
