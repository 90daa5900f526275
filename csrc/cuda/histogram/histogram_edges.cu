// CUDA _histogram_count: counts, or weighted sums, over explicit bin edges with torch.histogram's
// CPU rules (edge_bin, histogram_edges.h), bit for bit, and deterministic.
//
// Every block copies the edges into shared memory once, so each element's search (binary, or
// torch's linear interpolation plus a local search of at most 3 edges) probes shared memory.
// Blocks grid-stride over the input in 16-byte vectors, two vectors (and their weights) in
// flight per thread, one wave of resident blocks.
//   counts    32-bit counters in shared memory, a copy per warp (or per group of warps) so that
//             warps don't contend; flushed with 64-bit integer atomics. Integer adds commute,
//             so the counts are exact and independent of scheduling.
//   weighted  sums must be added in a fixed order. Int bins over large inputs and at most 256
//             bins: lane sums (edges_lane_sums.cuh; float32 lanes for float32 inputs, then
//             float64), faster there. Otherwise (tensor edges, whose longer search needs more
//             warps; small inputs; more bins) each warp owns a private float64 copy of the bins:
//             for each element slot, the lanes holding the same bin find each other
//             (__match_any_sync) and the lowest of them adds their weights in lane order, so a
//             bin gets one add per step from one writer. Both kernels add
//             each block's copies in a fixed order into its row of a [grid, bins] partials
//             buffer, and a second kernel adds the rows in a fixed order. The grid depends only on
//             the device and the size.
// Fallbacks: counts whose edges and counters don't fit shared memory search the edges in global
// memory and add to global 64-bit counters (exact, slower). Weighted sums need at least one
// warp copy of float64 bins plus the edges in shared memory (about 19K bins for fp32 on an
// H100, 13K on an A100): more bins raise NotImplementedError naming the limit.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>
#include <torch/library.h>

#include "cuda/common.cuh"
#include "edges_lane_sums.cuh"
#include "histogram_edges.h"

namespace smem::cuda {
namespace {

constexpr int kCountThreads = 512;
constexpr int kCountWarps = kCountThreads / kWarpSize;
constexpr int kVectorsInFlight = 2;

// The shared-memory layout of a block: the edges, then the warps' copies of the bins, then
// (weighted) each warp's staging slots for its lanes' weights.
template <typename T, bool kWeighted>
struct EdgeSmem : EdgesFirst<T> {
  using Counter = std::conditional_t<kWeighted, double, unsigned>;
  static constexpr int kSlots = kVectorsInFlight * vec_width<T>();  // elements per lane per step
  int copies, warps;

