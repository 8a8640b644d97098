"""onnx_cupy.vjp, the array-level vector-Jacobian product: one gradient per input (None for
indices and output_shape), the family's gradient entry points' bits on every path, the
functions' own attributes with their defaults and their checks at the opset given, out= for
the first gradient, and what it refuses: a function without a gradient, another number of
inputs, a cotangent of another shape, dtype, array type or device."""
from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from helpers.standin import StandIn
from helpers.util import BF16, random, to_backend, to_numpy

import onnx_cupy as oc
from onnx_cupy.core import execution
from onnx_cupy.pool import api as pool_api
from onnx_cupy.unpool import api as unpool_api

GPU = execution.gpu_available()
SHAPE = (2, 3, 7, 6)

# name -> (the function, its attributes, the operator the family's gradient takes)
POOLS = {
    "average_pool": (oc.average_pool, {"kernel_shape": [3, 2], "strides": [2, 1],
                                       "pads": [1, 0, 1, 1], "count_include_pad": 1},
                     "AveragePool"),
    "average_pool-ceil": (oc.average_pool, {"kernel_shape": [2, 3], "strides": [2, 2],
                                            "ceil_mode": 1, "dilations": [1, 2]}, "AveragePool"),
    "lp_pool-p3": (oc.lp_pool, {"kernel_shape": [2, 2], "p": 3}, "LpPool"),
    "lp_pool-same": (oc.lp_pool, {"kernel_shape": [3, 3], "auto_pad": "SAME_LOWER", "p": 1},
                     "LpPool"),
    "max_pool": (oc.max_pool, {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1],
                               "storage_order": 1}, "MaxPool"),
    "global_average_pool": (oc.global_average_pool, {}, "GlobalAveragePool"),
    "global_lp_pool": (oc.global_lp_pool, {"p": 3}, "GlobalLpPool"),
    "global_max_pool": (oc.global_max_pool, {}, "GlobalMaxPool"),
}


def vjp(backend: str, function: Any, *inputs: Any, cotangent: Any, **kwargs: Any) -> Any:
    with oc.backend(backend):
        return oc.vjp(function, *(to_backend(a, backend) for a in inputs),
                      cotangent=to_backend(cotangent, backend), **kwargs)


@pytest.mark.parametrize("name", POOLS)
def test_pools(backend, rng, name):
    """(dX,): the pool family's gradient of the operator with the same attributes, bit for
    bit (its forward output computed on the same path); X and the cotangent unchanged."""
    function, attrs, op = POOLS[name]
    x = random(rng, SHAPE, np.float32)
    with oc.backend(backend):
        y = to_numpy(function(to_backend(x, backend), **attrs))
    dy = random(rng, y.shape, np.float32)
    kept = x.copy(), dy.copy()
    got = vjp(backend, function, x, cotangent=dy, **attrs)
    assert isinstance(got, tuple) and len(got) == 1
    with oc.backend(backend):
        want = pool_api.gradient(op, to_backend(x, backend), to_backend(dy, backend),
                                 (22, attrs))
    dx = to_numpy(got[0])
    assert dx.shape == x.shape and dx.dtype == x.dtype
    assert dx.tobytes() == to_numpy(want).tobytes()
    assert np.abs(dx).max() > 0
    assert np.array_equal(x, kept[0]) and np.array_equal(dy, kept[1])


@pytest.mark.parametrize("with_shape", [False, True])
def test_max_unpool(backend, rng, with_shape):
    """(dX, None) or (dX, None, None) with output_shape: the MaxUnpool gradient's bytes."""
    x = random(rng, (2, 3, 3, 3), np.float32)
    indices = rng.integers(0, 2 * 3 * 6 * 6, x.shape)
    attrs = {"kernel_shape": [2, 2], "strides": [2, 2]}
    shape = [2, 3, 7, 8] if with_shape else None
    dy = random(rng, tuple(shape) if shape else (2, 3, 6, 6), np.float32)
    inputs = (x, indices, np.array(shape)) if with_shape else (x, indices)
    with oc.backend(backend):
        got = oc.vjp(oc.max_unpool, *(to_backend(a, backend) for a in inputs[:2]),
                     *inputs[2:], cotangent=to_backend(dy, backend), **attrs)
        want = unpool_api.gradient(to_backend(x, backend), to_backend(indices, backend),
                                   to_backend(dy, backend), shape, 22, attrs)
    assert len(got) == len(inputs) and all(g is None for g in got[1:])
    assert to_numpy(got[0]).tobytes() == to_numpy(want).tobytes()


