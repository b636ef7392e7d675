// The imperative GradientContext: runs an op's gradient rule on NDArrays. A GradValue is an
// index into the arrays this context has seen (the saved forward values, the output gradients
// and every result of op()); op() is nd::invoke, so gradients run on the engine like any op.
#pragma once

#include <vector>

#include "autograd/tape.h"
#include "ops/gradient.h"

namespace kiln::autograd {

class ImperativeGradientContext final : public ops::GradientContext {
 public:
  // `output_grads` has one entry per output of `node`, undefined where no gradient flows. With
  // `create_graph`, the rule's saved inputs and outputs carry their autograd entries, so that the
  // ops the rule runs (recorded, as autograd is recording then) link back to the forward graph.
  ImperativeGradientContext(const std::shared_ptr<TapeNode>& node, const std::vector<NDArray>& output_grads,
                            bool create_graph);

  ops::GradValue input(int i) override;
  ops::GradValue output(int i) override;
  ops::GradValue output_grad(int i) override;
  std::vector<ops::GradValue> op(const std::string& name, const std::vector<ops::GradValue>& inputs,
                                 const AttrMap& attrs, int num_outputs) override;
  ops::GradValue constant(Tensor value) override;

  const NDArray& value(ops::GradValue v) const;

 private:
  ops::GradValue add(const NDArray& array);

  const std::shared_ptr<TapeNode>& node_;
  const std::vector<NDArray>& output_grads_;
  bool create_graph_;
  std::vector<NDArray> values_;
};

}  // namespace kiln::autograd
