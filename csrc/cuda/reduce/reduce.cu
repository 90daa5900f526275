// sum, sum_of_squares and dot on CUDA. Every reduction is a contiguous [outer, reduced, inner]
// view (reduce.h), served by three kernels:
//   reduce_rows_kernel (inner == 1, rows.cuh): a warp or a block per row, long rows split
//     over blocks; a full reduction is one row split across the whole GPU.
//   reduce_row_runs_kernel (rows.cuh): split fp32 rows, one contiguous run per block,
//     partials handed over through flagged slots (split_slots.cuh); fp16 sums and sums of
//     squares the same in reduce_half_row_runs_kernel (kRowRuns).
//   reduce_vector_runs_kernel (rows.cuh): the same for sums and sums of squares of aligned
//     fp32, fp16 and bf16 rows of whole 16-byte vectors, without a head or tail (kVectorKernels);
//     reduce_vector_rows_kernel takes such rows whole where they are not split, a block each
//     (smaller blocks for short rows, a vector a thread up to 128), and
//     reduce_vector_groups_kernel short rows of up to 64 vectors, and of up to 128 past one and
//     a half waves of blocks, a group of lanes each.
//   reduce_cols_kernel (inner > 1, cols.cuh): a block per tile of adjacent columns, 16-byte
//     vectors of them where rows are aligned (8-byte ones for wide fp16 and bf16 sums); long
//     columns, and short ones where the tiles leave the device short of blocks, split over
//     blocks. Where the tiles are many for their rows, reduce_short_cols_kernel
//     (short_cols.cuh) instead: a thread per 16-byte vector of columns, down all the rows; and
//     many slabs of rows of 1, 2, 4, 8 or 16 vectors, reduce_slab_warps_kernel, a warp each.
// Split results are combined on the device, with no float atomics: each block writes its
// partial, and the block with the last ticket (an integer counter) sums the partials in block
// order. Split float rows take their tickets as they start where no block waits behind them
// (split_slots.cuh): always in the interleaved kernel, whose splits keep its grid resident,
// and in the runs kernel for one row or a resident grid. The rest take them as they finish.
// The order of every addition is fixed, so results are bitwise reproducible.
// Knobs: tuning/reduce.h. The technique ladder of full sums: ladder/sum_variants.cu.
#include <c10/core/ScalarType.h>
#include <c10/util/Exception.h>

#include <algorithm>
#include <type_traits>

#include "cuda/common.cuh"
#include "cuda/reduce/cols.cuh"
#include "cuda/reduce/launch.h"
#include "cuda/reduce/rows.cuh"
#include "cuda/reduce/short_cols.cuh"
#include "cuda/tuning/reduce.h"
#include "reduce_element.h"

