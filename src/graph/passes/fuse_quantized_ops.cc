// Quantized-op fusion: turns the QDQ form (QuantizeLinear / DequantizeLinear pairs around float
// ops, as quantize_model and ONNX Runtime's quantize_static write it) into int8 ops, so that
// activations stay 8-bit from one convolution to the next:
//
//   DQ(x), DQ(w) -> Conv(+ B) -> [Q -> DQ] -> [Add(DQ(z))] -> [activation] -> [Q]
//   DQ(x), DQ(w) -> Conv(+ B) -> activation -> Add(DQ(z)) -> [Q]
//                                                                        =>   FusedQLinearConv
//   DQ(a), DQ(b) -> MatMul [-> Add(bias)] | Gemm(+ C) -> [activation] -> [Q]
//                                                                        =>   FusedQLinearMatMul
//   the same with DQ(DynamicQuantizeLinear(a)) (dynamic quantization)   =>   FusedDynamicQLinearMatMul
//   DQ(x) -> MaxPool | Reshape | Flatten | Squeeze | Unsqueeze | Transpose | Resize (nearest)
//   -> Q (same scale and zero point)                                     =>   the op on x itself
//   Concat(DQ(x1), DQ(x2), ...) -> Q (all the same parameters)          =>   Concat(x1, x2, ...)
//   DQ(x) -> AveragePool | GlobalAveragePool -> Q                        =>   FusedQLinearAveragePool
//
// The activation is any of those fused_activation.h lists (SiLU as x * Sigmoid(x), YOLO's),
// applied by the int8 kernel before it requantizes. Without a final Q the fused convolution
// writes float32 (the graph goes on in float there). A bias written as DequantizeLinear of int32
// (ONNX Runtime's form) is folded into a float one.
// x, z, a and y are quantized per tensor, w per tensor or per output channel, b per tensor or
// per column (Gemm: transA 0, alpha and beta 1, C one value per column); every scale and
// zero point must be a constant. Each value inside a chain must be read by the next node alone
// and not be a graph output. DequantizeLinear nodes left without readers are removed, and those
// of constants still read by float ops folded into float constants. Needs shapes (the residual
// must have the output's shape).
#include <algorithm>
#include <cmath>
#include <optional>
#include <set>

#include "graph/passes/activation_match.h"
#include "graph/passes/passes.h"

