// GridSample and AffineGrid (the formulas: onnx_cupy.grid.plan).
//
// GridSample: Y[n, c, o] samples X[n, c] at the normalized position grid[n, o]. A thread takes
// one batch item and one chunk of channels (grid y, then z: n * chunks + chunk) and walks the
// output positions o of that item in a grid-stride loop over grid x: per position it reads the
// grid's r coordinates once, resolves per spatial axis the taps (input offsets, validity) and
// weights, then loops over its channels, one output each. Kernels, and when the host
// (onnx_cupy.grid.kernel) picks each:
//   grid_sample_fast      2-D linear or nearest (MODE), each padding mode (PAD), X and grid of one
//                         float dtype, the grid's output positions walked by one stride;
//   grid_sample_weighted  linear and cubic, every other case: 1 to GRID_MAXR spatial axes, the
//                         rank, taps, padding and the grid's storage type read at run time;
//   grid_sample_nearest   nearest, every other case and every fixed-size dtype of X (moved as
//                         gs::element<bytes>).
// Template parameters: T X's storage type, Acc the sum's type (float for 16/32-bit floats, double
// otherwise), F the coordinates' type (float, or double for float64 grids), I the index type (int
// where every offset fits 32 bits, else long long). Per-axis state lives in arrays indexed by
// constants only (a store for a runtime axis compares it with every slot; a tap of a runtime
// count is picked by selects), so no kernel uses local memory.
//
// AffineGrid: one thread per output position (grid-stride loop over N * positions), writing its
// R coordinates.
#include "common.cuh"

// Defined by the loader from onnx_cupy.grid.kernel: GRID_MAXR, the most spatial axes;
// GRID_AXIS_CONSTANTS, the constants per axis in GridSampleGeom;
// GRID_ZEROS, GRID_BORDER, GRID_REFLECTION, the padding modes' codes; GRID_HALF, GRID_BF16,
// GRID_FLOAT, GRID_DOUBLE, the grid's storage codes; GRID_CUBIC_A, the cubic kernel's a;
// GRID_FAST_MIN_BLOCKS and GRID_GENERIC_MIN_BLOCKS, the blocks of OC_BLOCK threads per SM the
// fast and the generic kernels' registers must allow (the __launch_bounds__).
#if !defined(GRID_MAXR) || !defined(GRID_AXIS_CONSTANTS) || !defined(GRID_ZEROS) || \
    !defined(GRID_BORDER) || !defined(GRID_REFLECTION) || !defined(GRID_HALF) || \
    !defined(GRID_BF16) || !defined(GRID_FLOAT) || !defined(GRID_DOUBLE) || \
    !defined(GRID_CUBIC_A) || !defined(GRID_FAST_MIN_BLOCKS) || !defined(GRID_GENERIC_MIN_BLOCKS)
#error "compile through onnx_cupy.core.loader, which defines GRID_MAXR, GRID_AXIS_CONSTANTS, GRID_ZEROS, GRID_BORDER, GRID_REFLECTION, GRID_HALF, GRID_BF16, GRID_FLOAT, GRID_DOUBLE, GRID_CUBIC_A, GRID_FAST_MIN_BLOCKS, GRID_GENERIC_MIN_BLOCKS"
#endif

