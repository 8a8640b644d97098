"""The emulator's checking mode: the kernels compiled from the same sources with every access and
barrier checked (kernels/host_check.h), as NVIDIA's compute-sanitizer checks them on a GPU:

- memcheck: a global load or store must fall on the bytes of an array argument of the launch
  (its elements, with the strides the host passed), be naturally aligned, and a store must not
  go through a const parameter;
- racecheck: two threads of a block must not touch a byte of shared memory between two
  barriers, one of them writing, unless a __syncwarp naming both orders them (warp shuffles
  and votes order nothing; lanes of a warp are not in lockstep);
- initcheck: a read of shared memory must find a byte that a thread of the block wrote;
- synccheck: all threads of a block wait at the same __syncthreads, none having exited; the
  lanes a warp collective names call the same one with the same mask.

The first error stops the launch before the faulty access and raises `KernelCheckError`, which
names the instantiation, block, thread, address, array (the kernel's parameter name, or the
__shared__ variable) and offset. Each array argument runs on a copy placed between unowned
guard bytes (at the original's address modulo GUARD_ALIGN), so that an access past one array
cannot land in another; the results are copied back only after a clean launch, so nothing is
written to the caller's arrays after an error.

Turn it on with `checking()` around emulated calls, or for a whole process by starting it with
the environment variable ONNX_CUPY_CHECK=1; `checking` also counts launches and accesses.
"""
from __future__ import annotations

import contextlib
import contextvars
import ctypes
import dataclasses
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from . import loader

if TYPE_CHECKING:
    from .emulator import Module
    from .records import Instantiation

ENVIRONMENT = "ONNX_CUPY_CHECK"
GUARD = 1 << 16          # unowned bytes on either side of each array argument's copy
GUARD_ALIGN = 1 << 12    # a copy keeps its original's address modulo this (vector alignment)
# oc_check::Region: the bytes an array argument's elements span, a bit per byte of that span
# (0: all of them are elements'), and whether the kernel's parameter is a pointer to const
REGION = np.dtype([("lo", "<u8"), ("hi", "<u8"), ("map", "<u8"), ("read_only", "<i8")])


class Report(ctypes.Structure):
    """oc_check::Report: what stopped a launch (its names are host_check.h's; `check` None where
    the launch ran clean)."""

    _fields_ = [("check", ctypes.c_char_p), ("error", ctypes.c_char_p),
                ("access", ctypes.c_char_p), ("address", ctypes.c_ulonglong),
                ("size", ctypes.c_ulonglong), ("pc", ctypes.c_ulonglong),
                ("region", ctypes.c_longlong), ("shared", ctypes.c_longlong),
                ("block", ctypes.c_uint * 3), ("thread", ctypes.c_uint * 3),
                ("other", ctypes.c_uint * 3), ("other_access", ctypes.c_char_p),
                ("file", ctypes.c_char_p), ("line", ctypes.c_longlong),
                ("other_file", ctypes.c_char_p), ("other_line", ctypes.c_longlong)]


class KernelCheckError(RuntimeError):
    """An error the checker found in a launch: `check` (memcheck, racecheck, initcheck or
    synccheck) and `kind` (kernels/host_check.h's names), the instantiation `kernel` (of
    library `library`), `block` and `thread` (CUDA's indices), the faulty access (`access`:
    load, store or atomic read-modify-write; `address`, `size` in bytes), the `array` (a kernel
    parameter's name, or `__shared__ <name>`) and the byte `offset` in it, the `other_thread` of
    a race or barrier error, the source `location` (file:line) where known."""

    def __init__(self, message: str, **fields: Any) -> None:
        super().__init__(message)
        self.check: str = fields["check"]
        self.kind: str = fields["kind"]
        self.library: str = fields["library"]
        self.kernel: str = fields["kernel"]
        self.block: tuple[int, int, int] = fields["block"]
        self.thread: tuple[int, int, int] = fields["thread"]
        self.access: str | None = fields.get("access")
        self.address: int | None = fields.get("address")
        self.size: int | None = fields.get("size")
        self.array: str | None = fields.get("array")
        self.offset: int | None = fields.get("offset")
        self.other_thread: tuple[int, int, int] | None = fields.get("other_thread")
        self.location: str | None = fields.get("location")