namespace kiln::graph {
namespace {

bool is_8bit(DType d) {
  return d == DType::kInt8 || d == DType::kUInt8;
}

bool is_scalar_constant(const Graph& graph, const Value* v) {
  return v && is_fixed_constant(graph, v) && v->constant.numel() == 1;
}

// A DequantizeLinear of 8-bit values with constant parameters, per tensor or (when
// `channel_axis` >= 0) per index of that axis.
struct Dequantized {
  Node* node = nullptr;
  Value *q = nullptr, *scale = nullptr, *zero_point = nullptr;
};

std::optional<Dequantized> dequantized(const Graph& graph, const Value* v, int64_t channel_axis = -1) {
  if (!v || !v->producer || v->producer->op != "DequantizeLinear") return std::nullopt;
  Node* dq = v->producer;
  const Attrs attrs = dq->schema().bind(dq->attrs);
  if (attrs.get_int("block_size") != 0 || attrs.get_int("output_dtype") != 0) return std::nullopt;
  Value* q = dq->inputs[0];
  Value* scale = dq->inputs[1];
  Value* zero_point = dq->inputs.size() > 2 ? dq->inputs[2] : nullptr;
  if (!q->info || !is_8bit(q->info->dtype) || !is_fixed_constant(graph, scale) ||
      scale->constant.dtype() != DType::kFloat32)
    return std::nullopt;
  if (zero_point && !is_fixed_constant(graph, zero_point)) return std::nullopt;
  if (scale->constant.numel() != 1) {
    const int rank = q->info->shape.ndim();
    if (channel_axis < 0 || scale->constant.ndim() != 1 || rank == 0) return std::nullopt;
    if (normalize_axis(attrs.get_int("axis"), rank, "axis") != channel_axis) return std::nullopt;
  }
  return Dequantized{dq, q, scale, zero_point};
}

// x, when `v` is DequantizeLinear(DynamicQuantizeLinear(x)): x quantized on each call.
Value* dynamically_quantized(const Value* v) {
  if (!v || !v->producer || v->producer->op != "DequantizeLinear") return nullptr;
  const Node* dq = v->producer;
  const Node* dynamic = dq->inputs[0]->producer;
  if (!dynamic || dynamic->op != "DynamicQuantizeLinear" || dq->inputs.size() < 3) return nullptr;
  for (size_t i = 0; i < 3; ++i)
    if (dq->inputs[i] != dynamic->outputs[i]) return nullptr;
  return dynamic->inputs[0];
}

// A QuantizeLinear per tensor to 8 bits with constant parameters.
bool is_plain_quantize(const Graph& graph, const Node* n) {
  if (!n || n->op != "QuantizeLinear" || !n->outputs[0]->info || !is_8bit(n->outputs[0]->info->dtype))
    return false;
  const Attrs attrs = n->schema().bind(n->attrs);
  if (attrs.get_int("block_size") != 0 || attrs.get_int("precision") != 0) return false;
  if (!is_scalar_constant(graph, n->inputs[1]) || n->inputs[1]->constant.dtype() != DType::kFloat32)
    return false;
  return n->inputs.size() < 3 || !n->inputs[2] || is_scalar_constant(graph, n->inputs[2]);
}

double scalar_of(const Value* v) {
  return v ? v->constant.cast(DType::kFloat64).to_vector<double>()[0] : 0.0;
}

// The float bias a Conv reads: a constant, or a DequantizeLinear of constants (folded here).
std::optional<Value*> float_bias(Graph& graph, Value* b) {
  if (!b) return nullptr;
  if (is_fixed_constant(graph, b))
    return b->constant.dtype() == DType::kFloat32 ? std::optional(b) : std::nullopt;
  Node* dq = b->producer;
  if (!dq || dq->op != "DequantizeLinear") return std::nullopt;
  std::vector<Tensor> inputs;
  for (const Value* in : dq->inputs) {
    if (!in || !is_fixed_constant(graph, in)) return std::nullopt;
    inputs.push_back(in->constant);
  }
  const Tensor value = dq->schema().run_reference(dq->schema().bind(dq->attrs), inputs)[0];
  if (value.dtype() != DType::kFloat32) return std::nullopt;
  return graph.add_initializer(graph.fresh_name(b->name + "_float"), value);
}

// A bias of one value per column (shape (N) or (1, N)) as a float32 (N) constant, or nothing.
std::optional<Value*> column_bias(Graph& graph, Value* value, int64_t columns) {
  const std::optional<Value*> bias = float_bias(graph, value);
  if (!bias || !*bias) return bias;
  const Tensor& t = (*bias)->constant;
  if (t.numel() != columns || (t.ndim() != 1 && !(t.ndim() == 2 && t.shape()[0] == 1))) return std::nullopt;
  if (t.ndim() == 1) return bias;
  return graph.add_initializer(graph.fresh_name((*bias)->name + "_row"), t.reshape(Shape{columns}));
}

// Puts `fused` (just added) in place of the chain of nodes it computes, whose result is `last`:
// readers of `last` read the fused output and the chain's nodes go. False, with the graph as
// before, when the fused node's types do not infer or `last` cannot be replaced.
bool replace_chain(Graph& graph, Node* fused, const Value* last, std::vector<Node*> chain,
                   std::set<const Node*>& removed) {
  if (!graph.infer_node(fused, /*allow_unknown=*/true) ||
      !remove_node_replacing(graph, last->producer, {fused->outputs[0]})) {
    graph.remove_node(fused);
    return false;
  }
  // Every node of the chain goes (the last one already has): none may be visited again.
  removed.insert(chain.begin(), chain.end());
  chain.pop_back();
  for (auto it = chain.rbegin(); it != chain.rend(); ++it) graph.remove_node(*it);
  return true;
}

// The (8-bit) output of a fused op: the QuantizeLinear that alone reads `last`, if any.
Node* final_quantize(const Graph& graph, const Value* last) {
  Node* q = sole_reader(graph, last);
  return is_plain_quantize(graph, q) ? q : nullptr;
}

// The QuantizeLinear of `v` when `v` -> Q -> DQ (the same parameters) -> Add, each read by the next
// alone.
Node* requantized_before_add(const Graph& graph, const Value* v) {
  Node* q = sole_reader(graph, v);
  if (!is_plain_quantize(graph, q)) return nullptr;
  Node* dq = sole_reader(graph, q->outputs[0]);
  if (!dq || dq->op != "DequantizeLinear" || dq->inputs[0] != q->outputs[0]) return nullptr;
  const auto d = dequantized(graph, dq->outputs[0]);
  const Value* q_zero = q->inputs.size() > 2 ? q->inputs[2] : nullptr;
  if (!d || scalar_of(d->scale) != scalar_of(q->inputs[1]) || scalar_of(d->zero_point) != scalar_of(q_zero))
    return nullptr;
  Node* add = sole_reader(graph, dq->outputs[0]);
  return add && add->op == "Add" ? q : nullptr;
}

bool fuse_conv(Graph& graph, Node* conv, std::set<const Node*>& removed) {
  if (conv->op != "Conv") return false;
  const auto x = dequantized(graph, conv->inputs[0]);
  const auto w = dequantized(graph, conv->inputs[1], 0);
  if (!x || !w || !is_fixed_constant(graph, w->q)) return false;
  const std::optional<Value*> bias = float_bias(graph, conv->inputs.size() > 2 ? conv->inputs[2] : nullptr);
  if (!bias) return false;
  Value* y = conv->outputs[0];
  if (!y->info) return false;
  std::vector<Node*> chain{conv};
  Value* last = y;
  // ONNX Runtime's form of a residual: the Conv's output quantized and dequantized before the Add
  // (the pair becomes the fused op's mid_scale / mid_zero_point).
  Node* mid = requantized_before_add(graph, y);
  Value* add_input = mid ? sole_reader(graph, mid->outputs[0])->outputs[0] : y;
  std::optional<Dequantized> z;
  if (Node* add = sole_reader(graph, add_input); add && add->op == "Add") {
    Value* other = add->inputs[0] == add_input ? add->inputs[1] : add->inputs[0];
    z = dequantized(graph, other);
    const Value* out = add->outputs[0];
    if (other != add_input && z && z->q->info && z->q->info->shape == y->info->shape && out->info &&
        out->info->shape == y->info->shape) {
      if (mid) {
        chain.push_back(mid);
        chain.push_back(sole_reader(graph, mid->outputs[0]));
      }
      chain.push_back(add);
      last = add->outputs[0];
    } else {
      z.reset();
    }
  }
  if (!z) mid = nullptr;
  const std::optional<MatchedActivation> act = match_activation(graph, last);
  if (act) {
    chain.insert(chain.end(), act->nodes.begin(), act->nodes.end());
    last = act->output;
  }
  // YOLOv5's bottleneck: the residual added after the activation, x + SiLU(Conv(...)).
  bool residual_last = false;
  if (Node* add = act && !z ? sole_reader(graph, last) : nullptr; add && add->op == "Add") {
    Value* other = add->inputs[0] == last ? add->inputs[1] : add->inputs[0];
    const auto residual = dequantized(graph, other);
    const Value* out = add->outputs[0];
    if (other != last && residual && residual->q->info && residual->q->info->shape == y->info->shape &&
        out->info && out->info->shape == y->info->shape) {
      z = residual;
      residual_last = true;
      chain.push_back(add);
      last = add->outputs[0];
    }
  }
  Node* quantize = final_quantize(graph, last);
  if (quantize) {
    chain.push_back(quantize);
    last = quantize->outputs[0];
  }

  std::vector<Value*> inputs{x->q,
                             x->scale,
                             x->zero_point,
                             w->q,
                             w->scale,
                             w->zero_point,
                             quantize ? quantize->inputs[1] : nullptr,
                             quantize && quantize->inputs.size() > 2 ? quantize->inputs[2] : nullptr,
                             *bias};
  if (z) {
    inputs.push_back(z->q);
    inputs.push_back(z->scale);
    inputs.push_back(z->zero_point);
  }
  if (mid) {
    inputs.push_back(mid->inputs[1]);
    inputs.push_back(mid->inputs.size() > 2 ? mid->inputs[2] : nullptr);
  }
  while (!inputs.empty() && inputs.back() == nullptr) inputs.pop_back();
  AttrMap attrs = conv->attrs;
  attrs.insert_or_assign("activation", AttrValue(act ? act->name : std::string()));
  attrs.insert_or_assign("activation_params", AttrValue(act ? act->params : std::vector<double>{}));
  if (residual_last) attrs.insert_or_assign("residual_after_activation", AttrValue(int64_t{1}));
  Node* fused = graph.add_node("FusedQLinearConv", inputs, attrs, graph.fresh_name(conv->name + "_int8"));
  return replace_chain(graph, fused, last, chain, removed);
}

bool fuse_matmul(Graph& graph, Node* n, std::set<const Node*>& removed) {
  if (n->op != "MatMul" && n->op != "Gemm") return false;
  const auto a = dequantized(graph, n->inputs[0]);
  // Dynamic quantization: the activation's parameters come from its own range on each call.
  Value* dynamic = a ? nullptr : dynamically_quantized(n->inputs[0]);
  const Value* rows = a ? a->q : dynamic;
  if (!rows || !rows->info || rows->info->shape.ndim() < 2) return false;
  bool trans_b = false;
  Value* c = nullptr;
  if (n->op == "Gemm") {
    const Attrs attrs = n->schema().bind(n->attrs);
    if (attrs.get_int("transA") != 0 || attrs.get_float("alpha") != 1.0 || attrs.get_float("beta") != 1.0)
      return false;
    trans_b = attrs.get_int("transB") != 0;
    c = n->inputs.size() > 2 ? n->inputs[2] : nullptr;
  }
  const auto b = dequantized(graph, n->inputs[1], trans_b ? 0 : 1);
  if (!b || !is_fixed_constant(graph, b->q) || b->q->constant.ndim() != 2) return false;
  const int64_t columns = b->q->constant.shape()[trans_b ? 0 : 1];
  std::optional<Value*> bias = column_bias(graph, c, columns);
  if (!bias) return false;
  std::vector<Node*> chain{n};
  Value* last = n->outputs[0];
  if (Node* add = sole_reader(graph, last); add && add->op == "Add" && n->op == "MatMul" && !*bias) {
    Value* other = add->inputs[0] == last ? add->inputs[1] : add->inputs[0];
    if (other != last && is_fixed_constant(graph, other) && other->constant.dtype() == DType::kFloat32) {
      if (const std::optional<Value*> added = column_bias(graph, other, columns); added && *added) {
        bias = added;
        chain.push_back(add);
        last = add->outputs[0];
      }
    }
  }
  const std::optional<MatchedActivation> act = match_activation(graph, last);
  if (act) {
    chain.insert(chain.end(), act->nodes.begin(), act->nodes.end());
    last = act->output;
  }
  Node* quantize = dynamic ? nullptr : final_quantize(graph, last);
  if (quantize) {
    chain.push_back(quantize);
    last = quantize->outputs[0];
  }
  // The product reads B as (K, N): Gemm's transposed weight is transposed once, here.
  Value* b_matrix = b->q;
  if (trans_b)
    b_matrix = graph.add_initializer(graph.fresh_name(b->q->name + "_kn"),
                                     b->q->constant.transpose({1, 0}).contiguous());
  std::vector<Value*> inputs;
  if (dynamic) {
    inputs = {dynamic, b_matrix, b->scale, b->zero_point, *bias};
  } else {
    inputs = {a->q,
              a->scale,
              a->zero_point,
              b_matrix,
              b->scale,
              b->zero_point,
              quantize ? quantize->inputs[1] : nullptr,
              quantize && quantize->inputs.size() > 2 ? quantize->inputs[2] : nullptr,
              *bias};
  }
  while (!inputs.empty() && inputs.back() == nullptr) inputs.pop_back();
  AttrMap attrs{{"activation", AttrValue(act ? act->name : std::string())},
                {"activation_params", AttrValue(act ? act->params : std::vector<double>{})}};
  Node* fused = graph.add_node(dynamic ? "FusedDynamicQLinearMatMul" : "FusedQLinearMatMul", inputs, attrs,
                               graph.fresh_name(n->name + "_int8"));
  return replace_chain(graph, fused, last, chain, removed);
}

// DQ -> op -> Q with the same parameters, where the op only moves or picks values (Resize in
// mode nearest; Concat with every input so dequantized): the op runs on the 8-bit values and the
// conversions go.
bool fuse_value_preserving(Graph& graph, Node* n, std::set<const Node*>& removed) {
  static const std::set<std::string> kOps{"MaxPool",   "Reshape",   "Flatten", "Squeeze",
                                          "Unsqueeze", "Transpose", "Resize",  "Concat"};
  if (!kOps.count(n->op) || n->outputs.size() != 1 || n->inputs.empty()) return false;
  if (n->op == "Resize" && n->schema().bind(n->attrs).get_string("mode") != "nearest") return false;
  Node* q = sole_reader(graph, n->outputs[0]);
  if (!is_plain_quantize(graph, q)) return false;
  const Value* q_zero = q->inputs.size() > 2 ? q->inputs[2] : nullptr;
  const DType q_type = q->outputs[0]->info->dtype;
  const size_t data_inputs = n->op == "Concat" ? n->inputs.size() : 1;
  std::vector<Dequantized> xs;
  for (size_t i = 0; i < data_inputs; ++i) {
    const auto x = dequantized(graph, n->inputs[i]);
    if (!x || scalar_of(q->inputs[1]) != scalar_of(x->scale) || q_type != x->q->info->dtype ||
        scalar_of(q_zero) != scalar_of(x->zero_point))
      return false;
    xs.push_back(*x);
  }
  for (size_t i = 0; i < xs.size(); ++i) graph.set_input(n, static_cast<int>(i), xs[i].q);
  if (!graph.infer_node(n, /*allow_unknown=*/true) || !remove_node_replacing(graph, q, {n->outputs[0]})) {
    for (size_t i = 0; i < xs.size(); ++i) graph.set_input(n, static_cast<int>(i), xs[i].node->outputs[0]);
    graph.infer_node(n, /*allow_unknown=*/true);
    return false;
  }
  removed.insert(q);
  return true;
}

// DQ -> AveragePool | GlobalAveragePool -> Q (any parameters): the mean of 8-bit values,
// requantized. GlobalAveragePool becomes the window of all spatial axes.
bool fuse_average_pool(Graph& graph, Node* n, std::set<const Node*>& removed) {
  if (n->op != "AveragePool" && n->op != "GlobalAveragePool") return false;
  const auto x = dequantized(graph, n->inputs[0]);
  Node* q = final_quantize(graph, n->outputs[0]);
  if (!x || !q || !x->q->info) return false;
  AttrMap attrs = n->attrs;
  if (n->op == "GlobalAveragePool") {
    const Shape& shape = x->q->info->shape;
    std::vector<int64_t> spatial;
    for (int i = 2; i < shape.ndim(); ++i) spatial.push_back(shape[i]);
    if (spatial.empty() || std::any_of(spatial.begin(), spatial.end(), [](int64_t d) { return d <= 0; }))
      return false;
    attrs = {{"kernel_shape", AttrValue(spatial)}};
  }
  std::vector<Value*> inputs{x->q, x->scale, x->zero_point, q->inputs[1],
                             q->inputs.size() > 2 ? q->inputs[2] : nullptr};
  while (inputs.back() == nullptr) inputs.pop_back();
  Node* fused = graph.add_node("FusedQLinearAveragePool", inputs, attrs, graph.fresh_name(n->name + "_int8"));
  return replace_chain(graph, fused, q->outputs[0], {n, q}, removed);
}

bool fuse_quantized_ops(Graph& graph) {
  bool changed = false;
  std::set<const Node*> removed;
  for (Node* n : graph.topological_order())
    if (!removed.count(n)) changed |= fuse_value_preserving(graph, n, removed);
  removed.clear();
  for (Node* n : graph.topological_order())
    if (!removed.count(n))
      changed |= fuse_conv(graph, n, removed) || fuse_matmul(graph, n, removed) ||
                 fuse_average_pool(graph, n, removed);
  // The DequantizeLinear nodes the fused ops no longer read go; those of constants that float ops
  // still read (weights of layers left in float) are computed once, here, instead of every run.
  std::vector<Node*> order = graph.topological_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* n = *it;
    if (n->op != "DequantizeLinear" && n->op != "DynamicQuantizeLinear") continue;
    const bool unread = std::all_of(n->outputs.begin(), n->outputs.end(), [&](const Value* v) {
      return v->users.empty() && !is_graph_output(graph, v);
    });
    if (unread) {
      graph.remove_node(n);
      changed = true;
      continue;
    }
    if (n->op != "DequantizeLinear" || is_graph_output(graph, n->outputs[0])) continue;
    std::vector<Tensor> inputs;
    bool all_constant = true;
    for (const Value* in : n->inputs) {
      all_constant = all_constant && (!in || is_fixed_constant(graph, in));
      inputs.push_back(in && all_constant ? in->constant : Tensor());
    }
    if (!all_constant) continue;
    graph.make_constant(n->outputs[0], n->schema().run_reference(n->schema().bind(n->attrs), inputs)[0]);
    // The output lives on as an initializer (same name, same readers); only the node goes.
    n->outputs.clear();
    graph.remove_node(n);
    changed = true;
  }
  if (changed) graph.remove_unused_values();
  return changed;
}

}  // namespace

Pass fuse_quantized_ops_pass() {
  return Pass{"fuse_quantized_ops", {kShapesProperty}, {kShapesProperty}, fuse_quantized_ops};
}

}  // namespace kiln::graph
