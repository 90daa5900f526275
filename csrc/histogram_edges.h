// Host checks and plans shared by the CPU and CUDA backends of
//   _histogram_count  (counts over explicit bin edges, torch.histogram's rules) and
//   batched_histc     (one torch.histc per slice along a dim).
// The bin rules themselves: edge_bins.h and histc_bins.h.
#pragma once

#include <ATen/ATen.h>
#include <ATen/WrapDimUtils.h>
#include <c10/core/Scalar.h>

#include "edge_bins.h"
#include "histogram.h"
#include "smem.h"

#include <cmath>
#include <optional>
#include <vector>

namespace smem {

// ---------------------------------------------------------------- _histogram_count

inline void check_histogram_count(const at::Tensor& self, const at::Tensor& bin_edges,
                                  const std::optional<at::Tensor>& weight) {
  const char* op = "smem._histogram_count: ";
  TORCH_CHECK_TYPE(self.scalar_type() == at::kFloat || self.scalar_type() == at::kDouble, op,
                   "input dtype ", dtype_name(self.scalar_type()),
                   " is not supported (expected torch.float32 or torch.float64)");
  TORCH_CHECK_VALUE(bin_edges.device() == self.device(), op,
                    "expected bin_edges on the device of self (", self.device(), "), but got ",
                    bin_edges.device());
  TORCH_CHECK_VALUE(bin_edges.dim() == 1, op, "bin_edges must be 1-D, but got ", bin_edges.dim(),
                    "-D");
  TORCH_CHECK_VALUE(bin_edges.numel() >= 2, op, "bin_edges must hold at least 2 edges, but got ",
                    bin_edges.numel());
  TORCH_CHECK_TYPE(bin_edges.scalar_type() == self.scalar_type(), op,
                   "expected bin_edges of dtype ", dtype_name(self.scalar_type()), ", but got ",
                   dtype_name(bin_edges.scalar_type()));
  if (!weight) return;
  TORCH_CHECK_VALUE(weight->device() == self.device(), op,
                    "expected weight on the device of self (", self.device(), "), but got ",
                    weight->device());
  TORCH_CHECK_VALUE(weight->sizes() == self.sizes(), op, "expected weight of shape ", self.sizes(),
                    " (the shape of self), but got ", weight->sizes());
  TORCH_CHECK_TYPE(weight->scalar_type() == self.scalar_type(), op, "expected weight of dtype ",
                   dtype_name(self.scalar_type()), ", but got ", dtype_name(weight->scalar_type()));
}

// The output of _histogram_count: int64 counts, or float64 weighted sums.
inline at::Tensor histogram_count_output(const at::Tensor& self, const at::Tensor& bin_edges,
                                         bool weighted) {
  return at::empty({bin_edges.numel() - 1},
                   self.options().dtype(weighted ? at::kDouble : at::kLong));
}

// ---------------------------------------------------------------- batched_histc

// plan_histc's checks and plan (histogram.h) with batched_histc's name in the messages, after
// the dim's. The checks are the same, in the same order, as the fake kernel's.
struct BatchedHistcPlan {
  HistcPlan histc;
  int64_t dim = 0;  // wrapped
  std::vector<int64_t> out_shape;
};

inline BatchedHistcPlan plan_batched_histc(const at::Tensor& self, int64_t bins,
                                           const at::Scalar& min, const at::Scalar& max,
                                           int64_t dim, std::optional<at::ScalarType> dtype) {
  const char* op = "smem.batched_histc: ";
  TORCH_CHECK_VALUE(self.dim() > 0, op,
                    "expected a tensor with at least one dimension, but got "
                    "a 0-dim tensor");
  const int64_t ndim = self.dim();
  TORCH_CHECK_INDEX(dim >= -ndim && dim < ndim, op, "dim ", dim,
                    " is out of range for a tensor of dimension ", ndim);
  BatchedHistcPlan plan;
  plan.histc = plan_histc(self, bins, min, max, dtype, op);
  plan.dim = dim < 0 ? dim + ndim : dim;
  for (int64_t d = 0; d < ndim; ++d)
    if (d != plan.dim) plan.out_shape.push_back(self.size(d));
  plan.out_shape.push_back(bins);
  return plan;
}

// The host flow of batched_histc on every backend: checks, the input as [slices, length]
// (contiguous, the dim last: a copy unless it already is), exact int64 counts
// [slices, bins] that launch(x2d, plan, counts) fills when there is any input (writing
// every bin), then the requested dtype and shape.
template <typename Launch>
at::Tensor batched_histc_host(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                              const at::Scalar& max, int64_t dim,
                              std::optional<at::ScalarType> dtype, Launch&& launch) {
  const BatchedHistcPlan plan = plan_batched_histc(self, bins, min, max, dim, dtype);
  const int64_t length = self.size(plan.dim);
  int64_t rows = 1;  // slices: the product of the other dims
  for (size_t d = 0; d + 1 < plan.out_shape.size(); ++d) rows *= plan.out_shape[d];
  at::Tensor counts = at::empty({rows, bins}, self.options().dtype(at::kLong));
  if (self.numel() > 0) {
    const at::Tensor x = self.movedim(plan.dim, -1).contiguous().view({rows, length});
    launch(x, plan.histc, counts);
  } else {
    counts.zero_();
  }
  at::Tensor out = counts.view(plan.out_shape);
  return plan.histc.out_dtype == at::kLong ? out : out.to(plan.histc.out_dtype);
}

}  // namespace smem
