// Expanding fused ops back into standard ones, the inverse of fuse_post_ops and fuse_matmul_scale_add:
// FusedConv becomes Conv [-> Add(Z)] [-> activation], FusedGemm Gemm [-> activation], FusedMatMul
// MatMul [-> Mul(alpha)] [-> Add(bias)] [-> activation]; SiLU becomes x * Sigmoid(x). FusedQLinearConv,
// FusedQLinearMatMul, FusedDynamicQLinearMatMul and FusedQLinearAveragePool (fuse_quantized_ops) go
// back to their QDQ form. Writers of formats that lack Kiln's fused ops (ONNX) run it first, so an
// optimized graph can still be saved.
#include <map>

#include "graph/passes/passes.h"
#include "ops/fused_activation.h"

namespace kiln::graph {
namespace {

Value* scalar_constant(Graph& graph, const Node& fused, const char* what, double value, DType dtype) {
  return graph.add_initializer(graph.fresh_name(fused.name + "/" + what), Tensor::scalar(value, dtype));
}

// Adds the nodes computing `activation` of `x`; returns their result.
Value* add_activation(Graph& graph, const Node& fused, Value* x) {
  const Attrs attrs = fused.schema().bind(fused.attrs);
  const std::string& name = attrs.get_string("activation");
  const auto& params = attrs.get_floats("activation_params");
  ops::parse_fused_activation(name, params);  // validates the count
  const std::string prefix = fused.name + "/";
  const auto node = [&](const std::string& op, std::vector<Value*> inputs, AttrMap node_attrs = {}) {
    return graph.add_node(op, std::move(inputs), std::move(node_attrs), graph.fresh_name(prefix + op))
        ->outputs[0];
  };
  const DType dtype = x->info ? x->info->dtype : DType::kFloat32;
  if (name.empty()) return x;
  if (name == "SiLU") return node("Mul", {x, node("Sigmoid", {x})});
  if (name == "GeluTanh") return node("Gelu", {x}, {{"approximate", "tanh"}});
  if (name == "LeakyRelu" || name == "Elu") return node(name, {x}, {{"alpha", params[0]}});
  if (name == "HardSigmoid") return node(name, {x}, {{"alpha", params[0]}, {"beta", params[1]}});
  if (name == "Clip") {
    return node("Clip", {x, scalar_constant(graph, fused, "min", params[0], dtype),
                         scalar_constant(graph, fused, "max", params[1], dtype)});
  }
  return node(name, {x});  // Relu, Sigmoid, Tanh, HardSwish, Gelu
}

bool expand(Graph& graph, Node* fused) {
  static const std::map<std::string, std::pair<std::string, size_t>> kBase{
      {"FusedConv", {"Conv", 3}}, {"FusedGemm", {"Gemm", 3}}, {"FusedMatMul", {"MatMul", 2}}};
  const auto base = kBase.find(fused->op);
  if (base == kBase.end()) return false;
  const size_t base_inputs = base->second.second;
  AttrMap attrs = fused->attrs;
  attrs.erase("activation");
  attrs.erase("activation_params");
  // FusedMatMul's alpha is its own (Gemm's is the base op's).
  const bool scaled = fused->op == "FusedMatMul";
  const double alpha = scaled ? fused->schema().bind(fused->attrs).get_float("alpha") : 1.0;
  if (scaled) attrs.erase("alpha");
  std::vector<Value*> inputs(
      fused->inputs.begin(),
      fused->inputs.begin() + static_cast<long>(std::min(base_inputs, fused->inputs.size())));
  Value* y = graph.add_node(base->second.first, inputs, attrs, graph.fresh_name(fused->name))->outputs[0];
  y->info = fused->outputs[0]->info;
  if (alpha != 1.0) {
    const auto& info = fused->outputs[0]->info;
    Value* scale = scalar_constant(graph, *fused, "alpha", alpha, info ? info->dtype : DType::kFloat32);
    y = graph.add_node("Mul", {y, scale}, {}, graph.fresh_name(fused->name + "/scale"))->outputs[0];
    y->info = fused->outputs[0]->info;
  }
  if (fused->inputs.size() > base_inputs && fused->inputs[base_inputs] != nullptr) {
    y = graph.add_node("Add", {y, fused->inputs[base_inputs]}, {}, graph.fresh_name(fused->name + "/add"))
            ->outputs[0];
    y->info = fused->outputs[0]->info;
  }
  y = add_activation(graph, *fused, y);
  y->info = fused->outputs[0]->info;
  return remove_node_replacing(graph, fused, {y});
}

// The nodes a fused node expands into: added beside it, named after it, and removed again together
// when the fused node cannot be replaced by them.
class Expansion {
 public:
  Expansion(Graph& graph, Node* fused) : graph_(graph), fused_(fused) {}

