"""The NumPy path of the global pools. The sums follow pool_global's order operation for
operation (_PlaneSums: each of a plane's LANES lanes adds its elements in float segments of
plan.SEGMENT, each segment into the lane's float64, then each warp's lanes pairwise and the
warps in order), so GlobalAveragePool and GlobalLpPool give the kernel's bits; the maximum is
NumPy's (one value of the plane). X is read where it lies where it can be (a broadcast plane is
never materialised), else staged a chunk at a time."""
from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING

import numpy as np

from ..core import arrays, dtypes, loader, numerics
from ..core.calls import Call
from . import plan
from .numpy import CHUNK_BYTES, lp_power, lp_root, lp_terms
from .numpy_passes import max_identity

if TYPE_CHECKING:
    from .plan import GlobalPlan

LANES, WARP = loader.BLOCK, loader.WARP   # pool_global's threads per plane, and per warp
GROUP = plan.SEGMENT * LANES              # a plane's elements per segment of every lane
DIRECT = 16    # a reduction that reads X where it lies reads up to this many chunks at once (it
               # stages only its partial sums, a SEGMENT-th of them)
SHORT = 4      # planes of at most LANES elements: chunks of their float64 lanes per block
               # (fewer NumPy calls; measured faster up to this on (8, 2048, 7, 7))


def prepare_global(pl: GlobalPlan, dtype: np.dtype) -> Call:
    """The call of a global pooling `pl` on inputs of `dtype` (an empty plane gives NaN, 0 or
    -inf as an empty window does): call(x, out) -> y, into `out` when given. The maximum is
    NumPy's (one value of the plane: the kernel's bits but for a NaN's payload); the sums are
    pool_global's, operation for operation (_PlaneSums), so they give its bits."""
    rows, length = pl.in_shape[0] * pl.in_shape[1], pl.length
    run = _global_max if pl.op == "GlobalMaxPool" else functools.partial(
        _global_sums, pl.p if pl.op == "GlobalLpPool" else None, dtypes.accumulate_dtype(dtype))

    def call(x: np.ndarray, out: np.ndarray | None) -> np.ndarray:
        y = np.empty(pl.out_shape, x.dtype) if out is None else out
        if y.size:
            y.reshape(rows)[...] = run(x, rows, length)
        return y
    return call


def _global_max(x: np.ndarray, rows: int, length: int) -> np.ndarray:
    """GlobalMaxPool: each plane's maximum (a NaN propagates)."""
    if not length:
        return np.full(rows, max_identity(x.dtype))
    planes = _planes(x, rows, length)
    if planes is None or (length * x.itemsize > CHUNK_BYTES and not planes.flags.c_contiguous):
        return _global_max_blocks(x, rows)   # read where it lies, block by block
    with np.errstate(invalid="ignore"):
        return planes.max(axis=1)


def _global_sums(p: float | None, acc_t: np.dtype, x: np.ndarray, rows: int, length: int
                 ) -> np.ndarray:
    """GlobalAveragePool (`p` None) and GlobalLpPool as pool_global computes them, the terms
    summed in `acc_t`: the planes' sums (_PlaneSums, in float64), divided by the length or
    raised to 1/p in float64, rounded once to X's dtype (numerics.narrow: the kernel's store of
    a double). Planes are read in blocks of rows (and of each plane's elements where one is
    long): no copy of X beyond a chunk."""
    sums = np.zeros(rows)
    with np.errstate(divide="ignore", invalid="ignore", over="ignore"):
        if length:
            planes = _planes(x, rows, length)
            # a view of aligned planes is read where it lies (sums: no term to stage)
            direct = p is None and planes is not None and planes.flags.aligned
            plane_sums = _PlaneSums(rows, length, acc_t, p, direct, planes is not None)
            rc = plane_sums.rows
            for first, src in [(0, planes)] if planes is not None else _plane_sources(x, rows):
                for r in range(0, src.shape[0], rc):
                    k = min(rc, src.shape[0] - r)
                    sums[first + r:first + r + k] = plane_sums(src[r:r + k])
        if p is None:
            sums /= float(length)
        else:
            lp_root(sums, p, sums.dtype)
    return numerics.narrow(sums, x.dtype)


