"""interpolate: ONNX Resize-19 (or adaptive average pooling for mode "area") with PyTorch's
output lengths, source coordinates and float32 tables."""
from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, cast

import numpy as np

from ...core import calls, numerics
from ...core.attributes import is_int, is_real
from ...pool import api as pool_api
from ...resize import api as resize_api
from ...resize import plan as resize_plan
from .arguments import _RESIZE_OPSET, _check_bools, _In, _tensors
from .prepared import Prepared, _cached, _check_grad_output

_MODES = ("nearest", "linear", "bilinear", "bicubic", "trilinear", "area", "nearest-exact")
_RANK_OF_MODE = {"linear": 3, "bilinear": 4, "bicubic": 4, "trilinear": 5}
_ONNX_MODE = {"nearest": "nearest", "nearest-exact": "nearest", "linear": "linear",
              "bilinear": "linear", "trilinear": "linear", "bicubic": "cubic"}


def _interpolate_target(x: Any, size: Any, scale_factor: Any, recompute_scale_factor: Any
                        ) -> tuple[list[int], list[float] | None]:
    """PyTorch's output lengths and the scale factors its kernels see (None: from the sizes)."""
    spatial = list(x.shape[2:])
    if size is not None and scale_factor is not None:
        raise ValueError("interpolate: only one of size or scale_factor should be defined")
    if size is not None:
        if recompute_scale_factor:
            raise ValueError("interpolate: recompute_scale_factor is not meaningful with an "
                             "explicit size.")
        sizes = _per_axis(size, spatial, "output", "output size of", "size", is_int, "an int")
        return [int(v) for v in sizes], None
    if scale_factor is None:
        raise ValueError("interpolate: either size or scale_factor should be defined")
    factors = _per_axis(scale_factor, spatial, "scale_factor", "scale_factor of shape",
                        "scale_factor", is_real, "a number")
    factors = [float(v) for v in factors]
    if not all(math.isfinite(v) for v in factors):
        raise ValueError(f"interpolate: scale_factor must be finite, got {factors}")
    sizes = [math.floor(n * f) for n, f in zip(spatial, factors)]
    return sizes, None if recompute_scale_factor else factors


def _per_axis(value: Any, spatial: list[int], subject: str, named: str, name: str, valid: Any,
              kind: str) -> list[Any]:
    """interpolate's `size` or `scale_factor`: one value or one per spatial axis, each `valid`,
    with PyTorch's errors (`subject` and `named` name it in the length mismatch, `name` and
    `kind` in the type error)."""
    values = list(value) if isinstance(value, Sequence) else [value] * len(spatial)
    if len(values) != len(spatial):
        raise ValueError(f"interpolate: input and {subject} must have the same number of spatial "
                         f"dimensions, but got input with spatial dimensions of {spatial} and "
                         f"{named} {values}")
    if not all(map(valid, values)):
        raise TypeError(f"interpolate: {name} must be {kind} or a sequence of {kind}s, "
                        f"got {value!r}")
    return values


