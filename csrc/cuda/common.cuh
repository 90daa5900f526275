// Building blocks shared by the smem CUDA kernels: device properties, launch shapes,
// 16-byte vector loads, warp/block reductions and the "last block finishes" handshake.
// Free of torch's headers (cuda/launch.h says why, and declares scratch and zeroed memory).
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <cstring>
#include <type_traits>

#include "cuda/device_info.h"
#include "cuda/launch.h"
#include "cuda/tuning/common.h"

namespace smem::cuda {

// ---------------------------------------------------------------- device properties (host)

inline const DeviceInfo& current_device_info() {
  int device = 0;
  SMEM_CUDA_CHECK(cudaGetDevice(&device));
  return device_info(device);
}

__host__ __device__ inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A grid-stride launch: enough blocks for the work, at most `blocks_per_sm` per SM.
inline unsigned grid_for(int64_t work_items, int64_t items_per_block, int blocks_per_sm = 8) {
  const int64_t want = ceil_div(work_items, items_per_block);
  const int64_t fill = static_cast<int64_t>(current_device_info().sm_count) * blocks_per_sm;
  return static_cast<unsigned>(std::max<int64_t>(1, std::min(want, fill)));
}

// Blocks of `kernel` resident on one SM at once, launched with `threads` threads and
// `smem_bytes` of dynamic shared memory (which the kernel must already allow).
template <typename Kernel>
int resident_blocks_per_sm(Kernel* kernel, int threads, int64_t smem_bytes = 0) {
  return once_per_kernel(reinterpret_cast<const void*>(kernel), smem_bytes, threads, [&] {
    int blocks = 0;
    SMEM_CUDA_CHECK(
        cudaOccupancyMaxActiveBlocksPerMultiprocessor(&blocks, kernel, threads, smem_bytes));
    return std::max(blocks, 1);
  });
}

// The grid of a grid-striding kernel: enough blocks for the work, but no more than are resident
// at once (and at most `most_per_sm` per SM). One wave: the registers decide how many blocks
// fit, and blocks past the first wave would start only when the first ones finish their whole
// share.
template <typename Kernel>
unsigned resident_grid(Kernel* kernel, int threads, int64_t smem_bytes, int64_t work_items,
                       int64_t items_per_block, int most_per_sm = INT_MAX) {
  return grid_for(work_items, items_per_block,
                  std::min(resident_blocks_per_sm(kernel, threads, smem_bytes), most_per_sm));
}

// One block per work item (a tile, a chunk, a row segment), for kernels that stride over what
// is left past 2^31 - 1 blocks: the hardware starts each block as another finishes, which
// balances the load better than a wave of resident blocks striding over uneven shares.
inline unsigned block_per_item(int64_t items) {
  return static_cast<unsigned>(std::clamp<int64_t>(items, 1, INT32_MAX));
}

// ---------------------------------------------------------------- 16-byte vectors

// kN elements of T in one aligned 16-byte (or smaller, for kN * sizeof(T) < 16) access.
template <typename T, int kN>
struct alignas(sizeof(T) * kN) Vec {
  T v[kN];
};

template <typename T>
constexpr int vec_width() {
  return sizeof(T) >= 16 ? 1 : 16 / static_cast<int>(sizeof(T));
}

// A 16-byte Vec as four 32-bit words, its elements packed into them with shifts. (A Vec filled
// lane by lane, say from shared memory, and then assigned whole is lowered to 2-, 4- or 8-byte
// stores, as is a uint4 built from it by memcpy and stored through a plain pointer.)
template <typename T, int kN>
__device__ inline uint4 pack_words(const Vec<T, kN>& v) {
  static_assert(sizeof(v) == 16, "pack_words takes a 16-byte Vec");
  uint32_t w[4] = {0, 0, 0, 0};
  if constexpr (sizeof(T) >= 4) {
    memcpy(w, &v, 16);
  } else {
    using Bits = std::conditional_t<sizeof(T) == 1, uint8_t, uint16_t>;
#pragma unroll
    for (int i = 0; i < kN; ++i) {
      Bits bits;
      memcpy(&bits, &v.v[i], sizeof(T));
      w[i * sizeof(T) / 4] |= static_cast<uint32_t>(bits) << (8 * (i * sizeof(T) % 4));
    }
  }
  return make_uint4(w[0], w[1], w[2], w[3]);
}

// Stores a Vec in one store: a 16-byte one as packed words (pack_words).
template <typename T, int kN>
__device__ inline void store_vec(Vec<T, kN>* p, const Vec<T, kN>& v) {
  if constexpr (sizeof(v) == 16) {
    __stwb(reinterpret_cast<uint4*>(p), pack_words(v));
  } else {
    *p = v;
  }
}

__host__ __device__ inline bool is_aligned(const void* p, size_t bytes) {
  return reinterpret_cast<uintptr_t>(p) % bytes == 0;
}

// How many of the n elements at p come before p's first 16-byte boundary: the scalar head of a
// loop that moves the rest in 16-byte vectors.
template <typename T>
__host__ __device__ inline int64_t unaligned_head(const T* p, int64_t n) {
  return std::min<int64_t>(n, ((16 - reinterpret_cast<uintptr_t>(p) % 16) % 16) / sizeof(T));
}

// Whether rows of n elements laid back to back from p all start on a 16-byte boundary and hold
// whole 16-byte vectors: the vector loops' rows, with no scalar head or tail.
template <typename T>
inline bool whole_vector_rows(const T* p, int64_t n) {
  return n % vec_width<T>() == 0 && is_aligned(p, 16);
}

// A load that skips L1: used to read what other blocks wrote in this launch.
template <typename T>
__device__ inline T load_from_l2(const T* p) {
  static_assert(sizeof(T) % 4 == 0, "load_from_l2 needs a multiple of 4 bytes");
  unsigned words[sizeof(T) / 4];
#pragma unroll
  for (int i = 0; i < static_cast<int>(sizeof(T) / 4); ++i)
    words[i] = __ldcg(reinterpret_cast<const unsigned*>(p) + i);
  T out;
  memcpy(&out, words, sizeof(T));
  return out;
}

// A load of data that is read exactly once (ld.global.cs: evict-first in L1 and L2). A stream
// of input then recycles its own cache lines instead of pushing out others' - in particular
// dirty lines, whose write-back would take DRAM bandwidth from the reads.
template <typename T>
__device__ inline T load_streaming(const T* p) {
  static_assert(std::is_trivially_copyable_v<T>, "load_streaming moves raw bits");
  T out;
  if constexpr (sizeof(T) == 16) {
    const uint4 w = __ldcs(reinterpret_cast<const uint4*>(p));
    memcpy(&out, &w, 16);
  } else if constexpr (sizeof(T) == 8) {
    const uint2 w = __ldcs(reinterpret_cast<const uint2*>(p));
    memcpy(&out, &w, 8);
  } else if constexpr (sizeof(T) == 4) {
    const unsigned w = __ldcs(reinterpret_cast<const unsigned*>(p));
    memcpy(&out, &w, 4);
  } else if constexpr (sizeof(T) == 2) {
    const unsigned short w = __ldcs(reinterpret_cast<const unsigned short*>(p));
    memcpy(&out, &w, 2);
  } else {
    static_assert(sizeof(T) == 1, "load_streaming takes 1, 2, 4, 8 or 16 bytes");
    const unsigned char w = __ldcs(reinterpret_cast<const unsigned char*>(p));
    memcpy(&out, &w, 1);
  }
  return out;
}

// A load of data read once, evict-first where `streaming` (the same for the whole launch).
template <typename T>
__device__ inline T load_once(const T* p, bool streaming) {
  return streaming ? load_streaming(p) : *p;
}

// Whether a kernel that reads `bytes` once should stream them (load_once): only inputs of a
// few L2 sizes (kStreamOnceL2Sizes unless the kernel's tuning says otherwise), whose reads
// would otherwise push out dirty lines and wait for their write-back.
inline bool stream_once(int64_t bytes, int l2_sizes = kStreamOnceL2Sizes) {
  return bytes <= l2_sizes * static_cast<int64_t>(current_device_info().l2_bytes);
}

// Visits i = first, first + stride, ... below `end` in batches of kInFlight: a batch issues
// all its loads, load(i), before the first use(loaded), so a thread keeps kInFlight
// independent loads in flight. One guarded batch takes what is left: a one-at-a-time tail
// would serialize up to kInFlight - 1 more round trips, and a guard on every batch costs
// bandwidth. (reduce_vector_runs_kernel writes its loop out: this guarded batch, whose loops
// break, spilled there at 32 registers.)
template <int kInFlight, typename Load, typename Use>
__device__ inline void for_each_batched(int64_t first, int64_t end, int64_t stride, Load&& load,
                                        Use&& use) {
  using Loaded = decltype(load(first));
  auto batch = [&](int64_t i, auto guarded) {
    Loaded v[kInFlight];
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      if (guarded && i + u * stride >= end) break;
      v[u] = load(i + u * stride);
    }
#pragma unroll
    for (int u = 0; u < kInFlight; ++u) {
      if (guarded && i + u * stride >= end) break;
      use(v[u]);
    }
  };
  int64_t i = first;
  for (; i + (kInFlight - 1) * stride < end; i += kInFlight * stride) batch(i, std::false_type{});
  if (i < end) batch(i, std::true_type{});
}

