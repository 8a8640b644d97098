// Resize: a mode-agnostic tensor-product gather, one thread per output element, grid-stride.
//   y[o] = sum over taps t_d of every resized dim d of
//          prod_d weight[row_d + t_d] * x[base(o) + sum_d index[row_d + t_d] * in_stride[d]]
// The host plan gives each resized dim a table of `taps` (input index, weight) pairs per output
// coordinate, row_d = table[d] + o_d * taps[d] (nearest: 1 tap; linear: 2; cubic: 4; antialias:
// wider). Unresized dims (taps 0) gather o_d directly. A row whose first index is negative lies
// outside the tf_crop_and_resize crop: the output element is the extrapolation value.
#include "common.cuh"

// Defined by the loader from onnx_cupy.resize.kernel: RESIZE_MAXD, the most dims (after merging
// unresized neighbours) a parameter block holds; RESIZE_OUTSIDE, the first offset of an
// extrapolated coordinate in the fast tables; RESIZE_TABLE_ALIGN, the tables' byte alignment.
#if !defined(RESIZE_MAXD) || !defined(RESIZE_OUTSIDE) || !defined(RESIZE_TABLE_ALIGN)
#error "compile through onnx_cupy.core.loader, which defines RESIZE_MAXD, RESIZE_OUTSIDE, RESIZE_TABLE_ALIGN"
#endif

struct ResizeGeom {
  long long nd;                     // dims
  long long total;                  // output elements
  long long out_shape[RESIZE_MAXD];
  long long in_stride[RESIZE_MAXD];  // input element strides
  long long taps[RESIZE_MAXD];       // table entries per output coordinate; 0: dim not resized
  long long table[RESIZE_MAXD];      // first table entry of the dim
  unsigned char fill[16];            // extrapolation value: the bytes of one storage element
};

namespace rsz {

// An N-byte element moved as machine words: nearest serves every dtype of a size with one type.
template <int N> struct pod;
template <> struct pod<1> { unsigned char v; };
template <> struct pod<2> { unsigned short v; };
template <> struct pod<4> { unsigned int v; };
template <> struct pod<8> { unsigned long long v; };
template <> struct pod<16> { unsigned long long v[2]; };

template <typename T> struct is_void { static const bool value = false; };
template <> struct is_void<void> { static const bool value = true; };

template <typename T> struct int_range { static const bool value = false; };
#define RSZ_INT_RANGE(T, LO, HI)                                  \
  template <> struct int_range<T> {                               \
    static const bool value = true;                               \
    static __device__ __forceinline__ T lo() { return LO; }       \
    static __device__ __forceinline__ T hi() { return HI; }       \
  };
RSZ_INT_RANGE(signed char, -128, 127)
RSZ_INT_RANGE(unsigned char, 0, 255)
RSZ_INT_RANGE(short, -32768, 32767)
RSZ_INT_RANGE(unsigned short, 0, 65535)
RSZ_INT_RANGE(int, -2147483647 - 1, 2147483647)
RSZ_INT_RANGE(unsigned int, 0u, 4294967295u)
RSZ_INT_RANGE(long long, -9223372036854775807LL - 1, 9223372036854775807LL)
RSZ_INT_RANGE(unsigned long long, 0ull, 18446744073709551615ull)
#undef RSZ_INT_RANGE

// The accumulated value in the storage type: IEEE rounding for floats; integers round half to
// even and saturate ((Acc)hi may round up to 2^63 or 2^64: anything at or above it saturates).
template <typename T, typename Acc, bool Int = int_range<T>::value> struct result {
  static __device__ __forceinline__ T from(Acc v) { return oc::cvt<Acc, T>::store(v); }
};
template <typename T, typename Acc> struct result<T, Acc, true> {
  static __device__ __forceinline__ T from(Acc v) {
    v = oc::round_half_even(v);
    if (v >= (Acc)int_range<T>::hi()) return int_range<T>::hi();
    if (v <= (Acc)int_range<T>::lo()) return int_range<T>::lo();
    return (T)v;
  }
};

// The extrapolation value: the first sizeof(T) of a parameter block's `fill` bytes.
template <typename T> __device__ __forceinline__ T fill_value(const unsigned char (&fill)[16]) {
  T t;
  memcpy(&t, fill, sizeof(T));
  return t;
}

// Splits output element `o`: `base` gets the input offset of its coordinates along unresized
// dims, row[d] the first table entry of each resized dim d. False when `o` is extrapolated.
template <typename I>
__device__ __forceinline__ bool locate(I o, const ResizeGeom& g,
                                       const long long* __restrict__ index, I& base, I* row) {
  bool inside = true;
  base = 0;
  for (int d = (int)g.nd - 1; d >= 0; --d) {
    const I n = (I)g.out_shape[d];
    const I c = o % n;
    o /= n;
    if (g.taps[d] == 0) {
      base += c * (I)g.in_stride[d];
    } else {
      row[d] = (I)g.table[d] + c * (I)g.taps[d];
      inside = inside && index[row[d]] >= 0;
    }
  }
  return inside;
}

}  // namespace rsz

