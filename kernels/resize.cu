// Resize: a mode-agnostic tensor-product gather.
//   y[o] = sum over taps t_d of every resized dim d of
//          prod_d weight[entry_d + t_d] * x[base(o) + sum_d index[entry_d + t_d] * in_stride[d]]
// The host plan gives each resized dim a table of `taps` (input index, weight) pairs per output
// coordinate c_d, entry_d = table[d] + c_d * taps[d] (nearest: 1 tap; linear: 2; cubic: 4;
// antialias: wider). Unresized dims (taps 0) gather c_d directly. An output coordinate whose
// first index is negative (in the fast tables: rsz::outside) lies outside the
// tf_crop_and_resize crop: the output element is the extrapolation value.
//
// Kernels, and when the host (onnx_cupy.resize.kernel) picks each:
//   resize_nearest_fast, resize_weighted_fast  1-3 resized dims with equal taps (nearest 1,
//       linear 2, cubic 4) that are the trailing dims (WALK = rsz::RESIZED) or are followed only
//       by unresized dims that merge into one (rsz::KEPT: NHWC resized along H and W), the
//       leading dims merging into one batch dim, and few enough tap combinations per thread;
//   resize_nearest, resize_weighted  every other case (an unresized dim between resized ones,
//       trailing dims that do not merge, antialias with more than 4 taps, 3-D cubic, ...): one
//       thread per output in a grid-stride loop over ND dims, the dims left after merging
//       unresized neighbours, padded with leading length-1 dims to the next instantiated rank.
// Template parameters: T the storage type (nearest: rsz::pod<bytes>, one type per element
// size); Acc the sum's type (float for 16/32-bit floats, double otherwise); W the fast tables'
// weight type (rsz::no_weight for nearest); R the resized dims, TAPS their taps, V outputs per
// thread and iteration, WALK the walked dim of a fast kernel; ND the generic kernels' dims; I the
// index type, int where every offset fits 32 bits, else long long (one template for both).
// No kernel holds a per-thread array indexed at run time: ranks, taps and dims are template
// parameters and every loop over them unrolls, so nothing lives in local memory.
#include "common.cuh"

// Defined by the loader from onnx_cupy.resize.kernel: RESIZE_MAXD, the most dims (after merging
// unresized neighbours) a ResizeGeom holds; RESIZE_FAST_MAXD, the most resized dims of the fast
// kernels (and of a ResizeFastGeom); RESIZE_FILL_BYTES, the largest element (the bytes of a
// parameter struct's `fill`); RESIZE_OUTSIDE and RESIZE_OUTSIDE_WIDE, the
// first offset of an extrapolated coordinate in the fast tables of int and long long offsets;
// RESIZE_TABLE_ALIGN, the fast tables' byte alignment; RESIZE_FAST_MIN_BLOCKS and
// RESIZE_GENERIC_MIN_BLOCKS, the blocks of OC_BLOCK threads per SM the fast and the generic
// kernels' registers must allow (the __launch_bounds__).
#if !defined(RESIZE_MAXD) || !defined(RESIZE_FAST_MAXD) || !defined(RESIZE_FILL_BYTES) || \
    !defined(RESIZE_OUTSIDE) || !defined(RESIZE_OUTSIDE_WIDE) || !defined(RESIZE_TABLE_ALIGN) || \
    !defined(RESIZE_FAST_MIN_BLOCKS) || !defined(RESIZE_GENERIC_MIN_BLOCKS)
#error "compile through onnx_cupy.core.loader, which defines RESIZE_MAXD, RESIZE_FAST_MAXD, RESIZE_FILL_BYTES, RESIZE_OUTSIDE, RESIZE_OUTSIDE_WIDE, RESIZE_TABLE_ALIGN, RESIZE_FAST_MIN_BLOCKS, RESIZE_GENERIC_MIN_BLOCKS"
#endif

