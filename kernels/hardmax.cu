// Hardmax: y[o, k, i] = 1 if k is the first index of the maximum of x[o, :, i], else 0.
// The host plan views X as [outer, n, inner] with element strides (opset 13: n = shape[axis];
// opsets 1 and 11: the coerced 2-D view, inner = 1). A NaN counts as the maximum; among NaNs, and
// among equal maxima, the smallest index wins. Three grid-stride passes, one thread per item:
//   hardmax_scan:  item (o, l, i) -> part: first maximum over k = l, l + lanes, l + 2 * lanes, ...
//                  Interleaved lanes keep a warp's reads coalesced even when inner == 1, and give
//                  long rows enough threads. With lanes == 1, part is the answer.
//   hardmax_merge: item (o, i) -> arg: first maximum over the lanes' candidates (lanes > 1 only).
//   hardmax_write: item = output element (C order): y = (k == arg[o, i]), coalesced writes.
#include "common.cuh"

struct HardmaxGeom {
  long long outer;         // prod(shape[:axis])
  long long n;             // length of the reduced dimension
  long long inner;         // prod of the dimensions after it (1 in the coerced 2-D view)
  long long lanes;         // scan threads per row
  long long stride_outer;  // input element strides of the [outer, n, inner] view
  long long stride_n;
  long long stride_inner;
};

namespace oc {

// Values are ranked through keys: float comparisons are compiled with flush-to-zero on the GPU
// (CuPy builds every kernel with -ftz=true), which would tie a float32 subnormal with zero. A
// float's key is an integer image of its bits ordered as the floats, with -0 == +0; doubles are
// never flushed and rank as themselves.
template <typename Acc> struct rank;
template <> struct rank<float> {
  typedef unsigned int key;
  static __device__ __forceinline__ bool nan(float v) {
    return (float_to_bits(v) & 0x7FFFFFFFu) > 0x7F800000u;
  }
  static __device__ __forceinline__ key of(float v) {
    const unsigned int u = float_to_bits(v);
    if ((u & 0x7FFFFFFFu) == 0) return 0x80000000u;
    return (u & 0x80000000u) ? ~u : (u | 0x80000000u);
  }
};
template <> struct rank<double> {
  typedef double key;
  static __device__ __forceinline__ bool nan(double v) { return v != v; }
  static __device__ __forceinline__ key of(double v) { return v; }
};

// Whether candidate (v, k) precedes the current best (b, kb): larger, or NaN over a number, or
// equal (both NaN included) with a smaller index.
template <typename Acc, typename I>
__device__ __forceinline__ bool beats(Acc v, I k, Acc b, I kb) {
  const bool v_nan = rank<Acc>::nan(v), b_nan = rank<Acc>::nan(b);
  if (v_nan != b_nan) return v_nan;
  if (v_nan) return k < kb;
  const typename rank<Acc>::key kv = rank<Acc>::of(v), kbest = rank<Acc>::of(b);
  return kv > kbest || (kv == kbest && k < kb);
}

template <typename T, typename I>
__device__ __forceinline__ const T* row_start(const T* x, I o, I i, const HardmaxGeom& g) {
  return x + o * (I)g.stride_outer + i * (I)g.stride_inner;
}

}  // namespace oc

template <typename T, typename Acc, typename I>
__global__ void hardmax_scan(const T* __restrict__ x, I* __restrict__ part, const HardmaxGeom g) {
  const I n = (I)g.n, lanes = (I)g.lanes, inner = (I)g.inner, sn = (I)g.stride_n;
  const I total = (I)g.outer * lanes * inner;
  for (I idx = oc::first_index<I>(); idx < total; idx += oc::grid_stride<I>()) {
    const I i = idx % inner, t = idx / inner;
    const I lane = t % lanes, o = t / lanes;
    const T* p = oc::row_start<T, I>(x, o, i, g) + lane * sn;
    I best_k = lane;
    Acc best = oc::load<Acc>(p);
    for (I k = lane + lanes; k < n; k += lanes) {
      p += lanes * sn;
      const Acc v = oc::load<Acc>(p);
      if (oc::beats<Acc, I>(v, k, best, best_k)) {
        best = v;
        best_k = k;
      }
    }
    part[idx] = best_k;
  }
}

template <typename T, typename Acc, typename I>
__global__ void hardmax_merge(const T* __restrict__ x, const I* __restrict__ part,
                              I* __restrict__ arg, const HardmaxGeom g) {
  const I lanes = (I)g.lanes, inner = (I)g.inner, sn = (I)g.stride_n;
  const I total = (I)g.outer * inner;
  for (I idx = oc::first_index<I>(); idx < total; idx += oc::grid_stride<I>()) {
    const I i = idx % inner, o = idx / inner;
    const T* row = oc::row_start<T, I>(x, o, i, g);
    const I* cand = part + o * lanes * inner + i;
    I best_k = cand[0];
    Acc best = oc::load<Acc>(row + best_k * sn);
    for (I lane = 1; lane < lanes; ++lane) {
      const I k = cand[lane * inner];
      const Acc v = oc::load<Acc>(row + k * sn);
      if (oc::beats<Acc, I>(v, k, best, best_k)) {
        best = v;
        best_k = k;
      }
    }
    arg[idx] = best_k;
  }
}

template <typename T, typename Acc, typename I>
__global__ void hardmax_write(const I* __restrict__ arg, T* __restrict__ y, const HardmaxGeom g) {
  const I n = (I)g.n, inner = (I)g.inner;
  const I total = (I)g.outer * n * inner;
  for (I idx = oc::first_index<I>(); idx < total; idx += oc::grid_stride<I>()) {
    const I i = idx % inner, t = idx / inner;
    const I k = t % n, o = t / n;
    oc::store<Acc>(y + idx, arg[o * inner + i] == k ? Acc(1) : Acc(0));
  }
}