// Nearest: one tap per resized dim, weight 1: a copy of the chosen element.
template <typename T, typename I>
__global__ void resize_nearest(const T* __restrict__ x, T* __restrict__ y,
                               const long long* __restrict__ index, const ResizeGeom g) {
#pragma unroll 1  // grid-stride loop: no trip-count division
  for (I o = oc::first_index<I>(); o < (I)g.total; o += oc::grid_stride<I>()) {
    // One pass, no per-thread arrays: the chosen input coordinate of a resized dim is its table
    // entry table[d] + c (one tap); a negative entry marks an extrapolated row.
    I rem = o, base = 0;
    bool inside = true;
    for (int d = (int)g.nd - 1; d >= 0; --d) {
      const I n = (I)g.out_shape[d];
      const I c = rem % n;
      rem /= n;
      const long long i = g.taps[d] == 0 ? (long long)c : index[(I)g.table[d] + c];
      if (i < 0) {
        inside = false;
        break;
      }
      base += (I)i * (I)g.in_stride[d];
    }
    if (inside) {
      y[o] = x[base];
    } else {
      y[o] = rsz::fill_value<T>(g.fill);
    }
  }
}

// Linear and cubic (and their antialias filters): the weighted sum over the tap product, walked
// depth first; level j holds the partial weight product and input offset of the levels above it.
template <typename T, typename Acc, typename I>
__global__ void resize_weighted(const T* __restrict__ x, T* __restrict__ y,
                                const long long* __restrict__ index,
                                const double* __restrict__ weight, const ResizeGeom g) {
  int dims[RESIZE_MAXD];
  int levels = 0;
  for (int d = 0; d < (int)g.nd; ++d)
    if (g.taps[d] != 0) dims[levels++] = d;
  const int last = levels - 1;
#pragma unroll 1  // grid-stride loop: no trip-count division
  for (I o = oc::first_index<I>(); o < (I)g.total; o += oc::grid_stride<I>()) {
    I base, row[RESIZE_MAXD];
    if (!rsz::locate<I>(o, g, index, base, row)) {
      y[o] = rsz::fill_value<T>(g.fill);
      continue;
    }
    I tap[RESIZE_MAXD], off[RESIZE_MAXD];
    Acc part[RESIZE_MAXD];
    Acc acc = Acc(0);
    off[0] = base;
    part[0] = Acc(1);
    tap[0] = 0;
    for (int j = 0; j >= 0;) {
      const int d = dims[j];
      const I stride = (I)g.in_stride[d];
      const I end = row[d] + (I)g.taps[d];
      if (j == last) {
        for (I e = row[d]; e < end; ++e)
          acc += part[j] * (Acc)weight[e] * oc::load<Acc>(x + off[j] + (I)index[e] * stride);
        --j;
      } else if (row[d] + tap[j] < end) {
        const I e = row[d] + tap[j]++;
        part[j + 1] = part[j] * (Acc)weight[e];
        off[j + 1] = off[j] + (I)index[e] * stride;
        tap[++j] = 0;
      } else {
        --j;
      }
    }
    y[o] = rsz::result<T, Acc>::from(acc);
  }
}

