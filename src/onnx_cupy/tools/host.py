"""`onnx-cupy bench`'s host section: microseconds of host time per repeated call on the CuPy
path, measured on a non-executing emulated device standing in for CuPy
(onnx_cupy.core.emulated_device), so without a GPU: each call builds its key, finds its prepared
call, allocates its outputs from the device's pool and packs its launches' arguments as CuPy
does (the device runs no kernel, keeps no records and leaves out the driver's own launch time;
see its docstring). The operators' rows are held to targets (the median over them, and the
slowest); the PyTorch-style functions, run_node and the ONNX backend's run, and the device's own
allocation and launch, are reported beside them.
"""
from __future__ import annotations

import functools
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

MEDIAN_TARGET_US = 10.0    # median over the operators' rows, microseconds per call
SLOWEST_TARGET_US = 15.0   # the slowest operator's row
CALLS_PER_SAMPLE = 200

_P3: dict[str, Any] = {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}


@dataclass(frozen=True)
class HostCall:
    """One measured call: `run(oc, F, x, *others)` on a float32 X of `shape` (oc: onnx_cupy;
    F: onnx_cupy.nn.functional) and the further inputs `others(shape)` gives (moved to the
    device once); `judged`: an operator's row, held to the targets."""

    name: str
    shape: tuple[int, ...]
    run: Callable[..., Any]
    judged: bool = True
    others: Callable[[tuple[int, ...]], tuple[np.ndarray, ...]] = lambda shape: ()


