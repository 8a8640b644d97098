"""Scratch memory of the kernel paths' calls: one workspace per place (device module, device,
host thread, stream, level), grown to the largest request, from which each prepared call's
`Scratch` carves its arrays; the device tables of calls captured into CUDA graphs
(`keep_for_graphs`); and `release_workspaces`, which frees them all."""
from __future__ import annotations

import collections
import contextlib
import functools
import math
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np

SCRATCH_ALIGN = 256   # bytes: each array `scratch` carves starts at a multiple of this
MAX_STREAMS = 8       # workspaces kept per host thread and device: its most recently used streams


# The workspace levels: each level is a workspace of its own at a place, so that arrays carved
# at one level never share memory with those of another that are alive at the same time.
CALL = 0     # a prepared call's own scratch (partial results between its launches)
COPIES = 1   # the copies of inputs the kernels cannot read as they lie (core.kernel_call)
STEPS = 2    # a layer in front's arrays between the family calls it chains (nn.functional)


class Scratch:
    """The scratch arrays of one prepared call's launches on `device` (the cupy module or the
    emulated device): C-contiguous arrays of `layouts` ((shape, dtype) each), carved from the
    workspace of the current place (device, host thread, stream, `level`) at multiples of
    SCRATCH_ALIGN bytes, those whose positions are in `zeroed` set to zero bits at every call
    (the partial results a launch accumulates into) by memsets on the current stream. A
    repeated call finds its arrays with one look-up of the workspace it used last on that
    stream and thread, while that workspace lives (release_workspaces ends it: its memory is
    freed whatever holds it). `level`: CALL, COPIES or STEPS (above)."""

    def __init__(self, device: Any, *layouts: tuple[tuple[int, ...], np.dtype],
                 zeroed: tuple[int, ...] = (), level: int = CALL) -> None:
        self.device, self.layouts, self.zeroed, self.level = device, layouts, zeroed, level
        self._stream: Any = device.cuda.get_current_stream
        # (stream, host thread) -> the workspace found there last, while it lives
        self._spaces: dict[tuple[int, int], Workspace] = {}

    def __call__(self) -> tuple[Any, ...]:
        at = (self._stream().ptr, threading.get_ident())
        space = self._spaces.get(at)
        if space is None or not space.alive:
            if len(self._spaces) >= MAX_STREAMS:
                self._spaces.clear()
            space = self._spaces[at] = _place(self.device, self.level)
        views, memsets = space.carved(self.layouts, self.zeroed)
        for memset in memsets:   # on the current stream
            memset()
        return views


