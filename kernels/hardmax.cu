// Hardmax: y[o, k, i] = 1 if k is the first index of the maximum of x[o, :, i], else 0.
// The host plan views X as [outer, n, inner] with element strides (opset 13: n = shape[axis];
// opsets 1 and 11: the coerced 2-D view, inner = 1). A NaN counts as the maximum; among NaNs, and
// among equal maxima, the smallest index wins.
//
// Values are ranked by integer keys made from their bits: no float arithmetic (so a subnormal
// never ties with zero, whatever a compiler's flush-to-zero setting) and no FP64 for 16/32-bit
// types. A key orders numbers as the floats with -0 == +0, every NaN above
// +inf; 0 is below every key. Each thread keeps the (key, index) of its first maximum.
//
// One pass over the elements: a thread writes 0 over every output whose input it scans, and the
// thread that settles a column's winner then writes its 1 (kernel order or, within a kernel, the
// program order of the thread that wrote the 0, puts the 1 last). The host picks, per view:
//   hardmax_rows  inner == 1, contiguous rows: a group of threads per row, one launch;
//   hardmax_cols  enough columns: a thread per column (o, i), one launch;
//   hardmax_scan + hardmax_merge  few long columns: `lanes` threads per column, then one per
//                 column to combine their (index, key) candidates.
// No kernel divides an index: i runs on the grid's x, o and lanes on y and z.
#include "common.cuh"

// Defined by the loader from onnx_cupy.hardmax.kernel: HARDMAX_PACK_BYTES, the bytes of one
// vector access; HARDMAX_MAX_GROUP, the most threads on one
// row of hardmax_rows.
#if !defined(HARDMAX_PACK_BYTES) || !defined(HARDMAX_MAX_GROUP)
#error "compile through onnx_cupy.core.loader, which defines HARDMAX_PACK_BYTES, HARDMAX_MAX_GROUP"
#endif

struct HardmaxGeom {
  long long outer;         // prod(shape[:axis])
  long long n;             // length of the reduced dimension
  long long inner;         // prod of the dimensions after it (1 in the coerced 2-D view)
  long long lanes;         // scan threads per column of hardmax_scan
  long long stride_outer;  // input element strides of the [outer, n, inner] view
  long long stride_n;
  long long stride_inner;
};

namespace oc {

// Storage bits of T: U; key type: K; bit patterns of the sign, +inf and 1.
template <typename T> struct bits;
template <> struct bits<half_t> {
  typedef unsigned short U; typedef unsigned int K;
  static const unsigned int sign = 0x8000u, inf = 0x7C00u, one = 0x3C00u;
};
template <> struct bits<bf16_t> {
  typedef unsigned short U; typedef unsigned int K;
  static const unsigned int sign = 0x8000u, inf = 0x7F80u, one = 0x3F80u;
};
template <> struct bits<float> {
  typedef unsigned int U; typedef unsigned int K;
  static const unsigned int sign = 0x80000000u, inf = 0x7F800000u, one = 0x3F800000u;
};
template <> struct bits<double> {
  typedef unsigned long long U; typedef unsigned long long K;
  static const unsigned long long sign = 0x8000000000000000ull, inf = 0x7FF0000000000000ull,
                                  one = 0x3FF0000000000000ull;
};

template <typename T>
__device__ __forceinline__ typename bits<T>::K key(typename bits<T>::U u) {
  typedef typename bits<T>::K K;
  const K m = (K)u & (K)(bits<T>::sign - 1);
  if (m > (K)bits<T>::inf) return ~(K)0;
  return (K)bits<T>::sign + (((K)u & (K)bits<T>::sign) ? (K)0 - m : m);
}

// V consecutive storage words, moved by one 16-byte access when V > 1 (the address aligned).
template <typename U, int V> struct pack {
  U e[V];
  __device__ __forceinline__ void load(const U* p) {
    if constexpr (V == 1) {
      e[0] = __ldg(p);
    } else {
      static_assert(sizeof(U) * V == HARDMAX_PACK_BYTES, "one vector access per pack");
      union { uint4 q; U w[V]; } c;
      c.q = __ldg(reinterpret_cast<const uint4*>(p));
#pragma unroll
      for (int j = 0; j < V; ++j) e[j] = c.w[j];
    }
  }
  __device__ __forceinline__ void store(U* p) const {
    if constexpr (V == 1) {
      p[0] = e[0];
    } else {
      union { uint4 q; U w[V]; } c;
#pragma unroll
      for (int j = 0; j < V; ++j) c.w[j] = e[j];
      *reinterpret_cast<uint4*>(p) = c.q;
    }
  }
};

// (key, index) of the first maximum: (k, kk) replaces (best, best_k) if larger, or equal with a
// smaller index.
template <typename K, typename I>
__device__ __forceinline__ void take(K k, I kk, K& best, I& best_k) {
  if (k > best || (k == best && kk < best_k)) { best = k; best_k = kk; }
}

// Scans elements k, k + k_step, ... < n of one column (input at p, output at q, advancing by
// x_step and y_step): writes 0 over each output and keeps the (key, index) of the first maximum.
template <typename T, typename I>
__device__ __forceinline__ void scan_column(const typename bits<T>::U* p, typename bits<T>::U* q,
                                            I k, I n, I k_step, I x_step, I y_step,
                                            typename bits<T>::K& best, I& best_k) {
#pragma unroll 1
  for (; k < n; k += k_step, p += x_step, q += y_step) {
    const typename bits<T>::K v = key<T>(__ldg(p));
    *q = 0;
    if (v > best) { best = v; best_k = k; }
  }
}

}  // namespace oc

