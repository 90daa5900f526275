// What launch decisions read off a device. Host-only and free of CUDA headers, so that a
// decision (histogram/shape.h) builds, and can be tested, on a machine without CUDA.
#pragma once

namespace smem::cuda {

constexpr int kWarpSize = 32;

struct DeviceInfo {
  int sm_count = 0;
  int major = 0, minor = 0;
  int max_smem_per_block = 0;        // without opt-in (48 KiB)
  int max_smem_per_block_optin = 0;  // after cudaFuncSetAttribute
  int max_smem_per_sm = 0;
  // The runtime's own share of each resident block's shared memory (1 KiB on sm_80+).
  int reserved_smem_per_block = 0;
  int l2_bytes = 0;
};

// Read once per device (runtime.cpp); safe to call while a CUDA graph is being captured.
const DeviceInfo& device_info(int device);

}  // namespace smem::cuda
