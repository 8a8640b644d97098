"""Long sums and the rounding of their float64 results: numerics.narrow rounds a double once to
a 16-bit float type, as the kernels store one (oc::cvt<double, T>)."""
from __future__ import annotations

import numpy as np
import pytest
from helpers.util import BF16

from onnx_cupy.core import numerics

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")


def test_narrow_rounds_once(rng):
    """numerics.narrow: float16 as NumPy's direct float64 conversion (single rounding), also
    near ties, infinities, NaN and subnormals; float32 and float64 by astype."""
    halves = rng.integers(0, 0x7C00, 20000).astype(np.uint16).view(np.float16).astype(np.float64)
    nudge = np.spacing(halves) * rng.choice([-1, 1], halves.size) * rng.integers(0, 3, halves.size)
    v = np.concatenate([halves + np.spacing(np.float16(halves)).astype(np.float64) / 2 + nudge,
                        -halves, [np.inf, -np.inf, 1e300, -1e-300, 0.0, -0.0]])
    assert numerics.narrow(v, np.float16).tobytes() == v.astype(np.float16).tobytes()
    assert np.isnan(numerics.narrow(np.array([np.nan]), BF16)[0])
    assert numerics.narrow(v, np.float32).tobytes() == v.astype(np.float32).tobytes()
