// Short sides in registers: one side S <= kInterleaveMax (3 x 10^6, an image's 3 x HW). Seen
// from one end the matrix is S lines; from the other, one run in which the lines interleave
// (element l of line s at l * S + s). A thread takes V = 16 / sizeof(E) steps of the long side:
// one 16-byte vector from each line, and the S vectors of the run that hold the same elements.
// With S a template parameter, moving elements between the two is a fixed renaming of registers
// (byte permutes for 1- and 2-byte elements). A warp reads or writes its lines 32 vectors at a
// time (lane t takes vector t of each line), and, where its 32 groups are whole and their runs
// adjoin, its stretch of the run the same way, through a warp-private slice of shared memory:
// then every access is 16 bytes and coalesced, with no block barrier.
// (The staged skinny kernel moves S lines of 256 bytes per block: a few hundred bytes when S is
// a few.)
#pragma once

#include <c10/macros/Macros.h>  // first: IntegerDivider.cuh uses C10_HOST_DEVICE

#include <ATen/cuda/detail/IntegerDivider.cuh>

#include <cstdint>
#include <cstring>

#include "cuda/common.cuh"
#include "cuda/tuning/transpose.h"
#include "transpose_geometry.h"

namespace smem::cuda::transpose {

template <typename E>
__device__ inline Vec<E, vec_width<E>()> load_vec16(const E* p) {
  const uint4 w = *reinterpret_cast<const uint4*>(p);
  Vec<E, vec_width<E>()> v;
  memcpy(&v, &w, 16);
  return v;
}

// Slot p of a warp's run staged in shared memory (16-byte slots, lane t's S vectors at t * S).
// A 16-byte access is served a quarter-warp at a time, 8 lanes over the 8 groups of 4 banks:
// with S odd, lanes t * S fall in 8 groups; with S even, 2 to 8 of them would share one, so the
// low 3 bits of the slot are XOR-ed with its lane (p / S). The accesses of 32 consecutive slots
// stay one lane per group either way.
template <int S>
__host__ __device__ constexpr int staged_slot(int p) {
  return S % 2 == 1 ? p : p ^ ((p / S) & 7);
}

template <int S>
constexpr bool staged_slots_permute() {
  bool taken[32 * S] = {};
  for (int p = 0; p < 32 * S; ++p) {
    const int q = staged_slot<S>(p);
    if (q < 0 || q >= 32 * S || taken[q]) return false;
    taken[q] = true;
  }
  return true;
}

// Thread `item` takes V steps of the long side in one batch (a group). kFlatOut: the run is the
// output (read S lines, write the run), and the last group of a batch may be cut short (it
// moves element by element); otherwise the run is the input, and the launch has checked that
// the long side is whole vectors. Where a warp's 32 groups are whole and their runs adjoin (one
// batch, or batches laid end to end), the warp's run is one stretch of 32 * S vectors, which it
// moves 32 consecutive vectors at a time, staged in shared memory. (Moved lane by lane, S
// vectors apart, every access of the warp would touch 32 lines.)
template <typename E, int S, bool kFlatOut>
__global__ void __launch_bounds__(kInterleaveThreads, interleave_min_blocks(S))
transpose_interleave_kernel(const E* __restrict__ in, E* __restrict__ out,
                            const TransposeGeometry g,
                            const at::cuda::detail::IntDivider<unsigned> groups_per_batch,
                            unsigned items) {
  constexpr int V = vec_width<E>();
  constexpr unsigned kWarp = 0xffffffffu;
  using VecE = Vec<E, V>;
  static_assert(staged_slots_permute<S>(), "staged_slot must permute a warp's slots");
  const unsigned item = blockIdx.x * kInterleaveThreads + threadIdx.x;
  const bool active = item < items;
  const auto batch_group = groups_per_batch.divmod(active ? item : items - 1);
  int64_t in_off, out_off;
  g.batch_offsets(batch_group.div, in_off, out_off);
  const int64_t l0 = static_cast<int64_t>(batch_group.mod) * V;
  // Element l of line s is lines[s * line_stride + l]; run element k of the group is run[k]. The
  // group's lines start at lines_off in their tensor, its run at run_off in the other.
  const int64_t line_stride = kFlatOut ? g.col_in_stride : g.row_out_stride;
  const int64_t len = (kFlatOut ? g.rows : g.cols) - l0;
  const int64_t lines_off = (kFlatOut ? in_off : out_off) + l0;
  const int64_t run_off = (kFlatOut ? out_off : in_off) + l0 * S;
  const E* lines_in = in + lines_off;
  const E* run_in = in + run_off;
  E* lines_out = out + lines_off;
  E* run_out = out + run_off;
  // Every lane of the warp takes part in these votes.
  const int lane = static_cast<int>(threadIdx.x % 32);
  const int64_t lane0_run_off = __shfl_sync(kWarp, run_off, 0);
  const bool warp_stages =
      __all_sync(kWarp, active && len >= V && run_off == lane0_run_off + lane * (S * V));
  if (!active) return;
  if constexpr (kFlatOut) {
    if (len < V) {  // the batch's last group, cut short
      for (int l = 0; l < len; ++l)
#pragma unroll
        for (int s = 0; s < S; ++s) run_out[l * S + s] = lines_in[s * line_stride + l];
      return;
    }
  }
  __shared__ uint4 staged[kInterleaveThreads / 32][32 * S];
  uint4* warp_slots = staged[threadIdx.x / 32];
  VecE line[S], run[S];  // every load is issued before the first store
  if constexpr (kFlatOut) {
#pragma unroll
    for (int s = 0; s < S; ++s) line[s] = load_vec16(lines_in + s * line_stride);
  } else if (warp_stages) {
    const uint4* warp_run = reinterpret_cast<const uint4*>(run_in - lane * (S * V));
    uint4 loaded[S];
#pragma unroll
    for (int m = 0; m < S; ++m) loaded[m] = warp_run[m * 32 + lane];
#pragma unroll
    for (int m = 0; m < S; ++m) warp_slots[staged_slot<S>(m * 32 + lane)] = loaded[m];
    __syncwarp();
#pragma unroll
    for (int j = 0; j < S; ++j) {
      const uint4 w = warp_slots[staged_slot<S>(lane * S + j)];
      memcpy(&run[j], &w, 16);
    }
  } else {
#pragma unroll
    for (int j = 0; j < S; ++j) run[j] = load_vec16(run_in + j * V);
  }
  // Run element k = l * S + s is element l of line s; k, l and s are constants after unrolling.
#pragma unroll
  for (int k = 0; k < S * V; ++k) {
    if constexpr (kFlatOut) run[k / V].v[k % V] = line[k % S].v[k / S];
    else line[k % S].v[k / S] = run[k / V].v[k % V];
  }
  if constexpr (kFlatOut) {
    if (warp_stages) {
#pragma unroll
      for (int j = 0; j < S; ++j) warp_slots[staged_slot<S>(lane * S + j)] = pack_words(run[j]);
      __syncwarp();
      uint4* warp_run = reinterpret_cast<uint4*>(run_out - lane * (S * V));  // lane 0's group
#pragma unroll
      for (int m = 0; m < S; ++m)
        __stwb(warp_run + m * 32 + lane, warp_slots[staged_slot<S>(m * 32 + lane)]);
    } else {
#pragma unroll
      for (int j = 0; j < S; ++j) store_vec(reinterpret_cast<VecE*>(run_out + j * V), run[j]);
    }
  } else {
#pragma unroll
    for (int s = 0; s < S; ++s)
      store_vec(reinterpret_cast<VecE*>(lines_out + s * line_stride), line[s]);
  }
}

template <typename E, int S = 2>
void launch_interleave_of_side(int side, bool flat_out, const E* in, E* out,
                               const TransposeGeometry& g, unsigned groups, unsigned items,
                               cudaStream_t stream) {
  if constexpr (S <= kInterleaveMax) {
    if (side != S)
      return launch_interleave_of_side<E, S + 1>(side, flat_out, in, out, g, groups, items, stream);
    const at::cuda::detail::IntDivider<unsigned> groups_per_batch(groups);
    const unsigned blocks = static_cast<unsigned>(ceil_div(int64_t(items), kInterleaveThreads));
    auto* kernel = flat_out ? transpose_interleave_kernel<E, S, true>
                            : transpose_interleave_kernel<E, S, false>;
    kernel<<<blocks, kInterleaveThreads, 0, stream>>>(in, out, g, groups_per_batch, items);
  }
}

// Applies where a side S is 2..kInterleaveMax, the run is contiguous (the output's rows, or the
// input's columns) and the lines have unit stride, and everything a 16-byte vector touches is
// aligned: the input pointer, the lines' stride and the batch offsets, in elements, are
// multiples of V (the output is a fresh allocation). Returns whether it launched.
template <typename E>
bool launch_interleave(const E* in, E* out, const TransposeGeometry& g, cudaStream_t stream) {
  constexpr int V = vec_width<E>();
  if constexpr (V == 1) {
    return false;  // 16-byte elements: nothing to interleave within a vector
  } else {
    if (!g.tiled || g.row_in_stride != 1) return false;
    // Lines of at least one whole vector (shorter ones would move element by element); when
    // the run is read, of whole vectors only.
    const bool flat_out = g.cols >= 2 && g.cols <= kInterleaveMax && g.row_out_stride == g.cols &&
                          g.col_in_stride % V == 0 && g.rows >= V;
    const bool flat_in = !flat_out && g.rows >= 2 && g.rows <= kInterleaveMax &&
                         g.col_in_stride == g.rows && g.row_out_stride % V == 0 && g.cols % V == 0;
    if (!(flat_out || flat_in) || !is_aligned(in, 16) || !g.batch_strides_multiple_of(V))
      return false;
    const int64_t groups = ceil_div(flat_out ? g.rows : g.cols, int64_t(V));
    const int64_t items = g.batches() * groups;
    if (items > INT32_MAX) return false;  // IntDivider<unsigned> divides up to 2^31 - 1
    launch_interleave_of_side<E>(static_cast<int>(flat_out ? g.cols : g.rows), flat_out, in, out, g,
                                 static_cast<unsigned>(groups), static_cast<unsigned>(items),
                                 stream);
    return true;
  }
}

}  // namespace smem::cuda::transpose
