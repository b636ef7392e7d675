// backward() and grad(): walk the recorded graph from the heads in reverse topological order, run
// each op's gradient rule on the gradients of its outputs and sum the gradients reaching each
// value; backward() writes the variables' gradient buffers, grad() returns their gradients.
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "autograd/imperative_gradient.h"
#include "autograd/tape.h"
#include "kiln/autograd.hpp"

namespace kiln::autograd {

namespace {

std::string describe_head(size_t i, const NDArray& a) {
  return "head " + std::to_string(i) + " (an NDArray of shape " + a.shape().to_string() + " " +
         dtype_name(a.dtype()) + ")";
}

// The nodes reachable from `roots` through inputs that need gradients, each after all of its
// consumers (reverse topological order). Owning pointers: freeing the saved values drops the
// entries that keep upstream nodes alive.
// Nodes in `stops` are reached but not walked through.
std::vector<std::shared_ptr<TapeNode>> nodes_from_heads(const std::vector<std::shared_ptr<TapeNode>>& roots,
                                                        const std::unordered_set<const TapeNode*>& stops) {
  std::vector<std::shared_ptr<TapeNode>> post_order;
  std::unordered_set<TapeNode*> seen;
  // Iterative depth-first search: (node, next input to visit).
  std::vector<std::pair<std::shared_ptr<TapeNode>, size_t>> stack;
  for (const auto& root : roots) {
    if (!seen.insert(root.get()).second) continue;
    stack.emplace_back(root, 0);
    while (!stack.empty()) {
      auto& [node, next] = stack.back();
      if (next < node->input_entries.size() && !stops.contains(node.get())) {
        const auto& entry = node->input_entries[next++];
        if (entry != nullptr && entry->node->requires_grad && seen.insert(entry->node.get()).second)
          stack.emplace_back(entry->node, 0);
        continue;
      }
      post_order.push_back(node);
      stack.pop_back();
    }
  }
  return {post_order.rbegin(), post_order.rend()};
}

void check_not_freed(const TapeNode& node) {
  KILN_CHECK(!node.freed, ErrorCode::kInvalidArgument, "autograd::backward: the recorded ", node.label(),
             " call was freed by an earlier backward(); pass retain_graph=true to the first backward() to "
             "run backward over the same graph again");
}

class GradientSums {
 public:
  void add(TapeNode* node, int output, const NDArray& grad) {
    check_not_freed(*node);
    auto& slots = sums_[node];
    if (slots.empty()) slots.resize(node->is_variable() ? 1 : node->outputs.size());
    NDArray& slot = slots.at(static_cast<size_t>(output));
    slot = slot.defined() ? nd::add(slot, grad) : grad;
  }
  // One entry per output of `node`, undefined where nothing flows; empty when nothing does.
  const std::vector<NDArray>& of(TapeNode* node) const {
    static const std::vector<NDArray> kNone;
    auto it = sums_.find(node);
    return it == sums_.end() ? kNone : it->second;
  }

