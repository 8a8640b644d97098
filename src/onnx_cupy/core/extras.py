"""Optional dependencies: one clear message naming what to install when one is missing.

onnx-cupy is installed from a clone or a wheel (it is not on a package index), so a hint names
both the extra (`pip install ".[dask]"` in a clone) and the extra's own requirements, read from
the installed package's metadata (pyproject.toml is their one source), which `pip install`
fetches wherever onnx-cupy came from.
"""
from __future__ import annotations

import importlib.metadata
import re

DISTRIBUTION = "onnx-cupy"


def requirements(extra: str) -> list[str]:
    """The requirements that extra `extra` adds, as the installed metadata lists them (markers
    dropped); [] where onnx-cupy runs from a source tree without being installed."""
    try:
        listed = importlib.metadata.requires(DISTRIBUTION) or []
    except importlib.metadata.PackageNotFoundError:
        return []
    marker = re.compile(rf"""extra\s*==\s*["']{re.escape(extra)}["']""")
    return [r.split(";")[0].strip() for r in listed if ";" in r and marker.search(r)]


def install_hint(extra: str, only: str | None = None) -> str:
    """How to install extra `extra` (or, with `only`, that one of its requirements): the
    requirements directly, or the extra from a clone."""
    own = " ".join(f'"{r}"' for r in requirements(extra) if not r.startswith(DISTRIBUTION)
                   and (only is None or re.match(rf"{re.escape(only)}\b", r)))
    clone = f'pip install ".[{extra}]" in a clone of onnx-cupy'
    return f"pip install {own} (or {clone})" if own else clone


def missing(feature: str, extra: str, exc: ImportError, only: str | None = None
            ) -> ModuleNotFoundError:
    """The error to raise (from `exc`) when `feature` cannot import what extra `extra` installs
    (`only`: the one requirement of the extra that it needs)."""
    return ModuleNotFoundError(
        f"{feature} needs the optional dependency '{exc.name or exc}' (onnx-cupy's extra "
        f"'{extra}'); install it with: {install_hint(extra, only)}", name=exc.name)
