// Where a transpose block's work item lies. Items (tiles, row segments) are numbered
// t = (batch * row_items + row) * col_items + col, and a block strides over t. The counts are set
// up on the host; where they fit 31 bits (short of 2^31 items, always in practice), a kernel
// splits t with a multiply-high and a shift (at::cuda::detail::IntDivider) instead of 64-bit
// divisions, whose emulation is a long dependent chain before a block's first load: a kernel of
// a few blocks is latency-bound, so that chain adds straight to its time. (The skinny kernel
// keeps its one division per chunk: at its 64-register bound the walk made it spill.)
#pragma once

#include <c10/macros/Macros.h>  // first: IntegerDivider.cuh uses C10_HOST_DEVICE

#include <ATen/cuda/detail/IntegerDivider.cuh>

#include <climits>
#include <cstdint>

#include "cuda/common.cuh"
#include "transpose_geometry.h"

namespace smem::cuda::transpose {

struct TileWalk {
  int64_t total = 0, per_batch = 1, col_items = 1;
  bool narrow = false;  // 0 < total <= INT32_MAX: the divisors below are set
  at::cuda::detail::IntDivider<unsigned> per_batch_div{}, col_div{};  // zero unless narrow

  static TileWalk of(const TransposeGeometry& g, int64_t row_items, int64_t col_items) {
    TileWalk w;
    w.per_batch = row_items * col_items;
    w.col_items = col_items;
    w.total = g.batches() * w.per_batch;
    w.narrow = w.total > 0 && w.total <= INT32_MAX;
    if (w.narrow) {
      w.per_batch_div = at::cuda::detail::IntDivider<unsigned>(static_cast<unsigned>(w.per_batch));
      w.col_div = at::cuda::detail::IntDivider<unsigned>(static_cast<unsigned>(col_items));
    }
    return w;
  }

  // Item t (< total): its batch, and its row and column among the batch's items.
  __device__ void locate(int64_t t, int64_t& batch, int64_t& row, int64_t& col) const {
    if (narrow) {
      const auto b = per_batch_div.divmod(static_cast<unsigned>(t));
      const auto rc = col_div.divmod(b.mod);
      batch = b.div;
      row = rc.div;
      col = rc.mod;
    } else {
      batch = t / per_batch;
      row = t % per_batch / col_items;
      col = t % per_batch % col_items;
    }
  }
};

}  // namespace smem::cuda::transpose