@dataclasses.dataclass
class Session:
    """What the launches inside one `checking()` block did: `launches` checked, `accesses` to
    global and shared memory checked, the `instantiations` launched (the registered kernels'
    records); `stride_blocks` narrows grid-stride axes (`narrowed`); with
    `record_only`, launches of registered kernels are recorded and not run."""

    stride_blocks: int | None = None
    record_only: bool = False
    launches: int = 0
    accesses: int = 0
    instantiations: set[Instantiation] = dataclasses.field(default_factory=set)


_session: contextvars.ContextVar[Session | None] = contextvars.ContextVar(
    "onnx_cupy_checker", default=None)


# ONNX_CUPY_CHECK, read once: the process's setting
_environment = os.environ.get(ENVIRONMENT, "") not in ("", "0")


def active() -> bool:
    """Whether emulated launches are checked here: inside `checking()`, or in a process started
    with ONNX_CUPY_CHECK set to anything but '' or '0'."""
    return _environment or _session.get() is not None


def session() -> Session | None:
    """The enclosing `checking()` block's session, if any."""
    return _session.get()


@contextlib.contextmanager
def checking(stride_blocks: int | None = None, record_only: bool = False) -> Iterator[Session]:
    """Check every emulated launch inside the block; yields the `Session` that counts them.

    Parameters
    ----------
    stride_blocks : int, optional
        Launch at most this many blocks along each grid axis that the kernel walks in a
        grid-stride loop (as registered with the family), so that one block serves several
        planes or rows and races between the loop's iterations show. The host's grid by default.
    record_only : bool
        Record which registered instantiations the calls launch, launching nothing (their
        outputs stay unwritten): what to compile ahead of a checked run.

    Examples
    --------
    >>> import numpy as np, onnx_cupy as oc
    >>> from onnx_cupy.core import checker
    >>> x = np.random.default_rng(0).standard_normal((1, 2, 9, 9)).astype(np.float32)
    >>> with oc.backend("emulated"), checker.checking() as session:
    ...     y = oc.average_pool(x, kernel_shape=[3, 3], strides=[2, 2])
    >>> session.launches, session.accesses > 0
    (1, True)
    """
    if stride_blocks is not None and stride_blocks < 1:
        raise ValueError(f"checking: stride_blocks must be at least 1, got {stride_blocks}")
    session = Session(stride_blocks, record_only)
    token = _session.set(session)
    try:
        yield session
    finally:
        _session.reset(token)


def narrowed(grid: tuple[int, int, int], axes: str) -> tuple[int, int, int]:
    """`grid` with each of `axes` ('x', 'y', 'z': the kernel's grid-stride axes) at most the
    current session's stride_blocks."""
    session = _session.get()
    if session is None or session.stride_blocks is None:
        return grid
    cap = session.stride_blocks
    x, y, z = (min(n, cap) if axis in axes else n for axis, n in zip("xyz", grid))
    return x, y, z


def _span(a: np.ndarray) -> tuple[int, int]:
    """The bytes [lo, hi) that `a`'s elements occupy (lo == hi for an empty array)."""
    if a.size == 0:
        return a.ctypes.data, a.ctypes.data
    low = sum((n - 1) * s for n, s in zip(a.shape, a.strides) if s < 0)
    high = sum((n - 1) * s for n, s in zip(a.shape, a.strides) if s > 0)
    return a.ctypes.data + low, a.ctypes.data + high + a.dtype.itemsize


def _element_map(a: np.ndarray, lo: int, hi: int) -> np.ndarray | None:
    """A bit per byte of [lo, hi), set where an element of `a` lies; None where all are."""
    if a.flags.c_contiguous or a.flags.f_contiguous or a.size == 0:
        return None
    offsets = np.zeros(1, np.int64)
    for n, s in zip(a.shape, a.strides):
        offsets = (offsets[:, None] + np.arange(n, dtype=np.int64) * s).reshape(-1)
    owned = np.zeros(hi - lo, bool)
    first = offsets + (a.ctypes.data - lo)
    for byte in range(a.dtype.itemsize):
        owned[first + byte] = True
    return None if owned.all() else np.packbits(owned, bitorder="little")


