"""What the cupy path needs of this installation, checked: CuPy at the version floor, a visible
GPU, NVRTC as CuPy loads it and the CUDA headers that CuPy's compiles include. Each check gives
what it found and, where the path cannot run, why, in words a user can act on (the driver's own
error, or what to install and what for).

The one answer to "why can the cupy backend not run here" is
`onnx_cupy.core.execution.cupy_unusable`, which asks this module once per process and keeps the
answer; the command line, `onnx-cupy info`, `backend("cupy")` and `warmup(backend="cupy")` all
give that answer. A substitute cupy that is not a module (an emulated device,
onnx_cupy.core.emulated_device, which runs the kernels on the emulator) is checked for its
devices only.
"""
from __future__ import annotations

import re
import types
from typing import Any, NamedTuple

# the oldest CuPy the cupy path runs on: the `cuda12` extra of pyproject.toml asks the same (its
# comment and the changelog say what older versions get wrong)
FLOOR = (14, 2)
DISTRIBUTION = "cupy-cuda12x"
NVRTC = "NVRTC (as CuPy loads it)"
HEADERS = "CUDA headers (CuPy's compiles include them)"


class Check(NamedTuple):
    """One thing the cupy path needs: its name, what was found (the line `onnx-cupy info`
    shows after the name) and, where the path cannot run for it, why (None: it can)."""

    what: str
    found: str
    problem: str | None = None


def _floor() -> str:
    return ".".join(map(str, FLOOR))


def _install(only: str | None = DISTRIBUTION) -> str:
    """How to install CuPy with [ctk] as the cuda12 extra asks it (None: the whole extra)."""
    from . import extras

    return extras.install_hint("cuda12", only)


def _one_line(exc: BaseException) -> str:
    text = " ".join(str(exc).split())
    return text or type(exc).__name__


def not_installed(error: BaseException | None) -> str:
    """Why the cupy path cannot run when `import cupy` failed with `error` (None: there is no
    cupy to import)."""
    if error is None or (isinstance(error, ModuleNotFoundError) and error.name == "cupy"):
        return f"CuPy is not installed: {_install(None)}"
    return f"CuPy cannot be imported ({type(error).__name__}: {_one_line(error)})"


def _version(cp: Any) -> Check:
    version = str(getattr(cp, "__version__", "unknown"))
    found = re.match(r"(\d+)\.(\d+)", version)
    if found is not None and tuple(map(int, found.groups())) < FLOOR:
        return Check("CuPy", f"{version}, older than {_floor()}",
                     f"CuPy {version} is older than {_floor()}, the oldest the cupy backend "
                     f"runs on: {_install()}")
    return Check("CuPy", f"{version} ({_floor()} or later needed)")


def _devices(cp: Any) -> Check:
    try:
        count = int(cp.cuda.runtime.getDeviceCount())
    except Exception as exc:  # noqa: BLE001 (no driver, a driver too old, no device: its words)
        return Check("GPU", f"none usable ({_one_line(exc)})", f"no usable GPU: {_one_line(exc)}")
    if count < 1:
        return Check("GPU", "none visible", "no GPU is visible (CUDA counts 0 devices)")
    return Check("GPU", f"{count} visible")


def _not_found(exc: BaseException) -> bool:
    """Whether `exc` says that a library is nowhere to be loaded (cuda.pathfinder's
    DynamicLibNotFoundError, by name: CuPy raises it from a package of its own choice)."""
    return isinstance(exc, OSError) or any(
        c.__name__ == "DynamicLibNotFoundError" for c in type(exc).__mro__)


def _nvrtc(cp: Any) -> Check:
    try:
        major, minor = cp.cuda.nvrtc.getVersion()
    except Exception as exc:  # noqa: BLE001 (not found, or found and broken: say which)
        why = "not found" if _not_found(exc) else f"cannot be loaded ({_one_line(exc)})"
        return Check(NVRTC, why, f"NVRTC {why} (CuPy compiles every kernel with it, and "
                                 f"{DISTRIBUTION}[ctk] brings it): {_install()}")
    return Check(NVRTC, f"{major}.{minor}")


def _headers() -> Check:
    """The CUDA headers as CuPy 14 finds them: cuda.pathfinder's directory of cuda_runtime.h
    (the wheel nvidia-cuda-runtime-cu12 that [ctk] brings, conda, CUDA_PATH/CUDA_HOME, then a
    toolkit on the system); every compile of CuPy's own passes it as an include path (the
    library's kernels, compiled by onnx_cupy.core.cuda_compile, include none)."""
    what = HEADERS
    use = ("CuPy includes them in every kernel of its own it compiles: the copies, casts and "
           "fills onnx-cupy's calls use")
    try:
        from cuda.pathfinder import find_nvidia_header_directory
    except ImportError as exc:
        return Check(what, "not looked for: cuda-pathfinder cannot be imported",
                     f"cuda-pathfinder cannot be imported ({_one_line(exc)}), and CuPy finds "
                     f"NVRTC and the CUDA headers with it: {_install()}")
    found = find_nvidia_header_directory("cudart")
    if found is None:
        return Check(what, "not found",
                     f"CUDA headers not found ({use}, and {DISTRIBUTION}[ctk] brings them): "
                     f"{_install()}, or set CUDA_PATH to a CUDA toolkit")
    return Check(what, str(found))


def checks(cp: Any) -> list[Check]:
    """Every check of the cupy path with `cp` as its cupy, in the order `onnx-cupy info` shows
    them; a substitute that is not a module is checked for its devices only."""
    if not isinstance(cp, types.ModuleType):
        return [_devices(cp)]
    version = _version(cp)
    if version.problem is not None:   # how an older CuPy finds NVRTC and headers is moot
        moot = f"not looked for (CuPy {cp.__version__} is older than {_floor()})"
        return [version, _devices(cp), Check(NVRTC, moot), Check(HEADERS, moot)]
    return [version, _devices(cp), _nvrtc(cp), _headers()]


def unusable(cp: Any) -> str | None:
    """Why the cupy path cannot run with `cp` as its cupy, in one line (every problem, joined
    by '; ', which no problem's own words use); None where it can."""
    if not isinstance(cp, types.ModuleType):   # an emulated device: a device count, no more
        try:
            if cp.cuda.runtime.getDeviceCount() > 0:
                return None
        except Exception:  # noqa: BLE001 (checks() asks again, and says why)
            pass
    problems = [c.problem for c in checks(cp) if c.problem is not None]
    return "; ".join(problems) or None
