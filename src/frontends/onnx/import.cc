// The ONNX importer: ModelProto -> Graph. See import.h for what is accepted and how problems are
// reported.
#include "frontends/onnx/import.h"
#include "frontends/onnx/domains.h"

#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "frontends/onnx/opset_upgrade.h"
#include "frontends/onnx/tensor_proto.h"
#include "kiln/error.hpp"
#include "ops/control_flow.h"

namespace kiln::onnx {
namespace {

namespace fs = std::filesystem;
using graph::TensorInfo;

bool is_default_domain(const std::string& domain) {
  return domain.empty() || domain == "ai.onnx";
}

std::string domain_label(const std::string& domain) {
  return domain.empty() ? "ai.onnx" : domain;
}

DType declared_dtype(int32_t elem_type, const std::string& where) {
  try {
    return dtype_from_onnx(elem_type);
  } catch (const Error& e) {
    raise(ErrorCode::kUnsupported, where, ": ", e.what());
  }
}

// What a type declares: a tensor's element type and shape, a sequence of tensors' element type,
// or either of those as an optional value; nullopt when the element type (or a tensor's rank) is
// not given. A symbolic or missing dimension is a free dimension. Maps, sparse tensors, and
// sequences or optionals of anything but tensors (and sequences of tensors) are kUnsupported.
std::optional<TensorInfo> declared_type(const ::onnx::TypeProto& type, const std::string& where) {
  if (type.has_optional_type()) {
    const ::onnx::TypeProto& elem = type.optional_type().elem_type();
    KILN_CHECK(!elem.has_optional_type(), ErrorCode::kUnsupported, where,
               ": an optional of an optional value is not supported");
    std::optional<TensorInfo> info = declared_type(elem, where);
    if (info) info->optional = true;
    return info;
  }
  if (type.has_sequence_type()) {
    const ::onnx::TypeProto& elem = type.sequence_type().elem_type();
    KILN_CHECK(elem.value_case() == ::onnx::TypeProto::VALUE_NOT_SET || elem.has_tensor_type(),
               ErrorCode::kUnsupported, where, ": only sequences of tensors are supported");
    if (!elem.has_tensor_type() || elem.tensor_type().elem_type() == ::onnx::TensorProto::UNDEFINED)
      return std::nullopt;
    return TensorInfo{declared_dtype(elem.tensor_type().elem_type(), where), Shape{},
                      ops::ValueKind::kSequence};
  }
  KILN_CHECK(type.value_case() == ::onnx::TypeProto::VALUE_NOT_SET || type.has_tensor_type(),
             ErrorCode::kUnsupported, where,
             ": only tensors, sequences of tensors and optionals of those are supported, not maps or sparse "
             "tensors");
  if (!type.has_tensor_type()) return std::nullopt;
  const auto& tensor = type.tensor_type();
  if (tensor.elem_type() == ::onnx::TensorProto::UNDEFINED || !tensor.has_shape()) return std::nullopt;
  const DType dtype = declared_dtype(tensor.elem_type(), where);
  std::vector<int64_t> dims;
  for (const auto& dim : tensor.shape().dim()) {
    if (dim.has_dim_value()) {
      KILN_CHECK(dim.dim_value() >= 0, ErrorCode::kIo, where, ": negative dimension ", dim.dim_value());
      dims.push_back(dim.dim_value());
    } else {
      dims.push_back(Shape::kUnknown);
    }
  }
  return TensorInfo{dtype, Shape(dims)};
}

std::optional<TensorInfo> declared_info(const ::onnx::ValueInfoProto& value, const std::string& where) {
  return declared_type(value.type(), where);
}

// Optional's `type` attribute (a TypeProto) as the attributes Kiln's Optional takes: the element
// type's ONNX code, and whether the value is a sequence of such tensors.
void add_optional_type_attrs(const ::onnx::AttributeProto& attr, AttrMap& attrs, const std::string& where) {
  const std::optional<TensorInfo> info = declared_type(attr.tp(), where + ": attribute 'type'");
  KILN_CHECK(info.has_value() || attr.tp().has_tensor_type(), ErrorCode::kUnsupported, where,
             ": attribute 'type' declares no element type");
  const int32_t elem = info ? dtype_to_onnx(info->dtype) : attr.tp().tensor_type().elem_type();
  attrs.emplace("element_dtype", int64_t{elem});
  attrs.emplace("element_is_sequence", int64_t{info && info->kind == ops::ValueKind::kSequence});
}

AttrValue attribute_value(const ::onnx::AttributeProto& attr, const TensorSource& source) {
  KILN_CHECK(attr.ref_attr_name().empty(), ErrorCode::kUnsupported, "attribute '", attr.name(),
             "' refers to a function attribute");
  switch (attr.type()) {
    case ::onnx::AttributeProto::FLOAT:
      return double{attr.f()};
    case ::onnx::AttributeProto::INT:
      return int64_t{attr.i()};
    case ::onnx::AttributeProto::STRING:
      return attr.s();
    case ::onnx::AttributeProto::TENSOR:
      return tensor_from_proto(attr.t(), source);
    case ::onnx::AttributeProto::FLOATS:
      return std::vector<double>(attr.floats().begin(), attr.floats().end());
    case ::onnx::AttributeProto::INTS:
      return std::vector<int64_t>(attr.ints().begin(), attr.ints().end());
    case ::onnx::AttributeProto::STRINGS:
      return std::vector<std::string>(attr.strings().begin(), attr.strings().end());
    default:
      raise(ErrorCode::kUnsupported, "attribute '", attr.name(), "' is of type ",
            ::onnx::AttributeProto::AttributeType_Name(attr.type()), ", which Kiln does not support");
  }
}

// Frees a tensor's bytes once Kiln holds its own copy, so that a model's weights are never held
// twice while it is imported (a protobuf string only gives its memory back when destroyed).
void release_data(::onnx::TensorProto& proto) {
  ::onnx::TensorProto().Swap(&proto);
}

// The value of a Constant node, from whichever of its attributes is set.
Tensor constant_value(const ::onnx::NodeProto& node, const TensorSource& source) {
  KILN_CHECK(node.attribute_size() == 1, ErrorCode::kIo, "needs exactly one value attribute, has ",
             node.attribute_size());
  const auto& attr = node.attribute(0);
  const std::string& kind = attr.name();
  if (kind == "value") return tensor_from_proto(attr.t(), source);
  if (kind == "value_float") return Tensor::scalar(attr.f(), DType::kFloat32);
  if (kind == "value_int") return Tensor::scalar(static_cast<double>(attr.i()), DType::kInt64);
  if (kind == "value_floats") {
    std::vector<float> v(attr.floats().begin(), attr.floats().end());
    return Tensor::from_vector<float>(v, Shape{static_cast<int64_t>(v.size())});
  }
  if (kind == "value_ints") {
    std::vector<int64_t> v(attr.ints().begin(), attr.ints().end());
    return Tensor::from_vector<int64_t>(v, Shape{static_cast<int64_t>(v.size())});
  }
  raise(ErrorCode::kUnsupported, "attribute '", kind, "' (string or sparse constants) is not supported");
}

// The names a graph reads that it does not define (its inputs, initializers and node outputs),
// its nested subgraphs' included, in the order first read: the values of the graphs around it
// that it uses.
std::vector<std::string> outer_names(const ::onnx::GraphProto& graph) {
  std::set<std::string> defined;
  for (const auto& v : graph.input()) defined.insert(v.name());
  for (const auto& t : graph.initializer()) defined.insert(t.name());
  for (const auto& t : graph.sparse_initializer()) defined.insert(t.values().name());
  for (const auto& node : graph.node())
    for (const std::string& out : node.output()) defined.insert(out);
  std::vector<std::string> names;
  std::set<std::string> seen;
  const auto read = [&](const std::string& name) {
    if (!name.empty() && !defined.count(name) && seen.insert(name).second) names.push_back(name);
  };
  for (const auto& node : graph.node()) {
    for (const std::string& in : node.input()) read(in);
    for (const auto& attr : node.attribute()) {
      if (attr.has_g())
        for (const std::string& name : outer_names(attr.g())) read(name);
      for (const auto& g : attr.graphs())
        for (const std::string& name : outer_names(g)) read(name);
    }
  }
  for (const auto& out : graph.output()) read(out.name());
  return names;
}

// What a node reads: its inputs, and the values of this graph its subgraphs read.
std::vector<std::string> reads_of(const ::onnx::NodeProto& node) {
  std::vector<std::string> reads(node.input().begin(), node.input().end());
  for (const auto& attr : node.attribute()) {
    if (attr.has_g())
      for (const std::string& name : outer_names(attr.g())) reads.push_back(name);
    for (const auto& g : attr.graphs())
      for (const std::string& name : outer_names(g)) reads.push_back(name);
  }
  return reads;
}

// ONNX requires nodes in topological order, but files in the wild do not always keep to it; this
// orders them by their data dependencies (a subgraph's reads count as its node's) and names a
// node on a cycle or reading an unknown value.
std::vector<int> node_order(const ::onnx::GraphProto& graph, const std::set<std::string>& available,
                            const std::string& where) {
  const int n = graph.node_size();
  std::map<std::string, int> producer;
  for (int i = 0; i < n; ++i) {
    for (const std::string& out : graph.node(i).output()) {
      if (out.empty()) continue;
      KILN_CHECK(!available.count(out) && producer.emplace(out, i).second, ErrorCode::kIo, where, ": value '",
                 out, "' is produced more than once");
    }
  }
  std::vector<int> pending(static_cast<size_t>(n), 0);
  std::vector<std::vector<int>> readers(static_cast<size_t>(n));
  for (int i = 0; i < n; ++i) {
    const auto& node = graph.node(i);
    for (const std::string& in : reads_of(node)) {
      if (in.empty() || available.count(in)) continue;
      auto it = producer.find(in);
      KILN_CHECK(it != producer.end(), ErrorCode::kIo, where, ": node '", node.name(), "' (", node.op_type(),
                 ") reads '", in, "', which is not a graph input, an initializer or any node's output");
      readers[static_cast<size_t>(it->second)].push_back(i);
      ++pending[static_cast<size_t>(i)];
    }
  }
  std::vector<int> order;
  for (int i = 0; i < n; ++i)
    if (pending[static_cast<size_t>(i)] == 0) order.push_back(i);
  for (size_t k = 0; k < order.size(); ++k) {
    for (int r : readers[static_cast<size_t>(order[k])])
      if (--pending[static_cast<size_t>(r)] == 0) order.push_back(r);
  }
  if (static_cast<int>(order.size()) != n) {
    for (int i = 0; i < n; ++i) {
      KILN_CHECK(pending[static_cast<size_t>(i)] == 0, ErrorCode::kIo, where, ": node '",
                 graph.node(i).name(), "' (", graph.node(i).op_type(), ") is on a cycle");
    }
  }
  return order;
}

// Scan before opset 9 walks axis 1 of inputs whose axis 0 is a batch, its body seeing one batch
// entry: the same as a Scan over the batch (every input scanned along axis 0, no states) whose body
// is one Scan of today's form over that entry. `attrs` become the outer Scan's; `own_inputs` is the
// number of the node's inputs (states and scan inputs, sequence_lens dropped); `captured` are the
// values the body reads from outside, which the new body passes on.
std::shared_ptr<const graph::Graph> scan_over_batch(AttrMap& attrs,
                                                    const std::shared_ptr<const graph::Graph>& body,
                                                    size_t own_inputs,
                                                    const std::vector<graph::Value*>& captured) {
  const auto num_scan_inputs = attrs.find("num_scan_inputs");
  KILN_CHECK(num_scan_inputs != attrs.end(), ErrorCode::kIo, "Scan needs num_scan_inputs");
  AttrMap inner_attrs{{"num_scan_inputs", num_scan_inputs->second}};
  for (const auto& [name, value] : attrs) {
    if (name == "directions")
      inner_attrs.emplace("scan_input_directions", value);
    else
      KILN_CHECK(name == "num_scan_inputs", ErrorCode::kUnsupported, "attribute '", name,
                 "' of Scan-8 is not supported");
  }
  auto batch_entry = std::make_shared<graph::Graph>();
  batch_entry->name = body->name + "/batch_entry";
  std::vector<graph::Value*> inputs;
  for (size_t k = 0; k < own_inputs; ++k)
    inputs.push_back(batch_entry->add_input("entry_input_" + std::to_string(k)));
  for (const graph::Value* v : captured) inputs.push_back(batch_entry->add_input(v->name, v->info));
  std::vector<std::string> outputs;
  for (size_t k = 0; k < body->outputs().size(); ++k) outputs.push_back("entry_output_" + std::to_string(k));
  graph::Node* scan =
      batch_entry->add_node_with_outputs("Scan", inputs, inner_attrs, "scan_of_entry", outputs);
  scan->subgraphs = {{"body", body}};
  scan->num_captured = static_cast<int>(captured.size());
  batch_entry->set_outputs(scan->outputs);
  attrs = {{"num_scan_inputs", static_cast<int64_t>(own_inputs)}};
  return batch_entry;
}

// The importer consumes the model: each tensor's bytes are released as soon as they are converted.
class Importer {
 public:
  Importer(::onnx::ModelProto& model, const std::string& base_dir, const std::string& name,
           const ImportOptions& options)
      : model_(model), base_dir_(base_dir), options_(options), where_("onnx model '" + name + "'") {
    graph_.name = name;
  }

