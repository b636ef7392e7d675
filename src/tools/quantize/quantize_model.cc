// quantize_model (include/kiln/quantize.hpp): picks the nodes to quantize, calibrates the
// activations they read by running the float model, and rewrites the graph into ONNX's QDQ form.
#include <algorithm>
#include <cmath>
#include <set>

#include "deploy/model_loading.h"
#include "frontends/onnx/export.h"
#include "graph/passes/activation_match.h"
#include "graph/passes/passes.h"
#include "kiln/error.hpp"
#include "kiln/predictor.hpp"
#include "kiln/quantize.hpp"

namespace kiln::quantization {

namespace {

using graph::Graph;
using graph::Node;
using graph::Value;

bool is_float32(const Value* v) {
  return v && v->info && v->info->dtype == DType::kFloat32;
}

// The axis of a node's constant weight that indexes its output channels, or -1 when the node is
// not quantized (no constant float32 weight of a shape its kernels handle).
int weight_channel_axis(const Graph& g, const Node& n) {
  if (n.inputs.size() < 2 || !graph::is_fixed_constant(g, n.inputs[1])) return -1;
  const Tensor& w = n.inputs[1]->constant;
  if (w.dtype() != DType::kFloat32 || !is_float32(n.inputs[0])) return -1;
  const Attrs attrs = n.schema().bind(n.attrs);
  if (n.op == "Conv") return w.shape().ndim() >= 3 ? 0 : -1;
  if (n.op == "Gemm") {
    if (attrs.get_int("transA") != 0 || w.shape().ndim() != 2) return -1;
    return attrs.get_int("transB") != 0 ? 0 : 1;
  }
  if (n.op == "MatMul") return w.shape().ndim() == 2 ? 1 : -1;
  return -1;
}

// Ops that move or pick values without computing new ones: a quantized value passes through them
// unchanged, so their input and output share quantization parameters and a chain of them stays
// in int8. Resize only picks values in mode nearest.
bool is_value_preserving(const Node& n) {
  const std::string& op = n.op;
  if (op == "Resize") return n.schema().bind(n.attrs).get_string("mode") == "nearest";
  return op == "MaxPool" || op == "Reshape" || op == "Flatten" || op == "Squeeze" || op == "Unsqueeze" ||
         op == "Transpose";
}

struct Selection {
  std::vector<Node*> compute;       // nodes whose weights and input are quantized
  std::vector<int> channel_axes;    // per node of `compute`: its weight's output-channel axis
  std::vector<Value*> activations;  // values to calibrate, in graph order
  std::map<const Value*, const Value*> shares_with;  // value -> the value whose parameters it takes
};

// The nodes to quantize, in graph order: those with constant float weights (of `only_ops` when
// given), less the excluded ones and the first/last when asked.
void pick_nodes(Graph& g, const QuantizeOptions& options, const std::set<std::string>& only_ops,
                Selection& s) {
  const std::set<std::string> names(options.excluded_node_names.begin(), options.excluded_node_names.end());
  const std::set<std::string> ops(options.excluded_op_types.begin(), options.excluded_op_types.end());
  check_excluded_nodes(g, options);
  std::vector<Node*> candidates;
  for (Node* n : g.topological_order())
    if (weight_channel_axis(g, *n) >= 0 && (only_ops.empty() || only_ops.count(n->op)))
      candidates.push_back(n);
  for (size_t i = 0; i < candidates.size(); ++i) {
    Node* n = candidates[i];
    if (names.count(n->name) || ops.count(n->op)) continue;
    if (i == 0 && options.keep_first_layer_fp32) continue;
    if (i + 1 == candidates.size() && options.keep_last_layer_fp32) continue;
    s.compute.push_back(n);
    s.channel_axes.push_back(weight_channel_axis(g, *n));
  }
}

Selection select(Graph& g, const QuantizeOptions& options) {
  const std::set<std::string> names(options.excluded_node_names.begin(), options.excluded_node_names.end());
  const std::vector<Node*> order = g.topological_order();
  Selection s;
  pick_nodes(g, options, {}, s);
  // The activations: every input the selected nodes read, then (back through value-preserving
  // ops that only feed quantized readers) the values those were taken from.
  std::set<const Value*> chosen;
  for (Node* n : s.compute) chosen.insert(n->inputs[0]);
  // A residual Add after a quantized Conv (or after the activation that follows it): its other
  // input too, so that the Add folds into the int8 convolution (a sum post-op on a quantized
  // tensor). When both inputs come from quantized
  // Convs, the later one takes the Add and the earlier one's output is quantized.
  const std::set<const Node*> quantized(s.compute.begin(), s.compute.end());
  std::map<const Node*, size_t> position;
  for (size_t i = 0; i < order.size(); ++i) position[order[i]] = i;
  // The quantized Conv whose result `v` is, directly or through the activation after it (YOLOv5's
  // bottleneck adds its residual after the SiLU).
  const auto quantized_conv = [&](Value* v) -> const Node* {
    const auto is_quantized_conv = [&](const Node* n) { return n && n->op == "Conv" && quantized.count(n); };
    if (is_quantized_conv(v->producer)) return v->producer;
    if (!v->producer || v->producer->inputs.empty()) return nullptr;
    for (Value* in : v->producer->inputs) {
      if (!in || !is_quantized_conv(in->producer)) continue;
      const std::optional<graph::MatchedActivation> act = graph::match_activation(g, in);
      if (act && act->output == v) return in->producer;
    }
    return nullptr;
  };
  for (Node* n : order) {
    if (n->op != "Add" || n->inputs.size() != 2 || names.count(n->name)) continue;
    Value* a = n->inputs[0];
    Value* b = n->inputs[1];
    const Node* conv_a = quantized_conv(a);
    const Node* conv_b = quantized_conv(b);
    if (!conv_a && !conv_b) continue;
    const bool a_fuses = conv_a && (!conv_b || position.at(conv_a) > position.at(conv_b));
    Value* other = a_fuses ? b : a;
    if (is_float32(other) && !other->is_constant()) chosen.insert(other);
  }
  // Back from the chosen values: through value-preserving ops (the output takes the input's
  // parameters), into average pooling (the input calibrated on its own), and into Concat (each joined value
  // takes the output's, so that the join copies 8-bit values: YOLO's C3 and SPPF blocks). A value that
  // already takes another's parameters keeps them; where that leaves a Concat's inputs or an op's two ends on
  // different parameters, the op stays in float between its DequantizeLinear and QuantizeLinear.
  const auto source_of = [&](const Value* v) {
    while (s.shares_with.count(v)) v = s.shares_with.at(v);
    return v;
  };
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    Node* n = *it;
    if (names.count(n->name) || !chosen.count(n->outputs[0])) continue;
    Value* out = n->outputs[0];
    if (n->op == "Concat") {
      for (Value* in : n->inputs) {
        if (!is_float32(in) || in->is_constant() || s.shares_with.count(in) || source_of(out) == in) continue;
        chosen.insert(in);
        s.shares_with[in] = out;
      }
      continue;
    }
    Value* in = n->inputs[0];
    // An average's range is narrower than its input's: both ends are calibrated, each with its
    // own parameters, and the int8 pooling requantizes (FusedQLinearAveragePool). ONNX Runtime's
    // quantize_static gives AveragePool's output its input's parameters and leaves
    // GlobalAveragePool in float.
    if (n->op == "AveragePool" || n->op == "GlobalAveragePool") {
      if (is_float32(in) && !in->is_constant()) chosen.insert(in);
      continue;
    }
    if (!is_value_preserving(*n) || !is_float32(in)) continue;
    chosen.insert(in);
    if (!s.shares_with.count(out)) {
      if (source_of(in) != out) s.shares_with[out] = in;
    } else if (!s.shares_with.count(in) && source_of(out) != in) {
      s.shares_with[in] = out;  // the output already joins a Concat: the input takes its parameters
    }
  }
  for (Value* v : g.inputs())
    if (chosen.count(v)) s.activations.push_back(v);
  for (Node* n : order)
    for (Value* v : n->outputs)
      if (chosen.count(v)) s.activations.push_back(v);
  return s;
}

// Runs the float model over the batches and collects the statistics of `values`.
std::vector<TensorStatistics> collect_statistics(const Graph& model, const std::vector<Value*>& values,
                                                 const CalibrationBatches& batches,
                                                 const QuantizeOptions& options, int& batches_seen) {
  Graph probe = model.clone();
  std::vector<Value*> outputs;
  for (const Value* v : values) outputs.push_back(probe.find_value(v->name));
  probe.set_outputs(outputs);
  std::vector<std::string> inputs;
  for (const Value* v : probe.inputs())
    if (!v->is_constant()) inputs.push_back(v->name);
  // No passes: the values to observe must keep their names.
  const Predictor predictor(std::move(probe), {.opt_level = "none"});
  std::vector<TensorStatistics> stats(values.size(), TensorStatistics(options.num_bins));
  std::map<std::string, Tensor> batch;
  batches_seen = 0;
  while ((options.num_calib_batches < 0 || batches_seen < options.num_calib_batches) && batches(batch)) {
    if (batch.size() == 1 && batch.begin()->first.empty()) {
      KILN_CHECK(inputs.size() == 1, ErrorCode::kInvalidArgument, "calibration batch ", batches_seen,
                 ": a single unnamed array, but the model has ", inputs.size(),
                 " inputs; give one file per input name");
      Tensor t = batch.begin()->second;
      batch = {{inputs[0], t}};
    }
    const std::vector<Tensor> out = predictor.predict(batch);
    for (size_t i = 0; i < out.size(); ++i) stats[i].add(out[i]);
    ++batches_seen;
  }
  KILN_CHECK(batches_seen > 0, ErrorCode::kInvalidArgument,
             "quantize_model: the calibration data gave no batch");
  return stats;
}

// A per-channel symmetric int8 copy of a weight: scale_c = max |w_c| / 127 along `axis` (63 with
// reduce_range: 7-bit weights, see QuantizeOptions).
struct QuantizedWeight {
  Tensor values, scales, zero_points;
};

QuantizedWeight quantize_weight(const Tensor& w, int axis, bool reduce_range) {
  const float largest = reduce_range ? 63.0f : 127.0f;
  const Tensor dense = w.contiguous();
  const Shape& shape = dense.shape();
  int64_t outer = 1, inner = 1;
  for (int a = 0; a < axis; ++a) outer *= shape[a];
  for (int a = axis + 1; a < shape.ndim(); ++a) inner *= shape[a];
  const int64_t channels = shape[axis];
  const float* src = dense.data<float>();
  std::vector<float> scales(static_cast<size_t>(channels), 0.0f);
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t i = 0; i < inner; ++i)
        scales[static_cast<size_t>(c)] =
            std::max(scales[static_cast<size_t>(c)], std::abs(src[(o * channels + c) * inner + i]));
  for (float& s : scales) s = s > 0 ? s / largest : 1.0f;  // an all-zero channel: any scale is exact
  QuantizedWeight q;
  q.values = Tensor::empty(shape, DType::kInt8);
  int8_t* dst = q.values.data<int8_t>();
  for (int64_t o = 0; o < outer; ++o)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t i = 0; i < inner; ++i) {
        const int64_t k = (o * channels + c) * inner + i;
        dst[k] = static_cast<int8_t>(
            std::clamp(std::nearbyint(src[k] / scales[static_cast<size_t>(c)]), -largest, largest));
      }
  q.scales = Tensor::from_vector<float>(scales, Shape{channels});
  q.zero_points = Tensor::zeros(Shape{channels}, DType::kInt8);
  return q;
}

