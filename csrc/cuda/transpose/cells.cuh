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
// i = columns c0..c0+P-1 of output row r0+i), so every global access is a whole word (16 or 8
// bytes). A block of kCellThreads takes a tile of kRowCells x kColCells cells, kRowCells *
// kColCells / kCellThreads cells per thread, all of a thread's words loaded before any is stored.
// Reading, a warp's lanes take consecutive row cells of an input line (kRowCells words of it);
// writing, consecutive col cells of an output row (kColCells words). Shared memory holds P
// planes (one per output row of a cell) padded by one word: the write phase reads down a plane
// column, kRowCells + 1 words apart, which lands the lanes of each wavefront on distinct banks.
// Needs cells_aligned(); cells cut by the matrix edge move element by element.
// kMinBlocks: resident blocks per SM at least, 0 for no bound.
template <typename E, typename Word, int kRowCells, int kColCells, int kMinBlocks>
__global__ void __launch_bounds__(kCellThreads, kMinBlocks)
transpose_cells_kernel(const E* __restrict__ in, E* __restrict__ out, const TransposeGeometry g,
                       const TileWalk walk, bool stream_out) {
  constexpr int P = sizeof(Word) / sizeof(E);
  constexpr int kPerThread = kRowCells * kColCells / kCellThreads;
  static_assert(kPerThread * kCellThreads == kRowCells * kColCells &&
                    kCellThreads % kRowCells == 0 && kCellThreads % kColCells == 0,
                "a tile is whole passes of the block along each side");
  static_assert(P * kColCells * (kRowCells + 1) * sizeof(Word) <= 48 * 1024, "planes exceed smem");
  __shared__ Word plane[P][kColCells][kRowCells + 1];  // [output row in cell][col cell][row cell]
  // Reading: row cell in_fast of col cells in_slow + k * kInStep; writing: col cell out_fast of
  // row cells out_slow + k * kOutStep.
  constexpr int kInStep = kCellThreads / kRowCells, kOutStep = kCellThreads / kColCells;
  const int in_fast = threadIdx.x % kRowCells, in_slow = threadIdx.x / kRowCells;
  const int out_fast = threadIdx.x % kColCells, out_slow = threadIdx.x / kColCells;
  for (int64_t t = blockIdx.x; t < walk.total; t += gridDim.x) {
    int64_t batch, row_tile, col_tile, in_off, out_off;
    walk.locate(t, batch, row_tile, col_tile);
    g.batch_offsets(batch, in_off, out_off);
    const int64_t rc0 = row_tile * kRowCells, cc0 = col_tile * kColCells;  // in cells
    {
      const int64_t r0 = (rc0 + in_fast) * P;
      E v[kPerThread][P][P] = {};  // v[k][j][i] = element (r0 + i, c0(k) + j)
#pragma unroll
      for (int k = 0; k < kPerThread; ++k) {
        const int64_t c0 = (cc0 + in_slow + k * kInStep) * P;
        if (r0 >= g.rows || c0 >= g.cols) continue;
#pragma unroll
        for (int j = 0; j < P; ++j) {
          const E* line = in + in_off + (c0 + j) * g.col_in_stride + r0;
          if (c0 + j >= g.cols) continue;
          if (r0 + P <= g.rows) {
            const Word w = *reinterpret_cast<const Word*>(line);
            memcpy(v[k][j], &w, sizeof(w));
          } else {  // fixed trip count: a run-time bound would put v in local memory
#pragma unroll
            for (int i = 0; i < P; ++i)
              if (r0 + i < g.rows) v[k][j][i] = line[i];
          }
        }
      }
#pragma unroll
      for (int k = 0; k < kPerThread; ++k)
#pragma unroll
        for (int i = 0; i < P; ++i) {
          E row[P];
#pragma unroll
          for (int j = 0; j < P; ++j) row[j] = v[k][j][i];
          memcpy(&plane[i][in_slow + k * kInStep][in_fast], row, sizeof(Word));
        }
    }
    __syncthreads();
    {
      const int64_t c0 = (cc0 + out_fast) * P;
#pragma unroll
      for (int k = 0; k < kPerThread; ++k) {
        const int row_cell = out_slow + k * kOutStep;
        const int64_t r0 = (rc0 + row_cell) * P;
        if (r0 >= g.rows || c0 >= g.cols) continue;
#pragma unroll
        for (int i = 0; i < P; ++i) {
          if (r0 + i >= g.rows) continue;
          E* line = out + out_off + (r0 + i) * g.row_out_stride + c0;
          const Word w = plane[i][out_fast][row_cell];
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

// The tiles of kRowCells x kColCells cells (of P x P elements) that cover g, in walk order.
template <typename E, typename Word, int kRowCells, int kColCells>
TileWalk cell_tiles(const TransposeGeometry& g) {
  constexpr int P = sizeof(Word) / sizeof(E);
  const int64_t rows = ceil_div(g.rows, P), cols = ceil_div(g.cols, P);  // in cells
  return TileWalk::of(g, ceil_div(rows, kRowCells), ceil_div(cols, kColCells));
}

// One block per tile. An output larger than the L2 is written evict-first: it can't stay
// cached for its reader anyway, and its lines then make room for each other rather than push
// out the input's.
template <typename E, typename Word, int kRowCells, int kColCells, int kMinBlocks = 0>
void launch_cells(const E* in, E* out, const TransposeGeometry& g, cudaStream_t stream) {
  const TileWalk walk = cell_tiles<E, Word, kRowCells, kColCells>(g);
  const bool stream_out =
      g.batches() * g.rows * g.cols * int64_t(sizeof(E)) > current_device_info().l2_bytes;
  transpose_cells_kernel<E, Word, kRowCells, kColCells, kMinBlocks>
      <<<block_per_item(walk.total), kCellThreads, 0, stream>>>(in, out, g, walk, stream_out);
}

}  // namespace smem::cuda::transpose
