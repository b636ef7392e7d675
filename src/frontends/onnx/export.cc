// The ONNX exporter: Graph -> ModelProto. See export.h for what is written and how problems are
// reported.
#include "frontends/onnx/export.h"
#include "frontends/onnx/domains.h"

#include <algorithm>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <set>
#include <sstream>

#include "frontends/onnx/opset_downgrade.h"
#include "frontends/onnx/probe_types.h"
#include "frontends/onnx/tensor_proto.h"
#include "graph/passes/passes.h"
#include "kiln/error.hpp"
#include "kiln/version.hpp"

namespace kiln::onnx {
namespace {

// The IR version of the ONNX release that introduced each opset (onnx.helper.VERSION_TABLE):
// the oldest that a runtime reading the opset must understand.
int64_t ir_version_for(int opset) {
  if (opset <= 14) return 7;
  if (opset <= 18) return 8;
  if (opset <= 20) return 9;
  if (opset <= 22) return 10;
  if (opset == 23) return 11;
  if (opset == 24) return 12;
  if (opset <= 27) return 13;
  return 14;
}

// The attribute as the op's schema declares its type (callers may have given 1 for 1.0).
AttrValue as_declared(const graph::Node& node, const std::string& name, const AttrValue& value) {
  for (const auto& spec : node.schema().attrs()) {
    if (spec.name == name) return value.coerced_to(spec.type, node.label() + ": attribute " + name);
  }
  return value;
}

void write_attribute(::onnx::AttributeProto* proto, const std::string& name, const AttrValue& value) {
  proto->set_name(name);
  std::visit(
      [&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, int64_t>) {
          proto->set_type(::onnx::AttributeProto::INT);
          proto->set_i(v);
        } else if constexpr (std::is_same_v<V, double>) {
          proto->set_type(::onnx::AttributeProto::FLOAT);
          proto->set_f(static_cast<float>(v));
        } else if constexpr (std::is_same_v<V, std::string>) {
          proto->set_type(::onnx::AttributeProto::STRING);
          proto->set_s(v);
        } else if constexpr (std::is_same_v<V, std::vector<int64_t>>) {
          proto->set_type(::onnx::AttributeProto::INTS);
          for (int64_t x : v) proto->add_ints(x);
        } else if constexpr (std::is_same_v<V, std::vector<double>>) {
          proto->set_type(::onnx::AttributeProto::FLOATS);
          for (double x : v) proto->add_floats(static_cast<float>(x));
        } else if constexpr (std::is_same_v<V, std::vector<std::string>>) {
          proto->set_type(::onnx::AttributeProto::STRINGS);
          for (const std::string& x : v) proto->add_strings(x);
        } else {
          proto->set_type(::onnx::AttributeProto::TENSOR);
          *proto->mutable_t() = tensor_to_proto(v, "");
        }
      },
      value.variant());
}

// A tensor type, or a sequence of such tensors, either perhaps optional; a free dimension gets
// `free_dim_name(axis)`, or stays unnamed when that is empty.
void write_type_proto(::onnx::TypeProto* type, DType dtype, ops::ValueKind kind, bool optional) {
  if (optional) type = type->mutable_optional_type()->mutable_elem_type();
  if (kind == ops::ValueKind::kSequence) type = type->mutable_sequence_type()->mutable_elem_type();
  type->mutable_tensor_type()->set_elem_type(dtype_to_onnx(dtype));
}

template <class NameFn>
void write_type(::onnx::ValueInfoProto* proto, DType dtype, const std::optional<Shape>& shape,
                NameFn free_dim_name, ops::ValueKind kind = ops::ValueKind::kTensor, bool optional = false) {
  write_type_proto(proto->mutable_type(), dtype, kind, optional);
  if (!shape || kind == ops::ValueKind::kSequence) return;
  ::onnx::TypeProto* type =
      optional ? proto->mutable_type()->mutable_optional_type()->mutable_elem_type() : proto->mutable_type();
  auto* tensor = type->mutable_tensor_type();
  auto* dims = tensor->mutable_shape();
  for (int axis = 0; axis < shape->ndim(); ++axis) {
    auto* dim = dims->add_dim();
    if ((*shape)[axis] >= 0) {
      dim->set_dim_value((*shape)[axis]);
    } else if (const std::string name = free_dim_name(axis); !name.empty()) {
      dim->set_dim_param(name);
    }
  }
}

std::string no_name(int) {
  return "";
}

// Writes one graph: the model's, or (by an exporter of its own) a subgraph of a control-flow node,
// which refers to the values it reads from outside by their names there.
class Exporter {
 public:
  Exporter(const graph::Graph& graph, int opset, std::string where)
      : graph_(graph.clone()), opset_(opset), where_(std::move(where)) {}

