// Host-side planning shared by the CPU and CUDA histograms: the checks of histc's arguments,
// the plan, the output. The bin formula they plan for: histc_bins.h.
#pragma once

#include <ATen/ATen.h>
#include <c10/core/Scalar.h>

#include <cmath>
#include <limits>
#include <optional>

#include "histc_bins.h"
#include "smem.h"

namespace smem {

// A range bound as the input dtype sees it (torch casts min/max to the input's type first).
inline double histc_cast_bound(double v, at::ScalarType t) {
  switch (t) {
    case at::kHalf: return static_cast<float>(c10::Half(static_cast<float>(v)));
    case at::kBFloat16: return static_cast<float>(c10::BFloat16(static_cast<float>(v)));
    case at::kFloat: return static_cast<float>(v);
    default: return v;
  }
}

// Whether both bounds fit the input dtype they are cast to (torch raises where they don't: past
// its range a bound would become +-inf, and the histogram count nothing or everything).
inline bool histc_range_fits(double lo, double hi, at::ScalarType t) {
  double most;
  switch (t) {
    case at::kHalf: most = std::numeric_limits<c10::Half>::max(); break;
    case at::kBFloat16: most = std::numeric_limits<c10::BFloat16>::max(); break;
    case at::kFloat: most = std::numeric_limits<float>::max(); break;
    default: return true;  // float64 and integers keep the bound as a double
  }
  return std::abs(lo) <= most && std::abs(hi) <= most;
}

// histc's checks and plan; `op` prefixes the messages (batched_histc passes its own name).
inline HistcPlan plan_histc(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                            const at::Scalar& max, std::optional<at::ScalarType> dtype,
                            const char* op = "smem.histc: ") {
  TORCH_CHECK_TYPE(histc_input_supported(self.scalar_type()), op, "input dtype ",
                   dtype_name(self.scalar_type()),
                   " is not supported (expected a floating point or "
                   "integer dtype other than bool)");
  TORCH_CHECK_VALUE(bins > 0, op, "bins must be > 0, but got ", bins);
  TORCH_CHECK_TYPE(!min.isComplex() && !max.isComplex(), op,
                   "min and max must be real numbers, but got a complex bound");
  const double lo = min.toDouble(), hi = max.toDouble();
  // Integer bounds past 2^53 can round to one double, which would silently mean auto-range.
  // A Python int from 2^63 arrives unsigned, past any signed one.
  if (min.isIntegral(false) && max.isIntegral(false) && lo == hi) {
    const bool u = min.isUnsigned();
    const bool same = u == max.isUnsigned() &&
                      (u ? min.toUInt64() == max.toUInt64() : min.toLong() == max.toLong());
    const auto text = [](const at::Scalar& v) {
      return v.isUnsigned() ? c10::str(v.toUInt64()) : c10::str(v.toLong());
    };
    // the message's strings are built only when the check fails (auto-range passes here)
    TORCH_CHECK_VALUE(same, op, "min=", text(min), " and max=", text(max),
                      " round to the same float64 bound; give bounds that differ there");
  }
  TORCH_CHECK_VALUE(std::isfinite(lo) && std::isfinite(hi), op, "range of [", lo, ", ", hi,
                    "] is not finite");
  TORCH_CHECK_VALUE(lo <= hi, op, "max must be larger than min, but got min=", lo, " and max=", hi);
  TORCH_CHECK_VALUE(histc_range_fits(lo, hi, self.scalar_type()), op, "range of [", lo, ", ", hi,
                    "] overflows the input dtype ", dtype_name(self.scalar_type()));
  HistcPlan plan;
  plan.bins = bins;
  plan.lo = histc_cast_bound(lo, self.scalar_type());
  plan.hi = histc_cast_bound(hi, self.scalar_type());
  plan.auto_range = plan.lo == plan.hi;
  if (dtype) {
    TORCH_CHECK_TYPE(histc_input_supported(*dtype), op, "dtype= ", dtype_name(*dtype),
                     " is not supported (expected a floating point or integer dtype)");
    plan.out_dtype = *dtype;
  } else {
    plan.out_dtype = at::isFloatingType(self.scalar_type()) ? self.scalar_type() : at::kLong;
  }
  return plan;
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
