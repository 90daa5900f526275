// Reduction tuning: every knob of the sum kernels and of their launch decision
// (reduce/reduce.cu), with what it means. What each value was measured at: docs/PERFORMANCE.md.
#pragma once

#include <cstdint>

namespace smem::cuda::reduce {

// Threads of every reduction block (rows: 8 warps; columns: 32 x 8 or 8 x 32).
constexpr int kBlockThreads = 256;
// Independent 16-byte loads each thread keeps in flight.
constexpr int kLoadsInFlight = 4;
// Whole fp32 rows of one block each that the vector rows below do not take (off alignment, not
// whole vectors, dots): loads in flight per thread, so that a row of up to 8192 is one batch, one
// wait. (Not for bf16, whose kernel would then hold too many registers, nor for split rows.)
constexpr int kWholeRowFloatLoadsInFlight = 8;
// Rows up to this length get a warp each; longer ones a block (or several: splits). Aligned
// rows of whole vectors of fp32, fp16 and bf16, summed or squared, take a group of lanes each
// instead, up to kGroupMaxVectors vectors (fp32 rows of up to 512, 16-bit ones of up to 1024):
// as many lanes as give a lane at most kGroupLoadsInFlight vectors (a power of two, at most a
// warp), each with kGroupLoadsInFlight loads in flight. Longer such rows take the vector rows
// below, a block each, and so do rows past a warp's batch (over 64 vectors) up to
// kVectorRowMaxHalfWaves half waves of blocks of kVectorRowMinThreads, a vector a thread (a wave:
// as many as are resident at once; docs/PERFORMANCE.md: "Fewer loads in flight for the groups",
// "Few short rows: a block each", "The groups' crossover").
constexpr int64_t kWarpRowMax = 4096;
constexpr int64_t kGroupMaxVectors = 128;
constexpr int kGroupLoadsInFlight = 2;
constexpr int64_t kVectorRowMaxHalfWaves = 3;  // one and a half waves, in halves to stay integral
// Long rows are split over blocks until the device has this many per SM (fewer where fewer
// are resident): 3 x 256 threads x 4 x 16 bytes in flight per SM already cover the memory
// latency, and more splits only add partials.
constexpr int kRowBlocksPerSm = 3;
// A split of a row gives each thread at least this many 16-byte vectors.
constexpr int64_t kMinVectorsPerThread = 4;
// fp32 rows that would be split, and that the vector runs below do not take (rows off 16-byte
// alignment or not whole vectors long, dots), are split into contiguous runs instead, one per
// block of kRunThreads, wherever that gives a row two runs or more (each thread takes at least
// kMinVectorsPerThread vectors; shorter rows, and rows too many to split twice, keep the
// interleaved kernel): one run per kRunBytes of the row (of each operand, for dot), but at
// least kRunBlocksPerSm and at most kRunMaxBlocksPerSm blocks per SM in all, rounded down to a
// power of two (64 MB: 1024 runs; 256 MB and up: 4096 on 132 SMs). More blocks than are resident at
// once (3 per SM at fp32's registers) measured faster than a grid of the resident blocks: the SMs
// pick up short runs as they free, which evens out their ends. Past 32 per SM, runs of 64 KB were
// slower again (1 GB in 16384 runs) on one of two H100s (docs/PERFORMANCE.md).
constexpr int kRunThreads = 512;
// fp16 sums and sums of squares of rows that are not aligned whole vectors (those take the
// vector runs below) take runs too, in a kernel of their own: kHalfRunLoadsInFlight
// loads in flight, held to 32 registers so that kHalfRunMinBlocks blocks of 512 are resident per
// SM (a 32 MB row's 512 runs are one wave), each thread at least kHalfRunMinVectorsPerThread
// vectors (a 2 MB row: 128 runs; the vector runs' 16-bit rows take the same minimum). On an H200
// (132 SMs), measured on aligned rows, which take the vector runs since: fp16 16M 13.54-13.57 ->
// 12.96-12.99 us, 1M 4.16-4.19 -> 3.94; on the odd rows left to this kernel it was not timed. bf16
// rows that are not aligned whole vectors keep the interleaved kernel (in these runs, measured on
// aligned rows: 16M 13.0 -> 12.9, but 1M 3.9 -> 4.0), and so do fp16 and bf16 dots (the fp16 dot's
// runs kernel spills at 32 registers; docs/PERFORMANCE.md).
constexpr int kHalfRunLoadsInFlight = 2;
constexpr int kHalfRunMinBlocks = 4;
constexpr int64_t kHalfRunMinVectorsPerThread = 2;
constexpr int kRunBlocksPerSm = 4;
constexpr int kRunMaxBlocksPerSm = 32;
constexpr int64_t kRunBytes = int64_t(64) << 10;
// Split rows of whole 16-byte vectors from a 16-byte aligned start (sums and sums of squares of
// fp32, fp16 and bf16) take reduce_vector_runs_kernel instead: no head or tail, the evict-first
// choice compiled in, 32 registers so that kVectorRunMinBlocks blocks of 512 are resident per SM,
// kVectorRunLoadsInFlight<T> loads in flight, one run per kVectorRunBytes within the same
// kRunBlocksPerSm to kRunMaxBlocksPerSm per SM (so a 64 MB row is one wave of 512 runs, where 64
// KB runs gave 1024 and two waves; docs/PERFORMANCE.md: "Vector runs"). Such rows that are not
// split (too many or too short) take reduce_vector_rows_kernel, a block of the same shape per
// row, where the interleaved kernel's 256 threads held 8 loads each at 58 registers
// (docs/PERFORMANCE.md: "Vector rows").
constexpr int kVectorRunMinBlocks = 4;
constexpr int64_t kVectorRunBytes = int64_t(128) << 10;
template <typename T>
inline constexpr int kVectorRunLoadsInFlight = sizeof(T) == 2 ? 2 : 4;
// The vector rows' blocks shrink for short rows, a power of two from kVectorRowMinThreads up
// to kRunThreads, to give each thread about kVectorRowVectorsPerThread vectors (with the same
// registers: kVectorRunMinBlocks x kRunThreads threads resident per SM); rows of at most
// kVectorRowMinThreads vectors one a thread, through a path without a loop (docs/PERFORMANCE.md:
// "Smaller blocks", "One vector a thread").
constexpr int kVectorRowMinThreads = 128;
constexpr int64_t kVectorRowVectorsPerThread = 2;
// Column sums: a thread sums at least this many rows, and the rows are split over blocks
// (each a contiguous run of rows) only until the device has kColBlocksPerSm blocks per SM
// (fewer where fewer are resident): 4 x 256 threads x 4 (or kColFloatLoadsInFlight) x 16 bytes
// in flight per SM (scalar columns: kColScalarLoadsInFlight loads), where 2 left the mid-dim fp32
// sums 2-3% slower and 3 gained nothing.
constexpr int64_t kMinRowsPerThread = 16;
constexpr int kColBlocksPerSm = 4;
// Where that leaves the device short of blocks, at most sms / kColShortOfBlocks (narrow columns of
// small inputs: bf16 8192 x 64 took 16 blocks for 132 SMs, 6.4 us against torch.compile's 3.3),
// the split goes on down to kColShortRowsPerThread rows a thread, up to about a block per SM (6.4
// -> 4.7). Not where about half the SMs had a block or more: 128 -> 132 blocks took bf16 65536 x
// 64 from 8.9 to 10.3 us, 64 -> 132 fp32 4096 x 256 from 5.9 to 6.6 (docs/PERFORMANCE.md: "Narrow
// columns"; no grid of 34 to 63 blocks measured). Measured on kernels of 4 loads in flight, whose
// batch these 4 rows fill; the kernels of 8 and 16 (kColFloatLoadsInFlight, kColHalfLoadsInFlight,
// kColScalarLoadsInFlight) and the fp64, integer and complex sums, not timed.
constexpr int64_t kColShortRowsPerThread = 4;
constexpr int kColShortOfBlocks = 4;
// Column sums whose tiles (a block each) number at least kShortColMinTilesPerRow per row take a
// thread per 16-byte vector of columns instead (short_cols.cuh): a block of 256 threads then had
// a few rows, or a few columns, to add, and the tiles' blocks, not the bytes, set the time (bf16
// (2^20, 2, 8) over dim 1 5.5 ms, against 20 us). Where the tiles are fewer, a thread's chain of
// R / kLoadsInFlight round trips is the longer wait (docs/PERFORMANCE.md: "Short columns").
// Measured where both kernels' one-column lanes had kLoadsInFlight loads in flight; the column
// kernel's now have kColScalarLoadsInFlight, and that crossover was not measured again.
constexpr int64_t kShortColMinTilesPerRow = 64;
// Column sums of slabs whose rows are 1, 2, 4, 8 or 16 16-byte vectors (fp32, fp16, bf16) take a
// warp per slab (short_cols.cuh) where there are at least kSlabWarpsPerSm slabs per SM and a row
// for every lane: the column kernel's 8 lanes per row idle below 8 vectors, and a thread per
// vector waits out R loads in a row. Not where the warps' waves of round trips are more than 1 /
// kSlabWarpRoundCost of the threads' (many slabs of few rows a lane: bf16 (32768, 64, 8), 20.4 us
// a thread per vector, 36.4 a warp per slab; docs/PERFORMANCE.md: "Short columns").
constexpr int64_t kSlabWarpsPerSm = 8;
constexpr int64_t kSlabWarpRoundCost = 2;
// 16-byte loads in flight per thread in column sums of fp32 rows of 32 vectors or more (32
// lanes): 8, where 4 left the (32, 4096, 128) and 4096^2 sums 0.6 us slower (docs/PERFORMANCE.md).
// The kernel then takes 64 registers (sm_90; 48 with 4), so 4 blocks of 256 are resident per SM,
// not 5: that is still kColBlocksPerSm, but one register more would cost the splits a block per
// SM. Not for 8 lanes (fp32 (32, 8192, 64) 0.8 us slower), bf16 rows (8192^2 bf16 several us
// slower) or scalar columns (kColScalarLoadsInFlight, below).
constexpr int kColFloatLoadsInFlight = 8;
// Loads in flight per thread in column sums of one column a lane (rows not of whole 16-byte
// vectors, or unaligned): scalar loads, kColScalarLoadsInFlight of them but at most
// kColScalarBytesInFlight bytes (and at least kLoadsInFlight loads). kLoadsInFlight left a thread
// 8 bytes of 16-bit columns in flight, and the round trips set the time. On an H200, 2-byte
// elements took 16 loads (32 bytes; 32 loads were slower on 7 of 8 cases, 0.2 us faster on bf16
// 4096 x 1001), 4-byte 16 (64 bytes; 8 were slower), 8-byte 8 (one fp64 case; 4 were slower);
// 1-byte ones take 16, not compared against 32 (docs/PERFORMANCE.md: "Scalar columns").
constexpr int kColScalarLoadsInFlight = 16;
constexpr int kColScalarBytesInFlight = 64;
// fp16 and bf16 sums and sums of squares over columns of rows of at least kColHalfMinColumns
// (32 lanes' worth): 8-byte vectors of kColHalfWidth columns, kColHalfLoadsInFlight loads in
// flight, kColBlocksPerSm blocks per SM (64 registers; bf16 spills 12 bytes since its sums
// dropped the finiteness guard for a fallback sum, cb7d722). The 16-byte kernel's 8 guarded
// compensated sums a thread took 86-88 registers for bf16 (2 blocks per SM; fp16 70, 3): on an
// H200, bf16 8192^2 over dim 0 43.7-43.8 -> 41.5-41.7 us, (32, 4096, 128) over dim 1 14.7
// -> 14.2-14.3 (docs/PERFORMANCE.md: "Half-word columns"). Not for narrower rows: (32, 8192,
// 64) 14.5 -> 15.9 in 8 lanes. (Dots never sum columns: they reduce 1-D inputs.)
constexpr int kColHalfWidth = 4;
constexpr int64_t kColHalfMinColumns = 32 * kColHalfWidth;
constexpr int kColHalfLoadsInFlight = 8;
// Column sums read evict-first up to this many L2 sizes, fewer than the others
// (kStreamOnceL2Sizes): 8192^2 fp32 (5 L2 sizes) took 100.3-100.6 us so, 99.4-99.5 without.
constexpr int kColStreamOnceL2Sizes = 4;

}  // namespace smem::cuda::reduce
