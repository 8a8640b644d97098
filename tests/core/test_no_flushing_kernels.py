"""No float instruction of CuPy's own on the cupy path: CuPy compiles its own kernels (copies,
casts, ufuncs) with -ftz=true, so on a GPU a float operation in one of them flushes subnormal
operands and results to zero, where the library's kernels (compiled with IEEE options) and the
NumPy path keep them. The stand-in cupy (tests/helpers/standin.py) records each of CuPy's own
kernels with whether it runs such an instruction (`Operation.flushes`: float arithmetic,
comparisons, conversions to, from or between floats); every public function (onnx_cupy.*,
onnx_cupy.nn.functional.*, onnx_cupy.ops.*) is called on float32 inputs, a first and a repeated
call, and none may run one. Copies, fills and views within one dtype and integer work (MaxPool's
indices within their planes) are CuPy's and fine."""
from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import onnx
import pytest
from helpers import fake_cupy
from helpers.standin import flushing

import onnx_cupy as oc
from onnx_cupy import ops
from onnx_cupy.core import execution
from onnx_cupy.nn import functional as F

F32 = np.float32
NODE = onnx.helper.make_node("AveragePool", ["X"], ["Y"], kernel_shape=[3, 3], strides=[2, 2])
NOT_ARRAY_FUNCTIONS = {"backend", "default_backend", "release_workspaces", "warmup"}


def _put(a: np.ndarray) -> Any:
    return execution.cupy_module().asarray(a)


def _x(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any = F32) -> Any:
    return _put((rng.standard_normal(shape) * 4).astype(dtype))


def _grid(rng: np.random.Generator, shape: tuple[int, ...]) -> Any:
    """Normalized positions, some outside [-1, 1]."""
    return _put(rng.uniform(-1.1, 1.1, shape).astype(F32))


def _boxes(rng: np.random.Generator, k: int, dtype: Any = F32, indexed: bool = False) -> Any:
    """k boxes (x1, y1, x2, y2) on an 8 x 9 image, with their image index in front where
    `indexed`."""
    corners = np.sort(rng.uniform(-1, 10, (k, 2, 2)), axis=1)
    boxes = np.stack([corners[:, 0, 0], corners[:, 0, 1], corners[:, 1, 0], corners[:, 1, 1]], 1)
    if indexed:
        boxes = np.concatenate([rng.integers(0, 2, (k, 1)), boxes], axis=1)
    return _put(boxes.astype(dtype))


def _indices(rng: np.random.Generator, shape: tuple[int, ...], plane: int) -> Any:
    return _put(rng.integers(0, plane, shape))


def _unpool(rng: np.random.Generator) -> Any:
    y, indices = oc.max_pool(_x(rng, (2, 3, 8, 8)), kernel_shape=[2, 2], strides=[2, 2],
                             return_indices=True)
    return oc.max_unpool(y, indices, kernel_shape=[2, 2], strides=[2, 2])


def _call(name: str, shape: tuple[int, ...], *args: Any, **kw: Any
          ) -> Callable[[np.random.Generator], Any]:
    """F.`name` on a float32 X of `shape`, with these arguments."""
    return lambda r: getattr(F, name)(_x(r, shape), *args, **kw)


def _unpool_plane(k: int) -> Callable[[np.random.Generator], Any]:
    """F.max_unpool<k>d of F.max_pool<k>d's values and per-plane indices."""
    def run(r: np.random.Generator) -> Any:
        y, indices = getattr(F, f"max_pool{k}d")(_x(r, (2, 3, *(6,) * k)), 2, return_indices=True)
        return getattr(F, f"max_unpool{k}d")(y, indices, 2)
    return run


def _unpool_vjp(rng: np.random.Generator) -> Any:
    y, indices = oc.max_pool(_x(rng, (2, 3, 8, 8)), kernel_shape=[2, 2], strides=[2, 2],
                             return_indices=True)
    return oc.vjp(oc.max_unpool, y, indices, cotangent=_x(rng, (2, 3, 8, 8)),
                  kernel_shape=[2, 2], strides=[2, 2])


