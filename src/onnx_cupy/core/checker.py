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

ENVIRONMENT = "ONNX_CUPY_CHECK"
GUARD = 1 << 16          # unowned bytes on either side of each array argument's copy
GUARD_ALIGN = 1 << 12    # a copy keeps its original's address modulo this (vector alignment)
# oc_check::Region: the bytes an array argument's elements span, a bit per byte of that span
# (0: all of them are elements'), and whether the kernel's parameter is a pointer to const
REGION = np.dtype([("lo", "<u8"), ("hi", "<u8"), ("map", "<u8"), ("read_only", "<i8")])
ACCESSES = ("load", "store", "atomic read-modify-write")


class Report(ctypes.Structure):
    """oc_check::Report: what stopped a launch."""

    _fields_ = [("kind", ctypes.c_longlong), ("access", ctypes.c_longlong),
                ("address", ctypes.c_ulonglong), ("size", ctypes.c_ulonglong),
                ("pc", ctypes.c_ulonglong), ("region", ctypes.c_longlong),
                ("shared", ctypes.c_longlong), ("block", ctypes.c_uint * 3),
                ("thread", ctypes.c_uint * 3), ("other", ctypes.c_uint * 3),
                ("other_access", ctypes.c_longlong), ("file", ctypes.c_char_p),
                ("line", ctypes.c_longlong), ("other_file", ctypes.c_char_p),
                ("other_line", ctypes.c_longlong)]


# oc_check::Kind -> (the compute-sanitizer tool that reports such errors, what went wrong)
KINDS = {1: ("memcheck", "out of bounds"), 2: ("memcheck", "between elements"),
         3: ("memcheck", "misaligned"), 4: ("memcheck", "store to a const parameter"),
         5: ("racecheck", "race"), 6: ("initcheck", "uninitialized shared memory"),
         7: ("synccheck", "barrier with exited threads"),
         8: ("synccheck", "barriers at different call sites"),
         9: ("synccheck", "warp collective mismatch"),
         10: ("synccheck", "warp collective naming an exited lane"),
         11: ("synccheck", "deadlock")}


