// How a histogram kernel's threads walk their share of the input.
#pragma once

#include <cstdint>
#include <type_traits>

#include "cuda/common.cuh"

namespace smem::cuda::histogram {

// Calls f(x[i]) for the i in [0, n) that belong to thread t of nthreads. With kVector, the
// aligned body moves in 16-byte vectors, and where f takes a whole vector it gets them
// whole: kInFlight loads in flight per thread, then their work; or (kPipelined, for callers
// with much work per element) the next vector's load in flight while f works on this one, so
// a thread is never without a load in flight.
template <bool kVector, bool kPipelined = false, int kInFlight = 2, typename T, typename F>
__device__ inline void for_each_element(const T* x, int64_t n, int64_t t, int64_t nthreads,
                                        bool streaming, F&& f) {
  if constexpr (!kVector) {
    for (int64_t i = t; i < n; i += nthreads) f(x[i]);
  } else {
    constexpr int V = vec_width<T>();
    using VecT = Vec<T, V>;
    auto each = [&](const VecT& a) {
      if constexpr (std::is_invocable_v<F&, const VecT&>) {
        f(a);
      } else {
#pragma unroll
        for (int k = 0; k < V; ++k) f(a.v[k]);
      }
    };
    const int64_t head = unaligned_head(x, n);
    for (int64_t i = t; i < head; i += nthreads) f(x[i]);
    const int64_t nvec = (n - head) / V;
    const VecT* xv = reinterpret_cast<const VecT*>(x + head);
    int64_t i = t;
    if constexpr (kPipelined) {
      if (i < nvec) {
        VecT a = load_once(&xv[i], streaming);
        for (; i + nthreads < nvec; i += nthreads) {
          const VecT next = load_once(&xv[i + nthreads], streaming);
          each(a);
          a = next;
        }
        each(a);
      }
    } else {
      for_each_batched<kInFlight>(
          i, nvec, nthreads, [&](int64_t k) { return load_once(&xv[k], streaming); }, each);
    }
    for (int64_t j = head + nvec * V + t; j < n; j += nthreads) f(x[j]);
  }
}

}  // namespace smem::cuda::histogram
