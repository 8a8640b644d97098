"""What a first call costs in compile time, per operator and dtype, without a GPU: every
instantiation that `onnx_cupy.warmup` picks, compiled alone with NVRTC (the kernel report's
compile: the loader's source, options and defines, one name expression, CuPy's -ftz=true) as the
CuPy path compiles it on first use; and, with `before`, each family compiled whole in one module,
as the loader compiled it on the first call of any of its operators before it compiled per
instantiation. Tables as Markdown, with the machine, versions and date."""
from __future__ import annotations

import dataclasses
import datetime
import functools
import os
import platform
import statistics
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path

from .. import __version__
from ..core import loader
from ..core.warmup import Instantiation, dtype_names
from . import kernel_report
from .bench import _cpu_name  # the benchmark's name for the machine's CPU

ARCH = kernel_report.ARCHS[-1]


def _seconds(compile_once: Callable[[], object], repeat: int) -> list[float]:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        compile_once()
        times.append(time.perf_counter() - start)
    return times


def _nvrtc(family: str, expressions: tuple[str, ...], arch: str) -> object:
    """One NVRTC program of `family` with these name expressions (the kernel report's compile,
    not its per-process cache)."""
    return kernel_report._compile.__wrapped__(loader.source(family), expressions, arch,
                                              f"{family}.cu", loader.options(family))


def start_nvrtc(arch: str = ARCH) -> None:
    """Load NVRTC and compile a trivial program once, so that no measurement pays the start-up."""
    kernel_report._compile.__wrapped__('extern "C" __global__ void start() {}', (), arch,
                                       "start.cu", loader.options())


def measure(kernels: Sequence[Instantiation], arch: str = ARCH, repeat: int = 1
            ) -> list[Instantiation]:
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
    return {f: _seconds(functools.partial(_nvrtc, f, loader.instantiations(f), arch), repeat)
            for f in families}


def measure_libraries(families: Sequence[str], repeat: int = 1) -> dict[str, list[float]]:
    """Family -> host-compiler seconds of each of `repeat` builds of all its instantiations in
    one emulation library, parsing kernels/host_shim.h (the emulated path's first call before
    per-instantiation libraries)."""
    from ..core import emulator

    with tempfile.TemporaryDirectory() as tmp:
        return {f: _seconds(functools.partial(
            emulator.compile_library, loader.source(f), loader.instantiations(f),
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


def rows(kernels: Sequence[Instantiation]) -> list[Row]:
    """Per operator and dtype, the seconds of the instantiations serving it."""
    by_key: dict[tuple[str, str], list[float]] = {}
    for k in kernels:
        for op in k.ops:
            for dtype in k.dtypes:
                by_key.setdefault((op, dtype), []).append(k.seconds or 0.0)
    order = {d: i for i, d in enumerate(dtype_names())}
    return [Row(op, dtype, len(s), statistics.median(s), max(s), sum(s))
            for (op, dtype), s in sorted(by_key.items(), key=lambda i: (i[0][0], order[i[0][1]]))]


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


def operator_table(kernels: Sequence[Instantiation],
                   before: dict[str, list[float]] | None = None) -> str:
    """Per operator: its instantiations, a first call's seconds (median and slowest
    instantiation), the warm-up's seconds, and where measured, the whole family's (before)."""
    families = {op: k.family for k in kernels for op in k.ops}
    per_op: dict[str, list[float]] = {}
    for k in kernels:
        for op in k.ops:
            per_op.setdefault(op, []).append(k.seconds or 0.0)
    header = ["operator", "instantiations", "first call: one instantiation, s (median / slowest)",
              "warm-up: all, s"]
    if before:
        header += ["before: whole family at once, s", "before / slowest"]
    body = []
    for op, s in sorted(per_op.items()):
        row = [op, str(len(s)), f"{statistics.median(s):.3f} / {max(s):.3f}", f"{sum(s):.2f}"]
        if before:
            whole = before[families[op]]
            row += [_spread(whole), f"{min(whole) / max(s):.0f}x"]
        body.append(row)
    return _markdown(header, body)


def dtype_table(kernels: Sequence[Instantiation]) -> str:
    """Per operator and dtype: instantiations and their seconds (median, slowest, all)."""
    return _markdown(["operator", "dtype", "instantiations", "median, s", "slowest, s",
                      "all, s"],
                     [[r.op, r.dtype, str(r.count), f"{r.median:.3f}", f"{r.slowest:.3f}",
                       f"{r.total:.2f}"] for r in rows(kernels)])


def instantiation_table(kernels: Sequence[Instantiation]) -> str:
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
             f"- date: {datetime.datetime.now(datetime.timezone.utc).isoformat(timespec='seconds')}",
             f"- host: {platform.node()}, CPU: {_cpu_name()} ({cores} logical cores)"]
    if load_start is not None:
        lines.append(f"- 1-minute load average at start / end: {load_start:.2f} / {load():.2f} on "
                     f"{cores} logical cores (this run counts about 1; more means other "
                     f"processes shared the CPU)")
    return [*lines, f"- compiler: {compiler}",
            f"- versions: onnx-cupy {__version__}, Python {platform.python_version()}"]


def nvrtc_version() -> str:
    major, minor = kernel_report._nvrtc().nvrtcVersion()[1:]
    return f"NVRTC {major}.{minor}"


def report(title: str, kernels: Sequence[Instantiation], compiler: str,
           before: dict[str, list[float]] | None = None, *, command: str,
           load_start: float | None = None, listing: bool = False) -> str:
    """The Markdown report: the run's details, per-operator and per-dtype tables (and every
    instantiation with `listing`)."""
    parts = [*header(title, command, compiler, load_start), "", operator_table(kernels, before),
             "", dtype_table(kernels)]
    if listing:
        parts += ["", instantiation_table(kernels)]
    return "\n".join(parts) + "\n"
