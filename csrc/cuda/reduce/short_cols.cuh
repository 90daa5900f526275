// Short column sums: many [R, inner] slabs, so a thread sums whole columns (V adjacent ones, a
// 16-byte vector) down all R rows. The column kernel (cols.cuh) gives every tile of a slab a block
// of 256 threads, whose row slices and lanes mostly idle where the slab's rows are few or narrow;
// the blocks, not the bytes, then set the time. Here a warp's load covers 32 threads' vectors of
// one row each: where a slab's row is narrower than a sector, the next rows' loads touch the same
// sectors (L1 or L2 hits), so DRAM need read each byte only once.
#pragma once

#include <cstdint>
#include <type_traits>

#include "cuda/common.cuh"
#include "cuda/reduce/thread_partial.cuh"
#include "cuda/tuning/reduce.h"
#include "reduce_element.h"

namespace smem::cuda {
// The anonymous namespace of cols.cuh, for the same reason: only reduce/reduce.cu includes it.
namespace {
using namespace reduce;

// [outer, R, inner] with inner > 1 and inner % V == 0 (so a thread's V columns share an outer
// index), summed over R: thread j of the grid-striding launch writes outputs j * V .. j * V + V - 1
// in one pass over its columns, in row order (bitwise reproducible, no partials).
template <ReduceMap M, int V, typename T, typename O>
__global__ void __launch_bounds__(kBlockThreads)
reduce_short_cols_kernel(const T* a, const T* b, O* out, int64_t outer, int64_t R, int64_t inner,
                         bool streaming) {
  using A = acc_t<T>;
  using VecT = Vec<T, V>;
  const int64_t vectors_per_slab = inner / V;
  const int64_t vectors = outer * vectors_per_slab;
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < vectors;
       j += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = j / vectors_per_slab;
    const int64_t base = o * R * inner + (j - o * vectors_per_slab) * V;
    auto row_ptr = [&](const T* p, int64_t r) {
      return reinterpret_cast<const VecT*>(p + base + r * inner);
    };
    // the column kernel's accumulators: fp16 and bf16 sums are issue-bound (common.cuh)
    std::conditional_t<kHalfFloat<T>, UnguardedCompensatedAccumulator, Accumulator<A>> acc[V];
    for_each_batched<kLoadsInFlight>(
        0, R, 1, [&](int64_t r) { return load_pair<M>(row_ptr(a, r), row_ptr(b, r), streaming); },
        [&](const Pair<VecT>& v) {
#pragma unroll
          for (int k = 0; k < V; ++k) acc[k].add(map_element<M, A>(v.a.v[k], v.b.v[k]));
        });
    // one store of the V outputs (out is a fresh allocation: launch_short_cols checks it), so a
    // warp writes its outputs contiguously
    Vec<O, V> sums;
#pragma unroll
    for (int k = 0; k < V; ++k) sums.v[k] = static_cast<O>(acc[k].value());
    store_vec(reinterpret_cast<Vec<O, V>*>(out) + j, sums);
  }
}

}  // namespace
}  // namespace smem::cuda
