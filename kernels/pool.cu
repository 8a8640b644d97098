// AveragePool, LpPool and MaxPool. Output y[n, c, o] reads the window W(o) of X,
//   W(o)_a = {o_a * step_a - pad_begin_a + tap * dilation_a : 0 <= tap < kernel_a}   per axis a,
//   AveragePool: y = sum_{w in W(o), w inside X} x[w] / |W(o) ∩ [count_begin, count_end)|
//   LpPool:      y = (sum_{w in W(o), w inside X} |x[w]|^p)^(1/p)   (padding contributes 0)
//   MaxPool:     y = max_{w in W(o), w inside X} x[w]   (padding never wins; oc::max_wins decides
//                ties and NaN; an empty window gives oc::max_identity), and the generic kernel's
//                optional indices[n, c, o] = the winner's flat index (index_stride per axis)
// The host plan (onnx_cupy.pool.plan) supplies the output shape, the begin pads and the divisor
// bounds [count_begin, count_end) per spatial axis.
//
// Kernels, and when the host (onnx_cupy.pool.kernel) picks each:
//   pool_fast<T, Acc, I, Mode, R, Window>  AveragePool, MaxPool without indices, or LpPool with
//                 p = 1 or 2 (Mode), on
//                 R = 1-3 spatial axes whose coordinates and per-plane sizes fit an int. A thread
//                 owns POOL_OUTPUTS consecutive outputs along the last axis and loops over the
//                 N*C planes on grid y. Window: oc::FixedWindow<taps, step> where a 2-D pool's
//                 last axis is one of the compiled (kernel, stride) pairs with dilation 1 and unit
//                 input stride, else oc::RuntimeWindow.
//   pool_global<T, Acc, I>                 GlobalAveragePool, GlobalLpPool, GlobalMaxPool: a
//                 block per (n, c) plane, a warp-shuffle and shared-memory reduction; Acc sums
//                 segments of POOL_SEGMENT terms, double everything after (see its comment).
//   pool<T, Acc, I, R>                     everything else (R = 1 .. POOL_MAXD spatial axes, any
//                 p, any size, MaxPool's indices): one thread per output, grid-stride.
//   pool_adaptive<T, Acc, I, R>            PyTorch's adaptive average and max pooling (no ONNX
//                 operator; R = 1 .. 3): per-output windows, one thread per output, grid-stride.
// I, the offset type, is int where every input offset and output index fits one, else long long.
// Acc is float for 16- and 32-bit floats, but double for AveragePool and LpPool windows (of pool
// and pool_adaptive) of more than 2^24 terms (onnx_cupy.pool.plan.WIDE_SUMS): their sums, and
// counts, would outgrow float's 24 bits.
// The spatial rank R is a template parameter of both: loops over axes are unrolled, so per-axis
// state lives in registers (no stack frame, no local memory). Both visit a window's taps in the
// same order (axis 0 outermost, taps ascending), summing (and dividing by the same count) or
// taking the maximum: identical bits. MaxPool of int8/uint8 runs in Acc = float (exact for them).
#include "common.cuh"

// Defined by the loader from onnx_cupy.pool: POOL_MAXD, the most spatial axes a PoolGeom
// holds; POOL_FAST_MAXD, the most spatial axes of pool_fast (and of a PoolFastGeom);
// POOL_OUTPUTS, the outputs one thread of pool_fast writes along the last axis;
// POOL_MIN_BLOCKS, the blocks of OC_BLOCK threads pool_fast keeps resident per SM (its registers
// are capped to allow them: the occupancy target), one fewer for float64 with 64-bit offsets;
// POOL_AVERAGE, POOL_LP, POOL_MAX, the generic kernel's modes (PoolGeom::mode); POOL_SEGMENT,
// the terms pool_global sums in Acc before a double takes them.
#if !defined(POOL_MAXD) || !defined(POOL_FAST_MAXD) || !defined(POOL_OUTPUTS) \
    || !defined(POOL_MIN_BLOCKS) || !defined(POOL_AVERAGE) || !defined(POOL_LP) \
    || !defined(POOL_MAX) || !defined(POOL_SEGMENT)
#error "compile through onnx_cupy.core.loader: it defines POOL_MAXD, POOL_FAST_MAXD, POOL_OUTPUTS, POOL_MIN_BLOCKS, POOL_SEGMENT and the modes"
#endif

// ------------------------------------------------------------------------- the generic kernel

struct PoolGeom {
  long long total;     // output elements
  long long channels;  // C
  long long stride_n;  // input element strides of N and C
  long long stride_c;
  long long mode;      // POOL_AVERAGE, POOL_LP or POOL_MAX
  long long indices;   // MaxPool: 1 to write the winners' indices
  long long plane_size;  // input elements per (n, c) plane: the indices' plane step
  long long in_shape[POOL_MAXD];
  long long in_stride[POOL_MAXD];
  long long out_shape[POOL_MAXD];
  long long kernel[POOL_MAXD];
  long long step[POOL_MAXD];         // ONNX strides
  long long dilation[POOL_MAXD];
  long long pad_begin[POOL_MAXD];
  long long count_begin[POOL_MAXD];  // the divisor counts window positions in
  long long count_end[POOL_MAXD];    // [count_begin, count_end)
  long long index_stride[POOL_MAXD]; // MaxPool's index step per spatial axis (storage_order)
  double p;
  // oc::fast_div divisors of C, the output extents and the dilations (32-bit indices only)
  unsigned int by_channels[2];
  unsigned int by_out_shape[POOL_MAXD][2];
  unsigned int by_dilation[POOL_MAXD][2];
};

