// CUDA histc with exact integer counts.
//
// The ladder (variants, for the benchmark), every rung exact and deterministic (integer
// atomics commute, so block scheduling cannot change a count):
//   global_atomics   every element adds 1 to a global 64-bit counter: all traffic goes to L2
//                    atomics, and popular bins serialize.
//   shared           one private histogram of 32-bit counters per block in shared memory,
//                    added to the global counts once at the end (seed: privatization).
//   shared_per_warp  a private histogram per warp where the bins fit (so warps don't fight
//                    over a counter), 16-byte loads with two in flight per thread.
//   cluster          the bins spread over the shared memory of a thread-block cluster
//                    (sm_90): each block holds every C-th bin and the others add to it
//                    through distributed shared memory (seed 004).
//   final            shared_per_warp, with shared memory above 48 KiB opted into (up to the
//                    device limit), and for large 2-byte inputs a table of every pattern's
//                    bin with per-lane copies (conflict-free adds); then one copy of packed
//                    16-bit, then 6-bit counters per block; then 6-bit counters split over a
//                    group of blocks that all read the input (split); beyond that,
//                    global counters, with warp aggregation: lanes that hit the same bin
//                    (__match_any_sync) add once, together, so a popular bin costs one L2
//                    atomic per warp instead of 32.
//                    (Measured on the H100: aggregation in shared memory costs more than the
//                    contention it saves, 9.7% vs 82% of the copy ceiling on randn with 256
//                    bins; on global counters with one hot bin it is 30x faster.)
// Auto-range (min == max) runs range_kernel first: the finite min and max are reduced on the
// device and read by the histogram kernel from device memory, so there is no host sync and
// the whole op can be captured in a CUDA graph.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <torch/library.h>

#include <cooperative_groups.h>

#include <climits>
#include <type_traits>

#include "cuda/common.cuh"
#include "histogram.h"
#include "smem.h"

namespace smem::cuda {
namespace {

constexpr int kHistThreads = 512;
// Shared-kernel blocks per SM (four fit): every block ends with an atomic per bin into the
// same global counters, so fewer blocks queue fewer same-address atomics at the end, which
// weighs more on inputs of a few L2 sizes. Measured on the H100 (probe, 256 bins, fp32
// randn), 1 / 2 / 3 / 4 blocks per SM: 16M elements 36.1-36.9 / 32.8-33.5 / 33.6-34.5 /
// 33.7-34.4 us; 2^28 elements (2 / 3 / 4) 96.3 / 98.6 / 96.9% of the copy ceiling.
constexpr int kSharedBlocksPerSmSmall = 2, kSharedBlocksPerSmLarge = 3;
// packed and lut16 hold over half an SM's shared memory, so one block per SM: a full-size
// block keeps twice the loads in flight.
constexpr int kPackedThreads = 1024;
constexpr int kRangeThreads = 256;
// Room left beside the dynamic shared memory for the kernels' static shared memory (the
// last-block flag, warp totals).
constexpr int64_t kStaticSmemReserve = 1024;

// The range the histogram kernels bin into: given by value, or (auto-range) read from `device`.
template <typename M>
struct Range {
  M lo, hi;
  const M* device;  // nullptr, or {lo, hi} written by range_kernel
  __device__ void load(M& l, M& h) const {
    if (device) {
      l = device[0];
      h = device[1];
    } else {
      l = lo;
      h = hi;
    }
  }
};

// Where a histogram kernel's blocks add their counts. Many bins: straight into the output,
// zeroed by a memset first. Few bins (kFusedBins): into a per-stream workspace that is zero
// when the kernel starts; the last block to finish moves the counts to the output and leaves
// the workspace zeroed, which saves the memset launch (measurable on small inputs).
struct Counts {
  unsigned long long* add;  // zero when the kernel starts
  int64_t* out;             // nullptr: `add` is the output
  unsigned* done;           // with `out`: a zeroed counter for last_block_to_finish

