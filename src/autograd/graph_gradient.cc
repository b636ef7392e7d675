// build_gradient: see graph_gradient.h. The rules run through GraphGradientContext, whose
// GradValues index the backward graph's values; a forward value a rule reads is brought into the
// backward graph once, as an input (or a copy of the initializer).
#include "autograd/graph_gradient.h"

#include <algorithm>
#include <map>
#include <set>

#include "kiln/error.hpp"
#include "ops/gradient.h"

namespace kiln::autograd {

namespace {

using graph::Graph;
using graph::Node;
using graph::Value;

// The backward graph under construction and how its inputs relate to the forward graph.
class BackwardBuilder {
 public:
  explicit BackwardBuilder(const Graph& forward) { backward_.name = forward.name + "_backward"; }

  Graph& graph() { return backward_; }

  // The backward graph's copy of a forward value: an initializer stays a constant, anything
  // else becomes a backward input (saved by the forward pass).
  Value* import(Value* forward_value) {
    if (auto it = imported_.find(forward_value); it != imported_.end()) return it->second;
    Value* v = forward_value->is_constant()
                   ? backward_.add_initializer(backward_.fresh_name("grad/" + forward_value->name),
                                               forward_value->constant)
                   : backward_.add_input(forward_value->name, forward_value->info);
    imported_[forward_value] = v;
    if (!forward_value->is_constant()) origin_[v] = forward_value;
    return v;
  }

  Value* add_head_grad(Value* head, int index) {
    Value* v = backward_.add_input("head_grad" + std::to_string(index) + ":" + head->name, head->info);
    head_inputs_[v] = index;
    return v;
  }

  // The forward value a backward input stands for (null for a head gradient).
  Value* origin(Value* backward_input) const {
    auto it = origin_.find(backward_input);
    return it == origin_.end() ? nullptr : it->second;
  }
  int head_index(Value* backward_input) const { return head_inputs_.at(backward_input); }

 private:
  Graph backward_;
  std::map<Value*, Value*> imported_;
  std::map<Value*, Value*> origin_;
  std::map<Value*, int> head_inputs_;
};

// GradientContext keeps a reference to the bound attributes; a base class initialised before it
// owns them.
struct BoundAttrs {
  Attrs bound;
};

class GraphGradientContext final : private BoundAttrs, public ops::GradientContext {
 public:
  GraphGradientContext(const Node& node, BackwardBuilder& builder, const std::vector<Value*>& output_grads,
                       std::vector<bool> wanted)
      : BoundAttrs{node.schema().bind(node.attrs)},
        GradientContext(node.schema(), BoundAttrs::bound, input_infos(node), output_infos(node),
                        std::move(wanted)),
        node_(node),
        builder_(builder),
        output_grads_(output_grads) {}

  ops::GradValue input(int i) override {
    if (i < 0 || i >= num_inputs() || node_.inputs[static_cast<size_t>(i)] == nullptr) return {};
    return add(builder_.import(node_.inputs[static_cast<size_t>(i)]));
  }
  ops::GradValue output(int i) override {
    if (i < 0 || i >= num_outputs()) return {};
    return add(builder_.import(node_.outputs[static_cast<size_t>(i)]));
  }
  ops::GradValue output_grad(int i) override {
    if (i < 0 || i >= num_outputs()) return {};
    return add(output_grads_[static_cast<size_t>(i)]);
  }
  std::vector<ops::GradValue> op(const std::string& name, const std::vector<ops::GradValue>& inputs,
                                 const AttrMap& attrs, int num_outputs) override {
    std::vector<Value*> values;
    for (ops::GradValue v : inputs) values.push_back(v.defined() ? value(v) : nullptr);
    Graph& g = builder_.graph();
    Node* n = g.add_node(name, std::move(values), attrs, g.fresh_name("grad/" + node_.name), num_outputs);
    g.infer_node(n, /*allow_unknown=*/true);
    std::vector<ops::GradValue> results;
    for (Value* out : n->outputs) results.push_back(add(out));
    return results;
  }
  ops::GradValue constant(Tensor value) override {
    Graph& g = builder_.graph();
    return add(g.add_initializer(g.fresh_name("grad/" + node_.name + "/const"), std::move(value)));
  }

  Value* value(ops::GradValue v) const {
    KILN_CHECK(v.defined() && v.id < static_cast<int>(values_.size()), ErrorCode::kInternal, node_.label(),
               " gradient: unknown value ", v.id);
    return values_[static_cast<size_t>(v.id)];
  }

