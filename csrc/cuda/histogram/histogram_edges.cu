// CUDA _histogram_count: counts, or weighted sums, over explicit bin edges with torch.histogram's
// CPU rules (edge_bin, edge_bins.h), bit for bit, and deterministic.
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
// Its torch side (checks, aligned inputs, the output) is histogram_ops.cpp.
#include <c10/util/Exception.h>

#include "cuda/common.cuh"
#include "cuda/histogram/launch.h"
#include "edge_bins.h"
#include "edges_lane_sums.cuh"

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
void sum_partials(const double* partials, int64_t rows, int64_t bins, double* out,
                  cudaStream_t stream) {
  sum_partials_kernel<<<static_cast<unsigned>(ceil_div(bins, kWarpSize)),
                        dim3(kWarpSize, kSumRowsY), 0, stream>>>(partials, static_cast<int>(rows),
                                                                 static_cast<int>(bins), out);
  SMEM_LAUNCH_CHECK();
}

// [rows, bins] float64 partials, held while the Scratch lives.
Scratch partials_scratch(int64_t rows, int64_t bins) {
  return device_scratch(rows * bins * int64_t(sizeof(double)));
}

// The n elements of x (and w) and the E edges, as the kernels take them.
template <typename T>
struct EdgeInputs {
  const T* x;
  const T* w;  // null: counts
  int64_t n;
  const T* edges;
  int64_t E;
  bool uniform;
};

// Weighted sums through weigh_over_edges_kernel; false (nothing launched) where not even one
// warp's copy fits shared memory.
template <typename T>
bool launch_lane_sums(const EdgeInputs<T>& in, int64_t budget, double* out) {
  const auto layout = LaneSumsSmem<T>::choose(in.E, budget);
  if (layout.warps < 1) return false;
  const cudaStream_t stream = current_stream();
  auto* kernel = weigh_over_edges_kernel<T>;
  const int threads = layout.warps * kWarpSize;
  allow_dynamic_smem(kernel, layout.bytes());
  const unsigned grid = resident_grid(kernel, threads, layout.bytes(), in.n,
                                      int64_t(threads) * kLaneSumsInFlight * vec_width<T>());
  const Scratch partials = partials_scratch(grid, layout.bins);
  kernel<<<grid, threads, layout.bytes(), stream>>>(in.x, in.w, in.n, in.edges, layout, in.uniform,
                                                    stream_once(2 * in.n * int64_t(sizeof(T))),
                                                    static_cast<double*>(partials.data));
  SMEM_LAUNCH_CHECK();
  sum_partials(static_cast<const double*>(partials.data), grid, layout.bins, out, stream);
  return true;
}

template <typename T, bool kWeighted>
void launch_count(const EdgeInputs<T>& in, void* out) {
  const DeviceInfo& info = current_device_info();
  const cudaStream_t stream = current_stream();
  const int64_t n = in.n, E = in.E;
  const int64_t budget = info.max_smem_per_block_optin - kStaticSmemReserve;
  auto* sums = static_cast<double*>(out);
  auto* counts = static_cast<unsigned long long*>(out);
  auto zero_counts = [&] {
    SMEM_CUDA_CHECK(cudaMemsetAsync(counts, 0, (E - 1) * int64_t(sizeof(int64_t)), stream));
  };
  if constexpr (kWeighted) {
    if (in.uniform && n >= histogram::kLaneSumsMinElements &&
        E - 1 <= histogram::kLaneSumsMaxBins && launch_lane_sums<T>(in, budget, sums))
      return;
  }
  const auto layout = choose_layout<T, kWeighted>(E, budget);
  const bool streaming = stream_once(n * int64_t(sizeof(T)) * (kWeighted ? 2 : 1));
  if (layout.copies == 0) {
    TORCH_CHECK_NOT_IMPLEMENTED(!kWeighted, "smem._histogram_count: weighted sums over ", E - 1,
                                " bins need more shared memory than this device has per block (",
                                budget, " bytes for the edges and one float64 copy of the bins)");
    zero_counts();
    auto* kernel = count_over_edges_global_kernel<T>;
    kernel<<<resident_grid(kernel, kCountThreads, 0, n, kCountThreads * 4), kCountThreads, 0,
             stream>>>(in.x, n, in.edges, E, in.uniform, counts);
    SMEM_LAUNCH_CHECK();
    return;
  }
  auto* kernel = in.uniform ? count_over_edges_kernel<T, kWeighted, true>
                            : count_over_edges_kernel<T, kWeighted, false>;
  const int threads = layout.warps * kWarpSize;
  allow_dynamic_smem(kernel, layout.bytes());
  // Counts: 32-bit shared counters, so each block's share stays below 2^32 elements.
  const unsigned grid = std::max<unsigned>(
      resident_grid(kernel, threads, layout.bytes(), n, int64_t(threads) * 2 * vec_width<T>()),
      static_cast<unsigned>(ceil_div(n, int64_t(1) << 31)));
  if constexpr (kWeighted) {
    const Scratch partials = partials_scratch(grid, E - 1);
    kernel<<<grid, threads, layout.bytes(), stream>>>(in.x, in.w, n, in.edges, layout, streaming,
                                                      nullptr, static_cast<double*>(partials.data));
    SMEM_LAUNCH_CHECK();
    sum_partials(static_cast<const double*>(partials.data), grid, E - 1, sums, stream);
  } else {
    zero_counts();
    kernel<<<grid, threads, layout.bytes(), stream>>>(in.x, nullptr, n, in.edges, layout, streaming,
                                                      counts, nullptr);
    SMEM_LAUNCH_CHECK();
  }
}

template <typename T>
void launch_typed(const void* x, const void* weight, int64_t n, const void* edges, int64_t E,
                  bool uniform, void* out) {
  const EdgeInputs<T> in{static_cast<const T*>(x),
                         static_cast<const T*>(weight),
                         n,
                         static_cast<const T*>(edges),
                         E,
                         uniform};
  if (weight != nullptr) launch_count<T, true>(in, out);
  else launch_count<T, false>(in, out);
}

}  // namespace

void launch_histogram_count(c10::ScalarType dtype, const void* x, const void* weight, int64_t n,
                            const void* edges, int64_t E, bool uniform, void* out) {
  switch (dtype) {
    case c10::ScalarType::Float: return launch_typed<float>(x, weight, n, edges, E, uniform, out);
    case c10::ScalarType::Double: return launch_typed<double>(x, weight, n, edges, E, uniform, out);
    default: break;
  }
  TORCH_CHECK_TYPE(false, "smem._histogram_count: no CUDA histogram of dtype ", dtype);
}

}  // namespace smem::cuda
