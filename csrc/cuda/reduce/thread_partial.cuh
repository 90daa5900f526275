// What one thread sums: its share of map(a[i], b[i]) over a contiguous run, read in 16-byte
// vectors with kInFlight loads in flight, accumulated in the accumulate type (compensated for
// fp32/fp64); a column kernel's thread's rows of V columns (add_column_rows); and the sum of
// partials other blocks left in L2.
#pragma once

#include <cstdint>
#include <type_traits>

#include "cuda/common.cuh"
#include "cuda/tuning/reduce.h"
#include "reduce_element.h"

namespace smem::cuda::reduce {

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

// What one thread of a column kernel (cols.cuh, short_cols.cuh) sums each of its V adjacent
// columns in. fp16 and bf16 column sums are issue-bound (common.cuh): their Kahan steps go
// unguarded.
template <typename T>
using ColumnAccumulator =
    std::conditional_t<kHalfFloat<T>, UnguardedCompensatedAccumulator, Accumulator<acc_t<T>>>;

// Adds rows first, first + step, ... below end of the V columns at a + base (row r at a + base +
// r * inner) to acc, one vector of V columns a row, in row order, kInFlight loads in flight.
template <int kInFlight, ReduceMap M, typename T, int V>
__device__ inline void add_column_rows(ColumnAccumulator<T> (&acc)[V], const T* a, const T* b,
                                       int64_t base, int64_t inner, int64_t first, int64_t end,
                                       int64_t step, bool streaming) {
  using VecT = Vec<T, V>;
  auto row_ptr = [&](const T* p, int64_t r) {
    return reinterpret_cast<const VecT*>(p + base + r * inner);
  };
  for_each_batched<kInFlight>(
      first, end, step,
      [&](int64_t r) { return load_pair<M>(row_ptr(a, r), row_ptr(b, r), streaming); },
      [&](const Pair<VecT>& v) {
#pragma unroll
        for (int k = 0; k < V; ++k) acc[k].add(map_element<M, acc_t<T>>(v.a.v[k], v.b.v[k]));
      });
}

// Sum of partials p[s], s = t, t + stride, ... below n, that other blocks of this launch
// wrote: read from L2 several at a time (the last block of a split row of non-float sums reads
// up to a few per thread, and one at a time each would wait a round trip), added in index
// order.
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
  const bool same_phase =
      reinterpret_cast<uintptr_t>(a) % 16 == reinterpret_cast<uintptr_t>(b) % 16;
  const int64_t scalar_end = same_phase ? head : n;
  for (int64_t i = t; i < scalar_end; i += nthreads) acc.add(map_element<M, A>(a[i], b[i]));
  if (!same_phase) return acc.value();

  const int64_t nvec = (n - head) / V;
  const VecT* av = reinterpret_cast<const VecT*>(a + head);
  const VecT* bv = reinterpret_cast<const VecT*>(b + head);
  for_each_batched<kInFlight>(
      t, nvec, nthreads, [&](int64_t i) { return load_pair<M>(av + i, bv + i, streaming); },
      [&](const Pair<VecT>& v) { acc.add(vector_sum<M, A>(v.a, v.b)); });
  for (int64_t j = head + nvec * V + t; j < n; j += nthreads)
    acc.add(map_element<M, A>(a[j], b[j]));
  return acc.value();
}

}  // namespace smem::cuda::reduce
