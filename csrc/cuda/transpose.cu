// CUDA transpose, on the geometry of transpose.h (rows = the input's contiguous dim, staged
// through a tile; cols = the output's last dim).
//
// The ladder (variants, for the benchmark):
//   naive          one element per thread; lanes walk the output's last dim, so writes
//                  coalesce and reads stride by a whole row (each 32-byte sector read serves
//                  one element).
//   smem_unpadded  a 32 x 32 tile in shared memory: reads and writes both coalesce, but the
//                  write phase reads a tile column, and 32 lanes hit one bank (32-way conflict).
//   smem_padded    the same tile with rows of 33 elements: the column's elements fall in 32
//                  different banks.
//   final          what smem.transpose runs: elements move as P x P cells of words, P per
//                  word, transposed in registers (transpose_cells_kernel): 16-byte words for
//                  2-, 4- and 8-byte elements, 8-byte words for 1-byte ones; layouts that
//                  don't align fall back to 4-byte words (PackedBlock), then to single
//                  elements; a plain device copy when the transpose moves no element.
// transpose_rows_kernel serves geometries whose last dim is already the input's fastest.
#include <ATen/ATen.h>
#include <torch/library.h>

#include "cuda/common.cuh"
#include "smem.h"
#include "transpose.h"

namespace smem::cuda {
// Kernels and their tile-cell types live in a named namespace: nvcc's generated launch stubs
// cannot name class templates of an anonymous namespace used as kernel template arguments.
namespace transpose_kernels {

constexpr int kTileThreadsX = 32;  // a warp walks a tile row
constexpr int kTileThreadsY = 8;
constexpr int kRowCopyThreads = 256;
constexpr int kRowCopyPerThread = 4;

// ---------------------------------------------------------------- tile elements

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
// host's check (packable) that rows are the input's unit-stride dim and every other stride is
// a multiple of P, so every interior block is word-aligned on both sides. Blocks cut by the
// matrix edge move element by element.
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

// ---------------------------------------------------------------- kernels

// kTile x kTile cells of Block (each P x P elements), rows of kTile + kPad cells.
template <typename E, typename Block, int kTile, int kPad>
__global__ void __launch_bounds__(kTileThreadsX* kTileThreadsY)
transpose_tile_kernel(const E* __restrict__ in, E* __restrict__ out, const TransposeGeometry g) {
  using Smem = typename Block::Smem;
  static_assert(kTile % kTileThreadsX == 0 && kTile % kTileThreadsY == 0, "tile shape");
  static_assert(kTile * (kTile + kPad) * sizeof(Smem) <= 48 * 1024, "tile exceeds static smem");
  __shared__ Smem tile[kTile][kTile + kPad];  // [col - c0][row - r0], in cells
  const int64_t rows = ceil_div(g.rows, Block::P), cols = ceil_div(g.cols, Block::P);
  const int64_t row_tiles = ceil_div(rows, kTile), col_tiles = ceil_div(cols, kTile);
  const int64_t per_batch = row_tiles * col_tiles;
  const int64_t total = g.batches() * per_batch;
  for (int64_t t = blockIdx.x; t < total; t += gridDim.x) {
    int64_t in_off, out_off;
    g.batch_offsets(t / per_batch, in_off, out_off);
    const int64_t r0 = (t % per_batch) / col_tiles * kTile;
    const int64_t c0 = (t % per_batch) % col_tiles * kTile;
    // Read: lanes walk the rows dim, the input's contiguous one. All loads of a thread are
    // independent, so the unrolled loops keep kTile^2 / 256 of them in flight.
#pragma unroll
    for (int jj = 0; jj < kTile / kTileThreadsY; ++jj)
#pragma unroll
      for (int ii = 0; ii < kTile / kTileThreadsX; ++ii) {
        const int j = threadIdx.y + jj * kTileThreadsY, i = threadIdx.x + ii * kTileThreadsX;
        if (r0 + i < rows && c0 + j < cols) tile[j][i] = Block::load(in + in_off, g, r0 + i, c0 + j);
      }
    __syncthreads();
    // Write: lanes walk the last output dim, contiguous in the output; they read a tile
    // column, which the padding spreads over the banks.
#pragma unroll
    for (int jj = 0; jj < kTile / kTileThreadsY; ++jj)
#pragma unroll
      for (int ii = 0; ii < kTile / kTileThreadsX; ++ii) {
        const int j = threadIdx.y + jj * kTileThreadsY, i = threadIdx.x + ii * kTileThreadsX;
        if (r0 + j < rows && c0 + i < cols) Block::store(out + out_off, g, r0 + j, c0 + i, tile[i][j]);
      }
    __syncthreads();  // the tile is refilled by the next iteration
  }
}

// Word cells: a cell is P x P elements, P = sizeof(Word) / sizeof(E), read as P words (word j
// = rows r0..r0+P-1 of input line c0+j), transposed in registers, and written as P words (word
// i = columns c0..c0+P-1 of output row r0+i). One cell per thread, a tile of kCells x kCells
// cells per block, so every global access is a whole word (16 or 8 bytes) and kCells lanes
// cover kCells words of one line. Shared memory holds P planes (one per output row of a cell)
// padded by one word: the write phase reads down a plane column, kCells + 1 words apart, which
// lands the lanes of each wavefront on distinct banks.
// Needs cells_aligned(); cells cut by the matrix edge move element by element.
template <typename E, typename Word, int kCells>
__global__ void __launch_bounds__(kCells* kCells)
transpose_cells_kernel(const E* __restrict__ in, E* __restrict__ out, const TransposeGeometry g,
                       bool stream_out) {
  constexpr int P = sizeof(Word) / sizeof(E);
  static_assert(P * kCells * (kCells + 1) * sizeof(Word) <= 48 * 1024, "planes exceed smem");
  __shared__ Word plane[P][kCells][kCells + 1];  // [output row in cell][col cell][row cell]
  const int64_t rows = ceil_div(g.rows, P), cols = ceil_div(g.cols, P);  // in cells
  const int64_t row_tiles = ceil_div(rows, kCells), col_tiles = ceil_div(cols, kCells);
  const int64_t per_batch = row_tiles * col_tiles;
  const int64_t total = g.batches() * per_batch;
  const int lane_fast = threadIdx.x % kCells, lane_slow = threadIdx.x / kCells;
  for (int64_t t = blockIdx.x; t < total; t += gridDim.x) {
    int64_t in_off, out_off;
    g.batch_offsets(t / per_batch, in_off, out_off);
    const int64_t rc0 = (t % per_batch) / col_tiles * kCells;
    const int64_t cc0 = (t % per_batch) % col_tiles * kCells;
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
            // (through the intrinsic: a plain uint4 store to an E* line compiled to four 4-byte
            // stores for 2- and 4-byte E; the time did not change, the L2 merges them)
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

// Skinny matrices: one side S <= kSkinnyMax (say 33 x 65536). Square tiles would leave most
// lanes idle on the short side, so a block takes a chunk of kSkinnyBytes along the long side
// and the whole short side. Seen from one end, the chunk is S line segments; from the other,
// it is one contiguous run of S * L elements. kFlatOut (the short side is the output's last
// dim): read S segments, write the run; otherwise read the run, write S segments.
// Both sides move in kVec-element vectors (16 bytes where the layout allows, else single
// elements) and a thread issues all its loads of a chunk before it stores any: a chunk is at
// most kSkinnyMax x 256 bytes, 4 vectors per thread, so it costs one memory round trip. (One
// 2-byte element per load, 4 loads at a time, took 5 round trips for 33 x 65536 bf16: 10.5-10.8
// us on the H100, against 8.9-9.7 us now, both ways.) The transposition happens between the
// tile and the run, element by element.
constexpr int kSkinnyMax = 64;
constexpr int kSkinnyBytes = 256;   // per line segment
constexpr int kSkinnyThreads = 256;
constexpr int kSkinnyInFlight = kSkinnyMax * kSkinnyBytes / 16 / kSkinnyThreads;  // 16-byte loads
template <typename E>
constexpr int skinny_chunk() { return kSkinnyBytes / sizeof(E); }  // elements per segment

// k / d for k < 2^16 and d <= kSkinnyMax, by a float reciprocal: (k + 0.5) / d sits at least
// 0.5 / d from an integer, far more than the float error, so the truncation is exact and an
// integer division (a long instruction sequence) is saved.
struct SmallDivisor {
  int d;
  float inverse;
  __device__ explicit SmallDivisor(int divisor) : d(divisor), inverse(1.f / divisor) {}
  __device__ void divmod(int k, int& q, int& r) const {
    q = static_cast<int>((static_cast<float>(k) + 0.5f) * inverse);
    r = k - q * d;
  }
};

// Tile rows of 256 bytes plus one 4-byte word (one element for wider ones): an odd number of
// words, so the run's walk down a tile column, which moves one row per element, lands in a
// new bank each time (a 2-byte pad put 8 lanes of a 33 x 65536 bf16 walk in one bank).
template <typename E>
constexpr int skinny_pitch() { return skinny_chunk<E>() + (sizeof(E) < 4 ? 4 / sizeof(E) : 1); }

// 4 blocks per SM at least, so a chunk per block of 33 x 65536 bf16 is one wave (2 for 1-byte
// elements, whose 16-element vectors would spill hundreds of bytes at 64 registers).
template <typename E>
constexpr int skinny_min_blocks() { return sizeof(E) == 1 ? 2 : 4; }

template <typename E, int kVec, bool kFlatOut>
__global__ void __launch_bounds__(kSkinnyThreads, skinny_min_blocks<E>())
transpose_skinny_kernel(const E* __restrict__ in, E* __restrict__ out, const TransposeGeometry g) {
  using VecE = Vec<E, kVec>;
  constexpr int L = skinny_chunk<E>();
  constexpr int kLineVecs = L / kVec;  // vectors per line segment
  static_assert(kSkinnyMax * L < (1 << 16), "SmallDivisor range");
  __shared__ E tile[kSkinnyMax][skinny_pitch<E>()];  // [short index][long index within the chunk]
  const int S = static_cast<int>(kFlatOut ? g.cols : g.rows);
  const int64_t n_long = kFlatOut ? g.rows : g.cols;
  const SmallDivisor by_short(S);
  const int64_t chunks = ceil_div(n_long, L);
  const int64_t total = g.batches() * chunks;
  // A loaded vector and the slot it came from: vector `slot` of the segments (line
  // slot / kLineVecs) or of the run.
  struct Loaded {
    int slot;
    VecE v;
  };
  for (int64_t t = blockIdx.x; t < total; t += gridDim.x) {
    int64_t in_off, out_off;
    g.batch_offsets(t / chunks, in_off, out_off);
    const int64_t l0 = (t % chunks) * L;
    const int len = static_cast<int>(std::min<int64_t>(L, n_long - l0));
    const int count = S * len;  // elements of the run
    // Line s of the segments starts at line(s); element l of the chunk is at line(s)[l * step].
    const E* in_lines = in + in_off + l0 * g.row_in_stride;
    E* out_lines = out + out_off + l0;
    // The run's element k = l * S + s is the chunk's (s, l); `run` walks it in that order.
    struct RunCursor {
      int l, s;
    };
    auto run_at = [&](int k) {
      RunCursor c;
      by_short.divmod(k, c.l, c.s);
      return c;
    };
    auto advance = [&](RunCursor& c) {
      if (++c.s == S) {
        c.s = 0;
        ++c.l;
      }
    };
    // Vector `slot` of the segments covers l = l_first .. l_first + kVec - 1 of line s, cut at len.
    auto segment_slot = [&](int slot, int& s, int& l_first) {
      s = slot / kLineVecs;
      l_first = slot % kLineVecs * kVec;
    };
    const int segment_slots = S * kLineVecs, run_slots = static_cast<int>(ceil_div(count, kVec));
    if constexpr (kFlatOut) {
      const int64_t step = g.row_in_stride;  // 1 wherever kVec > 1
      for_each_batched<kSkinnyInFlight>(
          threadIdx.x, segment_slots, kSkinnyThreads,
          [&](int64_t slot) {
            int s, l;
            segment_slot(static_cast<int>(slot), s, l);
            const E* p = in_lines + s * g.col_in_stride + l * step;
            Loaded x{static_cast<int>(slot), {}};
            if (l + kVec <= len) {
              x.v = *reinterpret_cast<const VecE*>(p);  // kVec == 1 or step == 1
            } else {
#pragma unroll
              for (int i = 0; i < kVec; ++i)
                if (l + i < len) x.v.v[i] = p[i * step];
            }
            return x;
          },
          [&](const Loaded& x) {
            int s, l;
            segment_slot(x.slot, s, l);
#pragma unroll
            for (int i = 0; i < kVec; ++i)
              if (l + i < len) tile[s][l + i] = x.v.v[i];
          });
      __syncthreads();
      E* run = out + out_off + l0 * S;  // row_out_stride == S: one run
      for (int kv = threadIdx.x; kv < run_slots; kv += kSkinnyThreads) {
        const int k = kv * kVec;
        RunCursor c = run_at(k);
        if (k + kVec <= count) {
          VecE v;
#pragma unroll
          for (int i = 0; i < kVec; ++i, advance(c)) v.v[i] = tile[c.s][c.l];
          store_vec(reinterpret_cast<VecE*>(run + k), v);
        } else {
          for (int i = 0; k + i < count; ++i, advance(c)) run[k + i] = tile[c.s][c.l];
        }
      }
    } else {
      const E* run = in + in_off + l0 * S;  // col_in_stride == S: one run
      for_each_batched<kSkinnyInFlight>(
          threadIdx.x, run_slots, kSkinnyThreads,
          [&](int64_t slot) {
            const int k = static_cast<int>(slot) * kVec;
            Loaded x{static_cast<int>(slot), {}};
            if (k + kVec <= count) {
              x.v = *reinterpret_cast<const VecE*>(run + k);
            } else {
#pragma unroll
              for (int i = 0; i < kVec; ++i)
                if (k + i < count) x.v.v[i] = run[k + i];
            }
            return x;
          },
          [&](const Loaded& x) {
            RunCursor c = run_at(x.slot * kVec);
#pragma unroll
            for (int i = 0; i < kVec; ++i) {
              if (x.slot * kVec + i < count) tile[c.s][c.l] = x.v.v[i];
              advance(c);
            }
          });
      __syncthreads();
      for (int slot = threadIdx.x; slot < segment_slots; slot += kSkinnyThreads) {
        int s, l;
        segment_slot(slot, s, l);
        if (l >= len) continue;
        E* p = out_lines + s * g.row_out_stride + l;
        if (l + kVec <= len) {
          VecE v;
#pragma unroll
          for (int i = 0; i < kVec; ++i) v.v[i] = tile[s][l + i];
          store_vec(reinterpret_cast<VecE*>(p), v);
        } else {
          for (int i = 0; l + i < len; ++i) p[i] = tile[s][l + i];
        }
      }
    }
    __syncthreads();  // the tile is refilled by the next iteration
  }
}

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

// Seed 1: lanes walk the output's last dim; the read of each element is a separate sector.
template <typename E>
__global__ void transpose_naive_kernel(const E* __restrict__ in, E* __restrict__ out,
                                       const TransposeGeometry g) {
  const int64_t per_batch = g.rows * g.cols;
  const int64_t total = g.batches() * per_batch;
  for (int64_t k = blockIdx.x * int64_t(blockDim.x) + threadIdx.x; k < total;
       k += int64_t(gridDim.x) * blockDim.x) {
    int64_t in_off, out_off;
    g.batch_offsets(k / per_batch, in_off, out_off);
    const int64_t r = k % per_batch / g.cols, c = k % g.cols;
    out[out_off + r * g.row_out_stride + c] = in[in_off + r * g.row_in_stride + c * g.col_in_stride];
  }
}

}  // namespace transpose_kernels

namespace {
using namespace transpose_kernels;

// ---------------------------------------------------------------- launch decisions

enum class Variant { kNaive, kSmemUnpadded, kSmemPadded, kFinal };

// One block per tile (or chunk, or row segment): the hardware starts each block as another
// finishes, which balances the load; the kernels stride over what is left past 2^31 - 1.
// Measured on the H100, fp32 16384^2: 97.0% of the copy ceiling with a block per tile,
// 94.1% with one wave of resident blocks striding over the tiles (65536 tiles don't divide
// evenly among 660 blocks, and the last ones run alone) and 92.2% with 8 blocks per SM
// striding (at 44 registers 5 are resident: a second, partial wave). fp64 8192^2: 95.0 /
// 93.9 / 83.1%.
inline unsigned block_per_item(int64_t items) {
  return static_cast<unsigned>(std::clamp<int64_t>(items, 1, INT32_MAX));
}

template <typename E, typename Block, int kTile, int kPad>
void launch_tiles(const E* in, E* out, const TransposeGeometry& g, cudaStream_t stream) {
  const int64_t rows = ceil_div(g.rows, Block::P), cols = ceil_div(g.cols, Block::P);
  const int64_t tiles = g.batches() * ceil_div(rows, kTile) * ceil_div(cols, kTile);
  transpose_tile_kernel<E, Block, kTile, kPad>
      <<<block_per_item(tiles), dim3(kTileThreadsX, kTileThreadsY), 0, stream>>>(in, out, g);
}

// Whether every batch offset, in and out, is a multiple of P elements: a batch then starts on
// the same word grid as the first.
inline bool batch_strides_multiple_of(const TransposeGeometry& g, int64_t P) {
  for (int i = 0; i < g.nbatch; ++i)
    if (g.batch_in_stride[i] % P != 0 || g.batch_out_stride[i] % P != 0) return false;
  return true;
}

// Whether P x P cells of `bytes`-wide words are aligned on both sides for this geometry and
// input pointer: rows are the input's unit-stride dim, every other stride (in elements) is a
// multiple of P, and the input starts on a word boundary (outputs are fresh allocations).
template <typename E>
bool cells_aligned(const E* in, const TransposeGeometry& g, int P, int word_bytes) {
  return g.tiled && g.row_in_stride == 1 && g.col_in_stride % P == 0 &&
         g.row_out_stride % P == 0 && is_aligned(in, word_bytes) && batch_strides_multiple_of(g, P);
}

template <typename E, typename Word, int kCells>
void launch_cells(const E* in, E* out, const TransposeGeometry& g, cudaStream_t stream) {
  constexpr int P = sizeof(Word) / sizeof(E);
  const int64_t rows = ceil_div(g.rows, P), cols = ceil_div(g.cols, P);
  const int64_t tiles = g.batches() * ceil_div(rows, kCells) * ceil_div(cols, kCells);
  // An output larger than the L2 is written evict-first: it can't stay cached for its reader
  // anyway, and its lines then make room for each other rather than push out the input's
  // (fp32 4096^2 on the H100: 81.5% -> 84.3% of the copy ceiling; 16384^2: 90.7% -> 92.1%).
  // Measured no gain from evict-first loads.
  const bool stream_out = g.batches() * g.rows * g.cols * int64_t(sizeof(E)) >
                          current_device_info().l2_bytes;
  transpose_cells_kernel<E, Word, kCells>
      <<<block_per_item(tiles), kCells * kCells, 0, stream>>>(in, out, g, stream_out);
}

// Tiles of 16 x 16 cells (256 threads). 16-byte words for 2- to 8-byte elements (bf16: cells
// of 8 x 8, tiles of 128 x 128 elements). 1-byte elements take 8-byte words (cells of 8 x 8,
// tiles of 128 x 128 bytes, 48 registers): 16-byte words made cells of 16 x 16 bytes at 96
// registers, and tiles of only 8 x 8 cells (64 threads) for the planes to fit. Measured on the
// H100 (tools/probe.py): uint8 4096^2 at 83.2% of the copy ceiling on a clean L2 against 74.4%,
// uint8 16384^2 at 91.0% against 90.1% (flushed L2). For bf16, 8-byte words (92.1% at 16384^2)
// and 8 x 8-cell tiles (91.7%) were slower than 16-byte words in 16 x 16 cells (95.5%).
template <typename E>
bool launch_word_cells(const E* in, E* out, const TransposeGeometry& g, cudaStream_t stream) {
  if constexpr (sizeof(E) > 8) {
    return false;  // 16-byte elements: one per cell (PlainBlock tiles)
  } else {
    using Word = std::conditional_t<sizeof(E) == 1, uint2, uint4>;
    constexpr int P = sizeof(Word) / sizeof(E);
    if (!cells_aligned(in, g, P, sizeof(Word))) return false;
    launch_cells<E, Word, 16>(in, out, g, stream);
    return true;
  }
}

// The skinny kernel applies where the short side is at most kSkinnyMax and its run is
// contiguous: the output rows (short side last) or the input columns (short side first).
// 16-byte vectors where the input pointer, the batch offsets, the lines' stride (and, for the
// segments read, their unit stride) all keep them aligned. Returns whether it launched.
template <typename E>
bool launch_skinny(const E* in, E* out, const TransposeGeometry& g, cudaStream_t stream) {
  constexpr int L = skinny_chunk<E>(), P = vec_width<E>();
  const bool flat_out = g.cols <= kSkinnyMax && g.rows > L && g.row_out_stride == g.cols;
  const bool flat_in = g.rows <= kSkinnyMax && g.cols > L && g.row_in_stride == 1 &&
                       g.col_in_stride == g.rows;
  if (!g.tiled || !(flat_out || flat_in)) return false;
  const bool vectors = P > 1 && is_aligned(in, 16) && batch_strides_multiple_of(g, P) &&
                       (flat_out ? g.row_in_stride == 1 && g.col_in_stride % P == 0 : g.row_out_stride % P == 0);
  const int64_t chunks = g.batches() * ceil_div(flat_out ? g.rows : g.cols, L);
  auto* kernel = flat_out ? (vectors ? transpose_skinny_kernel<E, P, true> : transpose_skinny_kernel<E, 1, true>)
                          : (vectors ? transpose_skinny_kernel<E, P, false> : transpose_skinny_kernel<E, 1, false>);
  kernel<<<block_per_item(chunks), kSkinnyThreads, 0, stream>>>(in, out, g);
  return true;
}

// The input is read in its own element order (a row copy whose batches tile memory exactly
// as the output does): one device copy.
bool is_plain_copy(const TransposeGeometry& g) {
  if (g.tiled || g.col_in_stride != 1) return false;
  for (int i = 0; i < g.nbatch; ++i)
    if (g.batch_in_stride[i] != g.batch_out_stride[i]) return false;
  return true;
}

template <typename E>
void launch_transpose(const void* in_ptr, void* out_ptr, const TransposeGeometry& g,
                      Variant variant) {
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const E* in = static_cast<const E*>(in_ptr);
  E* out = static_cast<E*>(out_ptr);
  if (variant == Variant::kNaive) {
    transpose_naive_kernel<E><<<grid_for(g.batches() * g.rows * g.cols, 256, 16), 256, 0, stream>>>(
        in, out, g);
  } else if (!g.tiled) {
    if (variant == Variant::kFinal && is_plain_copy(g)) {
      C10_CUDA_CHECK(cudaMemcpyAsync(out, in, g.batches() * g.cols * sizeof(E),
                                     cudaMemcpyDeviceToDevice, stream));
      return;
    }
    const int64_t segments = g.batches() * ceil_div(g.cols, kRowCopyThreads * kRowCopyPerThread);
    transpose_rows_kernel<E><<<block_per_item(segments), kRowCopyThreads, 0, stream>>>(in, out, g);
  } else if (variant == Variant::kFinal && launch_skinny(in, out, g, stream)) {
    // done: a short side, staged whole
  } else if (variant == Variant::kSmemUnpadded) {
    launch_tiles<E, PlainBlock<E>, 32, 0>(in, out, g, stream);
  } else if (variant == Variant::kSmemPadded) {
    launch_tiles<E, PlainBlock<E>, 32, 1>(in, out, g, stream);
  } else if (launch_word_cells(in, out, g, stream)) {
    // done: words of 8 or 16 bytes (elements of up to 8 bytes, where the layout allows)
  } else if constexpr (sizeof(E) <= 2) {
    // 4-byte packed words; then elements.
    if (cells_aligned(in, g, PackedBlock<E>::P, 4)) launch_tiles<E, PackedBlock<E>, 32, 1>(in, out, g, stream);
    else launch_tiles<E, PlainBlock<E>, 32, 1>(in, out, g, stream);
  } else {
    launch_tiles<E, PlainBlock<E>, sizeof(E) == 4 ? 64 : 32, 1>(in, out, g, stream);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

at::Tensor transpose_with(const at::Tensor& self, int64_t dim0, int64_t dim1, Variant variant) {
  return transpose_host(self, dim0, dim1,
                        [variant](const at::Tensor& x, at::Tensor& out, const TransposeGeometry& g) {
                          const c10::cuda::CUDAGuard guard(x.device());
                          dispatch_element_size(x.element_size(), [&](auto e) {
                            launch_transpose<decltype(e)>(x.const_data_ptr(),
                                                          out.mutable_data_ptr(), g, variant);
                          });
                        });
}

at::Tensor transpose_cuda(const at::Tensor& self, int64_t dim0, int64_t dim1) {
  return transpose_with(self, dim0, dim1, Variant::kFinal);
}

constexpr const char* kVariantNames[] = {"naive", "smem_unpadded", "smem_padded", "final"};

at::Tensor transpose_variant_cuda(const at::Tensor& self, c10::string_view variant) {
  for (int v = 0; v < 4; ++v)
    if (variant == kVariantNames[v]) return transpose_with(self, -2, -1, static_cast<Variant>(v));
  TORCH_CHECK_VALUE(false, "smem._transpose_variant: unknown variant '", variant,
                    "' (expected one of smem_ops.variants('transpose'))");
}

}  // namespace

std::vector<std::string> transpose_variants() {
  return {std::begin(kVariantNames), std::end(kVariantNames)};
}

}  // namespace smem::cuda

TORCH_LIBRARY_IMPL(smem, CUDA, m) {
  m.impl("transpose", &smem::cuda::transpose_cuda);
  m.impl("_transpose_variant", &smem::cuda::transpose_variant_cuda);
}
