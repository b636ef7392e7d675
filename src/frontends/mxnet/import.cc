// The MXNet importer's driver: resolves variables into graph inputs and initializers, runs each
// node's converter in file order (MXNet stores nodes topologically), keeps shapes inferred as it
// goes (Reshape needs its input's), and reports every node that cannot be imported at once.
#include "frontends/mxnet/import.h"

#include <algorithm>
#include <sstream>

#include "frontends/mxnet/convert.h"
#include "frontends/mxnet/export.h"
#include "kiln/error.hpp"

namespace kiln::mxnet {
namespace {

const ConverterTable& converters() {
  static const ConverterTable table = [] {
    ConverterTable t;
    add_nn_converters(t);
    add_vision_converters(t);
    add_tensor_converters(t);
    add_kiln_converters(t);
    return t;
  }();
  return table;
}

class Importer {
 public:
  Importer(const MxnetSymbol& symbol, const NamedTensors& params, const std::string& model_name,
           const std::map<std::string, Shape>& input_shapes)
      : symbol_(symbol),
        input_shapes_(input_shapes),
        values_(symbol.nodes.size()),
        failed_(symbol.nodes.size()) {
    graph_.name = model_name;
    for (size_t i = 0; i < params.tensors.size() && i < params.names.size(); ++i) {
      std::string name = params.names[i];
      if (name.rfind("arg:", 0) == 0 || name.rfind("aux:", 0) == 0) name = name.substr(4);
      params_[name] = params.tensors[i];
    }
  }

  graph::Graph run() {
    for (size_t i = 0; i < symbol_.nodes.size(); ++i)
      if (symbol_.nodes[i].op != "null") convert(static_cast<int>(i));
    std::vector<graph::Value*> outputs;
    for (const MxnetSymbol::Entry& head : symbol_.heads) {
      const MxnetSymbol::Node& node = symbol_.nodes[static_cast<size_t>(head.node)];
      if (node.op != "null" && head.index >= num_visible_outputs(node) &&
          !failed_[static_cast<size_t>(head.node)])
        problems_.push_back(node.op + " '" + node.name + "': output " + std::to_string(head.index) +
                            " is a hidden output (a training-time state), which the inference graph lacks");
      else if (!failed_[static_cast<size_t>(head.node)])
        outputs.push_back(resolve(head));
    }
    if (!problems_.empty()) {
      std::ostringstream os;
      os << "mxnet model '" << graph_.name << "': " << problems_.size()
         << (problems_.size() == 1 ? " node cannot" : " nodes cannot") << " be imported:";
      for (const std::string& p : problems_) os << "\n  " << p;
      raise(all_unsupported_ ? ErrorCode::kUnsupported : ErrorCode::kInvalidArgument, os.str());
    }
    graph_.set_outputs(outputs);
    graph_.verify();
    return std::move(graph_);
  }

 private:
  graph::Value* resolve(const MxnetSymbol::Entry& e) {
    const auto n = static_cast<size_t>(e.node);
    const MxnetSymbol::Node& node = symbol_.nodes[n];
    if (node.op == "null") {
      if (values_[n].empty()) values_[n].push_back(make_variable(node));
      return values_[n][0];
    }
    KILN_CHECK(static_cast<size_t>(e.index) < values_[n].size(), ErrorCode::kInvalidArgument, node.op, " '",
               node.name, "': output ", e.index, " is read but the node shows ", values_[n].size());
    return values_[n][static_cast<size_t>(e.index)];
  }

  graph::Value* make_variable(const MxnetSymbol::Node& node) {
    if (const auto it = params_.find(node.name); it != params_.end())
      return graph_.add_initializer(node.name, it->second);
    const MxnetAttrs attrs(node.attrs, "variable '" + node.name + "'");
    const DType dtype = attrs.has("__dtype__") ? dtype_from_mxnet_flag(attrs.get_int("__dtype__", 0),
                                                                       "variable '" + node.name + "'")
                                               : DType::kFloat32;
    if (const auto it = input_shapes_.find(node.name); it != input_shapes_.end())
      return graph_.add_input(node.name, ops::TensorInfo{dtype, it->second});
    if (attrs.has("__shape__")) {
      std::vector<int64_t> dims = attrs.get_ints("__shape__");
      // MXNet 1.x (without numpy semantics) writes 0 for an unknown dimension.
      for (int64_t& d : dims)
        if (d <= 0) d = Shape::kUnknown;
      if (!dims.empty()) return graph_.add_input(node.name, ops::TensorInfo{dtype, Shape(dims)});
    }
    return graph_.add_input(node.name);
  }

