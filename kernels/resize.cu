// Resize: a mode-agnostic tensor-product gather, one thread per output element, grid-stride.
//   y[o] = sum over taps t_d of every resized dim d of
//          prod_d weight[row_d + t_d] * x[base(o) + sum_d index[row_d + t_d] * in_stride[d]]
// The host plan gives each resized dim a table of `taps` (input index, weight) pairs per output
// coordinate, row_d = table[d] + o_d * taps[d] (nearest: 1 tap; linear: 2; cubic: 4; antialias:
// wider). Unresized dims (taps 0) gather o_d directly. A row whose first index is negative lies
// outside the tf_crop_and_resize crop: the output element is the extrapolation value.
#include "common.cuh"

#define RESIZE_MAXD 16  // most dims (after merging unresized neighbours) the parameter block holds

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

// Nearest integer, ties to even, where every value within min(2^-40 * max(|v|, 1), 2^-12) of
// k + 0.5 counts as a tie: a sum of taps whose exact value is a tie rounds the same whatever
// order its terms were added in (as round_half_even in onnx_cupy.plans.resize).
__device__ __forceinline__ double round_half_even(double v) {
  const double low = floor(v);
  const double band = fmin(0x1p-40 * fmax(fabs(v), 1.0), 0x1p-12);
  if (fabs(v - low - 0.5) <= band) return low + fabs(fmod(low, 2.0));
  return nearbyint(v);
}

// The accumulated value in the storage type: IEEE rounding for floats; integers round half to
// even and saturate ((Acc)hi may round up to 2^63 or 2^64: anything at or above it saturates).
template <typename T, typename Acc, bool Int = int_range<T>::value> struct result {
  static __device__ __forceinline__ T from(Acc v) { return oc::cvt<Acc, T>::store(v); }
};
template <typename T, typename Acc> struct result<T, Acc, true> {
  static __device__ __forceinline__ T from(Acc v) {
    v = round_half_even(v);
    if (v >= (Acc)int_range<T>::hi()) return int_range<T>::hi();
    if (v <= (Acc)int_range<T>::lo()) return int_range<T>::lo();
    return (T)v;
  }
};

template <typename T> __device__ __forceinline__ void fill(T* p, const ResizeGeom& g) {
  unsigned char* d = (unsigned char*)p;
  for (int b = 0; b < (int)sizeof(T); ++b) d[b] = g.fill[b];
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
      rsz::fill(y + o, g);
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
  for (I o = oc::first_index<I>(); o < (I)g.total; o += oc::grid_stride<I>()) {
    I base, row[RESIZE_MAXD];
    if (!rsz::locate<I>(o, g, index, base, row)) {
      rsz::fill(y + o, g);
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