namespace oc {

// MaxPool's start value and the value of a window with no element of X: -inf, or the least value
// of an integer T (each exact in Acc).
template <typename T, typename Acc> struct max_identity_of {
  static __device__ __forceinline__ Acc value() { return (Acc)bits_to_float(0xFF800000u); }
};
template <typename Acc> struct max_identity_of<signed char, Acc> {
  static __device__ __forceinline__ Acc value() { return Acc(-128); }
};
template <typename Acc> struct max_identity_of<unsigned char, Acc> {
  static __device__ __forceinline__ Acc value() { return Acc(0); }
};
template <typename T, typename Acc> __device__ __forceinline__ Acc max_identity() {
  return max_identity_of<T, Acc>::value();
}

// Whether MaxPool's next tap v (window order) replaces the maximum m so far: when greater (the
// first of equal values wins) or NaN (a NaN propagates, the last one wins: PyTorch's rule).
template <typename Acc> __device__ __forceinline__ bool max_wins(Acc v, Acc m) {
  return v > m || v != v;
}

// n / d for n >= 0, d >= 1: by the host's multiply-shift `by` with 32-bit indices (every value
// below 2^31), by division with 64-bit ones.
template <typename I>
__device__ __forceinline__ I quotient(I n, I d, const unsigned int (&by)[2]) {
  if constexpr (sizeof(I) == sizeof(int)) return fast_div(n, by);
  else return n / d;
}

// Taps of a window starting at `start` with `dilation` and `taps` taps whose positions
// start + tap * dilation lie in [begin, end): [first_tap, end_tap), first_tap <= end_tap (ceiling
// divisions of non-negative distances; `by` divides by the dilation).
template <typename I>
__device__ __forceinline__ void tap_range(I start, I dilation, const unsigned int (&by)[2],
                                          I taps, I begin, I end, I& first_tap, I& end_tap) {
  first_tap = quotient<I>(imax<I>(begin - start, 0) + dilation - 1, dilation, by);
  end_tap = imax<I>(first_tap,
                    imin<I>(taps, quotient<I>(imax<I>(end - start, 0) + dilation - 1, dilation,
                                              by)));
}

// |v|^p; the square rounded on its own (never fused into the sum it joins), as NumPy squares.
template <typename Acc> __device__ __forceinline__ Acc lp_term(Acc v, Acc p) {
  const Acc a = fabs(v);
  if (p == Acc(1)) return a;
  if (p == Acc(2)) return rn<Acc>::mul(a, a);
  return pow(a, p);
}

template <typename Acc> __device__ __forceinline__ Acc lp_root(Acc s, Acc p) {
  if (p == Acc(1)) return s;
  if (p == Acc(2)) return sqrt(s);
  return pow(s, Acc(1) / p);
}

// Visits the offsets and flat indices of a window's taps inside X, axis A outermost of axes
// A .. R - 1, taps ascending: `offset` and `index` are the first tap's, axis a has tap_count[a]
// taps tap_jump[a] apart (index_jump[a] in the indices).
template <int A, int R, typename I, typename Visit>
__device__ __forceinline__ void for_each_tap(I offset, long long index, const I (&tap_count)[R],
                                             const I (&tap_jump)[R],
                                             const long long (&index_jump)[R], Visit& visit) {
  if constexpr (A == R) {
    visit(offset, index);
  } else {
#pragma unroll 1
    for (I tap = 0; tap < tap_count[A]; ++tap, offset += tap_jump[A], index += index_jump[A])
      for_each_tap<A + 1, R>(offset, index, tap_count, tap_jump, index_jump, visit);
  }
}

}  // namespace oc

template <typename T, typename Acc, typename I, int R>
__global__ void pool(const T* __restrict__ x, T* __restrict__ y, long long* __restrict__ indices,
                     const PoolGeom geom) {
  static_assert(1 <= R && R <= POOL_MAXD, "spatial rank out of range");
  const Acc p = (Acc)geom.p;
  const bool lp = geom.mode == POOL_LP, max = geom.mode == POOL_MAX;
#pragma unroll 1  // grid-stride loop: no trip-count division
  for (I idx = oc::first_index<I>(); idx < (I)geom.total; idx += oc::grid_stride<I>()) {
    I out_pos[R];
    const I plane = oc::unravel<R>(idx, out_pos, [&](int a, I v) {  // n * C + c
      return oc::quotient<I>(v, (I)geom.out_shape[a], geom.by_out_shape[a]);
    }, [&](int a) { return (I)geom.out_shape[a]; });
    const I n = oc::quotient<I>(plane, (I)geom.channels, geom.by_channels);
    I offset = n * (I)geom.stride_n + (plane - n * (I)geom.channels) * (I)geom.stride_c;
    long long index = (long long)plane * geom.plane_size;
    I tap_count[R], tap_jump[R];
    long long index_jump[R];
    Acc count = Acc(1);
#pragma unroll
    for (int a = R - 1; a >= 0; --a) {  // the divisor's product order: last axis first
      const I start = out_pos[a] * (I)geom.step[a] - (I)geom.pad_begin[a];
      const I dilation = (I)geom.dilation[a], taps = (I)geom.kernel[a];
      I first_tap, end_tap;
      oc::tap_range<I>(start, dilation, geom.by_dilation[a], taps, (I)geom.count_begin[a],
                       (I)geom.count_end[a], first_tap, end_tap);
      count *= (Acc)(end_tap - first_tap);
      oc::tap_range<I>(start, dilation, geom.by_dilation[a], taps, (I)0, (I)geom.in_shape[a],
                       first_tap, end_tap);
      tap_count[a] = end_tap - first_tap;
      tap_jump[a] = dilation * (I)geom.in_stride[a];
      index_jump[a] = (long long)dilation * geom.index_stride[a];
      offset += (start + first_tap * dilation) * (I)geom.in_stride[a];
      index += (long long)(start + first_tap * dilation) * geom.index_stride[a];
    }
    Acc acc = max ? oc::max_identity<T, Acc>() : Acc(0);
    long long best = -1;  // MaxPool: the winner's index, -1 while none
    auto add = [&](I at, long long at_index) {
      const Acc v = oc::load<Acc>(x + at);
      if (!max) {
        acc += lp ? oc::lp_term<Acc>(v, p) : v;
      } else if (best < 0 || oc::max_wins<Acc>(v, acc)) {
        acc = v;
        best = at_index;
      }
    };
    oc::for_each_tap<0, R>(offset, index, tap_count, tap_jump, index_jump, add);
    oc::store<Acc>(y + idx, max ? acc : lp ? oc::lp_root<Acc>(acc, p) : acc / count);
    if (geom.indices) indices[idx] = best;
  }
}

