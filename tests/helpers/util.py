"""Test helpers: backend array conversion, random inputs, single-node ONNX models and oracles."""
from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

import ml_dtypes
import numpy as np
import onnx
from onnx import helper, numpy_helper

from onnx_cupy.core import calls, execution

BF16 = np.dtype(ml_dtypes.bfloat16)
FLOAT_DTYPES = [np.dtype(np.float16), BF16, np.dtype(np.float32), np.dtype(np.float64)]
# tolerance of a backend result against a float64-accurate oracle, per dtype
TOL = {"float16": (2e-3, 2e-3), "bfloat16": (1.6e-2, 1.6e-2), "float32": (1e-5, 1e-6),
       "float64": (1e-12, 1e-13)}


def random(rng: np.random.Generator, shape: tuple[int, ...], dtype: Any, low: float = -2.0,
           high: float = 3.0) -> np.ndarray:
    """Fresh random values (never all zeros), exactly representable in `dtype`."""
    return rng.uniform(low, high, size=shape).astype(dtype)


def replan(*cached: Any) -> None:
    """Clear the host caches `cached` (functools caches of launch arguments) and every prepared
    call (onnx_cupy.core.calls), so that the next call plans again under a test's patches."""
    for fn in cached:
        fn.cache_clear()
    calls.clear()


def launch_caches() -> list[Any]:
    """Every cached function of the families' kernel launches (the functools caches of each
    registered family's onnx_cupy.<family>.kernel module) and the launcher's grid arithmetic:
    what a patched offset width or grid limit must not find filled before it."""
    import importlib

    from onnx_cupy.core import launcher, loader

    found: list[Any] = [launcher.grid_for]
    for family in loader.families():
        module = importlib.import_module(f"onnx_cupy.{family}.kernel")
        found += [fn for fn in vars(module).values() if hasattr(fn, "cache_clear")
                  and getattr(fn, "__module__", None) == module.__name__]
    return found


def replan_launches() -> None:
    """`replan` of every family's cached launch arguments (launch_caches)."""
    replan(*launch_caches())


def to_backend(x: Any, backend: str) -> Any:
    if backend == "cupy" and isinstance(x, np.ndarray):
        return execution.cupy_module().asarray(x)
    return x


def to_numpy(x: Any) -> np.ndarray:
    return execution.cupy_module().asnumpy(x) if execution.is_cupy_array(x) else np.asarray(x)


def at_byte_offset(a: np.ndarray, offset: int, path: str) -> Any:
    """`a`'s values in a view whose first element lies `offset` bytes past an aligned address
    (256 bytes), on `path` (a device array at the same offset on cupy)."""
    if path == "cupy":
        cp = execution.cupy_module()
        raw = cp.empty(a.nbytes + offset, np.uint8)
        view = raw[offset:].view(a.dtype).reshape(a.shape)
        view[...] = cp.asarray(a)
        return view
    raw = np.empty(a.nbytes + 256 + offset, np.uint8)
    start = -raw.ctypes.data % 256 + offset
    view = raw[start:start + a.nbytes].view(a.dtype).reshape(a.shape)
    view[...] = a
    return view


def assert_same_bits(got: Any, want: Any) -> None:
    """One shape and dtype, the same bits everywhere but at NaNs, which must be NaNs in both
    (a NaN's payload is the hardware's)."""
    got, want = to_numpy(got), to_numpy(want)
    assert got.shape == want.shape and got.dtype == want.dtype, (got.shape, got.dtype,
                                                                  want.shape, want.dtype)
    g, w = got.astype(np.float64), want.astype(np.float64)
    nan = np.isnan(w)
    assert np.array_equal(np.isnan(g), nan), "NaNs differ"
    words = np.dtype(f"u{got.dtype.itemsize}")
    differ = (got.view(words) != want.view(words)) & ~nan
    assert not differ.any(), (f"{differ.sum()} of {got.size} elements differ, first at "
                              f"{np.argwhere(differ)[0]}: {g[differ][:4]} != {w[differ][:4]}")


def assert_close(got: Any, expected: np.ndarray, dtype: Any = None, scale: float = 1.0) -> None:
    got = to_numpy(got)
    dtype = np.dtype(dtype or expected.dtype)
    assert got.shape == expected.shape, (got.shape, expected.shape)
    assert got.dtype == dtype, (got.dtype, dtype)
    rtol, atol = TOL.get(dtype.name, (0, 0))
    np.testing.assert_allclose(got.astype(np.float64), to_numpy(expected).astype(np.float64),
                               rtol=rtol * scale, atol=atol * scale, equal_nan=True)


def ulp_distance(a: Any, b: Any) -> np.ndarray:
    """How many steps of representable values apart a and b are, element by element (int64):
    arrays of one float dtype (float16, bfloat16, float32, float64), compared through their
    order-preserving integer images, so that a step is one ulp at every magnitude: subnormals,
    across the smallest normal and across zero (+0.0 and -0.0 are 0 apart). Two NaNs are 0
    apart; a NaN and a number, int64's maximum (also the cap of a longer distance, which only
    float64's opposite extremes reach)."""
    a, b = to_numpy(a), to_numpy(b)
    assert a.dtype == b.dtype and a.dtype in FLOAT_DTYPES, (a.dtype, b.dtype)
    assert a.shape == b.shape, (a.shape, b.shape)
    signed = np.dtype(f"i{a.dtype.itemsize}")
    low = np.iinfo(signed).min

    def image(v: np.ndarray) -> np.ndarray:
        s = np.ascontiguousarray(v).view(signed).astype(np.int64)
        return np.where(s < 0, low - s, s)   # sign and magnitude to two's complement

    ia, ib = image(a), image(b)
    with np.errstate(over="ignore"):   # exact modulo 2^64, and the true distance is < 2^64
        far = np.where(ia >= ib, ia.astype(np.uint64) - ib.astype(np.uint64),
                       ib.astype(np.uint64) - ia.astype(np.uint64))
    far = np.minimum(far, np.uint64(np.iinfo(np.int64).max)).astype(np.int64)
    nan_a, nan_b = np.isnan(a.astype(np.float64)), np.isnan(b.astype(np.float64))
    return np.where(nan_a & nan_b, 0, np.where(nan_a | nan_b, np.iinfo(np.int64).max, far))


