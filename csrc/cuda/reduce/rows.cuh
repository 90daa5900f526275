// Row sums (inner == 1): a group of threads, a warp or a whole block, walks a row with 16-byte
// loads, then reduces through warp shuffles (and shared memory, for a block). Long rows with
// few of them are split across `splits` blocks, whose partials the last block to finish sums
// in block order; a full reduction is one row split across the whole GPU.
#pragma once

#include <cstdint>

#include "cuda/common.cuh"
#include "cuda/reduce/thread_partial.cuh"
#include "cuda/tuning/reduce.h"
#include "reduce.h"

namespace smem::cuda {
// Kernels live in the anonymous namespace of smem::cuda, as before the split: only reduce/reduce.cu
// includes this header, and a kernel's mangled name decides where ptxas places its static
// shared memory beside the shared flag of last_block_to_finish (so, its machine code).
namespace {
using namespace reduce;

constexpr int kRowsPerWarpBlock = kBlockThreads / kWarpSize;

// Rows of length n. kGroup == kWarpSize: each warp owns a row. kGroup == kBlockThreads: each
// block owns a slice (blockIdx.x of `splits`) of a row (blockIdx.y, striding by gridDim.y),
// each thread kInFlight 16-byte loads in flight.
template <ReduceMap M, int kGroup, typename T, typename O, int kInFlight = kLoadsInFlight>
__global__ void __launch_bounds__(kBlockThreads)
reduce_rows_kernel(const T* a, const T* b, O* out, acc_t<T>* partial, unsigned* done, int64_t rows,
                   int64_t n, int splits, bool streaming) {
  using A = acc_t<T>;
  if constexpr (kGroup == kWarpSize) {
    const int lane = threadIdx.x % kWarpSize;
    for (int64_t row =
             static_cast<int64_t>(blockIdx.x) * kRowsPerWarpBlock + threadIdx.x / kWarpSize;
         row < rows; row += static_cast<int64_t>(gridDim.x) * kRowsPerWarpBlock) {
      const A v =
          warp_sum(thread_partial<M>(a + row * n, b + row * n, n, lane, kWarpSize, streaming));
      if (lane == 0) out[row] = static_cast<O>(v);
    }
  } else {
    for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
      const int64_t t = static_cast<int64_t>(blockIdx.x) * kGroup + threadIdx.x;
      A v = block_sum<kGroup>(thread_partial<M, kInFlight>(
          a + row * n, b + row * n, n, t, static_cast<int64_t>(splits) * kGroup, streaming));
      if (splits == 1) {
        if (threadIdx.x == 0) out[row] = static_cast<O>(v);
        continue;
      }
      if (threadIdx.x == 0) partial[row * splits + blockIdx.x] = v;
      if (last_block_to_finish(&done[row], splits)) {
        // The whole block combines the partials: strided compensated sums, then a tree.
        v = block_sum<kGroup>(partials_sum(&partial[row * splits], splits, threadIdx.x, kGroup));
        if (threadIdx.x == 0) out[row] = static_cast<O>(v);
      }
    }
  }
}

}  // namespace
}  // namespace smem::cuda
