// The mixed-precision graph rewrite (include/kiln/mixed_precision.hpp): which nodes compute in
// the low type, and the Casts and converted initializers at the borders of the float32 islands.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <utility>

#include "graph/graph.h"
#include "kiln/error.hpp"
#include "kiln/mixed_precision.hpp"
#include "runtime/kernel_provider.h"

namespace kiln::mixed_precision {
namespace {

using graph::Graph;
using graph::Node;
using graph::Value;

// kFollowInputs: a node the fast kernels take in neither type (data movement on the reference
// kernels: Reshape, Slice, ...) computes in the type its float inputs come in, so that it adds no
// Casts of its own.
enum class Precision { kLow, kFloat32, kNoFloat, kFollowInputs };

bool is_float32(const Value* v) {
  return v && v->info && v->info->dtype == DType::kFloat32;
}

// The op's own type inference with every float32 input taken as `low`: the op takes the low type
// when it accepts them and no float32 output is left float32 (an op whose output type comes from
// an attribute, like ConstantOfShape, keeps it).
bool takes_low_type(const Node* n, DType low) {
  const ops::OpSchema& schema = n->schema();
  std::vector<std::optional<ops::TensorInfo>> infos;
  std::vector<const Tensor*> values;
  for (const Value* in : n->inputs) {
    if (!in) {
      infos.emplace_back(std::nullopt);
      values.push_back(nullptr);
      continue;
    }
    if (!in->info) return false;
    ops::TensorInfo info = *in->info;
    if (info.dtype == DType::kFloat32) info.dtype = low;
    infos.push_back(info);
    // Float constants are not given: an op whose output shape needs a float value (Resize's scales)
    // cannot infer without it, and stays float32.
    values.push_back(in->is_constant() && in->info->dtype != DType::kFloat32 ? &in->constant : nullptr);
  }
  std::vector<ops::TensorInfo> out;
  try {
    out = schema.infer_types(schema.bind(n->attrs), infos, values, static_cast<int>(n->outputs.size()));
  } catch (const Error&) {
    return false;
  }
  for (size_t i = 0; i < n->outputs.size() && i < out.size(); ++i)
    if (is_float32(n->outputs[i]) && out[i].dtype != low) return false;
  return true;
}

// Whether a registered fast-kernel provider (oneDNN) has a kernel for the node with its float32
// tensors in `type`: asked on a copy of the node in a graph of its own, free dimensions taken as 1,
// constants converted as the rewrite would convert them.
bool fast_kernel_for(const Node* n, DType type) {
  Graph scratch;
  std::vector<Value*> inputs;
  for (size_t i = 0; i < n->inputs.size(); ++i) {
    const Value* in = n->inputs[i];
    if (!in) {
      inputs.push_back(nullptr);
      continue;
    }
    if (!in->info) return false;
    const std::string name = "input" + std::to_string(i);
    if (in->is_constant()) {
      inputs.push_back(scratch.add_initializer(
          name, in->constant.dtype() == DType::kFloat32 ? in->constant.cast(type) : in->constant));
      continue;
    }
    ops::TensorInfo info = *in->info;
    if (info.dtype == DType::kFloat32) info.dtype = type;
    std::vector<int64_t> dims(info.shape.begin(), info.shape.end());
    for (int64_t& d : dims) d = d < 0 ? 1 : d;
    info.shape = Shape(dims);
    inputs.push_back(scratch.add_input(name, info));
  }
  Node* copy = scratch.add_node(n->op, inputs, n->attrs, n->name, static_cast<int>(n->outputs.size()));
  try {
    if (!scratch.infer_node(copy, /*allow_unknown=*/true)) return false;
  } catch (const Error&) {
    return false;
  }
  const Attrs attrs = copy->schema().bind(copy->attrs);
  const runtime::KernelQuery query{*copy, attrs, std::vector<runtime::LayoutPtr>(inputs.size()),
                                   std::vector<bool>(copy->outputs.size(), true)};
  for (const runtime::KernelProvider* provider : runtime::registered_kernel_providers()) {
    try {
      if (provider->choose(query)) return true;
    } catch (const Error&) {
      // A provider that cannot handle the node's shapes has no kernel for it.
    }
  }
  return false;
}

// The nodes on a path from a DequantizeLinear to a QuantizeLinear (the float ops that int8 kernels
// and their fused activations and residuals replace), and the nodes that read a DequantizeLinear
// or feed a QuantizeLinear: they keep float32, so that fuse_quantized_ops still sees the QDQ
// pattern and no Cast sits inside an int8 chain.
std::set<const Node*> quantized_region(const std::vector<Node*>& order) {
  std::set<const Node*> after_dq, before_q, region;
  for (const Node* n : order) {
    if (n->op == "QuantizeLinear") continue;
    for (const Value* v : n->inputs)
      if (v && v->producer && (v->producer->op == "DequantizeLinear" || after_dq.count(v->producer))) {
        after_dq.insert(n);
        if (v->producer->op == "DequantizeLinear") region.insert(n);
      }
  }
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const Node* n = *it;
    if (n->op == "DequantizeLinear") continue;
    for (const Value* v : n->outputs)
      for (const Node* user : v->users)
        if (user->op == "QuantizeLinear" || before_q.count(user)) {
          before_q.insert(n);
          if (user->op == "QuantizeLinear") region.insert(n);
        }
  }
  for (const Node* n : after_dq)
    if (before_q.count(n)) region.insert(n);
  return region;
}

Precision choose(const Node* n, const MixedPrecisionOptions& options, const std::set<std::string>& fp32_ops,
                 const std::set<const Node*>& quantized) {
  bool has_float = false;
  for (const Value* v : n->inputs) has_float |= is_float32(v);
  for (const Value* v : n->outputs) has_float |= is_float32(v);
  if (!has_float) return Precision::kNoFloat;
  if (fp32_ops.count(n->op) || quantized.count(n) ||
      std::find(options.fp32_node_names.begin(), options.fp32_node_names.end(), n->name) !=
          options.fp32_node_names.end())
    return Precision::kFloat32;
  if (!takes_low_type(n, options.low_type)) return Precision::kFloat32;
  if (!options.fast_kernels_only || fast_kernel_for(n, options.low_type)) return Precision::kLow;
  // The runtime would run the node's low-type form on the reference kernels while a fast one
  // takes float32 (oneDNN's f16 kernels need AVX512-FP16, say): that is slower, not faster.
  return fast_kernel_for(n, DType::kFloat32) ? Precision::kFloat32 : Precision::kFollowInputs;
}

// Rewrites the inputs of each node to the precision it computes in.
class Rewriter {
 public:
  Rewriter(Graph& g, DType low, MixedPrecisionReport& report) : g_(g), low_(low), report_(report) {}

