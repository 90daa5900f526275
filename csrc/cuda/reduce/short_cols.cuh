// Column sums of many small [R, inner] slabs, where the column kernel (cols.cuh) gives every tile
// of a slab a block of 256 threads whose row slices and lanes mostly idle (few rows, or narrow
// ones): the blocks, not the bytes, then set the time. Two kernels instead:
//   reduce_short_cols_kernel: a thread sums whole columns (V adjacent ones, a 16-byte vector) down
//     all R rows. A warp's load covers 32 threads' vectors of one row each; where a slab's row is
//     narrower than a sector, the next rows' loads touch the same sectors.
//   reduce_slab_warps_kernel: a warp per slab of rows of 1, 2, 4, 8 or 16 vectors, its lanes
//     across a row and down the rows, so that every lane loads; shuffles then add the lanes of
//     each vector.
#pragma once

#include <c10/util/Exception.h>

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
  const int64_t vectors_per_slab = inner / V;
  const int64_t vectors = outer * vectors_per_slab;
  for (int64_t j = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; j < vectors;
       j += int64_t(gridDim.x) * blockDim.x) {
    const int64_t o = j / vectors_per_slab;
    ColumnAccumulator<T> acc[V];
    add_column_rows<kLoadsInFlight, M>(acc, a, b, o * R * inner + (j - o * vectors_per_slab) * V,
                                       inner, 0, R, 1, streaming);
    // one store of the V outputs (out is a fresh allocation: launch_short_cols checks it), so a
    // warp writes its outputs contiguously
    Vec<O, V> outputs;
#pragma unroll
    for (int k = 0; k < V; ++k) outputs.v[k] = static_cast<O>(acc[k].value());
    store_vec(reinterpret_cast<Vec<O, V>*>(out) + j, outputs);
  }
}

// [outer, R, inner] of inner = p 16-byte vectors, p a power of two below a warp (fp32, fp16 and
// bf16 sums and sums of squares): a warp per slab, its lane l on vector l % p of rows l / p, l / p
// + 32 / p, ..., so that every lane loads and a warp reads 512 contiguous bytes. (The thread per
// vector above has R loads in a row to wait for; the column kernel's 8 lanes per row idle where p
// < 8.) The 32 / p lanes of each vector then fold their sums by shuffles, in a fixed order.
template <ReduceMap M, typename T>
__global__ void __launch_bounds__(kBlockThreads)
reduce_slab_warps_kernel(const T* a, const T* b, T* out, int64_t outer, int64_t R, int p,
                         bool streaming) {
  static_assert(std::is_same_v<acc_t<T>, float>, "fp32, fp16 and bf16: float partials");
  constexpr int V = vec_width<T>();
  const int lane = threadIdx.x % kWarpSize;
  const int row_step = kWarpSize / p;
  const int64_t inner = int64_t(p) * V;
  const int64_t warps = int64_t(gridDim.x) * (blockDim.x / kWarpSize);
  // o is the same for the whole warp, so every lane reaches every shuffle
  for (int64_t o = (blockIdx.x * int64_t(blockDim.x) + threadIdx.x) / kWarpSize; o < outer;
       o += warps) {
    ColumnAccumulator<T> acc[V];
    add_column_rows<kLoadsInFlight, M>(acc, a, b, o * R * inner + (lane % p) * V, inner, lane / p,
                                       R, row_step, streaming);
    float sum[V];
#pragma unroll
    for (int k = 0; k < V; ++k) sum[k] = acc[k].value();
    // lanes of one vector differ in the bits from p up: a butterfly over those leaves each with
    // the same total (a + b == b + a). Plain float adds, as the column kernel's slices: a partial
    // past the float maximum is inf even where the lanes' total is not.
    for (int offset = kWarpSize / 2; offset >= p; offset /= 2)
#pragma unroll
      for (int k = 0; k < V; ++k) sum[k] = sum[k] + __shfl_xor_sync(0xffffffffu, sum[k], offset);
    if (lane < p) {
      Vec<T, V> outputs;
#pragma unroll
      for (int k = 0; k < V; ++k) outputs.v[k] = static_cast<T>(sum[k]);
      store_vec(reinterpret_cast<Vec<T, V>*>(out + o * inner) + lane, outputs);
    }
  }
}

