// GradientContext: what an op's gradient rule (OpSchema::gradient) sees and builds with.
//
// A rule is written once, in the op's family file, as calls of registered ops on opaque value
// handles (GradValue), e.g. Mul's rule for input 0 is
//   ctx.set_input_grad(0, ctx.sum_to_input(0, ctx.op1("Mul", {ctx.output_grad(0), ctx.input(1)})));
// so it never touches data and never needs concrete shapes. Two implementations run the rules:
//
//   - the imperative tape (src/autograd): a GradValue names an NDArray, op() is nd::invoke and
//     constant() wraps the tensor in an NDArray. Shapes are all known there.
//   - a graph gradient pass (for Executor::backward): a GradValue names a Graph Value*, op()
//     appends a Node (Graph::add_node) whose outputs get fresh ids, constant() adds an
//     initializer, input(i)/output(i) return the forward node's values and output_grad(i) the
//     value accumulated for that forward output while walking the graph in reverse topological
//     order. input_info(i) is the forward value's inferred TensorInfo, which may hold unknown
//     dimensions: rules therefore take shapes from shape_of_input() (a constant when known, a
//     Shape node otherwise) and undo broadcasting with ReduceSumLike, never from input_info.
//
// The rule states which inputs get a gradient (set_input_grad) and may skip the ones for which
// needs_input_grad() is false; setting a gradient twice for one input adds the two.
#pragma once

#include <string>
#include <vector>

#include "op_schema.h"

namespace kiln::ops {

// An opaque handle of a value in the gradient computation; undefined for "no value" (a missing
// optional input, an output gradient that does not flow).
struct GradValue {
  int id = -1;
  bool defined() const { return id >= 0; }
};

class GradientContext {
 public:
  // The forward call: its op, bound attributes, and the types of its inputs and outputs
  // (std::nullopt for missing optional inputs). `wanted[i]`: input i needs a gradient.
  GradientContext(const OpSchema& schema, const Attrs& attrs, std::vector<std::optional<TensorInfo>> inputs,
                  std::vector<TensorInfo> outputs, std::vector<bool> wanted);
  virtual ~GradientContext() = default;
  GradientContext(const GradientContext&) = delete;
  GradientContext& operator=(const GradientContext&) = delete;

  const OpSchema& schema() const { return schema_; }
  const Attrs& attrs() const { return attrs_; }
  int num_inputs() const { return static_cast<int>(input_infos_.size()); }
  int num_outputs() const { return static_cast<int>(output_infos_.size()); }
  bool has_input(int i) const;
  const TensorInfo& input_info(int i) const;  // throws for a missing input
  const TensorInfo& output_info(int i) const;
  bool needs_input_grad(int i) const;

  // The forward values: undefined for a missing optional input or an output not computed.
  virtual GradValue input(int i) = 0;
  virtual GradValue output(int i) = 0;
  // The gradient flowing into output i; undefined when none does (treat it as zeros).
  virtual GradValue output_grad(int i) = 0;

  // Appends a call of a registered op; missing optional inputs are undefined GradValues.
  virtual std::vector<GradValue> op(const std::string& name, const std::vector<GradValue>& inputs,
                                    const AttrMap& attrs = {}, int num_outputs = 1) = 0;
  virtual GradValue constant(Tensor value) = 0;

  // Records the gradient of input i (adds it to one set before); the value must have the
  // input's shape and dtype.
  void set_input_grad(int i, GradValue grad);
  const std::vector<GradValue>& input_grads() const { return input_grads_; }

  // Helpers built on the calls above.
  GradValue op1(const std::string& name, const std::vector<GradValue>& inputs, const AttrMap& attrs = {});
  GradValue add(GradValue a, GradValue b) { return op1("Add", {a, b}); }
  GradValue sub(GradValue a, GradValue b) { return op1("Sub", {a, b}); }
  GradValue mul(GradValue a, GradValue b) { return op1("Mul", {a, b}); }
  GradValue div(GradValue a, GradValue b) { return op1("Div", {a, b}); }
  GradValue neg(GradValue a) { return op1("Neg", {a}); }
  GradValue scalar(double value, DType dtype);         // a 0-d constant
  GradValue ints(const std::vector<int64_t>& values);  // a 1-D int64 constant (axes, shapes)
  // Input i's shape as a 1-D int64 value: a constant when fully known, a Shape node otherwise.
  GradValue shape_of_input(int i);
  // g summed over the axes broadcasting added to input i, so it has input i's shape.
  GradValue sum_to_input(int i, GradValue g);
  // The gradient flowing into output i, or zeros of its shape when none flows.
  GradValue output_grad_or_zeros(int i);
  GradValue zeros_like_input(int i);

 private:
  const OpSchema& schema_;
  const Attrs& attrs_;
  std::vector<std::optional<TensorInfo>> input_infos_;
  std::vector<TensorInfo> output_infos_;
  std::vector<bool> wanted_;
  std::vector<GradValue> input_grads_;
};

}  // namespace kiln::ops
