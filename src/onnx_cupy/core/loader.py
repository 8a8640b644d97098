"""The one kernel loader: reads kernels/<family>.cu (local includes inlined, with #line markers so
compiler messages name the real file), holds the registry of every instantiation a family
registers (records of onnx_cupy.core.records) and the constants it shares with the host (passed
to every compiler as defines), and loads, per device, the one instantiation a call needs on
first use: compiled by NVRTC with the library's own options (onnx_cupy.core.cuda_compile, whose
disk cache serves later processes; onnx_cupy.warmup compiles them ahead of time), loaded by
CuPy."""
from __future__ import annotations

import dataclasses
import functools
import re
import threading
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, NamedTuple

from . import cuda_compile, execution, numerics
from .records import Instantiation

KERNEL_DIR = Path(__file__).resolve().parent.parent / "kernels"
BLOCK = 256  # threads per block of the 1-D launches, and the fast kernels' __launch_bounds__
WARP = 32    # threads of a warp: the width of warp shuffles and of a block's reduction steps
# constants of kernels/common.cuh, defined for every family
COMMON_DEFINES: dict[str, int | str] = {"OC_BLOCK": BLOCK, "OC_WARP": WARP, **numerics.DEFINES}
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.MULTILINE)


@dataclasses.dataclass
class Family:
    """What a kernel family registers (see `register`)."""

    instantiations: dict[str, Instantiation] = dataclasses.field(default_factory=dict)
    structs: dict[str, Any] = dataclasses.field(default_factory=dict)
    defines: dict[str, int | str] = dataclasses.field(default_factory=dict)


_FAMILIES: dict[str, Family] = {}
_lock = threading.Lock()


def register(family: str, instantiations: Iterable[Instantiation],
             structs: Mapping[str, Any] | None = None,
             defines: Mapping[str, int | str] | None = None) -> None:
    """Declare a family's kernels: the template instantiations it is compiled with (records of
    onnx_cupy.core.records, each once), the parameter structs its launches pass by value (C name
    -> NumPy structured dtype of the same layout), and the constants the host shares with the
    kernel source (macro name -> value, defined for every compiler)."""
    f = _FAMILIES.setdefault(family, Family())
    for k in instantiations:
        if k.family != family:
            raise ValueError(f"{family}: {k!r} belongs to family {k.family!r}")
        if not set(k.grid_stride) <= set("xyz"):
            raise ValueError(f"{family}: {k!r}: grid-stride axes {k.grid_stride!r} are not some "
                             f"of 'xyz'")
        if f.instantiations.setdefault(k.expression, k) is not k:
            raise ValueError(f"{family}: {k.expression!r} is registered twice")
    f.structs.update(structs or {})
    f.defines.update(defines or {})


class Parameter(NamedTuple):
    """A kernel parameter: its name, whether it is a pointer to const (the kernel reads what it
    points to, never writes it), whether it is a pointer, and the words of its type."""

    name: str
    read_only: bool
    pointer: bool = False
    words: tuple[str, ...] = ()


_COMMENT = re.compile(r"//[^\n]*|/\*.*?\*/", re.DOTALL)
_PAIRS = {"(": ")", "<": ">", "[": "]", "{": "}"}


def _definition(text: str, kernel: str) -> re.Match[str] | None:
    """Where the `__global__` definition of `kernel` opens its parameter list in `text` (CUDA
    source without comments): a match ending at its "(", whose group 1 is what precedes the
    name since the previous declaration."""
    for m in re.finditer(rf"([^;}}]*)\b{re.escape(kernel)}\s*\(", text):
        if "__global__" in m.group(1):
            return m
    return None


@functools.lru_cache(maxsize=256)
def kernel_parameters(source: str, kernel: str) -> tuple[Parameter, ...]:
    """The parameters of `__global__` function `kernel` as its definition in CUDA `source`
    declares them (the last identifier of each declaration, default values and array bounds
    aside). The one place that knows kernel parameter names: the checker's messages name
    arrays by them."""
    text = _COMMENT.sub(" ", source)
    m = _definition(text, kernel)
    if m is None:
        raise ValueError(f"no __global__ definition of {kernel!r} in the source")
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


MAX_THREADS = 1024   # CUDA's most threads per block


@functools.cache
def max_threads(k: Instantiation) -> int:
    """Most threads per block a launch of `k` may have: the first argument of its kernel's
    `__launch_bounds__` (a number or one of its family's defines), else MAX_THREADS."""
    m = _definition(_COMMENT.sub(" ", source(k.family)), k.template)
    bound = m and re.search(r"__launch_bounds__\s*\(\s*(\w+)", m.group(1))
    if not bound:
        return MAX_THREADS
    value = bound.group(1)
    return int(value) if value.isdigit() else int(defines(k.family)[value])


def _parameter(declaration: str) -> Parameter:
    """A Parameter from one declaration, e.g. 'const T* __restrict__ x'."""
    text = re.sub(r"\[[^\]]*\]", " ", declaration.split("=", 1)[0])
    names = re.findall(r"[A-Za-z_]\w*", text)
    if not names:
        raise ValueError(f"a kernel parameter without a name: {declaration.strip()!r}")
    pointer = text.rfind("*")
    return Parameter(names[-1], pointer >= 0 and "const" in re.findall(r"\w+", text[:pointer]),
                     pointer >= 0, tuple(names[:-1]))


