"""The CuPy path's first call compiles only what it launches, proven with the stand-in cupy
(tests/helpers/fake_cupy.py) that records every NVRTC compile, module load and launch: one
program per instantiation, compiled once (under concurrent first calls too) and loaded once per
device, with the source, NVRTC options and defines the kernel report compiles."""
from __future__ import annotations

import threading

import numpy as np
import pytest
from helpers import fake_cupy
from helpers.util import BF16, random

import onnx_cupy as oc
from onnx_cupy.core import loader, records
from onnx_cupy.pool import api as pool_api
from onnx_cupy.tools import kernel_report
from onnx_cupy.unpool import api as unpool_api

MAX_EXPRESSIONS = 4   # most instantiations one module may hold


def _scales(*s: float) -> np.ndarray:
    return np.array(s, np.float32)


# id -> (family, kernels launched in order, input shape, dtype, call): a path of its own each
CALLS = {
    "averagepool-fast-window-f32": ("pool", ("pool_fast",), (2, 3, 9, 11), np.float32,
                                    lambda x: oc.average_pool(x, kernel_shape=[3, 3],
                                                              strides=[2, 2], pads=[1, 1, 1, 1])),
    "averagepool-fast-1d-f16": ("pool", ("pool_fast",), (2, 3, 13), np.float16,
                                lambda x: oc.average_pool(x, kernel_shape=[4], strides=[3])),
    "averagepool-generic-4d-f64": ("pool", ("pool",), (1, 2, 5, 4, 3, 6), np.float64,
                                   lambda x: oc.average_pool(x, kernel_shape=[2, 2, 2, 3])),
    "lppool-p2-bf16": ("pool", ("pool_fast",), (2, 2, 7, 8), BF16,
                       lambda x: oc.lp_pool(x, kernel_shape=[2, 3], p=2)),
    "lppool-p3-generic-f32": ("pool", ("pool",), (2, 2, 7, 8), np.float32,
                              lambda x: oc.lp_pool(x, kernel_shape=[2, 3], p=3)),
    "hardmax-rows-f32": ("hardmax", ("hardmax_rows",), (4, 37), np.float32,
                         lambda x: oc.hardmax(x)),
    "hardmax-columns-f16": ("hardmax", ("hardmax_cols",), (3, 5, 7), np.float16,
                            lambda x: oc.hardmax(x, axis=1)),
    "hardmax-scan-merge-f64": ("hardmax", ("hardmax_scan", "hardmax_merge"), (2, 4096, 3),
                               np.float64,
                               lambda x: oc.hardmax(x, axis=1, opset=13)),
    "resize-nearest-fast-f32": ("resize", ("resize_nearest_fast",), (1, 2, 5, 7), np.float32,
                                lambda x: oc.resize(x, scales=_scales(1, 1, 2, 2))),
    "resize-linear-fast-bf16": ("resize", ("resize_weighted_fast",), (1, 2, 5, 7), BF16,
                                lambda x: oc.resize(x, scales=_scales(1, 1, 1.5, 2),
                                                    mode="linear")),
    "resize-cubic-f64": ("resize", ("resize_weighted_fast",), (2, 3, 6, 5), np.float64,
                         lambda x: oc.resize(x, scales=_scales(1, 1, 2, 2), mode="cubic")),
    "resize-generic-middle-axis-f16": ("resize", ("resize_weighted",), (3, 4, 5, 2, 3), np.float16,
                                       lambda x: oc.resize(x, scales=_scales(1, 2, 1, 2, 1),
                                                           mode="linear")),
}


@pytest.fixture
def fake(request):
    return fake_cupy.install(request)


def _input(fake, rng, shape, dtype):
    return fake.asarray(random(rng, shape, dtype))


def _launched(fake, since=0):
    """The distinct instantiations launched from launch number `since` on, in order."""
    return list(dict.fromkeys(launch.expression for launch in fake.launches[since:]))


