// The op constructors of the Symbol API (kiln::sym) and Symbol arithmetic. Each stores only the
// attributes MXNet's Python front end would store for the same call (the ones given, written
// the way Python prints them) and creates the op's parameter variables with MXNet's names.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "frontends/mxnet/symbol_node.h"
#include "kiln/error.hpp"
#include "kiln/symbol.hpp"

namespace kiln {
namespace {

std::string tuple_text(const std::vector<int64_t>& v) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  os << (v.size() == 1 ? ",)" : ")");
  return os.str();
}

std::string bool_text(bool v) {
  return v ? "True" : "False";
}

// Python's repr of a float: the shortest text that reads back the same, with ".0" for integers.
std::string float_text(double v) {
  char buf[32];
  for (int precision = 1; precision <= 17; ++precision) {
    std::snprintf(buf, sizeof buf, "%.*g", precision, v);
    if (std::strtod(buf, nullptr) == v) break;
  }
  std::string s = buf;
  if (std::isfinite(v) && s.find_first_of(".e") == std::string::npos) s += ".0";
  return s;
}

std::string resolve_name(const std::string& name, const std::string& hint) {
  return name.empty() ? auto_symbol_name(hint) : name;
}

Symbol param(const std::string& op_name, const std::string& suffix) {
  return Symbol::Variable(op_name + "_" + suffix);
}

Symbol binary(const std::string& op, const std::string& hint, const Symbol& a, const Symbol& b,
              const std::string& name) {
  return Symbol::Create(op, {a, b}, {}, resolve_name(name, hint));
}

Symbol scalar_op(const std::string& op, const std::string& hint, const Symbol& a, double s) {
  return Symbol::Create(op, {a}, {{"scalar", float_text(s)}}, auto_symbol_name(hint));
}

}  // namespace

