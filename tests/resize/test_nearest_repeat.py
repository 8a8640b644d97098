"""Resize and Upsample nearest on the NumPy path: the last-axis repeat pass (an index column
start + o // k repeats a run of the input k times: the integer multiply that copies each
element's bits k times) and the last pass written into the output give the plain gathers' bits,
on seeded random configurations: every dtype, ranks 1-5, integer scales 2, 3, 4 (8 for bytes)
along one or several axes, the last included, strided inputs, NaN payloads, -0.0 and
infinities, every coordinate and nearest mode (most of which do not repeat at these scales:
those gather), shrinking axes, extrapolated coordinates, small chunks that cut the first axis's
runs, and out=. Upsample at integer scales is also np.repeat along each axis.

Each configuration is a test of its own (`-k 042-` reruns one)."""
from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
from helpers.util import BF16, replan

import onnx_cupy as oc
from onnx_cupy.resize import numpy as numpy_path

pytestmark = pytest.mark.filterwarnings("ignore::RuntimeWarning", "ignore::DeprecationWarning")

DTYPES = [np.dtype(t) for t in ("float16", "float32", "float64", "int8", "uint8", "int16",
                                "uint16", "int32", "uint32", "int64", "uint64", "bool",
                                "complex64")] + [BF16, np.dtype(">f4"), np.dtype("<U1")]
COORDINATES = {10: ("asymmetric",), 11: ("half_pixel", "pytorch_half_pixel", "align_corners",
                                         "asymmetric", "tf_crop_and_resize",
                                         "tf_half_pixel_for_nn"),
               19: ("half_pixel", "pytorch_half_pixel", "align_corners", "asymmetric",
                    "tf_crop_and_resize", "half_pixel_symmetric")}
NEAREST = ("round_prefer_floor", "round_prefer_ceil", "floor", "ceil")
LAYOUTS = ("contiguous", "transposed", "stepped", "reversed")
COUNT = 240
SEED = 20261128


@dataclass(frozen=True)
class Config:
    index: int
    op: str                          # "Upsample" or "Resize"
    dtype: np.dtype
    shape: tuple[int, ...]
    scales: tuple[float, ...]
    layout: str
    attrs: tuple[tuple[str, Any], ...]   # Resize's attributes and opset
    sizes: bool                      # Resize given sizes instead of scales
    chunk: int | None                # CHUNK_BYTES for the call (None: the module's)
    out: bool                        # an out= array given

    @property
    def name(self) -> str:
        attrs = "-".join(str(v) for _, v in self.attrs)
        return (f"{self.index:03d}-{self.op}-{self.dtype.str}-{'x'.join(map(str, self.shape))}-"
                f"s{'_'.join(f'{s:g}' for s in self.scales)}-{self.layout}"
                f"{'-' + attrs if attrs else ''}{'-sizes' if self.sizes else ''}"
                f"{f'-chunk{self.chunk}' if self.chunk else ''}{'-out' if self.out else ''}")


def config(index: int) -> Config:
    rng = np.random.default_rng([SEED, index])
    op = "Upsample" if index % 3 == 0 else "Resize"
    dtypes = [d for d in DTYPES if op == "Resize" or d != BF16]
    dtype = dtypes[index % len(dtypes)]
    rank = int(rng.integers(1, 6))
    shape = tuple(int(n) for n in rng.integers(1, {1: 41, 2: 13}.get(rank, 7), size=rank))
    factors = [2, 3, 4] + ([8] if dtype.itemsize == 1 else [])
    scales = [1.0] * rank
    resized = rng.choice(rank, size=int(rng.integers(1, min(rank, 3) + 1)), replace=False)
    if rank - 1 not in resized and rng.random() < 0.6:
        resized[0] = rank - 1            # the last axis, most of the time
    for axis in resized:
        scales[axis] = float(rng.choice(factors))
    attrs: tuple[tuple[str, Any], ...] = ()
    if op == "Resize":
        opset = 19 if dtype == BF16 else int(rng.choice(list(COORDINATES)))
        attrs = (("opset", opset),)
        if opset > 10:   # Resize-10: asymmetric, rounded down
            attrs += (("coordinate_transformation_mode", str(rng.choice(COORDINATES[opset]))),
                      ("nearest_mode", str(rng.choice(NEAREST))))
        kept = [a for a in range(rank) if a not in resized]
        if kept and rng.random() < 0.2:   # a shrinking axis: a gather
            axis = int(rng.choice(kept))
            shape = shape[:axis] + (shape[axis] * 2,) + shape[axis + 1:]
            scales[axis] = 0.5
    return Config(index, op, dtype, shape, tuple(scales), str(rng.choice(LAYOUTS)), attrs,
                  op == "Resize" and dict(attrs)["opset"] > 10 and rng.random() < 0.2,
                  int(rng.choice([16, 64, 256, 1024])) if rng.random() < 0.4 else None,
                  bool(rng.random() < 0.3))