class KernelCheckError(RuntimeError):
    """An error the checker found in a launch: `check` (memcheck, racecheck, initcheck or
    synccheck) and `kind`, the instantiation `kernel` (of library `library`), `block` and
    `thread` (CUDA's indices), the faulty access (`access`: load, store or atomic; `address`,
    `size` in bytes), the `array` (a kernel parameter's name, or `__shared__ <name>`) and the
    byte `offset` in it, the `other_thread` of a race or barrier error, the source `location`
    (file:line) where known."""

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
    global and shared memory checked, the `instantiations` launched ((family, expression) of
    the registered kernels); `stride_blocks` narrows grid-stride axes (`narrowed`); with
    `record_only`, launches of registered kernels are recorded and not run."""

    stride_blocks: int | None = None
    record_only: bool = False
    launches: int = 0
    accesses: int = 0
    instantiations: set[tuple[str, str]] = dataclasses.field(default_factory=set)


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
    return tuple(min(n, session.stride_blocks) if "xyz"[a] in axes else n  # type: ignore[return-value]
                 for a, n in enumerate(grid))


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
    parameters = loader.kernel_parameters(module.source, loader.template_name(expression))
    if len(parameters) != len(args):
        raise TypeError(f"{module.name}: {expression} takes {len(parameters)} arguments "
                        f"({', '.join(p.name for p in parameters)}), got {len(args)}")
    arrays = {i: a for i, a in enumerate(args)
              if isinstance(a, np.ndarray) and a.dtype.names is None}
    copies = _guarded(arrays)
    regions = np.zeros(len(arrays), REGION)
    maps, order = [], sorted(arrays)
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
    if report.kind:
        raise _error(module, expression, report, [parameters[i].name for i in order],
                     [arrays[i] for i in order], [copies[i] for i in order])
    module.check_status(status, expression, grid, block)
    for i in order:
        if not parameters[i].read_only and arrays[i].size and arrays[i].flags.writeable:
            arrays[i][...] = copies[i]


def _error(module: Module, expression: str, r: Report, names: list[str],
           originals: list[np.ndarray], copies: list[np.ndarray]) -> KernelCheckError:
    check, kind = KINDS.get(int(r.kind), ("checker", f"error {r.kind}"))
    block, thread, other = tuple(r.block), tuple(r.thread), tuple(r.other)
    fields: dict[str, Any] = {"check": check, "kind": kind, "library": module.name,
                              "kernel": expression, "block": block, "thread": thread}
    where = f"{expression}, block {block}, thread {thread}"
    if check in ("synccheck",):
        site = _site(r.file, r.line)
        fields["location"] = site
        if r.kind == 7:
            text = f"waits at the barrier at {site} while thread {other} has exited"
            fields["other_thread"] = other
        elif r.kind == 8:
            text = (f"waits at the barrier at {site} while thread {other} waits at the one "
                    f"at {_site(r.other_file, r.other_line)}")
            fields["other_thread"] = other
        elif r.kind == 9:
            text = (f"calls a warp collective at {site} with mask {r.address:#010x}, lane "
                    f"{other} one at {_site(r.other_file, r.other_line)} with mask "
                    f"{r.size:#010x} (or another collective or width)")
            fields["other_thread"] = other
        else:
            text = f"waits at {site}, which the threads it waits for never reach"
        return KernelCheckError(f"{check}: {kind}: {where}: {text}", **fields)
    access = ACCESSES[int(r.access)]
    location = _location(module, int(r.pc))
    fields.update(access=access, address=int(r.address), size=int(r.size), location=location)
    at = f" at {location}" if location else ""
    what = f"{access} of {r.size} bytes at {r.address:#x}{at}"
    if r.shared >= 0:
        name = module.shared_names[int(r.shared)]
        offset = int(r.address) - int(module.shared_pair(int(r.shared))[0])
        fields.update(array=f"__shared__ {name}", offset=offset)
        target = f"offset {offset} of __shared__ {name}"
        if r.kind == 5:
            fields["other_thread"] = other
            text = (f"{target} races with a {ACCESSES[int(r.other_access)]} by thread {other} "
                    f"since the last barrier")
        elif r.kind == 6:
            text = f"{target}, which no thread of the block has written"
        elif r.kind == 3:
            text = f"{target} is not aligned to {r.size} bytes"
        else:
            size = int(module.shared_pair(int(r.shared))[1])
            text = f"{target} passes the end of the variable ({size} bytes)"
        return KernelCheckError(f"{check}: {kind}: {where}: {what}: {text}", **fields)
    if r.region < 0:
        text = "outside every array of the launch (there is none)"
        return KernelCheckError(f"{check}: {kind}: {where}: {what}: {text}", **fields)
    name, original, copy = names[int(r.region)], originals[int(r.region)], copies[int(r.region)]
    offset = int(r.address) - copy.ctypes.data
    fields.update(array=name, offset=offset)
    extent = (f"{name} is {original.dtype} of shape {original.shape}, strides "
              f"{original.strides}, {original.nbytes} bytes")
    if r.kind == 1:
        lo, hi = _span(copy)
        side = (f"{lo - int(r.address)} bytes before its first byte" if int(r.address) < lo
                else f"{int(r.address) + int(r.size) - hi} bytes past its last byte")
        text = f"outside every array of the launch: offset {offset} of {name}, {side} ({extent})"
    elif r.kind == 2:
        text = f"offset {offset} of {name} is not on one of its elements ({extent})"
    elif r.kind == 3:
        text = f"offset {offset} of {name} is not aligned to {r.size} bytes"
    else:
        text = f"offset {offset} of {name}, a pointer to const"
    return KernelCheckError(f"{check}: {kind}: {where}: {what}: {text}", **fields)


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
