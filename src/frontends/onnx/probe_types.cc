// Probing for the types inference leaves unknown; see probe_types.h.
#include "frontends/onnx/probe_types.h"

#include <map>
#include <set>

#include "graph/passes/passes.h"
#include "kiln/error.hpp"

namespace kiln::onnx {
namespace {

// Sizes for the free dimensions, one probe each. 1 catches dimensions a model clamps (x[:, :16]
// has 16 columns only when x has at least 16); the others are multiples of 32, which detection
// models whose feature maps are downsampled and upsampled again need, and differ so that free
// dimensions show as such.
constexpr int64_t kProbeSizes[] = {1, 64, 96};

// A probe only needs the shape arithmetic folded, not large constant computations.
constexpr size_t kProbeFoldBytes = size_t{1} << 16;

using Infos = std::map<std::string, graph::TensorInfo>;

// The types inference finds with every free input dimension set to `size`; nullopt when the
// graph rejects that size.
std::optional<Infos> probe(const graph::Graph& graph, int64_t size) {
  graph::Graph copy = graph.clone();
  for (graph::Value* input : copy.inputs()) {
    for (int axis = 0; axis < input->info->shape.ndim(); ++axis) {
      if (input->info->shape[axis] < 0) input->info->shape[axis] = size;
    }
  }
  try {
    copy.infer_shapes(/*allow_unknown=*/true);
    graph::constant_folding_pass({.max_output_bytes = kProbeFoldBytes}).run(copy);
    copy.infer_shapes(/*allow_unknown=*/true);
  } catch (const Error&) {
    return std::nullopt;
  }
  Infos infos;
  for (const graph::Node* node : graph.nodes()) {
    for (const graph::Value* out : node->outputs) {
      const graph::Value* probed = copy.find_value(out->name);
      if (probed != nullptr && probed->info) infos.emplace(out->name, *probed->info);
    }
  }
  return infos;
}

// What all probes agree on, or nullopt when one lacks the value or they disagree on its dtype
// or rank. A dimension is static where the probes agree, if there were at least two (or the graph
// has no free input dimension, so that one probe is exact).
std::optional<graph::TensorInfo> agreed(const std::vector<Infos>& probes, const std::string& name,
                                        bool exact) {
  std::optional<graph::TensorInfo> result;
  for (const Infos& infos : probes) {
    auto it = infos.find(name);
    if (it == infos.end()) return std::nullopt;
    const graph::TensorInfo& info = it->second;
    if (!result) {
      result = info;
      continue;
    }
    if (info.dtype != result->dtype || info.shape.ndim() != result->shape.ndim()) return std::nullopt;
    for (int axis = 0; axis < info.shape.ndim(); ++axis) {
      if (info.shape[axis] != result->shape[axis]) result->shape[axis] = Shape::kUnknown;
    }
  }
  if (result && probes.size() < 2 && !exact) {
    for (int axis = 0; axis < result->shape.ndim(); ++axis) result->shape[axis] = Shape::kUnknown;
  }
  return result;
}

}  // namespace

void infer_unknown_types_by_probing(graph::Graph& graph) {
  std::vector<graph::Value*> unknown;
  for (graph::Node* node : graph.nodes()) {
    for (graph::Value* out : node->outputs)
      if (!out->info) unknown.push_back(out);
  }
  if (unknown.empty()) return;
  bool any_free = false;
  for (const graph::Value* input : graph.inputs()) {
    if (!input->info) return;  // nothing to probe with
    any_free = any_free || !input->info->shape.is_known();
  }
  std::vector<Infos> probes;
  for (int64_t size : kProbeSizes) {
    if (auto infos = probe(graph, size)) probes.push_back(std::move(*infos));
    if (!any_free && !probes.empty()) break;  // every probe would be the same
  }
  if (probes.empty()) return;
  for (graph::Value* v : unknown) v->info = agreed(probes, v->name, /*exact=*/!any_free);
}

DType untyped_output_dtype(const graph::Node& node, int output) {
  static const std::set<std::string> kBoolOps{
      "Equal", "Greater", "GreaterOrEqual", "Less", "LessOrEqual", "And", "Or",
      "Xor",   "Not",     "IsInf",          "IsNaN"};
  static const std::set<std::string> kInt64Ops{"Shape", "Size", "ArgMax", "ArgMin"};
  const auto input_dtype = [&](size_t i) {
    const graph::Value* v = i < node.inputs.size() ? node.inputs[i] : nullptr;
    return v != nullptr && v->info ? v->info->dtype : DType::kFloat32;
  };
  // Control flow gives what its subgraph gives: a branch's outputs, a body's after its condition.
  const auto body_output = [&](const std::string& attr, size_t offset) {
    const graph::Graph& body = *node.subgraphs.at(attr);
    const size_t k = offset + static_cast<size_t>(output);
    return k < body.outputs().size() && body.outputs()[k]->info ? body.outputs()[k]->info->dtype
                                                                : DType::kFloat32;
  };
  if (node.op == "If") return body_output("then_branch", 0);
  if (node.op == "Loop") return body_output("body", 1);
  if (node.op == "Scan") return body_output("body", 0);
  if (kBoolOps.count(node.op) || (node.op == "Dropout" && output == 1)) return DType::kBool;
  if (kInt64Ops.count(node.op) || ((node.op == "TopK" || node.op == "MaxPool") && output == 1))
    return DType::kInt64;
  if (node.op == "Cast")
    return dtype_from_onnx(
        static_cast<int>(std::get<int64_t>(node.attrs.at("to").coerced_to(AttrType::kInt, "to").variant())));
  if (node.op == "CastLike" || node.op == "Where") return input_dtype(1);
  if (node.op == "ConstantOfShape") {
    auto it = node.attrs.find("value");
    return it != node.attrs.end() ? std::get<Tensor>(it->second.variant()).dtype() : DType::kFloat32;
  }
  return input_dtype(0);
}

}  // namespace kiln::onnx
