// Row sums (inner == 1): a group of threads, a warp or a whole block, walks a row with 16-byte
// loads, then reduces through warp shuffles (and shared memory, for a block). Long rows with
// few of them are split across `splits` blocks, whose partials one block sums in block order:
// for float accumulators through slots (split_slots.cuh), for the others the last block to
// finish. A full reduction is one row split across the whole GPU. Split fp32 rows (and fp16
// sums) take one contiguous run per block instead (reduce_row_runs_kernel,
// reduce_half_row_runs_kernel), where each row gets two runs or more (row_run_splits, reduce.cu);
// sums of aligned rows of whole vectors (fp32, fp16, bf16) a leaner runs kernel
// (reduce_vector_runs_kernel), and such rows that are not split a block each
// (reduce_vector_rows_kernel).
#pragma once

#include <cstdint>

#include "cuda/common.cuh"
#include "cuda/reduce/split_slots.cuh"
#include "cuda/reduce/thread_partial.cuh"
#include "cuda/tuning/reduce.h"
#include "reduce_element.h"

namespace smem::cuda {
// Kernels live in the anonymous namespace of smem::cuda, as before the split: only reduce/reduce.cu
// includes this header, and a kernel's mangled name decides where ptxas places its static
// shared memory beside the shared flags of last_block_to_finish and publish_partial (so, its
// machine code).
namespace {
using namespace reduce;

constexpr int kRowsPerWarpBlock = kBlockThreads / kWarpSize;

// Rows of length n. kGroup == kWarpSize: each warp owns a row. kGroup == kBlockThreads: each
// block owns a slice (blockIdx.x of `splits`) of a row (blockIdx.y, striding by gridDim.y),
// each thread kInFlight 16-byte loads in flight. `at_start`: split float rows take their
// tickets as they start (split_slots.cuh).
template <ReduceMap M, int kGroup, typename T, typename O, int kInFlight = kLoadsInFlight>
__global__ void __launch_bounds__(kBlockThreads)
reduce_rows_kernel(const T* a, const T* b, O* out, SplitPartial<acc_t<T>>* partial, unsigned* done,
                   int64_t rows, int64_t n, int splits, bool streaming, bool at_start) {
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
      unsigned ticket = 0;
      if constexpr (kHasSlots<A>) ticket = ticket_at_start(&done[row], at_start);
      const int64_t t = static_cast<int64_t>(blockIdx.x) * kGroup + threadIdx.x;
      A v = block_sum<kGroup>(thread_partial<M, kInFlight>(
          a + row * n, b + row * n, n, t, static_cast<int64_t>(splits) * kGroup, streaming));
      if (splits == 1) {
        if (threadIdx.x == 0) out[row] = static_cast<O>(v);
        continue;
      }
      auto* row_partials = partial + row * splits;
      if constexpr (kHasSlots<A>) {
        if (sum_row_slots<kGroup>(row_partials, v, at_start, ticket, &done[row], splits) &&
            threadIdx.x == 0)
          out[row] = static_cast<O>(v);
      } else {
        if (threadIdx.x == 0) row_partials[blockIdx.x] = v;
        if (last_block_to_finish(&done[row], splits)) {
          // The whole block combines the partials: strided compensated sums, then a tree.
          v = block_sum<kGroup>(partials_sum(row_partials, splits, threadIdx.x, kGroup));
          if (threadIdx.x == 0) out[row] = static_cast<O>(v);
        }
      }
    }
  }
}

// The end of a block of a split float row: the block's sum of its threads' partials `v`, handed
// over through the row's slots, and the row's total written by the block that sums them.
template <int kThreads, typename A, typename O>
__device__ inline void finish_run(A v, typename SlotCode<A>::Word* row_slots, bool at_start,
                                  unsigned ticket, unsigned* counter, int splits, O* row_out) {
  v = block_sum<kThreads>(v);
  if (sum_row_slots<kThreads>(row_slots, v, at_start, ticket, counter, splits) && threadIdx.x == 0)
    *row_out = static_cast<O>(v);
}