  void convert(int index) {
    const MxnetSymbol::Node& node = symbol_.nodes[static_cast<size_t>(index)];
    const bool poisoned =
        std::any_of(node.inputs.begin(), node.inputs.end(),
                    [&](const MxnetSymbol::Entry& e) { return failed_[static_cast<size_t>(e.node)]; });
    const auto it = converters().find(node.op);
    if (it == converters().end()) {
      fail(index, node.op + " '" + node.name + "': Kiln has no converter for MXNet op " + node.op, true);
      return;
    }
    ConvertContext ctx(graph_, node, [this](const MxnetSymbol::Entry& e) { return resolve(e); });
    try {
      if (poisoned) raise(ErrorCode::kUnsupported, "an input cannot be imported");
      it->second(ctx);
      KILN_CHECK(static_cast<int>(ctx.outputs().size()) == num_visible_outputs(node), ErrorCode::kInternal,
                 ctx.label(), ": converter made ", ctx.outputs().size(), " outputs");
      values_[static_cast<size_t>(index)] = ctx.outputs();
    } catch (const Error& e) {
      // A node fed by one that failed usually fails for that reason alone: report only the first.
      if (poisoned)
        failed_[static_cast<size_t>(index)] = true;
      else
        fail(index, e.what(), e.code() == ErrorCode::kUnsupported);
    }
  }

  void fail(int index, const std::string& message, bool unsupported) {
    failed_[static_cast<size_t>(index)] = true;
    problems_.push_back(message);
    all_unsupported_ = all_unsupported_ && unsupported;
  }

