// Counter layouts of the histogram kernels: where a block counts (private copies of 32-bit
// counters, or packed narrow counters, in shared memory) and where the blocks' counts meet
// (Counts: 64-bit global counters). Models: CUB's block_histogram_atomic.cuh.
#pragma once

#include <c10/util/BFloat16.h>
#include <c10/util/Half.h>

#include <cstdint>

#include "cuda/common.cuh"

namespace smem::cuda::histogram {

// The element type a fused launch writes the counts in (histc's dtype=): each count converted
// as torch's .to() converts an int64 tensor, so no conversion launch follows the kernel.
enum class CountType : unsigned char {
  kInt64,
  kInt32,
  kInt16,
  kInt8,
  kUInt8,
  kFloat64,
  kFloat32,
  kFloat16,
  kBFloat16
};

// Where a histogram kernel's blocks add their counts. Many bins: straight into zeroed int64
// counts (the output, or a scratch tensor the host converts). Few bins (kFusedBins): into a
// per-stream workspace that is zero when the kernel starts; whichever block makes a bin's
// final add (add_totals) or arrives last (finish) writes the counts to the output in its dtype
// and leaves the workspace zeroed, which saves the memset launch and the conversion.
struct Counts {
  unsigned long long* add;  // zero when the kernel starts
  void* out;                // nullptr: `add` is the output
  CountType out_type;       // with `out`
  unsigned* done;           // with `out`: a zeroed counter for last_block_to_finish

  // add_totals' adds into the workspace carry a ticket above the count: a bin's count stays
  // below 2^kTicketShift (the host fuses only inputs of fewer elements) and the tickets of a
  // launch, one per block, below 2^(64 - kTicketShift).
  static constexpr int kTicketShift = 40;
  static constexpr unsigned long long kTicket = 1ull << kTicketShift;

  // A fused launch of one block: its totals are the counts, stored straight to `out` (no
  // global atomics, no re-read from L2). `add` stays zero.
  __device__ bool sole_block() const { return out != nullptr && gridDim.x == 1; }

  // Hands this block's total of every bin, total_of(b) (an unsigned long long), to the counts;
  // called by every thread of the block, once, after the block's counting. A fused launch of
  // several blocks with a bin per thread takes tickets: the atomic that takes a bin's last
  // ticket returns every other block's total of that bin, so its thread stores the final count
  // and zeroes the word. That skips finish's last-block handshake (a fence, a completion
  // counter and a re-read: three L2 round trips at the end of the kernel). One atomic in
  // flight per thread keeps the epilogue's registers below the counting loop's, so occupancy
  // is unchanged; more bins than threads would wait on each return in turn: those take finish.
  template <typename TotalOf>
  __device__ void add_totals(int bins, TotalOf&& total_of) const {
    if (sole_block()) {
      for (int b = threadIdx.x; b < bins; b += blockDim.x) store(b, total_of(b));
      return;
    }
    if (out == nullptr || bins > static_cast<int>(blockDim.x)) {
      for (int b = threadIdx.x; b < bins; b += blockDim.x)
        if (const unsigned long long total = total_of(b)) atomicAdd(&add[b], total);
      finish(bins);
      return;
    }
    const int b = threadIdx.x;
    if (b >= bins) return;
    const unsigned long long total = total_of(b);
    const unsigned long long before = atomicAdd(&add[b], kTicket + total);
    if ((before >> kTicketShift) != gridDim.x - 1) return;
    store(b, static_cast<int64_t>((before & (kTicket - 1)) + total));
    add[b] = 0;
  }

