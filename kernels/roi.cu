// RoiAlign and MaxRoiPool: y[k, c, ph, pw] pooled from bin (ph, pw) of region k of image b(k),
// channel c, of x (N, C, H, W), by the formulas of onnx_cupy.roi.plan (its docstring is the
// specification; the arithmetic below follows it operation by operation, in the accumulate type
// A, each product, sum and quotient rounded on its own: never fused into a multiply-add):
//   roi_align<T, I, MAX>  rois (K, 4) = (x1, y1, x2, y2), batch_indices (K,) int64; bilinear
//                         samples on a gh x gw grid per bin, averaged (MAX false) or the running
//                         max of their weighted corners (MAX true);
//   max_roi_pool<T, I>    rois (K, 5) = (b, x1, y1, x2, y2); the max over each bin of whole
//                         pixels between rounded corners (0 for an empty bin).
// One thread per output element, in a grid-stride loop; (k, c, ph, pw) from the flat index by
// the host's multiply-shift divisors (32-bit I) or divisions (64-bit I). x, rois and y are
// C-contiguous (the host copies others). A region with a non-finite coordinate gives NaN; one
// whose batch index lies outside [0, N) (the host checks host arrays) gives 0.
#include "common.cuh"

// Defined by the loader from onnx_cupy.roi.kernel: ROI_MAX_GRID, the most samples per axis of
// an adaptive grid; ROI_CORNER_LIMIT, the bound of MaxRoiPool's rounded corners.
#if !defined(ROI_MAX_GRID) || !defined(ROI_CORNER_LIMIT)
#error "compile through onnx_cupy.core.loader, which defines ROI_MAX_GRID, ROI_CORNER_LIMIT"
#endif

struct RoiGeom {
  long long batch;           // N
  long long channels;        // C
  long long height;          // H
  long long width;           // W
  long long pooled_h;        // PH
  long long pooled_w;        // PW
  long long total;           // K * C * PH * PW
  long long sampling_ratio;  // RoiAlign: > 0 fixed, 0 adaptive
  float scale_f;             // spatial_scale, and RoiAlign's offset d, in float and double
  float offset_f;
  double scale_d;
  double offset_d;
  unsigned int by_pw[2];     // oc::fast_div divisors of PW, PH and C (32-bit I)
  unsigned int by_ph[2];
  unsigned int by_c[2];
};

namespace roi {

// Arithmetic in A rounded operation by operation (oc::rn), with the struct's spatial_scale and
// offset in A.
template <typename A> struct rn;
template <> struct rn<float> : oc::rn<float> {
  static __device__ __forceinline__ float scale(const RoiGeom& g) { return g.scale_f; }
  static __device__ __forceinline__ float offset(const RoiGeom& g) { return g.offset_f; }
};
template <> struct rn<double> : oc::rn<double> {
  static __device__ __forceinline__ double scale(const RoiGeom& g) { return g.scale_d; }
  static __device__ __forceinline__ double offset(const RoiGeom& g) { return g.offset_d; }
};

template <typename A> __device__ __forceinline__ bool finite(A v) { return v - v == A(0); }
// std::max(a, b): b where a < b, else a (a NaN a stays, a NaN b is passed over)
template <typename A> __device__ __forceinline__ A keep_max(A a, A b) { return a < b ? b : a; }

// (k, c, ph, pw) of the flat output index o.
template <typename I> struct place {
  I k, c, ph, pw;
  __device__ __forceinline__ place(I o, const RoiGeom& g) {
    I t;
    if constexpr (sizeof(I) == sizeof(int)) {
      t = (I)oc::fast_div(o, g.by_pw);
      pw = o - t * (I)g.pooled_w;
      o = t;
      t = (I)oc::fast_div(o, g.by_ph);
      ph = o - t * (I)g.pooled_h;
      o = t;
      t = (I)oc::fast_div(o, g.by_c);
    } else {
      t = o / (I)g.pooled_w;
      pw = o - t * (I)g.pooled_w;
      o = t;
      t = o / (I)g.pooled_h;
      ph = o - t * (I)g.pooled_h;
      o = t;
      t = o / (I)g.channels;
    }
    c = o - t * (I)g.channels;
    k = t;
  }
};

// One axis of a bilinear sample at v in [.., n]: the lower and upper pixel and their weights.
template <typename A, typename I> struct tap {
  I lo, hi;
  A l, h;
  __device__ __forceinline__ tap(A v, I n) {
    if (v <= A(0)) v = A(0);
    lo = (I)v;
    if (lo >= n - 1) {
      lo = hi = n - 1;
      v = (A)lo;
    } else {
      hi = lo + 1;
    }
    l = rn<A>::sub(v, (A)lo);
    h = rn<A>::sub(A(1), l);
  }
};

// The adaptive grid's samples per axis for a bin of size b (sampling_ratio 0).
template <typename A> __device__ __forceinline__ int grid_count(A b) {
  const A c = ceil(b);
  return c <= A(0) ? 0 : (c >= A(ROI_MAX_GRID) ? ROI_MAX_GRID : (int)c);
}

}  // namespace roi

