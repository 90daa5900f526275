// The torch side of smem.sum, smem.sum_of_squares, smem.dot and smem._sum_variant on CUDA: the
// host flow of reduce.h (checks, the result dtype, the [outer, reduced, inner] view, the output)
// around the launchers of cuda/reduce/launch.h.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <optional>
#include <string>
#include <vector>

#include "cuda/build_info.h"
#include "cuda/launch.h"
#include "cuda/ops.h"
#include "cuda/reduce/launch.h"
#include "reduce.h"
#include "smem.h"

namespace smem::cuda {
namespace {

at::Tensor sum_like(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype, ReduceMap map, const char* op) {
  return reduce_host(self, dim, keepdim, dtype, op,
                     [map](const at::Tensor& x, at::Tensor& out, const ReducePlan& plan) {
                       const c10::cuda::CUDAGuard guard(x.device());
                       const void* data = x.const_data_ptr();
                       launch_reduce(map, x.scalar_type(), out.scalar_type(), data, data,
                                     out.mutable_data_ptr(), plan.outer, plan.reduced, plan.inner);
                     });
}

}  // namespace

at::Tensor sum_cuda(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype) {
  return sum_like(self, dim, keepdim, dtype, ReduceMap::kIdentity, "sum");
}

namespace {

at::Tensor sum_of_squares_cuda(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                               std::optional<at::ScalarType> dtype) {
  return sum_like(self, dim, keepdim, dtype, ReduceMap::kSquare, "sum_of_squares");
}

at::Tensor dot_cuda(const at::Tensor& self, const at::Tensor& other) {
  return dot_host(self, other, [](const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
    const c10::cuda::CUDAGuard guard(a.device());
    launch_reduce(ReduceMap::kProduct, a.scalar_type(), out.scalar_type(), a.const_data_ptr(),
                  b.const_data_ptr(), out.mutable_data_ptr(), 1, a.numel(), 1);
  });
}

at::Tensor sum_variant_cuda(const at::Tensor& self, c10::string_view name) {
  const std::vector<std::string> names = reduce_variants();
  for (int v = 0; v < static_cast<int>(names.size()); ++v) {
    if (name != names[v]) continue;
    TORCH_CHECK_TYPE(self.scalar_type() == at::kFloat,
                     "smem._sum_variant: the ladder sums float32, but got ",
                     dtype_name(self.scalar_type()));
    const c10::cuda::CUDAGuard guard(self.device());
    const at::Tensor x = self.contiguous();
    if (names[v] == "final") return sum_cuda(x, std::nullopt, false, std::nullopt);
    at::Tensor out = at::zeros({}, x.options());
    if (x.numel() == 0) return out;
    launch_sum_variant(v, x.const_data_ptr<float>(), x.numel(), out.mutable_data_ptr<float>());
    return out;
  }
  TORCH_CHECK_VALUE(false, "smem._sum_variant: unknown variant '", name,
                    "' (expected one of smem_ops.variants('reduce'))");
}

}  // namespace
}  // namespace smem::cuda

TORCH_LIBRARY_IMPL(smem, CUDA, m) {
  m.impl("sum", &smem::cuda::sum_cuda);
  m.impl("sum_of_squares", &smem::cuda::sum_of_squares_cuda);
  m.impl("dot", &smem::cuda::dot_cuda);
  m.impl("_sum_variant", &smem::cuda::sum_variant_cuda);
}
