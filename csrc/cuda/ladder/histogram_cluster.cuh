// The cluster variant of histc (ladder/histc_variants.cpp): the bins spread over the shared
// memory of a thread-block cluster, added to through distributed shared memory (DSMEM).
// sm_90 and later only: built for older archs, the kernel traps, and the host launches it only
// where cluster_supported().
#pragma once

#include <cooperative_groups.h>

#include <cstdint>

#include "cuda/common.cuh"
#include "cuda/histogram/bin_map.cuh"
#include "cuda/histogram/counters.cuh"
#include "cuda/histogram/elements.cuh"
#include "cuda/tuning/histogram.h"

namespace smem::cuda {
// Kernels live in the anonymous namespace of smem::cuda, as before the split: only
// histogram/histc.cu includes this header, and a kernel's mangled name decides where ptxas places
// its static shared memory beside the shared flag of last_block_to_finish (so, its machine code).
namespace {
using namespace histogram;

// Adds 1 to the counter at `mine` (an address in this block's shared memory), or to the
// same offset in the shared memory of cluster block `owner`. The local case is an ordinary
// shared atomic; the remote one a fire-and-forget reduction over DSMEM (mapa + red), which
// has far less throughput, so slices stay few.
__device__ inline void add_one_in_cluster(unsigned* mine, unsigned owner, unsigned rank) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  if (owner == rank) {
    atomicAdd(mine, 1u);
    return;
  }
  const auto local = static_cast<unsigned>(__cvta_generic_to_shared(mine));
  unsigned remote;
  asm volatile("mapa.shared::cluster.u32 %0, %1, %2;" : "=r"(remote) : "r"(local), "r"(owner));
  asm volatile("red.relaxed.cluster.shared::cluster.add.u32 [%0], 1;" ::"r"(remote) : "memory");
#endif
}

// Bins beyond one block's shared memory: a cluster of 2^log2_cluster blocks shares them.
// Block `rank` of a cluster holds the bins b with b % C == rank, at b / C (interleaved, so
// owner and offset are a mask and a shift, and a run of popular neighbouring bins spreads
// over all C blocks). Every block bins its grid-stride share of the input and adds 1 in the
// owner's shared memory, through DSMEM when that is another block's: no L2 traffic.
// Counters are 32-bit; the host keeps each cluster's element count below 2^32.
template <typename T, typename M>
__global__ void __launch_bounds__(kHistThreads)
histogram_cluster_kernel(const T* x, int64_t n, bool streaming, int bins, int log2_cluster,
                         Range<M> range, Counts counts) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  namespace cg = cooperative_groups;
  extern __shared__ unsigned slice[];  // this block's share of the bins
  const cg::cluster_group cluster = cg::this_cluster();
  const unsigned rank = cluster.block_rank();
  const unsigned owner_mask = (1u << log2_cluster) - 1;
  const int64_t slice_bins = (bins + owner_mask) >> log2_cluster;
  for (int64_t b = threadIdx.x; b < slice_bins; b += kHistThreads) slice[b] = 0;
  const BinMap<M> bin_of(range, bins);
  cluster.sync();  // every slice is zeroed before any block adds to it
  for_each_element<true>(x, n, blockIdx.x * int64_t(kHistThreads) + threadIdx.x,
                         int64_t(gridDim.x) * kHistThreads, streaming, [&](T v) {
                           const int bin = bin_of(static_cast<M>(v));
                           if (bin >= 0)
                             add_one_in_cluster(slice + (bin >> log2_cluster),
                                                static_cast<unsigned>(bin) & owner_mask, rank);
                         });
  cluster.sync();  // every add has landed, and no block leaves while others may add to it
  for (int64_t o = threadIdx.x; o < slice_bins; o += kHistThreads) {
    const int64_t b = (o << log2_cluster) | rank;
    if (b < bins && slice[o]) atomicAdd(&counts.add[b], static_cast<unsigned long long>(slice[o]));
  }
  counts.finish(bins);
#else
  __trap();  // the host launches this only where cluster_supported()
#endif
}

}  // namespace
}  // namespace smem::cuda