// ----------------------------------------------------------------------- the adaptive kernel
// PyTorch's adaptive pooling: output o of an axis of input length n and output length m reads
// the window [floor(o * n / m), ceil((o + 1) * n / m)) of that axis (never empty for n >= 1),
//   average: y = sum over the window / its size
//   max:     y = max over the window (oc::max_wins: the first of equal values, a NaN always, the
//            last NaN), and the optional indices[n, c, o] = the winner's index within its (n, c)
//            plane, row-major over the spatial axes (PyTorch's convention)
// visiting the window as the generic kernel does (axis 0 outermost, taps ascending). The window
// bounds divide by m: by the host's multiply-shift numbers with 32-bit indices (the host checks
// that (o + 1) * n + m - 1 fits an int), by division with 64-bit ones.

struct PoolAdaptiveGeom {
  long long total;     // output elements
  long long channels;  // C
  long long stride_n;  // input element strides of N and C
  long long stride_c;
  long long max;       // 1: the maximum, 0: the average
  long long indices;   // 1: write the winners' indices (max)
  long long in_shape[POOL_MAXD];
  long long in_stride[POOL_MAXD];
  long long out_shape[POOL_MAXD];
  // oc::fast_div divisors of C and the output extents (32-bit indices only)
  unsigned int by_channels[2];
  unsigned int by_out_shape[POOL_MAXD][2];
};

template <typename T, typename Acc, typename I, int R>
__global__ void pool_adaptive(const T* __restrict__ x, T* __restrict__ y,
                              long long* __restrict__ indices, const PoolAdaptiveGeom geom) {
  static_assert(1 <= R && R <= POOL_MAXD, "spatial rank out of range");
  const bool max = geom.max != 0;
#pragma unroll 1  // grid-stride loop: no trip-count division
  for (I idx = oc::first_index<I>(); idx < (I)geom.total; idx += oc::grid_stride<I>()) {
    I out_pos[R];
    auto by_length = [&](int a, I v) {
      return oc::quotient<I>(v, (I)geom.out_shape[a], geom.by_out_shape[a]);
    };
    const I plane = oc::unravel<R>(idx, out_pos, by_length,  // n * C + c
                                   [&](int a) { return (I)geom.out_shape[a]; });
    const I n = oc::quotient<I>(plane, (I)geom.channels, geom.by_channels);
    I offset = n * (I)geom.stride_n + (plane - n * (I)geom.channels) * (I)geom.stride_c;
    I tap_count[R], tap_jump[R];
    long long index_jump[R];
    long long index = 0, step = 1;  // the window's first index in the plane; an axis' index step
    Acc count = Acc(1);
#pragma unroll
    for (int a = R - 1; a >= 0; --a) {  // the divisor's product order: last axis first
      const I length = (I)geom.in_shape[a], out_length = (I)geom.out_shape[a];
      const I start = by_length(a, out_pos[a] * length);
      const I end = by_length(a, (out_pos[a] + 1) * length + out_length - 1);
      tap_count[a] = end - start;
      count *= (Acc)(end - start);
      tap_jump[a] = (I)geom.in_stride[a];
      index_jump[a] = step;
      offset += start * (I)geom.in_stride[a];
      index += (long long)start * step;
      step *= (long long)length;
    }
    Acc acc = max ? oc::max_identity<T, Acc>() : Acc(0);
    long long best = -1;  // the winner's index, -1 while none
    auto add = [&](I at, long long at_index) {
      const Acc v = oc::load<Acc>(x + at);
      if (!max) {
        acc += v;
      } else if (best < 0 || oc::max_wins<Acc>(v, acc)) {
        acc = v;
        best = at_index;
      }
    };
    oc::for_each_tap<0, R>(offset, index, tap_count, tap_jump, index_jump, add);
    oc::store<Acc>(y + idx, max ? acc : acc / count);
    if (geom.indices) indices[idx] = best;
  }
}

// --------------------------------------------------------------------------- the fast kernel
// Each thread owns POOL_OUTPUTS consecutive outputs along the last axis at one outer position
// (grid x: outer output positions x groups of POOL_OUTPUTS, no grid stride) and visits the N*C
// planes in a grid-stride loop over grid y. Its window state (tap ranges, divisors, offsets) is
// computed once, before that loop; the loop body only loads, accumulates in the generic kernel's
// order and stores. Coordinates are ints (the host checks they fit); offsets are unsigned
// oc::offset_of<I> words (offsets of windows that read nothing may wrap), cast to I to address.
// Blocks of OC_BLOCK threads, oc::fast_min_blocks of them resident per SM: POOL_MIN_BLOCKS (64
// registers at most for 4 blocks of 256: occupancy >= 50 % on sm_80/sm_90), one fewer for float64
// with 64-bit offsets (its FP64 division and 64-bit offsets need more registers).