  // Called by every thread of every block once the block's adds are issued.
  __device__ void finish(int64_t bins) const {
    if (out == nullptr || !last_block_to_finish(done, gridDim.x)) return;
    struct Moved {
      int64_t bin;
      unsigned long long count;
    };
    for_each_batched<4>(  // independent L2 reads in flight per thread
        threadIdx.x, bins, blockDim.x, [&](int64_t b) { return Moved{b, load_from_l2(&add[b])}; },
        [&](const Moved& m) {
          out[m.bin] = static_cast<int64_t>(m.count);
          add[m.bin] = 0;
        });
  }
};
constexpr int64_t kFusedBins = 2048;  // one batch of the move for a 512-thread block

// Calls f(x[i]) for the i in [0, n) that belong to thread t of nthreads. With kVector, the
// aligned body moves in 16-byte vectors, and where f takes a whole vector it gets them
// whole: two loads in flight per thread, then their work; or (kPipelined, for callers with
// much work per element) the next vector's load in flight while f works on this one, so a
// thread is never without a load in flight.
template <bool kVector, bool kPipelined = false, typename T, typename F>
__device__ inline void for_each_element(const T* x, int64_t n, int64_t t, int64_t nthreads,
                                        bool streaming, F&& f) {
  if constexpr (!kVector) {
    for (int64_t i = t; i < n; i += nthreads) f(x[i]);
  } else {
    constexpr int V = vec_width<T>();
    using VecT = Vec<T, V>;
    auto each = [&](const VecT& a) {
      if constexpr (std::is_invocable_v<F&, const VecT&>) {
        f(a);
      } else {
#pragma unroll
        for (int k = 0; k < V; ++k) f(a.v[k]);
      }
    };
    const int64_t head = unaligned_head(x, n);
    for (int64_t i = t; i < head; i += nthreads) f(x[i]);
    const int64_t nvec = (n - head) / V;
    const VecT* xv = reinterpret_cast<const VecT*>(x + head);
    int64_t i = t;
    if constexpr (kPipelined) {
      if (i < nvec) {
        VecT a = load_once(&xv[i], streaming);
        for (; i + nthreads < nvec; i += nthreads) {
          const VecT next = load_once(&xv[i + nthreads], streaming);
          each(a);
          a = next;
        }
        each(a);
      }
    } else {
      for (; i + nthreads < nvec; i += 2 * nthreads) {
        const VecT a = load_once(&xv[i], streaming), b = load_once(&xv[i + nthreads], streaming);
        each(a);
        each(b);
      }
      for (; i < nvec; i += nthreads) each(load_once(&xv[i], streaming));
    }
    for (int64_t j = head + nvec * V + t; j < n; j += nthreads) f(x[j]);
  }
}

template <typename M>
__device__ inline bool finite(M v) { return isfinite(v); }

// Finite min/max of x into out[0], out[1] (widened when equal, as torch does). Each block
// reduces its share, the last block combines the per-block results in block order.
template <typename T, typename M>
__global__ void __launch_bounds__(kRangeThreads)
range_kernel(const T* x, int64_t n, bool streaming, M* block_range, unsigned* done, M* out) {
  __shared__ M lo_s[kRangeThreads], hi_s[kRangeThreads];
  M lo = INFINITY, hi = -INFINITY;
  for_each_element<true>(x, n, blockIdx.x * int64_t(kRangeThreads) + threadIdx.x,
                         int64_t(gridDim.x) * kRangeThreads, streaming, [&](T t) {
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

// histc_bin (histogram.h) for the shared-memory kernels, whose bins are far below 2^22: the
// same expression, truncated in 32 bits (for v in range the quotient is at most
// bins * (1 + 2^-22), so the value is histc_bin's; out of range, NaN and overflow give any
// value, which is then discarded or clamped as there). Branch-free and 32-bit, with the range
// loaded and bins converted once per thread: the per-element path of compute-bound kernels
// has no 64-bit compares and no divergence.
template <typename M>
struct BinMap {
  M lo, hi, width, scale;
  int bins;
  static_assert(std::is_same_v<M, double>, "float has its own BinMap below");
  __device__ BinMap(const Range<M>& range, int bins_) : bins(bins_) {
    range.load(lo, hi);
    width = hi - lo;
    scale = static_cast<M>(bins_);
  }
  __device__ int operator()(M v, int outside = -1) const {
    const int b = min(__double2int_rz((v - lo) * scale / width), bins - 1);
    return v >= lo && v <= hi ? b : outside;
  }
};

// float: the division and the truncation are the costly steps, so both are rebuilt from
// full-rate FMA-pipe instructions, with identical results.
//   Division: div.rn.f32 compiles to MUFU.RCP, a Newton step, a quotient, a residual and a
//   correction, guarded by FCHK (a slow path near over- and underflow). The width is fixed
//   per thread, so the reciprocal and its Newton step are computed once, leaving a multiply
//   and two FMAs per element: the same instructions, so the same correctly rounded quotient,
//   wherever FCHK would pass. That holds for every quotient that can land in a bin when the
//   width and bins * width are far from the float limits (`fast`): q >= 1/2 needs t >= w/2,
//   and then nothing in the steps comes near over- or underflow; smaller quotients are off by
//   at most a few ulps, so they still truncate to 0. Other widths divide with '/'.
//   Truncation: for 0 <= q < 2^23, adding 2^23 rounding toward zero leaves trunc(q) in the
//   low mantissa bits (one FADD instead of a quarter-rate F2I). Bins stay below 2^22.
template <>
struct BinMap<float> {
  float lo, hi, width, scale, reciprocal;
  int bins;
  bool fast;
  __device__ BinMap(const Range<float>& range, int bins_) : bins(bins_) {
    range.load(lo, hi);
    width = hi - lo;
    scale = static_cast<float>(bins_);
    fast = width >= 0x1p-100f && width * scale <= 0x1p100f;
    float approx;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(approx) : "f"(width));
    reciprocal = __fmaf_rn(approx, __fmaf_rn(-width, approx, 1.0f), approx);
  }
  __device__ int operator()(float v, int outside = -1) const {
    const float t = __fmul_rn(__fsub_rn(v, lo), scale);  // torch's numerator, rounded as there
    const float q0 = __fmul_rn(t, reciprocal);
    const float q = fast ? __fmaf_rn(reciprocal, __fmaf_rn(-width, q0, t), q0) : __fdiv_rn(t, width);
    constexpr int kTwo23Bits = 0x4B000000;  // 2^23 as a float's bits
    const int b = min(__float_as_int(__fadd_rz(q, 0x1p23f)) - kTwo23Bits, bins - 1);
    return v >= lo && v <= hi ? b : outside;
  }
};
constexpr int64_t kMaxBinMapBins = int64_t(1) << 22;

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
  // After a __syncthreads: adds the copies' sum of each bin to the global counts.
  __device__ void flush(unsigned long long* counts) const {
    if (per_lane) {  // a warp per bin: its 32 counters are one row, one word per bank
      const int lane = threadIdx.x % kWarpSize;
      for (int b = threadIdx.x / kWarpSize; b < bins; b += blockDim.x / kWarpSize) {
        const unsigned total = __reduce_add_sync(0xffffffffu, base[b * kWarpSize + lane]);
        if (lane == 0 && total) atomicAdd(&counts[b], static_cast<unsigned long long>(total));
      }
      return;
    }
    for (int b = threadIdx.x; b < bins; b += blockDim.x) {
      unsigned long long total = 0;
      for (int k = 0; k < subs; ++k) total += base[k * bins + b];
      if (total) atomicAdd(&counts[b], total);
    }
  }
};

// Private histograms per block (WarpCopies) in dynamic shared memory. The host keeps each
// block's element count below 2^32.
template <typename T, typename M, bool kVector>
__global__ void __launch_bounds__(kHistThreads)
histogram_shared_kernel(const T* x, int64_t n, bool streaming, int bins, int subs, Range<M> range,
                        Counts counts) {
  extern __shared__ unsigned smem[];
  const WarpCopies copies{smem, subs, bins, /*per_lane=*/false};
  copies.zero();
  const BinMap<M> bin_of(range, bins);
  __syncthreads();
  const WarpCopies::Slot mine = copies.mine();
  for_each_element<kVector>(x, n, blockIdx.x * int64_t(kHistThreads) + threadIdx.x,
                            int64_t(gridDim.x) * kHistThreads, streaming, [&](T v) {
                              const int bin = bin_of(static_cast<M>(v));
                              if (bin >= 0) mine.add(bin);
                            });
  __syncthreads();
  copies.flush(counts.add);
  counts.finish(bins);
}

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
    asm("mov.b32 %0, %1;" : "=r"(words_at) : "r"(static_cast<unsigned>(__cvta_generic_to_shared(words_))));
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
  __device__ void settle(unsigned j, unsigned old, WrapTally& tally, unsigned long long* counts) const {
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
    if (carries_to_next(tally.j))
      atomicAdd(&counts[global(tally.j + 1)], 0ull - tally.wraps);
    tally.wraps = 0;
  }
  // A wrap whose carry wrapped the next field too (rare): settled at once, along the chain.
  __device__ void settle_chain(int j, unsigned rest, unsigned long long* counts) const {
    for (int k = j;; ++k, rest >>= kBits) {
      // field k was full and took a 1: it wrapped (and, past j, the 1 was a carry)
      atomicAdd(&counts[global(k)], (1ull << kBits) - (k != j));
      if (!carries_to_next(k)) return;        // the carry left the bins of the word
      if (((rest >> kBits) & kFull) != kFull) {  // field k + 1 keeps it
        atomicAdd(&counts[global(k + 1)], ~0ull);
        return;
      }
    }
  }
  // After a __syncthreads: adds every counter to the global counts.
  __device__ void flush(unsigned long long* counts) const {
    for (int w = threadIdx.x; w < (bins + kFields - 1) / kFields; w += blockDim.x) {
      const unsigned word = words[w];
#pragma unroll
      for (int f = 0; f < kFields; ++f) {
        const unsigned count = (word >> (f * kBits)) & kFull;
        const int j = w * kFields + f;
        if (count && j < bins) atomicAdd(&counts[global(j)], static_cast<unsigned long long>(count));
      }
    }
  }
};

constexpr int kMaxSplitLog2 = 3;  // every block of a group reads every element: 8 reads at most
// The narrow counters: 6 bits, five to a word, so one block holds 289280 bins (H100).
constexpr int kNarrowBits = 6;

// PackedCounts<kBits> in one block's shared memory (kLog2Split = 0), or spread over a group
// of 2^kLog2Split blocks, block r of a group holding every bin b with b % 2^log2_split == r (a
// run of popular neighbouring bins spreads over the group; a power of two, so owner and
// local bin are a mask and a shift). Every block of a group reads the same elements and
// counts only its own bins, so every add stays in the block's shared memory. The blocks of a
// group run side by side, so one of them reads an element from HBM and the others find it
// in L2: plain loads, not streaming ones, which would evict what the others are about to
// read. (Sharing the binning over a cluster through DSMEM instead, each block binning a third
// of a tile and adding the codes it owns from all three, measured slower on the H100: 19.7%
// against 22% of the copy ceiling at 262144 bins with 16-bit counters in groups of 3; the
// owner test diverges every warp.)
template <int kBits, int kLog2Split, typename T, typename M>
__global__ void __launch_bounds__(kPackedThreads)
histogram_packed_kernel(const T* x, int64_t n, bool streaming, int bins, Range<M> range,
                        Counts counts) {
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
      const int bin = bin_of(static_cast<M>(v), rank ^ 1);
      j = static_cast<unsigned>(bin) >> kLog2Split;
      return (bin & kOwnerMask) == rank;
    } else {
      const int bin = bin_of(static_cast<M>(v));
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
  // One block per SM reads from HBM: a load always in flight pays (2^28 randn, 65536 and
  // 262144 bins: 79.1 and 44.9% of the copy ceiling, against 70.5 and 41.2% with two loads
  // then their work). A group's blocks find most of their loads in L2: there two at a time
  // measured better (524288 bins: 27.4 against 26.6%), except with double math, whose
  // unrolled pairs spill.
  constexpr bool kPipelined = !kGrouped || !kFloatMath;
  for_each_element<true, kPipelined>(x, n, group * int64_t(kPackedThreads) + threadIdx.x,
                                     int64_t(groups) * kPackedThreads, streaming && !kGrouped, count);
  mine.settle_tally(tally, counts.add);
  __syncthreads();
  mine.flush(counts.add);
  counts.finish(bins);
}

// 2-byte inputs (fp16, bf16, int16) have only 65536 bit patterns. Each block first bins
// every pattern once into a shared-memory table (bin + 1; 0 for out of range or NaN), so the
// work per element is a table lookup and a shared atomic, with no division: bf16 at 2^28
// elements was compute-bound at under half the copy ceiling. The table is 128 KiB, so one
// 1024-thread block per SM, and copies of the counts (WarpCopies) fill what is left.
constexpr int64_t kPatterns16 = 65536;

template <typename T, typename M>
__global__ void __launch_bounds__(kPackedThreads)
histogram_lut16_kernel(const T* x, int64_t n, bool streaming, int bins, int subs, bool per_lane,
                       Range<M> range, Counts counts) {
  static_assert(sizeof(T) == 2, "a table of 16-bit patterns");
  extern __shared__ unsigned smem[];
  auto* table = reinterpret_cast<unsigned short*>(smem);                // [kPatterns16]
  const WarpCopies copies{smem + kPatterns16 / 2, subs, bins, per_lane};  // after the table
  const BinMap<M> bin_of(range, bins);
  for (int p = threadIdx.x; p < kPatterns16; p += kPackedThreads) {
    const auto bits = static_cast<unsigned short>(p);
    T v;
    memcpy(&v, &bits, sizeof(v));
    table[p] = static_cast<unsigned short>(bin_of(static_cast<M>(v)) + 1);
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
  copies.flush(counts.add);
  counts.finish(bins);
}

// Adds 1 to the counter at `mine` (an address in this block's shared memory), or to the
// same offset in the shared memory of cluster block `owner`. The local case is an ordinary
// shared atomic; the remote one a fire-and-forget reduction over DSMEM (mapa + red), which
// costs far more (the H100 sustains ~0.3 per SM per clock), so slices stay few.
__device__ inline void add_one_in_cluster(unsigned* mine, unsigned owner, unsigned rank) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (owner == rank) {
    atomicAdd(mine, 1u);
    return;
  }
  const auto local = static_cast<unsigned>(__cvta_generic_to_shared(mine));
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(owner));
  asm volatile("red.relaxed.cluster.shared::cluster.add.u32 [%0], 1;" ::"r"(remote) : "memory");
#endif
}

// Bins beyond one block's shared memory: a cluster of 2^log2_cluster blocks shares them.
// Block `rank` of a cluster holds the bins b with b % C == rank, at b / C (interleaved, so
// owner and offset are a mask and a shift, and a run of popular neighbouring bins spreads
// over all C blocks). Every block bins its grid-stride share of the input and adds 1 in the
// owner's shared memory, through DSMEM when that is another block's: no L2 traffic.
// Counters are 32-bit; the host keeps each cluster's element count below 2^32.
template <typename T, typename M>
__global__ void __launch_bounds__(kHistThreads)
histogram_cluster_kernel(const T* x, int64_t n, bool streaming, int bins, int log2_cluster,
                         Range<M> range, Counts counts) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  extern __shared__ unsigned slice[];  // this block's share of the bins
  const cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank();
  const unsigned owner_mask = (1u << log2_cluster) - 1;
  const int64_t slice_bins = (bins + owner_mask) >> log2_cluster;
  for (int64_t b = threadIdx.x; b < slice_bins; b += kHistThreads) slice[b] = 0;
  const BinMap<M> bin_of(range, bins);
  cluster.sync();  // every slice is zeroed before any block adds to it
  for_each_element<true>(x, n, blockIdx.x * int64_t(kHistThreads) + threadIdx.x,
                         int64_t(gridDim.x) * kHistThreads, streaming, [&](T v) {
                           const int bin = bin_of(static_cast<M>(v));
                           if (bin >= 0)
                             add_one_in_cluster(slice + (bin >> log2_cluster),
                                                static_cast<unsigned>(bin) & owner_mask, rank);
                         });
  cluster.sync();  // every add has landed, and no block leaves while others may add to it
  for (int64_t o = threadIdx.x; o < slice_bins; o += kHistThreads) {
    const int64_t b = (o << log2_cluster) | rank;
    if (b < bins && slice[o]) atomicAdd(&counts.add[b], static_cast<unsigned long long>(slice[o]));
  }
  counts.finish(bins);
#else
  __trap();  // the host launches this only where cluster_supported()
#endif
}