template <typename T, typename I, bool MAX>
__global__ void roi_align(const T* __restrict__ x, const T* __restrict__ rois,
                          const long long* __restrict__ batch_indices, T* __restrict__ y,
                          const RoiGeom g) {
  using A = typename oc::acc_of<T>::type;
  using M = roi::rn<A>;
  const I H = (I)g.height, W = (I)g.width;
  const A s = M::scale(g), d = M::offset(g);
#pragma unroll 1  // grid-stride loop: no trip-count division
  for (I o = oc::first_index<I>(); o < (I)g.total; o += oc::grid_stride<I>()) {
    const roi::place<I> at(o, g);
    const T* box = rois + at.k * 4;
    const long long b = batch_indices[at.k];
    const A x0 = M::sub(M::mul(oc::load<A>(box), s), d);
    const A y0 = M::sub(M::mul(oc::load<A>(box + 1), s), d);
    const A x2 = M::sub(M::mul(oc::load<A>(box + 2), s), d);
    const A y2 = M::sub(M::mul(oc::load<A>(box + 3), s), d);
    if (!(roi::finite(x0) && roi::finite(y0) && roi::finite(x2) && roi::finite(y2))) {
      y[o] = oc::cvt<A, T>::store(x0 - x0 + y0 - y0 + x2 - x2 + y2 - y2);   // NaN
      continue;
    }
    if (b < 0 || b >= g.batch || H == 0 || W == 0) {
      y[o] = oc::cvt<A, T>::store(A(0));
      continue;
    }
    A h = M::sub(y2, y0), w = M::sub(x2, x0);
    if (d == A(0)) {   // output_half_pixel: a region at least 1 x 1
      h = roi::keep_max(h, A(1));
      w = roi::keep_max(w, A(1));
    }
    const A bh = M::div(h, (A)g.pooled_h), bw = M::div(w, (A)g.pooled_w);
    const int gh = g.sampling_ratio > 0 ? (int)g.sampling_ratio : roi::grid_count(bh);
    const int gw = g.sampling_ratio > 0 ? (int)g.sampling_ratio : roi::grid_count(bw);
    const A ah = (A)gh, aw = (A)gw;
    const A top = M::add(y0, M::mul((A)at.ph, bh)), left = M::add(x0, M::mul((A)at.pw, bw));
    const T* plane = x + ((I)b * (I)g.channels + at.c) * H * W;
    A out = A(0);
    bool first = true;
#pragma unroll 1
    for (int iy = 0; iy < gh; ++iy) {
      const A sy = M::add(top, M::div(M::mul(M::add((A)iy, A(0.5)), bh), ah));
      const bool row_out = sy < A(-1) || sy > (A)H;
      const roi::tap<A, I> ty(row_out ? A(0) : sy, H);
#pragma unroll 1
      for (int ix = 0; ix < gw; ++ix) {
        const A sx = M::add(left, M::div(M::mul(M::add((A)ix, A(0.5)), bw), aw));
        const bool outside = row_out || sx < A(-1) || sx > (A)W;
        const roi::tap<A, I> tx(outside ? A(0) : sx, W);
        const I r0 = outside ? I(0) : ty.lo * W, r1 = outside ? I(0) : ty.hi * W;
        const I c0 = outside ? I(0) : tx.lo, c1 = outside ? I(0) : tx.hi;
        const A w1 = outside ? A(0) : M::mul(ty.h, tx.h), w2 = outside ? A(0) : M::mul(ty.h, tx.l);
        const A w3 = outside ? A(0) : M::mul(ty.l, tx.h), w4 = outside ? A(0) : M::mul(ty.l, tx.l);
        const A t1 = M::mul(w1, oc::load<A>(plane + r0 + c0));
        const A t2 = M::mul(w2, oc::load<A>(plane + r0 + c1));
        const A t3 = M::mul(w3, oc::load<A>(plane + r1 + c0));
        const A t4 = M::mul(w4, oc::load<A>(plane + r1 + c1));
        if constexpr (MAX) {
          const A v = roi::keep_max(roi::keep_max(roi::keep_max(t1, t2), t3), t4);
          out = first ? v : roi::keep_max(out, v);
          first = false;
        } else {
          out = M::add(out, M::add(M::add(M::add(t1, t2), t3), t4));
        }
      }
    }
    if constexpr (!MAX) {
      const long long count = (long long)gh * gw;
      out = M::div(out, (A)(count > 1 ? count : 1));
    }
    y[o] = oc::cvt<A, T>::store(out);
  }
}