class _PlaneSums:
    """The sums (float64) of planes of `length` elements, of |x|^p (the term in `acc_t`)
    where `p` is given, in pool_global's order (kernels/pool.cu), called on blocks of at most
    `rows` planes (`src`: (planes, *spatial), or (planes, length) where `flat`; `direct`
    reads it in place); the buffers are the call's, reused from block to block. The order: lane
    t of LANES
    holds the elements t, t + LANES, ... of a plane, summed in segments of plan.SEGMENT (in
    `acc_t`, each from +0) added in order to the lane's float64; then each warp's lanes
    pairwise, adjacent pairs first (_tree); then the warps' results in order.

    NumPy reduces an axis that is not the innermost one (here a segment's elements, then the
    segments) element by element in order, vectorized along the inner one (the lanes):
    tests/pool/test_sums.py holds it to an explicit loop. The kernel's lanes past a plane's
    end hold +0, and so do its warps past it: adding them changes nothing but the sign of a zero
    (x + +0 is x, but +0 for x = -0), so they are left out, as is the +0 each of the kernel's
    sums starts from (NumPy may start from the first term); a final + 0.0 gives the kernel's
    zero signs. At most about a chunk of a plane is staged in `acc_t` at once."""

    def __init__(self, rows: int, length: int, acc_t: np.dtype, p: float | None,
                 direct: bool, flat: bool) -> None:
        self.length, self.acc_t, self.p, self.flat = length, acc_t, p, flat
        chunk = CHUNK_BYTES // acc_t.itemsize
        block = chunk * (DIRECT if direct else 1)   # elements read per reduction
        if length <= LANES:   # one element a lane: the lanes are the (terms of the) elements
            self.rows = max(1, min(rows, SHORT * CHUNK_BYTES // (8 * length)))
            # the full warps' lanes, and the last warp's as runs of a power of two lanes (its
            # tree with the lanes past the end left out: see _short)
            self.full, m = divmod(length, WARP)
            self.runs = [(self.full * WARP + (m >> b + 1 << b + 1), 1 << b)
                         for b in reversed(range(WARP.bit_length())) if m >> b & 1]
            self.lanes = {n: np.empty((self.rows, n)) for n in (self.full * WARP,
                          *(n for _, n in self.runs)) if n > 1}
            self.stage = None if direct else np.empty((self.rows, length),
                                                      acc_t if p is not None else np.float64)
            return
        # a block's elements, and a lane-row of each segment (the last ones), within a chunk
        self.rows = max(1, min(rows, block // length, chunk // GROUP))
        self.groups = length // GROUP   # segments that every lane fills
        self.per = max(1, min(self.groups, block // (self.rows * GROUP)))   # per block
        self.part = np.empty((self.rows, self.per, LANES), acc_t)
        # the lanes and the next block's segments (a plane of several blocks)
        self.wide = np.empty((self.rows, self.per + 1, LANES) if self.groups > self.per else 0)
        self.stage = None if direct else np.empty((self.rows, self.per * GROUP), acc_t)
        self.rest = length - self.groups * GROUP   # every lane's last segment, some empty
        self.last = np.empty((self.rows, LANES), acc_t)

    def __call__(self, src: np.ndarray) -> np.ndarray:
        if self.length <= LANES:
            return self._short(src)
        k = src.shape[0]
        lanes = np.zeros((k, LANES))
        for g in range(0, self.groups, self.per):
            n = min(self.per, self.groups - g)
            v = self._read(src, g * GROUP, n * GROUP)
            part = self.part[:k, :n]
            np.add.reduce(v.reshape(k, n, plan.SEGMENT, LANES), axis=2, dtype=self.acc_t,
                          out=part)
            if not g:   # the lanes from +0: the segments in order
                np.add.reduce(part, axis=1, dtype=lanes.dtype, out=lanes)
                continue
            w = self.wide[:k, :n + 1]   # the lanes so far, then the segments: one more each
            w[:, 0] = lanes
            w[:, 1:] = part
            np.add.reduce(w, axis=1, out=lanes)
        if self.rest:   # the last segment: whole lane-rows, then the lanes the last one reaches
            v = self._read(src, self.groups * GROUP, self.rest)
            whole, tail = divmod(self.rest, LANES)
            last = self.last[:k]
            np.add.reduce(v[:, :whole * LANES].reshape(k, whole, LANES), axis=1,
                          dtype=self.acc_t, out=last)
            if tail:
                last[:, :tail] += v[:, whole * LANES:]
            lanes += last
        return _in_order(_tree(lanes, WARP).reshape(k, -1))

    def _short(self, src: np.ndarray) -> np.ndarray:
        """Planes of at most LANES elements, a lane each: the full warps' trees, in order, then
        the last warp's. Its tree over the lanes up to the plane's end (the rest +0) is the
        first half's tree where they end in the first half, else the first half's plus the
        second half's; so, by the binary digits of their count, runs of a power of two lanes,
        each run's tree added to the sum of the runs after it."""
        k = src.shape[0]
        flat = src if self.stage is None else self._read(src, 0, self.length)
        total = None
        if self.full:
            lanes = self.lanes[self.full * WARP][:k]
            np.copyto(lanes, flat[:, :self.full * WARP], casting="unsafe")
            total = _in_order(_tree(lanes, WARP).reshape(k, self.full))
        last = None
        for start, n in reversed(self.runs):
            if n == 1:
                run = flat[:, start].astype(np.float64)
            else:
                lanes = self.lanes[n][:k]
                np.copyto(lanes, flat[:, start:start + n], casting="unsafe")
                run = _tree(lanes, n)
            last = run if last is None else np.add(run, last, out=run)
        if last is None:   # full warps alone
            assert total is not None
            return total
        return last + 0.0 if total is None else np.add(total, last, out=total)

    def _read(self, src: np.ndarray, first: int, n: int) -> np.ndarray:
        """The elements [first, first + n) of the planes of `src`, (planes, n): a view where
        they are read in place, else staged (in float64, or the terms in `acc_t`)."""
        if self.stage is None:
            return src[:, first:first + n]
        out = self.stage[:src.shape[0], :n]
        if self.p is not None and self.flat:   # the kernel's oc::lp_term: |x|, x * x, pow
            lp_terms(src[:, first:first + n], out, self.p)
            return out
        _copy_flat(src, first, n, out)
        if self.p is not None:
            lp_power(out, self.p, self.acc_t, fresh=True)
        return out


def _tree(lanes: np.ndarray, width: int) -> np.ndarray:
    """Each run of `width` (a power of two) lanes of C-contiguous `lanes` (planes, k) folded
    as a warp's xor shuffles of distance 1, 2, ..., width / 2 fold them: adjacent pairs, then
    adjacent pairs of those, ... (a sum is commutative, so the two lanes of a shuffle hold the
    same value); flat, one value per run."""
    v = lanes.reshape(-1)
    for _ in range(width.bit_length() - 1):
        v = v[0::2] + v[1::2]
    return v


def _in_order(columns: np.ndarray) -> np.ndarray:
    """The columns of (planes, k) added in order (thread 0's fold of the warps' results) and
    + 0.0 (the kernel's sums start from +0), a new array."""
    total = columns[:, 0] + 0.0
    for c in range(1, columns.shape[1]):
        total += columns[:, c]
    return total


def _copy_flat(src: np.ndarray, first: int, n: int, out: np.ndarray) -> None:
    """The elements [first, first + n) of each plane of `src` ((rows, *spatial), a plane's
    elements in row-major order) into `out` (rows, n), cast to its dtype: a few rectangular
    copies (two per spatial axis at most), no index arrays."""
    spatial = src.shape[1:]
    if len(spatial) == 1:
        np.copyto(out, src[:, first:first + n], casting="unsafe")
        return
    inner = math.prod(spatial[1:])
    i, offset = divmod(first, inner)
    done = 0
    if offset:   # the end of a slab along the first axis
        done = min(n, inner - offset)
        _copy_flat(src[:, i], offset, done, out[:, :done])
        i += 1
    whole = (n - done) // inner
    if whole:   # whole slabs
        np.copyto(out[:, done:done + whole * inner].reshape(src.shape[0], whole, *spatial[1:]),
                  src[:, i:i + whole], casting="unsafe")
        done, i = done + whole * inner, i + whole
    if done < n:   # the start of a slab
        _copy_flat(src[:, i], 0, n - done, out[:, done:])


def _plane_sources(x: np.ndarray, rows: int) -> list[tuple[int, np.ndarray]]:
    """X's planes as views (first row, array (rows, *spatial)) where no view of shape (rows,
    length) exists: one view where the N and C axes merge, else one per n."""
    (n, c), (sn, sc) = x.shape[:2], x.strides[:2]
    if n == 1 or c == 1 or sn == sc * c:
        step = sc if c > 1 else sn
        return [(0, np.lib.stride_tricks.as_strided(x, (rows, *x.shape[2:]),
                                                    (step, *x.strides[2:]), writeable=False))]
    return [(i * c, x[i]) for i in range(n)]


def _planes(x: np.ndarray, rows: int, length: int) -> np.ndarray | None:
    """X as a (rows, length) view of its (n, c) planes, or None where no view has that shape
    (a reshape would copy X: a broadcast or sliced layout whose axes do not merge)."""
    if x.flags.c_contiguous:   # the common layout: a view, without the look at strides
        return x.reshape(rows, length)
    strides = arrays.whole_element_strides(x)
    if strides is None:
        return None
    outer = arrays.merged_stride(x.shape[:2], strides[:2])
    inner = arrays.merged_stride(x.shape[2:], strides[2:])
    if outer is None or inner is None:
        return None
    item = x.dtype.itemsize
    return np.lib.stride_tricks.as_strided(x, (rows, length), (outer[1] * item, inner[1] * item),
                                           writeable=False)


def _global_max_blocks(x: np.ndarray, rows: int) -> np.ndarray:
    """GlobalMaxPool of an X whose planes no view flattens, or whose long rows are not
    contiguous (a broadcast view), read where it lies: blocks of X along its spatial axes of at
    most CHUNK_BYTES (or one element of each plane), each reduced, the maxima combined."""
    spatial, item = x.shape[2:], x.dtype.itemsize
    # the outermost spatial axis a whose blocks (all planes, a step along a, axes after a
    # whole) can hold CHUNK_BYTES
    a = next((i for i in range(len(spatial))
              if rows * math.prod(spatial[i + 1:]) * item <= CHUNK_BYTES), len(spatial) - 1)
    step = max(1, CHUNK_BYTES // max(1, rows * math.prod(spatial[a + 1:]) * item))
    total: np.ndarray | None = None
    with np.errstate(invalid="ignore"):
        for outer in np.ndindex(*spatial[:a]):
            for j in range(0, spatial[a], step):
                at = (slice(None), slice(None), *outer, slice(j, j + step))
                v = x[at]
                part = v.reshape(rows, -1).max(axis=1) if v.flags.c_contiguous else \
                    v.max(axis=tuple(range(2, v.ndim))).reshape(rows)
                total = part if total is None else np.maximum(total, part)
    assert total is not None
    return total


