"""PyTorch tensors in and out of onnx_cupy.nn.functional: the conversion logic against a
stand-in that speaks DLPack (helpers/fake_torch.py: CPU, bfloat16, requires_grad, CUDA with the
stand-in cupy), everywhere; and the round trip with PyTorch itself where torch is importable
(CI installs it in a step of its own, after the README's commands, which do not need it)."""
from __future__ import annotations

import numpy as np
import pytest
from helpers import fake_cupy, fake_torch
from helpers.util import BF16, random

from onnx_cupy.core import execution
from onnx_cupy.interop import tensors
from onnx_cupy.nn import functional as F

# every public function once: (name, positional arguments after the input, keywords)
CALLS = [("avg_pool1d", (3,), {}), ("avg_pool2d", (2,), {"divisor_override": 3}),
         ("avg_pool3d", (1,), {}), ("lp_pool1d", (2, 3), {}), ("lp_pool2d", (2, 2), {}),
         ("lp_pool3d", (1, 1), {}), ("max_pool1d", (2,), {"return_indices": True}),
         ("max_pool2d", (2,), {}), ("max_pool3d", (1,), {"return_indices": True}),
         ("adaptive_avg_pool1d", (3,), {}), ("adaptive_avg_pool2d", ((2, 3),), {}),
         ("adaptive_avg_pool3d", (2,), {}), ("adaptive_max_pool1d", (3,), {}),
         ("adaptive_max_pool2d", ((2, 3),), {"return_indices": True}),
         ("adaptive_max_pool3d", (2,), {"return_indices": True}),
         ("interpolate", (), {"scale_factor": 0.5, "mode": "bilinear", "antialias": True}),
         ("interpolate", (), {"size": 3, "mode": "area"}), ("one_hot_argmax", (), {"dim": 1})]
RANK = {"1d": 3, "2d": 4, "3d": 5}


def _input(rng, name: str, dtype=np.float32) -> np.ndarray:
    rank = next((r for suffix, r in RANK.items() if name.endswith(suffix)), 4)
    return random(rng, (2, 3, 6, 7, 5)[:rank], dtype)


def _parts(result):
    return list(result) if isinstance(result, tuple) else [result]


UNPOOLS = ["max_unpool1d", "max_unpool2d", "max_unpool3d"]   # called with max_pool's indices


GRIDS = ["affine_grid", "grid_sample"]   # a theta in, a grid out; an image and a grid in


def test_every_public_function_is_called():
    assert {name for name, _, _ in CALLS} | set(UNPOOLS) | set(GRIDS) == set(F.__all__)


def test_stand_in_tensors_through_a_spatial_transformer(cpu_backend, rng):
    """affine_grid takes a theta tensor and gives a grid tensor, which grid_sample takes with an
    image tensor; each gives what it gives for the NumPy arrays."""
    x = random(rng, (2, 3, 6, 7), np.float32)
    theta = rng.uniform(-1, 1, (2, 2, 3)).astype(np.float32)
    with execution.backend(cpu_backend):
        grid = F.affine_grid(fake_torch.Tensor(theta.copy()), (2, 3, 4, 5))
        got = F.grid_sample(fake_torch.Tensor(x.copy()), grid, padding_mode="border")
        want_grid = F.affine_grid(theta, (2, 3, 4, 5))
        want = F.grid_sample(x, want_grid, padding_mode="border")
    assert type(grid) is fake_torch.Tensor and grid.data.tobytes() == want_grid.tobytes()
    assert type(got) is fake_torch.Tensor and got.data.tobytes() == want.tobytes()