  ::onnx::ModelProto run() {
    KILN_CHECK(opset_ >= kOldestExportOpset && opset_ <= kNewestOpset, ErrorCode::kInvalidArgument, where_,
               ": opset ", opset_, " is outside the opsets Kiln exports (", kOldestExportOpset, " to ",
               kNewestOpset, ")");
    std::vector<std::string> problems = prepare();
    if (!problems.empty()) {
      std::ostringstream msg;
      msg << where_ << " to ONNX opset " << opset_ << ": " << problems.size()
          << (problems.size() == 1 ? " node cannot" : " nodes cannot") << " be written:";
      for (const auto& p : problems) msg << "\n  " << p;
      raise(ErrorCode::kUnsupported, msg.str());
    }

    ::onnx::ModelProto model;
    model.set_ir_version(ir_version_for(opset_));
    model.set_producer_name("kiln");
    model.set_producer_version(kVersion);
    auto* opset = model.add_opset_import();
    opset->set_domain("");
    opset->set_version(opset_);
    write_graph(model.mutable_graph(), 0);
    for (const auto& [domain, version] :
         {std::pair{kTrainingDomain, kTrainingDomainVersion}, std::pair{kMlDomain, kMlDomainVersion}}) {
      if (!uses_domain(model.graph(), domain)) continue;
      auto* entry = model.add_opset_import();
      entry->set_domain(domain);
      entry->set_version(version);
    }
    return model;
  }

 private:
  static bool uses_domain(const ::onnx::GraphProto& g, const std::string& domain) {
    for (const auto& node : g.node()) {
      if (node.domain() == domain) return true;
      for (const auto& attr : node.attribute())
        if (attr.has_g() && uses_domain(attr.g(), domain)) return true;
    }
    return false;
  }

  // Infers what can be, rewrites each node into the opset's form (and each subgraph, by its own
  // exporter); returns what cannot be written, one line per node.
  std::vector<std::string> prepare() {
    try {
      // Kiln's fused ops (from optimization at level all) are written as the standard ops they
      // stand for.
      graph::expand_fused_ops_pass().run(graph_);
      graph_.infer_shapes(/*allow_unknown=*/true);
      infer_unknown_types_by_probing(graph_);
    } catch (const Error& e) {
      throw Error(e.code(), where_ + ": " + e.what());
    }
    const std::vector<graph::Node*> order = graph_.topological_order();
    std::vector<std::string> problems;
    for (graph::Node* node : order) {
      try {
        nodes_.push_back(downgraded(*node));
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kUnsupported) throw Error(e.code(), where_ + ": " + e.what());
        problems.push_back(e.what());
      }
      for (const auto& [attr, subgraph] : node->subgraphs) {
        auto inner = std::make_shared<Exporter>(*subgraph, opset_,
                                                where_ + ": " + node->label() + " subgraph '" + attr + "'");
        for (const std::string& p : inner->prepare())
          problems.push_back(node->label() + " subgraph '" + attr + "': " + p);
        subgraph_writers_[{node->name, attr}] = std::move(inner);
      }
    }
    omit_unused_optional_outputs(order);
    return problems;
  }

  ExportedNode downgraded(const graph::Node& node) {
    ExportedNode out{node.op, node.name, {}, node.inputs, node.outputs};
    for (const auto& [name, value] : node.attrs) out.attrs.emplace(name, as_declared(node, name, value));
    DowngradeContext ctx(graph_, out, opset_);
    downgrade_to_opset(ctx);
    return out;
  }

