// Auto-range (histc with min == max): the input's finite min and max, reduced on the device
// and read by the histogram kernel from device memory, so there is no host sync and the whole
// op can be captured in a CUDA graph.
#pragma once

#include <cstdint>

#include "cuda/common.cuh"
#include "cuda/histogram/elements.cuh"
#include "cuda/tuning/histogram.h"
#include "histc_bins.h"

namespace smem::cuda {
// Kernels live in the anonymous namespace of smem::cuda, as before the split: only
// histogram/histc.cu includes this header, and a kernel's mangled name decides where ptxas places
// its static shared memory beside the shared flag of last_block_to_finish (so, its machine code).
namespace {
using namespace histogram;

template <typename M>
__device__ inline bool finite(M v) {
  return isfinite(v);
}

// Finite min/max of x into out[0], out[1] (widened when equal, as torch does). Each block
// reduces its share, the last block combines the per-block results in block order.
template <typename T, typename M>
__global__ void __launch_bounds__(kRangeThreads)
range_kernel(const T* x, int64_t n, bool streaming, M* block_range, unsigned* done, M* out) {
  __shared__ M lo_s[kRangeThreads], hi_s[kRangeThreads];
  M lo = INFINITY, hi = -INFINITY;
  for_each_element<true, false, kRangeLoadsInFlight<T>>(
      x, n, blockIdx.x * int64_t(kRangeThreads) + threadIdx.x, int64_t(gridDim.x) * kRangeThreads,
      streaming, [&](T t) {
        const M v = static_cast<M>(t);
        if (finite(v)) {
          lo = fmin(lo, v);
          hi = fmax(hi, v);
        }
      });
  lo_s[threadIdx.x] = lo;
  hi_s[threadIdx.x] = hi;
  __syncthreads();
  for (int s = kRangeThreads / 2; s > 0; s >>= 1) {
    if (threadIdx.x < s) {
      lo_s[threadIdx.x] = fmin(lo_s[threadIdx.x], lo_s[threadIdx.x + s]);
      hi_s[threadIdx.x] = fmax(hi_s[threadIdx.x], hi_s[threadIdx.x + s]);
    }
    __syncthreads();
  }
  if (threadIdx.x == 0) {
    block_range[2 * blockIdx.x] = lo_s[0];
    block_range[2 * blockIdx.x + 1] = hi_s[0];
  }
  if (last_block_to_finish(done, gridDim.x) && threadIdx.x == 0) {
    M l = INFINITY, h = -INFINITY;
    for (unsigned b = 0; b < gridDim.x; ++b) {
      l = fmin(l, load_from_l2(&block_range[2 * b]));
      h = fmax(h, load_from_l2(&block_range[2 * b + 1]));
    }
    if (l > h) l = h = M(0);  // no finite value
    histc_widen_empty_range(l, h);
    out[0] = l;
    out[1] = h;
  }
}

}  // namespace
}  // namespace smem::cuda
