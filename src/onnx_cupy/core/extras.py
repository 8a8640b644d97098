"""Optional dependencies: one clear message naming the extra to install when one is missing."""
from __future__ import annotations


def missing(feature: str, extra: str, exc: ImportError) -> ModuleNotFoundError:
    """The error to raise (from `exc`) when `feature` cannot import what extra `extra` installs."""
    return ModuleNotFoundError(
        f"{feature} needs the optional dependency '{exc.name or exc}'; install it with: "
        f'pip install "onnx-cupy[{extra}]"', name=exc.name)