 private:
  static std::vector<std::optional<ops::TensorInfo>> input_infos(const Node& node) {
    std::vector<std::optional<ops::TensorInfo>> infos;
    for (Value* in : node.inputs) infos.push_back(in != nullptr ? in->info : std::nullopt);
    return infos;
  }
  static std::vector<ops::TensorInfo> output_infos(const Node& node) {
    std::vector<ops::TensorInfo> infos;
    for (Value* out : node.outputs) {
      KILN_CHECK(out->info.has_value(), ErrorCode::kInvalidArgument, "graph gradient: ", node.label(),
                 " output '", out->name, "' has no inferred type; run shape inference first");
      infos.push_back(*out->info);
    }
    return infos;
  }

  ops::GradValue add(Value* v) {
    if (v == nullptr) return {};
    values_.push_back(v);
    return ops::GradValue{static_cast<int>(values_.size()) - 1};
  }

  const Node& node_;
  BackwardBuilder& builder_;
  const std::vector<Value*>& output_grads_;
  std::vector<Value*> values_;
};

bool is_float_value(const Value* v) {
  return v != nullptr && (!v->info || is_floating(v->info->dtype));
}

// The values whose gradient is wanted: floating-point values computed from a `wrt` input.
std::set<const Value*> values_needing_grad(const std::vector<Node*>& order, const std::vector<Value*>& wrt) {
  std::set<const Value*> needs(wrt.begin(), wrt.end());
  for (const Node* n : order) {
    const bool any =
        std::any_of(n->inputs.begin(), n->inputs.end(), [&](Value* v) { return needs.count(v); });
    if (!any) continue;
    for (Value* out : n->outputs)
      if (is_float_value(out)) needs.insert(out);
  }
  return needs;
}

Value* constant_of_shape(Graph& g, BackwardBuilder& builder, Value* like, double fill) {
  const ops::TensorInfo& info = *like->info;
  Value* shape =
      info.shape.is_known()
          ? g.add_initializer(g.fresh_name("grad/shape"),
                              Tensor::from_vector(info.shape.dims(), Shape{info.shape.ndim()}))
          : g.add_node("Shape", {builder.import(like)}, {}, g.fresh_name("grad/shape"))->outputs[0];
  return g
      .add_node("ConstantOfShape", {shape}, {{"value", Tensor::full(Shape{1}, fill, info.dtype)}},
                g.fresh_name("grad/fill"))
      ->outputs[0];
}

void accumulate(Graph& g, std::map<const Value*, Value*>& grads, const Value* forward_value, Value* grad) {
  Value*& slot = grads[forward_value];
  slot = slot == nullptr ? grad : g.add_node("Add", {slot, grad}, {}, g.fresh_name("grad/sum"))->outputs[0];
}

void check_grad_type(const Node& node, size_t i, const Value* grad) {
  const Value* in = node.inputs[i];
  if (!grad->info || !in->info || !grad->info->shape.is_known() || !in->info->shape.is_known()) return;
  KILN_CHECK(grad->info->shape == in->info->shape && grad->info->dtype == in->info->dtype,
             ErrorCode::kInternal, "graph gradient: the rule of ", node.label(), " gave input ", i, " (",
             node.schema().input_name(static_cast<int>(i)), ") a gradient of shape ", grad->info->shape, " ",
             dtype_name(grad->info->dtype), ", expected ", in->info->shape, " ", dtype_name(in->info->dtype));
}

void run_rule(const Node& node, BackwardBuilder& builder, std::map<const Value*, Value*>& grads,
              const std::set<const Value*>& needs) {
  std::vector<Value*> output_grads;
  bool any_flows = false;
  for (Value* out : node.outputs) {
    auto it = grads.find(out);
    output_grads.push_back(it == grads.end() ? nullptr : it->second);
    any_flows |= output_grads.back() != nullptr;
  }
  std::vector<bool> wanted;
  for (Value* in : node.inputs) wanted.push_back(in != nullptr && needs.count(in) && is_float_value(in));
  if (!any_flows || std::none_of(wanted.begin(), wanted.end(), [](bool w) { return w; })) return;
  KILN_CHECK(node.schema().has_gradient(), ErrorCode::kUnsupported, "graph gradient: ", node.label(),
             " has no gradient rule, so gradients cannot flow through it");
  GraphGradientContext ctx(node, builder, output_grads, wanted);
  try {
    node.schema().gradient_fn()(ctx);
  } catch (const Error& e) {
    throw Error(e.code(), "graph gradient: the rule of " + node.label() + ": " + e.what());
  }
  const auto& input_grads = ctx.input_grads();
  for (size_t i = 0; i < node.inputs.size(); ++i) {
    if (!wanted[i] || !input_grads[i].defined()) continue;
    Value* g = ctx.value(input_grads[i]);
    check_grad_type(node, i, g);
    accumulate(builder.graph(), grads, node.inputs[i], g);
  }
}

// Drops backward nodes nothing reads (a rule may read a value it ends up not using) and then
// the inputs and constants they alone read.
void remove_dead_nodes(Graph& g) {
  std::set<const Value*> outputs(g.outputs().begin(), g.outputs().end());
  std::vector<Node*> order = g.topological_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* n = *it;
    const bool used = std::any_of(n->outputs.begin(), n->outputs.end(),
                                  [&](Value* v) { return !v->users.empty() || outputs.count(v); });
    if (!used) g.remove_node(n);
  }
  g.remove_unused_values(/*inputs_too=*/true);
}

Value* find_named(const Graph& g, const std::string& name, const char* role) {
  Value* v = g.find_value(name);
  KILN_CHECK(v != nullptr, ErrorCode::kNotFound, "graph gradient: graph '", g.name, "' has no value '", name,
             "' (", role, ")");
  return v;
}

}  // namespace