// ---------------------------------------------------------------- accumulation

// A running sum. For fp32/fp64 it is compensated (Kahan): a thread adds hundreds of values
// into one sum, and plain float addition would lose ~count * eps of them; the compensation
// keeps the error at a few eps for 4 extra adds per step, free in a memory-bound loop. nvcc
// does not reassociate these adds (no fast-math); it may fuse the map's square or product into
// the first subtraction (an fma, still a Kahan step). Integers and complex sum plainly.
template <typename A>
struct Accumulator {
  A sum = A(0);
  __device__ void add(A v) { sum = sum + v; }
  __device__ A value() const { return sum; }
};

template <typename F>
struct CompensatedAccumulator {
  F sum = F(0), carry = F(0);
  __device__ void add(F v) {
    const F y = v - carry;
    const F t = sum + y;
    // Once the sum is infinite (an infinite input, or overflow), (t - sum) - y would be
    // inf - inf = NaN and poison every later add, where torch's sum stays infinite: the carry
    // is kept only while t is finite (t - t is 0 exactly then).
    carry = t - t == F(0) ? (t - sum) - y : F(0);
    sum = t;
  }
  __device__ F value() const { return sum; }
};
template <> struct Accumulator<float> : CompensatedAccumulator<float> {};
template <> struct Accumulator<double> : CompensatedAccumulator<double> {};

