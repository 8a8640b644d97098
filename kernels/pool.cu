// AveragePool and LpPool: one thread per output element, grid-stride.
//   AveragePool: y = sum_{w in window, w inside X} x[w] / count(window positions in [cnt_lo, cnt_hi))
//   LpPool:      y = (sum_{w in window, w inside X} |x[w]|^p)^(1/p)   (padding contributes 0)
// The host plan supplies output shape, begin pads and the divisor bounds per spatial axis.
#include "common.cuh"

// Defined by the loader from onnx_cupy.pool: POOL_MAXD, the most spatial axes a parameter block
// holds; POOL_OUTPUTS, the outputs one thread of pool_fast writes along the last axis.
#if !defined(POOL_MAXD) || !defined(POOL_OUTPUTS)
#error "compile through onnx_cupy.core.loader, which defines POOL_MAXD and POOL_OUTPUTS"
#endif

struct PoolGeom {
  long long nd;        // spatial dimensions
  long long total;     // output elements
  long long channels;  // C
  long long stride_n;  // input element strides of N and C
  long long stride_c;
  long long lp;        // 0: average, 1: Lp norm
  long long in_shape[POOL_MAXD];
  long long in_stride[POOL_MAXD];
  long long out_shape[POOL_MAXD];
  long long kernel[POOL_MAXD];
  long long step[POOL_MAXD];      // ONNX strides
  long long dilation[POOL_MAXD];
  long long pad_begin[POOL_MAXD];
  long long cnt_lo[POOL_MAXD];    // divisor counts window positions in [cnt_lo, cnt_hi)
  long long cnt_hi[POOL_MAXD];
  double p;
};

namespace oc {

// Taps j in [0, k) whose position start + j * d lies in [lo, hi): returns [j0, j1).
template <typename I>
__device__ __forceinline__ void tap_range(I start, I d, I k, I lo, I hi, I& j0, I& j1) {
  j0 = imax<I>(0, ceil_div<I>(lo - start, d));
  j1 = imin<I>(k, ceil_div<I>(hi - start, d));
  if (j1 < j0) j1 = j0;
}

template <typename Acc> __device__ __forceinline__ Acc lp_term(Acc v, Acc p) {
  const Acc a = fabs(v);
  if (p == Acc(1)) return a;
  if (p == Acc(2)) return a * a;
  return pow(a, p);
}

template <typename Acc> __device__ __forceinline__ Acc lp_root(Acc s, Acc p) {
  if (p == Acc(1)) return s;
  if (p == Acc(2)) return sqrt(s);
  return pow(s, Acc(1) / p);
}

}  // namespace oc

template <typename T, typename Acc, typename I>
__global__ void pool(const T* __restrict__ x, T* __restrict__ y, const PoolGeom g) {
  const int nd = (int)g.nd;
  const int last = nd - 1;
  const Acc p = (Acc)g.p;
#pragma unroll 1  // grid-stride loop: no trip-count division
  for (I idx = oc::first_index<I>(); idx < (I)g.total; idx += oc::grid_stride<I>()) {
    I rem = idx;
    I j0[POOL_MAXD], j1[POOL_MAXD], jump[POOL_MAXD];
    I base = 0;
    Acc count = Acc(1);
    bool empty = false;
    for (int d = last; d >= 0; --d) {
      const I o = rem % (I)g.out_shape[d];
      rem /= (I)g.out_shape[d];
      const I start = o * (I)g.step[d] - (I)g.pad_begin[d];
      const I dil = (I)g.dilation[d], k = (I)g.kernel[d];
      I c0, c1;
      oc::tap_range<I>(start, dil, k, (I)g.cnt_lo[d], (I)g.cnt_hi[d], c0, c1);
      count *= (Acc)(c1 - c0);
      oc::tap_range<I>(start, dil, k, (I)0, (I)g.in_shape[d], j0[d], j1[d]);
      empty |= j1[d] == j0[d];
      jump[d] = dil * (I)g.in_stride[d];
      base += (start + j0[d] * dil) * (I)g.in_stride[d];
    }
    base += (rem % (I)g.channels) * (I)g.stride_c + (rem / (I)g.channels) * (I)g.stride_n;
    Acc acc = Acc(0);
    if (!empty) {
      I j[POOL_MAXD];
      for (int d = 0; d < last; ++d) j[d] = j0[d];
      I off = base;
      for (;;) {
        I o = off;
        for (I t = j0[last]; t < j1[last]; ++t, o += jump[last]) {
          const Acc v = oc::load<Acc>(x + o);
          acc += g.lp ? oc::lp_term<Acc>(v, p) : v;
        }
        int d = last - 1;
        for (; d >= 0; --d) {
          off += jump[d];
          if (++j[d] < j1[d]) break;
          off -= jump[d] * (j1[d] - j0[d]);
          j[d] = j0[d];
        }
        if (d < 0) break;
      }
    }
    oc::store<Acc>(y + idx, g.lp ? oc::lp_root<Acc>(acc, p) : acc / count);
  }
}