  // For kernels that add to a bin any number of times (packed, global, cluster): called by
  // every thread of every block once the block's adds are issued; in a fused launch the last
  // block to finish moves the counts to the output.
  __device__ void finish(int64_t bins) const {
    if (out == nullptr || !last_block_to_finish(done, gridDim.x)) return;
    struct Moved {
      int64_t bin;
      unsigned long long count;
    };
    for_each_batched<4>(  // independent L2 reads in flight per thread
        threadIdx.x, bins, blockDim.x, [&](int64_t b) { return Moved{b, load_from_l2(&add[b])}; },
        [&](const Moved& m) {
          store(m.bin, static_cast<int64_t>(m.count));
          add[m.bin] = 0;
        });
  }
  // int64 -> the output type as at::Tensor::to does it (c10::convert: fp16/bf16 by way of float).
  __device__ void store(int64_t b, int64_t c) const {
    switch (out_type) {
      case CountType::kInt64: static_cast<int64_t*>(out)[b] = c; break;
      case CountType::kInt32: static_cast<int32_t*>(out)[b] = static_cast<int32_t>(c); break;
      case CountType::kInt16: static_cast<int16_t*>(out)[b] = static_cast<int16_t>(c); break;
      case CountType::kInt8: static_cast<int8_t*>(out)[b] = static_cast<int8_t>(c); break;
      case CountType::kUInt8: static_cast<uint8_t*>(out)[b] = static_cast<uint8_t>(c); break;
      case CountType::kFloat64: static_cast<double*>(out)[b] = static_cast<double>(c); break;
      case CountType::kFloat32: static_cast<float*>(out)[b] = static_cast<float>(c); break;
      case CountType::kFloat16:
        static_cast<c10::Half*>(out)[b] = c10::Half(static_cast<float>(c));
        break;
      case CountType::kBFloat16:
        static_cast<c10::BFloat16*>(out)[b] = c10::BFloat16(static_cast<float>(c));
        break;
    }
  }
};

// Adds 1 to counter[bin] for every lane whose bin >= 0. With kAggregate, the lanes holding
// the same bin elect one of them to add their number at once.
template <bool kAggregate, typename C>
__device__ inline void count_bin(C* counter, int64_t bin) {
  if constexpr (kAggregate) {
    const unsigned peers = __match_any_sync(__activemask(), static_cast<long long>(bin));
    if (bin >= 0 && (threadIdx.x % kWarpSize) == static_cast<unsigned>(__ffs(peers) - 1))
      atomicAdd(&counter[bin], static_cast<C>(__popc(peers)));
  } else if (bin >= 0) {
    atomicAdd(&counter[bin], static_cast<C>(1));
  }
}

// Private copies of a block's 32-bit counters in shared memory, laid out so that a warp's
// adds meet as few bank conflicts as the memory allows:
//   per lane: 32 interleaved copies, lane l's counter of bin b at word 32 b + l. Each lane
//     owns a bank, so a warp's 32 adds never conflict, whatever the bins (in one copy,
//     different bins of a warp meet in banks and equal bins serialize).
//   per warp: `subs` copies of `bins` counters, warp w adding into copy w % subs.
struct WarpCopies {
  unsigned* base;
  int subs;  // per warp: copies; per lane: kWarpSize
  int bins;
  bool per_lane;

  // The counters one thread adds into.
  struct Slot {
    unsigned* first;  // bin 0
    int stride;       // words between bins
    __device__ void add(int bin) const { atomicAdd(first + bin * stride, 1u); }
  };

  __device__ void zero() const {
    for (int w = threadIdx.x; w < subs * bins; w += blockDim.x) base[w] = 0;
  }
  __device__ Slot mine() const {
    const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
    return per_lane ? Slot{base + lane, kWarpSize} : Slot{base + warp % subs * bins, 1};
  }
  // After a __syncthreads: hands the copies' sum of each bin to counts.add_totals.
  __device__ void flush(const Counts& counts) const {
    if (per_lane) {  // a warp per bin: its 32 counters are one row, one word per bank
      const int lane = threadIdx.x % kWarpSize;
      for (int b = threadIdx.x / kWarpSize; b < bins; b += blockDim.x / kWarpSize) {
#if !defined(__CUDA_ARCH__) || __CUDA_ARCH__ >= 800
        const unsigned total = __reduce_add_sync(0xffffffffu, base[b * kWarpSize + lane]);
#else  // sm_75 has no warp reduce instruction: a shuffle tree, its sum valid in lane 0
        const unsigned total = warp_sum(base[b * kWarpSize + lane]);
#endif
        if (lane == 0) base[b * kWarpSize] = total;  // the row's first word: read by this warp only
      }
      __syncthreads();
      counts.add_totals(
          bins, [&](int b) { return static_cast<unsigned long long>(base[b * kWarpSize]); });
      return;
    }
    counts.add_totals(bins, [&](int b) {
      unsigned long long total = 0;
      for (int k = 0; k < subs; ++k) total += base[k * bins + b];
      return total;
    });
  }
};

// Bins that one block cannot hold as 32-bit counters: kBits-bit counters packed into words
// of shared memory (kFields per word, any spare bits on top), local bin j in field
// j % kFields of word j / kFields, counting global bin j * 2^log2_stride + offset.
// Exact at any count: a field wraps every 2^kBits adds to its bin, and the old word that
// atomicAdd returns shows each wrap to exactly one thread (every change to a word is an add,
// so its carries follow from the old value), which settles it in the 64-bit global counts:
// +2^kBits for the bin of each field that wrapped, -1 for the bin of each field a carry
// reached (a 1 it never counted). A carry out of the top field goes to the spare bits or
// leaves the word, unread. The flush then adds each field's remainder.
template <int kBits>
struct PackedCounts {
  static constexpr unsigned kFields = 32 / kBits;
  static constexpr unsigned kFull = (1u << kBits) - 1;
  unsigned* words;  // ceil(bins / kFields)
  int bins;         // local bins
  int log2_stride, offset;
  unsigned words_at;  // `words` as a shared-memory address