// A float Kahan sum for kernels bound by issue rather than memory (the fp16/bf16 column sums):
// the Kahan step without CompensatedAccumulator's finiteness guard, 5 operations a value with the
// fallback, not 7. Once the compensated sum is not finite (an infinite input, or an overflow),
// neither is its carry, and one add later the sum is NaN; the result then falls back to a plain
// sum, kept halved (fma: v * 0.5 is exact) so that its partial sums have twice the float range.
// It holds the infinity or NaN of infinite inputs (as torch's sum) and, within a plain sum's
// error, inf where the values' sum overflows and the finite sum where only a partial sum passed
// the float maximum. While the compensated sum is finite, its steps are CompensatedAccumulator's
// (whose guard acts only on a sum that is not finite).
struct UnguardedCompensatedAccumulator {
  float sum = 0.f, carry = 0.f, half_plain = 0.f;
  __device__ void add(float v) {
    const float y = v - carry;
    const float t = sum + y;
    carry = (t - sum) - y;
    sum = t;
    half_plain = __fmaf_rn(v, 0.5f, half_plain);
  }
  __device__ float value() const { return isfinite(sum) ? sum : 2.f * half_plain; }
};

// ---------------------------------------------------------------- warp / block sums

// Shuffles any trivially copyable value as 32-bit words (complex, int64, double alike).
template <typename T>
__device__ inline T shfl_down(T v, int delta) {
  static_assert(sizeof(T) % 4 == 0, "shfl_down needs a multiple of 4 bytes");
  unsigned words[sizeof(T) / 4];
  memcpy(words, &v, sizeof(T));
#pragma unroll
  for (int i = 0; i < static_cast<int>(sizeof(T) / 4); ++i)
    words[i] = __shfl_down_sync(0xffffffffu, words[i], delta);
  T out;
  memcpy(&out, words, sizeof(T));
  return out;
}

// Sum over the first kLanes lanes of a warp (a power of two; all 32 by default), in a fixed
// tree order; the result is valid in lane 0.
template <int kLanes = kWarpSize, typename A>
__device__ inline A warp_sum(A v) {
  static_assert(kLanes > 0 && kLanes <= kWarpSize && (kLanes & (kLanes - 1)) == 0,
                "a power of two of lanes, at most a warp");
#pragma unroll
  for (int delta = kLanes / 2; delta > 0; delta >>= 1) v = v + shfl_down(v, delta);
  return v;
}