struct PoolFastGeom {
  long long stride_n;      // input element strides of N and C
  long long stride_c;
  long long in_stride[POOL_FAST_MAXD];  // input element strides of the spatial axes
  int planes;              // N * C
  int channels;            // C
  int work;                // threads per plane: outer output positions x groups
  int groups;              // ceil(out_len[R - 1] / POOL_OUTPUTS)
  int out_plane;           // output elements per plane
  unsigned int by_channels[2];  // oc::fast_div divisors of C, groups and (R == 3) out_len[1]
  unsigned int by_groups[2];
  unsigned int by_mid[2];
  int in_len[POOL_FAST_MAXD];
  int out_len[POOL_FAST_MAXD];
  int kernel[POOL_FAST_MAXD];
  int step[POOL_FAST_MAXD];  // ONNX strides
  int dilation[POOL_FAST_MAXD];
  int pad_begin[POOL_FAST_MAXD];
  int count_begin[POOL_FAST_MAXD];  // the divisor counts window positions in [count_begin, count_end)
  int count_end[POOL_FAST_MAXD];
  unsigned int by_dilation[POOL_FAST_MAXD][2];
};

namespace oc {

// Blocks per SM that pool_fast<T, Acc, I, ...> is compiled for.
template <typename Acc, typename I>
constexpr int fast_min_blocks = sizeof(Acc) == 8 && sizeof(I) == 8 ? POOL_MIN_BLOCKS - 1
                                                                   : POOL_MIN_BLOCKS;

// What a pool_fast instantiation computes: AveragePool, LpPool with p = 1 or p = 2, or MaxPool.
enum class PoolMode { average, l1, l2, max };

// The last axis's window of a pool_fast instantiation: read from PoolFastGeom at run time, or
// compiled in (Taps taps at stride Step, dilation 1, unit input stride).
struct RuntimeWindow {
  static constexpr bool fixed = false;
};
template <int Taps, int Step> struct FixedWindow {
  static constexpr bool fixed = true;
  static constexpr int taps = Taps, step = Step;
};

// Taps [first_tap, end_tap) of the window at `start` on axis `a` whose positions
// start + tap * dilation lie in [begin, end) (0 <= first_tap <= end_tap <= taps): by min/max for
// a fixed window, else by multiply-shift division.
template <typename Window>
__device__ __forceinline__ void tap_span(const PoolFastGeom& fast, int a, int start, int begin,
                                         int end, int& first_tap, int& end_tap) {
  if constexpr (Window::fixed) {
    first_tap = imin(Window::taps, imax(begin - start, 0));
    end_tap = imax(first_tap, imin(Window::taps, end - start));
  } else {
    const int dilation = fast.dilation[a], taps = fast.kernel[a];
    first_tap = imin(taps, fast_div(imax(begin - start, 0) + dilation - 1, fast.by_dilation[a]));
    end_tap = imax(first_tap,
                   imin(taps, fast_div(imax(end - start, 0) + dilation - 1, fast.by_dilation[a])));
  }
}

// The ONNX stride of the last axis `a`: compiled in for a fixed window.
template <typename Window>
__device__ __forceinline__ int window_step(const PoolFastGeom& fast, int a) {
  if constexpr (Window::fixed) return Window::step;
  else return fast.step[a];
}

// The generic kernel's start value, term, step and result with p = Mode known at compile time
// (l1: p = 1, l2: p = 2), so lp_term and lp_root fold to |v|, v * v and sqrt. `pool_absent` is
// the term of a column outside X: -0.0 for sums (x + -0.0 == x, also for x = -0.0, the identity
// of IEEE addition), max_identity for MaxPool (it never wins, whatever the taps around it).
template <PoolMode Mode, typename T, typename Acc> __device__ __forceinline__ Acc pool_start() {
  if constexpr (Mode == PoolMode::max) return max_identity<T, Acc>();
  else return Acc(0);
}

template <PoolMode Mode, typename T, typename Acc> __device__ __forceinline__ Acc pool_absent() {
  if constexpr (Mode == PoolMode::max) return max_identity<T, Acc>();
  else return Acc(-0.0);
}

template <PoolMode Mode, typename Acc> __device__ __forceinline__ Acc pool_term(Acc v) {
  if constexpr (Mode == PoolMode::average || Mode == PoolMode::max) return v;
  else return lp_term<Acc>(v, Acc(Mode == PoolMode::l1 ? 1 : 2));
}

template <PoolMode Mode, typename Acc> __device__ __forceinline__ Acc pool_step(Acc acc, Acc t) {
  if constexpr (Mode == PoolMode::max) return max_wins<Acc>(t, acc) ? t : acc;
  else return acc + t;
}

template <PoolMode Mode, typename Acc>
__device__ __forceinline__ Acc pool_finish(Acc s, Acc count) {
  if constexpr (Mode == PoolMode::max) return s;
  else if constexpr (Mode == PoolMode::average) return s / count;
  else return lp_root<Acc>(s, Acc(Mode == PoolMode::l1 ? 1 : 2));
}

// The last-axis taps of a thread's POOL_OUTPUTS outputs (axis `a`, outputs from `first_out` on):
// `add` accumulates one row of them, the plane and the outer taps fixed (row offset `row`), each
// output's taps in ascending order. U: the unsigned offset word.
template <typename Window, typename U> struct LastAxisRow;

// Fixed window: the POOL_OUTPUTS windows span `columns` input columns from `start` on, each
// loaded once into a register (9 loads for the 12 taps of 3 taps at stride 2), a row's loads all
// in flight together (fully unrolled). A column outside the input gives pool_absent (an identity
// of the step), so the results are the generic kernel's, bit for bit.
template <int Taps, int Step, typename U> struct LastAxisRow<FixedWindow<Taps, Step>, U> {
  static constexpr int columns = (POOL_OUTPUTS - 1) * Step + Taps;
  int start, in_len;
  U first_column;  // offset of column `start` from the plane's row
  bool inside;     // every column inside the input: no predicates

  __device__ __forceinline__ LastAxisRow(const PoolFastGeom& fast, int a, int first_out,
                                         U row_begin)
      : start(first_out * Step - fast.pad_begin[a]), in_len(fast.in_len[a]),
        first_column(row_begin + (U)start), inside(start >= 0 && start <= in_len - columns) {}

  template <PoolMode Mode, typename I, typename T, typename Acc>
  __device__ __forceinline__ void add(const T* __restrict__ x, U row,
                                      Acc (&acc)[POOL_OUTPUTS]) const {
    const T* at = x + (I)(row + first_column);
    Acc term[columns];
    if (inside) {
#pragma unroll
      for (int c = 0; c < columns; ++c) term[c] = pool_term<Mode>(load<Acc>(at + c));
    } else {
#pragma unroll
      for (int c = 0; c < columns; ++c)
        term[c] = (unsigned int)(start + c) < (unsigned int)in_len
                      ? pool_term<Mode>(load<Acc>(at + c)) : pool_absent<Mode, T, Acc>();
    }
#pragma unroll
    for (int v = 0; v < POOL_OUTPUTS; ++v)
#pragma unroll
      for (int tap = 0; tap < Taps; ++tap)
        acc[v] = pool_step<Mode>(acc[v], term[v * Step + tap]);
  }
};

// Runtime window: output v reads taps [first_tap[v], first_tap[v] + tap_count[v]) at offsets
// window_at[v] + tap * tap_jump. One tap loop serves the POOL_OUTPUTS outputs (independent
// loads per iteration), without predicates where every output reads every tap.
template <typename U> struct LastAxisRow<RuntimeWindow, U> {
  int first_tap[POOL_OUTPUTS], tap_count[POOL_OUTPUTS];
  int union_first;   // the outputs' taps together: [union_first, union_end), [0, kernel) where
  int union_end = 0;  // every output reads every tap
  U tap_jump;        // dilation * input stride
  U window_at[POOL_OUTPUTS];  // offset of output v's tap 0 from the plane's row
  bool inside = true;  // the group's outputs all exist and read every tap

  __device__ __forceinline__ LastAxisRow(const PoolFastGeom& fast, int a, int first_out,
                                         U row_begin)
      : union_first(fast.kernel[a]),
        tap_jump((U)fast.dilation[a] * (U)fast.in_stride[a]) {
#pragma unroll
    for (int v = 0; v < POOL_OUTPUTS; ++v) {
      const int start =
          imin(first_out + v, fast.out_len[a] - 1) * fast.step[a] - fast.pad_begin[a];
      int first, end;
      tap_span<RuntimeWindow>(fast, a, start, 0, fast.in_len[a], first, end);
      if (first_out + v >= fast.out_len[a]) end = first;  // past the row's end: nothing to read
      first_tap[v] = first;
      tap_count[v] = end - first;
      window_at[v] = row_begin + (U)start * (U)fast.in_stride[a];
      if (end > first) {
        union_first = imin(union_first, first);
        union_end = imax(union_end, end);
      }
      inside &= tap_count[v] == fast.kernel[a];
    }
  }

  template <PoolMode Mode, typename I, typename T, typename Acc>
  __device__ __forceinline__ void add(const T* __restrict__ x, U row,
                                      Acc (&acc)[POOL_OUTPUTS]) const {
    if (inside) {
      U tap_at = row;
#pragma unroll 1
      for (int tap = 0; tap < union_end; ++tap, tap_at += tap_jump) {
#pragma unroll
        for (int v = 0; v < POOL_OUTPUTS; ++v)
          acc[v] = pool_step<Mode>(acc[v],
                                   pool_term<Mode>(load<Acc>(x + (I)(tap_at + window_at[v]))));
      }
    } else {
#pragma unroll 1
      for (int tap = union_first; tap < union_end; ++tap) {
        const U tap_at = row + (U)tap * tap_jump;
#pragma unroll
        for (int v = 0; v < POOL_OUTPUTS; ++v)
          if ((unsigned int)(tap - first_tap[v]) < (unsigned int)tap_count[v])
            acc[v] = pool_step<Mode>(acc[v],
                                     pool_term<Mode>(load<Acc>(x + (I)(tap_at + window_at[v]))));
      }
    }
  }
};

}  // namespace oc

