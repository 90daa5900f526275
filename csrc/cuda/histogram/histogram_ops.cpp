// The torch side of the CUDA histograms: smem.histc, smem.batched_histc and
// smem._histogram_count. The host flows of histogram.h and histogram_edges.h (checks, plans,
// outputs) around the launchers of histogram/launch.h.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <cstdint>
#include <optional>

#include "cuda/histogram/launch.h"
#include "cuda/histogram/shape.h"
#include "cuda/ops.h"
#include "histogram.h"
#include "histogram_edges.h"

namespace smem::cuda {

at::Tensor histc_with(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                      const at::Scalar& max, std::optional<at::ScalarType> dtype,
                      const histogram::Request& request) {
  return histc_host(self, bins, min, max, dtype,
                    [&request](const at::Tensor& x, const HistcPlan& plan, at::Tensor& result) {
                      const c10::cuda::CUDAGuard guard(x.device());
                      const int64_t n = x.numel();
                      if (histc_fuses(plan.bins, n)) {
                        launch_histc(x.scalar_type(), x.const_data_ptr(), n, plan, request,
                                     result.mutable_data_ptr(), nullptr);
                        return;
                      }
                      // Unfused launches add into zeroed int64 counts: `result` itself, or a
                      // scratch tensor converted into it after the kernel.
                      at::Tensor counts = result.scalar_type() == at::kLong
                                              ? result
                                              : at::empty_like(result, at::kLong);
                      counts.zero_();
                      launch_histc(x.scalar_type(), x.const_data_ptr(), n, plan, request, nullptr,
                                   counts.mutable_data_ptr<int64_t>());
                      if (!counts.is_same(result)) result.copy_(counts);
                    });
}

namespace {

at::Tensor histc_cuda(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                      const at::Scalar& max, std::optional<at::ScalarType> dtype) {
  return histc_with(self, bins, min, max, dtype, histogram::Request{});
}

at::Tensor batched_histc_cuda(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                              const at::Scalar& max, int64_t dim,
                              std::optional<at::ScalarType> dtype) {
  const c10::cuda::CUDAGuard guard(self.device());
  return batched_histc_host(self, bins, min, max, dim, dtype,
                            [](const at::Tensor& x, const HistcPlan& plan, at::Tensor& counts) {
                              launch_batched_histc(x.scalar_type(), x.const_data_ptr(), x.size(0),
                                                   x.size(1), plan,
                                                   counts.mutable_data_ptr<int64_t>());
                            });
}

// A fresh 16-byte-aligned copy where `t` is a view that starts between 16-byte boundaries:
// the kernels read x and weight as 16-byte vectors of the same index.
at::Tensor aligned_contiguous(const at::Tensor& t) {
  at::Tensor c = t.contiguous();
  return reinterpret_cast<uintptr_t>(c.const_data_ptr()) % 16 == 0 ? c : c.clone();
}

at::Tensor histogram_count_cuda(const at::Tensor& self, const at::Tensor& bin_edges,
                                const std::optional<at::Tensor>& weight, bool uniform) {
  check_histogram_count(self, bin_edges, weight);
  at::Tensor out = histogram_count_output(self, bin_edges, weight.has_value());
  if (self.numel() == 0) return out.zero_();
  const c10::cuda::CUDAGuard guard(self.device());
  const at::Tensor x = aligned_contiguous(self), edges = bin_edges.contiguous();
  const at::Tensor w = weight ? aligned_contiguous(*weight) : at::Tensor();
  launch_histogram_count(x.scalar_type(), x.const_data_ptr(),
                         w.defined() ? w.const_data_ptr() : nullptr, x.numel(),
                         edges.const_data_ptr(), edges.numel(), uniform, out.mutable_data_ptr());
  return out;
}

}  // namespace
}  // namespace smem::cuda

TORCH_LIBRARY_IMPL(smem, CUDA, m) {
  m.impl("histc", &smem::cuda::histc_cuda);
  m.impl("batched_histc", &smem::cuda::batched_histc_cuda);
  m.impl("_histogram_count", &smem::cuda::histogram_count_cuda);
}
