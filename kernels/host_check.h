// The emulator's kernel checker: host_shim.h includes it when the library is compiled with
// OC_CHECK (onnx_cupy.core.emulator, checking mode), together with GCC's thread-sanitizer
// instrumentation (-fsanitize=thread) but without its run-time library: every load and store of
// the kernel code calls one of the __tsan_* functions below, which check the access BEFORE it
// happens and stop the launch at the first error (the access never takes place):
//  - global memory (memcheck): the bytes must be elements of an array argument of the launch
//    (Region: its span and, for a strided view, a bit per byte), naturally aligned where the
//    compiler assumed so (vector loads: 16 bytes), and a store must not go to a const parameter;
//  - shared memory (racecheck): two threads of a block touch a byte between two barriers, at
//    least one writing, with no ordering between them. Ordered: a thread's own accesses, and
//    accesses separated by a __syncthreads of the block or by a __syncwarp whose mask names both
//    threads. Warp shuffles and votes order nothing (CUDA's guide: they imply no memory
//    barrier), and lanes of a warp are not in lockstep (independent thread scheduling, sm_70 on).
//    Atomics on a byte do not race with each other;
//  - shared memory (initcheck): a read of a byte that no thread of the block wrote since the
//    block began;
//  - barriers (synccheck, in the shim's scheduler): every thread of a block must wait at the
//    same __syncthreads call site, none having exited; the lanes a warp collective names must
//    all call the same collective with the same mask and width.
// Accesses to the running thread's own stack (local variables, by-value parameters) and to the
// built-in variables are not checked. The host passes the regions before a launch
// (oc_check_regions) and reads the report and the count of checked accesses after it
// (oc_check_result).
#pragma once
#include <pthread.h>

