// The histogram launchers, free of torch's tensor headers (cuda/launch.h says why); their torch
// side (checks, outputs, registration) is histogram_ops.cpp, and the histc ladder's is
// ladder/histc_variants.cpp. Each runs on the current device and its current stream.
#pragma once

#include <c10/core/ScalarType.h>

#include <cstdint>

#include "histc_bins.h"

namespace smem::cuda {

namespace histogram {
struct Request;  // histogram/shape.h
}  // namespace histogram

// Whether launch_histc writes the counts into `result` itself, in plan.out_dtype (fused: a
// per-stream workspace carries them, no memset), rather than adding them into zeroed counts.
bool histc_fuses(int64_t bins, int64_t n);

// histc.cu: the counts of the n > 0 contiguous `dtype` elements at `data` in plan's bins.
// Fused (histc_fuses): written to `result` (plan.bins elements
// of plan.out_dtype), with `counts` null; otherwise added into `counts`, plan.bins int64 at
// zero, and `result` is not touched. `request` picks the variant and shape (histogram/shape.h).
void launch_histc(c10::ScalarType dtype, const void* data, int64_t n, const HistcPlan& plan,
                  const histogram::Request& request, void* result, int64_t* counts);

// batched_histc.cu: exact int64 counts [rows, plan.bins] of each row of the contiguous
// [rows, length] `dtype` input at `x` (rows, length > 0), written to `counts` whatever it held.
void launch_batched_histc(c10::ScalarType dtype, const void* x, int64_t rows, int64_t length,
                          const HistcPlan& plan, int64_t* counts);

// histogram_edges.cu: over the E >= 2 contiguous `edges` (torch.histogram's rule, edge_bins.h),
// the int64 counts of the n > 0 contiguous float32 or float64 elements at `x`, or with `weight`
// (n elements too) their float64 weighted sums, written to the E - 1 elements of `out` whatever
// they held. x and weight start on 16-byte boundaries.
void launch_histogram_count(c10::ScalarType dtype, const void* x, const void* weight, int64_t n,
                            const void* edges, int64_t E, bool uniform, void* out);

}  // namespace smem::cuda
