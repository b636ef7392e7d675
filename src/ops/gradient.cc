// The parts of GradientContext shared by every implementation: the forward call's description
// and the helpers rules are written with.
#include "gradient.h"

namespace kiln::ops {

GradientContext::GradientContext(const OpSchema& schema, const Attrs& attrs,
                                 std::vector<std::optional<TensorInfo>> inputs,
                                 std::vector<TensorInfo> outputs, std::vector<bool> wanted)
    : schema_(schema),
      attrs_(attrs),
      input_infos_(std::move(inputs)),
      output_infos_(std::move(outputs)),
      wanted_(std::move(wanted)),
      input_grads_(input_infos_.size()) {
  wanted_.resize(input_infos_.size(), false);
}

bool GradientContext::has_input(int i) const {
  return i >= 0 && i < num_inputs() && input_infos_[static_cast<size_t>(i)].has_value();
}

const TensorInfo& GradientContext::input_info(int i) const {
  KILN_CHECK(has_input(i), ErrorCode::kInternal, schema_.name(), " gradient: input ", i, " (",
             schema_.input_name(i), ") is missing");
  return *input_infos_[static_cast<size_t>(i)];
}

const TensorInfo& GradientContext::output_info(int i) const {
  KILN_CHECK(i >= 0 && i < num_outputs(), ErrorCode::kInternal, schema_.name(), " gradient: output ", i,
             " was not computed (", num_outputs(), " outputs)");
  return output_infos_[static_cast<size_t>(i)];
}

bool GradientContext::needs_input_grad(int i) const {
  return has_input(i) && wanted_[static_cast<size_t>(i)];
}

void GradientContext::set_input_grad(int i, GradValue grad) {
  KILN_CHECK(i >= 0 && i < num_inputs(), ErrorCode::kInternal, schema_.name(),
             " gradient: set_input_grad for input ", i, " of ", num_inputs());
  if (!grad.defined() || !needs_input_grad(i)) return;
  GradValue& slot = input_grads_[static_cast<size_t>(i)];
  slot = slot.defined() ? op1("Add", {slot, grad}) : grad;
}

GradValue GradientContext::op1(const std::string& name, const std::vector<GradValue>& inputs,
                               const AttrMap& attrs) {
  return op(name, inputs, attrs, 1).at(0);
}

GradValue GradientContext::scalar(double value, DType dtype) {
  return constant(Tensor::scalar(value, dtype));
}

GradValue GradientContext::ints(const std::vector<int64_t>& values) {
  return constant(Tensor::from_vector(values, Shape{static_cast<int64_t>(values.size())}));
}

GradValue GradientContext::shape_of_input(int i) {
  const Shape& shape = input_info(i).shape;
  if (shape.is_known()) return ints(shape.dims());
  return op1("Shape", {input(i)});
}

GradValue GradientContext::sum_to_input(int i, GradValue g) {
  const Shape& in = input_info(i).shape;
  if (in.is_known() && in == output_info(0).shape) return g;
  return op1("ReduceSumLike", {g, input(i)});
}

GradValue GradientContext::output_grad_or_zeros(int i) {
  const GradValue g = output_grad(i);
  if (g.defined()) return g;
  const TensorInfo& info = output_info(i);
  const GradValue shape = info.shape.is_known() ? ints(info.shape.dims()) : op1("Shape", {output(i)});
  return op1("ConstantOfShape", {shape}, {{"value", Tensor::full(Shape{1}, 0, info.dtype)}});
}

GradValue GradientContext::zeros_like_input(int i) {
  return op1("ConstantOfShape", {shape_of_input(i)},
             {{"value", Tensor::full(Shape{1}, 0, input_info(i).dtype)}});
}

}  // namespace kiln::ops