@_tensors
def interpolate(input: _In, size: Any = None, scale_factor: Any = None, mode: str = "nearest",
                align_corners: bool | None = None, recompute_scale_factor: bool | None = None,
                antialias: bool = False) -> _In:
    """PyTorch's `torch.nn.functional.interpolate` on a NumPy or CuPy array or a
    PyTorch tensor.

    Runs ONNX Resize-19 on the spatial axes (N and C kept):

    ==============================  =====================================================
    PyTorch                         Resize attributes
    ==============================  =====================================================
    nearest                         asymmetric, nearest_mode floor
    nearest-exact                   half_pixel, nearest_mode round_prefer_ceil
    linear/bilinear/trilinear       linear, half_pixel (align_corners: align_corners)
    bicubic                         cubic, cubic_coeff_a -0.75, half_pixel or align_corners
    antialias=True                  antialias 1, exclude_outside 1 (bicubic: a = -0.5)
    area                            none: adaptive average pooling (adaptive_avg_pool*d)
    ==============================  =====================================================

    with PyTorch's lengths and coordinates: the output length is floor(n * scale_factor) in
    float64; with scale_factor given (recompute_scale_factor not set) the source coordinate
    is computed from 1 / scale_factor (also for an output length of 1, where ONNX's
    pytorch_half_pixel takes x = 0), otherwise from n / size; nearest and nearest-exact compute
    it in float32, multiplying by float32(1 / scale_factor) (or float32(n) / float32(size)) as
    PyTorch does, and so do the other modes on float16, bfloat16 and float32 inputs, with
    PyTorch's float32 weights and fused multiply-adds (float64 inputs: float64). An axis whose
    length stays is copied in the linear and antialiased modes and in 2-D nearest, whatever the
    scale factor (1-D and 3-D nearest, nearest-exact and bicubic resample it), and 2-D nearest takes
    element y // 2 where the length doubles (e.g. at scale_factor 2.05), as PyTorch's CPU kernels
    do. The antialiased modes sample x = (y + 0.5) * step - 0.5 and stretch the filter by step where
    step > 1: step is 1 / scale_factor or n / size, and with align_corners (n - 1) / (size - 1) (0
    for one output); where the output width is 1 and the height changes, every output row takes row
    0's samples, as PyTorch's kernels do. The model an exporter writes (scales =
    float32(scale_factor)) can differ from these results; see docs/pytorch.md.

    Parameters
    ----------
    input : numpy.ndarray, cupy.ndarray or torch.Tensor
        (N, C, *spatial) with 1-3 spatial axes (linear: 1, bilinear/bicubic: 2, trilinear: 3).
    size : int or sequence of int, optional
        Output spatial lengths.
    scale_factor : float or sequence of float, optional
        Multipliers of the spatial lengths; give size or scale_factor.
    mode : str, default "nearest"
        nearest, nearest-exact, linear, bilinear, bicubic, trilinear, area (adaptive average
        pooling to the output lengths, as adaptive_avg_pool1d/2d/3d).
    align_corners : bool, optional
        For linear, bilinear, bicubic and trilinear only (default False).
    recompute_scale_factor : bool, optional
        Compute the coordinates from the output lengths instead of scale_factor.
    antialias : bool, default False
        bilinear and bicubic on 4-D inputs: the filter stretched by 1 / scale when shrinking.

    Returns
    -------
    numpy.ndarray, cupy.ndarray or torch.Tensor
        Input's dtype, on its device.

    Raises
    ------
    ValueError
        Where PyTorch raises ValueError: both or neither of size and scale_factor; a length
        mismatch; align_corners with a nearest mode; recompute_scale_factor with size;
        antialias outside bilinear/bicubic on 4-D input; output or input lengths < 1.
    NotImplementedError
        Where PyTorch raises it (a mode that does not fit the input's rank).

    Examples
    --------
    >>> import numpy as np
    >>> from onnx_cupy.nn import functional as F
    >>> x = np.arange(8, dtype=np.float32).reshape(1, 1, 8)
    >>> F.interpolate(x, scale_factor=0.3, mode="nearest-exact")
    array([[[1., 5.]]], dtype=float32)
    >>> F.interpolate(np.array([[[0.0, 1.0]]]), size=4, mode="linear")
    array([[[0.  , 0.25, 0.75, 1.  ]]])
    """
    return cast(_In, _interpolate(input, size, scale_factor, mode, align_corners,
                                  recompute_scale_factor, antialias))


def _interpolate(input: Any, size: Any, scale_factor: Any, mode: str,
                 align_corners: bool | None, recompute_scale_factor: bool | None,
                 antialias: bool) -> Any:
    return _cached(_prepare_interpolate, input, resize_plan.OP, size, scale_factor, mode,
                   align_corners, recompute_scale_factor, antialias)


def _prepare_interpolate(x: Any, backend: str, name: str, *args: Any) -> Prepared:
    target, attrs, keyed = _translate(x, *args)
    if attrs is None:   # area
        return lambda xb: pool_api.adaptive_pool("AdaptiveAveragePool", xb, target)
    return lambda xb: resize_api.run(xb, None, None, target, _RESIZE_OPSET, attrs, source=keyed)


def _interpolate_gradient(input: Any, grad_output: Any, size: Any, scale_factor: Any, mode: str,
                          align_corners: bool | None, recompute_scale_factor: bool | None,
                          antialias: bool) -> Any:
    """The gradient of interpolate's input, given its output's `grad_output`: Resize's
    (onnx_cupy.resize.plan_grad: the transpose of the forward's tables), or for mode "area"
    the adaptive average pool's."""
    return _cached(_prepare_interpolate_gradient, input, resize_plan.OP, size, scale_factor,
                   mode, align_corners, recompute_scale_factor, antialias, others=(grad_output,))


