"""What every operator refuses alike: an out= that cannot take the result (read-only, a memory
map opened read-only, non-native byte order, masked), and NumPy subclasses, taken as the NumPy
arrays they view (memmaps, a user's subclass whose ufuncs would lie) or refused (masked arrays)
with the same message on every path."""
from __future__ import annotations

import numpy as np
import pytest

import onnx_cupy as oc
import onnx_cupy.nn.functional as F

X = np.random.default_rng(35).standard_normal((1, 2, 4, 6)).astype(np.float32)
G = np.random.default_rng(36).uniform(-1, 1, (1, 3, 3, 2)).astype(np.float32)
I = np.array([[[[0, 3, 5], [8, 10, 15]]] * 2]) + np.array([0, 16]).reshape(1, 2, 1, 1)
THETA = np.array([[[1.0, 0.2, 0.0], [0.1, 0.9, 0.3]]], np.float32)
BOXES = np.array([[0.5, 0.5, 4.0, 3.0], [1.0, 0.0, 5.5, 2.5]], np.float32)
DY = np.random.default_rng(37).standard_normal((1, 2, 2, 3)).astype(np.float32)

# operator -> call(X, **out) on a (1, 2, 4, 6) float32 X; each takes out=
OPS = {
    "average_pool": lambda x, **o: oc.average_pool(x, kernel_shape=[2, 2], strides=[2, 2], **o),
    "lp_pool": lambda x, **o: oc.lp_pool(x, kernel_shape=[2, 2], strides=[2, 2], **o),
    "max_pool": lambda x, **o: oc.max_pool(x, kernel_shape=[2, 2], strides=[2, 2], **o),
    "global_average_pool": lambda x, **o: oc.global_average_pool(x, **o),
    "global_lp_pool": lambda x, **o: oc.global_lp_pool(x, **o),
    "global_max_pool": lambda x, **o: oc.global_max_pool(x, **o),
    "hardmax": lambda x, **o: oc.hardmax(x, **o),
    "resize": lambda x, **o: oc.resize(x, scales=np.array([1, 1, 2, 2], np.float32), **o),
    "upsample": lambda x, **o: oc.upsample(x, np.array([1, 1, 2, 2], np.float32), **o),
    "grid_sample": lambda x, **o: oc.grid_sample(x, G, **o),
    "max_unpool": lambda x, **o: oc.max_unpool(x[:, :, :2, :3], I, kernel_shape=[2, 2],
                                               strides=[2, 2], **o),
    "affine_grid": lambda x, **o: oc.affine_grid(THETA, [1, 2, 4, 6], **o),
    "roi_align": lambda x, **o: oc.roi_align(x, BOXES, np.array([0, 0]), output_height=2,
                                             output_width=2, **o),
    "max_roi_pool": lambda x, **o: oc.max_roi_pool(
        x, np.concatenate([np.zeros((2, 1), np.float32), BOXES], 1), pooled_shape=[2, 2], **o),
    # the gradient: out= receives dX
    "vjp": lambda x, **o: oc.vjp(oc.max_pool, x, cotangent=DY, kernel_shape=[2, 2],
                                 strides=[2, 2], **o)[0],
}


def test_every_operator_taking_out_is_here():
    import inspect

    takes = {n for n in oc.__all__ if callable(getattr(oc, n)) and
             "out" in inspect.signature(getattr(oc, n)).parameters}
    assert takes == set(OPS)


def _expected(op):
    with oc.backend("numpy"):
        return OPS[op](X)


def _readonly_memmap(tmp_path, like):
    path = tmp_path / "out.bin"
    np.zeros(like.shape, like.dtype).tofile(path)
    return np.memmap(path, like.dtype, "r", shape=like.shape)


def _readonly(like):
    out = np.zeros_like(like)
    out.flags.writeable = False
    return out


@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("make", ["memmap", "array"])
def test_read_only_out_is_refused(cpu_backend, op, make, tmp_path):
    """A read-only out= (a memory map opened with mode 'r' crashed the kernel path; a plain
    array was written into): a ValueError naming out, and out left as it was."""
    want = _expected(op)
    out = _readonly_memmap(tmp_path, want) if make == "memmap" else _readonly(want)
    with oc.backend(cpu_backend), pytest.raises(ValueError, match=r": out is read-only"):
        OPS[op](X, out=out)
    assert not np.asarray(out).any()


@pytest.mark.parametrize("op", list(OPS))
def test_big_endian_out_is_refused(cpu_backend, op):
    want = _expected(op)
    out = np.zeros(want.shape, want.dtype.newbyteorder(">"))
    with oc.backend(cpu_backend), pytest.raises(
            ValueError, match=r"out has dtype >f4 \(non-native byte order\), expected float32 "
                              r"in native byte order"):
        OPS[op](X, out=out)


