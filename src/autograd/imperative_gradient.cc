// ImperativeGradientContext: see imperative_gradient.h.
#include "autograd/imperative_gradient.h"

namespace kiln::autograd {

namespace {

std::vector<std::optional<ops::TensorInfo>> input_infos(const TapeNode& node) {
  std::vector<std::optional<ops::TensorInfo>> infos;
  for (const NDArray& in : node.inputs)
    infos.push_back(in.defined() ? std::optional<ops::TensorInfo>(ops::TensorInfo{in.dtype(), in.shape()})
                                 : std::nullopt);
  return infos;
}

std::vector<ops::TensorInfo> output_infos(const TapeNode& node) {
  std::vector<ops::TensorInfo> infos;
  for (const NDArray& out : node.outputs) infos.push_back(ops::TensorInfo{out.dtype(), out.shape()});
  return infos;
}

std::vector<bool> wanted_inputs(const TapeNode& node) {
  std::vector<bool> wanted;
  for (const auto& entry : node.input_entries) wanted.push_back(entry != nullptr);
  return wanted;
}

}  // namespace

ImperativeGradientContext::ImperativeGradientContext(const std::shared_ptr<TapeNode>& node,
                                                     const std::vector<NDArray>& output_grads,
                                                     bool create_graph)
    : GradientContext(*node->schema, node->attrs, input_infos(*node), output_infos(*node),
                      wanted_inputs(*node)),
      node_(node),
      output_grads_(output_grads),
      create_graph_(create_graph) {}

ops::GradValue ImperativeGradientContext::add(const NDArray& array) {
  if (!array.defined()) return {};
  values_.push_back(array);
  return ops::GradValue{static_cast<int>(values_.size()) - 1};
}

ops::GradValue ImperativeGradientContext::input(int i) {
  if (i < 0 || i >= num_inputs()) return {};
  NDArray value = node_->inputs[static_cast<size_t>(i)];
  if (create_graph_) value.set_autograd_entry(node_->input_entries[static_cast<size_t>(i)]);
  return add(value);
}

ops::GradValue ImperativeGradientContext::output(int i) {
  if (i < 0 || i >= num_outputs()) return {};
  NDArray value = node_->outputs[static_cast<size_t>(i)];
  if (create_graph_ && is_floating(value.dtype()))
    value.set_autograd_entry(std::make_shared<detail::AutogradEntry>(detail::AutogradEntry{node_, i}));
  return add(value);
}

ops::GradValue ImperativeGradientContext::output_grad(int i) {
  return i >= 0 && i < num_outputs() ? add(output_grads_[static_cast<size_t>(i)]) : ops::GradValue{};
}

std::vector<ops::GradValue> ImperativeGradientContext::op(const std::string& name,
                                                          const std::vector<ops::GradValue>& inputs,
                                                          const AttrMap& attrs, int num_outputs) {
  std::vector<NDArray> arrays;
  for (ops::GradValue v : inputs) arrays.push_back(v.defined() ? value(v) : NDArray());
  std::vector<ops::GradValue> results;
  for (const NDArray& out : nd::invoke(name, arrays, attrs, num_outputs)) results.push_back(add(out));
  return results;
}

ops::GradValue ImperativeGradientContext::constant(Tensor value) {
  return add(NDArray(std::move(value)));
}

const NDArray& ImperativeGradientContext::value(ops::GradValue v) const {
  KILN_CHECK(v.defined() && v.id < static_cast<int>(values_.size()), ErrorCode::kInternal, schema().name(),
             " gradient: unknown value ", v.id);
  return values_[static_cast<size_t>(v.id)];
}

}  // namespace kiln::autograd
