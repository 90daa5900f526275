// Histogram tuning: every knob of the histc kernels and of their decision (histogram/shape.h),
// with what it means. What each value was measured at: docs/PERFORMANCE.md.
#pragma once

#include <cstdint>

namespace smem::cuda::histogram {

// ---------------------------------------------------------------- knobs

// Threads of the shared, cluster and global-counter kernels.
constexpr int kHistThreads = 512;
// Threads of the packed and lut16 kernels: they hold over half an SM's shared memory, so one
// block per SM, and a full-size block keeps twice the loads in flight.
constexpr int kPackedThreads = 1024;
// Threads of the auto-range kernel, the elements each thread takes at least, and its vector
// loads in flight per thread. 1024-thread blocks read 16 KB per block and step where 256 read 4:
// the range pass of 2^28 fp32 took 365 against 402 us at the same threads per SM. 1-byte
// elements (16 per vector, widened to double) keep 2 loads: 4 spill at the 64 registers that
// 1024 threads allow.
constexpr int kRangeThreads = 1024;
constexpr int kRangeElementsPerThread = 8;
template <typename T>
constexpr int kRangeLoadsInFlight = sizeof(T) == 1 ? 2 : 4;
// Resident global-counter blocks per SM at most.
constexpr int kGlobalBlocksPerSm = 4;
// Resident shared-kernel blocks per SM at most, for inputs of at most 1 / kOneBlockL2Fraction
// of the L2 / at most kMidBlocksL2Sizes L2 sizes / more: every block zeroes, sums and flushes
// its copies of every bin and ends with an atomic per bin into the same global counters, a
// fixed cost that the few elements per block of a small input don't repay.
constexpr int kSharedBlocksPerSmSmall = 1, kSharedBlocksPerSmMid = 2, kSharedBlocksPerSmLarge = 3;
constexpr int kOneBlockL2Fraction = 2;
constexpr int kMidBlocksL2Sizes = 4;
// Vector loads (kVectorBytes each) in flight per thread of the shared kernel when one block
// per SM runs (small inputs) and a thread has more than one batch to take: 16 MB inputs gain
// 4-8% over 2; where one batch of 4 holds a thread's whole share, 2 are as fast, and at 4K-64K
// elements 4 cost 0.3 us.
constexpr int kSmallLoadsInFlight = 4;
constexpr int64_t kVectorBytes = 16;
// Per-warp copies in the shared kernel stay within 1 / this of an SM's shared memory, so that
// this many 512-thread blocks (a full SM) could be resident.
constexpr int kPerWarpCopiesBlocksPerSm = 4;
// At most this many copies per block for small inputs (one block per SM): a block counts a
// few elements per bin there, so zeroing and summing copies costs more than the conflicts
// they spare. One copy for all 16 warps measured fastest at every size of the regime, even
// with every value in one bin (up to 24 MB): the conflicts hide behind the loads.
constexpr int kSmallInputCopies = 1;
// Up to this many bins, the counts go through a per-stream workspace that is left zeroed and
// moved to the output by the kernel (no memset launch); 2048 is one batch of the last block's
// move for 512 threads.
constexpr int64_t kFusedBins = 2048;
// The lut16 kernel serves 2-byte inputs of at least this many elements per SM, where every
// block's table (65536 binnings) is a small cost.
constexpr int64_t kLut16MinElementsPerSm = 8 * 65536;
// Width of the narrow packed counters: five to a 32-bit word, so one block holds 2.5 times
// the bins of 16-bit ones, but they wrap 1024 times as often (16 bits while they fit).
constexpr int kNarrowBits = 6;
// Packed kernels store their blocks' counters as rows, which packed_rows_sum_kernel adds up,
// instead of adding each non-zero counter to the global counts with an atomic (2^28 randn in
// 262144 bins: 740 us so, 429 us with the rows), where the blocks hold at most
// kRowsMaxCountersPerElement counters per element: with more, most counters stay zero, which
// the atomic flush skips. The row sum's blocks take kRowSumWords words of every row, in
// kRowSumSlices slices of rows, kRowsInFlight rows in flight per thread.
constexpr int64_t kRowsMaxCountersPerElement = 16;
constexpr int kRowSumWords = 32;
constexpr int kRowSumSlices = 8;
constexpr int kRowsInFlight = 8;
// Split groups have at most 2^kMaxSplitLog2 blocks: every block of a group reads every element.
constexpr int kMaxSplitLog2 = 3;
// Weighted torch.histogram sums with int bins (histogram/edges_lane_sums.cuh): a copy of the
// bins per warp (float32 sums; float64 for float64 inputs) with kLaneSumsColumns columns (lanes
// l and l + 8k share a column and add in turn), kLaneSumsInFlight vectors of input and weights
// per lane and batch, up to kLaneSumsMaxWarps warps per block (kLaneSumsMaxWarpsFp64 for float64
// copies): 24 float32 copies of 256 bins fill 193 KiB, one block per SM, and 24 warps measured
// faster than 16 or 20 (latency-bound). The kernel serves inputs of at least
// kLaneSumsMinElements and at most kLaneSumsMaxBins bins; smaller inputs, more bins and tensor
// edges (a longer search, which needs more warps to hide) go to the warp-copy kernel.
constexpr int kLaneSumsColumns = 8;
constexpr int kLaneSumsInFlight = 2;
constexpr int kLaneSumsMaxWarps = 24;
constexpr int kLaneSumsMaxWarpsFp64 = 16;
constexpr int64_t kLaneSumsMinElements = int64_t(1) << 23;
constexpr int64_t kLaneSumsMaxBins = 256;

// ---------------------------------------------------------------- limits the code is built for

// Bit patterns of a 2-byte input: the lut16 kernel's table has one entry per pattern.
constexpr int64_t kPatterns16 = 65536;
// Clusters of up to 2^kMaxClusterLog2 = 16 blocks: sm_90's limit with non-portable cluster
// sizes allowed (8 is the portable limit); where a device allows fewer, the runtime refuses
// the larger clusters (launch_clusters checks every call).
constexpr int kMaxClusterLog2 = 4;

}  // namespace smem::cuda::histogram
