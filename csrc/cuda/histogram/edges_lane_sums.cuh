// Weighted sums over bin edges (torch.histogram's rules, edge_bins.h) without a warp
// collective or an atomic per element: each lane adds its weights into its own column of its
// warp's copy of the bins, so the order of every add is fixed and the sums are deterministic.
//
// A warp's copy is [bins + 1][kLaneSumsColumns] (the last row spare); lane l adds to column
// l % 8, and the four lanes that share a column take turns (four rounds per batch, a __syncwarp
// between them). Every lane runs every round with its reads and writes predicated on its turn,
// not behind a branch, so the rounds are one straight-line block that the compiler interleaves
// with the rest of the batch. The 8 lanes of a round touch 8 adjacent columns: distinct banks
// whatever their bins.
//
// The copies hold float32 sums for float32 inputs (lane_sum_t) and float64 ones for float64
// inputs. Float32 copies are 1 KiB per 32 bins, so at 256 bins 24 warps fit an SM
// (kLaneSumsMaxWarps; float64 ones fit 13): the bin rule's latency is hidden by warps, not by
// loads in flight. A lane column adds about n / (blocks x warps x 8) weights in float32 (k)
// before the combine, which is in float64: a bin's error is within k times 2^-24 of the sum of
// its weights' magnitudes, and far below it for random rounding (docs/DESIGN.md).
// At the end a warp per bin adds the block's copies (warps in order, then columns by a fixed
// butterfly, in float64) into the block's row of the partials, which sum_partials_kernel adds
// in a fixed order; the grid depends only on the device and the size.
//
// Per element: torch's bin rule, the searches of a batch's elements side by side (edge_bins),
// then a read-add-write of the lane's sum. A vector's elements of equal bins are added in
// registers first, so its reads are of distinct bins and a round's reads overlap.
// Two batches of kLaneSumsInFlight vectors (input and weights) take turns in registers: one
// is added while the other's loads are in flight.
#pragma once

#include <type_traits>

#include "cuda/common.cuh"
#include "cuda/histogram/edges_smem.cuh"
#include "cuda/tuning/histogram.h"
#include "edge_bins.h"

namespace smem::cuda {

using histogram::kLaneSumsColumns;
using histogram::kLaneSumsInFlight;

// The type of the lanes' sums for inputs (and weights) of type T.
template <typename T>
using lane_sum_t = std::conditional_t<std::is_same_v<T, double>, double, float>;

// Warps per block at most: as many as float32 copies of 256 bins leave room for, and for float64
// ones 16, whose launch bounds leave the kernel its registers (13 fit at 256 bins).
template <typename T>
constexpr int lane_sums_max_warps() {
  return std::is_same_v<lane_sum_t<T>, float> ? histogram::kLaneSumsMaxWarps
                                              : histogram::kLaneSumsMaxWarpsFp64;
}

// The shared-memory layout of a block: the edges, then a [bins + 1][kLaneSumsColumns] copy of
// lane_sum_t per warp. Row `bins` is spare: the lanes whose turn it is add the weights they drop,
// or have added in registers already, there (one lane per column at a time), unread.
template <typename T>
struct LaneSumsSmem : EdgesFirst<T> {
  using Sum = lane_sum_t<T>;
  int warps;

  __host__ __device__ int64_t warp_sums() const {
    return (int64_t(this->bins) + 1) * kLaneSumsColumns;
  }
  __host__ __device__ int64_t warp_bytes() const { return warp_sums() * sizeof(Sum); }
  __host__ __device__ int64_t bytes() const { return this->edges_bytes() + warps * warp_bytes(); }
  __device__ Sum* copy_at(unsigned char* base, int warp) const {
    return this->template copies_at<Sum>(base) + warp * warp_sums();
  }

