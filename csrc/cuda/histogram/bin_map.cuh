// Bin mapping for the histogram kernels: the range they bin into, and BinMap, the per-element
// value -> bin step of every shared-memory kernel (the global-counter kernel uses HistcBins).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <type_traits>

#include "histc_bins.h"

namespace smem::cuda::histogram {

// Integer input binned over a range whose bounds are multiples of 1/2 (histc(ids, E, 0, E),
// bincount's [-1/2, E - 1/2], ...), where the float64 expression of HistcBins is an exact
// integer quotient. With lo = L/2, hi = H/2, S = H - L and v in range, (v - lo) * bins is
// A/2 for the integer A = (2v - L) * bins, so every float64 step is exact up to the
// quotient A/S; rounding can lift A/S to the next integer k <= bins only from within
// k * 2^-53 of it, but a non-integer A/S is at least 1/S away, and S * bins < 2^53 makes
// 1/S the larger. So the bin is floor(A / S); with S * bins < 2^31 (A < 2^31) it is a
// 32-bit multiply and a shift (Granlund-Montgomery: for A < 2^31 and
// l = ceil(log2 S), floor(A / S) = A * ceil(2^(31+l) / S) >> (31 + l)), in place of the
// float64 division, conversions and compares that made integer input compute-bound.
struct IntBins {
  bool on = false;
  int64_t first = 0, last = 0;  // ceil(lo), floor(hi), within the input type: v in range
  unsigned offset = 0;          // 2 * first - L: 2v - L = 2 (v - first) + offset
  uint64_t magic = 0;
  int shift = 0;