  graph::Graph run() {
    read_opsets();
    import_body(*model_.mutable_graph(), {});
    if (!problems_.empty()) {
      std::ostringstream msg;
      msg << where_ << ": " << problems_.size() << (problems_.size() == 1 ? " thing" : " things")
          << " cannot be imported:";
      for (const auto& p : problems_) msg << "\n  " << p;
      raise(ErrorCode::kUnsupported, msg.str());
    }
    graph_.verify();
    graph_.infer_shapes(/*allow_unknown=*/true);
    return std::move(graph_);
  }

 private:
  // The importer of a subgraph of a node of `parent`'s graph: the same model and opsets.
  Importer(const Importer& parent, std::string where)
      : model_(parent.model_),
        base_dir_(parent.base_dir_),
        options_(parent.options_),
        where_(std::move(where)),
        opsets_(parent.opsets_),
        opset_(parent.opset_),
        is_subgraph_(true) {}

  // Everything of one graph: initializers, inputs, then the values of the graphs around it that it
  // reads (`outer`: constants become its own, the others its last inputs), value_info hints, nodes
  // and outputs.
  void import_body(::onnx::GraphProto& g, const std::vector<graph::Value*>& outer) {
    for (const auto& sparse : g.sparse_initializer())
      problems_.push_back("sparse initializer '" + sparse.values().name() +
                          "': sparse tensors are not supported");
    add_initializers(g);
    add_inputs(g);
    for (const graph::Value* v : outer) {
      if (v->is_constant())
        graph_.add_initializer(v->name, v->constant);
      else
        graph_.add_input(v->name, v->info);
    }
    // The types value_info and the graph outputs declare: what a value that inference cannot
    // type before the model runs (an element of a sequence, a subgraph's output) is said to be.
    for (const auto* infos : {&g.value_info(), &g.output()}) {
      for (const auto& info : *infos) {
        try {
          if (auto declared = declared_info(info, "value_info '" + info.name() + "'"))
            hints_[info.name()] = *declared;
        } catch (const Error&) {
          // A hint Kiln cannot use costs nothing: inference decides the value's type anyway.
        }
      }
    }
    std::set<std::string> available;
    for (graph::Value* v : graph_.inputs()) available.insert(v->name);
    for (graph::Value* v : graph_.initializers()) available.insert(v->name);
    for (int i : node_order(g, available, where_)) add_node(*g.mutable_node(i));
    for (const auto& out : g.output()) {
      graph::Value* v = graph_.find_value(out.name());
      KILN_CHECK(v != nullptr, ErrorCode::kIo, where_, ": graph output '", out.name(),
                 "' is not produced by anything");
      graph_.add_output(v);
    }
  }