// The generic kernels' dims: the output shape, with adjacent unresized dims merged and leading
// length-1 dims up to the kernel's rank ND (only the first ND entries are read).
struct ResizeGeom {
  long long total;                   // output elements
  long long out_shape[RESIZE_MAXD];
  long long in_stride[RESIZE_MAXD];  // input element strides
  long long taps[RESIZE_MAXD];       // table entries per output coordinate; 0: dim not resized
  long long table[RESIZE_MAXD];      // first table entry of the dim
  unsigned char fill[RESIZE_FILL_BYTES];  // extrapolation value: the bytes of one storage element
};

namespace rsz {

// An N-byte element moved as machine words: nearest serves every dtype of a size with one type.
template <int N> struct pod;
template <> struct pod<1> { unsigned char v; };
template <> struct pod<2> { unsigned short v; };
template <> struct pod<4> { unsigned int v; };
template <> struct pod<8> { unsigned long long v; };
template <> struct pod<16> { unsigned long long v[2]; };

using oc::result;  // integer results: rounded half to even, saturated (common.cuh)

// The extrapolation value: the first sizeof(T) of a parameter struct's `fill` bytes.
template <typename T>
__device__ __forceinline__ T fill_value(const unsigned char (&fill)[RESIZE_FILL_BYTES]) {
  static_assert(sizeof(T) <= RESIZE_FILL_BYTES, "the fill holds one element");
  T t;
  memcpy(&t, fill, sizeof(T));
  return t;
}

// One dim of an output element's tap walk: its table entries [first, end) (one pass with no
// table read for an unresized dim, whose coordinate is in the element's base offset).
template <typename I> struct dim_taps {
  I first, end;
  bool resized;
};

// The weighted sum over the tap product, depth first from dim D: `offset` and `part` (the
// weight product) are those of the dims before D; at the innermost dim each tap adds
// part * weight * x. Dims are compile-time levels, so each level's state is in registers.
template <int D, int ND> struct tap_walk {
  template <typename T, typename Acc, typename I>
  static __device__ __forceinline__ void sum(const T* __restrict__ x,
                                             const long long* __restrict__ index,
                                             const double* __restrict__ weight,
                                             const ResizeGeom& dims, const dim_taps<I> (&taps)[ND],
                                             I offset, Acc part, Acc& acc) {
    const I stride = (I)dims.in_stride[D];
#pragma unroll 1  // runtime trip count: one copy of the levels below
    for (I e = taps[D].first; e < taps[D].end; ++e) {
      const bool resized = taps[D].resized;
      tap_walk<D + 1, ND>::sum(x, index, weight, dims, taps,
                               resized ? offset + (I)index[e] * stride : offset,
                               resized ? part * (Acc)weight[e] : part, acc);
    }
  }
};
template <int ND> struct tap_walk<ND, ND> {
  template <typename T, typename Acc, typename I>
  static __device__ __forceinline__ void sum(const T* __restrict__ x, const long long*,
                                             const double*, const ResizeGeom&,
                                             const dim_taps<I> (&)[ND], I offset, Acc part,
                                             Acc& acc) {
    acc += part * oc::load<Acc>(x + offset);
  }
};

}  // namespace rsz

// Nearest: one tap per resized dim, weight 1: a copy of the chosen element.
template <typename T, int ND, typename I>
__global__ void __launch_bounds__(OC_BLOCK, RESIZE_GENERIC_MIN_BLOCKS) resize_nearest(
    const T* __restrict__ x, T* __restrict__ y, const long long* __restrict__ index,
    const ResizeGeom dims) {
#pragma unroll 1  // grid-stride loop: no trip-count division
  for (I o = oc::first_index<I>(); o < (I)dims.total; o += oc::grid_stride<I>()) {
    I coord[ND];
    coord[0] = oc::unravel<ND, 1>(o, coord, [&](int d, I v) { return v / (I)dims.out_shape[d]; },
                                  [&](int d) { return (I)dims.out_shape[d]; });
    I offset = 0;
    bool inside = true;
#pragma unroll
    for (int d = 0; d < ND; ++d) {  // the input coordinate: the table's where d is resized
      const I source = dims.taps[d] == 0 ? coord[d] : (I)index[(I)dims.table[d] + coord[d]];
      inside = inside && source >= 0;
      offset += source * (I)dims.in_stride[d];
    }
    if (inside) {
      y[o] = x[offset];
    } else {
      y[o] = rsz::fill_value<T>(dims.fill);
    }
  }
}

