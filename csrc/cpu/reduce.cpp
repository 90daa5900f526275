// CPU reductions: sum, sum_of_squares, dot.
//
// Every reduction is planned as a contiguous [outer, reduced, inner] view (reduce.h).
//  - inner == 1 (rows): fixed blocks of kBlock elements, each summed in kLanes independent
//    accumulators (the compiler vectorizes across lanes), block partials combined pairwise.
//  - inner > 1 (columns): a tile of up to kColTileBytes of accumulators is accumulated row by
//    row (contiguous, vectorizable), rows combined by a pairwise tree; where tiles are fewer than
//    the threads, subtrees of the same tree run in parallel.
// Block boundaries never depend on the thread count, so results are bitwise reproducible,
// and pairwise combination keeps the error growth logarithmic.
#include <ATen/ATen.h>
#include <ATen/Dispatch.h>
#include <ATen/Parallel.h>
#include <torch/library.h>

#include <type_traits>

#include "cpu/simd.h"
#include "reduce.h"

namespace smem::cpu {
namespace {

// Elements per block_sum call: each call zeroes its lanes and ends in a lane tree, so blocks of
// 16384 rather than 4096 cut that fixed cost 4x; still 64 blocks of parallelism at 1M.
constexpr int64_t kBlock = 16384;
// 32 lanes: several vector accumulators, so the adds of consecutive vectors don't wait on
// each other (one accumulator is bound by the add latency).
constexpr int kLanes = 32;
// Column tiles: accumulators of at most 16 KiB (in L1 beside the rows streaming past), so a row
// of fp32 [*, 4096] is read as one contiguous 16 KiB run. Narrower tiles read such rows as
// pieces far apart, which the prefetchers follow poorly.
constexpr int64_t kColTileBytes = 16 * 1024;
constexpr int64_t kColLeafRows = 32;

template <typename A>
A combine_pairwise(std::vector<A>& v) {
  if (v.empty()) return A(0);
  size_t n = v.size();
  while (n > 1) {
    for (size_t i = 0; i < n / 2; ++i) v[i] = v[2 * i] + v[2 * i + 1];
    if (n % 2) v[n / 2] = v[n - 1];
    n = (n + 1) / 2;
  }
  return v[0];
}

// What a row sum of T accumulates in: double for fp32 (and complex64) input. A float lane
// adding 128 copies of 1.23f drifts by 3e-7, more than torch's cascade sum on 8+ threads;
// double lanes give the correctly rounded float (1.6e-8); block_sum keeps them cheap by
// converting only run totals. fp16/bf16 keep float lanes, as torch does: their inputs carry
// 8-11 bits.
template <typename T, typename A> struct Widen { using type = A; };
template <> struct Widen<float, float> { using type = double; };
template <> struct Widen<c10::complex<float>, c10::complex<float>> {
  using type = c10::complex<double>;
};
template <typename T, typename A> using widen_t = typename Widen<T, A>::type;

// Where the lanes are widened (fp32), each lane first adds kRun elements in A and only the run
// total is converted and added in W: one convert and one wide add per kRun elements instead of
// per element, which would keep the double lanes compute-bound. Eight float adds per lane are
// exact for the seeds' 1.23f and otherwise cost a few ulp of an 8-term partial, far below the
// final rounding to float. Widened blocks use 64 lanes (8 AVX2 chains of the run): with 32, GCC
// orders each chain's eight loads 128 bytes apart, which streams slower from memory.
constexpr int kRun = 8;

template <ReduceMap M, typename A, typename T>
SMEM_SIMD_CLONES widen_t<T, A> block_sum(const T* a, const T* b, int64_t n) {
  using W = widen_t<T, A>;
  constexpr bool kWidened = !std::is_same_v<W, A>;
  constexpr int L = kWidened ? 2 * kLanes : kLanes;
  W lane[L];
  for (auto& l : lane) l = W(0);
  int64_t i = 0;
  if constexpr (kWidened) {
    for (; i + kRun * L <= n; i += kRun * L) {
      A run[L];
      for (auto& r : run) r = A(0);
      for (int k = 0; k < kRun; ++k)
        for (int l = 0; l < L; ++l) run[l] += map_element<M, A>(a[i + k * L + l], b[i + k * L + l]);
      for (int l = 0; l < L; ++l) lane[l] += static_cast<W>(run[l]);
    }
  }
  for (; i + L <= n; i += L)
    for (int l = 0; l < L; ++l) lane[l] += map_element<M, W>(a[i + l], b[i + l]);
  for (int l = 0; i < n; ++i, ++l) lane[l] += map_element<M, W>(a[i], b[i]);
  for (int width = L / 2; width > 0; width /= 2)  // pairwise, in a fixed order
    for (int l = 0; l < width; ++l) lane[l] += lane[l + width];
  return lane[0];
}

// Sum of one contiguous row; parallel over blocks when called outside a parallel region.
template <ReduceMap M, typename A, typename T>
A row_sum(const T* a, const T* b, int64_t n) {
  using W = widen_t<T, A>;
  const int64_t nblocks = (n + kBlock - 1) / kBlock;
  if (nblocks <= 1) return static_cast<A>(block_sum<M, A>(a, b, n));
  std::vector<W> partial(nblocks);
  at::parallel_for(0, nblocks, 1, [&](int64_t begin, int64_t end) {
    for (int64_t k = begin; k < end; ++k) {
      const int64_t off = k * kBlock;
      partial[k] = block_sum<M, A>(a + off, b + off, std::min(kBlock, n - off));
    }
  });
  return static_cast<A>(combine_pairwise(partial));
}

// acc[0..w) = sum over rows [r0, r1) of columns [0, w), in row order. Four rows per pass over
// acc (the same additions, in the same order), so acc is loaded and stored once per four rows;
// restrict, or GCC must assume acc overlaps the rows.
template <ReduceMap M, typename A, typename T>
SMEM_SIMD_CLONES void column_leaf(const T* a, const T* b, int64_t ld, int64_t r0, int64_t r1,
                                  int64_t w, A* __restrict__ acc) {
  for (int64_t c = 0; c < w; ++c) acc[c] = A(0);
  int64_t r = r0;
  for (; r + 4 <= r1; r += 4) {
    const T *a0 = a + r * ld, *a1 = a0 + ld, *a2 = a1 + ld, *a3 = a2 + ld;
    const T *b0 = b + r * ld, *b1 = b0 + ld, *b2 = b1 + ld, *b3 = b2 + ld;
    for (int64_t c = 0; c < w; ++c)
      acc[c] = (((acc[c] + map_element<M, A>(a0[c], b0[c])) + map_element<M, A>(a1[c], b1[c])) +
                map_element<M, A>(a2[c], b2[c])) +
               map_element<M, A>(a3[c], b3[c]);
  }
  for (; r < r1; ++r)
    for (int64_t c = 0; c < w; ++c) acc[c] += map_element<M, A>(a[r * ld + c], b[r * ld + c]);
}

// The tree over rows [r0, r1) splits at the midpoint down to leaves of kColLeafRows rows. It
// depends only on the row range, so any part of it gives the same bits on any thread.
inline int64_t column_mid(int64_t r0, int64_t r1) { return r0 + (r1 - r0) / 2; }

// Levels below a node of n rows, the node's included: the scratch a column_tree call needs, in
// tiles of w accumulators.
inline int column_depth(int64_t n) {
  int depth = 1;
  for (; n > kColLeafRows; n -= n / 2) ++depth;  // the larger half
  return depth;
}

// acc[0..w) = sum over rows [r0, r1) of columns [0, w) of a [*, ld] matrix, by the tree;
// scratch holds column_depth(r1 - r0) - 1 tiles of w.
template <ReduceMap M, typename A, typename T>
void column_tree(const T* a, const T* b, int64_t ld, int64_t r0, int64_t r1, int64_t w, A* acc,
                 A* scratch) {
  if (r1 - r0 <= kColLeafRows) {
    column_leaf<M, A>(a, b, ld, r0, r1, w, acc);
    return;
  }
  const int64_t mid = column_mid(r0, r1);
  column_tree<M, A>(a, b, ld, r0, mid, w, acc, scratch);
  column_tree<M, A>(a, b, ld, mid, r1, w, scratch, scratch + w);
  for (int64_t c = 0; c < w; ++c) acc[c] += scratch[c];
}

// How many levels of the row tree to cut off so `tiles` tiles x 2^levels subtrees give every
// thread about two tasks; only levels whose nodes all split (more than kColLeafRows rows), and
// none for inputs too small to repay waking the threads.
constexpr int64_t kColSplitMinElements = int64_t(1) << 16;
inline int column_split_levels(int64_t tiles, int64_t R, int64_t elements) {
  if (elements < kColSplitMinElements) return 0;
  const int64_t want = 2 * static_cast<int64_t>(at::get_num_threads());
  int levels = 0;
  for (int64_t smallest = R; tiles << levels < want && smallest > kColLeafRows && levels < 10;
       ++levels)
    smallest /= 2;
  return levels;
}

// out[o, c] = sum over r of x[o, r, c]: tiles of columns, each tile's row tree cut into
// 2^levels subtrees that run as separate tasks; the subtrees' sums are then added up the tree in
// its own order, which makes the result that of the whole tree on one thread.
template <ReduceMap M, typename T, typename O>
void reduce_columns(const T* a, const T* b, O* out, int64_t outer, int64_t R, int64_t inner) {
  using A = acc_t<T>;
  const int64_t tile_w = std::min<int64_t>(inner, kColTileBytes / static_cast<int64_t>(sizeof(A)));
  const int64_t col_tiles = (inner + tile_w - 1) / tile_w, tiles = outer * col_tiles;
  const int levels = column_split_levels(tiles, R, outer * R * inner);
  const int64_t pieces = int64_t(1) << levels;
  // Piece p of 2^levels: the row range reached by the bits of p, most significant first.
  auto piece_rows = [&](int64_t p, int64_t& r0, int64_t& r1) {
    r0 = 0;
    r1 = R;
    for (int l = levels - 1; l >= 0; --l) {
      const int64_t mid = column_mid(r0, r1);
      if ((p >> l) & 1) r0 = mid;
      else r1 = mid;
    }
  };
  // Tile t: outer index o, first column c0, width w; its sums go to out[o, c0 .. c0 + w).
  struct Tile { int64_t o, c0, w; };
  auto tile_at = [&](int64_t t) {
    const int64_t o = t / col_tiles, c0 = (t % col_tiles) * tile_w;
    return Tile{o, c0, std::min(tile_w, inner - c0)};
  };
  auto write = [&](const Tile& tile, const A* sum) {
    for (int64_t c = 0; c < tile.w; ++c) out[tile.o * inner + tile.c0 + c] = static_cast<O>(sum[c]);
  };
  // A piece's sum lands in its slot of `sums` when the tree is cut, else straight in scratch.
  std::vector<A> sums(levels > 0 ? tiles * pieces * tile_w : 0);
  at::parallel_for(0, tiles * pieces, 1, [&](int64_t begin, int64_t end) {
    std::vector<A> scratch(column_depth(R) * tile_w);
    for (int64_t task = begin; task < end; ++task) {
      const Tile tile = tile_at(task / pieces);
      const int64_t base = tile.o * R * inner + tile.c0;
      int64_t r0, r1;
      piece_rows(task % pieces, r0, r1);
      A* acc = levels > 0 ? &sums[task * tile_w] : scratch.data();
      column_tree<M, A>(a + base, b + base, inner, r0, r1, tile.w, acc, scratch.data() + tile_w);
      if (levels == 0) write(tile, acc);
    }
  });
  if (levels == 0) return;
  // Few tiles (fewer than two per thread) and pieces of at most 16 KiB: added on this thread.
  for (int64_t t = 0; t < tiles; ++t) {
    const Tile tile = tile_at(t);
    A* piece = &sums[t * pieces * tile_w];
    for (int64_t step = 1; step < pieces; step *= 2)  // left child += right child, bottom up
      for (int64_t p = 0; p < pieces; p += 2 * step)
        for (int64_t c = 0; c < tile.w; ++c)
          piece[p * tile_w + c] += piece[(p + step) * tile_w + c];
    write(tile, piece);
  }
}

template <ReduceMap M, typename T, typename O>
void reduce_kernel(const T* a, const T* b, O* out, int64_t outer, int64_t reduced, int64_t inner) {
  using A = acc_t<T>;
  if (inner == 1 && outer < at::get_num_threads()) {
    // Few long rows: each row's blocks in parallel. (Not inside an outer parallel_for: one
    // that runs inline still marks a parallel region, and the inner one would run serially.)
    for (int64_t o = 0; o < outer; ++o)
      out[o] = static_cast<O>(row_sum<M, A>(a + o * reduced, b + o * reduced, reduced));
    return;
  }
  if (inner == 1) {
    at::parallel_for(
        0, outer, std::max<int64_t>(1, kBlock / std::max<int64_t>(reduced, 1)),
        [&](int64_t begin, int64_t end) {
          for (int64_t o = begin; o < end; ++o)
            out[o] = static_cast<O>(row_sum<M, A>(a + o * reduced, b + o * reduced, reduced));
        });
    return;
  }
  reduce_columns<M>(a, b, out, outer, reduced, inner);
}

template <ReduceMap M>
void launch(const at::Tensor& a, const at::Tensor& b, at::Tensor& out, int64_t outer,
            int64_t reduced, int64_t inner) {
  const bool supported = visit_reduce_dtype(a.scalar_type(), [&](auto e) {
    using T = decltype(e);
    const T* pa = static_cast<const T*>(a.const_data_ptr());
    const T* pb = static_cast<const T*>(b.const_data_ptr());
    with_reduce_output<T>(out,
                          [&](auto* po) { reduce_kernel<M>(pa, pb, po, outer, reduced, inner); });
  });
  TORCH_CHECK_TYPE(supported, "smem: no CPU reduction of dtype ", a.scalar_type());
}

template <ReduceMap M>
at::Tensor sum_like(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype, const char* op) {
  return reduce_host(self, dim, keepdim, dtype, op,
                     [](const at::Tensor& x, at::Tensor& out, const ReducePlan& plan) {
                       launch<M>(x, x, out, plan.outer, plan.reduced, plan.inner);
                     });
}

at::Tensor sum_cpu(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                   std::optional<at::ScalarType> dtype) {
  return sum_like<ReduceMap::kIdentity>(self, dim, keepdim, dtype, "sum");
}

at::Tensor sum_of_squares_cpu(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                              std::optional<at::ScalarType> dtype) {
  return sum_like<ReduceMap::kSquare>(self, dim, keepdim, dtype, "sum_of_squares");
}

at::Tensor dot_cpu(const at::Tensor& self, const at::Tensor& other) {
  return dot_host(self, other, [](const at::Tensor& a, const at::Tensor& b, at::Tensor& out) {
    launch<ReduceMap::kProduct>(a, b, out, 1, a.numel(), 1);
  });
}

}  // namespace
}  // namespace smem::cpu

TORCH_LIBRARY_IMPL(smem, CPU, m) {
  m.impl("sum", &smem::cpu::sum_cpu);
  m.impl("sum_of_squares", &smem::cpu::sum_of_squares_cpu);
  m.impl("dot", &smem::cpu::dot_cpu);
}
