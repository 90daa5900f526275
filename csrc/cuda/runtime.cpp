// The torch side of what the CUDA launchers use: the current stream, error checks, scratch and
// zeroed device memory and per-kernel queries (launch.h), device properties (device_info.h) and
// cluster support (build_info.h).
#include <ATen/ATen.h>
#include <c10/cuda/CUDAException.h>
#include <c10/cuda/CUDAGuard.h>
#include <c10/cuda/CUDAStream.h>

#include <map>
#include <mutex>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "cuda/build_info.h"
#include "cuda/device_info.h"
#include "cuda/launch.h"

namespace smem::cuda {

cudaStream_t current_stream() { return c10::cuda::getCurrentCUDAStream().stream(); }

void raise_cuda_error(cudaError_t error, const char* file, const char* function, int line) {
  c10::cuda::c10_cuda_check_implementation(static_cast<int32_t>(error), file, function,
                                           static_cast<uint32_t>(line),
                                           /*include_device_assertions=*/true);
  TORCH_INTERNAL_ASSERT(false, "c10_cuda_check_implementation returned on ",
                        cudaGetErrorName(error));
}

namespace {

std::string compiled_archs_text() {
  std::string text;
  for (int64_t arch : compiled_archs())
    text += (text.empty() ? "sm_" : ", sm_") + std::to_string(arch / 10);
  return text;
}

// Without this, the first launch on a GPU this build has no code for would fail with "no
// kernel image is available", which names neither arch nor fix.
void check_kernels_built_for(int device, const DeviceInfo& d) {
  const c10::cuda::CUDAGuard guard(static_cast<c10::DeviceIndex>(device));
  const auto status = static_cast<cudaError_t>(probe_kernel_image());
  if (status == cudaErrorNoKernelImageForDevice || status == cudaErrorInvalidDeviceFunction) {
    (void)cudaGetLastError();
    cudaDeviceProp prop{};
    C10_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
    // The rebuild command is smem_ops/_meta.py's BUILD_COMMAND.
    TORCH_CHECK(false, "smem_ops: no CUDA kernels for cuda:", device, " (", prop.name, ", sm_",
                d.major, d.minor, "): this build holds ", compiled_archs_text(),
                ". Rebuild for this GPU: TORCH_CUDA_ARCH_LIST=\"", d.major, ".", d.minor,
                "\" pip install --no-build-isolation -e .");
  }
  C10_CUDA_CHECK(status);
}

}  // namespace
const DeviceInfo& device_info(int device) {
  constexpr int kMaxDevices = 64;
  static DeviceInfo infos[kMaxDevices];
  static std::once_flag once[kMaxDevices];
  TORCH_CHECK(device >= 0 && device < kMaxDevices, "smem_ops: device index ", device,
              " out of range");
  std::call_once(once[device], [device] {
    DeviceInfo& d = infos[device];
    // cudaDeviceGetAttribute, unlike cudaGetDeviceProperties, is cheap and capture-safe.
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&d.sm_count, cudaDevAttrMultiProcessorCount, device));
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&d.major, cudaDevAttrComputeCapabilityMajor, device));
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&d.minor, cudaDevAttrComputeCapabilityMinor, device));
    C10_CUDA_CHECK(
        cudaDeviceGetAttribute(&d.max_smem_per_block, cudaDevAttrMaxSharedMemoryPerBlock, device));
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&d.max_smem_per_block_optin,
                                          cudaDevAttrMaxSharedMemoryPerBlockOptin, device));
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&d.max_smem_per_sm,
                                          cudaDevAttrMaxSharedMemoryPerMultiprocessor, device));
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&d.reserved_smem_per_block,
                                          cudaDevAttrReservedSharedMemoryPerBlock, device));
    C10_CUDA_CHECK(cudaDeviceGetAttribute(&d.l2_bytes, cudaDevAttrL2CacheSize, device));
    check_kernels_built_for(device, d);
  });
  return infos[device];
}

int once_per_kernel(const void* kernel, int64_t smem_bytes, int extra,
                    c10::function_ref<int()> query) {
  static std::mutex mutex;
  static std::map<std::tuple<const void*, int, int64_t, int>, int> known;
  int device = 0;
  C10_CUDA_CHECK(cudaGetDevice(&device));
  const auto key = std::make_tuple(kernel, device, smem_bytes, extra);
  {
    const std::lock_guard<std::mutex> lock(mutex);
    if (const auto it = known.find(key); it != known.end()) return it->second;
  }
  // Asked without the lock: a query may itself ask (the cluster occupancy raises the kernel's
  // shared memory cap first), and two threads asking at once get the same answer.
  const int value = query();
  const std::lock_guard<std::mutex> lock(mutex);
  known.emplace(key, value);
  return value;
}

namespace {

at::TensorOptions current_device_bytes() {
  return at::TensorOptions().dtype(at::kByte).device(at::kCUDA, c10::cuda::current_device());
}

// A Scratch that keeps `t` alive.
Scratch hold(const at::Tensor& t) {
  void* data = t.data_ptr();
  return {std::shared_ptr<void>(data, [t](void*) {}), data};
}

}  // namespace

Scratch device_scratch(int64_t bytes) {
  return hold(at::empty({std::max<int64_t>(bytes, 1)}, current_device_bytes()));
}

void* zeroed_workspace(int64_t bytes, ZeroedUse use, Scratch& fresh) {
  const auto stream = c10::cuda::getCurrentCUDAStream();
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  C10_CUDA_CHECK(cudaStreamIsCapturing(stream, &capture));
  const auto byte_options = current_device_bytes();
  bytes = std::max<int64_t>(bytes, 1);
  if (capture != cudaStreamCaptureStatusNone) {
    fresh = hold(at::zeros({bytes}, byte_options));
    return fresh.data;
  }
  // Never freed: a buffer outgrown while another host thread is about to launch on it must
  // stay valid, and tensors must not be destroyed after the CUDA context at exit.
  using Key = std::tuple<int, c10::StreamId, ZeroedUse>;
  static std::mutex mutex;
  static auto* buffers = new std::map<Key, at::Tensor>();
  static auto* outgrown = new std::vector<at::Tensor>();
  const std::lock_guard<std::mutex> lock(mutex);
  at::Tensor& buffer = (*buffers)[{stream.device_index(), stream.id(), use}];
  if (!buffer.defined() || buffer.numel() < bytes) {
    if (buffer.defined()) outgrown->push_back(buffer);
    buffer = at::zeros({std::max<int64_t>(bytes, 4096)}, byte_options);  // once per stream, mostly
  }
  return buffer.mutable_data_ptr();
}

bool cluster_supported(int64_t device) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || device < 0 || device >= count) {
    (void)cudaGetLastError();
    return false;
  }
  bool built_for_sm90 = false;
  for (int64_t arch : compiled_archs()) built_for_sm90 |= arch >= 900;
  return built_for_sm90 && device_info(static_cast<int>(device)).major >= 9;
}

}  // namespace smem::cuda
