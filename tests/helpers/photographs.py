"""Photograph-like inputs and the peers' default comparison, for the differential tests at real
sizes: smooth gradients and blobs with fine texture and noise, as 8-bit values 0-255, and the
share of elements within a dtype's default torch.testing.assert_close tolerance."""
from __future__ import annotations

from typing import Any

import numpy as np

# torch.testing.assert_close's default (rtol, atol) per dtype
DEFAULT_TOLERANCE = {"float16": (1e-3, 1e-5), "bfloat16": (1.6e-2, 1e-5),
                     "float32": (1.3e-6, 1e-5), "float64": (1e-7, 1e-7)}
SHARE = 0.999   # the least share of elements within that tolerance


def photograph(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any) -> np.ndarray:
    """(N, C, H, W) values 0-255 (integers, exact in every float dtype): per plane a gradient,
    a few soft blobs, a fine sinusoidal texture and noise."""
    n, c, h, w = shape
    yy, xx = np.meshgrid(np.linspace(0, 1, h), np.linspace(0, 1, w), indexing="ij")
    planes = np.empty(shape)
    for i in range(n):
        for j in range(c):
            a, b = rng.uniform(-1, 1, 2)
            v = 128 + 60 * (a * xx + b * yy)
            for _ in range(4):
                cy, cx, r, k = rng.uniform(0, 1), rng.uniform(0, 1), rng.uniform(0.05, 0.3), \
                    rng.uniform(-90, 90)
                v += k * np.exp(-((yy - cy) ** 2 + (xx - cx) ** 2) / (2 * r * r))
            v += 20 * np.sin(2 * np.pi * (rng.uniform(8, 40) * xx + rng.uniform(8, 40) * yy))
            planes[i, j] = v + rng.normal(0, 6, (h, w))
    return np.clip(np.rint(planes), 0, 255).astype(dtype)


def within(got: np.ndarray, expected: np.ndarray) -> tuple[float, float]:
    """(share of elements within the default tolerance of expected's dtype, largest absolute
    difference); shapes and dtypes must agree."""
    assert got.shape == expected.shape and got.dtype == expected.dtype, (
        got.shape, got.dtype, expected.shape, expected.dtype)
    rtol, atol = DEFAULT_TOLERANCE[expected.dtype.name]
    a, b = got.astype(np.float64), expected.astype(np.float64)
    close = np.abs(a - b) <= atol + rtol * np.abs(b)
    return float(close.mean()) if close.size else 1.0, float(np.abs(a - b).max(initial=0.0))


def assert_mostly_close(got: np.ndarray, expected: np.ndarray, share: float = SHARE) -> float:
    """At least `share` of the elements within the default tolerance; returns the share."""
    reached, largest = within(got, expected)
    assert reached >= share, (f"{reached:.5%} of {expected.size} elements within the default "
                              f"tolerance of {expected.dtype} (largest difference {largest:.3g})")
    return reached