template <typename T, typename M, bool kVector, bool kAggregate>
__global__ void __launch_bounds__(kHistThreads)
histogram_global_kernel(const T* x, int64_t n, bool streaming, int64_t bins, Range<M> range,
                        Counts counts) {
  M lo, hi;
  range.load(lo, hi);
  for_each_element<kVector>(x, n, blockIdx.x * int64_t(kHistThreads) + threadIdx.x,
                            int64_t(gridDim.x) * kHistThreads, streaming, [&](T v) {
                              count_bin<kAggregate>(counts.add, histc_bin<M>(static_cast<M>(v), lo, hi, bins));
                            });
  counts.finish(bins);
}

enum class Variant { kGlobalAtomics, kShared, kSharedPerWarp, kCluster, kFinal };
constexpr const char* kVariantNames[] = {"global_atomics", "shared", "shared_per_warp", "cluster",
                                         "final"};
constexpr int kMaxClusterLog2 = 4;  // 16 blocks: the H100's non-portable cluster limit

// Which rung runs; for tuning and tests, a forced cluster size, or (final) a forced shape.
enum class Force { kNone, kLut16, kPacked16, kPacked6, kSplit };
struct Request {
  Variant variant = Variant::kFinal;
  int log2_cluster = 0;  // 0: choose_shape decides
  Force force = Force::kNone;
  int log2_split = 0;  // Force::kSplit: blocks per group, as a power of two
};