  // The fused node's input i, null when it is absent.
  Value* input(size_t i) const { return i < fused_->inputs.size() ? fused_->inputs[i] : nullptr; }
  Node* add_node(const std::string& op, std::vector<Value*> inputs, AttrMap attrs, const std::string& what) {
    added_.push_back(graph_.add_node(op, std::move(inputs), std::move(attrs),
                                     graph_.fresh_name(fused_->name + "/" + what)));
    graph_.infer_node(added_.back(), /*allow_unknown=*/true);
    return added_.back();
  }
  Value* add(const std::string& op, std::vector<Value*> inputs, AttrMap attrs, const std::string& what) {
    return add_node(op, std::move(inputs), std::move(attrs), what)->outputs[0];
  }
  Node* last_added() const { return added_.back(); }
  // Puts `output` in place of the fused node's; false (and nothing added left) when impossible.
  bool replace_fused(Value* output) {
    if (remove_node_replacing(graph_, fused_, {output})) return true;
    for (auto it = added_.rbegin(); it != added_.rend(); ++it) graph_.remove_node(*it);
    return false;
  }

 private:
  Graph& graph_;
  Node* fused_;
  std::vector<Node*> added_;
};

// FusedQLinearConv and FusedQLinearMatMul back into their QDQ form: DequantizeLinear of the
// activation, of the weight (per output channel: axis 0 of a Conv weight, axis 1 of a (K, N)
// matrix) and of a residual, the FusedConv or FusedMatMul of those (expanded in turn), the Add
// of the residual after the activation (residual_after_activation), and QuantizeLinear when the
// output is 8-bit.
bool expand_quantized(Graph& graph, Node* fused) {
  const bool is_conv = fused->op == "FusedQLinearConv";
  if (!is_conv && fused->op != "FusedQLinearMatMul") return false;
  Expansion expansion(graph, fused);
  const auto input = [&](size_t i) { return expansion.input(i); };
  const auto dequantize = [&](size_t q, size_t scale, size_t zero_point, int64_t axis,
                              const std::string& what) {
    std::vector<Value*> inputs{input(q), input(scale)};
    if (input(zero_point)) inputs.push_back(input(zero_point));
    return expansion.add("DequantizeLinear", inputs, {{"axis", axis}}, what);
  };
  // FusedQLinearConv's mid_scale: the convolution is requantized before the residual and the
  // activation, which then follow as their own nodes.
  const bool mid = is_conv && input(12);
  std::vector<Value*> base_inputs{dequantize(0, 1, 2, 1, "x"), dequantize(3, 4, 5, is_conv ? 0 : 1, "w"),
                                  input(8)};
  Value* z = is_conv && input(9) ? dequantize(9, 10, 11, 1, "z") : nullptr;
  const bool residual_last =
      is_conv && fused->schema().bind(fused->attrs).get_int("residual_after_activation") != 0;
  if (z && !mid && !residual_last) base_inputs.push_back(z);
  AttrMap base_attrs = fused->attrs;
  base_attrs.erase("residual_after_activation");
  if (mid) {
    base_attrs.insert_or_assign("activation", AttrValue(std::string()));
    base_attrs.insert_or_assign("activation_params", AttrValue(std::vector<double>{}));
  }
  Value* y = expansion.add(is_conv ? "FusedConv" : "FusedMatMul", base_inputs, base_attrs, "base");
  Node* base = expansion.last_added();
  if (mid) {
    std::vector<Value*> params{input(12)};
    if (input(13)) params.push_back(input(13));
    std::vector<Value*> q_inputs{y};
    q_inputs.insert(q_inputs.end(), params.begin(), params.end());
    std::vector<Value*> dq_inputs{expansion.add("QuantizeLinear", q_inputs, {}, "mid_quantize")};
    dq_inputs.insert(dq_inputs.end(), params.begin(), params.end());
    y = expansion.add("DequantizeLinear", dq_inputs, {}, "mid_dequantize");
    if (z) y = expansion.add("Add", {y, z}, {}, "residual");
    y = add_activation(graph, *fused, y);
    graph.infer_node(y->producer, /*allow_unknown=*/true);
  }
  if (z && residual_last) y = expansion.add("Add", {y, z}, {}, "residual");
  if (input(6)) {
    std::vector<Value*> q_inputs{y, input(6)};
    if (input(7)) q_inputs.push_back(input(7));
    y = expansion.add("QuantizeLinear", q_inputs, {}, "quantize");
  }
  if (!expansion.replace_fused(y)) return false;
  expand(graph, base);
  return true;
}

// FusedDynamicQLinearMatMul back into DynamicQuantizeLinear -> DequantizeLinear of the activation,
// DequantizeLinear of the weight (per column), and the FusedMatMul of those (expanded in turn).
bool expand_dynamic_quantized(Graph& graph, Node* fused) {
  if (fused->op != "FusedDynamicQLinearMatMul") return false;
  Expansion expansion(graph, fused);
  const auto input = [&](size_t i) { return expansion.input(i); };
  const Node* dynamic = expansion.add_node("DynamicQuantizeLinear", {input(0)}, {}, "dynamic_quantize");
  Value* a = expansion.add_node("DequantizeLinear", dynamic->outputs, {}, "a")->outputs[0];
  std::vector<Value*> b_inputs{input(1), input(2)};
  if (input(3)) b_inputs.push_back(input(3));
  Value* b = expansion.add_node("DequantizeLinear", b_inputs, {{"axis", int64_t{1}}}, "b")->outputs[0];
  Node* base = expansion.add_node("FusedMatMul", {a, b, input(4)}, fused->attrs, "base");
  if (!expansion.replace_fused(base->outputs[0])) return false;
  expand(graph, base);
  return true;
}

// FusedQLinearAveragePool back into DequantizeLinear -> AveragePool -> QuantizeLinear.
bool expand_quantized_average_pool(Graph& graph, Node* fused) {
  if (fused->op != "FusedQLinearAveragePool") return false;
  Expansion expansion(graph, fused);
  const auto input = [&](size_t i) { return expansion.input(i); };
  std::vector<Value*> x_inputs{input(0), input(1)};
  if (input(2)) x_inputs.push_back(input(2));
  Value* pooled = expansion.add("AveragePool", {expansion.add("DequantizeLinear", x_inputs, {}, "x")},
                                fused->attrs, "base");
  std::vector<Value*> q_inputs{pooled, input(3)};
  if (input(4)) q_inputs.push_back(input(4));
  Value* y = expansion.add("QuantizeLinear", q_inputs, {}, "quantize");
  if (!expansion.replace_fused(y)) return false;
  return true;
}

bool expand_fused_ops(Graph& graph) {
  bool changed = false;
  for (Node* n : graph.nodes())
    changed |= expand_quantized(graph, n) || expand_dynamic_quantized(graph, n) ||
               expand_quantized_average_pool(graph, n) || expand(graph, n);
  return changed;
}

}  // namespace

Pass expand_fused_ops_pass() {
  return Pass{"expand_fused_ops", {}, {}, expand_fused_ops};
}

}  // namespace kiln::graph
