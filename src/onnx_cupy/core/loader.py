"""The one kernel loader: reads kernels/<family>.cu (local includes inlined, with #line markers so
compiler messages name the real file), knows every instantiation a family registers and the
constants it shares with the host (passed to every compiler as defines), and compiles, per device,
the one instantiation a call needs on first use (CuPy's on-disk cache serves later processes;
onnx_cupy.warmup compiles them ahead of time)."""
from __future__ import annotations

import dataclasses
import functools
import re
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from . import execution, numerics

KERNEL_DIR = Path(__file__).resolve().parent.parent / "kernels"
NVRTC_OPTIONS: tuple[str, ...] = ("-std=c++17",)
BLOCK = 256  # threads per block of the 1-D launches, and the fast kernels' __launch_bounds__
# constants of kernels/common.cuh, defined for every family
COMMON_DEFINES: dict[str, int | str] = {"OC_BLOCK": BLOCK, **numerics.DEFINES}
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.MULTILINE)


@dataclasses.dataclass
class Family:
    """What a kernel family registers (see `register`)."""

    instantiations: list[str] = dataclasses.field(default_factory=list)
    blocks: dict[str, Any] = dataclasses.field(default_factory=dict)
    fast: dict[str, int] = dataclasses.field(default_factory=dict)
    cooperative: set[str] = dataclasses.field(default_factory=set)
    threads: dict[str, int] = dataclasses.field(default_factory=dict)
    defines: dict[str, int | str] = dataclasses.field(default_factory=dict)
    grid_stride: dict[str, str] = dataclasses.field(default_factory=dict)


_FAMILIES: dict[str, Family] = {}
_lock = threading.Lock()


def register(family: str, expressions: Iterable[str], blocks: Mapping[str, Any] | None = None,
             fast: Mapping[str, int] | None = None, cooperative: Iterable[str] = (),
             threads: Mapping[str, int] | None = None,
             defines: Mapping[str, int | str] | None = None,
             grid_stride: Mapping[str, str] | None = None) -> None:
    """Declare a family's kernels: the template instantiations it is compiled with (name
    expressions), the parameter structs (C name -> NumPy structured dtype of the same layout) its
    launches pass by value, which instantiations are fast paths (expression -> outputs per thread
    and loop iteration, held to the kernel report's static targets), which use barriers, shared
    memory or warp collectives (the emulator runs their blocks' threads as cooperating contexts),
    the most threads per block of those not launched with BLOCK, the constants the host shares
    with the kernel source (macro name -> value, defined for every compiler), and the grid axes
    each instantiation walks in a grid-stride loop (expression -> some of 'xyz': any number of
    blocks along them covers the work; the checker narrows them)."""
    f = _FAMILIES.setdefault(family, Family())
    for e in [*expressions, *(fast or {})]:
        if e not in f.instantiations:
            f.instantiations.append(e)
    unknown = [e for e in [*cooperative, *(threads or {}), *(grid_stride or {})]
               if e not in f.instantiations]
    if unknown:
        raise ValueError(f"{family}: {unknown[0]!r} is not a registered instantiation")
    bad = [axes for axes in (grid_stride or {}).values() if not set(axes) <= set("xyz")]
    if bad:
        raise ValueError(f"{family}: grid-stride axes {bad[0]!r} are not some of 'xyz'")
    f.blocks.update(blocks or {})
    f.fast.update(fast or {})
    f.cooperative.update(cooperative)
    f.threads.update(threads or {})
    f.defines.update(defines or {})
    f.grid_stride.update(grid_stride or {})


