// Kernels with the errors the emulator's checker must find (tests/core/test_checker.py), next to
// correct twins where the difference is one line. Test-only: the package never loads them.

// Copies x to y, one thread per element; Bound = 1 reads one element past the end (i <= n).
template <int Bound>
__global__ void copy_until(const float* x, float* y, int n) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n + Bound) y[i < n ? i : n - 1] = x[i];
}

// Each thread adds one to its shared slot, then reads its neighbour's; Barrier = false leaves
// out the __syncthreads between the write and the read (a race, whatever the order).
template <bool Barrier>
__global__ void neighbour(const int* x, int* y) {
  __shared__ int slot[128];
  const unsigned int t = threadIdx.x;
  slot[t] = x[t];
  __syncthreads();
  slot[t] += 1;
  if (Barrier) __syncthreads();
  y[t] = slot[(t + 1) % blockDim.x];
}

// Half of the threads fill the shared array, all read their own slot after the barrier: the
// upper half reads slots no thread wrote.
__global__ void half_filled(int* y) {
  __shared__ int slot[128];
  const unsigned int t = threadIdx.x;
  if (t < blockDim.x / 2) slot[t] = (int)t;
  __syncthreads();
  y[t] = slot[t];
}

// A barrier inside a branch: Split = 0, only threads below 16 reach it (the rest exit);
// Split = 1, even and odd threads wait at two different __syncthreads.
template <int Split>
__global__ void branch_barrier(const int* x, int* y) {
  __shared__ int slot[64];
  const unsigned int t = threadIdx.x;
  slot[t] = x[t];
  if (Split == 0) {
    if (t < 16) {
      __syncthreads();
      y[t] = slot[t ^ 1];
    }
  } else {
    if (t % 2) {
      __syncthreads();
    } else {
      __syncthreads();
    }
    y[t] = slot[t ^ 1];
  }
}

// A sum per plane with shared partials reused across a grid-stride loop over planes; Reuse =
// false leaves out the barrier that keeps the next plane's writes after this plane's reads: a
// race that shows only where a block serves more than one plane.
template <bool Reuse>
__global__ void plane_sums(const float* x, float* y, int planes, int length) {
  __shared__ float partial[4];
  const unsigned int t = threadIdx.x;
  for (int plane = blockIdx.x; plane < planes; plane += gridDim.x) {
    float acc = 0.0f;
    for (int i = t; i < length; i += blockDim.x) acc += x[plane * length + i];
    for (int d = 16; d > 0; d >>= 1) acc += __shfl_xor_sync(0xFFFFFFFFu, acc, d);
    if (t % 32 == 0) partial[t / 32] = acc;
    __syncthreads();
    if (t == 0) y[plane] = partial[0] + partial[1] + partial[2] + partial[3];
    if (Reuse) __syncthreads();
  }
}

// Lanes of a warp exchange values through shared memory (set to 0 before a barrier first):
// ordered by __syncwarp (Sync = 1), not by a shuffle, which orders no memory (Sync = 2), nor by
// nothing (Sync = 0).
template <int Sync>
__global__ void warp_exchange(const int* x, int* y) {
  __shared__ int slot[32];
  const unsigned int lane = threadIdx.x;
  slot[lane] = 0;
  __syncthreads();
  slot[lane] = x[lane];
  if (Sync == 1) __syncwarp();
  y[lane] = Sync == 2 ? __shfl_xor_sync(0xFFFFFFFFu, x[lane], 1) : 0;
  y[lane] += slot[lane ^ 1];
}

// Atomic additions to one shared counter race with nothing (Plain = false); a plain read of it
// between them does (Plain = true).
template <bool Plain>
__global__ void shared_count(int* y) {
  __shared__ int count;
  if (threadIdx.x == 0) count = 0;
  __syncthreads();
  atomicAdd(&count, 1);
  if (Plain) y[threadIdx.x + 1] = count;
  __syncthreads();
  if (threadIdx.x == 0) y[0] = count;
}

// 16-byte loads of x from element `first` on (aligned only where 4 divides it), and a store
// through a pointer to const (WriteInput).
template <bool WriteInput>
__global__ void vector_copy(const float* x, float* y, int first) {
  const int t = blockIdx.x * blockDim.x + threadIdx.x;
  const float4 v = *reinterpret_cast<const float4*>(x + first + 4 * t);
  y[4 * t] = v.x; y[4 * t + 1] = v.y; y[4 * t + 2] = v.z; y[4 * t + 3] = v.w;
  if (WriteInput) const_cast<float*>(x)[t] = 0.0f;
}

// Reads x[i * step] for i < n: with a strided view whose stride is not `step`, some reads fall
// between its elements.
__global__ void gather(const float* x, float* y, int n, int step) {
  const int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = x[i * step];
}
