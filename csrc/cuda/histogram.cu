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
//                    16-bit counters per block; then those counters split over a group of
//                    blocks that all read the input (split); beyond that,
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
#include <map>
#include <mutex>
#include <tuple>

#include "cuda/common.cuh"
#include "histogram.h"
#include "smem.h"

namespace smem::cuda {
namespace {

constexpr int kHistThreads = 512;
// Shared-kernel blocks per SM (four fit): every block ends with an atomic per bin into the
// same global counters, so fewer blocks queue fewer same-address atomics at the end. Measured
// on the H100 (probe, 256 bins, fp32 randn), 2 / 3 / 4 blocks per SM: 16M elements 33.6 /
// 34.0 / 34.9-36.7 us, 2^28 elements 92.9 / 97.5 / 96.9% of the copy ceiling.
constexpr int kSharedBlocksPerSm = 3;
// packed16 and lut16 hold over half an SM's shared memory, so one block per SM: a full-size
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
    constexpr int kBatch = 4;  // independent L2 reads in flight per thread
    for (int64_t b0 = threadIdx.x; b0 < bins; b0 += kBatch * blockDim.x) {
      unsigned long long v[kBatch];
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int64_t b = b0 + u * blockDim.x;
        v[u] = b < bins ? load_from_l2(&add[b]) : 0;
      }
#pragma unroll
      for (int u = 0; u < kBatch; ++u) {
        const int64_t b = b0 + u * blockDim.x;
        if (b < bins) {
          out[b] = static_cast<int64_t>(v[u]);
          add[b] = 0;
        }
      }
    }
  }
};
constexpr int64_t kFusedBins = 2048;  // one batch of the move for a 512-thread block

