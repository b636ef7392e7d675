// The exporter's driver: walks the graph from its outputs depth-first (the order MXNet writes
// nodes in), turns values into variables and parameters and nodes into MXNet ops or `_kiln_`
// ops, and keeps MXNet's names unique. See export.h for the format.
#include "frontends/mxnet/export.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>

#include "kiln/error.hpp"

namespace kiln::mxnet {
namespace {

using graph::Node;
using graph::Value;
using Entry = MxnetSymbol::Entry;

std::string ints_text(const std::vector<int64_t>& values) {
  std::string s = "(";
  for (size_t i = 0; i < values.size(); ++i) s += (i ? ", " : "") + std::to_string(values[i]);
  return s + (values.size() == 1 ? ",)" : ")");
}

class Exporter {
 public:
  explicit Exporter(const graph::Graph& source) : g_(source.clone()) {
    g_.verify();
    // Shapes decide which MXNet op a node can become; infer what can be known.
    g_.infer_shapes(/*allow_unknown=*/true);
    outputs_.insert(g_.outputs().begin(), g_.outputs().end());
  }

  ExportedModel run() {
    for (const Value* v : g_.outputs()) symbol_.heads.push_back(entry_of(v));
    symbol_.attrs["mxnet_version"] = "10901";
    ExportedModel m{std::move(symbol_), {}};
    for (const auto* list : {&args_, &aux_})
      for (const auto& [name, data] : *list) {
        m.params.names.push_back((list == &args_ ? "arg:" : "aux:") + name);
        m.params.tensors.push_back(data);
      }
    return m;
  }

 private:
  struct Planned {
    MxnetCall call;
    std::vector<Entry> inputs;  // filled as the walk reaches each operand
  };

  // The entry of a value, writing first everything it depends on. The walk keeps an explicit
  // stack: deep graphs would overflow the call stack.
  Entry entry_of(const Value* root) {
    if (!root->producer) return variable(root, false);
    struct Frame {
      const Node* node;
      size_t next;
    };
    std::vector<Frame> stack;
    if (!entries_.count(root)) stack.push_back({root->producer, 0});
    while (!stack.empty()) {
      const Node* node = stack.back().node;
      Planned& p = plan(node);
      const size_t next = stack.back().next;
      if (next == p.call.inputs.size()) {
        emit(*node, p);
        stack.pop_back();
        continue;
      }
      const MxnetCall::Operand& op = p.call.inputs[next];
      if (op.value && op.value->producer && !entries_.count(op.value)) {
        stack.push_back({op.value->producer, 0});
        continue;
      }
      p.inputs.push_back(operand(op));
      ++stack.back().next;
    }
    return entries_.at(root);
  }

  Planned& plan(const Node* node) {
    const auto it = planned_.find(node);
    if (it != planned_.end()) return it->second;
    const auto used = [this](const Value* v) { return !v->users.empty() || outputs_.count(v) > 0; };
    std::optional<MxnetCall> call = mxnet_equivalent(*node, used);
    return planned_.emplace(node, Planned{call ? std::move(*call) : kiln_call(*node), {}}).first->second;
  }

  // A node as the Kiln op it is (see export.h for the encoding).
  static MxnetCall kiln_call(const Node& node) {
    const ops::OpSchema& schema = node.schema();
    ops::with_op_context(node.label(), [&] { return schema.bind(node.attrs); });  // a bad attribute
    MxnetCall c{kKilnOpPrefix + node.op, {}, {}};
    for (const auto& [key, value] : node.attrs) {
      const std::string what = node.label() + ": attribute '" + key + "'";
      const std::string& name = key;  // a lambda captures a name, not a structured binding (clang 14)
      const auto spec = std::find_if(schema.attrs().begin(), schema.attrs().end(),
                                     [&](const ops::AttrSpec& s) { return s.name == name; });
      c.attrs[key] = format_kiln_attr(value.coerced_to(spec->type, what), what);
    }
    if (node.outputs.size() != 1) c.attrs[kNumOutputsAttr] = std::to_string(node.outputs.size());
    std::vector<int64_t> missing;
    for (size_t i = 0; i < node.inputs.size(); ++i) {
      if (node.inputs[i])
        c.inputs.push_back({node.inputs[i], "", Tensor(), false});
      else
        missing.push_back(static_cast<int64_t>(i));
    }
    if (!missing.empty()) c.attrs[kMissingInputsAttr] = ints_text(missing);
    return c;
  }

  Entry operand(const MxnetCall::Operand& op) {
    if (!op.value) return derived_variable(op.name, op.data);
    if (op.value->producer) return entries_.at(op.value);
    return variable(op.value, op.aux);
  }

