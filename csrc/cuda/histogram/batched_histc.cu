// CUDA batched_histc: one histc per row of a contiguous [slices, length] input (the host moves
// the dim last first), exact int64 counts, deterministic, one launch, no host sync.
//
// A block owns a row, or one of `split` parts of a row when there are too few rows to fill
// the device (shared range only). It keeps 32-bit counters in shared memory, a copy per group
// of warps so that warps don't contend for a popular bin, and moves the row in 16-byte
// vectors, two in flight per thread.
//   shared range   one pass: bin and count. A whole-row block writes its row of the output
//                  directly (no atomics, no memset); parts add with 64-bit atomics into
//                  zeroed counts (integer adds commute: exact and deterministic).
//   auto-range     two passes over the row in the same block: its finite min and max (a block
//                  reduction; min and max are exact, so order does not matter), then the
//                  histogram. The second pass finds much of the row still in L2. A row's
//                  range must be known to all its blocks, so auto-range keeps one block per row.
// Counters per block stay below 2^32: a row longer than 2^31 elements is always split, and
// auto-range rows that long are refused (use smem.histc on each).
// Its torch side (checks, the [slices, length] view, the output) is histogram_ops.cpp.
#include <c10/util/Exception.h>

#include <climits>
#include <type_traits>

#include "cuda/common.cuh"
#include "cuda/histogram/bin_map.cuh"
#include "cuda/histogram/launch.h"
#include "histc_bins.h"

