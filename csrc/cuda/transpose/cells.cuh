// Word cells: the tile transpose with a whole 8- or 16-byte word per thread and access,
// transposed in registers, for elements of up to 8 bytes whose layout aligns (cells_aligned).
#pragma once

#include <cstdint>
#include <cstring>

#include "cuda/common.cuh"
#include "cuda/transpose/tile_walk.cuh"
#include "cuda/tuning/transpose.h"
#include "transpose_geometry.h"

namespace smem::cuda::transpose {

// Word cells: a cell is P x P elements, P = sizeof(Word) / sizeof(E), read as P words (word j
// = rows r0..r0+P-1 of input line c0+j), transposed in registers, and written as P words (word
// i = columns c0..c0+P-1 of output row r0+i). One cell per thread, a tile of kCells x kCells
// cells per block, so every global access is a whole word (16 or 8 bytes) and kCells lanes
// cover kCells words of one line. Shared memory holds P planes (one per output row of a cell)
// padded by one word: the write phase reads down a plane column, kCells + 1 words apart, which
// lands the lanes of each wavefront on distinct banks.
// Needs cells_aligned(); cells cut by the matrix edge move element by element.
template <typename E, typename Word, int kCells>
__global__ void __launch_bounds__(kCells * kCells)
transpose_cells_kernel(const E* __restrict__ in, E* __restrict__ out, const TransposeGeometry g,
                       const TileWalk walk, bool stream_out) {
  constexpr int P = sizeof(Word) / sizeof(E);
  static_assert(P * kCells * (kCells + 1) * sizeof(Word) <= 48 * 1024, "planes exceed smem");
  __shared__ Word plane[P][kCells][kCells + 1];  // [output row in cell][col cell][row cell]
  const int lane_fast = threadIdx.x % kCells, lane_slow = threadIdx.x / kCells;
  for (int64_t t = blockIdx.x; t < walk.total; t += gridDim.x) {
    int64_t batch, row_tile, col_tile, in_off, out_off;
    walk.locate(t, batch, row_tile, col_tile);
    g.batch_offsets(batch, in_off, out_off);
    const int64_t rc0 = row_tile * kCells, cc0 = col_tile * kCells;  // in cells
    {  // Read: consecutive threads take consecutive row cells of one input line.
      const int64_t r0 = (rc0 + lane_fast) * P, c0 = (cc0 + lane_slow) * P;
      E v[P][P] = {};  // v[j][i] = element (r0 + i, c0 + j)
      if (r0 < g.rows && c0 < g.cols) {
#pragma unroll
        for (int j = 0; j < P; ++j) {
          const E* line = in + in_off + (c0 + j) * g.col_in_stride + r0;
          if (c0 + j >= g.cols) continue;
          if (r0 + P <= g.rows) {
            const Word w = *reinterpret_cast<const Word*>(line);
            memcpy(v[j], &w, sizeof(w));
          } else {  // fixed trip count: a run-time bound would put v in local memory
#pragma unroll
            for (int i = 0; i < P; ++i)
              if (r0 + i < g.rows) v[j][i] = line[i];
          }
        }
      }
#pragma unroll
      for (int i = 0; i < P; ++i) {
        E row[P];
#pragma unroll
        for (int j = 0; j < P; ++j) row[j] = v[j][i];
        memcpy(&plane[i][lane_slow][lane_fast], row, sizeof(Word));
      }
    }
    __syncthreads();
    {  // Write: consecutive threads take consecutive column cells of one output row.
      const int64_t r0 = (rc0 + lane_slow) * P, c0 = (cc0 + lane_fast) * P;
      if (r0 < g.rows && c0 < g.cols) {
#pragma unroll
        for (int i = 0; i < P; ++i) {
          if (r0 + i >= g.rows) continue;
          E* line = out + out_off + (r0 + i) * g.row_out_stride + c0;
          const Word w = plane[i][lane_fast][lane_slow];
          if (c0 + P <= g.cols) {
            // (through the intrinsic: a plain uint4 store to an E* line compiles to four 4-byte
            // stores for 2- and 4-byte E)
            if (stream_out) __stcs(reinterpret_cast<Word*>(line), w);  // evict-first
            else __stwb(reinterpret_cast<Word*>(line), w);
          } else {
            E row[P];
            memcpy(row, &w, sizeof(w));
#pragma unroll
            for (int j = 0; j < P; ++j)
              if (c0 + j < g.cols) line[j] = row[j];
          }
        }
      }
    }
    __syncthreads();  // the planes are refilled by the next iteration
  }
}

// One block per tile. An output larger than the L2 is written evict-first: it can't stay
// cached for its reader anyway, and its lines then make room for each other rather than push
// out the input's.
template <typename E, typename Word, int kCells>
void launch_cells(const E* in, E* out, const TransposeGeometry& g, cudaStream_t stream) {
  constexpr int P = sizeof(Word) / sizeof(E);
  const int64_t rows = ceil_div(g.rows, P), cols = ceil_div(g.cols, P);  // in cells
  const TileWalk walk = TileWalk::of(g, ceil_div(rows, kCells), ceil_div(cols, kCells));
  const bool stream_out =
      g.batches() * g.rows * g.cols * int64_t(sizeof(E)) > current_device_info().l2_bytes;
  transpose_cells_kernel<E, Word, kCells>
      <<<block_per_item(walk.total), kCells * kCells, 0, stream>>>(in, out, g, walk, stream_out);
}

}  // namespace smem::cuda::transpose
