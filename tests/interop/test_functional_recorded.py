"""onnx_cupy.nn.functional against PyTorch's second set of recorded results (tests/data/torch/more/,
PyTorch 2.14): interpolate with antialias and align_corners and in mode "area", adaptive average
and max pooling (max with indices), max pooling with indices, lp_pool3d; every case on the
numpy and emulated paths, as the first set's test compares them (float64 within 1e-9 relative,
float32 within 1e-5 relative plus 1e-6 of the largest magnitude; indices exactly)."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import torch_cases

from onnx_cupy.core import execution
from onnx_cupy.nn import functional as F

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning")

FUNCTIONS = ("interpolate", "adaptive_avg_pool1d", "adaptive_avg_pool2d", "adaptive_avg_pool3d",
             "adaptive_max_pool1d", "adaptive_max_pool2d", "adaptive_max_pool3d", "max_pool1d",
             "max_pool2d", "max_pool3d", "lp_pool3d")


def _function(case: dict) -> str:
    return case["call"].split("(")[0].removeprefix("F.")


CASES = torch_cases.cases(lambda c: _function(c) in FUNCTIONS, more=True)


@pytest.mark.parametrize("case", CASES)
def test_recorded_pytorch_result(cpu_backend, case):
    x = torch_cases.arrays(case)[0]
    expected = torch_cases.outputs(case)
    before = x.copy()
    with execution.backend(cpu_backend):
        got = getattr(F, _function(case))(x, *torch_cases.arguments(case),
                                          **torch_cases.keywords(case))
    np.testing.assert_array_equal(x, before)
    got = list(got) if isinstance(got, tuple) else [got]
    assert len(got) == len(expected)
    y, *indices = expected
    assert got[0].shape == y.shape and got[0].dtype == y.dtype, (got[0].shape, got[0].dtype)
    rtol, margin = (1e-5, 1e-6) if y.dtype == np.float32 else (1e-9, 0.0)
    atol = margin * float(np.max(np.abs(y), initial=1.0))
    np.testing.assert_allclose(got[0], y, rtol=rtol, atol=atol, equal_nan=True)
    for mine, theirs in zip(got[1:], indices):
        assert mine.dtype == np.int64
        np.testing.assert_array_equal(mine, theirs)


def test_the_second_set_covers_what_the_request_names():
    """16 antialias + align_corners interpolations, 18 in mode area, 36 adaptive poolings, 24
    max poolings with indices, 6 lp_pool3d."""
    cases = [c.values[0] for c in CASES]
    if cases == [None]:
        pytest.skip(f"PyTorch's recorded results are absent: {torch_cases.FOLDER}")
    calls = [c["call"] for c in cases]
    assert sum("antialias=True" in c and "align_corners=True" in c for c in calls) == 16
    assert sum("mode='area'" in c for c in calls) == 18
    assert sum(c.startswith("F.adaptive_") for c in calls) == 36
    assert sum(c.startswith("F.max_pool") and "return_indices=True" in c for c in calls) == 24
    assert sum(c.startswith("F.lp_pool3d") for c in calls) == 6
