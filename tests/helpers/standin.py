"""The test suite's stand-in cupy: the emulated device (onnx_cupy.core.emulated_device) with what
only the tests use, through the device's hooks (`note`, `note_launch`, `deferred`, the classes of
its `cuda` namespace, DEVICES):

- records of the CuPy path's work: `compiles` (its NVRTC's programs, `compiled()`), `modules`
  (images loaded on a device, `loaded()`), `launches` and `operations` (allocations, host-device
  copies, synchronizations, event waits, compiles, memsets, CuPy's own kernels); with
  `recording` False, only what a capture takes (for speed where no test reads them);
- stream capture as CUDA's: inside `Stream.begin_capture() ... end_capture()` what CUDA
  refuses during a capture raises `CaptureError` (allocations the pool cannot serve, copies
  between host and device, synchronizations, waits on events recorded outside the capture),
  launches and CuPy's memsets and elementwise kernels are kept, as the capture read them, in
  the `Graph` that runs them when launched; a capture on the null or legacy stream is refused,
  and asking the null stream whether it is capturing fails while a blocking stream captures;
- a second device (DEVICES = 2), `compile_seconds` (how long its NVRTC takes per program),
  `random.standard_normal`, and `installed()` (inherited: the library's cupy inside the block).
"""
from __future__ import annotations

import dataclasses
import threading
import time
import types
import weakref
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from onnx_cupy.core import dtypes, emulated_cuda, emulated_nvrtc
from onnx_cupy.core.emulated_device import EmulatedDevice

__all__ = ["CaptureError", "CompileRecord", "Graph", "LaunchRecord", "ModuleRecord",
           "Operation", "StandIn"]


class CaptureError(RuntimeError):
    """An operation that CUDA refuses while a stream is being captured into a graph."""


@dataclass
class CompileRecord:
    """One program compiled by the stand-in's NVRTC: its source, options and name expressions."""

    code: str
    options: tuple[str, ...]
    name_expressions: tuple[str, ...]


@dataclass
class ModuleRecord:
    """One `cuda.function.Module().load(image)`: the device it was loaded on, the name
    expressions of its kernels, and its `get_function` calls in order (by name expression)."""

    device: int
    name_expressions: tuple[str, ...]
    functions: list[str] = field(default_factory=list)


@dataclass(slots=True)
class LaunchRecord:
    """One kernel launch (a graph's replay adds its launches again, `captured` False); `args`:
    the addresses the driver would read each argument from."""

    expression: str
    device: int
    grid: tuple[int, ...]
    block: tuple[int, ...]
    args: tuple[int | None, ...]
    stream: int = 0
    captured: bool = False


@dataclass(slots=True)
class Operation:
    """One device-side operation other than a launch: `kind` is "allocate", "to device" (a
    host-to-device copy), "to host", "synchronize", "wait" (a stream waiting on an event),
    "compile", "memset" or "elementwise" (one of CuPy's own kernels). `flushes`, for one of
    CuPy's own kernels: it does float arithmetic, or converts to, from or between floats (float
    operands or results, and not a copy, fill or view within one dtype), which CuPy's own
    compile (-ftz=true) flushes to zero on a GPU where an operand or result is subnormal
    (`flushing`)."""

    kind: str
    device: int
    stream: int
    nbytes: int = 0
    captured: bool = False
    what: str = ""
    flushes: bool = False


# CuPy's own kernels that move elements without computing with them: within one dtype no float
# instruction runs (between dtypes they convert, which is float arithmetic where a float is in)
MOVES = frozenset({"copy", "fill", "astype", "concatenate", "stack", "ascontiguousarray",
                   "reshape", "ravel", "transpose", "broadcast_to", "squeeze", "expand_dims"})


def flushing(name: str, operands: Iterable[Any], results: Iterable[Any]) -> bool:
    """Whether one of CuPy's own kernels, `name` over operands and results of these dtypes, runs
    float instructions, which CuPy's own compile (-ftz=true, whatever options a caller gives)
    makes flush subnormal operands and results to zero on a GPU: float arithmetic or
    comparisons, and conversions to, from or between floats (a subnormal float32 widened to
    float64 is read as 0 too). True where some operand or result is a float (bfloat16 and
    complex included) and it is not a move (MOVES) within one dtype."""
    kinds = {np.dtype(d) for d in (*operands, *results)}
    if not any(d.kind in "fc" or d.name in dtypes.FLOAT_TYPES for d in kinds):
        return False
    return not (name in MOVES and len(kinds) == 1)