template <typename T, typename Acc, typename I, oc::PoolMode Mode, int R, typename Window>
__global__ void __launch_bounds__(OC_BLOCK, oc::fast_min_blocks<Acc, I>)
pool_fast(const T* __restrict__ x, T* __restrict__ y, const PoolFastGeom fast) {
  static_assert(1 <= R && R <= POOL_FAST_MAXD, "pool_fast serves 1 .. POOL_FAST_MAXD spatial axes");
  using U = typename oc::offset_of<I>::type;
  constexpr int L = R - 1;  // the last spatial axis
  constexpr int V = POOL_OUTPUTS;
  const int thread = blockIdx.x * blockDim.x + threadIdx.x;
  if (thread >= fast.work) return;
  const int row = oc::fast_div(thread, fast.by_groups);  // outer output position, row-major
  const int first_out = (thread - row * fast.groups) * V;
  constexpr int OUTER = L > 0 ? L : 1;  // the outer axes (one unused slot where there is none)
  int out_pos[OUTER];
  out_pos[0] = oc::unravel<OUTER, 1>(row, out_pos, [&](int, int v) {
    return oc::fast_div(v, fast.by_mid);  // by out_len[1], the one extent divided (R == 3)
  }, [&](int a) { return fast.out_len[a]; });
  // Outer axes: their taps as (count, jump) pairs, absent axes one tap.
  int tap_count[POOL_FAST_MAXD - 1] = {1, 1}, counted[POOL_FAST_MAXD - 1] = {1, 1};
  U tap_jump[POOL_FAST_MAXD - 1] = {0, 0};
  U row_begin = 0;  // offset of the outer axes' first taps in a plane
#pragma unroll
  for (int a = 0; a < L; ++a) {
    const int start = out_pos[a] * fast.step[a] - fast.pad_begin[a];
    int first_tap, end_tap, first_counted, end_counted;
    oc::tap_span<oc::RuntimeWindow>(fast, a, start, 0, fast.in_len[a], first_tap, end_tap);
    oc::tap_span<oc::RuntimeWindow>(fast, a, start, fast.count_begin[a], fast.count_end[a],
                                    first_counted, end_counted);
    tap_count[a] = end_tap - first_tap;
    counted[a] = end_counted - first_counted;
    tap_jump[a] = (U)fast.dilation[a] * (U)fast.in_stride[a];
    row_begin += (U)(start + first_tap * fast.dilation[a]) * (U)fast.in_stride[a];
  }
  const oc::LastAxisRow<Window, U> last_axis(fast, L, first_out, row_begin);
  Acc count[V];
#pragma unroll
  for (int v = 0; v < V; ++v) {
    const int start = oc::imin(first_out + v, fast.out_len[L] - 1)
                      * oc::window_step<Window>(fast, L) - fast.pad_begin[L];
    int first_counted, end_counted;
    oc::tap_span<Window>(fast, L, start, fast.count_begin[L], fast.count_end[L], first_counted,
                         end_counted);
    count[v] = (Acc)(end_counted - first_counted);  // the generic kernel's order: last axis first
#pragma unroll
    for (int a = L - 1; a >= 0; --a) count[v] *= (Acc)counted[a];
  }
  const int y_row = row * fast.out_len[L] + first_out;
#pragma unroll 1
  for (int plane = blockIdx.y * blockDim.y + threadIdx.y; plane < fast.planes;
       plane += blockDim.y * gridDim.y) {  // plane = n * C + c
    const int n = oc::fast_div(plane, fast.by_channels);
    const U plane_at = (U)n * (U)fast.stride_n + (U)(plane - n * fast.channels) * (U)fast.stride_c;
    Acc acc[V];
#pragma unroll
    for (int v = 0; v < V; ++v) acc[v] = oc::pool_start<Mode, T, Acc>();
#pragma unroll 1
    for (int tap0 = 0; tap0 < tap_count[0]; ++tap0)
#pragma unroll 1
      for (int tap1 = 0; tap1 < tap_count[1]; ++tap1)
        last_axis.template add<Mode, I>(
            x, plane_at + (U)tap0 * tap_jump[0] + (U)tap1 * tap_jump[1], acc);
    T* out = y + ((I)plane * (I)fast.out_plane + (I)y_row);
#pragma unroll
    for (int v = 0; v < V; ++v)
      if (first_out + v < fast.out_len[L])
        oc::store<Acc>(out + v, oc::pool_finish<Mode>(acc[v], count[v]));
  }
}

