"""copy_attention: semantics of the torch reference; Triton (interpreted on CPU) vs reference."""
from __future__ import annotations

import math
import sys

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed (pip install '.[gpu]')")

# Tolerances (absolute and relative, on log-probabilities, attention and context). Both
# paths see the same inputs in the same dtype and accumulate in fp32 (products of fp16/bf16
# values are exact in fp32), so they differ only by summation order: ~1e-6 on these sizes.
TOL = {torch.float32: 1e-5, torch.float16: 1e-4, torch.bfloat16: 1e-4}


def make_case(B, S, H, V, n_oov, *, dtype=torch.float32, seed=0, bias=True, empty_rows=(),
              shared_source=False, flat=False):
    g = torch.Generator().manual_seed(seed)
    s = torch.randn(B, H, generator=g)
    if shared_source:  # beams of one source: h is an expanded view (batch stride 0)
        h = torch.randn(1, S, H, generator=g).expand(B, S, H)
    else:
        h = torch.randn(B, S, H, generator=g)
    W_o = torch.randn(V, H, generator=g) / math.sqrt(H)
    b_o = torch.randn(V, generator=g) if bias else None
    W_c = torch.randn(H, H, generator=g) / math.sqrt(H)
    if flat:  # every generation score 0: whole tiles of exact ties
        W_o = torch.zeros(V, H)
        b_o = torch.zeros(V) if bias else None
    ids = torch.randint(0, V + n_oov, (B, S), generator=g)
    if S >= 3:
        ids[:, 1] = ids[:, 0]  # a repeated source word: its copy mass sums two positions
    if n_oov:
        ids[:, -1] = V + (torch.arange(B) % n_oov)  # an OOV word in each row (if unmasked)
    lengths = torch.randint(1, S + 1, (B,), generator=g)
    mask = torch.arange(S)[None, :] < lengths[:, None]
    for r in empty_rows:
        mask[r] = False
    ids = ids.masked_fill(~mask, 0)  # padding id; ignored
    def cast(t):
        return None if t is None else t.to(dtype)

    return dict(s=cast(s), h=cast(h), src_ids=ids, src_mask=mask, W_o=cast(W_o),
                b_o=cast(b_o), W_c=cast(W_c), n_oov=n_oov)


def to(case, device):
    return {k: (v.to(device) if isinstance(v, torch.Tensor) else v) for k, v in case.items()}


def assert_close(name, got, ref, tol):
    got, ref = got.float().cpu(), ref.float().cpu()
    assert not torch.isnan(got).any(), f"{name}: NaN in the Triton output"
    assert not torch.isnan(ref).any(), f"{name}: NaN in the reference"
    fin = torch.isfinite(ref)
    assert torch.equal(fin, torch.isfinite(got)), f"{name}: -inf pattern differs"
    assert torch.equal(ref[~fin], got[~fin]), f"{name}: infinite values differ"
    torch.testing.assert_close(got[fin], ref[fin], atol=tol, rtol=tol, msg=lambda m: f"{name}: {m}")


def assert_topk(ref_logp, ref_v, ref_i, got_v, got_i, tol):
    """Same values; same ids except where two entries tie within ``tol`` (exact ties,
    e.g. -inf entries, must follow the lower-id rule exactly)."""
    ref_logp, ref_v, ref_i = ref_logp.cpu(), ref_v.cpu(), ref_i.cpu()
    got_v, got_i = got_v.cpu(), got_i.cpu()
    assert got_i.dtype == torch.int64
    assert_close("topk_values", got_v, ref_v, tol)
    for row in range(got_i.shape[0]):
        assert len(set(got_i[row].tolist())) == got_i.shape[1], "duplicate ids in a top-k row"
    at_got = ref_logp.gather(1, got_i)  # the reference value of each returned id
    assert_close("logp[topk_indices]", at_got, ref_v, tol)  # ids may swap only within tol
    neg = ~torch.isfinite(ref_v)
    assert torch.equal(got_i[neg], ref_i[neg]), "-inf entries must come lowest id first"


def run_both(ca, ca_triton, case, k, device, **kw):
    ref = ca.copy_attention_step_naive(**case, k=k)
    got = ca_triton.copy_attention_step_triton(**to(case, device), k=k, **kw)
    return ref, got


def check(ref, got, tol, logprobs=True):
    if logprobs:
        assert_close("logprobs", got.logprobs, ref.logprobs, tol)
    else:
        assert got.logprobs is None
    assert_close("attn", got.attn, ref.attn, tol)
    assert_close("context", got.context, ref.context, tol)
    assert_topk(ref.logprobs, ref.topk_values, ref.topk_indices, got.topk_values,
                got.topk_indices, tol)