  // A subgraph, checked, its types inferred node by node as far as its declared inputs allow (so
  // that its node can be checked against what it gives). A branch that is not taken for the
  // shapes given may not even infer for them: what does not infer is left unknown until it runs.
  graph::Graph import_subgraph(::onnx::GraphProto& g, const std::vector<graph::Value*>& outer) {
    graph_.name = g.name();
    import_body(g, outer);
    if (problems_.empty()) {
      try {
        graph_.verify();
      } catch (const Error& e) {
        throw Error(e.code(), where_ + ": " + e.what());
      }
    }
    return std::move(graph_);
  }

  void read_opsets() {
    for (const auto& entry : model_.opset_import()) opsets_[domain_label(entry.domain())] = entry.version();
    auto it = opsets_.find("ai.onnx");
    if (it == opsets_.end() && (opsets_.contains(kTrainingDomain) || opsets_.contains(kMlDomain))) {
      // A model of training or ONNX-ML ops alone: the default domain's ops it may use are the newest.
      opset_ = kNewestOpset;
      return;
    }
    if (it == opsets_.end() && !opsets_.empty()) {
      // A model of other domains only (ai.onnx.ml, training) is valid ONNX that Kiln cannot run.
      std::string domains;
      for (const auto& [domain, version] : opsets_)
        domains += (domains.empty() ? "" : ", ") + domain + " " + std::to_string(version);
      raise(ErrorCode::kUnsupported, where_, ": uses only the domains ", domains,
            ", which Kiln does not support (it declares no opset for the default domain)");
    }
    KILN_CHECK(it != opsets_.end(), ErrorCode::kIo, where_, ": declares no opset for the default domain");
    opset_ = static_cast<int>(it->second);
    KILN_CHECK(opset_ >= kOldestOpset && opset_ <= kNewestOpset, ErrorCode::kUnsupported, where_, ": opset ",
               opset_, " is outside the opsets Kiln imports (", kOldestOpset, " to ", kNewestOpset, ")");
  }