  // Optional outputs nothing reads (BatchNormalization's running statistics, Dropout's mask) are
  // left out: older opsets do not allow some of them outside training.
  void omit_unused_optional_outputs(const std::vector<graph::Node*>& order) {
    std::set<const graph::Value*> read(graph_.outputs().begin(), graph_.outputs().end());
    for (const ExportedNode& node : nodes_) read.insert(node.inputs.begin(), node.inputs.end());
    for (size_t n = 0; n < nodes_.size(); ++n) {
      const auto& specs = order[n]->schema().outputs();
      auto& outputs = nodes_[n].outputs;
      for (size_t i = 0; i < outputs.size() && i < specs.size(); ++i) {
        if (specs[i].arity == ops::Arity::kOptional && !read.count(outputs[i])) outputs[i] = nullptr;
      }
      while (!outputs.empty() && outputs.back() == nullptr) outputs.pop_back();
    }
  }

  // The graph; a subgraph's last `num_captured` inputs are values of the graphs around it, which it
  // reads by their names there (`captured_names`) rather than as inputs of its own.
  void write_graph(::onnx::GraphProto* g, size_t num_captured,
                   const std::vector<std::string>& captured_names = {}) {
    const std::vector<graph::Value*> own_inputs(
        graph_.inputs().begin(), graph_.inputs().end() - static_cast<std::ptrdiff_t>(num_captured));
    for (size_t c = 0; c < num_captured; ++c) {
      graph::Value* v = graph_.inputs()[own_inputs.size() + c];
      KILN_CHECK(v->name == captured_names[c] || graph_.find_value(captured_names[c]) == nullptr,
                 ErrorCode::kUnsupported, where_, ": the value '", captured_names[c],
                 "' it reads from outside has the name of one of its own");
      graph_.rename_value(v, captured_names[c]);
    }
    g->set_name(graph_.name.empty() ? "kiln" : graph_.name);
    // Inputs sharing a dim_param promise ONNX Runtime equal sizes (it plans buffer reuse by them),
    // and Kiln no longer knows which free dimensions are equal: each gets its own name, except that
    // a free first axis is "N" when only one input has one.
    const auto& inputs = own_inputs;
    const auto free_first_axis = [](const graph::Value* v) {
      return v->info && v->info->shape.ndim() > 0 && v->info->shape[0] < 0;
    };
    const bool one_batch = std::count_if(inputs.begin(), inputs.end(), free_first_axis) == 1;
    for (const graph::Value* v : inputs) {
      auto* input = g->add_input();
      input->set_name(v->name);
      const auto free_dim = [&](int axis) {
        return axis == 0 && one_batch ? std::string("N") : v->name + "_dim" + std::to_string(axis);
      };
      // An input no declaration or inference typed is taken as float32, MXNet's default.
      if (v->info) {
        write_type(input, v->info->dtype, v->info->shape, free_dim, v->info->kind, v->info->optional);
      } else {
        write_type(input, DType::kFloat32, std::nullopt, free_dim);
      }
    }
    std::set<const graph::Value*> outputs(graph_.outputs().begin(), graph_.outputs().end());
    std::set<const graph::Value*> written_constants;
    for (const graph::Value* v : graph_.outputs()) {
      // An initializer that is a graph output is produced by a Constant node, as ONNX requires
      // graph outputs to be computed.
      if (v->is_constant() && written_constants.insert(v).second) {
        auto* node = g->add_node();
        node->set_op_type("Constant");
        node->set_name(v->name + "/constant");
        node->add_output(v->name);
        write_attribute(node->add_attribute(), "value", v->constant);
      }
    }
    for (const graph::Value* v : own_inputs) {
      if (v->is_constant() && written_constants.insert(v).second)
        *g->add_initializer() = tensor_to_proto(v->constant, v->name);
    }
    for (const ExportedNode& node : nodes_) {
      for (const graph::Value* in : node.inputs) {
        if (in != nullptr && in->is_constant() && written_constants.insert(in).second)
          *g->add_initializer() = tensor_to_proto(in->constant, in->name);
      }
    }
    for (const ExportedNode& node : nodes_) write_node(g->add_node(), node);
    for (const graph::Value* v : graph_.outputs()) {
      auto* output = g->add_output();
      output->set_name(v->name);
      if (v->info) {
        write_type(output, v->info->dtype, v->info->shape, no_name, v->info->kind, v->info->optional);
      } else {
        const DType dtype =
            v->producer != nullptr ? untyped_output_dtype(*v->producer, v->producer_output) : DType::kFloat32;
        write_type(output, dtype, std::nullopt, no_name);
      }
    }
    for (const ExportedNode& node : nodes_) {
      for (const graph::Value* v : node.outputs) {
        if (v == nullptr || !v->info || outputs.count(v)) continue;
        auto* info = g->add_value_info();
        info->set_name(v->name);
        write_type(info, v->info->dtype, v->info->shape, no_name, v->info->kind, v->info->optional);
      }
    }
  }

