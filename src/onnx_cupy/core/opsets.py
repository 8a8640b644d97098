"""Operator versions: map an opset number to the version in force, check attributes."""
from __future__ import annotations

import functools
from collections.abc import Mapping

from .attributes import is_int

MAX_OPSET = 28  # newest ONNX opset whose operator versions are listed below

# op -> {version: attributes that version defines}
ATTRIBUTES: dict[str, dict[int, frozenset[str]]] = {}


def _define(op: str, history: list[tuple[int, set[str]]]) -> None:
    attrs: set[str] = set()
    ATTRIBUTES[op] = {}
    for version, added in history:
        attrs |= added
        ATTRIBUTES[op][version] = frozenset(attrs)


_POOL = {"auto_pad", "kernel_shape", "pads", "strides"}
_define("AveragePool", [(1, _POOL), (7, {"count_include_pad"}), (10, {"ceil_mode"}),
                        (11, set()), (19, {"dilations"}), (22, set())])
_define("LpPool", [(1, _POOL | {"p"}), (2, set()), (11, set()),
                   (18, {"ceil_mode", "dilations"}), (22, set())])
_define("MaxPool", [(1, _POOL), (8, {"storage_order"}), (10, {"ceil_mode", "dilations"}),
                    (11, set()), (12, set()), (22, set())])
_define("GlobalAveragePool", [(1, set()), (22, set())])
_define("GlobalMaxPool", [(1, set()), (22, set())])
_define("GlobalLpPool", [(1, {"p"}), (2, set()), (22, set())])
_define("Hardmax", [(1, {"axis"}), (11, set()), (13, set())])
_define("Resize", [(10, {"mode"}),
                   (11, {"coordinate_transformation_mode", "cubic_coeff_a", "exclude_outside",
                         "extrapolation_value", "nearest_mode"}),
                   (13, set()), (18, {"antialias", "axes", "keep_aspect_ratio_policy"}),
                   (19, set())])
_define("GridSample", [(16, {"align_corners", "mode", "padding_mode"}), (20, set()), (22, set())])
_define("AffineGrid", [(20, {"align_corners"})])
_define("Upsample", [(7, {"mode", "scales"}), (9, set()), (10, set())])
_define("MaxUnpool", [(9, {"kernel_shape", "pads", "strides"}), (11, set()), (22, set())])
_define("RoiAlign", [(10, {"mode", "output_height", "output_width", "sampling_ratio",
                           "spatial_scale"}),
                     (16, {"coordinate_transformation_mode"}), (22, set())])
_define("MaxRoiPool", [(1, {"pooled_shape", "spatial_scale"}), (22, set())])

# attributes that a later version made inputs: (op, attribute) -> the version that did
BECAME_INPUTS: dict[tuple[str, str], int] = {("Upsample", "scales"): 9}
for (_op, _name), _since in BECAME_INPUTS.items():
    ATTRIBUTES[_op] = {v: names - {_name} if v >= _since else names
                       for v, names in ATTRIBUTES[_op].items()}


def version(op: str, opset: int) -> int:
    """The version of `op` in force at `opset` (e.g. AveragePool at 21 -> 19); `opset` an int,
    Python or NumPy."""
    if not is_int(opset):
        raise TypeError(f"{op}: opset must be an int, got {opset!r}")
    return _version(op, int(opset))


@functools.cache
def _version(op: str, opset: int) -> int:
    versions = sorted(ATTRIBUTES[op])
    if opset < versions[0] or opset > MAX_OPSET:
        raise ValueError(
            f"{op}: opset {opset} is outside the supported range "
            f"{versions[0]}..{MAX_OPSET} for this operator"
        )
    return max(v for v in versions if v <= opset)


def introduced_in(op: str, attr: str) -> int:
    """The first version of `op` that defines attribute `attr`."""
    return min(v for v, names in ATTRIBUTES[op].items() if attr in names)


def in_force(op: str, opset: int) -> str:
    """'opset 18, where AveragePool-11 is in force': the opset asked for and the version it runs."""
    return f"opset {opset}, where {op}-{version(op, opset)} is in force"


def check_given(op: str, opset: int, given: Mapping[str, bool]) -> None:
    """Reject attributes given (True in `given`) that the version of `op` in force at `opset`
    does not define."""
    allowed = ATTRIBUTES[op][version(op, opset)]
    for name, is_given in given.items():
        if is_given and not any(name in names for names in ATTRIBUTES[op].values()):
            raise ValueError(f"{op}: unknown attribute '{name}' (no version of {op} defines it)")
        moved = BECAME_INPUTS.get((op, name))
        if is_given and moved is not None and version(op, opset) >= moved:
            raise ValueError(f"{op}: attribute '{name}' is not defined at {in_force(op, opset)}; "
                             f"from {op}-{moved} on, {name} is an input")
        if is_given and name not in allowed:
            raise ValueError(
                f"{op}: attribute '{name}' is not defined at {in_force(op, opset)}; "
                f"{name} came with {op}-{introduced_in(op, name)}"
            )