// Where the counters live and how many copies: the one place that decides, from the bin
// count and the device (final):
//   shared   32-bit counters, per-warp copies while they fit in a quarter of an SM's shared
//            memory (so four 512-thread blocks, a full SM, could stay resident), then one
//            copy up to the opt-in limit;
//   lut16    large 2-byte inputs: the pattern table, and per-lane copies beside it where 32
//            fit (2^28 bf16, 256 bins: 81.0% of the copy ceiling, per-warp 71.3%), else
//            per-warp ones. (Per-lane copies in the shared kernel measured slower: 256 bins,
//            fp32, 16M elements 69.7 against 37.1 us, 2^28 384.9 against 369.4 us.)
//   packed   one copy of 16-bit counters, then of 6-bit ones (five to a word: one block holds
//            2.5 times the bins, but they wrap 1024 times as often, so 16 bits while they
//            fit). 2^28 randn, 262144 bins: 6-bit counters in one block 44.9% of the copy
//            ceiling; 8-bit ones over a group of 2, 36.7%; 16-bit over a group of 3, 22.3%;
//   split    6-bit counters spread over the smallest group of 2, 4 or 8 blocks that holds
//            them, every block of a group reading all the input (from L2 but once);
//   global   beyond that: global counters.
// The cluster rung spreads 32-bit counters over a cluster's shared memory too, but every
// block adds to the others' counters through DSMEM, which the H100 sustains at ~0.3 adds per
// SM per clock (2^28 randn, 65536 bins, C = 2, 4, 8, 16: 1.65, 2.93, 3.46, 4.25 ms): final
// does not take it.
struct HistogramShape {
  enum class Where { kGlobal, kShared, kLut16, kPacked, kCluster } where = Where::kGlobal;
  int subs = 1;           // kShared, kLut16: private copies per block
  bool per_lane = false;  // kLut16: WarpCopies' per-lane layout
  int most_per_sm = INT_MAX;  // kShared: resident blocks per SM at most
  int counter_bits = 32;  // kPacked: 16 or kNarrowBits
  int log2_split = 0;     // kPacked: blocks per group, as a power of two
  int log2_cluster = 0;   // kCluster: blocks per cluster, as a power of two
  int64_t smem_bytes = 0;
};

