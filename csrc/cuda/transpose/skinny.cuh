// Skinny matrices: one side S <= kSkinnyMax (say 33 x 65536). Square tiles would leave most
// lanes idle on the short side, so a block takes a chunk of kSkinnyBytes along the long side
// and the whole short side. Seen from one end, the chunk is S line segments; from the other,
// it is one contiguous run of S * L elements. kFlatOut (the short side is the output's last
// dim): read S segments, write the run; otherwise read the run, write S segments.
// Both sides move in kVec-element vectors (16 bytes where the layout allows, else single
// elements) and a thread issues all its loads of a chunk before it stores any: a chunk is at
// most kSkinnyMax x 256 bytes, 4 vectors per thread, so it costs one memory round trip. The
// transposition happens between the tile and the run, element by element.
#pragma once

#include <algorithm>
#include <cstdint>

#include "cuda/common.cuh"
#include "cuda/tuning/transpose.h"
#include "transpose_geometry.h"

namespace smem::cuda::transpose {

constexpr int kSkinnyInFlight = kSkinnyMax * kSkinnyBytes / 16 / kSkinnyThreads;  // 16-byte loads
template <typename E>
constexpr int skinny_chunk() {
  return kSkinnyBytes / sizeof(E);
}  // elements per segment

// k / d for k < 2^16 and d <= kSkinnyMax, by a float reciprocal: (k + 0.5) / d sits at least
// 0.5 / d from an integer, far more than the float error, so the truncation is exact and an
// integer division (a long instruction sequence) is saved.
struct SmallDivisor {
  int d;
  float inverse;
  __device__ explicit SmallDivisor(int divisor) : d(divisor), inverse(1.f / divisor) {}
  __device__ void divmod(int k, int& q, int& r) const {
    q = static_cast<int>((static_cast<float>(k) + 0.5f) * inverse);
    r = k - q * d;
  }
};

// Tile rows of 256 bytes plus one 4-byte word (one element for wider ones): an odd number of
// words, so the run's walk down a tile column, which moves one row per element, lands in a
// new bank each time (a 2-byte pad would put 8 lanes of the walk in one bank).
template <typename E>
constexpr int skinny_pitch() {
  return skinny_chunk<E>() + (sizeof(E) < 4 ? 4 / sizeof(E) : 1);
}

// `total` chunks, counted on the host. kBatched: more than one matrix. With one, a block's chunk
// is its index, and its first load waits on no 64-bit division or batch offsets (a chunk a block
// is one wave of blocks, so that setup would lie on the kernel's whole path).
template <typename E, int kVec, bool kFlatOut, bool kBatched>
__global__ void __launch_bounds__(kSkinnyThreads, skinny_min_blocks<E>())
transpose_skinny_kernel(const E* __restrict__ in, E* __restrict__ out, const TransposeGeometry g,
                        const int64_t total) {
  using VecE = Vec<E, kVec>;
  constexpr int L = skinny_chunk<E>();
  constexpr int kLineVecs = L / kVec;  // vectors per line segment
  static_assert(kSkinnyMax * L < (1 << 16), "SmallDivisor range");
  __shared__ E tile[kSkinnyMax][skinny_pitch<E>()];  // [short index][long index within the chunk]
  const int S = static_cast<int>(kFlatOut ? g.cols : g.rows);
  const int64_t n_long = kFlatOut ? g.rows : g.cols;
  const SmallDivisor by_short(S);
  // A loaded vector and the slot it came from: vector `slot` of the segments (line
  // slot / kLineVecs) or of the run.
  struct Loaded {
    int slot;
    VecE v;
  };
  for (int64_t t = blockIdx.x; t < total; t += gridDim.x) {
    int64_t in_off = 0, out_off = 0, chunk = t;
    if constexpr (kBatched) {
      const int64_t chunks = ceil_div(n_long, L);
      chunk = t % chunks;
      g.batch_offsets(t / chunks, in_off, out_off);
    }
    const int64_t l0 = chunk * L;
    const int len = static_cast<int>(std::min<int64_t>(L, n_long - l0));
    const int count = S * len;  // elements of the run
    // Line s of the segments starts at line(s); element l of the chunk is at line(s)[l * step].
    const E* in_lines = in + in_off + l0 * g.row_in_stride;
    E* out_lines = out + out_off + l0;
    // The run's element k = l * S + s is the chunk's (s, l); `run` walks it in that order.
    struct RunCursor { int l, s; };
    auto run_at = [&](int k) {
      RunCursor c;
      by_short.divmod(k, c.l, c.s);
      return c;
    };
    auto advance = [&](RunCursor& c) {
      if (++c.s == S) {
        c.s = 0;
        ++c.l;
      }
    };
    // Vector `slot` of the segments covers l = l_first .. l_first + kVec - 1 of line s, cut at len.
    auto segment_slot = [&](int slot, int& s, int& l_first) {
      s = slot / kLineVecs;
      l_first = slot % kLineVecs * kVec;
    };
    const int segment_slots = S * kLineVecs, run_slots = static_cast<int>(ceil_div(count, kVec));
    if constexpr (kFlatOut) {
      const int64_t step = g.row_in_stride;  // 1 wherever kVec > 1
      for_each_batched<kSkinnyInFlight>(
          threadIdx.x, segment_slots, kSkinnyThreads,
          [&](int64_t slot) {
            int s, l;
            segment_slot(static_cast<int>(slot), s, l);
            const E* p = in_lines + s * g.col_in_stride + l * step;
            Loaded x{static_cast<int>(slot), {}};
            if (l + kVec <= len) {
              x.v = *reinterpret_cast<const VecE*>(p);  // kVec == 1 or step == 1
            } else {
#pragma unroll
              for (int i = 0; i < kVec; ++i)
                if (l + i < len) x.v.v[i] = p[i * step];
            }
            return x;
          },
          [&](const Loaded& x) {
            int s, l;
            segment_slot(x.slot, s, l);
#pragma unroll
            for (int i = 0; i < kVec; ++i)
              if (l + i < len) tile[s][l + i] = x.v.v[i];
          });
      __syncthreads();
      E* run = out + out_off + l0 * S;  // row_out_stride == S: one run
      for (int kv = threadIdx.x; kv < run_slots; kv += kSkinnyThreads) {
        const int k = kv * kVec;
        RunCursor c = run_at(k);
        if (k + kVec <= count) {
          VecE v;
#pragma unroll
          for (int i = 0; i < kVec; ++i, advance(c)) v.v[i] = tile[c.s][c.l];
          store_vec(reinterpret_cast<VecE*>(run + k), v);
        } else {
          for (int i = 0; k + i < count; ++i, advance(c)) run[k + i] = tile[c.s][c.l];
        }
      }
    } else {
      const E* run = in + in_off + l0 * S;  // col_in_stride == S: one run
      for_each_batched<kSkinnyInFlight>(
          threadIdx.x, run_slots, kSkinnyThreads,
          [&](int64_t slot) {
            const int k = static_cast<int>(slot) * kVec;
            Loaded x{static_cast<int>(slot), {}};
            if (k + kVec <= count) {
              x.v = *reinterpret_cast<const VecE*>(run + k);
            } else {
#pragma unroll
              for (int i = 0; i < kVec; ++i)
                if (k + i < count) x.v.v[i] = run[k + i];
            }
            return x;
          },
          [&](const Loaded& x) {
            RunCursor c = run_at(x.slot * kVec);
#pragma unroll
            for (int i = 0; i < kVec; ++i) {
              if (x.slot * kVec + i < count) tile[c.s][c.l] = x.v.v[i];
              advance(c);
            }
          });
      __syncthreads();
      for (int slot = threadIdx.x; slot < segment_slots; slot += kSkinnyThreads) {
        int s, l;
        segment_slot(slot, s, l);
        if (l >= len) continue;
        E* p = out_lines + s * g.row_out_stride + l;
        if (l + kVec <= len) {
          VecE v;
#pragma unroll
          for (int i = 0; i < kVec; ++i) v.v[i] = tile[s][l + i];
          store_vec(reinterpret_cast<VecE*>(p), v);
        } else {
          for (int i = 0; l + i < len; ++i) p[i] = tile[s][l + i];
        }
      }
    }
    __syncthreads();  // the tile is refilled by the next iteration
  }
}

}  // namespace smem::cuda::transpose