@pytest.mark.parametrize("case", CALLS)
def test_first_call_compiles_exactly_what_it_launches(fake, rng, case):
    family, kernels, shape, dtype, call = CALLS[case]
    call(_input(fake, rng, shape, dtype))
    launched = _launched(fake)
    assert [e[:e.index("<")] for e in launched] == list(kernels)
    assert fake.compiled() == launched == fake.loaded(0)
    for program in fake.compiles:
        assert 1 <= len(program.name_expressions) <= MAX_EXPRESSIONS
        assert program.code == loader.source(family)
        assert program.options == (*loader.options(family), "--gpu-architecture=sm_90")
    for module in fake.modules:
        assert module.functions == list(module.name_expressions)
        assert module.device == 0
    assert {launch.device for launch in fake.launches} == {0}


@pytest.mark.parametrize("case", CALLS)
def test_second_call_compiles_nothing(fake, rng, case):
    _, _, shape, dtype, call = CALLS[case]
    call(_input(fake, rng, shape, dtype))
    modules, launches = len(fake.modules), len(fake.launches)
    call(_input(fake, rng, shape, dtype))
    assert len(fake.modules) == modules
    assert _launched(fake, launches) == fake.compiled()
    assert len(fake.launches) == 2 * launches


def _cotangent(fake, rng, shape, dtype):
    return fake.asarray(random(rng, shape, dtype))


_UNPOOL = {"kernel_shape": [2, 2], "strides": [2, 2]}


def _unpool_gradient(fake, rng, x):
    """MaxUnpool 2x2 s2 of X (N, C, H, W): its gradient with indices naming each window's
    top-left in Y (N, C, 2H, 2W)."""
    n, c, h, w = x.shape
    top_left = (np.arange(n * c).reshape(n, c, 1, 1) * (4 * h * w)
                + np.arange(h).reshape(h, 1) * (4 * w) + 2 * np.arange(w))
    dy = _cotangent(fake, rng, (n, c, 2 * h, 2 * w), x.dtype)
    return unpool_api.gradient(x, fake.asarray(top_left), dy, None, 22, _UNPOOL)


# id -> (kernels launched in order, as (family, template), X's shape, dtype,
#        call(fake, rng, X)): the gradients, with the forward a gradient reads computed by the
# forward's own kernel where the call does not give it
GRADIENT_CALLS = {
    "averagepool-gradient-f32": (
        (("pool", "pool_grad"),), (2, 3, 9, 11), np.float32,
        lambda fake, rng, x: pool_api.gradient(
            "AveragePool", x, _cotangent(fake, rng, (2, 3, 5, 6), x.dtype),
            (22, {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}))),
    "maxpool-gradient-f16": (
        (("pool", "pool"), ("pool", "pool_grad")), (2, 3, 8, 8), np.float16,
        lambda fake, rng, x: pool_api.gradient(
            "MaxPool", x, _cotangent(fake, rng, (2, 3, 4, 4), x.dtype),
            (22, {"kernel_shape": [2, 2], "strides": [2, 2]}))),
    "lppool-gradient-saved-f64": (
        (("pool", "pool_grad"),), (1, 2, 5, 4, 3), np.float64,
        lambda fake, rng, x: pool_api.gradient(
            "LpPool", x, _cotangent(fake, rng, (1, 2, 4, 3, 2), x.dtype),
            (22, {"kernel_shape": [2, 2, 2], "p": 3}),
            saved=_cotangent(fake, rng, (1, 2, 4, 3, 2), x.dtype))),
    "globalaveragepool-gradient-bf16": (
        (("pool", "pool_grad"),), (2, 3, 7, 5), BF16,
        lambda fake, rng, x: pool_api.gradient(
            "GlobalAveragePool", x, _cotangent(fake, rng, (2, 3, 1, 1), x.dtype), (22, {}))),
    "adaptiveaveragepool-gradient-f32": (
        (("pool", "pool_adaptive_grad"),), (2, 3, 10, 7), np.float32,
        lambda fake, rng, x: pool_api.gradient(
            "AdaptiveAveragePool", x, _cotangent(fake, rng, (2, 3, 4, 3), x.dtype),
            ((4, 3),))),
    "maxunpool-gradient-f32": (
        (("unpool", "unpool_grad"),), (2, 3, 4, 5), np.float32, _unpool_gradient),
}


