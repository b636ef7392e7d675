// The converter for `_kiln_<Op>` nodes, which the exporter writes for Kiln ops MXNet lacks
// (export.h describes the encoding): the node comes back as the Kiln op, its attributes typed by
// the op's schema, its absent optional inputs and its outputs as they were.
#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <nlohmann/json.hpp>

#include "frontends/mxnet/convert.h"
#include "frontends/mxnet/export.h"
#include "kiln/error.hpp"
#include "ops/op_schema.h"

namespace kiln::mxnet {
namespace {

// MXNet's own hidden attributes (__ctx_group__, __lr_mult__, ...), which a tool may have added.
bool is_hidden(const std::string& key) {
  return key.size() > 4 && key.rfind("__", 0) == 0 && key.compare(key.size() - 2, 2, "__") == 0;
}

// strtod reads what format_double writes, including "inf" and "nan"; subnormal values read back
// exactly even though strtod reports them as an underflow.
double parse_double(const std::string& text, const std::string& what) {
  char* end = nullptr;
  const double v = std::strtod(text.c_str(), &end);
  KILN_CHECK(!text.empty() && *end == '\0', ErrorCode::kInvalidArgument, what, " = '", text,
             "': expected a number");
  return v;
}

// "(0.5, 1.5)", "(0.5,)" or "()", as format_kiln_attr writes them.
std::vector<double> parse_doubles(const std::string& text, const std::string& what) {
  KILN_CHECK(text.size() >= 2 && text.front() == '(' && text.back() == ')', ErrorCode::kInvalidArgument, what,
             " = '", text, "': expected a tuple of numbers");
  const std::string inner = text.substr(1, text.size() - 2);
  std::vector<double> out;
  for (size_t start = 0;;) {
    const size_t comma = inner.find(',', start);
    const bool last = comma == std::string::npos;
    std::string item = inner.substr(start, last ? std::string::npos : comma - start);
    item.erase(0, item.find_first_not_of(' '));
    if (!item.empty())
      out.push_back(parse_double(item, what));
    else
      KILN_CHECK(last, ErrorCode::kInvalidArgument, what, " = '", text, "': empty entry");
    if (last) return out;
    start = comma + 1;
  }
}

void kiln_op(ConvertContext& ctx) {
  const MxnetSymbol::Node& node = ctx.node();
  const std::string op = node.op.substr(std::strlen(kKilnOpPrefix));
  const ops::OpSchema& schema = ops::OpRegistry::global().get(op);
  AttrMap attrs;
  std::vector<int64_t> missing;
  int64_t num_outputs = 1;
  for (const auto& [key, text] : node.attrs) {
    const std::string what = ctx.label() + ": attribute " + key;
    if (key == kNumOutputsAttr) {
      num_outputs = parse_int_attr(text, what);
      KILN_CHECK(num_outputs >= 1, ErrorCode::kInvalidArgument, what, " = '", text, "': expected >= 1");
    } else if (key == kMissingInputsAttr) {
      missing = parse_ints_attr(text, what);
    } else if (!is_hidden(key)) {
      const std::string& name = key;  // a lambda captures a name, not a structured binding (clang 14)
      const auto spec = std::find_if(schema.attrs().begin(), schema.attrs().end(),
                                     [&](const ops::AttrSpec& s) { return s.name == name; });
      KILN_CHECK(spec != schema.attrs().end(), ErrorCode::kInvalidArgument, ctx.label(), ": Kiln op ", op,
                 " has no attribute '", key, "'");
      attrs.emplace(key, parse_kiln_attr(text, spec->type, what));
    }
  }
  const size_t total = static_cast<size_t>(ctx.num_inputs()) + missing.size();
  std::vector<bool> absent(total, false);
  for (const int64_t i : missing) {
    KILN_CHECK(i >= 0 && static_cast<size_t>(i) < total && !absent[static_cast<size_t>(i)],
               ErrorCode::kInvalidArgument, ctx.label(), ": ", kMissingInputsAttr, " lists input ", i,
               ", expected distinct positions below ", total);
    absent[static_cast<size_t>(i)] = true;
  }
  std::vector<graph::Value*> inputs;
  int next = 0;
  for (size_t i = 0; i < total; ++i) inputs.push_back(absent[i] ? nullptr : ctx.input(next++));
  graph::Node* n = ctx.add_node(op, std::move(inputs), std::move(attrs), "", static_cast<int>(num_outputs));
  ctx.set_outputs(n->outputs);
}

}  // namespace

AttrValue parse_kiln_attr(const std::string& text, AttrType type, const std::string& what) {
  switch (type) {
    case AttrType::kInt:
      return parse_int_attr(text, what);
    case AttrType::kFloat:
      return parse_double(text, what);
    case AttrType::kString:
      return text;
    case AttrType::kInts:
      return parse_ints_attr(text, what);
    case AttrType::kFloats:
      return parse_doubles(text, what);
    case AttrType::kStrings: {
      const nlohmann::json j = nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false);
      KILN_CHECK(j.is_array() && std::all_of(j.begin(), j.end(), [](const auto& s) { return s.is_string(); }),
                 ErrorCode::kInvalidArgument, what, " = '", text, "': expected a JSON array of strings");
      return j.get<std::vector<std::string>>();
    }
    case AttrType::kTensor:
      break;
  }
  raise(ErrorCode::kUnsupported, what, ": tensor attributes are not part of the `_kiln_` encoding");
}

void add_kiln_converters(ConverterTable& table) {
  for (const std::string& op : ops::OpRegistry::global().names()) table[kKilnOpPrefix + op] = kiln_op;
}

}  // namespace kiln::mxnet
