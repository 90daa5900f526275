// smem_ops C++ API: the smem ops from C++, with the semantics of torch.ops.smem.* in Python.
//
// Link libsmem_ops.so (CMake: find_package(smem_ops) and target_link_libraries(app PRIVATE
// smem_ops::smem_ops)). Loading the library defines the `smem` ops with the dispatcher and
// registers their CPU and CUDA kernels and autograd. Each function below calls its op through
// the dispatcher (a typed operator handle), exactly as Python does: autograd records it when an
// input requires grad, CUDA kernels run on the current stream of the input's device under a
// device guard, and the result is what torch.ops.smem.X returns for the same arguments.
//
// Errors: bad input throws a c10::Error subclass with the message Python shows (the same
// check raises both): c10::ValueError (Python ValueError), c10::TypeError (TypeError) or
// c10::IndexError (IndexError). e.msg() is the message without the C++ backtrace, e.g.
//   "smem.sum: dim 2 is out of range for a tensor of dimension 2"          (c10::IndexError)
//   "smem.sum: input dtype torch.uint16 is not supported"                  (c10::TypeError)
//   "smem.histc: bins must be > 0, but got 0"                              (c10::ValueError)
//
// Models exported with torch.export / AOTInductor that call smem ops find them in the
// dispatcher at run time, so a program that runs such a model only needs this library loaded:
// including this header is enough to keep it linked (see detail::keep_linked below).
#pragma once

#include <ATen/core/Tensor.h>
#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>
#include <c10/util/OptionalArrayRef.h>

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#if defined(_WIN32)
#define SMEM_OPS_API
#else
#define SMEM_OPS_API __attribute__((visibility("default")))
#endif

namespace smem_ops {

// Sum of x over the dims in `dim` (all dims when nullopt or empty), like at::sum / torch.sum:
// bool and integer inputs sum to int64 unless dtype says otherwise; fp16/bf16 accumulate in
// fp32. Deterministic (no floating-point atomics). Differentiable.
//   smem_ops::sum(x)                      // all elements, 0-dim result
//   smem_ops::sum(x, {0, 2}, /*keepdim=*/true)
//   smem_ops::sum(x, {1}, false, at::kDouble)
SMEM_OPS_API at::Tensor sum(const at::Tensor& x, at::OptionalIntArrayRef dim = std::nullopt,
                            bool keepdim = false,
                            std::optional<at::ScalarType> dtype = std::nullopt);

// sum(x * x) in one pass over x; each square is computed in the accumulate type (fp16/bf16
// squares don't round, integer squares don't wrap). Differentiable.
SMEM_OPS_API at::Tensor sum_of_squares(const at::Tensor& x,
                                       at::OptionalIntArrayRef dim = std::nullopt,
                                       bool keepdim = false,
                                       std::optional<at::ScalarType> dtype = std::nullopt);

// Dot product of two 1-D tensors of the same length, dtype and device, like at::dot.
// Differentiable.
SMEM_OPS_API at::Tensor dot(const at::Tensor& x, const at::Tensor& other);

// x.transpose(dim0, dim1).contiguous(), always as a new contiguous tensor (never a view, never
// x itself). Every dtype torch can copy but the quantized ones. Differentiable.
SMEM_OPS_API at::Tensor transpose(const at::Tensor& x, int64_t dim0 = -2, int64_t dim1 = -1);

// Histogram of x in `bins` equal bins over [min, max], like at::histc. With min == max the range
// is the finite min and max of x (found on the device, no host sync). fp16/bf16/integer inputs
// too (integers count into int64); dtype = at::kLong returns exact integer counts.
// Not differentiable.
SMEM_OPS_API at::Tensor histc(const at::Tensor& x, int64_t bins = 100, const at::Scalar& min = 0,
                              const at::Scalar& max = 0,
                              std::optional<at::ScalarType> dtype = std::nullopt);

// One histc per slice of x along `dim`, in one op: shape x.shape without dim, then (bins,).
// Same rules as histc; with min == max each slice gets its own range (its finite min and max).
//   smem_ops::batched_histc(img.flatten(2), 256, 0, 255, /*dim=*/-1, at::kLong)  // (N, C, 256)
// Not differentiable.
SMEM_OPS_API at::Tensor batched_histc(const at::Tensor& x, int64_t bins = 100,
                                      const at::Scalar& min = 0, const at::Scalar& max = 0,
                                      int64_t dim = -1,
                                      std::optional<at::ScalarType> dtype = std::nullopt);

// Build introspection, as smem_ops.cuda_compiled() etc. in Python.
SMEM_OPS_API bool cuda_compiled();                        // were the CUDA kernels built?
SMEM_OPS_API std::vector<int64_t> compiled_archs();       // SM archs of the CUDA kernels (e.g. 90)
SMEM_OPS_API bool cluster_supported(int64_t device = 0);  // can cluster (DSMEM) kernels run?
// Names of a family's technique-ladder variants ("reduce", "transpose", "histogram").
SMEM_OPS_API std::vector<std::string> variants(const std::string& family);

namespace detail {
// The ops are registered when libsmem_ops.so is loaded. A program that runs an exported model
// may call no smem_ops function at all, and a linker that drops shared libraries nothing
// references (--as-needed, the default of several distributions) would then drop the library:
// the model would fail with "Could not find schema for smem::...". This weak pointer, defined
// in every translation unit that includes the header, references the library so it stays.
#if !defined(_WIN32)
__attribute__((weak, used)) bool (*keep_linked)() = &smem_ops::cuda_compiled;
#endif
}  // namespace detail

}  // namespace smem_ops