CONFIGS = [config(i) for i in range(COUNT)]


def special(rng: np.random.Generator, dtype: np.dtype) -> np.ndarray:
    """Bit patterns a float conversion might change: quiet and signalling NaNs with payloads, both
    signs of zero and of infinity (as X's dtype; random bits for the others)."""
    if dtype == BF16 or dtype.name == "float16":
        bits = [0x7E01, 0xFE35, 0x7C01 if dtype.name == "float16" else 0x7F81, 0x8000]
    elif dtype.name == "float32":
        bits = [0x7FC12345, 0xFFA00001, 0x7F800001, 0x80000000]
    elif dtype.name == "float64":
        bits = [0x7FF8_0000_1234_5678, 0xFFF4_0000_0000_0001, 0x7FF0_0000_0000_0001, 1 << 63]
    else:
        return np.empty(0, dtype)
    values = np.array(bits, f"u{dtype.itemsize}").view(dtype)
    return np.concatenate([values, np.array([np.inf, -np.inf, -0.0]).astype(dtype)])


def sample(rng: np.random.Generator, c: Config) -> np.ndarray:
    """X of the configuration's shape, dtype and layout, with the special values among its
    elements."""
    size = math.prod(c.shape)
    if c.dtype.kind == "U":
        flat = np.array(list("abcdefghij"))[rng.integers(0, 10, size)].astype(c.dtype)
    elif c.dtype.kind == "b":
        flat = rng.integers(0, 2, size).astype(bool)
    elif c.dtype.kind in "iu":
        flat = rng.integers(0, 256, size * c.dtype.itemsize, dtype=np.uint8).view(c.dtype)
    elif c.dtype.kind == "c":
        flat = (rng.standard_normal(size) + 1j * rng.standard_normal(size)).astype(c.dtype)
    else:
        flat = rng.standard_normal(size).astype(c.dtype)
        extra = special(rng, c.dtype)
        at = rng.choice(size, size=min(size, len(extra)), replace=False)
        flat[at] = extra[:len(at)]
    x = flat.reshape(c.shape)
    if c.layout == "transposed":
        return np.ascontiguousarray(x.T).T
    if c.layout == "stepped":
        wide = np.zeros(c.shape[:-1] + (2 * c.shape[-1],), c.dtype)
        wide[..., ::2] = x
        return wide[..., ::2]
    if c.layout == "reversed":
        return np.ascontiguousarray(x[..., ::-1])[..., ::-1]
    return x


def run(c: Config, x: np.ndarray) -> np.ndarray:
    out = None
    if c.out:
        out = np.empty(tuple(math.floor(n * s) for n, s in zip(c.shape, c.scales)), c.dtype)
    if c.op == "Upsample":
        return oc.upsample(x, np.float32(c.scales), opset=9, out=out)
    attrs = dict(c.attrs)
    if attrs.get("coordinate_transformation_mode") == "tf_crop_and_resize":
        attrs["roi"] = np.array([-0.1] * len(c.shape) + [1.2] * len(c.shape), np.float32)
        attrs["extrapolation_value"] = 3.0
    if c.sizes:
        attrs["sizes"] = np.array([math.floor(n * s) for n, s in zip(c.shape, c.scales)])
    else:
        attrs["scales"] = np.float32(c.scales)
    return oc.resize(x, mode="nearest", out=out, **attrs)