HistogramShape choose_shape(int64_t bins, int64_t n, int element_bytes, const Request& request,
                            int device) {
  const Variant variant = request.variant;
  const bool final = variant == Variant::kFinal;
  const DeviceInfo& dev = device_info(device);
  constexpr int64_t kCounter = sizeof(unsigned);
  const int64_t copy_bytes = bins * kCounter;
  const int64_t optin = dev.max_smem_per_block_optin - kStaticSmemReserve;
  const int64_t limit = final ? optin : dev.max_smem_per_block;
  HistogramShape s;
  if (variant == Variant::kGlobalAtomics) return s;
  // WarpCopies in `budget` bytes of shared memory with at most `most` copies (one per warp).
  auto warp_copies = [&](int64_t budget, int most, bool per_lane) {
    s.per_lane = per_lane && kWarpSize * copy_bytes <= budget;
    s.subs = s.per_lane ? kWarpSize : static_cast<int>(std::clamp<int64_t>(budget / copy_bytes, 1, most));
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
  // 2-byte input, large enough that every block's table (65536 binnings) is a small cost
  const int64_t table_bytes = kPatterns16 * 2;
  const bool table_fits = element_bytes == 2 && bins < kPatterns16 && table_bytes + copy_bytes <= optin;
  TORCH_CHECK_VALUE(request.force != Force::kLut16 || table_fits,
                    "smem._histc_variant: final:lut16 needs 2-byte input and bins that fit beside the table");
  TORCH_CHECK_VALUE(request.force != Force::kPacked16 || packed_bytes(16, 0) <= optin,
                    "smem._histc_variant: final:packed16 needs bins that fit as 16-bit counters");
  TORCH_CHECK_VALUE(request.force != Force::kPacked6 || packed_bytes(kNarrowBits, 0) <= optin,
                    "smem._histc_variant: final:packed6 needs bins that fit as 6-bit counters");
  const int64_t forced_split = int64_t(1) << request.log2_split;
  TORCH_CHECK_VALUE(request.force != Force::kSplit || (bins >= forced_split && packed_bytes(kNarrowBits, request.log2_split) <= optin),
                    "smem._histc_variant: final:split:", forced_split, " needs at least ",
                    forced_split, " bins, and their 6-bit counters must fit the group");
  if (request.force == Force::kPacked16) return packed(16, 0);
  if (request.force == Force::kPacked6) return packed(kNarrowBits, 0);
  if (request.force == Force::kSplit) return packed(kNarrowBits, request.log2_split);
  if (final && table_fits && (n >= 8 * kPatterns16 * dev.sm_count || request.force == Force::kLut16)) {
    s.where = HistogramShape::Where::kLut16;
    s.smem_bytes = table_bytes + warp_copies(optin - table_bytes, kPackedThreads / kWarpSize, true);
    return s;
  }
  if (variant != Variant::kCluster && copy_bytes <= limit) {
    s.where = HistogramShape::Where::kShared;
    s.smem_bytes = copy_bytes;
    if (variant == Variant::kSharedPerWarp || final)
      s.smem_bytes = warp_copies(dev.max_smem_per_sm / 4 - 1024, kHistThreads / kWarpSize, false);
    if (final)
      s.most_per_sm = n * element_bytes <= 4 * int64_t(dev.l2_bytes) ? kSharedBlocksPerSmSmall
                                                                      : kSharedBlocksPerSmLarge;
    return s;
  }
  if (final) {
    if (packed_bytes(16, 0) <= optin) return packed(16, 0);
    for (int l = 0; l <= kMaxSplitLog2; ++l)
      if (packed_bytes(kNarrowBits, l) <= optin) return packed(kNarrowBits, l);
    return s;
  }
  if (variant != Variant::kCluster) return s;
  TORCH_CHECK(cluster_supported(device),
              "smem._histc_variant: the cluster variant needs an sm_90 device and build");
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

// Opts a kernel into dynamic shared memory up to the largest any shape asks for (the device
// limit less kStaticSmemReserve: the cap plus the kernel's static shared memory must fit the
// limit) where `bytes` of it, with the static part, may pass the default 48 KiB. The
// attribute is only a cap: the launch's own size decides occupancy, so one cap serves all.
// Set once per kernel and device (the query's key has no real size, -1).
template <typename Kernel>
void allow_dynamic_smem(Kernel* kernel, int64_t bytes) {
  if (bytes + kStaticSmemReserve <= 48 * 1024) return;
  once_per_kernel(reinterpret_cast<const void*>(kernel), -1, 0, [&] {
    C10_CUDA_CHECK(cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
        static_cast<int>(current_device_info().max_smem_per_block_optin - kStaticSmemReserve)));
    return 0;
  });
}

// Launches `kernel` in clusters of `cluster` blocks of kThreads threads with `smem_bytes` of
// dynamic shared memory: one wave (as many clusters as fit on the device at once), but no
// more than `useful` and no fewer than `at_least`.
template <int kThreads, typename Kernel, typename... Args>
void launch_clusters(Kernel* kernel, unsigned cluster, int64_t smem_bytes, int64_t useful,
                     int64_t at_least, cudaStream_t stream, Args... args) {
  cudaLaunchAttribute attribute{};
  attribute.id = cudaLaunchAttributeClusterDimension;
  attribute.val.clusterDim.x = cluster;
  attribute.val.clusterDim.y = attribute.val.clusterDim.z = 1;
  cudaLaunchConfig_t config{};
  config.gridDim = dim3(cluster);
  config.blockDim = dim3(kThreads);
  config.dynamicSmemBytes = static_cast<size_t>(smem_bytes);
  config.stream = stream;
  config.attrs = &attribute;
  config.numAttrs = 1;
  const int resident = once_per_kernel(reinterpret_cast<const void*>(kernel), smem_bytes,
                                       static_cast<int>(cluster), [&] {
    allow_dynamic_smem(kernel, smem_bytes);
    if (cluster > 8)
      C10_CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
    int clusters = 0;
    C10_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
    return clusters;
  });
  const int64_t clusters = std::max(std::min<int64_t>(std::max(resident, 1), useful), at_least);
  config.gridDim = dim3(static_cast<unsigned>(clusters * cluster));
  C10_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, args...));
}

