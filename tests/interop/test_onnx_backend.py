"""ONNX's backend test runner on onnx_cupy.onnx_backend (the supported operators' node tests, on the
numpy path and on the emulated kernels), and unit tests of the backend and of run_node's input
and opset handling."""
from __future__ import annotations

import contextlib
import functools
import re
import unittest
import warnings
from collections import Counter
from typing import Any

import numpy as np
import onnx
import pytest
from helpers import node_tests
from helpers.standin import StandIn
from helpers.util import assert_close, node_model
from onnx import TensorProto, helper, numpy_helper
from onnx.backend.test import BackendTest

import onnx_cupy
from onnx_cupy import onnx_backend
from onnx_cupy.core import execution
from onnx_cupy.onnx_backend import OnnxCupyBackend

NODE_TESTS = re.compile(   # not AffineGrid's `_expanded` variants: graphs of other operators
    r"^test_(averagepool|lppool|maxpool|maxunpool|globalaveragepool|globalmaxpool|hardmax|resize|"
    r"upsample|gridsample|affine_grid|roialign)_(?!.*_expanded)")
CASE_COUNTS = {"averagepool": 20, "lppool": 8, "maxpool": 19, "maxunpool": 2,
               "globalaveragepool": 2, "globalmaxpool": 2, "hardmax": 7, "resize": 39,
               "upsample": 1, "gridsample": 18, "affine_grid": 4, "roialign": 3}


class EmulatedBackend(OnnxCupyBackend):
    """The backend with the CUDA kernels run on the CPU by the emulator."""

    @classmethod
    def prepare(cls, model: onnx.ModelProto, device: str | None = None,
                **kwargs) -> onnx_backend.OnnxCupyRep:
        with onnx_cupy.backend("emulated"):
            return super().prepare(model, device, **kwargs)

    @classmethod
    def supports_device(cls, device: str) -> bool:
        return device == "CPU"


GPU = execution.gpu_available()   # a real GPU (else the CUDA device's tests run on the stand-in)

# the runner's test names: the listed node tests of the supported operators, on CPU and CUDA
METHODS = [f"{name}_{device}" for op in node_tests.OPS for name in node_tests.names(op)
           for device in ("cpu", "cuda")]


@functools.cache
def runner_tests(backend: type[OnnxCupyBackend]) -> dict[str, Any]:
    """The runner's node tests of the supported operators on `backend` (the runner's other tests,
    other operators and model kinds, left out), built on first use: the runner loads ONNX's
    whole test corpus. Without a GPU it is built with the stand-in installed, so that the
    runner keeps its CUDA tests (each then runs on a stand-in of its own)."""
    with warnings.catch_warnings(), StandIn().installed() if not GPU else contextlib.nullcontext():
        warnings.simplefilter("ignore")
        runner = BackendTest(backend, __name__).include(NODE_TESTS.pattern)
    tests = vars(runner.test_cases["OnnxBackendNodeModelTest"])
    return {k: v for k, v in tests.items() if NODE_TESTS.search(k)}


def runner_case(backend: type[OnnxCupyBackend], name: str) -> type[unittest.TestCase]:
    """A TestCase holding the runner's node tests of the supported operators, one per device (CPU,
    CUDA; the runner skips a device the backend does not support), named from the listing and
    run by the runner's own test function."""
    def deferred(method: str) -> Any:
        def test(self: unittest.TestCase) -> Any:
            tests = runner_tests(backend)
            assert method in tests, f"{method}: not among the runner's node tests"
            if method.endswith("_cuda") and not GPU:   # the CuPy path on the stand-in
                with StandIn().installed():
                    return tests[method](self)
            return tests[method](self)
        test.__name__ = method
        return test
    # the emulated backend is a CPU device: no CUDA tests (the CuPy one's run on the stand-in)
    kept = [m for m in METHODS if backend is OnnxCupyBackend or not m.endswith("_cuda")]
    return type(name, (unittest.TestCase,), {m: deferred(m) for m in kept})


OnnxBackendNodeTest = runner_case(OnnxCupyBackend, "OnnxBackendNodeTest")
OnnxBackendNodeEmulatedTest = runner_case(EmulatedBackend, "OnnxBackendNodeEmulatedTest")


@pytest.mark.parametrize("backend", [OnnxCupyBackend, EmulatedBackend],
                         ids=lambda b: b.__name__)