  void add_initializers(::onnx::GraphProto& g) {
    for (auto& init : *g.mutable_initializer()) {
      const std::string where = "initializer '" + init.name() + "'";
      KILN_CHECK(!init.name().empty(), ErrorCode::kIo, where_, ": an initializer has no name");
      KILN_CHECK(graph_.find_value(init.name()) == nullptr, ErrorCode::kIo, where_, ": ", where,
                 " is given twice");
      try {
        Tensor value = take_tensor_from_proto(init, {base_dir_, where});
        graph_.add_initializer(init.name(), std::move(value));
        release_data(init);
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kUnsupported) throw Error(e.code(), where_ + ": " + e.what());
        problems_.push_back(e.what());
        graph_.add_input(init.name());
      }
    }
  }

  void add_inputs(const ::onnx::GraphProto& g) {
    for (const auto& input : g.input()) {
      graph::Value* existing = graph_.find_value(input.name());
      if (existing != nullptr) {
        // Older exporters list every weight among the inputs too; the initializer is its value.
        KILN_CHECK(existing->is_constant(), ErrorCode::kIo, where_, ": graph input '", input.name(),
                   "' is given twice");
        continue;
      }
      std::optional<TensorInfo> info;
      try {
        info = declared_info(input, "graph input '" + input.name() + "'");
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kUnsupported) throw Error(e.code(), where_ + ": " + e.what());
        problems_.push_back(e.what());
      }
      auto given = options_.input_shapes.find(input.name());
      if (!is_subgraph_ && given != options_.input_shapes.end()) {
        KILN_CHECK(info.has_value(), ErrorCode::kInvalidArgument, where_, ": input '", input.name(),
                   "' declares no tensor type to give a shape to");
        info->shape = given->second;
      }
      graph_.add_input(input.name(), info);
    }
    for (const auto& [name, shape] : options_.input_shapes) {
      if (is_subgraph_) break;
      KILN_CHECK(graph_.find_value(name) != nullptr && !graph_.find_value(name)->is_constant(),
                 ErrorCode::kNotFound, where_, ": a shape is given for '", name,
                 "', which is not an input of the model");
    }
  }

