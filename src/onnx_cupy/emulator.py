"""The emulated backend: kernels/<family>.cu compiled by the host C++ compiler through
host_shim.h into a shared library, and launched with the same grid, block and arguments as the
CUDA path, on NumPy buffers."""
from __future__ import annotations

import ctypes
import hashlib
import os
import shutil
import subprocess
import tempfile
import threading
from pathlib import Path
from typing import Any

import numpy as np

from . import loader

CXX_FLAGS = ("-std=c++17", "-O2", "-shared", "-fPIC", "-w")
_lock = threading.Lock()
_libraries: dict[str, tuple[ctypes.CDLL, dict[str, int]]] = {}


def compiler() -> str:
    cxx = os.environ.get("CXX") or shutil.which("g++") or shutil.which("c++")
    if not cxx:
        raise RuntimeError("the emulated backend needs a host C++ compiler (g++), none found")
    return cxx


def _cache_dir() -> Path:
    root = os.environ.get("ONNX_CUPY_CACHE") or os.path.join(
        os.environ.get("XDG_CACHE_HOME", os.path.expanduser("~/.cache")), "onnx-cupy"
    )
    path = Path(root) / "emulator"
    path.mkdir(parents=True, exist_ok=True)
    return path


def _translation_unit(family: str) -> tuple[str, dict[str, int]]:
    exprs = loader.instantiations(family)
    lines = [loader.source(family)]
    for i, expr in enumerate(exprs):
        lines.append(
            f'extern "C" void oc_launch_{i}(const unsigned int* g, const unsigned int* b, '
            f"void** a) {{ oc_emulate(&{expr}, g, b, a); }}"
        )
    return "\n".join(lines) + "\n", {e: i for i, e in enumerate(exprs)}


def library(family: str) -> tuple[ctypes.CDLL, dict[str, int]]:
    """Build (once per source text, cached on disk) and load the family's emulation library."""
    lib = _libraries.get(family)
    if lib is not None:
        return lib
    with _lock:
        if family in _libraries:
            return _libraries[family]
        code, index = _translation_unit(family)
        shim = (loader.KERNEL_DIR / "host_shim.h").read_text()
        cxx = compiler()
        key = hashlib.sha256("\0".join([code, shim, cxx, *CXX_FLAGS]).encode()).hexdigest()[:24]
        so = _cache_dir() / f"{family}-{key}.so"
        if not so.exists():
            with tempfile.TemporaryDirectory() as tmp:
                src = Path(tmp) / f"{family}_emulated.cpp"
                src.write_text(code)
                out = Path(tmp) / so.name
                cmd = [cxx, *CXX_FLAGS, "-include", str(loader.KERNEL_DIR / "host_shim.h"),
                       str(src), "-o", str(out)]
                res = subprocess.run(cmd, capture_output=True, text=True)
                if res.returncode != 0:
                    raise RuntimeError(f"host compile of kernels/{family}.cu failed:\n{res.stderr}")
                os.replace(out, so)  # atomic: concurrent builders never see a partial file
        _libraries[family] = (ctypes.CDLL(str(so)), index)
        return _libraries[family]


def _arg_pointer(arg: Any, keep: list) -> int:
    if isinstance(arg, np.ndarray) and arg.dtype.names is None:
        holder = ctypes.c_void_p(arg.ctypes.data)   # device-pointer argument
    elif isinstance(arg, np.ndarray):
        holder = arg                                 # struct passed by value: its bytes
        keep.append(holder)
        return arg.ctypes.data
    elif isinstance(arg, np.generic):
        holder = np.array(arg)                       # scalar passed by value
        keep.append(holder)
        return holder.ctypes.data
    else:
        raise TypeError(f"unsupported kernel argument {type(arg).__name__}")
    keep.append(holder)
    return ctypes.addressof(holder)


def launch(family: str, expression: str, grid: tuple[int, int, int], block: tuple[int, int, int],
           args: tuple) -> None:
    """Run `expression` of kernels/<family>.cu over `grid` x `block` on the CPU."""
    lib, index = library(family)
    fn = getattr(lib, f"oc_launch_{index[expression]}")
    keep: list = []
    ptrs = (ctypes.c_void_p * len(args))(*[_arg_pointer(a, keep) for a in args])
    g = (ctypes.c_uint * 3)(*grid)
    b = (ctypes.c_uint * 3)(*block)
    fn(g, b, ptrs)