// ------------------------------------------------------------------------- the global kernel
// GlobalAveragePool, GlobalLpPool, GlobalMaxPool: y[n, c] reduces the whole spatial plane,
//   average: sum x / length,  Lp: (sum |x|^p)^(1/p),  max: as MaxPool's window over the plane
// (PoolGlobalGeom::mode: POOL_AVERAGE, POOL_LP or POOL_MAX). A block of OC_BLOCK threads per
// plane (grid-stride over the N*C planes), in one fixed order that the NumPy path
// (onnx_cupy.pool.numpy) repeats operation for operation, so both give the same bits:
//   1. lanes: thread t folds the elements i = t, t + OC_BLOCK, ... of the plane (its lane; the
//      plane's spatial axes walk with one element stride `step`, the host checks) in segments
//      of POOL_SEGMENT consecutive lane elements: each segment folded in Acc from +0 (from
//      max_identity for the maximum), in order, then folded into the lane's double, in order;
//   2. warps: each warp folds its 32 lanes' doubles by xor shuffles of distance 1, 2, 4, ...,
//      16 (lane i with lane i ^ d: a sum is commutative, so both lanes hold the same value);
//   3. thread 0 folds the warps' results in warp order, then divides by the length (or takes
//      the Lp root) in double and rounds once to T.
// A float segment adds at most POOL_SEGMENT terms (as NumPy's own pairwise float sums, whose 8
// accumulators add 16 terms each) and everything after is double, so the error stays within
// about POOL_SEGMENT float roundings of the sum of |terms| however long the plane (a float
// lane of 2^23 terms of 1.5 would end 11 % too large). Bandwidth-bound: every element is read
// once, consecutive threads read consecutive elements; one double addition per segment, not
// per element, keeps GPUs with little FP64 throughput bandwidth-bound too.

struct PoolGlobalGeom {
  long long planes;    // N * C
  long long channels;  // C
  long long stride_n;  // input element strides of N and C
  long long stride_c;
  long long length;    // elements per plane
  long long step;      // element stride of the plane's walk
  long long mode;      // POOL_AVERAGE, POOL_LP or POOL_MAX
  double p;
};

namespace oc {

// Two partial results of a plane's reduction, folded: sums add, maxima as oc::max_wins decides.
template <typename Acc> __device__ __forceinline__ Acc fold(Acc a, Acc b, bool max) {
  return max ? (max_wins<Acc>(b, a) ? b : a) : a + b;
}

}  // namespace oc

