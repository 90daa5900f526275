// The smem ops as the dispatcher holds them: typed handles, looked up once each. The autograd
// kernels (autograd.cpp) call them below autograd; the C++ API (api.cpp) calls them from the
// top, so a C++ call goes through autograd, the device guard and the current stream exactly
// as torch.ops.smem.* does from Python.
#pragma once

#include <ATen/core/Tensor.h>
#include <ATen/core/dispatch/Dispatcher.h>
#include <c10/core/Scalar.h>
#include <c10/core/ScalarType.h>
#include <c10/util/OptionalArrayRef.h>

#include <optional>

namespace smem {

using SumSig = at::Tensor(const at::Tensor&, at::OptionalIntArrayRef, bool,
                          std::optional<at::ScalarType>);
using DotSig = at::Tensor(const at::Tensor&, const at::Tensor&);
using TransposeSig = at::Tensor(const at::Tensor&, int64_t, int64_t);
using HistcSig = at::Tensor(const at::Tensor&, int64_t, const at::Scalar&, const at::Scalar&,
                            std::optional<at::ScalarType>);
using BatchedHistcSig = at::Tensor(const at::Tensor&, int64_t, const at::Scalar&, const at::Scalar&,
                                   int64_t, std::optional<at::ScalarType>);

// An op as the dispatcher holds it, looked up once (a lookup takes the dispatcher's lock).
template <typename Sig, const char* kName>
const c10::TypedOperatorHandle<Sig>& op_handle() {
  static const auto handle = c10::Dispatcher::singleton().findSchemaOrThrow(kName, "").typed<Sig>();
  return handle;
}
inline constexpr char kSum[] = "smem::sum";
inline constexpr char kSumOfSquares[] = "smem::sum_of_squares";
inline constexpr char kDot[] = "smem::dot";
inline constexpr char kTranspose[] = "smem::transpose";
inline constexpr char kHistc[] = "smem::histc";
inline constexpr char kBatchedHistc[] = "smem::batched_histc";

inline const c10::TypedOperatorHandle<SumSig>& sum_op(bool squares) {
  return squares ? op_handle<SumSig, kSumOfSquares>() : op_handle<SumSig, kSum>();
}
inline const auto& dot_op() { return op_handle<DotSig, kDot>(); }
inline const auto& transpose_op() { return op_handle<TransposeSig, kTranspose>(); }
inline const auto& histc_op() { return op_handle<HistcSig, kHistc>(); }
inline const auto& batched_histc_op() { return op_handle<BatchedHistcSig, kBatchedHistc>(); }

}  // namespace smem