@functools.lru_cache(maxsize=256)
def _spans(layouts: tuple[tuple[tuple[int, ...], np.dtype], ...]
           ) -> tuple[list[tuple[int, int]], int]:
    """(byte offset, bytes) of each layout in a workspace, and the bytes they need in all."""
    spans, end = [], 0
    for shape, dtype in layouts:
        nbytes = math.prod(shape) * dtype.itemsize
        spans.append((end, nbytes))
        end += -(-nbytes // SCRATCH_ALIGN) * SCRATCH_ALIGN
    return spans, end


def _carve(buffer: Any, layouts: tuple[tuple[tuple[int, ...], np.dtype], ...]) -> list[Any]:
    return [buffer[at:at + nbytes].view(dtype).reshape(shape)
            for (at, nbytes), (shape, dtype) in zip(_spans(layouts)[0], layouts)]


class Workspace:
    """The scratch memory of one place (cupy module, device, host thread, stream, level): a
    device buffer grown to the largest request, and the arrays carved from it per layouts, with
    their memsets. `pinned` once a call ran on it while its stream was being captured into a
    CUDA graph: the graph reads it, so its buffer is never replaced, and the first call on its
    place outside a capture (or one that needs more) hands the place a new workspace; only
    `release_workspaces` frees a pinned one."""

    __slots__ = ("alive", "buffer", "device", "kept", "pinned", "place", "stream")

    def __init__(self, device: Any, stream: Any, place: tuple[int, ...]) -> None:
        self.device, self.stream, self.place, self.buffer, self.pinned = device, stream, place, \
            None, False
        self.alive = True   # False once its place dropped it (a Scratch looks it up again)
        self.kept: dict[Any, tuple[tuple[Any, ...], tuple[Any, ...]]] = {}

    def carved(self, layouts: tuple[tuple[tuple[int, ...], np.dtype], ...],
               zeroed: tuple[int, ...] = ()) -> tuple[tuple[Any, ...], tuple[Any, ...]]:
        """(the arrays of `layouts`, the memsets of those at `zeroed`), carved on first need."""
        if self.stream.is_capturing():
            self.pinned = True
        elif self.pinned:   # a captured graph's: this place's calls get a workspace of their own
            return _succeed(self).carved(layouts, zeroed)
        kept = self.kept.get((layouts, zeroed))
        if kept is not None:
            return kept
        end = _spans(layouts)[1]
        with _workspace_lock:
            if self.buffer is None or self.buffer.nbytes < end:
                if self.buffer is not None and self.pinned:   # never replaced under a graph
                    return _succeed(self).carved(layouts, zeroed)
                self.grow(end)
            views = tuple(_carve(self.buffer, layouts))
            kept = self.kept[layouts, zeroed] = (views, tuple(
                functools.partial(views[i].data.memset_async, 0, views[i].nbytes)
                for i in zeroed))
        return kept

    def free(self) -> None:
        """End this workspace: its buffer and carved arrays dropped (their memory back to the
        device's pool once no launch in flight holds it: CuPy's pool frees in stream order),
        whatever Scratch still holds the workspace (it takes a new one at its next call)."""
        self.alive = False
        self.buffer = None
        self.kept.clear()

    def grow(self, nbytes: int) -> None:
        """A buffer of at least `nbytes` (twice the old one's, at least), the carved arrays
        dropped (carved from the old buffer)."""
        size = max(nbytes, 2 * self.buffer.nbytes if self.buffer is not None else 0)
        self.buffer = self.device.empty(size, np.uint8)
        self.kept.clear()


# (cupy module's id, device, host thread, stream, level) -> its workspace, least recently used
# first; the pinned workspaces a place has handed on (CUDA graphs read them)
_workspaces: collections.OrderedDict[tuple[int, ...], Workspace] = collections.OrderedDict()
_pinned: list[Workspace] = []
# what captured CUDA graphs read that prepared calls own (their uploaded tables): kept past
# the calls' eviction from their caches, until release_workspaces()
_graph_kept: list[Any] = []
_workspace_lock = threading.RLock()
_threads = threading.local()   # `ending`: this thread's _ThreadEnd


class _ThreadEnd:
    """Held by one host thread (threading.local): when the thread ends, its workspaces go."""

    def __init__(self, ident: int) -> None:
        self.ident = ident

    def __del__(self) -> None:
        lock = _workspace_lock
        if lock is None:   # at interpreter exit
            return
        with lock:
            for place, space in list(_workspaces.items()):
                if place[2] == self.ident:
                    _drop(place, space)


def _drop(place: tuple[int, ...], space: Workspace) -> None:
    """Free a place's workspace (kept among the pinned where a graph reads it); under the lock."""
    if _workspaces.get(place) is space:
        del _workspaces[place]
    if space.pinned:
        space.alive = False
        _pinned.append(space)
    else:
        space.free()


def _succeed(space: Workspace) -> Workspace:
    """A new workspace for a pinned one's place (the pinned one kept for its graph)."""
    with _workspace_lock:
        _drop(space.place, space)
        new = _workspaces[space.place] = Workspace(space.device, space.stream, space.place)
    return new


def _place(device: Any, level: int = 0) -> Workspace:
    """The workspace of the current place: `device`'s current device, this host thread, its
    current stream (as cuBLAS keeps a workspace per stream; per thread too, since threads share
    the null stream and their launches interleave on it), `level`. Made on first use; at most
    MAX_STREAMS of one thread and device are kept, the least recently used freed first."""
    stream = device.cuda.get_current_stream()
    place = (id(device), device.cuda.runtime.getDevice(), threading.get_ident(), stream.ptr,
             level)
    space = _workspaces.get(place)
    if space is not None and space.device is device:
        if next(reversed(_workspaces), None) != place:   # not already the most recent
            with _workspace_lock:
                if _workspaces.get(place) is space:
                    _workspaces.move_to_end(place)
        return space
    with _workspace_lock:
        if getattr(_threads, "ending", None) is None:
            _threads.ending = _ThreadEnd(place[2])
        space = _workspaces[place] = Workspace(device, stream, place)
        same = [(p, w) for p, w in list(_workspaces.items()) if p[:3] == place[:3]]
        for p, w in same[:max(0, len(same) - MAX_STREAMS)]:
            _drop(p, w)
        for p, w in list(_workspaces.items()):
            if w.device is not device and p[0] == id(device):
                w.alive = False
                del _workspaces[p]   # a module gone whose id was reused
    return space


def keep_for_graphs(device: Any, owned: Any) -> None:
    """Where `device`'s current stream is being captured into a CUDA graph, keep `owned`
    (device tables that a call's launches read, which its prepared call owns) for as long as
    the graph may be replayed: past the call's eviction from its cache, until
    release_workspaces()."""
    if device.cuda.get_current_stream().is_capturing():
        with _workspace_lock:
            if not any(kept is owned for kept in _graph_kept):
                _graph_kept.append(owned)


def release_workspaces() -> int:
    """Free the GPU scratch memory that calls keep between runs.

    A call whose kernels need scratch memory (copies of inputs they cannot walk, partial
    results between launches) carves it from a workspace kept per device, host thread and
    stream: allocated once, grown to the largest request, freed when its thread ends or when it
    is among the least recently used past the MAX_STREAMS streams of one thread and device.
    This frees every workspace now (those of CUDA graphs captured through onnx-cupy calls
    included), and the tables of prepared calls dropped from their caches that such graphs
    kept; the next call allocates anew.

    Returns
    -------
    int
        How many workspaces were freed.

    Notes
    -----
    A CUDA graph captured through onnx-cupy calls must not be launched after this: its scratch
    memory (and the tables of calls no longer kept) is gone. Kernels still running on the GPU
    keep theirs (CuPy's memory pool frees in stream order).

    Examples
    --------
    >>> import onnx_cupy as oc
    >>> freed = oc.release_workspaces()
    >>> oc.release_workspaces()
    0
    """
    with _workspace_lock:
        spaces = [*_workspaces.values(), *_pinned]
        for space in spaces:
            space.free()
        _workspaces.clear()
        _pinned.clear()
        _graph_kept.clear()
    return len(spaces)


@contextlib.contextmanager
def isolated() -> Iterator[None]:
    """Inside the block, no workspace or graph-kept table of outside it, and none of the
    block's after it (onnx_cupy.core.calls.isolated)."""
    kept = dict(_workspaces), list(_pinned), list(_graph_kept)
    _workspaces.clear()
    _pinned.clear()
    _graph_kept.clear()
    try:
        yield
    finally:
        _workspaces.clear()
        _workspaces.update(kept[0])
        _pinned[:] = kept[1]
        _graph_kept[:] = kept[2]


def upload(device: Any, *host: np.ndarray) -> tuple[Any, ...]:
    """`host` arrays copied to `device`'s current device and waited for, once (so that a launch
    on any stream reads them without waiting): a prepared call uploads its tables when it is
    prepared and keeps them (they go to a CUDA graph that captures its launches too,
    `keep_for_graphs`)."""
    tables = tuple(device.asarray(a) for a in host)
    done = device.cuda.Event(disable_timing=True)
    done.record()
    done.synchronize()
    return tables