  std::string node_label(const ::onnx::NodeProto& node) const {
    const std::string domain = domain_label(node.domain());
    auto it = opsets_.find(domain);
    std::string label = node.op_type() + " '" + node.name() + "' (domain " + domain;
    if (it != opsets_.end()) label += ", opset " + std::to_string(it->second);
    return label + ")";
  }

  // A node that cannot be imported is recorded; its outputs become placeholders so that the
  // nodes after it are still checked and every problem is reported at once.
  void refuse(const ::onnx::NodeProto& node, const std::string& reason) {
    problems_.push_back(node_label(node) + ": " + reason);
    refuse_outputs(node);
  }
  void refuse_outputs(const ::onnx::NodeProto& node) {
    for (const std::string& out : node.output())
      if (!out.empty() && graph_.find_value(out) == nullptr) graph_.add_input(out);
  }

  std::string unique_node_name(const ::onnx::NodeProto& node) {
    std::string base = node.name().empty() ? node.op_type() : node.name();
    return graph_.find_node(base) == nullptr && graph_.find_value(base) == nullptr ? base
                                                                                   : graph_.fresh_name(base);
  }

  void add_node(::onnx::NodeProto& node) {
    const TensorSource source{base_dir_, node_label(node)};
    const std::string domain = onnx_domain_of(node.op_type());
    if (!is_default_domain(node.domain())) {
      if (node.domain() != kTrainingDomain && node.domain() != kMlDomain)
        return refuse(node, "domain '" + node.domain() + "' is not supported");
      if (domain != node.domain())
        return refuse(node, "Kiln has no op " + node.op_type() + " in domain " + node.domain());
    } else if (!domain.empty()) {
      return refuse(node, node.op_type() + " is an op of domain " + domain + ", not of the default domain");
    }
    if (node.op_type() == "Constant") return add_constant(node, source);
    if (ops::is_control_flow(node.op_type())) return add_control_flow(node, source);
    ImportedNode imported{node.op_type(), unique_node_name(node), {}, {}, 0};
    for (const auto& attr : node.attribute()) {
      try {
        if (node.op_type() == "Optional" && attr.type() == ::onnx::AttributeProto::TYPE_PROTO) {
          add_optional_type_attrs(attr, imported.attrs, node_label(node));
          continue;
        }
        imported.attrs.emplace(attr.name(), attribute_value(attr, source));
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kUnsupported)
          throw Error(e.code(), where_ + ": " + node_label(node) + ": " + e.what());
        return refuse(node, e.what());
      }
    }
    for (const std::string& in : node.input())
      imported.inputs.push_back(in.empty() ? nullptr : graph_.find_value(in));
    std::vector<std::string> output_names(node.output().begin(), node.output().end());
    while (!output_names.empty() && output_names.back().empty()) output_names.pop_back();
    imported.num_outputs = static_cast<int>(output_names.size());

