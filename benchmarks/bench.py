"""Throughput of onnx-cupy against onnxruntime CPU (1 intra-op thread) and onnx.reference,
measured in the same run; peak additional memory of the NumPy fallback; on a GPU, the CUDA
path's achieved bandwidth against a device-to-device copy of the same bytes.

    python benchmarks/bench.py [--quick] [--op NAME] [--out benchmarks/results]

Prints a table and writes <out>/<backend>-<host>.md and .json.
"""
from __future__ import annotations

import argparse
import datetime
import json
import platform
import statistics
import time
import tracemalloc
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper

import onnx_cupy as oc
from onnx_cupy import backends


@dataclass
class Case:
    """One benchmark: an ONNX node with attributes, its input shape and extra inputs."""

    name: str
    op: str
    shape: tuple[int, ...]
    attrs: dict[str, Any]
    call: Callable[[Any], Any]
    ref_shape: tuple[int, ...]                  # smaller input for onnx.reference
    target: float = 0.0                          # required speed ratio vs onnxruntime
    inputs: tuple[str, ...] = ("X",)             # node inputs; "" = omitted optional input
    extra: dict[str, np.ndarray] = field(default_factory=dict)  # values of inputs other than X


def _bound(fn: Callable[..., Any], **attrs: Any) -> Callable[[Any], Any]:
    return lambda x: fn(x, **attrs)


_POOL_3X3 = dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])


CASES = [
    Case("AveragePool 3x3 s2 p1", "AveragePool", (8, 64, 112, 112), _POOL_3X3,
         _bound(oc.average_pool, **_POOL_3X3), (1, 2, 56, 56), target=0.5),
    Case("LpPool p=2 3x3 s2 p1", "LpPool", (8, 64, 112, 112), dict(_POOL_3X3, p=2),
         _bound(oc.lp_pool, **_POOL_3X3, p=2), (1, 2, 56, 56), target=1.0),
]
if hasattr(oc, "hardmax"):
    CASES.append(Case("Hardmax axis=-1", "Hardmax", (4096, 1000), dict(axis=-1),
                      _bound(oc.hardmax, axis=-1), (64, 1000), target=1.0))
if hasattr(oc, "resize"):
    def _resize(mode: str, scale: float, rank: int = 4, **attrs: Any) -> tuple[dict, Callable, dict]:
        scales = np.array([1.0, 1.0] + [scale] * (rank - 2), dtype=np.float32)
        return (dict(mode=mode, **attrs), _bound(oc.resize, scales=scales, mode=mode, **attrs),
                {"scales": scales})

    for label, mode, scale, shape, ref_shape, extra_attrs in (
        ("Resize linear 2x half_pixel", "linear", 2.0, (8, 64, 56, 56), (1, 1, 28, 28), {}),
        ("Resize nearest 2x", "nearest", 2.0, (8, 64, 56, 56), (1, 1, 28, 28), {}),
        ("Resize cubic antialias 0.5x", "cubic", 0.5, (8, 3, 512, 512), (1, 1, 64, 64),
         dict(antialias=1)),
    ):
        attrs, call, extra = _resize(mode, scale, **extra_attrs)
        CASES.append(Case(label, "Resize", shape, attrs, call, ref_shape, target=0.5,
                          inputs=("X", "", "scales"), extra=extra))


def _model(case: Case, dtype: np.dtype, opset: int = 22) -> onnx.ModelProto:
    t = helper.np_dtype_to_tensor_dtype(dtype)
    node = helper.make_node(case.op, list(case.inputs), ["Y"], **case.attrs)
    inputs = [helper.make_tensor_value_info("X", t, None)] + [
        helper.make_tensor_value_info(n, helper.np_dtype_to_tensor_dtype(v.dtype), None)
        for n, v in case.extra.items()]
    graph = helper.make_graph([node], "bench", inputs, [helper.make_tensor_value_info("Y", t, None)])
    return helper.make_model_gen_version(graph, opset_imports=[helper.make_opsetid("", opset)])


def _median_seconds(fn: Callable[[], Any], repeats: int, sync: Callable[[], None] = lambda: None) -> float:
    fn()
    sync()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append(time.perf_counter() - t0)
    return statistics.median(times)


def _peak_memory(fn: Callable[[], Any]) -> int:
    tracemalloc.start()
    tracemalloc.reset_peak()
    base = tracemalloc.get_traced_memory()[0]
    fn()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    return peak - base