 private:
  std::unordered_map<TapeNode*, std::vector<NDArray>> sums_;
};

void check_gradient(const TapeNode& node, size_t i, const NDArray& grad) {
  const NDArray& in = node.inputs[i];
  KILN_CHECK(grad.shape() == in.shape() && grad.dtype() == in.dtype(), ErrorCode::kInternal,
             "autograd::backward: the gradient of ", node.label(), " gave input ", i, " a gradient of shape ",
             grad.shape(), " ", dtype_name(grad.dtype()), ", expected the input's shape ", in.shape(), " ",
             dtype_name(in.dtype()));
}

void add_input_grad(const TapeNode& node, size_t i, const NDArray& g, GradientSums& sums) {
  const auto& entry = node.input_entries[i];
  if (entry == nullptr || !g.defined()) return;  // an input the rule leaves at zero
  check_gradient(node, i, g);
  sums.add(entry->node.get(), entry->output, g);
}

void run_function(TapeNode& node, const std::vector<NDArray>& output_grads, GradientSums& sums) {
  std::vector<bool> wanted;
  for (const auto& entry : node.input_entries) wanted.push_back(entry != nullptr);
  const std::vector<NDArray> grads = node.function->backward(output_grads, wanted);
  KILN_CHECK(grads.size() == node.inputs.size(), ErrorCode::kInternal, "autograd::backward: ", node.label(),
             " gave ", grads.size(), " gradients for ", node.inputs.size(), " inputs");
  for (size_t i = 0; i < grads.size(); ++i) add_input_grad(node, i, grads[i], sums);
}

// run_function for create_graph: the function computes its gradients with recorded op calls on
// its inputs as the tape knows them (with their entries), so they link back to the forward graph.
void run_function_recorded(TapeNode& node, const std::vector<NDArray>& output_grads, GradientSums& sums) {
  std::vector<bool> wanted;
  std::vector<NDArray> inputs;
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    const NDArray& saved = node.inputs[i];
    NDArray in = saved.defined() ? NDArray(saved.chunk(), saved.view()) : NDArray();
    if (node.input_entries[i] != nullptr) in.set_autograd_entry(node.input_entries[i]);
    wanted.push_back(node.input_entries[i] != nullptr);
    inputs.push_back(std::move(in));
  }
  const std::vector<NDArray> grads = node.function->recorded_backward(inputs, output_grads, wanted);
  KILN_CHECK(grads.size() == node.inputs.size(), ErrorCode::kInternal, "autograd::grad: ", node.label(),
             " gave ", grads.size(), " gradients for ", node.inputs.size(), " inputs");
  for (size_t i = 0; i < grads.size(); ++i) add_input_grad(node, i, grads[i], sums);
}

void run_rule(const std::shared_ptr<TapeNode>& node_ptr, const std::vector<NDArray>& output_grads,
              GradientSums& sums, bool create_graph) {
  TapeNode& node = *node_ptr;
  const std::string& op = node.schema->name();
  KILN_CHECK(node.schema->has_gradient(), ErrorCode::kUnsupported, "autograd::backward: op ", op,
             " has no gradient rule, so gradients cannot flow through it (it was recorded with ",
             node.inputs.size(), " inputs; compute it outside autograd::record() if it needs no gradient)");
  ImperativeGradientContext ctx(node_ptr, output_grads, create_graph);
  try {
    node.schema->gradient_fn()(ctx);
  } catch (const Error& e) {
    throw Error(e.code(), "autograd::backward: the gradient rule of " + op + ": " + e.what());
  }
  const auto& grads = ctx.input_grads();
  for (size_t i = 0; i < node.input_entries.size(); ++i)
    if (grads[i].defined()) add_input_grad(node, i, ctx.value(grads[i]), sums);
}

void write_variable(TapeNode& node, const NDArray& g) {
  switch (node.grad_req) {
    case GradReq::kWrite:
      nd::invoke_into("Identity", {g}, {node.grad});
      break;
    case GradReq::kAdd:
      node.grad += g;
      break;
    case GradReq::kNull:
      break;
  }
}

void clear_variable(TapeNode& node) {
  const NDArray& g = node.grad;
  nd::invoke_into("Identity", {nd::zeros(g.shape(), g.dtype(), g.device())}, {g});
}

void free_saved_values(const std::vector<std::shared_ptr<TapeNode>>& nodes) {
  for (const auto& node : nodes) {
    if (node->is_variable()) continue;
    node->inputs.clear();
    node->outputs.clear();
    node->input_entries.clear();
    node->function.reset();  // and the values a function saved
    node->freed = true;
  }
}

// The gradient sums after running every recorded call between the heads and the variables
// (complete for the variables, which take no part in the run), and the nodes in that order.
struct Propagation {
  GradientSums sums;
  std::vector<std::shared_ptr<TapeNode>> order;
};

Propagation propagate(const std::vector<NDArray>& heads, const std::vector<NDArray>& head_grads,
                      bool create_graph, const std::unordered_set<const TapeNode*>& stops = {}) {
  KILN_CHECK(head_grads.empty() || head_grads.size() == heads.size(), ErrorCode::kInvalidArgument,
             "autograd::backward: ", head_grads.size(), " head gradients for ", heads.size(),
             " heads; pass none or one per head");
  Propagation p;
  std::vector<std::shared_ptr<TapeNode>> roots;
  for (size_t i = 0; i < heads.size(); ++i) {
    const NDArray& head = heads[i];
    KILN_CHECK(head.defined(), ErrorCode::kInvalidArgument, "autograd::backward: head ", i, " is undefined");
    const auto& entry = head.autograd_entry();
    KILN_CHECK(entry != nullptr && entry->node->requires_grad, ErrorCode::kInvalidArgument,
               "autograd::backward: ", describe_head(i, head),
               " was not computed while recording from an array that needs a gradient; compute it inside "
               "autograd::record() from arrays marked with attach_grad()");
    NDArray seed = i < head_grads.size() ? head_grads[i] : NDArray();
    if (seed.defined()) {
      KILN_CHECK(seed.shape() == head.shape() && seed.dtype() == head.dtype(), ErrorCode::kShapeMismatch,
                 "autograd::backward: head gradient ", i, " has shape ", seed.shape(), " ",
                 dtype_name(seed.dtype()), ", expected the shape and dtype of ", describe_head(i, head));
    } else {
      seed = nd::ones(head.shape(), head.dtype(), head.device());
    }
    p.sums.add(entry->node.get(), entry->output, seed);
    roots.push_back(entry->node);
  }
  p.order = nodes_from_heads(roots, stops);
  for (const auto& node : p.order) {
    const std::vector<NDArray>& grads = p.sums.of(node.get());
    if (grads.empty() || node->is_variable() || stops.contains(node.get())) continue;
    if (node->function != nullptr) {
      if (create_graph)
        run_function_recorded(*node, grads, p.sums);
      else
        run_function(*node, grads, p.sums);
    } else {
      run_rule(node, grads, p.sums, create_graph);
    }
  }
  return p;
}

}  // namespace