// Fast path for 1-3 spatial axes and 32-bit offsets: AveragePool, LpPool p = 1 and p = 2.
// Template parameters: spatial rank R, Mode (pool_avg, pool_l1, pool_l2) and the last axis's
// window: K taps at stride S with dilation 1 and unit input stride, or K = S = 0 for a runtime
// window. Each thread owns POOL_OUTPUTS consecutive outputs along the last axis at one outer position
// (grid x: outer output positions x groups of POOL_OUTPUTS, no grid stride) and visits the N*C planes
// in a grid-stride loop over grid y. Its window state (tap ranges, divisors, offsets) is computed
// once, before that loop; the loop body only loads, accumulates in the generic kernel's order and
// stores. Blocks of OC_BLOCK threads and at most 64 registers: occupancy >= 50 %
// on sm_80/sm_90.

struct PoolFastGeom {
  int planes;     // N * C
  int channels;   // C
  int stride_n;   // input element strides of N and C
  int stride_c;
  int work;       // threads per plane: outer output positions x groups
  int groups;     // ceil(out_len[R - 1] / POOL_OUTPUTS)
  int out_plane;  // output elements per plane
  unsigned int by_channels[2];  // oc::fast_div divisors of C, groups and (R == 3) out_len[1]
  unsigned int by_groups[2];
  unsigned int by_mid[2];
  int in_len[3];
  int in_stride[3];
  int out_len[3];
  int kernel[3];
  int step[3];       // ONNX strides
  int dilation[3];
  int pad_begin[3];
  int cnt_lo[3];     // divisor counts window positions in [cnt_lo, cnt_hi)
  int cnt_hi[3];
  unsigned int by_dilation[3][2];
};

