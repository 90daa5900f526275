// torch.histogram's bin rule over explicit edges, which the CPU and CUDA kernels of
// _histogram_count share. Free of torch's tensor headers, so that the .cu files that include it
// parse fast (cuda/launch.h says why); the checks of the op's arguments are histogram_edges.h's.
#pragma once

#include <c10/macros/Macros.h>

namespace smem {

// std::upper_bound over edges[first, first + len): the first index whose edge is > v, probed
// in std::upper_bound's order (halving `len`, going right when !(v < edge)), so the index is
// torch's even for edges that are not sorted. Branch-free on the device: the loop trip count
// depends on len only.
template <typename T, typename I>
C10_HOST_DEVICE inline I edge_upper_bound(const T* edges, I first, I len, T v) {
  while (len > 0) {
    const I half = len >> 1;
    const bool right = !(v < edges[first + half]);
    first = right ? first + half + 1 : first;
    len = right ? len - half - 1 : half;
  }
  return first;
}

// edge_upper_bound over a window of 2 or 3 edges (torch's local search) without the loop and
// its branches: the same probes (first + 1, then first + 2 right of it in a window of 3, or
// first left of it), so the same index.
template <typename T, typename I>
C10_HOST_DEVICE inline I window_upper_bound(const T* edges, I first, I len, T v) {
  const T lo = edges[first], mid = edges[first + 1], hi = edges[first + len - 1];
  return !(v < mid) ? first + 2 + I(len == 3 && !(v < hi)) : first + I(!(v < lo));
}

// The bin of v among E >= 2 edges, or -1 where torch.histogram drops v (outside
// [edges[0], edges[E-1]], or NaN). torch's CPU rules
// (aten/src/ATen/native/cpu/HistogramKernel.cpp):
//   uniform = false (BINARY_SEARCH): upper_bound over all edges, minus one;
//   uniform = true  (LINEAR_INTERPOLATION_WITH_LOCAL_SEARCH): pos = trunc((v - e0) * (E - 1) /
//     (eE - e0)) in T's arithmetic, then upper_bound in [max(0, pos - 1), min(pos + 2, E));
//   then v == edges[E-1] (pos == E - 1) goes to the last bin.
// Where torch's arithmetic is undefined (pos NaN or out of [0, E), from equal or infinite
// outer edges) this searches all edges instead. The result is always in [0, E - 2] or -1,
// whatever the edges hold: every search window is non-empty, inside [0, E), and starts at 0
// (whose edge is <= v) or above.
template <typename T, typename I>
C10_HOST_DEVICE inline I edge_bin(T v, const T* edges, I E, T left, T right, bool uniform) {
  if (!(v >= left && v <= right)) return -1;
  I upper;
  if (uniform) {
    const T p = (v - left) * static_cast<T>(E - 1) / (right - left);
    if (p >= T(0) && p < static_cast<T>(E)) {  // a window of 2 or 3 edges around pos
      const I pos = static_cast<I>(p);
      const I first = pos > 0 ? pos - 1 : 0;
      upper = window_upper_bound(edges, first, (pos + 2 < E ? pos + 2 : E) - first, v);
      return upper == E ? E - 2 : upper - 1;
    }
  }
  upper = edge_upper_bound(edges, I(0), E, v);
  return upper == E ? E - 2 : upper - 1;
}

}  // namespace smem