// Linear and cubic (and their antialias filters): the weighted sum over the tap product, walked
// depth first over the dims in order, taps ascending (the fast kernels sum in this order too).
template <typename T, typename Acc, int ND, typename I>
__global__ void __launch_bounds__(OC_BLOCK, RESIZE_GENERIC_MIN_BLOCKS) resize_weighted(
    const T* __restrict__ x, T* __restrict__ y, const long long* __restrict__ index,
    const double* __restrict__ weight, const ResizeGeom dims) {
#pragma unroll 1  // grid-stride loop: no trip-count division
  for (I o = oc::first_index<I>(); o < (I)dims.total; o += oc::grid_stride<I>()) {
    I coord[ND];
    coord[0] = oc::unravel<ND, 1>(o, coord, [&](int d, I v) { return v / (I)dims.out_shape[d]; },
                                  [&](int d) { return (I)dims.out_shape[d]; });
    rsz::dim_taps<I> taps[ND];
    I base = 0;
    bool inside = true;
#pragma unroll
    for (int d = 0; d < ND; ++d) {
      const I count = (I)dims.taps[d];
      taps[d].resized = count != 0;
      if (count == 0) {
        base += coord[d] * (I)dims.in_stride[d];
        taps[d].first = 0;
        taps[d].end = 1;
      } else {
        taps[d].first = (I)dims.table[d] + coord[d] * count;
        taps[d].end = taps[d].first + count;
        inside = inside && index[taps[d].first] >= 0;
      }
    }
    if (!inside) {
      y[o] = rsz::fill_value<T>(dims.fill);
      continue;
    }
    Acc acc = Acc(0);
    rsz::tap_walk<0, ND>::sum(x, index, weight, dims, taps, base, Acc(1), acc);
    y[o] = rsz::result<T, Acc>::from(acc);
  }
}

// Fast paths for problems of R (1-3) resized dims, each with TAPS table entries per output
// coordinate (nearest 1, linear 2, cubic 4), that end in one walked dim: either the last resized
// dim (rsz::RESIZED: the resized dims are the trailing ones) or the unresized dims after them,
// merged into one of length `walk` and input stride `walk_stride` (rsz::KEPT: NHWC resized along
// H and W, NCHW along H). The output is [batch, rows, walk]: the thread's row (batch item and
// the resized coordinates before the walked dim, all of them for KEPT) comes from grid y and z
// (with threadIdx.y), and the thread walks the walked dim in a grid-stride loop, V outputs per
// iteration spaced blockDim.x apart. The row's taps are resolved once per thread into registers
// (input pointers and weight products, formed in the generic kernel's order), so each output
// costs the walked dim's TAPS table entries (none for KEPT) and the tap product.
// Tables: per output coordinate TAPS weights (float for 16/32-bit floats, double otherwise; none
// for nearest) and TAPS input offsets of the index type (index times the dim's input stride,
// made on the host). Fields are long long for both index types; kernels read them as I.
struct ResizeFastGeom {
  unsigned char fill[RESIZE_FILL_BYTES];  // extrapolation value: one storage element's bytes
  long long out[RESIZE_FAST_MAXD];    // output lengths of the resized dims, outermost first
  long long table[RESIZE_FAST_MAXD];  // their first table record
  long long batch_stride;      // input element stride of the merged leading dims
  long long rows;              // rows per batch item: the product of the row dims' lengths
  long long batch_rows;        // batch * rows
  long long walk;              // length of the walked dim
  long long walk_stride;       // its input element stride (KEPT)
};

