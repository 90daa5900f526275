// Transpose tuning: every knob of the transpose kernels and of their decision
// (transpose/transpose.cu), with what it means. What each value was measured at:
// docs/PERFORMANCE.md.
#pragma once

#include <cstdint>

namespace smem::cuda::transpose {

// Tiny transposes (transpose_gather_kernel): up to kGatherMaxElements elements, one gathered
// per thread, in blocks of kGatherThreads; larger ones take the other kernels. The limit
// counts elements, not bytes: at 2^18 elements the staged kernels won for 1-, 2- and 4-byte
// elements alike, at 2^17 the gather did.
constexpr int64_t kGatherMaxElements = int64_t(1) << 17;
// ... and at any size (below 2^31 elements) where a side is at most kGatherShortMax and the
// interleave kernel does not apply (its conditions: interleave.cuh): there the skinny kernel's
// blocks move a few hundred bytes each.
constexpr int64_t kGatherShortMax = 4;
constexpr int kGatherThreads = 256;

// Short sides in registers (transpose_interleave_kernel): a side of 2..kInterleaveMax, a thread
// per 16 bytes of each line, in blocks of kInterleaveThreads (128: a block stages 2 KB x S of the
// run, within the 48 KB of static shared memory at S = 16). One kernel per side and direction.
constexpr int kInterleaveMax = 16;
constexpr int kInterleaveThreads = 128;
// Resident blocks per SM at least (__launch_bounds__) for S <= 3: a full SM (32 registers a
// thread, which those kernels fit without spilling) on the SMs that hold 2048 threads (sm_80,
// sm_90, sm_100; measured on sm_90), no bound on the 1024- and 1536-thread SMs, for which it
// would be out of range. Larger S take no bound: at S = 4, 32 registers spilled for 2-byte
// elements and for reading the run.
#if defined(__CUDA_ARCH__) && \
    (__CUDA_ARCH__ == 800 || __CUDA_ARCH__ == 900 || __CUDA_ARCH__ == 1000)
constexpr int kInterleaveFullSm = 2048 / kInterleaveThreads;
#else
constexpr int kInterleaveFullSm = 1;
#endif
constexpr int interleave_min_blocks(int side) { return side <= 3 ? kInterleaveFullSm : 1; }

// Element tiles (transpose_tile_kernel): a 32 x kTileThreadsY block, a warp per tile row.
constexpr int kTileThreadsX = 32;
constexpr int kTileThreadsY = 8;
// Side, in cells, of the element tiles the final variant falls back to: 64 for 4-byte
// elements (more loads in flight per thread), else 32.
template <typename E>
constexpr int kPlainTile = sizeof(E) == 4 ? 64 : 32;
// Side, in cells, of the 4-byte packed tiles (PackedBlock) for 1- and 2-byte elements.
constexpr int kPackedTile = 32;

// Word cells (transpose_cells_kernel): blocks of kCellThreads threads, tiles of kCellsPerTile x
// kCellsPerTile cells, a thread per cell. 16-byte words for 2- to 8-byte elements; 1-byte
// elements take 8-byte words (16-byte ones would need twice the registers, and tiles of 8 x 8
// cells for the planes to fit).
constexpr int kCellThreads = 256;
constexpr int kCellsPerTile = 16;
// Resident 16 x 16-tile blocks per SM at least (__launch_bounds__; 0: no bound): 6 for 1-byte
// elements, the 40 registers they fit without spilling (unbounded, ptxas takes 48: 5 blocks).
template <typename E>
constexpr int kCellsMinBlocks = sizeof(E) == 1 ? 6 : 0;
// Deep tiles for 1- and 4-byte elements: kDeepRowCells x kDeepColCells cells, two per thread,
// so a warp reads 32 words of each input line (512 bytes for fp32, 256 for uint8) and a thread
// has twice the words in flight; at least kDeepMinBlocks blocks resident per SM (registers on
// sm_90: 58 for fp32, 64 for uint8), and only where an SM holds that many (33 KB of planes each).
// Where the matrix has kDeepTilesPerSm of them per SM or more: below that, the 16 x 16 tiles'
// twice as many blocks fill the SMs better. (2-byte elements' planes would not fit 48 KB;
// 8-byte elements measured no faster.)
constexpr int kDeepRowCells = 32, kDeepColCells = 16, kDeepMinBlocks = 4;
constexpr double kDeepTilesPerSm = 2.5;
template <typename E>
constexpr bool kDeepCells = sizeof(E) == 1 || sizeof(E) == 4;
template <typename E>
constexpr int kCellWordBytes = sizeof(E) == 1 ? 8 : 16;
// Word-cell tiles in pairs: a block takes two tiles (but the grid stays at least one resident
// wave), and loads its second tile while it stores its first, for 2- and 4-byte elements in
// matrices of at most kPairedMaxL2Sizes L2 sizes (input bytes), where that was faster on sm_90
// (50 MB of L2). Larger matrices and 8-byte elements measured slower paired; 1-byte elements
// were not measured where the rule would pair them. The kernel holds a next tile's words
// whatever its grid, so the tiles that never pair pay those registers too.
constexpr int64_t kPairedMaxL2Sizes = 2;
inline bool paired_tiles(int64_t element_bytes, int64_t bytes, int64_t l2_bytes) {
  return (element_bytes == 2 || element_bytes == 4) && bytes <= kPairedMaxL2Sizes * l2_bytes;
}

// Skinny matrices (transpose_skinny_kernel): a short side of at most kSkinnyMax, staged whole,
// in chunks of kSkinnyBytes along the long side, by kSkinnyThreads threads.
constexpr int kSkinnyMax = 64;
constexpr int kSkinnyBytes = 256;  // per line segment
constexpr int kSkinnyThreads = 256;
// Resident skinny blocks per SM at least (__launch_bounds__): 4, so that a chunk per block of
// a 33 x 65536 bf16 matrix is one wave; 2 for 1-byte elements, whose 16-element vectors
// would spill at the 64 registers that 4 allow.
template <typename E>
constexpr int skinny_min_blocks() {
  return sizeof(E) == 1 ? 2 : 4;
}

// Row copies (transpose_rows_kernel): a block of kRowCopyThreads copies a row segment of
// kRowCopyPerThread elements per thread.
constexpr int kRowCopyThreads = 256;
constexpr int kRowCopyPerThread = 4;

}  // namespace smem::cuda::transpose
