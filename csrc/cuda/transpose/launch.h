// The CUDA transposes' launchers, free of torch's headers (cuda/launch.h says why); their
// torch side is transpose_ops.cpp.
#pragma once

#include <cuda_runtime_api.h>

#include <cstdint>

#include "transpose_geometry.h"

namespace smem::cuda {

// What launch_transpose may take: each kernel that needs no tile where it applies (the ladder's
// "final:gather" and "final:staged" turn them off, so that tests reach what is behind), and the
// word-cell kernels' grid (tests cap it, so that each block strides over many tiles).
struct TransposeKernels {
  bool interleave = true;        // a short side in registers (transpose/interleave.cuh)
  bool gather = true;            // tiny or short-sided inputs, an element per thread (gather.cuh)
  int64_t cells_max_blocks = 0;  // > 0: the word-cell kernels on at most this many blocks
};

// transpose.cu: smem.transpose, the copy `g` describes from `in` to `out`, of elements of
// `element_size` bytes, on `stream`.
void launch_transpose(const void* in, void* out, int64_t element_size, const TransposeGeometry& g,
                      TransposeKernels allow, cudaStream_t stream);

// ladder/transpose_variants.cu: the same copy by one of the ladder's variants below "final"
// (an index into transpose_variants()).
void launch_transpose_variant(const void* in, void* out, int64_t element_size,
                              const TransposeGeometry& g, int variant, cudaStream_t stream);

}  // namespace smem::cuda
