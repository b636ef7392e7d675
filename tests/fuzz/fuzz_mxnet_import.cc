// libFuzzer target for the MXNet importer: a -symbol.json parsed and turned into a Graph by the op
// converters (attribute strings, Reshape codes, `_kiln_` attributes), with no parameters, so every
// variable is an input. Any bytes must give a Graph or a kiln::Error naming the node, never a
// crash or a sanitizer report.
#include <cstddef>
#include <cstdint>
#include <string>

#include "frontends/mxnet/import.h"
#include "kiln/error.hpp"
#include "kiln/mxnet_format.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  try {
    const kiln::mxnet::MxnetSymbol symbol =
        kiln::mxnet::parse_symbol_json(std::string(reinterpret_cast<const char*>(data), size), "fuzz");
    kiln::graph::Graph graph = kiln::mxnet::import_symbol(symbol, {}, "fuzz");
    graph.infer_shapes();
  } catch (const kiln::Error&) {
  }
  return 0;
}
