"""Execution paths: 'numpy' (vectorized NumPy), 'emulated' (the CUDA kernels compiled by the host
C++ compiler and run on the CPU) and 'cupy' (the CUDA kernels on the GPU). The input's array type
picks the path unless `backend(...)` forces one; this module also moves arrays between paths.
"""
from __future__ import annotations

import contextlib
import contextvars
import functools
import platform
import struct
import sys
import weakref
from collections.abc import Iterator
from typing import Any, Protocol, TypeAlias, TypeVar

import numpy as np
import numpy.typing as npt

from . import cupy_path

BACKENDS = ("numpy", "emulated", "cupy")


class NDArray(Protocol):
    """What numpy.ndarray and cupy.ndarray share, for type checkers: an operator returns the
    array type it is given (`ArrayT`). Other array objects (DLPack, __cuda_array_interface__)
    are accepted at run time and give a cupy.ndarray; pass them through `cupy.asarray` for a
    checker to follow the type."""

    @property
    def shape(self) -> tuple[int, ...]: ...

    @property
    def dtype(self) -> np.dtype[Any]: ...

    def astype(self, dtype: Any, /) -> Any: ...


ArrayT = TypeVar("ArrayT", bound=NDArray)
# A NumPy array's scalar type, where a signature keeps it in one output and not in another
# (MaxPool's Y of X's dtype beside int64 Indices); the API reference shows the two aliases by
# name (docs/conf.py's autodoc_type_aliases)
ScalarT = TypeVar("ScalarT", bound=np.generic)
NumPyArray: TypeAlias = npt.NDArray[ScalarT]   # any shape
Indices: TypeAlias = npt.NDArray[np.int64]     # flat positions, as MaxPool's Indices output
_forced: contextvars.ContextVar[str | None] = contextvars.ContextVar("onnx_cupy_backend",
                                                                     default=None)


_substitutes: list[Any] = []   # objects standing in for cupy (`cupy_substitute`), innermost last


def cupy_module() -> Any:   # the module, or None
    """The cupy module if importable, else None (typed Any: cupy has no type information); the
    innermost `cupy_substitute` where one is active."""
    return _substitutes[-1] if _substitutes else _imported_cupy()


_import_error: list[BaseException] = []   # why `import cupy` failed, where it did


@functools.cache
def _imported_cupy() -> Any:
    try:
        import cupy
    except Exception as exc:  # noqa: BLE001 (ImportError, or a broken CUDA install)
        _import_error.append(exc)
        return None
    return cupy


@contextlib.contextmanager
def cupy_substitute(module: Any) -> Iterator[Any]:
    """Inside the block, `module` is the library's cupy (an emulated device, which runs the CuPy
    path without a GPU: onnx_cupy.core.emulated_device, whose `installed()` uses this; None: no
    cupy, as where CuPy is not installed)."""
    _substitutes.append(module)
    try:
        yield module
    finally:
        _substitutes.remove(module)


def cupy_unusable() -> str | None:
    """Why the cupy backend cannot run here, in one line; None where it can.

    The reason names what is wrong in words to act on: the CUDA driver's own error where no GPU
    is usable, CuPy missing or older than the floor, NVRTC or the CUDA headers that CuPy cannot
    find, each with what to install (onnx_cupy.core.cupy_path checks them). Checked once per
    process for the installed CuPy, once per object for a `cupy_substitute`: a repeated call
    is a look-up (the default backend is asked per prepared ONNX model, `backend("cupy")` per
    run).
    """
    if not _substitutes:
        return _installed_unusable()
    cp = _substitutes[-1]
    if cp is None:
        return cupy_path.not_installed(None)
    known = _checked.get(id(cp))
    if known is not None and known[0]() is cp:
        return known[1]
    reason = cupy_path.unusable(cp)
    key = id(cp)
    with contextlib.suppress(TypeError):   # an object without weak references: asked each time
        _checked[key] = (weakref.ref(cp, lambda _: _checked.pop(key, None)), reason)
    return reason


# id -> (the substitute cupy, why it cannot run the cupy backend): each asked once while it lives
_checked: dict[int, tuple[weakref.ref[Any], str | None]] = {}


@functools.cache
def _installed_unusable() -> str | None:
    cp = _imported_cupy()
    if cp is None:
        return cupy_path.not_installed(_import_error[0] if _import_error else None)
    return cupy_path.unusable(cp)


def gpu_available() -> bool:
    """Whether the cupy backend can run here: a visible GPU, and CuPy with what it needs to
    compile (`cupy_unusable` says why not)."""
    return cupy_unusable() is None


def default_backend() -> str:
    """'cupy' where the cupy backend can run (a visible GPU, CuPy with NVRTC and the CUDA
    headers), 'numpy' otherwise."""
    return "cupy" if gpu_available() else "numpy"


def forced() -> str | None:
    """The backend forced by an enclosing `backend(...)` block, if any."""
    return _forced.get()


