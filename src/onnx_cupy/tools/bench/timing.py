"""Measurement: contenders timed in turns (CUDA events on the GPU, perf_counter on the CPU),
agreement with onnxruntime, the NumPy path's peak memory, one row of the report per case, size
and dtype."""
from __future__ import annotations

import math
import statistics
import time
import tracemalloc
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ...core import execution
from . import cases
from .cases import FUNCTIONS, TINY_TARGET_US, Case, NotApplicable
from .peers import Peer, Runner

TOLERANCE = {"float32": 1e-4, "float16": 1e-2}   # agreement: max |a - b| <= tol * max(1, max |b|)
MEMORY_TARGET = 2.0        # NumPy fallback: peak additional bytes / bytes of X and Y
# ... judged where X and Y hold at least this many bytes: tracemalloc counts a call's Python
# objects too (keys, views: a few KiB), which smaller data cannot hold twice over
MEMORY_JUDGED_BYTES = 1 << 16

# (warm-up calls, timed calls) per clock and mode: the fewest. On the CPU (not --quick) a row
# whose calls are short makes more of both, until our calls fill WARM_SECONDS and TIMED_SECONDS
# (at most MOST_CALLS): a short call's median is otherwise taken over a few milliseconds, which a
# change in the machine's state (the rows before, the other core's work) can cover whole
REPEATS = {("cpu", False): (3, 25), ("cpu", True): (1, 3), ("gpu", False): (10, 100),
           ("gpu", True): (2, 10)}
WARM_SECONDS, TIMED_SECONDS, MOST_CALLS = 0.02, 0.1, 2000



class _CpuClock:
    def start(self) -> None:
        self.t0 = time.perf_counter()

    def stop(self) -> float:
        return time.perf_counter() - self.t0


class _GpuClock:
    """CUDA events on CuPy's current stream."""

    def __init__(self) -> None:
        self.cp = execution.cupy_module()
        self.begin, self.end = self.cp.cuda.Event(), self.cp.cuda.Event()

    def start(self) -> None:
        self.begin.record()

    def stop(self) -> float:
        self.end.record()
        self.end.synchronize()
        return float(self.cp.cuda.get_elapsed_time(self.begin, self.end)) * 1e-3


@dataclass
class _Timed:
    """One contender of a row: its function, the inputs it cycles through and its clock; collects
    the times and last output of its calls, or the exception that stopped it."""

    fn: Runner
    xs: Sequence[Any]
    clock: Any
    warmup: int
    repeats: int
    times: list[float] = field(default_factory=list)
    y: Any = None
    error: Exception | None = None

    def call(self, i: int) -> None:
        """Call number i: a warm-up below `warmup`, then timed; none past the last."""
        if self.error is not None or i >= self.warmup + self.repeats:
            return
        try:
            self.clock.start()
            self.y = self.fn(self.xs[i % len(self.xs)])
            seconds = self.clock.stop()
        except Exception as e:  # noqa: BLE001 - a peer lacking this operator, attribute or dtype
            self.error = e
            return
        if i >= self.warmup:
            self.times.append(seconds)

    @property
    def seconds(self) -> float:
        """Median time of the timed calls."""
        return statistics.median(self.times)

    def spread(self) -> dict[str, float]:
        """The interquartile range of the times in ms (a noise gauge), where there are several."""
        if len(self.times) < 2:
            return {}
        q1, _, q3 = statistics.quantiles(self.times, n=4)
        return {"ms_iqr": (q3 - q1) * 1e3}


def _in_turns(timed: Sequence[_Timed]) -> None:
    """Call the contenders in turns (a, b, a, b, ...) until each has had its warm-ups and timed
    calls, so that a change in machine load affects all alike."""
    for i in range(max(t.warmup + t.repeats for t in timed)):
        for t in timed:
            t.call(i)