def test_node_test_counts(backend):
    """125 node tests (no `_expanded` function variants among them), each on CPU and CUDA: the
    runner's tests of the supported operators are those collected from the listing."""
    names = sorted(runner_tests(backend))
    assert names == sorted(METHODS)
    total = sum(CASE_COUNTS.values())
    assert total == 125
    assert sorted(n.rsplit("_", 1)[1] for n in names) == ["cpu"] * total + ["cuda"] * total
    assert Counter(NODE_TESTS.search(n).group(1) for n in names if n.endswith("_cpu")) \
        == CASE_COUNTS
    assert not any("_expanded" in n for n in names)


def test_supports_device():
    assert onnx_backend.supports_device("CPU")
    assert onnx_backend.supports_device("CUDA") == execution.gpu_available()
    assert not onnx_backend.supports_device("TPU")


def value_info(name: str, dtype: int = TensorProto.FLOAT) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, dtype, None)


def model(nodes, inputs, outputs, initializers=(), opset: int = 19) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model_gen_version(graph, opset_imports=[helper.make_opsetid("", opset)])


@pytest.mark.parametrize("op, domain", [("Conv", ""), ("Hardmax", "com.example")])
def test_unsupported_operator_at_prepare(op, domain):
    node = helper.make_node(op, ["X"], ["Y"], domain=domain, kernel_shape=[2])
    m = model([node], [value_info("X")], [value_info("Y")])
    if domain:
        m.opset_import.append(helper.make_opsetid(domain, 1))
    name = re.escape(f"{op!r} of domain {domain or 'ai.onnx'!r}")
    with pytest.raises(ValueError, match=rf"unsupported operator {name}"):
        onnx_backend.prepare(m, "CPU")


def test_graph(cpu_backend, rng):
    """Identity, a Constant, an initializer and an omitted input in one graph, against
    onnx.reference; inputs as a list, a mapping or one array; outputs by position or name."""
    nodes = [
        helper.make_node("Identity", ["X"], ["A"]),
        helper.make_node("Constant", [], ["scales"], value_floats=[1, 1, 2, 1.5]),
        helper.make_node("Resize", ["A", "", "scales"], ["B"], mode="linear"),
        helper.make_node("AveragePool", ["B"], ["C"], kernel_shape=[3, 2], pads=[1, 0, 1, 1]),
        helper.make_node("Resize", ["C", "", "", "sizes"], ["D"]),
        helper.make_node("Hardmax", ["D"], ["Y"], axis=1),
    ]
    sizes = numpy_helper.from_array(np.array([2, 3, 5, 7], np.int64), "sizes")
    m = model(nodes, [value_info("X")], [value_info("Y"), value_info("C")], [sizes])
    x = rng.uniform(-1, 1, (2, 3, 4, 6)).astype(np.float32)
    expected = onnx.reference.ReferenceEvaluator(m).run(None, {"X": x})
    with onnx_cupy.backend(cpu_backend):
        rep = onnx_backend.prepare(m)
    assert rep.input_names == ["X"]
    for feeds in ([x], {"X": x}, x):
        got = rep.run(feeds)
        np.testing.assert_array_equal(got.Y, expected[0])
        assert_close(got["C"], expected[1])
    with pytest.raises(ValueError, match=r"expected 1 inputs \(X\), got 2"):
        rep.run([x, x])


def test_forced_backend_conflicts_with_device():
    m = model([helper.make_node("Hardmax", ["X"], ["Y"])], [value_info("X")], [value_info("Y")])
    with StandIn().installed(), onnx_cupy.backend("cupy"), pytest.raises(
            ValueError, match=r"device 'CPU' conflicts with the forced backend 'cupy'"):
        onnx_backend.prepare(m, "CPU")
    with pytest.raises(ValueError, match=r"unsupported device 'TPU'"):
        onnx_backend.prepare(m, "TPU")


def test_forced_backend_holds_for_runs(launches):
    """A backend forced around prepare runs the prepared model outside the block too."""
    m = node_model("Hardmax", [("X", np.float32)], {}, 13)
    with onnx_cupy.backend("emulated"):
        rep = onnx_backend.prepare(m)
    rep.run([np.ones((2, 3), np.float32)])
    assert launches


def test_backend_run_node(cpu_backend):
    x = np.array([[[[1, 3, 2], [4, 0, 4]]]], np.float32)
    resize = helper.make_node("Resize", ["X", "", "scales"], ["Y"], mode="nearest")
    with onnx_cupy.backend(cpu_backend):
        (h,) = onnx_backend.run_node(helper.make_node("Hardmax", ["X"], ["Y"]), [x])
        (r,) = onnx_backend.run_node(resize, [x, None, np.array([1, 1, 1, 2], np.float32)],
                                     opset_version=19)
        (c,) = onnx_backend.run_node(helper.make_node("Constant", [], ["C"], value_int=3), [])
    np.testing.assert_array_equal(h, [[[[0, 1, 0], [1, 0, 0]]]])
    np.testing.assert_array_equal(r, np.repeat(x, 2, axis=3))
    assert c.dtype == np.int64 and c == 3