// hardmax_scan: thread (o, lane, i) scans k = lane, lane + lanes, ... of column (o, i), writes
// 0 over those outputs and the index and key of its first maximum to part[o, lane, i] and
// part_key[o, lane, i]. i on x, lane on y, o on z (grid-stride).
template <typename T, typename I>
__global__ void hardmax_scan(const T* __restrict__ x, T* __restrict__ y, I* __restrict__ part,
                             typename oc::bits<T>::K* __restrict__ part_key, const HardmaxGeom g) {
  typedef typename oc::bits<T>::U U;
  typedef typename oc::bits<T>::K K;
  const I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x;
  const I lane = (I)blockIdx.y * (I)blockDim.y + (I)threadIdx.y;
  const I n = (I)g.n, inner = (I)g.inner, lanes = (I)g.lanes;
  if (i >= inner || lane >= lanes) return;
  const I x_step = lanes * (I)g.stride_n, y_step = lanes * inner;
#pragma unroll 1
  for (I o = (I)blockIdx.z; o < (I)g.outer; o += (I)gridDim.z) {
    const U* p = reinterpret_cast<const U*>(x) + o * (I)g.stride_outer + i * (I)g.stride_inner +
                 lane * (I)g.stride_n;
    U* q = reinterpret_cast<U*>(y) + (o * n + lane) * inner + i;
    K best = 0;
    I best_k = lane;
    oc::scan_column<T, I>(p, q, lane, n, lanes, x_step, y_step, best, best_k);
    const I at = (o * lanes + lane) * inner + i;
    part[at] = best_k;
    part_key[at] = best;
  }
}

// hardmax_merge: thread (o, i) takes the first maximum among the lanes' (index, key) candidates
// and writes its 1. i on x, o on y (grid-stride).
template <typename T, typename I>
__global__ void hardmax_merge(const T* __restrict__ x, T* __restrict__ y,
                              const I* __restrict__ part,
                              const typename oc::bits<T>::K* __restrict__ part_key,
                              const HardmaxGeom g) {
  typedef typename oc::bits<T>::U U;
  typedef typename oc::bits<T>::K K;
  const I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x;
  const I n = (I)g.n, inner = (I)g.inner, lanes = (I)g.lanes;
  if (i >= inner) return;
#pragma unroll 1
  for (I o = (I)blockIdx.y * (I)blockDim.y + (I)threadIdx.y; o < (I)g.outer;
       o += (I)gridDim.y * (I)blockDim.y) {
    const I first = o * lanes * inner + i;
    const I* cand = part + first;
    const K* cand_key = part_key + first;
    K best = 0;
    I best_k = 0;
#pragma unroll 1
    for (I lane = 0; lane < lanes; ++lane, cand += inner, cand_key += inner)
      oc::take(*cand_key, *cand, best, best_k);
    reinterpret_cast<U*>(y)[(o * n + best_k) * inner + i] = (U)oc::bits<T>::one;
  }
}

