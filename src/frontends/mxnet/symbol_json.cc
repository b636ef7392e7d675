// MXNet's `-symbol.json`: the NNVM graph JSON that `Symbol.tojson()` writes, plus the older
// layouts MXNet still loads (node attributes under `attr` / `param`, two-element entries).
//
//   {"nodes": [{"op": "Convolution", "name": "conv1", "attrs": {"kernel": "(3, 3)"},
//               "inputs": [[0, 0, 0], [1, 0, 0]]}, ...],
//    "arg_nodes": [0, 1], "node_row_ptr": [0, 1, 2, 3],
//    "heads": [[2, 0, 0]], "attrs": {"mxnet_version": ["int", 10901]}}
#include <algorithm>
#include <climits>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "kiln/error.hpp"
#include "kiln/mxnet_format.hpp"

namespace kiln::mxnet {
namespace {

using json = nlohmann::json;
using Entry = MxnetSymbol::Entry;

constexpr int kMxnetVersion = 10901;
// What MXNet assumes for a file without mxnet_version: 0.8.0, before the version was recorded.
constexpr const char* kUnrecordedVersion = "800";

std::string node_label(const MxnetSymbol& s, size_t i) {
  const MxnetSymbol::Node& n = s.nodes[i];
  return "node " + std::to_string(i) + " '" + n.name + "' (" + n.op + ")";
}

// Checks what MXNet's loader relies on: entries point at existing, earlier nodes; variables
// have no inputs; arg_nodes are variables. `code` is kIo for files, kInvalidArgument for
// symbols built in memory.
void validate(const MxnetSymbol& s, const std::string& source, ErrorCode code) {
  const int count = static_cast<int>(s.nodes.size());
  for (int i = 0; i < count; ++i) {
    const MxnetSymbol::Node& n = s.nodes[static_cast<size_t>(i)];
    KILN_CHECK(n.op != "null" || n.inputs.empty(), code, source, ": ", node_label(s, i),
               " is a variable but has ", n.inputs.size(), " inputs");
    for (size_t k = 0; k < n.inputs.size(); ++k) {
      const Entry& e = n.inputs[k];
      KILN_CHECK(e.node >= 0 && e.node < i, code, source, ": ", node_label(s, i), " input ", k,
                 " refers to node ", e.node, "; expected an earlier node (0 to ", i - 1, ")");
      KILN_CHECK(e.index >= 0 && e.version >= 0, code, source, ": ", node_label(s, i), " input ", k,
                 " has output index ", e.index, " and version ", e.version, "; expected non-negative values");
    }
  }
  for (const int a : s.arg_nodes) {
    KILN_CHECK(a >= 0 && a < count, code, source, ": arg_nodes entry ", a, " is not a node (expected 0 to ",
               count - 1, ")");
    KILN_CHECK(s.nodes[static_cast<size_t>(a)].op == "null", code, source, ": arg_nodes entry ", a, " is ",
               node_label(s, static_cast<size_t>(a)), ", not a variable");
  }
  for (size_t h = 0; h < s.heads.size(); ++h) {
    const Entry& e = s.heads[h];
    KILN_CHECK(e.node >= 0 && e.node < count, code, source, ": head ", h, " refers to node ", e.node,
               ", which does not exist (expected 0 to ", count - 1, ")");
    KILN_CHECK(e.index >= 0 && e.version >= 0, code, source, ": head ", h, " has output index ", e.index,
               " and version ", e.version, "; expected non-negative values");
  }
}

// Typed access to the parsed JSON that turns every mismatch into kiln::Error(kIo).
class Parser {
 public:
  explicit Parser(const std::string& source) : source_(source) {}

  const json& member(const json& obj, const char* key, const std::string& where) const {
    const auto it = obj.find(key);
    KILN_CHECK(it != obj.end(), ErrorCode::kIo, source_, ": ", where, " has no \"", key, "\"");
    return *it;
  }

  const json& expect(const json& value, json::value_t type, const std::string& where) const {
    const bool ok = type == json::value_t::number_integer ? value.is_number_integer() : value.type() == type;
    KILN_CHECK(ok, ErrorCode::kIo, source_, ": ", where, " is ", value.type_name(), ", expected ",
               json(type).type_name());
    return value;
  }