// One GridSample call. Spatial axis d (0: the outermost, D1) of X has length[d] and element
// stride x_stride[d], and takes component rank - 1 - d of the grid's last axis. The grid's output
// axes have out_shape[d] and element stride grid_stride[d] (the fast kernel walks them as one,
// grid_stride_p).
struct GridSampleGeom {
  long long points;        // output positions per batch item
  long long channels;
  long long chunk;         // channels per thread
  long long chunks;        // chunks per batch item
  long long items;         // batch items * chunks
  long long rank;
  long long taps;          // per axis: 2 (linear) or 4 (cubic)
  long long padding;       // GRID_ZEROS, GRID_BORDER or GRID_REFLECTION
  long long pad_first;     // nearest: pad, then round (PyTorch's order)
  long long grid_kind;     // the grid's storage: GRID_HALF, GRID_BF16, GRID_FLOAT, GRID_DOUBLE
  long long x_stride_n, x_stride_c;
  long long grid_stride_n, grid_stride_k, grid_stride_p;
  long long out_shape[GRID_MAXR];
  long long grid_stride[GRID_MAXR];
  long long length[GRID_MAXR];
  long long x_stride[GRID_MAXR];
  // per spatial axis d, entries GRID_AXIS_CONSTANTS d + j: scale, shift, half, lo, hi, last (n -
  // 1), addend, fold of onnx_cupy.grid.plan.Axis, in float and in double (the kernel reads its
  // coordinate type's)
  float axis_f[GRID_AXIS_CONSTANTS * GRID_MAXR];
  double axis_d[GRID_AXIS_CONSTANTS * GRID_MAXR];
};