def test_the_functions_defaults(backend, rng):
    """An attribute left out takes the function's default, as a call of the function would:
    lp_pool's p = 2, global_lp_pool's p = 2, max_pool's storage_order = 0."""
    x = random(rng, SHAPE, np.float32)
    dy = random(rng, (2, 3, 6, 5), np.float32)
    for function, given in ((oc.lp_pool, {"p": 2}), (oc.max_pool, {"storage_order": 0})):
        default = vjp(backend, function, x, cotangent=dy, kernel_shape=[2, 2])[0]
        explicit = vjp(backend, function, x, cotangent=dy, kernel_shape=[2, 2], **given)[0]
        assert to_numpy(default).tobytes() == to_numpy(explicit).tobytes()
    g = random(rng, (2, 3, 1, 1), np.float32)
    assert to_numpy(vjp(backend, oc.global_lp_pool, x, cotangent=g)[0]).tobytes() == \
        to_numpy(vjp(backend, oc.global_lp_pool, x, cotangent=g, p=2)[0]).tobytes()


def test_opset_and_dtypes(backend, rng):
    """The version in force at `opset` decides: LpPool-1's float p, bfloat16 from opset 22."""
    x = random(rng, SHAPE, np.float64)
    y = oc.lp_pool(x, kernel_shape=[2, 2], p=2.5, opset=1)
    dy = random(rng, y.shape, np.float64)
    dx = vjp(backend, oc.lp_pool, x, cotangent=dy, kernel_shape=[2, 2], p=2.5, opset=1)[0]
    assert to_numpy(dx).shape == SHAPE and np.isfinite(to_numpy(dx)).all()
    xb = random(rng, SHAPE, BF16)
    dyb = random(rng, (2, 3, 6, 5), BF16)
    assert to_numpy(vjp(backend, oc.average_pool, xb, cotangent=dyb, kernel_shape=[2, 2])[0]
                    ).dtype == BF16
    with pytest.raises(TypeError, match="requires opset >= 22"):
        vjp(backend, oc.average_pool, xb, cotangent=dyb, kernel_shape=[2, 2], opset=21)


def test_out(backend, rng):
    """out= receives the first gradient and is returned in the tuple."""
    x = random(rng, SHAPE, np.float32)
    dy = random(rng, (2, 3, 3, 3), np.float32)
    attrs = {"kernel_shape": [2, 2], "strides": [2, 2]}
    want = to_numpy(vjp(backend, oc.max_pool, x, cotangent=dy, **attrs)[0])
    out = to_backend(np.full(SHAPE, np.nan, np.float32), backend)
    (got,) = vjp(backend, oc.max_pool, x, cotangent=dy, out=out, **attrs)
    assert got is out and to_numpy(out).tobytes() == want.tobytes()
    with pytest.raises(TypeError, match="MaxPool gradient: out has dtype float64"):
        vjp(backend, oc.max_pool, x, cotangent=dy, out=to_backend(np.zeros(SHAPE), backend),
            **attrs)


X = np.ones(SHAPE, np.float32)
DY = np.ones((2, 3, 6, 5), np.float32)
K = {"kernel_shape": [2, 2]}