// Makes every node but `keep` read `with` where it read `v` (graph outputs keep `v`).
void redirect_reads(Graph& g, Value* v, Value* with, const Node* keep) {
  const std::vector<Node*> users = v->users;
  for (Node* user : users) {
    if (user == keep) continue;
    for (size_t slot = 0; slot < user->inputs.size(); ++slot)
      if (user->inputs[slot] == v) g.set_input(user, static_cast<int>(slot), with);
  }
}

void quantize_weights(Graph& g, const Selection& selection, bool reduce_range) {
  for (size_t i = 0; i < selection.compute.size(); ++i) {
    Node* n = selection.compute[i];
    const int axis = selection.channel_axes[i];
    Value* w = n->inputs[1];
    const QuantizedWeight q = quantize_weight(w->constant, axis, reduce_range);
    const std::string base = w->name + "_quantized";
    Value* values = g.add_initializer(g.fresh_name(base), q.values);
    Value* scales = g.add_initializer(g.fresh_name(base + "_scale"), q.scales);
    Value* zero_points = g.add_initializer(g.fresh_name(base + "_zero_point"), q.zero_points);
    Node* dq = g.add_node("DequantizeLinear", {values, scales, zero_points}, {{"axis", int64_t{axis}}},
                          g.fresh_name(n->name + "_weight_dequantize"));
    dq->outputs[0]->info = ops::TensorInfo{DType::kFloat32, w->constant.shape()};
    g.set_input(n, 1, dq->outputs[0]);
  }
  g.remove_unused_values();
}

}  // namespace