def _pooled_indices(shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """MaxUnpool's Indices for an X of `shape` pooled 2x2 s2: the top-left of each window of
    the unpooled (N, C, 2H, 2W), as flat indices."""
    n, c, h, w = shape
    planes = np.arange(n * c).reshape(n, c, 1, 1) * (4 * h * w)
    rows = np.arange(h).reshape(h, 1) * (4 * w)
    return (planes + rows + 2 * np.arange(w),)


def _plane_indices(shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """PyTorch's max_unpool2d indices for an X of `shape` pooled 2x2 s2: the top-left of each
    window, counted within its own (n, c) plane."""
    h, w = shape[2:]
    rows = np.arange(h).reshape(h, 1) * (4 * w)
    return (np.broadcast_to(rows + 2 * np.arange(w), shape).astype(np.int64),)


def _grid(shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """A GridSample grid of one position per pixel of X's image, uniform in [-1.1, 1.1]."""
    n, _, h, w = shape
    return (np.random.default_rng(1).uniform(-1.1, 1.1, (n, h, w, 2)).astype(np.float32),)


def _boxes(shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """RoiAlign's rois and batch_indices: 1000 boxes on X's image at stride 16."""
    rng = np.random.default_rng(2)
    corner = rng.uniform(0, 16, (1000, 2)) * (shape[3], shape[2])
    boxes = np.concatenate([corner, corner + rng.uniform(16, 400, (1000, 2))], axis=1)
    return boxes.astype(np.float32), np.zeros(1000, np.int64)


def _pooled(shape: tuple[int, ...]) -> tuple[int, ...]:
    """The output shape of a 3x3 s2 p1 pool of an X of `shape`."""
    return (*shape[:2], *((n - 1) // 2 + 1 for n in shape[2:]))


def _cotangent(shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """dY of a 3x3 s2 p1 pool of an X of `shape` (values unread: the device executes nothing)."""
    return (np.zeros(_pooled(shape), np.float32),)


def _saved_indices(shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """dY and the Indices a 3x3 s2 p1 MaxPool of an X of `shape` saved."""
    return (*_cotangent(shape), np.zeros(_pooled(shape), np.int64))


def _saved_output(shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """dY and the Y a 3x3 s2 p1 LpPool of an X of `shape` saved."""
    return (*_cotangent(shape), np.ones(_pooled(shape), np.float32))


def _unpool_gradient(shape: tuple[int, ...]) -> tuple[np.ndarray, ...]:
    """MaxUnpool's indices for an X of `shape` pooled 2x2 s2, and dY of its output's shape."""
    n, c, h, w = shape
    return (*_pooled_indices(shape), np.zeros((n, c, 2 * h, 2 * w), np.float32))


def _gradient(op: str, attributes: dict[str, Any]) -> Callable[..., Any]:
    """The pooling family's gradient of `op` given the forward's saved output (the call
    onnx_cupy.vjp makes after its forward, and PyTorch's autograd makes)."""
    def run(oc: Any, F: Any, x: Any, dy: Any, saved: Any) -> Any:
        from ..pool import api

        return api.gradient(op, x, dy, (22, attributes), saved=saved)
    return run


@functools.cache
def _node() -> Any:
    """The AveragePool node of the run_node row (made once)."""
    from onnx import helper

    return helper.make_node("AveragePool", ["X"], ["Y"], **_P3)


def _backend_run(oc: Any, x: Any) -> Callable[[], Any]:
    """A prepared onnx.backend rep of one AveragePool node; its run returns NumPy arrays (a copy
    of the output to the host, which the onnx.backend interface asks for)."""
    from onnx import TensorProto, helper

    from ..interop import onnx_backend

    graph = helper.make_graph(
        [_node()], "host",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, None)])
    rep = onnx_backend.prepare(helper.make_model_gen_version(
        graph, opset_imports=[helper.make_opsetid("", 22)]), "CUDA")
    return lambda: rep.run([x])


CALLS: tuple[HostCall, ...] = (
    HostCall("AveragePool 3x3 s2 p1", (1, 64, 56, 56),
             lambda oc, F, x: oc.average_pool(x, **_P3)),
    HostCall("MaxPool 3x3 s2 p1", (1, 64, 56, 56), lambda oc, F, x: oc.max_pool(x, **_P3)),
    HostCall("LpPool p=2 3x3 s2 p1", (1, 64, 56, 56), lambda oc, F, x: oc.lp_pool(x, p=2, **_P3)),
    HostCall("GlobalAveragePool", (1, 64, 56, 56), lambda oc, F, x: oc.global_average_pool(x)),
    HostCall("Hardmax axis=-1", (1, 1000), lambda oc, F, x: oc.hardmax(x)),
    HostCall("Resize linear 2x", (1, 64, 56, 56),
             lambda oc, F, x: oc.resize(x, scales=[1, 1, 2, 2], mode="linear")),
    HostCall("Resize nearest (sizes)", (1, 64, 56, 56),
             lambda oc, F, x: oc.resize(x, sizes=[1, 64, 112, 112])),
    HostCall("Resize cubic antialias 0.5x", (1, 3, 224, 224),
             lambda oc, F, x: oc.resize(x, scales=[1, 1, 0.5, 0.5], mode="cubic", antialias=1)),
    HostCall("Upsample nearest 2x", (1, 64, 56, 56),
             lambda oc, F, x: oc.upsample(x, [1.0, 1.0, 2.0, 2.0])),
    HostCall("MaxUnpool 2x2 s2", (1, 64, 28, 28),
             lambda oc, F, x, i: oc.max_unpool(x, i, kernel_shape=[2, 2], strides=[2, 2]),
             others=_pooled_indices),
    HostCall("GridSample linear", (1, 3, 224, 224), lambda oc, F, x, g: oc.grid_sample(x, g),
             others=_grid),
    HostCall("AffineGrid 224x224", (1, 2, 3),
             lambda oc, F, x: oc.affine_grid(x, [1, 3, 224, 224])),
    HostCall("RoiAlign 1000 boxes 7x7", (1, 256, 50, 68),
             lambda oc, F, x, r, b: oc.roi_align(x, r, b, output_height=7, output_width=7,
                                                 sampling_ratio=2, spatial_scale=1 / 16),
             others=_boxes),
    # gradients: onnx_cupy.vjp (MaxPool's with its forward, which computes the Indices), and
    # the family's gradient given a saved forward output, as autograd calls it
    HostCall("AveragePool 3x3 s2 p1 backward: vjp", (1, 64, 56, 56),
             lambda oc, F, x, dy: oc.vjp(oc.average_pool, x, cotangent=dy, **_P3),
             others=_cotangent),
    HostCall("MaxPool 3x3 s2 p1 backward: vjp (forward included)", (1, 64, 56, 56),
             lambda oc, F, x, dy: oc.vjp(oc.max_pool, x, cotangent=dy, **_P3),
             judged=False, others=_cotangent),   # two calls: the forward's Indices, then dX
    HostCall("MaxPool 3x3 s2 p1 backward, saved Indices", (1, 64, 56, 56),
             _gradient("MaxPool", _P3), others=_saved_indices),
    HostCall("LpPool p=2 3x3 s2 p1 backward, saved Y", (1, 64, 56, 56),
             _gradient("LpPool", {**_P3, "p": 2}), others=_saved_output),
    HostCall("GlobalAveragePool backward: vjp", (1, 64, 56, 56),
             lambda oc, F, x, dy: oc.vjp(oc.global_average_pool, x, cotangent=dy),
             others=lambda shape: (np.zeros((*shape[:2], 1, 1), np.float32),)),
    HostCall("Resize linear 2x backward: vjp", (1, 64, 56, 56),
             lambda oc, F, x, dy: oc.vjp(oc.resize, x, None, [1, 1, 2, 2], cotangent=dy,
                                         mode="linear"),
             others=lambda shape: (np.zeros((*shape[:2], 2 * shape[2], 2 * shape[3]),
                                            np.float32),)),
    HostCall("MaxUnpool 2x2 s2 backward: vjp", (1, 64, 28, 28),
             lambda oc, F, x, i, dy: oc.vjp(oc.max_unpool, x, i, cotangent=dy,
                                            kernel_shape=[2, 2], strides=[2, 2]),
             others=_unpool_gradient),
    HostCall("F.avg_pool2d(x, 3, 2, 1)", (1, 64, 56, 56),
             lambda oc, F, x: F.avg_pool2d(x, 3, 2, 1), judged=False),
    HostCall("F.max_pool2d(x, 3, 2, 1)", (1, 64, 56, 56),
             lambda oc, F, x: F.max_pool2d(x, 3, 2, 1), judged=False),
    HostCall("F.interpolate(x, scale_factor=2, mode='bilinear')", (1, 64, 56, 56),
             lambda oc, F, x: F.interpolate(x, scale_factor=2, mode="bilinear"), judged=False),
    HostCall("F.adaptive_avg_pool2d(x, 7)", (1, 64, 56, 56),
             lambda oc, F, x: F.adaptive_avg_pool2d(x, 7), judged=False),
    HostCall("F.max_unpool2d(x, indices, 2)", (1, 64, 28, 28),
             lambda oc, F, x, i: F.max_unpool2d(x, i, 2), judged=False, others=_plane_indices),
    HostCall("F.grid_sample(x, grid)", (1, 3, 224, 224),
             lambda oc, F, x, g: F.grid_sample(x, g, align_corners=False), judged=False,
             others=_grid),
    HostCall("run_node(AveragePool node)", (1, 64, 56, 56),
             lambda oc, F, x: oc.run_node(_node(), [x], opset=22),
             judged=False),
)


def measure(samples: int = 15, calls: int = CALLS_PER_SAMPLE) -> dict[str, Any]:
    """Microseconds per call of every row (median and range over `samples` samples of `calls`
    calls each, the rows taking turns sample by sample), on a non-executing emulated device
    installed as the library's cupy for the run; the targets judged on the operators' rows."""
    import onnx_cupy as oc

    from ..core import loader
    from ..core.emulated_device import EmulatedDevice
    from ..nn import functional as F

    device = EmulatedDevice(executing=False)   # the library's host work alone
    with device.installed():
        rng = np.random.default_rng(0)
        runs: dict[str, Callable[[], Any]] = {}
        for c in CALLS:
            runs[c.name] = functools.partial(c.run, oc, F, device.asarray(
                rng.standard_normal(c.shape).astype(np.float32)),
                *map(device.asarray, c.others(c.shape)))
        try:
            runs["onnx_backend rep.run (output to NumPy)"] = _backend_run(oc, device.asarray(
                rng.standard_normal((1, 64, 56, 56)).astype(np.float32)))
        except ImportError:   # onnx is not installed
            pass
        y, g = device.empty((64, 28, 28), np.float32), np.zeros(1, np.dtype([("n", "<i8")]))
        x = device.asarray(np.zeros(8, np.float32))
        # pool_global: (x, y, struct), the struct passed by its address
        launch = loader.cuda_function(next(k for k in loader.instantiations("pool")
                                           if k.template == "pool_global"))
        runs["emulated device: cupy.empty((1, 64, 28, 28))"] = lambda: device.empty(
            (1, 64, 28, 28), np.float32)
        runs["emulated device: a launch of (x, y, struct)"] = lambda: launch(
            (1, 1, 1), (256, 1, 1), (x, y, device.cuda.function.CPointer(g.ctypes.data)))
        for run in runs.values():
            run()      # the first call: plan, compile (on the device's NVRTC), upload
        times: dict[str, list[float]] = {name: [] for name in runs}
        for _ in range(samples):
            for name, run in runs.items():
                start = time.perf_counter()
                for _ in range(calls):
                    run()
                times[name].append((time.perf_counter() - start) / calls * 1e6)
    judged = {c.name for c in CALLS if c.judged}
    rows: list[dict[str, Any]] = [
        {"call": name, "judged": name in judged, "us": statistics.median(t),
         "us_range": [min(t), max(t)]} for name, t in times.items()]
    medians = [statistics.median(t) for name, t in times.items() if name in judged]
    median, slowest = statistics.median(medians), max(medians)
    return {"samples": samples, "calls_per_sample": calls, "rows": rows,
            "targets": {"median_us": median, "median_target_us": MEDIAN_TARGET_US,
                        "median_met": median <= MEDIAN_TARGET_US, "slowest_us": slowest,
                        "slowest_target_us": SLOWEST_TARGET_US,
                        "slowest_met": slowest <= SLOWEST_TARGET_US}}


def table(host: dict[str, Any]) -> str:
    """The rows as a Markdown table, then the targets."""
    lines = ["| call (float32, repeated) | us per call | range | held to the targets |",
             "|---|--:|--:|---|"]
    for r in host["rows"]:
        lo, hi = r["us_range"]
        lines.append(f"| {r['call']} | {r['us']:.1f} | {lo:.1f}-{hi:.1f} | "
                     f"{'yes' if r['judged'] else 'no'} |")
    t = host["targets"]
    lines += ["", (f"Targets (operators' rows): median {t['median_us']:.1f} us <= "
                   f"{t['median_target_us']:g} {'ok' if t['median_met'] else 'MISS'}; slowest "
                   f"{t['slowest_us']:.1f} us <= {t['slowest_target_us']:g} "
                   f"{'ok' if t['slowest_met'] else 'MISS'}.")]
    return "\n".join(lines)