  const MxnetSymbol& symbol_;
  const std::map<std::string, Shape>& input_shapes_;
  std::map<std::string, Tensor> params_;
  graph::Graph graph_;
  std::vector<std::vector<graph::Value*>> values_;  // per MXNet node, its visible outputs
  std::vector<bool> failed_;
  std::vector<std::string> problems_;
  bool all_unsupported_ = true;
};

}  // namespace

ConvertContext::ConvertContext(graph::Graph& graph, const MxnetSymbol::Node& node, Resolver resolve)
    : graph_(graph),
      node_(node),
      attrs_(node.attrs, node.op + " '" + node.name + "'"),
      resolve_(std::move(resolve)) {}

std::string ConvertContext::label() const {
  return node_.op + " '" + node_.name + "'";
}

graph::Value* ConvertContext::input(int i) {
  KILN_CHECK(i < num_inputs(), ErrorCode::kInvalidArgument, label(), ": expected at least ", i + 1,
             " inputs, got ", num_inputs());
  return resolve_(node_.inputs[static_cast<size_t>(i)]);
}

Shape ConvertContext::input_shape(int i, const std::string& why) {
  graph::Value* v = input(i);
  if (!v->info || !v->info->shape.is_known())
    unsupported("the shape of input " + std::to_string(i) + " ('" + v->name +
                "') is not known at import, and " + why + " needs it (give the input's shape)");
  return v->info->shape;
}

int ConvertContext::input_rank(int i, const std::string& why) {
  graph::Value* v = input(i);
  if (!v->info)
    unsupported("the rank of input " + std::to_string(i) + " ('" + v->name +
                "') is not known at import, and " + why + " needs it (give the input's shape)");
  return v->info->shape.ndim();
}

DType ConvertContext::input_dtype(int i) {
  graph::Value* v = input(i);
  return v->info ? v->info->dtype : DType::kFloat32;
}

graph::Node* ConvertContext::add_node(const std::string& op, std::vector<graph::Value*> inputs, AttrMap attrs,
                                      const std::string& suffix, int num_outputs) {
  const std::string name = suffix.empty() ? node_.name : graph_.fresh_name(node_.name + "/" + suffix);
  graph::Node* n = graph_.add_node(op, std::move(inputs), std::move(attrs), name, num_outputs);
  created_.push_back(n);
  graph_.infer_node(n, /*allow_unknown=*/true);
  return n;
}

graph::Value* ConvertContext::add(const std::string& op, std::vector<graph::Value*> inputs, AttrMap attrs,
                                  const std::string& suffix) {
  return add_node(op, std::move(inputs), std::move(attrs), suffix, -1)->outputs[0];
}

graph::Value* ConvertContext::constant(Tensor value, const std::string& suffix) {
  return graph_.add_initializer(graph_.fresh_name(node_.name + "/" + suffix), std::move(value));
}

graph::Value* ConvertContext::ints(const std::vector<int64_t>& values, const std::string& suffix) {
  return constant(Tensor::from_vector(values, Shape{static_cast<int64_t>(values.size())}), suffix);
}

graph::Value* ConvertContext::scalar(double value, DType dtype, const std::string& suffix) {
  return constant(Tensor::full(Shape{}, value, dtype), suffix);
}

void ConvertContext::set_outputs(const std::vector<graph::Value*>& outputs) {
  outputs_.clear();
  for (size_t i = 0; i < outputs.size(); ++i) {
    graph::Value* v = outputs[i];
    const std::string target = output_name(node_, static_cast<int>(i));
    const bool ours =
        v->producer && std::find(created_.begin(), created_.end(), v->producer) != created_.end();
    // A pass-through (Dropout, identity) must not rename the value it passes on: copy it.
    if (!ours)
      v = add("Identity", {v}, {}, outputs.size() == 1 && !graph_.find_node(node_.name) ? "" : "identity");
    graph_.rename_value(v, target);
    outputs_.push_back(v);
  }
}

void ConvertContext::unsupported(const std::string& reason) const {
  raise(ErrorCode::kUnsupported, label(), ": ", reason);
}

graph::Graph import_symbol(const MxnetSymbol& symbol, const NamedTensors& params,
                           const std::string& model_name) {
  return import_symbol(symbol, params, model_name, {});
}

graph::Graph import_symbol(const MxnetSymbol& symbol, const NamedTensors& params,
                           const std::string& model_name, const std::map<std::string, Shape>& input_shapes) {
  return Importer(symbol, params, model_name, input_shapes).run();
}

int num_visible_outputs(const MxnetSymbol::Node& node) {
  if (node.op.rfind(kKilnOpPrefix, 0) == 0) {
    const MxnetAttrs attrs(node.attrs, node.op + " '" + node.name + "'");
    return static_cast<int>(attrs.get_int(kNumOutputsAttr, 1));
  }
  if (node.op == "SliceChannel" || node.op == "split") {
    const MxnetAttrs attrs(node.attrs, node.op + " '" + node.name + "'");
    return static_cast<int>(attrs.require_int("num_outputs"));
  }
  return 1;
}

std::string output_name(const MxnetSymbol::Node& node, int index) {
  if (node.op == "null") return node.name;
  return num_visible_outputs(node) == 1 ? node.name + "_output"
                                        : node.name + "_output" + std::to_string(index);
}

std::vector<int> auxiliary_inputs(const std::string& op) {
  if (op == "BatchNorm" || op == "_contrib_SyncBatchNorm" || op == "BatchNorm_v1") return {3, 4};
  return {};
}

std::vector<int64_t> resolve_reshape(const Shape& input, const std::vector<int64_t>& spec, bool reverse,
                                     const std::string& what) {
  std::vector<int64_t> src = input.dims(), want = spec;
  if (reverse) {
    std::reverse(src.begin(), src.end());
    std::reverse(want.begin(), want.end());
  }
  const auto bad = [&](const std::string& why) {
    raise(ErrorCode::kShapeMismatch, what, ": shape ", Shape(spec), " does not fit input ", input, ": ", why);
  };
  std::vector<int64_t> out;
  size_t i = 0;  // the next input dimension
  int unknown = -1;
  for (size_t j = 0; j < want.size(); ++j) {
    const int64_t v = want[j];
    if (v > 0) {
      out.push_back(v);
      ++i;
    } else if (v == 0) {
      if (i >= src.size()) bad("0 copies a dimension the input lacks");
      out.push_back(src[i++]);
    } else if (v == -1) {
      if (unknown >= 0) bad("more than one -1");
      unknown = static_cast<int>(out.size());
      out.push_back(1);
      ++i;
    } else if (v == -2) {
      for (; i < src.size(); ++i) out.push_back(src[i]);
    } else if (v == -3) {
      if (i + 1 >= src.size()) bad("-3 merges two dimensions the input lacks");
      out.push_back(src[i] * src[i + 1]);
      i += 2;
    } else if (v == -4) {
      if (j + 2 >= want.size() || i >= src.size())
        bad("-4 needs two values after it and a dimension to split");
      int64_t a = want[j + 1], b = want[j + 2];
      if (a == -1 && b == -1) bad("-4 with two -1");
      if ((a < 0 && a != -1) || (b < 0 && b != -1)) bad("-4 split into a negative dimension");
      if ((a == -1 && b == 0) || (b == -1 && a == 0)) bad("-4 infers a dimension from a split of size 0");
      if (a == -1) a = src[i] / b;
      if (b == -1) b = src[i] / a;
      if (a * b != src[i]) bad("-4 split does not multiply to " + std::to_string(src[i]));
      out.push_back(a);
      out.push_back(b);
      ++i;
      j += 2;
    } else {
      bad("unknown special value " + std::to_string(v));
    }
  }
  if (unknown >= 0) {
    int64_t known = 1;
    for (size_t k = 0; k < out.size(); ++k)
      if (static_cast<int>(k) != unknown) known *= out[k];
    if (known == 0 || input.numel() % known != 0) bad("-1 cannot be inferred");
    out[static_cast<size_t>(unknown)] = input.numel() / known;
  }
  int64_t total = 1;
  for (int64_t d : out) total *= d;
  if (total != input.numel()) bad("the element counts differ");
  if (reverse) std::reverse(out.begin(), out.end());
  return out;
}

}  // namespace kiln::mxnet
