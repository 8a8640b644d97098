"""Hardmax's inputs in other layouts: a big-endian 16-bit float is ranked by its value on the
NumPy path (its int16 keys read in its byte order), as its native copy is."""
from __future__ import annotations

import numpy as np
import pytest

import onnx_cupy as oc


# (ml_dtypes' bfloat16 compares and casts across byte orders as if they were one: not here)
@pytest.mark.parametrize("dtype", [np.dtype(np.float16), np.dtype(np.float32)])
@pytest.mark.parametrize("axis", [0, -1])
def test_big_endian_input_on_the_numpy_path(rng, dtype, axis):
    x = rng.standard_normal((5, 7)).astype(dtype)
    with oc.backend("numpy"):
        want = oc.hardmax(x, axis=axis)
        got = oc.hardmax(x.astype(x.dtype.newbyteorder(">")), axis=axis)
    np.testing.assert_array_equal(got.astype(want.dtype), want)
    assert (got == 1).sum() == x.size // x.shape[axis]