SAME_UPPER = {"kernel_shape": [2], "strides": [2], "auto_pad": "SAME_UPPER"}
DILATED = {"kernel_shape": [2], "dilations": [2]}


def test_run_node_opset_from_model():
    """The model's opset decides the version: dilations exist from AveragePool-19 only."""
    x = np.arange(5, dtype=np.float32).reshape(1, 1, 5)
    m = node_model("AveragePool", [("X", np.float32)], DILATED, 19)
    (y,) = onnx_cupy.run_node(m.graph.node[0], [x], opset=m)
    np.testing.assert_array_equal(y, [[[1, 2, 3]]])
    m = node_model("AveragePool", [("X", np.float32)], DILATED, 18)
    with pytest.raises(ValueError, match=r"'dilations' is not defined at opset 18"):
        onnx_cupy.run_node(m.graph.node[0], [x], opset=m)


def test_run_node_model_without_default_opset():
    m = node_model("AveragePool", [("X", np.float32)], SAME_UPPER, 19)
    m.opset_import[0].domain = "com.example"
    with pytest.raises(ValueError, match=r"no opset of the default domain"):
        onnx_cupy.run_node(m.graph.node[0], [np.ones((1, 1, 4), np.float32)], opset=m)


def test_run_node_omitted_inputs(cpu_backend, rng):
    x = rng.uniform(size=(1, 2, 3, 4)).astype(np.float32)
    scales = np.array([1, 1, 2, 0.5], np.float32)
    with onnx_cupy.backend(cpu_backend):
        expected = onnx_cupy.resize(x, scales=scales, mode="linear")
        for inputs, given in ((["X", "", "scales"], [x, None, scales]),
                              (["X", "", "scales", ""], [x, None, scales]),
                              (["X", "", "scales", ""], [x, None, scales, None])):
            node = helper.make_node("Resize", inputs, ["Y"], mode="linear")
            (y,) = onnx_cupy.run_node(node, given, opset=19)
            np.testing.assert_array_equal(y, expected)
        node = helper.make_node("Resize", ["X", "", "", "sizes"], ["Y"])
        (y,) = onnx_cupy.run_node(node, [x, None, None, np.array([1, 2, 6, 2], np.int64)])
        assert y.shape == (1, 2, 6, 2)
        with pytest.raises(ValueError, match=r"Resize input 1 is omitted in the node"):
            onnx_cupy.run_node(helper.make_node("Resize", ["X", "", "scales"], ["Y"]), [x, scales])


# ---------------------------------------------------------------- strict inputs, compatibility

def _pool_model(shape) -> onnx.ModelProto:
    """AveragePool over X declared float32 of `shape` (ints static, strings symbolic)."""
    node = helper.make_node("AveragePool", ["X"], ["Y"], kernel_shape=[2])
    x = helper.make_tensor_value_info("X", TensorProto.FLOAT, shape)
    return model([node], [x], [value_info("Y")])


@pytest.mark.parametrize("feed,error,match", [
    (np.ones((1, 2, 5), np.float64), TypeError,
     r"input 'X' has dtype float64, but the graph declares float32"),
    (np.ones((1, 3, 5), np.float32), ValueError,
     r"input 'X' has shape \(1, 3, 5\), but the graph declares \('\?', 2, 5\) \(dimensions 1"),
    (np.ones((2, 5), np.float32), ValueError, r"input 'X' has rank 2"),
    ({"X": np.ones((1, 2, 5), np.float32), "Z": np.ones(1)}, ValueError,
     r"unknown input name\(s\) 'Z'"),
])
def test_run_checks_inputs_as_onnxruntime(cpu_backend, feed, error, match):
    with onnx_cupy.backend(cpu_backend):
        rep = onnx_backend.prepare(_pool_model(["N", 2, 5]))
    with pytest.raises(error, match=match):
        rep.run(feed)


def test_symbolic_and_undeclared_dimensions_are_free(cpu_backend, rng):
    x = rng.uniform(-1, 1, (3, 2, 5)).astype(np.float32)
    with onnx_cupy.backend(cpu_backend):
        for shape in (["N", 2, 5], [None, None, None], None):
            y = onnx_backend.prepare(_pool_model(shape)).run(x)[0]
            assert_close(y, onnx_cupy.average_pool(x, kernel_shape=[2]))