# id -> call(rng): float32 inputs on the current (stand-in) device
CASES: dict[str, Callable[[np.random.Generator], Any]] = {
    "average_pool": lambda r: oc.average_pool(_x(r, (2, 3, 9, 9)), kernel_shape=[3, 3],
                                              strides=[2, 2], pads=[1, 1, 1, 1]),
    "lp_pool": lambda r: oc.lp_pool(_x(r, (2, 3, 9, 9)), kernel_shape=[2, 3], p=3),
    "max_pool": lambda r: oc.max_pool(_x(r, (2, 3, 9, 9)), kernel_shape=[3, 3],
                                      return_indices=True),
    "global_average_pool": lambda r: oc.global_average_pool(_x(r, (2, 3, 5, 7))),
    "global_lp_pool": lambda r: oc.global_lp_pool(_x(r, (2, 3, 5, 7)), p=3),
    "global_max_pool": lambda r: oc.global_max_pool(_x(r, (2, 3, 5, 7))),
    "hardmax": lambda r: oc.hardmax(_x(r, (4, 9, 5)), axis=1),
    "resize": lambda r: oc.resize(_x(r, (1, 3, 8, 8)), scales=_put(np.array([1, 1, 1.5, 2.0],
                                                                            F32)), mode="cubic"),
    "upsample": lambda r: oc.upsample(_x(r, (1, 3, 8, 8)), [1.0, 1.0, 2.0, 2.5], mode="linear"),
    "max_unpool": _unpool,
    "affine_grid": lambda r: oc.affine_grid(_x(r, (2, 2, 3)), [2, 1, 5, 7]),
    "grid_sample": lambda r: oc.grid_sample(_x(r, (2, 3, 8, 9)), _grid(r, (2, 4, 5, 2))),
    "roi_align": lambda r: oc.roi_align(_x(r, (2, 3, 8, 9)), _boxes(r, 5), _indices(r, (5,), 2),
                                        output_height=3, output_width=2),
    "max_roi_pool": lambda r: oc.max_roi_pool(_x(r, (2, 3, 8, 9)), _boxes(r, 5, indexed=True),
                                              pooled_shape=[2, 3]),
    "run_node": lambda r: oc.run_node(NODE, [_x(r, (1, 3, 9, 9))], opset=22),
    "vjp-average_pool": lambda r: oc.vjp(oc.average_pool, _x(r, (2, 3, 9, 9)),
                                         cotangent=_x(r, (2, 3, 5, 5)), kernel_shape=[3, 3],
                                         strides=[2, 2], pads=[1, 1, 1, 1]),
    "vjp-lp_pool": lambda r: oc.vjp(oc.lp_pool, _x(r, (2, 3, 9, 9)), cotangent=_x(r, (2, 3, 8, 7)),
                                    kernel_shape=[2, 3], p=3),
    "vjp-max_pool": lambda r: oc.vjp(oc.max_pool, _x(r, (2, 3, 9, 9)),
                                     cotangent=_x(r, (2, 3, 4, 4)), kernel_shape=[3, 3],
                                     strides=[2, 2]),
    "vjp-global_lp_pool": lambda r: oc.vjp(oc.global_lp_pool, _x(r, (2, 3, 5, 7)),
                                           cotangent=_x(r, (2, 3, 1, 1)), p=3),
    "vjp-max_unpool": _unpool_vjp,
    **{f"avg_pool{k}d": _call(f"avg_pool{k}d", (2, 3, *(7,) * k), 3, 2, 1, True)
       for k in (1, 2, 3)},
    **{f"avg_pool{k}d-divisor_override=2": _call(f"avg_pool{k}d", (2, 3, *(7,) * k), 3, 2, 1,
                                                 divisor_override=2) for k in (2, 3)},
    "avg_pool2d-unbatched-divisor_override": lambda r: F.avg_pool2d(
        _x(r, (3, 9, 9))[:, ::2], 2, divisor_override=3),
    **{f"lp_pool{k}d-p{p}": _call(f"lp_pool{k}d", (2, 3, *(6,) * k), p, 2)
       for k in (1, 2, 3) for p in (2, 3, 2.5)},
    "lp_pool2d-unbatched-strided": lambda r: F.lp_pool2d(_x(r, (3, 9, 9))[:, ::2], 1, 2),
    **{f"max_pool{k}d": _call(f"max_pool{k}d", (2, 3, *(7,) * k), 3, 2, 1, return_indices=True)
       for k in (1, 2, 3)},
    **{f"max_unpool{k}d": _unpool_plane(k) for k in (1, 2, 3)},
    **{f"adaptive_{kind}_pool{k}d": _call(f"adaptive_{kind}_pool{k}d", (2, 3, *(7,) * k), 3)
       for kind in ("avg", "max") for k in (1, 2, 3)},
    "interpolate-nearest": lambda r: F.interpolate(_x(r, (1, 3, 8, 8)), size=(5, 11)),
    "interpolate-bilinear": lambda r: F.interpolate(_x(r, (1, 3, 8, 8)), scale_factor=1.7,
                                                    mode="bilinear"),
    "interpolate-bicubic-antialias": lambda r: F.interpolate(
        _x(r, (1, 3, 8, 8)), size=(3, 5), mode="bicubic", antialias=True),
    "interpolate-area": lambda r: F.interpolate(_x(r, (1, 3, 9, 9)), size=(4, 5), mode="area"),
    "grid_sample-bicubic": lambda r: F.grid_sample(_x(r, (2, 3, 8, 9)), _grid(r, (2, 4, 5, 2)),
                                                   mode="bicubic", align_corners=True),
    "affine_grid-3d": lambda r: F.affine_grid(_x(r, (2, 3, 4)), [2, 1, 3, 4, 5]),
    "one_hot_argmax": lambda r: F.one_hot_argmax(_x(r, (4, 9, 5)), dim=1),
    "ops.roi_align-indexed": lambda r: ops.roi_align(_x(r, (2, 3, 8, 9)),
                                                     _boxes(r, 5, indexed=True), 2),
    "ops.roi_align-list": lambda r: ops.roi_align(_x(r, (2, 3, 8, 9)),
                                                  [_boxes(r, 3), _boxes(r, 2)], (3, 2),
                                                  aligned=True),
    "ops.roi_align-float64-boxes": lambda r: ops.roi_align(
        _x(r, (2, 3, 8, 9)), _boxes(r, 5, np.float64, indexed=True), 2),
    "ops.roi_pool-indexed": lambda r: ops.roi_pool(_x(r, (2, 3, 8, 9)),
                                                   _boxes(r, 5, indexed=True), 2),
    "ops.roi_pool-list": lambda r: ops.roi_pool(_x(r, (2, 3, 8, 9)), [_boxes(r, 3), _boxes(r, 2)],
                                                2),
    "ops.roi_pool-list-float64-boxes": lambda r: ops.roi_pool(
        _x(r, (2, 3, 8, 9)), [_boxes(r, 3, np.float64), _boxes(r, 2, np.float64)], (2, 3)),
}


@pytest.fixture
def fake(request):
    """A stand-in cupy that records and runs nothing (what a call runs is in its records)."""
    installed = fake_cupy.install(request)
    installed.executing = False
    return installed


def _name(case: str) -> str:
    return case.split("-")[0]


def test_the_cases_call_every_public_function():
    public = {n for n in oc.__all__ if callable(getattr(oc, n))} - NOT_ARRAY_FUNCTIONS
    public |= set(F.__all__) | {f"ops.{n}" for n in ops.__all__}
    assert public == {_name(c) for c in CASES}, public ^ {_name(c) for c in CASES}


@pytest.mark.parametrize("case", CASES)
def test_no_cupy_kernel_of_its_own_flushes(fake, rng, case):
    since = len(fake.operations)
    CASES[case](rng)   # the first call: planned, its tables uploaded
    CASES[case](rng)   # a repeated call
    own = [o for o in fake.operations[since:] if o.kind == "elementwise"]
    assert [o.what for o in own if o.flushes] == [], own


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
