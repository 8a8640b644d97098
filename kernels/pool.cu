// AveragePool and LpPool: one thread per output element, grid-stride.
//   AveragePool: y = sum_{w in window, w inside X} x[w] / count(window positions in [cnt_lo, cnt_hi))
//   LpPool:      y = (sum_{w in window, w inside X} |x[w]|^p)^(1/p)   (padding contributes 0)
// The host plan supplies output shape, begin pads and the divisor bounds per spatial axis.
#include "common.cuh"

struct PoolGeom {
  long long nd;        // spatial dimensions
  long long total;     // output elements
  long long channels;  // C
  long long stride_n;  // input element strides of N and C
  long long stride_c;
  long long lp;        // 0: average, 1: Lp norm
  long long in_shape[OC_MAXD];
  long long in_stride[OC_MAXD];
  long long out_shape[OC_MAXD];
  long long kernel[OC_MAXD];
  long long step[OC_MAXD];      // ONNX strides
  long long dilation[OC_MAXD];
  long long pad_begin[OC_MAXD];
  long long cnt_lo[OC_MAXD];    // divisor counts window positions in [cnt_lo, cnt_hi)
  long long cnt_hi[OC_MAXD];
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
  Acc a = v < Acc(0) ? -v : v;
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
  for (I idx = oc::first_index<I>(); idx < (I)g.total; idx += oc::grid_stride<I>()) {
    I rem = idx;
    I j0[OC_MAXD], j1[OC_MAXD], jump[OC_MAXD];
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
      I j[OC_MAXD];
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
