// Row copies: geometries whose last output dim is already the input's fastest need no tile;
// a block copies one segment of a row, coalesced on both sides.
#pragma once

#include <algorithm>
#include <cstdint>

#include "cuda/common.cuh"
#include "cuda/transpose/tile_walk.cuh"
#include "cuda/tuning/transpose.h"
#include "transpose_geometry.h"

namespace smem::cuda::transpose {

template <typename E>
__global__ void __launch_bounds__(kRowCopyThreads)
transpose_rows_kernel(const E* __restrict__ in, E* __restrict__ out, const TransposeGeometry g,
                      const TileWalk walk) {
  constexpr int64_t kSegment = kRowCopyThreads * kRowCopyPerThread;
  for (int64_t t = blockIdx.x; t < walk.total; t += gridDim.x) {
    int64_t batch, row, segment, in_off, out_off;
    walk.locate(t, batch, row, segment);
    g.batch_offsets(batch, in_off, out_off);
    const int64_t c0 = segment * kSegment;
    const int64_t c1 = std::min<int64_t>(c0 + kSegment, g.cols);
    for (int64_t c = c0 + threadIdx.x; c < c1; c += kRowCopyThreads)
      out[out_off + c] = in[in_off + c * g.col_in_stride];
  }
}

// One block per row segment.
template <typename E>
void launch_rows(const E* in, E* out, const TransposeGeometry& g, cudaStream_t stream) {
  const TileWalk walk = TileWalk::of(g, 1, ceil_div(g.cols, kRowCopyThreads * kRowCopyPerThread));
  transpose_rows_kernel<E>
      <<<block_per_item(walk.total), kRowCopyThreads, 0, stream>>>(in, out, g, walk);
}

}  // namespace smem::cuda::transpose