def bench_cpu(case: Case, quick: bool) -> dict[str, Any]:
    import onnxruntime as ort
    from onnx.reference import ReferenceEvaluator

    rng = np.random.default_rng(0)
    shape = tuple(max(1, s // 4) if quick and i == 0 else s for i, s in enumerate(case.shape))
    x = rng.standard_normal(shape).astype(np.float32)
    repeats = 3 if quick else 7
    y = case.call(x)
    ours = _median_seconds(lambda: case.call(x), repeats)
    peak = _peak_memory(lambda: case.call(x))

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.inter_op_num_threads = 1
    sess = ort.InferenceSession(_model(case, x.dtype).SerializeToString(), opts,
                                providers=["CPUExecutionProvider"])
    feeds = {"X": x, **case.extra}
    ort_y = sess.run(None, feeds)[0]
    ort_t = _median_seconds(lambda: sess.run(None, feeds), repeats)

    xr = rng.standard_normal(case.ref_shape).astype(np.float32)
    ref = ReferenceEvaluator(_model(case, x.dtype))
    ref_t = _median_seconds(lambda: ref.run(None, {"X": xr, **case.extra}), 1)
    ours_small = _median_seconds(lambda: case.call(xr), repeats)

    return {
        "case": case.name, "shape": list(shape), "dtype": "float32",
        "ours_ms": ours * 1e3, "onnxruntime_ms": ort_t * 1e3,
        "vs_onnxruntime": ort_t / ours, "target_vs_onnxruntime": case.target,
        "max_abs_diff_vs_onnxruntime": float(np.max(np.abs(ort_y.astype(np.float64) - y)))
        if y.shape == ort_y.shape else None,
        "ours_Melem_s": x.size / ours / 1e6,
        "reference_Melem_s": xr.size / ref_t / 1e6,
        "vs_reference": (x.size / ours) / (xr.size / ref_t),
        "reference_shape": list(case.ref_shape), "ours_small_ms": ours_small * 1e3,
        "peak_extra_bytes": peak, "in_out_bytes": x.nbytes + y.nbytes,
        "peak_ratio": peak / (x.nbytes + y.nbytes),
    }


def bench_gpu(case: Case, quick: bool) -> dict[str, Any]:
    import cupy as cp

    shape = tuple(max(1, s // 4) if quick and i == 0 else s for i, s in enumerate(case.shape))
    x = cp.random.standard_normal(shape, dtype=cp.float32)
    y = case.call(x)
    start, stop = cp.cuda.Event(), cp.cuda.Event()

    def timed(fn: Callable[[], Any], repeats: int = 20) -> float:
        fn()
        times = []
        for _ in range(repeats):
            start.record()
            fn()
            stop.record()
            stop.synchronize()
            times.append(cp.cuda.get_elapsed_time(start, stop) / 1e3)
        return statistics.median(times)

    t = timed(lambda: case.call(x))
    moved = x.nbytes + y.nbytes
    src = cp.empty(moved // 2, dtype=cp.uint8)
    dst = cp.empty_like(src)
    copy_t = timed(lambda: dst.__setitem__(Ellipsis, src))
    return {"case": case.name, "shape": list(shape), "dtype": "float32", "gpu_ms": t * 1e3,
            "GB_s": moved / t / 1e9, "copy_GB_s": moved / copy_t / 1e9,
            "share_of_copy": (moved / t) / (moved / copy_t)}


def _table(rows: list[dict[str, Any]], cols: list[tuple[str, str, str]]) -> str:
    head = "| " + " | ".join(c[1] for c in cols) + " |"
    sep = "|" + "|".join("---" for _ in cols) + "|"
    body = ["| " + " | ".join(format(r[c[0]], c[2]) if r.get(c[0]) is not None else "-"
                              for c in cols) + " |" for r in rows]
    return "\n".join([head, sep, *body])


CPU_COLS = [("case", "case", ""), ("shape", "shape", ""), ("ours_ms", "numpy ms", ".2f"),
            ("onnxruntime_ms", "onnxruntime ms", ".2f"), ("vs_onnxruntime", "x onnxruntime", ".2f"),
            ("target_vs_onnxruntime", "target", ".1f"), ("vs_reference", "x onnx.reference", ".0f"),
            ("peak_ratio", "peak mem / (in+out)", ".2f")]
GPU_COLS = [("case", "case", ""), ("shape", "shape", ""), ("gpu_ms", "GPU ms", ".3f"),
            ("GB_s", "GB/s", ".0f"), ("copy_GB_s", "copy GB/s", ".0f"),
            ("share_of_copy", "share of copy", ".2f")]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="quarter batch, fewer repeats")
    parser.add_argument("--op", action="append", help="only cases of this operator")
    parser.add_argument("--out", default=str(Path(__file__).parent / "results"))
    args = parser.parse_args()
    cases = [c for c in CASES if not args.op or c.op in args.op]
    rows = [bench_cpu(c, args.quick) for c in cases]
    report = ["# onnx-cupy benchmark", "",
              f"{datetime.date.today()} · {platform.node()} · {platform.processor() or platform.machine()}"
              f" · numpy {np.__version__} · onnx {onnx.__version__} · "
              f"onnxruntime {__import__('onnxruntime').__version__}", "",
              "## NumPy fallback vs onnxruntime CPU (1 thread) and onnx.reference", "",
              _table(rows, CPU_COLS)]
    result: dict[str, Any] = {"cpu": rows}
    if backends.gpu_available():
        import cupy as cp

        gpu_rows = [bench_gpu(c, args.quick) for c in cases]
        props = cp.cuda.runtime.getDeviceProperties(0)
        report += ["", f"## CUDA path on {props['name'].decode()} (CuPy {cp.__version__})", "",
                   _table(gpu_rows, GPU_COLS)]
        result["gpu"] = gpu_rows
    text = "\n".join(report) + "\n"
    print(text)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    stem = f"{'gpu' if 'gpu' in result else 'numpy'}-{platform.node() or 'host'}"
    (out / f"{stem}.md").write_text(text)
    (out / f"{stem}.json").write_text(json.dumps(result, indent=1))
    print(f"wrote {out / stem}.md and .json")


if __name__ == "__main__":
    main()