  void convert_inputs(Node* n, Precision precision) {
    for (size_t i = 0; i < n->inputs.size(); ++i) {
      Value* v = n->inputs[i];
      if (!v || !v->info) continue;
      if (precision == Precision::kLow && v->info->dtype == DType::kFloat32)
        g_.set_input(n, static_cast<int>(i), v->is_constant() ? low_constant(v) : cast(v, low_));
      else if (precision != Precision::kLow && v->info->dtype == low_ && lowered_.count(v))
        g_.set_input(n, static_cast<int>(i), cast(v, DType::kFloat32));
    }
  }

  void mark_outputs_lowered(const Node* n) {
    for (Value* v : n->outputs)
      if (v->info && v->info->dtype == low_) lowered_.insert(v);
  }

  // Graph outputs of the low type get a Cast back to float32 that takes over their names (the
  // Cast float32 readers already share, when there is one).
  void restore_outputs() {
    std::vector<Value*> outputs = g_.outputs();
    for (Value*& v : outputs) {
      if (!lowered_.count(v)) continue;
      const std::string name = v->name;
      Value* restored = cast(v, DType::kFloat32);
      g_.rename_value(v, g_.fresh_name(name + "_" + dtype_name(low_)));
      g_.rename_value(restored, name);
      v = restored;
    }
    g_.set_outputs(outputs);
  }

 private:
  Value* cast(Value* v, DType to) {
    const auto key = std::make_pair(v, to);
    if (auto it = casts_.find(key); it != casts_.end()) return it->second;
    Node* c = g_.add_node("Cast", {v}, {{"to", int64_t{dtype_to_onnx(to)}}},
                          g_.fresh_name(v->name + "_to_" + dtype_name(to)));
    g_.infer_node(c);
    ++report_.casts;
    if (to == low_) lowered_.insert(c->outputs[0]);
    return casts_[key] = c->outputs[0];
  }

  Value* low_constant(Value* v) {
    if (auto it = constants_.find(v); it != constants_.end()) return it->second;
    Value* c = g_.add_initializer(g_.fresh_name(v->name + "_" + dtype_name(low_)), v->constant.cast(low_));
    c->info = ops::TensorInfo{low_, v->constant.shape()};
    ++report_.converted_initializers;
    lowered_.insert(c);
    return constants_[v] = c;
  }