template <typename T, typename Acc, typename I>
__global__ void __launch_bounds__(OC_BLOCK)
pool_global(const T* __restrict__ x, T* __restrict__ y, const PoolGlobalGeom g) {
  __shared__ double partial[OC_BLOCK / OC_WARP];
  const bool lp = g.mode == POOL_LP, max = g.mode == POOL_MAX;
  const Acc p = (Acc)g.p, start = max ? oc::max_identity<T, Acc>() : Acc(0);
  const unsigned int t = threadIdx.x;
#pragma unroll 1
  for (I plane = (I)blockIdx.x; plane < (I)g.planes; plane += (I)gridDim.x) {
    const I n = plane / (I)g.channels;
    const T* at = x + n * (I)g.stride_n + (plane - n * (I)g.channels) * (I)g.stride_c;
    double lane = (double)start;
#pragma unroll 1
    for (I i = (I)t; i < (I)g.length;) {
      Acc segment = start;
#pragma unroll 1
      for (int j = 0; j < POOL_SEGMENT && i < (I)g.length; ++j, i += (I)OC_BLOCK) {
        const Acc v = oc::load<Acc>(at + i * (I)g.step);
        segment = oc::fold<Acc>(segment, lp ? oc::lp_term<Acc>(v, p) : v, max);
      }
      lane = oc::fold<double>(lane, (double)segment, max);
    }
#pragma unroll
    for (int d = 1; d < OC_WARP; d <<= 1)
      lane = oc::fold<double>(lane, __shfl_xor_sync(0xFFFFFFFFu, lane, d), max);
    if (t % OC_WARP == 0) partial[t / OC_WARP] = lane;
    __syncthreads();
    if (t == 0) {
      double r = partial[0];
#pragma unroll 1
      for (int w = 1; w < OC_BLOCK / OC_WARP; ++w) r = oc::fold<double>(r, partial[w], max);
      oc::store<double>(y + plane, max ? r : lp ? oc::lp_root<double>(r, g.p)
                                                : r / (double)g.length);
    }
    __syncthreads();  // partial is reused by the next plane
  }
}

// ------------------------------------------------------------------------------ the gradients
// The vector-Jacobian products of the pools, dY in, dX out (onnx_cupy.pool.numpy_grad has the
// formulas): one thread per input element gathers, in row-major order of the outputs o whose
// window holds it, from +0 in Acc, the terms
//   AveragePool: dY[o] / D(o) (the window's count, or PyTorch's divisor_override: `divisor`)
//   LpPool:      dY[o] / Y[o]^(p-1), 0 where Y[o] = 0; the sum then times sign(x) |x|^(p-1)
//   MaxPool:     dY[o] where Indices[o] names this element
// and stores the sum rounded once. No floating-point atomics: each dX element is one thread's
// sum in a fixed order, PyTorch's CPU order (outputs ascending), the NumPy path's too.

struct PoolGradGeom {
  long long total;     // input elements (dX's)
  long long channels;  // C
  long long stride_n;  // X's element strides of N and C (LpPool reads X)
  long long stride_c;
  long long mode;      // POOL_AVERAGE, POOL_LP or POOL_MAX
  long long divisor;   // AveragePool: PyTorch's divisor_override, 0 for each window's count
  long long plane_size;  // input elements per (n, c) plane: the indices' plane step
  long long out_plane;   // output elements per (n, c) plane
  long long in_shape[POOL_MAXD];
  long long in_stride[POOL_MAXD];
  long long out_shape[POOL_MAXD];
  long long out_stride[POOL_MAXD];   // dY's element strides in a plane (C order)
  long long kernel[POOL_MAXD];
  long long step[POOL_MAXD];
  long long dilation[POOL_MAXD];
  long long pad_begin[POOL_MAXD];
  long long count_begin[POOL_MAXD];
  long long count_end[POOL_MAXD];
  long long index_stride[POOL_MAXD];
  double p;
};

namespace oc {

// LpPool's share of output o: dY / Y^(p-1), 0 where Y = 0 (the norm's subgradient there).
template <typename Acc> __device__ __forceinline__ Acc lp_share(Acc d, Acc y, Acc p) {
  if (y == Acc(0)) return Acc(0);
  if (p == Acc(1)) return d;
  if (p == Acc(2)) return d / y;
  return d / pow(y, p - Acc(1));
}

// LpPool's factor of input element x: sign(x) |x|^(p-1), 0 at x = 0 (x itself for p = 2).
template <typename Acc> __device__ __forceinline__ Acc lp_factor(Acc x, Acc p) {
  if (p == Acc(2)) return x;
  if (x == Acc(0)) return Acc(0);
  const Acc sign = x > Acc(0) ? Acc(1) : x < Acc(0) ? Acc(-1) : x;  // NaN stays NaN
  if (p == Acc(1)) return sign;
  return sign * pow(fabs(x), p - Acc(1));
}

// Visits the outputs o whose window holds the input element at `w`, row-major (axis A
// outermost, ascending): along axis a, tap j of output o lands on o * step - pad_begin +
// j * dilation, so the taps descending give the outputs ascending. `at` is o's offset in dY so
// far, `count` the product of its window's counted taps so far (with `counting`).
template <int A, int R, typename I, typename Visit>
__device__ __forceinline__ void for_each_window(const PoolGradGeom& g, const I (&w)[R], I at,
                                                long long count, bool counting, Visit& visit) {
  if constexpr (A == R) {
    visit(at, count);
  } else {
    const I step = (I)g.step[A], dilation = (I)g.dilation[A], taps = (I)g.kernel[A];
    const I reach = w[A] + (I)g.pad_begin[A];
#pragma unroll 1
    for (I j = taps - 1; j >= 0; --j) {
      const I from = reach - j * dilation;  // o * step
      if (from < 0) continue;
      const I o = from / step;
      if (o >= (I)g.out_shape[A]) break;
      if (o * step != from) continue;
      long long counted = 1;
      if (counting) {  // the taps of o's window in [count_begin, count_end)
        const I start = from - (I)g.pad_begin[A];
        const I first = ceil_div<I>(imax<I>((I)g.count_begin[A] - start, 0), dilation);
        const I end = imin<I>(taps, ceil_div<I>(imax<I>((I)g.count_end[A] - start, 0),
                                                 dilation));
        counted = (long long)imax<I>(end - first, 0);
      }
      for_each_window<A + 1, R>(g, w, at + o * (I)g.out_stride[A], count * counted, counting,
                                visit);
    }
  }
}

}  // namespace oc