  // The most warps (up to lane_sums_max_warps) whose copies fit `budget` bytes; 0 if none does.
  static LaneSumsSmem choose(int64_t E, int64_t budget) {
    LaneSumsSmem l{EdgesFirst<T>::of(E), 0};
    if (E > (int64_t(1) << 20)) return l;  // far beyond any shared memory
    l.warps = static_cast<int>(std::clamp<int64_t>((budget - l.edges_bytes()) / l.warp_bytes(), 0,
                                                   lane_sums_max_warps<T>()));
    return l;
  }
};

// edge_bin of N elements side by side: the same rule and the same probes, but the searches
// advance together, a probe of each per round, so their shared-memory reads overlap (edge_bin's
// loop waits for each read before the next). Rounds: the longest search's (2 for int bins,
// whose windows hold at most 3 edges). bin[k] = -1 where !valid[k] or torch drops the element.
template <typename T, int N>
__device__ inline void edge_bins(const T (&v)[N], const bool (&valid)[N], int (&bin)[N],
                                 const T* edges, int E, T left, T right, bool uniform) {
  int first[N], len[N];
  bool kept[N], searching = false;
#pragma unroll
  for (int k = 0; k < N; ++k) {
    kept[k] = valid[k] && v[k] >= left && v[k] <= right;
    first[k] = 0;
    len[k] = kept[k] ? E : 0;
    if (uniform) {
      const T p = (v[k] - left) * static_cast<T>(E - 1) / (right - left);
      if (p >= T(0) && p < static_cast<T>(E)) {
        const int pos = static_cast<int>(p);
        first[k] = pos > 0 ? pos - 1 : 0;
        len[k] = kept[k] ? (pos + 2 < E ? pos + 2 : E) - first[k] : 0;
      }
    }
    searching |= len[k] > 0;
  }
  while (searching) {
    // All N probes are read before any is used (a finished search reads a harmless edge).
    T probe[N];
#pragma unroll
    for (int k = 0; k < N; ++k) probe[k] = edges[min(first[k] + (len[k] >> 1), E - 1)];
    searching = false;
#pragma unroll
    for (int k = 0; k < N; ++k) {
      const int half = len[k] >> 1;
      const bool right_of = len[k] > 0 && !(v[k] < probe[k]);
      first[k] = right_of ? first[k] + half + 1 : first[k];
      len[k] = right_of ? len[k] - half - 1 : half;
      searching |= len[k] > 0;
    }
  }
#pragma unroll
  for (int k = 0; k < N; ++k) bin[k] = !kept[k] ? -1 : first[k] == E ? E - 2 : first[k] - 1;
}

// A shared-memory read or write of a lane's sum that happens only where `on`: a predicated
// instruction, never a branch, so that a batch's rounds stay one straight-line block that the
// compiler can schedule across. volatile keeps these accesses in program order among
// themselves and with the barriers; every other access to the copies (the zeroing, the flush)
// is on the far side of a __syncthreads. No "memory" clobber: it would also pin the global
// loads of the next batch.
__device__ inline double load_sum_if(bool on, const double* p) {
  double v = 0.0;
  asm volatile("{\n .reg .pred on;\n setp.ne.b32 on, %2, 0;\n @on ld.shared.f64 %0, [%1];\n}"
               : "+d"(v)
               : "r"(static_cast<unsigned>(__cvta_generic_to_shared(p))), "r"(int(on)));
  return v;
}
__device__ inline void store_sum_if(bool on, double* p, double v) {
  asm volatile("{\n .reg .pred on;\n setp.ne.b32 on, %0, 0;\n @on st.shared.f64 [%1], %2;\n}"
               :
               : "r"(int(on)), "r"(static_cast<unsigned>(__cvta_generic_to_shared(p))), "d"(v));
}
__device__ inline float load_sum_if(bool on, const float* p) {
  float v = 0.0f;
  asm volatile("{\n .reg .pred on;\n setp.ne.b32 on, %2, 0;\n @on ld.shared.f32 %0, [%1];\n}"
               : "+f"(v)
               : "r"(static_cast<unsigned>(__cvta_generic_to_shared(p))), "r"(int(on)));
  return v;
}
__device__ inline void store_sum_if(bool on, float* p, float v) {
  asm volatile("{\n .reg .pred on;\n setp.ne.b32 on, %0, 0;\n @on st.shared.f32 [%1], %2;\n}"
               :
               : "r"(int(on)), "r"(static_cast<unsigned>(__cvta_generic_to_shared(p))), "f"(v));
}

// Adds a batch's weights (U vectors) to the lane's sums of their bins (bin < 0: none, added to
// row `spare`); `mine` points at the lane's column in bin 0, bin b is mine[b * kColumns]. A
// vector's equal bins are combined first, in element order, so that its reads are of distinct
// bins (only the unread spare row repeats) and need not wait on each other's writes. Every lane of
// the warp must call it (the rounds' __syncwarp).
template <int kColumns, typename S, typename T, int V, int U>
__device__ inline void add_to_lane_sums(S* mine, const int* bins, const Vec<T, V> (&ws)[U],
                                        int lane, int spare) {
  int row[U][V];
  S add[U][V];
#pragma unroll
  for (int u = 0; u < U; ++u) {
#pragma unroll
    for (int k = 0; k < V; ++k) {
      row[u][k] = bins[u * V + k] < 0 ? spare : bins[u * V + k];
      add[u][k] = static_cast<S>(ws[u].v[k]);
    }
#pragma unroll
    for (int j = 0; j < V; ++j)
#pragma unroll
      for (int k = j + 1; k < V; ++k)
        if (row[u][k] == row[u][j]) {  // spare rows too: never read back
          add[u][j] += add[u][k];
          row[u][k] = spare;
        }
  }
  // The rounds: each access predicated on the lane's turn.
#pragma unroll
  for (int round = 0; round < kWarpSize / kColumns; ++round) {
    const bool turn = lane / kColumns == round;
#pragma unroll
    for (int u = 0; u < U; ++u) {
      S old[V];
#pragma unroll
      for (int k = 0; k < V; ++k) old[k] = load_sum_if(turn, &mine[row[u][k] * kColumns]);
#pragma unroll
      for (int k = 0; k < V; ++k)
        store_sum_if(turn, &mine[row[u][k] * kColumns], old[k] + add[u][k]);
    }
    if constexpr (kColumns < kWarpSize) __syncwarp();
  }
}

template <typename T>
__global__ void __launch_bounds__(lane_sums_max_warps<T>() * kWarpSize)
weigh_over_edges_kernel(const T* x, const T* w, int64_t n, const T* edges_in,
                        LaneSumsSmem<T> layout, bool uniform, bool streaming, double* partials) {
  using S = lane_sum_t<T>;
  extern __shared__ __align__(16) unsigned char smem[];
  constexpr int V = vec_width<T>(), kInFlight = kLaneSumsInFlight, kColumns = kLaneSumsColumns;
  using VecT = Vec<T, V>;
  const int lane = threadIdx.x % kWarpSize, warp = threadIdx.x / kWarpSize;
  const int E = layout.edges, bins = layout.bins;
  const T* edges = layout.template stage<S>(smem, edges_in, layout.warps * layout.warp_sums());
  const T left = edges[0], right = edges[E - 1];
  S* mine = layout.copy_at(smem, warp) + lane % kColumns;

  const int64_t nvec = n / V;
  const auto* xv = reinterpret_cast<const VecT*>(x);
  const auto* wv = reinterpret_cast<const VecT*>(w);
  const int64_t stride = int64_t(gridDim.x) * blockDim.x;
  auto load_batch = [&](int64_t first, VecT(&xs)[kInFlight], VecT(&ws)[kInFlight]) {
#pragma unroll
    for (int u = 0; u < kInFlight; ++u)
      if (first + lane + u * stride < nvec) {
        xs[u] = load_once(&xv[first + lane + u * stride], streaming);
        ws[u] = load_once(&wv[first + lane + u * stride], streaming);
      }
  };
  // Every bin of the batch is found before the first sum is written: the edge reads of all
  // its elements are then independent of the writes and overlap.
  auto add_batch = [&](int64_t first, const VecT(&xs)[kInFlight], const VecT(&ws)[kInFlight]) {
    constexpr int N = kInFlight * V;
    T v[N];
    bool valid[N];
    int bin[N];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u)
#pragma unroll
      for (int k = 0; k < V; ++k) {
        v[u * V + k] = xs[u].v[k];
        valid[u * V + k] = first + lane + u * stride < nvec;
      }
    edge_bins(v, valid, bin, edges, E, left, right, uniform);
    add_to_lane_sums<kColumns>(mine, bin, ws, lane, bins);
  };
  // Two batches in registers, taking turns: one is added while the other's loads are in
  // flight (no copy between them, which would wait for the loads). The loop is warp-uniform
  // (i is the warp's first vector; lanes take i + lane): the rounds' __syncwarp needs every
  // lane.
  // zeroed: lanes past the end search harmless values (`valid` drops their bins)
  VecT xa[kInFlight]{}, wa[kInFlight]{}, xb[kInFlight]{}, wb[kInFlight]{};
  int64_t i = int64_t(blockIdx.x) * blockDim.x + warp * kWarpSize;
  const int64_t step = kInFlight * stride;
  load_batch(i, xa, wa);
  while (i < nvec) {
    load_batch(i + step, xb, wb);
    add_batch(i, xa, wa);
    i += step;
    if (i >= nvec) break;
    load_batch(i + step, xa, wa);
    add_batch(i, xb, wb);
    i += step;
  }
  if (blockIdx.x == 0 && warp == 0) {   // the last n % V elements; every lane takes part in
    const int64_t t = nvec * V + lane;  // the rounds' __syncwarp
    const bool has = t < n;
    Vec<T, V> wt[1]{};
    wt[0].v[0] = has ? w[t] : T(0);
    T v[V] = {has ? x[t] : T(0)};
    bool valid[V] = {has};
    int bin[V];
    edge_bins(v, valid, bin, edges, E, left, right, uniform);
    add_to_lane_sums<kColumns>(mine, bin, wt, lane, bins);
  }
  __syncthreads();

  // A warp per bin: lane l < kColumns adds column l over the copies in warp order, then the
  // columns meet in a butterfly (the same order every launch), all in float64.
  for (int b = warp; b < bins; b += layout.warps) {
    double sum = 0;
    if (lane < kColumns)
      for (int c = 0; c < layout.warps; ++c) sum += layout.copy_at(smem, c)[b * kColumns + lane];
#pragma unroll
    for (int offset = kWarpSize / 2; offset > 0; offset /= 2)
      sum += __shfl_xor_sync(0xffffffffu, sum, offset);
    if (lane == 0) partials[int64_t(blockIdx.x) * bins + b] = sum;
  }
}

}  // namespace smem::cuda