@pytest.mark.parametrize("case", GRADIENT_CALLS)
def test_gradient_first_call_compiles_exactly_what_it_launches(fake, rng, case):
    """A gradient's first call compiles each instantiation it launches as a module of its own
    (one name expression per program, the family's source and options), and a second call
    compiles nothing."""
    kernels, shape, dtype, call = GRADIENT_CALLS[case]
    x = _input(fake, rng, shape, dtype)
    call(fake, rng, x)
    launched = _launched(fake)
    assert [(loader.instantiation(e).family, loader.instantiation(e).template)
            for e in launched] == list(kernels)
    assert fake.compiled() == launched == fake.loaded(0)
    assert len(fake.compiles) == len(launched)
    for program, expression in zip(fake.compiles, launched):
        family = loader.instantiation(expression).family
        assert list(program.name_expressions) == [expression]
        assert program.code == loader.source(family)
        assert program.options == (*loader.options(family), "--gpu-architecture=sm_90")
    modules, launches = len(fake.modules), len(fake.launches)
    call(fake, rng, x)
    assert len(fake.modules) == modules and len(fake.launches) == 2 * launches


@pytest.mark.parametrize("case", ["averagepool-fast-window-f32", "hardmax-scan-merge-f64",
                                  "resize-linear-fast-bf16"])
def test_each_device_loads_its_own(fake, rng, case):
    """A second device of the same architecture loads the image compiled for the first."""
    _, _, shape, dtype, call = CALLS[case]
    call(_input(fake, rng, shape, dtype))
    on_zero = fake.loaded(0)
    assert fake.compiled() == on_zero
    with fake.cuda.Device(1):
        x = _input(fake, rng, shape, dtype)
    call(x)  # the input's device, not the current one, runs the call
    assert fake.loaded(1) == on_zero
    assert fake.loaded(0) == on_zero
    assert fake.compiled() == on_zero   # compiled once
    assert {launch.device for launch in fake.launches[-len(on_zero):]} == {1}
    with fake.cuda.Device(1):
        call(x)
    assert len(fake.modules) == 2 * len(on_zero)


@pytest.mark.parametrize("case", ["averagepool-fast-1d-f16", "lppool-p3-generic-f32",
                                  "hardmax-scan-merge-f64", "resize-cubic-f64"])
def test_concurrent_first_calls_compile_once(request, rng, case):
    fake = fake_cupy.install(request, compile_seconds=0.05)
    _, kernels, shape, dtype, call = CALLS[case]
    inputs = [_input(fake, rng, shape, dtype) for _ in range(8)]
    barrier = threading.Barrier(len(inputs))
    errors = []

    def work(x):
        barrier.wait()
        try:
            call(x)
        except Exception as exc:  # noqa: BLE001 (reported below)
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(x,)) for x in inputs]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert sorted(fake.compiled()) == sorted(_launched(fake))
    assert len(fake.compiled()) == len(kernels)
    assert len(fake.launches) == len(inputs) * len(kernels)


def test_unregistered_instantiation_is_refused(fake):
    stranger = records.Instantiation("pool", "pool", (records.argument("n", 1),), ("Fake",),
                                     ("float32",), ())
    with pytest.raises(ValueError, match=r"pool: 'pool<1>' is not a registered"):
        loader.cuda_function(stranger)
    assert not fake.modules


@pytest.mark.parametrize("family", ["hardmax", "pool", "resize"])
def test_modules_compile_as_the_kernel_report_does(fake, monkeypatch, family):
    """The loader hands NVRTC the source, options and defines that the kernel report compiles
    (and checks) every instantiation with."""
    seen = []
    monkeypatch.setattr(kernel_report, "_compile",
                        lambda source, expressions, arch, filename, options:
                        seen.append((source, expressions, options)))
    kernel_report.compile_family(family, "sm_90")
    (source, expressions, options), = seen
    last = loader.instantiations(family)[-1]
    loader.cuda_function(last)
    (program,) = fake.compiles
    assert (program.code, program.options) == (source, (*options, "--gpu-architecture=sm_90"))
    assert program.name_expressions == (last.expression,) and last.expression in expressions
    for name, value in loader.defines(family).items():
        assert f"-D{name}={value}" in program.options
    for option in ("-std=c++17", "--ftz=false", "--prec-div=true", "--prec-sqrt=true",
                   "--fmad=false"):
        assert option in program.options
    (module,) = fake.modules
    assert module.name_expressions == (last.expression,) and module.functions == [last.expression]
