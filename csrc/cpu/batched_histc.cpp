// CPU batched_histc: slices are independent, so threads take whole slices (a slice's count
// is a serial loop with a slice-private histogram: exact, and no merging). The auto-range of
// a slice is its finite min and max, as histc's.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "histogram_edges.h"

namespace smem::cpu {
namespace {

template <typename T>
void batched_histc_kernel(const T* x, int64_t slices, int64_t length, const HistcPlan& plan,
                          int64_t* counts) {
  using M = histc_math_t<T>;
  const int64_t bins = plan.bins;
  const int64_t grain = std::max<int64_t>(1, (int64_t(1) << 15) / std::max<int64_t>(length, 1));
  at::parallel_for(0, slices, grain, [&](int64_t begin, int64_t end) {
    for (int64_t s = begin; s < end; ++s) {
      const T* row = x + s * length;
      M lo = static_cast<M>(plan.lo), hi = static_cast<M>(plan.hi);
      if (plan.auto_range) {
        lo = std::numeric_limits<M>::infinity();
        hi = -lo;
        for (int64_t i = 0; i < length; ++i) {
          const M v = static_cast<M>(row[i]);
          if (std::isfinite(v)) {
            lo = std::min(lo, v);
            hi = std::max(hi, v);
          }
        }
        if (lo > hi) lo = hi = M(0);  // no finite value
      }
      histc_widen_empty_range(lo, hi);
      int64_t* h = counts + s * bins;
      std::fill(h, h + bins, int64_t(0));
      const HistcBins<M> bin_of(lo, hi, bins);
      for (int64_t i = 0; i < length; ++i) {
        const int64_t b = bin_of(static_cast<M>(row[i]));
        if (b >= 0) ++h[b];
      }
    }
  });
}

at::Tensor batched_histc_cpu(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                             const at::Scalar& max, int64_t dim,
                             std::optional<at::ScalarType> dtype) {
  return batched_histc_host(
      self, bins, min, max, dim, dtype,
      [](const at::Tensor& x, const HistcPlan& plan, at::Tensor& counts) {
        AT_DISPATCH_ALL_TYPES_AND2(
            at::kHalf, at::kBFloat16, x.scalar_type(), "smem_batched_histc_cpu", [&] {
              batched_histc_kernel<scalar_t>(x.const_data_ptr<scalar_t>(), x.size(0), x.size(1),
                                             plan, counts.mutable_data_ptr<int64_t>());
            });
      });
}

}  // namespace
}  // namespace smem::cpu

TORCH_LIBRARY_IMPL(smem, CPU, m) { m.impl("batched_histc", &smem::cpu::batched_histc_cpu); }
