"""onnx_cupy.nn.functional.max_unpool1d/2d/3d: PyTorch's recorded results (../shared/torch/more/:
every max_unpool call, numpy and emulated, bit for bit), a per-plane loop oracle of PyTorch's
rule on random configurations, the max_pool round trip, PyTorch's argument checks and errors,
and where a model exported with ONNX MaxUnpool gives other results."""
from __future__ import annotations

import ast
import math

import numpy as np
import onnx
import pytest
from helpers import fake_cupy, torch_cases
from helpers.unpool_differential import plane_oracle
from helpers.util import FLOAT_DTYPES, onnxruntime, random, to_backend, to_numpy

import onnx_cupy
from onnx_cupy.nn import functional as F

FUNCTIONS = {1: F.max_unpool1d, 2: F.max_unpool2d, 3: F.max_unpool3d}
RECORDED = torch_cases.cases(lambda c: c["call"].startswith("F.max_unpool"), more=True)


def run(k, x, indices, backend, *args, **kw):
    with onnx_cupy.backend(backend):
        return to_numpy(FUNCTIONS[k](to_backend(x, backend), to_backend(indices, backend),
                                     *args, **kw))


@pytest.mark.parametrize("case", RECORDED)
def test_recorded_pytorch_result(case, cpu_backend):
    (x, indices), (y,) = torch_cases.inputs_and_outputs(case)
    call = ast.parse(case["call"], mode="eval").body
    k = int(call.func.attr[-2])
    got = run(k, x, indices, cpu_backend, *[ast.literal_eval(a) for a in call.args[2:]],
              **torch_cases.keywords(case))
    assert got.shape == y.shape and got.dtype == y.dtype
    assert got.tobytes() == y.tobytes()


def test_every_function_is_recorded():
    calls = [c.values[0]["call"].split("(")[0] for c in RECORDED if c.values[0] is not None]
    if not calls:
        pytest.skip(f"PyTorch's recorded results are absent: {torch_cases.FOLDER / 'more'}")
    assert sorted(calls) == ["F.max_unpool1d"] * 5 + ["F.max_unpool2d"] * 5 + \
        ["F.max_unpool3d"] * 5


