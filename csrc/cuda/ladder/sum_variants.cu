// The technique ladder of sums (torch.ops.smem._sum_variant, smem_ops.variants("reduce")): the
// seeds' steps to the final kernel, as float32 full sums for the benchmark (time and relative
// error on the same input). Each variant but final sums plainly in float, as the seeds did.
#include <c10/util/Exception.h>

#include <iterator>
#include <string>
#include <vector>

#include "cuda/build_info.h"
#include "cuda/common.cuh"
#include "cuda/reduce/launch.h"

namespace smem::cuda {
namespace {

enum class Variant { kAtomic, kGlobalTree, kStaticSmem, kDynamicSmem, kWarpShuffle, kFinal };
constexpr const char* kVariantNames[] = {"atomic",       "global_tree",  "static_smem",
                                         "dynamic_smem", "warp_shuffle", "final"};
static_assert(std::size(kVariantNames) == static_cast<size_t>(Variant::kFinal) + 1);
constexpr int kLadderThreads = 256;

__device__ inline int64_t global_thread() {
  return static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x;
}
__device__ inline int64_t grid_threads() { return static_cast<int64_t>(gridDim.x) * blockDim.x; }

// atomic (seed 000): one float atomicAdd per element on the result. Costs: every add
// serializes on one address, and the order is the order of arrival, so not even reproducible.
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

// global_tree (seed 003): each block halves its 512 elements in place in global memory (a
// workspace: the input is not ours to overwrite), a __syncthreads per level; block results go
// round again until one is left. Costs: every level a round trip to L2, one launch per pass.
__global__ void __launch_bounds__(kLadderThreads)
ladder_global_tree_kernel(const float* x, int64_t n, float* work, float* partial) {
  float* mine = work + static_cast<int64_t>(blockIdx.x) * kLadderThreads;
  mine[threadIdx.x] = chunk_pair(x, n);
  tree_in_place(mine);
  if (threadIdx.x == 0) partial[blockIdx.x] = mine[0];
}

// static_smem: the same tree in a static __shared__ array. Costs: still one launch per 512x
// shrink, and half the threads idle from the first level on.
__global__ void __launch_bounds__(kLadderThreads)
ladder_static_smem_kernel(const float* x, int64_t n, float* partial) {
  __shared__ float s[kLadderThreads];
  s[threadIdx.x] = chunk_pair(x, n);
  tree_in_place(s);
  if (threadIdx.x == 0) partial[blockIdx.x] = s[0];
}

// dynamic_smem (kShuffle = false): a fixed grid; each thread first sums a grid-stride share,
// then the tree in dynamic shared memory; a second one-block launch sums the block results.
// Costs: log2(256) __syncthreads per block, two launches.
// warp_shuffle (kShuffle = true): the in-block tree by warp shuffles (block_sum), one
// __syncthreads. Costs: scalar loads, one in flight per thread, still two launches.
// final: smem.sum (reduce/reduce.cu): 16-byte loads, compensated sums, one launch.
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

}  // namespace

void launch_sum_variant(int variant, const float* src, int64_t n, float* result) {
  const cudaStream_t stream = current_stream();
  TORCH_CHECK_VALUE(variant >= 0 && variant < static_cast<int>(Variant::kFinal),
                    "smem: no sum ladder variant ", variant);
  const auto v = static_cast<Variant>(variant);
  switch (v) {
    case Variant::kAtomic:
      ladder_atomic_kernel<<<grid_for(n, kLadderThreads), kLadderThreads, 0, stream>>>(src, n,
                                                                                       result);
      break;
    case Variant::kGlobalTree:
    case Variant::kStaticSmem: {
      // One pass per 512x shrink; each pass's block results are the next pass's input.
      Scratch level;
      for (int64_t m = n;;) {
        const int64_t blocks = ceil_div(m, 2 * kLadderThreads);
        Scratch next = blocks == 1 ? Scratch{} : device_scratch(blocks * int64_t(sizeof(float)));
        float* dst = blocks == 1 ? result : static_cast<float*>(next.data);
        if (v == Variant::kGlobalTree) {
          Scratch work = device_scratch(blocks * kLadderThreads * int64_t(sizeof(float)));
          ladder_global_tree_kernel<<<blocks, kLadderThreads, 0, stream>>>(
              src, m, static_cast<float*>(work.data), dst);
        } else {
          ladder_static_smem_kernel<<<blocks, kLadderThreads, 0, stream>>>(src, m, dst);
        }
        SMEM_LAUNCH_CHECK();
        if (blocks == 1) break;
        level = next;  // keeps the partials alive (stream-ordered) for the next pass
        src = dst;
        m = blocks;
      }
      break;
    }
    case Variant::kDynamicSmem:
    case Variant::kWarpShuffle: {
      const unsigned grid = grid_for(n, kLadderThreads);
      Scratch partial = device_scratch(grid * int64_t(sizeof(float)));
      auto* kernel = v == Variant::kWarpShuffle ? ladder_grid_stride_kernel<true>
                                                : ladder_grid_stride_kernel<false>;
      const size_t smem = v == Variant::kWarpShuffle ? 0 : kLadderThreads * sizeof(float);
      auto* partials = static_cast<float*>(partial.data);
      kernel<<<grid, kLadderThreads, smem, stream>>>(src, n, partials);
      SMEM_LAUNCH_CHECK();
      kernel<<<1, kLadderThreads, smem, stream>>>(partials, grid, result);
      break;
    }
    case Variant::kFinal: break;  // smem.sum itself: reduce_ops.cpp
  }
  SMEM_LAUNCH_CHECK();
}

std::vector<std::string> reduce_variants() {
  return {std::begin(kVariantNames), std::end(kVariantNames)};
}

}  // namespace smem::cuda
