// What the CUDA backend tells smem.cpp about the build (smem_ops.compiled_archs() and the
// rest of smem.h's introspection), declared without torch's headers so that the .cu files
// defining them stay light (cuda/launch.h says why).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace smem::cuda {

// info.cu: the SM archs the kernels were compiled for (800 for sm_80), and the status
// (a cudaError_t) of looking up a probe kernel on the current device:
// cudaErrorNoKernelImageForDevice where this build holds no code that device can run.
std::vector<int64_t> compiled_archs();
int probe_kernel_image();

// runtime.cpp: whether thread-block cluster kernels can run on `device`.
bool cluster_supported(int64_t device);

// The technique ladders' variant names, naive to final: ladder/*_variants.cu.
std::vector<std::string> reduce_variants();
std::vector<std::string> transpose_variants();
std::vector<std::string> histogram_variants();

}  // namespace smem::cuda
