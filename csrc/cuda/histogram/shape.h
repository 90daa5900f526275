// The decision of smem.histc: which counter layout a launch uses, how many copies, how much
// shared memory, from the bin count, the input size and the device. Host-only and free of CUDA
// headers (DeviceInfo is a plain struct), so that it builds, and can be tested, without CUDA.
// Model: CUB's device/dispatch/tuning/tuning_histogram.cuh.
#pragma once

#include <c10/util/Exception.h>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "cuda/device_info.h"
#include "cuda/tuning/common.h"
#include "cuda/tuning/histogram.h"

namespace smem::cuda::histogram {

// The variants of histc, naive to best (ladder/histc_variants.cpp says what each shows).
enum class Variant { kGlobalAtomics, kShared, kSharedPerWarp, kCluster, kFinal };

// Which variant runs; for tuning and tests, a forced cluster size, or (final) a forced shape.
enum class Force { kNone, kLut16, kPacked16, kPacked6, kSplit };
struct Request {
  Variant variant = Variant::kFinal;
  int log2_cluster = 0;  // 0: choose_shape decides
  Force force = Force::kNone;
  int log2_split = 0;  // Force::kSplit: blocks per group, as a power of two
};

// Where a launch's counters live (counters.cuh) and how much shared memory they take.
struct HistogramShape {
  enum class Where { kGlobal, kShared, kLut16, kPacked, kCluster } where = Where::kGlobal;
  int subs = 1;               // kShared, kLut16: private copies per block
  bool per_lane = false;      // kLut16: WarpCopies' per-lane layout
  int most_per_sm = INT_MAX;  // kShared: resident blocks per SM at most
  int loads_in_flight = 2;    // kShared: vector loads in flight per thread
  int counter_bits = 32;      // kPacked: 16 or kNarrowBits
  int log2_split = 0;         // kPacked: blocks per group, as a power of two
  int log2_cluster = 0;       // kCluster: blocks per cluster, as a power of two
  int64_t smem_bytes = 0;
};

// The one place that decides, for the final variant, in this order of preference:
//   lut16    large 2-byte inputs: the pattern table, and per-lane copies beside it where 32
//            fit (a warp's adds then never conflict), else per-warp ones;
//   shared   32-bit counters, per-warp copies while they fit in 1 / kPerWarpCopiesBlocksPerSm
//            of an SM's shared memory, then one copy up to the opt-in limit;
//   packed   one copy of 16-bit counters, then of kNarrowBits-bit ones;
//   split    narrow counters spread over the smallest group of 2, 4 or 8 blocks that holds
//            them, every block of a group reading all the input (from L2 but once);
//   global   beyond that: global counters.
// The other variants take their own layout. The cluster variant spreads 32-bit counters over
// a cluster's shared memory too, but every block adds to the others' counters through DSMEM,
// far slower than shared atomics: final does not take it. For the cluster variant the caller
// has checked cluster_supported(). Throws for a forced shape that cannot hold the bins.
inline HistogramShape choose_shape(int64_t bins, int64_t n, int element_bytes,
                                   const Request& request, const DeviceInfo& dev) {
  auto ceil_div = [](int64_t a, int64_t b) { return (a + b - 1) / b; };
  const Variant variant = request.variant;
  const bool final = variant == Variant::kFinal;
  constexpr int64_t kCounter = sizeof(unsigned);
  const int64_t copy_bytes = bins * kCounter;
  const int64_t optin = dev.max_smem_per_block_optin - kStaticSmemReserve;
  const int64_t limit = final ? optin : dev.max_smem_per_block;
  HistogramShape s;
  if (variant == Variant::kGlobalAtomics) return s;
  // WarpCopies in `budget` bytes of shared memory with at most `most` copies (one per warp).
  auto warp_copies = [&](int64_t budget, int most, bool per_lane) {
    s.per_lane = per_lane && kWarpSize * copy_bytes <= budget;
    s.subs = s.per_lane ? kWarpSize
                        : static_cast<int>(std::clamp<int64_t>(budget / copy_bytes, 1, most));
    return s.subs * copy_bytes;
  };
  // `bits`-bit counters spread over 2^log2_split blocks: block 0 holds the most
  auto packed_bytes = [&](int bits, int log2_split) {
    return ceil_div(ceil_div(bins, int64_t(1) << log2_split), 32 / bits) * kCounter;
  };
  auto packed = [&](int bits, int log2_split) {
    s.where = HistogramShape::Where::kPacked;
    s.counter_bits = bits;
    s.log2_split = log2_split;
    s.smem_bytes = packed_bytes(bits, log2_split);
    return s;
  };
  const int64_t table_bytes = kPatterns16 * 2;
  const bool table_fits =
      element_bytes == 2 && bins < kPatterns16 && table_bytes + copy_bytes <= optin;
  TORCH_CHECK_VALUE(
      request.force != Force::kLut16 || table_fits,
      "smem._histc_variant: final:lut16 needs 2-byte input and bins that fit beside the table");
  TORCH_CHECK_VALUE(request.force != Force::kPacked16 || packed_bytes(16, 0) <= optin,
                    "smem._histc_variant: final:packed16 needs bins that fit as 16-bit counters");
  TORCH_CHECK_VALUE(request.force != Force::kPacked6 || packed_bytes(kNarrowBits, 0) <= optin,
                    "smem._histc_variant: final:packed6 needs bins that fit as 6-bit counters");
  const int64_t forced_split = int64_t(1) << request.log2_split;
  TORCH_CHECK_VALUE(
      request.force != Force::kSplit ||
          (bins >= forced_split && packed_bytes(kNarrowBits, request.log2_split) <= optin),
      "smem._histc_variant: final:split:", forced_split, " needs at least ", forced_split,
      " bins, and their 6-bit counters must fit the group");
  if (request.force == Force::kPacked16) return packed(16, 0);
  if (request.force == Force::kPacked6) return packed(kNarrowBits, 0);
  if (request.force == Force::kSplit) return packed(kNarrowBits, request.log2_split);
  if (final && table_fits &&
      (n >= kLut16MinElementsPerSm * dev.sm_count || request.force == Force::kLut16)) {
    s.where = HistogramShape::Where::kLut16;
    s.smem_bytes = table_bytes + warp_copies(optin - table_bytes, kPackedThreads / kWarpSize, true);
    return s;
  }
  if (variant != Variant::kCluster && copy_bytes <= limit) {
    s.where = HistogramShape::Where::kShared;
    s.smem_bytes = copy_bytes;
    if (variant == Variant::kSharedPerWarp || final)
      s.smem_bytes =
          warp_copies(dev.max_smem_per_sm / kPerWarpCopiesBlocksPerSm - dev.reserved_smem_per_block,
                      kHistThreads / kWarpSize, false);
    if (final) {
      const int64_t bytes = n * element_bytes, l2 = dev.l2_bytes;
      s.most_per_sm = bytes <= l2 / kOneBlockL2Fraction ? kSharedBlocksPerSmSmall
                      : bytes <= kMidBlocksL2Sizes * l2 ? kSharedBlocksPerSmMid
                                                        : kSharedBlocksPerSmLarge;
      if (s.most_per_sm == kSharedBlocksPerSmSmall) {
        // A block counts few elements per bin: fewer copies to zero and sum.
        s.subs = std::min(s.subs, kSmallInputCopies);
        s.smem_bytes = s.subs * copy_bytes;
        // Registers to spare: more loads in flight, where a thread has more than one batch.
        if (bytes > dev.sm_count * int64_t(kHistThreads) * kSmallLoadsInFlight * kVectorBytes)
          s.loads_in_flight = kSmallLoadsInFlight;
      }
    }
    return s;
  }
  if (final) {
    if (packed_bytes(16, 0) <= optin) return packed(16, 0);
    for (int l = 0; l <= kMaxSplitLog2; ++l)
      if (packed_bytes(kNarrowBits, l) <= optin) return packed(kNarrowBits, l);
    return s;
  }
  if (variant != Variant::kCluster) return s;
  int l = request.log2_cluster;
  auto slice_bytes = [&](int l) { return ceil_div(bins, int64_t(1) << l) * kCounter; };
  if (l == 0) {
    l = 1;
    while (l < kMaxClusterLog2 && slice_bytes(l) > optin) ++l;
  }
  TORCH_CHECK(slice_bytes(l) <= optin, "smem._histc_variant: ", bins,
              " bins do not fit a cluster of ", 1 << l, " blocks");
  s.where = HistogramShape::Where::kCluster;
  s.log2_cluster = l;
  s.smem_bytes = slice_bytes(l);
  return s;
}

// Whether the `blocks` blocks of a packed launch (groups of 2^log2_split) store their counters
// as rows for packed_rows_sum_kernel rather than flush them with atomics
// (kRowsMaxCountersPerElement says when). The launcher asks, for counts that are not fused:
// the block count is the launch's, its resident blocks.
inline bool packed_rows_pay(int64_t n, int64_t blocks, int64_t bins, int log2_split) {
  return n * kRowsMaxCountersPerElement >= blocks * (bins >> log2_split);
}

}  // namespace smem::cuda::histogram
