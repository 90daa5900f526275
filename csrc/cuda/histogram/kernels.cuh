// The histogram kernels of smem.histc, one per counter layout (counters.cuh). Every count is
// an integer atomic, and integer atomics commute, so block scheduling cannot change a count.
//   histogram_shared_kernel  private 32-bit counters per block (WarpCopies)
//   histogram_lut16_kernel   2-byte inputs: a table of every bit pattern's bin, then WarpCopies
//   histogram_packed_kernel  packed narrow counters (PackedCounts), in one block or a group;
//                            packed_rows_sum_kernel adds up the rows its blocks may store
//   histogram_global_kernel  64-bit global counters, for bins beyond any block's shared memory
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cuda/common.cuh"
#include "cuda/histogram/bin_map.cuh"
#include "cuda/histogram/counters.cuh"
#include "cuda/histogram/elements.cuh"
#include "cuda/tuning/histogram.h"
#include "histc_bins.h"

namespace smem::cuda {
// Kernels live in the anonymous namespace of smem::cuda, as before the split: only
// histogram/histc.cu includes this header, and a kernel's mangled name decides where ptxas places
// its static shared memory beside the shared flag of last_block_to_finish (so, its machine code).
namespace {
using namespace histogram;

// Private histograms per block (WarpCopies) in dynamic shared memory, kInFlight vector loads
// in flight per thread. The host keeps each block's element count below 2^32.
template <typename T, typename M, bool kVector, int kInFlight>
__global__ void __launch_bounds__(kHistThreads)
histogram_shared_kernel(const T* x, int64_t n, bool streaming, int bins, int subs, Range<M> range,
                        Counts counts) {
  extern __shared__ unsigned smem[];
  const WarpCopies copies{smem, subs, bins, /*per_lane=*/false};
  copies.zero();
  const BinMap<M> bin_of(range, bins);
  __syncthreads();
  const WarpCopies::Slot mine = copies.mine();
  for_each_element<kVector, false, kInFlight>(
      x, n, blockIdx.x * int64_t(kHistThreads) + threadIdx.x, int64_t(gridDim.x) * kHistThreads,
      streaming, [&](T v) {
        const int bin = bin_of(v);
        if (bin >= 0) mine.add(bin);
      });
  __syncthreads();
  copies.flush(counts);
}

// 2-byte inputs (fp16, bf16, int16) have only 65536 bit patterns. Each block first bins
// every pattern once into a shared-memory table (bin + 1; 0 for out of range or NaN), so the
// work per element is a table lookup and a shared atomic, with no division (binning every
// element was compute-bound). The table is 128 KiB, so one 1024-thread block per SM, and
// copies of the counts (WarpCopies) fill what is left.
template <typename T, typename M>
__global__ void __launch_bounds__(kPackedThreads)
histogram_lut16_kernel(const T* x, int64_t n, bool streaming, int bins, int subs, bool per_lane,
                       Range<M> range, Counts counts) {
  static_assert(sizeof(T) == 2, "a table of 16-bit patterns");
  extern __shared__ unsigned smem[];
  auto* table = reinterpret_cast<unsigned short*>(smem);                  // [kPatterns16]
  const WarpCopies copies{smem + kPatterns16 / 2, subs, bins, per_lane};  // after the table
  const BinMap<M> bin_of(range, bins);
  for (int p = threadIdx.x; p < kPatterns16; p += kPackedThreads) {
    const auto bits = static_cast<unsigned short>(p);
    T v;
    memcpy(&v, &bits, sizeof(v));
    table[p] = static_cast<unsigned short>(bin_of(v) + 1);
  }
  copies.zero();
  __syncthreads();
  const WarpCopies::Slot mine = copies.mine();
  for_each_element<true>(reinterpret_cast<const unsigned short*>(x), n,
                         blockIdx.x * int64_t(kPackedThreads) + threadIdx.x,
                         int64_t(gridDim.x) * kPackedThreads, streaming, [&](unsigned short v) {
                           const int bin = table[v];
                           if (bin) mine.add(bin - 1);
                         });
  __syncthreads();
  copies.flush(counts);
}

// PackedCounts<kBits> in one block's shared memory (kLog2Split = 0), or spread over a group
// of 2^kLog2Split blocks, block r of a group holding every bin b with b % 2^log2_split == r (a
// run of popular neighbouring bins spreads over the group; a power of two, so owner and
// local bin are a mask and a shift). Every block of a group reads the same elements and
// counts only its own bins, so every add stays in the block's shared memory. The blocks of a
// group run side by side, so one of them reads an element from HBM and the others find it
// in L2: plain loads, not streaming ones, which would evict what the others are about to
// read. With `rows`, each block stores its counters there (its row, of row_words words: rank
// 0's, the most of a group) and packed_rows_sum_kernel adds the rows up, instead of adding
// them to the counts.
template <int kBits, int kLog2Split, typename T, typename M>
__global__ void __launch_bounds__(kPackedThreads)
histogram_packed_kernel(const T* x, int64_t n, bool streaming, int bins, Range<M> range,
                        Counts counts, unsigned* rows, int64_t row_words) {
  constexpr bool kGrouped = kLog2Split > 0;
  constexpr unsigned kOwnerMask = (1u << kLog2Split) - 1;
  // Batched adds hold more registers: with double math (integer and fp64 input) they spill,
  // so those take elements one at a time.
  constexpr bool kFloatMath = sizeof(M) == 4;
  extern __shared__ unsigned words[];
  const unsigned rank = blockIdx.x & kOwnerMask;
  const unsigned group = blockIdx.x >> kLog2Split, groups = gridDim.x >> kLog2Split;
  const PackedCounts<kBits> mine(words, (bins - rank + kOwnerMask) >> kLog2Split, kLog2Split, rank);
  mine.zero();
  const BinMap<M> bin_of(range, bins);
  typename PackedCounts<kBits>::WrapTally tally;
  __syncthreads();
  // Whether this block owns v's bin; j: its local bin.
  auto owns = [&](T v, unsigned& j) {
    if constexpr (kGrouped) {
      // out of range: a "bin" of another owner, so one test is enough
      const int bin = bin_of(v, rank ^ 1);
      j = static_cast<unsigned>(bin) >> kLog2Split;
      return (bin & kOwnerMask) == rank;
    } else {
      const int bin = bin_of(v);
      j = static_cast<unsigned>(bin);
      return bin >= 0;
    }
  };
  // An element, or a vector's in batches of four: every add of a batch is issued before any
  // old word is looked at, since each check waits out a shared atomic's round trip.
  auto count = [&](const auto& item) {
    using Item = std::decay_t<decltype(item)>;
    if constexpr (std::is_same_v<Item, T>) {
      unsigned j;
      if (owns(item, j)) mine.settle(j, mine.bump_if(true, j), tally, counts.add);
    } else {
      constexpr int V = sizeof(Item) / sizeof(T), kBatch = kFloatMath ? std::min(V, 4) : 1;
#pragma unroll
      for (int k0 = 0; k0 < V; k0 += kBatch) {
        unsigned j[kBatch], old[kBatch];
        bool owned[kBatch];
#pragma unroll
        for (int k = 0; k < kBatch; ++k) {
          owned[k] = owns(item.v[k0 + k], j[k]);
          old[k] = mine.bump_if(owned[k], j[k]);
        }
#pragma unroll
        for (int k = 0; k < kBatch; ++k)
          if (owned[k]) mine.settle(j[k], old[k], tally, counts.add);
      }
    }
  };
  // One block per SM reads from HBM: a load always in flight pays. A group's blocks find
  // most of their loads in L2: there two loads, then their work, do better, except with
  // double math, whose unrolled pairs spill.
  constexpr bool kPipelined = !kGrouped || !kFloatMath;
  for_each_element<true, kPipelined>(x, n, group * int64_t(kPackedThreads) + threadIdx.x,
                                     int64_t(groups) * kPackedThreads, streaming && !kGrouped,
                                     count);
  mine.settle_tally(tally, counts.add);
  __syncthreads();
  if (rows != nullptr) {
    mine.store_row(rows + int64_t(blockIdx.x) * row_words);
    return;
  }
  mine.flush(counts.add);
  counts.finish(bins);
}

// The rows that histogram_packed_kernel's blocks stored, added up per bin into the counts
// (which hold the wraps the packed kernel settled). A block takes kRowSumWords adjacent words
// of one rank's rows (blockIdx.y): each of its kRowSumSlices slices of threads reads every
// kRowSumSlices-th row (a warp: one row's words, 128 bytes), kRowsInFlight rows in flight per
// thread, and slice 0 adds the other slices' totals. So every bin has one thread, and its
// count takes a plain add. A field's sum stays below 2^32: under 2^kBits per row, and far fewer
// than 2^(32 - kBits) rows.
template <int kBits, int kLog2Split>
__global__ void __launch_bounds__(kRowSumWords * kRowSumSlices)
packed_rows_sum_kernel(const unsigned* rows, int64_t row_words, int groups, int bins,
                       unsigned long long* counts) {
  static_assert(kRowSumWords == kWarpSize, "a warp reads one row's words; a lane, one bank");
  using Packed = PackedCounts<kBits>;
  constexpr int kFields = Packed::kFields;
  constexpr unsigned kOwnerMask = (1u << kLog2Split) - 1;
  __shared__ unsigned slice_totals[kRowSumSlices - 1][kFields][kRowSumWords];  // lanes: banks
  const unsigned rank = blockIdx.y;
  const int local_bins = (bins - rank + kOwnerMask) >> kLog2Split;
  const int lane = threadIdx.x % kRowSumWords, slice = threadIdx.x / kRowSumWords;
  const int w = blockIdx.x * kRowSumWords + lane;
  const bool mine = w < (local_bins + kFields - 1) / kFields;
  unsigned total[kFields] = {};
  if (mine)
    for_each_batched<kRowsInFlight>(
        slice, groups, kRowSumSlices,
        [&](int64_t g) { return __ldcs(rows + ((g << kLog2Split) | rank) * row_words + w); },
        [&](unsigned word) {
#pragma unroll
          for (int f = 0; f < kFields; ++f) total[f] += (word >> (f * kBits)) & Packed::kFull;
        });
  if (slice > 0)
#pragma unroll
    for (int f = 0; f < kFields; ++f) slice_totals[slice - 1][f][lane] = total[f];
  __syncthreads();
  if (slice > 0 || !mine) return;
#pragma unroll
  for (int f = 0; f < kFields; ++f) {
    for (int s = 0; s < kRowSumSlices - 1; ++s) total[f] += slice_totals[s][f][lane];
    const int j = w * kFields + f;
    if (j < local_bins && total[f] != 0) counts[(int64_t(j) << kLog2Split) + rank] += total[f];
  }
}

// 64-bit global counters, with (kAggregate) one atomic per distinct bin of a warp.
template <typename T, typename M, bool kVector, bool kAggregate>
__global__ void __launch_bounds__(kHistThreads)
histogram_global_kernel(const T* x, int64_t n, bool streaming, int64_t bins, Range<M> range,
                        Counts counts) {
  M lo, hi;
  range.load(lo, hi);
  const HistcBins<M> bin_of(lo, hi, bins);
  for_each_element<kVector>(
      x, n, blockIdx.x * int64_t(kHistThreads) + threadIdx.x, int64_t(gridDim.x) * kHistThreads,
      streaming, [&](T v) { count_bin<kAggregate>(counts.add, bin_of(static_cast<M>(v))); });
  counts.finish(bins);
}

}  // namespace
}  // namespace smem::cuda