def template_arguments(expression: str) -> list[str]:
    """Top-level template arguments of a name expression: 'k<float, rsz::pod<4>, int>' ->
    ['float', 'rsz::pod<4>', 'int']; [] for a plain function name."""
    if "<" not in expression:
        return []
    inner = expression[expression.index("<") + 1:expression.rindex(">")]
    args, depth, start = [], 0, 0
    for n, ch in enumerate(inner):
        depth += {"<": 1, ">": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            args.append(inner[start:n].strip())
            start = n + 1
    return [*args, inner[start:].strip()]


def template_name(expression: str) -> str:
    """The kernel template of a name expression: 'k<float, 4>' -> 'k'."""
    return expression.split("<", 1)[0].strip()


class Parameter(NamedTuple):
    """A kernel parameter: its name, and whether it is a pointer to const (the kernel reads
    what it points to, never writes it)."""

    name: str
    read_only: bool


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_PAIRS = {"(": ")", "<": ">", "[": "]", "{": "}"}


@functools.lru_cache(maxsize=256)
def kernel_parameters(source: str, kernel: str) -> tuple[Parameter, ...]:
    """The parameters of `__global__` function `kernel` as its definition in CUDA `source`
    declares them (the last identifier of each declaration, default values and array bounds
    aside). The one place that knows kernel parameter names: the checker's messages name
    arrays by them."""
    text = _COMMENT.sub(" ", source)
    for m in re.finditer(rf"\b{re.escape(kernel)}\s*\(", text):
        head = text[max(text.rfind(";", 0, m.start()), text.rfind("}", 0, m.start())) + 1:
                    m.start()]
        if "__global__" not in head:
            continue
        declarations, depth, start = [], 0, m.end()
        for at in range(m.end(), len(text)):
            ch = text[at]
            if ch in _PAIRS:
                depth += 1
            elif ch in _PAIRS.values() and depth:
                depth -= 1
            elif ch == ")" or (ch == "," and depth == 0):
                declarations.append(text[start:at])
                start = at + 1
                if ch == ")":
                    break
        return tuple(_parameter(d) for d in declarations if d.strip() not in ("", "void"))
    raise ValueError(f"no __global__ definition of {kernel!r} in the source")


def _parameter(declaration: str) -> Parameter:
    """A Parameter from one declaration, e.g. 'const T* __restrict__ x'."""
    text = re.sub(r"\[[^\]]*\]", " ", declaration.split("=", 1)[0])
    names = re.findall(r"[A-Za-z_]\w*", text)
    if not names:
        raise ValueError(f"a kernel parameter without a name: {declaration.strip()!r}")
    pointer = text.rfind("*")
    return Parameter(names[-1], pointer >= 0 and "const" in re.findall(r"\w+", text[:pointer]))


def families() -> list[str]:
    return sorted(_FAMILIES)


def instantiations(family: str) -> tuple[str, ...]:
    return tuple(_FAMILIES[family].instantiations)


def parameter_blocks(family: str) -> dict[str, Any]:
    return dict(_FAMILIES[family].blocks)


def fast_paths(family: str) -> dict[str, int]:
    """The family's fast-path instantiations: expression -> outputs per thread and iteration."""
    return dict(_FAMILIES[family].fast)


def cooperative(family: str, expression: str) -> bool:
    """Whether the emulator runs `expression`'s blocks cooperatively."""
    return expression in _FAMILIES[family].cooperative


def grid_stride_axes(family: str, expression: str) -> str:
    """The grid axes ('x', 'y', 'z') that `expression` walks in a grid-stride loop ('' if
    none)."""
    return _FAMILIES[family].grid_stride.get(expression, "")


def block_size(family: str, expression: str) -> int:
    """Most threads per block that `expression` of `family` is launched with."""
    return _FAMILIES[family].threads.get(expression, BLOCK)


def defines(family: str) -> dict[str, int | str]:
    """The constants kernels/<family>.cu is compiled with: COMMON_DEFINES and the family's."""
    return {**COMMON_DEFINES, **_FAMILIES[family].defines}


def options(family: str | None = None) -> tuple[str, ...]:
    """NVRTC options: the loader's and the defines of `family` (None: COMMON_DEFINES, for a
    source outside the families); CuPy adds -ftz=true."""
    values = COMMON_DEFINES if family is None else defines(family)
    return (*NVRTC_OPTIONS, *(f"-D{k}={v}" for k, v in values.items()))


@functools.cache
def source(family: str) -> str:
    """Self-contained source of kernels/<family>.cu."""
    return _expand(KERNEL_DIR / f"{family}.cu", set())


def _expand(path: Path, seen: set[Path]) -> str:
    if path in seen:
        return ""
    seen.add(path)
    out = [f'#line 1 "{path.name}"']
    for n, line in enumerate(path.read_text().splitlines(), start=1):
        m = _INCLUDE.match(line)
        if m and (KERNEL_DIR / m.group(1)).is_file():
            out.append(_expand(KERNEL_DIR / m.group(1), seen))
            out.append(f'#line {n + 1} "{path.name}"')
        else:
            out.append(line)
    return "\n".join(out) + "\n"


_functions: dict[tuple[str, str, int], Any] = {}
_compiling: dict[tuple[str, str, int], threading.Lock] = {}


def cuda_function(family: str, expression: str) -> Any:
    """The compiled `expression` of kernels/<family>.cu on the current device: its own
    RawModule, compiled on first use (concurrent first calls compile it once); CuPy's on-disk
    cache serves it to later processes."""
    cupy = execution.cupy_module()
    key = (family, expression, cupy.cuda.runtime.getDevice())
    fn = _functions.get(key)
    if fn is None:
        if expression not in _FAMILIES[family].instantiations:
            raise ValueError(f"{family}: {expression!r} is not a registered instantiation")
        with _lock:
            lock = _compiling.setdefault(key, threading.Lock())
        with lock:
            fn = _functions.get(key)
            if fn is None:
                module = cupy.RawModule(code=source(family), options=options(family),
                                        name_expressions=[expression])
                fn = _functions[key] = module.get_function(expression)
    return fn
