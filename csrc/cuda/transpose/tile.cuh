// Element tiles: the classic shared-memory transpose. A block stages a tile of cells through
// shared memory, reading along the input's contiguous dim and writing along the output's, so
// both sides coalesce. A cell is one element (PlainBlock) or, for 1- and 2-byte elements,
// a P x P block packed into a 4-byte word (PackedBlock). Geometry: transpose_geometry.h.
#pragma once

#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cuda/common.cuh"
#include "cuda/transpose/tile_walk.cuh"
#include "cuda/tuning/transpose.h"
#include "transpose_geometry.h"

namespace smem::cuda::transpose {

// One element per tile cell.
template <typename E>
struct PlainBlock {
  static constexpr int P = 1;
  using Smem = E;
  __device__ static Smem load(const E* in, const TransposeGeometry& g, int64_t r, int64_t c) {
    return in[r * g.row_in_stride + c * g.col_in_stride];
  }
  __device__ static void store(E* out, const TransposeGeometry& g, int64_t r, int64_t c, Smem v) {
    out[r * g.row_out_stride + c] = v;
  }
};

// A P x P block of 1- or 2-byte elements per tile cell, so a warp moves 128 bytes per access
// instead of 32 or 64. The block is read as P words, word j holding the P contiguous input
// elements (rows r0..r0+P-1) of column c0+j; it is transposed in registers with byte permutes
// (word i then holds columns c0..c0+P-1 of output row r0+i) and written as P words. Needs the
// host's check (cells_aligned) that rows are the input's unit-stride dim and every other
// stride is a multiple of P, so every interior block is word-aligned on both sides. Blocks cut
// by the matrix edge move element by element.
template <typename E>
struct PackedBlock {
  static_assert(sizeof(E) == 1 || sizeof(E) == 2, "packing is for 1- and 2-byte elements");
  static constexpr int P = 4 / sizeof(E);
  static constexpr int kBits = 8 * sizeof(E);
  using Smem = std::conditional_t<P == 4, uint4, uint2>;

