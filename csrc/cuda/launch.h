// What a kernel's host-side launcher needs from torch, declared without torch's headers: the
// current stream, torch's CUDA error checks, scratch and zeroed device memory, and a cache of
// per-kernel queries. Defined in
// runtime.cpp. Why: nvcc parses a .cu file once per target arch, and ATen/ATen.h alone costs
// about 20 s a pass, so the .cu files hold kernels and launchers only, and the torch side of
// each op (checks, outputs, registration) lives in a .cpp beside them.
#pragma once

#include <c10/util/FunctionRef.h>
#include <cuda_runtime_api.h>

#include <cstdint>
#include <memory>

namespace smem::cuda {

// c10::cuda::getCurrentCUDAStream() of the current device.
cudaStream_t current_stream();

// Raises torch's error for a failed CUDA call (C10_CUDA_CHECK's, naming `file` and `line`).
[[noreturn]] void raise_cuda_error(cudaError_t error, const char* file, const char* function,
                                   int line);

inline void check_cuda(cudaError_t error, const char* file, const char* function, int line) {
  if (error != cudaSuccess) raise_cuda_error(error, file, function, line);
}

// Device memory on the current device from torch's caching allocator, held while the Scratch
// (or a copy) lives. Released after a launch that uses it, it is reused only in stream order, as
// an at::empty tensor is.
struct Scratch {
  std::shared_ptr<void> holder;
  void* data = nullptr;
};
Scratch device_scratch(int64_t bytes);

// Device memory that is all zeros when a kernel starts, without a memset launch where
// possible: each stream keeps a buffer per purpose that every kernel using it leaves zeroed,
// and the kernels of one stream run one after another. While the stream is being captured
// into a CUDA graph, the buffer comes fresh from at::zeros (a memset node of the graph), kept
// alive by `fresh`.
enum class ZeroedUse { kCounters, kHistogram };
void* zeroed_workspace(int64_t bytes, ZeroedUse use, Scratch& fresh);

// `count` counters at zero for last_block_to_finish (common.cuh) on the current stream.
inline unsigned* zeroed_counters(int64_t count, Scratch& fresh) {
  return static_cast<unsigned*>(
      zeroed_workspace(count * int64_t(sizeof(unsigned)), ZeroedUse::kCounters, fresh));
}

// query() (kernel attributes, an occupancy) once per kernel, device, dynamic shared memory
// and `extra`; later launches reuse the answer instead of asking the runtime again.
int once_per_kernel(const void* kernel, int64_t smem_bytes, int extra,
                    c10::function_ref<int()> query);

}  // namespace smem::cuda

// C10_CUDA_CHECK and C10_CUDA_KERNEL_LAUNCH_CHECK for torch-free translation units.
#define SMEM_CUDA_CHECK(expr) ::smem::cuda::check_cuda((expr), __FILE__, __func__, __LINE__)
#define SMEM_LAUNCH_CHECK() SMEM_CUDA_CHECK(cudaGetLastError())
