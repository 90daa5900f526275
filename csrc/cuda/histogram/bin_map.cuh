// Bin mapping for the histogram kernels: the range they bin into, and BinMap, the per-element
// value -> bin step of every shared-memory kernel (the global-counter kernel uses histc_bin).
#pragma once

#include <cstdint>
#include <type_traits>

#include "histogram.h"

namespace smem::cuda::histogram {

// The range the histogram kernels bin into: given by value, or (auto-range) read from `device`.
template <typename M>
struct Range {
  M lo, hi;
  const M* device;  // nullptr, or {lo, hi} written by range_kernel
  __device__ void load(M& l, M& h) const {
    if (device) {
      l = device[0];
      h = device[1];
    } else {
      l = lo;
      h = hi;
    }
  }
};

// histc_bin (histogram.h) for the shared-memory kernels, whose bins are far below 2^22: the
// same expression, truncated in 32 bits (for v in range the quotient is at most
// bins * (1 + 2^-22), so the value is histc_bin's; out of range, NaN and overflow give any
// value, which is then discarded or clamped as there). Branch-free and 32-bit, with the range
// loaded and bins converted once per thread: the per-element path of compute-bound kernels
// has no 64-bit compares and no divergence.
template <typename M>
struct BinMap {
  M lo, hi, width, scale;
  int bins;
  static_assert(std::is_same_v<M, double>, "float has its own BinMap below");
  __device__ BinMap(const Range<M>& range, int bins_) : bins(bins_) {
    range.load(lo, hi);
    width = hi - lo;
    scale = static_cast<M>(bins_);
  }
  __device__ int operator()(M v, int outside = -1) const {
    const int b = min(__double2int_rz((v - lo) * scale / width), bins - 1);
    return v >= lo && v <= hi ? b : outside;
  }
};

// float: the division and the truncation are the costly steps, so both are rebuilt from
// full-rate FMA-pipe instructions, with identical results.
//   Division: div.rn.f32 compiles to MUFU.RCP, a Newton step, a quotient, a residual and a
//   correction, guarded by FCHK (a slow path near over- and underflow). The width is fixed
//   per thread, so the reciprocal and its Newton step are computed once, leaving a multiply
//   and two FMAs per element: the same instructions, so the same correctly rounded quotient,
//   wherever FCHK would pass. That holds for every quotient that can land in a bin when the
//   width and bins * width are far from the float limits (`fast`): q >= 1/2 needs t >= w/2,
//   and then nothing in the steps comes near over- or underflow; smaller quotients are off by
//   at most a few ulps, so they still truncate to 0. Other widths divide with '/'.
//   Truncation: for 0 <= q < 2^23, adding 2^23 rounding toward zero leaves trunc(q) in the
//   low mantissa bits (one FADD instead of a quarter-rate F2I). Bins stay below 2^22.
template <>
struct BinMap<float> {
  float lo, hi, width, scale, reciprocal;
  int bins;
  bool fast;
  __device__ BinMap(const Range<float>& range, int bins_) : bins(bins_) {
    range.load(lo, hi);
    width = hi - lo;
    scale = static_cast<float>(bins_);
    fast = width >= 0x1p-100f && width * scale <= 0x1p100f;
    float approx;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(approx) : "f"(width));
    reciprocal = __fmaf_rn(approx, __fmaf_rn(-width, approx, 1.0f), approx);
  }
  __device__ int operator()(float v, int outside = -1) const {
    const float t = __fmul_rn(__fsub_rn(v, lo), scale);  // torch's numerator, rounded as there
    const float q0 = __fmul_rn(t, reciprocal);
    const float q =
        fast ? __fmaf_rn(reciprocal, __fmaf_rn(-width, q0, t), q0) : __fdiv_rn(t, width);
    constexpr int kTwo23Bits = 0x4B000000;  // 2^23 as a float's bits
    const int b = min(__float_as_int(__fadd_rz(q, 0x1p23f)) - kTwo23Bits, bins - 1);
    return v >= lo && v <= hi ? b : outside;
  }
};
// BinMap is exact below this many bins; more bins take the global-counter kernel.
constexpr int64_t kMaxBinMapBins = int64_t(1) << 22;

}  // namespace smem::cuda::histogram
