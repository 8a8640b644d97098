// Shared device helpers: storage types for 16-bit floats, accumulate-type traits,
// load/store conversions, grid-stride indexing. Self-contained (no CUDA headers) so the
// same text compiles under NVRTC and, through host_shim.h, under the host C++ compiler.
#pragma once

// Constants shared with the host code, defined by the loader for every compiler (NVRTC and the
// emulator's host compiler) from their one Python source (onnx_cupy.core.loader.COMMON_DEFINES):
//   OC_BLOCK                      threads per block of the 1-D launches, the __launch_bounds__
//   OC_WARP                       threads of a warp (shuffle widths, per-warp partial results)
//   OC_TIE_BAND, OC_TIE_BAND_MAX  the tie band of round_half_even (onnx_cupy.core.numerics)
#if !defined(OC_BLOCK) || !defined(OC_WARP) || !defined(OC_TIE_BAND) || !defined(OC_TIE_BAND_MAX)
#error "compile through onnx_cupy.core.loader, which defines OC_BLOCK, OC_WARP, OC_TIE_BAND, OC_TIE_BAND_MAX"
#endif

namespace oc {

struct half_t { unsigned short bits; };   // IEEE binary16 storage
struct bf16_t { unsigned short bits; };   // bfloat16 storage

template <typename T> struct acc_of { typedef T type; };
template <> struct acc_of<half_t> { typedef float type; };
template <> struct acc_of<bf16_t> { typedef float type; };

__device__ __forceinline__ float bits_to_float(unsigned int u) {
  union { unsigned int u; float f; } c; c.u = u; return c.f;
}
__device__ __forceinline__ unsigned int float_to_bits(float f) {
  union { unsigned int u; float f; } c; c.f = f; return c.u;
}

__device__ __forceinline__ float half_to_float(unsigned short h) {
#if defined(__CUDA_ARCH__)
  float f; asm("cvt.f32.f16 %0, %1;" : "=f"(f) : "h"(h)); return f;
#else
  unsigned int sign = (unsigned int)(h & 0x8000u) << 16;
  unsigned int exp = (h >> 10) & 0x1Fu, man = h & 0x3FFu;
  if (exp == 0x1Fu) return bits_to_float(sign | 0x7F800000u | (man << 13));
  if (exp == 0) {
    if (man == 0) return bits_to_float(sign);
    float f = (float)man * 5.9604644775390625e-08f;  // man * 2^-24
    return sign ? -f : f;
  }
  return bits_to_float(sign | ((exp + 112u) << 23) | (man << 13));
#endif
}

__device__ __forceinline__ unsigned short float_to_half(float f) {
#if defined(__CUDA_ARCH__)
  unsigned short h; asm("cvt.rn.f16.f32 %0, %1;" : "=h"(h) : "f"(f)); return h;
#else
  unsigned int u = float_to_bits(f);
  unsigned short sign = (unsigned short)((u >> 16) & 0x8000u);
  unsigned int a = u & 0x7FFFFFFFu;
  if (a >= 0x7F800000u) return sign | (a > 0x7F800000u ? 0x7E00u : 0x7C00u);
  if (a >= 0x477FF000u) return sign | 0x7C00u;  // rounds to >= 65520: overflow to inf
  if (a < 0x38800000u) {                          // result is subnormal or zero
    float m = bits_to_float(a) * 16777216.0f;     // exact scale by 2^24
    unsigned int r = (unsigned int)m;             // truncated
    float frac = m - (float)r;
    if (frac > 0.5f || (frac == 0.5f && (r & 1u))) ++r;
    return sign | (unsigned short)r;
  }
  unsigned int rounded = a + 0x0FFFu + ((a >> 13) & 1u);  // round to nearest even at bit 13
  return sign | (unsigned short)((rounded - 0x38000000u) >> 13);
#endif
}

__device__ __forceinline__ float bf16_to_float(unsigned short b) {
  return bits_to_float((unsigned int)b << 16);
}
__device__ __forceinline__ unsigned short float_to_bf16(float f) {
  // Round to nearest even in integer arithmetic; a NaN keeps its sign and payload, made quiet.
  const unsigned int u = float_to_bits(f);
  if (f != f) return (unsigned short)((u >> 16) | 0x0040u);
  return (unsigned short)((u + 0x7FFFu + ((u >> 16) & 1u)) >> 16);
}

template <typename Acc, typename T> struct cvt {
  static __device__ __forceinline__ Acc load(T v) { return (Acc)v; }
  static __device__ __forceinline__ T store(Acc v) { return (T)v; }
};
template <> struct cvt<float, half_t> {
  static __device__ __forceinline__ float load(half_t v) { return half_to_float(v.bits); }
  static __device__ __forceinline__ half_t store(float v) { half_t h; h.bits = float_to_half(v); return h; }
};
template <> struct cvt<float, bf16_t> {
  static __device__ __forceinline__ float load(bf16_t v) { return bf16_to_float(v.bits); }
  static __device__ __forceinline__ bf16_t store(float v) { bf16_t h; h.bits = float_to_bf16(v); return h; }
};

// A double rounded to float toward zero, the last bit set where that was inexact (rounding to
// odd): rounding the result to nearest even in a type of at most 22 significand bits (half,
// bfloat16) rounds the double once, as a direct conversion would. (A NaN stays a NaN, an
// overflow gives the largest float, an underflow the least subnormal: each rounds as the double.)
__device__ __forceinline__ float round_to_odd_float(double v) {
  const float f = (float)v;
  if ((double)f == v || v != v) return f;
  unsigned int u = float_to_bits(f);
  if (fabs((double)f) > fabs(v)) --u;  // rounded away from zero: one step back toward it
  return bits_to_float(u | 1u);
}

template <> struct cvt<double, half_t> {
  static __device__ __forceinline__ double load(half_t v) { return (double)half_to_float(v.bits); }
  static __device__ __forceinline__ half_t store(double v) {
    half_t h; h.bits = float_to_half(round_to_odd_float(v)); return h;
  }
};
template <> struct cvt<double, bf16_t> {
  static __device__ __forceinline__ double load(bf16_t v) { return (double)bf16_to_float(v.bits); }
  static __device__ __forceinline__ bf16_t store(double v) {
    bf16_t h; h.bits = float_to_bf16(round_to_odd_float(v)); return h;
  }
};

template <typename Acc, typename T> __device__ __forceinline__ Acc load(const T* p) {
  return cvt<Acc, T>::load(*p);
}
template <typename Acc, typename T> __device__ __forceinline__ void store(T* p, Acc v) {
  *p = cvt<Acc, T>::store(v);
}

template <typename I> __device__ __forceinline__ I first_index() {
  return (I)blockIdx.x * (I)blockDim.x + (I)threadIdx.x;
}
template <typename I> __device__ __forceinline__ I grid_stride() {
  return (I)blockDim.x * (I)gridDim.x;
}

template <typename I> __device__ __forceinline__ I imin(I a, I b) { return a < b ? a : b; }
template <typename I> __device__ __forceinline__ I imax(I a, I b) { return a > b ? a : b; }

// n / d by multiply-shift for 0 <= n < 2^31 and 1 <= d < 2^31: with t = mulhi(n, mul),
// n / d = (t + n) >> shift, where by = {mul, shift} comes from the host (launch.divider).
__device__ __forceinline__ int fast_div(int n, const unsigned int (&by)[2]) {
#if defined(__CUDA_ARCH__)
  const unsigned int t = __umulhi((unsigned int)n, by[0]);
#else
  const unsigned int t = (unsigned int)(((unsigned long long)(unsigned int)n * by[0]) >> 32);
#endif
  return (int)((t + (unsigned int)n) >> by[1]);
}

// ceil(a / b) for b > 0 and any sign of a.
template <typename I> __device__ __forceinline__ I ceil_div(I a, I b) {
  return a >= 0 ? (a + b - 1) / b : -((-a) / b);
}

// Nearest integer, ties to even, where every value within
// min(OC_TIE_BAND * max(|v|, 1), OC_TIE_BAND_MAX) of k + 0.5 counts as a tie: a sum whose exact
// value is a tie rounds the same whatever order its terms were added in (as
// onnx_cupy.core.numerics.round_half_even, operation for operation).
__device__ __forceinline__ double round_half_even(double v) {
  const double low = floor(v);
  const double band = fmin(OC_TIE_BAND * fmax(fabs(v), 1.0), OC_TIE_BAND_MAX);
  if (fabs(v - low - 0.5) <= band) return low + fabs(fmod(low, 2.0));
  return nearbyint(v);
}


// Integer storage types and their ranges (T's lo() and hi()).
template <typename T> struct int_range { static const bool value = false; };
#define OC_INT_RANGE(T, LO, HI)                                   \
  template <> struct int_range<T> {                               \
    static const bool value = true;                               \
    static __device__ __forceinline__ T lo() { return LO; }       \
    static __device__ __forceinline__ T hi() { return HI; }       \
  };
OC_INT_RANGE(signed char, -128, 127)
OC_INT_RANGE(unsigned char, 0, 255)
OC_INT_RANGE(short, -32768, 32767)
OC_INT_RANGE(unsigned short, 0, 65535)
OC_INT_RANGE(int, -2147483647 - 1, 2147483647)
OC_INT_RANGE(unsigned int, 0u, 4294967295u)
OC_INT_RANGE(long long, -9223372036854775807LL - 1, 9223372036854775807LL)
OC_INT_RANGE(unsigned long long, 0ull, 18446744073709551615ull)
#undef OC_INT_RANGE

// An accumulated value in the storage type: IEEE rounding for floats; integers round half to
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

// ---------------------------------------------------------------- rank-templated index helpers
// (the rank R is a template parameter so that loops over axes unroll and per-axis values stay in
// registers)

// Coordinates of the row-major flat index `flat` over axes FIRST .. R - 1, into coord[FIRST ..
// R - 1]: axis a has extent(a), and divide(a, v) returns v / extent(a) for v >= 0 (a division,
// or a multiply-shift the host computed). Returns flat / (extent(FIRST) * ... * extent(R - 1)),
// the index over the axes before them (with FIRST = 1 and flat < the product of all R extents,
// coordinate 0 itself: R - 1 divisions). The loop unrolls, so coord lives in registers when the
// caller indexes it with constants only.
template <int R, int FIRST = 0, typename I, typename Divide, typename Extent>
__device__ __forceinline__ I unravel(I flat, I (&coord)[R], const Divide& divide,
                                     const Extent& extent) {
#pragma unroll
  for (int a = R - 1; a >= FIRST; --a) {
    const I rest = divide(a, flat);
    coord[a] = flat - rest * extent(a);
    flat = rest;
  }
  return flat;
}

// The unsigned word in which offsets of index type I are formed (wrapping where a window that
// reads nothing steps outside the input), cast back to I to address memory.
template <typename I> struct offset_of;
template <> struct offset_of<int> { typedef unsigned int type; };
template <> struct offset_of<long long> { typedef unsigned long long type; };

// Arithmetic in F rounded operation by operation: a product and a sum are never fused into a
// multiply-add (on the GPU through the _rn intrinsics, __fadd_rn ... __dmul_rn), so that a
// formula gives the same number on every path (on the host plain operations: the emulator's g++
// builds for baseline x86-64, which has no multiply-add instruction to fuse them into).
template <typename F> struct rn;
#if defined(__CUDA_ARCH__)
#define OC_RN(F, P)                                                                    \
  template <> struct rn<F> {                                                           \
    static __device__ __forceinline__ F add(F a, F b) { return __##P##add_rn(a, b); }  \
    static __device__ __forceinline__ F sub(F a, F b) { return __##P##sub_rn(a, b); }  \
    static __device__ __forceinline__ F mul(F a, F b) { return __##P##mul_rn(a, b); }  \
    static __device__ __forceinline__ F div(F a, F b) { return __##P##div_rn(a, b); }  \
  };
#else
#define OC_RN(F, P)                                             \
  template <> struct rn<F> {                                    \
    static F add(F a, F b) { return a + b; }                    \
    static F sub(F a, F b) { return a - b; }                    \
    static F mul(F a, F b) { return a * b; }                    \
    static F div(F a, F b) { return a / b; }                    \
  };
#endif
OC_RN(float, f)
OC_RN(double, d)
#undef OC_RN

}  // namespace oc