template <typename T, typename Acc, typename I, int R>
__global__ void pool_grad(const T* __restrict__ x, const T* __restrict__ dy,
                          const T* __restrict__ y, const long long* __restrict__ indices,
                          T* __restrict__ dx, const PoolGradGeom geom) {
  static_assert(1 <= R && R <= POOL_MAXD, "spatial rank out of range");
  const long long mode = geom.mode;
  const bool counting = mode == POOL_AVERAGE && geom.divisor == 0;
  const Acc p = (Acc)geom.p;
#pragma unroll 1  // grid-stride loop: no trip-count division
  for (I idx = oc::first_index<I>(); idx < (I)geom.total; idx += oc::grid_stride<I>()) {
    I w[R];
    const I plane = oc::unravel<R>(idx, w, [&](int a, I v) { return v / (I)geom.in_shape[a]; },
                                   [&](int a) { return (I)geom.in_shape[a]; });
    long long index = (long long)plane * geom.plane_size;  // this element's MaxPool index
#pragma unroll
    for (int a = 0; a < R; ++a) index += (long long)w[a] * geom.index_stride[a];
    Acc sum = Acc(0);
    auto add = [&](I at, long long count) {
      const Acc d = oc::load<Acc>(dy + at);
      if (mode == POOL_MAX) {
        if (indices[at] == index) sum += d;
      } else if (mode == POOL_LP) {
        sum += oc::lp_share<Acc>(d, oc::load<Acc>(y + at), p);
      } else {
        sum += d / (Acc)(counting ? count : geom.divisor);
      }
    };
    oc::for_each_window<0, R>(geom, w, plane * (I)geom.out_plane, 1LL, counting, add);
    if (mode == POOL_LP) {
      const I n = plane / (I)geom.channels;
      I offset = n * (I)geom.stride_n + (plane - n * (I)geom.channels) * (I)geom.stride_c;
#pragma unroll
      for (int a = 0; a < R; ++a) offset += w[a] * (I)geom.in_stride[a];
      sum = sum * oc::lp_factor<Acc>(oc::load<Acc>(x + offset), p);
    }
    oc::store<Acc>(dx + idx, sum);
  }
}

// PyTorch's adaptive pooling's gradient: output o of an axis of input length n and output length
// m holds the elements [floor(o n / m), ceil((o + 1) n / m)), so element w is in the windows of
// o in [floor(w m / n), ceil((w + 1) m / n)); the terms, outputs ascending row-major:
//   average: dY[o] / len_1(o) / ... / len_R(o)  (each division rounded, PyTorch's order)
//   max:     dY[o] where Indices[o] (within the plane, row-major) names this element

struct PoolAdaptiveGradGeom {
  long long total;     // input elements (dX's)
  long long max;       // 1: the maximum's gradient, 0: the average's
  long long out_plane;   // output elements per (n, c) plane
  long long in_shape[POOL_MAXD];
  long long out_shape[POOL_MAXD];
  long long out_stride[POOL_MAXD];   // dY's element strides in a plane (C order)
  long long plane_stride[POOL_MAXD]; // the input plane's row-major strides (the indices')
};

namespace oc {

// Visits the outputs o whose adaptive window holds the input element at `w`, row-major (axis A
// outermost, ascending); `at` is o's offset in dY so far, length[a] its window's length along
// axis a.
template <int A, int R, typename I, typename Visit>
__device__ __forceinline__ void for_each_adaptive(const PoolAdaptiveGradGeom& g,
                                                  const I (&w)[R], I at, I (&length)[R],
                                                  Visit& visit) {
  if constexpr (A == R) {
    visit(at);
  } else {
    const I n = (I)g.in_shape[A], m = (I)g.out_shape[A];
    const I first = w[A] * m / n, end = ((w[A] + 1) * m + n - 1) / n;
#pragma unroll 1
    for (I o = first; o < end; ++o) {
      length[A] = ((o + 1) * n + m - 1) / m - o * n / m;
      for_each_adaptive<A + 1, R>(g, w, at + o * (I)g.out_stride[A], length, visit);
    }
  }
}

}  // namespace oc

template <typename T, typename Acc, typename I, int R>
__global__ void pool_adaptive_grad(const T* __restrict__ dy,
                                   const long long* __restrict__ indices, T* __restrict__ dx,
                                   const PoolAdaptiveGradGeom geom) {
  static_assert(1 <= R && R <= POOL_MAXD, "spatial rank out of range");
  const bool max = geom.max != 0;
#pragma unroll 1  // grid-stride loop: no trip-count division
  for (I idx = oc::first_index<I>(); idx < (I)geom.total; idx += oc::grid_stride<I>()) {
    I w[R], length[R];
    const I plane = oc::unravel<R>(idx, w, [&](int a, I v) { return v / (I)geom.in_shape[a]; },
                                   [&](int a) { return (I)geom.in_shape[a]; });
    long long index = 0;  // this element's index within its plane
#pragma unroll
    for (int a = 0; a < R; ++a) index += (long long)w[a] * geom.plane_stride[a];
    Acc sum = Acc(0);
    auto add = [&](I at) {
      Acc d = oc::load<Acc>(dy + at);
      if (max) {
        if (indices[at] == index) sum += d;
      } else {
#pragma unroll
        for (int a = 0; a < R; ++a) d = d / (Acc)length[a];
        sum += d;
      }
    };
    oc::for_each_adaptive<0, R>(geom, w, plane * (I)geom.out_plane, length, add);
    oc::store<Acc>(dx + idx, sum);
  }
}
