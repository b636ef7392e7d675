// The node a Symbol is built of, shared by the Symbol API's files: an op (or "null" for a
// variable) with MXNet's string attributes and the outputs it reads.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "kiln/symbol.hpp"

namespace kiln {

struct Symbol::Node {
  std::string op;
  std::string name;
  std::map<std::string, std::string> attrs;
  std::vector<Symbol::Output> inputs;
};

// MXNet's automatic names: `hint` in lower case followed by a counter kept per hint
// ("convolution0", "convolution1", "_plus0").
std::string auto_symbol_name(const std::string& hint);

}  // namespace kiln
