// Kernels that synchronize within a block: the emulator must run them as the GPU does.

// Sum of each block's inputs by a tree in shared memory; threads in any 1-D/2-D/3-D block shape
// (at most 256, a power of two), the block's linear thread index as CUDA numbers it.
template <bool Barriers>
__global__ void block_sum(const int* x, int* out) {
  __shared__ int s[256];
  const unsigned int t = threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z);
  const unsigned int n = blockDim.x * blockDim.y * blockDim.z;
  const unsigned int b = blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z);
  s[t] = x[b * n + t];
  if (Barriers) __syncthreads();
  for (unsigned int half = n / 2; half > 0; half /= 2) {
    if (t < half) s[t] += s[t + half];
    if (Barriers) __syncthreads();
  }
  if (t == 0) out[b] = s[0];
}

// Every warp collective per thread (1-D blocks); lanes outside `mask` take no part and write -1.
__global__ void warp_ops(const int* x, const double* d, int* out, double* dout,
                         unsigned int mask, int arg, int width) {
  const unsigned int t = blockIdx.x * blockDim.x + threadIdx.x, lane = threadIdx.x % 32;
  int* o = out + 7 * t;
  if (!((mask >> lane) & 1u)) {
    for (int j = 0; j < 7; ++j) o[j] = -1;
    dout[t] = -1.0;
    return;
  }
  const int v = x[t];
  o[0] = __shfl_sync(mask, v, arg, width);
  o[1] = __shfl_up_sync(mask, v, arg, width);
  o[2] = __shfl_down_sync(mask, v, arg, width);
  o[3] = __shfl_xor_sync(mask, v, arg, width);
  o[4] = (int)__ballot_sync(mask, v > 0);
  o[5] = __any_sync(mask, v > 100);
  o[6] = __all_sync(mask, v > -100);
  __syncwarp(mask);
  dout[t] = __shfl_xor_sync(mask, d[t], arg, width);
}

// atomicAdd/Min/Max/CAS on int and unsigned from every thread of every block.
__global__ void atomics(const int* x, int* ints, unsigned int* uints) {
  const unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
  const int v = x[t];
  atomicAdd(&ints[0], v);
  atomicMin(&ints[1], v);
  atomicMax(&ints[2], v);
  atomicAdd(&uints[0], (unsigned int)(v & 0xFF));
  atomicMax(&uints[1], (unsigned int)v);
  atomicMin(&uints[2], (unsigned int)v);
  int seen = ints[3];
  for (int old; (old = atomicCAS(&ints[3], seen, seen + 1)) != seen;) seen = old;
}

// Vector types: out[t] = x[t] scaled by float4/int4 lanes built with make_*.
__global__ void vectors(const float4* x, float4* y, int4* z) {
  const unsigned int t = blockIdx.x * blockDim.x + threadIdx.x;
  const float4 v = x[t];
  y[t] = make_float4(v.w, v.z * 2.0f, v.y, v.x);
  z[t] = make_int4((int)t, -(int)t, (int)v.x, 7);
}

// Lanes 16..31 exit while lanes 0..15 shuffle with a full mask: a deadlock on the GPU.
__global__ void exited_lanes(int* out) {
  if (threadIdx.x < 16) out[threadIdx.x] = __shfl_sync(0xFFFFFFFFu, (int)threadIdx.x, 20);
}
