// Autograd of the smem ops, as C++ kernels at the Autograd dispatch key.
//
// Every call of an op passes through its Autograd kernel, with or without grad. A Python one
// (torch.library.register_autograd) cost 5-7 us per call even when nothing required grad: on the
// 2-core dev machine a CPU sum of 1M fp32 took 35 us through it and 28 us past it. Here a call
// that needs no graph goes straight to the backend kernels; one that does builds a plain Node
// (autograd_node.h), as torch's own ops do. The backward formulas are plain ATen ops (and
// smem.transpose), so torch.compile traces them into its backward graph.
#include <ATen/ATen.h>
#include <torch/csrc/autograd/variable.h>
#include <torch/library.h>

#include "autograd_node.h"
#include "op_handles.h"
#include "reduce.h"

namespace smem {
namespace {

// The op's backend kernel, called past the Autograd kernels.
template <typename Sig, typename... Args>
at::Tensor call_below(const c10::TypedOperatorHandle<Sig>& op, const Args&... args) {
  const at::AutoDispatchBelowADInplaceOrView below;
  return op.call(args...);
}

// torch's rule for building a graph: grad mode on and an input that requires grad.
template <typename... Tensors>
bool builds_graph(const Tensors&... inputs) {
  return at::GradMode::is_enabled() && (inputs.requires_grad() || ...);
}

// Forward-mode AD (dual tensors, torch.func.jvp) has no formulas here: refused, as torch refuses
// it for its own ops that lack one, rather than a tangent silently dropped.
template <typename... Tensors>
void refuse_forward_ad(const char* op, const Tensors&... inputs) {
  TORCH_CHECK_NOT_IMPLEMENTED(!(inputs._fw_grad(/*level=*/0).defined() || ...),
                              "Trying to use forward AD with ", op, " that does not support it");
}

// Makes node the grad_fn of out, with edges to the inputs. An output of a dtype autograd does not
// differentiate (an integer count, a sum with an integer dtype=) stays out of the graph, as the
// outputs of torch's own ops do.
template <typename NodePtr, typename... Tensors>
at::Tensor attach(at::Tensor out, const NodePtr& node, const Tensors&... inputs) {
  if (!torch::autograd::isDifferentiableType(out.scalar_type())) return out;
  node->set_next_edges(torch::autograd::collect_next_edges(inputs...));
  torch::autograd::set_history(out, node);
  return out;
}

// sum and sum_of_squares. The gradient of a reduction is grad broadcast back over the reduced
// dims (times 2 conj(x) for the squares: torch's convention for complex input), cast back to
// the input dtype where dtype= changed it.
template <bool kSquares>
struct SumLikeBackward : OpNode<SumLikeBackward<kSquares>, 1> {
  static constexpr const char* kName = kSquares ? "SmemSumOfSquaresBackward" : "SmemSumBackward";
  std::vector<c10::SymInt> shape;          // the input's
  std::vector<int64_t> dims;               // to unsqueeze: the reduced dims, unless kept or all
  std::optional<at::ScalarType> in_dtype;  // where dtype= may have changed the result's
  SavedVariable self_;                     // the input, for the squares only
  auto fields() { return std::tie(shape, dims, in_dtype, self_); }

  static variable_list backward(variable_list grads, std::array<bool, 1>,
                                const std::vector<c10::SymInt>& shape,
                                const std::vector<int64_t>& dims,
                                const std::optional<at::ScalarType>& in_dtype,
                                const at::Tensor& self) {
    at::Tensor g = grads[0];
    for (int64_t d : dims) g = g.unsqueeze(d);
    g = g.expand_symint(shape);
    if constexpr (kSquares) g = g * (2 * self.to(g.scalar_type())).conj();
    if (in_dtype.has_value()) g = g.to(*in_dtype);
    return {g};
  }
};

template <bool kSquares>
at::Tensor sum_like_autograd(const at::Tensor& self, at::OptionalIntArrayRef dim, bool keepdim,
                             std::optional<at::ScalarType> dtype) {
  const auto& op = sum_op(kSquares);
  refuse_forward_ad(kSquares ? "smem.sum_of_squares" : "smem.sum", self);
  if (!builds_graph(self)) return call_below(op, self, dim, keepdim, dtype);
  at::Tensor out = call_below(op, self, dim, keepdim, dtype);  // first: it checks dim
  auto node = make_node<SumLikeBackward<kSquares>>();
  node->shape = self.sym_sizes().vec();
  if (dim.has_value() && !keepdim) {
    const std::vector<bool> mask =
        reduced_dim_mask(self.dim(), dim, kSquares ? "sum_of_squares" : "sum");
    for (int64_t d = 0; d < self.dim(); ++d)
      if (mask[d]) node->dims.push_back(d);
  }
  if (dtype.has_value()) node->in_dtype = self.scalar_type();
  if constexpr (kSquares) node->self_ = SavedVariable(self, /*is_output=*/false);
  return attach(std::move(out), node, self);
}

struct DotBackward : OpNode<DotBackward, 2> {
  static constexpr const char* kName = "SmemDotBackward";
  SavedVariable self_, other_;
  auto fields() { return std::tie(self_, other_); }