def _prepare_interpolate_gradient(x: Any, backend: str, name: str, size: Any,
                                  scale_factor: Any, mode: str, align_corners: bool | None,
                                  recompute_scale_factor: bool | None, antialias: bool, dy: Any
                                  ) -> Callable[[Any, Any], Any]:
    target, attrs, keyed = _translate(x, size, scale_factor, mode, align_corners,
                                      recompute_scale_factor, antialias)
    if attrs is None:   # area
        _check_grad_output("interpolate", dy, x, (*x.shape[:2], *target))
        return lambda xg, dyg: pool_api.gradient("AdaptiveAveragePool", xg, dyg, (target,))
    _check_grad_output("interpolate", dy, x, tuple(target))
    if keyed is not None and keyed.value.first_row:   # PyTorch's backward: each row its own
        keyed = calls.Keyed(dataclasses.replace(keyed.value, first_row=False))
    return lambda xg, dyg: resize_api.gradient(xg, dyg, (_RESIZE_OPSET, keyed, attrs),
                                               (None, None, target))


def _translate(x: Any, size: Any, scale_factor: Any, mode: str, align_corners: bool | None,
               recompute_scale_factor: bool | None, antialias: bool
               ) -> tuple[list[int], dict[str, Any] | None, calls.Keyed | None]:
    """PyTorch's checks of interpolate's arguments, then what runs: (Resize's output shape, its
    attributes and coordinate source), or for mode "area" (the output's spatial lengths, None,
    None): adaptive average pooling."""
    if not isinstance(mode, str):
        raise TypeError(f"interpolate: mode must be a string, got {mode!r}")
    _check_bools("interpolate", ("align_corners", "recompute_scale_factor"),
                 align_corners=align_corners, recompute_scale_factor=recompute_scale_factor,
                 antialias=antialias)
    if mode not in _MODES:
        raise NotImplementedError(f"interpolate: mode {mode!r} is not supported (expected one of "
                                  f"{', '.join(_MODES)})")
    if mode in ("nearest", "area", "nearest-exact") and align_corners is not None:
        raise ValueError("interpolate: align_corners option can only be set with the "
                         "interpolating modes: linear | bilinear | bicubic | trilinear")
    align_corners = bool(align_corners)
    if antialias and not (mode in ("bilinear", "bicubic") and x.ndim == 4):
        raise ValueError("interpolate: anti-alias option is restricted to bilinear and bicubic "
                         "modes and requires a 4-D tensor as input")
    if x.ndim not in (3, 4, 5):
        raise NotImplementedError(f"interpolate: only 3D, 4D and 5D inputs are supported (got "
                                  f"{x.ndim}D) for the modes: {' | '.join(_MODES)} (got {mode})")
    if mode in _RANK_OF_MODE and x.ndim != _RANK_OF_MODE[mode]:
        raise NotImplementedError(f"interpolate: got {x.ndim}D input, but {mode} mode needs "
                                  f"{_RANK_OF_MODE[mode]}D input")
    sizes, factors = _interpolate_target(x, size, scale_factor, recompute_scale_factor)
    spatial = list(x.shape[2:])
    if mode == "area":   # adaptive average pooling to the output lengths (which may be 0)
        if any(n < 1 for n in spatial):
            raise ValueError(f"interpolate: expected input to have non-zero size for non-batch "
                             f"dimensions, got input {spatial}")
        return sizes, None, None
    if any(n < 1 for n in spatial) or any(m < 1 for m in sizes):
        raise ValueError(f"interpolate: input and output sizes should be greater than 0, but got "
                         f"input {spatial} and output {sizes}")
    attrs: dict[str, Any] = {"mode": _ONNX_MODE[mode],
                             "coordinate_transformation_mode": "half_pixel"}
    if mode == "nearest":
        attrs.update(coordinate_transformation_mode="asymmetric", nearest_mode="floor")
    elif mode == "nearest-exact":
        attrs.update(nearest_mode="round_prefer_ceil")
    elif align_corners:
        attrs.update(coordinate_transformation_mode="align_corners")
    if mode == "bicubic":
        attrs.update(cubic_coeff_a=-0.5 if antialias else -0.75)
    if antialias:
        attrs.update(antialias=1, exclude_outside=1)
    # PyTorch copies an axis whose length stays in the linear and antialiased modes and in 2-D
    # nearest, whose kernel also takes y // 2 where the length doubles (1-D and 3-D resample)
    copies = mode in ("linear", "bilinear", "trilinear") or antialias or (
        mode == "nearest" and len(spatial) == 2)
    halves = mode == "nearest" and len(spatial) == 2
    source: _Coordinates | None = None
    if mode.startswith("nearest"):  # float32(1 / scale_factor) or float32(n) / float32(m)
        source = _Coordinates(mode == "nearest-exact", tuple(
            1.0 if copies and m == n else 0.5 if halves and m == 2 * n else
            float(np.float32(1.0 / f)) if factors else float(np.float32(n) / np.float32(m))
            for n, m, f in zip(spatial, sizes, factors or sizes)))
    elif align_corners:  # antialias: half-pixel centres at the align_corners step
        source = _Coordinates(antialias, tuple((n - 1) / (m - 1) if m > 1 else 0.0
                                               for n, m in zip(spatial, sizes)),
                              single_steps=tuple(_F32(n - 1) / _F32(m - 1) if m > 1 else 0.0
                                                 for n, m in zip(spatial, sizes)))
    else:   # float32: PyTorch's float steps, float32(1 / scale_factor) or float32(n) / m
        source = _Coordinates(True, tuple(1.0 if copies and m == n else 1.0 / f if factors
                                          else n / m
                                          for n, m, f in zip(spatial, sizes, factors or sizes)),
                              single_steps=tuple(
                                  1.0 if copies and m == n else _F32(1.0 / f) if factors
                                  else _F32(n) / _F32(m)
                                  for n, m, f in zip(spatial, sizes, factors or sizes)))
    if source is not None and antialias and sizes[-1] == 1 and sizes[0] != spatial[0]:
        source = dataclasses.replace(source, first_row=True)
    target, attrs = [*x.shape[:2], *sizes], {**resize_plan.DEFAULTS, **attrs}
    keyed = calls.Keyed(source)   # keyed once: the family call's key writes its bytes
    return target, attrs, keyed


