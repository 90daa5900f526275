// The CUDA implementations of the public ops that another translation unit calls: the best
// variant of each technique ladder (ladder/) is the op itself.
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>

#include <cstdint>
#include <optional>

#include "cuda/transpose/launch.h"

namespace smem::cuda {

namespace histogram {
struct Request;  // histogram/shape.h
}  // namespace histogram

// reduce/reduce_ops.cpp
at::Tensor sum_cuda(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                    std::optional<at::ScalarType> dtype);

// transpose/transpose_ops.cpp
at::Tensor transpose_cuda(const at::Tensor& self, int64_t dim0, int64_t dim1,
                          TransposeKernels allow = {});

// histogram/histogram_ops.cpp: smem.histc, in the variant and shape `request` asks for.
at::Tensor histc_with(const at::Tensor& self, int64_t bins, const at::Scalar& min,
                      const at::Scalar& max, std::optional<at::ScalarType> dtype,
                      const histogram::Request& request);

}  // namespace smem::cuda