class Graph:
    """A captured sequence of launches (`captured`) and of the work they run (`steps`, in
    capture order: kernels, memsets, CuPy's elementwise kernels); `launch` replays them."""

    def __init__(self, owner: StandIn, launches: list[LaunchRecord],
                 steps: list[Callable[[], None]]) -> None:
        self.owner, self.captured, self.steps = owner, launches, steps

    def launch(self, stream: Any = None) -> None:
        with self.owner._record:
            self.owner.launches.extend(dataclasses.replace(r, captured=False)
                                       for r in self.captured)
        for run in self.steps:   # each as its capture read it
            run()

    def upload(self, stream: Any = None) -> None:
        pass


class Stream(emulated_cuda.Stream):
    """A stream that can be captured into a Graph (`begin_capture`, `end_capture`)."""

    def __init__(self, owner: StandIn, null: bool = False, non_blocking: bool = False) -> None:
        super().__init__(owner, null, non_blocking)
        self.owner: StandIn = owner
        self.graph_launches: list[LaunchRecord] = []
        self.graph_steps: list[Callable[[], None]] = []

    def wait_event(self, event: Any) -> None:
        outside = event.recorded_in is not self.owner.capturing()
        self.owner.note("wait", what="Stream.wait_event", refused="a wait on an event recorded "
                        "outside the capture" if outside else "")

    def begin_capture(self, mode: Any = None) -> None:
        owner = self.owner
        if self.ptr in (0, 1):   # as CuPy: the null stream and the legacy one
            raise RuntimeError("cannot capture on the default (legacy) stream")
        if owner.capturing() is not None:
            raise CaptureError("stand-in cupy: a capture is already running")
        self.graph_launches, self.graph_steps = [], []
        owner._capture.stream = self
        with owner._record:
            owner.captures.add(self)

    def end_capture(self) -> Graph:
        owner = self.owner
        if owner.capturing() is not self:
            raise CaptureError("stand-in cupy: end_capture on a stream not capturing")
        owner._capture.stream = None
        with owner._record:
            owner.captures.discard(self)
        return Graph(owner, self.graph_launches, self.graph_steps)

    def is_capturing(self) -> bool:
        """As cudaStreamIsCapturing: an error for the legacy null stream while a blocking
        stream is being captured (in any thread)."""
        captures = self.owner.captures
        if self.ptr == 0 and any(not c.non_blocking for c in captures):
            raise RuntimeError("cudaErrorStreamCaptureImplicit: operation would make the "
                               "legacy stream depend on a capturing blocking stream")
        return self in captures


class Event(emulated_cuda.Event):
    """An event that knows the capturing stream it was recorded in (`recorded_in`), if any."""

    def __init__(self, owner: StandIn) -> None:
        super().__init__(owner)
        self.owner: StandIn = owner
        self.recorded_in: Any = None
        self.recorded = False

    def record(self, stream: Any = None) -> None:
        self.recorded, self.recorded_in = True, self.owner.capturing()


class Module(emulated_cuda.Module):
    """A module that records its load (`record`, in the owner's `modules`) and its
    `get_function` calls."""

    def __init__(self, owner: StandIn) -> None:
        super().__init__(owner)
        self.owner: StandIn = owner
        self.record: ModuleRecord | None = None

    def load(self, cubin: bytes) -> None:
        super().load(cubin)
        assert self.ordinal is not None
        self.record = ModuleRecord(self.ordinal, tuple(self.names.values()))
        with self.owner._record:
            self.owner.modules.append(self.record)

    def get_function(self, name: str) -> emulated_cuda.Function:
        function = super().get_function(name)
        assert self.record is not None
        self.record.functions.append(function.name)
        return function


class NVRTC(emulated_nvrtc.NVRTC):
    """NVRTC that records every compile in the owner's `compiles` and takes the owner's
    `compile_seconds` per compile (NVRTC's cost, where a test wants one)."""

    def __init__(self, owner: StandIn) -> None:
        super().__init__(owner)
        self.owner: StandIn = owner

    def compileProgram(self, prog: int, options: Any) -> None:
        options = list(options)
        super().compileProgram(prog, options)
        program, owner = self.program(prog), self.owner
        with owner._record:
            owner.compiles.append(CompileRecord(program.source, tuple(options),
                                                tuple(program.expressions)))
        time.sleep(owner.compile_seconds)


class _Capture(threading.local):
    stream: Any = None   # the stream the calling thread captures, if any