// Fast paths for 32-bit-indexed problems of R (1-3) resized dims, each with TAPS table entries per
// output coordinate (nearest 1, linear 2, cubic 4), that end in one walked dim: either the last
// resized dim (rsz::RESIZED: the resized dims are the trailing ones) or the unresized dims after
// them, merged into one of length `walk` and input stride `walk_stride` (rsz::KEPT: NHWC
// resized along H and W, NCHW along H). The output is [batch, rows, walk]: the thread's row
// (batch item and the resized coordinates before the walked dim, all of them for KEPT) comes from
// grid y and z (with threadIdx.y), and the thread walks the walked dim in a grid-stride loop, V
// outputs per iteration spaced blockDim.x apart. The row's taps are resolved once per thread
// into registers (input offsets and weight products, formed in the generic kernel's order), so
// each output costs the walked dim's TAPS table entries (none for KEPT) and the tap product.
// Tables: per output coordinate TAPS weights (float for 16/32-bit floats, double otherwise) and
// TAPS input offsets (index times the dim's input stride, made on the host).
struct ResizeFastGeom {
  unsigned char fill[16];      // extrapolation value: the bytes of one storage element
  int out[3];                  // output lengths of the resized dims, outermost first
  int table[3];                // their first table record
  int batch_stride;            // input element stride of the merged leading dims
  int rows;                    // rows per batch item: the product of the row dims' lengths
  int batch_rows;              // batch * rows
  int walk;                    // length of the walked dim
  int walk_stride;             // its input element stride (KEPT)
};

namespace rsz {

// The walked dim of a fast kernel: the last resized dim, or the unresized dims after them.
enum walked { RESIZED, KEPT };

__host__ __device__ constexpr int ipow(int b, int e) { return e == 0 ? 1 : b * ipow(b, e - 1); }
__host__ __device__ constexpr int ilog2(int n) { return n <= 1 ? 0 : 1 + ilog2(n / 2); }

// The first offset of an extrapolated coordinate: no offset of a 32-bit-indexed input is -2^31.
constexpr int OUTSIDE = RESIZE_OUTSIDE;

// The first offset of a record made safe to read with (0 when extrapolated).
__device__ __forceinline__ int first_offset(int i) { return i == OUTSIDE ? 0 : i; }

// The table record of one output coordinate: TAPS weights (none for nearest: W void), then TAPS
// input offsets, the first OUTSIDE where the coordinate is extrapolated; aligned for vector loads.
template <typename W, int TAPS> struct record_size {
  static constexpr int value = TAPS * (int)(sizeof(W) + sizeof(int));
};
template <int TAPS> struct record_size<void, TAPS> {
  static constexpr int value = TAPS * (int)sizeof(int);
};
__host__ __device__ constexpr int record_align(int bytes) {
  return bytes % 16 == 0 ? 16 : bytes % 8 == 0 ? 8 : 4;
}

static_assert(record_align(16) <= RESIZE_TABLE_ALIGN, "records are read at the table's alignment");

template <typename W, int TAPS, int B = record_size<W, TAPS>::value>
struct alignas(record_align(B)) record {
  W w[TAPS];
  int i[TAPS];
};
template <int TAPS, int B> struct alignas(record_align(B)) record<void, TAPS, B> {
  int i[TAPS];
};

// One thread's row: input pointers and weight products of the K = TAPS^A tap combinations of
// its A row dims, the resized dims before the walked one (combination k takes tap
// (k / TAPS^(A-1-a)) % TAPS of dim a: the generic kernel's order; weights only when W is not
// void), and whether no row coordinate is extrapolated.
template <typename T, typename Acc, typename W, int A, int TAPS> struct fast_row {
  static constexpr int K = ipow(TAPS, A);
  const T* at[K];
  Acc part[K];
  bool inside;
  int row;  // output row: batch item * rows + row within it

  // False for threads past the last row.
  __device__ __forceinline__ bool locate(const T* __restrict__ x, const ResizeFastGeom& g,
                                         const record<W, TAPS>* __restrict__ table) {
    row = (int)((blockIdx.z * gridDim.y + blockIdx.y) * blockDim.y + threadIdx.y);
    if (row >= g.batch_rows) return false;
    const int b = row / g.rows;
    int c[3] = {row - b * g.rows, 0, 0};
    if (A == 3) {
      const int q = c[0] / g.out[2];
      c[2] = c[0] - q * g.out[2];
      c[0] = q;
    }
    if (A >= 2) {
      const int q = c[0] / g.out[1];
      c[1] = c[0] - q * g.out[1];
      c[0] = q;
    }
    int off[A + 1][TAPS];  // dims 0 .. A-1 (one spare row: no zero-length arrays)
    Acc w[A + 1][TAPS];
    inside = true;
#pragma unroll
    for (int a = 0; a < A; ++a) {
      const record<W, TAPS> e = table[g.table[a] + c[a]];
      inside = inside && e.i[0] != OUTSIDE;
#pragma unroll
      for (int t = 0; t < TAPS; ++t) {
        off[a][t] = t == 0 ? first_offset(e.i[0]) : e.i[t];
        if constexpr (!is_void<W>::value) w[a][t] = (Acc)e.w[t];
      }
    }
    constexpr int bits = ilog2(TAPS);  // TAPS is a power of two: taps by shifts, not divisions
#pragma unroll
    for (int k = 0; k < K; ++k) {
      int o = b * g.batch_stride;
      Acc p = Acc(1);
#pragma unroll
      for (int a = 0; a < A; ++a) {
        const int t = (k >> (bits * (A - 1 - a))) & (TAPS - 1);
        o += off[a][t];
        if constexpr (!is_void<W>::value) p = p * w[a][t];
      }
      at[k] = x + o;
      part[k] = p;
    }
    return true;
  }
};

// Calls out(o) for every innermost coordinate of this thread, V per iteration of a grid-stride
// loop. Past the end of the row o is clamped to the last coordinate (no branch per output): the
// thread then stores the value that the last coordinate's own thread stores, a benign race.
template <int V, typename F> __device__ __forceinline__ void fast_walk(int n, F&& out) {
  const int step = (int)(gridDim.x * blockDim.x) * V;
#pragma unroll 1
  for (int x0 = (int)(blockIdx.x * blockDim.x) * V + (int)threadIdx.x; x0 < n; x0 += step) {
#pragma unroll
    for (int v = 0; v < V; ++v) out(oc::imin(x0 + v * (int)blockDim.x, n - 1));
  }
}

}  // namespace rsz