@pytest.fixture(scope="module")
def ca(load):
    return load("copy_attention")


@pytest.fixture(scope="module")
def ca_triton(load, device):
    return load("copy_attention.triton_copy_attention")


# ---------------------------------------------------------------- reference semantics (torch)


def brute_force(case, k):
    """Gu et al. Eq. 4-6 written out with Python loops in float64."""
    s, h, W_o, W_c = (case[n].double() for n in ("s", "h", "W_o", "W_c"))
    b_o = case["b_o"].double() if case["b_o"] is not None else torch.zeros(W_o.shape[0]).double()
    ids, mask, n_oov = case["src_ids"], case["src_mask"], case["n_oov"]
    B, S, _ = h.shape
    V = W_o.shape[0]
    out = torch.empty(B, V + n_oov, dtype=torch.float64)
    for b in range(B):
        mass = [math.exp(float(W_o[v] @ s[b] + b_o[v])) for v in range(V)] + [0.0] * n_oov
        for j in range(S):
            if mask[b, j]:
                mass[int(ids[b, j])] += math.exp(float(torch.tanh(h[b, j] @ W_c) @ s[b]))
        z = sum(mass)
        out[b] = torch.tensor([math.log(m / z) if m > 0 else -math.inf for m in mass])
    return out


def test_reference_matches_copynet_formula(ca):
    case = make_case(3, 5, 6, 9, 2, seed=1, empty_rows=(2,))
    out = ca.copy_attention_step_naive(**case, k=4)
    torch.testing.assert_close(out.logprobs.double(), brute_force(case, 4), atol=1e-5, rtol=1e-5)
    # a proper distribution over the extended vocabulary, rows with and without a source
    torch.testing.assert_close(out.logprobs.logsumexp(1), torch.zeros(3), atol=1e-6, rtol=0)


def test_reference_all_masked_row_is_generation_only(ca):
    case = make_case(2, 4, 8, 11, 3, seed=2, empty_rows=(0, 1))
    out = ca.copy_attention_step_naive(**case, k=5)
    gen = torch.log_softmax(case["s"] @ case["W_o"].T + case["b_o"], dim=1)
    torch.testing.assert_close(out.logprobs[:, :11], gen)
    assert torch.isneginf(out.logprobs[:, 11:]).all()  # no OOV word can be produced
    assert torch.equal(out.attn, torch.zeros(2, 4))
    assert torch.equal(out.context, torch.zeros(2, 8))


def test_reference_oov_slots_absent_from_source_are_neg_inf(ca):
    case = make_case(1, 3, 4, 5, 4, seed=3)
    case["src_ids"] = torch.tensor([[1, 6, 6]])  # OOV slot V+1 only
    case["src_mask"] = torch.ones(1, 3, dtype=torch.bool)
    lp = ca.copy_attention_step_naive(**case, k=3).logprobs[0]
    assert torch.isfinite(lp[:5]).all() and torch.isfinite(lp[6])
    assert torch.isneginf(lp[[5, 7, 8]]).all()


def test_reference_ties_lower_id_first(ca):
    case = make_case(2, 3, 4, 8, 2, seed=4, bias=False)
    case["W_o"] = torch.zeros(8, 4)  # every generation score is 0: all in-vocab ids tie
    case["src_mask"] = torch.zeros(2, 3, dtype=torch.bool)
    out = ca.copy_attention_step_naive(**case, k=10)  # 8 tied finite entries, then 2 x -inf
    assert out.topk_indices.tolist() == [list(range(10))] * 2
    assert torch.isneginf(out.topk_values[:, 8:]).all()


def test_reference_input_errors(ca):
    case = make_case(2, 3, 4, 5, 1, seed=5)
    f = ca.copy_attention_step_naive
    with pytest.raises(ValueError, match="k must be"):
        f(**case, k=7)
    with pytest.raises(ValueError, match="src_ids at real positions"):
        f(**{**case, "src_ids": case["src_ids"].masked_fill(case["src_mask"], 6)}, k=2)
    with pytest.raises(ValueError, match="share one dtype"):
        f(**{**case, "W_c": case["W_c"].half()}, k=2)
    with pytest.raises(ValueError, match="h must be"):
        f(**{**case, "h": case["h"][:, :, :3]}, k=2)
    with pytest.raises(ValueError, match="bool"):
        f(**{**case, "src_mask": case["src_mask"].long()}, k=2)