// Calls f(x[i]) for the i in [0, n) that belong to thread t of nthreads. With kVector, the
// aligned body moves in 16-byte vectors, two in flight per thread.
template <bool kVector, typename T, typename F>
__device__ inline void for_each_element(const T* x, int64_t n, int64_t t, int64_t nthreads,
                                        bool streaming, F&& f) {
  if constexpr (!kVector) {
    for (int64_t i = t; i < n; i += nthreads) f(x[i]);
  } else {
    constexpr int V = vec_width<T>();
    using VecT = Vec<T, V>;
    const int64_t head = std::min<int64_t>(n, ((16 - reinterpret_cast<uintptr_t>(x) % 16) % 16) / sizeof(T));
    for (int64_t i = t; i < head; i += nthreads) f(x[i]);
    const int64_t nvec = (n - head) / V;
    const VecT* xv = reinterpret_cast<const VecT*>(x + head);
    int64_t i = t;
    for (; i + nthreads < nvec; i += 2 * nthreads) {
      const VecT a = load_once(&xv[i], streaming), b = load_once(&xv[i + nthreads], streaming);
#pragma unroll
      for (int k = 0; k < V; ++k) f(a.v[k]);
#pragma unroll
      for (int k = 0; k < V; ++k) f(b.v[k]);
    }
    for (; i < nvec; i += nthreads) {
      const VecT a = load_once(&xv[i], streaming);
#pragma unroll
      for (int k = 0; k < V; ++k) f(a.v[k]);
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

__device__ inline int trunc_to_int(float q) { return __float2int_rz(q); }
__device__ inline int trunc_to_int(double q) { return __double2int_rz(q); }

// histc_bin (histogram.h) for the shared-memory kernels, whose bins are far below 2^30: the
// same expression, truncated in 32 bits (for v in range the quotient is at most
// bins * (1 + 2^-22), so the value is histc_bin's; out of range, NaN and overflow saturate or
// give 0, and are then discarded or clamped as there). Branch-free and 32-bit, with the range
// loaded and bins converted once per thread: the per-element path of compute-bound kernels
// then has one quarter-rate F2I.S32 (not F2I.S64), no 64-bit compares and no divergence.
template <typename M>
struct BinMap {
  M lo, hi, width, scale;
  int bins;
  __device__ BinMap(const Range<M>& range, int bins_) : bins(bins_) {
    range.load(lo, hi);
    width = hi - lo;
    scale = static_cast<M>(bins_);
  }
  __device__ int operator()(M v) const {
    const int b = min(trunc_to_int((v - lo) * scale / width), bins - 1);
    return v >= lo && v <= hi ? b : -1;
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

// Bins that one block holds as 16-bit counters but not as 32-bit ones: two per word of
// shared memory (local bin j in the low half of word j / 2 when even, the high half when
// odd), one copy per block, all adds local. Local bin j counts global bin j * stride + offset.
// Exact at any count: the old word that atomicAdd returns shows every wrap of a half,
// settled in the 64-bit global counts as it happens. With o_lo wraps of the low half and
// o_w wraps of the word,
//   count(2k) = low + 2^16 o_lo,   count(2k+1) = high + 2^16 o_w - o_lo
// (each low wrap carries 1 into the high half, and on out of the word when that is full).
// A half wraps once per 65536 adds to its bin, so the fix-ups cost nothing measurable.
struct PackedCounts16 {
  unsigned* pairs;  // ceil(bins / 2) words
  int bins;         // local bins
  int stride, offset;

  __device__ int64_t global(int j) const { return int64_t(j) * stride + offset; }
  __device__ void zero() const {
    for (int w = threadIdx.x; w < (bins + 1) / 2; w += blockDim.x) pairs[w] = 0;
  }
  __device__ void add(int j, unsigned long long* counts) const {
    const unsigned shift = (j & 1) * 16;
    const unsigned old = atomicAdd(&pairs[j >> 1], 1u << shift);
    if (((old >> shift) & 0xFFFFu) == 0xFFFFu) settle_wrap(j, old, counts);
  }
  __device__ void settle_wrap(int j, unsigned old, unsigned long long* counts) const {
    atomicAdd(&counts[global(j)], 0x10000ull);
    if (!(j & 1) && j + 1 < bins)  // the carry: -1 for the high half, +2^16 - 1 if it wrapped
      atomicAdd(&counts[global(j + 1)], old == 0xFFFFFFFFu ? 0xFFFFull : ~0ull);
  }
  // After a __syncthreads: adds every counter to the global counts.
  __device__ void flush(unsigned long long* counts) const {
    for (int w = threadIdx.x; w < (bins + 1) / 2; w += blockDim.x) {
      const unsigned pair = pairs[w];
      if (pair & 0xFFFFu) atomicAdd(&counts[global(2 * w)], static_cast<unsigned long long>(pair & 0xFFFFu));
      if ((pair >> 16) && 2 * w + 1 < bins)
        atomicAdd(&counts[global(2 * w + 1)], static_cast<unsigned long long>(pair >> 16));
    }
  }
};

template <typename T, typename M>
__global__ void __launch_bounds__(kPackedThreads)
histogram_packed16_kernel(const T* x, int64_t n, bool streaming, int bins, Range<M> range,
                          Counts counts) {
  extern __shared__ unsigned pairs[];
  const PackedCounts16 mine{pairs, bins, 1, 0};
  mine.zero();
  const BinMap<M> bin_of(range, bins);
  __syncthreads();
  for_each_element<true>(x, n, blockIdx.x * int64_t(kPackedThreads) + threadIdx.x,
                         int64_t(gridDim.x) * kPackedThreads, streaming, [&](T v) {
                           const int bin = bin_of(static_cast<M>(v));
                           if (bin >= 0) mine.add(bin, counts.add);
                         });
  __syncthreads();
  mine.flush(counts.add);
  counts.finish(bins);
}

constexpr int kMaxSplit = 8;  // every block of a group reads every element: 8 reads at most

// Bins beyond one block's 16-bit counters: a group of `split` blocks shares them, block r of
// a group holding every split-th bin (r, r + split, ...: a run of popular neighbouring bins
// spreads over the group) as PackedCounts16. Every block of a group reads the same elements
// and counts only its own bins, so every add stays in the block's shared memory. The blocks
// of a group run side by side, so one of them reads an element from HBM and the others find
// it in L2: plain loads, not streaming ones, which would evict what the others are about to
// read. (Sharing the binning over a cluster through DSMEM instead, each block binning a
// third of a tile and adding the codes it owns from all three, measured slower on the H100:
// 19.7% against 22% of the copy ceiling at 262144 bins; the owner test diverges every warp.)
template <typename T, typename M>
__global__ void __launch_bounds__(kPackedThreads)
histogram_split_kernel(const T* x, int64_t n, int bins, int split, unsigned split_reciprocal,
                       Range<M> range, Counts counts) {
  extern __shared__ unsigned pairs[];
  const int rank = blockIdx.x % split, group = blockIdx.x / split, groups = gridDim.x / split;
  const PackedCounts16 mine{pairs, (bins - rank + split - 1) / split, split, rank};
  mine.zero();
  const BinMap<M> bin_of(range, bins);
  __syncthreads();
  for_each_element<true>(x, n, group * int64_t(kPackedThreads) + threadIdx.x,
                         int64_t(groups) * kPackedThreads, /*streaming=*/false, [&](T v) {
                           const int bin = bin_of(static_cast<M>(v));
                           // bin / split, exact while bins * split < 2^32 (the host checks)
                           const int j = __umulhi(static_cast<unsigned>(bin), split_reciprocal);
                           if (bin >= 0 && bin - j * split == rank) mine.add(j, counts.add);
                         });
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
enum class Force { kNone, kLut16, kPacked16, kSplit };
struct Request {
  Variant variant = Variant::kFinal;
  int log2_cluster = 0;  // 0: choose_shape decides
  Force force = Force::kNone;
  int split = 0;  // Force::kSplit: blocks per group
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
//   packed16 one copy of 16-bit counters;
//   split    16-bit counters spread over the smallest group of blocks that holds them,
//            every block of a group reading all the input (from L2 but once);
//   global   beyond that: global counters.
// The cluster rung spreads 32-bit counters over a cluster's shared memory too, but every
// block adds to the others' counters through DSMEM, which the H100 sustains at ~0.3 adds per
// SM per clock (2^28 randn, 65536 bins, C = 2, 4, 8, 16: 1.65, 2.93, 3.46, 4.25 ms): final
// does not take it.
struct HistogramShape {
  enum class Where { kGlobal, kShared, kLut16, kPacked16, kSplit, kCluster } where = Where::kGlobal;
  int subs = 1;           // kShared, kLut16: private copies per block
  bool per_lane = false;  // kLut16: WarpCopies' per-lane layout
  int split = 1;          // kSplit: blocks per group
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
  // 16-bit counters spread over `split` blocks: block 0 holds the most
  auto packed_bytes = [&](int64_t split) { return ceil_div(ceil_div(bins, split), 2) * kCounter; };
  auto split_over = [&](int64_t split) {
    s.where = split == 1 ? HistogramShape::Where::kPacked16 : HistogramShape::Where::kSplit;
    s.split = static_cast<int>(split);
    s.smem_bytes = packed_bytes(split);
    return s;
  };
  // 2-byte input, large enough that every block's table (65536 binnings) is a small cost
  const int64_t table_bytes = kPatterns16 * 2;
  const bool table_fits = element_bytes == 2 && bins < kPatterns16 && table_bytes + copy_bytes <= optin;
  TORCH_CHECK_VALUE(request.force != Force::kLut16 || table_fits,
                    "smem._histc_variant: final:lut16 needs 2-byte input and bins that fit beside the table");
  TORCH_CHECK_VALUE(request.force != Force::kPacked16 || packed_bytes(1) <= optin,
                    "smem._histc_variant: final:packed16 needs bins that fit as 16-bit counters");
  TORCH_CHECK_VALUE(request.force != Force::kSplit || (bins >= request.split && packed_bytes(request.split) <= optin),
                    "smem._histc_variant: final:split:", request.split, " needs at least ",
                    request.split, " bins, and their 16-bit counters must fit the group");
  if (request.force == Force::kPacked16) return split_over(1);
  if (request.force == Force::kSplit) return split_over(request.split);
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
    return s;
  }
  if (final) {
    for (int split = 1; split <= kMaxSplit; ++split)
      if (packed_bytes(split) <= optin) return split_over(split);
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
template <typename Kernel>
void allow_dynamic_smem(Kernel* kernel, int64_t bytes) {
  if (bytes + kStaticSmemReserve > 48 * 1024)
    C10_CUDA_CHECK(cudaFuncSetAttribute(
        kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
        static_cast<int>(current_device_info().max_smem_per_block_optin - kStaticSmemReserve)));
}

// query() (kernel attributes, then an occupancy) once per kernel, device, dynamic shared
// memory and `extra`; later launches reuse the answer instead of asking the runtime again.
template <typename Query>
int once_per_kernel(const void* kernel, int64_t smem_bytes, int extra, Query&& query) {
  static std::mutex mutex;
  static std::map<std::tuple<const void*, int, int64_t, int>, int> known;
  int device = 0;
  C10_CUDA_CHECK(cudaGetDevice(&device));
  const std::lock_guard<std::mutex> lock(mutex);
  const auto key = std::make_tuple(kernel, device, smem_bytes, extra);
  if (const auto it = known.find(key); it != known.end()) return it->second;
  const int value = query();
  known.emplace(key, value);
  return value;
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

// Blocks of `kernel` (kThreads threads, `smem_bytes` of dynamic shared memory) resident on
// one SM at once.
template <int kThreads, typename Kernel>
int resident_blocks_per_sm(Kernel* kernel, int64_t smem_bytes) {
  return once_per_kernel(reinterpret_cast<const void*>(kernel), smem_bytes, kThreads, [&] {
    allow_dynamic_smem(kernel, smem_bytes);
    int blocks = 0;
    C10_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, kThreads, smem_bytes));
    return std::max(blocks, 1);
  });
}

// A grid-striding kernel with `smem_bytes` of dynamic shared memory, launched with as many
// blocks as can be resident at once (at most `most_per_sm` per SM), and at least one per
// 2^31 elements (32-bit counters).
template <int kThreads, typename Kernel, typename... Args>
void launch_resident(Kernel* kernel, int64_t n, int64_t per_thread, int64_t smem_bytes,
                     int most_per_sm, cudaStream_t stream, Args... args) {
  const int per_sm = std::min(resident_blocks_per_sm<kThreads>(kernel, smem_bytes), most_per_sm);
  const int64_t grid = std::max<int64_t>(grid_for(n, kThreads * per_thread, per_sm),
                                         ceil_div(n, int64_t(1) << 31));
  kernel<<<static_cast<unsigned>(grid), kThreads, smem_bytes, stream>>>(args...);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// The split kernel: groups of shape.split blocks, as many groups as are resident at once.
// PackedCounts16 are exact at any count, so no bound on a block's elements.
template <typename T, typename M>
void launch_split(const T* data, int64_t n, int bins, const HistogramShape& shape,
                  Range<M> range, Counts out, cudaStream_t stream) {
  auto* kernel = histogram_split_kernel<T, M>;
  const int split = shape.split;
  TORCH_INTERNAL_ASSERT(split >= 2 && split <= kMaxSplit && int64_t(bins) * split < (int64_t(1) << 32));
  const int per_sm = resident_blocks_per_sm<kPackedThreads>(kernel, shape.smem_bytes);
  const int64_t groups = std::max<int64_t>(
      1, std::min<int64_t>(int64_t(per_sm) * current_device_info().sm_count / split,
                           ceil_div(n, kPackedThreads * 2 * vec_width<T>())));
  // ceil(2^32 / split): bin * it >> 32 == bin / split for every bin < 2^32 / split
  const auto reciprocal = static_cast<unsigned>(((int64_t(1) << 32) + split - 1) / split);
  kernel<<<static_cast<unsigned>(groups * split), kPackedThreads, shape.smem_bytes, stream>>>(
      data, n, bins, split, reciprocal, range, out);
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <typename T, typename M, bool kVector, bool kAggregate>
void launch_counts(const T* data, int64_t n, bool streaming, int64_t bins,
                   const HistogramShape& shape, Range<M> range, Counts out,
                   cudaStream_t stream) {
  constexpr int64_t kPerThread = kVector ? 2 * vec_width<T>() : 4;
  using Where = HistogramShape::Where;
  const int small_bins = static_cast<int>(std::min<int64_t>(bins, INT_MAX));  // shared memory
  switch (shape.where) {
    case Where::kShared:
      launch_resident<kHistThreads>(histogram_shared_kernel<T, M, kVector>, n, kPerThread,
                                    shape.smem_bytes, kSharedBlocksPerSm, stream, data, n,
                                    streaming, small_bins, shape.subs, range, out);
      break;
    case Where::kLut16:
      if constexpr (sizeof(T) == 2)
        launch_resident<kPackedThreads>(histogram_lut16_kernel<T, M>, n, kPerThread,
                                        shape.smem_bytes, INT_MAX, stream, data, n, streaming,
                                        small_bins, shape.subs, shape.per_lane, range, out);
      break;
    case Where::kPacked16:
      launch_resident<kPackedThreads>(histogram_packed16_kernel<T, M>, n, kPerThread,
                                      shape.smem_bytes, INT_MAX, stream, data, n, streaming,
                                      small_bins, range, out);
      break;
    case Where::kSplit:
      launch_split<T, M>(data, n, small_bins, shape, range, out, stream);
      break;
    case Where::kCluster: {  // 32-bit counters: under 2^32 elements per cluster
      const unsigned cluster = 1u << shape.log2_cluster;
      launch_clusters<kHistThreads>(histogram_cluster_kernel<T, M>, cluster, shape.smem_bytes,
                                    ceil_div(n, int64_t(cluster) * kHistThreads * 2 * vec_width<T>()),
                                    ceil_div(n, int64_t(1) << 31), stream, data, n, streaming,
                                    small_bins, shape.log2_cluster, range, out);
      break;
    }
    case Where::kGlobal:
      histogram_global_kernel<T, M, kVector, kAggregate>
          <<<grid_for(n, kHistThreads * kPerThread, 4), kHistThreads, 0, stream>>>(
              data, n, streaming, bins, range, out);
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      break;
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
    const unsigned grid = grid_for(n, kRangeThreads * 8, 8);
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

// `variant` is one of kVariantNames; "cluster:N" (N = 2, 4, 8 or 16) forces the cluster size,
// and "final:lut16", "final:packed16" or "final:split:N" (N = 2..8) that shape whatever the
// size (for the tests).
at::Tensor histc_variant_cuda(const at::Tensor& self, int64_t bins, double min, double max,
                              c10::string_view variant) {
  Request request;
  const auto colon = variant.find(':');
  const c10::string_view name = variant.substr(0, colon);
  if (variant == "final:lut16" || variant == "final:packed16") {
    request.force = variant == "final:lut16" ? Force::kLut16 : Force::kPacked16;
    return histc_with(self, bins, min, max, at::kLong, request);
  }
  constexpr c10::string_view kSplitPrefix = "final:split:";
  if (variant.substr(0, kSplitPrefix.size()) == kSplitPrefix) {
    const c10::string_view size = variant.substr(kSplitPrefix.size());
    for (int k = 2; k <= kMaxSplit; ++k)
      if (size == std::to_string(k)) request.split = k;
    TORCH_CHECK_VALUE(request.split > 0, "smem._histc_variant: split size '", size,
                      "' is not one of 2..", kMaxSplit);
    request.force = Force::kSplit;
    return histc_with(self, bins, min, max, at::kLong, request);
  }
  if (colon != c10::string_view::npos && name == "cluster") {
    const c10::string_view size = variant.substr(colon + 1);
    for (int l = 1; l <= kMaxClusterLog2; ++l)
      if (size == std::to_string(1 << l)) request.log2_cluster = l;
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
