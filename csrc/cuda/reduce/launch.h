// The CUDA reductions' launchers, free of torch's tensor headers (cuda/launch.h says why);
// their torch side is reduce_ops.cpp.
#pragma once

#include <c10/core/ScalarType.h>
#include <cuda_runtime_api.h>

#include <cstdint>

#include "reduce_element.h"

namespace smem::cuda {

// reduce.cu: out[o, i] = the sum over r of map(a[o, r, i], b[o, r, i]), for `a` (and `b`, the
// same pointer but for dot) a contiguous [outer, reduced, inner] array of `dtype` elements, and
// `out` of `out_dtype` (the input's, or int64 for integers promoted by the default dtype rule).
// A dot (ReduceMap::kProduct) is one row: outer == inner == 1.
// On the current device and its current stream, which also orders the scratch a split
// reduction takes (its partials and zeroed counters: cuda/launch.h).
void launch_reduce(ReduceMap map, c10::ScalarType dtype, c10::ScalarType out_dtype, const void* a,
                   const void* b, void* out, int64_t outer, int64_t reduced, int64_t inner);

// ladder/sum_variants.cu: the float32 sum of `n` elements of `src` into *result (zero on entry)
// by one of the ladder's variants below "final" (an index into reduce_variants()), on the
// current stream, as launch_reduce.
void launch_sum_variant(int variant, const float* src, int64_t n, float* result);

}  // namespace smem::cuda