def test_public_function_on_cpu_uses_torch_path(ca, monkeypatch):
    case = make_case(3, 6, 8, 20, 2, seed=6, empty_rows=(1,))
    ref = ca.copy_attention_step_naive(**case, k=5)
    # any import of the Triton module would now raise ImportError
    monkeypatch.setitem(sys.modules, ca.__name__ + ".triton_copy_attention", None)
    for backend in ("auto", "torch"):
        got = ca.copy_attention_step(**case, k=5, backend=backend)
        for name, a, b in zip(ref._fields, ref, got):
            assert torch.equal(a, b), name
    with pytest.raises(ValueError, match="backend"):
        ca.copy_attention_step(**case, k=5, backend="cuda")


# ---------------------------------------------------------------- Triton vs reference
# Each case keeps the interpreter to a few dozen programs (kernel 1: B programs; kernel 2:
# ceil(B/16) x chunks; kernel 3: B x normalization chunks).

CASES = {
    # batch 1, vocabulary not a multiple of block_v, two vocabulary chunks
    "batch1": dict(shape=(1, 5, 16, 100, 2), k=5, kw=dict(block_v=32, num_v_chunks=2)),
    # odd lengths, repeated tokens, an all-masked row, 3 chunks, 2 normalization chunks
    "odd": dict(shape=(5, 7, 24, 300, 4), k=10, empty_rows=(1,),
                kw=dict(block_v=64, num_v_chunks=3, norm_chunks=2)),
    # k larger than the finite entries: V + present OOVs < k <= V + n_oov
    "k_over_finite": dict(shape=(3, 3, 8, 6, 8), k=12, empty_rows=(2,), kw=dict(block_v=16)),
    # H < 16 and S = 1 (tl.dot padding), shared (expanded) encoder states, no bias,
    # int32 ids, W_o as a transposed view (strides (1, V))
    "tiny_shared": dict(shape=(4, 1, 5, 40, 1), k=3, bias=False, shared=True, odd_layout=True,
                        kw=dict(block_v=16, num_v_chunks=2)),
    # exact ties over the whole vocabulary (plus the copied ids above them)
    # (the tied values are exactly 0 on both paths, so the ids must match exactly)
    "flat": dict(shape=(2, 3, 16, 70, 1), k=6, flat=True, exact_ids=True,
                 kw=dict(block_v=32, num_v_chunks=2)),
    # every row masked: generation only
    "all_masked": dict(shape=(2, 4, 16, 50, 2), k=4, empty_rows=(0, 1), kw=dict(block_v=32)),
}


