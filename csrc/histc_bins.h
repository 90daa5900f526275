// The one bin formula of histc, which the CPU and CUDA kernels share, and the plan they bin by.
// Free of torch's tensor headers, so that the .cu files that include it parse fast
// (cuda/launch.h says why); the checks that make a plan are histogram.h's.
#pragma once

#include <c10/core/ScalarType.h>
#include <c10/macros/Macros.h>

#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>

namespace smem {

// Arithmetic type of the bin computation: torch bins fp32 input in fp32 and fp64 in fp64;
// fp16/bf16 are widened to fp32; integers are binned in fp64.
template <typename T> struct HistcMath { using type = double; };
template <> struct HistcMath<float> { using type = float; };
template <> struct HistcMath<c10::Half> { using type = float; };
template <> struct HistcMath<c10::BFloat16> { using type = float; };
template <typename T> using histc_math_t = typename HistcMath<T>::type;

// The float or double next to v in the direction of `to`.
C10_HOST_DEVICE inline float next_toward(float v, float to) { return ::nextafterf(v, to); }
C10_HOST_DEVICE inline double next_toward(double v, double to) { return ::nextafter(v, to); }

// Power-of-two scale of histc's arithmetic: 1 (torch's own, bit for bit) unless the range is
// so wide that (v - lo) * bins can overflow M (fp32 or bf16 over [-3e38, 3e38]; torch's kernels
// overflow there), then 2^-64, after which nothing can: |v - lo| <= 2 max, bins < 2^63.
// v * s - lo * s rounds as s * (v - lo) does wherever v * s is normal, so every step is torch's
// scaled by s: its quotient wherever its product is finite, and a finite one where it is not
// (a v so small that v * s is subnormal lies far from every bin edge of such a range).
template <typename M>
C10_HOST_DEVICE inline M histc_scale(M lo, M hi, int64_t bins) {
  return (hi - lo) * static_cast<M>(bins) <= std::numeric_limits<M>::max()
             ? M(1)
             : static_cast<M>(0x1p-64);
}

// The constants of histc's steps scaled by histc_scale's s over [lo, hi]: the bin of v is
// (v * s - lo_s) * bins / width_s, torch's (v - lo) * bins / (hi - lo) when s is 1. Every bin
// computation (HistcBins below, the CUDA kernels' BinMap) takes them from here.
template <typename M>
struct HistcScaledRange {
  // s, lo * s, hi * s - lo * s; initialized in this order (each from the one before)
  M s, lo_s, width_s;
  HistcScaledRange() = default;
  C10_HOST_DEVICE HistcScaledRange(M lo_, M hi_, int64_t bins)
      : s(histc_scale(lo_, hi_, bins)), lo_s(lo_ * s), width_s(hi_ * s - lo_s) {}
};

// Bins of one histc over [lo, hi] (lo < hi, both finite), prepared once per range. The bin of v
// is -1 when v is outside the range or NaN; else torch.histc's (v - lo) * bins / (hi - lo),
// truncated, with the same evaluation order, so that edge values land in the same bin; v == hi
// goes to the last bin. The CUDA shared-memory kernels' BinMap computes the same.
template <typename M>
struct HistcBins {
  M lo, hi;
  HistcScaledRange<M> scaled;
  int64_t bins;
  C10_HOST_DEVICE HistcBins(M lo_, M hi_, int64_t bins_)
      : lo(lo_), hi(hi_), scaled(lo_, hi_, bins_), bins(bins_) {}
  C10_HOST_DEVICE int64_t operator()(M v) const {
    if (!(v >= lo && v <= hi)) return -1;
    const int64_t b =
        static_cast<int64_t>((v * scaled.s - scaled.lo_s) * static_cast<M>(bins) / scaled.width_s);
    return b >= bins ? bins - 1 : b;
  }
};

// min == max after auto-range (a constant input, or no finite value): widen by one each way,
// as torch does. Where +-1 rounds back (|lo| from 2^24 in fp32, 2^53 in fp64) the range would
// stay empty and every quotient be 0 / 0; one step to the next value up keeps it non-empty, so
// every value sits at lo, in bin 0 (torch's CUDA histc raises there; auto-range runs on the
// device, with no host sync to raise from). At the dtype's largest value the step goes down
// instead (the bins stay finite), and the values land in the last bin.
template <typename M>
C10_HOST_DEVICE inline void histc_widen_empty_range(M& lo, M& hi) {
  if (lo == hi) {
    lo = lo - M(1);
    hi = hi + M(1);
    if (lo == hi) {
      if (hi < std::numeric_limits<M>::max()) hi = next_toward(hi, std::numeric_limits<M>::max());
      else lo = next_toward(lo, -std::numeric_limits<M>::max());
    }
  }
}

struct HistcPlan {
  int64_t bins = 100;
  double lo = 0, hi = 0;    // requested range, cast to the input dtype as torch does
  bool auto_range = false;  // min == max: range from the data's finite min and max
  c10::ScalarType out_dtype = c10::ScalarType::Float;
};

// Calls f(T{}) for every input dtype histc takes (floating point and integer dtypes other than
// bool) and returns true; false for any other.
template <typename F>
bool visit_histc_dtype(c10::ScalarType dtype, F&& f) {
  switch (dtype) {
    case c10::ScalarType::Byte: f(uint8_t{}); return true;
    case c10::ScalarType::Char: f(int8_t{}); return true;
    case c10::ScalarType::Short: f(int16_t{}); return true;
    case c10::ScalarType::Int: f(int32_t{}); return true;
    case c10::ScalarType::Long: f(int64_t{}); return true;
    case c10::ScalarType::Half: f(c10::Half{}); return true;
    case c10::ScalarType::BFloat16: f(c10::BFloat16{}); return true;
    case c10::ScalarType::Float: f(float{}); return true;
    case c10::ScalarType::Double: f(double{}); return true;
    default: return false;
  }
}

inline bool histc_input_supported(c10::ScalarType t) {
  return visit_histc_dtype(t, [](auto) {});
}

}  // namespace smem