    UpgradeContext ctx(graph_, imported, opset_);
    try {
      upgrade_to_newest(ctx);
      if (!ctx.replacement()) check_against_schema(imported);
    } catch (const Error& e) {
      if (e.code() == ErrorCode::kIo) throw Error(e.code(), where_ + ": " + e.what());
      return refuse(node, e.what());
    }
    std::vector<graph::Value*> outputs;
    if (ctx.replacement()) {
      outputs = *ctx.replacement();
      for (size_t i = 0; i < outputs.size() && i < output_names.size(); ++i) {
        if (!output_names[i].empty()) graph_.rename_value(outputs[i], output_names[i]);
      }
    } else {
      graph::Node* added = graph_.add_node_with_outputs(imported.op, imported.inputs, imported.attrs,
                                                        imported.name, output_names);
      outputs = added->outputs;
      infer_as_far_as_known(added);
    }
  }

  // Kiln's schema decides what it supports: the op must exist, its attributes must bind (names,
  // types, values) and the number of inputs must fit.
  void check_against_schema(const ImportedNode& node) const {
    const ops::OpSchema* schema = ops::OpRegistry::global().find(node.op);
    KILN_CHECK(schema != nullptr, ErrorCode::kUnsupported, "Kiln has no op ", node.op);
    try {
      schema->bind(node.attrs);
    } catch (const Error& e) {
      raise(ErrorCode::kUnsupported, e.what());
    }
    const int n = static_cast<int>(node.inputs.size());
    const bool too_many = schema->max_inputs() >= 0 && n > schema->max_inputs();
    KILN_CHECK(n >= schema->min_inputs() && !too_many, ErrorCode::kUnsupported, "has ", n, " inputs; Kiln's ",
               node.op, " takes ", schema->min_inputs(), " to ",
               schema->max_inputs() < 0 ? std::string("any number") : std::to_string(schema->max_inputs()));
  }

  // Shapes known while importing let later rules see ranks (Softmax before opset 13); what
  // cannot be inferred yet is left to the whole-graph inference at the end, which reports it.
  void infer_as_far_as_known(graph::Node* node) {
    try {
      graph_.infer_node(node, /*allow_unknown=*/true);
    } catch (const Error&) {
      // Reported with the node's name by the final inference.
    }
    for (graph::Value* out : node->outputs) {
      auto hint = hints_.find(out->name);
      if (!out->info && hint != hints_.end()) out->info = hint->second;
    }
  }

  // If, Loop, Scan: each subgraph is imported by an importer of its own, which takes the values of
  // this graph (and of the graphs around it) that the subgraph reads; the node reads those that
  // are not constants as its last inputs (graph::Node::subgraphs).
  void add_control_flow(::onnx::NodeProto& node, const TensorSource& source) {
    const std::string label = node_label(node);
    const bool batched_scan = node.op_type() == "Scan" && opset_ < 9;
    if (batched_scan && node.input_size() > 0 && !node.input(0).empty())
      return refuse(
          node,
          "Scan before opset 9 with sequence_lens (steps that differ per batch entry) is not supported");
    if (batched_scan && node.input_size() == 0)
      return refuse(
          node, "Scan before opset 9 takes sequence_lens (may be empty) first, then its inputs; it has none");
    AttrMap attrs;
    std::vector<std::pair<std::string, ::onnx::GraphProto*>> bodies;
    for (auto& attr : *node.mutable_attribute()) {
      if (attr.type() == ::onnx::AttributeProto::GRAPH) {
        bodies.emplace_back(attr.name(), attr.mutable_g());
        continue;
      }
      try {
        attrs.emplace(attr.name(), attribute_value(attr, source));
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kUnsupported)
          throw Error(e.code(), where_ + ": " + label + ": " + e.what());
        return refuse(node, e.what());
      }
    }
    std::vector<graph::Value*> outer, captured;
    std::set<std::string> seen;
    for (const auto& [attr, body] : bodies) {
      for (const std::string& name : outer_names(*body)) {
        if (!seen.insert(name).second) continue;
        graph::Value* v = graph_.find_value(name);
        KILN_CHECK(v != nullptr, ErrorCode::kIo, where_, ": ", label, " subgraph '", attr, "' reads '", name,
                   "', which neither it nor any graph around it defines");
        outer.push_back(v);
        if (!v->is_constant()) captured.push_back(v);
      }
    }
    std::map<std::string, std::shared_ptr<const graph::Graph>> subgraphs;
    const size_t problems_before = problems_.size();
    for (const auto& [attr, body] : bodies) {
      Importer inner(*this, where_ + ": " + label + " subgraph '" + attr + "'");
      graph::Graph g = inner.import_subgraph(*body, outer);
      for (const std::string& problem : inner.problems_)
        problems_.push_back(label + " subgraph '" + attr + "': " + problem);
      subgraphs.emplace(attr, std::make_shared<const graph::Graph>(std::move(g)));
    }
    if (problems_.size() > problems_before) return refuse_outputs(node);

    ImportedNode imported{node.op_type(), unique_node_name(node), std::move(attrs), {}, 0};
    for (const std::string& in : node.input())
      imported.inputs.push_back(in.empty() ? nullptr : graph_.find_value(in));
    if (batched_scan) {
      imported.inputs.erase(imported.inputs.begin());  // sequence_lens, absent
      try {
        subgraphs["body"] =
            scan_over_batch(imported.attrs, subgraphs.at("body"), imported.inputs.size(), captured);
      } catch (const Error& e) {
        if (e.code() != ErrorCode::kUnsupported)
          throw Error(e.code(), where_ + ": " + label + ": " + e.what());
        return refuse(node, e.what());
      }
    }
    imported.inputs.insert(imported.inputs.end(), captured.begin(), captured.end());
    std::vector<std::string> output_names(node.output().begin(), node.output().end());
    try {
      check_against_schema(imported);
    } catch (const Error& e) {
      return refuse(node, e.what());
    }
    graph::Node* added = graph_.add_node_with_outputs(imported.op, imported.inputs, imported.attrs,
                                                      imported.name, output_names);
    added->subgraphs = std::move(subgraphs);
    added->num_captured = static_cast<int>(captured.size());
    infer_as_far_as_known(added);
  }

  void add_constant(::onnx::NodeProto& node, const TensorSource& source) {
    KILN_CHECK(node.output_size() == 1 && !node.output(0).empty(), ErrorCode::kIo, where_, ": ",
               node_label(node), ": a Constant has one output");
    try {
      graph_.add_initializer(node.output(0), constant_value(node, source));
      if (node.attribute(0).has_t()) release_data(*node.mutable_attribute(0)->mutable_t());
    } catch (const Error& e) {
      if (e.code() != ErrorCode::kUnsupported)
        throw Error(e.code(), where_ + ": " + node_label(node) + ": " + e.what());
      refuse(node, e.what());
    }
  }

  ::onnx::ModelProto& model_;
  std::string base_dir_;
  const ImportOptions& options_;
  std::string where_;
  graph::Graph graph_;
  std::map<std::string, int64_t> opsets_;
  int opset_ = 0;
  std::map<std::string, TensorInfo> hints_;
  std::vector<std::string> problems_;
  bool is_subgraph_ = false;
};

