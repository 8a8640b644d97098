"""The emulated path: kernels/<family>.cu compiled by the host C++ compiler through host_shim.h,
one shared library per instantiation (built on first use, cached on disk, the shim's headers
precompiled once), and launched with the same grid, block and arguments as the CUDA path, on
NumPy buffers. Kernels with barriers, shared memory or warp collectives run cooperatively: a
block's threads switch at each synchronization point, in a seeded random order (`schedule`), so
that a missing barrier shows.

In checking mode (`checker.checking()`, or ONNX_CUPY_CHECK=1 in the environment) the same
sources are compiled into separate libraries (CHECK_FLAGS: kernels/host_check.h and GCC's
thread-sanitizer instrumentation, whose callbacks the checker implements) that check every
access and barrier of the kernels (onnx_cupy.core.checker)."""
from __future__ import annotations

import contextlib
import contextvars
import ctypes
import functools
import hashlib
import os
import re
import shutil
import struct
import subprocess
import tempfile
import threading
import warnings
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from . import checker, cuda_compile, execution, loader
from .records import Instantiation

# IEEE arithmetic as the GPU's (onnx_cupy.core.cuda_compile.OPTIONS): no contraction of a * b + c
# into a fused multiply-add the source does not write (-ffp-contract=off; GCC's default in GNU
# modes is to contract where the target has FMA instructions), no flush to zero (GCC sets none
# without -ffast-math)
CXX_FLAGS = ("-std=c++17", "-O2", "-ffp-contract=off", "-shared", "-fPIC", "-w")
_lock = threading.Lock()
# The checking mode's compile: the checker compiled into the shim, every load and store of the
# code instrumented with calls into it (no sanitizer run-time library: the objects are linked
# without -fsanitize), function entries not; aggregates kept whole (no scalar replacement), so
# that a 16-byte vector access reaches the checker as one; line tables for its messages; the
# statics of templates and inline functions (__shared__ variables, the checker's state) each
# library's own, not bound process-wide to the first library that defines them (GNU unique
# symbols), since the unchecked library of the same instantiation may be loaded too.
CHECK_FLAGS = ("-DOC_CHECK=1", "-fsanitize=thread", "--param=tsan-instrument-func-entry-exit=0",
               "-fno-tree-sra", "-g1", "-gdwarf-4", "-fno-gnu-unique")
SHIM_HEADERS = ("host_shim.h", "host_check.h")   # the shim and what it includes from kernels/
_libraries: dict[tuple[Instantiation, bool], Module] = {}
_building: dict[tuple[Instantiation, bool], threading.Lock] = {}
_shim_threads: dict[Path, threading.Thread] = {}   # cache folder -> its shim header's build
_shim_warned = False   # a failed shim header build has been warned about (once per process)
_seed: contextvars.ContextVar[int] = contextvars.ContextVar("onnx_cupy_emulator_seed", default=0)


def compiler() -> str:
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if not cxx:
        raise RuntimeError("the emulated backend needs a host C++ compiler (g++), none found")
    return cxx


@functools.cache
def _version_text(cxx: str) -> str:
    try:
        return subprocess.run([cxx, "--version"], capture_output=True, text=True,
                              check=False).stdout
    except OSError:
        return ""


def compiler_version() -> str:
    """The first line of the host compiler's --version."""
    return (_version_text(compiler()).splitlines() or [compiler()])[0]


def _cache_dir() -> Path:
    path = cuda_compile.cache_root() / "emulator"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _translation_unit(source: str, expressions: Sequence[str]) -> str:
    lines = [source]
    for i, expr in enumerate(expressions):
        lines.append(
            f'extern "C" int oc_launch_{i}(const unsigned int* g, const unsigned int* b, void** a, '
            f"int cooperative, unsigned long long seed, const unsigned long long* shared, "
            f"int n_shared) {{ return oc_emulate(&{expr}, g, b, a, cooperative, seed, shared, "
            f"n_shared); }}"
        )
    return "\n".join(lines) + "\n"


ERRORS = {1: "deadlock: threads wait at a __syncthreads or warp collective that others never reach",
          2: "a warp collective's mask names a lane that has exited",
          3: "the kernel synchronizes (__syncthreads or a warp collective) but was launched "
             "sequentially: register its record with cooperative=True"}


