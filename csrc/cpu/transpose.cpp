// CPU transpose: the geometry from transpose.h, walked in square tiles, each staged through a
// small contiguous buffer (the CPU twin of the GPU's shared-memory tile): the tile is read
// line by line along the input's contiguous dim and written line by line along the output's.
// Without the buffer, a power-of-two matrix makes one side walk lines 2^k bytes apart, which
// all fall in one L1 set and evict each other before they are used again.
// The kernel only moves bytes, so it is instantiated per element size, not per dtype.
#include <ATen/ATen.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <cstring>

#include "cpu/simd.h"
#include "transpose.h"

namespace smem::cpu {
namespace {

// Tile side: kTile^2 elements of buffer, 4 KiB for 4-byte elements.
template <typename E>
constexpr int64_t cpu_tile() {
  return sizeof(E) <= 2 ? 64 : (sizeof(E) <= 4 ? 32 : 16);
}

// Output rows [r0, r1) x columns [c0, c1) of one batch: output (r, c) = in[r * rs + c * cs].
template <typename E>
SMEM_SIMD_CLONES void transpose_tile(const E* src, E* dst, int64_t r0, int64_t r1, int64_t c0,
                                     int64_t c1, int64_t rs, int64_t cs, int64_t ros) {
  constexpr int64_t kTile = cpu_tile<E>();
  E buf[kTile][kTile];  // [c - c0][r - r0]
  const int64_t h = r1 - r0, w = c1 - c0;
  for (int64_t c = 0; c < w; ++c) {  // along the input's rows dim (contiguous when rs == 1)
    const E* s = src + (c0 + c) * cs + r0 * rs;
    for (int64_t r = 0; r < h; ++r) buf[c][r] = s[r * rs];
  }
  for (int64_t r = 0; r < h; ++r) {  // along the output's last dim
    E* d = dst + (r0 + r) * ros + c0;
    for (int64_t c = 0; c < w; ++c) d[c] = buf[c][r];
  }
}

template <typename E>
void transpose_kernel(const E* in, E* out, const TransposeGeometry& g) {
  constexpr int64_t kTile = cpu_tile<E>();
  const int64_t row_tiles = (g.rows + kTile - 1) / kTile;
  const int64_t col_tiles = (g.cols + kTile - 1) / kTile;
  const int64_t per_batch = g.tiled ? row_tiles * col_tiles : g.rows;
  const int64_t total = g.batches() * per_batch;
  const int64_t grain = g.tiled ? 1 : std::max<int64_t>(1, 32768 / std::max<int64_t>(g.cols, 1));
  // Locals, not g's fields, in the loops: stores through a 1-byte E may alias g, which would
  // make the compiler reload every stride on every element.
  const int64_t rows = g.rows, cols = g.cols;
  const int64_t rs = g.row_in_stride, cs = g.col_in_stride, ros = g.row_out_stride;
  at::parallel_for(0, total, grain, [&](int64_t begin, int64_t end) {
    for (int64_t t = begin; t < end; ++t) {
      int64_t in_off, out_off;
      g.batch_offsets(t / per_batch, in_off, out_off);
      const E* src = in + in_off;
      E* dst = out + out_off;
      if (!g.tiled) {  // row copy: the last dim is also the input's innermost
        if (cs == 1) {
          std::memcpy(dst, src, cols * sizeof(E));
        } else {
          for (int64_t c = 0; c < cols; ++c) dst[c] = src[c * cs];
        }
        continue;
      }
      const int64_t r0 = (t % per_batch) / col_tiles * kTile;
      const int64_t c0 = (t % per_batch) % col_tiles * kTile;
      transpose_tile(src, dst, r0, std::min(r0 + kTile, rows), c0, std::min(c0 + kTile, cols), rs,
                     cs, ros);
    }
  });
}

at::Tensor transpose_cpu(const at::Tensor& self, int64_t dim0, int64_t dim1) {
  return transpose_host(self, dim0, dim1,
                        [](const at::Tensor& x, at::Tensor& out, const TransposeGeometry& g) {
                          dispatch_element_size(x.element_size(), [&](auto e) {
                            using E = decltype(e);
                            transpose_kernel(static_cast<const E*>(x.const_data_ptr()),
                                             static_cast<E*>(out.mutable_data_ptr()), g);
                          });
                        });
}

}  // namespace
}  // namespace smem::cpu

TORCH_LIBRARY_IMPL(smem, CPU, m) { m.impl("transpose", &smem::cpu::transpose_cpu); }