graph::Graph quantize_model(graph::Graph model, const CalibrationBatches& batches,
                            const QuantizeOptions& options, CalibrationResult* calibration) {
  const CalibMode mode = parse_calib_mode(options.calib_mode);
  KILN_CHECK(options.activation_dtype == "auto" || options.activation_dtype == "int8" ||
                 options.activation_dtype == "uint8",
             ErrorCode::kInvalidArgument,
             "quantize_model: activation_dtype: expected \"auto\", \"int8\" or \"uint8\", got \"",
             options.activation_dtype, "\"");
  Graph& g = model;
  graph::simplify_unfused(g);

  const Selection selection = select(g, options);
  CalibrationResult result;
  const std::vector<TensorStatistics> stats =
      collect_statistics(g, selection.activations, batches, options, result.batches);

  // Thresholds: each value's own, or those of the value it passes through unchanged.
  std::map<const Value*, size_t> index;
  for (size_t i = 0; i < selection.activations.size(); ++i) index[selection.activations[i]] = i;
  const auto source = [&](const Value* v) {
    while (selection.shares_with.count(v)) v = selection.shares_with.at(v);
    return v;
  };
  for (Value* v : selection.activations) {
    if (selection.shares_with.count(v)) continue;
    const TensorStatistics& s = stats[index.at(v)];
    const bool is_unsigned =
        options.activation_dtype == "uint8" || (options.activation_dtype == "auto" && s.min() >= 0);
    // 511 entropy levels only where the lower half of the histogram is empty, as MXNet counts them.
    float t = threshold(s, mode, is_unsigned && s.min() >= 0, options.percentile);
    if (!(t > 0)) t = 1.0f;  // a tensor of zeros: any scale represents it
    result.thresholds[v->name] = t;
    result.unsigned_tensors[v->name] = is_unsigned;
  }
  for (Value* v : selection.activations) {
    result.thresholds[v->name] = result.thresholds.at(source(v)->name);
    result.unsigned_tensors[v->name] = result.unsigned_tensors.at(source(v)->name);
  }

  // The QDQ rewrite: a QuantizeLinear -> DequantizeLinear pair after each calibrated value, read
  // by all its readers (graph outputs keep the float value).
  for (Value* v : selection.activations) {
    const float t = result.thresholds.at(v->name);
    const bool is_unsigned = result.unsigned_tensors.at(v->name);
    const float scale = t / (is_unsigned ? 255.0f : 127.0f);
    Value* s = g.add_initializer(g.fresh_name(v->name + "_scale"), Tensor::scalar(scale, DType::kFloat32));
    Value* z = g.add_initializer(g.fresh_name(v->name + "_zero_point"),
                                 Tensor::scalar(0, is_unsigned ? DType::kUInt8 : DType::kInt8));
    Node* q = g.add_node("QuantizeLinear", {v, s, z}, {}, g.fresh_name(v->name + "_quantize"));
    Node* dq =
        g.add_node("DequantizeLinear", {q->outputs[0], s, z}, {}, g.fresh_name(v->name + "_dequantize"));
    redirect_reads(g, v, dq->outputs[0], q);
  }
  quantize_weights(g, selection, options.reduce_range);
  g.infer_shapes(/*allow_unknown=*/true);
  g.verify();
  if (calibration) *calibration = std::move(result);
  return model;
}