namespace oc {

// What a pool_fast instantiation computes: AveragePool, or LpPool with p = 1 or p = 2.
enum class PoolMode { average, l1, l2 };

// Taps [j0, j1) of the window at `start` on axis `a` whose positions start + j * d lie in
// [lo, hi) (0 <= j0 <= j1 <= k): by min/max for a compile-time window of K > 0 taps with
// dilation 1, else by multiply-shift division.
template <int K>
__device__ __forceinline__ void tap_span(const PoolFastGeom& g, int a, int start, int lo, int hi,
                                         int& j0, int& j1) {
  if constexpr (K > 0) {
    j0 = imin(K, imax(lo - start, 0));
    j1 = imax(j0, imin(K, hi - start));
  } else {
    const int d = g.dilation[a], k = g.kernel[a];
    j0 = imin(k, fast_div(imax(lo - start, 0) + d - 1, g.by_dilation[a]));
    j1 = imax(j0, imin(k, fast_div(imax(hi - start, 0) + d - 1, g.by_dilation[a])));
  }
}

// The generic kernel's term and result with p = Mode known at compile time (pool_l1: p = 1,
// pool_l2: p = 2), so lp_term and lp_root fold to |v|, v * v and sqrt.
template <PoolMode Mode, typename Acc> __device__ __forceinline__ Acc pool_term(Acc v) {
  return Mode == PoolMode::average ? v : lp_term<Acc>(v, Acc(Mode == PoolMode::l1 ? 1 : 2));
}

template <PoolMode Mode, typename Acc> __device__ __forceinline__ Acc pool_finish(Acc s, Acc count) {
  return Mode == PoolMode::average ? s / count : lp_root<Acc>(s, Acc(Mode == PoolMode::l1 ? 1 : 2));
}

// The last-axis taps of a thread's POOL_OUTPUTS outputs (axis L, outputs o_last on); `add`
// accumulates one row of them, the plane and the outer taps fixed (offset r), each output's taps
// in ascending order.
// Compile-time window (K taps at stride S, dilation 1, unit input stride): the V windows span
// C = (V - 1) * S + K input columns from `start` on, each loaded once into a register (9 loads for
// the 12 taps at K = 3, S = 2), a row's loads all in flight together (fully unrolled). A column
// outside the input adds -0.0, the identity of IEEE addition (x + -0.0 == x, also for x = -0.0),
// so the sums are the generic kernel's, bit for bit.
template <int K, int S> struct PoolRow {
  static constexpr int C = (POOL_OUTPUTS - 1) * S + K;
  int start, len;
  unsigned int at;
  bool inside;  // every column inside the input: no predicates

  __device__ __forceinline__ PoolRow(const PoolFastGeom& g, int L, int o_last, unsigned int begin)
      : start(o_last * S - g.pad_begin[L]), len(g.in_len[L]),
        at(begin + (unsigned int)start), inside(start >= 0 && start <= len - C) {}

  template <PoolMode Mode, typename T, typename Acc>
  __device__ __forceinline__ void add(const T* __restrict__ x, unsigned int r,
                                      Acc (&acc)[POOL_OUTPUTS]) const {
    const int o = (int)(r + at);
    Acc term[C];
    if (inside) {
#pragma unroll
      for (int c = 0; c < C; ++c) term[c] = pool_term<Mode>(load<Acc>(x + (o + c)));
    } else {
#pragma unroll
      for (int c = 0; c < C; ++c)
        term[c] = (unsigned int)(start + c) < (unsigned int)len
                      ? pool_term<Mode>(load<Acc>(x + (o + c))) : Acc(-0.0);
    }
#pragma unroll
    for (int v = 0; v < POOL_OUTPUTS; ++v)
#pragma unroll
      for (int j = 0; j < K; ++j) acc[v] += term[v * S + j];
  }
};

// Runtime window: output v reads taps j in [lo[v], lo[v] + len[v]) at offset at[v] + j * jl. One
// tap loop serves the V outputs (V independent loads per iteration), without predicates where
// every output reads every tap.
template <> struct PoolRow<0, 0> {
  int lo[POOL_OUTPUTS], len[POOL_OUTPUTS], k, jl, jlo, jhi = 0;
  unsigned int at[POOL_OUTPUTS];
  bool inside = true;  // the group's outputs all exist and read every tap

  __device__ __forceinline__ PoolRow(const PoolFastGeom& g, int L, int o_last, unsigned int begin)
      : k(g.kernel[L]), jl(g.dilation[L] * g.in_stride[L]), jlo(g.kernel[L]) {
#pragma unroll
    for (int v = 0; v < POOL_OUTPUTS; ++v) {
      const int start = imin(o_last + v, g.out_len[L] - 1) * g.step[L] - g.pad_begin[L];
      int j0, j1;
      tap_span<0>(g, L, start, 0, g.in_len[L], j0, j1);
      if (o_last + v >= g.out_len[L]) j1 = j0;  // past the row's end: nothing to read or write
      lo[v] = j0;
      len[v] = j1 - j0;
      at[v] = begin + (unsigned int)start * (unsigned int)g.in_stride[L];
      if (j1 > j0) {
        jlo = imin(jlo, j0);
        jhi = imax(jhi, j1);
      }
      inside &= len[v] == k;
    }
  }

  template <PoolMode Mode, typename T, typename Acc>
  __device__ __forceinline__ void add(const T* __restrict__ x, unsigned int r,
                                      Acc (&acc)[POOL_OUTPUTS]) const {
    if (inside) {
      unsigned int tap = 0;
#pragma unroll 1
      for (int j = 0; j < k; ++j, tap += jl) {
#pragma unroll
        for (int v = 0; v < POOL_OUTPUTS; ++v)
          acc[v] += pool_term<Mode>(load<Acc>(x + (int)(r + at[v] + tap)));
      }
    } else {
#pragma unroll 1
      for (int j = jlo; j < jhi; ++j) {
        const unsigned int tap = (unsigned int)j * (unsigned int)jl;
#pragma unroll
        for (int v = 0; v < POOL_OUTPUTS; ++v)
          if ((unsigned int)(j - lo[v]) < (unsigned int)len[v])
            acc[v] += pool_term<Mode>(load<Acc>(x + (int)(r + at[v] + tap)));
      }
    }
  }
};

}  // namespace oc