def families() -> list[str]:
    return sorted(_FAMILIES)


def instantiations(family: str | None = None) -> tuple[Instantiation, ...]:
    """The registered instantiations of `family` in registration order (None: of every family,
    family by family)."""
    chosen = families() if family is None else [family]
    return tuple(k for f in chosen for k in _FAMILIES[f].instantiations.values())


def registered(k: Instantiation) -> Instantiation:
    """`k`, checked to be the registered record of its expression (ValueError otherwise)."""
    family = _FAMILIES.get(k.family)
    if family is None or family.instantiations.get(k.expression) is not k:
        raise ValueError(f"{k.family}: {k.expression!r} is not a registered instantiation")
    return k


def instantiation(expression: str) -> Instantiation:
    """The registered instantiation of a name expression (KeyError if none is)."""
    for family in _FAMILIES.values():
        k = family.instantiations.get(expression)
        if k is not None:
            return k
    raise KeyError(f"{expression!r} is not a registered instantiation")


@functools.cache
def struct_parameters(k: Instantiation) -> tuple[Any, ...]:
    """Per parameter of `k`'s kernel, the NumPy dtype of the parameter struct it takes by value
    (one its family registered), or None: what a launch's driver copies for a by-value struct."""
    structs = _FAMILIES[k.family].structs
    return tuple(None if p.pointer else next((structs[w] for w in p.words if w in structs), None)
                 for p in kernel_parameters(source(k.family), k.template))


def family(name: str) -> Family:
    """What family `name` registered (KeyError for a name no family registered)."""
    return _FAMILIES[name]


def block_size(k: Instantiation) -> int:
    """Most threads per block that `k` is launched with."""
    return k.threads or BLOCK


def defines(family: str) -> dict[str, int | str]:
    """The constants kernels/<family>.cu is compiled with: COMMON_DEFINES and the family's."""
    return {**COMMON_DEFINES, **_FAMILIES[family].defines}


def define_options(values: Mapping[str, int | str]) -> tuple[str, ...]:
    """The -D options that pass the constants `values` to a compiler: NVRTC and the host compiler
    (the emulator) take them alike, each with its own other options."""
    return tuple(f"-D{k}={v}" for k, v in values.items())


def options(family: str | None = None) -> tuple[str, ...]:
    """NVRTC options: the library's IEEE options (cuda_compile.OPTIONS) and the defines of `family`
    (None: COMMON_DEFINES, for a source outside the families)."""
    values = COMMON_DEFINES if family is None else defines(family)
    return (*cuda_compile.OPTIONS, *define_options(values))


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


_functions: dict[tuple[Instantiation, int, int], Any] = {}
_compiling: dict[tuple[Instantiation, int, int], threading.Lock] = {}


def swap_functions(functions: dict[tuple[Instantiation, int, int], Any]
                   ) -> dict[tuple[Instantiation, int, int], Any]:
    """Replace the compiled functions (per instantiation, cupy module and device) by
    `functions`; returns
    the ones replaced (onnx_cupy.core.calls.isolated: a substitute cupy module's own)."""
    global _functions, _compiling
    with _lock:
        replaced, _functions, _compiling = _functions, functions, {}
    return replaced


def cuda_function(k: Instantiation, cupy: Any = None) -> Any:
    """The compiled instantiation `k` on the current device of `cupy` (the cupy module or the
    emulated device; None: the library's cupy): compiled by NVRTC with the library's options
    for the device's architecture (cuda_compile.cached: in memory, on disk, or compiled),
    loaded as a module of its own on first use (concurrent first calls load it once)."""
    cupy = execution.cupy_module() if cupy is None else cupy
    device = cupy.cuda.runtime.getDevice()
    key = (k, id(cupy), device)   # the emulated device's apart
    fn = _functions.get(key)
    if fn is None:
        registered(k)
        with _lock:
            lock = _compiling.setdefault(key, threading.Lock())
        with lock:
            fn = _functions.get(key)
            if fn is None:
                image = cuda_compile.cached(cupy.cuda.nvrtc, source(k.family), k.expression,
                                        architecture(cupy, device), options(k.family),
                                        f"{k.family}.cu")
                module = cupy.cuda.function.Module()
                module.load(image.data)
                fn = _functions[key] = module.get_function(image.names[k.expression])
    return fn


_architectures: dict[tuple[int, int], str] = {}


def architecture(cupy: Any, device: int) -> str:
    """The architecture kernels are compiled for on `device` of the `cupy` module
    (cuda_compile.target: its own CUBIN where NVRTC knows it, else PTX), looked up once."""
    arch = _architectures.get((id(cupy), device))
    if arch is None:
        capability = int(cupy.cuda.Device(device).compute_capability)
        arch = _architectures[id(cupy), device] = cuda_compile.target(
            capability, tuple(cupy.cuda.nvrtc.getSupportedArchs()))
    return arch