def _configurations():
    rng = np.random.default_rng(20261127)
    out = []
    for k in (1, 2, 3):
        for n in range(4):
            kernel = [int(v) for v in rng.integers(1, 4, k)]
            stride = [int(v) for v in rng.integers(1, 4, k)]
            padding = [int(rng.integers(0, kk // 2 + 1)) for kk in kernel]
            grow = [int(rng.integers(-s + 1, s)) for s in stride] if n % 2 else None
            out.append(pytest.param(k, kernel, stride, padding, grow, id=f"{k}d-{n}"))
    return out


@pytest.mark.parametrize("k, kernel, stride, padding, grow", _configurations())
@pytest.mark.parametrize("dtype", FLOAT_DTYPES, ids=str)
def test_oracle(k, kernel, stride, padding, grow, dtype, cpu_backend, rng):
    """Random per-plane indices (repeats among them) into the default or a given output size."""
    x = random(rng, (2, 3, *rng.integers(1, 5, k)), dtype)
    default = [(n - 1) * s + kk - 2 * p for n, kk, s, p in zip(x.shape[2:], kernel, stride,
                                                                padding)]
    sizes = default if grow is None else [max(0, d + g) for d, g in zip(default, grow)]
    indices = rng.integers(0, max(math.prod(sizes), 1), size=x.shape)
    y = run(k, x, indices, cpu_backend, kernel, stride, padding,
            None if grow is None else sizes)
    assert y.dtype == x.dtype and y.shape == (2, 3, *sizes)
    assert y.tobytes() == plane_oracle(x, indices, (2, 3, *sizes)).tobytes()


@pytest.mark.parametrize("k", [1, 2, 3])
def test_max_pool_round_trip(k, cpu_backend, rng):
    """max_pool's indices, with an output_size that restores an input the pooling floored."""
    x = random(rng, (2, 2, *(7,) * k), np.float32, 0.5, 3.0)
    with onnx_cupy.backend(cpu_backend):
        y, indices = getattr(F, f"max_pool{k}d")(x, 2, return_indices=True)
    z = run(k, y, indices, cpu_backend, 2, output_size=x.shape)
    kept = z != 0
    assert z.shape == x.shape and np.array_equal(z[kept], x[kept]) and kept.sum() == y.size


def test_repeats_in_a_plane_the_last_wins(cpu_backend):
    x = np.array([[[1.0, 2.0, 3.0]], [[4.0, 5.0, 6.0]]], np.float32)
    indices = np.array([[[1, 1, 1]], [[0, 5, 0]]])
    y = run(1, x, indices, cpu_backend, 2)
    assert y.tolist() == [[[0, 3, 0, 0, 0, 0]], [[6, 0, 0, 0, 0, 5]]]


def test_unbatched_and_output_size_with_batch_and_channels(cpu_backend, rng):
    x = random(rng, (3, 2, 2), np.float32)
    indices = rng.integers(0, 20, size=x.shape)
    y = run(2, x, indices, cpu_backend, 2, output_size=[9, 9, 4, 5])   # N, C dropped
    assert y.shape == (3, 4, 5)
    assert y.tobytes() == run(2, x[None], indices[None], cpu_backend, 2,
                              output_size=[4, 5])[0].tobytes()


def test_an_empty_output_is_returned_without_reading_indices(cpu_backend):
    """padding 3 with kernel 2 gives length 0: PyTorch returns the empty tensor."""
    y = run(1, np.ones((1, 1, 3), np.float32), np.array([[[0, 1, 2]]]), cpu_backend, 2,
            padding=3)
    assert y.shape == (1, 1, 0)


@pytest.mark.parametrize("k, x_shape, indices, args, kw, error, pattern", [
    (2, (1, 1, 2, 2), None, (2,), {"output_size": [5, 6]}, ValueError,
     r'max_unpool2d: invalid output_size "\[5, 6\]" \(dim 1 must be between 2 and 6\)'),
    (1, (1, 1, 3), None, (2,), {"output_size": [1, 7, 7, 7]}, ValueError,
     (r"max_unpool1d: output_size should be a sequence containing 1 or 3 elements, but it has a "
     r"length of '4'")),
    (1, (1, 1, 3), [[[0, 1, 9]]], (2,), {}, ValueError,
     r"max_unpool1d: Found an invalid max index: 9 \(output volumes are of size 6x1\)"),
    (3, (1, 1, 2, 2, 2), 100, (2,), {}, ValueError,
     r"max_unpool3d: Found an invalid max index: 100 \(output volumes are of size 4x4x4\)"),
    (2, (1, 1, 2, 2), -1, (2,), {}, ValueError, r"Found an invalid max index: -1"),
    (3, (1, 1, 2, 2, 2), None, (2,), {"stride": 0}, ValueError,
     r"max_unpool3d: strides should be greater than zero, but got stride: \[0, 0, 0\]"),
    (2, (1, 1, 2, 2), None, ((2, 2, 2),), {}, ValueError,
     r"max_unpool2d: kernel_size must either be a single int, or a tuple of two ints"),
    (2, (1, 2), None, (2,), {}, ValueError, r"max_unpool2d: expected a 3D \(unbatched\)"),
    (2, (1, 0, 2, 2), None, (2,), {}, ValueError, r"with non-zero sizes except the batch"),
    (1, (1, 1, 3), None, (2,), {"padding": 5}, ValueError,
     r"output_size must contain non-negative spatial dimensions, but got output_size\[0\]=-4"),
], ids=["output_range", "output_length", "index_1d", "index_3d", "negative_index", "stride_0",
        "kernel_length", "rank", "empty_channels", "negative_length"])
def test_errors(k, x_shape, indices, args, kw, error, pattern, cpu_backend):
    x = np.ones(x_shape, np.float32)
    i = np.zeros(x_shape, np.int64) + (0 if indices is None else np.array(indices))
    with pytest.raises(error, match=pattern):
        run(k, x, i, cpu_backend, *args, **kw)


def test_indices_must_be_int64_and_of_the_input_s_shape_and_kind(request):
    x = np.ones((1, 1, 4), np.float32)
    with pytest.raises(TypeError, match=r"max_unpool1d: elements in indices should be type "
                                        r"int64, got int32"):
        F.max_unpool1d(x, np.zeros((1, 1, 4), np.int32), 2)
    with pytest.raises(ValueError, match=r"max_unpool1d: Expected shape of indices to be same "
                                         r"as that of the input tensor \(\[1, 1, 4\]\)"):
        F.max_unpool1d(x, np.zeros((1, 1, 3), np.int64), 2)
    fake = fake_cupy.install(request)
    with pytest.raises(TypeError, match=r"max_unpool1d: indices must be a numpy.ndarray like "
                                        r"input, got .*ndarray"):
        F.max_unpool1d(x, fake.asarray(np.zeros((1, 1, 4), np.int64)), 2)


def test_an_exported_model_reads_the_indices_elsewhere_when_the_output_size_differs():
    """PyTorch's call as an ONNX MaxUnpool (indices made global, output_shape given): ONNX's
    node test reads the indices in the unpooled shape (3 per plane here, output 5), so
    onnx-cupy's MaxUnpool puts the second plane's value at another position; onnxruntime reads
    them in output_shape, as PyTorch."""
    x = np.array([[[1.0]], [[2.0]]], np.float32)        # (N=2, C=1, L=1), kernel 3, output 5
    indices = np.array([[[2]], [[0]]])
    pytorch = F.max_unpool1d(x, indices, 3, output_size=[5])
    assert pytorch.tolist() == [[[0, 0, 1, 0, 0]], [[2, 0, 0, 0, 0]]]
    onnx_indices = indices + np.arange(2).reshape(2, 1, 1) * 5   # 2 and 5
    node = onnx.helper.make_node("MaxUnpool", ["X", "I", "S"], ["Y"], kernel_shape=[3])
    shape = np.array([2, 1, 5], np.int64)
    (ours,) = onnx_cupy.run_node(node, [x, onnx_indices, shape], opset=22)
    assert ours.tolist() == [[[0, 0, 1, 0, 0]], [[0, 0, 2, 0, 0]]]   # 5 = (1, 0, 2) in U
    model = onnx.helper.make_model_gen_version(onnx.helper.make_graph(
        [node], "g", [onnx.helper.make_tensor_value_info(n, t, None) for n, t in (
            ("X", onnx.TensorProto.FLOAT), ("I", onnx.TensorProto.INT64),
            ("S", onnx.TensorProto.INT64))],
        [onnx.helper.make_tensor_value_info("Y", onnx.TensorProto.FLOAT, None)]),
        opset_imports=[onnx.helper.make_opsetid("", 22)])
    (ort,) = onnxruntime(model, {"X": x, "I": onnx_indices, "S": shape})
    assert ort.tolist() == pytorch.tolist()
