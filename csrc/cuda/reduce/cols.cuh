// Column sums (inner > 1): a block owns adjacent columns of one outer index, and its row
// slices walk down them, each warp reading a contiguous stretch of a row (coalesced); the
// slices meet in shared memory. Long columns with few of them (and short ones where the device
// would be short of blocks) are split over blocks, each a contiguous run of rows, whose partials
// the last block to finish sums in order.
#pragma once

#include <algorithm>
#include <cstdint>
#include <type_traits>

#include "cuda/common.cuh"
#include "cuda/reduce/thread_partial.cuh"
#include "cuda/tuning/reduce.h"
#include "reduce_element.h"

namespace smem::cuda {
// Kernels live in the anonymous namespace of smem::cuda, as before the split: only reduce/reduce.cu
// includes this header, and a kernel's mangled name decides where ptxas places its static
// shared memory beside the shared flag of last_block_to_finish (so, its machine code).
namespace {
using namespace reduce;

// fp16 and bf16 columns in 8-byte vectors (launch_cols: sums and sums of squares of wide enough
// rows; dots are one row and never reach the columns) hold 4 sums a thread, not 8: held to 64
// registers, kColBlocksPerSm blocks are resident with kColHalfLoadsInFlight loads each.
template <typename T, int V>
constexpr bool col_half_words() {
  return kHalfFloat<T> && V == kColHalfWidth;
}
// (0 leaves the others' registers to ptxas, as no bound does: a bound of 1 block let the fp32
// kernel take 93 registers, 2 blocks per SM, where it takes 64 unbounded.)
template <typename T, int V>
constexpr int col_min_blocks() {
  return col_half_words<T, V>() ? kColBlocksPerSm : 0;
}

// Scalar loads in flight a thread where a lane sums one column (tuning/reduce.h).
template <typename T>
constexpr int col_scalar_loads_in_flight() {
  return std::max<int>(kLoadsInFlight,
                       std::min<int>(kColScalarLoadsInFlight, kColScalarBytesInFlight / sizeof(T)));
}

// [outer, R, inner] with inner > 1. Block (kLanes, kSlices) owns kLanes * V adjacent columns
// of one outer index, V per lane: one 16-byte vector where the rows allow it, so a warp reads
// 512 contiguous bytes of a row per load (kLanes == 32), or 128 bytes of each of 4 rows where
// rows are short (kLanes == 8: a 256-byte row of bf16 would leave half of 32 lanes idle); for
// wide fp16 and bf16 rows one 8-byte vector (256 bytes a warp).
// blockIdx.y is its slice of R among `splits`.
template <ReduceMap M, int V, int kLanes, typename T, typename O>
__global__ void __launch_bounds__(kBlockThreads, col_min_blocks<T, V>())
    reduce_cols_kernel(const T* a, const T* b, O* out, acc_t<T>* partial, unsigned* done,
                       int64_t outer, int64_t R, int64_t inner, int splits, bool streaming) {
  using A = acc_t<T>;
  constexpr int kSlices = kBlockThreads / kLanes;  // row slices per block
  constexpr int kTileCols = kLanes * V;
  constexpr int kInFlight = col_half_words<T, V>() ? kColHalfLoadsInFlight
                            : std::is_same_v<T, float> && V == 4 && kLanes == 32
                                ? kColFloatLoadsInFlight
                            : V == 1 ? col_scalar_loads_in_flight<T>()
                                     : kLoadsInFlight;
  // Where a block has 32 slices (kLanes == 8), its 8 writers adding them all (32 x V values
  // each) were the block's tail, so every thread first adds V consecutive slices of one
  // column, and each writer then adds the kGroups group sums of its V columns, in group order.
  // 8 slices (kLanes == 32) are added by the writers directly: the extra step cost more. (With
  // V == 1 the first step only copies; it costs a barrier and registers for nothing.)
  constexpr int kGroups = kLanes == 8 ? kSlices / V : 1;
  static_assert(kGroups == 1 || kGroups * kTileCols == kBlockThreads, "a group per thread");
  // [slice][column], then [group][column], +1 column of padding: the four slices a warp stores
  // where kLanes == 8 start on different banks (conflict-free for fp32 vectors; 2-4 ways for
  // narrower types, whose lanes' V columns span more banks).
  constexpr int kSharedRows = kSlices + (kGroups > 1 ? kGroups : 0);
  __shared__ alignas(16) unsigned char raw[kSharedRows * (kTileCols + 1) * sizeof(A)];
  auto slice_sum = reinterpret_cast<A(*)[kTileCols + 1]>(raw);
  // Sums each of this lane's V columns over the kSlices row slices, in a fixed order; the
  // result is valid where threadIdx.y == 0.
  auto sum_slices = [&](A(&v)[V]) {
#pragma unroll
    for (int k = 0; k < V; ++k) slice_sum[threadIdx.y][threadIdx.x * V + k] = v[k];
    __syncthreads();
    if constexpr (kGroups == 1) {
      if (threadIdx.y == 0) {
#pragma unroll 8
        for (int s = 1; s < kSlices; ++s)
#pragma unroll
          for (int k = 0; k < V; ++k) v[k] = v[k] + slice_sum[s][threadIdx.x * V + k];
      }
    } else {
      auto group_sum = slice_sum + kSlices;
      const int thread = threadIdx.y * kLanes + threadIdx.x;
      const int g = thread / kTileCols, col = thread % kTileCols;
      A group = slice_sum[g * V][col];
#pragma unroll
      for (int s = 1; s < V; ++s) group = group + slice_sum[g * V + s][col];
      group_sum[g][col] = group;
      __syncthreads();
      if (threadIdx.y == 0)
#pragma unroll
        for (int k = 0; k < V; ++k) {
          v[k] = group_sum[0][threadIdx.x * V + k];
#pragma unroll
          for (int h = 1; h < kGroups; ++h) v[k] = v[k] + group_sum[h][threadIdx.x * V + k];
        }
    }
    __syncthreads();
  };
  const int64_t col_tiles = ceil_div(inner, kTileCols);
  // Split blockIdx.y sums one contiguous run of rows, so each block streams its own stretch
  // of memory (interleaving the splits' rows made the bandwidth depend on their number).
  const int64_t run = ceil_div(R, splits);
  const int64_t r_end = std::min<int64_t>(R, (blockIdx.y + 1) * run);
  for (int64_t tile = blockIdx.x; tile < outer * col_tiles; tile += gridDim.x) {
    const int64_t o = tile / col_tiles;
    // this lane's first column; the host makes inner a multiple of V, so all V exist or none
    const int64_t c = (tile % col_tiles) * kTileCols + threadIdx.x * V;
    const int64_t base = o * R * inner + c;
    ColumnAccumulator<T> acc[V];
    if (c < inner)
      add_column_rows<kInFlight, M>(acc, a, b, base, inner, blockIdx.y * run + threadIdx.y, r_end,
                                    kSlices, streaming);
    A v[V];
#pragma unroll
    for (int k = 0; k < V; ++k) v[k] = acc[k].value();
    sum_slices(v);
    const int64_t out_index = o * inner + c;
    const bool writer = threadIdx.y == 0 && c < inner;
    if (splits == 1) {
      if (writer)
#pragma unroll
        for (int k = 0; k < V; ++k) out[out_index + k] = static_cast<O>(v[k]);
      continue;
    }
    // partials are [split][output], so a warp writes (and the last block reads) them coalesced
    auto split_partial = [&](int64_t s) { return partial + s * outer * inner + out_index; };
    if (writer)
#pragma unroll
      for (int k = 0; k < V; ++k) split_partial(blockIdx.y)[k] = v[k];
    if (last_block_to_finish(&done[tile], splits)) {
      // The kSlices threads of each column combine its partials: strided, then in a fixed order.
      Accumulator<A> total[V];
      if (c < inner)
        for (int s = threadIdx.y; s < splits; s += kSlices)
#pragma unroll
          for (int k = 0; k < V; ++k) total[k].add(load_from_l2(split_partial(s) + k));
#pragma unroll
      for (int k = 0; k < V; ++k) v[k] = total[k].value();
      sum_slices(v);
      if (writer)
#pragma unroll
        for (int k = 0; k < V; ++k) out[out_index + k] = static_cast<O>(v[k]);
    }
  }
}

}  // namespace
}  // namespace smem::cuda