graph::Graph quantize_dynamic(graph::Graph model, const QuantizeOptions& options) {
  Graph& g = model;
  graph::simplify_unfused(g);
  Selection selection;
  pick_nodes(g, options, {"MatMul", "Gemm"}, selection);
  // One DynamicQuantizeLinear -> DequantizeLinear per activation, read by the selected nodes only.
  std::map<Value*, Value*> dequantized;
  for (Node* n : selection.compute) {
    Value* x = n->inputs[0];
    auto it = dequantized.find(x);
    if (it == dequantized.end()) {
      Node* q = g.add_node("DynamicQuantizeLinear", {x}, {}, g.fresh_name(x->name + "_dynamic_quantize"));
      Node* dq = g.add_node("DequantizeLinear", {q->outputs[0], q->outputs[1], q->outputs[2]}, {},
                            g.fresh_name(x->name + "_dequantize"));
      it = dequantized.emplace(x, dq->outputs[0]).first;
    }
    g.set_input(n, 0, it->second);
  }
  quantize_weights(g, selection, options.reduce_range);
  g.infer_shapes(/*allow_unknown=*/true);
  g.verify();
  return model;
}

CalibrationResult quantize_model_file(const std::string& model_path, const std::string& calib_folder,
                                      const std::string& output_path, const QuantizeOptions& options) {
  CalibrationResult result;
  const Graph quantized =
      quantize_model(deploy::load_graph(model_path), npy_folder_batches(calib_folder), options, &result);
  onnx::export_model(quantized, output_path);
  return result;
}

// kiln info --nodes lists the names with their ops.
void check_excluded_nodes(const Graph& g, const QuantizeOptions& options) {
  std::set<std::string> missing(options.excluded_node_names.begin(), options.excluded_node_names.end());
  for (const Node* n : g.topological_order()) missing.erase(n->name);
  if (missing.empty()) return;
  std::string some;
  int listed = 0;
  for (const Node* n : g.topological_order()) {
    if (n->name.empty()) continue;
    if (listed++ == 8) {
      some += ", ...";
      break;
    }
    some += (some.empty() ? "'" : ", '") + n->name + "'";
  }
  raise(ErrorCode::kInvalidArgument, "quantize: excluded node '", *missing.begin(),
        "' is not a node of the model (its nodes: ", some, ")");
}

void quantize_dynamic_file(const std::string& model_path, const std::string& output_path,
                           const QuantizeOptions& options) {
  onnx::export_model(quantize_dynamic(deploy::load_graph(model_path), options), output_path);
}

}  // namespace kiln::quantization