  // The exact path for `bins` bins over a range [lo, hi] (lo < hi) and inputs in [tmin, tmax],
  // or `on` false (auto-range, whose lo == hi, included).
  static IntBins for_range(double lo, double hi, int64_t bins, int64_t tmin, int64_t tmax) {
    IntBins r;
    constexpr double kBound = 0x1p52;  // 2 * lo, 2 * hi and ceil(lo) exact in int64 and double
    const double l2 = 2 * lo, h2 = 2 * hi;
    if (!(lo < hi && std::abs(lo) <= kBound && std::abs(hi) <= kBound && l2 == std::floor(l2) &&
          h2 == std::floor(h2)))
      return r;
    const int64_t span = static_cast<int64_t>(h2) - static_cast<int64_t>(l2);
    if (span >= (int64_t(1) << 31) / bins) return r;  // span * bins < 2^31
    r.first = std::max(static_cast<int64_t>(std::ceil(lo)), tmin);
    r.last = std::min(static_cast<int64_t>(std::floor(hi)), tmax);
    if (r.first > r.last) return r;  // no input value is in range: the float64 path says so
    r.offset = static_cast<unsigned>(2 * r.first - static_cast<int64_t>(l2));
    int l = 0;
    while ((int64_t(1) << l) < span) ++l;
    r.shift = 31 + l;
    r.magic = ((uint64_t(1) << r.shift) + span - 1) / span;
    r.on = true;
    return r;
  }
  // v's bin among the `bins` for_range was given.
  template <typename T>
  __device__ int operator()(T v, unsigned bins, int outside) const {
    // unsigned wrap-around gives v - first exactly wherever v is in range (below 2^31)
    const unsigned twice = 2 * (static_cast<unsigned>(v) - static_cast<unsigned>(first)) + offset;
    const unsigned b = static_cast<unsigned>((uint64_t(twice * bins) * magic) >> shift);
    return v >= static_cast<T>(first) && v <= static_cast<T>(last) ? min(b, bins - 1) : outside;
  }
};

// The range the histogram kernels bin into: given by value, or (auto-range) read from `device`.
// `ints`: the exact integer path for integer input over a given range (off otherwise).
template <typename M>
struct Range {
  M lo, hi;
  const M* device;  // nullptr, or {lo, hi} written by range_kernel
  IntBins ints{};
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

// HistcBins (histc_bins.h) for the shared-memory kernels, whose bins are far below 2^22: the
// same expression, truncated in 32 bits (for v in range the quotient is at most
// bins * (1 + 2^-22), so the value is HistcBins's; out of range and NaN give any value, which is
// then discarded). Branch-free and 32-bit, with the range loaded and bins converted once per
// thread: the per-element path of compute-bound kernels has no 64-bit compares and no
// divergence. v * s - lo * s is one FMA, as v - lo was.
template <typename M>
struct BinMap {
  M lo, hi, bins_m;  // bins_m: bins in M, the numerator's factor
  HistcScaledRange<M> scaled;
  int bins;
  IntBins ints;
  static_assert(std::is_same_v<M, double>, "float has its own BinMap below");
  __device__ BinMap(const Range<M>& range, int bins_) : bins(bins_), ints(range.ints) {
    range.load(lo, hi);
    scaled = HistcScaledRange<M>(lo, hi, bins_);
    bins_m = static_cast<M>(bins_);
  }
  template <typename T>
  __device__ int operator()(T t, int outside = -1) const {
    if constexpr (std::is_integral_v<T>)
      if (ints.on) return ints(t, static_cast<unsigned>(bins), outside);  // uniform per launch
    const M v = static_cast<M>(t);
    const int b =
        min(__double2int_rz(fma(v, scaled.s, -scaled.lo_s) * bins_m / scaled.width_s), bins - 1);
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
//   at most a few ulps, so they still truncate to 0. Other widths, and the scaled ranges
//   (histc_scale), divide with __fdiv_rn.
//   Truncation: for 0 <= q < 2^23, adding 2^23 rounding toward zero leaves trunc(q) in the
//   low mantissa bits (one FADD instead of a quarter-rate F2I). Bins stay below 2^22.
template <>
struct BinMap<float> {
  float lo, hi, bins_f, reciprocal;  // bins_f: bins as a float, the numerator's factor
  HistcScaledRange<float> scaled;
  int bins;
  bool fast;
  __device__ BinMap(const Range<float>& range, int bins_) : bins(bins_) {
    range.load(lo, hi);
    scaled = HistcScaledRange<float>(lo, hi, bins_);
    bins_f = static_cast<float>(bins_);
    const float width = scaled.width_s;  // hi - lo where s is 1
    fast = scaled.s == 1.0f && width >= 0x1p-100f && width * bins_f <= 0x1p100f;
    float approx;
    asm("rcp.approx.ftz.f32 %0, %1;" : "=f"(approx) : "f"(width));
    reciprocal = __fmaf_rn(approx, __fmaf_rn(-width, approx, 1.0f), approx);
  }
  template <typename T>
  __device__ int operator()(T input, int outside = -1) const {
    const float v = static_cast<float>(input);
    const float t = __fmul_rn(__fsub_rn(v, lo), bins_f);  // torch's numerator, rounded as there
    const float q0 = __fmul_rn(t, reciprocal);
    const float q = fast ? __fmaf_rn(reciprocal, __fmaf_rn(-scaled.width_s, q0, t), q0) : slow(v);
    constexpr int kTwo23Bits = 0x4B000000;  // 2^23 as a float's bits
    const int b = min(__float_as_int(__fadd_rz(q, 0x1p23f)) - kTwo23Bits, bins - 1);
    return v >= lo && v <= hi ? b : outside;
  }
  // Ranges too narrow or too wide for the reciprocal, scaled ones included: HistcBins's steps.
  __device__ float slow(float v) const {
    return __fdiv_rn(__fmul_rn(__fmaf_rn(v, scaled.s, -scaled.lo_s), bins_f), scaled.width_s);
  }
};
// BinMap is exact below this many bins; more bins take the global-counter kernel.
constexpr int64_t kMaxBinMapBins = int64_t(1) << 22;

}  // namespace smem::cuda::histogram
