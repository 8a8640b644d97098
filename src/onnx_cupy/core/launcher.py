"""One launcher for every kernel: the CUDA path (CuPy, current device and stream) or the CPU
emulator, with the same grid, block and arguments; and the grid arithmetic and parameter structs
the families' launches share."""
from __future__ import annotations

import functools
from typing import Any

import numpy as np

from . import calls, dtypes, execution, loader
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
def grid_for(work_items: int, block: int = BLOCK) -> tuple[tuple[int, int, int], tuple[int, int, int]]:
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
    """(mul, shift) for oc::fast_div in kernels/common.cuh: n // d == (mulhi(n, mul) + n) >> shift for 0 <= n < 2**31,
    with shift = ceil(log2 d) and mul = floor(2**32 * (2**shift - d) / d) + 1."""
    if not 1 <= d <= dtypes.INT32_LIMIT:
        raise ValueError(f"divider: divisor {d} is outside [1, 2**31)")
    shift = (d - 1).bit_length()
    return (2**32 * (2**shift - d)) // d + 1, shift


def index_bits(work_items: int, *extents: int) -> int:
    """Index width for a grid-stride launch over `work_items`: 32 when the extents and the loop
    index (which passes `work_items` by up to one grid's worth of threads) all fit an int."""
    (blocks, _, _), (block, _, _) = grid_for(work_items)
    return dtypes.index_bits(*extents, work_items + blocks * block)


Shape = tuple[tuple[int, int, int], tuple[int, int, int]]


def launch(backend: str, k: Instantiation, work_items: int, args: tuple[Any, ...],
           shape: Shape | None = None) -> None:
    """Run the instantiation `k` with `args` on the CPU emulator (what the stand-in cupy's kernel
    functions do at a launch; `backend` is 'emulated'): over `shape` = (grid, block) when
    given, else a 1-D grid-stride grid for `work_items`. The GPU's launches are
    `Launch.__call__`'s."""
    grid, block = shape if shape is not None else grid_for(work_items)
    from . import emulator  # only the emulated path needs the host compiler's libraries

    emulator.launch(k, grid, block, args)


class Launch:
    """One launch of a prepared call (onnx_cupy.core.calls) on the path `backend`: the
    instantiation, its (grid, block) (None: a grid-stride grid over `work_items`), and the
    arguments after the call's own arrays (parameter structs, uploaded tables), all fixed by
    the call's key. It owns those constants: a parameter struct that the 'cupy' path passes by
    its address lives as long as the launch (and so as the prepared call that holds it), whatever
    cache made it; the device tables among them go to a CUDA graph that captures the launch
    too (calls.keep_for_graphs). On the 'cupy' path the compiled function is looked up at the
    first launch and kept: a prepared call runs on the one device its key names
    (calls.device_bound)."""

    __slots__ = ("_function", "_grid", "_tables", "arguments", "backend", "constants", "kernel",
                 "shape", "work_items")

    def __init__(self, backend: str, kernel: Instantiation, shape: Shape | None,
                 work_items: int, constants: tuple[Any, ...] = ()) -> None:
        self.backend, self.kernel, self.shape, self.work_items = backend, kernel, shape, work_items
        self.constants = constants   # owned: `arguments` may point into them
        self.arguments = tuple(by_value(backend, c) for c in constants)
        self._grid: Shape = shape if shape is not None else grid_for(work_items)
        self._function: Any = None
        # device tables among the constants: a CUDA graph captured with this launch reads them
        self._tables = backend == "cupy" and any(execution.is_cupy_array(c) for c in constants)

    def __call__(self, *arrays: Any) -> None:
        """Launch on `arrays` (input, output, ...; None for a pointer the kernel does not use),
        then the constants."""
        function = self._function
        if function is None:   # the first launch: on the device its call's key names
            function = self._function = loader.cuda_function(self.kernel)
        function(*self._grid, (*arrays, *self.arguments))
        if self._tables:
            calls.keep_for_graphs(self.constants)

    def __repr__(self) -> str:
        return f"Launch({self.backend}, {self.kernel!r}, {self.shape})"


def by_value(backend: str, value: Any) -> Any:
    """A constant argument as a launch passes it: on the 'cupy' path a parameter struct (a
    size-one NumPy array, which the caller keeps: a Launch owns its constants) as a pointer to
    its bytes, which CuPy
    passes as it is (a NumPy array it would read through __array_interface__ at every launch:
    tens of microseconds for a struct of many fields); anything else as it is."""
    if isinstance(value, np.ndarray) and value.dtype.names:
        return execution.cupy_module().cuda.function.CPointer(value.ctypes.data)
    return value