class Module:
    """A compiled emulation library of CUDA `source`: launches its kernels (`kernels`: name
    expression -> the __global__ function it instantiates) on NumPy buffers, checking every
    access and barrier if it was built `checked`."""

    def __init__(self, name: str, so: Path, kernels: Mapping[str, str], source: str = "",
                 checked: bool = False) -> None:
        self.name = name
        self.path = so
        self.source = source
        self.checked = checked
        self.kernels = dict(kernels)
        self._lib = ctypes.CDLL(str(so))
        self._functions = {e: getattr(self._lib, f"oc_launch_{i}") for i, e in enumerate(kernels)}
        for fn in self._functions.values():
            fn.restype = ctypes.c_int
        self.base, self._shared, self.shared_names = _shared_storage(so, self._lib)

    def launch(self, expression: str, grid: tuple[int, int, int], block: tuple[int, int, int],
               args: tuple[Any, ...], cooperative: bool = False, seed: int = 0) -> None:
        """Run `expression` over `grid` x `block`: each block's threads one after another, or,
        if `cooperative`, as contexts switching at barriers and warp collectives in an order
        drawn from `seed`. A checked library raises checker.KernelCheckError at the first error
        it finds, before the faulty access, leaving the arrays of `args` as they were."""
        if self.checked:
            checker.launch(self, expression, grid, block, args, cooperative, seed)
        elif status := self.run(expression, grid, block, args, cooperative, seed):
            self.check_status(status, expression, grid, block)

    def run(self, expression: str, grid: tuple[int, int, int], block: tuple[int, int, int],
            args: tuple[Any, ...], cooperative: bool, seed: int) -> int:
        """One launch as `launch` describes it; the emulator's status code (0: done)."""
        fn = self._functions[expression]
        keep: list[object] = []
        ptrs = (ctypes.c_void_p * len(args))(*[_arg_pointer(a, keep) for a in args])
        status: int = fn((ctypes.c_uint * 3)(*grid), (ctypes.c_uint * 3)(*block), ptrs,
                         ctypes.c_int(bool(cooperative)), ctypes.c_ulonglong(seed % 2**64),
                         ctypes.c_void_p(self._shared.ctypes.data),
                         ctypes.c_int(self._shared.size // 2))
        return status

    def check_status(self, status: int, expression: str, grid: tuple[int, int, int],
                     block: tuple[int, int, int]) -> None:
        """RuntimeError for a launch that ended with emulator error `status` (0: none)."""
        if status:
            raise RuntimeError(f"{self.name}: {expression} over grid {tuple(grid)}, block "
                               f"{tuple(block)}: {ERRORS.get(status, f'error {status}')}")

    def function(self, name: str) -> Any:
        """A C function the library exports (the checker's)."""
        return getattr(self._lib, name)

    def shared_pair(self, index: int) -> tuple[int, int]:
        """(address, size) of __shared__ variable `index` (named shared_names[index])."""
        return int(self._shared[2 * index]), int(self._shared[2 * index + 1])


def build(source: str, kernels: Mapping[str, str], name: str = "kernels",
          defines: Mapping[str, int | str] | None = None, checked: bool = False) -> Module:
    """Compile CUDA `source` (kernels/ on the include path) with the host compiler through
    host_shim.h, with the instantiations `kernels` (name expression -> the __global__ function
    it instantiates) and the macros `defines` (`checked`: in checking mode); cached on disk per
    source text, shim and flags."""
    execution.check_emulated_platform()
    expressions = list(kernels)
    code = _translation_unit(source, expressions)
    flags = _flags(defines, checked)
    key = hashlib.sha256("\0".join([code, *_shim_texts(), compiler(), *flags]).encode()
                         ).hexdigest()[:24]
    so = _cache_dir() / f"{name}{'-checked' if checked else ''}-{key}.so"
    if not so.exists():
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / so.name
            compile_library(source, expressions, defines, out, shim_header(checked=checked), name,
                            checked)
            os.replace(out, so)  # atomic: concurrent builders never see a partial file
    return Module(name, so, kernels, source, checked)


def _flags(defines: Mapping[str, int | str] | None, checked: bool = False) -> list[str]:
    return [*CXX_FLAGS, *(CHECK_FLAGS if checked else ()), *loader.define_options(defines or {})]


def _shim_texts() -> list[str]:
    return [(loader.KERNEL_DIR / h).read_text() for h in SHIM_HEADERS]


def compile_library(source: str, expressions: Sequence[str],
                    defines: Mapping[str, int | str] | None, out: Path,
                    header: Path | None = None, name: str = "kernels",
                    checked: bool = False) -> None:
    """Run the host compiler on `source` with the launchers of `expressions` into the shared
    library `out`, uncached, `header` (default: kernels/host_shim.h) included first. A `checked`
    library is compiled to an object first and linked without the sanitizer's run-time library
    (the checker in the shim stands in for it)."""
    header = header or loader.KERNEL_DIR / "host_shim.h"
    src = out.with_name(f"{name}_emulated.cpp")
    src.write_text(_translation_unit(source, expressions))
    flags = _flags(defines, checked)
    compile_only = ["-c", "-o", str(out.with_suffix(".o"))] if checked else ["-o", str(out)]
    steps = [[compiler(), *flags, "-I", str(loader.KERNEL_DIR), "-include", str(header),
              str(src), *compile_only]]
    if checked:
        steps.append([compiler(), "-shared", "-fPIC", str(out.with_suffix(".o")), "-o", str(out)])
    for cmd in steps:
        res = subprocess.run(cmd, capture_output=True, text=True, check=False)
        if res.returncode != 0:
            raise RuntimeError(f"host compile of {name} failed:\n{res.stderr}")


def _shim(checked: bool = False) -> tuple[str, list[str], list[str], Path]:
    """(compiler, flags, the shim's header texts as SHIM_HEADERS names them, the cache folder of
    the precompiled host_shim.h) of unchecked or `checked` builds."""
    texts = _shim_texts()
    cxx = compiler()
    flags = [f for f in _flags(None, checked) if f != "-shared"]
    key = hashlib.sha256("\0".join([*texts, cxx, *flags]).encode()).hexdigest()[:24]
    return cxx, flags, texts, _cache_dir() / f"shim-{key}"


def shim_header(wait: bool = False, checked: bool = False) -> Path:
    """The host_shim.h for a build to include: a copy in the cache next to its GCC precompiled
    header (which halves a build's time, most of it spent parsing the shim's standard headers)
    where that exists, else kernels/host_shim.h. A missing precompiled header is built once per
    process, in a background (daemon) thread, so that no call waits for it, or first with
    `wait` (the warm-up). A failed build warns once and is recorded for `shim_status`; builds
    then parse the header. Checked builds have their own (`checked`)."""
    cxx, flags, texts, folder = _shim(checked)
    if not (folder / "host_shim.h.gch").exists():
        with _lock:
            thread = _shim_threads.get(folder)
            if thread is None:
                thread = _shim_threads[folder] = threading.Thread(
                    target=_precompile, args=(cxx, flags, texts, folder), daemon=True,
                    name="onnx-cupy shim header")
                thread.start()
        if wait:
            thread.join()
    return folder / "host_shim.h" if (folder / "host_shim.h.gch").exists() \
        else loader.KERNEL_DIR / "host_shim.h"


SHIM_FAILED = "failed.txt"   # in the header's cache folder: why its last build failed


def shim_status() -> str:
    """The precompiled shim header's state, for `onnx-cupy info`: ready, not built yet, not used
    (a compiler other than GCC), or failed and why (recorded by the last build, in any
    process); building nothing."""
    try:
        cxx, _, _, folder = _shim()
    except RuntimeError as exc:
        return f"unavailable ({exc})"
    if (folder / "host_shim.h.gch").exists():
        return f"ready ({folder / 'host_shim.h.gch'})"
    if not _is_gcc(cxx):
        return f"not used ({compiler_version()} is not GCC: builds parse the header)"
    failed = folder / SHIM_FAILED
    if failed.exists():
        return f"failed ({failed}): {failed.read_text().strip()}"
    return "not built yet (the first emulated build starts it, or onnx-cupy warmup)"


def _is_gcc(cxx: str) -> bool:
    version = _version_text(cxx)
    return "Free Software Foundation" in version and "clang" not in version.lower()


def _precompile(cxx: str, flags: list[str], texts: list[str], folder: Path) -> None:
    """Write the shim's headers (`texts`, as SHIM_HEADERS names them) and the precompiled
    host_shim.h into `folder` (GCC only: another compiler's builds parse the header). A failure
    is written to `folder`/SHIM_FAILED and warned about once per process: builds go on without
    the header, slower."""
    if not _is_gcc(cxx):
        return
    try:
        folder.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryDirectory(dir=folder) as tmp:
            for name, text in zip(reversed(SHIM_HEADERS), reversed(texts)):  # host_shim.h last
                (Path(tmp) / name).write_text(text)
                os.replace(Path(tmp) / name, folder / name)
            pch = Path(tmp) / "host_shim.h.gch"
            nice = shutil.which("nice")  # at low priority: a call's own build goes first
            cmd = [*([nice, "-n", "19"] if nice else []), cxx, *flags, "-x", "c++-header",
                   str(folder / "host_shim.h"), "-o", str(pch)]
            res = subprocess.run(cmd, capture_output=True, text=True, check=False)
            if res.returncode != 0:
                lines = (res.stderr or res.stdout).strip().splitlines()
                raise RuntimeError(f"{cxx} exited with {res.returncode}: "
                                   f"{lines[-1] if lines else 'no output'}")
            os.replace(pch, folder / "host_shim.h.gch")  # atomic, as the libraries
        (folder / SHIM_FAILED).unlink(missing_ok=True)
    except Exception as exc:  # noqa: BLE001 (a thread's failure would vanish: record it)
        reason = f"{type(exc).__name__}: {exc}"
        with contextlib.suppress(OSError):
            (folder / SHIM_FAILED).write_text(reason + "\n")
        global _shim_warned
        with _lock:
            first, _shim_warned = not _shim_warned, True
        if first:
            warnings.warn(f"onnx-cupy: precompiling the emulator's host_shim.h failed, so "
                          f"emulated builds parse it each time (slower): {reason}",
                          RuntimeWarning, stacklevel=1)


def _shared_storage(so: Path, lib: ctypes.CDLL) -> tuple[int, np.ndarray, list[str]]:
    """The library's load address, and its __shared__ variables: their (address, size) pairs and
    names, from the zero-initialized function statics (the only statics CUDA device code
    declares) of its ELF symbol table."""
    data = so.read_bytes()
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize)
                for i in range(shnum)]
    symbols: dict[str, tuple[int, int, int]] = {}
    for _, kind, _, _, offset, size, link, _, _, entsize in sections:
        if kind != 2:  # SHT_SYMTAB
            continue
        names = sections[link][4]
        for at in range(offset, offset + size, entsize):
            name_at, _, _, shndx, value, length = struct.unpack_from("<IBBHQQ", data, at)
            name = data[names + name_at:data.index(b"\0", names + name_at)].decode()
            symbols[name] = (value, length, shndx)
    entry = ctypes.cast(lib.oc_launch_0, ctypes.c_void_p).value
    if entry is None:  # a defined function always has an address
        raise RuntimeError(f"{so}: oc_launch_0 has no address")
    base = entry - symbols["oc_launch_0"][0]
    bss = {i for i, section in enumerate(sections) if section[1] == 8}  # SHT_NOBITS
    shared = [(name, base + value, length) for name, (value, length, shndx) in symbols.items()
              if name.startswith("_ZZ") and shndx in bss]
    pairs = np.array([(at, length) for _, at, length in shared], dtype=np.uint64).reshape(-1)
    return base, pairs, [_local_name(name) for name, _, _ in shared]


