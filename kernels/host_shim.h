// Host-compiler shim: lets the kernels/*.cu sources compile with g++ and run on the CPU, with the
// grid and arguments the CUDA path launches with. Two ways to run a block:
//  - sequential: its threads one after another (kernels without barriers or warp collectives);
//  - cooperative: its threads as contexts on one OS thread (64 KiB stacks, reused across blocks)
//    that switch at __syncthreads, __syncwarp and the warp collectives (__shfl*_sync,
//    __ballot_sync, __any_sync, __all_sync). Between two such points a thread runs alone; which
//    runnable thread goes next is drawn from a generator seeded per launch, so a missing barrier
//    changes the result for some seed, the same way for the same seed.
// __shared__ variables are function statics, seen by every thread of a block; the launcher passes
// their (address, size) pairs, filled with 0xFF bytes (NaN, -1) before each block so that reading
// what no thread wrote shows.
// Compiled with OC_CHECK (and -fsanitize=thread), the library also checks every access and
// barrier of the kernel code: host_check.h. OC_UNCHECKED marks the shim's own functions, whose
// accesses are the emulator's.
#pragma once
#include <csetjmp>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <type_traits>
#include <utility>
#include <vector>
#include <ucontext.h>

#ifdef OC_CHECK
#define OC_UNCHECKED __attribute__((no_sanitize_thread))
#else
#define OC_UNCHECKED
#endif

#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __restrict__ __restrict
#define __launch_bounds__(...)
#define __shared__ static

struct uint3 { unsigned int x, y, z; };
struct dim3 { unsigned int x, y, z; };

#define OC_VECTOR2(T, N, A) \
  struct alignas(A) N##2 { T x, y; }; \
  inline N##2 make_##N##2(T x, T y) { return N##2{x, y}; }
#define OC_VECTOR4(T, N, A) \
  struct alignas(A) N##4 { T x, y, z, w; }; \
  inline N##4 make_##N##4(T x, T y, T z, T w) { return N##4{x, y, z, w}; }
OC_VECTOR2(float, float, 8) OC_VECTOR4(float, float, 16)
OC_VECTOR2(int, int, 8) OC_VECTOR4(int, int, 16)
OC_VECTOR2(unsigned int, uint, 8) OC_VECTOR4(unsigned int, uint, 16)
OC_VECTOR2(double, double, 16)
OC_VECTOR2(long long, longlong, 16)
OC_VECTOR2(unsigned long long, ulonglong, 16)
#undef OC_VECTOR2
#undef OC_VECTOR4

inline thread_local uint3 threadIdx;
inline thread_local uint3 blockIdx;
inline thread_local dim3 blockDim;
inline thread_local dim3 gridDim;
constexpr int warpSize = 32;

using std::sqrt; using std::pow; using std::fabs; using std::floor; using std::ceil;
using std::isnan; using std::round; using std::nearbyint;

template <class T> inline T __ldg(const T* p) { return *p; }

namespace oc_emu {

enum Wait { RUNNABLE, BARRIER, COLLECTIVE, DONE };
enum Op { SHFL, SHFL_UP, SHFL_DOWN, SHFL_XOR, BALLOT, ANY, ALL, SYNCWARP };

struct Thread {
  ucontext_t ctx;
  uint3 idx;
  Wait wait;
  // the warp collective it waits at: operands in, result out (values as their bytes)
  Op op; unsigned int mask; std::uint64_t value; int lane_arg, width; bool pred;
  std::uint64_t result;
#ifdef OC_CHECK
  const char* file; long long line;  // the barrier or collective it waits at: its call site
#endif
};

constexpr std::size_t STACK = 64 * 1024;

struct Block {
  std::vector<Thread> threads;
  std::vector<char> stacks;     // STACK bytes per thread, kept across blocks and launches
  ucontext_t scheduler;
  unsigned int current = 0;
  std::uint64_t rng = 0;
  void (*body)(void* kernel, void** args) = nullptr;
  void* kernel = nullptr;
  void** args = nullptr;
  int error = 0;
};

inline thread_local Block* block = nullptr;   // the block running cooperatively, if any
inline thread_local std::jmp_buf* sequential = nullptr;  // where a sequential launch stops
inline thread_local Block state;              // threads and stacks, reused across launches
inline std::mutex shared_lock;                // one launch at a time: __shared__ is static

#ifdef OC_CHECK
// The call site of the barrier or collective being entered (the checking mode's macros set it).
inline thread_local const char* site_file = "";
inline thread_local long long site_line = 0;
OC_UNCHECKED inline void at(const char* file, long long line) { site_file = file; site_line = line; }
#endif

}  // namespace oc_emu