def tensor_type(dtype: Any) -> int:
    return helper.np_dtype_to_tensor_dtype(np.dtype(dtype))


def node_model(op: str, inputs: list[tuple[str, Any]], attrs: dict[str, Any], opset: int,
               n_outputs: int = 1, *, shape: tuple[int, ...] | None = None,
               initializers: dict[str, np.ndarray] | None = None) -> onnx.ModelProto:
    """A one-node model; `inputs` are (name, dtype) pairs ('' name = omitted optional input), the
    first one's shape declared as `shape` (as exporters write it), those in `initializers`
    stored in the graph. Uses make_model_gen_version so current onnxruntime accepts the IR
    version (IR 3 for opsets it lists none for)."""
    initializers = initializers or {}
    node = helper.make_node(op, [n for n, _ in inputs], [f"Y{i}" for i in range(n_outputs)],
                            **attrs)
    graph = helper.make_graph(
        [node], "g",
        [helper.make_tensor_value_info(n, tensor_type(t), shape if k == 0 else None)
         for k, (n, t) in enumerate(inputs) if n and n not in initializers],
        [helper.make_tensor_value_info(f"Y{i}", inputs[0][1] and tensor_type(inputs[0][1]), None)
         for i in range(n_outputs)],
        [numpy_helper.from_array(a, n) for n, a in initializers.items()],
    )
    imports = [helper.make_opsetid("", opset)]
    try:
        return helper.make_model_gen_version(graph, opset_imports=imports)
    except ValueError:  # no IR version listed for opsets 1-4: IR 3 reads them
        return helper.make_model(graph, opset_imports=imports, ir_version=3)


def inferred_shape(model: onnx.ModelProto) -> tuple[int, ...] | None:
    """The static output shape ONNX shape inference (strict, with data propagation) gives, or
    None where it infers none."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = onnx.shape_inference.infer_shapes(model, strict_mode=True, data_prop=True)
    t = out.graph.output[0].type.tensor_type
    if not t.HasField("shape") or not all(d.HasField("dim_value") for d in t.shape.dim):
        return None
    return tuple(d.dim_value for d in t.shape.dim)


def reference(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    from onnx.reference import ReferenceEvaluator

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return ReferenceEvaluator(model).run(None, feeds)


def onnxruntime(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    import onnxruntime as ort

    opts = ort.SessionOptions()
    opts.intra_op_num_threads = 1
    opts.log_severity_level = 4
    sess = ort.InferenceSession(model.SerializeToString(), opts, providers=["CPUExecutionProvider"])
    return sess.run(None, feeds)


def forbid_work(monkeypatch: Any) -> None:
    """From now on, a call that passed its checks fails the test: every family's call is
    planned (all validation) before its path is prepared (KernelCall.prepare_plan), which is
    where allocating and launching begin, so an error must come before it."""
    from onnx_cupy.core import kernel_call

    def forbidden(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("a call passed its checks: it would allocate and launch")
    monkeypatch.setattr(kernel_call.KernelCall, "prepare_plan", forbidden)


def forget_libraries(monkeypatch: Any) -> dict[Any, Any]:
    """For the rest of the test, no emulator library loaded in this process (as a new process
    starts: the disk cache, if any, serves the next build); returns the emulator's table of
    the libraries the process loads from now on."""
    from onnx_cupy.core import emulator

    monkeypatch.setattr(emulator, "_libraries", {})
    return emulator._libraries


def record_builds(monkeypatch: Any, cache: Any) -> list[list[str]]:
    """Point the emulator at an empty cache `cache`, with no library loaded in this process, and
    return the list that every compiler run from now on is appended to (its command)."""
    import subprocess

    monkeypatch.setenv("ONNX_CUPY_CACHE", str(cache))
    forget_libraries(monkeypatch)
    builds: list[list[str]] = []
    real_run = subprocess.run

    def counting_run(cmd: list[str], *args: Any, **kwargs: Any) -> Any:
        builds.append(cmd)
        return real_run(cmd, *args, **kwargs)

    monkeypatch.setattr(subprocess, "run", counting_run)   # (the emulator's builds run through it)
    return builds


def build_file(path: Any, kernels: dict[str, str], checked: bool = False) -> Any:
    """The emulator's library of the CUDA source file at `path` (the loader's common defines),
    with the instantiations `kernels` (name expression -> the __global__ it instantiates)."""
    from pathlib import Path

    from onnx_cupy.core import emulator, loader

    path = Path(path)
    return emulator.build(f'#line 1 "{path.name}"\n' + path.read_text(), kernels, path.stem,
                          loader.COMMON_DEFINES, checked)


@contextlib.contextmanager
def schedule(seed: int) -> Iterator[None]:
    """Inside the block, the emulator's cooperative launches order their threads by `seed`."""
    from onnx_cupy.core import emulator

    token = emulator._seed.set(int(seed))
    try:
        yield
    finally:
        emulator._seed.reset(token)