def _guarded(arrays: dict[int, np.ndarray]) -> dict[int, np.ndarray]:
    """Each array as a view into a fresh copy of the memory it spans, with GUARD unowned bytes
    before and after, at the same address modulo GUARD_ALIGN; arrays whose spans overlap share
    one copy (they alias each other as before)."""
    spans = sorted((*_span(a), i) for i, a in arrays.items())
    groups: list[list[tuple[int, int, int]]] = []
    for lo, hi, i in spans:
        if groups and lo < max(h for _, h, _ in groups[-1]):
            groups[-1].append((lo, hi, i))
        else:
            groups.append([(lo, hi, i)])
    copies: dict[int, np.ndarray] = {}
    for group in groups:
        lo, hi = group[0][0], max(h for _, h, _ in group)
        buffer = np.empty(hi - lo + 2 * GUARD + GUARD_ALIGN, np.uint8)
        start = GUARD + (lo - (buffer.ctypes.data + GUARD)) % GUARD_ALIGN
        if hi > lo:
            buffer[start:start + hi - lo] = np.ctypeslib.as_array(
                (ctypes.c_uint8 * (hi - lo)).from_address(lo))
        for _, _, i in group:
            a = arrays[i]
            copies[i] = np.ndarray(a.shape, a.dtype, buffer, start + a.ctypes.data - lo,
                                   a.strides)
    return copies


def launch(module: Module, expression: str, grid: tuple[int, int, int],
           block: tuple[int, int, int], args: tuple[Any, ...], cooperative: bool,
           seed: int) -> None:
    """Module.launch of a checked library: the launch on guarded copies of the array
    arguments, KernelCheckError at the first error, the results copied back after a clean
    run; counted in the current session."""
    parameters = loader.kernel_parameters(module.source, module.kernels[expression])
    if len(parameters) != len(args):
        raise TypeError(f"{module.name}: {expression} takes {len(parameters)} arguments "
                        f"({', '.join(p.name for p in parameters)}), got {len(args)}")
    arrays = {i: a for i, a in enumerate(args)
              if isinstance(a, np.ndarray) and a.dtype.names is None}
    copies = _guarded(arrays)
    regions = np.zeros(len(arrays), REGION)
    maps, order = [], sorted(arrays)   # maps: the element bits, alive until the launch returns
    for r, i in enumerate(order):
        lo, hi = _span(copies[i])
        bits = _element_map(copies[i], lo, hi)
        maps.append(bits)
        regions[r] = (lo, hi, 0 if bits is None else bits.ctypes.data,
                      parameters[i].read_only)
    module.function("oc_check_regions")(ctypes.c_void_p(regions.ctypes.data),
                                        ctypes.c_int(len(regions)))
    status = module.run(expression, grid, block,
                        tuple(copies.get(i, a) for i, a in enumerate(args)), cooperative, seed)
    report = Report()
    result = module.function("oc_check_result")
    result.restype = ctypes.c_ulonglong
    accesses = int(result(ctypes.byref(report)))
    session = _session.get()
    if session is not None:
        session.launches += 1
        session.accesses += accesses
    if report.check:
        raise _error(module, expression, report, [parameters[i].name for i in order],
                     [arrays[i] for i in order], [copies[i] for i in order])
    module.check_status(status, expression, grid, block)
    for i in order:
        if not parameters[i].read_only and arrays[i].size and arrays[i].flags.writeable:
            arrays[i][...] = copies[i]


def _error(module: Module, expression: str, r: Report, names: list[str],
           originals: list[np.ndarray], copies: list[np.ndarray]) -> KernelCheckError:
    """The exception for report `r` of a launch of `expression` whose array arguments were
    `originals` (parameter `names`), run on `copies`."""
    check, kind = _text(r.check), _text(r.error)
    fields: dict[str, Any] = {"check": check, "kind": kind, "library": module.name,
                              "kernel": expression, "block": tuple(r.block),
                              "thread": tuple(r.thread)}
    head = f"{check}: {kind}: {expression}, block {tuple(r.block)}, thread {tuple(r.thread)}"
    if check == "synccheck":
        return KernelCheckError(f"{head}: {_barrier_text(r, fields)}", **fields)
    location = _location(module, int(r.pc))
    fields.update(access=_text(r.access), address=int(r.address), size=int(r.size),
                  location=location)
    what = (f"{fields['access']} of {r.size} bytes at {r.address:#x}"
            f"{f' at {location}' if location else ''}")
    if r.shared >= 0:
        text = _shared_text(module, r, fields)
    elif r.region >= 0:
        i = int(r.region)
        text = _array_text(r, names[i], originals[i], copies[i], fields)
    else:
        text = "outside every array of the launch (there is none)"
    return KernelCheckError(f"{head}: {what}: {text}", **fields)


