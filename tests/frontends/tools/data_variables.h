// What the MXNet tools share: binding the data variables of an imported symbol to the input's shape.
#pragma once

#include <map>
#include <set>
#include <string>

#include "kiln/mxnet_format.hpp"

namespace kiln::mxnet::testing {

// {name: input_shape} for each data variable of `symbol`: the variables without a parameter in
// `params` (whose names may carry an "arg:" or "aux:" prefix). The tools expect exactly one.
inline std::map<std::string, Shape> data_variable_shapes(const MxnetSymbol& symbol,
                                                         const NamedTensors& params,
                                                         const Shape& input_shape) {
  std::set<std::string> stored;
  for (const std::string& name : params.names) stored.insert(name.substr(name.find(':') + 1));
  std::map<std::string, Shape> shapes;
  for (const auto& node : symbol.nodes)
    if (node.op == "null" && !stored.count(node.name)) shapes[node.name] = input_shape;
  return shapes;
}

}  // namespace kiln::mxnet::testing