  // A graph input or initializer as a variable. One used both as an argument and as an auxiliary
  // state gets a variable for each role, since MXNet lists a variable in one role only.
  Entry variable(const Value* v, bool aux) {
    std::map<const Value*, Entry>& known = aux ? aux_entries_ : entries_;
    if (const auto it = known.find(v); it != known.end()) return it->second;
    MxnetSymbol::Node node{"null", unique_name(v->name, 0), {}, {}};
    if (v->is_constant()) {
      (aux ? aux_ : args_).emplace_back(node.name, v->constant);
    } else if (v->info) {
      std::vector<int64_t> dims = v->info->shape.dims();
      // MXNet 1.x writes 0 for an unknown dimension; a literal 0, or a 0-d shape (which MXNet 1.x
      // reads as unknown), cannot be said, so the shape is left out then.
      const bool sayable = !dims.empty() && std::count(dims.begin(), dims.end(), 0) == 0;
      for (int64_t& d : dims)
        if (d == Shape::kUnknown) d = 0;
      if (sayable) node.attrs["__shape__"] = ints_text(dims);
      if (v->info->dtype != DType::kFloat32)
        node.attrs["__dtype__"] = std::to_string(mxnet_flag_from_dtype(v->info->dtype));
    }
    const Entry e = add(std::move(node));
    return known[v] = e;
  }

  Entry derived_variable(const std::string& name, const Tensor& data) {
    MxnetSymbol::Node node{"null", unique_name(name, 0), {}, {}};
    args_.emplace_back(node.name, data);
    return add(std::move(node));
  }

  Entry add(MxnetSymbol::Node node) {
    const int index = static_cast<int>(symbol_.nodes.size());
    if (node.op == "null") symbol_.arg_nodes.push_back(index);
    symbol_.nodes.push_back(std::move(node));
    return Entry{index, 0, 0};
  }

  void emit(const Node& node, const Planned& p) {
    const int visible = p.call.op.rfind(kKilnOpPrefix, 0) == 0 || p.call.op == "SliceChannel"
                            ? static_cast<int>(node.outputs.size())
                            : 1;
    const Entry e =
        add(MxnetSymbol::Node{p.call.op, unique_name(node.name, visible), p.call.attrs, p.inputs});
    for (size_t i = 0; i < node.outputs.size(); ++i)
      entries_[node.outputs[i]] = Entry{e.node, static_cast<int>(i), 0};
  }

  // A name no other MXNet node or output has: `base` for a variable (outputs = 0), or for an op
  // whose outputs are then named base_output / base_output0, ...; else base_1, base_2, ...
  std::string unique_name(const std::string& base, int outputs) {
    for (int k = 0;; ++k) {
      const std::string name = k == 0 ? base : base + "_" + std::to_string(k);
      std::vector<std::string> names{name};
      if (outputs == 1) names.push_back(name + "_output");
      for (int i = 0; outputs > 1 && i < outputs; ++i) names.push_back(name + "_output" + std::to_string(i));
      if (std::none_of(names.begin(), names.end(), [&](const std::string& s) { return taken_.count(s); })) {
        taken_.insert(names.begin(), names.end());
        return name;
      }
    }
  }

  graph::Graph g_;
  std::set<const Value*> outputs_;
  MxnetSymbol symbol_;
  std::map<const Node*, Planned> planned_;
  std::map<const Value*, Entry> entries_;      // node outputs and argument variables
  std::map<const Value*, Entry> aux_entries_;  // auxiliary-state variables
  std::vector<std::pair<std::string, Tensor>> args_, aux_;
  std::set<std::string> taken_;
};

}  // namespace

std::string format_double(double value) {
  char text[64];
  const auto end = std::to_chars(text, text + sizeof text, value).ptr;
  return std::string(text, end);
}

std::string format_kiln_attr(const AttrValue& value, const std::string& what) {
  return std::visit(
      [&](const auto& x) -> std::string {
        using X = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<X, int64_t>) {
          return std::to_string(x);
        } else if constexpr (std::is_same_v<X, double>) {
          return format_double(x);
        } else if constexpr (std::is_same_v<X, std::string>) {
          return x;
        } else if constexpr (std::is_same_v<X, std::vector<int64_t>>) {
          return ints_text(x);
        } else if constexpr (std::is_same_v<X, std::vector<double>>) {
          std::string s = "(";
          for (size_t i = 0; i < x.size(); ++i) s += (i ? ", " : "") + format_double(x[i]);
          return s + (x.size() == 1 ? ",)" : ")");
        } else if constexpr (std::is_same_v<X, std::vector<std::string>>) {
          return nlohmann::json(x).dump();
        } else {
          raise(ErrorCode::kUnsupported, what, " is a tensor, which the MXNet export cannot write");
        }
      },
      value.variant());
}

ExportedModel export_graph(const graph::Graph& g) {
  return Exporter(g).run();
}

void save_checkpoint(const graph::Graph& g, const std::string& prefix, int epoch) {
  KILN_CHECK(epoch >= 0, ErrorCode::kInvalidArgument, "save_checkpoint '", prefix,
             "': expected an epoch >= 0, got ", epoch);
  const ExportedModel m = export_graph(g);
  const std::string symbol_path = prefix + "-symbol.json";
  std::ofstream out(symbol_path, std::ios::binary);
  out << to_symbol_json(m.symbol);
  out.close();
  KILN_CHECK(out.good(), ErrorCode::kIo, symbol_path, ": cannot write the file");
  char epoch_text[16];
  std::snprintf(epoch_text, sizeof epoch_text, "%04d", epoch);
  save_params(prefix + "-" + epoch_text + ".params", m.params);
}

}  // namespace kiln::mxnet