@pytest.mark.parametrize("op", ["average_pool", "hardmax", "grid_sample", "max_unpool"])
def test_masked_out_is_refused(cpu_backend, op):
    out = np.ma.masked_array(np.zeros_like(_expected(op)))
    with oc.backend(cpu_backend), pytest.raises(
            TypeError, match=r"out is a numpy.ma.MaskedArray; masked arrays are not taken"):
        OPS[op](X, out=out)


@pytest.mark.parametrize("op", ["average_pool", "global_max_pool", "resize", "affine_grid"])
def test_writeable_memmap_out_is_written(cpu_backend, op, tmp_path):
    want = _expected(op)
    path = tmp_path / "out.bin"
    out = np.memmap(path, want.dtype, "w+", shape=want.shape)
    with oc.backend(cpu_backend):
        got = OPS[op](X, out=out)
    assert got is out
    np.testing.assert_allclose(np.asarray(out), want, rtol=1e-5, atol=1e-6)


class Lying(np.ndarray):
    """A user's subclass whose ufuncs and sums would give other values, were they used."""

    def __array_ufunc__(self, ufunc, method, *inputs, **kwargs):
        return NotImplemented

    def sum(self, *args, **kwargs):
        raise AssertionError("the subclass's own sum was called")


def _memmap(tmp_path, a):
    m = np.memmap(tmp_path / "x.bin", a.dtype, "w+", shape=a.shape)
    m[...] = a
    m.flush()
    return np.memmap(tmp_path / "x.bin", a.dtype, "r", shape=a.shape)


@pytest.mark.parametrize("op", [op for op in OPS if op != "affine_grid"])
@pytest.mark.parametrize("kind", ["memmap", "subclass"])
def test_subclass_input_as_the_array_it_views(cpu_backend, op, kind, tmp_path):
    """A memory map (read-only here) and a user's subclass are read as the NumPy arrays they
    view, on every path: the same values as the plain array."""
    x = _memmap(tmp_path, X) if kind == "memmap" else X.view(Lying)
    with oc.backend(cpu_backend):
        got = OPS[op](x)
    assert type(got) is np.ndarray
    np.testing.assert_allclose(got, _expected(op), rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("op", [op for op in OPS if op != "affine_grid"])
def test_masked_input_is_refused(cpu_backend, op):
    """A masked array is refused on every path (the NumPy path read the mask, the kernel path
    ignored it)."""
    x = np.ma.masked_array(X, mask=X > 1)
    with oc.backend(cpu_backend), pytest.raises(
            TypeError, match=r": X is a numpy.ma.MaskedArray; masked arrays are not taken"):
        OPS[op](x)


@pytest.mark.parametrize("argument", ["grid", "theta", "I"])
def test_masked_second_input_is_refused_by_its_name(cpu_backend, argument):
    calls = {"grid": lambda: oc.grid_sample(X, np.ma.masked_array(G)),
             "theta": lambda: oc.affine_grid(np.ma.masked_array(THETA), [1, 2, 4, 6]),
             "I": lambda: oc.max_unpool(X[:, :, :2, :3], np.ma.masked_array(I),
                                        kernel_shape=[2, 2], strides=[2, 2])}
    with oc.backend(cpu_backend), pytest.raises(
            TypeError, match=rf": {argument} is a numpy.ma.MaskedArray; masked arrays"):
        calls[argument]()


def test_grid_sample_masked_x_with_plain_grid_names_x(cpu_backend):
    """Not "grid must be a numpy.MaskedArray like X": the masked X is what is refused."""
    with oc.backend(cpu_backend), pytest.raises(TypeError, match=r"GridSample: X is a numpy"):
        oc.grid_sample(np.ma.masked_array(X), G)
    with oc.backend(cpu_backend), pytest.raises(TypeError, match=r"grid_sample: input is a "
                                                                 r"numpy.ma.MaskedArray"):
        F.grid_sample(np.ma.masked_array(X), G, align_corners=False)


@pytest.mark.parametrize("fn", ["lp_pool2d", "avg_pool2d", "max_pool2d", "interpolate",
                                "adaptive_avg_pool2d"])
def test_functional_takes_subclasses_as_arrays(cpu_backend, fn):
    args = {"lp_pool2d": (2, 2), "avg_pool2d": (2,), "max_pool2d": (2,),
            "interpolate": (), "adaptive_avg_pool2d": ((3, 2),)}[fn]
    kwargs = {"scale_factor": 2} if fn == "interpolate" else {}
    with oc.backend("numpy"):
        want = getattr(F, fn)(X, *args, **kwargs)
    with oc.backend(cpu_backend):
        got = getattr(F, fn)(X.view(Lying), *args, **kwargs)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