namespace oc_check {

enum Kind {
  NONE, OUTSIDE, GAP, MISALIGNED, READ_ONLY, RACE, UNINITIALIZED, BARRIER_EXIT,
  BARRIER_SITES, COLLECTIVE_MISMATCH, COLLECTIVE_EXIT, DEADLOCK
};
enum Access { LOAD, STORE, ATOMIC };

// What the host prints of each Kind (the compute-sanitizer tool that reports such errors, and
// the error) and of each Access: the reports carry these names, not the numbers.
inline const char* const CHECKS[] = {"", "memcheck", "memcheck", "memcheck", "memcheck",
                                     "racecheck", "initcheck", "synccheck", "synccheck",
                                     "synccheck", "synccheck", "synccheck"};
inline const char* const ERRORS[] = {"", "out of bounds", "between elements", "misaligned",
                                     "store to a const parameter", "race",
                                     "uninitialized shared memory", "barrier with exited threads",
                                     "barriers at different call sites",
                                     "warp collective mismatch",
                                     "warp collective naming an exited lane", "deadlock"};
inline const char* const ACCESSES[] = {"load", "store", "atomic read-modify-write"};

// An array argument of the launch, as the host describes it (onnx_cupy.core.checker.REGION).
struct Region {
  unsigned long long lo, hi;  // the bytes its elements span: [lo, hi)
  unsigned long long map;     // 0 (every byte of the span is an element's), or the address of a
                              // bit per byte of the span (bit b of byte b / 8: lo + b is one)
  long long read_only;        // a const parameter: no store
};

// What stopped the launch (onnx_cupy.core.checker.Report mirrors the layout).
struct Report {
  const char* check;          // CHECKS[kind], ERRORS[kind]: empty where the launch ran clean
  const char* error;
  const char* access;         // ACCESSES[the access]
  unsigned long long address, size, pc;
  long long region, shared;   // the argument (the nearest one for OUTSIDE) and the __shared__
                              // variable (index among the launch's), or -1
  unsigned int block[3], thread[3], other[3];
  const char* other_access;   // the other thread's access in a race
  const char* file;           // the barrier or collective the thread waits at (synccheck)
  long long line;
  const char* other_file;
  long long other_line;
};

// One byte of __shared__ memory: whether a thread of the block wrote it since the block began,
// and the accesses of the current barrier interval (`epoch`): the last write (its thread and
// the count of __syncwarp events of that thread's warp then), and the reads since it: the first
// reading thread, the first of another warp, and the lanes of the first one's warp that read,
// with the event counts at their last reads.
struct SharedByte {
  unsigned int epoch = 0;
  bool written = false;
  bool writer_atomic = false;
  int writer = -1;
  unsigned int writer_event = 0;
  int first_reader = -1;
  int other_reader = -1;
  unsigned int read_lanes = 0;
  unsigned int lane_event[32];
};

struct SharedVariable {
  unsigned long long lo, size;
  std::vector<SharedByte> bytes;
};

// The launch's state. Launches of a library are serialized (oc_emu::shared_lock), so one
// instance serves them; what crosses the lock is per OS thread and trivially initialized (no
// thread-local initialization code, which the instrumentation would call back from): whether
// kernel code runs, the regions of the thread's next launch, the report of its last one.
struct State {
  const Region* regions = nullptr;
  int n_regions = 0;
  std::vector<SharedVariable> shared;
  unsigned long long accesses = 0;   // checked global and shared accesses
  unsigned int epoch = 0;            // barrier intervals, counted over the launch
  unsigned int threads = 0;          // of a block
  std::vector<std::vector<unsigned int>> warp_events;  // per warp: the __syncwarp masks of the
                                                       // interval, in order
  unsigned long long stack_lo = 0, stack_hi = 0;      // the OS thread's stack (sequential runs)
  Report report{};
};

inline State state;
inline thread_local bool in_kernel = false;   // kernel code is running (not the shim's)
inline thread_local const Region* next_regions = nullptr;
inline thread_local int next_n_regions = 0;
inline thread_local Report last_report;
inline thread_local unsigned long long last_accesses = 0;

// Kernel code is not running inside the shim's own functions that kernel code calls (barriers,
// collectives, atomics): their accesses are the emulator's, not the kernel's.
struct Outside {
  bool was;
  OC_UNCHECKED Outside() : was(in_kernel) { in_kernel = false; }
  OC_UNCHECKED ~Outside() { in_kernel = was; }
};

OC_UNCHECKED inline unsigned int current_thread() {
  return threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
}

OC_UNCHECKED inline void set_thread(unsigned int (&at)[3], unsigned int linear) {
  at[0] = linear % blockDim.x;
  at[1] = linear / blockDim.x % blockDim.y;
  at[2] = linear / (blockDim.x * blockDim.y);
}

// One launch, under the library's lock: its bookkeeping set up, and at its end the report and
// count handed to the launching thread.
struct Launch {
  OC_UNCHECKED Launch(const unsigned long long* shared, int n_shared, unsigned int threads);
  OC_UNCHECKED ~Launch() {
    last_report = state.report;
    last_accesses = state.accesses;
    in_kernel = false;
  }
};

OC_UNCHECKED inline Launch::Launch(const unsigned long long* shared, int n_shared,
                                   unsigned int threads) {
  State& s = state;
  s.regions = next_regions;
  s.n_regions = next_n_regions;
  s.shared.resize((std::size_t)n_shared);
  for (int i = 0; i < n_shared; ++i) {
    s.shared[i].lo = shared[2 * i];
    s.shared[i].size = shared[2 * i + 1];
    s.shared[i].bytes.assign((std::size_t)shared[2 * i + 1], SharedByte{});
  }
  s.threads = threads;
  s.warp_events.assign((threads + 31) / 32, {});
  s.accesses = 0;
  s.epoch = 0;
  s.report = Report{};
  pthread_attr_t attr;
  void* lo = nullptr;
  std::size_t size = 0;
  if (pthread_getattr_np(pthread_self(), &attr) == 0) {
    pthread_attr_getstack(&attr, &lo, &size);
    pthread_attr_destroy(&attr);
  }
  s.stack_lo = (unsigned long long)lo;
  s.stack_hi = s.stack_lo + size;
}

// A new barrier interval: every access before it is ordered before every access after it.
OC_UNCHECKED inline void new_interval() {
  ++state.epoch;
  for (auto& events : state.warp_events) events.clear();
}

OC_UNCHECKED inline void block_begin() {
  for (SharedVariable& v : state.shared) v.bytes.assign(v.bytes.size(), SharedByte{});
  new_interval();
}

// The report's block and thread: the running thread's.
OC_UNCHECKED inline Report& report(Kind kind, Access access, unsigned long long address,
                                   unsigned long long size) {
  Report& r = state.report;
  r.check = CHECKS[kind];
  r.error = ERRORS[kind];
  r.access = ACCESSES[access];
  r.address = address;
  r.size = size;
  r.region = r.shared = -1;
  r.block[0] = blockIdx.x; r.block[1] = blockIdx.y; r.block[2] = blockIdx.z;
  r.thread[0] = threadIdx.x; r.thread[1] = threadIdx.y; r.thread[2] = threadIdx.z;
  return r;
}

// Ends the launch from kernel code: back to the scheduler for good (cooperative), or to the
// launch's start (sequential); oc_emulate returns 4.
[[noreturn]] OC_UNCHECKED inline void stop();

// Whether thread u's access at warp event count `event` is ordered before thread t's now.
OC_UNCHECKED inline bool ordered(unsigned int u, unsigned int event, unsigned int t) {
  if (u == t) return true;
  if (u / 32 != t / 32) return false;
  const std::vector<unsigned int>& events = state.warp_events[t / 32];
  const unsigned int both = (1u << (u % 32)) | (1u << (t % 32));
  for (std::size_t j = event; j < events.size(); ++j)
    if ((events[j] & both) == both) return true;
  return false;
}

// The first earlier access of the byte that races with thread t's `access`, as (thread,
// access), or (-1, LOAD).
OC_UNCHECKED inline std::pair<int, Access> conflict(const SharedByte& b, unsigned int t,
                                                    Access access) {
  if (b.epoch != state.epoch) return {-1, LOAD};
  if (b.writer >= 0 && !(access == ATOMIC && b.writer_atomic) &&
      !ordered((unsigned int)b.writer, b.writer_event, t))
    return {b.writer, b.writer_atomic ? ATOMIC : STORE};
  if (access == LOAD || b.first_reader < 0) return {-1, LOAD};
  const unsigned int warp = t / 32;
  if ((unsigned int)b.first_reader / 32 != warp) return {b.first_reader, LOAD};
  if (b.other_reader >= 0) return {b.other_reader, LOAD};  // another warp: only a barrier orders
  for (unsigned int lane = 0; lane < 32; ++lane)
    if (((b.read_lanes >> lane) & 1u) && !ordered(32 * warp + lane, b.lane_event[lane], t))
      return {(int)(32 * warp + lane), LOAD};
  return {-1, LOAD};
}

OC_UNCHECKED inline void shared_access(long long index, unsigned long long address,
                                       unsigned long long size, Access access) {
  SharedVariable& v = state.shared[(std::size_t)index];
  const unsigned int t = current_thread();
  const unsigned int warp = t / 32, lane = t % 32;
  const unsigned int event = (unsigned int)state.warp_events[warp].size();
  for (unsigned long long at = address - v.lo; at < address - v.lo + size; ++at) {
    SharedByte& b = v.bytes[at];
    if (access != STORE && !b.written) {
      report(UNINITIALIZED, access, address, size).shared = index;
      stop();
    }
    const std::pair<int, Access> other = conflict(b, t, access);
    if (other.first >= 0) {
      Report& r = report(RACE, access, address, size);
      r.shared = index;
      set_thread(r.other, (unsigned int)other.first);
      r.other_access = ACCESSES[other.second];
      stop();
    }
  }
  for (unsigned long long at = address - v.lo; at < address - v.lo + size; ++at) {
    SharedByte& b = v.bytes[at];
    if (b.epoch != state.epoch) {
      b.epoch = state.epoch;
      b.writer = b.first_reader = b.other_reader = -1;
      b.writer_atomic = false;
      b.read_lanes = 0;
    }
    if (access == LOAD) {
      if (b.first_reader < 0) b.first_reader = (int)t;
      if ((unsigned int)b.first_reader / 32 == warp) {
        b.read_lanes |= 1u << lane;
        b.lane_event[lane] = event;
      } else if (b.other_reader < 0) {
        b.other_reader = (int)t;
      }
    } else {  // every earlier access is ordered before this one: the write is what counts now
      b.written = true;
      b.writer = (int)t;
      b.writer_event = event;
      b.writer_atomic = access == ATOMIC;
      b.first_reader = b.other_reader = -1;
      b.read_lanes = 0;
    }
  }
}

// Whether byte `at` of region r is an element's.
OC_UNCHECKED inline bool element_byte(const Region& r, unsigned long long at) {
  if (r.map == 0) return true;
  const unsigned long long bit = at - r.lo;
  return (reinterpret_cast<const unsigned char*>(r.map)[bit / 8] >> (bit % 8)) & 1u;
}

// The error of an access to region r whose span holds it: GAP, READ_ONLY, or NONE.
OC_UNCHECKED inline Kind region_error(const Region& r, unsigned long long address,
                                      unsigned long long size, Access access) {
  for (unsigned long long at = address; at < address + size; ++at)
    if (!element_byte(r, at)) return GAP;
  return access != LOAD && r.read_only ? READ_ONLY : NONE;
}

// Arguments may alias (a view of another's memory): an access is fine if one argument whose
// span holds it allows it; else the first such argument's error, or OUTSIDE of them all (the
// report names the nearest).
OC_UNCHECKED inline void global_access(unsigned long long address, unsigned long long size,
                                       Access access) {
  const State& s = state;
  long long nearest = -1, holder = -1;
  Kind error = OUTSIDE;
  unsigned long long distance = ~0ull;
  for (int i = 0; i < s.n_regions; ++i) {
    const Region& r = s.regions[i];
    if (address >= r.lo && address + size <= r.hi) {
      const Kind k = region_error(r, address, size, access);
      if (k == NONE) return;
      if (holder < 0) { holder = i; error = k; }
      continue;
    }
    const unsigned long long d = address + size <= r.lo ? r.lo - address
                                 : address >= r.hi ? address - r.hi + 1 : 0;
    if (d < distance) { distance = d; nearest = i; }
  }
  report(error, access, address, size).region = holder >= 0 ? holder : nearest;
  stop();
}

// One access of kernel code. `aligned`: the compiler assumed the address a multiple of `size`
// (the access's type has that alignment), which CUDA requires of every access.
OC_UNCHECKED inline void access(const void* p, unsigned long long size, Access kind,
                                bool aligned, void* pc) {
  if (!in_kernel) return;
  const Outside outside;  // what the checker calls is not the kernel's
  State& s = state;
  const unsigned long long address = (unsigned long long)p;
  if (oc_emu::block != nullptr) {  // a cooperative thread's own stack
    const unsigned long long lo = (unsigned long long)(oc_emu::block->stacks.data() +
                                                        oc_emu::block->current * oc_emu::STACK);
    if (address >= lo && address + size <= lo + oc_emu::STACK) return;
  } else if (address >= s.stack_lo && address + size <= s.stack_hi) {
    return;
  }
  for (const void* builtin : {(const void*)&threadIdx, (const void*)&blockIdx,
                              (const void*)&blockDim, (const void*)&gridDim})
    if (address >= (unsigned long long)builtin && address + size <= (unsigned long long)builtin
                                                                     + sizeof(uint3))
      return;
  ++s.accesses;
  s.report.pc = (unsigned long long)pc;
  long long shared = -1;
  for (std::size_t i = 0; i < s.shared.size(); ++i)
    if (address >= s.shared[i].lo && address < s.shared[i].lo + s.shared[i].size) {
      shared = (long long)i;
      break;
    }
  if (aligned && size > 1 && address % size != 0) {
    Report& r = report(MISALIGNED, kind, address, size);
    r.shared = shared;
    if (shared < 0) {  // the argument it falls in, if any
      for (int i = 0; i < s.n_regions; ++i)
        if (address >= s.regions[i].lo && address < s.regions[i].hi) r.region = i;
    }
    stop();
  }
  if (shared < 0) return global_access(address, size, kind);
  if (address + size > s.shared[(std::size_t)shared].lo + s.shared[(std::size_t)shared].size) {
    report(OUTSIDE, kind, address, size).shared = shared;  // past the variable's end
    stop();
  }
  shared_access(shared, address, size, kind);
}

// An atomic read-modify-write of kernel code (the shim's atomics), before it happens.
template <class T> OC_UNCHECKED inline void atomic(const T* p) {
  access(p, sizeof(T), ATOMIC, true, __builtin_return_address(0));
}

// Barrier checks of a block whose live threads all wait at barriers: same call site, nobody
// exited. 0, or 4 with the report.
OC_UNCHECKED inline int barrier(const oc_emu::Block& b) {
  const oc_emu::Thread* first = nullptr;
  const oc_emu::Thread* exited = nullptr;
  for (const oc_emu::Thread& t : b.threads) {
    if (t.wait == oc_emu::DONE && exited == nullptr) exited = &t;
    if (t.wait != oc_emu::BARRIER) continue;
    if (first == nullptr) {
      first = &t;
    } else if (t.line != first->line || std::strcmp(t.file, first->file) != 0) {
      Report& r = report(BARRIER_SITES, LOAD, 0, 0);
      r.thread[0] = first->idx.x; r.thread[1] = first->idx.y; r.thread[2] = first->idx.z;
      r.other[0] = t.idx.x; r.other[1] = t.idx.y; r.other[2] = t.idx.z;
      r.file = first->file; r.line = first->line; r.other_file = t.file; r.other_line = t.line;
      return 4;
    }
  }
  if (first != nullptr && exited != nullptr) {
    Report& r = report(BARRIER_EXIT, LOAD, 0, 0);
    r.thread[0] = first->idx.x; r.thread[1] = first->idx.y; r.thread[2] = first->idx.z;
    r.other[0] = exited->idx.x; r.other[1] = exited->idx.y; r.other[2] = exited->idx.z;
    r.file = first->file; r.line = first->line;
    return 4;
  }
  if (first != nullptr) new_interval();
  return 0;
}

// A warp collective of thread t whose members have all arrived: they must call the same
// collective with the same mask and width (4 with the report), and a __syncwarp orders their
// shared accesses.
OC_UNCHECKED inline int collective(const oc_emu::Thread& t, unsigned int base,
                                   unsigned long long members, const oc_emu::Block& b) {
  for (unsigned int j = 0; j < 32; ++j) {
    if (!((members >> j) & 1u)) continue;
    const oc_emu::Thread& u = b.threads[base + j];
    if (u.op != t.op || u.mask != t.mask || u.width != t.width) {
      Report& r = report(COLLECTIVE_MISMATCH, LOAD, t.mask, u.mask);
      r.thread[0] = t.idx.x; r.thread[1] = t.idx.y; r.thread[2] = t.idx.z;
      r.other[0] = u.idx.x; r.other[1] = u.idx.y; r.other[2] = u.idx.z;
      r.file = t.file; r.line = t.line; r.other_file = u.file; r.other_line = u.line;
      return 4;
    }
  }
  if (t.op == oc_emu::SYNCWARP) state.warp_events[base / 32].push_back((unsigned int)members);
  return 0;
}

// The scheduler found no thread able to go on (deadlock: `kind` DEADLOCK) or a collective
// naming an exited lane (COLLECTIVE_EXIT): the report names a waiting thread. Returns 4.
OC_UNCHECKED inline int stuck(const oc_emu::Block& b, Kind kind) {
  for (const oc_emu::Thread& t : b.threads)
    if (t.wait == oc_emu::BARRIER || t.wait == oc_emu::COLLECTIVE) {
      Report& r = report(kind, LOAD, 0, 0);
      r.thread[0] = t.idx.x; r.thread[1] = t.idx.y; r.thread[2] = t.idx.z;
      r.file = t.file; r.line = t.line;
      break;
    }
  return 4;
}

[[noreturn]] OC_UNCHECKED inline void stop() {
  in_kernel = false;
  oc_emu::Block* b = oc_emu::block;
  if (b == nullptr) std::longjmp(*oc_emu::sequential, 4);
  b->error = 4;
  b->threads[b->current].wait = oc_emu::DONE;
  swapcontext(&b->threads[b->current].ctx, &b->scheduler);
  std::abort();  // never resumed
}

}  // namespace oc_check

