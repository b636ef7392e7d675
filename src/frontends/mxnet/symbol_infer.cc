// Symbol::infer_shape: walks the nodes in order; before each op it deduces the shapes of its
// parameter variables from the data's (MXNet's backward inference for weights), then gets the
// output shapes by importing that one node into a Graph and running Kiln's own shape functions,
// so the Symbol API and the importer cannot disagree. A variable's shape not given is taken from
// its `__shape__` attribute when that is complete; dtypes other than float32 (a variable's `__dtype__`,
// an op's int8 output) follow the values, so that typed ops such as `_kiln_QuantizeLinear` import.
#include <map>
#include <numeric>
#include <optional>

#include "frontends/mxnet/attr_parse.h"
#include "frontends/mxnet/import.h"
#include "kiln/error.hpp"
#include "kiln/symbol.hpp"

namespace kiln {

using mxnet::MxnetSymbol;

namespace {

using ShapeMap = std::map<std::pair<int, int>, Shape>;  // (node, output) -> shape
using DTypeMap = std::map<std::pair<int, int>, DType>;  // (node, output) -> dtype, where not float32

// Shapes of an op's parameter inputs (by input index) that follow from its data shape.
std::map<int, Shape> parameter_shapes(const MxnetSymbol::Node& node, const Shape& data) {
  const mxnet::MxnetAttrs a(node.attrs, node.op + " '" + node.name + "'");
  std::map<int, Shape> out;
  const auto with_kernel = [&](int64_t d0, int64_t d1) {
    std::vector<int64_t> dims{d0, d1};
    for (int64_t k : a.require_ints("kernel")) dims.push_back(k);
    return Shape(dims);
  };
  if (node.op == "Convolution" && data.ndim() >= 2) {
    const int64_t f = a.require_int("num_filter");
    out[1] = with_kernel(f, data[1] / a.get_int("num_group", 1));
    out[2] = Shape{f};
  } else if (node.op == "Deconvolution" && data.ndim() >= 2) {
    const int64_t f = a.require_int("num_filter");
    out[1] = with_kernel(data[1], f / a.get_int("num_group", 1));
    out[2] = Shape{f};
  } else if (node.op == "FullyConnected" && data.ndim() >= 1) {
    const int64_t h = a.require_int("num_hidden");
    const int64_t in = a.get_bool("flatten", true)
                           ? std::accumulate(data.begin() + 1, data.end(), int64_t{1}, std::multiplies<>())
                           : data[data.ndim() - 1];
    out[1] = Shape{h, in};
    out[2] = Shape{h};
  } else if (node.op == "BatchNorm" && data.ndim() >= 2) {
    const int axis = normalize_axis(a.get_int("axis", 1), data.ndim(), node.name);
    for (int i = 1; i <= 4; ++i) out[i] = Shape{data[axis]};
  } else if (node.op == "LeakyReLU" && a.get_string("act_type", "leaky") == "prelu" && data.ndim() >= 2) {
    out[1] = Shape{data[1]};
  } else if (node.op == "Embedding") {
    out[1] = Shape{a.require_int("input_dim"), a.require_int("output_dim")};
  } else if (node.op == "SoftmaxOutput" && data.ndim() >= 1) {
    std::vector<int64_t> label = data.dims();
    label.erase(a.get_bool("multi_output", false) && data.ndim() > 1 ? label.begin() + 1 : label.end() - 1);
    out[1] = Shape(label);
  }
  return out;
}

// The shapes of one op node's visible outputs, from Kiln's shape inference on that node alone;
// `dtypes` holds the inputs' dtypes other than float32 and receives the outputs'.
std::vector<std::optional<Shape>> output_shapes(const MxnetSymbol::Node& node,
                                                const std::vector<std::optional<Shape>>& inputs,
                                                std::map<int, DType>& dtypes) {
  MxnetSymbol one;
  MxnetSymbol::Node op = node;
  std::map<std::string, Shape> known;
  for (size_t i = 0; i < inputs.size(); ++i) {
    const std::string name = "__input" + std::to_string(i) + "__";
    std::map<std::string, std::string> attrs;
    if (const auto it = dtypes.find(static_cast<int>(i)); it != dtypes.end())
      attrs["__dtype__"] = std::to_string(mxnet::mxnet_flag_from_dtype(it->second));
    one.nodes.push_back({"null", name, attrs, {}});
    if (inputs[i]) known[name] = *inputs[i];
    op.inputs[i] = {static_cast<int>(i), 0, 0};
  }
  one.nodes.push_back(op);
  const int n = mxnet::num_visible_outputs(node);
  for (int i = 0; i < n; ++i) one.heads.push_back({static_cast<int>(inputs.size()), i, 0});
  std::vector<std::optional<Shape>> out(static_cast<size_t>(n));
  graph::Graph g;
  try {
    g = mxnet::import_symbol(one, {}, node.name, known);
  } catch (const Error& e) {
    if (e.code() == ErrorCode::kUnsupported) return out;  // e.g. a Reshape of a still unknown shape
    throw;
  }
  g.infer_shapes(/*allow_unknown=*/true);
  for (int i = 0; i < n; ++i) {
    const graph::Value* v = g.outputs()[static_cast<size_t>(i)];
    if (v->info && v->info->shape.is_known()) out[static_cast<size_t>(i)] = v->info->shape;
  }
  dtypes.clear();
  for (int i = 0; i < n; ++i) {
    const graph::Value* v = g.outputs()[static_cast<size_t>(i)];
    if (v->info && v->info->dtype != DType::kFloat32) dtypes[i] = v->info->dtype;
  }
  return out;
}

// A variable's `__shape__` when it names every dimension, as MXNet takes it for a variable whose
// shape is not given. "()" is a 0-d array, as under MXNet's numpy shape semantics (Kiln's exporter
// never writes it for an unknown shape); a 0 (MXNet 1.x's unknown dimension) makes it no hint.
std::optional<Shape> shape_attr(const MxnetSymbol::Node& variable) {
  const auto it = variable.attrs.find("__shape__");
  if (it == variable.attrs.end()) return std::nullopt;
  const mxnet::MxnetAttrs a(variable.attrs, "variable '" + variable.name + "'");
  const std::vector<int64_t> dims = a.require_ints("__shape__");
  for (int64_t d : dims)
    if (d <= 0) return std::nullopt;
  return Shape(dims);
}

}  // namespace

Symbol::InferredShapes Symbol::infer_shape(const std::map<std::string, Shape>& known) const {
  const MxnetSymbol s = to_mxnet();
  ShapeMap shapes;
  DTypeMap dtypes;
  for (size_t i = 0; i < s.nodes.size(); ++i) {
    const MxnetSymbol::Node& node = s.nodes[i];
    const int id = static_cast<int>(i);
    if (node.op == "null") {
      if (const auto it = known.find(node.name); it != known.end()) {
        shapes[{id, 0}] = it->second;
      } else if (const auto hint = shape_attr(node)) {
        shapes[{id, 0}] = *hint;
      }
      if (node.attrs.count("__dtype__")) {
        const std::string what = "variable '" + node.name + "'";
        dtypes[{id, 0}] =
            mxnet::dtype_from_mxnet_flag(mxnet::MxnetAttrs(node.attrs, what).get_int("__dtype__", 0), what);
      }
      continue;
    }
    // Parameters first, so that the op sees all its inputs.
    if (!node.inputs.empty()) {
      const auto data = shapes.find({node.inputs[0].node, node.inputs[0].index});
      if (data != shapes.end())
        for (const auto& [slot, shape] : parameter_shapes(node, data->second)) {
          if (static_cast<size_t>(slot) >= node.inputs.size()) continue;
          const MxnetSymbol::Entry& e = node.inputs[static_cast<size_t>(slot)];
          if (s.nodes[static_cast<size_t>(e.node)].op == "null" && !shapes.count({e.node, e.index}))
            shapes[{e.node, e.index}] = shape;
        }
    }
    std::vector<std::optional<Shape>> inputs;
    std::map<int, DType> types;
    for (const MxnetSymbol::Entry& e : node.inputs) {
      const auto it = shapes.find({e.node, e.index});
      if (const auto t = dtypes.find({e.node, e.index}); t != dtypes.end())
        types[static_cast<int>(inputs.size())] = t->second;
      inputs.push_back(it == shapes.end() ? std::nullopt : std::optional<Shape>(it->second));
    }
    const auto outs = output_shapes(node, inputs, types);
    for (const auto& [o, dtype] : types) dtypes[{id, o}] = dtype;
    for (size_t o = 0; o < outs.size(); ++o)
      if (outs[o]) shapes[{id, static_cast<int>(o)}] = *outs[o];
  }
  InferredShapes result;
  std::map<std::string, int> variable;
  for (size_t i = 0; i < s.nodes.size(); ++i)
    if (s.nodes[i].op == "null") variable[s.nodes[i].name] = static_cast<int>(i);
  const auto take = [&](std::pair<int, int> key, std::vector<Shape>& into) {
    const auto it = shapes.find(key);
    result.complete = result.complete && it != shapes.end();
    into.push_back(it == shapes.end() ? Shape{} : it->second);
  };
  for (const std::string& name : list_arguments()) take({variable.at(name), 0}, result.arg_shapes);
  for (const MxnetSymbol::Entry& head : s.heads) take({head.node, head.index}, result.out_shapes);
  for (const std::string& name : list_auxiliary_states()) take({variable.at(name), 0}, result.aux_shapes);
  return result;
}

}  // namespace kiln