  Graph& g_;
  DType low_;
  MixedPrecisionReport& report_;
  std::map<std::pair<Value*, DType>, Value*> casts_;
  std::map<Value*, Value*> constants_;
  std::set<const Value*> lowered_;  // values this rewrite made low (not those the model had)
};

}  // namespace

const std::vector<std::string>& default_fp32_ops() {
  static const std::vector<std::string> ops = {
      // Normalizations and softmax: sums over many terms and exponentials.
      "Softmax", "LogSoftmax", "LayerNormalization", "GroupNormalization", "RMSNormalization",
      "InstanceNormalization", "LpNormalization", "MeanVarianceNormalization", "SoftmaxCrossEntropyLoss",
      "NegativeLogLikelihoodLoss",
      // Reductions and running sums.
      "ReduceSum", "ReduceMean", "ReduceProd", "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp",
      "ReduceSumSquare", "CumSum", "CumProd",
      // Functions whose range a 16-bit type cannot hold, or whose result is sensitive to rounding.
      "Exp", "Log", "Pow", "Sqrt", "Reciprocal", "Erf",
      // Coordinates and selection: boxes, scales and scores compared with each other.
      "Resize", "Upsample", "NonMaxSuppression", "TopK", "RoiAlign", "Range", "GridSample", "AffineGrid",
      // Casts keep the type they name; the int8 ops and the QDQ pairs keep their float32 scales.
      "Cast", "CastLike", "QuantizeLinear", "DequantizeLinear", "DynamicQuantizeLinear", "FusedQLinearConv",
      "FusedQLinearMatMul", "FusedDynamicQLinearMatMul", "QLinearConv", "QLinearMatMul"};
  return ops;
}

DType parse_low_type(const std::string& text) {
  if (text == "bf16") return DType::kBFloat16;
  if (text == "fp16") return DType::kFloat16;
  throw Error(ErrorCode::kInvalidArgument,
              "mixed precision: expected \"bf16\" or \"fp16\", got \"" + text + "\"");
}

graph::Graph convert_float(graph::Graph model, const MixedPrecisionOptions& options,
                           MixedPrecisionReport* report) {
  KILN_CHECK(options.low_type == DType::kBFloat16 || options.low_type == DType::kFloat16,
             ErrorCode::kInvalidArgument, "mixed precision: the low type must be bfloat16 or float16, got ",
             dtype_name(options.low_type));
  Graph& g = model;
  for (const std::string& name : options.fp32_node_names)
    KILN_CHECK(g.find_node(name) != nullptr, ErrorCode::kInvalidArgument, "mixed precision: fp32 node '",
               name, "' is no node of graph '", g.name, "'");
  g.infer_shapes(/*allow_unknown=*/true);
  std::set<std::string> fp32_ops(default_fp32_ops().begin(), default_fp32_ops().end());
  fp32_ops.insert(options.fp32_op_types.begin(), options.fp32_op_types.end());

  // Decided on the float32 graph, before any Cast changes what a node reads.
  const std::vector<Node*> order = g.topological_order();
  std::map<const Node*, Precision> precision;
  const std::set<const Node*> quantized = quantized_region(order);
  for (const Node* n : order) {
    Precision p = choose(n, options, fp32_ops, quantized);
    if (p == Precision::kFollowInputs) {
      p = Precision::kLow;
      for (const Value* v : n->inputs)
        if (is_float32(v) && !v->is_constant() &&
            (!v->producer || precision.at(v->producer) != Precision::kLow))
          p = Precision::kFloat32;
    }
    precision[n] = p;
  }

  MixedPrecisionReport local;
  MixedPrecisionReport& out = report ? *report : local;
  out = {};
  Rewriter rewriter(g, options.low_type, out);
  for (Node* n : order) {
    const Precision p = precision.at(n);
    rewriter.convert_inputs(n, p);
    g.infer_node(n, /*allow_unknown=*/true);
    if (p == Precision::kLow) {
      rewriter.mark_outputs_lowered(n);
      ++out.low_nodes;
    } else if (p == Precision::kFloat32) {
      out.fp32_nodes.push_back(n->label());
    }
  }
  rewriter.restore_outputs();
  g.remove_unused_values();
  g.infer_shapes(/*allow_unknown=*/true);
  g.verify();
  return model;
}

}  // namespace kiln::mixed_precision