namespace rsz {

// The walked dim of a fast kernel: the last resized dim, or the unresized dims after them.
enum walked { RESIZED, KEPT };

// The weight type of nearest's tables: none (records hold offsets only).
struct no_weight {};
template <typename W> struct has_weights { static constexpr bool value = true; };
template <> struct has_weights<no_weight> { static constexpr bool value = false; };

__host__ __device__ constexpr int ipow(int b, int e) { return e == 0 ? 1 : b * ipow(b, e - 1); }
__host__ __device__ constexpr int ilog2(int n) { return n <= 1 ? 0 : 1 + ilog2(n / 2); }

// The first offset of an extrapolated coordinate: the least value of the offset type, which no
// offset of an input indexed with that type reaches.
template <typename I> struct outside;
template <> struct outside<int> { static constexpr int value = RESIZE_OUTSIDE; };
template <> struct outside<long long> { static constexpr long long value = RESIZE_OUTSIDE_WIDE; };

// The first offset of a record made safe to read with (0 when extrapolated), for elements of
// BYTES bytes. A long long offset of elements of 2 bytes or more is below 2^62 in magnitude (its
// byte offset is below 2^63), so dropping the top bit maps outside<long long> = -2^63 to 0 and
// keeps every offset, with no compare: once scaled by the element size, the shifts fold into
// the address's own.
template <int BYTES, typename I> __device__ __forceinline__ I first_offset(I i) {
  if constexpr (BYTES >= 2 && sizeof(I) == 8) {
    return (I)((unsigned long long)i << 1) >> 1;
  } else {
    return i == outside<I>::value ? 0 : i;
  }
}

// The table record of one output coordinate: TAPS weights (none for no_weight), then TAPS input
// offsets of type I, the first outside<I> where the coordinate is extrapolated; aligned for
// vector loads.
template <typename W, int TAPS, typename I> struct record_size {
  static constexpr int value = TAPS * (int)(sizeof(W) + sizeof(I));
};
template <int TAPS, typename I> struct record_size<no_weight, TAPS, I> {
  static constexpr int value = TAPS * (int)sizeof(I);
};
__host__ __device__ constexpr int record_align(int bytes) {
  return bytes % 16 == 0 ? 16 : bytes % 8 == 0 ? 8 : 4;
}

static_assert(record_align(16) <= RESIZE_TABLE_ALIGN, "records are read at the table's alignment");

template <typename W, int TAPS, typename I, int B = record_size<W, TAPS, I>::value>
struct alignas(record_align(B)) record {
  W weight[TAPS];
  I offset[TAPS];
};
template <int TAPS, typename I, int B>
struct alignas(record_align(B)) record<no_weight, TAPS, I, B> {
  I offset[TAPS];
};

// One thread's row: input pointers and weight products of the K = TAPS^A tap combinations of
// its A row dims, the resized dims before the walked one (combination k takes tap
// (k / TAPS^(A-1-a)) % TAPS of dim a: the generic kernel's order; weights only with a weight
// type), and whether no row coordinate is extrapolated.
template <typename T, typename Acc, typename W, int A, int TAPS, typename I> struct fast_row {
  static constexpr int K = ipow(TAPS, A);
  static constexpr bool weighted = has_weights<W>::value;
  const T* at[K];
  Acc part[K];
  bool inside;
  I index;  // output row: batch item * rows + row within it

  // False for threads past the last row.
  __device__ __forceinline__ bool locate(const T* __restrict__ x, const ResizeFastGeom& rows,
                                         const record<W, TAPS, I>* __restrict__ table) {
    index = ((I)blockIdx.z * (I)gridDim.y + (I)blockIdx.y) * (I)blockDim.y + (I)threadIdx.y;
    if (index >= (I)rows.batch_rows) return false;
    const I batch = index / (I)rows.rows;
    I coord[A > 0 ? A : 1];  // of the row dims, outermost first (one unused slot where A == 0)
    if constexpr (A > 0) {
      coord[0] = oc::unravel<A, 1>(index - batch * (I)rows.rows, coord,
                                   [&](int a, I v) { return v / (I)rows.out[a]; },
                                   [&](int a) { return (I)rows.out[a]; });
    }
    I offset[A + 1][TAPS];  // dims 0 .. A-1 (one spare row: no zero-length arrays)
    Acc weight[A + 1][TAPS];
    inside = true;
#pragma unroll
    for (int a = 0; a < A; ++a) {
      const record<W, TAPS, I> rec = table[(I)rows.table[a] + coord[a]];
      inside = inside && rec.offset[0] != outside<I>::value;
#pragma unroll
      for (int t = 0; t < TAPS; ++t) {
        offset[a][t] = t == 0 ? first_offset<sizeof(T)>(rec.offset[0]) : rec.offset[t];
        if constexpr (weighted) weight[a][t] = (Acc)rec.weight[t];
      }
    }
    constexpr int tap_bits = ilog2(TAPS);  // TAPS is a power of two: taps by shifts
#pragma unroll
    for (int k = 0; k < K; ++k) {
      I input_offset = batch * (I)rows.batch_stride;
      Acc product = Acc(1);
#pragma unroll
      for (int a = 0; a < A; ++a) {
        const int t = (k >> (tap_bits * (A - 1 - a))) & (TAPS - 1);
        input_offset += offset[a][t];
        if constexpr (weighted) product = product * weight[a][t];
      }
      at[k] = x + input_offset;
      part[k] = product;
    }
    return true;
  }
};

// Calls visit(pos) for every position `pos` along the walked dim of this thread, V per iteration
// of a grid-stride loop. Past the end of the row pos is clamped to the last position (no branch
// per output): the thread then stores the value that the last position's own thread stores, a
// benign race.
template <int V, typename I, typename F>
__device__ __forceinline__ void fast_walk(I n, F&& visit) {
  const I step = (I)gridDim.x * (I)blockDim.x * V;
#pragma unroll 1
  for (I first = (I)blockIdx.x * (I)blockDim.x * V + (I)threadIdx.x; first < n; first += step) {
#pragma unroll
    for (int v = 0; v < V; ++v) visit(oc::imin<I>(first + v * (I)blockDim.x, n - 1));
  }
}

}  // namespace rsz