// The instrumentation's entry points (GCC's -fsanitize=thread calls them), and the host's.
extern "C" {
OC_UNCHECKED void __tsan_init() {}
#define OC_CHECK_SIZE(N)                                                                        \
  OC_UNCHECKED void __tsan_read##N(void* p) {                                                   \
    oc_check::access(p, N, oc_check::LOAD, true, __builtin_return_address(0));                  \
  }                                                                                             \
  OC_UNCHECKED void __tsan_write##N(void* p) {                                                  \
    oc_check::access(p, N, oc_check::STORE, true, __builtin_return_address(0));                 \
  }                                                                                             \
  OC_UNCHECKED void __tsan_unaligned_read##N(void* p) {                                         \
    oc_check::access(p, N, oc_check::LOAD, false, __builtin_return_address(0));                 \
  }                                                                                             \
  OC_UNCHECKED void __tsan_unaligned_write##N(void* p) {                                        \
    oc_check::access(p, N, oc_check::STORE, false, __builtin_return_address(0));                \
  }
OC_CHECK_SIZE(1) OC_CHECK_SIZE(2) OC_CHECK_SIZE(4) OC_CHECK_SIZE(8) OC_CHECK_SIZE(16)
#undef OC_CHECK_SIZE
OC_UNCHECKED void __tsan_read_range(void* p, unsigned long size) {
  oc_check::access(p, size, oc_check::LOAD, false, __builtin_return_address(0));
}
OC_UNCHECKED void __tsan_write_range(void* p, unsigned long size) {
  oc_check::access(p, size, oc_check::STORE, false, __builtin_return_address(0));
}

// The array arguments of the calling thread's next launch (kept alive by the host until it
// returns).
OC_UNCHECKED void oc_check_regions(const oc_check::Region* regions, int n) {
  oc_check::next_regions = regions;
  oc_check::next_n_regions = n;
}

// The calling thread's last launch's report (empty names where it ran clean); returns its
// checked accesses.
OC_UNCHECKED unsigned long long oc_check_result(oc_check::Report* out) {
  *out = oc_check::last_report;
  return oc_check::last_accesses;
}
}