@pytest.mark.parametrize("call, exc, pattern", [
    (lambda: oc.vjp(oc.hardmax, X, cotangent=DY), TypeError,
     r"vjp: hardmax has no gradient here \(gradients: average_pool, lp_pool, max_pool, "),
    (lambda: oc.vjp(lambda x: x, X, cotangent=DY), TypeError, "vjp: <lambda> has no gradient"),
    (lambda: oc.vjp(oc.average_pool, X, X, cotangent=DY, **K), TypeError,
     "vjp: average_pool takes 1 to 1 inputs, got 2"),
    (lambda: oc.vjp(oc.average_pool, cotangent=DY, **K), TypeError,
     "vjp: average_pool takes 1 to 1 inputs, got 0"),
    (lambda: oc.vjp(oc.max_unpool, X, cotangent=DY, **K), TypeError,
     "vjp: max_unpool takes 2 to 3 inputs, got 1"),
    (lambda: oc.vjp(oc.average_pool, X, cotangent=DY, foo=1, **K), ValueError,
     "AveragePool: unknown attribute 'foo'"),
    (lambda: oc.vjp(oc.average_pool, X, cotangent=DY, storage_order=1, **K), ValueError,
     "AveragePool: unknown attribute 'storage_order'"),
    (lambda: oc.vjp(oc.max_pool, X, cotangent=DY, return_indices=True, **K), ValueError,
     "MaxPool: unknown attribute 'return_indices'"),
    (lambda: oc.vjp(oc.average_pool, X, cotangent=DY, dilations=[1, 1], opset=11, **K),
     ValueError, "attribute 'dilations' is not defined at opset 11"),
    (lambda: oc.vjp(oc.lp_pool, X, cotangent=DY, p=2.5, **K), ValueError,
     "LpPool: attribute 'p' must be an integer at opset 22"),
    (lambda: oc.vjp(oc.average_pool, X, cotangent=DY[..., :4], **K), ValueError,
     r"AveragePool gradient: dY has shape \(2, 3, 6, 4\), expected Y's shape \(2, 3, 6, 5\)"),
    (lambda: oc.vjp(oc.average_pool, X, cotangent=DY.astype(np.float16), **K), TypeError,
     "AveragePool gradient: dY has dtype float16, expected float32"),
    (lambda: oc.vjp(oc.average_pool, X, cotangent=DY.tolist(), **K), TypeError,
     "AveragePool gradient: input 'dY' must be a numpy.ndarray like X, got builtins.list"),
    (lambda: oc.vjp(oc.average_pool, X.astype(np.int32), cotangent=DY, **K), TypeError,
     "AveragePool: input dtype int32 is not supported"),
    (lambda: oc.vjp(oc.max_pool, X.astype(np.int8), cotangent=DY.astype(np.int8), **K),
     TypeError, "MaxPool gradient: X has dtype int8; gradients are defined for floating"),
], ids=["no_gradient", "a_lambda", "two_inputs", "no_input", "unpool_one_input",
        "unknown_attribute", "another_operators_attribute", "return_indices",
        "attribute_of_a_later_version", "float_p", "cotangent_shape", "cotangent_dtype",
        "cotangent_list", "integer_X", "integer_X_max"])
def test_refusals(call, exc, pattern):
    with pytest.raises(exc, match=pattern):
        call()


def test_cotangent_on_another_device_is_refused():
    if GPU:
        pytest.skip("the stand-in's second device: no GPU may be visible")
    with StandIn().installed():
        cp = execution.cupy_module()
        with cp.cuda.Device(1):
            dy = cp.asarray(DY)
        with pytest.raises(ValueError, match="AveragePool gradient: input 'dY' is on device 1, "
                                             "X on device 0"):
            oc.vjp(oc.average_pool, cp.asarray(X), cotangent=dy, **K)
        with pytest.raises(TypeError, match="input 'dY' must be a cupy.ndarray like X"):
            oc.vjp(oc.average_pool, cp.asarray(X), cotangent=DY, **K)


def test_docstring_example():
    """vjp's docstring example gives what it shows."""
    import doctest

    from onnx_cupy.interop import vjp as module
    result = doctest.testmod(module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0, result