// Nearest: a copy of the chosen element, offset tables only. `inner` is the walked dim's table
// when it is resized (table + rows.table[R - 1], passed as its own pointer: one multiply-add per
// record address).
template <typename T, int R, int V, rsz::walked WALK, typename I>
__global__ void __launch_bounds__(OC_BLOCK, RESIZE_FAST_MIN_BLOCKS) resize_nearest_fast(
    const T* __restrict__ x, T* __restrict__ y,
    const rsz::record<rsz::no_weight, 1, I>* __restrict__ table,
    const rsz::record<rsz::no_weight, 1, I>* __restrict__ inner, const ResizeFastGeom rows) {
  static_assert(1 <= R && R <= RESIZE_FAST_MAXD, "1 .. RESIZE_FAST_MAXD resized dims");
  rsz::fast_row<T, int, rsz::no_weight, WALK == rsz::KEPT ? R : R - 1, 1, I> row;
  if (!row.locate(x, rows, table)) return;
  const I n = (I)rows.walk, start = row.index * n;
  const T fill = rsz::fill_value<T>(rows.fill);
  rsz::fast_walk<V>(n, [&](I pos) {
    if constexpr (WALK == rsz::KEPT) {
      const T value = row.at[0][pos * (I)rows.walk_stride];
      y[start + pos] = row.inside ? value : fill;
    } else {
      const I offset = inner[pos].offset[0];
      const T value = row.at[0][rsz::first_offset<sizeof(T)>(offset)];
      y[start + pos] = row.inside && offset != rsz::outside<I>::value ? value : fill;
    }
  });
}

// Linear and cubic: the generic kernel's sum, term for term in its order (for KEPT the weight
// products of all R dims are the row's: one multiply-add per term).
template <typename T, typename Acc, typename W, int R, int TAPS, int V, rsz::walked WALK,
          typename I>