  static variable_list backward(variable_list grads, std::array<bool, 2> needs,
                                const at::Tensor& self, const at::Tensor& other) {
    const at::Tensor& g = grads[0];
    return {needs[0] ? g * other.conj() : at::Tensor(), needs[1] ? g * self.conj() : at::Tensor()};
  }
};

at::Tensor dot_autograd(const at::Tensor& a, const at::Tensor& b) {
  refuse_forward_ad("smem.dot", a, b);
  if (!builds_graph(a, b)) return call_below(dot_op(), a, b);
  at::Tensor out = call_below(dot_op(), a, b);
  auto node = make_node<DotBackward>();
  // each input is saved only where the other one's gradient needs it
  if (b.requires_grad()) node->self_ = SavedVariable(a, /*is_output=*/false);
  if (a.requires_grad()) node->other_ = SavedVariable(b, /*is_output=*/false);
  return attach(std::move(out), node, a, b);
}

// The gradient of a transpose is the same transpose, through the dispatcher (and so through
// this kernel again: double backward works).
struct TransposeBackward : OpNode<TransposeBackward, 1> {
  static constexpr const char* kName = "SmemTransposeBackward";
  int64_t dim0 = 0, dim1 = 0;
  auto fields() { return std::tie(dim0, dim1); }

  static variable_list backward(variable_list grads, std::array<bool, 1>, int64_t dim0,
                                int64_t dim1) {
    return {transpose_op().call(grads[0], dim0, dim1)};
  }
};

at::Tensor transpose_autograd(const at::Tensor& self, int64_t dim0, int64_t dim1) {
  refuse_forward_ad("smem.transpose", self);
  if (!builds_graph(self)) return call_below(transpose_op(), self, dim0, dim1);
  at::Tensor out = call_below(transpose_op(), self, dim0, dim1);
  auto node = make_node<TransposeBackward>();
  node->dim0 = dim0;
  node->dim1 = dim1;
  return attach(std::move(out), node, self);
}

// A histogram is a count: a float result joins the graph only to say so when backward reaches it.
template <const char* kOp, const char* kNodeName>
struct CountBackward : OpNode<CountBackward<kOp, kNodeName>, 1> {
  static constexpr const char* kName = kNodeName;
  auto fields() { return std::tie(); }

  static variable_list backward(variable_list, std::array<bool, 1>) {
    TORCH_CHECK(false, kOp, " is not differentiable: its output is a count");
    return {};
  }
};
inline constexpr char kHistcName[] = "smem.histc", kHistcNode[] = "SmemHistcBackward";
inline constexpr char kBatchedHistcName[] = "smem.batched_histc",
                      kBatchedHistcNode[] = "SmemBatchedHistcBackward";

at::Tensor histc_autograd(const at::Tensor& self, int64_t bins, const at::Scalar& lo,
                          const at::Scalar& hi, std::optional<at::ScalarType> dtype) {
  refuse_forward_ad(kHistcName, self);
  at::Tensor out = call_below(histc_op(), self, bins, lo, hi, dtype);
  if (!builds_graph(self)) return out;
  return attach(std::move(out), make_node<CountBackward<kHistcName, kHistcNode>>(), self);
}

at::Tensor batched_histc_autograd(const at::Tensor& self, int64_t bins, const at::Scalar& lo,
                                  const at::Scalar& hi, int64_t dim,
                                  std::optional<at::ScalarType> dtype) {
  refuse_forward_ad(kBatchedHistcName, self);
  at::Tensor out = call_below(batched_histc_op(), self, bins, lo, hi, dim, dtype);
  if (!builds_graph(self)) return out;
  return attach(std::move(out), make_node<CountBackward<kBatchedHistcName, kBatchedHistcNode>>(),
                self);
}

}  // namespace
}  // namespace smem

TORCH_LIBRARY_IMPL(smem, Autograd, m) {
  m.impl("sum", &smem::sum_like_autograd<false>);
  m.impl("sum_of_squares", &smem::sum_like_autograd<true>);
  m.impl("dot", &smem::dot_autograd);
  m.impl("transpose", &smem::transpose_autograd);
  m.impl("histc", &smem::histc_autograd);
  m.impl("batched_histc", &smem::batched_histc_autograd);
}