@pytest.fixture
def passes(monkeypatch):
    """A function `passes(kind)` that chooses the NumPy path's nearest passes for the calls
    prepared after it: "fast" (each pass, however small, repeats where its column is a repeat
    and gathers the columns otherwise), "plain" (every pass a plain gather) or "default" (the
    module's own choice by size, PLAIN_BYTES); the prepared calls are cleared at each use."""
    sizes = {"fast": 0, "plain": 1 << 62, "default": numpy_path.PLAIN_BYTES}

    def choose(kind: str) -> None:
        replan()
        monkeypatch.setattr(numpy_path, "PLAIN_BYTES", sizes[kind])

    yield choose
    replan()


@pytest.fixture
def found_repeats(monkeypatch):
    """The repeat factors that the NumPy path's repeat detection finds from now on, in order
    (`_repeat`'s k: 0 for a column that is no repeat)."""
    found: list[int] = []
    repeat = numpy_path._repeat

    def spy(column: np.ndarray) -> tuple[int, int]:
        start, k = repeat(column)
        found.append(k)
        return start, k

    monkeypatch.setattr(numpy_path, "_repeat", spy)
    return found


def both(c: Config, x: np.ndarray, passes, found_repeats: list[int],
         monkeypatch: pytest.MonkeyPatch) -> tuple[np.ndarray, np.ndarray, list[int]]:
    """(the fast passes' result, every pass a plain gather's result, the repeat factors found);
    the module's own choice of passes again after it."""
    start = len(found_repeats)
    with monkeypatch.context() as m:
        if c.chunk is not None:
            m.setattr(numpy_path, "CHUNK_BYTES", c.chunk)
        passes("fast")
        fast = run(c, x)
        passes("plain")
        plain = run(c, x)
        passes("default")
    return fast, plain, found_repeats[start:]


@pytest.mark.parametrize("c", CONFIGS, ids=[c.name for c in CONFIGS])
def test_configuration(c, passes, found_repeats, monkeypatch):
    rng = np.random.default_rng([SEED, c.index, 1])
    x = sample(rng, c)
    before = x.copy()
    fast, plain, found = both(c, x, passes, found_repeats, monkeypatch)
    assert fast.dtype == plain.dtype == c.dtype and fast.shape == plain.shape
    assert fast.tobytes() == plain.tobytes()
    assert x.tobytes() == before.tobytes()
    if c.op == "Upsample":   # floor(o / k) at an integer scale k: each element k times
        want = x
        for axis, s in enumerate(c.scales):
            want = np.repeat(want, int(s), axis=axis)
        assert fast.tobytes() == np.ascontiguousarray(want).tobytes()
        if c.chunk is None:   # one chunk: every resized axis found as a repeat
            assert sorted(found) == sorted(int(s) for s in c.scales if s != 1)
    default = run(c, x)       # the module's own choice of passes
    assert default.tobytes() == plain.tobytes()


def test_configurations_reach_both_kinds_of_pass(monkeypatch, passes):
    """The seeded configurations repeat along the last axis by the multiply (several widths),
    gather repeat columns elsewhere, and gather columns that are no repeat."""
    seen = {"multiply": set(), "repeat": 0, "gather": 0}
    nearest = numpy_path._nearest

    def spy(column, axis, shape, dtype):
        k = numpy_path._repeat(column)[1]
        if axis == len(shape) - 1 and k > 1 and dtype.itemsize * k in (2, 4, 8) and \
                not dtype.hasobject:
            seen["multiply"].add((dtype.itemsize, k))
        elif k > 1:
            seen["repeat"] += 1
        elif not k:
            seen["gather"] += 1
        return nearest(column, axis, shape, dtype)
    monkeypatch.setattr(numpy_path, "_nearest", spy)
    for c in CONFIGS:
        passes("fast")
        run(c, sample(np.random.default_rng(c.index), c))
    assert seen["multiply"] >= {(1, 2), (1, 4), (1, 8), (2, 2), (2, 4), (4, 2)}
    assert seen["repeat"] >= 40 and seen["gather"] >= 40


