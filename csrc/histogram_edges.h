// Host checks and the bin rules shared by the CPU and CUDA kernels of
//   _histogram_count  (counts over explicit bin edges, torch.histogram's rules) and
//   batched_histc     (one torch.histc per slice along a dim).
#pragma once

#include "histogram.h"
#include "smem.h"

#include <ATen/ATen.h>
#include <ATen/WrapDimUtils.h>
#include <c10/core/Scalar.h>
#include <c10/macros/Macros.h>

#include <cmath>
#include <optional>
#include <vector>

namespace smem {

// ---------------------------------------------------------------- _histogram_count

// std::upper_bound over edges[first, first + len): the first index whose edge is > v, probed
// in std::upper_bound's order (halving `len`, going right when !(v < edge)), so the index is
// torch's even for edges that are not sorted. Branch-free on the device: the loop trip count
// depends on len only.
template <typename T, typename I>
C10_HOST_DEVICE inline I edge_upper_bound(const T* edges, I first, I len, T v) {
  while (len > 0) {
    const I half = len >> 1;
    const bool right = !(v < edges[first + half]);
    first = right ? first + half + 1 : first;
    len = right ? len - half - 1 : half;
  }
  return first;
}

// edge_upper_bound over a window of 2 or 3 edges (torch's local search) without the loop and
// its branches: the same probes (first + 1, then first + 2 right of it in a window of 3, or
// first left of it), so the same index.
template <typename T, typename I>
C10_HOST_DEVICE inline I window_upper_bound(const T* edges, I first, I len, T v) {
  const T lo = edges[first], mid = edges[first + 1], hi = edges[first + len - 1];
  return !(v < mid) ? first + 2 + I(len == 3 && !(v < hi)) : first + I(!(v < lo));
}

// The bin of v among E >= 2 edges, or -1 where torch.histogram drops v (outside
// [edges[0], edges[E-1]], or NaN). torch's CPU rules
// (aten/src/ATen/native/cpu/HistogramKernel.cpp):
//   uniform = false (BINARY_SEARCH): upper_bound over all edges, minus one;
//   uniform = true  (LINEAR_INTERPOLATION_WITH_LOCAL_SEARCH): pos = trunc((v - e0) * (E - 1) /
//     (eE - e0)) in T's arithmetic, then upper_bound in [max(0, pos - 1), min(pos + 2, E));
//   then v == edges[E-1] (pos == E - 1) goes to the last bin.
// Where torch's arithmetic is undefined (pos NaN or out of [0, E), from equal or infinite
// outer edges) this searches all edges instead. The result is always in [0, E - 2] or -1,
// whatever the edges hold: every search window is non-empty, inside [0, E), and starts at 0
// (whose edge is <= v) or above.
template <typename T, typename I>
C10_HOST_DEVICE inline I edge_bin(T v, const T* edges, I E, T left, T right, bool uniform) {
  if (!(v >= left && v <= right)) return -1;
  I upper;
  if (uniform) {
    const T p = (v - left) * static_cast<T>(E - 1) / (right - left);
    if (p >= T(0) && p < static_cast<T>(E)) {  // a window of 2 or 3 edges around pos
      const I pos = static_cast<I>(p);
      const I first = pos > 0 ? pos - 1 : 0;
      upper = window_upper_bound(edges, first, (pos + 2 < E ? pos + 2 : E) - first, v);
      return upper == E ? E - 2 : upper - 1;
    }
  }
  upper = edge_upper_bound(edges, I(0), E, v);
  return upper == E ? E - 2 : upper - 1;
}

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

// plan_histc's checks and plan (histogram.h) with batched_histc's name in the messages, and
// the dim. The checks are the same, in the same order, as the fake kernel's.
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
  TORCH_CHECK_TYPE(histc_input_supported(self.scalar_type()), op, "input dtype ",
                   dtype_name(self.scalar_type()),
                   " is not supported (expected a floating point "
                   "or integer dtype other than bool)");
  TORCH_CHECK_VALUE(bins > 0, op, "bins must be > 0, but got ", bins);
  const double lo = min.toDouble(), hi = max.toDouble();
  TORCH_CHECK_VALUE(std::isfinite(lo) && std::isfinite(hi), op, "range of [", lo, ", ", hi,
                    "] is not finite");
  TORCH_CHECK_VALUE(lo <= hi, op, "max must be larger than min, but got min=", lo, " and max=", hi);
  if (dtype)
    TORCH_CHECK_TYPE(histc_input_supported(*dtype), op, "dtype= ", dtype_name(*dtype),
                     " is not supported (expected a floating point or integer dtype)");
  BatchedHistcPlan plan;
  // Every check of plan_histc has passed above, so it cannot throw with histc's name.
  plan.histc = plan_histc(self, bins, min, max, dtype);
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