  __device__ static void transpose(uint32_t (&w)[P]) {
    if constexpr (P == 4) {  // w[j] = [a_j0 a_j1 a_j2 a_j3] -> w[i] = [a_0i a_1i a_2i a_3i]
      const uint32_t t0 = __byte_perm(w[0], w[1], 0x5140), t1 = __byte_perm(w[2], w[3], 0x5140);
      const uint32_t t2 = __byte_perm(w[0], w[1], 0x7362), t3 = __byte_perm(w[2], w[3], 0x7362);
      w[0] = __byte_perm(t0, t1, 0x5410);
      w[1] = __byte_perm(t0, t1, 0x7632);
      w[2] = __byte_perm(t2, t3, 0x5410);
      w[3] = __byte_perm(t2, t3, 0x7632);
    } else {  // two halves per word
      const uint32_t w0 = w[0];
      w[0] = __byte_perm(w0, w[1], 0x5410);
      w[1] = __byte_perm(w0, w[1], 0x7632);
    }
  }
  __device__ static Smem load(const E* in, const TransposeGeometry& g, int64_t br, int64_t bc) {
    const int64_t r0 = br * P, c0 = bc * P;
    uint32_t w[P];
#pragma unroll
    for (int j = 0; j < P; ++j) {
      const E* line = in + (c0 + j) * g.col_in_stride + r0;
      w[j] = 0;
      if (c0 + j >= g.cols) continue;
      if (r0 + P <= g.rows) {
        w[j] = *reinterpret_cast<const uint32_t*>(line);
      } else {
        for (int i = 0; r0 + i < g.rows; ++i) w[j] |= static_cast<uint32_t>(line[i]) << (kBits * i);
      }
    }
    transpose(w);
    Smem v;
    memcpy(&v, w, sizeof(v));
    return v;
  }
  __device__ static void store(E* out, const TransposeGeometry& g, int64_t br, int64_t bc, Smem v) {
    const int64_t r0 = br * P, c0 = bc * P;
    uint32_t w[P];
    memcpy(w, &v, sizeof(v));
#pragma unroll
    for (int i = 0; i < P; ++i) {
      if (r0 + i >= g.rows) break;
      E* line = out + (r0 + i) * g.row_out_stride + c0;
      if (c0 + P <= g.cols) {
        *reinterpret_cast<uint32_t*>(line) = w[i];
      } else {
        for (int j = 0; c0 + j < g.cols; ++j) line[j] = static_cast<E>(w[i] >> (kBits * j));
      }
    }
  }
};

// kTile x kTile cells of Block (each P x P elements), rows of kTile + kPad cells.
template <typename E, typename Block, int kTile, int kPad>
__global__ void __launch_bounds__(kTileThreadsX * kTileThreadsY)
transpose_tile_kernel(const E* __restrict__ in, E* __restrict__ out, const TransposeGeometry g,
                      const TileWalk walk) {
  using Smem = typename Block::Smem;
  static_assert(kTile % kTileThreadsX == 0 && kTile % kTileThreadsY == 0, "tile shape");
  static_assert(kTile * (kTile + kPad) * sizeof(Smem) <= 48 * 1024, "tile exceeds static smem");
  __shared__ Smem tile[kTile][kTile + kPad];  // [col - c0][row - r0], in cells
  const int64_t rows = ceil_div(g.rows, Block::P), cols = ceil_div(g.cols, Block::P);
  for (int64_t t = blockIdx.x; t < walk.total; t += gridDim.x) {
    int64_t batch, row_tile, col_tile, in_off, out_off;
    walk.locate(t, batch, row_tile, col_tile);
    g.batch_offsets(batch, in_off, out_off);
    const int64_t r0 = row_tile * kTile, c0 = col_tile * kTile;
    // Read: lanes walk the rows dim, the input's contiguous one. All loads of a thread are
    // independent, so the unrolled loops keep kTile^2 / 256 of them in flight.
#pragma unroll
    for (int jj = 0; jj < kTile / kTileThreadsY; ++jj)
#pragma unroll
      for (int ii = 0; ii < kTile / kTileThreadsX; ++ii) {
        const int j = threadIdx.y + jj * kTileThreadsY, i = threadIdx.x + ii * kTileThreadsX;
        if (r0 + i < rows && c0 + j < cols)
          tile[j][i] = Block::load(in + in_off, g, r0 + i, c0 + j);
      }
    __syncthreads();
    // Write: lanes walk the last output dim, contiguous in the output; they read a tile
    // column, which the padding spreads over the banks.
#pragma unroll
    for (int jj = 0; jj < kTile / kTileThreadsY; ++jj)
#pragma unroll
      for (int ii = 0; ii < kTile / kTileThreadsX; ++ii) {
        const int j = threadIdx.y + jj * kTileThreadsY, i = threadIdx.x + ii * kTileThreadsX;
        if (r0 + j < rows && c0 + i < cols)
          Block::store(out + out_off, g, r0 + j, c0 + i, tile[i][j]);
      }
    __syncthreads();  // the tile is refilled by the next iteration
  }
}

// One block per tile; kPad = 1 pads each tile row by a cell, so the write phase's walk down a
// tile column meets 32 different banks (kPad = 0: all 32 lanes in one bank).
template <typename E, typename Block, int kTile, int kPad>
void launch_tiles(const E* in, E* out, const TransposeGeometry& g, cudaStream_t stream) {
  const int64_t rows = ceil_div(g.rows, Block::P), cols = ceil_div(g.cols, Block::P);
  const TileWalk walk = TileWalk::of(g, ceil_div(rows, kTile), ceil_div(cols, kTile));
  transpose_tile_kernel<E, Block, kTile, kPad>
      <<<block_per_item(walk.total), dim3(kTileThreadsX, kTileThreadsY), 0, stream>>>(in, out, g,
                                                                                      walk);
}

}  // namespace smem::cuda::transpose