  // A thread's simple wraps (the next field not full) of one local bin, not yet settled:
  // a hot bin wraps every 2^kBits adds in every block, and settling each wrap at once would
  // queue the blocks' atomics on its one global counter.
  struct WrapTally {
    int j = -1;
    unsigned wraps = 0;
  };

  __device__ PackedCounts(unsigned* words_, int bins_, int log2_stride_, int offset_)
      : words(words_), bins(bins_), log2_stride(log2_stride_), offset(offset_) {
    // through asm, so that the compiler keeps the address instead of rebuilding it
    asm("mov.b32 %0, %1;"
        : "=r"(words_at)
        : "r"(static_cast<unsigned>(__cvta_generic_to_shared(words_))));
  }

  __device__ int64_t global(int j) const { return (int64_t(j) << log2_stride) + offset; }
  __device__ void zero() const {
    for (int w = threadIdx.x; w < (bins + kFields - 1) / kFields; w += blockDim.x) words[w] = 0;
  }
  // Adds 1 to local bin j where `add` and returns the old word, for settle(). Through the
  // shared window's address held in a register: with a generic pointer the compiler rebuilds
  // the window base for every add (four uniform-datapath instructions). The adds sit between
  // __syncthreads, which order them with zero() and flush().
  __device__ unsigned bump_if(bool add, unsigned j) const {
    unsigned old;
    asm volatile(
        "{\n .reg .pred p;\n setp.ne.u32 p, %3, 0;\n @p atom.shared.add.u32 %0, [%1], %2;\n}"
        : "=r"(old)
        : "r"(words_at + j / kFields * 4), "r"(1u << (j % kFields * kBits)), "r"(unsigned(add)));
    return old;
  }
  // Whether a carry out of local bin j's field lands in another bin's field.
  __device__ bool carries_to_next(int j) const { return (j + 1) % kFields != 0 && j + 1 < bins; }
  // Settles the wrap, if any, of the bump_if(true, j) that returned `old`.
  __device__ void settle(unsigned j, unsigned old, WrapTally& tally,
                         unsigned long long* counts) const {
    const unsigned shift = j % kFields * kBits;
    if ((~old & (kFull << shift)) != 0) return;  // no wrap: the common case
    const unsigned rest = old >> shift;  // field j (full) in the low bits, then the next ones
    if (carries_to_next(j) && ((rest >> kBits) & kFull) == kFull) {
      settle_chain(j, rest, counts);
      return;
    }
    if (tally.j != static_cast<int>(j)) {
      settle_tally(tally, counts);
      tally.j = j;
    }
    ++tally.wraps;
  }
  __device__ void settle_tally(WrapTally& tally, unsigned long long* counts) const {
    if (tally.wraps == 0) return;
    atomicAdd(&counts[global(tally.j)], static_cast<unsigned long long>(tally.wraps) << kBits);
    if (carries_to_next(tally.j)) atomicAdd(&counts[global(tally.j + 1)], 0ull - tally.wraps);
    tally.wraps = 0;
  }
  // A wrap whose carry wrapped the next field too (rare): settled at once, along the chain.
  __device__ void settle_chain(int j, unsigned rest, unsigned long long* counts) const {
    for (int k = j;; ++k, rest >>= kBits) {
      // field k was full and took a 1: it wrapped (and, past j, the 1 was a carry)
      atomicAdd(&counts[global(k)], (1ull << kBits) - (k != j));
      if (!carries_to_next(k)) return;           // the carry left the bins of the word
      if (((rest >> kBits) & kFull) != kFull) {  // field k + 1 keeps it
        atomicAdd(&counts[global(k + 1)], ~0ull);
        return;
      }
    }
  }
  // After a __syncthreads: stores the words as they are into `row` (the block's row of
  // packed_rows_sum_kernel's input): coalesced plain stores, no atomics.
  __device__ void store_row(unsigned* row) const {
    for (int w = threadIdx.x; w < (bins + kFields - 1) / kFields; w += blockDim.x)
      row[w] = words[w];
  }
  // After a __syncthreads: adds every counter to the global counts.
  __device__ void flush(unsigned long long* counts) const {
    for (int w = threadIdx.x; w < (bins + kFields - 1) / kFields; w += blockDim.x) {
      const unsigned word = words[w];
#pragma unroll
      for (int f = 0; f < kFields; ++f) {
        const unsigned count = (word >> (f * kBits)) & kFull;
        const int j = w * kFields + f;
        if (count && j < bins)
          atomicAdd(&counts[global(j)], static_cast<unsigned long long>(count));
      }
    }
  }
};

}  // namespace smem::cuda::histogram