  // A control-flow node's captured inputs are not written: its subgraphs read them by name.
  void write_node(::onnx::NodeProto* proto, const ExportedNode& node) {
    const graph::Node* source = graph_.find_node(node.name);
    const size_t captured = source != nullptr ? static_cast<size_t>(source->num_captured) : 0;
    const size_t own = node.inputs.size() - captured;
    proto->set_name(node.name);
    proto->set_op_type(node.op);
    if (const std::string domain = onnx_domain_of(node.op); !domain.empty()) proto->set_domain(domain);
    for (size_t i = 0; i < own; ++i) proto->add_input(node.inputs[i] != nullptr ? node.inputs[i]->name : "");
    for (const graph::Value* out : node.outputs) proto->add_output(out != nullptr ? out->name : "");
    for (const auto& [name, value] : node.attrs) {
      if (node.op == "Optional" && (name == "element_dtype" || name == "element_is_sequence")) continue;
      write_attribute(proto->add_attribute(), name, value);
    }
    if (node.op == "Optional" && node.attrs.count("element_dtype")) {
      // ONNX's Optional says the type of an empty one as a TypeProto.
      auto* a = proto->add_attribute();
      a->set_name("type");
      a->set_type(::onnx::AttributeProto::TYPE_PROTO);
      const auto kind = node.attrs.count("element_is_sequence") &&
                                std::get<int64_t>(node.attrs.at("element_is_sequence").variant()) != 0
                            ? ops::ValueKind::kSequence
                            : ops::ValueKind::kTensor;
      write_type_proto(a->mutable_tp(),
                       dtype_from_onnx(std::get<int64_t>(node.attrs.at("element_dtype").variant())), kind,
                       false);
    }
    std::vector<std::string> captured_names;
    for (size_t i = own; i < node.inputs.size(); ++i) captured_names.push_back(node.inputs[i]->name);
    if (source == nullptr) return;
    for (const auto& [attr, subgraph] : source->subgraphs) {
      auto* a = proto->add_attribute();
      a->set_name(attr);
      a->set_type(::onnx::AttributeProto::GRAPH);
      subgraph_writers_.at({node.name, attr})
          ->write_graph(a->mutable_g(), captured_names.size(), captured_names);
    }
  }

  graph::Graph graph_;  // the exporter's copy: inference and downgrade rules may add to it
  int opset_;
  std::string where_;
  std::vector<ExportedNode> nodes_;
  // The writers of the control-flow nodes' subgraphs, by node name and attribute.
  std::map<std::pair<std::string, std::string>, std::shared_ptr<Exporter>> subgraph_writers_;
};

}  // namespace

std::string export_model_bytes(const graph::Graph& graph, const ExportOptions& options) {
  const ::onnx::ModelProto model =
      Exporter(graph, options.opset, "exporting graph '" + graph.name + "'").run();
  KILN_CHECK(model.ByteSizeLong() <= static_cast<size_t>(std::numeric_limits<int>::max()),
             ErrorCode::kUnsupported, "exporting graph '", graph.name, "': the model is ",
             model.ByteSizeLong(), " bytes, over protobuf's 2 GiB limit (external data is not written yet)");
  return model.SerializeAsString();
}

void export_model(const graph::Graph& graph, const std::string& path, const ExportOptions& options) {
  const std::string bytes = export_model_bytes(graph, options);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  KILN_CHECK(out.good(), ErrorCode::kIo, "cannot open '", path, "' to write the ONNX model");
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  out.close();
  KILN_CHECK(out.good(), ErrorCode::kIo, "writing the ONNX model '", path, "' failed");
}

}  // namespace kiln::onnx