// Reads and parses a .onnx file; kIo names the file when it is not a ModelProto. The file is parsed
// as it is read, so that its bytes are not held twice (the whole file and the parsed message).
::onnx::ModelProto read_model_proto(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in.good(), ErrorCode::kNotFound, "cannot open ONNX model '", path, "'");
  ::onnx::ModelProto model;
  KILN_CHECK(model.ParseFromIstream(&in), ErrorCode::kIo, "'", path,
             "' is not an ONNX model (the protobuf does not parse; truncated or another format?)");
  return model;
}

graph::Graph import_model_proto(::onnx::ModelProto& model, const std::string& base_dir,
                                const std::string& name, const ImportOptions& options) {
  return Importer(model, base_dir, name, options).run();
}

}  // namespace

graph::Graph import_model_bytes(std::string_view bytes, const std::string& base_dir, const std::string& name,
                                const ImportOptions& options) {
  ::onnx::ModelProto model;
  KILN_CHECK(bytes.size() <= static_cast<size_t>(std::numeric_limits<int>::max()) &&
                 model.ParseFromArray(bytes.data(), static_cast<int>(bytes.size())),
             ErrorCode::kIo, "onnx model '", name, "': the protobuf does not parse");
  return import_model_proto(model, base_dir, name, options);
}

graph::Graph import_model(const std::string& path, const ImportOptions& options) {
  const fs::path file(path);
  ::onnx::ModelProto model = read_model_proto(path);
  return import_model_proto(model, folder_of(path), file.stem().string(), options);
}

}  // namespace kiln::onnx