def test_onnxruntime_rejects_the_same_inputs():
    """The checks mirror onnxruntime's: it refuses float64 and a wrong static dimension too."""
    from helpers.util import onnxruntime

    m = _pool_model(["N", 2, 5])
    for bad in (np.ones((1, 2, 5), np.float64), np.ones((1, 3, 5), np.float32)):
        with pytest.raises(Exception, match="(data type|dimensions)"):
            onnxruntime(m, {"X": bad})


def test_is_compatible():
    assert onnx_backend.is_compatible == OnnxCupyBackend.is_compatible
    assert onnx_backend.is_compatible(_pool_model(["N", 2, 5]))
    relu = model([helper.make_node("Relu", ["X"], ["Y"])], [value_info("X")], [value_info("Y")])
    assert not onnx_backend.is_compatible(relu)
    dilated = node_model("AveragePool", [("X", np.float32)], DILATED, 18)
    assert not onnx_backend.is_compatible(dilated)
    assert not onnx_backend.is_compatible(_pool_model(["N", 2, 5]), "TPU")


def test_resize_parameters_stay_on_the_host(monkeypatch, rng):
    """Initializers and Constants read only as Resize's roi/scales/sizes are kept as NumPy
    arrays (never moved to the execution path, so a GPU run does not copy them back each
    call); a constant that is also pooled data is loaded."""
    moved = []
    real = execution.to_path
    monkeypatch.setattr(execution, "to_path", lambda a, path: (moved.append(a), real(a, path))[1])
    nodes = [
        helper.make_node("Constant", [], ["roi"], value_floats=[0, 0, 0, 0, 1, 1, 1, 1]),
        helper.make_node("Resize", ["X", "roi", "scales"], ["A"], mode="nearest"),
        helper.make_node("Resize", ["A", "", "", "sizes"], ["B"], mode="nearest"),
        helper.make_node("Identity", ["shared"], ["C"]),
        helper.make_node("Resize", ["X", "", "shared"], ["Y"], mode="nearest"),
    ]
    inits = {"scales": np.array([1, 1, 2, 2], np.float32),
             "sizes": np.array([1, 1, 3, 3], np.int64),
             "shared": np.array([1, 1, 1, 2], np.float32)}
    m = model(nodes, [value_info("X")], [value_info("B"), value_info("Y"), value_info("C")],
              [numpy_helper.from_array(v, k) for k, v in inits.items()])
    rep = onnx_backend.prepare(m, "CPU")
    x = rng.uniform(size=(1, 1, 2, 2)).astype(np.float32)
    got = rep.run([x])
    kept = {"roi", "scales", "sizes"}
    assert kept <= rep._host and "shared" not in rep._host
    assert not any(a.shape == (8,) or a is rep._values["scales"] for a in moved)
    assert all(isinstance(rep._values[k], np.ndarray) for k in ("scales", "sizes"))
    assert any(np.array_equal(a, inits["shared"]) for a in moved)
    assert got.B.shape == (1, 1, 3, 3) and got.Y.shape == (1, 1, 2, 4)


def test_resize_second_positional_argument_is_roi():
    """oc.resize(x, [1, 1, 2, 2]) passes the list as roi (ONNX's input order): the error says
    so instead of only 'got neither'."""
    x = np.ones((1, 1, 2, 2), np.float32)
    with pytest.raises(ValueError, match=r"got neither; the roi \[1.0, 1.0, 2.0, 2.0\] was given: "
                                         r"the second positional argument of resize\(\) is 'roi'"):
        onnx_cupy.resize(x, [1, 1, 2, 2])
    with pytest.raises(ValueError, match=r"got neither$"):
        onnx_cupy.resize(x)


