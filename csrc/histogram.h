// Host-side planning shared by the CPU and CUDA histograms, and the one bin formula both use.
#pragma once

#include "smem.h"

#include <ATen/ATen.h>
#include <c10/core/Scalar.h>
#include <c10/macros/Macros.h>

#include <cmath>
#include <optional>

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

struct HistcPlan {
  int64_t bins = 100;
  double lo = 0, hi = 0;    // requested range, cast to the input dtype as torch does
  bool auto_range = false;  // min == max: range from the data's finite min and max
  at::ScalarType out_dtype = at::kFloat;
};

inline bool histc_input_supported(at::ScalarType t) {
  switch (t) {
    case at::kByte:
    case at::kChar:
    case at::kShort:
    case at::kInt:
    case at::kLong:
    case at::kHalf:
    case at::kBFloat16:
    case at::kFloat:
    case at::kDouble: return true;
    default: return false;
  }
}

// A range bound as the input dtype sees it (torch casts min/max to the input's type first).
inline double histc_cast_bound(double v, at::ScalarType t) {
  switch (t) {
    case at::kHalf: return static_cast<float>(c10::Half(static_cast<float>(v)));
    case at::kBFloat16: return static_cast<float>(c10::BFloat16(static_cast<float>(v)));
    case at::kFloat: return static_cast<float>(v);
    default: return v;
  }
}

inline HistcPlan plan_histc(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                            const at::Scalar& max, std::optional<at::ScalarType> dtype) {
  TORCH_CHECK_TYPE(histc_input_supported(self.scalar_type()), "smem.histc: input dtype ",
                   dtype_name(self.scalar_type()),
                   " is not supported (expected a floating point or "
                   "integer dtype other than bool)");
  TORCH_CHECK_VALUE(bins > 0, "smem.histc: bins must be > 0, but got ", bins);
  const double lo = min.toDouble(), hi = max.toDouble();
  TORCH_CHECK_VALUE(std::isfinite(lo) && std::isfinite(hi), "smem.histc: range of [", lo, ", ", hi,
                    "] is not finite");
  TORCH_CHECK_VALUE(lo <= hi, "smem.histc: max must be larger than min, but got min=", lo,
                    " and max=", hi);
  HistcPlan plan;
  plan.bins = bins;
  plan.lo = histc_cast_bound(lo, self.scalar_type());
  plan.hi = histc_cast_bound(hi, self.scalar_type());
  plan.auto_range = plan.lo == plan.hi;
  if (dtype) {
    TORCH_CHECK_TYPE(histc_input_supported(*dtype), "smem.histc: dtype= ", dtype_name(*dtype),
                     " is not supported (expected a floating point or integer dtype)");
    plan.out_dtype = *dtype;
  } else {
    plan.out_dtype = at::isFloatingType(self.scalar_type()) ? self.scalar_type() : at::kLong;
  }
  return plan;
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

// The host flow of histc on every backend: checks, then launch(x, plan, out) on a contiguous
// input when there is any. `out` has the requested dtype, and launch writes every bin of it.
template <typename Launch>
at::Tensor histc_host(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                      const at::Scalar& max, std::optional<at::ScalarType> dtype, Launch&& launch) {
  const HistcPlan plan = plan_histc(self, bins, min, max, dtype);
  at::Tensor out = at::empty({bins}, self.options().dtype(plan.out_dtype));
  if (self.numel() > 0) launch(self.contiguous(), plan, out);  // writes every bin
  else out.zero_();
  return out;
}

}  // namespace smem
