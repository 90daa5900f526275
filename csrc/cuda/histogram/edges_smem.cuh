// The front of an edge kernel's shared memory (histogram_edges.cu, edges_lane_sums.cuh): the
// bin edges, padded to 16 bytes, then the kernel's copies of the bins.
#pragma once

#include <algorithm>
#include <climits>
#include <cstdint>

#include "cuda/common.cuh"

namespace smem::cuda {

template <typename T>
struct EdgesFirst {
  int edges, bins;  // bins = edges - 1

  static EdgesFirst of(int64_t E) {
    return {static_cast<int>(std::min<int64_t>(E, INT_MAX)),
            static_cast<int>(std::min<int64_t>(E - 1, INT_MAX))};
  }
  __host__ __device__ int64_t edges_bytes() const {
    return ceil_div(int64_t(edges) * sizeof(T), 16) * 16;
  }
  __device__ T* edges_at(unsigned char* base) const { return reinterpret_cast<T*>(base); }
  template <typename C>
  __device__ C* copies_at(unsigned char* base) const {
    return reinterpret_cast<C*>(base + edges_bytes());
  }
  // By every thread of the block: the edges into shared memory, the first `counters` counters
  // of the copies zeroed, then a barrier. Returns the shared edges.
  template <typename C>
  __device__ T* stage(unsigned char* base, const T* edges_in, int64_t counters) const {
    T* shared_edges = edges_at(base);
    for (int i = threadIdx.x; i < edges; i += blockDim.x) shared_edges[i] = edges_in[i];
    C* copies = copies_at<C>(base);
    for (int64_t i = threadIdx.x; i < counters; i += blockDim.x) copies[i] = C(0);
    __syncthreads();
    return shared_edges;
  }
};

}  // namespace smem::cuda
