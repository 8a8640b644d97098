// MaxUnpool: y = 0, then y[offset(e, indices[e])] = x[e] for every element e of X whose index
// lies in [0, index_total), where offset() unravels a flat index over the shape the indices
// address (merged by the host into R axes: extent[a], Y's element stride[a]) and ravels it with
// Y's strides: offset = sum over a of coord[a] * stride[a]; with PER_PLANE (PyTorch's indices,
// which count positions within their own (n, c) plane of Y) it adds the start of e's plane,
// (e / plane_count) * plane_total. Where several elements name one offset, the last in X's
// row-major order wins, whatever order the threads run in:
//   unpool_scatter<Index, I, R, PER_PLANE>  over X: winner[offset] = max(winner[offset], e + 1)
//                                           (atomicMax)
//   unpool_gather<T, I>                     over Y: y[o] = winner[o] ? x[winner[o] - 1] : 0
// `winner` (zeroed by the host) holds, per element of Y, 1 + the position in X of the element
// that lands there last. X and the indices are C-contiguous (the host copies others); the
// indices are int64 (Index); an index outside [0, index_total) is skipped. I, the offset type,
// is int where X's and Y's sizes fit one (winner words unsigned int), else long long (unsigned
// long long); the flat index is unraveled, and e's plane found, by the host's multiply-shift
// divisors with int.
// Both are grid-stride loops, one element per thread and iteration.
#include "common.cuh"

// Defined by the loader from onnx_cupy.unpool.kernel: UNPOOL_MAXR, the most merged axes of the
// index space (an UnpoolGeom's array size).
#if !defined(UNPOOL_MAXR)
#error "compile through onnx_cupy.core.loader, which defines UNPOOL_MAXR"
#endif

struct UnpoolGeom {
  long long count;        // elements of X (and of the indices)
  long long index_total;  // valid indices: [0, index_total)
  long long total;        // elements of Y
  long long extent[UNPOOL_MAXR];  // merged axes of the index space, outermost first
  long long stride[UNPOOL_MAXR];  // Y's element stride along each
  unsigned int by_extent[UNPOOL_MAXR][2];  // oc::fast_div divisors of the extents (32-bit I)
  long long plane_count;  // PER_PLANE: elements of X per (n, c) plane
  long long plane_total;  // PER_PLANE: elements of Y per (n, c) plane
  unsigned int by_plane_count[2];  // oc::fast_div divisor of plane_count (32-bit I)
};

namespace oc {

// The offset in Y of the flat index `at` of element e (valid: 0 <= at < index_total): the
// merged index space's coordinates times Y's strides, plus e's plane start per plane.
template <typename I, int R, bool PER_PLANE>
__device__ __forceinline__ I unpool_offset(const UnpoolGeom& g, I e, I at) {
  I coord[R];
  coord[0] = oc::unravel<R, 1>(at, coord, [&](int a, I v) {
    if constexpr (sizeof(I) == sizeof(int)) return (I)oc::fast_div(v, g.by_extent[a]);
    else return v / (I)g.extent[a];
  }, [&](int a) { return (I)g.extent[a]; });
  I offset = 0;
#pragma unroll
  for (int a = 0; a < R; ++a) offset += coord[a] * (I)g.stride[a];
  if constexpr (PER_PLANE) {  // the start of e's (n, c) plane in Y
    I plane;
    if constexpr (sizeof(I) == sizeof(int)) plane = (I)oc::fast_div(e, g.by_plane_count);
    else plane = e / (I)g.plane_count;
    offset += plane * (I)g.plane_total;
  }
  return offset;
}

}  // namespace oc

template <typename Index, typename I, int R, bool PER_PLANE>
__global__ void unpool_scatter(const Index* __restrict__ indices,
                               typename oc::offset_of<I>::type* __restrict__ winner,
                               const UnpoolGeom g) {
  static_assert(1 <= R && R <= UNPOOL_MAXR, "merged rank out of range");
  using W = typename oc::offset_of<I>::type;
#pragma unroll 1  // grid-stride loop: no trip-count division
  for (I e = oc::first_index<I>(); e < (I)g.count; e += oc::grid_stride<I>()) {
    const Index at = indices[e];
    if (at < 0 || at >= (Index)g.index_total) continue;
    atomicMax(winner + oc::unpool_offset<I, R, PER_PLANE>(g, e, (I)at), (W)e + 1);
  }
}

// MaxUnpool's gradient (PyTorch's): dx[e] = dy[the offset I[e] names], 0 for an index outside
// [0, index_total); a gather by index, no atomics. T moves elements as raw words (rsz::pod).
template <typename T, typename Index, typename I, int R, bool PER_PLANE>
__global__ void unpool_grad(const Index* __restrict__ indices, const T* __restrict__ dy,
                            T* __restrict__ dx, const UnpoolGeom g) {
  static_assert(1 <= R && R <= UNPOOL_MAXR, "merged rank out of range");
#pragma unroll 1  // grid-stride loop: no trip-count division
  for (I e = oc::first_index<I>(); e < (I)g.count; e += oc::grid_stride<I>()) {
    const Index at = indices[e];
    dx[e] = at < 0 || at >= (Index)g.index_total
                ? T() : dy[oc::unpool_offset<I, R, PER_PLANE>(g, e, (I)at)];
  }
}

template <typename T, typename I>
__global__ void unpool_gather(const T* __restrict__ x,
                              const typename oc::offset_of<I>::type* __restrict__ winner,
                              T* __restrict__ y, const UnpoolGeom g) {
  using W = typename oc::offset_of<I>::type;
#pragma unroll 1
  for (I o = oc::first_index<I>(); o < (I)g.total; o += oc::grid_stride<I>()) {
    const W w = winner[o];
    y[o] = w ? x[(I)(w - 1)] : T();
  }
}