def _local_name(symbol: str) -> str:
    """The name of the function-local static whose mangled name is `symbol` (_ZZ <function> E
    <length><name> [discriminator]), or `symbol` itself."""
    for m in reversed(list(re.finditer(r"E(\d+)", symbol))):
        name = symbol[m.end():m.end() + int(m.group(1))]
        if name.isidentifier() and re.fullmatch(r"(_\d|__\d+_)?", symbol[m.end() + len(name):]):
            return name
    return symbol


def library(k: Instantiation, checked: bool = False) -> Module:
    """The emulation library of the instantiation `k` (`checked`: in checking mode): built on
    first use (once per source text, cached on disk), loaded once per process."""
    key = (k, checked)
    lib = _libraries.get(key)
    if lib is not None:
        return lib
    loader.registered(k)
    with _lock:
        lock = _building.setdefault(key, threading.Lock())
    with lock:  # one build per instantiation; different instantiations build in parallel
        if key not in _libraries:
            _libraries[key] = build(loader.source(k.family), {k.expression: k.template},
                                    k.family, loader.defines(k.family), checked)
        return _libraries[key]


def _arg_pointer(arg: Any, keep: list[object]) -> int:
    if arg is None:                                 # a null device pointer, as CuPy passes None
        pointer = ctypes.c_void_p(0)
        keep.append(pointer)
        return ctypes.addressof(pointer)
    if isinstance(arg, np.ndarray) and arg.dtype.names is None:
        pointer = ctypes.c_void_p(arg.ctypes.data)  # device-pointer argument
        keep.append(pointer)
        return ctypes.addressof(pointer)
    if isinstance(arg, np.ndarray):
        keep.append(arg)                            # struct passed by value: its bytes
        return arg.ctypes.data
    if isinstance(arg, np.generic):
        holder = np.array(arg)                      # scalar passed by value
        keep.append(holder)
        return holder.ctypes.data
    raise TypeError(f"unsupported kernel argument {type(arg).__name__}")


def launch(k: Instantiation, grid: tuple[int, int, int], block: tuple[int, int, int],
           args: tuple[Any, ...]) -> None:
    """Run the instantiation `k` over `grid` x `block` on the CPU, cooperatively (in the order
    of the current `schedule`) where its record says so; checked in checking mode (see
    checker.checking), with its grid-stride axes narrowed where the mode asks so."""
    if not checker.active():
        library(k).launch(k.expression, grid, block, args, k.cooperative, _seed.get())
        return
    session = checker.session()
    if session is not None:
        session.instantiations.add(k)
        if session.record_only:
            return
    grid = checker.narrowed(grid, k.grid_stride)
    library(k, checked=True).launch(k.expression, grid, block, args, k.cooperative, _seed.get())