def test_a_graph_input_with_an_initializer_may_be_fed(cpu_backend, rng):
    """As onnxruntime: the initializer is the default, a feed of that name overrides it (and is
    checked against the declared type); names that are no graph input stay unknown."""
    node = helper.make_node("Resize", ["X", "", "scales"], ["Y"], mode="nearest")
    scales = helper.make_tensor_value_info("scales", TensorProto.FLOAT, [4])
    m = model([node], [value_info("X"), scales], [value_info("Y")],
              [numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")])
    x = rng.uniform(size=(1, 1, 2, 3)).astype(np.float32)
    with onnx_cupy.backend(cpu_backend):
        rep = onnx_backend.prepare(m)
    assert rep.input_names == ["X"]
    assert rep.run({"X": x}).Y.shape == (1, 1, 4, 6)
    assert rep.run({"X": x, "scales": np.array([1, 1, 1, 3], np.float32)}).Y.shape == (1, 1, 2, 9)
    with pytest.raises(TypeError, match=r"input 'scales' has dtype float64"):
        rep.run({"X": x, "scales": np.array([1, 1, 1, 3], np.float64)})
    with pytest.raises(ValueError, match=r"unknown input name\(s\) 'sizes'"):
        rep.run({"X": x, "sizes": np.array([1, 1, 2, 2], np.int64)})


def test_max_pool_indices_feed_max_unpool(cpu_backend, rng):
    """MaxPool's Indices output feeds MaxUnpool in one graph; output_shape, an initializer that
    only MaxUnpool reads, stays on the host, as Upsample's scales."""
    nodes = [helper.make_node("MaxPool", ["X"], ["P", "I"], kernel_shape=[2, 2], strides=[2, 2]),
             helper.make_node("MaxUnpool", ["P", "I", "shape"], ["Y"], kernel_shape=[2, 2],
                              strides=[2, 2]),
             helper.make_node("Upsample", ["P", "scales"], ["U"])]
    inits = [numpy_helper.from_array(np.array([2, 3, 6, 8], np.int64), "shape"),
             numpy_helper.from_array(np.array([1, 1, 2, 2], np.float32), "scales")]
    m = model(nodes, [value_info("X")], [value_info("Y"), value_info("U")], inits, opset=9)
    x = rng.uniform(0.5, 3.0, size=(2, 3, 6, 8)).astype(np.float32)
    with onnx_cupy.backend(cpu_backend):
        rep = onnx_backend.prepare(m)
        got = rep.run([x])
        pooled = onnx_cupy.max_pool(x, kernel_shape=[2, 2], strides=[2, 2], opset=9)
    assert {"shape", "scales"} <= rep._host
    kept = got.Y != 0
    assert got.Y.shape == x.shape and np.array_equal(got.Y[kept], x[kept])
    assert int(kept.sum()) == pooled.size
    assert np.array_equal(got.U, np.repeat(np.repeat(pooled, 2, axis=2), 2, axis=3))


def test_affine_grid_feeding_grid_sample(cpu_backend, rng):
    """A spatial transformer: theta -> AffineGrid (size an initializer, read on the host) ->
    GridSample of X; equals the two functions called in turn."""
    size = np.array([2, 3, 5, 6], np.int64)
    nodes = [helper.make_node("AffineGrid", ["theta", "size"], ["grid"], align_corners=0),
             helper.make_node("GridSample", ["X", "grid"], ["Y"], mode="cubic",
                              padding_mode="border")]
    m = model(nodes, [value_info("X"), value_info("theta")], [value_info("Y")],
              [numpy_helper.from_array(size, "size")], opset=22)
    from onnx_cupy.interop import onnx_backend as implementation

    assert implementation._host_parameters(m.graph.node) == {"size"}
    x = rng.standard_normal((2, 3, 4, 4)).astype(np.float32)
    theta = rng.uniform(-1, 1, (2, 2, 3)).astype(np.float32)
    with onnx_cupy.backend(cpu_backend):
        (y,) = onnx_backend.prepare(m).run({"X": x, "theta": theta})
    want = onnx_cupy.grid_sample(x, onnx_cupy.affine_grid(theta, size), mode="cubic",
                                 padding_mode="border")
    np.testing.assert_array_equal(y, want)


@pytest.mark.parametrize("form", ["path", "str", "bytes"])
def test_prepare_takes_a_path_or_bytes(tmp_path, rng, form):
    """As onnxruntime's InferenceSession: the model's file (a Path or a str) or its bytes."""
    m = model([helper.make_node("MaxPool", ["X"], ["Y"], kernel_shape=[2, 2])],
              [value_info("X")], [value_info("Y")])
    path = tmp_path / "model.onnx"
    onnx.save(m, path)
    given = {"path": path, "str": str(path), "bytes": path.read_bytes()}[form]
    x = rng.standard_normal((1, 2, 4, 5)).astype(np.float32)
    np.testing.assert_array_equal(onnx_backend.prepare(given, "CPU").run(x).Y,
                                  onnx_backend.prepare(m, "CPU").run(x).Y)
    np.testing.assert_array_equal(onnx_backend.run_model(given, x, "CPU")[0],
                                  onnx.reference.ReferenceEvaluator(m).run(None, {"X": x})[0])


@pytest.mark.parametrize("given", [None, 3, {"graph": None}])
def test_prepare_names_what_it_takes(given):
    with pytest.raises(TypeError, match=r"prepare: model must be an onnx.ModelProto, the path of "
                       rf"a \.onnx file or its serialized bytes, got {type(given).__name__}"):
        onnx_backend.prepare(given)
