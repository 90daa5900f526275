// smem.transpose on CUDA, on the geometry of transpose_geometry.h (rows = the input's contiguous
// dim, staged through a tile; cols = the output's last dim). The decision, in order:
//   no element moves     one device copy (is_plain_copy)
//   no tile needed       row copies (rows.cuh)
//   tiny                 one element gathered per thread (gather.cuh)
//   a side of 2..16      16-byte vectors of each line interleaved in registers (interleave.cuh)
//   a side <= 4          gathered, where the interleave kernel does not apply
//   a short side <= 64   staged whole (skinny.cuh)
//   aligned layouts      P x P cells of 8- or 16-byte words, transposed in registers (cells.cuh);
//                        two cells a thread in deep tiles for 1- and 4-byte elements of a
//                        matrix with enough tiles, on SMs that hold 4 of their blocks; two
//                        tiles a block, the second's loads under the first's stores, for
//                        2- and 4-byte elements in matrices of up to 2 L2 sizes
//   otherwise            element tiles (tile.cuh): 4-byte packed cells for 1- and 2-byte
//                        elements where they align, else one element per cell.
// Knobs: tuning/transpose.h. The technique ladder (naive, unpadded and padded tiles, final):
// ladder/transpose_variants.cu.
#include <type_traits>

#include "cuda/common.cuh"
#include "cuda/transpose/cells.cuh"
#include "cuda/transpose/gather.cuh"
#include "cuda/transpose/interleave.cuh"
#include "cuda/transpose/launch.h"
#include "cuda/transpose/rows.cuh"
#include "cuda/transpose/skinny.cuh"
#include "cuda/transpose/tile.cuh"
#include "cuda/tuning/transpose.h"
#include "transpose_geometry.h"

namespace smem::cuda {
namespace {
using namespace transpose;

// Whether P x P cells of `bytes`-wide words are aligned on both sides for this geometry and
// input pointer: rows are the input's unit-stride dim, every other stride (in elements) is a
// multiple of P, and the input starts on a word boundary (outputs are fresh allocations).
template <typename E>
bool cells_aligned(const E* in, const TransposeGeometry& g, int P, int word_bytes) {
  return g.tiled && g.row_in_stride == 1 && g.col_in_stride % P == 0 && g.row_out_stride % P == 0 &&
         is_aligned(in, word_bytes) && g.batch_strides_multiple_of(P);
}

// Tiles of P x P-element cells of kCellWordBytes<E>-byte words (bf16: cells of 8 x 8 elements,
// tiles of 128 x 128): deep tiles where kDeepCells<E>, the matrix has enough of them and an SM
// holds kDeepMinBlocks of their blocks (sm_80, sm_90, sm_100; not the SMs of 100 KB or less of
// shared memory), else kCellsPerTile x kCellsPerTile cells. Returns whether it launched.
template <typename E>
bool launch_word_cells(const E* in, E* out, const TransposeGeometry& g, int64_t max_blocks,
                       cudaStream_t stream) {
  if constexpr (sizeof(E) > 8) {
    return false;  // 16-byte elements: one per cell (PlainBlock tiles)
  } else {
    using Word = std::conditional_t<kCellWordBytes<E> == 8, uint2, uint4>;
    constexpr int P = sizeof(Word) / sizeof(E);
    if (!cells_aligned(in, g, P, sizeof(Word))) return false;
    if constexpr (kDeepCells<E>) {
      auto* deep_kernel =
          transpose_cells_kernel<E, Word, kDeepRowCells, kDeepColCells, kDeepMinBlocks>;
      const int64_t deep_tiles = cell_tiles<E, Word, kDeepRowCells, kDeepColCells>(g).total;
      const bool deep =
          static_cast<double>(deep_tiles) >= kDeepTilesPerSm * current_device_info().sm_count &&
          resident_blocks_per_sm(deep_kernel, kCellThreads) >= kDeepMinBlocks;
      if (deep) {
        launch_cells<E, Word, kDeepRowCells, kDeepColCells, kDeepMinBlocks>(in, out, g, max_blocks,
                                                                            stream);
        return true;
      }
    }
    launch_cells<E, Word, kCellsPerTile, kCellsPerTile, kCellsMinBlocks<E>>(in, out, g, max_blocks,
                                                                            stream);
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
  const bool flat_in =
      g.rows <= kSkinnyMax && g.cols > L && g.row_in_stride == 1 && g.col_in_stride == g.rows;
  if (!g.tiled || !(flat_out || flat_in)) return false;
  const bool vectors =
      P > 1 && is_aligned(in, 16) && g.batch_strides_multiple_of(P) &&
      (flat_out ? g.row_in_stride == 1 && g.col_in_stride % P == 0 : g.row_out_stride % P == 0);
  const int64_t batches = g.batches(), chunks = batches * ceil_div(flat_out ? g.rows : g.cols, L);
  auto pick = [&](auto batched) {
    constexpr bool B = decltype(batched)::value;
    return flat_out ? (vectors ? transpose_skinny_kernel<E, P, true, B>
                               : transpose_skinny_kernel<E, 1, true, B>)
                    : (vectors ? transpose_skinny_kernel<E, P, false, B>
                               : transpose_skinny_kernel<E, 1, false, B>);
  };
  auto* kernel = batches > 1 ? pick(std::true_type{}) : pick(std::false_type{});
  kernel<<<block_per_item(chunks), kSkinnyThreads, 0, stream>>>(in, out, g, chunks);
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
void launch_typed(const void* in_ptr, void* out_ptr, const TransposeGeometry& g,
                  TransposeKernels allow, cudaStream_t stream) {
  const E* in = static_cast<const E*>(in_ptr);
  E* out = static_cast<E*>(out_ptr);
  if (!g.tiled) {
    if (is_plain_copy(g)) {
      SMEM_CUDA_CHECK(cudaMemcpyAsync(out, in, g.batches() * g.cols * sizeof(E),
                                      cudaMemcpyDeviceToDevice, stream));
      return;
    }
    launch_rows(in, out, g, stream);
  } else if (allow.gather && launch_gather(in, out, g, /*short_sides=*/false, stream)) {
    // done: tiny, no tile
  } else if (allow.interleave && launch_interleave(in, out, g, stream)) {
    // done: a short side, in registers
  } else if (allow.gather && launch_gather(in, out, g, /*short_sides=*/true, stream)) {
    // done: a short side the interleave kernel does not take, no tile
  } else if (launch_skinny(in, out, g, stream)) {
    // done: a short side, staged whole
  } else if (launch_word_cells(in, out, g, allow.cells_max_blocks, stream)) {
    // done: words of 8 or 16 bytes (elements of up to 8 bytes, where the layout allows)
  } else if constexpr (sizeof(E) <= 2) {
    // 4-byte packed words; then elements.
    if (cells_aligned(in, g, PackedBlock<E>::P, 4))
      launch_tiles<E, PackedBlock<E>, kPackedTile, 1>(in, out, g, stream);
    else launch_tiles<E, PlainBlock<E>, kPlainTile<E>, 1>(in, out, g, stream);
  } else {
    launch_tiles<E, PlainBlock<E>, kPlainTile<E>, 1>(in, out, g, stream);
  }
  SMEM_LAUNCH_CHECK();
}

}  // namespace

void launch_transpose(const void* in, void* out, int64_t element_size, const TransposeGeometry& g,
                      TransposeKernels allow, cudaStream_t stream) {
  dispatch_element_size(element_size,
                        [&](auto e) { launch_typed<decltype(e)>(in, out, g, allow, stream); });
}

}  // namespace smem::cuda