namespace smem::cuda {
namespace {

constexpr int kRowThreads = 512;
constexpr int kVectorsInFlight = 2;
constexpr int64_t kMaxBlockElements = int64_t(1) << 31;  // 32-bit shared counters

// f(value) for every element of row[0, n) that belongs to thread t of nthreads: a scalar head up
// to the first 16-byte boundary (rows start anywhere), then 16-byte vectors, kVectorsInFlight
// loads issued before their use, then a scalar tail.
template <typename T, typename F>
__device__ inline void for_each_in_row(const T* row, int64_t n, int t, int nthreads, bool streaming,
                                       F&& f) {
  constexpr int V = vec_width<T>();
  using VecT = Vec<T, V>;
  const int64_t head = unaligned_head(row, n);
  if (t < head) f(row[t]);
  const int64_t nvec = (n - head) / V;
  const auto* rv = reinterpret_cast<const VecT*>(row + head);
  for_each_batched<kVectorsInFlight>(
      t, nvec, nthreads, [&](int64_t i) { return load_once(&rv[i], streaming); },
      [&](const VecT& a) {
#pragma unroll
        for (int k = 0; k < V; ++k) f(a.v[k]);
      });
  const int64_t tail = head + nvec * V + t;
  if (tail < n) f(row[tail]);
}

template <typename M>
__device__ inline void block_min_max(M& lo, M& hi) {
  __shared__ M warp_lo[kRowThreads / kWarpSize], warp_hi[kRowThreads / kWarpSize];
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
#pragma unroll
  for (int d = kWarpSize / 2; d > 0; d >>= 1) {
    lo = fmin(lo, __shfl_xor_sync(0xffffffffu, lo, d));
    hi = fmax(hi, __shfl_xor_sync(0xffffffffu, hi, d));
  }
  if (lane == 0) {
    warp_lo[warp] = lo;
    warp_hi[warp] = hi;
  }
  __syncthreads();
  lo = warp_lo[0];
  hi = warp_hi[0];
  for (int w = 1; w < static_cast<int>(blockDim.x / kWarpSize); ++w) {
    lo = fmin(lo, warp_lo[w]);
    hi = fmax(hi, warp_hi[w]);
  }
}

// Block b counts part b % split of row b / split into `copies` copies of `bins` counters.
template <typename T, bool kAutoRange>
__global__ void __launch_bounds__(kRowThreads)
row_histogram_kernel(const T* x, int64_t length, int split, int bins, int copies,
                     histc_math_t<T> lo, histc_math_t<T> hi, bool streaming, int64_t* counts) {
  using M = histc_math_t<T>;
  extern __shared__ unsigned row_counts[];
  const int64_t row = blockIdx.x / split, part = blockIdx.x % split;
  const int64_t per_part =
      ceil_div(ceil_div(length, split), 16) * 16;  // parts start 16-element aligned
  const int64_t begin = std::min(length, part * per_part), end = std::min(length, begin + per_part);
  const T* slice = x + row * length + begin;
  const int64_t n = end - begin;
  for (int i = threadIdx.x; i < copies * bins; i += blockDim.x) row_counts[i] = 0;
  if constexpr (kAutoRange) {  // split == 1: the block sees the whole row
    M l = INFINITY, h = -INFINITY;
    // Plain loads: the row should stay in L2 for the second pass, which reads it once more.
    for_each_in_row(slice, n, threadIdx.x, blockDim.x, /*streaming=*/false, [&](T t) {
      const M v = static_cast<M>(t);
      if (isfinite(v)) {
        l = fmin(l, v);
        h = fmax(h, v);
      }
    });
    block_min_max(l, h);
    if (l > h) l = h = M(0);  // no finite value
    histc_widen_empty_range(l, h);
    lo = l;
    hi = h;
  }
  __syncthreads();  // counters zeroed
  const histogram::BinMap<M> bin_of(histogram::Range<M>{lo, hi, nullptr}, bins);
  unsigned* mine = row_counts + (threadIdx.x / kWarpSize) % copies * bins;
  for_each_in_row(slice, n, threadIdx.x, blockDim.x, streaming, [&](T t) {
    const int b = bin_of(static_cast<M>(t));
    if (b >= 0) atomicAdd(&mine[b], 1u);
  });
  __syncthreads();
  int64_t* out = counts + row * bins;
  for (int b = threadIdx.x; b < bins; b += blockDim.x) {
    unsigned long long total = 0;
    for (int c = 0; c < copies; ++c) total += row_counts[c * bins + b];
    if (split == 1) out[b] = static_cast<int64_t>(total);
    else if (total) atomicAdd(reinterpret_cast<unsigned long long*>(&out[b]), total);
  }
}

// Rows whose bins don't fit shared memory: every element adds to its global 64-bit counter.
template <typename T>
__global__ void __launch_bounds__(kRowThreads)
row_histogram_global_kernel(const T* x, int64_t length, int64_t bins, histc_math_t<T> lo,
                            histc_math_t<T> hi, bool auto_range, int64_t* counts) {
  using M = histc_math_t<T>;
  const int64_t row = blockIdx.x;
  const T* slice = x + row * length;
  if (auto_range) {
    M l = INFINITY, h = -INFINITY;
    for (int64_t i = threadIdx.x; i < length; i += blockDim.x) {
      const M v = static_cast<M>(slice[i]);
      if (isfinite(v)) {
        l = fmin(l, v);
        h = fmax(h, v);
      }
    }
    block_min_max(l, h);
    if (l > h) l = h = M(0);
    histc_widen_empty_range(l, h);
    lo = l;
    hi = h;
  }
  auto* out = reinterpret_cast<unsigned long long*>(counts + row * bins);
  const HistcBins<M> bin_of(lo, hi, bins);
  for (int64_t i = threadIdx.x; i < length; i += blockDim.x) {
    const int64_t b = bin_of(static_cast<M>(slice[i]));
    if (b >= 0) atomicAdd(&out[b], 1ull);
  }
}

template <typename T>
void launch_rows(const T* x, int64_t rows, int64_t length, const HistcPlan& plan, int64_t* out) {
  using M = histc_math_t<T>;
  const DeviceInfo& info = current_device_info();
  const cudaStream_t stream = current_stream();
  const int64_t bins = plan.bins;
  const M lo = static_cast<M>(plan.lo), hi = static_cast<M>(plan.hi);
  const bool streaming = stream_once(rows * length * int64_t(sizeof(T)));
  auto zero_counts = [&] {
    SMEM_CUDA_CHECK(cudaMemsetAsync(out, 0, rows * bins * int64_t(sizeof(int64_t)), stream));
  };
  const int64_t budget = info.max_smem_per_block_optin - kStaticSmemReserve;
  // Short rows get smaller blocks: a 512-thread block would idle on a 1000-element row.
  const int threads = length <= 2048 ? 128 : length <= 8192 ? 256 : kRowThreads;
  const int warps = threads / kWarpSize;

  if (bins >= histogram::kMaxBinMapBins || bins * int64_t(sizeof(unsigned)) > budget) {
    TORCH_CHECK_NOT_IMPLEMENTED(rows <= INT_MAX, "smem.batched_histc: more than 2^31-1 slices");
    zero_counts();
    row_histogram_global_kernel<T><<<static_cast<unsigned>(rows), kRowThreads, 0, stream>>>(
        x, length, bins, lo, hi, plan.auto_range, out);
    SMEM_LAUNCH_CHECK();
    return;
  }
  // Copies of the counters: one per warp where they fit and the row is long enough to pay for
  // zeroing and flushing them (about 8 elements per counter), at least one.
  int copies = warps;
  while (copies > 1 &&
         (copies * bins * int64_t(sizeof(unsigned)) > budget || copies * bins * 8 > length))
    copies /= 2;
  const int64_t smem_bytes = copies * bins * int64_t(sizeof(unsigned));
  auto* kernel = plan.auto_range ? row_histogram_kernel<T, true> : row_histogram_kernel<T, false>;
  allow_dynamic_smem(kernel, smem_bytes);
  // Parts per row: fill the device's resident blocks when rows are few (shared range only).
  int64_t split = 1;
  if (!plan.auto_range) {
    const int64_t resident =
        int64_t(resident_blocks_per_sm(kernel, threads, smem_bytes)) * info.sm_count;
    const int64_t per_block = int64_t(threads) * 4 * vec_width<T>();  // >= 4 vectors a thread
    if (rows < resident) split = std::min(ceil_div(resident, rows), ceil_div(length, per_block));
    split = std::max(split, ceil_div(length, kMaxBlockElements));
  } else {
    TORCH_CHECK_NOT_IMPLEMENTED(length <= kMaxBlockElements,
                                "smem.batched_histc: auto-range "
                                "(min == max) on slices longer than 2^31 elements (got ",
                                length, "); use smem.histc on each slice");
  }
  TORCH_CHECK_NOT_IMPLEMENTED(rows * split <= INT_MAX,
                              "smem.batched_histc: more than 2^31-1 "
                              "blocks (",
                              rows, " slices)");
  if (split > 1) zero_counts();
  kernel<<<static_cast<unsigned>(rows * split), threads, smem_bytes, stream>>>(
      x, length, static_cast<int>(split), static_cast<int>(bins), copies, lo, hi, streaming, out);
  SMEM_LAUNCH_CHECK();
}

}  // namespace

void launch_batched_histc(c10::ScalarType dtype, const void* x, int64_t rows, int64_t length,
                          const HistcPlan& plan, int64_t* counts) {
  const bool supported = visit_histc_dtype(dtype, [&](auto e) {
    using T = decltype(e);
    launch_rows<T>(static_cast<const T*>(x), rows, length, plan, counts);
  });
  TORCH_CHECK_TYPE(supported, "smem.batched_histc: no CUDA histogram of dtype ", dtype);
}

}  // namespace smem::cuda