__global__ void __launch_bounds__(OC_BLOCK, RESIZE_FAST_MIN_BLOCKS) resize_weighted_fast(
    const T* __restrict__ x, T* __restrict__ y,
    const rsz::record<W, TAPS, I>* __restrict__ table,
    const rsz::record<W, TAPS, I>* __restrict__ inner, const ResizeFastGeom rows) {
  static_assert(1 <= R && R <= RESIZE_FAST_MAXD, "1 .. RESIZE_FAST_MAXD resized dims");
  rsz::fast_row<T, Acc, W, WALK == rsz::KEPT ? R : R - 1, TAPS, I> row;
  if (!row.locate(x, rows, table)) return;
  const I n = (I)rows.walk, start = row.index * n;
  const T fill = rsz::fill_value<T>(rows.fill);
  rsz::fast_walk<V>(n, [&](I pos) {
    Acc acc = Acc(0);
    bool inside = row.inside;
    if constexpr (WALK == rsz::KEPT) {
      const I offset = pos * (I)rows.walk_stride;
#pragma unroll
      for (int k = 0; k < row.K; ++k) acc += row.part[k] * oc::load<Acc>(row.at[k] + offset);
    } else {
      const rsz::record<W, TAPS, I> rec = inner[pos];
      I offset[TAPS];
#pragma unroll
      for (int t = 0; t < TAPS; ++t)
        offset[t] = t == 0 ? rsz::first_offset<sizeof(T)>(rec.offset[0]) : rec.offset[t];
#pragma unroll
      for (int k = 0; k < row.K; ++k) {
#pragma unroll
        for (int t = 0; t < TAPS; ++t)
          acc += row.part[k] * (Acc)rec.weight[t] * oc::load<Acc>(row.at[k] + offset[t]);
      }
      inside = inside && rec.offset[0] != rsz::outside<I>::value;
    }
    y[start + pos] = inside ? rsz::result<T, Acc>::from(acc) : fill;
  });
}

// Resize's gradient, one pass per resized dim (the passes, their order and the sum's order:
// onnx_cupy.resize.plan_grad): viewing the pass's input (dY, or the partial gradient) as
// [outer, m, inner] and its output as [outer, n, inner], each thread writes one output element
//   dst[q, i, j] = sum over k in [start[i], start[i + 1]) of weight[k] * src[q, source[k], j]
// from +0, the terms in the table's order, each product and sum rounded in Acc. The input holds
// T (X's storage type) where FROM_T, else Acc (a partial gradient); the output T where TO_T.
struct ResizeGradGeom {
  long long total;   // output elements: outer * n * inner
  long long n;       // the output's length along the dim (X's)
  long long m;       // the input's (Y's)
  long long inner;   // elements after the dim
};

namespace rsz {
// A if B, else C.
template <bool B, typename A, typename C> struct pick { using type = A; };
template <typename A, typename C> struct pick<false, A, C> { using type = C; };
}  // namespace rsz

template <typename T, typename Acc, bool FROM_T, bool TO_T, typename I>
__global__ void __launch_bounds__(OC_BLOCK, RESIZE_GENERIC_MIN_BLOCKS) resize_grad(
    const typename rsz::pick<FROM_T, T, Acc>::type* __restrict__ src,
    typename rsz::pick<TO_T, T, Acc>::type* __restrict__ dst,
    const long long* __restrict__ start, const long long* __restrict__ source,
    const Acc* __restrict__ weight, const ResizeGradGeom g) {
  const I n = (I)g.n, inner = (I)g.inner;
#pragma unroll 1  // grid-stride loop: no trip-count division
  for (I e = oc::first_index<I>(); e < (I)g.total; e += oc::grid_stride<I>()) {
    const I row = e / inner, i = row % n;
    const auto* base = src + (row / n) * (I)g.m * inner + (e - row * inner);
    Acc acc = Acc(0);
#pragma unroll 1
    for (I k = (I)start[i]; k < (I)start[i + 1]; ++k)
      acc += weight[k] * oc::load<Acc>(base + (I)source[k] * inner);
    oc::store<Acc>(dst + e, acc);
  }
}
