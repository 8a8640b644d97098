"""The one launch of every kernel (`Launch`, on the device it is prepared for: the cupy module or
the emulated device, on the current stream), and the grid arithmetic and parameter structs the
families' launches share."""
from __future__ import annotations

import functools
from typing import Any, NamedTuple

import numpy as np

from . import dtypes, loader, workspaces
from .loader import BLOCK
from .numerics import cdiv
from .records import Instantiation

MAX_BLOCKS = 1 << 20       # most blocks of a 1-D grid-stride launch
MAX_GRID_X = 2**31 - 1     # CUDA's limits on grid x, and on grid y and z
MAX_GRID_YZ = 65535


def pow2_floor(v: int) -> int:
    """Largest power of two <= max(v, 1)."""
    return 1 << (max(v, 1).bit_length() - 1)


def pow2_ceil(v: int) -> int:
    """Smallest power of two >= max(v, 1)."""
    return 1 << (max(v, 1) - 1).bit_length()


def block_rows(width: int) -> tuple[int, int]:
    """(x, y) of a BLOCK-thread block whose x covers `width` threads (a power of two, at most
    BLOCK) and whose y holds as many rows as the rest allows."""
    x = min(BLOCK, pow2_ceil(width))
    return x, BLOCK // x


def grid_yz(blocks: int) -> tuple[int, int]:
    """`blocks` rows of blocks on grid y, then z: (y, z) with y * z >= blocks (z may pass
    MAX_GRID_YZ: the caller checks)."""
    return min(blocks, MAX_GRID_YZ), cdiv(blocks, MAX_GRID_YZ)


@functools.lru_cache(maxsize=1024)   # a prepared call's launches ask again at every call
def grid_for(work_items: int, block: int = BLOCK
             ) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
    """1-D grid for a grid-stride loop over `work_items`."""
    blocks = max(1, min(MAX_BLOCKS, cdiv(work_items, block)))
    return (blocks, 1, 1), (block, 1, 1)


def parameter_struct(dtype: np.dtype, **fields: Any) -> np.ndarray:
    """A kernel's by-value parameter struct: a read-only size-1 array of the struct's NumPy dtype;
    array fields are filled from the front, the rest stays zero."""
    struct = np.zeros(1, dtype=dtype)
    for name, value in fields.items():
        if dtype[name].shape:
            value = np.asarray(value)
            struct[name][0, :value.size] = value
        else:
            struct[name] = value
    struct.flags.writeable = False
    return struct


def divider(d: int) -> tuple[int, int]:
    """(mul, shift) for oc::fast_div in kernels/common.cuh:
    n // d == (mulhi(n, mul) + n) >> shift for 0 <= n < 2**31, with shift = ceil(log2 d) and
    mul = floor(2**32 * (2**shift - d) / d) + 1."""
    if not 1 <= d <= dtypes.INT32_LIMIT:
        raise ValueError(f"divider: divisor {d} is outside [1, 2**31)")
    shift = (d - 1).bit_length()
    return (2**32 * (2**shift - d)) // d + 1, shift


def grid_offset_bits(work_items: int, *extents: int) -> int:
    """Index width for a grid-stride launch over `work_items`: 32 when the extents and the loop
    index (which passes `work_items` by up to one grid's worth of threads) all fit an int."""
    (blocks, _, _), (block, _, _) = grid_for(work_items)
    return dtypes.offset_bits(*extents, work_items + blocks * block)


Shape = tuple[tuple[int, int, int], tuple[int, int, int]]


class LaunchSpec(NamedTuple):
    """What one launch is made of, whatever the device: the instantiation, its (grid, block)
    (None: a 1-D grid-stride grid over `work_items`), and the arguments after the call's own
    arrays (parameter structs; a family's cached launch functions make these, a `Launch` runs
    one on a device)."""

    kernel: Instantiation
    shape: Shape | None
    work_items: int = 0
    constants: tuple[Any, ...] = ()


class Launch:
    """One launch of a prepared call on `device` (the cupy module or the emulated device): the
    instantiation, its (grid, block) (None: a grid-stride grid over `work_items`), and the
    arguments after the call's own arrays (parameter structs, uploaded tables), all fixed by
    the call's key. It owns those constants: a parameter struct passed by its address lives as
    long as the launch (and so as the prepared call that holds it), whatever cache made it; the
    device tables among them go to a CUDA graph that captures the launch too
    (workspaces.keep_for_graphs). The compiled function is looked up at the first launch and
    kept: a prepared call runs on the one device its key names."""

    __slots__ = ("_function", "_grid", "_tables", "arguments", "constants", "device", "kernel",
                 "shape", "work_items")

    def __init__(self, device: Any, spec: LaunchSpec, *tables: Any) -> None:
        """The launch of `spec` on `device`, with device `tables` (uploaded by the call) before
        the spec's constants (the kernels take their tables, then their parameter struct)."""
        self.device, self.kernel, self.shape, self.work_items = device, *spec[:3]
        constants = self.constants = (*tables, *spec.constants)   # owned: see the class
        self.arguments = tuple(by_value(device, c) for c in constants)
        self._grid: Shape = spec.shape if spec.shape is not None else grid_for(spec.work_items)
        self._function: Any = None
        # device tables among the constants: a CUDA graph captured with this launch reads them
        self._tables = any(isinstance(c, device.ndarray) for c in constants)

    def __call__(self, *arrays: Any) -> None:
        """Launch on `arrays` (input, output, ...; None for a pointer the kernel does not use),
        then the constants."""
        function = self._function
        if function is None:   # the first launch: on the device its call's key names
            function = self._function = loader.cuda_function(self.kernel, self.device)
        function(*self._grid, (*arrays, *self.arguments))
        if self._tables:
            workspaces.keep_for_graphs(self.device, self.constants)

    def __repr__(self) -> str:
        return f"Launch({self.kernel!r}, {self.shape})"


def by_value(device: Any, value: Any) -> Any:
    """A constant argument as a launch passes it: a parameter struct (a size-one NumPy array,
    which the caller keeps: a Launch owns its constants) as a pointer to its bytes, which CuPy
    passes as it is (a NumPy array it would read through __array_interface__ at every launch:
    tens of microseconds for a struct of many fields); anything else as it is."""
    if isinstance(value, np.ndarray) and value.dtype.names:
        return device.cuda.function.CPointer(value.ctypes.data)
    return value