  std::string string(const json& value, const std::string& where) const {
    return expect(value, json::value_t::string, where).get<std::string>();
  }

  int integer(const json& value, const std::string& where) const {
    expect(value, json::value_t::number_integer, where);
    // Integers above INT64_MAX arrive unsigned; reading them as int64 would wrap them negative.
    const bool fits = value.is_number_unsigned()
                          ? value.get<uint64_t>() <= INT_MAX
                          : value.get<int64_t>() >= INT_MIN && value.get<int64_t>() <= INT_MAX;
    KILN_CHECK(fits, ErrorCode::kIo, source_, ": ", where, " (", value.dump(), ") is out of range");
    return value.get<int>();
  }

  // [node, index, version], or [node, index] from before NNVM (version 0).
  Entry entry(const json& value, const std::string& where) const {
    expect(value, json::value_t::array, where);
    KILN_CHECK(value.size() == 2 || value.size() == 3, ErrorCode::kIo, source_, ": ", where, " has ",
               value.size(), " elements, expected [node, index, version] or [node, index]");
    Entry e;
    e.node = integer(value[0], where + " node");
    e.index = integer(value[1], where + " index");
    if (value.size() == 3) e.version = integer(value[2], where + " version");
    return e;
  }

  void string_map(const json& value, const std::string& where,
                  std::map<std::string, std::string>& out) const {
    expect(value, json::value_t::object, where);
    for (const auto& [key, v] : value.items()) out[key] = string(v, where + " \"" + key + "\"");
  }

  // A graph attribute is [type, value]; MXNet writes mxnet_version as an int and nothing else.
  std::string graph_attr(const std::string& key, const json& value) const {
    const std::string where = "graph attribute \"" + key + "\"";
    expect(value, json::value_t::array, where);
    KILN_CHECK(value.size() == 2, ErrorCode::kIo, source_, ": ", where, " is not a [type, value] pair");
    const std::string type = string(value[0], where + " type");
    const std::string expected = key == "mxnet_version" ? "int" : "str";
    KILN_CHECK(type == expected, ErrorCode::kUnsupported, source_, ": ", where, " has type \"", type,
               "\"; expected \"", expected, "\"");
    return type == "int" ? std::to_string(integer(value[1], where)) : string(value[1], where);
  }

  MxnetSymbol::Node node(const json& value, size_t i) const {
    const std::string where = "node " + std::to_string(i);
    expect(value, json::value_t::object, where);
    MxnetSymbol::Node n;
    n.op = string(member(value, "op", where), where + " op");
    n.name = string(member(value, "name", where), where + " name");
    const std::string label = where + " '" + n.name + "' (" + n.op + ")";
    // MXNet lets `attrs`/`attr` override the pre-NNVM `param`.
    for (const char* key : {"param", "attr", "attrs"}) {
      if (value.contains(key)) string_map(value[key], label + " " + key, n.attrs);
    }
    const json& inputs = expect(member(value, "inputs", label), json::value_t::array, label + " inputs");
    for (size_t k = 0; k < inputs.size(); ++k)
      n.inputs.push_back(entry(inputs[k], label + " input " + std::to_string(k)));
    for (const char* key : {"control_deps", "subgraphs"}) {
      if (!value.contains(key)) continue;
      const json& list = expect(value[key], json::value_t::array, label + " " + key);
      KILN_CHECK(list.empty(), ErrorCode::kUnsupported, source_, ": ", label, " has ", key,
                 ", which are not supported");
    }
    return n;
  }