namespace sym {

Symbol Convolution(const Symbol& data, const ConvolutionParams& p, const std::string& name) {
  const std::string nm = resolve_name(name, "convolution");
  std::map<std::string, std::string> attrs{{"kernel", tuple_text(p.kernel)},
                                           {"num_filter", std::to_string(p.num_filter)}};
  if (!p.stride.empty()) attrs["stride"] = tuple_text(p.stride);
  if (!p.pad.empty()) attrs["pad"] = tuple_text(p.pad);
  if (!p.dilate.empty()) attrs["dilate"] = tuple_text(p.dilate);
  if (p.num_group != 1) attrs["num_group"] = std::to_string(p.num_group);
  if (p.no_bias) attrs["no_bias"] = bool_text(true);
  std::vector<Symbol> inputs{data, param(nm, "weight")};
  if (!p.no_bias) inputs.push_back(param(nm, "bias"));
  return Symbol::Create("Convolution", inputs, attrs, nm);
}

Symbol Deconvolution(const Symbol& data, const DeconvolutionParams& p, const std::string& name) {
  const std::string nm = resolve_name(name, "deconvolution");
  std::map<std::string, std::string> attrs{{"kernel", tuple_text(p.kernel)},
                                           {"num_filter", std::to_string(p.num_filter)},
                                           {"no_bias", bool_text(p.no_bias)}};
  if (!p.stride.empty()) attrs["stride"] = tuple_text(p.stride);
  if (!p.pad.empty()) attrs["pad"] = tuple_text(p.pad);
  if (!p.adj.empty()) attrs["adj"] = tuple_text(p.adj);
  if (p.num_group != 1) attrs["num_group"] = std::to_string(p.num_group);
  std::vector<Symbol> inputs{data, param(nm, "weight")};
  if (!p.no_bias) inputs.push_back(param(nm, "bias"));
  return Symbol::Create("Deconvolution", inputs, attrs, nm);
}

Symbol FullyConnected(const Symbol& data, int64_t num_hidden, bool no_bias, bool flatten,
                      const std::string& name) {
  const std::string nm = resolve_name(name, "fullyconnected");
  std::map<std::string, std::string> attrs{{"num_hidden", std::to_string(num_hidden)}};
  if (no_bias) attrs["no_bias"] = bool_text(true);
  if (!flatten) attrs["flatten"] = bool_text(false);
  std::vector<Symbol> inputs{data, param(nm, "weight")};
  if (!no_bias) inputs.push_back(param(nm, "bias"));
  return Symbol::Create("FullyConnected", inputs, attrs, nm);
}

Symbol Activation(const Symbol& data, const std::string& act_type, const std::string& name) {
  return Symbol::Create("Activation", {data}, {{"act_type", act_type}}, resolve_name(name, "activation"));
}

Symbol Pooling(const Symbol& data, const PoolingParams& p, const std::string& name) {
  std::map<std::string, std::string> attrs{{"pool_type", p.pool_type}};
  if (!p.kernel.empty()) attrs["kernel"] = tuple_text(p.kernel);
  if (!p.stride.empty()) attrs["stride"] = tuple_text(p.stride);
  if (!p.pad.empty()) attrs["pad"] = tuple_text(p.pad);
  if (p.global_pool) attrs["global_pool"] = bool_text(true);
  if (p.pooling_convention != "valid") attrs["pooling_convention"] = p.pooling_convention;
  return Symbol::Create("Pooling", {data}, attrs, resolve_name(name, "pooling"));
}

Symbol BatchNorm(const Symbol& data, const BatchNormParams& p, const std::string& name) {
  const std::string nm = resolve_name(name, "batchnorm");
  std::map<std::string, std::string> attrs;
  if (p.eps != 1e-3) attrs["eps"] = float_text(p.eps);
  if (p.momentum != 0.9) attrs["momentum"] = float_text(p.momentum);
  if (!p.fix_gamma) attrs["fix_gamma"] = bool_text(false);
  if (p.use_global_stats) attrs["use_global_stats"] = bool_text(true);
  return Symbol::Create(
      "BatchNorm",
      {data, param(nm, "gamma"), param(nm, "beta"), param(nm, "moving_mean"), param(nm, "moving_var")}, attrs,
      nm);
}

Symbol Flatten(const Symbol& data, const std::string& name) {
  return Symbol::Create("Flatten", {data}, {}, resolve_name(name, "flatten"));
}

Symbol Dropout(const Symbol& data, double p, const std::string& name) {
  return Symbol::Create("Dropout", {data}, {{"p", float_text(p)}}, resolve_name(name, "dropout"));
}

Symbol Concat(const std::vector<Symbol>& data, int64_t dim, const std::string& name) {
  return Symbol::Create("Concat", data,
                        {{"dim", std::to_string(dim)}, {"num_args", std::to_string(data.size())}},
                        resolve_name(name, "concat"));
}

Symbol elemwise_add(const Symbol& a, const Symbol& b, const std::string& name) {
  return binary("elemwise_add", "elemwise_add", a, b, name);
}
Symbol elemwise_sub(const Symbol& a, const Symbol& b, const std::string& name) {
  return binary("elemwise_sub", "elemwise_sub", a, b, name);
}
Symbol elemwise_mul(const Symbol& a, const Symbol& b, const std::string& name) {
  return binary("elemwise_mul", "elemwise_mul", a, b, name);
}
Symbol elemwise_div(const Symbol& a, const Symbol& b, const std::string& name) {
  return binary("elemwise_div", "elemwise_div", a, b, name);
}
Symbol broadcast_add(const Symbol& a, const Symbol& b, const std::string& name) {
  return binary("broadcast_add", "broadcast_add", a, b, name);
}
Symbol broadcast_sub(const Symbol& a, const Symbol& b, const std::string& name) {
  return binary("broadcast_sub", "broadcast_sub", a, b, name);
}
Symbol broadcast_mul(const Symbol& a, const Symbol& b, const std::string& name) {
  return binary("broadcast_mul", "broadcast_mul", a, b, name);
}
Symbol broadcast_div(const Symbol& a, const Symbol& b, const std::string& name) {
  return binary("broadcast_div", "broadcast_div", a, b, name);
}

Symbol Reshape(const Symbol& data, const std::vector<int64_t>& shape, const std::string& name) {
  return Symbol::Create("Reshape", {data}, {{"shape", tuple_text(shape)}}, resolve_name(name, "reshape"));
}

Symbol softmax(const Symbol& data, int64_t axis, const std::string& name) {
  std::map<std::string, std::string> attrs;
  if (axis != -1) attrs["axis"] = std::to_string(axis);
  return Symbol::Create("softmax", {data}, attrs, resolve_name(name, "softmax"));
}

Symbol SoftmaxOutput(const Symbol& data, const std::string& name) {
  const std::string nm = resolve_name(name, "softmaxoutput");
  return Symbol::Create("SoftmaxOutput", {data, param(nm, "label")}, {}, nm);
}

}  // namespace sym

// MXNet's Python operators: the ops are stored under their canonical names, the automatic node
// names use the operator's alias ("_plus0", "_mulscalar0").
Symbol operator+(const Symbol& a, const Symbol& b) {
  return binary("elemwise_add", "_plus", a, b, "");
}
Symbol operator-(const Symbol& a, const Symbol& b) {
  return binary("elemwise_sub", "_minus", a, b, "");
}
Symbol operator*(const Symbol& a, const Symbol& b) {
  return binary("elemwise_mul", "_mul", a, b, "");
}
Symbol operator/(const Symbol& a, const Symbol& b) {
  return binary("elemwise_div", "_div", a, b, "");
}
Symbol operator+(const Symbol& a, double b) {
  return scalar_op("_plus_scalar", "_plusscalar", a, b);
}
Symbol operator-(const Symbol& a, double b) {
  return scalar_op("_minus_scalar", "_minusscalar", a, b);
}
Symbol operator*(const Symbol& a, double b) {
  return scalar_op("_mul_scalar", "_mulscalar", a, b);
}
Symbol operator/(const Symbol& a, double b) {
  return scalar_op("_div_scalar", "_divscalar", a, b);
}

}  // namespace kiln