# gemm="torch": psi_g from one cuBLAS/ATen addmm, read by kernel 2 (the default for fp32 beyond
# 32 rows); "fused": tl.dot inside kernel 2
@pytest.mark.parametrize("gemm", ["fused", "torch"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
@pytest.mark.parametrize("name", list(CASES))
def test_triton_matches_reference(ca, ca_triton, device, name, dtype, gemm):
    c = CASES[name]
    case = make_case(*c["shape"], dtype=dtype, seed=list(CASES).index(name),
                     bias=c.get("bias", True), empty_rows=c.get("empty_rows", ()),
                     shared_source=c.get("shared", False), flat=c.get("flat", False))
    if c.get("odd_layout"):
        case["src_ids"] = case["src_ids"].int()
        case["W_o"] = case["W_o"].T.contiguous().T
        assert case["W_o"].stride() == (1, case["W_o"].shape[0])
    ref, got = run_both(ca, ca_triton, case, c["k"], device, gemm=gemm, **c["kw"])
    check(ref, got, TOL[dtype])
    if c.get("exact_ids"):
        assert torch.equal(got.topk_indices.cpu(), ref.topk_indices)


def test_triton_without_logprobs(ca, ca_triton, device):
    case = make_case(3, 5, 16, 70, 2, seed=7)
    ref, got = run_both(ca, ca_triton, case, 4, device, return_logprobs=False, block_v=32)
    check(ref, got, TOL[torch.float32], logprobs=False)


def test_triton_unchecked_out_of_range_ids_are_dropped(ca, ca_triton, device):
    case = make_case(2, 4, 16, 30, 1, seed=8)
    case["src_ids"][:, 0] = 99  # outside [0, 31) at a real position (length >= 1)
    ref = ca.copy_attention_step_naive(**case, k=3, check_ids=False)
    got = ca_triton.copy_attention_step_triton(**to(case, device), k=3, check_ids=False,
                                               block_v=32)
    check(ref, got, TOL[torch.float32])


def test_triton_bf16_on_gpu(ca, ca_triton, gpu):
    case = make_case(5, 7, 24, 300, 4, dtype=torch.bfloat16, seed=9, empty_rows=(1,))
    ref, got = run_both(ca, ca_triton, case, 10, gpu)
    check(ref, got, TOL[torch.bfloat16])


def test_triton_rejects_unknown_gemm(ca_triton, device):
    case = make_case(2, 3, 16, 40, 1, seed=3)
    with pytest.raises(ValueError, match="gemm must be"):
        ca_triton.copy_attention_step_triton(**to(case, device), k=3, gemm="cublas")


def test_triton_rejects_large_k(ca_triton, device):
    case = make_case(1, 2, 4, 300, 0, seed=10)
    with pytest.raises(ValueError, match="k <= 256"):
        ca_triton.copy_attention_step_triton(**to(case, device), k=257)


def test_public_function_backend_triton(ca, device):
    case = make_case(2, 3, 16, 40, 1, seed=11)
    ref = ca.copy_attention_step_naive(**case, k=3)
    got = ca.copy_attention_step(**to(case, device), k=3, backend="triton")
    check(ref, got, TOL[torch.float32])


# ---------------------------------------------------------------- separate query, no W_c
# The decoder's layout (pysynth.decoding.backends): generation reads a readout layer r_t of
# width Hg, attention and copy read the decoder state s_t (the query) of width Hq, and h
# holds the copy features tanh(h_j^T W_c) computed at encoding time (W_c=None).


def make_query_case(B, S, Hg, Hq, V, n_oov, *, seed=0, with_wc=False, dtype=torch.float32):
    case = make_case(B, S, Hq, V, n_oov, seed=seed, dtype=dtype)
    g = torch.Generator().manual_seed(100 + seed)
    case["query"] = case["s"]
    case["s"] = torch.randn(B, Hg, generator=g).to(dtype)
    case["W_o"] = (torch.randn(V, Hg, generator=g) / math.sqrt(Hg)).to(dtype)
    if not with_wc:
        case["h"] = torch.tanh(case["h"].float()).to(dtype)  # copy features lie in (-1, 1)
        case["W_c"] = None
    return case


def test_reference_query_and_precomputed_copy_features(ca):
    case = make_query_case(3, 5, 7, 6, 9, 2, seed=12)
    out = ca.copy_attention_step_naive(**case, k=4)
    # Gu et al. Eq. 4-6 with psi_g = W_o r + b and psi_c(j) = h_j . q
    W_o, b_o, r, q, h = (case[n].double() for n in ("W_o", "b_o", "s", "query", "h"))
    ids, mask, V = case["src_ids"], case["src_mask"], 9
    for b in range(3):
        mass = [math.exp(float(W_o[v] @ r[b] + b_o[v])) for v in range(V)] + [0.0] * 2
        for j in range(5):
            if mask[b, j]:
                mass[int(ids[b, j])] += math.exp(float(h[b, j] @ q[b]))
        z = sum(mass)
        want = torch.tensor([math.log(m / z) if m > 0 else -math.inf for m in mass],
                            dtype=torch.float64)
        torch.testing.assert_close(out.logprobs[b].double(), want, atol=1e-5, rtol=1e-5)
    # W_c given == its copy features tanh(h W_c) precomputed with W_c=None
    wc = make_query_case(3, 5, 7, 6, 9, 2, seed=12, with_wc=True)
    full = ca.copy_attention_step_naive(**wc, k=4)
    feats = torch.tanh(wc["h"] @ wc["W_c"])
    pre = ca.copy_attention_step_naive(**{**wc, "h": feats, "W_c": None}, k=4)
    torch.testing.assert_close(full.logprobs, pre.logprobs)


def test_reference_query_input_errors(ca):
    case = make_query_case(2, 3, 5, 4, 7, 1, seed=13)
    f = ca.copy_attention_step_naive
    with pytest.raises(ValueError, match="h must be"):
        f(**{**case, "query": case["query"][:, :3]}, k=2)
    with pytest.raises(ValueError, match="W_c must be"):
        f(**{**case, "W_c": torch.randn(5, 5)}, k=2)
    with pytest.raises(ValueError, match="W_o must be"):
        f(**{**case, "W_o": torch.randn(7, 4)}, k=2)


@pytest.mark.parametrize("with_wc", [False, True], ids=["features", "W_c"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16], ids=["fp32", "fp16"])
def test_triton_query_matches_reference(ca, ca_triton, device, with_wc, dtype):
    case = make_query_case(5, 7, 20, 12, 90, 3, seed=14, with_wc=with_wc, dtype=dtype)
    for full in (True, False):
        ref, got = run_both(ca, ca_triton, case, 6, device, return_logprobs=full, block_v=32,
                            num_v_chunks=2)
        if full:
            check(ref, got, TOL[dtype])
        else:
            assert got.logprobs is None
            assert_topk(ref.logprobs, ref.topk_values, ref.topk_indices, got.topk_values,
                        got.topk_indices, TOL[dtype])
