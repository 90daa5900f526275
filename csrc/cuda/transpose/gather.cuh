// Tiny transposes (at most kGatherMaxElements), and those with a side of at most
// kGatherShortMax that the interleave kernel does not take (interleave.cuh: lines off the
// 16-byte grid, 16-byte elements, strided lines or run): each thread gathers one output element
// straight from the input. A staged tile costs a load, a barrier and a shared-memory round trip
// before the first store; a small matrix makes a few tile blocks, a kernel that is a chain of
// latencies on an idle chip, and a short side makes skinny blocks of a few hundred bytes each.
// Here each thread's one load is its own, in blocks of 256 threads (16 for 64 x 64 elements,
// where the word-cell kernel ran one block); the stores are coalesced along the output's last
// dim, the loads are not: at a tiny size the L2 absorbs that, and with a short side a warp's
// loads span only a few lines.
#pragma once

#include <c10/macros/Macros.h>  // first: IntegerDivider.cuh uses C10_HOST_DEVICE

#include <ATen/cuda/detail/IntegerDivider.cuh>

#include <algorithm>
#include <climits>
#include <cstdint>

#include "cuda/common.cuh"
#include "cuda/tuning/transpose.h"
#include "transpose_geometry.h"

namespace smem::cuda::transpose {

// Thread i < total takes output element (batch, row, col) of the batches' rows x cols tiles.
template <typename E>
__global__ void __launch_bounds__(kGatherThreads)
transpose_gather_kernel(const E* __restrict__ in, E* __restrict__ out, const TransposeGeometry g,
                        const at::cuda::detail::IntDivider<unsigned> col_div,
                        const at::cuda::detail::IntDivider<unsigned> row_div, unsigned total) {
  const unsigned i = blockIdx.x * kGatherThreads + threadIdx.x;
  if (i >= total) return;
  const auto row_col = col_div.divmod(i);
  const auto batch_row = row_div.divmod(row_col.div);
  int64_t in_off, out_off;
  g.batch_offsets(batch_row.div, in_off, out_off);
  const int64_t row = batch_row.mod, col = row_col.mod;
  out[out_off + row * g.row_out_stride + col] =
      in[in_off + row * g.row_in_stride + col * g.col_in_stride];
}

// Returns whether the transpose is one to gather (and launched it): a tiny one, or with
// `short_sides` also one with a short side.
template <typename E>
bool launch_gather(const E* in, E* out, const TransposeGeometry& g, bool short_sides,
                   cudaStream_t stream) {
  const int64_t total = g.batches() * g.rows * g.cols;
  const bool tiny = total <= kGatherMaxElements;
  const bool short_side =
      short_sides && std::min(g.rows, g.cols) <= kGatherShortMax && total <= INT32_MAX;
  if (!g.tiled || !(tiny || short_side)) return false;
  const at::cuda::detail::IntDivider<unsigned> col_div(static_cast<unsigned>(g.cols)),
      row_div(static_cast<unsigned>(g.rows));
  const unsigned blocks = block_per_item(ceil_div(total, int64_t(kGatherThreads)));
  transpose_gather_kernel<E><<<blocks, kGatherThreads, 0, stream>>>(in, out, g, col_div, row_div,
                                                                    static_cast<unsigned>(total));
  return true;
}

}  // namespace smem::cuda::transpose