// ---------------------------------------------------------------- launches (reduce.cu)

// Short columns: a thread per 16-byte vector of a slab's row where the rows are whole vectors
// from an aligned start, else (odd widths, unaligned starts) per column.
template <ReduceMap M, typename T, typename O>
void launch_short_cols(const T* a, const T* b, O* out, int64_t outer, int64_t R, int64_t inner,
                       bool streaming, cudaStream_t stream) {
  constexpr int V = vec_width<T>();
  const bool vectors = whole_vector_rows(a, inner);  // b is a (launch_cols)
  TORCH_INTERNAL_ASSERT(is_aligned(out, vectors ? sizeof(Vec<O, V>) : sizeof(O)),
                        "smem: unaligned column sums");
  auto* kernel =
      vectors ? reduce_short_cols_kernel<M, V, T, O> : reduce_short_cols_kernel<M, 1, T, O>;
  const int64_t threads = outer * inner / (vectors ? V : 1);
  kernel<<<block_per_item(ceil_div(threads, kBlockThreads)), kBlockThreads, 0, stream>>>(
      a, b, out, outer, R, inner, streaming);
}

// Narrow slabs a warp each: fp32, fp16 and bf16 sums and sums of squares of aligned rows of p =
// 1, 2, 4, 8 or 16 16-byte vectors, with a row a lane at least, kSlabWarpsPerSm slabs per SM, and
// fewer round trips to wait than a thread per vector (tuning/reduce.h). Returns whether it
// launched.
template <ReduceMap M, typename T, typename O>
bool launch_slab_warps(const T* a, const T* b, O* out, int64_t outer, int64_t R, int64_t inner,
                       bool streaming, cudaStream_t stream) {
  if constexpr (M != ReduceMap::kProduct && (std::is_same_v<T, float> || kHalfFloat<T>) &&
                std::is_same_v<T, O>) {
    constexpr int V = vec_width<T>();
    const int64_t p = inner / V;
    const int64_t sms = current_device_info().sm_count;
    if (!whole_vector_rows(a, inner) || p >= kWarpSize || (p & (p - 1)) != 0 || R * p < kWarpSize ||
        outer < sms * kSlabWarpsPerSm)
      return false;
    // Both kernels wait out round trips in a row: waves of resident warps (threads) times the
    // batches of kLoadsInFlight loads a lane has per slab (a thread per vector). A warp's round
    // also shuffles and stores: the warps only where they take kSlabWarpRoundCost times fewer.
    constexpr int kWarpsPerBlock = kBlockThreads / kWarpSize;
    const int64_t resident_warps =
        sms * kWarpsPerBlock *
        resident_blocks_per_sm(reduce_slab_warps_kernel<M, T>, kBlockThreads);
    const int64_t resident_threads =
        sms * kBlockThreads *
        resident_blocks_per_sm(reduce_short_cols_kernel<M, V, T, O>, kBlockThreads);
    const int64_t warp_rounds = ceil_div(outer, resident_warps) *
                                ceil_div(ceil_div(R * p, kWarpSize), int64_t(kLoadsInFlight));
    const int64_t thread_rounds =
        ceil_div(outer * p, resident_threads) * ceil_div(R, int64_t(kLoadsInFlight));
    if (kSlabWarpRoundCost * warp_rounds > thread_rounds) return false;
    TORCH_INTERNAL_ASSERT(is_aligned(out, 16), "smem: unaligned column sums");
    reduce_slab_warps_kernel<M, T>
        <<<block_per_item(ceil_div(outer, kWarpsPerBlock)), kBlockThreads, 0, stream>>>(
            a, b, out, outer, R, static_cast<int>(p), streaming);
    return true;
  }
  return false;
}

}  // namespace
}  // namespace smem::cuda
