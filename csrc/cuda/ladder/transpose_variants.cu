// The technique ladder of transpose (torch.ops.smem._transpose_variant,
// smem_ops.variants("transpose")): x.transpose(-2, -1).contiguous() four ways, naive to best.
// Geometries that need no tile (the last dim is already the input's fastest) take row copies
// in every variant but naive.
#include <c10/util/Exception.h>

#include <iterator>
#include <string>
#include <vector>

#include "cuda/build_info.h"
#include "cuda/common.cuh"
#include "cuda/transpose/launch.h"
#include "cuda/transpose/rows.cuh"
#include "cuda/transpose/tile.cuh"
#include "transpose_geometry.h"

namespace smem::cuda {
namespace {

constexpr int kNaiveThreads = 256;
constexpr int kNaiveBlocksPerSm = 16;

// naive: one element per thread; lanes walk the output's last dim, so writes coalesce and
// reads stride by a whole row. Costs: each 32-byte sector read serves one element.
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
    out[out_off + r * g.row_out_stride + c] =
        in[in_off + r * g.row_in_stride + c * g.col_in_stride];
  }
}

enum class Variant { kNaive, kSmemUnpadded, kSmemPadded, kFinal };

// Indexed by Variant.
constexpr const char* kVariantNames[] = {
    // naive: transpose_naive_kernel above.
    "naive",
    // smem_unpadded: a 32 x 32 tile in shared memory (transpose_tile_kernel): reads and writes
    // both coalesce. Costs: the write phase reads a tile column, 32 lanes in one bank (32-way
    // conflict).
    "smem_unpadded",
    // smem_padded: the same tile with rows of 33 elements, so the column's elements fall in 32
    // different banks. Costs: one element per access, so a warp moves 32 to 128 bytes.
    "smem_padded",
    // final: what smem.transpose runs (transpose/transpose.cu): whole 8- or 16-byte words per
    // access, short sides interleaved in registers, skinny matrices staged whole, a plain copy
    // where no element moves, tiny or short-sided inputs gathered without a tile. Not listed:
    // "final:gather" (no interleave), "final:staged" (no interleave, no gather) and
    // "final:few_blocks" (staged, the word cells on 3 blocks). Costs: the most code and a
    // decision per launch.
    "final",
};
static_assert(std::size(kVariantNames) == static_cast<size_t>(Variant::kFinal) + 1);

template <typename E>
void launch_typed(const void* in_ptr, void* out_ptr, const TransposeGeometry& g, Variant variant,
                  cudaStream_t stream) {
  using transpose::PlainBlock;
  const E* in = static_cast<const E*>(in_ptr);
  E* out = static_cast<E*>(out_ptr);
  if (variant == Variant::kNaive) {
    transpose_naive_kernel<E>
        <<<grid_for(g.batches() * g.rows * g.cols, kNaiveThreads, kNaiveBlocksPerSm), kNaiveThreads,
           0, stream>>>(in, out, g);
  } else if (!g.tiled) {
    transpose::launch_rows(in, out, g, stream);
  } else if (variant == Variant::kSmemUnpadded) {
    transpose::launch_tiles<E, PlainBlock<E>, 32, 0>(in, out, g, stream);
  } else {
    transpose::launch_tiles<E, PlainBlock<E>, 32, 1>(in, out, g, stream);
  }
  SMEM_LAUNCH_CHECK();
}

}  // namespace

void launch_transpose_variant(const void* in, void* out, int64_t element_size,
                              const TransposeGeometry& g, int variant, cudaStream_t stream) {
  TORCH_CHECK_VALUE(variant >= 0 && variant < static_cast<int>(Variant::kFinal),
                    "smem: no transpose variant ", variant);
  dispatch_element_size(element_size, [&](auto e) {
    launch_typed<decltype(e)>(in, out, g, static_cast<Variant>(variant), stream);
  });
}

std::vector<std::string> transpose_variants() {
  return {std::begin(kVariantNames), std::end(kVariantNames)};
}

}  // namespace smem::cuda
