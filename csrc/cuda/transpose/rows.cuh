// Row copies: geometries whose last output dim is already the input's fastest need no tile;
// a block copies one segment of a row, coalesced on both sides.
#pragma once

#include <algorithm>
#include <cstdint>

#include "cuda/common.cuh"
#include "cuda/tuning/transpose.h"
#include "transpose.h"

namespace smem::cuda::transpose {

template <typename E>
__global__ void __launch_bounds__(kRowCopyThreads)
transpose_rows_kernel(const E* __restrict__ in, E* __restrict__ out, const TransposeGeometry g) {
  constexpr int64_t kSegment = kRowCopyThreads * kRowCopyPerThread;
  const int64_t segments = ceil_div(g.cols, kSegment);
  const int64_t total = g.batches() * segments;
  for (int64_t t = blockIdx.x; t < total; t += gridDim.x) {
    int64_t in_off, out_off;
    g.batch_offsets(t / segments, in_off, out_off);
    const int64_t c0 = (t % segments) * kSegment;
    const int64_t c1 = std::min<int64_t>(c0 + kSegment, g.cols);
    for (int64_t c = c0 + threadIdx.x; c < c1; c += kRowCopyThreads)
      out[out_off + c] = in[in_off + c * g.col_in_stride];
  }
}

// One block per row segment.
template <typename E>
void launch_rows(const E* in, E* out, const TransposeGeometry& g, cudaStream_t stream) {
  const int64_t segments = g.batches() * ceil_div(g.cols, kRowCopyThreads * kRowCopyPerThread);
  transpose_rows_kernel<E><<<block_per_item(segments), kRowCopyThreads, 0, stream>>>(in, out, g);
}

}  // namespace smem::cuda::transpose