@pytest.mark.parametrize("name", UNPOOLS)
def test_stand_in_tensors_into_max_unpool(cpu_backend, rng, name):
    """max_unpool takes its values and indices as tensors (max_pool's, here) and gives a
    tensor holding what it gives for the NumPy arrays."""
    x = _input(rng, name)
    pool = getattr(F, name.replace("unpool", "pool"))
    with execution.backend(cpu_backend):
        y, i = pool(fake_torch.Tensor(x.copy()), 2, return_indices=True)
        got = getattr(F, name)(y, i, 2, output_size=x.shape[2:])
        ya, ia = pool(x, 2, return_indices=True)
        want = getattr(F, name)(ya, ia, 2, output_size=x.shape[2:])
    assert type(got) is fake_torch.Tensor and got.data.tobytes() == want.tobytes()


@pytest.mark.parametrize("name,args,kw", CALLS, ids=[f"{c[0]}-{i}" for i, c in enumerate(CALLS)])
@pytest.mark.parametrize("dtype", [np.float32, BF16], ids=str)
def test_stand_in_tensor_in_tensors_out(cpu_backend, rng, name, args, kw, dtype):
    """A CPU tensor in gives tensors out, of the input's dtype (indices int64), holding what the
    function gives for the NumPy array; the input is left alone."""
    x = _input(rng, name, dtype)
    t = fake_torch.Tensor(x.copy())
    with execution.backend(cpu_backend):
        got = _parts(getattr(F, name)(t, *args, **kw))
        want = _parts(getattr(F, name)(x, *args, **kw))
    assert all(type(g) is fake_torch.Tensor for g in got) and len(got) == len(want)
    for g, w in zip(got, want):
        assert g.dtype == w.dtype and g.shape == w.shape
        assert g.data.tobytes() == w.tobytes()
    assert t.data.tobytes() == x.tobytes()


def test_zero_copy_both_ways(rng):
    """The array the operators read is the tensor's memory, and the tensor given back holds the
    operator's output array's memory."""
    x = random(rng, (1, 2, 8, 8), np.float32)
    t = fake_torch.Tensor(x)
    array, give = tensors.intake(t, "avg_pool2d")
    assert isinstance(array, np.ndarray) and np.shares_memory(array, x)
    fake_torch.received.clear()
    y = F.avg_pool2d(t, 2)
    (out,) = fake_torch.received
    assert np.shares_memory(y.data, out)
    assert give(out).data.ctypes.data == out.ctypes.data


def test_bfloat16_crosses_as_its_bits(rng):
    """NumPy's DLPack reader lacks bfloat16: the tensor is read as int16 bits and viewed as
    ml_dtypes.bfloat16; results go back the same way and are viewed as bfloat16."""
    x = random(rng, (1, 2, 6, 6), BF16)
    array, give = tensors.intake(fake_torch.Tensor(x), "max_pool2d")
    assert array.dtype == BF16 and np.shares_memory(array, x)
    back = give(np.ones(3, BF16))
    assert back.dtype == fake_torch.bfloat16 and back.data.tolist() == [1.0, 1.0, 1.0]