  __host__ __device__ int64_t copies_bytes() const {
    return int64_t(copies) * this->bins * sizeof(Counter);
  }
  __host__ __device__ int64_t bytes() const {
    return this->edges_bytes() + copies_bytes() +
           (kWeighted ? int64_t(warps) * kSlots * kWarpSize * sizeof(T) : 0);
  }
  __device__ Counter* copy_at(unsigned char* base, int copy) const {
    return this->template copies_at<Counter>(base) + int64_t(copy) * this->bins;
  }
  __device__ T* slots_at(unsigned char* base, int warp) const {
    return reinterpret_cast<T*>(base + this->edges_bytes() + copies_bytes()) +
           warp * kSlots * kWarpSize;
  }
};

// Adds the weights of a warp's lanes to their bins (bin < 0: none) in the warp's copy. `slot`
// holds every lane's weight (written before the caller's __syncwarp). The lowest lane of each
// group of equal bins sums the group's weights in lane order and makes the one add to the bin.
// The __syncwarp after it orders this step's adds before the next step's (another lane may be
// the next writer of the same bin).
template <typename T>
__device__ inline void add_weights_of_warp(double* copy, const T* slot, int bin, int lane) {
  const unsigned peers = __match_any_sync(0xffffffffu, bin);
  if (bin >= 0 && lane == __ffs(peers) - 1) {
    double sum = 0;
    for (unsigned m = peers; m != 0; m &= m - 1) sum += static_cast<double>(slot[__ffs(m) - 1]);
    copy[bin] += sum;
  }
  __syncwarp();
}

// One block's share: edges into shared memory, the grid-strided input binned into the
// block's copies, then the copies flushed (counts: atomics; weighted: the block's partials row).
// Loops are warp-uniform (a warp's lanes take vectors i0 + lane), so every lane reaches the
// warp collectives; lanes past the end carry bin -1. kUniform (int bins: torch's local search)
// is a template argument so that tensor edges' binary search is compiled without it.
template <typename T, bool kWeighted, bool kUniform>
__global__ void __launch_bounds__(kCountThreads)
count_over_edges_kernel(const T* x, const T* w, int64_t n, const T* edges_in,
                        EdgeSmem<T, kWeighted> layout, bool streaming, unsigned long long* counts,
                        double* partials) {
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr int V = vec_width<T>();
  constexpr int kSlots = EdgeSmem<T, kWeighted>::kSlots;
  using VecT = Vec<T, V>;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int E = layout.edges, bins = layout.bins;
  using Counter = typename EdgeSmem<T, kWeighted>::Counter;
  const T* edges = layout.template stage<Counter>(smem, edges_in, int64_t(layout.copies) * bins);
  const T left = edges[0], right = edges[E - 1];
  auto* mine = layout.copy_at(smem, warp % layout.copies);
  T* slots = kWeighted ? layout.slots_at(smem, warp) : nullptr;

  // Bins the kSlots elements of a lane (count <= kSlots of them valid).
  auto bin_step = [&](const T(&v)[kSlots], const T(&wt)[kSlots], int count) {
    if constexpr (kWeighted) {
#pragma unroll
      for (int k = 0; k < kSlots; ++k) slots[k * kWarpSize + lane] = wt[k];
      __syncwarp();
#pragma unroll
      for (int k = 0; k < kSlots; ++k) {
        const int bin = k < count ? edge_bin<T, int>(v[k], edges, E, left, right, kUniform) : -1;
        add_weights_of_warp(mine, slots + k * kWarpSize, bin, lane);
      }
    } else {
#pragma unroll
      for (int k = 0; k < kSlots; ++k) {
        const int bin = k < count ? edge_bin<T, int>(v[k], edges, E, left, right, kUniform) : -1;
        if (bin >= 0) atomicAdd(&mine[bin], 1u);
      }
    }
  };

  const int64_t nvec = n / V;
  const auto* xv = reinterpret_cast<const VecT*>(x);
  const auto* wv = reinterpret_cast<const VecT*>(w);
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  for (int64_t i0 = (int64_t(blockIdx.x) * blockDim.x) + warp * kWarpSize; i0 < nvec;
       i0 += kVectorsInFlight * stride) {
    T v[kSlots], wt[kSlots];
    int count = 0;
#pragma unroll
    for (int u = 0; u < kVectorsInFlight; ++u) {  // every load issued before any search
      const int64_t i = i0 + lane + u * stride;
      VecT a{}, b{};
      if (i < nvec) {
        a = load_once(&xv[i], streaming);
        if constexpr (kWeighted) b = load_once(&wv[i], streaming);
        count = (u + 1) * V;
      }
#pragma unroll
      for (int k = 0; k < V; ++k) {
        v[u * V + k] = a.v[k];
        wt[u * V + k] = kWeighted ? b.v[k] : T(0);
      }
    }
    bin_step(v, wt, count);
  }
  if (blockIdx.x == 0 && warp == 0) {  // the last n % V elements, one per lane
    T v[kSlots] = {}, wt[kSlots] = {};
    const int64_t i = nvec * V + lane;
    const bool valid = i < n;
    if (valid) {
      v[0] = x[i];
      if constexpr (kWeighted) wt[0] = w[i];
    }
    bin_step(v, wt, valid ? 1 : 0);
  }
  __syncthreads();

  // Flush: bins across threads, copies added in copy order.
  for (int b = threadIdx.x; b < bins; b += blockDim.x) {
    if constexpr (kWeighted) {
      double sum = 0;
      for (int c = 0; c < layout.copies; ++c) sum += layout.copy_at(smem, c)[b];
      partials[int64_t(blockIdx.x) * bins + b] = sum;
    } else {
      unsigned long long sum = 0;
      for (int c = 0; c < layout.copies; ++c) sum += layout.copy_at(smem, c)[b];
      if (sum) atomicAdd(&counts[b], sum);
    }
  }
}

// Counts whose edges and counters don't fit shared memory: the edges are searched where they
// are (global memory, through L1) and each element adds 1 to a 64-bit global counter.
template <typename T>
__global__ void __launch_bounds__(kCountThreads)
count_over_edges_global_kernel(const T* x, int64_t n, const T* edges, int64_t E, bool uniform,
                               unsigned long long* counts) {
  const T left = edges[0], right = edges[E - 1];
  for (int64_t i = int64_t(blockIdx.x) * blockDim.x + threadIdx.x; i < n;
       i += int64_t(gridDim.x) * blockDim.x) {
    const int64_t bin = edge_bin<T, int64_t>(x[i], edges, E, left, right, uniform);
    if (bin >= 0) atomicAdd(&counts[bin], 1ull);
  }
}

// out[b] = sum over blocks of partials[block][b], in a fixed order. A block takes 32 bins
// (threadIdx.x: each row read is one coalesced 256-byte segment) and splits the rows over
// threadIdx.y in a fixed interleave; the 16 part-sums are then added in y order.
constexpr int kSumRowsY = 16;
__global__ void __launch_bounds__(kWarpSize * kSumRowsY)
sum_partials_kernel(const double* partials, int rows, int bins, double* out) {
  __shared__ double part[kSumRowsY][kWarpSize + 1];  // +1: the y-order column reads don't conflict
  const int b = blockIdx.x * kWarpSize + threadIdx.x;
  double sum = 0;
  if (b < bins)
    for (int r = threadIdx.y; r < rows; r += kSumRowsY) sum += partials[int64_t(r) * bins + b];
  part[threadIdx.y][threadIdx.x] = sum;
  __syncthreads();
  if (threadIdx.y == 0 && b < bins) {
    double total = 0;
    for (int y = 0; y < kSumRowsY; ++y) total += part[y][threadIdx.x];
    out[b] = total;
  }
}

// The most warps (and copies) whose layout fits `budget` bytes; 0 when not even one fits.
template <typename T, bool kWeighted>
EdgeSmem<T, kWeighted> choose_layout(int64_t E, int64_t budget) {
  EdgeSmem<T, kWeighted> l{EdgesFirst<T>::of(E), 0, kCountWarps};
  if (E > (int64_t(1) << 24)) return l;  // far beyond any shared memory
  for (int copies = kCountWarps; copies >= 1; copies /= 2) {
    l.copies = copies;
    l.warps =
        kWeighted ? copies : kCountWarps;  // weighted: a copy per warp, fewer warps if need be
    if (l.bytes() <= budget) return l;
  }
  l.copies = 0;
  return l;
}

// Adds the [rows, bins] partials into out (sum_partials_kernel's fixed order).
void sum_partials(const at::Tensor& partials, at::Tensor& out, cudaStream_t stream) {
  const int64_t bins = partials.size(1);
  sum_partials_kernel<<<static_cast<unsigned>(ceil_div(bins, kWarpSize)),
                        dim3(kWarpSize, kSumRowsY), 0, stream>>>(
      partials.const_data_ptr<double>(), static_cast<int>(partials.size(0)), static_cast<int>(bins),
      out.mutable_data_ptr<double>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

// Weighted sums through weigh_over_edges_kernel; false (nothing launched) where not even one
// warp's copy fits shared memory.
template <typename T>
bool launch_lane_sums(const at::Tensor& x, const at::Tensor& w, const at::Tensor& edges,
                      bool uniform, int64_t budget, at::Tensor& out) {
  const auto layout = LaneSumsSmem<T>::choose(edges.numel(), budget);
  if (layout.warps < 1) return false;
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const int64_t n = x.numel();
  auto* kernel = weigh_over_edges_kernel<T>;
  const int threads = layout.warps * kWarpSize;
  allow_dynamic_smem(kernel, layout.bytes());
  const unsigned grid = resident_grid(kernel, threads, layout.bytes(), n,
                                      int64_t(threads) * kLaneSumsInFlight * vec_width<T>());
  at::Tensor partials = at::empty({int64_t(grid), layout.bins}, out.options());
  kernel<<<grid, threads, layout.bytes(), stream>>>(
      x.const_data_ptr<T>(), w.const_data_ptr<T>(), n, edges.const_data_ptr<T>(), layout, uniform,
      stream_once(2 * n * int64_t(sizeof(T))), partials.mutable_data_ptr<double>());
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  sum_partials(partials, out, stream);
  return true;
}

template <typename T, bool kWeighted>
void launch_count(const at::Tensor& x, const at::Tensor& w, const at::Tensor& edges, bool uniform,
                  at::Tensor& out) {
  const DeviceInfo& info = current_device_info();
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const int64_t n = x.numel(), E = edges.numel();
  const int64_t budget = info.max_smem_per_block_optin - kStaticSmemReserve;
  if constexpr (kWeighted) {
    if (uniform && n >= histogram::kLaneSumsMinElements && E - 1 <= histogram::kLaneSumsMaxBins &&
        launch_lane_sums<T>(x, w, edges, uniform, budget, out))
      return;
  }
  const auto layout = choose_layout<T, kWeighted>(E, budget);
  const bool streaming = stream_once(n * int64_t(sizeof(T)) * (kWeighted ? 2 : 1));
  if (layout.copies == 0) {
    TORCH_CHECK_NOT_IMPLEMENTED(!kWeighted, "smem._histogram_count: weighted sums over ", E - 1,
                                " bins need more shared memory than this device has per block (",
                                budget, " bytes for the edges and one float64 copy of the bins)");
    out.zero_();
    auto* kernel = count_over_edges_global_kernel<T>;
    kernel<<<resident_grid(kernel, kCountThreads, 0, n, kCountThreads * 4), kCountThreads, 0,
             stream>>>(x.const_data_ptr<T>(), n, edges.const_data_ptr<T>(), E, uniform,
                       reinterpret_cast<unsigned long long*>(out.mutable_data_ptr<int64_t>()));
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    return;
  }
  auto* kernel = uniform ? count_over_edges_kernel<T, kWeighted, true>
                         : count_over_edges_kernel<T, kWeighted, false>;
  const int threads = layout.warps * kWarpSize;
  allow_dynamic_smem(kernel, layout.bytes());
  // Counts: 32-bit shared counters, so each block's share stays below 2^32 elements.
  const unsigned grid = std::max<unsigned>(
      resident_grid(kernel, threads, layout.bytes(), n, int64_t(threads) * 2 * vec_width<T>()),
      static_cast<unsigned>(ceil_div(n, int64_t(1) << 31)));
  if constexpr (kWeighted) {
    at::Tensor partials = at::empty({int64_t(grid), E - 1}, out.options());
    kernel<<<grid, threads, layout.bytes(), stream>>>(
        x.const_data_ptr<T>(), w.const_data_ptr<T>(), n, edges.const_data_ptr<T>(), layout,
        streaming, nullptr, partials.mutable_data_ptr<double>());
    C10_CUDA_KERNEL_LAUNCH_CHECK();
    sum_partials(partials, out, stream);
  } else {
    out.zero_();
    kernel<<<grid, threads, layout.bytes(), stream>>>(
        x.const_data_ptr<T>(), nullptr, n, edges.const_data_ptr<T>(), layout, streaming,
        reinterpret_cast<unsigned long long*>(out.mutable_data_ptr<int64_t>()), nullptr);
    C10_CUDA_KERNEL_LAUNCH_CHECK();
  }
}

// A fresh 16-byte-aligned copy where `t` is a view that starts between 16-byte boundaries:
// the kernel reads x and weight as 16-byte vectors of the same index.
at::Tensor aligned_contiguous(const at::Tensor& t) {
  at::Tensor c = t.contiguous();
  return is_aligned(c.const_data_ptr(), 16) ? c : c.clone();
}

at::Tensor histogram_count_cuda(const at::Tensor& self, const at::Tensor& bin_edges,
                                const std::optional<at::Tensor>& weight, bool uniform) {
  check_histogram_count(self, bin_edges, weight);
  at::Tensor out = histogram_count_output(self, bin_edges, weight.has_value());
  if (self.numel() == 0) return out.zero_();
  const c10::cuda::CUDAGuard guard(self.device());
  const at::Tensor x = aligned_contiguous(self), edges = bin_edges.contiguous();
  const at::Tensor w = weight ? aligned_contiguous(*weight) : at::Tensor();
  AT_DISPATCH_FLOATING_TYPES(x.scalar_type(), "smem_histogram_count_cuda", [&] {
    if (w.defined()) launch_count<scalar_t, true>(x, w, edges, uniform, out);
    else launch_count<scalar_t, false>(x, w, edges, uniform, out);
  });
  return out;
}

}  // namespace
}  // namespace smem::cuda

TORCH_LIBRARY_IMPL(smem, CUDA, m) { m.impl("_histogram_count", &smem::cuda::histogram_count_cuda); }