 private:
  const std::string& source_;
};

}  // namespace

MxnetSymbol parse_symbol_json(const std::string& text, const std::string& source) {
  json root;
  try {
    root = json::parse(text);
  } catch (const json::exception& e) {
    raise(ErrorCode::kIo, source, ": invalid JSON: ", e.what());
  }
  const Parser p(source);
  p.expect(root, json::value_t::object, "the document");
  MxnetSymbol s;
  const json& nodes = p.expect(p.member(root, "nodes", "the document"), json::value_t::array, "nodes");
  for (size_t i = 0; i < nodes.size(); ++i) s.nodes.push_back(p.node(nodes[i], i));
  const json& args = p.expect(p.member(root, "arg_nodes", "the document"), json::value_t::array, "arg_nodes");
  for (size_t i = 0; i < args.size(); ++i)
    s.arg_nodes.push_back(p.integer(args[i], "arg_nodes entry " + std::to_string(i)));
  const json& heads = p.expect(p.member(root, "heads", "the document"), json::value_t::array, "heads");
  for (size_t i = 0; i < heads.size(); ++i) s.heads.push_back(p.entry(heads[i], "head " + std::to_string(i)));
  if (root.contains("attrs")) {
    const json& attrs = p.expect(root["attrs"], json::value_t::object, "graph attrs");
    for (const auto& [key, value] : attrs.items()) s.attrs[key] = p.graph_attr(key, value);
  }
  s.attrs.try_emplace("mxnet_version", kUnrecordedVersion);
  validate(s, source, ErrorCode::kIo);
  return s;
}

MxnetSymbol load_symbol_json(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  KILN_CHECK(in.good(), ErrorCode::kIo, path, ": cannot open file");
  std::ostringstream text;
  text << in.rdbuf();
  KILN_CHECK(!in.bad(), ErrorCode::kIo, path, ": read failed");
  return parse_symbol_json(text.str(), path);
}

std::string to_symbol_json(const MxnetSymbol& symbol) {
  const std::string source = "to_symbol_json";
  validate(symbol, source, ErrorCode::kInvalidArgument);
  using ojson = nlohmann::ordered_json;
  const auto entry = [](const Entry& e) { return ojson::array({e.node, e.index, e.version}); };

  // node_row_ptr[i] is the number of outputs of the nodes before i. The file alone does not say
  // how many outputs an op has, so this counts the outputs the graph uses; MXNet recomputes the
  // table from its op registry when it loads the file and does not read this one.
  std::vector<int64_t> outputs(symbol.nodes.size(), 1);
  const auto use = [&](const Entry& e) {
    int64_t& o = outputs[static_cast<size_t>(e.node)];
    o = std::max<int64_t>(o, int64_t{e.index} + 1);
  };
  for (const MxnetSymbol::Node& n : symbol.nodes) std::for_each(n.inputs.begin(), n.inputs.end(), use);
  std::for_each(symbol.heads.begin(), symbol.heads.end(), use);

  ojson nodes = ojson::array();
  for (const MxnetSymbol::Node& n : symbol.nodes) {
    ojson node = {{"op", n.op}, {"name", n.name}};
    if (!n.attrs.empty()) node["attrs"] = n.attrs;
    ojson inputs = ojson::array();
    for (const Entry& e : n.inputs) inputs.push_back(entry(e));
    node["inputs"] = std::move(inputs);
    nodes.push_back(std::move(node));
  }
  ojson row_ptr = ojson::array({0});
  for (const int64_t o : outputs) row_ptr.push_back(row_ptr.back().get<int64_t>() + o);
  ojson heads = ojson::array();
  for (const Entry& e : symbol.heads) heads.push_back(entry(e));

  ojson attrs = ojson::object();
  int version = kMxnetVersion;
  for (const auto& [key, value] : symbol.attrs) {
    if (key != "mxnet_version") {
      attrs[key] = ojson::array({"str", value});
      continue;
    }
    try {
      size_t used = 0;
      version = std::stoi(value, &used);
      KILN_CHECK(used == value.size(), ErrorCode::kInvalidArgument, source, ": mxnet_version '", value,
                 "' is not an integer");
    } catch (const std::logic_error&) {
      raise(ErrorCode::kInvalidArgument, source, ": mxnet_version '", value, "' is not an integer");
    }
  }
  attrs["mxnet_version"] = ojson::array({"int", version});

  ojson root = {{"nodes", std::move(nodes)},
                {"arg_nodes", symbol.arg_nodes},
                {"node_row_ptr", std::move(row_ptr)},
                {"heads", std::move(heads)},
                {"attrs", std::move(attrs)}};
  try {
    return root.dump(2);
  } catch (const nlohmann::json::exception& e) {  // a name or attribute that is not UTF-8
    raise(ErrorCode::kInvalidArgument, source, ": ", e.what());
  }
}

}  // namespace kiln::mxnet