_FLOAT32_EXACT = 2**24   # longest axis whose every index float32 holds (nearest in float32)
_F32 = np.float32
# The multiply-adds PyTorch's x86-64 CPU kernels (compiled for AVX2 and AVX-512, where the
# compiler contracts a * b + c into one fused multiply-add) round once, in the Keys polynomials
# of resize_plan.keys32: bicubic's weights, and the antialiased bicubic filter
_CUBIC_FUSED = ("inner", "first", "second")
_FILTER_FUSED = ("inner", "outer", "first", "second", "last")


@dataclass(frozen=True)
class _Coordinates:
    """PyTorch's source coordinates, as a Resize coordinate source: along spatial axis d, output
    coordinate y samples x = (y + 0.5) * step_d - 0.5 (`half_pixel`) or x = y * step_d, with
    step_d the input distance between output samples (1 / scale_factor, or n / m; antialias with
    align_corners: (n - 1) / (m - 1), 0 for m = 1), computed in float32 for the nearest modes
    (as PyTorch does; float64 past 2^24) and float64 otherwise (linear and cubic on 16- and
    32-bit floats take PyTorch's float32 tables instead: `single`); antialias filters stretch by
    step_d (not below 1), and `first_row` gives every output row of axis 2 output row 0's
    coordinate (PyTorch's antialiased kernels where the output width is 1). Rounding ties are
    exact (nearest-exact floors (y + 0.5) * step_d). An axis of step 1 that keeps its length is
    copied, and so are the batch and channel axes."""

    half_pixel: bool
    steps: tuple[float, ...]   # per spatial axis
    first_row: bool = False    # every output row samples output row 0's coordinate
    single_steps: tuple[float, ...] = ()   # PyTorch's float32 steps (linear and cubic modes)

    def coordinates(self, a: resize_plan.Axis, nearest: bool
                    ) -> tuple[np.ndarray, np.ndarray] | None:
        step = self.steps[a.axis - 2] if a.axis >= 2 else 1.0
        if step == 1 and a.m == a.n:
            return None
        single = nearest and max(a.n, a.m) <= _FLOAT32_EXACT
        f: Any = np.float32 if single else np.float64
        y = np.arange(a.m, dtype=f)
        x = (y + f(0.5)) * f(step) - f(0.5) if self.half_pixel else y * f(step)
        if self.first_row and a.axis == 2:
            x = np.full_like(x, x[:1])
        return x.astype(np.float64), np.zeros(a.m, dtype=bool)

    def filter_scale(self, a: resize_plan.Axis) -> float:
        step = self.steps[a.axis - 2]
        return 1.0 / step if step else math.inf

    def tie(self, a: resize_plan.Axis) -> float:
        return 0.0   # PyTorch floors (y + 0.5) * step: an exact test

    def single(self, a: resize_plan.Axis, at: resize_plan.Attributes, dtype: np.dtype
               ) -> resize_plan.Table | None:
        """PyTorch's float32 tables (its float kernels' arithmetic; on 16-bit floats bicubic's
        weights are then rounded to the dtype, as PyTorch stores them), with s = the float32
        step: x = fma(s, y + 0.5, -0.5) (`half_pixel`; linear: not below 0) or s * y,
        i = min(floor(x), n - 1), t = x - i clamped into [0, 1], then
          linear     taps i and min(i + 1, n - 1), weights (1 - t, t)
          cubic      taps i - 1 ... i + 2 clamped into [0, n), the Keys weights of
                     float32(t + 1), t, 1 - t, float32((1 - t) + 1) (_CUBIC_FUSED)
          antialias  PyTorch's (Pillow's) windows: centre c = float32(s * (y + 0.5)), support
                     1 or 2 (times s where s >= 1), taps from int(c - support + 0.5) (at least
                     0) to int(c + support + 0.5) (at most n), filter of
                     float32((k - c) + 0.5) / max(1, s)) (_FILTER_FUSED), each weight divided
                     by their float32 sum."""
        step = self.steps[a.axis - 2] if a.axis >= 2 else 1.0
        if step == 1 and a.m == a.n:
            return None
        s = _F32(self.single_steps[a.axis - 2])
        y = np.arange(a.m, dtype=_F32)
        if at.antialias:
            index, weight = _antialias32(at, s, a.n, a.m)
        else:
            x = numerics.fma32(s, y + _F32(0.5), _F32(-0.5)) if self.half_pixel else s * y
            if at.mode == "linear":
                x = np.maximum(x, _F32(0))
            low = np.minimum(np.floor(x).astype(np.int64), a.n - 1)
            t = np.clip(x - low.astype(_F32), _F32(0), _F32(1)).astype(_F32)
            if at.mode == "linear":
                index = np.stack([low, low + (low < a.n - 1)], axis=1)
                weight = np.stack([_F32(1) - t, t], axis=1)
            else:
                far = (_F32(1) - t).astype(np.float64) + 1.0
                index = np.clip(low[:, None] + np.arange(-1, 3), 0, a.n - 1)
                weight = resize_plan.keys32(at.cubic_coeff_a, (
                    t.astype(np.float64) + 1.0, t, _F32(1) - t, far), _CUBIC_FUSED)
        if self.first_row and a.axis == 2:
            index, weight = (np.repeat(v[:1], a.m, axis=0) for v in (index, weight))
        if dtype != np.float32 and at.mode == "cubic" and not at.antialias:
            weight = weight.astype(dtype)
        return index, weight.astype(np.float64), np.zeros(a.m, dtype=bool)