namespace smem::cuda {
namespace {
using namespace reduce;

// How many blocks share one row (or one column tile) so the device has enough blocks in
// flight: `blocks_per_sm` per SM at most, and no more than are resident at once.
template <typename Kernel>
int choose_splits(Kernel* kernel, int64_t independent_blocks, int64_t work_per_row,
                  int64_t min_work_per_split, int blocks_per_sm) {
  const int resident = resident_blocks_per_sm(kernel, kBlockThreads);
  const int64_t sms = current_device_info().sm_count;
  const int64_t fill = sms * std::min(blocks_per_sm, resident);
  if (independent_blocks >= fill) return 1;
  // Rounding up must not leave a few blocks for a second wave, which would start only when
  // the first wave is done.
  const int64_t by_fill = std::min(ceil_div(fill, independent_blocks),
                                   std::max<int64_t>(1, sms * resident / independent_blocks));
  const int64_t by_work = std::max<int64_t>(1, work_per_row / min_work_per_split);
  return static_cast<int>(std::min<int64_t>({by_fill, by_work, 65535}));
}

// The start tickets and slots of `rows` rows split `splits` ways (split_slots.cuh), in one
// workspace that every launch leaves zeroed; nothing when there is one split.
struct SlotWorkspace {
  using Word = SlotCode<float>::Word;
  Scratch fresh;
  Word* slots = nullptr;
  unsigned* counters = nullptr;
  SlotWorkspace(int64_t splits, int64_t rows) {
    if (splits == 1) return;
    const int64_t counter_bytes = ceil_div(rows * int64_t(sizeof(unsigned)), 16) * 16;
    auto* work = static_cast<unsigned char*>(zeroed_workspace(
        counter_bytes + rows * splits * int64_t(sizeof(Word)), ZeroedUse::kCounters, fresh));
    counters = reinterpret_cast<unsigned*>(work);
    slots = reinterpret_cast<Word*>(work + counter_bytes);
  }
};

// Where split blocks leave their partial sums (`results` outputs x `splits` each) and the
// counters their last block is found with; nothing when there is one split.
template <typename A>
struct SplitWorkspace {
  Scratch partial, fresh_counters;
  A* partials = nullptr;
  unsigned* done = nullptr;
  SplitWorkspace(int splits, int64_t results, int64_t counters) {
    if (splits == 1) return;
    partial = device_scratch(results * splits * int64_t(sizeof(A)));
    partials = static_cast<A*>(partial.data);
    done = zeroed_counters(counters, fresh_counters);
  }
};

// Whether split rows' blocks take their tickets as they start (split_slots.cuh): the block that
// sums may then wait on an SM, so only where no block of the grid waits for a place behind it.
template <typename Kernel>
bool tickets_at_start(Kernel* kernel, int threads, int64_t splits, int64_t rows) {
  return rows == 1 || splits * rows <= int64_t(current_device_info().sm_count) *
                                           resident_blocks_per_sm(kernel, threads);
}

// Whether split rows of T take contiguous runs for map M: fp32, and fp16 but for dot
// (tuning/reduce.h).
template <ReduceMap M, typename T>
inline constexpr bool kRowRuns =
    std::is_same_v<T, float> || (std::is_same_v<T, c10::Half> && M != ReduceMap::kProduct);

// Whether rows of T take the vector kernels for map M, where they are aligned rows of whole
// vectors (reduce_vector_runs_kernel split, reduce_vector_rows_kernel whole,
// reduce_vector_groups_kernel short): sums and sums of
// squares of fp32, fp16 and bf16. Dots keep the other kernels: the fp32 dot in the vector runs
// (2 loads of each operand, 3 blocks per SM) lost 0.5-1 us (H200).
template <ReduceMap M, typename T>
inline constexpr bool kVectorKernels =
    M != ReduceMap::kProduct && (std::is_same_v<T, float> || kHalfFloat<T>);

// How many contiguous runs each of `rows` rows of length R is split into: one per `run_bytes`
// (kRunBytes, kVectorRunBytes), within kRunBlocksPerSm to kRunMaxBlocksPerSm blocks per SM in
// all, rounded down to a power of two, each thread at least kMinVectorsPerThread vectors
// (kHalfRunMinVectorsPerThread for 16-bit types). 1: the rows are too many or too short to split.
template <typename T>
int64_t row_run_splits(int64_t rows, int64_t R, int64_t run_bytes) {
  const int64_t sms = current_device_info().sm_count;
  const int64_t fill =
      std::clamp<int64_t>(R * int64_t(sizeof(T)) / run_bytes, sms * kRunBlocksPerSm / rows,
                          std::max<int64_t>(sms * kRunMaxBlocksPerSm / rows, 1));
  int64_t by_fill = 1;
  while (by_fill * 2 <= fill) by_fill *= 2;
  const int64_t min_vectors = sizeof(T) == 2 ? kHalfRunMinVectorsPerThread : kMinVectorsPerThread;
  return std::clamp<int64_t>(std::min(by_fill, R / (kRunThreads * vec_width<T>() * min_vectors)), 1,
                             65535);
}

// Aligned rows of whole vectors split into `splits` > 1 runs each (row_run_splits with
// kVectorRunBytes), where kVectorKernels.
template <ReduceMap M, typename T, typename O>
void launch_vector_runs(const T* a, O* out, int64_t rows, int64_t R, int64_t splits, bool streaming,
                        cudaStream_t stream) {
  static_assert(kVectorKernels<M, T>,
                "vector runs serve sums and sums of squares (kVectorKernels)");
  constexpr int64_t V = vec_width<T>();
  TORCH_INTERNAL_ASSERT(splits > 1 && rows <= 65535 && whole_vector_rows(a, R),
                        "smem: vector runs need aligned rows of whole vectors, got ", rows,
                        " rows of ", R, " in ", splits, " runs");
  constexpr int L = kVectorRunLoadsInFlight<T>;
  auto* kernel =
      streaming ? reduce_vector_runs_kernel<M, kRunThreads, L, kVectorRunMinBlocks, true, T, O>
                : reduce_vector_runs_kernel<M, kRunThreads, L, kVectorRunMinBlocks, false, T, O>;
  SlotWorkspace work(splits, rows);
  const int64_t nvec = R / V;
  const dim3 grid(static_cast<unsigned>(splits), static_cast<unsigned>(rows));
  kernel<<<grid, kRunThreads, 0, stream>>>(a, out, work.slots, work.counters, nvec,
                                           ceil_div(nvec, splits), static_cast<int>(splits),
                                           tickets_at_start(kernel, kRunThreads, splits, rows));
}

// The vector rows' kernel in blocks of kThreads, with the registers of kVectorRunMinBlocks blocks
// of kRunThreads per SM; where kOneVector, for rows of at most kThreads vectors, one each.
template <ReduceMap M, int kThreads, bool kOneVector, typename T, typename O>
auto* vector_rows_kernel(bool streaming) {
  constexpr int L = kOneVector ? 1 : kVectorRunLoadsInFlight<T>;
  constexpr int B = kVectorRunMinBlocks * kRunThreads / kThreads;
  return streaming ? reduce_vector_rows_kernel<M, kThreads, L, B, true, kOneVector, T, O>
                   : reduce_vector_rows_kernel<M, kThreads, L, B, false, kOneVector, T, O>;
}

template <ReduceMap M, int kThreads, bool kOneVector, typename T, typename O>
void launch_vector_rows_in(const T* a, O* out, int64_t rows, int64_t nvec, bool streaming,
                           cudaStream_t stream) {
  if constexpr (kOneVector)
    TORCH_INTERNAL_ASSERT(nvec <= kThreads, "smem: one vector a thread, got ", nvec, " vectors");
  vector_rows_kernel<M, kThreads, kOneVector, T, O>(
      streaming)<<<block_per_item(rows), kThreads, 0, stream>>>(a, out, rows, nvec);
}

// Whether the groups take `rows` short aligned rows of `nvec` whole vectors: rows a warp's
// groups load in one batch always; rows of up to kGroupMaxVectors, which a warp loads in two
// batches, only where a block each of the vector rows' smallest blocks (a vector a thread) would
// take more than kVectorRowMaxHalfWaves half waves (tuning/reduce.h): past about one wave the
// blocks queue behind each other, and the measured crossover lies at 1.4 to 1.9 waves.
template <ReduceMap M, typename T, typename O>
bool groups_take(int64_t rows, int64_t nvec, bool streaming) {
  static_assert(kWarpSize * kGroupLoadsInFlight <= kGroupMaxVectors, "a warp's batch is a group");
  static_assert(kGroupMaxVectors <= kVectorRowMinThreads,
                "the rows the groups pass on take the smallest blocks, a vector a thread, whose "
                "occupancy is asked");
  static_assert(kGroupMaxVectors * vec_width<T>() <= kWarpRowMax, "the groups' rows are short");
  if (nvec <= kWarpSize * kGroupLoadsInFlight) return true;
  if (nvec > kGroupMaxVectors) return false;
  auto* smallest = vector_rows_kernel<M, kVectorRowMinThreads, true, T, O>(streaming);
  const int64_t wave = int64_t(current_device_info().sm_count) *
                       resident_blocks_per_sm(smallest, kVectorRowMinThreads);
  return 2 * rows > kVectorRowMaxHalfWaves * wave;
}

// Whole aligned rows of whole vectors, a block per row (no split), where kVectorKernels: the
// vector runs' shape (kRunThreads threads, kVectorRunLoadsInFlight<T> loads each,
// kVectorRunMinBlocks blocks per SM), the only shape of five measured on an H200 that was ahead
// of the interleaved kernel on every row (docs/PERFORMANCE.md); for short rows, smaller blocks
// of the same registers per thread (kVectorRowMinThreads, kVectorRowVectorsPerThread), and rows
// of at most kVectorRowMinThreads vectors a vector a thread.
template <ReduceMap M, typename T, typename O>
void launch_vector_rows(const T* a, O* out, int64_t rows, int64_t R, bool streaming,
                        cudaStream_t stream) {
  static_assert(kVectorKernels<M, T>,
                "vector rows serve sums and sums of squares (kVectorKernels)");
  static_assert(kVectorRowMinThreads * 4 == kRunThreads, "three block sizes below");
  constexpr int64_t V = vec_width<T>();
  TORCH_INTERNAL_ASSERT(whole_vector_rows(a, R),
                        "smem: vector rows need aligned rows of whole vectors, got rows of ", R);
  const int64_t nvec = R / V;
  constexpr int kMin = kVectorRowMinThreads;
  if (nvec <= kMin) launch_vector_rows_in<M, kMin, true>(a, out, rows, nvec, streaming, stream);
  else if (nvec <= kVectorRowVectorsPerThread * kMin)
    launch_vector_rows_in<M, kMin, false>(a, out, rows, nvec, streaming, stream);
  else if (nvec <= kVectorRowVectorsPerThread * kMin * 2)
    launch_vector_rows_in<M, kMin * 2, false>(a, out, rows, nvec, streaming, stream);
  else launch_vector_rows_in<M, kRunThreads, false>(a, out, rows, nvec, streaming, stream);
}

// Short aligned rows of whole vectors (at most kGroupMaxVectors, groups_take; more than one row),
// where kVectorKernels: groups of lanes per row, as many as give each lane at most
// kGroupLoadsInFlight vectors a batch (a power of two, at most a warp; rows past a warp's batch
// take two), a block per 8 warps' rows.
template <ReduceMap M, typename T, typename O>
void launch_vector_groups(const T* a, O* out, int64_t rows, int64_t R, bool streaming,
                          cudaStream_t stream) {
  static_assert(kVectorKernels<M, T>,
                "vector groups serve sums and sums of squares (kVectorKernels)");
  constexpr int64_t V = vec_width<T>();
  TORCH_INTERNAL_ASSERT(
      R <= kGroupMaxVectors * V && whole_vector_rows(a, R),
      "smem: vector groups need short aligned rows of whole vectors, got rows of ", R);
  const int64_t nvec = R / V;
  int log2_lanes = 0;
  while ((int64_t(1) << log2_lanes) * kGroupLoadsInFlight < nvec && (1 << log2_lanes) < kWarpSize)
    ++log2_lanes;
  constexpr int L = kGroupLoadsInFlight;
  auto* kernel = streaming ? reduce_vector_groups_kernel<M, L, true, T, O>
                           : reduce_vector_groups_kernel<M, L, false, T, O>;
  const int64_t rows_per_block = kBlockThreads >> log2_lanes;
  kernel<<<block_per_item(ceil_div(rows, rows_per_block)), kBlockThreads, 0, stream>>>(
      a, out, rows, nvec, log2_lanes);
}

// Rows split into `splits` > 1 contiguous runs each (row_run_splits), where kRowRuns.
template <ReduceMap M, typename T, typename O>
void launch_row_runs(const T* a, const T* b, O* out, int64_t rows, int64_t R, int64_t splits,
                     bool streaming, cudaStream_t stream) {
  static_assert(kRowRuns<M, T>, "runs serve fp32 rows and fp16 sums (kRowRuns)");
  TORCH_INTERNAL_ASSERT(splits > 1, "smem: row runs need a split row, got ", splits, " runs");
  constexpr int64_t V = vec_width<T>();
  // whole 16-byte vectors per run: every run of a row shares the row's 16-byte phase
  const int64_t run = ceil_div(ceil_div(R, splits), V) * V;
  SlotWorkspace work(splits, rows);
  const dim3 grid(static_cast<unsigned>(splits),
                  static_cast<unsigned>(std::min<int64_t>(rows, 65535)));
  auto* kernel = [] {
    if constexpr (std::is_same_v<T, c10::Half>)
      return reduce_half_row_runs_kernel<M, kRunThreads, kHalfRunLoadsInFlight, kHalfRunMinBlocks,
                                         T, O>;
    else return reduce_row_runs_kernel<M, kRunThreads, kLoadsInFlight, T, O>;
  }();
  kernel<<<grid, kRunThreads, 0, stream>>>(a, b, out, work.slots, work.counters, rows, R, run,
                                           static_cast<int>(splits), streaming,
                                           tickets_at_start(kernel, kRunThreads, splits, rows));
}

// Columns a lane sums of rows of `inner` at `a`: one vector wherever every row starts aligned to
// it. 8 bytes (kColHalfWidth columns) for fp16 and bf16 sums and sums of squares of at least
// kColHalfMinColumns (why: tuning/reduce.h); 16 bytes for the rest; else 1.
template <typename T>
int col_width(const T* a, int64_t inner) {
  if constexpr (kHalfFloat<T>)
    if (inner >= kColHalfMinColumns && inner % kColHalfWidth == 0 && is_aligned(a, 8))
      return kColHalfWidth;
  return whole_vector_rows(a, inner) ? vec_width<T>() : 1;
}

// The column kernel of `width` columns a lane (col_width) in `lanes` lanes across a row. 8-byte
// vectors always fill 32 lanes (kColHalfMinColumns), and the fp16 and bf16 rows left to 16-byte
// vectors are narrower than that, 8 lanes: their 16-byte kernel of 32 lanes is not compiled.
template <ReduceMap M, typename T, typename O>
auto* cols_kernel(int width, int lanes) {
  constexpr int V = vec_width<T>();
  if constexpr (kHalfFloat<T>) {
    static_assert(kColHalfWidth * sizeof(T) == 8 && V % kColHalfWidth == 0,
                  "col_width's 8-byte vectors: a 16-byte aligned row of whole ones takes them");
    static_assert(kColHalfMinColumns >= 32 * kColHalfWidth && kColHalfMinColumns <= 32 * V,
                  "8-byte vectors fill 32 lanes; 16-byte ones of narrower rows 8");
    if (width == kColHalfWidth) return reduce_cols_kernel<M, kColHalfWidth, 32, T, O>;
    if (width == V) return reduce_cols_kernel<M, V, 8, T, O>;
  } else if (width == V) {
    return lanes == 32 ? reduce_cols_kernel<M, V, 32, T, O> : reduce_cols_kernel<M, V, 8, T, O>;
  }
  return lanes == 32 ? reduce_cols_kernel<M, 1, 32, T, O> : reduce_cols_kernel<M, 1, 8, T, O>;
}

// Column sums (inner > 1): narrow slabs a warp each where they fill a wave (launch_slab_warps);
// else 32 lanes across a row where each has a column, else 8; columns of few rows in many tiles a
// thread each (launch_short_cols).
template <ReduceMap M, typename T, typename O>
void launch_cols(const T* a, const T* b, O* out, int64_t outer, int64_t R, int64_t inner,
                 bool streaming, cudaStream_t stream) {
  static_assert(M != ReduceMap::kProduct, "a dot is one row: no columns");
  // b is a (a sum or a sum of squares): the kernels below read only a, and only a's alignment
  // picks their vectors
  TORCH_INTERNAL_ASSERT(a == b, "smem: column sums of one input");
  if (launch_slab_warps<M>(a, b, out, outer, R, inner, streaming, stream)) return;
  using A = acc_t<T>;
  const int width = col_width(a, inner);
  const int lanes = inner / width >= 32 ? 32 : 8;
  auto* kernel = cols_kernel<M, T, O>(width, lanes);
  const int64_t tiles = outer * ceil_div(inner, int64_t(lanes) * width);
  if (tiles >= kShortColMinTilesPerRow * R) {  // a block a tile would mostly idle (tuning/reduce.h)
    launch_short_cols<M>(a, b, out, outer, R, inner, streaming, stream);
    return;
  }
  const int slices = kBlockThreads / lanes;
  int splits = choose_splits(kernel, tiles, R, slices * kMinRowsPerThread, kColBlocksPerSm);
  // Short of blocks because the rows ran out (tuning/reduce.h): thinner splits, up to a block
  // per SM (fewer than sms + tiles blocks, within one wave of the resident ones).
  const int64_t sms = current_device_info().sm_count;
  if (tiles * splits * kColShortOfBlocks <= sms)
    splits = static_cast<int>(std::max<int64_t>(
        splits, std::min({R / (slices * kColShortRowsPerThread), ceil_div(sms, tiles),
                          sms * resident_blocks_per_sm(kernel, kBlockThreads) / tiles})));
  SplitWorkspace<A> work(splits, outer * inner, tiles);
  const dim3 grid(static_cast<unsigned>(std::min<int64_t>(tiles, INT32_MAX)), splits);
  kernel<<<grid, dim3(lanes, slices), 0, stream>>>(a, b, out, work.partials, work.done, outer, R,
                                                   inner, splits, streaming);
}

// Short rows (at most kWarpRowMax, more than one; no dots): the vector groups where they take
// them (groups_take), else a warp each. Returns false for aligned rows of whole vectors that the
// groups pass on: those take the vector rows, a block each (launch_rows).
template <ReduceMap M, typename T, typename O>
bool launch_short_rows(const T* a, const T* b, O* out, int64_t rows, int64_t R, bool streaming,
                       cudaStream_t stream) {
  if constexpr (kVectorKernels<M, T>) {
    if (whole_vector_rows(a, R)) {
      static_assert(kWarpRowMax < 2 * kBlockThreads * vec_width<T>() * kMinVectorsPerThread,
                    "choose_splits splits no short row, so the vector rows take those passed on");
      if (!groups_take<M, T, O>(rows, R / vec_width<T>(), streaming)) return false;
      launch_vector_groups<M>(a, out, rows, R, streaming, stream);
      return true;
    }
  }
  auto* kernel = reduce_rows_kernel<M, kWarpSize, T, O>;
  kernel<<<resident_grid(kernel, kBlockThreads, 0, rows, kRowsPerWarpBlock), kBlockThreads, 0,
           stream>>>(a, b, out, nullptr, nullptr, rows, R, 1, streaming, false);
  return true;
}

// Rows a block each or split over blocks (inner == 1): aligned rows of whole vectors whole, a
// block each, where the interleaved kernel would not split them; else in runs where runs of 128
// KB split them twice or more (kVectorKernels). Other split rows in runs where those split them
// (kRowRuns); the rest in the interleaved kernel.
template <ReduceMap M, typename T, typename O>
void launch_rows(const T* a, const T* b, O* out, int64_t rows, int64_t R, bool streaming,
                 cudaStream_t stream) {
  using A = acc_t<T>;
  auto* kernel = reduce_rows_kernel<M, kBlockThreads, T, O>;
  const int splits = choose_splits(
      kernel, rows, R, kBlockThreads * vec_width<T>() * kMinVectorsPerThread, kRowBlocksPerSm);
  if constexpr (kVectorKernels<M, T>) {
    if (whole_vector_rows(a, R)) {
      if (splits == 1) {
        launch_vector_rows<M>(a, out, rows, R, streaming, stream);
        return;
      }
      const int64_t runs = row_run_splits<T>(rows, R, kVectorRunBytes);
      if (runs > 1) {
        launch_vector_runs<M>(a, out, rows, R, runs, streaming, stream);
        return;
      }
    }
  }
  if constexpr (kRowRuns<M, T>) {
    const int64_t runs = splits > 1 ? row_run_splits<T>(rows, R, kRunBytes) : 1;
    if (runs > 1) {
      launch_row_runs<M>(a, b, out, rows, R, runs, streaming, stream);
      return;
    }
  }
  const dim3 grid(splits, static_cast<unsigned>(std::min<int64_t>(rows, 65535)));
  if constexpr (std::is_same_v<T, float>)  // whole fp32 rows: more loads in flight
    if (splits == 1)
      kernel = reduce_rows_kernel<M, kBlockThreads, T, O, kWholeRowFloatLoadsInFlight>;
  if constexpr (kHasSlots<A>) {
    SlotWorkspace work(splits, rows);
    kernel<<<grid, kBlockThreads, 0, stream>>>(
        a, b, out, work.slots, work.counters, rows, R, splits, streaming,
        splits > 1 && tickets_at_start(kernel, kBlockThreads, splits, rows));
  } else {
    SplitWorkspace<A> work(splits, rows, rows);
    kernel<<<grid, kBlockThreads, 0, stream>>>(a, b, out, work.partials, work.done, rows, R, splits,
                                               streaming, false);
  }
}

// Columns (inner > 1), short rows, or rows a block each or split. A dot is one row
// (reduce_ops.cpp), so dots compile only launch_rows' kernels.
template <ReduceMap M, typename T, typename O>
void launch_typed(const T* a, const T* b, O* out, int64_t outer, int64_t R, int64_t inner,
                  cudaStream_t stream) {
  const int64_t bytes_read = outer * R * inner * int64_t(sizeof(T)) * (a == b ? 1 : 2);
  const bool streaming =
      stream_once(bytes_read, inner == 1 ? kStreamOnceL2Sizes : kColStreamOnceL2Sizes);
  if constexpr (M == ReduceMap::kProduct) {
    TORCH_INTERNAL_ASSERT(outer == 1 && inner == 1, "smem: a dot is one row, got [", outer, ", ", R,
                          ", ", inner, "]");
  } else if (inner > 1) {
    launch_cols<M>(a, b, out, outer, R, inner, streaming, stream);
    SMEM_LAUNCH_CHECK();
    return;
  } else if (R <= kWarpRowMax && outer > 1 &&
             launch_short_rows<M>(a, b, out, outer, R, streaming, stream)) {
    SMEM_LAUNCH_CHECK();
    return;
  }
  launch_rows<M>(a, b, out, outer, R, streaming, stream);
  SMEM_LAUNCH_CHECK();
}

// The output typed as visit_reduce_output types it.
template <ReduceMap M, typename T>
void launch_into(const T* a, const T* b, void* out, c10::ScalarType out_dtype, int64_t outer,
                 int64_t R, int64_t inner, cudaStream_t stream) {
  const bool typed = visit_reduce_output<T>(
      out_dtype, out, [&](auto* o) { launch_typed<M>(a, b, o, outer, R, inner, stream); });
  TORCH_INTERNAL_ASSERT(typed, "smem: unexpected reduction output dtype ", out_dtype);
}

}  // namespace

void launch_reduce(ReduceMap map, c10::ScalarType dtype, c10::ScalarType out_dtype, const void* a,
                   const void* b, void* out, int64_t outer, int64_t reduced, int64_t inner) {
  const cudaStream_t stream = current_stream();  // where the scratch is ordered too
  const bool supported = visit_reduce_dtype(dtype, [&](auto e) {
    using T = decltype(e);
    const T* pa = static_cast<const T*>(a);
    const T* pb = static_cast<const T*>(b);
    switch (map) {
      case ReduceMap::kIdentity:
        return launch_into<ReduceMap::kIdentity>(pa, pb, out, out_dtype, outer, reduced, inner,
                                                 stream);
      case ReduceMap::kSquare:
        return launch_into<ReduceMap::kSquare>(pa, pb, out, out_dtype, outer, reduced, inner,
                                               stream);
      case ReduceMap::kProduct:
        return launch_into<ReduceMap::kProduct>(pa, pb, out, out_dtype, outer, reduced, inner,
                                                stream);
    }
  });
  TORCH_CHECK_TYPE(supported, "smem: no CUDA reduction of dtype ", dtype);
}

}  // namespace smem::cuda
