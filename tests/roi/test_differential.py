"""RoiAlign and MaxRoiPool on 400 seeded random configurations (tests/cases/roi.py: every
opset version and float dtype, boxes partly or wholly outside, zero-size and reversed, both modes
and coordinate transformations, fixed and adaptive sampling, NaN and infinities in some) against
a loop oracle, onnxruntime and onnx.reference (helpers/roi_differential.py). Each configuration
is a test of its own (`-k 0042-` reruns one)."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import roi_differential as diff

from onnx_cupy.core import execution

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::DeprecationWarning")

CONFIGS = [diff.configuration(i) for i in range(diff.CONFIGS)]


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Equal shape, dtype and values, NaN where the other has NaN."""
    return a.shape == b.shape and a.dtype == b.dtype and np.array_equal(
        a.astype(np.float64), b.astype(np.float64), equal_nan=True)


@pytest.mark.parametrize("config", CONFIGS, ids=lambda c: c.name)
def test_configuration(config):
    """NumPy equals the oracle; the emulated kernels equal NumPy bit for bit; the inputs are
    kept; onnxruntime's and onnx.reference's values wherever they run."""
    args = diff.inputs(config)
    kept = [a.copy() for a in args]
    ours = diff.drawn.run(config, *args)
    assert same(ours, diff.oracle(config, args))
    with execution.backend("emulated"):
        emulated = diff.drawn.run(config, *args)
    assert emulated.tobytes() == ours.tobytes() or same(emulated, ours)
    assert all(a.tobytes() == b.tobytes() for a, b in zip(args, kept))
    if diff.runtime_supported(config):
        try:
            expected = diff.by_onnxruntime(config, args)
        except Exception as exc:   # noqa: BLE001
            # onnxruntime sizes a buffer by the product of the adaptive grid counts: a reversed
            # box under half_pixel overflows it (docs/semantics.md); the oracle and (from opset
            # 16, float32 and float64) onnx.reference judge the configuration
            assert "overflow" in str(exc) and config.op == "RoiAlign", exc
        else:
            assert same(ours, expected)
    if diff.reference_supported(config):
        assert same(ours, diff.by_reference(config, args))


def test_configurations_cover_the_cases():
    """The configurations reach every operator version, dtype, mode and transformation."""
    seen = {(c.op, c.opset, c.dtype.name) for c in CONFIGS}
    assert {("RoiAlign", 22, "bfloat16"), ("MaxRoiPool", 22, "bfloat16"),
            ("RoiAlign", 10, "float16"), ("MaxRoiPool", 1, "float64")} <= seen
    attrs = [dict(c.attrs) for c in CONFIGS]
    assert {a.get("mode") for a in attrs} == {"avg", "max", None}
    assert {a.get("coordinate_transformation_mode") for a in attrs} == {
        "half_pixel", "output_half_pixel", None}
    assert {a.get("sampling_ratio") for a in attrs} == {0, 1, 2, 3, None}
    assert sum(c.special for c in CONFIGS) > 40 and sum(c.regions == 0 for c in CONFIGS) > 40
