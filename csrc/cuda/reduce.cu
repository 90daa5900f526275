// CUDA reductions: sum, sum_of_squares, dot.
//
// Every reduction is a contiguous [outer, reduced, inner] view (reduce.h), served by two kernels:
//   reduce_rows_kernel (inner == 1): a group of threads (one warp, or a whole block) walks a row
//     with 16-byte loads, four in flight per thread (eight for whole fp32 rows of one block
//     each), accumulates in the accumulate type, then reduces through warp shuffles and
//     shared memory. Long rows with few of them are split across `splits` blocks; a full
//     reduction is one row split across the whole GPU.
//   reduce_cols_kernel (inner > 1): a 32 x 8 block (8 x 32 for short rows) owns 32 adjacent
//     columns, or 32 16-byte vectors of them where rows are aligned, so each warp reads a
//     contiguous stretch of a row (coalesced); the row slices meet in shared memory.
// Split results are combined on the device, with no float atomics: each block writes its
// partial, and the last block to finish (an integer counter) sums the partials in block order.
// The order of every addition is fixed, so results are bitwise reproducible.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <torch/library.h>

#include "cuda/common.cuh"
#include "reduce.h"
#include "smem.h"

namespace smem::cuda {
namespace {

constexpr int kBlockThreads = 256;
constexpr int kRowsPerWarpBlock = kBlockThreads / kWarpSize;
constexpr int kLoadsInFlight = 4;
// Long rows are split over blocks until the device has this many per SM (fewer where fewer
// are resident). Measured on the H100 (tools/probe.py), sum fp32 2^28 / bf16 2^24 took
// 366.0 / 20.3 us at 2 blocks per SM, 359.1 / 19.8 us at 3, 362.3 / 20.5 us at 4 and
// 363.7 / 20.4 us at 6 (all resident at 39 registers): 3 x 256 threads x 4 x 16 bytes in
// flight per SM already cover the memory latency, and more only add partials and contention.
constexpr int kRowBlocksPerSm = 3;
// Column sums: a thread sums at least this many rows, and R is split over blocks (each a
// contiguous run of rows) only until the device has this many blocks per SM. Fewer, longer
// blocks than for row sums: measured on the H100, sum over dim 1 of (32, 4096, 128) fp32 /
// bf16 and over dim 0 of 8192^2 fp32 / bf16 took 33.1 / 21.7 / 102.2 / 61.7 us split for 2
// blocks per SM, 34.1 / 26.6 / 104.6 / 72.0 us for 3, 35.3 / 26.8 / 105.8 / 72.7 us for 4 and
// 35.8 / 25.9 / 112.2 / 71.9 us for 8.
constexpr int64_t kMinRowsPerThread = 16;
constexpr int kColBlocksPerSm = 2;
constexpr int64_t kWarpRowMax = 4096;          // rows up to this length get one warp each

// Sum of the mapped lanes of one vector, as a small tree.
template <ReduceMap M, typename A, typename VecT>
__device__ inline A vector_sum(const VecT& a, const VecT& b) {
  constexpr int V = sizeof(a.v) / sizeof(a.v[0]);
  A lane[V];
#pragma unroll
  for (int k = 0; k < V; ++k) lane[k] = map_element<M, A>(a.v[k], b.v[k]);
#pragma unroll
  for (int width = 1; width < V; width *= 2)
#pragma unroll
    for (int k = 0; k + width < V; k += 2 * width) lane[k] = lane[k] + lane[k + width];
  return lane[0];
}

// The operands of one step: b is a copy of a except for kProduct, whose second input is read.
template <typename VecT>
struct Pair {
  VecT a, b;
};
template <ReduceMap M, typename VecT>
__device__ inline Pair<VecT> load_pair(const VecT* pa, const VecT* pb, bool streaming) {
  Pair<VecT> v;
  v.a = load_once(pa, streaming);
  if constexpr (M == ReduceMap::kProduct) v.b = load_once(pb, streaming);
  else v.b = v.a;
  return v;
}

// Sum of partials p[s], s = t, t + stride, ... below n, that other blocks of this launch
// wrote: read from L2 several at a time (a split row's last block reads up to a few per
// thread, and one at a time each would wait a round trip), added in index order.
template <typename A>
__device__ A partials_sum(const A* p, int64_t n, int64_t t, int64_t stride) {
  Accumulator<A> acc;
  for_each_batched<kLoadsInFlight>(
      t, n, stride, [&](int64_t s) { return load_from_l2(&p[s]); }, [&](A v) { acc.add(v); });
  return acc.value();
}

// Sum of map(a[i], b[i]) over the i in [0, n) that belong to thread `t` of `nthreads`
// cooperating threads. 16-byte loads for the aligned body, scalar loads for head and tail.
template <ReduceMap M, int kInFlight = kLoadsInFlight, typename T, typename A = acc_t<T>>
__device__ A thread_partial(const T* a, const T* b, int64_t n, int64_t t, int64_t nthreads,
                           bool streaming) {
  constexpr int V = vec_width<T>();
  using VecT = Vec<T, V>;
  Accumulator<A> acc;
  // Elements before a's first 16-byte boundary; b must be misaligned the same way to share
  // the vector loop (always true for sum and sum_of_squares, where b == a).
  const int64_t head = unaligned_head(a, n);
  const bool same_phase = reinterpret_cast<uintptr_t>(a) % 16 == reinterpret_cast<uintptr_t>(b) % 16;
  const int64_t scalar_end = same_phase ? head : n;
  for (int64_t i = t; i < scalar_end; i += nthreads) acc.add(map_element<M, A>(a[i], b[i]));
  if (!same_phase) return acc.value();

  const int64_t nvec = (n - head) / V;
  const VecT* av = reinterpret_cast<const VecT*>(a + head);
  const VecT* bv = reinterpret_cast<const VecT*>(b + head);
  for_each_batched<kInFlight>(
      t, nvec, nthreads,
      [&](int64_t i) { return load_pair<M>(av + i, bv + i, streaming); },
      [&](const Pair<VecT>& v) { acc.add(vector_sum<M, A>(v.a, v.b)); });
  for (int64_t j = head + nvec * V + t; j < n; j += nthreads) acc.add(map_element<M, A>(a[j], b[j]));
  return acc.value();
}

// Rows of length n. kGroup == kWarpSize: each warp owns a row. kGroup == kBlockThreads: each
// block owns a slice (blockIdx.x of `splits`) of a row (blockIdx.y, striding by gridDim.y),
// each thread kInFlight 16-byte loads in flight.
template <ReduceMap M, int kGroup, typename T, typename O, int kInFlight = kLoadsInFlight>
__global__ void __launch_bounds__(kBlockThreads)
reduce_rows_kernel(const T* a, const T* b, O* out, acc_t<T>* partial, unsigned* done,
                   int64_t rows, int64_t n, int splits, bool streaming) {
  using A = acc_t<T>;
  if constexpr (kGroup == kWarpSize) {
    const int lane = threadIdx.x % kWarpSize;
    for (int64_t row = static_cast<int64_t>(blockIdx.x) * kRowsPerWarpBlock + threadIdx.x / kWarpSize;
         row < rows; row += static_cast<int64_t>(gridDim.x) * kRowsPerWarpBlock) {
      const A v = warp_sum(thread_partial<M>(a + row * n, b + row * n, n, lane, kWarpSize, streaming));
      if (lane == 0) out[row] = static_cast<O>(v);
    }
  } else {
    for (int64_t row = blockIdx.y; row < rows; row += gridDim.y) {
      const int64_t t = static_cast<int64_t>(blockIdx.x) * kGroup + threadIdx.x;
      A v = block_sum<kGroup>(thread_partial<M, kInFlight>(
          a + row * n, b + row * n, n, t, static_cast<int64_t>(splits) * kGroup, streaming));
      if (splits == 1) {
        if (threadIdx.x == 0) out[row] = static_cast<O>(v);
        continue;
      }
      if (threadIdx.x == 0) partial[row * splits + blockIdx.x] = v;
      if (last_block_to_finish(&done[row], splits)) {
        // The whole block combines the partials: strided compensated sums, then a tree.
        v = block_sum<kGroup>(partials_sum(&partial[row * splits], splits, threadIdx.x, kGroup));
        if (threadIdx.x == 0) out[row] = static_cast<O>(v);
      }
    }
  }
}

// [outer, R, inner] with inner > 1. Block (kLanes, kSlices) owns kLanes * V adjacent columns
// of one outer index, V per lane: one 16-byte vector where the rows allow it, so a warp reads
// 512 contiguous bytes of a row per load (kLanes == 32), or 128 bytes of each of 4 rows where
// rows are short (kLanes == 8: a 256-byte row of bf16 would leave half of 32 lanes idle).
// blockIdx.y is its slice of R among `splits`.
template <ReduceMap M, int V, int kLanes, typename T, typename O>
__global__ void __launch_bounds__(kBlockThreads)
reduce_cols_kernel(const T* a, const T* b, O* out, acc_t<T>* partial, unsigned* done,
                   int64_t outer, int64_t R, int64_t inner, int splits, bool streaming) {
  using A = acc_t<T>;
  using VecT = Vec<T, V>;
  constexpr int kSlices = kBlockThreads / kLanes;  // row slices per block
  constexpr int kTileCols = kLanes * V;
  // [slice][column], +1 column of padding: the final pass reads down a column, which would
  // otherwise hit one bank kSlices times.
  __shared__ alignas(16) unsigned char raw[kSlices * (kTileCols + 1) * sizeof(A)];
  auto slice_sum = reinterpret_cast<A(*)[kTileCols + 1]>(raw);
  // Sums each of this lane's V columns over the kSlices row slices, in slice order; the
  // result is valid where threadIdx.y == 0.
  auto sum_slices = [&](A(&v)[V]) {
#pragma unroll
    for (int k = 0; k < V; ++k) slice_sum[threadIdx.y][threadIdx.x * V + k] = v[k];
    __syncthreads();
    if (threadIdx.y == 0) {
#pragma unroll 8
      for (int s = 1; s < kSlices; ++s)
#pragma unroll
        for (int k = 0; k < V; ++k) v[k] = v[k] + slice_sum[s][threadIdx.x * V + k];
    }
    __syncthreads();
  };
  const int64_t col_tiles = ceil_div(inner, kTileCols);
  // Split blockIdx.y sums one contiguous run of rows, so each block streams its own stretch
  // of memory (interleaving the splits' rows made the bandwidth depend on their number).
  const int64_t run = ceil_div(R, splits);
  const int64_t r_end = std::min<int64_t>(R, (blockIdx.y + 1) * run);
  for (int64_t tile = blockIdx.x; tile < outer * col_tiles; tile += gridDim.x) {
    const int64_t o = tile / col_tiles;
    // this lane's first column; the host makes inner a multiple of V, so all V exist or none
    const int64_t c = (tile % col_tiles) * kTileCols + threadIdx.x * V;
    const int64_t base = o * R * inner + c;
    auto row_ptr = [&](const T* p, int64_t r) { return reinterpret_cast<const VecT*>(p + base + r * inner); };
    Accumulator<A> acc[V];
    if (c < inner)
      for_each_batched<kLoadsInFlight>(
          blockIdx.y * run + threadIdx.y, r_end, kSlices,
          [&](int64_t r) { return load_pair<M>(row_ptr(a, r), row_ptr(b, r), streaming); },
          [&](const Pair<VecT>& v) {
#pragma unroll
            for (int k = 0; k < V; ++k) acc[k].add(map_element<M, A>(v.a.v[k], v.b.v[k]));
          });
    A v[V];
#pragma unroll
    for (int k = 0; k < V; ++k) v[k] = acc[k].value();
    sum_slices(v);
    const int64_t out_index = o * inner + c;
    const bool writer = threadIdx.y == 0 && c < inner;
    if (splits == 1) {
      if (writer)
#pragma unroll
        for (int k = 0; k < V; ++k) out[out_index + k] = static_cast<O>(v[k]);
      continue;
    }
    // partials are [split][output], so a warp writes (and the last block reads) them coalesced
    auto split_partial = [&](int64_t s) { return partial + s * outer * inner + out_index; };
    if (writer)
#pragma unroll
      for (int k = 0; k < V; ++k) split_partial(blockIdx.y)[k] = v[k];
    if (last_block_to_finish(&done[tile], splits)) {
      // The kSlices threads of each column combine its partials: strided, then in order.
      Accumulator<A> total[V];
      if (c < inner)
        for (int s = threadIdx.y; s < splits; s += kSlices)
#pragma unroll
          for (int k = 0; k < V; ++k) total[k].add(load_from_l2(split_partial(s) + k));
#pragma unroll
      for (int k = 0; k < V; ++k) v[k] = total[k].value();
      sum_slices(v);
      if (writer)
#pragma unroll
        for (int k = 0; k < V; ++k) out[out_index + k] = static_cast<O>(v[k]);
    }
  }
}

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
  // the first wave is done (bf16 8192^2 over dim 0, 2 resident per SM: 288 blocks for 264
  // slots took 73.7 us, 256 blocks 57.4 us; h100_64fdde4_probes.log, run 2).
  const int64_t by_fill = std::min(ceil_div(fill, independent_blocks),
                                   std::max<int64_t>(1, sms * resident / independent_blocks));
  const int64_t by_work = std::max<int64_t>(1, work_per_row / min_work_per_split);
  return static_cast<int>(std::min<int64_t>({by_fill, by_work, 65535}));
}

// Where split blocks leave their partial sums (`results` outputs x `splits` each) and the
// counters their last block is found with; nothing when there is one split.
template <typename A>
struct SplitWorkspace {
  at::Tensor partial, fresh_counters;
  A* partials = nullptr;
  unsigned* done = nullptr;
  SplitWorkspace(int splits, int64_t results, int64_t counters, const at::TensorOptions& options) {
    if (splits == 1) return;
    partial = at::empty({results * splits}, options.dtype(c10::CppTypeToScalarType<A>::value));
    partials = partial.mutable_data_ptr<A>();
    done = zeroed_counters(counters, options, fresh_counters);
  }
};

template <ReduceMap M, typename T, typename O>
void launch_typed(const T* a, const T* b, O* out, int64_t outer, int64_t R, int64_t inner,
                  const at::TensorOptions& options) {
  using A = acc_t<T>;
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const bool streaming = stream_once(outer * R * inner * int64_t(sizeof(T)) * (a == b ? 1 : 2));
  if (inner == 1 && R <= kWarpRowMax && outer > 1) {
    auto* kernel = reduce_rows_kernel<M, kWarpSize, T, O>;
    kernel<<<resident_grid(kernel, kBlockThreads, 0, outer, kRowsPerWarpBlock), kBlockThreads, 0,
             stream>>>(a, b, out, nullptr, nullptr, outer, R, 1, streaming);
  } else if (inner == 1) {
    auto* kernel = reduce_rows_kernel<M, kBlockThreads, T, O>;
    const int splits = choose_splits(kernel, outer, R, int64_t(kBlockThreads) * vec_width<T>() * 4,
                                     kRowBlocksPerSm);
    SplitWorkspace<A> work(splits, outer, outer, options);
    const dim3 grid(splits, static_cast<unsigned>(std::min<int64_t>(outer, 65535)));
    // Whole fp32 rows of one block each: 8 loads in flight, so a row of up to 8192 is one
    // batch, one wait (8192^2 over dim -1: 99.2-99.8 -> 98.1-98.5 us). Not for bf16, whose
    // 8-load kernel takes 108 registers and so fewer blocks per SM (92 us), nor for split
    // rows (no gain measured for flat sums).
    if constexpr (std::is_same_v<T, float>)
      if (splits == 1) kernel = reduce_rows_kernel<M, kBlockThreads, T, O, 8>;
    kernel<<<grid, kBlockThreads, 0, stream>>>(a, b, out, work.partials, work.done, outer, R,
                                               splits, streaming);
  } else {
    // 16-byte vectors along the row where every row starts 16-byte aligned; 8 lanes across
    // a row where 32 would not all have a column
    constexpr int V = vec_width<T>();
    const bool vectors = inner % V == 0 && is_aligned(a, 16) && is_aligned(b, 16);
    const int lanes = inner / (vectors ? V : 1) >= 32 ? 32 : 8;
    const int64_t tiles = outer * ceil_div(inner, int64_t(lanes) * (vectors ? V : 1));
    const int slices = kBlockThreads / lanes;
    auto* kernel = vectors ? (lanes == 32 ? reduce_cols_kernel<M, V, 32, T, O> : reduce_cols_kernel<M, V, 8, T, O>)
                           : (lanes == 32 ? reduce_cols_kernel<M, 1, 32, T, O> : reduce_cols_kernel<M, 1, 8, T, O>);
    const int splits = choose_splits(kernel, tiles, R, slices * kMinRowsPerThread, kColBlocksPerSm);
    SplitWorkspace<A> work(splits, outer * inner, tiles, options);
    const dim3 grid(static_cast<unsigned>(std::min<int64_t>(tiles, INT32_MAX)), splits);
    kernel<<<grid, dim3(lanes, slices), 0, stream>>>(
        a, b, out, work.partials, work.done, outer, R, inner, splits, streaming);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
}

template <ReduceMap M>
void launch(const at::Tensor& a, const at::Tensor& b, at::Tensor& out, int64_t outer, int64_t R,
            int64_t inner) {
  AT_DISPATCH_ALL_TYPES_AND_COMPLEX_AND3(
      at::kBool, at::kHalf, at::kBFloat16, a.scalar_type(), "smem_reduce_cuda", [&] {
        const scalar_t* pa = a.const_data_ptr<scalar_t>();
        const scalar_t* pb = b.const_data_ptr<scalar_t>();
        with_reduce_output<scalar_t>(
            out, [&](auto* po) { launch_typed<M>(pa, pb, po, outer, R, inner, a.options()); });
      });
}

template <ReduceMap M>
at::Tensor sum_like(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype, const char* op) {
  return reduce_host(self, dim, keepdim, dtype, op,
                     [](const at::Tensor& x, at::Tensor& out, const ReducePlan& plan) {
                       const c10::cuda::CUDAGuard guard(x.device());
                       launch<M>(x, x, out, plan.outer, plan.reduced, plan.inner);
                     });
}

at::Tensor sum_cuda(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype) {
  return sum_like<ReduceMap::kIdentity>(self, dim, keepdim, dtype, "sum");
}

at::Tensor sum_of_squares_cuda(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                               std::optional<at::ScalarType> dtype) {
  return sum_like<ReduceMap::kSquare>(self, dim, keepdim, dtype, "sum_of_squares");
}

at::Tensor dot_cuda(const at::Tensor& self, const at::Tensor& other) {
  return dot_host(self, other, [](const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
    const c10::cuda::CUDAGuard guard(a.device());
    launch<ReduceMap::kProduct>(a, b, out, 1, a.numel(), 1);
  });
}

// ---------------------------------------------------------------- the ladder
//
// The seeds' steps to the final kernel, as float32 full sums for the benchmark (time and
// relative error on the same input). Each sums plainly in float, as the seeds did.
//   atomic        seed 000: one float atomicAdd per element on the result; the order is the
//                 order of arrival, so not even reproducible.
//   global_tree   seed 003: each block halves its 512 elements in place in global memory (a
//                 workspace: the input is not ours to overwrite), a __syncthreads per level;
//                 block results go round again until one is left.
//   static_smem   the same tree in a static __shared__ array.
//   dynamic_smem  a fixed grid; each thread first sums a grid-stride share, then the tree in
//                 dynamic shared memory; a second one-block launch sums the block results.
//   warp_shuffle  as dynamic_smem, with the in-block tree done by warp shuffles (block_sum).
//   final         the library kernel: 16-byte loads, compensated sums, one launch.
enum class Rung { kAtomic, kGlobalTree, kStaticSmem, kDynamicSmem, kWarpShuffle, kFinal };
constexpr const char* kRungNames[] = {"atomic",       "global_tree",  "static_smem",
                                      "dynamic_smem", "warp_shuffle", "final"};
constexpr int kLadderThreads = 256;

__device__ inline int64_t global_thread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t grid_threads() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

__global__ void ladder_atomic_kernel(const float* x, int64_t n, float* out) {
  for (int64_t i = global_thread(); i < n; i += grid_threads()) atomicAdd(out, x[i]);
}

// The two elements thread t of a 512-element chunk starts from (zero past the end).
__device__ inline float chunk_pair(const float* x, int64_t n) {
  const int64_t i = static_cast<int64_t>(blockIdx.x) * 2 * kLadderThreads + threadIdx.x;
  return (i < n ? x[i] : 0.f) + (i + kLadderThreads < n ? x[i + kLadderThreads] : 0.f);
}

// Sequential-addressing tree over kLadderThreads values in `s` (shared or global memory);
// the result lands in s[0]. __syncthreads also orders the block's global-memory writes.
__device__ inline void tree_in_place(float* s) {
  __syncthreads();
  for (int stride = kLadderThreads / 2; stride > 0; stride >>= 1) {
    if (threadIdx.x < stride) s[threadIdx.x] += s[threadIdx.x + stride];
    __syncthreads();
  }
}

__global__ void __launch_bounds__(kLadderThreads)
ladder_global_tree_kernel(const float* x, int64_t n, float* work, float* partial) {
  float* mine = work + static_cast<int64_t>(blockIdx.x) * kLadderThreads;
  mine[threadIdx.x] = chunk_pair(x, n);
  tree_in_place(mine);
  if (threadIdx.x == 0) partial[blockIdx.x] = mine[0];
}

__global__ void __launch_bounds__(kLadderThreads)
ladder_static_smem_kernel(const float* x, int64_t n, float* partial) {
  __shared__ float s[kLadderThreads];
  s[threadIdx.x] = chunk_pair(x, n);
  tree_in_place(s);
  if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}

template <bool kShuffle>
__global__ void __launch_bounds__(kLadderThreads)
ladder_grid_stride_kernel(const float* x, int64_t n, float* partial) {
  float v = 0.f;
  for (int64_t i = global_thread(); i < n; i += grid_threads()) v += x[i];
  if constexpr (kShuffle) {
    v = block_sum<kLadderThreads>(v);
    if (threadIdx.x == 0) partial[blockIdx.x] = v;
  } else {
    extern __shared__ float s[];  // kLadderThreads floats, sized at launch
    s[threadIdx.x] = v;
    tree_in_place(s);
    if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
  }
}

at::Tensor ladder_sum(const at::Tensor& self, Rung rung) {
  TORCH_CHECK_TYPE(self.scalar_type() == at::kFloat,
                   "smem._sum_variant: the ladder sums float32, but got ", dtype_name(self.scalar_type()));
  const c10::cuda::CUDAGuard guard(self.device());
  const at::Tensor x = self.contiguous();
  const int64_t n = x.numel();
  at::Tensor out = at::zeros({}, x.options());
  if (n == 0) return out;
  const auto stream = c10::cuda::getCurrentCUDAStream();
  const float* src = x.const_data_ptr<float>();
  float* result = out.mutable_data_ptr<float>();
  switch (rung) {
    case Rung::kAtomic:
      ladder_atomic_kernel<<<grid_for(n, kLadderThreads), kLadderThreads, 0, stream>>>(src, n, result);
      break;
    case Rung::kGlobalTree:
    case Rung::kStaticSmem: {
      // One pass per 512x shrink; each pass's block results are the next pass's input.
      at::Tensor level;
      for (int64_t m = n;;) {
        const int64_t blocks = ceil_div(m, 2 * kLadderThreads);
        at::Tensor next = blocks == 1 ? out : at::empty({blocks}, x.options());
        float* dst = next.mutable_data_ptr<float>();
        if (rung == Rung::kGlobalTree) {
          at::Tensor work = at::empty({blocks * kLadderThreads}, x.options());
          ladder_global_tree_kernel<<<blocks, kLadderThreads, 0, stream>>>(
              src, m, work.mutable_data_ptr<float>(), dst);
        } else {
          ladder_static_smem_kernel<<<blocks, kLadderThreads, 0, stream>>>(src, m, dst);
        }
        C10_CUDA_KERNEL_LAUNCH_CHECK();
        if (blocks == 1) break;
        level = next;  // keeps the partials alive (stream-ordered) for the next pass
        src = dst;
        m = blocks;
      }
      break;
    }
    case Rung::kDynamicSmem:
    case Rung::kWarpShuffle: {
      const unsigned grid = grid_for(n, kLadderThreads);
      at::Tensor partial = at::empty({grid}, x.options());
      auto* kernel = rung == Rung::kWarpShuffle ? ladder_grid_stride_kernel<true>
                                                : ladder_grid_stride_kernel<false>;
      const size_t smem = rung == Rung::kWarpShuffle ? 0 : kLadderThreads * sizeof(float);
      kernel<<<grid, kLadderThreads, smem, stream>>>(src, n, partial.mutable_data_ptr<float>());
      C10_CUDA_KERNEL_LAUNCH_CHECK();
      kernel<<<1, kLadderThreads, smem, stream>>>(partial.const_data_ptr<float>(), grid, result);
      break;
    }
    case Rung::kFinal:
      return sum_cuda(x, std::nullopt, false, std::nullopt);
  }
  C10_CUDA_KERNEL_LAUNCH_CHECK();
  return out;
}

at::Tensor sum_variant_cuda(const at::Tensor& self, c10::string_view variant) {
  for (int r = 0; r < static_cast<int>(std::size(kRungNames)); ++r)
    if (variant == kRungNames[r]) return ladder_sum(self, static_cast<Rung>(r));
  TORCH_CHECK_VALUE(false, "smem._sum_variant: unknown variant '", variant,
                    "' (expected one of smem_ops.variants('reduce'))");
}

}  // namespace

std::vector<std::string> reduce_variants() { return {std::begin(kRungNames), std::end(kRungNames)}; }

}  // namespace smem::cuda

TORCH_LIBRARY_IMPL(smem, CUDA, m) {
  m.impl("sum", &smem::cuda::sum_cuda);
  m.impl("sum_of_squares", &smem::cuda::sum_of_squares_cuda);
  m.impl("dot", &smem::cuda::dot_cuda);
  m.impl("_sum_variant", &smem::cuda::sum_variant_cuda);
}