class Watched(fake_torch.Tensor):
    """A tensor that records every read of its memory or device (`reads`): nothing can run an
    operator on it without one."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.reads = []

    def __dlpack__(self, **kwargs):
        self.reads.append("__dlpack__")
        return super().__dlpack__(**kwargs)

    def __dlpack_device__(self):
        self.reads.append("__dlpack_device__")
        return super().__dlpack_device__()

    def view(self, dtype):
        self.reads.append("view")
        return super().view(dtype)


def test_a_tensor_that_requires_grad_is_a_type_error_where_no_gradient_exists(rng):
    """one_hot_argmax (and grid_sample, affine_grid: test_autograd.py) has no gradient: a
    TypeError naming the function before anything reads the tensor."""
    t = Watched(random(rng, (1, 2, 6, 6), np.float32), requires_grad=True)
    calls = [c for c in CALLS if c[0] == "one_hot_argmax"]
    for name, args, kw in calls:
        with pytest.raises(TypeError, match=rf"{name}: a tensor that requires grad was given, "
                                            rf"and {name} has no gradient in "
                                            r"onnx_cupy.nn.functional .* tensor.detach\(\)"):
            getattr(F, name)(t, *args, **kw)
    assert len(calls) == 1 and t.reads == []


def test_input_by_keyword_and_other_arrays_unchanged(rng):
    x = random(rng, (1, 2, 6, 6), np.float32)
    assert type(F.avg_pool2d(input=fake_torch.Tensor(x), kernel_size=2)) is fake_torch.Tensor
    assert type(F.avg_pool2d(input=x, kernel_size=2)) is np.ndarray
    with pytest.raises(TypeError, match="kernel_size"):
        F.avg_pool2d(input=x)   # what is missing is named


def test_cuda_stand_in_takes_the_cupy_path(request, rng):
    """A CUDA tensor is read by cupy.from_dlpack (zero-copy) and runs the CuPy path; the
    results come back through the tensor module's from_dlpack as CUDA tensors."""
    fake = fake_cupy.install(request)
    fake.from_dlpack = lambda t: fake.wrap(t.data)
    t = fake_torch.Tensor(random(rng, (1, 2, 6, 6), np.float32), cuda=True)
    y, i = F.adaptive_max_pool2d(t, 3, return_indices=True)
    assert y.cuda and i.cuda and y.shape == i.shape == (1, 2, 3, 3) and i.dtype == np.int64
    assert [launch.expression for launch in fake.launches] == [
        "pool_adaptive<float, float, int, 2>"]


def test_cuda_tensor_without_cupy_names_the_way_out(rng):
    t = fake_torch.Tensor(random(rng, (1, 2, 6, 6), np.float32), cuda=True)
    with execution.cupy_substitute(None), pytest.raises(
            TypeError, match=r"avg_pool2d: X is a CUDA array .*install CuPy"):
        F.avg_pool2d(t, 2)


# ---------------------------------------------------------------- with PyTorch itself

@pytest.fixture
def torch():
    return pytest.importorskip(
        "torch", reason="PyTorch is not installed (the live PyTorch tests run in CI's PyTorch "
                        "step); the stand-in tests above cover the conversion")


@pytest.mark.parametrize("name,args,kw", CALLS, ids=[f"{c[0]}-{i}" for i, c in enumerate(CALLS)])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16", "float64"])
def test_torch_round_trip(torch, rng, name, args, kw, dtype):
    """Tensors out, on the CPU, of the input's dtype, equal to the NumPy path's results."""
    x = _input(rng, name)
    t = torch.from_numpy(x).to(getattr(torch, dtype))
    got = _parts(getattr(F, name)(t, *args, **kw))
    reference = x.astype(BF16) if dtype == "bfloat16" else x.astype(dtype)
    want = _parts(getattr(F, name)(reference, *args, **kw))
    for g, w in zip(got, want):
        assert isinstance(g, torch.Tensor) and g.device.type == "cpu"
        assert tuple(g.shape) == w.shape
        bits = g.view(torch.int16) if g.dtype == torch.bfloat16 else g
        assert bits.numpy().tobytes() == w.tobytes()
    assert got[0].dtype == t.dtype


def test_torch_zero_copy_and_grad(torch):
    t = torch.arange(16.0).reshape(1, 1, 4, 4)
    array, _ = tensors.intake(t, "avg_pool2d")
    assert array.ctypes.data == t.data_ptr()
    with pytest.raises(TypeError, match="grid_sample: a tensor that requires grad"):
        F.grid_sample(t.clone().requires_grad_(), torch.zeros(1, 2, 2, 2), align_corners=False)
    assert F.interpolate(t.clone().requires_grad_(), scale_factor=2).requires_grad
    assert F.max_pool2d(t.clone().requires_grad_(), 2).requires_grad   # a graph: autograd
    assert F.max_pool2d(t.clone().requires_grad_().detach(), 2).tolist() == [[[[5.0, 7.0],
                                                                             [13.0, 15.0]]]]
