"""The configurations drawn for the kernel checker alone (tests/cases/: AffineGrid's,
the adaptive pools' and PyTorch's max_unpool calls; the other families' are the differential
tests') compute the right values: AffineGrid's against the loop oracle on every path, the
adaptive pools' emulated kernels against the NumPy path (which tests/pool/test_adaptive.py holds
to its oracle), max_unpool's against the per-plane loop oracle. One test id per configuration;
those outside the checker's quick subset are slow."""
from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from cases import adaptive, grid, unpool
from helpers import grid_oracle
from helpers.unpool_differential import plane_oracle
from helpers.util import TOL

from onnx_cupy.core import execution

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def _params(configs: list, quick: Callable[[Any], bool]) -> list:
    return [pytest.param(c, id=c.name, marks=() if quick(c) else pytest.mark.slow)
            for c in configs]


AFFINE = _params([grid.affine_configuration(i) for i in range(grid.AFFINE_COUNT)],
                 lambda c: grid.affine_quick(c.index))
ADAPTIVE = _params([adaptive.configuration(i) for i in range(adaptive.COUNT)], adaptive.quick)
PLANES = _params([unpool.plane_configuration(i) for i in range(unpool.PLANE_CONFIGS)],
                 lambda c: unpool.plane_quick(c.index))


@pytest.mark.parametrize("backend", ["numpy", "emulated"])
@pytest.mark.parametrize("config", AFFINE)
def test_affine_grid_configuration(config, backend):
    theta = grid.theta(config)
    saved = theta.copy()
    with execution.backend(backend):
        got = grid.run_affine(config)
    want = grid_oracle.affine_grid(theta, list(config.size), bool(config.align_corners))
    assert got.dtype == theta.dtype and got.shape == want.shape
    rtol, atol = TOL[config.dtype.name]
    np.testing.assert_allclose(got.astype(np.float64), want, rtol=4 * rtol, atol=4 * atol)
    np.testing.assert_array_equal(theta, saved)


def _results(config: adaptive.Config, backend: str) -> list[np.ndarray]:
    with execution.backend(backend):
        result = adaptive.run(config, adaptive.sample(config))
    return list(result) if isinstance(result, tuple) else [result]


@pytest.mark.parametrize("config", ADAPTIVE)
def test_adaptive_configuration(config):
    """The emulated kernel equals the NumPy path: maxima and indices exactly, means within the
    dtype's tolerance (the sums run in another order)."""
    want, got = _results(config, "numpy"), _results(config, "emulated")
    out = (*config.shape[:2], *config.sizes)
    assert [r.shape for r in got] == [r.shape for r in want] == [out] * len(want)
    assert got[0].dtype == config.dtype
    assert len(got) == (2 if config.call in ("adaptive_pool", "adaptive_max_pool_indices")
                        and config.op == "AdaptiveMaxPool" else 1)
    if config.op == "AdaptiveMaxPool":
        assert got[0].tobytes() == want[0].tobytes()
        assert all(np.array_equal(g, w) for g, w in zip(got[1:], want[1:]))
    else:
        rtol, atol = TOL[config.dtype.name]
        np.testing.assert_allclose(got[0].astype(np.float64), want[0].astype(np.float64),
                                   rtol=4 * rtol, atol=4 * atol, equal_nan=True)


@pytest.mark.parametrize("backend", ["numpy", "emulated"])
@pytest.mark.parametrize("config", PLANES)
def test_max_unpool_configuration(config, backend):
    """PyTorch's call: the per-plane oracle's bits (indices outside their plane skipped, where
    the configuration runs the GPU path's call), inputs unchanged."""
    x, indices = unpool.plane_sample(config)
    saved = x.copy(), indices.copy()
    with execution.backend(backend):
        got = unpool.run_plane(config, x, indices)
    batched = x.reshape(config.out_shape[:2] + x.shape[-len(config.kernel):])
    want = plane_oracle(batched, indices.reshape(batched.shape), config.out_shape)
    assert got.dtype == x.dtype and got.tobytes() == want.tobytes()
    assert got.shape == (config.out_shape if x.ndim == len(config.kernel) + 2
                         else config.out_shape[1:])
    assert x.tobytes() == saved[0].tobytes() and np.array_equal(indices, saved[1])
    plane = math.prod(config.out_shape[2:])
    if indices.size and plane:   # (an empty output has no valid index)
        assert config.invalid == bool(indices.min() < 0 or indices.max() >= plane)
