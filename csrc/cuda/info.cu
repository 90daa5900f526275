// The build facts only nvcc knows: the archs the kernels were compiled for, and whether the
// current device can run them. The torch side (device properties, workspaces): runtime.cpp.
#include <cuda_runtime.h>

#include <cstdint>
#include <vector>

#include "cuda/build_info.h"

namespace smem::cuda {

namespace {
__global__ void arch_probe_kernel() {}
}  // namespace

std::vector<int64_t> compiled_archs() {
  // nvcc defines __CUDA_ARCH_LIST__ (e.g. 800,900) in every compilation pass.
  return {__CUDA_ARCH_LIST__};
}

// Every kernel of this library is compiled for the same archs, so one probe tells whether
// the driver has machine code (or PTX it can compile) for the current device.
int probe_kernel_image() {
  cudaFuncAttributes attributes{};
  return static_cast<int>(cudaFuncGetAttributes(&attributes, arch_probe_kernel));
}

}  // namespace smem::cuda
