"""The stand-in cupy (onnx_cupy.core.standin) tells which of CuPy's own kernels run a float
instruction (`Operation.flushes`): CuPy compiles its own kernels (copies, casts, ufuncs) with
-ftz=true, so on a GPU such an instruction flushes subnormal operands and results to zero,
where the library's kernels (compiled with IEEE options) and the NumPy path keep them. Float
arithmetic, comparisons and conversions to, from or between floats flush; copies, fills and
views within one dtype and integer work do not."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from helpers import fake_cupy

from onnx_cupy.core import execution
from onnx_cupy.core.standin import flushing

F32 = np.float32


@pytest.fixture
def fake(monkeypatch):
    """A stand-in cupy that records and runs nothing (what a call runs is in its records)."""
    installed = fake_cupy.install(monkeypatch)
    installed.executing = False
    return installed


def _operations(fake: Any, run: Callable[[], Any]) -> list[tuple[str, bool]]:
    since = len(fake.operations)
    run()
    return [(o.what, o.flushes) for o in fake.operations[since:] if o.kind == "elementwise"]


def test_the_stand_in_tells_what_flushes(fake):
    """Float arithmetic, comparisons and conversions flush; copies, fills and views within a
    dtype and integer arithmetic do not."""
    cp = execution.cupy_module()
    a, b = cp.asarray(np.ones((2, 3), F32)), cp.asarray(np.ones((2, 3), F32))
    i = cp.asarray(np.arange(6).reshape(2, 3))
    assert _operations(fake, lambda: a * 2) == [("mul", True)]
    assert _operations(fake, lambda: cp.power(a, 2.0)) == [("power", True)]
    assert _operations(fake, lambda: np.sqrt(a)) == [("sqrt", True)]
    assert _operations(fake, lambda: a < b) == [("lt", True)]
    assert _operations(fake, lambda: a.astype(np.float64)) == [("astype", True)]
    assert _operations(fake, lambda: i.astype(F32)) == [("astype", True)]
    assert _operations(fake, lambda: a.astype(np.int64)) == [("astype", True)]
    assert _operations(fake, lambda: cp.asarray(a, dtype=np.float16)) == [("astype", True)]
    wide = cp.empty((2, 3), np.float64)
    assert _operations(fake, lambda: wide.__setitem__(Ellipsis, a)) == [("copy", True)]
    assert _operations(fake, lambda: b.__setitem__(Ellipsis, a)) == [("copy", False)]
    assert _operations(fake, lambda: a.copy()) == [("copy", False)]
    assert _operations(fake, lambda: a.astype(F32)) == [("astype", False)]
    assert _operations(fake, lambda: cp.concatenate([a, b])) == [("concatenate", False)]
    assert _operations(fake, lambda: cp.fmod(i, 4, out=i)) == [("fmod", False)]
    assert _operations(fake, lambda: cp.minimum(i, 0)) == [("minimum", False)]
    assert _operations(fake, lambda: a.reshape(-1)[1:]) == []   # a view: no kernel
    assert flushing("where", [np.dtype(bool), np.dtype(np.int64)], [np.dtype(np.int64)]) is False
    assert flushing("copy", [np.dtype("bfloat16")], [np.dtype(F32)]) is True