// Float rows split over `splits` blocks each (blockIdx.x of them, for row blockIdx.y, striding
// by gridDim.y), each block summing one contiguous run of `run` elements of its row with
// kThreads threads interleaving 16-byte vectors, kInFlight loads in flight each. The blocks
// hand their partials through slots (split_slots.cuh) to the one with the last ticket, taken
// as each starts where `at_start`, which sums them in block order.
template <ReduceMap M, int kThreads, int kInFlight, typename T, typename O>
__device__ inline void row_runs(const T* a, const T* b, O* out,
                                typename SlotCode<acc_t<T>>::Word* slots, unsigned* done,
                                int64_t rows, int64_t n, int64_t run, int splits, bool streaming,
                                bool at_start) {
  using A = acc_t<T>;
  const int64_t begin = std::min<int64_t>(n, blockIdx.x * run);
  const int64_t end = std::min(n, begin + run);
  for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
    const unsigned ticket = ticket_at_start(&done[row], at_start);
    const int64_t at = row * n + begin;
    finish_run<kThreads>(
        thread_partial<M, kInFlight>(a + at, b + at, end - begin, threadIdx.x, kThreads, streaming),
        slots + row * splits, at_start, ticket, &done[row], splits, &out[row]);
  }
}

// fp32 runs: the register count is ptxas's choice (39 for sum on sm_90; 3 blocks of 512 per SM).
template <ReduceMap M, int kThreads, int kInFlight, typename T, typename O>
__global__ void __launch_bounds__(kThreads)
reduce_row_runs_kernel(const T* a, const T* b, O* out, typename SlotCode<acc_t<T>>::Word* slots,
                       unsigned* done, int64_t rows, int64_t n, int64_t run, int splits,
                       bool streaming, bool at_start) {
  row_runs<M, kThreads, kInFlight>(a, b, out, slots, done, rows, n, run, splits, streaming,
                                   at_start);
}

// fp16 runs, held to registers that let kMinBlocks blocks be resident per SM.
template <ReduceMap M, int kThreads, int kInFlight, int kMinBlocks, typename T, typename O>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
reduce_half_row_runs_kernel(const T* a, const T* b, O* out,
                            typename SlotCode<acc_t<T>>::Word* slots, unsigned* done, int64_t rows,
                            int64_t n, int64_t run, int splits, bool streaming, bool at_start) {
  row_runs<M, kThreads, kInFlight>(a, b, out, slots, done, rows, n, run, splits, streaming,
                                   at_start);
}

// This thread's sum of map(v) over the vectors av[i], av[i + stride], ... below `end`, with
// kInFlight loads in flight and the evict-first choice (kStreaming) compiled in: no head or
// tail to check, so the path to the first loads is short. (The kernels whose stride is their
// block pass it as a constant.)
template <ReduceMap M, int kInFlight, bool kStreaming, typename A, typename VecT>
__device__ inline A vector_partial(const VecT* av, int64_t i, int64_t end, int stride) {
  Accumulator<A> acc;
  for (; i + (kInFlight - 1) * stride < end; i += kInFlight * stride) {
    VecT v[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) v[u] = load_once(av + i + u * stride, kStreaming);
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) acc.add(vector_sum<M, A>(v[u], v[u]));
  }
  // The last, partial batch: its loads in flight together too, predicated (for_each_batched's
  // guarded batch, which breaks out of its loops, spilled 32 bytes in the fp32 evict-first runs)
  if (i < end) {
    VecT v[kInFlight] = {};
#pragma unroll
    for (int u = 0; u < kInFlight; ++u)
      if (i + u * stride < end) v[u] = load_once(av + i + u * stride, kStreaming);
#pragma unroll
    for (int u = 0; u < kInFlight; ++u)
      if (i + u * stride < end) acc.add(vector_sum<M, A>(v[u], v[u]));
  }
  return acc.value();
}

// Sums (M: kIdentity, kSquare) of split rows of whole 16-byte vectors from a 16-byte aligned
// start (row blockIdx.y, `nvec` vectors), each block summing one contiguous run of `run` vectors
// of its row, as row_runs does, but through vector_partial: in a grid of one wave every block's
// start lies on the kernel's path.
template <ReduceMap M, int kThreads, int kInFlight, int kMinBlocks, bool kStreaming, typename T,
          typename O>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
reduce_vector_runs_kernel(const T* a, O* out, typename SlotCode<acc_t<T>>::Word* slots,
                          unsigned* done, int64_t nvec, int64_t run, int splits, bool at_start) {
  static_assert(M != ReduceMap::kProduct, "vector runs read one operand");
  using VecT = Vec<T, vec_width<T>()>;
  const int64_t row = blockIdx.y;
  const unsigned ticket = ticket_at_start(&done[row], at_start);
  const VecT* av = reinterpret_cast<const VecT*>(a) + row * nvec;
  const int64_t begin = blockIdx.x * run;
  const int64_t end = std::min(nvec, begin + run);
  finish_run<kThreads>(
      vector_partial<M, kInFlight, kStreaming, acc_t<T>>(av, begin + threadIdx.x, end, kThreads),
      slots + row * splits, at_start, ticket, &done[row], splits, &out[row]);
}