#ifdef OC_CHECK
#include "host_check.h"
#endif

namespace oc_emu {

OC_UNCHECKED inline std::uint64_t next_random(std::uint64_t& s) {  // splitmix64
  std::uint64_t z = (s += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

OC_UNCHECKED inline void entry() {
  Block* b = block;
#ifdef OC_CHECK
  oc_check::in_kernel = true;
  b->body(b->kernel, b->args);
  oc_check::in_kernel = false;
#else
  b->body(b->kernel, b->args);
#endif
  b->threads[b->current].wait = DONE;
}

// Back to the scheduler until the thread may go on. A launch not marked cooperative stops.
__attribute__((noinline)) OC_UNCHECKED inline void suspend(Wait w) {
#ifdef OC_CHECK
  oc_check::Outside outside;
#endif
  Block* b = block;
  if (b == nullptr) {
    if (sequential == nullptr) std::abort();
    std::longjmp(*sequential, 3);
  }
  Thread& t = b->threads[b->current];
  t.wait = w;
#ifdef OC_CHECK
  t.file = site_file;
  t.line = site_line;
#endif
  swapcontext(&t.ctx, &b->scheduler);
}

OC_UNCHECKED inline std::uint64_t shuffled(const Block& b, unsigned int base, unsigned int lane,
                              unsigned int group, std::uint64_t members) {
  const Thread& t = b.threads[base + lane];
  const int width = t.width, seg = (int)lane & ~(width - 1);
  int src = (int)lane;
  switch (t.op) {
    case SHFL: src = seg + (t.lane_arg & (width - 1)); break;
    case SHFL_UP: src = (int)lane - t.lane_arg; if (src < seg) src = (int)lane; break;
    case SHFL_DOWN: src = (int)lane + t.lane_arg; if (src >= seg + width) src = (int)lane; break;
    case SHFL_XOR: src = (int)lane ^ t.lane_arg; if (src >= seg + width) src = (int)lane; break;
    default: break;
  }
  if (src < 0 || src >= (int)group || !((members >> src) & 1u)) src = (int)lane;
  return b.threads[base + src].value;
}

// Completes every warp collective whose participants have all arrived; returns whether any did.
OC_UNCHECKED inline bool complete_collectives(Block& b) {
  const unsigned int n = (unsigned int)b.threads.size();
  bool progressed = false;
  for (unsigned int base = 0; base < n; base += 32) {
    const unsigned int group = n - base < 32 ? n - base : 32;
    const std::uint64_t existing = group == 32 ? 0xFFFFFFFFull : ((1ull << group) - 1);
    for (unsigned int lane = 0; lane < group; ++lane) {
      const Thread& t = b.threads[base + lane];
      if (t.wait != COLLECTIVE) continue;
      const std::uint64_t members = ((std::uint64_t)t.mask | (1ull << lane)) & existing;
      bool ready = true;
      unsigned int ballot = 0;
      for (unsigned int j = 0; j < group; ++j)
        if ((members >> j) & 1u) {
          const Thread& u = b.threads[base + j];
          if (u.wait == DONE) { b.error = 2; return false; }  // waits on an exited lane
          ready = ready && u.wait == COLLECTIVE;
          if (u.pred) ballot |= 1u << j;
        }
      if (!ready) continue;
#ifdef OC_CHECK
      if ((b.error = oc_check::collective(t, base, members, b)) != 0) return false;
#endif
      for (unsigned int j = 0; j < group; ++j)
        if ((members >> j) & 1u) {
          Thread& u = b.threads[base + j];
          switch (u.op) {
            case BALLOT: u.result = ballot; break;
            case ANY: u.result = ballot != 0; break;
            case ALL: u.result = ballot == (unsigned int)members; break;
            case SYNCWARP: u.result = 0; break;
            default: u.result = shuffled(b, base, j, group, members);
          }
        }
      for (unsigned int j = 0; j < group; ++j)
        if ((members >> j) & 1u) b.threads[base + j].wait = RUNNABLE;
      progressed = true;
    }
  }
  return progressed;
}

// Releases a barrier that every live thread of the block has reached.
OC_UNCHECKED inline bool release_barrier(Block& b) {
  bool any = false;
  for (const Thread& t : b.threads) {
    if (t.wait == RUNNABLE || t.wait == COLLECTIVE) return false;
    any = any || t.wait == BARRIER;
  }
#ifdef OC_CHECK
  if (any && (b.error = oc_check::barrier(b)) != 0) return false;
#endif
  if (any)
    for (Thread& t : b.threads)
      if (t.wait == BARRIER) t.wait = RUNNABLE;
  return any;
}

// Runs one block's threads to completion; 0, or 1 for a deadlock at a barrier or collective,
// 2 for a collective naming an exited lane (checking mode: 4 and the checker's report for
// these and for what it finds).
OC_UNCHECKED inline int run_block(Block& b) {
  const unsigned int n = (unsigned int)b.threads.size();
  std::vector<unsigned int> runnable;
  runnable.reserve(n);
  for (;;) {
    runnable.clear();
    for (unsigned int i = 0; i < n; ++i)
      if (b.threads[i].wait == RUNNABLE) runnable.push_back(i);
    if (runnable.empty()) {
      if (complete_collectives(b) || release_barrier(b)) continue;
#ifdef OC_CHECK
      if (b.error == 2) return oc_check::stuck(b, oc_check::COLLECTIVE_EXIT);
      if (b.error) return b.error;
      for (const Thread& t : b.threads)
        if (t.wait != DONE) return oc_check::stuck(b, oc_check::DEADLOCK);
#else
      if (b.error) return b.error;
      for (const Thread& t : b.threads)
        if (t.wait != DONE) return 1;
#endif
      return 0;
    }
    // every runnable thread runs to its next synchronization point, in a random order
    for (unsigned int i = (unsigned int)runnable.size(); i > 1; --i)
      std::swap(runnable[i - 1], runnable[next_random(b.rng) % i]);
    for (unsigned int i : runnable) {
      b.current = i;
      threadIdx = b.threads[i].idx;
      swapcontext(&b.scheduler, &b.threads[i].ctx);
#ifdef OC_CHECK
      if (b.error) return b.error;  // the checker stopped the launch
#endif
    }
  }
}

template <class T> OC_UNCHECKED inline std::uint64_t bits_of(T v) {
  static_assert(sizeof(T) <= 8 && std::is_trivially_copyable<T>::value, "8-byte values at most");
  std::uint64_t u = 0;
  std::memcpy(&u, &v, sizeof(T));
  return u;
}
template <class T> OC_UNCHECKED inline T from_bits(std::uint64_t u) {
  T v;
  std::memcpy(&v, &u, sizeof(T));
  return v;
}

OC_UNCHECKED inline std::uint64_t collective(Op op, unsigned int mask, std::uint64_t value,
                                             int lane_arg, int width, bool pred) {
#ifdef OC_CHECK
  oc_check::Outside outside;
#endif
  Block* b = block;
  if (b == nullptr) suspend(COLLECTIVE);  // stops a launch not marked cooperative
  Thread& t = b->threads[b->current];
  t.op = op; t.mask = mask; t.value = value; t.lane_arg = lane_arg; t.width = width; t.pred = pred;
  suspend(COLLECTIVE);
  return b->threads[b->current].result;
}

// A shuffle: the value as its bytes through the warp.
template <class T>
OC_UNCHECKED inline T shuffle(Op op, unsigned int mask, T v, int lane_arg, int width) {
  return from_bits<T>(collective(op, mask, bits_of(v), lane_arg, width, false));
}

}  // namespace oc_emu

inline void __syncthreads() { oc_emu::suspend(oc_emu::BARRIER); }
inline void __syncwarp(unsigned int mask = 0xFFFFFFFFu) {
  oc_emu::collective(oc_emu::SYNCWARP, mask, 0, 0, 32, false);
}
template <class T> inline T __shfl_sync(unsigned int mask, T v, int src, int width = 32) {
  return oc_emu::shuffle(oc_emu::SHFL, mask, v, src, width);
}
template <class T> inline T __shfl_up_sync(unsigned int mask, T v, unsigned int d, int width = 32) {
  return oc_emu::shuffle(oc_emu::SHFL_UP, mask, v, (int)d, width);
}
template <class T>
inline T __shfl_down_sync(unsigned int mask, T v, unsigned int d, int width = 32) {
  return oc_emu::shuffle(oc_emu::SHFL_DOWN, mask, v, (int)d, width);
}
template <class T> inline T __shfl_xor_sync(unsigned int mask, T v, int m, int width = 32) {
  return oc_emu::shuffle(oc_emu::SHFL_XOR, mask, v, m, width);
}
inline unsigned int __ballot_sync(unsigned int mask, int pred) {
  return (unsigned int)oc_emu::collective(oc_emu::BALLOT, mask, 0, 0, 32, pred != 0);
}
inline int __any_sync(unsigned int mask, int pred) {
  return (int)oc_emu::collective(oc_emu::ANY, mask, 0, 0, 32, pred != 0);
}
inline int __all_sync(unsigned int mask, int pred) {
  return (int)oc_emu::collective(oc_emu::ALL, mask, 0, 0, 32, pred != 0);
}

#ifdef OC_CHECK
// The call sites of barriers and collectives, for the checker's messages (a macro does not
// expand inside its own expansion: the function is called).
#define __syncthreads() (oc_emu::at(__FILE__, __LINE__), __syncthreads())
#define __syncwarp(...) (oc_emu::at(__FILE__, __LINE__), __syncwarp(__VA_ARGS__))
#define __shfl_sync(...) (oc_emu::at(__FILE__, __LINE__), __shfl_sync(__VA_ARGS__))
#define __shfl_up_sync(...) (oc_emu::at(__FILE__, __LINE__), __shfl_up_sync(__VA_ARGS__))
#define __shfl_down_sync(...) (oc_emu::at(__FILE__, __LINE__), __shfl_down_sync(__VA_ARGS__))
#define __shfl_xor_sync(...) (oc_emu::at(__FILE__, __LINE__), __shfl_xor_sync(__VA_ARGS__))
#define __ballot_sync(...) (oc_emu::at(__FILE__, __LINE__), __ballot_sync(__VA_ARGS__))
#define __any_sync(...) (oc_emu::at(__FILE__, __LINE__), __any_sync(__VA_ARGS__))
#define __all_sync(...) (oc_emu::at(__FILE__, __LINE__), __all_sync(__VA_ARGS__))
// The checker sees an atomic read-modify-write as one access, which does not race with another
// atomic one on the same bytes.
#define OC_ATOMIC(p) oc_check::atomic(p)
#else
#define OC_ATOMIC(p)
#endif

// Atomics: a launch runs on one OS thread, so plain read-modify-writes are atomic.
template <class T> OC_UNCHECKED inline T atomicAdd(T* p, T v) {
  OC_ATOMIC(p); T old = *p; *p = old + v; return old;
}
template <class T> OC_UNCHECKED inline T atomicMin(T* p, T v) {
  OC_ATOMIC(p); T old = *p; *p = v < old ? v : old; return old;
}
template <class T> OC_UNCHECKED inline T atomicMax(T* p, T v) {
  OC_ATOMIC(p); T old = *p; *p = v > old ? v : old; return old;
}
template <class T> OC_UNCHECKED inline T atomicExch(T* p, T v) {
  OC_ATOMIC(p); T old = *p; *p = v; return old;
}
template <class T> OC_UNCHECKED inline T atomicCAS(T* p, T cmp, T v) {
  OC_ATOMIC(p); T old = *p; if (old == cmp) *p = v; return old;
}
#undef OC_ATOMIC

template <class... A, std::size_t... I>
OC_UNCHECKED inline void oc_call(void (*k)(A...), void** args, std::index_sequence<I...>) {
  k(*static_cast<typename std::remove_cv<typename std::remove_reference<A>::type>::type*>(args[I])...);
}
template <class... A> OC_UNCHECKED inline void oc_body(void* k, void** args) {
  oc_call(reinterpret_cast<void (*)(A...)>(k), args, std::index_sequence_for<A...>{});
}

// Runs kernel `k` over the whole grid, each block's threads in order or, if `cooperative`, as
// contexts scheduled in an order drawn from `seed`; `shared` holds `n_shared` (address, size)
// pairs of __shared__ storage. Returns 0, or the first failing block's error code (3: a barrier
// or collective in a sequential launch; 4: the checker's report).
template <class... A>
OC_UNCHECKED inline int oc_emulate(void (*k)(A...), const unsigned int* g, const unsigned int* b, void** args,
                      int cooperative, unsigned long long seed, const unsigned long long* shared,
                      int n_shared) {
  gridDim = dim3{g[0], g[1], g[2]};
  blockDim = dim3{b[0], b[1], b[2]};
  const unsigned int threads = b[0] * b[1] * b[2];
  std::lock_guard<std::mutex> hold(oc_emu::shared_lock);
#ifdef OC_CHECK
  const oc_check::Launch check(shared, n_shared, threads);  // its end reports, however it ends
#endif
  std::jmp_buf stop;
  switch (setjmp(stop)) {
    case 0: break;
    case 3: oc_emu::sequential = nullptr; return 3;
    default: oc_emu::sequential = nullptr; return 4;
  }
  oc_emu::sequential = cooperative ? nullptr : &stop;
  oc_emu::Block& blk = oc_emu::state;
  if (cooperative) {
    blk.threads.resize(threads);
    if (blk.stacks.size() < threads * oc_emu::STACK) blk.stacks.resize(threads * oc_emu::STACK);
    blk.body = &oc_body<A...>;
    blk.kernel = reinterpret_cast<void*>(k);
    blk.args = args;
    blk.error = 0;
  }
  for (unsigned int bz = 0; bz < g[2]; ++bz)
    for (unsigned int by = 0; by < g[1]; ++by)
      for (unsigned int bx = 0; bx < g[0]; ++bx) {
        blockIdx = uint3{bx, by, bz};
        for (int i = 0; i < n_shared; ++i)
          std::memset(reinterpret_cast<void*>(shared[2 * i]), 0xFF, (std::size_t)shared[2 * i + 1]);
#ifdef OC_CHECK
        oc_check::block_begin();
#endif
        if (!cooperative) {
          for (unsigned int tz = 0; tz < b[2]; ++tz)
            for (unsigned int ty = 0; ty < b[1]; ++ty)
              for (unsigned int tx = 0; tx < b[0]; ++tx) {
                threadIdx = uint3{tx, ty, tz};
#ifdef OC_CHECK
                oc_check::in_kernel = true;
                oc_call(k, args, std::index_sequence_for<A...>{});
                oc_check::in_kernel = false;
#else
                oc_call(k, args, std::index_sequence_for<A...>{});
#endif
              }
          continue;
        }
        const std::uint64_t linear = bx + (std::uint64_t)g[0] * (by + (std::uint64_t)g[1] * bz);
        blk.rng = seed ^ (0x2545F4914F6CDD1Dull * (1 + linear));
        for (unsigned int i = 0; i < threads; ++i) {
          oc_emu::Thread& t = blk.threads[i];
          t.idx = uint3{i % b[0], (i / b[0]) % b[1], i / (b[0] * b[1])};
          t.wait = oc_emu::RUNNABLE;
          getcontext(&t.ctx);
          t.ctx.uc_stack.ss_sp = blk.stacks.data() + i * oc_emu::STACK;
          t.ctx.uc_stack.ss_size = oc_emu::STACK;
          t.ctx.uc_link = &blk.scheduler;
          makecontext(&t.ctx, &oc_emu::entry, 0);
        }
        oc_emu::block = &blk;
        const int err = oc_emu::run_block(blk);
        oc_emu::block = nullptr;
        if (err) return err;
      }
  oc_emu::sequential = nullptr;
  return 0;
}