@contextlib.contextmanager
def backend(name: str) -> Iterator[None]:
    """Force an execution path inside the ``with`` block.

    Parameters
    ----------
    name : {"numpy", "emulated", "cupy"}
        ``numpy``: the vectorized NumPy path; ``emulated``: the CUDA kernels compiled by the host
        C++ compiler and run on the CPU, on NumPy arrays; ``cupy``: the CUDA kernels on the GPU,
        on CuPy arrays. Outside any block the input's array type picks ``numpy`` or ``cupy``.

    Raises
    ------
    ValueError
        An unknown path name.
    RuntimeError
        ``emulated`` on a platform where it cannot work (it needs Linux: ELF shared libraries
        built by g++); ``cupy`` where the cupy backend cannot run (no usable GPU, or CuPy
        without NVRTC or the CUDA headers: the message says which, `onnx-cupy info` lists
        them).

    Examples
    --------
    >>> import numpy as np, onnx_cupy as oc
    >>> x = np.arange(8, dtype=np.float32).reshape(1, 1, 8)
    >>> with oc.backend("numpy"):
    ...     oc.average_pool(x, kernel_shape=[2], strides=[2])
    array([[[0.5, 2.5, 4.5, 6.5]]], dtype=float32)
    """
    if name not in BACKENDS:
        raise ValueError(f"backend must be one of {BACKENDS}, got {name!r}")
    if name == "emulated":
        check_emulated_platform()
    elif name == "cupy":
        reason = cupy_unusable()
        if reason is not None:
            raise RuntimeError(f"backend 'cupy' cannot run here: {reason}")
    token = _forced.set(name)
    try:
        yield
    finally:
        _forced.reset(token)


def check_emulated_platform() -> None:
    """RuntimeError where the emulated path cannot work: it builds the kernels as ELF shared
    libraries with g++ and reads their ELF symbol table (the __shared__ storage), so it needs
    Linux on a 64-bit little-endian machine."""
    if sys.platform.startswith("linux") and sys.byteorder == "little" and \
            struct.calcsize("P") == 8:
        return
    raise RuntimeError(f"the emulated backend needs Linux on a 64-bit little-endian machine (it "
                       f"builds the CUDA kernels as ELF shared libraries with g++); this is "
                       f"{sys.platform} on {platform.machine() or 'an unknown machine'}, "
                       f"{struct.calcsize('P') * 8}-bit {sys.byteorder}-endian: use the numpy "
                       f"path here")


def is_cupy_array(x: Any) -> bool:
    cp = cupy_module()
    return cp is not None and isinstance(x, cp.ndarray)


def to_host(a: Any) -> Any:
    """A CuPy array copied to NumPy; anything else unchanged."""
    return a.get() if is_cupy_array(a) else a


def to_path(a: Any, backend: str) -> Any:
    """An array moved to the arrays of `backend`: to the current GPU for 'cupy' (strings stay on
    the host, where only the NumPy path takes them), to NumPy otherwise."""
    if backend != "cupy":
        return np.asarray(to_host(a))
    if is_cupy_array(a):
        return a
    a = np.asarray(a)
    return a if a.dtype.kind in "OUS" else cupy_module().asarray(a)


_DLPACK_CPU, _DLPACK_CUDA, _DLPACK_CUDA_MANAGED = 1, 2, 13


def as_array(x: Any, op: str) -> Any:
    """`x` as a numpy.ndarray or cupy.ndarray, zero-copy: objects exposing
    `__cuda_array_interface__` (Numba device arrays, ...) or a CUDA DLPack capsule (PyTorch CUDA
    tensors, JAX, ...) become CuPy arrays; CPU DLPack objects become NumPy arrays."""
    if isinstance(x, np.ndarray) or is_cupy_array(x):
        return x
    cuda_interface = hasattr(x, "__cuda_array_interface__")
    device = x.__dlpack_device__()[0] if hasattr(x, "__dlpack_device__") else None
    if cuda_interface or device in (_DLPACK_CUDA, _DLPACK_CUDA_MANAGED):
        cp = cupy_module()
        if cp is None:
            from . import extras

            raise TypeError(f"{op}: X is a CUDA array ({type(x).__name__}); install CuPy to run "
                            f"on it: {extras.install_hint('cuda12')}")
        return cp.asarray(x) if cuda_interface else cp.from_dlpack(x)
    if device == _DLPACK_CPU:
        return np.from_dlpack(x)
    raise TypeError(
        f"{op}: X must be a numpy.ndarray, a cupy.ndarray or an array exposing "
        f"__cuda_array_interface__ or DLPack, got {type(x).__module__}.{type(x).__name__}"
    )


def plain(a: Any, op: str, name: str = "X") -> Any:
    """`a` with NumPy subclasses taken as the arrays they are: a memmap, a matrix or a user's
    subclass as a numpy.ndarray view of the same memory (its methods and ufunc overrides play
    no part, on every path alike); a masked array refused with a TypeError naming `name`,
    since no operator here has a meaning for a mask. Anything else unchanged."""
    if type(a) is np.ndarray or not isinstance(a, np.ndarray):
        return a
    if isinstance(a, np.ma.MaskedArray):
        raise TypeError(f"{op}: {name} is a numpy.ma.MaskedArray; masked arrays are not taken "
                        f"(no operator here has a meaning for a mask): pass {name}.filled(value) "
                        f"or {name}.data")
    return a.view(np.ndarray)


def select(x: Any, op: str, name: str = "X") -> tuple[Any, str]:
    """(`x` as a NumPy/CuPy array (`plain`; `name` names it in errors), the backend that runs
    `op` on it); TypeError for array types that the forced backend cannot take."""
    if type(x) is not np.ndarray:   # NumPy and CuPy arrays as they are, without a look-up
        cp = _substitutes[-1] if _substitutes else _imported_cupy()
        if cp is not None and type(x) is cp.ndarray and _forced.get() in (None, "cupy"):
            return x, "cupy"
        x = plain(x, op, name) if isinstance(x, np.ndarray) else as_array(x, op)
    forced = _forced.get()
    if isinstance(x, np.ndarray):
        if forced == "cupy":
            raise TypeError(f"{op}: backend 'cupy' needs a cupy.ndarray input, got numpy.ndarray")
        return x, forced or "numpy"
    if forced in ("numpy", "emulated"):
        raise TypeError(f"{op}: backend '{forced}' needs a numpy.ndarray input, got cupy.ndarray")
    return x, "cupy"