@pytest.mark.parametrize("column, want", [
    ([0, 0, 1, 1, 2, 2], (0, 2)), ([3, 3, 3, 4, 4, 4], (3, 3)), ([5], (5, 1)),
    ([2, 3, 4], (2, 1)), ([0, 0, 0, 0], (0, 4)),
    ([0, 1, 1, 2, 2, 3], (0, 0)),   # runs shifted by one (asymmetric + ceil at 2x)
    ([0, 0, 1, 1, 2], (0, 0)),      # the last run cut short
    ([0, 0, 1, 1, 1, 2], (0, 0)), ([0, 0, 2, 2], (0, 0)), ([1, 1, 0, 0], (0, 0)),
    ([0, 0, 1, 2], (0, 0)), ([], (0, 0))])
def test_repeat_detection(column, want):
    assert numpy_path._repeat(np.array(column, np.int64)) == want


@pytest.mark.parametrize("mode, nearest_mode, repeats", [
    ("half_pixel", "round_prefer_floor", True), ("half_pixel", "round_prefer_ceil", True),
    ("asymmetric", "floor", True), ("asymmetric", "round_prefer_floor", True),
    ("half_pixel", "floor", False), ("half_pixel", "ceil", False),
    ("asymmetric", "round_prefer_ceil", False), ("asymmetric", "ceil", False),
    ("align_corners", "floor", False), ("align_corners", "round_prefer_floor", True)])
def test_which_resize_modes_repeat_at_2x(mode, nearest_mode, repeats, passes, found_repeats):
    """At scale 2, half_pixel with either tie rule and asymmetric floor repeat each element
    twice; the other modes shift or stretch the runs and gather, but for align_corners rounded
    to nearest (12 -> 24: x = o * 11 / 23 = o / 2 - o / 46 rounds to o // 2): the columns
    decide, not the attributes."""
    passes("fast")
    x = np.arange(12, dtype=np.float32)
    y = oc.resize(x, scales=[2.0], coordinate_transformation_mode=mode, nearest_mode=nearest_mode)
    assert found_repeats == [2 if repeats else 0]
    assert (y.tobytes() == np.repeat(x, 2).tobytes()) == repeats


def test_the_multiply_keeps_every_bit_of_every_pattern():
    """Every float16 bit pattern (all NaN payloads, both zeros, subnormals), 2x and 4x along the
    last axis, and every byte 8x."""
    x = np.arange(1 << 16, dtype=np.uint32).astype(np.uint16).view(np.float16).reshape(256, 256)
    for k in (2, 4):
        y = oc.resize(x, scales=[1.0, float(k)])
        assert y.view(np.uint16).tolist() == np.repeat(x.view(np.uint16), k, axis=1).tolist()
    b = np.arange(256, dtype=np.uint8).reshape(16, 16)
    assert oc.upsample(b, [1.0, 8.0]).tolist() == np.repeat(b, 8, axis=1).tolist()


@pytest.mark.parametrize("dtype", DTYPES, ids=[d.str for d in DTYPES])
@pytest.mark.parametrize("k", [1, 2, 3, 4, 8])
@pytest.mark.parametrize("start", [0, 2])
@pytest.mark.parametrize("axis", [0, 1, 2])
def test_each_pass_and_its_into_variant_gather(dtype, k, start, axis, passes):
    """Both forms of a nearest pass equal a.take(column, axis) for repeat columns that start
    inside the axis (as a chunk of the first axis's rows gives), with its special values."""
    passes("fast")
    rng = np.random.default_rng([SEED, k, start, axis])
    shape = (3, 5, 7)
    c = Config(0, "Resize", dtype, shape, (1.0,) * 3, "stepped", (), False, None, False)
    a = sample(rng, c)
    n = shape[axis] - start - 1
    column = start + np.arange(n * k) // k
    step, into = numpy_path._nearest(column, axis, shape, dtype)
    want = a.take(column, axis=axis)
    assert step(a).dtype == dtype and step(a).tobytes() == want.tobytes()
    assert into is not None
    out = np.zeros_like(want)
    into(a, out)
    assert out.tobytes() == want.tobytes()
