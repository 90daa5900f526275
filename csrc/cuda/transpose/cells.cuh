// Word cells: the tile transpose with a whole 8- or 16-byte word per thread and access,
// transposed in registers, for elements of up to 8 bytes whose layout aligns (cells_aligned).
#pragma once

#include <algorithm>
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
// A block strides over tiles (launch_cells gives it one or two; tests, or grids past 2^31 - 1
// tiles, many): it issues the loads of its next tile before the stores of the current one, so
// where it has two its reads and writes overlap instead of taking turns. kMinBlocks: resident
// blocks per SM at least, 0 for no bound.
template <typename E, typename Word, int kRowCells, int kColCells, int kMinBlocks>
__global__ void __launch_bounds__(kCellThreads, kMinBlocks)
transpose_cells_kernel(const E* __restrict__ in, E* __restrict__ out, const TransposeGeometry g,
                       const TileWalk walk, bool stream_out) {
  constexpr int P = sizeof(Word) / sizeof(E);
  constexpr int kPerThread = kRowCells * kColCells / kCellThreads;
  constexpr int kTileRows = kRowCells * P, kTileCols = kColCells * P;  // in elements
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
  // A tile as this thread moves it: where its first word is read and written, and how many of
  // the tile's rows and cols lie inside the matrix (clipped to the tile). Small on purpose: a
  // block holds two while it reads one tile and writes the other.
  struct Tile {
    const E* src;  // row (in_fast * P) of line (in_slow * P) of the tile
    E* dst;        // output row (out_slow * P), column (out_fast * P) of the tile
    int rows, cols;
  };
  auto tile_at = [&](int64_t t) {
    int64_t batch, row_tile, col_tile, in_off, out_off;
    walk.locate(t, batch, row_tile, col_tile);
    g.batch_offsets(batch, in_off, out_off);
    const int64_t r0 = row_tile * kTileRows, c0 = col_tile * kTileCols;
    Tile x;
    x.src = in + in_off + (c0 + in_slow * P) * g.col_in_stride + r0 + in_fast * P;
    x.dst = out + out_off + (r0 + out_slow * P) * g.row_out_stride + c0 + out_fast * P;
    x.rows = static_cast<int>(std::min<int64_t>(g.rows - r0, kTileRows));
    x.cols = static_cast<int>(std::min<int64_t>(g.cols - c0, kTileCols));
    return x;
  };
  E v[kPerThread][P][P];  // v[k][j][i]: row r + i of line c + j of the tile read (r, c: load())
  auto load = [&](const Tile& x) {
    const int r = in_fast * P;
#pragma unroll
    for (int k = 0; k < kPerThread; ++k)
#pragma unroll
      for (int j = 0; j < P; ++j) {
        const int c = (in_slow + k * kInStep) * P + j;
        const E* line = x.src + int64_t(k * kInStep * P + j) * g.col_in_stride;
        if (r >= x.rows || c >= x.cols) {
#pragma unroll
          for (int i = 0; i < P; ++i) v[k][j][i] = E{};
        } else if (r + P <= x.rows) {
          const Word w = *reinterpret_cast<const Word*>(line);
          memcpy(v[k][j], &w, sizeof(w));
        } else {  // fixed trip count: a run-time bound would put v in local memory
#pragma unroll
          for (int i = 0; i < P; ++i) v[k][j][i] = r + i < x.rows ? line[i] : E{};
        }
      }
  };
  auto stage = [&] {
#pragma unroll
    for (int k = 0; k < kPerThread; ++k)
#pragma unroll
      for (int i = 0; i < P; ++i) {
        E row[P];
#pragma unroll
        for (int j = 0; j < P; ++j) row[j] = v[k][j][i];
        memcpy(&plane[i][in_slow + k * kInStep][in_fast], row, sizeof(Word));
      }
  };
  auto store = [&](const Tile& x) {
    const int c = out_fast * P;
    if (c >= x.cols) return;
#pragma unroll
    for (int k = 0; k < kPerThread; ++k) {
      const int row_cell = out_slow + k * kOutStep;
#pragma unroll
      for (int i = 0; i < P; ++i) {
        if (row_cell * P + i >= x.rows) continue;
        E* line = x.dst + int64_t(k * kOutStep * P + i) * g.row_out_stride;
        const Word w = plane[i][out_fast][row_cell];
        if (c + P <= x.cols) {
          // (through the intrinsic: a plain uint4 store to an E* line compiles to four 4-byte
          // stores for 2- and 4-byte E)
          if (stream_out) __stcs(reinterpret_cast<Word*>(line), w);  // evict-first
          else __stwb(reinterpret_cast<Word*>(line), w);
        } else {
          E row[P];
          memcpy(row, &w, sizeof(w));
#pragma unroll
          for (int j = 0; j < P; ++j)
            if (c + j < x.cols) line[j] = row[j];
        }
      }
    }
  };
  // the next tile's loads go out before this tile's stores
  int64_t t = blockIdx.x;
  if (t >= walk.total) return;
  Tile tile = tile_at(t);
  load(tile);
  for (;;) {
    stage();
    __syncthreads();
    const int64_t next = t + gridDim.x;
    const bool more = next < walk.total;
    Tile next_tile{};
    if (more) {
      next_tile = tile_at(next);
      load(next_tile);
    }
    store(tile);
    if (!more) break;
    __syncthreads();  // the planes are refilled from the next tile
    tile = next_tile;
    t = next;
  }
}

// The tiles of kRowCells x kColCells cells (of P x P elements) that cover g, in walk order.
template <typename E, typename Word, int kRowCells, int kColCells>
TileWalk cell_tiles(const TransposeGeometry& g) {
  constexpr int P = sizeof(Word) / sizeof(E);
  const int64_t rows = ceil_div(g.rows, P), cols = ceil_div(g.cols, P);  // in cells
  return TileWalk::of(g, ceil_div(rows, kRowCells), ceil_div(cols, kColCells));
}

// A block per tile, or per pair of tiles (paired_tiles in tuning/transpose.h), or at most
// max_blocks blocks where that is > 0 (tests: every block then strides over many tiles). An
// output larger than the L2 is written evict-first: it can't stay cached for its reader anyway,
// and its lines then make room for each other rather than push out the input's.
template <typename E, typename Word, int kRowCells, int kColCells, int kMinBlocks = 0>
void launch_cells(const E* in, E* out, const TransposeGeometry& g, int64_t max_blocks,
                  cudaStream_t stream) {
  const TileWalk walk = cell_tiles<E, Word, kRowCells, kColCells>(g);
  const DeviceInfo& device = current_device_info();
  const int64_t bytes = g.batches() * g.rows * g.cols * int64_t(sizeof(E));
  const bool stream_out = bytes > device.l2_bytes;
  auto* kernel = transpose_cells_kernel<E, Word, kRowCells, kColCells, kMinBlocks>;
  int64_t blocks = walk.total;
  if (max_blocks > 0) {
    blocks = std::min(blocks, max_blocks);
  } else if (paired_tiles(sizeof(E), bytes, device.l2_bytes)) {
    // two tiles a block, but no fewer blocks than the SMs hold at once
    const int64_t resident = resident_grid(kernel, kCellThreads, 0, walk.total, 1);
    blocks = std::max(resident, ceil_div(walk.total, 2));
  }
  kernel<<<block_per_item(blocks), kCellThreads, 0, stream>>>(in, out, g, walk, stream_out);
}

}  // namespace smem::cuda::transpose
