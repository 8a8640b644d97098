"""The pooling family's gradients (pool.api.gradient) against their definition, written here as
loops: every output, in row-major order, adds its share to the elements of its window, from +0
in the accumulation type (float32, float64 for float64), each term rounded to it, the sum
rounded once to X's dtype. The NumPy path gives the loops' bits; the emulated and cupy paths
(the kernels) give the same bits given the same forward output (Y or Indices)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest
from helpers.util import random, to_backend, to_numpy

import onnx_cupy as oc
from onnx_cupy.pool import api

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def accumulation(dtype: np.dtype) -> np.dtype:
    return np.dtype(np.float64 if np.dtype(dtype) == np.float64 else np.float32)


def assert_same_bits(got, want) -> None:
    """One shape and dtype, the same bits everywhere but at NaNs, which must be NaNs in both
    (a NaN's payload is the hardware's)."""
    got, want = to_numpy(got), to_numpy(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype,
                                                                  want.shape, want.dtype)
    g, w = got.astype(np.float64), want.astype(np.float64)
    nan = np.isnan(w)
    assert np.array_equal(np.isnan(g), nan), "NaNs differ"
    words = np.dtype(f"u{got.dtype.itemsize}")
    differ = (got.view(words) != want.view(words)) & ~nan
    assert not differ.any(), (f"{differ.sum()} of {got.size} elements differ, first at "
                              f"{np.argwhere(differ)[0]}: {g[differ][:4]} != {w[differ][:4]}")


def gradient(backend: str, op: str, x, dy, parts, saved=None, out=None):
    with oc.backend(backend):
        return api.gradient(op, to_backend(x, backend), to_backend(dy, backend), parts,
                            saved=None if saved is None else to_backend(saved, backend),
                            out=out)


# ------------------------------------------------------------------------- adaptive pools

def adaptive_windows(n: int, m: int) -> list[range]:
    """The input positions output o of an axis (input n, output m) reduces."""
    return [range(o * n // m, -(-(o + 1) * n // m)) for o in range(m)]


def adaptive_definition(op: str, x: np.ndarray, dy: np.ndarray, indices: np.ndarray | None,
                        sizes: tuple[int, ...]) -> np.ndarray:
    """dX by loops: each output o, row-major, adds dY[o] / len_1(o) / ... (the mean) to every
    element of its window, or dY[o] to the element its index (within the plane) names."""
    acc = accumulation(x.dtype).type
    spatial = x.shape[2:]
    sums = np.zeros(x.shape, acc)
    windows = [adaptive_windows(n, m) for n, m in zip(spatial, sizes)]
    for nc in itertools.product(*map(range, x.shape[:2])):
        for o in itertools.product(*map(range, sizes)):
            window = list(itertools.product(*(w[i] for w, i in zip(windows, o))))
            term = acc(dy[nc + o])
            if op == "AdaptiveAveragePool":
                for w, i in zip(windows, o):
                    term = acc(term / acc(len(w[i])))
                for p in window:
                    sums[nc + p] = acc(sums[nc + p] + term)
            else:
                p = np.unravel_index(int(indices[nc + o]), spatial)
                if p in window:
                    sums[nc + p] = acc(sums[nc + p] + term)
    return sums.astype(x.dtype)


ADAPTIVE = [((2, 3, 7), (3,)), ((1, 2, 5), (13,)), ((2, 2, 2, 3), (5, 7)),
            ((1, 3, 3, 5), (7, 4)), ((2, 1, 7, 5), (3, 2)), ((1, 2, 2, 2, 3), (5, 3, 7)),
            ((1, 1, 4, 3, 5), (2, 6, 2))]


@pytest.mark.parametrize("shape, sizes", ADAPTIVE, ids=str)
@pytest.mark.parametrize("op", ["AdaptiveAveragePool", "AdaptiveMaxPool"])
def test_adaptive_against_the_definition(backend, rng, op, shape, sizes):
    """Growing axes (windows that start together and overlap) included: every element takes
    its terms in row-major output order on every path."""
    x = random(rng, shape, np.float32)
    _, indices = api.adaptive_pool("AdaptiveMaxPool", x, sizes, return_indices=True)
    dy = random(rng, indices.shape, np.float32)
    saved = indices if op == "AdaptiveMaxPool" else None
    want = adaptive_definition(op, x, dy, indices, sizes)
    assert_same_bits(gradient(backend, op, x, dy, (sizes,), saved), want)