// inner == 1, stride_n == 1: each row of X is n consecutive elements. A group of G = blockDim.x
// threads (a power of two: part of a warp, a warp, or the whole block) takes one row: thread t
// scans the V-element packs c = t, t + G, ...; the group combines its (key, index) pairs by warp
// shuffles (and, for a block, shared memory). blockDim.y rows per block (1 for a block-wide
// group); row = blockIdx.x * blockDim.y + threadIdx.y. Threads past the last row scan nothing but
// take part in the shuffles, so that every shuffle has the whole warp.
template <typename T, int V, typename I>
__global__ void hardmax_rows(const T* __restrict__ x, T* __restrict__ y, const HardmaxGeom g) {
  typedef typename oc::bits<T>::U U;
  typedef typename oc::bits<T>::K K;
  const I row = (I)blockIdx.x * (I)blockDim.y + (I)threadIdx.y;
  const bool live = row < (I)g.outer;
  const unsigned int G = blockDim.x, t = threadIdx.x;
  const I n = (I)g.n, packs = live ? n / V : 0;
  const U* xr = reinterpret_cast<const U*>(x) + (live ? row * (I)g.stride_outer : 0);
  U* yr = reinterpret_cast<U*>(y) + (live ? row * n : 0);
  oc::pack<U, V> zero;
#pragma unroll
  for (int j = 0; j < V; ++j) zero.e[j] = 0;
  K best = 0;
  I best_k = n;
  const I step = (I)G * V;
  const U* xp = xr + (I)t * V;
  U* yp = yr + (I)t * V;
#pragma unroll 1
  for (I first = (I)t * V, end = packs * V; first < end; first += step, xp += step, yp += step) {
    oc::pack<U, V> p;
    p.load(xp);
    zero.store(yp);
#pragma unroll
    for (int j = 0; j < V; ++j) {
      const K k = oc::key<T>(p.e[j]);
      if (k > best) { best = k; best_k = first + j; }
    }
  }
#pragma unroll
  for (unsigned int d = OC_WARP / 2; d > 0; d >>= 1)
    if (d < G)
      oc::take(__shfl_xor_sync(0xFFFFFFFFu, best, d), __shfl_xor_sync(0xFFFFFFFFu, best_k, d),
               best, best_k);
  if (G > (unsigned int)OC_WARP) {
    __shared__ K keys[HARDMAX_MAX_GROUP / OC_WARP];
    __shared__ I index[HARDMAX_MAX_GROUP / OC_WARP];
    if (t % OC_WARP == 0) { keys[t / OC_WARP] = best; index[t / OC_WARP] = best_k; }
    __syncthreads();
#pragma unroll 1
    for (unsigned int w = 0; w < G / OC_WARP; ++w) oc::take(keys[w], index[w], best, best_k);
  }
  if (live && ((unsigned int)(best_k / V) & (G - 1u)) == t) yr[best_k] = (U)oc::bits<T>::one;
}

// Each thread one column (o, i) of the [outer, n, inner] view: i on x, o on y and z (a grid of
// blockDim.y rows of o per block), so no index is divided. A warp's reads and writes are
// consecutive in i.
template <typename T, typename I>
__global__ void hardmax_cols(const T* __restrict__ x, T* __restrict__ y, const HardmaxGeom g) {
  typedef typename oc::bits<T>::U U;
  typedef typename oc::bits<T>::K K;
  const I i = (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x;
  const I o = ((I)blockIdx.z * (I)gridDim.y + (I)blockIdx.y) * (I)blockDim.y + (I)threadIdx.y;
  const I n = (I)g.n, inner = (I)g.inner, sn = (I)g.stride_n;
  if (i >= inner || o >= (I)g.outer) return;
  const U* p = reinterpret_cast<const U*>(x) + o * (I)g.stride_outer + i * (I)g.stride_inner;
  U* const q0 = reinterpret_cast<U*>(y) + o * n * inner + i;
  K best = 0;
  I best_k = 0;
  oc::scan_column<T, I>(p, q0, I(0), n, I(1), sn, inner, best, best_k);
  q0[best_k * inner] = (U)oc::bits<T>::one;
}
