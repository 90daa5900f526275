// Host-side planning shared by the CPU and CUDA reductions (sum, sum_of_squares, dot):
// argument checks, result dtype, and the [outer, reduced, inner] view every kernel works on.
#pragma once

#include "reduce_element.h"
#include "smem.h"

#include <ATen/ATen.h>
#include <ATen/WrapDimUtils.h>
#include <c10/core/ScalarType.h>

#include <algorithm>
#include <optional>
#include <type_traits>
#include <vector>

namespace smem {

inline void check_reduce_dtype(at::ScalarType t, const char* op, const char* what) {
  TORCH_CHECK_TYPE(reduce_dtype_supported(t), "smem.", op, ": ", what, " ", dtype_name(t),
                   " is not supported");
}

// [outer, reduced, inner] view of a contiguous tensor (after an optional permutation).
struct ReducePlan {
  std::vector<int64_t> out_shape;    // shape of the result, keepdim applied
  std::vector<int64_t> permutation;  // empty, or the permutation that makes reduced dims adjacent
  int64_t outer = 1, reduced = 1, inner = 1;
  at::ScalarType out_dtype = at::kFloat;
};

// Result dtype of sum / sum_of_squares, as torch.sum: bool and integers promote to int64
// unless dtype= says otherwise.
inline at::ScalarType sum_result_dtype(at::ScalarType in, std::optional<at::ScalarType> dtype) {
  if (dtype) return *dtype;
  return at::isIntegralType(in, /*includeBool=*/true) ? at::kLong : in;
}

// Which dims of an ndim-dim tensor a reduction over `dim` reduces: all when dim is None or
// empty. Checked as torch does (in range, no repeats); a 0-dim tensor has one dim to name.
inline std::vector<bool> reduced_dim_mask(int64_t ndim, at::OptionalIntArrayRef dim,
                                          const char* op) {
  std::vector<bool> reduced(std::max<int64_t>(ndim, 1), false);
  if (!dim.has_value() || dim->empty()) {
    std::fill(reduced.begin(), reduced.end(), true);
    return reduced;
  }
  for (int64_t d : *dim) {
    TORCH_CHECK_INDEX(d >= -std::max<int64_t>(ndim, 1) && d < std::max<int64_t>(ndim, 1), "smem.",
                      op, ": dim ", d, " is out of range for a tensor of dimension ", ndim);
    const int64_t w = at::maybe_wrap_dim(d, ndim);
    TORCH_CHECK_VALUE(!reduced[w], "smem.", op, ": dim ", w,
                      " appears multiple times in the list of dims");
    reduced[w] = true;
  }
  return reduced;
}

inline ReducePlan plan_reduce(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                              std::optional<at::ScalarType> dtype, const char* op) {
  check_reduce_dtype(self.scalar_type(), op, "input dtype");
  if (dtype) check_reduce_dtype(*dtype, op, "dtype=");
  ReducePlan plan;
  plan.out_dtype = sum_result_dtype(self.scalar_type(), dtype);

  const int64_t ndim = self.dim();
  const std::vector<bool> reduced = reduced_dim_mask(ndim, dim, op);
  for (int64_t i = 0; i < ndim; ++i) {
    if (!reduced[i]) plan.out_shape.push_back(self.size(i));
    else if (keepdim) plan.out_shape.push_back(1);
  }

  // Group consecutive dims of equal kind, skipping size-1 dims (they change nothing).
  // One reduced group gives [outer, reduced, inner] directly; several need a permutation.
  std::vector<std::pair<bool, int64_t>> groups;
  for (int64_t i = 0; i < ndim; ++i) {
    if (self.size(i) == 1) continue;
    if (!groups.empty() && groups.back().first == reduced[i]) groups.back().second *= self.size(i);
    else groups.emplace_back(reduced[i], self.size(i));
  }
  int reduced_groups = 0;
  for (auto& g : groups) reduced_groups += g.first;
  if (reduced_groups <= 1) {
    bool seen = false;
    for (auto& [is_red, size] : groups) {
      if (is_red) {
        plan.reduced = size;
        seen = true;
      } else if (seen) plan.inner *= size;
      else plan.outer *= size;
    }
  } else {
    for (int64_t i = 0; i < ndim; ++i)
      if (!reduced[i]) plan.permutation.push_back(i);
    for (int64_t i = 0; i < ndim; ++i)
      if (reduced[i]) plan.permutation.push_back(i);
    for (int64_t i = 0; i < ndim; ++i) (reduced[i] ? plan.reduced : plan.outer) *= self.size(i);
  }
  return plan;
}

// The input as a contiguous tensor laid out as [outer, reduced, inner], cast to dtype= if given.
inline at::Tensor reduce_input(const at::Tensor& self, const ReducePlan& plan,
                               std::optional<at::ScalarType> dtype) {
  at::Tensor x = self;
  if (dtype && *dtype != x.scalar_type()) x = x.to(*dtype);
  if (!plan.permutation.empty()) x = x.permute(plan.permutation);
  return x.contiguous();
}

// Calls f(out_data) with the output typed as visit_reduce_output types it.
template <typename T, typename F>
void with_reduce_output(at::Tensor& out, F&& f) {
  TORCH_INTERNAL_ASSERT(visit_reduce_output<T>(out.scalar_type(), out.mutable_data_ptr(), f),
                        "smem: unexpected reduction output dtype ", out.scalar_type());
}

inline void check_dot_args(const at::Tensor& a, const at::Tensor& b);

// The host flow of sum / sum_of_squares on every backend: plan, allocate, settle empty cases,
// lay the input out as [outer, reduced, inner], then launch(x, out, plan).
template <typename Launch>
at::Tensor reduce_host(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                       std::optional<at::ScalarType> dtype, const char* op, Launch&& launch) {
  const ReducePlan plan = plan_reduce(self, dim, keepdim, dtype, op);
  at::Tensor out = at::empty(plan.out_shape, self.options().dtype(plan.out_dtype));
  if (out.numel() == 0) return out;
  if (plan.reduced == 0 || self.numel() == 0) return out.zero_();
  launch(reduce_input(self, plan, dtype), out, plan);
  return out;
}

// The host flow of dot: checks, a 0-dim result, launch(a, b, out) on contiguous inputs.
template <typename Launch>
at::Tensor dot_host(const at::Tensor& self, const at::Tensor& other, Launch&& launch) {
  check_dot_args(self, other);
  at::Tensor out = at::empty({}, self.options());
  if (self.numel() == 0) return out.zero_();
  launch(self.contiguous(), other.contiguous(), out);
  return out;
}

inline void check_dot_args(const at::Tensor& a, const at::Tensor& b) {
  TORCH_CHECK_VALUE(a.device() == b.device(),
                    "smem.dot: expected both tensors on the same device, "
                    "but got self on ",
                    a.device(), " and other on ", b.device());
  TORCH_CHECK_VALUE(a.dim() == 1 && b.dim() == 1, "smem.dot: 1D tensors expected, but got ",
                    a.dim(), "D and ", b.dim(), "D tensors");
  TORCH_CHECK_TYPE(a.scalar_type() == b.scalar_type(),
                   "smem.dot: expected both tensors to have "
                   "the same dtype, but got self ",
                   dtype_name(a.scalar_type()), " and other ", dtype_name(b.scalar_type()));
  TORCH_CHECK_TYPE(a.scalar_type() != at::kBool,
                   "smem.dot: input dtype torch.bool is not supported");
  check_reduce_dtype(a.scalar_type(), "dot", "input dtype");
  TORCH_CHECK_VALUE(a.numel() == b.numel(),
                    "smem.dot: inconsistent tensor size, expected self of "
                    "size ",
                    a.numel(), " and other of size ", b.numel(), " to be equal");
}

}  // namespace smem