def _text(name: bytes | None) -> str:
    return (name or b"").decode()


def _barrier_text(r: Report, fields: dict[str, Any]) -> str:
    """A synccheck report's explanation (fields: the location and other thread added)."""
    site, other = _site(r.file, r.line), tuple(r.other)
    fields["location"] = site
    if fields["kind"] in ("barrier with exited threads", "barriers at different call sites",
                          "warp collective mismatch"):
        fields["other_thread"] = other
    if fields["kind"] == "barrier with exited threads":
        return f"waits at the barrier at {site} while thread {other} has exited"
    if fields["kind"] == "barriers at different call sites":
        return (f"waits at the barrier at {site} while thread {other} waits at the one at "
                f"{_site(r.other_file, r.other_line)}")
    if fields["kind"] == "warp collective mismatch":
        return (f"calls a warp collective at {site} with mask {r.address:#010x}, lane {other} "
                f"one at {_site(r.other_file, r.other_line)} with mask {r.size:#010x} (or "
                f"another collective or width)")
    return f"waits at {site}, which the threads it waits for never reach"


def _shared_text(module: Module, r: Report, fields: dict[str, Any]) -> str:
    """What a report on __shared__ memory found (fields: the array and offset added)."""
    name = module.shared_names[int(r.shared)]
    start, size = module.shared_pair(int(r.shared))
    offset = int(r.address) - start
    fields.update(array=f"__shared__ {name}", offset=offset)
    target = f"offset {offset} of __shared__ {name}"
    if fields["kind"] == "race":
        fields["other_thread"] = tuple(r.other)
        return (f"{target} races with a {_text(r.other_access)} by thread {tuple(r.other)} "
                f"since the last barrier")
    if fields["kind"] == "uninitialized shared memory":
        return f"{target}, which no thread of the block has written"
    if fields["kind"] == "misaligned":
        return f"{target} is not aligned to {r.size} bytes"
    return f"{target} passes the end of the variable ({size} bytes)"


def _array_text(r: Report, name: str, original: np.ndarray, copy: np.ndarray,
                fields: dict[str, Any]) -> str:
    """What a report on array argument `name` found (fields: the array and offset added)."""
    offset = int(r.address) - copy.ctypes.data
    fields.update(array=name, offset=offset)
    extent = (f"{name} is {original.dtype} of shape {original.shape}, strides "
              f"{original.strides}, {original.nbytes} bytes")
    if fields["kind"] == "out of bounds":
        lo, hi = _span(copy)
        side = (f"{lo - int(r.address)} bytes before its first byte" if int(r.address) < lo
                else f"{int(r.address) + int(r.size) - hi} bytes past its last byte")
        return f"outside every array of the launch: offset {offset} of {name}, {side} ({extent})"
    if fields["kind"] == "between elements":
        return f"offset {offset} of {name} is not on one of its elements ({extent})"
    if fields["kind"] == "misaligned":
        return f"offset {offset} of {name} is not aligned to {r.size} bytes"
    return f"offset {offset} of {name}, a pointer to const"


def _site(file: bytes | None, line: int) -> str:
    return f"{(file or b'?').decode()}:{line}"


def _location(module: Module, pc: int) -> str | None:
    """file:line of the access whose call returns to `pc` (the library's line tables), and,
    where that is in a function inlined into the kernel, the kernel's line that calls it."""
    if not pc:
        return None
    try:
        out = subprocess.run(["addr2line", "-i", "-e", str(module.path),
                              hex(pc - module.base - 1)],
                             capture_output=True, text=True, check=False, timeout=30).stdout
    except (OSError, subprocess.TimeoutExpired):
        return None
    frames = [Path(line.split(" ")[0]).name for line in out.splitlines()
              if line and not line.startswith("??")]
    if not frames:
        return None
    return frames[0] if len(frames) == 1 else f"{frames[0]} (inlined into {frames[-1]})"