template <typename T, typename I>
__global__ void max_roi_pool(const T* __restrict__ x, const T* __restrict__ rois,
                             T* __restrict__ y, const RoiGeom g) {
  using A = typename oc::acc_of<T>::type;
  using M = roi::rn<A>;
  const I H = (I)g.height, W = (I)g.width;
  const A s = M::scale(g), limit = A(ROI_CORNER_LIMIT);
#pragma unroll 1  // grid-stride loop: no trip-count division
  for (I o = oc::first_index<I>(); o < (I)g.total; o += oc::grid_stride<I>()) {
    const roi::place<I> at(o, g);
    const T* box = rois + at.k * 5;
    const A b = oc::load<A>(box);
    const A x0 = M::mul(oc::load<A>(box + 1), s), y0 = M::mul(oc::load<A>(box + 2), s);
    const A x2 = M::mul(oc::load<A>(box + 3), s), y2 = M::mul(oc::load<A>(box + 4), s);
    if (!(roi::finite(x0) && roi::finite(y0) && roi::finite(x2) && roi::finite(y2))) {
      y[o] = oc::cvt<A, T>::store(x0 - x0 + y0 - y0 + x2 - x2 + y2 - y2);   // NaN
      continue;
    }
    if (!(b > A(-1) && b < (A)g.batch)) {   // its truncation outside [0, N), or NaN
      y[o] = oc::cvt<A, T>::store(A(0));
      continue;
    }
    // corners rounded half away from zero, then clamped to +-ROI_CORNER_LIMIT
    const int left = (int)fmin(fmax(round(x0), -limit), limit);
    const int top = (int)fmin(fmax(round(y0), -limit), limit);
    const int right = (int)fmin(fmax(round(x2), -limit), limit);
    const int bottom = (int)fmin(fmax(round(y2), -limit), limit);
    const int h = bottom - top + 1 > 1 ? bottom - top + 1 : 1;
    const int w = right - left + 1 > 1 ? right - left + 1 : 1;
    const A bh = M::div((A)h, (A)g.pooled_h), bw = M::div((A)w, (A)g.pooled_w);
    const int hs = (int)oc::imin<I>(oc::imax<I>((I)floor(M::mul((A)at.ph, bh)) + top, 0), H);
    const int he = (int)oc::imin<I>(oc::imax<I>((I)ceil(M::mul((A)(at.ph + 1), bh)) + top, 0), H);
    const int ws = (int)oc::imin<I>(oc::imax<I>((I)floor(M::mul((A)at.pw, bw)) + left, 0), W);
    const int we = (int)oc::imin<I>(oc::imax<I>((I)ceil(M::mul((A)(at.pw + 1), bw)) + left, 0), W);
    const T* plane = x + ((I)b * (I)g.channels + at.c) * H * W;
    A out = he <= hs || we <= ws ? A(0) : A(-3.402823466e+38f);   // -FLT_MAX
#pragma unroll 1
    for (int r = hs; r < he; ++r) {
#pragma unroll 1
      for (int q = ws; q < we; ++q) out = roi::keep_max(oc::load<A>(plane + (I)r * W + q), out);
    }
    y[o] = oc::cvt<A, T>::store(out);
  }
}
