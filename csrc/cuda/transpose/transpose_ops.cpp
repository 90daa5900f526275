// The torch side of smem.transpose and smem._transpose_variant on CUDA: the host flow of
// transpose.h (checks, the output, the geometry) around the launchers of cuda/transpose/launch.h.
#include <ATen/ATen.h>
#include <c10/cuda/CUDAGuard.h>
#include <torch/library.h>

#include <string>
#include <vector>

#include "cuda/build_info.h"
#include "cuda/launch.h"
#include "cuda/ops.h"
#include "cuda/transpose/launch.h"
#include "transpose.h"

namespace smem::cuda {

at::Tensor transpose_cuda(const at::Tensor& self, int64_t dim0, int64_t dim1,
                          TransposeKernels allow) {
  return transpose_host(self, dim0, dim1,
                        [&](const at::Tensor& x, at::Tensor& out, const TransposeGeometry& g) {
                          const c10::cuda::CUDAGuard guard(x.device());
                          launch_transpose(x.const_data_ptr(), out.mutable_data_ptr(),
                                           x.element_size(), g, allow, current_stream());
                        });
}

namespace {

at::Tensor transpose_variant_cuda(const at::Tensor& self, c10::string_view name) {
  // final without the interleave kernel (then short sides gather or are staged), or without
  // either no-tile kernel, so that tests reach the staged kernels on small or short-sided inputs
  if (name == "final:gather")
    return transpose_cuda(self, -2, -1, TransposeKernels{/*interleave=*/false, /*gather=*/true});
  if (name == "final:staged")
    return transpose_cuda(self, -2, -1, TransposeKernels{/*interleave=*/false, /*gather=*/false});
  // ... and with the word-cell kernels on 3 blocks, so that each strides over many tiles
  if (name == "final:few_blocks")
    return transpose_cuda(self, -2, -1,
                          TransposeKernels{/*interleave=*/false, /*gather=*/false,
                                           /*cells_max_blocks=*/3});
  const std::vector<std::string> names = transpose_variants();
  for (int v = 0; v < static_cast<int>(names.size()); ++v) {
    if (name != names[v]) continue;
    if (names[v] == "final") return transpose_cuda(self, -2, -1);
    return transpose_host(self, -2, -1,
                          [v](const at::Tensor& x, at::Tensor& out, const TransposeGeometry& g) {
                            const c10::cuda::CUDAGuard guard(x.device());
                            launch_transpose_variant(x.const_data_ptr(), out.mutable_data_ptr(),
                                                     x.element_size(), g, v, current_stream());
                          });
  }
  TORCH_CHECK_VALUE(false, "smem._transpose_variant: unknown variant '", name,
                    "' (expected one of smem_ops.variants('transpose'))");
}

}  // namespace
}  // namespace smem::cuda

TORCH_LIBRARY_IMPL(smem, CUDA, m) {
  m.impl("transpose", [](const at::Tensor& self, int64_t dim0, int64_t dim1) {
    return smem::cuda::transpose_cuda(self, dim0, dim1);
  });
  m.impl("_transpose_variant", &smem::cuda::transpose_variant_cuda);
}