GradientGraphs build_gradient(const Graph& forward_graph, const GradientRequest& request) {
  GradientGraphs result;
  result.forward = forward_graph.clone();
  Graph& forward = result.forward;
  result.num_forward_outputs = static_cast<int>(forward.outputs().size());

  std::vector<Value*> wrt;
  for (const std::string& name : request.wrt) {
    Value* v = find_named(forward, name, "a value to differentiate with respect to");
    KILN_CHECK(std::find(forward.inputs().begin(), forward.inputs().end(), v) != forward.inputs().end(),
               ErrorCode::kInvalidArgument, "graph gradient: '", name,
               "' is not a graph input; gradients are taken with respect to graph inputs");
    KILN_CHECK(v->info.has_value(), ErrorCode::kInvalidArgument, "graph gradient: input '", name,
               "' has no type; bind its shape first");
    wrt.push_back(v);
  }
  const std::vector<Node*> order = forward.topological_order();
  const std::set<const Value*> needs = values_needing_grad(order, wrt);

  BackwardBuilder builder(forward);
  Graph& backward = builder.graph();
  std::map<const Value*, Value*> grads;
  for (size_t h = 0; h < request.heads.size(); ++h) {
    Value* head = find_named(forward, request.heads[h].value, "a head");
    KILN_CHECK(head->info.has_value(), ErrorCode::kInvalidArgument, "graph gradient: head '", head->name,
               "' has no inferred type; run shape inference first");
    Value* seed = request.heads[h].seeded_by_ones ? constant_of_shape(backward, builder, head, 1.0)
                                                  : builder.add_head_grad(head, static_cast<int>(h));
    accumulate(backward, grads, head, seed);
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) run_rule(**it, builder, grads, needs);

  for (Value* v : wrt) {
    auto it = grads.find(v);
    backward.add_output(it != grads.end() ? it->second : constant_of_shape(backward, builder, v, 0.0));
  }
  remove_dead_nodes(backward);

  // Say where each remaining backward input comes from; forward node outputs become extra
  // forward outputs.
  std::map<const Value*, int> saved_outputs;
  for (Value* in : backward.inputs()) {
    Value* origin = builder.origin(in);
    if (origin == nullptr) {
      result.backward_inputs.push_back({GradientGraphs::Source::Kind::kHeadGrad, builder.head_index(in)});
    } else if (origin->producer == nullptr) {
      const auto& inputs = forward.inputs();
      const int index = static_cast<int>(std::find(inputs.begin(), inputs.end(), origin) - inputs.begin());
      result.backward_inputs.push_back({GradientGraphs::Source::Kind::kForwardInput, index});
    } else {
      auto [it, added] = saved_outputs.emplace(origin, static_cast<int>(forward.outputs().size()));
      if (added) forward.add_output(origin);
      result.backward_inputs.push_back({GradientGraphs::Source::Kind::kForwardOutput, it->second});
    }
  }
  result.backward = std::move(backward);
  return result;
}

}  // namespace kiln::autograd