// A grid-striding kernel with `smem_bytes` of dynamic shared memory, launched with as many
// blocks as can be resident at once (at most `most_per_sm` per SM), in groups of
// 2^log2_group blocks that stride together (block r of a group is blockIdx.x % 2^log2_group),
// and at least one group per 2^31 elements (32-bit counters).
template <int kThreads, typename Kernel, typename... Args>
void launch_resident(Kernel* kernel, int64_t n, int64_t per_thread, int64_t smem_bytes,
                     int most_per_sm, int log2_group, cudaStream_t stream, Args... args) {
  allow_dynamic_smem(kernel, smem_bytes);
  const int64_t groups = std::max<int64_t>(
      resident_grid(kernel, kThreads, smem_bytes, n, kThreads * per_thread, most_per_sm) >> log2_group,
      ceil_div(n, int64_t(1) << 31));
  kernel<<<static_cast<unsigned>(groups << log2_group), kThreads, smem_bytes, stream>>>(args...);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// The packed kernel: one block's counters per SM, or groups of 2^log2_split blocks.
// PackedCounts are exact at any count, so no bound on a block's elements.
template <typename T, typename M>
void launch_packed(const T* data, int64_t n, int64_t per_thread, bool streaming, int bins,
                   const HistogramShape& shape, Range<M> range, Counts out, cudaStream_t stream) {
  const int log2_split = shape.log2_split;
  TORCH_INTERNAL_ASSERT((shape.counter_bits == kNarrowBits || log2_split == 0) && log2_split <= kMaxSplitLog2);
  auto* kernel = log2_split == 0 ? (shape.counter_bits == 16 ? histogram_packed_kernel<16, 0, T, M>
                                                             : histogram_packed_kernel<kNarrowBits, 0, T, M>)
               : log2_split == 1 ? histogram_packed_kernel<kNarrowBits, 1, T, M>
               : log2_split == 2 ? histogram_packed_kernel<kNarrowBits, 2, T, M>
                                 : histogram_packed_kernel<kNarrowBits, 3, T, M>;
  launch_resident<kPackedThreads>(kernel, n, per_thread, shape.smem_bytes, INT_MAX, log2_split,
                                  stream, data, n, streaming, bins, range, out);
}

template <typename T, typename M, bool kVector, bool kAggregate>
void launch_counts(const T* data, int64_t n, bool streaming, int64_t bins,
                   const HistogramShape& shape, Range<M> range, Counts out,
                   cudaStream_t stream) {
  constexpr int64_t kPerThread = kVector ? 2 * vec_width<T>() : 4;
  using Where = HistogramShape::Where;
  TORCH_INTERNAL_ASSERT(shape.where == Where::kGlobal || bins < kMaxBinMapBins);
  const int small_bins = static_cast<int>(std::min<int64_t>(bins, INT_MAX));  // shared memory
  switch (shape.where) {
    case Where::kShared:
      launch_resident<kHistThreads>(histogram_shared_kernel<T, M, kVector>, n, kPerThread,
                                    shape.smem_bytes, shape.most_per_sm, 0, stream, data, n,
                                    streaming, small_bins, shape.subs, range, out);
      break;
    case Where::kLut16:
      if constexpr (sizeof(T) == 2)
        launch_resident<kPackedThreads>(histogram_lut16_kernel<T, M>, n, kPerThread,
                                        shape.smem_bytes, INT_MAX, 0, stream, data, n, streaming,
                                        small_bins, shape.subs, shape.per_lane, range, out);
      break;
    case Where::kPacked:
      launch_packed<T, M>(data, n, kPerThread, streaming, small_bins, shape, range, out, stream);
      break;
    case Where::kCluster: {  // 32-bit counters: under 2^32 elements per cluster
      const unsigned cluster = 1u << shape.log2_cluster;
      launch_clusters<kHistThreads>(histogram_cluster_kernel<T, M>, cluster, shape.smem_bytes,
                                    ceil_div(n, int64_t(cluster) * kHistThreads * 2 * vec_width<T>()),
                                    ceil_div(n, int64_t(1) << 31), stream, data, n, streaming,
                                    small_bins, shape.log2_cluster, range, out);
      break;
    }
    case Where::kGlobal: {
      auto* kernel = histogram_global_kernel<T, M, kVector, kAggregate>;
      kernel<<<resident_grid(kernel, kHistThreads, 0, n, kHistThreads * kPerThread, 4), kHistThreads,
               0, stream>>>(data, n, streaming, bins, range, out);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      break;
    }
  }
}

template <typename T>
void launch_histc(const at::Tensor& x, const HistcPlan& plan, at::Tensor& counts, Request request) {
  using M = histc_math_t<T>;
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const int64_t n = x.numel();
  const T* data = x.const_data_ptr<T>();
  // Decided before anything is launched: choose_shape may refuse the request.
  const HistogramShape shape = choose_shape(plan.bins, n, sizeof(T), request, x.device().index());
  const bool streaming = stream_once(n * int64_t(sizeof(T)));
  // counters[0]: range_kernel's last block; counters[1]: the histogram kernel's
  const bool fused = plan.bins <= kFusedBins;
  at::Tensor fresh_counters, fresh_workspace;
  unsigned* done =
      plan.auto_range || fused ? zeroed_counters(2, x.options(), fresh_counters) : nullptr;
  int64_t* counts_ptr = counts.mutable_data_ptr<int64_t>();
  Counts out{reinterpret_cast<unsigned long long*>(counts_ptr), nullptr, nullptr};
  if (fused) {
    out = Counts{static_cast<unsigned long long*>(zeroed_workspace(
                     plan.bins * int64_t(sizeof(int64_t)), ZeroedUse::kHistogram, x.options(),
                     fresh_workspace)),
                 counts_ptr, done + 1};
  } else {
    counts.zero_();
  }
  Range<M> range{static_cast<M>(plan.lo), static_cast<M>(plan.hi), nullptr};
  at::Tensor device_range;
  if (plan.auto_range) {
    const unsigned grid = resident_grid(range_kernel<T, M>, kRangeThreads, 0, n, kRangeThreads * 8);
    const auto mdtype = c10::CppTypeToScalarType<M>::value;
    at::Tensor block_range = at::empty({2 * int64_t(grid)}, x.options().dtype(mdtype));
    device_range = at::empty({2}, x.options().dtype(mdtype));
    range_kernel<T, M><<<grid, kRangeThreads, 0, stream>>>(
        data, n, streaming, block_range.mutable_data_ptr<M>(),
        done, device_range.mutable_data_ptr<M>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    range.device = device_range.const_data_ptr<M>();
  }
  // The seeds' rungs bin element by element; the others move 16-byte vectors. Global
  // counters aggregate a warp's equal bins only in the final kernel.
  switch (request.variant) {
    case Variant::kGlobalAtomics:
    case Variant::kShared:
      launch_counts<T, M, false, false>(data, n, streaming, plan.bins, shape, range, out, stream);
      break;
    case Variant::kSharedPerWarp:
    case Variant::kCluster:
      launch_counts<T, M, true, false>(data, n, streaming, plan.bins, shape, range, out, stream);
      break;
    case Variant::kFinal:
      launch_counts<T, M, true, true>(data, n, streaming, plan.bins, shape, range, out, stream);
      break;
  }
}

at::Tensor histc_with(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                      const at::Scalar& max, std::optional<at::ScalarType> dtype, Request request) {
  return histc_host(self, bins, min, max, dtype,
                    [request](const at::Tensor& x, const HistcPlan& plan, at::Tensor& counts) {
                      const c10::cuda::CUDAGuard guard(x.device());
                      AT_DISPATCH_ALL_TYPES_AND2(at::kHalf, at::kBFloat16, x.scalar_type(),
                                                 "smem_histc_cuda", [&] {
                                                   launch_histc<scalar_t>(x, plan, counts, request);
                                                 });
                    });
}

at::Tensor histc_cuda(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                      const at::Scalar& max, std::optional<at::ScalarType> dtype) {
  return histc_with(self, bins, min, max, dtype, Request{});
}

// l where `size` spells 2^l, 1 <= l <= max_log2; else 0.
int log2_of_size(c10::string_view size, int max_log2) {
  for (int l = 1; l <= max_log2; ++l)
    if (size == std::to_string(1 << l)) return l;
  return 0;
}

// `variant` is one of kVariantNames; "cluster:N" (N = 2, 4, 8 or 16) forces the cluster size,
// and "final:lut16", "final:packed16", "final:packed6" or "final:split:N" (N = 2, 4, 8) that
// shape whatever the size (for the tests).
at::Tensor histc_variant_cuda(const at::Tensor& self, int64_t bins, double min, double max,
                              c10::string_view variant) {
  Request request;
  const auto colon = variant.find(':');
  const c10::string_view name = variant.substr(0, colon);
  for (const auto& [name, force] : {std::pair{"final:lut16", Force::kLut16},
                                    std::pair{"final:packed16", Force::kPacked16},
                                    std::pair{"final:packed6", Force::kPacked6}})
    if (variant == name) {
      request.force = force;
      return histc_with(self, bins, min, max, at::kLong, request);
    }
  constexpr c10::string_view kSplitPrefix = "final:split:";
  if (variant.substr(0, kSplitPrefix.size()) == kSplitPrefix) {
    const c10::string_view size = variant.substr(kSplitPrefix.size());
    request.log2_split = log2_of_size(size, kMaxSplitLog2);
    TORCH_CHECK_VALUE(request.log2_split > 0, "smem._histc_variant: split size '", size,
                      "' is not one of 2, 4, 8");
    request.force = Force::kSplit;
    return histc_with(self, bins, min, max, at::kLong, request);
  }
  if (colon != c10::string_view::npos && name == "cluster") {
    const c10::string_view size = variant.substr(colon + 1);
    request.log2_cluster = log2_of_size(size, kMaxClusterLog2);
    TORCH_CHECK_VALUE(request.log2_cluster > 0, "smem._histc_variant: cluster size '", size,
                      "' is not one of 2, 4, 8, 16");
  }
  for (int v = 0; v < static_cast<int>(std::size(kVariantNames)); ++v)
    if (name == kVariantNames[v] && (colon == c10::string_view::npos || request.log2_cluster > 0)) {
      request.variant = static_cast<Variant>(v);
      return histc_with(self, bins, min, max, at::kLong, request);
    }
  TORCH_CHECK_VALUE(false, "smem._histc_variant: unknown variant '", variant,
                    "' (expected one of smem_ops.variants('histogram'))");
}

}  // namespace

std::vector<std::string> histogram_variants() {
  return {std::begin(kVariantNames), std::end(kVariantNames)};
}

}  // namespace smem::cuda

TORCH_LIBRARY_IMPL(smem, CUDA, m) {
  m.impl("histc", &smem::cuda::histc_cuda);
  m.impl("_histc_variant", &smem::cuda::histc_variant_cuda);
}