// This thread's map(v) of the one vector av[i], if i < end: where a block has a thread for
// every vector of its row, no loop, batch or guarded loads. The lone add from zero in the
// accumulator gives vector_partial's bits, and keeps -0 out of block_sum.
template <ReduceMap M, bool kStreaming, typename A, typename VecT>
__device__ inline A one_vector_partial(const VecT* av, int64_t i, int64_t end) {
  Accumulator<A> acc;
  if (i < end) {
    const VecT v = load_once(av + i, kStreaming);
    acc.add(vector_sum<M, A>(v, v));
  }
  return acc.value();
}

// Sums (M: kIdentity, kSquare) of whole rows of `nvec` 16-byte vectors from a 16-byte aligned
// start, a block per row (striding by gridDim.x): rows long enough for a block but too many to
// split. Each block's setup and combine lie between its loads and the next block's, thousands
// of times over, so the path to the loads is vector_partial's, or one_vector_partial's where
// kOneVector: the launch promises nvec <= kThreads.
template <ReduceMap M, int kThreads, int kInFlight, int kMinBlocks, bool kStreaming,
          bool kOneVector, typename T, typename O>
__global__ void __launch_bounds__(kThreads, kMinBlocks)
reduce_vector_rows_kernel(const T* a, O* out, int64_t rows, int64_t nvec) {
  static_assert(M != ReduceMap::kProduct, "vector rows read one operand");
  static_assert(!kOneVector || kInFlight == 1, "one vector a thread is one load in flight");
  using VecT = Vec<T, vec_width<T>()>;
  using A = acc_t<T>;
  for (int64_t row = blockIdx.x; row < rows; row += gridDim.x) {
    const VecT* av = reinterpret_cast<const VecT*>(a) + row * nvec;
    A v;
    if constexpr (kOneVector) v = one_vector_partial<M, kStreaming, A>(av, threadIdx.x, nvec);
    else v = vector_partial<M, kInFlight, kStreaming, A>(av, threadIdx.x, nvec, kThreads);
    v = block_sum<kThreads>(v);
    if (threadIdx.x == 0) out[row] = static_cast<O>(v);
  }
}

// Sums (M: kIdentity, kSquare) of short rows (at most kGroupMaxVectors) of `nvec` whole 16-byte
// vectors from a 16-byte aligned start, a group of 2^log2_lanes lanes per row (a power of two up
// to a warp, so that each lane has at most kInFlight vectors where a warp's batch holds the row)
// and a warp's 32 >> log2_lanes rows side by side: a warp per row would leave most lanes idle on
// rows of a few vectors, and the rest one load each. The groups' sums are shuffle trees within
// each group (a lane reads only lanes above it in its group; what lanes past a group's first
// read is never used).
template <ReduceMap M, int kInFlight, bool kStreaming, typename T, typename O>
__global__ void __launch_bounds__(kBlockThreads)
reduce_vector_groups_kernel(const T* a, O* out, int64_t rows, int64_t nvec, int log2_lanes) {
  static_assert(M != ReduceMap::kProduct, "vector groups read one operand");
  using VecT = Vec<T, vec_width<T>()>;
  using A = acc_t<T>;
  const int lanes = 1 << log2_lanes;
  const int lane = threadIdx.x & (lanes - 1);
  const int rows_per_warp = kWarpSize >> log2_lanes;
  constexpr int kWarps = kBlockThreads / kWarpSize;
  // the warp's first row and its stride: uniform across the warp, so every lane takes each
  // shuffle, whether its group has a row or not
  const int64_t warp_row =
      (static_cast<int64_t>(blockIdx.x) * kWarps + threadIdx.x / kWarpSize) * rows_per_warp;
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kWarps * rows_per_warp;
  const int group = (threadIdx.x % kWarpSize) >> log2_lanes;
  for (int64_t first = warp_row; first < rows; first += stride) {
    const int64_t row = first + group;
    A v = row < rows ? vector_partial<M, kInFlight, kStreaming, A>(
                           reinterpret_cast<const VecT*>(a) + row * nvec, lane, nvec, lanes)
                     : A(0);
    for (int delta = lanes / 2; delta > 0; delta /= 2) v = v + shfl_down(v, delta);
    if (lane == 0 && row < rows) out[row] = static_cast<O>(v);
  }
}

}  // namespace
}  // namespace smem::cuda
