// Autograd of the smem ops, as C++ kernels at the Autograd dispatch key.
//
// Every call of an op passes through its Autograd kernel, with or without grad. A Python one
// (torch.library.register_autograd) cost 5-7 us per call even when nothing required grad: on the
// 2-core dev machine a CPU sum of 1M fp32 took 35 us through it and 28 us past it. Here a call
// that needs no graph goes straight to the backend kernels; one that does builds a
// torch::autograd::Function node. The backward formulas are plain ATen ops (and smem.transpose),
// so torch.compile traces them into its backward graph.
#include <ATen/ATen.h>
#include <torch/autograd.h>
#include <torch/library.h>

#include <type_traits>

#include "op_handles.h"
#include "reduce.h"

namespace smem {
namespace {

using torch::autograd::AutogradContext;
using torch::autograd::variable_list;

// The op's backend kernel, called past the Autograd kernels.
template <typename Sig, typename... Args>
at::Tensor call_below(const c10::TypedOperatorHandle<Sig>& op, const Args&... args) {
  const at::AutoDispatchBelowADInplaceOrView below;
  return op.call(args...);
}

template <typename T>
bool requires_grad(const T& arg) {
  if constexpr (std::is_same_v<T, at::Tensor>) return arg.requires_grad();
  else return false;
}

// What each Autograd kernel does: a Node (a torch::autograd::Function) when grad mode is on and
// a tensor argument requires grad; otherwise straight to the backend, with no graph.
template <typename Node, typename Sig, typename... Args>
at::Tensor graph_or_below(const c10::TypedOperatorHandle<Sig>& op, const Args&... args) {
  if (at::GradMode::is_enabled() && (requires_grad(args) || ...)) return Node::apply(args...);
  return call_below(op, args...);
}

// The dims a sum reduces, in order (none of a 0-dim input), read off the plan's mask. Only
// after the op has run, which has already rejected bad dims.
std::vector<int64_t> reduced_dims(int64_t ndim, at::OptionalIntArrayRef dim, const char* op) {
  const std::vector<bool> mask = reduced_dim_mask(ndim, dim, op);
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < ndim; ++d)
    if (mask[d]) dims.push_back(d);
  return dims;
}

// sum and sum_of_squares. The gradient of a reduction is grad broadcast back over the reduced
// dims (times 2 conj(x) for the squares: torch's convention for complex input), cast back to
// the input dtype where dtype= changed it.
template <bool kSquares>
struct SumLike : torch::autograd::Function<SumLike<kSquares>> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& self,
                            at::OptionalIntArrayRef dim, bool keepdim,
                            std::optional<at::ScalarType> dtype) {
    at::Tensor out =
        call_below(sum_op(kSquares), self, dim, keepdim, dtype);  // first: it checks dim
    // Only what backward needs, since every entry costs the forward call a hash insert: the
    // dims to unsqueeze (none where every dim is reduced: a 0-dim grad expands as it is, nor
    // with keepdim), and the input dtype where dtype= may have changed the result's.
    ctx->saved_data["shape"] = c10::IValue(self.sym_sizes());
    if (dim.has_value() && !keepdim)
      ctx->saved_data["dims"] = reduced_dims(self.dim(), dim, kSquares ? "sum_of_squares" : "sum");
    if (dtype.has_value()) ctx->saved_data["dtype"] = self.scalar_type();
    if constexpr (kSquares) ctx->save_for_backward({self});
    return out;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    at::Tensor g = grads[0];
    const auto& saved = ctx->saved_data;
    if (const auto dims = saved.find("dims"); dims != saved.end())
      for (int64_t d : dims->second.toIntVector()) g = g.unsqueeze(d);
    g = g.expand_symint(saved.at("shape").toSymIntVector());
    if constexpr (kSquares) {
      const at::Tensor x = ctx->get_saved_variables()[0];
      g = g * (2 * x.to(g.scalar_type())).conj();
    }
    if (const auto in_dtype = saved.find("dtype"); in_dtype != saved.end())
      g = g.to(in_dtype->second.toScalarType());
    return {g, at::Tensor(), at::Tensor(), at::Tensor()};
  }
};

template <bool kSquares>
at::Tensor sum_like_autograd(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                             std::optional<at::ScalarType> dtype) {
  return graph_or_below<SumLike<kSquares>>(sum_op(kSquares), self, dim, keepdim, dtype);
}

struct Dot : torch::autograd::Function<Dot> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& a, const at::Tensor& b) {
    ctx->save_for_backward({a, b});
    return call_below(dot_op(), a, b);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    const auto saved = ctx->get_saved_variables();
    const at::Tensor& g = grads[0];
    return {ctx->needs_input_grad(0) ? g * saved[1].conj() : at::Tensor(),
            ctx->needs_input_grad(1) ? g * saved[0].conj() : at::Tensor()};
  }
};

at::Tensor dot_autograd(const at::Tensor& a, const at::Tensor& b) {
  return graph_or_below<Dot>(dot_op(), a, b);
}

// The gradient of a transpose is the same transpose, through the dispatcher (and so through
// this kernel again: double backward works).
struct Transpose : torch::autograd::Function<Transpose> {
  static at::Tensor forward(AutogradContext* ctx, const at::Tensor& self, int64_t dim0,
                            int64_t dim1) {
    ctx->saved_data["dim0"] = dim0;
    ctx->saved_data["dim1"] = dim1;
    return call_below(transpose_op(), self, dim0, dim1);
  }
  static variable_list backward(AutogradContext* ctx, variable_list grads) {
    return {transpose_op().call(grads[0], ctx->saved_data["dim0"].toInt(),
                                ctx->saved_data["dim1"].toInt()),
            at::Tensor(), at::Tensor()};
  }
};

at::Tensor transpose_autograd(const at::Tensor& self, int64_t dim0, int64_t dim1) {
  return graph_or_below<Transpose>(transpose_op(), self, dim0, dim1);
}

// A histogram is a count: a float result joins the graph only to say so when backward reaches it.
struct Histc : torch::autograd::Function<Histc> {
  static at::Tensor forward(AutogradContext*, const at::Tensor& self, int64_t bins,
                            const at::Scalar& lo, const at::Scalar& hi,
                            std::optional<at::ScalarType> dtype) {
    return call_below(histc_op(), self, bins, lo, hi, dtype);
  }
  static variable_list backward(AutogradContext*, variable_list) {
    TORCH_CHECK(false, "smem.histc is not differentiable: its output is a count");
    return {};
  }
};

at::Tensor histc_autograd(const at::Tensor& self, int64_t bins, const at::Scalar& lo,
                          const at::Scalar& hi, std::optional<at::ScalarType> dtype) {
  return graph_or_below<Histc>(histc_op(), self, bins, lo, hi, dtype);
}

}  // namespace
}  // namespace smem

TORCH_LIBRARY_IMPL(smem, Autograd, m) {
  m.impl("sum", &smem::sum_like_autograd<false>);
  m.impl("sum_of_squares", &smem::sum_like_autograd<true>);
  m.impl("dot", &smem::dot_autograd);
  m.impl("transpose", &smem::transpose_autograd);
  m.impl("histc", &smem::histc_autograd);
}
