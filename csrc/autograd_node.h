// The backward Node of an smem op, built the way torch builds the nodes of its own ops: a plain
// autograd Node with typed saved fields, not a torch::autograd::Function. Function::apply costs a
// graph-building call about 1 us of host time more than torch's ops pay (a context with a hash map
// of saved data, the inputs' and outputs' VariableInfo, the output wrapping for views and dirty
// tensors); a plain Node costs what torch's generated nodes do.
//
// An op's node derives from OpNode<Derived, kInputs> (kInputs: its tensor inputs) and gives:
//   static constexpr const char* kName          its name (grad_fn's name, compiled autograd's op)
//   auto fields()                               std::tie of its saved fields, in a fixed order
//   static variable_list backward(grads, needs, field values...)
//                                               the formula; SavedVariable fields arrive unpacked
// OpNode adds what compiled autograd asks of a node (compiled_args, apply_with_saved): the fields
// go to Python as IValues and the formula is bound once as a traceable function, as torch's
// generated nodes do, so torch.compile's compiled autograd traces smem's backward like torch's.
#pragma once

#include <ATen/core/Tensor.h>
#include <torch/csrc/autograd/function.h>
#include <torch/csrc/autograd/functions/utils.h>
#include <torch/csrc/autograd/saved_variable.h>
#include <torch/csrc/dynamo/compiled_autograd.h>

#include <array>
#include <memory>
#include <mutex>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>

namespace smem {

using torch::autograd::SavedVariable;
using torch::autograd::variable_list;

// A new node of type N, held as this torch holds its nodes: std::shared_ptr before torch 2.13,
// c10::intrusive_ptr since (the type of Tensor::grad_fn() says which).
template <typename N>
auto make_node() {
  using NodePtr = std::decay_t<decltype(std::declval<const at::Tensor&>().grad_fn())>;
  if constexpr (std::is_same_v<NodePtr, std::shared_ptr<torch::autograd::Node>>)
    return std::shared_ptr<N>(new N());
  else return c10::make_intrusive<N>();
}

// What backward receives for a saved field: the tensor of a SavedVariable, anything else as is.
template <typename Field>
using unpacked_t = std::conditional_t<std::is_same_v<Field, SavedVariable>, at::Tensor, Field>;

template <typename Derived, size_t kInputs>
struct OpNode : torch::autograd::Node {
  using Needs = std::array<bool, kInputs>;

  std::string name() const override { return Derived::kName; }

  variable_list apply(variable_list&& grads) override {
    const std::lock_guard<std::mutex> lock(mutex_);
    return std::apply(
        [&](auto&... f) { return run_backward(std::move(grads), needs(), unpack(f)...); },
        self().fields());
  }

  void release_variables() override {
    const std::lock_guard<std::mutex> lock(mutex_);
    std::apply([](auto&... f) { (release(f), ...); }, self().fields());
  }

  void compiled_args(torch::dynamo::autograd::CompiledNodeArgs& args) const override {
    args.collect(std::string(Derived::kName));
    // fields() ties the members for reading and for saved.before/after's swaps alike
    std::apply([&](const auto&... f) { (collect(args, f), ...); },
               const_cast<OpNode*>(this)->self().fields());
  }

  variable_list apply_with_saved(const variable_list& grads,
                                 torch::dynamo::autograd::SwapSavedVariables& saved) override {
    using torch::dynamo::autograd::IValuePacker;
    auto fields = self().fields();
    std::apply([&](auto&... f) { (saved.before(f), ...); }, fields);
    const auto& python = torch::dynamo::autograd::getPyCompilerInterface();
    static const bool bound = [&] {
      std::vector<at::TypePtr> schema{IValuePacker<Needs>::packed_type()};
      std::apply(
          [&](auto&... f) {
            (schema.push_back(IValuePacker<unpacked_t<std::decay_t<decltype(f)>>>::packed_type()),
             ...);
          },
          fields);
      python->bind_function(saved.get_py_compiler(), Derived::kName, &apply_packed, schema);
      return true;
    }();
    (void)bound;
    torch::dynamo::autograd::PackedArgs packed;
    packed.pack(needs());
    std::apply([&](auto&... f) { (packed.pack(unpack(f)), ...); }, fields);
    const auto grad_metadata =
        IValuePacker<std::vector<std::optional<torch::autograd::InputMetadata>>>::pack(
            torch::dynamo::autograd::get_input_metadata(next_edges()));
    variable_list result =
        python->call_function(saved.get_py_compiler(), "apply_functional", Derived::kName, grads,
                              packed.vec(), grad_metadata);
    std::apply([&](auto&... f) { (saved.after(f), ...); }, fields);
    return result;
  }

 private:
  Derived& self() { return static_cast<Derived&>(*this); }

  // Which inputs the engine wants a gradient for, in the order of the node's next edges.
  Needs needs() const {
    Needs out{};
    for (size_t i = 0; i < kInputs; ++i) out[i] = task_should_compute_output(i);
    return out;
  }

  static at::Tensor unpack(const SavedVariable& v) { return v.unpack(); }
  template <typename Field>
  static const Field& unpack(const Field& f) {
    return f;
  }

  static void release(SavedVariable& v) { v.reset_data(); }
  template <typename Field>
  static void release(Field&) {}

  static void collect(torch::dynamo::autograd::CompiledNodeArgs& args, const SavedVariable& v) {
    args.collect(v, /*is_output=*/false);
  }
  template <typename Field>
  static void collect(torch::dynamo::autograd::CompiledNodeArgs& args, const Field& f) {
    args.collect(f);
  }

  // The formula, eager or compiled. No gradient reached the output: none for the inputs either,
  // as torch's nodes answer.
  template <typename... Values>
  static variable_list run_backward(variable_list grads, const Needs& needs,
                                    const Values&... values) {
    if (!grads[0].defined()) return variable_list(kInputs);
    return Derived::backward(std::move(grads), needs, values...);
  }

  // The formula as compiled autograd calls it: the needs and the fields, packed as IValues.
  static variable_list apply_packed(const variable_list& grads,
                                    const std::vector<c10::IValue>& args) {
    torch::dynamo::autograd::PackedArgs packed(args);
    const auto needs = packed.unpack<Needs>();
    return unpack_and_call(grads, needs, packed,
                           static_cast<decltype(std::declval<Derived&>().fields())*>(nullptr));
  }
  template <typename... Fields>
  static variable_list unpack_and_call(const variable_list& grads, const Needs& needs,
                                       torch::dynamo::autograd::PackedArgs& packed,
                                       std::tuple<Fields&...>*) {
    // a braced list unpacks in order, as the fields were packed
    std::tuple<unpacked_t<Fields>...> values{packed.unpack<unpacked_t<Fields>>()...};
    return std::apply([&](auto&... v) { return run_backward(variable_list(grads), needs, v...); },
                      values);
  }
};

}  // namespace smem
