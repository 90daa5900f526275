// The C++ API (include/smem_ops/smem_ops.h): each function calls its op from the top of the
// dispatcher, so autograd, the device guard and the current stream apply as they do in Python.
#include "smem_ops/smem_ops.h"

#include "op_handles.h"
#include "smem.h"

namespace smem_ops {

at::Tensor sum(const at::Tensor& x, at::OptionalIntArrayRef dim, bool keepdim,
               std::optional<at::ScalarType> dtype) {
  return smem::sum_op(/*squares=*/false).call(x, dim, keepdim, dtype);
}

at::Tensor sum_of_squares(const at::Tensor& x, at::OptionalIntArrayRef dim, bool keepdim,
                          std::optional<at::ScalarType> dtype) {
  return smem::sum_op(/*squares=*/true).call(x, dim, keepdim, dtype);
}

at::Tensor dot(const at::Tensor& x, const at::Tensor& other) {
  return smem::dot_op().call(x, other);
}

at::Tensor transpose(const at::Tensor& x, int64_t dim0, int64_t dim1) {
  return smem::transpose_op().call(x, dim0, dim1);
}

at::Tensor histc(const at::Tensor& x, int64_t bins, const at::Scalar& min, const at::Scalar& max,
                 std::optional<at::ScalarType> dtype) {
  return smem::histc_op().call(x, bins, min, max, dtype);
}

at::Tensor batched_histc(const at::Tensor& x, int64_t bins, const at::Scalar& min,
                         const at::Scalar& max, int64_t dim, std::optional<at::ScalarType> dtype) {
  return smem::batched_histc_op().call(x, bins, min, max, dim, dtype);
}

bool cuda_compiled() { return smem::cuda_compiled(); }
std::vector<int64_t> compiled_archs() { return smem::compiled_archs(); }
bool cluster_supported(int64_t device) { return smem::cluster_supported(device); }
std::vector<std::string> variants(const std::string& family) { return smem::variants(family); }

}  // namespace smem_ops
