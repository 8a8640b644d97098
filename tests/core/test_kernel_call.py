"""The one dispatcher of the families' declared calls (onnx_cupy.core.kernel_call): every input
keyed by its layout, alignment and device, so that a layer in front (nn.functional, ops) never
runs a call prepared for another input's layout; every input on X's device, refused by name
otherwise. Run on the stand-in cupy, under the kernel checker (a misaligned load is an error
there, as it is a fault on a GPU)."""
from __future__ import annotations

import numpy as np
import pytest
from helpers.standin import StandIn
from helpers.util import to_numpy

import onnx_cupy as oc
from onnx_cupy.core import checker
from onnx_cupy.nn import functional as F


def _offset(fake, host, skew):
    """A device copy of `host` whose first element sits `skew` bytes past an aligned address."""
    raw = fake.empty(host.nbytes + 16, np.uint8)
    view = raw[skew:skew + host.nbytes].view(host.dtype).reshape(host.shape)
    view[...] = fake.asarray(host)
    assert view.data.ptr % 8 == skew % 8
    return view


@pytest.mark.parametrize("skew", [2, 4])
def test_grid_sample_of_an_unaligned_grid_after_an_aligned_one(rng, skew):
    """nn.functional keeps argument translations, never a prepared call: a grid `skew` bytes off
    after an aligned one runs the call prepared for its own layout (an aligned copy)."""
    x = rng.uniform(-1, 1, (2, 3, 7, 9)).astype(np.float32)
    g = rng.uniform(-1.1, 1.1, (2, 5, 4, 2)).astype(np.float32)
    fake = StandIn()
    with fake.installed(), checker.checking():
        xd = fake.asarray(x)
        first = to_numpy(F.grid_sample(xd, fake.asarray(g), align_corners=False))
        second = to_numpy(F.grid_sample(xd, _offset(fake, g, skew), align_corners=False))
        third = to_numpy(oc.grid_sample(xd, _offset(fake, g, skew)))
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(third, oc.grid_sample(x, g))


def test_max_unpool_of_unaligned_indices_after_aligned_ones(rng):
    x = rng.uniform(-1, 1, (1, 2, 4, 4)).astype(np.float32)
    i = (np.arange(32, dtype=np.int64).reshape(1, 2, 4, 4) % 16) * 4
    fake = StandIn()
    with fake.installed(), checker.checking():
        xd = fake.asarray(x)
        first = to_numpy(F.max_unpool2d(xd, fake.asarray(i), 2))
        second = to_numpy(F.max_unpool2d(xd, _offset(fake, i, 4), 2))
    np.testing.assert_array_equal(first, second)
    np.testing.assert_array_equal(first, F.max_unpool2d(x, i, 2))


@pytest.mark.parametrize("case", ["grid_sample", "max_unpool", "roi_align", "batch_indices"])
def test_an_input_on_another_device_is_refused_by_name(case, rng):
    x = rng.uniform(-1, 1, (1, 2, 4, 4)).astype(np.float32)
    fake = StandIn()
    with fake.installed():
        xd = fake.asarray(x)
        with fake.cuda.Device(1):
            if case == "grid_sample":
                other, name = fake.asarray(np.zeros((1, 3, 3, 2), np.float32)), "grid"
            elif case == "max_unpool":
                other, name = fake.asarray(np.zeros((1, 2, 4, 4), np.int64)), "I"
            elif case == "roi_align":
                other, name = fake.asarray(np.array([[0, 0, 3, 3]], np.float32)), "rois"
            else:
                other, name = fake.asarray(np.zeros(1, np.int64)), "batch_indices"
        boxes = fake.asarray(np.array([[0, 0, 3, 3]], np.float32))
        calls = {
            "grid_sample": lambda: oc.grid_sample(xd, other),
            "max_unpool": lambda: oc.max_unpool(xd, other, kernel_shape=[2, 2]),
            "roi_align": lambda: oc.roi_align(xd, other, fake.asarray(np.zeros(1, np.int64))),
            "batch_indices": lambda: oc.roi_align(xd, boxes, other),
        }
        with pytest.raises(ValueError, match=rf"input '{name}' is on device 1, X on device 0"):
            calls[case]()
        assert fake.launches == [] or all(r.device == 0 for r in fake.launches)


class _Framed(StandIn):
    """A stand-in that notes, at each launch, the library's own frames on the stack (the
    emulated device's, which stand in for CuPy's, not counted)."""

    def __init__(self) -> None:
        super().__init__()
        self.depths: list[int] = []

    def note_launch(self, *args, **kwargs):
        import sys

        depth, frame = 0, sys._getframe(1)
        while frame is not None:
            name = frame.f_code.co_filename.replace("\\", "/")
            if "/onnx_cupy/" in name and "/core/emulated_" not in name:
                depth += 1
            frame = frame.f_back
        self.depths.append(depth)
        return super().note_launch(*args, **kwargs)


_REPEATED = {
    "average_pool": lambda x, i, g: oc.average_pool(x, kernel_shape=[3, 3], strides=[2, 2]),
    "max_pool": lambda x, i, g: oc.max_pool(x, kernel_shape=[2, 2], pads=[1, 1, 1, 1]),
    "global_average_pool": lambda x, i, g: oc.global_average_pool(x),
    "hardmax": lambda x, i, g: oc.hardmax(x),
    "resize": lambda x, i, g: oc.resize(x, scales=[1, 1, 2, 2], mode="linear"),
    "max_unpool": lambda x, i, g: oc.max_unpool(x, i, kernel_shape=[2, 2], strides=[2, 2]),
    "grid_sample": lambda x, i, g: oc.grid_sample(x, g),
}


@pytest.mark.parametrize("name", sorted(_REPEATED))
def test_a_repeated_call_reaches_its_launch_within_six_library_frames(name, rng):
    """From the public function to the launch, a repeated call on the CuPy path passes at most
    six of the library's frames (the public function, the declared call, the prepared call,
    the family's body, the launch, one step of the family's own)."""
    x = rng.uniform(-1, 1, (1, 2, 6, 8)).astype(np.float32)
    i = (np.arange(96, dtype=np.int64).reshape(1, 2, 6, 8) % 48) * 4
    g = rng.uniform(-1, 1, (1, 3, 5, 2)).astype(np.float32)
    fake = _Framed()
    with fake.installed():
        args = fake.asarray(x), fake.asarray(i), fake.asarray(g)
        _REPEATED[name](*args)   # the first call: prepared
        fake.depths.clear()
        _REPEATED[name](*args)
    assert fake.depths and max(fake.depths) <= 6, fake.depths