class StandIn(EmulatedDevice):
    """The stand-in `cupy` module of the tests (see the module docstring): `compiles`,
    `modules`, `launches` and `operations` record the CuPy path's work (with `recording` False,
    only what a capture takes); `compile_seconds` is how long its NVRTC takes per program;
    `executing` as the emulated device's; `installed()` makes it the library's cupy."""

    DEVICES = 2   # ordinals 0 and 1
    Stream = Stream
    Event = Event
    Module = Module
    NVRTC = NVRTC

    def __init__(self, compile_seconds: float = 0.0, recording: bool = True,
                 executing: bool = True) -> None:
        self.compiles: list[CompileRecord] = []
        self.modules: list[ModuleRecord] = []
        self.launches: list[LaunchRecord] = []
        self.operations: list[Operation] = []
        self.captures: set[Any] = set()   # the streams being captured, by any thread
        self._live: weakref.WeakSet[Any] = weakref.WeakSet()   # allocations in use
        self.compile_seconds = compile_seconds
        self.recording = recording
        self._record = threading.Lock()
        self._capture = _Capture()
        super().__init__(executing)
        self.random = types.SimpleNamespace(standard_normal=self._standard_normal)

    def capturing(self) -> Any:
        """The stream being captured by the calling thread, or None."""
        return self._capture.stream

    # ---------------------------------------------------------------- the device's hooks

    def note(self, kind: str, nbytes: int = 0, what: str = "", *, refused: str = "",
             operand_dtypes: tuple[tuple[np.dtype, ...], tuple[np.dtype, ...]] | None = None
             ) -> None:
        """Record an operation on the current device and stream; `refused`: why a capture
        refuses it (CaptureError while one runs in this thread); `operand_dtypes`: one of CuPy's own
        kernels' operand and result dtypes, read for `flushing`."""
        capture = self._capture.stream
        if capture is not None and refused:
            raise CaptureError(f"stand-in cupy: {kind} {what} during stream capture: {refused}")
        if not self.recording:
            return
        local = self._local
        stream = local.streams[-1] if local.streams else self._null
        flushes = operand_dtypes is not None and flushing(what, *operand_dtypes)
        self.operations.append(Operation(kind, local.device, stream.ptr, nbytes,
                                         capture is not None, what, flushes))   # atomic

    def note_launch(self, name: str, grid: tuple[int, ...], block: tuple[int, ...],
                    args: tuple[Any, ...], stream: Any = None) -> None:
        """Record a launch on `stream` (None: the current one), into its graph where it is
        being captured."""
        if stream is None:
            stream = self.current_stream()
        captured = stream in self.captures
        if not self.recording and not captured:
            return
        record = LaunchRecord(name, self._local.device, grid, block, args, stream.ptr, captured)
        self.launches.append(record)   # append: atomic
        if captured:
            stream.graph_launches.append(record)

    def deferred(self, run: Callable[[], None], stream: Any = None) -> None:
        """Run the work at once, or keep it in the graph of `stream` (None: the current one)
        where that stream is being captured."""
        if stream is None:
            stream = self.current_stream()
        if stream in self.captures:
            stream.graph_steps.append(run)
        else:
            run()

    def allocate(self, nbytes: int) -> Any:
        """A device allocation, counted among the live ones while an array holds it."""
        block = super().allocate(nbytes)
        self._live.add(block)
        return block

    # ---------------------------------------------------------------- records

    def live_bytes(self) -> int:
        """Bytes of the allocations some array or workspace still holds (what a GPU's memory
        pool could not give to another allocation)."""
        return sum(block.at[2] for block in list(self._live))

    def compiled(self) -> list[str]:
        """The name expressions its NVRTC compiled, in order."""
        return [e for c in self.compiles for e in c.name_expressions]

    def loaded(self, device: int | None = None) -> list[str]:
        """The name expressions of the images loaded (on `device`), in load order."""
        return [e for m in self.modules if device in (None, m.device) for e in m.name_expressions]

    # ---------------------------------------------------------------- what tests call

    def _standard_normal(self, size: Any = None, dtype: Any = float) -> Any:
        """cupy.random.standard_normal: a new array from a generator kernel."""
        y = self.empty(() if size is None else size, dtype)
        self.note("elementwise", y.nbytes, "random", operand_dtypes=((), (y.dtype,)))
        self.note_launch("elementwise random standard_normal", (), (), ())
        if self.executing:
            def run() -> None:
                y.host[...] = np.random.default_rng().standard_normal(y.shape)
            self.deferred(run)
        return y