// Sum over a block of kThreads threads (1-D, or 2-D flattened; a power of two of warps): warp
// shuffles first, then the warp totals through shared memory and one last warp. Valid in thread
// 0. Fixed order, so bitwise reproducible. Callers pass sums that started at +0 (accumulators),
// never -0. The shared buffer is raw bytes: __shared__ objects can't have constructors, and A
// may be c10::complex.
template <int kThreads, typename A>
__device__ inline A block_sum(A v) {
  static_assert(kThreads % kWarpSize == 0 && kThreads <= 1024, "block must be whole warps");
  constexpr int kWarps = kThreads / kWarpSize;
  static_assert((kWarps & (kWarps - 1)) == 0,
                "block_sum's last tree needs a power of two of warps");
  __shared__ alignas(16) unsigned char raw[kWarps * sizeof(A)];
  A* warp_total = reinterpret_cast<A*>(raw);
  const int tid = threadIdx.x + threadIdx.y * blockDim.x;
  const int lane = tid % kWarpSize, warp = tid / kWarpSize;
  v = warp_sum(v);
  if (lane == 0) warp_total[warp] = v;
  __syncthreads();
  if (warp == 0) {
    // only the first kWarps lanes hold totals: a tree over them, not the whole warp (its
    // shuffles lie on every block's path: 2 instead of 5 for 128 threads). The lanes above held
    // +0, which changes no total but -0, and no total is -0 (the callers' sums start at +0).
    v = lane < kWarps ? warp_total[lane] : A(0);
    v = warp_sum<kWarps>(v);
  }
  __syncthreads();  // warp_total may be reused by the caller's next block_sum
  return v;
}

// Relaxed (morally strong, unordered) accesses of a word that other blocks of the same kernel
// access too: counters, and the slots of split_slots.cuh.
__device__ inline void store_relaxed(unsigned* p, unsigned v) {
  asm volatile("st.relaxed.gpu.global.b32 [%0], %1;" ::"l"(p), "r"(v) : "memory");
}
__device__ inline unsigned load_relaxed(const unsigned* p) {
  unsigned v;
  asm volatile("ld.relaxed.gpu.global.b32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
  return v;
}

// Called by every thread of a block after it wrote its share of a multi-block result.
// Returns true (in all threads) in the one block that arrives last among the `expected` blocks
// counting on `counter`; that block may then read everything the others wrote, using
// load_from_l2. The counter starts at zero (zeroed_counters) and the last block sets it back to
// zero with a relaxed store: every other block's count is in it already, and the next kernel
// on the stream finds it zero.
// The acquire-release ticket is the handshake of CUTLASS's semaphores: the first barrier orders
// the block's writes before the count, and a release is cumulative, so they are visible
// device-wide before the count; the acquire, then the second barrier, order the last block's
// reads after every other block's count.
__device__ inline bool last_block_to_finish(unsigned* counter, unsigned expected) {
  __shared__ bool is_last;
  __syncthreads();
  if (threadIdx.x == 0 && threadIdx.y == 0) {
    unsigned before;
    asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], 1;"
                 : "=r"(before)
                 : "l"(counter)
                 : "memory");
    is_last = before == expected - 1;
    if (is_last) store_relaxed(counter, 0);
  }
  __syncthreads();
  return is_last;
}

// Opts a kernel into dynamic shared memory up to the device's opt-in limit less
// kStaticSmemReserve, where `bytes` of it with the static part may pass the default per-block
// limit (max_smem_per_block, 48 KiB). The attribute is only a cap: the launch's own size decides
// occupancy, so one cap serves every launch. Set once per kernel and device.
template <typename Kernel>
void allow_dynamic_smem(Kernel* kernel, int64_t bytes) {
  const DeviceInfo& info = current_device_info();
  if (bytes + kStaticSmemReserve <= info.max_smem_per_block) return;
  once_per_kernel(reinterpret_cast<const void*>(kernel), -1, 0, [&] {
    SMEM_CUDA_CHECK(
        cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize,
                             static_cast<int>(info.max_smem_per_block_optin - kStaticSmemReserve)));
    return 0;
  });
}

}  // namespace smem::cuda