template <typename T, typename Acc, oc::PoolMode Mode, int R, int K, int S>
__global__ void __launch_bounds__(OC_BLOCK, 4) pool_fast(const T* __restrict__ x, T* __restrict__ y,
                                                 const PoolFastGeom g) {
  constexpr int L = R - 1;  // the last spatial axis
  constexpr int V = POOL_OUTPUTS;
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  if (t >= g.work) return;
  const int row = oc::fast_div(t, g.by_groups);  // outer output position, row-major
  const int o_last = (t - row * g.groups) * V;
  int o[2] = {row, 0};
  if constexpr (R == 3) {
    o[0] = oc::fast_div(row, g.by_mid);
    o[1] = row - o[0] * g.out_len[1];
  }
  // Outer axes: their taps as (count, jump) pairs, absent axes one tap. Offsets of windows that
  // read nothing may wrap: unsigned arithmetic.
  int taps[2] = {1, 1}, jump[2] = {0, 0}, counted[2] = {1, 1};
  unsigned int begin = 0;
#pragma unroll
  for (int a = 0; a < L; ++a) {
    const int start = o[a] * g.step[a] - g.pad_begin[a];
    int j0, j1, c0, c1;
    oc::tap_span<0>(g, a, start, 0, g.in_len[a], j0, j1);
    oc::tap_span<0>(g, a, start, g.cnt_lo[a], g.cnt_hi[a], c0, c1);
    taps[a] = j1 - j0;
    counted[a] = c1 - c0;
    jump[a] = g.dilation[a] * g.in_stride[a];
    begin += (unsigned int)(start + j0 * g.dilation[a]) * (unsigned int)g.in_stride[a];
  }
  const oc::PoolRow<K, S> taps_last(g, L, o_last, begin);
  Acc count[V];
#pragma unroll
  for (int v = 0; v < V; ++v) {
    const int step = K > 0 ? S : g.step[L];
    const int start = oc::imin(o_last + v, g.out_len[L] - 1) * step - g.pad_begin[L];
    int c0, c1;
    oc::tap_span<K>(g, L, start, g.cnt_lo[L], g.cnt_hi[L], c0, c1);
    count[v] = (Acc)(c1 - c0);  // the generic kernel's product order: last axis first
#pragma unroll
    for (int a = L - 1; a >= 0; --a) count[v] *= (Acc)counted[a];
  }
  const int y_row = row * g.out_len[L] + o_last;
#pragma unroll 1
  for (int p = blockIdx.y * blockDim.y + threadIdx.y; p < g.planes; p += blockDim.y * gridDim.y) {
    const int n = oc::fast_div(p, g.by_channels);
    const unsigned int plane = (unsigned int)(n * g.stride_n + (p - n * g.channels) * g.stride_c);
    Acc acc[V];
#pragma unroll
    for (int v = 0; v < V; ++v) acc[v] = Acc(0);
    for (int i0 = 0; i0 < taps[0]; ++i0)
      for (int i1 = 0; i1 < taps[1]; ++i1)
        taps_last.template add<Mode>(x, plane + (unsigned int)(i0 * jump[0] + i1 * jump[1]), acc);
    T* yp = y + (p * g.out_plane + y_row);
#pragma unroll
    for (int v = 0; v < V; ++v)
      if (o_last + v < g.out_len[L]) oc::store<Acc>(yp + v, oc::pool_finish<Mode>(acc[v], count[v]));
  }
}
