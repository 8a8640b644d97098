// Host-compiler shim: lets the kernels/*.cu sources compile with g++ and run on the CPU,
// one emulated thread at a time, with the grid and arguments the CUDA path launches with.
#pragma once
#include <cmath>
#include <cstddef>
#include <type_traits>
#include <utility>

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(...)

struct uint3 { unsigned int x, y, z; };
struct dim3 { unsigned int x, y, z; };

inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;

using std::sqrt; using std::pow; using std::fabs; using std::floor; using std::ceil;
using std::isnan; using std::round; using std::nearbyint;

template <class T> inline T __ldg(const T* p) { return *p; }

template <class... A, std::size_t... I>
inline void oc_call(void (*k)(A...), void** args, std::index_sequence<I...>) {
  k(*static_cast<typename std::remove_cv<typename std::remove_reference<A>::type>::type*>(args[I])...);
}

// Runs kernel `k` over the whole grid; threads of a block run in order (kernels used here do
// not synchronize within a block).
template <class... A>
inline void oc_emulate(void (*k)(A...), const unsigned int* g, const unsigned int* b, void** args) {
  gridDim = dim3{g[0], g[1], g[2]};
  blockDim = dim3{b[0], b[1], b[2]};
  for (unsigned int bz = 0; bz < g[2]; ++bz)
    for (unsigned int by = 0; by < g[1]; ++by)
      for (unsigned int bx = 0; bx < g[0]; ++bx) {
        blockIdx = uint3{bx, by, bz};
        for (unsigned int tz = 0; tz < b[2]; ++tz)
          for (unsigned int ty = 0; ty < b[1]; ++ty)
            for (unsigned int tx = 0; tx < b[0]; ++tx) {
              threadIdx = uint3{tx, ty, tz};
              oc_call(k, args, std::index_sequence_for<A...>{});
            }
      }
}
