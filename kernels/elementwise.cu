// Elementwise steps of the PyTorch-style functions (onnx_cupy.elementwise): each computes what the
// NumPy path's own NumPy call computes, element for element, on C-contiguous arrays of `count`
// elements (the host copies others). One thread per element and loop iteration, grid-stride:
//   elementwise_power<T, Acc, I>    y = T(T(x * scale) ** exponent)   (lp_pool: x ** p, then the
//                                   mean times the kernel volume, to the power 1 / p)
//   elementwise_widen<T, I>         y = double(x)                      (divisor_override: X
//                                   pooled in float64)
//   elementwise_narrow<T, I>        y = T(w * factor[i % plane])       (the float64 mean times
//                                   count / divisor_override, rounded once to T)
//   elementwise_convert<S, D, I>    y = D(x)                           (torchvision boxes and
//                                   their image indices in the input's dtype and in int64)
//   elementwise_product<T, Acc, I>  y = T(T(a * T(c * b)) * scale), masked by z where given:
//                                   0 where z = 0, y - y where z is NaN (lp_pool's gradient)
// The host rounds the scale and the exponent to T, as NumPy takes a Python scalar with an array
// of T. x ** p is NumPy's power loop for T: for float and double its fast paths of a scalar
// exponent (p = -1, 0, 0.5, 1, 2: 1 / x, 1, sqrt(x), x, x * x), else pow; for float16 and
// bfloat16 (evaluated in float, as NumPy and ml_dtypes do, with powf and no fast path) x and
// x * x where p is 1 or 2, which powf gives exactly (the result is representable), else pow.
// pow is the one operation whose bits are the platform's: CUDA's pow on the GPU, the C library's
// on the emulator and on NumPy's scalar loops (NumPy may use its own SIMD pow for float and
// double: within an ulp). Conversions round once, to nearest even, as NumPy's casts: a double
// or a 64-bit integer goes to float16 or bfloat16 through a float rounded to odd, which leaves
// the final rounding as the one rounding of the exact value; a float becomes int64 by
// truncation, NaN and values out of range giving INT64_MIN (NumPy's casts on x86-64), or 0 from
// bfloat16 (ml_dtypes' cast).
#include "common.cuh"

struct ElementwiseGeom {
  long long count;           // elements
  long long plane;           // elementwise_narrow: entries of the factor table
  unsigned int by_plane[2];  // its oc::fast_div divisor (32-bit I)
  float scale_f;             // elementwise_power: the scale and exponent, rounded to T, in the
  float exponent_f;          // accumulate type: float ...
  double scale_d;            // ... and double
  double exponent_d;
  float coefficient_f;       // elementwise_product: the coefficient, rounded to T
  double coefficient_d;
};

namespace ew {

template <typename Acc> struct scalars;
template <> struct scalars<float> {
  static __device__ __forceinline__ float scale(const ElementwiseGeom& g) { return g.scale_f; }
  static __device__ __forceinline__ float exponent(const ElementwiseGeom& g) {
    return g.exponent_f;
  }
  static __device__ __forceinline__ float coefficient(const ElementwiseGeom& g) {
    return g.coefficient_f;
  }
};
template <> struct scalars<double> {
  static __device__ __forceinline__ double scale(const ElementwiseGeom& g) { return g.scale_d; }
  static __device__ __forceinline__ double exponent(const ElementwiseGeom& g) {
    return g.exponent_d;
  }
  static __device__ __forceinline__ double coefficient(const ElementwiseGeom& g) {
    return g.coefficient_d;
  }
};

template <typename T> struct is_16bit { static const bool value = false; };
template <> struct is_16bit<oc::half_t> { static const bool value = true; };
template <> struct is_16bit<oc::bf16_t> { static const bool value = true; };
template <typename T> struct is_bf16 { static const bool value = false; };
template <> struct is_bf16<oc::bf16_t> { static const bool value = true; };

// x ** p as NumPy's power loop for storage T with a scalar exponent p (see the file's comment).
template <typename T, typename Acc>
__device__ __forceinline__ Acc power(Acc x, Acc p) {
  if (p == Acc(1)) return x;
  if (p == Acc(2)) return oc::rn<Acc>::mul(x, x);
  if constexpr (!is_16bit<T>::value) {
    if (p == Acc(-1)) return oc::rn<Acc>::div(Acc(1), x);
    if (p == Acc(0)) return Acc(1);
    if (p == Acc(0.5)) return sqrt(x);
  }
  return pow(x, p);
}

// v rounded toward zero to a float, its last bit set where that dropped anything (round to odd):
// a float16 or bfloat16 rounding of it is that of v (a float keeps 13 bits more than float16).
__device__ __forceinline__ float odd_float(double v) {
  const float f = (float)v;
  if (f != f || (double)f == v) return f;  // NaN, or exact (infinities included)
  unsigned int u = oc::float_to_bits(f);
  if (fabs((double)f) > fabs(v)) u -= 1u;  // rounded away from zero (to inf too): step back
  return oc::bits_to_float(u | 1u);
}

// The magnitude a (a 64-bit integer's), rounded to odd at float precision.
__device__ __forceinline__ float odd_float(unsigned long long a) {
  unsigned long long sticky = 0;
  unsigned int shift = 0;
#pragma unroll 1
  while (a >> 24) {  // keep 24 significant bits, OR-ing every bit dropped into the last
    sticky |= a & 1ull;
    a >>= 1;
    ++shift;
  }
  return (float)(a | sticky) * oc::bits_to_float((127u + shift) << 23);  // exact: 2^shift
}

// Storage D of a value of storage S, rounded once to nearest even (NumPy's astype).
template <typename S, typename D, bool SInt = oc::int_range<S>::value> struct convert;
template <typename S, typename D> struct convert<S, D, false> {   // from a float
  static __device__ __forceinline__ D of(S x) {
    if constexpr (sizeof(D) == 8 && oc::int_range<D>::value) {   // int64: truncated
      const typename oc::acc_of<S>::type v = oc::cvt<typename oc::acc_of<S>::type, S>::load(x);
      if (!(v >= -9223372036854775808.0 && v < 9223372036854775808.0))  // NaN, out of range
        return is_bf16<S>::value ? D(0) : oc::int_range<D>::lo();
      return (D)v;
    } else if constexpr (sizeof(S) == 8) {   // from double
      if constexpr (is_16bit<D>::value) return oc::cvt<float, D>::store(odd_float(x));
      else return (D)x;
    } else {   // from float, float16 or bfloat16: exactly a float first
      const float v = oc::cvt<float, S>::load(x);
      if constexpr (sizeof(D) == 8) return (double)v;
      else return oc::cvt<float, D>::store(v);
    }
  }
};
template <typename S, typename D> struct convert<S, D, true> {   // from an integer
  static __device__ __forceinline__ D of(S x) {
    if constexpr (is_16bit<D>::value) {
      const bool negative = x < S(0);
      const unsigned long long a = negative ? 0ull - (unsigned long long)x
                                            : (unsigned long long)x;
      const float odd = odd_float(a);
      return oc::cvt<float, D>::store(negative ? -odd : odd);
    } else {
      return (D)x;
    }
  }
};

}  // namespace ew