void backward(const std::vector<NDArray>& heads, const std::vector<NDArray>& head_grads, bool retain_graph) {
  auto paused = pause(is_training());  // the gradient computation itself is not recorded
  const Propagation p = propagate(heads, head_grads, false);
  for (const auto& node : p.order) {
    if (!node->is_variable()) continue;
    const std::vector<NDArray>& grads = p.sums.of(node.get());
    if (!grads.empty()) {
      write_variable(*node, grads[0]);
    } else if (node->grad_req == GradReq::kWrite) {
      clear_variable(*node);  // the heads depend on it only through zero gradients (Floor, Sign, ...)
    }
  }
  if (!retain_graph) free_saved_values(p.order);
}

std::vector<NDArray> grad(const std::vector<NDArray>& heads, const std::vector<NDArray>& variables,
                          const std::vector<NDArray>& head_grads, bool retain_graph, bool create_graph) {
  for (size_t i = 0; i < variables.size(); ++i) {
    const NDArray& v = variables[i];
    KILN_CHECK(v.defined() && v.autograd_entry() != nullptr && v.autograd_entry()->node->is_variable(),
               ErrorCode::kInvalidArgument, "autograd::grad: variable ", i,
               v.defined() ? " (an NDArray of shape " + v.shape().to_string() + ")" : std::string(),
               " is not marked; call attach_grad() on it before recording");
  }
  // With create_graph the rules' op calls are recorded like any other, linked to the forward graph.
  auto scope = Scope(create_graph, is_training());
  const Propagation p = propagate(heads, head_grads, create_graph);
  std::vector<NDArray> grads;
  for (const NDArray& v : variables) {
    const std::vector<NDArray>& sum = p.sums.of(v.autograd_entry()->node.get());
    grads.push_back(sum.empty() ? nd::zeros(v.shape(), v.dtype(), v.device()) : sum[0]);
  }
  if (!retain_graph) free_saved_values(p.order);
  return grads;
}

std::vector<NDArray> recorded_gradients(const std::vector<NDArray>& heads,
                                        const std::vector<NDArray>& head_grads,
                                        const std::vector<NDArray>& targets) {
  std::unordered_set<const TapeNode*> stops;
  for (const NDArray& t : targets)
    if (t.defined() && t.autograd_entry() != nullptr) stops.insert(t.autograd_entry()->node.get());
  std::vector<NDArray> result(targets.size());
  if (heads.empty()) return result;
  auto scope = Scope(true, is_training());
  const Propagation p = propagate(heads, head_grads, true, stops);
  for (size_t i = 0; i < targets.size(); ++i) {
    if (!targets[i].defined() || targets[i].autograd_entry() == nullptr) continue;
    const std::vector<NDArray>& sum = p.sums.of(targets[i].autograd_entry()->node.get());
    if (!sum.empty()) result[i] = sum[0];
  }
  return result;
}

}  // namespace kiln::autograd
