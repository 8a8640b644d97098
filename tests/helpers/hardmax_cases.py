"""Hardmax inputs shared by the Hardmax tests: random rows with ties, NaN and infinities, and rows
that pin down each ranking rule."""
from __future__ import annotations

import numpy as np


def sample(rng: np.random.Generator, shape: tuple[int, ...], dtype, special: bool = True):
    """Small integers (frequent ties), some distinct fractions and, if `special`, NaN (both signs)
    and +/-inf; every value exact in every float dtype."""
    x = rng.integers(-4, 5, size=shape).astype(np.float64)
    mask = rng.random(shape)
    x = np.where(mask < 0.3, rng.integers(-64, 64, size=shape) / 8.0, x)
    if special:
        x[mask > 0.97] = np.nan
        x[(mask > 0.94) & (mask <= 0.95)] = -np.nan
        x[(mask > 0.95) & (mask <= 0.97)] = rng.choice([np.inf, -np.inf])
    return x.astype(dtype)


def rule_rows(n: int, tiny: float) -> tuple[np.ndarray, list[int]]:
    """Rows of length n testing first-maximum, NaN, signed-zero and subnormal rules (`tiny`: the
    dtype's smallest subnormal, which must not tie with zero); expected indices."""
    nan, neg_nan, inf = np.nan, -np.nan, np.inf
    a, b = 2, n - 1  # two positions, in different scan lanes for long rows
    cases = [
        ({a: 3, b: 3}, -1.0, a),                # equal maxima: first wins
        ({b: 3, a: 2}, -1.0, b),
        ({}, 1.0, 0),                           # all equal
        ({a: nan, b: nan}, 1.0, a),             # first NaN wins
        ({b: nan, a: inf}, 1.0, b),             # NaN beats +inf
        ({a: neg_nan}, 5.0, a),                 # a NaN with the sign bit set is still NaN
        ({b: neg_nan, a: nan}, 0.0, a),
        ({}, -inf, 0),                          # all -inf: first
        ({a: inf, b: inf}, 0.0, a),
        ({a: -inf, b: nan}, -inf, b),
        ({a: 0.0, b: -0.0}, -1.0, a),           # -0 == +0: first wins
        ({a: -0.0, b: 0.0}, -1.0, a),
        ({b: tiny}, 0.0, b),                    # a subnormal is not zero
        ({a: -tiny, b: 0.0}, -1.0, b),
        ({a: tiny, b: 2 * tiny}, -tiny, b),
    ]
    rows = np.empty((len(cases), n))
    for row, (marks, fill, _) in zip(rows, cases):
        row[:] = fill
        for k, v in marks.items():
            row[k] = v
    return rows, [idx for _, _, idx in cases]