namespace gs {

// An element of BYTES bytes, moved unchanged: nearest serves every dtype of a size with one type.
template <int BYTES> struct alignas(BYTES < 8 ? BYTES : 8) element {
  unsigned char b[BYTES];
};

// The fast kernel's modes, and the padding modes (the host's codes).
enum sampling { NEAREST, LINEAR };
enum padding { ZEROS = GRID_ZEROS, BORDER = GRID_BORDER, REFLECTION = GRID_REFLECTION };

// Arithmetic of the coordinates per type: rounded operation by operation (oc::rn: the products
// and sums of a coordinate are never fused into a multiply-add) except where fma_ says so, so it
// is the same number on every path. F's math functions carry the suffix S (f for float).
#if defined(__CUDA_ARCH__)
#define GS_FMA(S, a, b, c) __fma##S##_rn(a, b, c)
#else
#define GS_FMA(S, a, b, c) std::fma(a, b, c)
#endif
template <typename F> struct fmath;
#define GS_FMATH(F, S)                                                                     \
  template <> struct fmath<F> : oc::rn<F> {                                                \
    static __device__ __forceinline__ F abs_(F v) { return fabs##S(v); }                   \
    static __device__ __forceinline__ F trunc_(F v) { return trunc##S(v); }                \
    static __device__ __forceinline__ F fma_(F a, F b, F c) { return GS_FMA(S, a, b, c); } \
    static __device__ __forceinline__ F floor_(F v) { return floor##S(v); }                \
    static __device__ __forceinline__ F rint_(F v) { return rint##S(v); }                  \
    static __device__ __forceinline__ F mod(F a, F b) { return fmod##S(a, b); }            \
    static __device__ __forceinline__ F min_(F a, F b) { return fmin##S(a, b); }           \
    static __device__ __forceinline__ F max_(F a, F b) { return fmax##S(a, b); }           \
  };
GS_FMATH(float, f)
GS_FMATH(double, )
#undef GS_FMATH

// One spatial axis in the coordinate type: x = (fma(g + 1, scale, addend) - shift) * half, the
// image [lo, hi], its last position (n - 1): the host's constants (onnx_cupy.grid.plan.Axis).
template <typename F> __device__ F constant(const GridSampleGeom& g, int i);
template <> __device__ __forceinline__ float constant<float>(const GridSampleGeom& g, int i) {
  return g.axis_f[i];
}
template <> __device__ __forceinline__ double constant<double>(const GridSampleGeom& g, int i) {
  return g.axis_d[i];
}

template <typename F> struct axis {
  F scale, shift, half, lo, hi, last, addend, fold;

  __device__ __forceinline__ axis(const GridSampleGeom& g, int d) {
    const int at = GRID_AXIS_CONSTANTS * d;
    scale = constant<F>(g, at);
    shift = constant<F>(g, at + 1);
    half = constant<F>(g, at + 2);
    lo = constant<F>(g, at + 3);
    hi = constant<F>(g, at + 4);
    last = constant<F>(g, at + 5);
    addend = constant<F>(g, at + 6);
    fold = constant<F>(g, at + 7);
  }

  // The pixel coordinate of grid value v.
  __device__ __forceinline__ F coordinate(F v) const {
    using M = fmath<F>;
    return M::mul(M::sub(M::fma_(M::add(v, F(1)), scale, addend), shift), half);
  }
  // x clipped to [0, n - 1]; NaN to 0.
  __device__ __forceinline__ F clip(F x) const {
    return fmath<F>::min_(fmath<F>::max_(x, F(0)), last);
  }
  // x outside [lo, hi] reflected at lo and hi until inside, then clipped. Exactly: fmod by the
  // period 2 (hi - lo) is exact, and so are the period added or taken away and the one mirror
  // image that follow (each a difference of numbers within a factor of 2, or one that shrinks).
  // With `fold` (PyTorch's 2-D kernel, onnx_cupy.grid.plan.Axis.fold): e = |x - lo| modulo the
  // period, x = min(e, period - e) + lo, each step rounded, inside the image too.
  __device__ __forceinline__ F reflect(F x) const {
    using M = fmath<F>;
    if (fold != F(0)) {
      const F span = hi - lo, period = span + span, a = M::abs_(M::sub(x, lo));
      const F e = M::sub(a, M::mul(M::trunc_(M::div(a, period)), period));
      x = M::add(M::min_(e, M::sub(period, e)), lo);
    } else if (x < lo || x > hi) {
      const F span = hi - lo, period = span + span;
      F m = fmath<F>::mod(x, period);
      m = m < lo - span ? m + period : m > hi + span ? m - period : m;
      x = m < lo ? (lo + lo) - m : m > hi ? (hi + hi) - m : m;
    }
    return clip(x);
  }
  __device__ __forceinline__ F pad(F x, int padding) const {
    if (padding == GRID_BORDER) return clip(x);
    if (padding == GRID_REFLECTION) return reflect(x);
    return x;
  }
  __device__ __forceinline__ bool inside(F p) const { return p >= F(0) && p <= last; }
  // The nearest position of coordinate x (integer-valued), rounding before or after padding.
  __device__ __forceinline__ F nearest(F x, int padding, bool pad_first) const {
    return pad_first ? fmath<F>::rint_(pad(x, padding)) : pad(fmath<F>::rint_(x), padding);
  }
};

// The Keys cubic weights of the taps at -1, 0, 1, 2 from floor(x), t = x - floor(x).
template <typename F> __device__ __forceinline__ void cubic(F t, F (&w)[4]) {
  const F a = F(GRID_CUBIC_A);
  const F p = t + F(1), q = F(1) - t, r = F(2) - t;
  w[0] = ((a * p - F(5) * a) * p + F(8) * a) * p - F(4) * a;
  w[1] = ((a + F(2)) * t - (a + F(3))) * t * t + F(1);
  w[2] = ((a + F(2)) * q - (a + F(3))) * q * q + F(1);
  w[3] = ((a * r - F(5) * a) * r + F(8) * a) * r - F(4) * a;
}

// The grid value at `offset` of a grid stored as `kind`, in the coordinate type.
template <typename F> struct grid_value;
template <> struct grid_value<float> {
  template <typename I>
  static __device__ __forceinline__ float at(const void* grid, I offset, int kind) {
    if (kind == GRID_FLOAT) return static_cast<const float*>(grid)[offset];
    const unsigned short bits = static_cast<const unsigned short*>(grid)[offset];
    return kind == GRID_HALF ? oc::half_to_float(bits) : oc::bf16_to_float(bits);
  }
};
template <> struct grid_value<double> {
  template <typename I>
  static __device__ __forceinline__ double at(const void* grid, I offset, int) {
    return static_cast<const double*>(grid)[offset];
  }
};

// Entry t (a runtime value below 4) of a per-tap array, by selects: the array stays in registers.
template <typename V> __device__ __forceinline__ V pick(const V (&a)[4], int t) {
  return t == 0 ? a[0] : t == 1 ? a[1] : t == 2 ? a[2] : a[3];
}

// This thread's batch item and channels [first, end): grid y and z (false past the last).
template <typename I> struct channels {
  I n, first, end;

  __device__ __forceinline__ bool locate(const GridSampleGeom& g) {
    const I item = (I)blockIdx.z * (I)gridDim.y + (I)blockIdx.y;
    if (item >= (I)g.items) return false;
    n = item / (I)g.chunks;
    first = (item - n * (I)g.chunks) * (I)g.chunk;
    end = oc::imin<I>(first + (I)g.chunk, (I)g.channels);
    return true;
  }
};

// The grid offset of output position p (the output axes unravelled, rank at run time).
template <typename I> __device__ __forceinline__ I grid_offset(const GridSampleGeom& g, I p) {
  I offset = 0;
#pragma unroll 1
  for (int d = (int)g.rank - 1; d >= 0; --d) {
    const I rest = p / (I)g.out_shape[d];
    offset += (p - rest * (I)g.out_shape[d]) * (I)g.grid_stride[d];
    p = rest;
  }
  return offset;
}

// The taps of one output position: per spatial axis d (a runtime value: each store compares it
// with every slot, so the arrays stay in registers) the taps' weights and input offsets, and in
// bit 4 d + k whether tap k of axis d lies inside X.
template <typename Acc, typename I> struct taps {
  Acc weight[GRID_MAXR][4];
  I offset[GRID_MAXR][4];
  unsigned int valid;

  __device__ __forceinline__ void set(int d, const Acc (&w)[4], const I (&o)[4]) {
#pragma unroll
    for (int e = 0; e < GRID_MAXR; ++e) {
      if (e == d) {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
          weight[e][k] = w[k];
          offset[e][k] = o[k];
        }
      }
    }
  }
};

// The weighted sum over the taps of axes L and after, innermost first (each axis' taps
// ascending), of the taps `offset` from x, all valid so far where `valid`; an invalid tap reads 0.
template <int L> struct walk {
  template <typename T, typename Acc, typename I>
  static __device__ __forceinline__ Acc sum(const T* __restrict__ x, const taps<Acc, I>& at,
                                            int rank, int count, I offset, bool valid) {
    if (L == rank) return valid ? oc::load<Acc>(x + offset) : Acc(0);
    Acc acc = -Acc(0);  // the identity of IEEE addition
#pragma unroll 1
    for (int t = 0; t < count; ++t) {
      const Acc inner = walk<L + 1>::sum(x, at, rank, count, offset + pick(at.offset[L], t),
                                         valid && ((at.valid >> (4 * L + t)) & 1u));
      acc = acc + pick(at.weight[L], t) * inner;
    }
    return acc;
  }
};
template <> struct walk<GRID_MAXR> {
  template <typename T, typename Acc, typename I>
  static __device__ __forceinline__ Acc sum(const T* __restrict__ x, const taps<Acc, I>&, int,
                                            int, I offset, bool valid) {
    return valid ? oc::load<Acc>(x + offset) : Acc(0);
  }
};

// A sum in the storage type (oc::result); NaN (from a NaN coordinate) is 0 in integer types.
template <typename T, typename Acc> __device__ __forceinline__ T stored(Acc v) {
  if constexpr (oc::int_range<T>::value) {
    if (v != v) v = Acc(0);
  }
  return oc::result<T, Acc>::from(v);
}

// A position (integer-valued) as an index: clamped first, so that NaN and the infinities convert
// to a value too (positions outside X are never read).
template <typename I, typename F> __device__ __forceinline__ I index(F p, F last) {
  return (I)fmath<F>::min_(fmath<F>::max_(p, F(0)), last);
}

// An integer-valued position p as an index clamped to [-2, n] (NaN: -2): inside [0, n) exactly
// where p is inside [0, n - 1], and p + 1 where index + 1 is.
template <typename I, typename F> __device__ __forceinline__ I slot(F p, F last) {
  return (I)fmath<F>::min_(fmath<F>::max_(p, F(-2)), last + F(1));
}
template <typename I> __device__ __forceinline__ bool within(I i, I n) {
  typedef typename oc::offset_of<I>::type U;  // one unsigned compare: n >= 0
  return (U)i < (U)n;
}

}  // namespace gs

// Linear and cubic, any rank.
template <typename T, typename Acc, typename F, typename I>
__global__ void __launch_bounds__(OC_BLOCK, GRID_GENERIC_MIN_BLOCKS) grid_sample_weighted(
    const T* __restrict__ x, const void* __restrict__ grid, T* __restrict__ y,
    const GridSampleGeom g) {
  gs::channels<I> item;
  if (!item.locate(g)) return;
  const int rank = (int)g.rank, count = (int)g.taps, padding = (int)g.padding;
  const T* xn = x + item.n * (I)g.x_stride_n;
  const I gn = item.n * (I)g.grid_stride_n, points = (I)g.points;
#pragma unroll 1  // grid-stride loop: no trip-count division
  for (I p = oc::first_index<I>(); p < points; p += oc::grid_stride<I>()) {
    const I at = gn + gs::grid_offset(g, p);
    gs::taps<Acc, I> taps;
    taps.valid = 0;
#pragma unroll 1
    for (int d = 0; d < rank; ++d) {
      const gs::axis<F> a(g, d);
      F xd = a.coordinate(gs::grid_value<F>::at(
          grid, at + (I)(rank - 1 - d) * (I)g.grid_stride_k, (int)g.grid_kind));
      if (count == 2) xd = a.pad(xd, padding);
      const F low = gs::fmath<F>::floor_(xd), t = xd - low;
      F w[4];
      if (count == 2) {
        w[0] = F(1) - t; w[1] = t; w[2] = w[3] = F(0);
      } else {
        gs::cubic(t, w);
      }
      Acc weight[4];
      I offset[4] = {I(0), I(0), I(0), I(0)};
#pragma unroll
      for (int k = 0; k < 4; ++k) weight[k] = (Acc)w[k];
      // tap k at low + k (linear) or at low + k - 1, padded on its own (cubic)
#pragma unroll 1
      for (int k = 0; k < count; ++k) {
        const F position = count == 2 ? low + F(k) : a.pad(low + F(k - 1), padding);
        const bool ok = a.inside(position);
        const I o = ok ? gs::index<I>(position, a.last) * (I)g.x_stride[d] : I(0);
        offset[0] = k == 0 ? o : offset[0];
        offset[1] = k == 1 ? o : offset[1];
        offset[2] = k == 2 ? o : offset[2];
        offset[3] = k == 3 ? o : offset[3];
        taps.valid |= (unsigned int)ok << (4 * d + k);
      }
      taps.set(d, weight, offset);
    }
    T* out = y + (item.n * (I)g.channels + item.first) * points + p;
#pragma unroll 1
    for (I c = item.first; c < item.end; ++c, out += points) {
      const Acc v = gs::walk<0>::sum(xn + c * (I)g.x_stride_c, taps, rank, count, I(0), true);
      *out = gs::stored<T>(v);
    }
  }
}

// Nearest, any rank, any fixed-size dtype.
template <typename T, typename F, typename I>
__global__ void __launch_bounds__(OC_BLOCK, GRID_GENERIC_MIN_BLOCKS) grid_sample_nearest(
    const T* __restrict__ x, const void* __restrict__ grid, T* __restrict__ y,
    const GridSampleGeom g) {
  gs::channels<I> item;
  if (!item.locate(g)) return;
  const int rank = (int)g.rank, padding = (int)g.padding;
  const bool pad_first = g.pad_first != 0;
  const T* xn = x + item.n * (I)g.x_stride_n;
  const I gn = item.n * (I)g.grid_stride_n, points = (I)g.points;
  const T zero = T();  // zero bytes
#pragma unroll 1  // grid-stride loop: no trip-count division
  for (I p = oc::first_index<I>(); p < points; p += oc::grid_stride<I>()) {
    const I at = gn + gs::grid_offset(g, p);
    I offset = 0;
    bool valid = true;
#pragma unroll 1
    for (int d = 0; d < rank; ++d) {
      const gs::axis<F> a(g, d);
      const F xd = a.nearest(a.coordinate(gs::grid_value<F>::at(
          grid, at + (I)(rank - 1 - d) * (I)g.grid_stride_k, (int)g.grid_kind)), padding,
          pad_first);
      valid = valid && a.inside(xd);
      offset += gs::index<I>(xd, a.last) * (I)g.x_stride[d];
    }
    T* out = y + (item.n * (I)g.channels + item.first) * points + p;
#pragma unroll 1
    for (I c = item.first; c < item.end; ++c, out += points) {
      *out = valid ? xn[c * (I)g.x_stride_c + offset] : zero;
    }
  }
}

// 2-D linear or nearest with padding PAD, X and grid of one float dtype (T): the generic
// kernels' arithmetic, term for term in their order, with the axes' constants hoisted and the
// output positions walked by one grid stride.
template <typename T, typename Acc, gs::sampling MODE, gs::padding PAD, typename I>
__global__ void __launch_bounds__(OC_BLOCK, GRID_FAST_MIN_BLOCKS) grid_sample_fast(
    const T* __restrict__ x, const T* __restrict__ grid, T* __restrict__ y,
    const GridSampleGeom g) {
  gs::channels<I> item;
  if (!item.locate(g)) return;
  const gs::axis<Acc> ah(g, 0), aw(g, 1);
  const I sh = (I)g.x_stride[0], sw = (I)g.x_stride[1], sc = (I)g.x_stride_c;
  const I h = (I)g.length[0], w = (I)g.length[1];
  const I gp = (I)g.grid_stride_p, gk = (I)g.grid_stride_k;
  const T* xn = x + item.n * (I)g.x_stride_n + item.first * sc;
  const I points = (I)g.points, count = item.end - item.first, step = oc::grid_stride<I>();
  const I first = oc::first_index<I>();
  // the grid pair and the first output of position p, stepped along with it
  const T* at = grid + item.n * (I)g.grid_stride_n + first * gp;
  T* yp = y + (item.n * (I)g.channels + item.first) * points + first;
#pragma unroll 1  // grid-stride loop: no trip-count division
  for (I p = first; p < points; p += step, at += step * gp, yp += step) {
    const Acc cx = aw.coordinate(oc::load<Acc>(at)), cy = ah.coordinate(oc::load<Acc>(at + gk));
    T* out = yp;
    const T* src = xn;
    if constexpr (MODE == gs::NEAREST) {
      const I ix = gs::slot<I>(aw.nearest(cx, PAD, false), aw.last);
      const I iy = gs::slot<I>(ah.nearest(cy, PAD, false), ah.last);
      const bool valid = gs::within(ix, w) && gs::within(iy, h);
      const I offset = iy * sh + ix * sw;
      const T zero = oc::cvt<Acc, T>::store(Acc(0));
#pragma unroll 1
      for (I c = 0; c < count; ++c, out += points, src += sc) *out = valid ? src[offset] : zero;
    } else {
      const Acc px = aw.pad(cx, PAD), py = ah.pad(cy, PAD);
      const Acc x0 = gs::fmath<Acc>::floor_(px), y0 = gs::fmath<Acc>::floor_(py);
      const Acc tx = px - x0, ty = py - y0;
      const Acc wx0 = Acc(1) - tx, wy0 = Acc(1) - ty;
      const I ix = gs::slot<I>(x0, aw.last), iy = gs::slot<I>(y0, ah.last);
      const bool vx0 = gs::within(ix, w), vx1 = gs::within(ix + 1, w);
      const bool vy0 = gs::within(iy, h), vy1 = gs::within(iy + 1, h);
      const bool v00 = vy0 && vx0, v01 = vy0 && vx1, v10 = vy1 && vx0, v11 = vy1 && vx1;
      const I o00 = iy * sh + ix * sw, o01 = o00 + sw, o10 = o00 + sh, o11 = o10 + sw;
#pragma unroll 1
      for (I c = 0; c < count; ++c, out += points, src += sc) {
        const Acc p00 = v00 ? oc::load<Acc>(src + o00) : Acc(0);
        const Acc p01 = v01 ? oc::load<Acc>(src + o01) : Acc(0);
        const Acc p10 = v10 ? oc::load<Acc>(src + o10) : Acc(0);
        const Acc p11 = v11 ? oc::load<Acc>(src + o11) : Acc(0);
        Acc r0 = -Acc(0), r1 = -Acc(0), acc = -Acc(0);
        r0 = r0 + wx0 * p00;
        r0 = r0 + tx * p01;
        r1 = r1 + wx0 * p10;
        r1 = r1 + tx * p11;
        acc = acc + wy0 * r0;
        acc = acc + ty * r1;
        *out = oc::cvt<Acc, T>::store(acc);
      }
    }
  }
}

// ---------------------------------------------------------------------------------- AffineGrid

struct AffineGridGeom {
  long long total;            // N * positions
  long long positions;        // per batch item
  long long theta_stride[3];  // element strides of theta's (n, k, j) axes
  long long length[3];        // the output's spatial lengths, outermost first
  long long align_corners;
};

namespace gs {

// The normalized coordinate of position i along an axis of `length` (one rounded division).
template <typename Acc, typename I>
__device__ __forceinline__ Acc base(I i, I length, bool align_corners) {
  if (!align_corners) return (Acc)(2 * i + 1 - length) / (Acc)length;
  if (length == 1) return Acc(0);
  return (Acc)(2 * i - (length - 1)) / (Acc)(length - 1);
}

}  // namespace gs

template <typename T, typename Acc, int R, typename I>
__global__ void __launch_bounds__(OC_BLOCK) affine_grid(const T* __restrict__ theta,
                                                        T* __restrict__ grid,
                                                        const AffineGridGeom g) {
  static_assert(R == 2 || R == 3, "2-D or 3-D");
  const bool ac = g.align_corners != 0;
#pragma unroll 1  // grid-stride loop: no trip-count division
  for (I w = oc::first_index<I>(); w < (I)g.total; w += oc::grid_stride<I>()) {
    const I n = w / (I)g.positions;
    I rest = w - n * (I)g.positions;
    Acc v[R];  // v[j]: the coordinate along the j-th axis from the inside
#pragma unroll
    for (int j = 0; j < R; ++j) {
      const I length = (I)g.length[R - 1 - j];
      const I q = rest / length;
      v[j] = gs::base<Acc>(rest - q * length, length, ac);
      rest = q;
    }
    const T* t = theta + n * (I)g.theta_stride[0];
#pragma unroll
    for (int k = 0; k < R; ++k) {
      const T* row = t + k * (I)g.theta_stride[1];
      Acc acc = oc::load<Acc>(row) * v[0];
#pragma unroll
      for (int j = 1; j < R; ++j) acc = acc + oc::load<Acc>(row + j * (I)g.theta_stride[2]) * v[j];
      acc = acc + oc::load<Acc>(row + R * (I)g.theta_stride[2]);
      oc::store<Acc>(grid + w * R + k, acc);
    }
  }
}