def _rotating(x: Any) -> Any:
    """Copies of the device array `x` stacked along a new first axis, more than twice the GPU's
    L2 cache in total, so that an input is no longer cached when its turn comes again."""
    cp = execution.cupy_module()
    rt = cp.cuda.runtime
    l2 = rt.deviceGetAttribute(rt.cudaDevAttrL2CacheSize, x.device.id)
    pool = cp.empty((2 * l2 // max(x.nbytes, 1) + 2, *x.shape), dtype=x.dtype)
    pool[...] = x
    return pool


def _host(y: Any) -> np.ndarray:
    """A NumPy copy of an output: NumPy, CuPy, torch.Tensor or onnxruntime OrtValue."""
    if isinstance(y, np.ndarray) or execution.is_cupy_array(y):
        return np.asarray(execution.to_host(y))
    if hasattr(y, "detach"):
        return np.asarray(y.detach().cpu().numpy())
    return np.asarray(y.numpy())


def _max_abs_diff(got: np.ndarray, expected: np.ndarray) -> float:
    """The largest |got - expected|, equal values (infinities of one sign, NaN against NaN)
    counting 0; inf for another shape."""
    if got.shape != expected.shape:
        return math.inf
    g, e = got.astype(np.float64), expected.astype(np.float64)
    same = (g == e) | (np.isnan(g) & np.isnan(e))
    with np.errstate(invalid="ignore"):
        return float(np.max(np.where(same, 0.0, np.abs(g - e)), initial=0.0))


def _agrees(diff: float, expected: np.ndarray, dtype: str) -> bool:
    return diff <= TOLERANCE[dtype] * max(1.0, float(np.max(np.abs(expected), initial=0.0)))


def _elements_per_second(x: Any, y: Any, seconds: float) -> float:
    return float(x.size + y.size) / seconds


def _peak_ratio(fn: Callable[[Any], Any], x: np.ndarray) -> float:
    """Peak bytes allocated during one call (the output included) over the bytes of X and Y."""
    tracemalloc.start()
    try:
        y = fn(x)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    return float(peak / (x.nbytes + y.nbytes))


@dataclass
class Run:
    backend: str
    quick: bool
    peers: list[Peer]

    @property
    def gpu(self) -> bool:
        return self.backend == "cupy"

    @property
    def judged(self) -> bool:
        """Targets apply to the NumPy fallback at the canonical shapes."""
        return self.backend == "numpy" and not self.quick

    def timed(self, fn: Runner, xs: Sequence[Any], device_arrays: bool,
              call_seconds: float = 0.0) -> _Timed:
        """`fn` as a contender: CUDA events for device calls on the GPU, else perf_counter; on
        the CPU, as many calls as REPEATS and WARM_SECONDS/TIMED_SECONDS of ours (a call of
        ours taking `call_seconds`) ask for."""
        kind = "gpu" if self.gpu and device_arrays else "cpu"
        warmup, repeats = REPEATS[kind, self.quick]
        if kind == "cpu" and not self.quick and call_seconds > 0:
            warmup = max(warmup, min(MOST_CALLS, math.ceil(WARM_SECONDS / call_seconds)))
            repeats = max(repeats, min(MOST_CALLS, math.ceil(TIMED_SECONDS / call_seconds)))
        return _Timed(fn, xs, _GpuClock() if kind == "gpu" else _CpuClock(), warmup, repeats)

    def ours(self, case: Case) -> Callable[[Any], Any]:
        if case.backward:
            return self._gradient(case)
        fn = FUNCTIONS[case.op]
        moved: dict[tuple[Any, ...], dict[str, Any]] = {}   # shaped inputs on X's path, once

        def run(x: Any) -> Any:
            inputs: dict[str, Any] = case.inputs
            if case.shaped_inputs is not None:
                key = (x.shape, x.dtype)   # both hashable as they are: no string per call
                found = moved.get(key)
                if found is None:
                    found = moved[key] = {k: self.device(v) for k, v in
                                          case.inputs_for(tuple(x.shape), str(x.dtype)).items()}
                inputs = found
            if self.backend != "emulated":   # the path X's array type picks, as a user calls
                return fn(x, **inputs, **case.attrs, opset=case.opset)
            with execution.backend(self.backend):
                return fn(x, **inputs, **case.attrs, opset=case.opset)
        return run

    def _gradient(self, case: Case) -> _Gradient:
        """A backward row's call of ours: dX for X, its cotangent and saved forward output made
        from X on the host at its first call (not timed), on the run's path."""
        return _Gradient(case, self)

    def device(self, x: np.ndarray) -> Any:
        return execution.cupy_module().asarray(x) if self.gpu else x


class _Gradient:
    """Ours on a backward row: `gradient(case, x, dY, saved, ...)` with the inputs made once
    per X's shape (the run's X is one array, or on the GPU copies of it); `cotangent`: the dY
    of the last X, whose elements the row counts with dX's."""

    def __init__(self, case: Case, run: Run) -> None:
        self.case, self.run = case, run
        self.made: dict[tuple[Any, ...], dict[str, Any]] = {}
        self.cotangent: np.ndarray | None = None

    def __call__(self, x: Any) -> Any:
        key = (x.shape, x.dtype)
        found = self.made.get(key)
        if found is None:
            host = cases.gradient_inputs(self.case, np.asarray(execution.to_host(x)))
            self.cotangent = host["dY"]
            found = self.made[key] = {k: None if v is None else self.run.device(v)
                                      for k, v in host.items()}
        if self.run.backend != "emulated":
            return cases.gradient(self.case, x, **found)
        with execution.backend(self.run.backend):
            return cases.gradient(self.case, x, **found)


def _na(e: Exception) -> dict[str, Any]:
    """Why a peer is n/a: its own reason, or the first line of the error it raised."""
    if isinstance(e, NotApplicable):
        return {"na": str(e)}
    first = (str(e).strip().splitlines() or [""])[0][:200]
    return {"na": f"{type(e).__name__}: {first}"}


def _result(peer: Peer, t: _Timed, x: np.ndarray, expected: np.ndarray, case: Case, dtype: str,
            size: str, run: Run, ours_rate: float, counted: Any = None) -> dict[str, Any]:
    """A peer's entry in a row: its time, ratio and agreement with `expected` (our output for
    `x`), or why it is n/a; `counted`: the input whose elements count with the output's (X,
    or a backward row's dY)."""
    if t.error is not None:
        return _na(t.error)
    y = _host(t.y)
    diff = _max_abs_diff(y, expected)
    if not _agrees(diff, expected, dtype):
        return {"na": f"outputs differ from ours (max abs diff {diff:.3g})", "max_abs_diff": diff}
    rate = _elements_per_second(x if counted is None else counted, y, t.seconds)
    result: dict[str, Any] = {"shape": list(x.shape), "ms": t.seconds * 1e3, **t.spread(),
                              "melem_s": rate / 1e6, "ratio": ours_rate / rate,
                              "max_abs_diff": diff}
    if run.judged and peer.name in case.targets(dtype, size):
        result["target"] = case.targets(dtype, size)[peer.name]
        result["met"] = result["ratio"] >= result["target"]
    return result


def _copy_seconds(nbytes: int, run: Run) -> float:
    """Median time of a device-to-device copy moving `nbytes` (read + write), from rotating
    sources."""
    cp = execution.cupy_module()
    half = max(nbytes // 2, 1)
    dst = cp.empty(half, dtype=cp.uint8)
    t = run.timed(lambda src: dst.data.copy_from_device_async(src.data, half),
                  _rotating(cp.empty(half, dtype=cp.uint8)), True)
    _in_turns([t])
    return t.seconds


def _contender(peer: Peer, case: Case, dtype: str, x: np.ndarray, xs: Sequence[Any],
               y: np.ndarray, run: Run, call_seconds: float = 0.0
               ) -> tuple[_Timed | None, dict[str, Any]]:
    """The peer set up for input `x` (`xs` on the device) and output `y`, with the details it
    reports, timed as many times as ours (a call of ours taking `call_seconds`); or None and
    why it is n/a."""
    try:
        fn, details = peer.setup(case, dtype, x.shape, y.shape)
    except Exception as e:  # noqa: BLE001 - the peer lacks this operator, attribute or dtype
        return None, _na(e)
    if peer.slow:
        return _Timed(fn, [x], _CpuClock(), 0, 1), details
    inputs = xs if peer.device_arrays else [x]
    return run.timed(fn, inputs, peer.device_arrays, call_seconds), details


def measure(case: Case, dtype: str, run: Run, size: str = "canonical") -> dict[str, Any]:
    """One report row: `case` at `dtype` and `size` on the run's backend and each peer, timed
    in turns (onnx.reference: once, on the reduced shape, for the canonical size only)."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal(case.shapes(run.quick)[size]).astype(dtype)
    ours = run.ours(case)
    xs = _rotating(run.device(x)) if run.gpu else [x]
    y = _host(ours(xs[0]))
    took = 0.0   # on the GPU a call returns before its kernels end: the fewest calls there
    if not run.gpu:
        start = time.perf_counter()
        ours(xs[0])   # a prepared call: how long ours takes, for the number of calls
        took = time.perf_counter() - start
    mine = run.timed(ours, xs, True, took)
    peers = [p for p in run.peers if p.gradients or not case.backward]   # backward: PyTorch
    fast = {p.name: _contender(p, case, dtype, x, xs, y, run, took) for p in peers
            if not p.slow}
    slow = [p for p in peers if p.slow and size == "canonical"]
    _in_turns([mine, *(t for t, _ in fast.values() if t is not None)])
    if mine.error is not None:
        raise mine.error
    seconds = mine.seconds
    # a backward row counts the elements of dY and dX, a forward one those of X and Y
    counted = ours.cotangent if isinstance(ours, _Gradient) and ours.cotangent is not None \
        else x
    rate = _elements_per_second(counted, y, seconds)
    results: dict[str, dict[str, Any]] = {}
    for peer in [p for p in peers if not p.slow] + slow:
        if peer.slow:
            xp = rng.standard_normal(case.quick if run.quick else case.reduced).astype(dtype)
            expected = _host(ours(run.device(xp)))
            t, details = _contender(peer, case, dtype, xp, [], expected, run)
            if t is not None:
                _in_turns([t])
        else:
            (t, details), xp, expected = fast[peer.name], x, y
        results[peer.name] = details if t is None else {
            **_result(peer, t, xp, expected, case, dtype, size, run, rate,
                      counted if xp is x else xp), **details}
    row: dict[str, Any] = {
        "case": case.name, "op": case.op, "attrs": case.attrs,
        "inputs": {k: v.tolist() if v.size <= 16 else f"{v.dtype}{list(v.shape)}"
                   for k, v in case.inputs_for(x.shape, dtype).items()}, "dtype": dtype,
        "size": size,
        "shape": list(x.shape), "out_shape": list(y.shape), "ms": seconds * 1e3,
        **mine.spread(), "melem_s": rate / 1e6, "peers": results,
    }
    if run.judged and size == "tiny" and dtype == "float32" and not case.backward:
        # a call of a few microseconds runs from caches that the peers' calls in between
        # evict (theirs too take longer in turns): its own time is taken alone, with as many
        # calls
        alone = run.timed(ours, xs, True, took)
        _in_turns([alone])
        row["ms_alone"] = alone.seconds * 1e3
        row["ms_target"] = TINY_TARGET_US / 1e3
        row["ms_met"] = row["ms_alone"] <= row["ms_target"]
    ort = row["peers"].get("onnxruntime", {})
    row["max_abs_diff_vs_onnxruntime"] = ort.get("max_abs_diff")
    row["correct"] = None if "max_abs_diff" not in ort else "na" not in ort
    if run.backend == "numpy":
        row["peak_memory_ratio"] = _peak_ratio(ours, x)
        if run.judged and not case.backward and x.nbytes + y.nbytes >= MEMORY_JUDGED_BYTES:
            row["peak_memory_met"] = row["peak_memory_ratio"] <= MEMORY_TARGET
    if run.gpu:
        moved = counted.nbytes + y.nbytes
        row["gb_s"] = moved / seconds / 1e9
        row["copy_gb_s"] = moved / _copy_seconds(moved, run) / 1e9
        row["share_of_copy"] = row["gb_s"] / row["copy_gb_s"]
    return row
