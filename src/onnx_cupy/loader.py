"""The one kernel loader: reads kernels/<family>.cu (local includes inlined, with #line markers so
compiler messages name the real file), knows every instantiation, compiles once per device."""
from __future__ import annotations

import functools
import re
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from . import backends

KERNEL_DIR = Path(__file__).resolve().parent / "kernels"
NVRTC_OPTIONS: tuple[str, ...] = ("-std=c++17",)
_INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"\s*$', re.MULTILINE)

# family -> name expressions of every instantiation, registered by the ops modules
_INSTANTIATIONS: dict[str, list[str]] = {}
_lock = threading.Lock()


# family -> {C struct name: the NumPy dtype whose bytes the launch passes by value}
_PARAMETER_BLOCKS: dict[str, dict[str, Any]] = {}
# family -> {fast-path instantiation: outputs one thread writes per iteration of its loop}
_FAST_PATHS: dict[str, dict[str, int]] = {}
# family -> instantiations whose blocks the emulator runs cooperatively
_COOPERATIVE: dict[str, set[str]] = {}
# (family, instantiation) -> most threads per block it is launched with, where not launch.BLOCK
_BLOCK_SIZES: dict[tuple[str, str], int] = {}


def register(family: str, expressions: list[str], blocks: dict[str, Any] | None = None,
             fast: dict[str, int] | None = None, cooperative: Iterable[str] = (),
             threads: dict[str, int] | None = None) -> None:
    """Declare the template instantiations a family's kernels are compiled with, the parameter
    structs (C name -> NumPy structured dtype of the same layout) they take, which of them are
    fast paths (expression -> outputs per thread and loop iteration, held to the static targets
    of the kernel report), which use barriers, shared memory or warp collectives (the emulator
    runs their blocks' threads as cooperating contexts), and the most threads per block of those
    not launched with launch.BLOCK."""
    _INSTANTIATIONS.setdefault(family, [])
    for e in [*expressions, *(fast or {})]:
        if e not in _INSTANTIATIONS[family]:
            _INSTANTIATIONS[family].append(e)
    unknown = [e for e in [*cooperative, *(threads or {})] if e not in _INSTANTIATIONS[family]]
    if unknown:
        raise ValueError(f"{family}: {unknown[0]!r} is not a registered instantiation")
    _PARAMETER_BLOCKS.setdefault(family, {}).update(blocks or {})
    _FAST_PATHS.setdefault(family, {}).update(fast or {})
    _COOPERATIVE.setdefault(family, set()).update(cooperative)
    _BLOCK_SIZES.update({(family, e): n for e, n in (threads or {}).items()})


def block_size(family: str, expression: str) -> int:
    """Most threads per block that `expression` of `family` is launched with."""
    from .launch import BLOCK  # launch imports this module

    return _BLOCK_SIZES.get((family, expression), BLOCK)


def cooperative(family: str, expression: str) -> bool:
    """Whether the emulator runs `expression`'s blocks cooperatively."""
    return expression in _COOPERATIVE.get(family, ())


def fast_paths(family: str) -> dict[str, int]:
    """The family's fast-path instantiations: expression -> outputs per thread and iteration."""
    return dict(_FAST_PATHS.get(family, {}))


def parameter_blocks(family: str) -> dict[str, Any]:
    return dict(_PARAMETER_BLOCKS.get(family, {}))


def families() -> list[str]:
    return sorted(_INSTANTIATIONS)


def instantiations(family: str) -> tuple[str, ...]:
    return tuple(_INSTANTIATIONS[family])


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


def cuda_function(family: str, expression: str) -> Any:
    """The compiled function for `expression` on the current device (one RawModule per family
    and device, compiled once; CuPy's on-disk cache serves later processes)."""
    cupy = backends.cupy_module()
    key = (family, expression, cupy.cuda.runtime.getDevice())
    fn = _functions.get(key)
    if fn is None:
        with _lock:
            fn = _functions.get(key)
            if fn is None:
                module = cupy.RawModule(
                    code=source(family),
                    options=NVRTC_OPTIONS,
                    name_expressions=list(instantiations(family)),
                )
                for expr in instantiations(family):
                    _functions[(family, expr, key[2])] = module.get_function(expr)
                fn = _functions[key]
    return fn