template <typename T, typename Acc, typename I>
__global__ void __launch_bounds__(OC_BLOCK) elementwise_power(const T* __restrict__ x,
                                                              T* __restrict__ y,
                                                              const ElementwiseGeom g) {
  const Acc scale = ew::scalars<Acc>::scale(g), exponent = ew::scalars<Acc>::exponent(g);
#pragma unroll 1  // grid-stride loop: no trip-count division
  for (I i = oc::first_index<I>(); i < (I)g.count; i += oc::grid_stride<I>()) {
    // x * scale stored as T (NumPy's in-place product), then raised to the exponent
    const Acc scaled = oc::cvt<Acc, T>::load(
        oc::cvt<Acc, T>::store(oc::rn<Acc>::mul(oc::cvt<Acc, T>::load(x[i]), scale)));
    y[i] = oc::cvt<Acc, T>::store(ew::power<T, Acc>(scaled, exponent));
  }
}

template <typename T, typename I>
__global__ void __launch_bounds__(OC_BLOCK) elementwise_widen(const T* __restrict__ x,
                                                              double* __restrict__ y,
                                                              const ElementwiseGeom g) {
#pragma unroll 1
  for (I i = oc::first_index<I>(); i < (I)g.count; i += oc::grid_stride<I>())
    y[i] = ew::convert<T, double>::of(x[i]);
}

template <typename T, typename I>
__global__ void __launch_bounds__(OC_BLOCK) elementwise_narrow(const double* __restrict__ w,
                                                               T* __restrict__ y,
                                                               const double* __restrict__ factor,
                                                               const ElementwiseGeom g) {
#pragma unroll 1
  for (I i = oc::first_index<I>(); i < (I)g.count; i += oc::grid_stride<I>()) {
    I at;   // i % plane
    if constexpr (sizeof(I) == sizeof(int)) at = i - (I)oc::fast_div(i, g.by_plane) * (I)g.plane;
    else at = i % (I)g.plane;
    y[i] = ew::convert<double, T>::of(oc::rn<double>::mul(w[i], factor[at]));
  }
}

template <typename S, typename D, typename I>
__global__ void __launch_bounds__(OC_BLOCK) elementwise_convert(const S* __restrict__ x,
                                                                D* __restrict__ y,
                                                                const ElementwiseGeom g) {
#pragma unroll 1
  for (I i = oc::first_index<I>(); i < (I)g.count; i += oc::grid_stride<I>())
    y[i] = ew::convert<S, D>::of(x[i]);
}

template <typename T, typename Acc, typename I>
__global__ void __launch_bounds__(OC_BLOCK) elementwise_product(const T* __restrict__ a,
                                                                const T* __restrict__ b,
                                                                const T* __restrict__ z,
                                                                T* __restrict__ y,
                                                                const ElementwiseGeom g) {
  const Acc c = ew::scalars<Acc>::coefficient(g), scale = ew::scalars<Acc>::scale(g);
#pragma unroll 1
  for (I i = oc::first_index<I>(); i < (I)g.count; i += oc::grid_stride<I>()) {
    // each product stored as T (NumPy's in-place products), the scale's by 1 exact
    const Acc cb = oc::cvt<Acc, T>::load(
        oc::cvt<Acc, T>::store(oc::rn<Acc>::mul(c, oc::cvt<Acc, T>::load(b[i]))));
    const Acc ab = oc::cvt<Acc, T>::load(
        oc::cvt<Acc, T>::store(oc::rn<Acc>::mul(oc::cvt<Acc, T>::load(a[i]), cb)));
    Acc v = oc::cvt<Acc, T>::load(oc::cvt<Acc, T>::store(oc::rn<Acc>::mul(ab, scale)));
    if (z != nullptr) {
      const Acc m = oc::cvt<Acc, T>::load(z[i]);
      if (m == Acc(0)) v = Acc(0);
      else if (m != m) v = oc::rn<Acc>::sub(v, v);  // 0, or NaN for an infinite or NaN v
    }
    y[i] = oc::cvt<Acc, T>::store(v);
  }
}
