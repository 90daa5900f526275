// smem.histc's CUDA launcher: exact integer counts, written in the requested dtype. The
// optional auto-range kernel, then one histogram kernel in the shape choose_shape picks:
//   histogram/shape.h     the decision: counter layout, copies, shared memory
//   histogram/kernels.cuh the kernels, one per layout (counters.cuh), binning with bin_map.cuh
//   histogram/range.cuh   auto-range (min == max) on the device: no host sync
//   tuning/histogram.h    every knob
// Its torch side (checks, the output, registration) is histogram_ops.cpp; the variants of the
// technique ladder (torch.ops.smem._histc_variant) launch here too, with their own Request:
// ladder/histc_variants.cpp.
#include <c10/util/Exception.h>

#include <climits>
#include <limits>
#include <type_traits>

#include "cuda/build_info.h"
#include "cuda/common.cuh"
#include "cuda/histogram/kernels.cuh"
#include "cuda/histogram/launch.h"
#include "cuda/histogram/range.cuh"
#include "cuda/histogram/shape.h"
#include "cuda/ladder/histogram_cluster.cuh"
#include "histc_bins.h"

namespace smem::cuda {
namespace {
using namespace histogram;

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
  const int resident = once_per_kernel(
      reinterpret_cast<const void*>(kernel), smem_bytes, static_cast<int>(cluster), [&] {
        allow_dynamic_smem(kernel, smem_bytes);
        if (cluster > 8)
          SMEM_CUDA_CHECK(
              cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
        int clusters = 0;
        SMEM_CUDA_CHECK(cudaOccupancyMaxActiveClusters(&clusters, kernel, &config));
        return clusters;
      });
  const int64_t clusters = std::max(std::min<int64_t>(std::max(resident, 1), useful), at_least);
  config.gridDim = dim3(static_cast<unsigned>(clusters * cluster));
  SMEM_CUDA_CHECK(cudaLaunchKernelEx(&config, kernel, args...));
}

// A grid-striding kernel with `smem_bytes` of dynamic shared memory, launched with as many
// blocks as can be resident at once (at most `most_per_sm` per SM), in groups of
// 2^log2_group blocks that stride together (block r of a group is blockIdx.x % 2^log2_group),
// and at least one group per 2^31 elements (32-bit counters).
template <int kThreads, typename Kernel>
unsigned resident_blocks(Kernel* kernel, int64_t n, int64_t per_thread, int64_t smem_bytes,
                         int most_per_sm, int log2_group) {
  allow_dynamic_smem(kernel, smem_bytes);
  const int64_t groups = std::max<int64_t>(
      resident_grid(kernel, kThreads, smem_bytes, n, kThreads * per_thread, most_per_sm) >>
          log2_group,
      ceil_div(n, int64_t(1) << 31));
  return static_cast<unsigned>(groups << log2_group);
}
template <int kThreads, typename Kernel, typename... Args>
void launch_resident(Kernel* kernel, int64_t n, int64_t per_thread, int64_t smem_bytes,
                     int most_per_sm, int log2_group, cudaStream_t stream, Args... args) {
  kernel<<<resident_blocks<kThreads>(kernel, n, per_thread, smem_bytes, most_per_sm, log2_group),
           kThreads, smem_bytes, stream>>>(args...);
  SMEM_LAUNCH_CHECK();
}

// The packed kernel: one block's counters per SM, or groups of 2^log2_split blocks.
// PackedCounts are exact at any count, so no bound on a block's elements. Where
// packed_rows_pay (shape.h) and the counts are not fused, the blocks store their counters as
// rows of the shape's words, which packed_rows_sum_kernel adds up.
template <int kBits, int kLog2Split, typename T, typename M>
void launch_packed_as(const T* data, int64_t n, int64_t per_thread, bool streaming, int bins,
                      const HistogramShape& shape, Range<M> range, Counts out,
                      cudaStream_t stream) {
  auto* kernel = histogram_packed_kernel<kBits, kLog2Split, T, M>;
  const unsigned blocks =
      resident_blocks<kPackedThreads>(kernel, n, per_thread, shape.smem_bytes, INT_MAX, kLog2Split);
  const int64_t row_words = shape.smem_bytes / int64_t(sizeof(unsigned));  // rank 0's, the most
  Scratch row_memory;
  if (out.out == nullptr && packed_rows_pay(n, blocks, bins, kLog2Split))
    row_memory = device_scratch(int64_t(blocks) * row_words * int64_t(sizeof(unsigned)));
  auto* rows = static_cast<unsigned*>(row_memory.data);
  kernel<<<blocks, kPackedThreads, shape.smem_bytes, stream>>>(data, n, streaming, bins, range, out,
                                                               rows, row_words);
  SMEM_LAUNCH_CHECK();
  if (rows == nullptr) return;
  // a field's total over the groups' rows fits the row sum's 32-bit totals
  TORCH_INTERNAL_ASSERT((blocks >> kLog2Split) < (1u << (32 - kBits)));
  const dim3 grid(static_cast<unsigned>(ceil_div(row_words, int64_t(kRowSumWords))),
                  1u << kLog2Split);
  packed_rows_sum_kernel<kBits, kLog2Split><<<grid, kRowSumWords * kRowSumSlices, 0, stream>>>(
      rows, row_words, static_cast<int>(blocks >> kLog2Split), bins, out.add);
  SMEM_LAUNCH_CHECK();
}

template <typename T, typename M>
void launch_packed(const T* data, int64_t n, int64_t per_thread, bool streaming, int bins,
                   const HistogramShape& shape, Range<M> range, Counts out, cudaStream_t stream) {
  static_assert(kMaxSplitLog2 == 3, "one packed kernel per group size below");
  const int log2_split = shape.log2_split;
  TORCH_INTERNAL_ASSERT((shape.counter_bits == kNarrowBits || log2_split == 0) &&
                        log2_split <= kMaxSplitLog2);
  auto* launch = log2_split == 0
                     ? (shape.counter_bits == 16 ? launch_packed_as<16, 0, T, M>
                                                 : launch_packed_as<kNarrowBits, 0, T, M>)
                 : log2_split == 1 ? launch_packed_as<kNarrowBits, 1, T, M>
                 : log2_split == 2 ? launch_packed_as<kNarrowBits, 2, T, M>
                                   : launch_packed_as<kNarrowBits, 3, T, M>;
  launch(data, n, per_thread, streaming, bins, shape, range, out, stream);
}

template <typename T, typename M, bool kVector, bool kAggregate>
void launch_counts(const T* data, int64_t n, bool streaming, int64_t bins,
                   const HistogramShape& shape, Range<M> range, Counts out, cudaStream_t stream) {
  constexpr int64_t kPerThread = kVector ? 2 * vec_width<T>() : 4;
  using Where = HistogramShape::Where;
  TORCH_INTERNAL_ASSERT(shape.where == Where::kGlobal || bins < kMaxBinMapBins);
  const int small_bins = static_cast<int>(std::min<int64_t>(bins, INT_MAX));  // shared memory
  switch (shape.where) {
    case Where::kShared: {
      auto* kernel = histogram_shared_kernel<T, M, kVector, 2>;
      if constexpr (kVector)  // element by element, a thread's loads are independent anyway
        if (shape.loads_in_flight == kSmallLoadsInFlight)
          kernel = histogram_shared_kernel<T, M, kVector, kSmallLoadsInFlight>;
      launch_resident<kHistThreads>(kernel, n, kPerThread, shape.smem_bytes, shape.most_per_sm, 0,
                                    stream, data, n, streaming, small_bins, shape.subs, range, out);
      break;
    }
    case Where::kLut16:  // choose_shape takes it for 2-byte input only
      if constexpr (sizeof(T) == 2)
        launch_resident<kPackedThreads>(histogram_lut16_kernel<T, M>, n, kPerThread,
                                        shape.smem_bytes, INT_MAX, 0, stream, data, n, streaming,
                                        small_bins, shape.subs, shape.per_lane, range, out);
      else
        TORCH_INTERNAL_ASSERT(false, "smem.histc: the lut16 shape needs 2-byte input, got ",
                              sizeof(T), "-byte");
      break;
    case Where::kPacked:
      launch_packed<T, M>(data, n, kPerThread, streaming, small_bins, shape, range, out, stream);
      break;
    case Where::kCluster: {  // 32-bit counters: under 2^32 elements per cluster
      const unsigned cluster = 1u << shape.log2_cluster;
      launch_clusters<kHistThreads>(
          histogram_cluster_kernel<T, M>, cluster, shape.smem_bytes,
          ceil_div(n, int64_t(cluster) * kHistThreads * 2 * vec_width<T>()),
          ceil_div(n, int64_t(1) << 31), stream, data, n, streaming, small_bins, shape.log2_cluster,
          range, out);
      break;
    }
    case Where::kGlobal: {
      auto* kernel = histogram_global_kernel<T, M, kVector, kAggregate>;
      kernel<<<resident_grid(kernel, kHistThreads, 0, n, kHistThreads * kPerThread,
                             kGlobalBlocksPerSm),
               kHistThreads, 0, stream>>>(data, n, streaming, bins, range, out);
      SMEM_LAUNCH_CHECK();
      break;
    }
  }
}

// The output's element type as a fused launch writes it.
CountType count_type(c10::ScalarType t) {
  switch (t) {
    case c10::ScalarType::Long: return CountType::kInt64;
    case c10::ScalarType::Int: return CountType::kInt32;
    case c10::ScalarType::Short: return CountType::kInt16;
    case c10::ScalarType::Char: return CountType::kInt8;
    case c10::ScalarType::Byte: return CountType::kUInt8;
    case c10::ScalarType::Double: return CountType::kFloat64;
    case c10::ScalarType::Float: return CountType::kFloat32;
    case c10::ScalarType::Half: return CountType::kFloat16;
    case c10::ScalarType::BFloat16: return CountType::kBFloat16;
    default: break;
  }
  TORCH_INTERNAL_ASSERT(false, "smem.histc: no count type for ", t);
}

template <typename T>
void launch_histc_as(const T* data, int64_t n, const HistcPlan& plan, const Request& request,
                     void* result, int64_t* counts) {
  using M = histc_math_t<T>;
  const cudaStream_t stream = current_stream();
  int device = 0;
  SMEM_CUDA_CHECK(cudaGetDevice(&device));
  // Decided before anything is launched: choose_shape may refuse the request.
  TORCH_CHECK(request.variant != Variant::kCluster || cluster_supported(device),
              "smem._histc_variant: the cluster variant needs an sm_90 device and build");
  const HistogramShape shape = choose_shape(plan.bins, n, sizeof(T), request, device_info(device));
  const bool streaming = stream_once(n * int64_t(sizeof(T)));
  // counters[0]: range_kernel's last block; counters[1]: the histogram kernel's.
  const bool fused = histc_fuses(plan.bins, n);
  TORCH_INTERNAL_ASSERT(fused == (counts == nullptr), "smem.histc: fused launches take no counts");
  Scratch fresh_counters, fresh_workspace;
  unsigned* done = plan.auto_range || fused ? zeroed_counters(2, fresh_counters) : nullptr;
  // Fused: the kernel writes `result` in its dtype (Counts). Otherwise the blocks add into
  // the zeroed int64 `counts`.
  Counts out{};
  if (fused)
    out = Counts{static_cast<unsigned long long*>(zeroed_workspace(
                     plan.bins * int64_t(sizeof(int64_t)), ZeroedUse::kHistogram, fresh_workspace)),
                 result, count_type(plan.out_dtype), done + 1};
  else out.add = reinterpret_cast<unsigned long long*>(counts);
  Range<M> range{static_cast<M>(plan.lo), static_cast<M>(plan.hi), nullptr};
  if constexpr (std::is_integral_v<T>)
    range.ints = IntBins::for_range(plan.lo, plan.hi, plan.bins, std::numeric_limits<T>::min(),
                                    std::numeric_limits<T>::max());
  Scratch device_range;  // [min, max], read by the histogram kernel
  if (plan.auto_range) {
    const unsigned grid = resident_grid(range_kernel<T, M>, kRangeThreads, 0, n,
                                        kRangeThreads * kRangeElementsPerThread);
    const Scratch block_range = device_scratch(2 * int64_t(grid) * int64_t(sizeof(M)));
    device_range = device_scratch(2 * int64_t(sizeof(M)));
    range_kernel<T, M><<<grid, kRangeThreads, 0, stream>>>(data, n, streaming,
                                                           static_cast<M*>(block_range.data), done,
                                                           static_cast<M*>(device_range.data));
    SMEM_LAUNCH_CHECK();
    range.device = static_cast<const M*>(device_range.data);
  }
  // The seeds' variants bin element by element; the others move 16-byte vectors. Global
  // counters aggregate a warp's equal bins only in the final variant.
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

}  // namespace

// Fused needs counts below 2^kTicketShift (Counts::add_totals): far more elements than a
// device holds.
bool histc_fuses(int64_t bins, int64_t n) {
  return bins <= histogram::kFusedBins && n < (int64_t(1) << histogram::Counts::kTicketShift);
}

void launch_histc(c10::ScalarType dtype, const void* data, int64_t n, const HistcPlan& plan,
                  const histogram::Request& request, void* result, int64_t* counts) {
  const bool supported = visit_histc_dtype(dtype, [&](auto e) {
    using T = decltype(e);
    launch_histc_as<T>(static_cast<const T*>(data), n, plan, request, result, counts);
  });
  TORCH_CHECK_TYPE(supported, "smem.histc: no CUDA histogram of dtype ", dtype);
}

}  // namespace smem::cuda