def _antialias32(at: resize_plan.Attributes, s: np.float32, n: int, m: int
                 ) -> tuple[np.ndarray, np.ndarray]:
    """PyTorch's antialias windows in float32 (see `_Coordinates.single`)."""
    half = 1.0 if at.mode == "linear" else 2.0
    support = _F32(half * float(s)) if s >= 1 else _F32(half)
    shrink = _F32(1.0 / float(s)) if s >= 1 else _F32(1)
    centre = (float(s) * (np.arange(m) + 0.5)).astype(_F32)
    low = np.maximum(np.trunc((centre - support).astype(np.float64) + 0.5), 0).astype(np.int64)
    count = np.minimum(np.trunc((centre + support).astype(np.float64) + 0.5), n) - low
    width = math.ceil(support) * 2 + 1
    count = np.clip(count, 0, width).astype(np.int64)
    taps = max(int(count.max(initial=1)), 1)
    k = low[:, None] + np.arange(taps)
    inside = np.arange(taps) < count[:, None]
    u = (((k.astype(_F32) - centre[:, None]).astype(np.float64) + 0.5)
         * float(shrink)).astype(_F32)
    u = np.abs(u)
    if at.mode == "linear":
        w = np.where(u < 1, (1.0 - u.astype(np.float64)).astype(_F32), _F32(0))
    else:
        keys = resize_plan.keys32(at.cubic_coeff_a, (u, u, u, u), _FILTER_FUSED)
        w = np.where(u < 1, keys[:, 1], np.where(u < 2, keys[:, 0], _F32(0)))
    w = np.where(inside, w, _F32(0)).astype(_F32)
    total = resize_plan.sum32(w)
    w = np.where((total != 0)[:, None], w / np.where(total == 0, _F32(1), total)[:, None], w)
    return np.clip(k, 0, n - 1), np.where(inside, w, _F32(0)).astype(_F32)
