// The one bin formula of histc, which the CPU and CUDA kernels share, and the plan they bin by.
// Free of torch's tensor headers, so that the .cu files that include it parse fast
// (cuda/launch.h says why); the checks that make a plan are histogram.h's.
#pragma once

#include <c10/core/ScalarType.h>
#include <c10/macros/Macros.h>

#include <cstdint>

namespace smem {

// Arithmetic type of the bin computation: torch bins fp32 input in fp32 and fp64 in fp64;
// fp16/bf16 are widened to fp32; integers are binned in fp64.
template <typename T> struct HistcMath { using type = double; };
template <> struct HistcMath<float> { using type = float; };
template <> struct HistcMath<c10::Half> { using type = float; };
template <> struct HistcMath<c10::BFloat16> { using type = float; };
template <typename T> using histc_math_t = typename HistcMath<T>::type;

// Bin of v in [lo, hi] with `bins` equal bins, or -1 when v is outside the range or NaN.
// Same expression and evaluation order as torch.histc, so edge values land in the same bin:
// (v - lo) * bins / (hi - lo), truncated; v == hi goes to the last bin.
template <typename M>
C10_HOST_DEVICE inline int64_t histc_bin(M v, M lo, M hi, int64_t bins) {
  if (!(v >= lo && v <= hi)) return -1;
  int64_t b = static_cast<int64_t>((v - lo) * static_cast<M>(bins) / (hi - lo));
  return b >= bins ? bins - 1 : b;
}

// min == max after auto-range (a constant input, or no finite value): widen by one each way,
// as torch does.
template <typename M>
C10_HOST_DEVICE inline void histc_widen_empty_range(M& lo, M& hi) {
  if (lo == hi) {
    lo = lo - M(1);
    hi = hi + M(1);
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
