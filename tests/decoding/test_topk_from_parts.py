"""topk_from_parts: compiled kernel == numpy twin == a slow obvious oracle (ties, -inf, floors,
repeated source words, extended columns), and the same ValueErrors. No torch needed."""
from __future__ import annotations

import math

import numpy as np
import pytest

from pysynth.decoding.search import topk_from_parts

from _parity import run_all

FLOOR = np.float32(math.log(1e-12))


def _oracle(ls, shift, touched, src_ext, n_ext, k, floor):
    """Row by row with Python lists: the definition in the docstring, literally."""
    vals, idx = [], []
    for r in range(ls.shape[0]):
        row = [max(np.float32(ls[r, c] + shift[r]), np.float32(floor)) for c in range(ls.shape[1])]
        row += [np.float32(floor)] * n_ext
        for j in range(src_ext.shape[1]):
            row[int(src_ext[r, j])] = touched[r, j]
        order = sorted(range(len(row)), key=lambda c: (-float(row[c]), c))[:k]
        vals.append([row[c] for c in order])
        idx.append(order)
    return np.array(vals, dtype=np.float32).reshape(len(vals), k), np.array(idx, dtype=np.int64).reshape(len(idx), k)


def _case(rng, n, V, S, n_ext, ties=False, neg_inf=False):
    if ties:
        ls = rng.integers(-6, 1, (n, V)).astype(np.float32)
    else:
        ls = (rng.standard_normal((n, V)) * 3 - 8).astype(np.float32)
    if neg_inf and V:
        ls[:, rng.integers(0, V, 3)] = -np.inf
    shift = rng.standard_normal(n).astype(np.float32)
    touched = rng.integers(-8, 1, (n, S)).astype(np.float32) if ties else \
        (rng.standard_normal((n, S)) - 2).astype(np.float32)
    src_ext = rng.integers(0, V + n_ext, (n, S)).astype(np.int64)
    return ls, shift, touched, src_ext


@pytest.mark.parametrize("seed", range(40))
def test_matches_oracle(seed):
    rng = np.random.default_rng(seed)
    n, V = int(rng.integers(1, 6)), int(rng.integers(1, 400))
    S, n_ext = int(rng.integers(0, 7)), int(rng.integers(0, 4))
    ls, shift, touched, src_ext = _case(rng, n, V, S, n_ext, ties=seed % 2 == 0, neg_inf=seed % 5 == 0)
    floor = [FLOOR, -np.inf, np.float32(-3.0)][seed % 3]  # -3: many values clamp to a tie
    k = int(rng.integers(1, min(V + n_ext, 40) + 1))
    got = run_all("decoding", topk_from_parts, ls, shift, touched, src_ext, n_ext, k, floor, 1)
    want = _oracle(ls, shift, touched, src_ext, n_ext, k, floor)
    np.testing.assert_array_equal(got[1], want[1])
    np.testing.assert_array_equal(got[0], want[0])
    assert got[0].dtype == np.float32 and got[1].dtype == np.int64


@pytest.mark.parametrize("seed", range(6))
def test_decoder_sized_rows(seed):
    """8,000 columns, 160 rows, the shapes of a beam-5 step (block pruning engaged)."""
    rng = np.random.default_rng(100 + seed)
    ls, shift, touched, src_ext = _case(rng, 160, 8000, 9, 3, ties=seed % 2 == 1)
    src_ext[:, -2:] = 0  # padding positions hold <pad>
    a = run_all("decoding", topk_from_parts, ls, shift.reshape(-1, 1), touched, src_ext, 3, 16, FLOOR, 1)
    b = run_all("decoding", topk_from_parts, ls, shift, touched, src_ext, 3, 16, FLOOR, 3)  # workers
    np.testing.assert_array_equal(a[0], b[0])
    np.testing.assert_array_equal(a[1], b[1])


def test_repeated_source_words_last_position_wins():
    ls = np.log(np.full((1, 6), 1 / 6, dtype=np.float32))
    touched = np.array([[-0.5, -0.2, -0.9]], dtype=np.float32)
    src_ext = np.array([[4, 7, 4]])  # column 4 twice: the later value (-0.9) counts
    vals, idx = run_all("decoding", topk_from_parts, ls, np.zeros(1, np.float32), touched, src_ext, 2, 8, FLOOR, 1)
    assert idx[0].tolist() == [7, 4, 0, 1, 2, 3, 5, 6]
    assert vals[0, 1] == np.float32(-0.9) and vals[0, -1] == FLOOR


@pytest.mark.parametrize("bad", ["k0", "k_big", "id_neg", "id_big", "nan_ls", "nan_touched", "nan_shift",
                                 "shape_shift", "shape_touched", "ndim", "workers"])
def test_bad_input(bad):
    rng = np.random.default_rng(0)
    ls, shift, touched, src_ext = _case(rng, 3, 50, 4, 2)
    args = dict(ls=ls, shift=shift, touched=touched, src_ext=src_ext, n_ext=2, k=5, floor=FLOOR, workers=1)
    if bad == "k0":
        args["k"] = 0
    elif bad == "k_big":
        args["k"] = 53
    elif bad == "id_neg":
        src_ext[1, 2] = -1
    elif bad == "id_big":
        src_ext[1, 2] = 52
    elif bad == "nan_ls":
        ls[2, 49] = np.nan  # in the partial last block
    elif bad == "nan_touched":
        touched[0, 0] = np.nan
    elif bad == "nan_shift":
        shift[1] = np.nan
    elif bad == "shape_shift":
        args["shift"] = shift[:2]
    elif bad == "shape_touched":
        args["touched"] = touched[:, :3]
    elif bad == "ndim":
        args["ls"] = ls[0]
    elif bad == "workers":
        args["workers"] = 0
    with pytest.raises(ValueError):
        run_all("decoding", topk_from_parts, **args)


def test_nan_in_a_pruned_block_is_found():
    rng = np.random.default_rng(1)
    ls, shift, touched, src_ext = _case(rng, 4, 8000, 3, 0)
    ls[3, 5000] = np.nan  # far below the top values of its row: the kernel must still see it
    with pytest.raises(ValueError, match="NaN"):
        run_all("decoding", topk_from_parts, ls, shift, touched, src_ext, 0, 16, FLOOR, 1)