// Nearest: a copy of the chosen element, index tables only. `inner` is the walked dim's table
// when it is resized (table + g.table[R - 1], passed as its own pointer: one multiply-add per
// record address).
template <typename T, int R, int V, rsz::walked WALK>
__global__ void __launch_bounds__(OC_BLOCK, 4) resize_nearest_fast(
    const T* __restrict__ x, T* __restrict__ y, const rsz::record<void, 1>* __restrict__ table,
    const rsz::record<void, 1>* __restrict__ inner, const ResizeFastGeom g) {
  rsz::fast_row<T, int, void, WALK == rsz::KEPT ? R : R - 1, 1> w;
  if (!w.locate(x, g, table)) return;
  const int n = g.walk, row = w.row * n;
  const T fill = rsz::fill_value<T>(g.fill);
  rsz::fast_walk<V>(n, [&](int o) {
    if constexpr (WALK == rsz::KEPT) {
      const T v = w.at[0][o * g.walk_stride];
      y[row + o] = w.inside ? v : fill;
    } else {
      const int i = inner[o].i[0];
      const T v = w.at[0][rsz::first_offset(i)];
      y[row + o] = w.inside && i != rsz::OUTSIDE ? v : fill;
    }
  });
}

// Linear and cubic: the generic kernel's sum, term for term in its order (for KEPT the weight
// products of all R dims are the row's: one multiply-add per term).
template <typename T, typename Acc, typename W, int R, int TAPS, int V, rsz::walked WALK>
__global__ void __launch_bounds__(OC_BLOCK, 4) resize_weighted_fast(
    const T* __restrict__ x, T* __restrict__ y, const rsz::record<W, TAPS>* __restrict__ table,
    const rsz::record<W, TAPS>* __restrict__ inner, const ResizeFastGeom g) {
  rsz::fast_row<T, Acc, W, WALK == rsz::KEPT ? R : R - 1, TAPS> w;
  if (!w.locate(x, g, table)) return;
  const int n = g.walk, row = w.row * n;
  const T fill = rsz::fill_value<T>(g.fill);
  rsz::fast_walk<V>(n, [&](int o) {
    Acc acc = Acc(0);
    bool inside = w.inside;
    if constexpr (WALK == rsz::KEPT) {
      const int at = o * g.walk_stride;
#pragma unroll
      for (int k = 0; k < w.K; ++k) acc += w.part[k] * oc::load<Acc>(w.at[k] + at);
    } else {
      const rsz::record<W, TAPS> e = inner[o];
      int at[TAPS];
#pragma unroll
      for (int t = 0; t < TAPS; ++t) at[t] = t == 0 ? rsz::first_offset(e.i[0]) : e.i[t];
#pragma unroll
      for (int k = 0; k < w.K; ++k) {
#pragma unroll
        for (int t = 0; t < TAPS; ++t)
          acc += w.part[k] * (Acc)e.w[t] * oc::load<Acc>(w.at[k] + at[t]);
      }
      inside = inside && e.i[0] != rsz::OUTSIDE;
    }
    y[row + o] = inside ? rsz::result<T, Acc>::from(acc) : fill;
  });
}
