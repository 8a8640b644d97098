"""What a first call costs in compile time, per operator and dtype, without a GPU: every
instantiation that `onnx_cupy.warmup` picks, compiled alone with NVRTC (the kernel report's
compile: the loader's source, options and defines, one name expression) as the
CuPy path compiles it on first use; and, with `before`, each family compiled whole in one module,
as the loader compiled it on the first call of any of its operators before it compiled per
instantiation; and on the emulated path, one call of each operator in a fresh process with an
empty cache, from process start to result, minus the import. Tables as Markdown, with the
machine, versions and date, and the targets these figures are held to."""
from __future__ import annotations

import dataclasses
import datetime
import functools
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from .. import __version__
from ..core import cuda_compile, loader
from ..core.warmup import Warmed, dtype_names
from . import kernel_report
from .bench.report import cpu_name  # the benchmark's name for the machine's CPU

ARCH = kernel_report.ARCHS[-1]
NVRTC_TARGET = 0.5      # seconds: NVRTC for a first call's slowest single instantiation
EMULATED_TARGET = 3.0   # seconds: a first emulated call in a fresh process with an empty cache


def _seconds(compile_once: Callable[[], object], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        compile_once()
        times.append(time.perf_counter() - start)
    return times


def _nvrtc(family: str, expressions: tuple[str, ...], arch: str) -> object:
    """One NVRTC program of `family` with these name expressions, compiled as the CuPy path
    compiles (onnx_cupy.core.cuda_compile.compile, the loader's options), uncached."""
    return cuda_compile.compile(kernel_report._nvrtc(), loader.source(family), expressions, arch,
                            loader.options(family), f"{family}.cu")


def start_nvrtc(arch: str = ARCH) -> None:
    """Load NVRTC and compile a trivial program once, so that no measurement pays the start-up."""
    cuda_compile.compile(kernel_report._nvrtc(), 'extern "C" __global__ void start() {}', (), arch,
                     loader.options(), "start.cu")


def measure(kernels: Sequence[Warmed], arch: str = ARCH, repeat: int = 1
            ) -> list[Warmed]:
    """`kernels` with their NVRTC seconds for `arch`: the fastest of `repeat` compiles each
    (other processes' load on the CPU only adds to a compile's time)."""
    start_nvrtc(arch)
    return [k._replace(seconds=min(_seconds(
        functools.partial(_nvrtc, k.family, (k.expression,), arch), repeat))) for k in kernels]


def measure_families(families: Sequence[str], arch: str = ARCH, repeat: int = 1
                     ) -> dict[str, list[float]]:
    """Family -> NVRTC seconds of each of `repeat` compiles of all its instantiations in one
    module (the first call's cost before per-instantiation compiles)."""
    start_nvrtc(arch)
    return {f: _seconds(functools.partial(_nvrtc, f, kernel_report.family_expressions(f), arch),
                        repeat) for f in families}


def measure_libraries(families: Sequence[str], repeat: int = 1) -> dict[str, list[float]]:
    """Family -> host-compiler seconds of each of `repeat` builds of all its instantiations in
    one emulation library, parsing kernels/host_shim.h (the emulated path's first call before
    per-instantiation libraries)."""
    from ..core import emulator

    with tempfile.TemporaryDirectory() as tmp:
        return {f: _seconds(functools.partial(
            emulator.compile_library, loader.source(f), kernel_report.family_expressions(f),
            loader.defines(f), Path(tmp) / f"{f}.so", name=f), repeat) for f in families}


@dataclasses.dataclass(frozen=True)
class Row:
    """The compile cost of one operator at one dtype."""

    op: str
    dtype: str
    count: int            # instantiations its calls may launch (what the warm-up compiles)
    median: float         # seconds of one of them: what a first call pays per instantiation
    slowest: float        # ... the slowest one
    total: float          # all of them: the warm-up's share for this operator and dtype


def rows(kernels: Sequence[Warmed]) -> list[Row]:
    """Per operator and dtype, the seconds of the instantiations serving it."""
    by_key: dict[tuple[str, str], list[float]] = {}
    for k in kernels:
        for op in k.ops:
            for dtype in k.dtypes:
                by_key.setdefault((op, dtype), []).append(k.seconds or 0.0)
    order = {d: i for i, d in enumerate(dtype_names())}
    return [Row(op, dtype, len(s), statistics.median(s), max(s), sum(s))
            for (op, dtype), s in sorted(by_key.items(), key=lambda i: (i[0][0], order[i[0][1]]))]


def verdict(seconds: float, target: float) -> str:
    """`seconds` against `target` (a ceiling), as the tables state it."""
    return f"<={target:g} {'met' if seconds <= target else 'missed'}"


# One representative float32 call per operator (MaxUnpool's indices: every 4th element of its
# 2x2 windows): (label, call of `oc` on `X`, shape of X).
CALLS: tuple[tuple[str, str, tuple[int, ...]], ...] = (
    ("AveragePool 3x3", "oc.average_pool(X, kernel_shape=[3, 3])", (1, 3, 32, 32)),
    ("LpPool p=2 3x3", "oc.lp_pool(X, kernel_shape=[3, 3], p=2)", (1, 3, 32, 32)),
    ("MaxPool 3x3", "oc.max_pool(X, kernel_shape=[3, 3])", (1, 3, 32, 32)),
    ("GlobalAveragePool", "oc.global_average_pool(X)", (1, 3, 32, 32)),
    ("Hardmax axis -1", "oc.hardmax(X, axis=-1)", (4, 100, 8)),
    ("Resize linear 2x", "oc.resize(X, scales=np.float32([1, 1, 2, 2]), mode='linear')",
     (1, 3, 32, 32)),
    ("Resize nearest 2x", "oc.resize(X, scales=np.float32([1, 1, 2, 2]), mode='nearest')",
     (1, 3, 32, 32)),
    ("Upsample linear 2x", "oc.upsample(X, np.float32([1, 1, 2, 2]), mode='linear')",
     (1, 3, 32, 32)),
    ("MaxUnpool 2x2", ("oc.max_unpool(X, np.arange(X.size).reshape(X.shape) * 4, "
                      "kernel_shape=[2, 2], strides=[2, 2])"), (1, 3, 16, 16)),
    ("GridSample linear", "oc.grid_sample(X, np.zeros((1, 16, 16, 2), np.float32))",
     (1, 3, 32, 32)),
    ("AffineGrid 2-D", "oc.affine_grid(X, [2, 1, 16, 16])", (2, 2, 3)),
)

# The fresh process: its import, then one emulated call; it prints the import's seconds and the
# wall-clock time of the result (the background precompile of the shim header may keep the
# process alive after it).
_FRESH = """\
import time
start = time.perf_counter()
import json
import numpy as np
import onnx_cupy as oc
imported = time.perf_counter() - start
X = np.random.default_rng().standard_normal({shape}).astype(np.float32)
with oc.backend("emulated"):
    Y = {call}
done = time.time()
assert Y.size and Y.dtype == np.float32
print(json.dumps({{"import": imported, "result": done}}))
"""


def fresh_call(call: str, shape: Sequence[int]) -> tuple[float, float]:
    """(import seconds, first-call seconds) of `call` on a float32 X of `shape` under
    `onnx_cupy.backend("emulated")` in a new Python process with an empty `ONNX_CUPY_CACHE`:
    the first call's seconds run from the process's start to the result, minus the import."""
    with tempfile.TemporaryDirectory() as cache:
        env = {**os.environ, "ONNX_CUPY_CACHE": cache,
               "PYTHONPATH": os.pathsep.join(p for p in sys.path if p)}
        start = time.time()
        res = subprocess.run([sys.executable, "-c", _FRESH.format(call=call, shape=tuple(shape))],
                             env=env, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        raise RuntimeError(f"warmup: the fresh-process call {call} failed:\n{res.stderr}")
    times = json.loads(res.stdout.splitlines()[-1])
    return times["import"], times["result"] - start - times["import"]


def measure_fresh(repeat: int = 1,
                  run: Callable[[str, Sequence[int]], tuple[float, float]] = fresh_call
                  ) -> dict[str, list[tuple[float, float]]]:
    """Label -> `repeat` (import, first call) seconds of each representative call."""
    return {label: [run(call, shape) for _ in range(repeat)] for label, call, shape in CALLS}


def fresh_table(fresh: dict[str, list[tuple[float, float]]]) -> str:
    """Per representative call: the import's seconds and the first call's in a fresh process
    with an empty cache (the fastest of the runs, with the slowest), judged on the slowest."""
    body = [[label, _spread([i for i, _ in runs]), _spread([c for _, c in runs]),
             verdict(max(c for _, c in runs), EMULATED_TARGET)] for label, runs in fresh.items()]
    return _markdown(["float32 call", "import, s",
                      "first call in a fresh process, empty cache, s", "target, s (slowest)"],
                     body)


def _markdown(header: Sequence[str], body: Sequence[Sequence[str]]) -> str:
    """A Markdown table; columns of figures aligned right."""
    figures = [bool(body) and all(r[i][:1].isdigit() for r in body) for i in range(len(header))]
    lines = ["| " + " | ".join(header) + " |",
             "|" + "|".join("--:" if f else "---" for f in figures) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in body]
    return "\n".join(lines)


def _spread(times: Sequence[float]) -> str:
    """The fastest of `times`, with the slowest where there are several."""
    return f"{min(times):.2f}" + ("" if len(times) == 1 else f" (slowest {max(times):.2f})")


def operator_table(kernels: Sequence[Warmed],
                   before: dict[str, list[float]] | None = None,
                   target: float | None = None) -> str:
    """Per operator: its instantiations, a first call's seconds (median and slowest
    instantiation) with the slowest judged against `target`, the warm-up's seconds, and where
    measured, the whole family's (before)."""
    families = {op: k.family for k in kernels for op in k.ops}
    per_op: dict[str, list[float]] = {}
    for k in kernels:
        for op in k.ops:
            per_op.setdefault(op, []).append(k.seconds or 0.0)
    header = ["operator", "instantiations", "first call: one instantiation, s (median / slowest)"]
    header += [*(["target, s (slowest)"] if target is not None else []), "warm-up: all, s"]
    if before:
        header += ["before: whole family at once, s", "before / slowest"]
    body = []
    for op, s in sorted(per_op.items()):
        row = [op, str(len(s)), f"{statistics.median(s):.3f} / {max(s):.3f}"]
        row += [*([verdict(max(s), target)] if target is not None else []), f"{sum(s):.2f}"]
        if before:
            whole = before[families[op]]
            row += [_spread(whole), f"{min(whole) / max(s):.0f}x"]
        body.append(row)
    return _markdown(header, body)


def dtype_table(kernels: Sequence[Warmed]) -> str:
    """Per operator and dtype: instantiations and their seconds (median, slowest, all)."""
    return _markdown(["operator", "dtype", "instantiations", "median, s", "slowest, s",
                      "all, s"],
                     [[r.op, r.dtype, str(r.count), f"{r.median:.3f}", f"{r.slowest:.3f}",
                       f"{r.total:.2f}"] for r in rows(kernels)])


def instantiation_table(kernels: Sequence[Warmed]) -> str:
    """Every instantiation with its seconds, the operators and dtypes it serves."""
    return _markdown(["family", "instantiation", "seconds", "operators", "dtypes"],
                     [[k.family, f"`{k.expression}`", f"{k.seconds or 0:.3f}", ", ".join(k.ops),
                       ", ".join(k.dtypes)] for k in kernels])


def load() -> float | None:
    """The 1-minute load average, where the OS reports one."""
    return os.getloadavg()[0] if hasattr(os, "getloadavg") else None


def header(title: str, command: str, compiler: str, load_start: float | None) -> list[str]:
    """The run's details as the project's generated pages give them ("- key: value" lines)."""
    cores = os.cpu_count()
    lines = [f"- what: {title}", f"- command: `{command}`",
             f"- date: {datetime.datetime.now(datetime.timezone.utc).isoformat('T', 'seconds')}",
             f"- host: {platform.node()}, CPU: {cpu_name()} ({cores} logical cores)"]
    if load_start is not None:
        lines.append(f"- 1-minute load average at start / end: {load_start:.2f} / {load():.2f} on "
                     f"{cores} logical cores (this run counts about 1; more means other "
                     f"processes shared the CPU)")
    return [*lines, f"- compiler: {compiler}",
            f"- versions: onnx-cupy {__version__}, Python {platform.python_version()}"]


def nvrtc_version() -> str:
    return f"NVRTC {kernel_report.nvrtc_version()}"


def report(title: str, kernels: Sequence[Warmed], compiler: str,
           before: dict[str, list[float]] | None = None, *, command: str,
           load_start: float | None = None, listing: bool = False, target: float | None = None,
           fresh: dict[str, list[tuple[float, float]]] | None = None) -> str:
    """The Markdown report: the run's details, per-operator (the slowest instantiation judged
    against `target`) and per-dtype tables, the fresh-process first calls where measured (see
    `measure_fresh`), and every instantiation with `listing`."""
    parts = [*header(title, command, compiler, load_start), "",
             operator_table(kernels, before, target), "", dtype_table(kernels)]
    if fresh:
        parts += ["", fresh_table(fresh)]
    if listing:
        parts += ["", instantiation_table(kernels)]
    return "\n".join(parts) + "\n"
